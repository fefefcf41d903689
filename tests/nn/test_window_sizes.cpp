// Output sizes of windowed ops on too-small inputs (issues #21/#22): the library's window count
// (detail::window_out_size) against PyTorch's documented formula evaluated in float64
// (floor((H + 2p - d (k - 1) - 1) / s + 1), ceil with ceil_mode less a last window starting in the
// end padding); max/avg pooling (2-D, 1-D, batch_norm_max_pool2d) and the integer convolution
// throw a ShapeError naming the op where no window fits, and match a float64 CPU reference where
// a result exists (ceil_mode's partial last windows included).
#include <cmath>
#include <limits>

#include "gltensor/errors.hpp"
#include "gltensor/nn_functional.hpp"
#include "nn/pool_plan.hpp"
#include "nn/qdq_ref.hpp"
#include "nn/quant_int.hpp"
#include "test_util.hpp"

using namespace gltensor;
using namespace glt_test;

namespace {

// PyTorch's formula in float64 (its docs for MaxPool2d / AvgPool2d; ONNX's reference alike).
std::int64_t ref_out(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t pb, std::int64_t pe, std::int64_t d,
                     bool ceil_mode) {
  const double q = static_cast<double>(in + pb + pe - d * (k - 1) - 1) / static_cast<double>(s) + 1.0;
  if (!ceil_mode) return static_cast<std::int64_t>(std::floor(q));
  std::int64_t o = static_cast<std::int64_t>(std::ceil(q));
  if ((o - 1) * s >= in + pb) --o;
  return o;
}

// PyTorch's max / avg pooling of one [H, W] plane in float64 (avg: dilation 1; the divisor
// clipped at the padded input's end, and at the input without count_include_pad).
std::vector<double> ref_pool(bool is_max, const std::vector<float>& x, std::int64_t H, std::int64_t W,
                             const Pool2dOptions& o, std::int64_t OH, std::int64_t OW) {
  std::vector<double> y;
  for (std::int64_t oh = 0; oh < OH; ++oh)
    for (std::int64_t ow = 0; ow < OW; ++ow) {
      const std::int64_t h0 = oh * o.stride[0] - o.padding[0], w0 = ow * o.stride[1] - o.padding[1];
      if (is_max) {
        double m = -std::numeric_limits<double>::infinity();
        for (std::int64_t i = 0; i < o.kernel[0]; ++i)
          for (std::int64_t j = 0; j < o.kernel[1]; ++j) {
            const std::int64_t h = h0 + i * o.dilation[0], w = w0 + j * o.dilation[1];
            if (h >= 0 && h < H && w >= 0 && w < W) m = std::max(m, static_cast<double>(x[h * W + w]));
          }
        y.push_back(m);
        continue;
      }
      const std::int64_t h1 = std::min(h0 + o.kernel[0], H + o.padding[0]),
                         w1 = std::min(w0 + o.kernel[1], W + o.padding[1]);
      const std::int64_t hs = std::max<std::int64_t>(h0, 0), ws = std::max<std::int64_t>(w0, 0);
      const std::int64_t he = std::min(h1, H), we = std::min(w1, W);
      double s = 0;
      for (std::int64_t h = hs; h < he; ++h)
        for (std::int64_t w = ws; w < we; ++w) s += x[h * W + w];
      const double div =
          o.count_include_pad ? static_cast<double>((h1 - h0) * (w1 - w0)) : static_cast<double>((he - hs) * (we - ws));
      y.push_back(s / div);
    }
  return y;
}

}  // namespace

TEST(WindowSizes, MatchPyTorchsFormula) {
  for (std::int64_t in = 0; in <= 9; ++in)
    for (std::int64_t k = 1; k <= 4; ++k)
      for (std::int64_t s = 1; s <= 4; ++s)
        for (std::int64_t d = 1; d <= 3; ++d)
          for (std::int64_t pb = 0; pb <= 2; ++pb)
            for (std::int64_t pe = 0; pe <= 2; ++pe)
              for (bool c : {false, true})
                ASSERT_EQ(detail::window_out_size(in, k, s, pb, pe, d, c), ref_out(in, k, s, pb, pe, d, c))
                    << "in " << in << " k " << k << " s " << s << " d " << d << " pads " << pb << "," << pe << " ceil "
                    << c;
  // cnn32's case: 1 x 1 with a 2 x 2 kernel, stride 2 (C++'s -1 / 2 = 0 gave one window).
  EXPECT_EQ(detail::window_out_size(1, 2, 2, 0, 0, 1, false), 0);
  EXPECT_EQ(detail::window_out_size(1, 2, 2, 0, 0, 1, true), 1);  // ceil_mode: a partial window
  EXPECT_EQ(detail::window_out_size(1, 3, 2, 0, 0, 1, true), 0);
}

