// ONNX windowed nodes on too-small inputs (issues #21/#22): MaxPool / AveragePool / Conv where no
// window fits fail with a ModelError naming the node and the sizes, never a wrong answer;
// ceil_mode with end padding drops a last window that starts in the end padding (ONNX's and
// PyTorch's rule), SAME padding on a 1 x 1 input gives ONNX's ceil(in / stride); values against
// float64 references.
#include <algorithm>

#include "onnx_builder.hpp"
#include "test_util.hpp"

using namespace gltensor;
using namespace glt_test;
using B = OnnxBuilder;

namespace {

// k x k windows of stride k over an [H, W] plane (all inside it): max or mean, float64.
std::vector<double> ref_tiles(bool is_max, const std::vector<float>& x, std::int64_t H, std::int64_t W,
                              std::int64_t k) {
  std::vector<double> y;
  for (std::int64_t oh = 0; oh + k <= H; oh += k)
    for (std::int64_t ow = 0; ow + k <= W; ow += k) {
      double m = -1e300, s = 0;
      for (std::int64_t i = 0; i < k; ++i)
        for (std::int64_t j = 0; j < k; ++j) {
          const double v = x[(oh + i) * W + ow + j];
          m = std::max(m, v), s += v;
        }
      y.push_back(is_max ? m : s / static_cast<double>(k * k));
    }
  return y;
}

}  // namespace

// [1, 1, 4, 4], 2 x 2 windows of stride 2, pads end 1, ceil_mode: floor((4 + 1 - 2) / 2) = 1,
// ceil = 2, so 3 windows, but the third starts at 4 >= in + pad_begin = 4: 2 x 2 outputs. Pooled
// over the explicitly padded 5 x 5 input the third window (all padding: -inf, or 0 / 0) stayed.
TEST(ModelWindowSizes, CeilModeDropsAWindowStartingInTheEndPadding) {
  GLT_RNG(rng);
  B m(19);
  m.input("x", {1, 1, 4, 4}).output("mx").output("avg0").output("avg1");
  auto pool = [&](const char* op, const char* out, int include_pad) {
    auto& n = m.node(op, {"x"}, {out}, out);
    B::attr_ints(n, "kernel_shape", {2, 2});
    B::attr_ints(n, "strides", {2, 2});
    B::attr_ints(n, "pads", {0, 0, 1, 1});
    B::attr_i(n, "ceil_mode", 1);
    if (include_pad >= 0) B::attr_i(n, "count_include_pad", include_pad);
  };
  pool("MaxPool", "mx", -1);
  pool("AveragePool", "avg0", 0);
  pool("AveragePool", "avg1", 1);
  Model model = Model::load(device(), m.save("window_ceil_end_pad"));
  const std::vector<float> xv = uniform(rng, 16);
  auto ys = model.run({{"x", Tensor::from_host(device(), xv, {1, 1, 4, 4})}});
  for (const char* name : {"mx", "avg0", "avg1"}) {
    SCOPED_TRACE(name);
    const Tensor& y = ys.at(name);
    ASSERT_EQ(y.shape(), (Shape{1, 1, 2, 2}));
    EXPECT_TRUE(close(y.to_vector(), ref_tiles(name[0] == 'm', xv, 4, 4, 2), 1e-5, 1e-6));
  }
}

TEST(ModelWindowSizes, TooSmallInputsFailNamingTheNode) {
  const Tensor x = ones(device(), {1, 1, 1, 1});
  for (const char* op : {"MaxPool", "AveragePool"}) {
    B m(19);
    m.input("x", {1, 1, -1, -1}).output("y");
    auto& n = m.node(op, {"x"}, {"y"}, "small");
    B::attr_ints(n, "kernel_shape", {2, 2});
    B::attr_ints(n, "strides", {2, 2});
    Model model = Model::load(device(), m.save(std::string("window_small_") + op));
    const auto run = [&] { return model.run({{"x", x}}); };
    EXPECT_THROW_MSG(run(), ModelError,
                     std::string("'small' (") + op +
                         "): input [1, 1, 1, 1] is too small for kernel_shape [2, 2] (strides [2, 2], pads [0, 0, 0, "
                         "0], dilations [1, 1]): the output size would be [0, 0]");
    // 2 x 2 fits: one window.
    EXPECT_EQ(model.run({{"x", ones(device(), {1, 1, 2, 3})}}).at("y").shape(), (Shape{1, 1, 1, 1}));
  }
  {  // Conv: a 2 x 2 filter over a 1 x 1 input (conv2d's error, naming the node)
    B m(13);
    m.input("x", {1, 1, -1, -1}).output("y").init("w", {1, 1, 2, 2}, {1, 2, 3, 4});
    auto& n = m.node("Conv", {"x", "w"}, {"y"}, "conv");
    B::attr_ints(n, "strides", {2, 2});
    Model model = Model::load(device(), m.save("window_small_conv"));
    const auto run = [&] { return model.run({{"x", x}}); };
    EXPECT_THROW_MSG(run(), ModelError, "'conv' (Conv): gltensor::conv2d: kernel [2, 2] (dilated [2, 2]) is larger");
  }
}