TEST(WindowSizes, TooSmallPoolingIsAShapeErrorNamingTheOp) {
  const Tensor x = ones(device(), {1, 1, 1, 1});
  Pool2dOptions o;
  o.kernel = {2, 2};
  o.stride = {2, 2};
  for (const char* op : {"max_pool2d", "avg_pool2d"}) {
    const bool is_max = op[0] == 'm';
    EXPECT_THROW_MSG(is_max ? max_pool2d(x, o) : avg_pool2d(x, o), ShapeError,
                     std::string("gltensor::") + op +
                         ": input [1, 1, 1, 1] is too small for kernel [2, 2] (stride [2, 2], padding [0, 0], "
                         "dilation [1, 1]): the output size would be [0, 0]");
  }
  // One axis too small: a 5 x 2 input, a 3 x 3 kernel (dilation 1 and 2).
  Pool2dOptions t;
  t.kernel = {3, 3};
  t.stride = {1, 1};
  EXPECT_THROW(max_pool2d(ones(device(), {1, 2, 5, 2}), t), ShapeError);
  t.dilation = {2, 1};
  t.kernel = {3, 1};
  EXPECT_THROW(max_pool2d(ones(device(), {1, 2, 4, 2}), t), ShapeError);  // dilated extent 5 > 4
  EXPECT_EQ(max_pool2d(ones(device(), {1, 2, 5, 2}), t).shape(), (Shape{1, 2, 1, 2}));
  // 1-D forms name themselves.
  Pool1dOptions p;
  p.kernel = 3;
  p.stride = 2;
  EXPECT_THROW_MSG(max_pool1d(ones(device(), {2, 3, 2}), p), ShapeError,
                   "gltensor::max_pool1d: input [2, 3, 1, 2] is too small");
  EXPECT_THROW_MSG(avg_pool1d(ones(device(), {2, 3, 2}), p), ShapeError,
                   "gltensor::avg_pool1d: input [2, 3, 1, 2] is too small");
  Pool1dOptions k0 = p;  // the options' check too
  k0.kernel = 0;
  EXPECT_THROW_MSG(max_pool1d(ones(device(), {2, 3, 2}), k0), ValueError, "gltensor::max_pool1d: kernel, stride");
  EXPECT_THROW_MSG(avg_pool1d(ones(device(), {2, 3, 2}), k0), ValueError, "gltensor::avg_pool1d: kernel, stride");
  p.ceil_mode = true;  // ceil((2 - 3) / 2) + 1 = 1, the window starting inside the input
  EXPECT_EQ(max_pool1d(ones(device(), {2, 3, 2}), p).shape(), (Shape{2, 3, 1}));
  // batch_norm_max_pool2d (cnn32's fused op) checks before normalizing, naming itself.
  const Tensor mean = zeros(device(), {3}), var = ones(device(), {3});
  EXPECT_THROW_MSG(batch_norm_max_pool2d(ones(device(), {2, 3, 1, 1}), mean, var, Tensor(), Tensor(), false, 0.1, 1e-5,
                                         Activation::relu, o),
                   ShapeError, "gltensor::batch_norm_max_pool2d: input [2, 3, 1, 1] is too small for kernel [2, 2]");
}