// SAME_UPPER / SAME_LOWER on a 1 x 1 input: ceil(1 / 2) = 1 output, the pads put around it.
TEST(ModelWindowSizes, SamePaddingOnOnePixel) {
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER"}) {
    SCOPED_TRACE(mode);
    B m(19);
    m.input("x", {1, 2, 1, 1}).output("mx").output("avg");
    for (const char* op : {"MaxPool", "AveragePool"}) {
      const char* out = op[0] == 'M' ? "mx" : "avg";
      auto& n = m.node(op, {"x"}, {out}, out);
      B::attr_ints(n, "kernel_shape", {3, 3});
      B::attr_ints(n, "strides", {2, 2});
      B::attr_s(n, "auto_pad", mode);
    }
    Model model = Model::load(device(), m.save(std::string("window_same_") + mode));
    auto ys = model.run({{"x", Tensor::from_host(device(), std::vector<float>{-0.75f, 2.5f}, {1, 2, 1, 1})}});
    for (const char* name : {"mx", "avg"}) {  // avg without count_include_pad: the pixel alone
      ASSERT_EQ(ys.at(name).shape(), (Shape{1, 2, 1, 1})) << name;
      EXPECT_TRUE(close(ys.at(name).to_vector(), {-0.75, 2.5}, 1e-6, 0)) << name;
    }
  }
}

// ConvTranspose's output_shape past the full transposed convolution reaches its size with output
// padding >= the stride (no input reaches the extra rows: the bias alone), which the public
// conv_transpose1d / conv_transpose2d reject (PyTorch's rule): the model path passes it on.
// Values against a float64 transposed convolution.
TEST(ModelWindowSizes, ConvTransposeOutputShapePastTheFullSize) {
  GLT_RNG(rng);
  for (const int rank : {1, 2}) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const std::int64_t C = 2, O = 3, K = 2, S = 2, H = rank == 2 ? 3 : 1, W = 4;
    const std::int64_t OH = rank == 2 ? 9 : 1, OW = 11;  // full: 6 (H), 8 (W); output padding 3
    const Shape xs = rank == 2 ? Shape{1, C, H, W} : Shape{1, C, W};
    const Shape ws = rank == 2 ? Shape{C, O, K, K} : Shape{C, O, K};
    const std::int64_t KH = rank == 2 ? K : 1;
    const std::vector<float> xv = uniform(rng, static_cast<std::size_t>(C * H * W)),
                             wv = uniform(rng, static_cast<std::size_t>(C * O * KH * K)),
                             bv = uniform(rng, static_cast<std::size_t>(O));
    B m(13);
    m.input("x", std::vector<std::int64_t>(xs.begin(), xs.end()))
        .output("y")
        .init("w", std::vector<std::int64_t>(ws.begin(), ws.end()), wv)
        .init("b", {O}, bv);
    auto& n = m.node("ConvTranspose", {"x", "w", "b"}, {"y"}, "up");
    B::attr_ints(n, "strides", rank == 2 ? std::vector<std::int64_t>{S, S} : std::vector<std::int64_t>{S});
    B::attr_ints(n, "output_shape", rank == 2 ? std::vector<std::int64_t>{OH, OW} : std::vector<std::int64_t>{OW});
    Model model = Model::load(device(), m.save("convt_output_shape_" + std::to_string(rank)));
    const Tensor y = model.run({{"x", Tensor::from_host(device(), xv, xs)}}).at("y");
    ASSERT_EQ(y.shape(), rank == 2 ? (Shape{1, O, OH, OW}) : (Shape{1, O, OW}));
    std::vector<double> ref(static_cast<std::size_t>(O * OH * OW));
    for (std::int64_t o = 0; o < O; ++o)
      for (std::int64_t i = 0; i < OH * OW; ++i) ref[o * OH * OW + i] = bv[o];
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t ih = 0; ih < H; ++ih)
        for (std::int64_t iw = 0; iw < W; ++iw)
          for (std::int64_t o = 0; o < O; ++o)
            for (std::int64_t kh = 0; kh < KH; ++kh)
              for (std::int64_t kw = 0; kw < K; ++kw) {
                const std::int64_t oh = rank == 2 ? ih * S + kh : 0, ow = iw * S + kw;
                ref[(o * OH + oh) * OW + ow] +=
                    static_cast<double>(xv[(c * H + ih) * W + iw]) * wv[((c * O + o) * KH + kh) * K + kw];
              }
    EXPECT_TRUE(close(y.to_vector(), ref, 1e-5, 1e-6));
  }
}