// Random small shapes and options: the error where PyTorch's formula gives no window, else the
// values of a float64 reference (ceil_mode's partial windows, padding, dilation).
TEST(WindowSizes, PoolingOnSmallInputsMatchesReference) {
  GLT_RNG(rng);
  std::uniform_int_distribution<int> hw(1, 5), kd(1, 3), sd(1, 3), bit(0, 1);
  int errors = 0, values = 0;
  for (int it = 0; it < 96; ++it) {
    const bool is_max = bit(rng) != 0;
    const std::int64_t H = hw(rng), W = hw(rng);
    Pool2dOptions o;
    o.kernel = {kd(rng), kd(rng)};
    o.stride = {sd(rng), sd(rng)};
    for (int d = 0; d < 2; ++d) {
      o.padding[d] = bit(rng) ? o.kernel[d] / 2 : 0;
      o.dilation[d] = is_max && bit(rng) ? 2 : 1;
    }
    o.ceil_mode = bit(rng) != 0;
    o.count_include_pad = bit(rng) != 0;
    const std::int64_t OH =
        ref_out(H, o.kernel[0], o.stride[0], o.padding[0], o.padding[0], o.dilation[0], o.ceil_mode);
    const std::int64_t OW =
        ref_out(W, o.kernel[1], o.stride[1], o.padding[1], o.padding[1], o.dilation[1], o.ceil_mode);
    const std::vector<float> xv = uniform(rng, static_cast<std::size_t>(H * W));
    const Tensor x = Tensor::from_host(device(), xv, {1, 1, H, W});
    SCOPED_TRACE((is_max ? "max " : "avg ") + to_string({H, W}) + " kernel " + to_string({o.kernel[0], o.kernel[1]}) +
                 " stride " + to_string({o.stride[0], o.stride[1]}) + " pad " +
                 to_string({o.padding[0], o.padding[1]}) + " dil " + to_string({o.dilation[0], o.dilation[1]}) +
                 " ceil " + std::to_string(o.ceil_mode) + " cip " + std::to_string(o.count_include_pad));
    if (OH <= 0 || OW <= 0) {
      ++errors;
      EXPECT_THROW(is_max ? max_pool2d(x, o) : avg_pool2d(x, o), ShapeError);
      continue;
    }
    ++values;
    const Tensor y = is_max ? max_pool2d(x, o) : avg_pool2d(x, o);
    ASSERT_EQ(y.shape(), (Shape{1, 1, OH, OW}));
    EXPECT_TRUE(close(y.to_vector(), ref_pool(is_max, xv, H, W, o, OH, OW), 1e-5, 1e-6));
  }
  // Both kinds of case come up (fixed edge cases besides, above).
  RecordProperty("errors", errors), RecordProperty("values", values);
}

TEST(WindowSizes, IntegerConvolutionTooSmallIsAShapeError) {
  using detail::IntConvOptions;
  IntConvOptions o;
  o.stride = {2, 2};
  // 1 x 1 with a 2 x 2 filter, stride 2: (1 - 2) / 2 truncated to 0 gave one output.
  const Tensor x = ints({7}, {1, 1, 1, 1}, DType::u8), w = ints({1, 2, 3, 4}, {1, 1, 2, 2}, DType::i8);
  EXPECT_THROW_MSG(detail::conv_integer(x, w, Tensor(), Tensor(), o), ShapeError,
                   "gltensor::conv_integer: the filter [1, 1, 2, 2] (dilation [1, 1]) is larger than the input "
                   "[1, 1, 1, 1] with padding [0, 0, 0, 0]: the output size would be [0, 0]");
  // Padding makes it fit: [[0, 0], [0, 7]] * w = 28 at the only output.
  o.padding = {1, 1, 0, 0};
  const Tensor y = detail::conv_integer(x, w, Tensor(), Tensor(), o);
  ASSERT_EQ(y.shape(), (Shape{1, 1, 1, 1}));
  EXPECT_EQ(y.to_int_vector(), (std::vector<std::int32_t>{28}));
}

// Padding at most half the effective kernel size (k - 1) * d + 1 (PyTorch's pooling_output_shape),
// so that every window holds an input element: larger padding was accepted up to the kernel size
// and gave windows of padding only (-inf for max, 0 / 0 for average). A ValueError naming the op,
// the padding, the limit, the options and the input; the largest padding allowed still runs and
// matches the float64 reference (dilation widening the limit).
TEST(WindowSizes, PoolingPaddingAtMostHalfTheEffectiveKernel) {
  GLT_RNG(rng);
  Pool2dOptions o;
  o.kernel = {4, 3};
  o.stride = {1, 1};
  o.padding = {3, 1};  // < the kernel (accepted before), > 4 / 2
  EXPECT_THROW_MSG(max_pool2d(ones(device(), {1, 2, 6, 5}), o), ValueError,
                   "gltensor::max_pool2d: padding [3, 1] must be at most half the effective kernel size (kernel - 1) "
                   "* dilation + 1 = [4, 3] (kernel [4, 3], dilation [1, 1]), input [1, 2, 6, 5]");
  EXPECT_THROW_MSG(avg_pool2d(ones(device(), {1, 2, 6, 5}), o), ValueError, "gltensor::avg_pool2d: padding [3, 1]");
  const Tensor mean = zeros(device(), {2}), var = ones(device(), {2});
  EXPECT_THROW_MSG(batch_norm_max_pool2d(ones(device(), {1, 2, 6, 5}), mean, var, Tensor(), Tensor(), false, 0.1, 1e-5,
                                         Activation::none, o),
                   ValueError, "gltensor::batch_norm_max_pool2d: padding [3, 1] must be at most half");
  o.padding = {2, 2};  // W: 3 / 2 = 1
  EXPECT_THROW_MSG(max_pool2d(ones(device(), {1, 2, 6, 5}), o), ValueError, "padding [2, 2] must be at most half");
  // Dilation 2 on H: (4 - 1) * 2 + 1 = 7, padding up to 3; 4 rejected.
  o.dilation = {2, 1};
  o.padding = {4, 1};
  EXPECT_THROW_MSG(max_pool2d(ones(device(), {1, 2, 6, 5}), o), ValueError,
                   "padding [4, 1] must be at most half the effective kernel size (kernel - 1) * dilation + 1 = [7, "
                   "3] (kernel [4, 3], dilation [2, 1])");
  // The limits themselves run: values against float64 (max with dilation, average without;
  // ceil_mode's last window included).
  for (const bool is_max : {true, false}) {
    Pool2dOptions ok = o;
    ok.padding = {is_max ? 3 : 2, 1};
    if (!is_max) ok.dilation = {1, 1};
    ok.stride = {2, 2};
    ok.ceil_mode = true;
    const std::int64_t H = 6, W = 5;
    const std::int64_t OH = ref_out(H, ok.kernel[0], ok.stride[0], ok.padding[0], ok.padding[0], ok.dilation[0], true),
                       OW = ref_out(W, ok.kernel[1], ok.stride[1], ok.padding[1], ok.padding[1], ok.dilation[1], true);
    const std::vector<float> xv = uniform(rng, static_cast<std::size_t>(H * W));
    const Tensor x = Tensor::from_host(device(), xv, {1, 1, H, W});
    const Tensor y = is_max ? max_pool2d(x, ok) : avg_pool2d(x, ok);
    ASSERT_EQ(y.shape(), (Shape{1, 1, OH, OW})) << is_max;
    EXPECT_TRUE(close(y.to_vector(), ref_pool(is_max, xv, H, W, ok, OH, OW), 1e-5, 1e-6)) << is_max;
    for (float v : y.to_vector()) EXPECT_TRUE(std::isfinite(v)) << is_max;
  }
  // The 1-D forms name themselves (with their [N, C, 1, L] shape); kernel 2 allows padding 1.
  Pool1dOptions p;
  p.kernel = 3;
  p.padding = 2;
  EXPECT_THROW_MSG(max_pool1d(ones(device(), {2, 3, 7}), p), ValueError,
                   "gltensor::max_pool1d: padding [0, 2] must be at most half the effective kernel size (kernel - 1) "
                   "* dilation + 1 = [1, 3] (kernel [1, 3], dilation [1, 1]), input [2, 3, 1, 7]");
  EXPECT_THROW_MSG(avg_pool1d(ones(device(), {2, 3, 7}), p), ValueError, "gltensor::avg_pool1d: padding [0, 2]");
  p.dilation = 2;  // (3 - 1) * 2 + 1 = 5: padding 2 allowed
  EXPECT_EQ(max_pool1d(ones(device(), {2, 3, 7}), p).shape(), (Shape{2, 3, 3}));
  // Average pooling has no dilation (avg_pool2d ignores it): the limit stays 1, named as the 1-D op.
  EXPECT_THROW_MSG(avg_pool1d(ones(device(), {2, 3, 7}), p), ValueError,
                   "gltensor::avg_pool1d: padding [0, 2] must be at most half the effective kernel size (kernel - 1) "
                   "* dilation + 1 = [1, 3] (kernel [1, 3], dilation [1, 1])");
  p.kernel = 2, p.padding = 1, p.dilation = 1;
  EXPECT_EQ(avg_pool1d(ones(device(), {2, 3, 7}), p).shape(), (Shape{2, 3, 4}));
}
