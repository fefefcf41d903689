// NN ops against float64 host references (forward) and finite differences (gradients).
// Tolerances: forward rtol 1e-4 / atol 1e-5 (f32 accumulation); gradients as in grad_check.hpp.
#include <bit>

#include "attention_ref.hpp"
#include "grad_check.hpp"
#include "nn/attention_plan.hpp"
#include "nn/conv_plan.hpp"
#include "nn/conv_ref.hpp"

using namespace glt_test;
using namespace gltensor;

namespace {

Conv2dOptions opts(std::array<std::int64_t, 2> s, std::array<std::int64_t, 4> p, std::array<std::int64_t, 2> d,
                   std::int64_t g) {
  Conv2dOptions o;
  o.stride = s;
  o.padding = p;
  o.dilation = d;
  o.groups = g;
  return o;
}

}  // namespace

TEST(Conv2d, ForwardMatchesDirectConvolution) {
  GLT_RNG(rng);
  struct C {
    Shape x, w;
    Conv2dOptions o;
  };
  const std::vector<C> cases = {
      {{2, 3, 9, 8}, {4, 3, 3, 3}, opts({1, 1}, {1, 1, 1, 1}, {1, 1}, 1)},
      {{1, 4, 10, 11}, {6, 2, 3, 2}, opts({2, 1}, {0, 1, 2, 0}, {1, 2}, 2)},
      {{2, 6, 7, 7}, {6, 1, 3, 3}, opts({1, 2}, {1, 1, 1, 1}, {2, 1}, 6)},  // depthwise
      {{3, 1, 28, 28}, {8, 1, 5, 5}, opts({1, 1}, {2, 2, 2, 2}, {1, 1}, 1)},
      {{1, 2, 1, 1}, {3, 2, 1, 1}, opts({1, 1}, {0, 0, 0, 0}, {1, 1}, 1)},
      // OH * OW multiples of 4 with OW not: im2col's quads of positions wrap to the next row
      {{2, 3, 6, 6}, {4, 3, 3, 3}, opts({1, 1}, {1, 1, 1, 1}, {1, 1}, 1)},
      {{1, 2, 15, 7}, {3, 2, 3, 3}, opts({2, 1}, {1, 1, 1, 1}, {1, 2}, 1)},  // 8 x 5 outputs
  };
  for (const char* path : {"im2col", "direct"})  // GLTENSOR_CONV: both forward paths
    for (const auto& c : cases) {
      ScopedSettings s;
      s->conv = detail::parse_conv(path);
      auto xv = uniform(rng, numel_of(c.x)), wv = uniform(rng, numel_of(c.w)), bv = uniform(rng, c.w[0]);
      HostT hx{{xv.begin(), xv.end()}, c.x}, hw{{wv.begin(), wv.end()}, c.w};
      std::vector<double> hb(bv.begin(), bv.end());
      Shape os;
      auto ref = ref_conv(hx, hw, &hb, c.o, os);
      Tensor y = conv2d(Tensor::from_host(device(), xv, c.x), Tensor::from_host(device(), wv, c.w),
                        Tensor::from_host(device(), bv, {c.w[0]}), c.o);
      EXPECT_EQ(y.shape(), os);
      EXPECT_TRUE(close(y.to_vector(), ref, 1e-4, 1e-5)) << path << " " << to_string(c.x) << " * " << to_string(c.w);
    }
  // The quad-load matmul kernel writing NCHW directly (forced: too few tiles to be chosen), with
  // and without sliced K, and the warp-tiled kernel (its 128-row tile's edge): 64 output
  // channels, K = 144, Nimg * OH * OW a multiple of 128.
  // Padding, bias in its epilogue; stride, dilation, asymmetric padding, OW = 6 (im2col's quads
  // of positions wrap to the next row), a non-contiguous (NHWC) input; f16 input and weights.
  for (const char* kernel : {"vec4", "vec4s", "warp"}) {
    ScopedEnv env("GLTENSOR_MATMUL_KERNEL", kernel);
    struct IC {
      Shape x;
      Conv2dOptions o;
      bool nhwc, f16;
    };
    for (const IC& c : std::vector<IC>{{{2, 16, 16, 16}, Conv2dOptions::pad(1), false, false},
                                       {{16, 16, 9, 9}, opts({2, 1}, {1, 0, 0, 1}, {1, 2}, 1), true, false},
                                       {{2, 16, 16, 16}, Conv2dOptions::pad(1), false, true}}) {
      const Shape ws{64, 16, 3, 3};
      auto xv = uniform(rng, numel_of(c.x)), wv = uniform(rng, numel_of(ws)), bv = uniform(rng, 64);
      if (c.f16)
        for (auto* v : {&xv, &wv})
          for (auto& f : *v) f = f16_to_f32(f32_to_f16(f));
      HostT hx{{xv.begin(), xv.end()}, c.x}, hw{{wv.begin(), wv.end()}, ws};
      std::vector<double> hb(bv.begin(), bv.end());
      Shape os;
      auto ref = ref_conv(hx, hw, &hb, c.o, os);
      const DType dt = c.f16 ? DType::f16 : DType::f32;
      Tensor x = Tensor::from_host(device(), xv, c.x, dt);
      if (c.nhwc) x = x.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
      Tensor y = conv2d(x, Tensor::from_host(device(), wv, ws, dt), Tensor::from_host(device(), bv, {64}), c.o);
      EXPECT_EQ(y.shape(), os);
      EXPECT_EQ(y.dtype(), dt);
      EXPECT_TRUE(close(y.to(DType::f32).to_vector(), ref, c.f16 ? 2e-3 : 1e-4, c.f16 ? 2e-3 : 1e-5))
          << kernel << " " << to_string(c.x) << (c.nhwc ? " NHWC view" : "") << (c.f16 ? " f16" : "");
    }
  }
  // im2col's grid split into several dispatches (at most 3 workgroups per grid dimension): the 5
  // images' 5120 positions (1280 quads: 5 workgroups, 2 dispatches) x 18 rows (c, kh, kw; 6).
  {
    const Shape xs{5, 2, 32, 32}, ws{3, 2, 3, 3};
    auto xv = uniform(rng, numel_of(xs)), wv = uniform(rng, numel_of(ws));
    HostT hx{{xv.begin(), xv.end()}, xs}, hw{{wv.begin(), wv.end()}, ws};
    Shape os;
    auto ref = ref_conv(hx, hw, nullptr, Conv2dOptions::pad(1), os);
    Tensor x = Tensor::from_host(device(), xv, xs), w = Tensor::from_host(device(), wv, ws);
    ScopedSettings s;
    s->conv = detail::ConvSetting::im2col;
    std::optional<ScopedDispatchLimit> dispatch_limit{std::in_place, 3};
    const auto d0 = device().dispatch_count();
    Tensor y = conv2d(x, w, Tensor(), Conv2dOptions::pad(1));
    EXPECT_GE(device().dispatch_count() - d0, 12u);  // im2col alone: 2 x 6 dispatches
    dispatch_limit.reset();
    EXPECT_TRUE(close(y.to_vector(), ref, 1e-4, 1e-5)) << "split im2col grid";
  }
  // 1x1 convolutions of several images on the GEMM path, as one batched matmul (no columns
  // matrix: a single dispatch) and through im2col (GLTENSOR_CONV_POINTWISE=im2col): odd positions,
  // one position, one image, bias and none; an NHWC view takes im2col either way.
  for (const char* form : {"batched", "im2col"}) {
    struct PC {
      Shape x;
      std::int64_t o;
      bool bias, nhwc;
    };
    for (const PC& c : std::vector<PC>{{{3, 40, 5, 7}, 24, true, false},
                                       {{2, 36, 1, 1}, 5, false, false},
                                       {{1, 40, 3, 3}, 8, true, false},
                                       {{4, 33, 4, 3}, 7, true, true}}) {
      ScopedEnv env("GLTENSOR_CONV_POINTWISE", form);
      ScopedSettings st;
      st->conv = detail::ConvSetting::im2col;
      const Shape ws{c.o, c.x[1], 1, 1};
      auto xv = uniform(rng, numel_of(c.x)), wv = uniform(rng, numel_of(ws)), bv = uniform(rng, c.o);
      HostT hx{{xv.begin(), xv.end()}, c.x}, hw{{wv.begin(), wv.end()}, ws};
      std::vector<double> hb(bv.begin(), bv.end());
      Shape os;
      auto ref = ref_conv(hx, hw, c.bias ? &hb : nullptr, Conv2dOptions{}, os);
      Tensor x = Tensor::from_host(device(), xv, c.x);
      if (c.nhwc) x = x.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
      Tensor w = Tensor::from_host(device(), wv, ws), b = c.bias ? Tensor::from_host(device(), bv, {c.o}) : Tensor();
      device().synchronize();
      const auto d0 = device().dispatch_count();
      Tensor y = conv2d(x, w, b, Conv2dOptions{});
      const auto dispatches = device().dispatch_count() - d0;
      EXPECT_EQ(y.shape(), os);
      EXPECT_TRUE(close(y.to_vector(), ref, 1e-4, 1e-5)) << form << " " << to_string(c.x) << " -> " << c.o;
      if (std::string(form) == "batched" && !c.nhwc) {
        EXPECT_EQ(dispatches, 1u) << "one matmul, no im2col, for " << to_string(c.x);
      }
      if (std::string(form) == "im2col" && c.x[0] > 1) {
        EXPECT_GE(dispatches, 2u) << "im2col and the matmul for " << to_string(c.x);
      }
    }
  }
  // non-contiguous input (NHWC storage viewed as NCHW)
  auto xv = uniform(rng, 2 * 5 * 6 * 3), wv = uniform(rng, 4 * 3 * 3 * 3);
  Tensor nhwc = Tensor::from_host(device(), xv, {2, 5, 6, 3});
  Tensor x = nhwc.permute({0, 3, 1, 2});
  HostT hx{std::vector<double>(), {2, 3, 5, 6}}, hw{{wv.begin(), wv.end()}, {4, 3, 3, 3}};
  for (float v : gather_view(xv, x)) hx.v.push_back(v);
  Shape os;
  auto ref = ref_conv(hx, hw, nullptr, Conv2dOptions::pad(1), os);
  EXPECT_TRUE(
      close(conv2d(x, Tensor::from_host(device(), wv, {4, 3, 3, 3}), Tensor(), Conv2dOptions::pad(1)).to_vector(), ref,
            1e-4, 1e-5));
}

TEST(Conv2d, Gradients) {
  GLT_RNG(rng);
  for (const char* path : {"im2col", "direct"})  // the direct forward saves no columns
    for (auto o : {opts({1, 1}, {1, 0, 1, 2}, {1, 1}, 1), opts({2, 2}, {1, 1, 1, 1}, {1, 1}, 2)}) {
      ScopedSettings s;
      s->conv = detail::parse_conv(path);
      EXPECT_TRUE(grad_check(
          rng, {{2, 4, 6, 5}, {4, 4 / o.groups, 3, 3}, {4}}, [o](auto& t) { return conv2d(t[0], t[1], t[2], o); },
          [o](const std::vector<HostT>& x) {
            Shape os;
            return ref_conv(x[0], x[1], &x[2].v, o, os);
          }));
    }
}

TEST(Conv2d, TransposeMatchesDefinition) {
  GLT_RNG(rng);
  const std::int64_t N = 2, Cin = 4, H = 5, W = 4, Cout = 3, KH = 3, KW = 2, G = 1;
  Conv2dOptions o = opts({2, 1}, {1, 0, 0, 1}, {1, 2}, G);
  auto xv = uniform(rng, N * Cin * H * W), wv = uniform(rng, Cin * Cout * KH * KW), bv = uniform(rng, Cout);
  Tensor y = conv_transpose2d(Tensor::from_host(device(), xv, {N, Cin, H, W}),
                              Tensor::from_host(device(), wv, {Cin, Cout, KH, KW}),
                              Tensor::from_host(device(), bv, {Cout}), o, {1, 0});
  const std::int64_t OH = (H - 1) * 2 - 1 + 1 * (KH - 1) + 1 + 1, OW = (W - 1) * 1 - 1 + 2 * (KW - 1) + 1;
  ASSERT_EQ(y.shape(), (Shape{N, Cout, OH, OW}));
  std::vector<double> ref(N * Cout * OH * OW);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t co = 0; co < Cout; ++co)
      for (std::int64_t i = 0; i < OH * OW; ++i) ref[(n * Cout + co) * OH * OW + i] = bv[co];
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t ci = 0; ci < Cin; ++ci)
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t w = 0; w < W; ++w)
          for (std::int64_t co = 0; co < Cout; ++co)
            for (std::int64_t kh = 0; kh < KH; ++kh)
              for (std::int64_t kw = 0; kw < KW; ++kw) {
                const std::int64_t oh = h * 2 - 1 + kh * 1, ow = w * 1 - 0 + kw * 2;
                if (oh < 0 || oh >= OH || ow < 0 || ow >= OW) continue;
                ref[((n * Cout + co) * OH + oh) * OW + ow] +=
                    double(xv[((n * Cin + ci) * H + h) * W + w]) * wv[((ci * Cout + co) * KH + kh) * KW + kw];
              }
  EXPECT_TRUE(close(y.to_vector(), ref, 1e-4, 1e-5));
}

// output_padding below max(stride, dilation) on each axis (PyTorch's rule; larger values only
// add rows and columns no input reaches): a ValueError naming the op, the values, the stride,
// the dilation and the shapes; the largest allowed still runs. The 1-D form names itself.
TEST(Conv2d, TransposeOutputPaddingBelowStrideOrDilation) {
  const Tensor x = ones(device(), {1, 2, 4, 3}), w = ones(device(), {2, 3, 3, 2});
  const Conv2dOptions o = opts({2, 1}, {0, 0, 0, 0}, {1, 3}, 1);  // max(stride, dilation) = [2, 3]
  // H: 3 * 2 + 2 + 1 + 1 = 10, W: 2 + 3 + 2 + 1 = 8
  EXPECT_EQ(conv_transpose2d(x, w, Tensor(), o, {1, 2}).shape(), (Shape{1, 3, 10, 8}));
  EXPECT_THROW_MSG(conv_transpose2d(x, w, Tensor(), o, {2, 0}), ValueError,
                   "gltensor::conv_transpose2d: output_padding [2, 0] must be >= 0 and smaller than max(stride, "
                   "dilation) (stride [2, 1], dilation [1, 3]), x [1, 2, 4, 3], weight [2, 3, 3, 2]");
  EXPECT_THROW_MSG(conv_transpose2d(x, w, Tensor(), o, {0, 3}), ValueError, "output_padding [0, 3]");
  EXPECT_THROW_MSG(conv_transpose2d(x, w, Tensor(), o, {-1, 0}), ValueError, "output_padding [-1, 0]");
  EXPECT_THROW_MSG(conv_transpose2d(x, w, Tensor(), Conv2dOptions{}, {0, 1}), ValueError,
                   "output_padding [0, 1] must be >= 0 and smaller than max(stride, dilation) (stride [1, 1]");
  const Tensor x1 = ones(device(), {1, 2, 5}), w1 = ones(device(), {2, 3, 3});
  Conv1dOptions o1;
  o1.stride = 2;
  EXPECT_EQ(conv_transpose1d(x1, w1, Tensor(), o1, 1).shape(), (Shape{1, 3, 12}));  // 4 * 2 + 2 + 1 + 1
  EXPECT_THROW_MSG(conv_transpose1d(x1, w1, Tensor(), o1, 2), ValueError,
                   "gltensor::conv_transpose1d: output_padding 2 must be >= 0 and smaller than max(stride, dilation) "
                   "(stride 2, dilation 1), x [1, 2, 5], weight [2, 3, 3]");
  o1.stride = 1, o1.dilation = 2;
  EXPECT_EQ(conv_transpose1d(x1, w1, Tensor(), o1, 1).shape(), (Shape{1, 3, 10}));  // 4 + 4 + 1 + 1
  EXPECT_THROW_MSG(conv_transpose1d(x1, w1, Tensor(), o1, -1), ValueError, "output_padding -1");
}

// conv_transpose1d's other errors name it too (not the conv_transpose2d it runs as), with its
// own 3-D shapes: channels against groups, an empty output, a bias, stride, padding, groups, and
// a gradient asked of it.
TEST(Conv2d, Transpose1dErrorsNameIt) {
  const Tensor x = ones(device(), {1, 4, 5}), w = ones(device(), {4, 3, 3});
  Conv1dOptions o;
  o.groups = 3;
  EXPECT_THROW_MSG(conv_transpose1d(x, w, Tensor(), o), ShapeError,
                   "gltensor::conv_transpose1d: input [1, 4, 5] and weight [4, 3, 3] do not match with groups = 3");
  EXPECT_THROW_MSG(conv_transpose1d(x, ones(device(), {2, 3, 3}), Tensor()), ShapeError,
                   "gltensor::conv_transpose1d: input [1, 4, 5] and weight [2, 3, 3] do not match");
  o = Conv1dOptions{};
  o.padding = {4, 4};
  EXPECT_THROW_MSG(conv_transpose1d(x, w, Tensor(), o), ShapeError,
                   "gltensor::conv_transpose1d: output size -1 is empty (x [1, 4, 5], weight [4, 3, 3])");
  EXPECT_THROW_MSG(conv_transpose1d(x, w, ones(device(), {4})), ShapeError,
                   "gltensor::conv_transpose1d: bias [4] must be [3]");
  o = Conv1dOptions{};
  o.stride = 0;
  EXPECT_THROW_MSG(conv_transpose1d(x, w, Tensor(), o), ValueError,
                   "gltensor::conv_transpose1d: stride must be positive");
  o = Conv1dOptions{};
  o.padding = {-1, 0};
  EXPECT_THROW_MSG(conv_transpose1d(x, w, Tensor(), o), ValueError, "gltensor::conv_transpose1d: padding must be >= 0");
  o = Conv1dOptions{};
  o.groups = 0;
  EXPECT_THROW_MSG(conv_transpose1d(x, w, Tensor(), o), ValueError,
                   "gltensor::conv_transpose1d: groups must be positive");
  Tensor xg = ones(device(), {1, 4, 5});
  requires_grad_(xg);
  EXPECT_THROW_MSG(backward(sum(conv_transpose1d(xg, w))), Error, "conv_transpose1d");
  EXPECT_EQ(conv_transpose1d(x, w).shape(), (Shape{1, 3, 7}));  // valid arguments still run
}

namespace {
std::vector<double> ref_pool(const HostT& x, int mode, const Pool2dOptions& o, std::int64_t OH, std::int64_t OW) {
  const std::int64_t N = x.s[0], C = x.s[1], H = x.s[2], W = x.s[3];
  const std::int64_t sh = o.stride[0] ? o.stride[0] : o.kernel[0], sw = o.stride[1] ? o.stride[1] : o.kernel[1];
  std::vector<double> y;
  for (std::int64_t p = 0; p < N * C; ++p)
    for (std::int64_t oh = 0; oh < OH; ++oh)
      for (std::int64_t ow = 0; ow < OW; ++ow) {
        std::int64_t h0, h1, w0, w1, div;
        if (mode == 2) {
          h0 = oh * H / OH, h1 = ((oh + 1) * H + OH - 1) / OH, w0 = ow * W / OW, w1 = ((ow + 1) * W + OW - 1) / OW;
          div = (h1 - h0) * (w1 - w0);
        } else {
          h0 = oh * sh - o.padding[0], w0 = ow * sw - o.padding[1];
          h1 = h0 + (o.kernel[0] - 1) * (mode == 0 ? o.dilation[0] : 1) + 1;
          w1 = w0 + (o.kernel[1] - 1) * (mode == 0 ? o.dilation[1] : 1) + 1;
          div = (std::min(h1, H + o.padding[0]) - h0) * (std::min(w1, W + o.padding[1]) - w0);
          if (!o.count_include_pad)
            div = (std::min(h1, H) - std::max<std::int64_t>(h0, 0)) * (std::min(w1, W) - std::max<std::int64_t>(w0, 0));
        }
        double acc = mode == 0 ? -1e300 : 0;
        for (std::int64_t h = h0; h < h1; h += (mode == 0 ? o.dilation[0] : 1))
          for (std::int64_t w = w0; w < w1; w += (mode == 0 ? o.dilation[1] : 1)) {
            if (h < 0 || h >= H || w < 0 || w >= W) continue;
            const double v = x.v[(p * H + h) * W + w];
            acc = mode == 0 ? std::max(acc, v) : acc + v;
          }
        y.push_back(mode == 0 ? acc : acc / div);
      }
  return y;
}
}  // namespace

TEST(Pool2d, ForwardAndGradients) {
  GLT_RNG(rng);
  Pool2dOptions a;
  a.kernel = {3, 2};
  a.stride = {2, 2};
  a.padding = {1, 1};
  a.ceil_mode = true;
  Pool2dOptions b;
  b.kernel = {2, 2};
  Pool2dOptions c = a;
  c.count_include_pad = false;
  c.ceil_mode = false;
  Pool2dOptions d;
  d.kernel = {2, 3};
  d.stride = {1, 2};
  d.dilation = {2, 1};
  // Disjoint windows (max's backward gathers: b, e) with padding, gaps between windows and
  // ceil_mode; overlapping ones (a, d) scatter.
  Pool2dOptions e;
  e.kernel = {2, 2};
  e.stride = {3, 2};
  e.padding = {1, 1};
  e.ceil_mode = true;
  for (const auto& [o, mode] :
       std::vector<std::pair<Pool2dOptions, int>>{{a, 0}, {b, 0}, {d, 0}, {e, 0}, {a, 1}, {b, 1}, {c, 1}}) {
    const Shape s = {2, 3, 7, 6};
    auto fwd = [o = o, mode = mode](const Tensor& t) { return mode == 0 ? max_pool2d(t, o) : avg_pool2d(t, o); };
    Tensor probe = fwd(zeros(device(), s));
    const std::int64_t OH = probe.size(2), OW = probe.size(3);
    EXPECT_TRUE(grad_check(
        rng, {s}, [&](auto& t) { return fwd(t[0]); },
        [&](const std::vector<HostT>& x) { return ref_pool(x[0], mode, o, OH, OW); }, -1, 1, mode == 0))
        << "mode " << mode << " ceil " << o.ceil_mode;
  }
  // sizes: torch gives 4x4 for 7x6 with k(3,2) s2 p1 ceil_mode
  Tensor z = zeros(device(), {1, 1, 7, 6});
  EXPECT_EQ(max_pool2d(z, a).shape(), (Shape{1, 1, 4, 4}));
  EXPECT_EQ(adaptive_avg_pool2d(z, {3, 4}).shape(), (Shape{1, 1, 3, 4}));
  EXPECT_TRUE(grad_check(
      rng, {{2, 2, 7, 6}},
      [](auto& t) {
        return adaptive_avg_pool2d(t[0], {3, 4});
      },
      [](const std::vector<HostT>& x) { return ref_pool(x[0], 2, Pool2dOptions{}, 3, 4); }));
  EXPECT_EQ(global_avg_pool2d(ones(device(), {2, 3, 4, 5})).shape(), (Shape{2, 3, 1, 1}));
  Pool2dOptions bad;
  bad.kernel = {2, 2};
  bad.padding = {2, 0};  // not smaller than the kernel
  EXPECT_THROW(max_pool2d(z, bad), ValueError);
  EXPECT_THROW(max_pool2d(ones(device(), {3, 4}), b), ShapeError);
}

TEST(Norms, BatchLayerGroupRms) {
  GLT_RNG(rng);
  const Shape s = {4, 3, 2, 5};
  auto norm_ref = [](const HostT& x, std::function<std::int64_t(std::int64_t)> group, const HostT* w, const HostT* b,
                     std::function<std::int64_t(std::int64_t)> chan, bool rms, double eps) {
    std::map<std::int64_t, std::vector<double>> g;
    for (std::size_t i = 0; i < x.size(); ++i) g[group(i)].push_back(x.v[i]);
    std::map<std::int64_t, std::pair<double, double>> stats;
    for (auto& [k, v] : g) {
      double m = 0, q = 0;
      for (double e : v) m += e, q += e * e;
      m /= v.size();
      q /= v.size();
      stats[k] = rms ? std::make_pair(0.0, q) : std::make_pair(m, q - m * m);
    }
    std::vector<double> y;
    for (std::size_t i = 0; i < x.size(); ++i) {
      auto [m, v] = stats[group(i)];
      double r = (x.v[i] - m) / std::sqrt(v + eps);
      if (w) r *= w->v[chan(i)];
      if (b) r += b->v[chan(i)];
      y.push_back(r);
    }
    return y;
  };
  auto chan = [](std::int64_t i) { return (i / 10) % 3; };
  auto last2 = [](std::int64_t i) { return i % 10; };
  EXPECT_TRUE(grad_check(
      rng, {s, {3}, {3}}, [](auto& t) { return batch_norm(t[0], Tensor(), Tensor(), t[1], t[2], true); },
      [&](const std::vector<HostT>& x) { return norm_ref(x[0], chan, &x[1], &x[2], chan, false, 1e-5); }));
  EXPECT_TRUE(grad_check(
      rng, {s, {2, 5}, {2, 5}}, [](auto& t) { return layer_norm(t[0], 2, t[1], t[2]); },
      [&](const std::vector<HostT>& x) {
        return norm_ref(
            x[0], [](auto i) { return i / 10; }, &x[1], &x[2], last2, false, 1e-5);
      }));
  EXPECT_TRUE(grad_check(
      rng, {s, {5}}, [](auto& t) { return rms_norm(t[0], 1, t[1]); },
      [&](const std::vector<HostT>& x) {
        return norm_ref(
            x[0], [](auto i) { return i / 5; }, &x[1], nullptr, [](auto i) { return i % 5; }, true, 1e-6);
      }));
  const Shape s6 = {2, 6, 3};
  EXPECT_TRUE(grad_check(
      rng, {s6, {6}, {6}}, [](auto& t) { return group_norm(t[0], 3, t[1], t[2]); },
      [&](const std::vector<HostT>& x) {
        return norm_ref(
            x[0], [](auto i) { return i / 6; }, &x[1], &x[2], [](auto i) { return (i / 3) % 6; }, false, 1e-5);
      }));
  // the fused forward (no gradient needed): views, missing affine parameters, long rows, f16
  for (const Shape& ls : std::vector<Shape>{{7, 33}, {3, 2, 1500}, {5, 1}}) {
    auto xv = uniform(rng, numel_of(ls), -3, 2);
    Tensor base = Tensor::from_host(device(), xv, ls);
    const std::int64_t L = ls.back();
    auto wv = uniform(rng, L), bv = uniform(rng, L);
    Tensor w = Tensor::from_host(device(), wv, {L}), b = Tensor::from_host(device(), bv, {L});
    auto ref = [&](const std::vector<float>& x, bool affine) {
      std::vector<double> y(x.size());
      for (std::size_t r = 0; r < x.size() / L; ++r) {
        double m = 0, q = 0;
        for (std::int64_t i = 0; i < L; ++i) m += x[r * L + i];
        m /= L;
        for (std::int64_t i = 0; i < L; ++i) q += (x[r * L + i] - m) * (x[r * L + i] - m);
        q /= L;
        for (std::int64_t i = 0; i < L; ++i)
          y[r * L + i] = (x[r * L + i] - m) / std::sqrt(q + 1e-5) * (affine ? wv[i] : 1.0) + (affine ? bv[i] : 0.0);
      }
      return y;
    };
    EXPECT_TRUE(close(layer_norm(base, 1, w, b).to_vector(), ref(xv, true), 1e-4, 1e-5)) << to_string(ls);
    EXPECT_TRUE(close(layer_norm(base, 1).to_vector(), ref(xv, false), 1e-4, 1e-5)) << to_string(ls);
    if (ls[0] > 1) {  // a row-sliced view with a storage offset
      Tensor v = base.slice(0, 1, ls[0]);
      std::vector<float> sub(xv.begin() + numel_of(ls) / ls[0], xv.end());
      EXPECT_TRUE(close(layer_norm(v, 1, w, b).to_vector(), ref(sub, true), 1e-4, 1e-5)) << "offset view";
    }
    Tensor h = layer_norm(base.to(DType::f16), 1, w, b);
    EXPECT_EQ(h.dtype(), DType::f16);
  }
  // running statistics and eval mode
  auto xv = uniform(rng, numel_of(s), -2, 3);
  Tensor x = Tensor::from_host(device(), xv, s);
  Tensor rm = zeros(device(), {3}), rv = ones(device(), {3});
  batch_norm(x, rm, rv, Tensor(), Tensor(), true, 0.1);
  auto rmv = rm.to_vector(), rvv = rv.to_vector();
  for (int c = 0; c < 3; ++c) {
    double m = 0, q = 0;
    int n = 0;
    for (std::size_t i = 0; i < xv.size(); ++i)
      if (chan(i) == c) m += xv[i], q += double(xv[i]) * xv[i], ++n;
    m /= n;
    const double var_unbiased = (q - n * m * m) / (n - 1);
    EXPECT_NEAR(rmv[c], 0.1 * m, 1e-5);
    EXPECT_NEAR(rvv[c], 0.9 + 0.1 * var_unbiased, 1e-4);
  }
  auto ev = batch_norm(x, rm, rv, Tensor(), Tensor(), false).to_vector();
  for (std::size_t i = 0; i < xv.size(); ++i)
    ASSERT_NEAR(ev[i], (xv[i] - rmv[chan(i)]) / std::sqrt(rvv[chan(i)] + 1e-5), 1e-4);
  EXPECT_THROW(batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), false), ValueError);
  EXPECT_THROW(layer_norm(x, 2, ones(device(), {5})), ShapeError);
  EXPECT_THROW(group_norm(x, 2), ShapeError);
}

TEST(Losses, CrossEntropyNllMse) {
  GLT_RNG(rng);
  const std::vector<std::int32_t> target = {2, 0, 4, 4, 1};
  auto ce_ref = [&](double ls) {
    return [&, ls](const std::vector<HostT>& x) {
      double total = 0;
      for (int n = 0; n < 5; ++n) {
        double m = -1e300, s = 0, mean_lsm = 0;
        for (int c = 0; c < 5; ++c) m = std::max(m, x[0].v[n * 5 + c]);
        for (int c = 0; c < 5; ++c) s += std::exp(x[0].v[n * 5 + c] - m);
        for (int c = 0; c < 5; ++c) mean_lsm += (x[0].v[n * 5 + c] - m - std::log(s)) / 5;
        const double nll = -(x[0].v[n * 5 + target[n]] - m - std::log(s));
        total += (1 - ls) * nll - ls * mean_lsm;
      }
      return std::vector<double>{total / 5};
    };
  };
  Tensor t = Tensor::from_host(device(), std::span<const std::int32_t>(target), {5});
  EXPECT_TRUE(grad_check(
      rng, {{5, 5}}, [&](auto& x) { return cross_entropy(x[0], t); }, ce_ref(0.0), -3, 3));
  EXPECT_TRUE(grad_check(
      rng, {{5, 5}}, [&](auto& x) { return cross_entropy(x[0], t, Reduction::mean, 0.1); }, ce_ref(0.1), -3, 3));
  EXPECT_TRUE(grad_check(
      rng, {{5, 5}}, [&](auto& x) { return nll_loss(x[0], t, Reduction::sum); },
      [&](const std::vector<HostT>& x) {
        double s = 0;
        for (int n = 0; n < 5; ++n) s -= x[0].v[n * 5 + target[n]];
        return std::vector<double>{s};
      }));
  EXPECT_TRUE(grad_check(
      rng, {{3, 4}, {3, 4}}, [](auto& x) { return mse_loss(x[0], x[1]); },
      [](const std::vector<HostT>& x) {
        double s = 0;
        for (int i = 0; i < 12; ++i) s += (x[0].v[i] - x[1].v[i]) * (x[0].v[i] - x[1].v[i]);
        return std::vector<double>{s / 12};
      }));
  Tensor bad =
      Tensor::from_host(device(), std::span<const std::int32_t>(std::vector<std::int32_t>{0, 7, 1, 1, 1}), {5});
  EXPECT_THROW(cross_entropy(zeros(device(), {5, 5}), bad).item(), IndexError);
  EXPECT_THROW(cross_entropy(zeros(device(), {5, 5}), zeros(device(), {5})), DTypeError);
  EXPECT_THROW(cross_entropy(zeros(device(), {5, 5}), t.slice(0, 0, 3)), ShapeError);
}

// Class targets outside [0, C) are IndexError naming the loss (at the next read), -1 included;
// only ignore_index is exempt.
TEST(Losses, TargetOutOfRangeIsIndexError) {
  auto tgt = [](std::vector<std::int32_t> v) {
    const auto n = static_cast<std::int64_t>(v.size());
    return Tensor::from_host(device(), std::span<const std::int32_t>(v), {n});
  };
  Tensor logits = zeros(device(), {4, 3});
  for (auto bad : {std::vector<std::int32_t>{0, -1, 1, 2}, {0, 1, 3, 2}, {-3, 0, 0, 0}}) {
    for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none}) {
      try {
        cross_entropy(logits, tgt(bad), r).to_vector();
        ADD_FAILURE() << "cross_entropy accepted target " << bad[0] << ", " << bad[1] << ", " << bad[2];
      } catch (const IndexError& e) {
        EXPECT_NE(std::string(e.what()).find("cross_entropy"), std::string::npos) << e.what();
      }
      try {
        nll_loss(logits, tgt(bad), r).to_vector();
        ADD_FAILURE() << "nll_loss accepted target " << bad[0] << ", " << bad[1] << ", " << bad[2];
      } catch (const IndexError& e) {
        EXPECT_NE(std::string(e.what()).find("nll_loss"), std::string::npos) << e.what();
      }
    }
  }
  // The device stays usable and in-range targets work.
  EXPECT_NEAR(cross_entropy(logits, tgt({0, 1, 2, 2})).item(), std::log(3.0), 1e-6);
}

// ignore_index (torch): those samples add 0 to the loss and its gradient and are left out of the
// mean's denominator; any other target outside [0, C) is still IndexError.
TEST(Losses, IgnoreIndex) {
  GLT_RNG(rng);
  const int N = 9, C = 5;
  const std::vector<std::int32_t> target = {2, -100, 4, 4, 1, -100, 0, 2, 3};  // ignore_index -100 (default)
  const std::vector<std::int32_t> target2 = {2, 1, 4, 4, 1, 2, 0, 2, 3};       // ignore_index 2 (a class)
  const std::vector<std::int32_t> target4 = {2, 1, 4, 4, 1, 0, 0, 2, 3};       // ignore_index 4
  auto dev_t = [](const std::vector<std::int32_t>& v) {
    return Tensor::from_host(device(), std::span<const std::int32_t>(v), {static_cast<std::int64_t>(v.size())});
  };
  Tensor t = dev_t(target), t2 = dev_t(target2), t4 = dev_t(target4);
  // Per-sample (1 - ls) * nll + ls * smoothing term; ignored samples give 0 (and no count).
  auto ref = [&](const std::vector<std::int32_t>& tg, Reduction red, double ls, int ignore, bool log_probs_in) {
    return [&tg, red, ls, ignore, log_probs_in](const std::vector<HostT>& x) {
      std::vector<double> per(N, 0.0);
      double total = 0, count = 0;
      for (int n = 0; n < N; ++n) {
        if (tg[n] == ignore) continue;
        double m = -1e300, s = 0, mean_lsm = 0;
        for (int c = 0; c < C; ++c) m = std::max(m, x[0].v[n * C + c]);
        for (int c = 0; c < C; ++c) s += std::exp(x[0].v[n * C + c] - m);
        auto lsm = [&](int c) { return log_probs_in ? x[0].v[n * C + c] : x[0].v[n * C + c] - m - std::log(s); };
        for (int c = 0; c < C; ++c) mean_lsm += lsm(c) / C;
        per[n] = -(1 - ls) * lsm(tg[n]) - ls * mean_lsm;
        total += per[n];
        count += 1;
      }
      if (red == Reduction::none) return per;
      return std::vector<double>{red == Reduction::sum ? total : total / count};
    };
  };
  for (Reduction red : {Reduction::mean, Reduction::sum, Reduction::none}) {
    SCOPED_TRACE(static_cast<int>(red));
    EXPECT_TRUE(grad_check(
        rng, {{N, C}}, [&](auto& x) { return cross_entropy(x[0], t, red); }, ref(target, red, 0.0, -100, false), -3,
        3));
    EXPECT_TRUE(grad_check(
        rng, {{N, C}}, [&](auto& x) { return cross_entropy(x[0], t2, red, 0.2, 2); }, ref(target2, red, 0.2, 2, false),
        -3, 3));
    EXPECT_TRUE(grad_check(
        rng, {{N, C}}, [&](auto& x) { return nll_loss(x[0], t, red); }, ref(target, red, 0.0, -100, true), -3, 3));
    EXPECT_TRUE(grad_check(
        rng, {{N, C}}, [&](auto& x) { return nll_loss(x[0], t4, red, 4); }, ref(target4, red, 0.0, 4, true), -3, 3));
  }
  // NaN logits in an ignored sample do not reach the loss; every sample ignored: mean is NaN (0/0).
  std::vector<float> x(N * C, 0.5f);
  x[1 * C + 3] = NAN;
  Tensor tx = Tensor::from_host(device(), x, {N, C});
  EXPECT_TRUE(std::isfinite(cross_entropy(tx, t).item()));
  Tensor all = full(device(), {N}, -100, DType::i32);
  EXPECT_TRUE(std::isnan(cross_entropy(tx, all).item()));
  EXPECT_EQ(nll_loss(tx, all, Reduction::sum).item(), 0.0f);
  // Only ignore_index is exempt: -100 with ignore_index -1 is out of range, -1 is not.
  EXPECT_THROW(cross_entropy(zeros(device(), {N, C}), t, Reduction::mean, 0.0, -1).item(), IndexError);
  Tensor m1 = full(device(), {N}, -1, DType::i32);
  EXPECT_NEAR(cross_entropy(zeros(device(), {N, C}), m1.slice(0, 0, 1).expand({N}), Reduction::sum, 0.0, -1).item(),
              0.0, 1e-7);
}

TEST(Attention, MatchesReferenceAndDifferentiates) {
  GLT_RNG(rng);
  const int B = 2, L = 5, S = 6, E = 4, Ev = 3;
  auto ref = [&](const std::vector<HostT>& x, bool causal) {
    std::vector<double> out;
    for (int b = 0; b < B; ++b)
      for (int i = 0; i < L; ++i) {
        std::vector<double> sc(S);
        double m = -1e300;
        for (int j = 0; j < S; ++j) {
          double d = 0;
          for (int e = 0; e < E; ++e) d += x[0].v[(b * L + i) * E + e] * x[1].v[(b * S + j) * E + e];
          sc[j] = (causal && j > i) ? -1e300 : d / std::sqrt(double(E));
          m = std::max(m, sc[j]);
        }
        double z = 0;
        for (int j = 0; j < S; ++j) z += (sc[j] <= -1e299) ? 0 : std::exp(sc[j] - m);
        for (int c = 0; c < Ev; ++c) {
          double acc = 0;
          for (int j = 0; j < S; ++j)
            if (sc[j] > -1e299) acc += std::exp(sc[j] - m) / z * x[2].v[(b * S + j) * Ev + c];
          out.push_back(acc);
        }
      }
    return out;
  };
  for (bool causal : {false, true})
    EXPECT_TRUE(grad_check(
        rng, {{B, L, E}, {B, S, E}, {B, S, Ev}},
        [causal](auto& t) { return scaled_dot_product_attention(t[0], t[1], t[2], Tensor(), causal); },
        [&, causal](const std::vector<HostT>& x) { return ref(x, causal); }))
        << (causal ? "causal" : "full");
  EXPECT_THROW(scaled_dot_product_attention(ones(device(), {2, 3}), ones(device(), {4, 5}), ones(device(), {4, 5})),
               ShapeError);
}

namespace {
// float64 attention reference: q [Bq, L, E], k [Bk, S, E], v [Bk, S, Ev] with Bq a multiple of
// Bk (k and v broadcast over q's batch when Bk == 1); causal top-left aligned.
std::vector<double> ref_attention(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                                  int Bq, int Bk, int L, int S, int E, int Ev, bool causal) {
  std::vector<double> out;
  for (int b = 0; b < Bq; ++b) {
    const int bk = Bk == 1 ? 0 : b;
    for (int i = 0; i < L; ++i) {
      std::vector<double> sc(S);
      double m = -INFINITY;
      for (int j = 0; j < S; ++j) {
        double d = 0;
        for (int e = 0; e < E; ++e) d += double(q[(b * L + i) * E + e]) * k[(bk * S + j) * E + e];
        sc[j] = (causal && j > i) ? -INFINITY : d / std::sqrt(double(E));
        if (!(sc[j] <= m)) m = std::isnan(sc[j]) ? sc[j] : std::max(m, sc[j]);
      }
      double z = 0;
      for (int j = 0; j < S; ++j) z += std::exp(sc[j] - m);
      for (int c = 0; c < Ev; ++c) {
        double acc = 0;
        for (int j = 0; j < S; ++j) acc += std::exp(sc[j] - m) / z * v[(bk * S + j) * Ev + c];
        out.push_back(acc);
      }
    }
  }
  return out;
}

// Environment settings that select the fused attention kernel's smaller tilings on this device
// (on llvmpipe, 32 KiB of shared memory and no subgroups, 16 query rows per workgroup).
std::vector<std::pair<const char*, const char*>> smaller_attention_tilings() {
  std::vector<std::pair<const char*, const char*>> v;
  if (device().caps().max_shared_memory >= 44 * 1024) v.push_back({"GLTENSOR_ATTENTION_BQ", "32"});
  v.push_back({"GLTENSOR_ATTENTION_BQ", "16"});
  if (device().caps().subgroup) {
    v.push_back({"GLTENSOR_ATTENTION_KEYS", "32"});
    v.push_back({"GLTENSOR_SUBGROUPS", "0"});
  }
  if (!device().adapter().software) v.push_back({"GLTENSOR_ATTENTION_KEYS", "64"});  // GPUs: the default tiling
  return v;
}

// For a tiling entry of attention.comp: attention_lanes.comp off (GPUs choose it for few row
// blocks; LanesKernelMatchesReference tests it), unless the entry is the lanes kernel's own.
const char* lanes_unless(const char* var) {
  return std::string(var).rfind("GLTENSOR_ATTENTION_LANE", 0) == 0 ? nullptr : "0";
}

// Causal attention over S keys (constant q, k, v) with NaN in key `nan_key` and Inf in query 0,
// in every tiling of the device: rows 0 and >= nan_key are NaN, the others 1.
// (lanes / block_kernel: the lanes / block kernel instead, in its plan's tiling)
void check_nan_rows(int S, int nan_key, bool lanes = false, bool block_kernel = false) {
  std::vector<float> q(S * 4, 0.5f), k(S * 4, 0.25f), v(S * 4, 1.0f);
  k[nan_key * 4 + 1] = NAN;
  q[0] = INFINITY;
  auto tilings = smaller_attention_tilings();
  tilings.insert(tilings.begin(), {"GLTENSOR_ATTENTION_KEYS", "64"});  // the default
  if (lanes) tilings = {{"GLTENSOR_ATTENTION_LANES", "1"}};
  if (block_kernel) tilings = {{"GLTENSOR_ATTENTION_BLOCK", "1"}};
  for (const auto& [var, val] : tilings) {
    ScopedEnv lanes("GLTENSOR_ATTENTION_LANES", lanes_unless(var));
    ScopedEnv block("GLTENSOR_ATTENTION_BLOCK", block_kernel ? "1" : "0");
    ScopedEnv env(var, val);
    auto out = scaled_dot_product_attention(Tensor::from_host(device(), q, {1, S, 4}),
                                            Tensor::from_host(device(), k, {1, S, 4}),
                                            Tensor::from_host(device(), v, {1, S, 4}), Tensor(), true)
                   .to_vector();
    for (int i = 0; i < S; ++i)
      for (int c = 0; c < 4; ++c) {
        const float x = out[i * 4 + c];
        if (i == 0 || i >= nan_key)
          ASSERT_TRUE(std::isnan(x)) << i << " " << var << "=" << val;
        else
          ASSERT_FLOAT_EQ(x, 1.0f) << i << " " << var << "=" << val;
      }
  }
}

// One attention case's random inputs (q, k in [-2, 2)), their float64 reference and a label.
struct AttentionCase {
  int Bq, Bk, L, S, E, Ev;
};
struct AttentionInputs {
  std::vector<double> ref;
  Tensor q, k, v;
  std::string what;
};
AttentionInputs attention_inputs(std::mt19937_64& rng, const AttentionCase& c, bool causal) {
  auto q = uniform(rng, c.Bq * c.L * c.E, -2, 2), k = uniform(rng, c.Bk * c.S * c.E, -2, 2),
       v = uniform(rng, c.Bk * c.S * c.Ev);
  return {ref_attention(q, k, v, c.Bq, c.Bk, c.L, c.S, c.E, c.Ev, causal),
          Tensor::from_host(device(), q, {c.Bq, c.L, c.E}), Tensor::from_host(device(), k, {c.Bk, c.S, c.E}),
          Tensor::from_host(device(), v, {c.Bk, c.S, c.Ev}),
          std::to_string(c.Bq) + "x" + std::to_string(c.L) + "x" + std::to_string(c.S) + "x" + std::to_string(c.E) +
              "x" + std::to_string(c.Ev) + (causal ? " causal" : "")};
}

}  // namespace

// The fused kernel (no mask, no gradient): tile edges, L != S both ways, E != Ev, head dims up to
// 64 (the kernel's 4, 8 and 16 head-dim quads: SVTR's 168 rows of 15, 24 / 20),
// broadcast k/v batches, a non-contiguous q, f16 inputs, NaN propagation; and the composite
// path (GLTENSOR_ATTENTION=composite) must agree with it; on two cases the keys split in chunks of
// one tile (GLTENSOR_ATTENTION_SPLIT=1) too. (On GPUs, where these cases take the lanes kernel,
// attention.comp's tilings run with GLTENSOR_ATTENTION_LANES=0, its default tiling included.)
TEST(Attention, FusedKernelMatchesReference) {
  GLT_RNG(rng);
  using Case = AttentionCase;
  for (const Case& c : std::vector<Case>{{2, 2, 5, 6, 4, 3},
                                         {3, 1, 70, 45, 64, 64},
                                         {1, 1, 33, 100, 16, 40},
                                         {2, 2, 129, 129, 64, 64},
                                         {2, 2, 168, 168, 15, 15},
                                         {3, 1, 37, 70, 24, 20},
                                         {1, 1, 1, 1, 1, 1}})
    for (bool causal : {false, true}) {
      const AttentionInputs in = attention_inputs(rng, c, causal);
      const auto& [ref, tq, tk, tv, what] = in;
      Tensor r = scaled_dot_product_attention(tq, tk, tv, Tensor(), causal);
      EXPECT_EQ(r.shape(), (Shape{c.Bq, c.L, c.Ev}));
      EXPECT_TRUE(close(r.to_vector(), ref, 1e-4, 1e-5)) << what;
      // The kernel's other tilings where the device would choose a larger one: 32 query rows
      // per workgroup, 32 keys per tile, shared-memory row reductions instead of clusters.
      for (const auto& [var, val] : smaller_attention_tilings()) {
        ScopedEnv lanes("GLTENSOR_ATTENTION_LANES", lanes_unless(var));
        ScopedEnv block("GLTENSOR_ATTENTION_BLOCK", "0");
        ScopedEnv env(var, val);
        EXPECT_TRUE(close(scaled_dot_product_attention(tq, tk, tv, Tensor(), causal).to_vector(), ref, 1e-4, 1e-5))
            << what << " with " << var << "=" << val;
      }
      {
        ScopedEnv env("GLTENSOR_ATTENTION", "composite");
        EXPECT_TRUE(close(scaled_dot_product_attention(tq, tk, tv, Tensor(), causal).to_vector(), ref, 1e-4, 1e-5))
            << "composite " << what;
      }
      if (c.S == 45 || c.S == 168) {  // GLTENSOR_ATTENTION_SPLIT: chunks of one key tile, kv_combine
        ScopedEnv lanes("GLTENSOR_ATTENTION_LANES", "0");
        ScopedEnv block("GLTENSOR_ATTENTION_BLOCK", "0");
        ScopedEnv env("GLTENSOR_ATTENTION_SPLIT", "1");
        EXPECT_TRUE(close(scaled_dot_product_attention(tq, tk, tv, Tensor(), causal).to_vector(), ref, 1e-4, 1e-5))
            << what << " with GLTENSOR_ATTENTION_SPLIT=1";
      }
    }
  // q as a non-contiguous view: [B, L, H, E] transposed to [B, H, L, E]; k/v f16.
  const int B = 2, H = 3, L = 40, S = 50, E = 32;
  auto q = uniform(rng, B * L * H * E), k = uniform(rng, B * H * S * E), v = uniform(rng, B * H * S * E);
  for (auto* x : {&k, &v})
    for (auto& f : *x) f = f16_to_f32(f32_to_f16(f));
  Tensor tq = Tensor::from_host(device(), q, {B, L, H, E}).transpose(1, 2);
  std::vector<float> qc = tq.contiguous().to_vector();
  auto ref = ref_attention(qc, k, v, B * H, B * H, L, S, E, E, true);
  Tensor r = scaled_dot_product_attention(tq, Tensor::from_host(device(), k, {B, H, S, E}, DType::f16),
                                          Tensor::from_host(device(), v, {B, H, S, E}, DType::f16), Tensor(), true);
  EXPECT_EQ(r.dtype(), DType::f32);
  EXPECT_TRUE(close(r.to_vector(), ref, 1e-4, 1e-5)) << "strided q, f16 k/v";
  // NaN in a key reaches exactly the rows that see it (causal: rows >= 3), Inf in q gives NaN rows;
  // in every tiling (row maxima of NaN through clustered operations or shared memory).
  check_nan_rows(8, 3);
}

// attention.comp's key chunks merged by their last workgroup (COMBINE: an arrival counter per
// batch entry and row block, the GPUs' default for few row blocks) against float64 and against
// kv_combine's dispatch (GLTENSOR_ATTENTION_COMBINE=dispatch): chunks of 1 and 2 key tiles, odd L
// and S, L != S both ways, E != Ev, broadcast batches, causal rows whose later chunks hold no key;
// the same counters again at once (a counter left non-zero would merge too early or never) and
// on another shape; the grid split over several dispatches (3 workgroups a dispatch: a row block's
// chunks in different dispatches); f16 in and out; NaN in a key and Inf in a query; more chunks
// than the merge's scratch holds (kv_combine's dispatch takes them).
TEST(Attention, SplitMergedByTheLastWorkgroup) {
  GLT_RNG(rng);
  using Case = AttentionCase;
  ScopedEnv lanes("GLTENSOR_ATTENTION_LANES", "0");
  ScopedEnv block("GLTENSOR_ATTENTION_BLOCK", "0");
  for (const Case& c : std::vector<Case>{{2, 2, 37, 301, 64, 64}, {3, 1, 70, 97, 24, 20}, {1, 1, 129, 65, 16, 40}})
    for (bool causal : {false, true}) {
      const AttentionInputs in = attention_inputs(rng, c, causal);
      const auto& [ref, tq, tk, tv, what] = in;
      for (const char* split : {"1", "2"}) {
        ScopedEnv env("GLTENSOR_ATTENTION_SPLIT", split);
        const std::vector<float> fused = scaled_dot_product_attention(tq, tk, tv, Tensor(), causal).to_vector();
        EXPECT_TRUE(close(fused, ref, 1e-4, 1e-5)) << what << " split " << split;
        // twice more at once: the counters are back at zero after each dispatch
        Tensor a = scaled_dot_product_attention(tq, tk, tv, Tensor(), causal);
        Tensor b = scaled_dot_product_attention(tq, tk, tv, Tensor(), causal);
        EXPECT_TRUE(close(a.to_vector(), ref, 1e-4, 1e-5)) << what << " split " << split << " again";
        EXPECT_TRUE(close(b.to_vector(), ref, 1e-4, 1e-5)) << what << " split " << split << " third";
        ScopedEnv dispatch("GLTENSOR_ATTENTION_COMBINE", "dispatch");
        const std::vector<float> two = scaled_dot_product_attention(tq, tk, tv, Tensor(), causal).to_vector();
        EXPECT_TRUE(close(two, ref, 1e-4, 1e-5)) << what << " split " << split << ", kv_combine";
        double d = 0;
        for (std::size_t i = 0; i < two.size(); ++i) d = std::max(d, std::abs(double(two[i]) - fused[i]));
        EXPECT_LT(d, 1e-5) << what << " split " << split << ": merged in the dispatch against kv_combine";
      }
    }
  ScopedEnv env("GLTENSOR_ATTENTION_SPLIT", "1");
  {
    const AttentionInputs in = attention_inputs(rng, {2, 1, 75, 200, 16, 16}, true);
    ScopedDispatchLimit groups(3);
    EXPECT_TRUE(close(scaled_dot_product_attention(in.q, in.k, in.v, Tensor(), true).to_vector(), in.ref, 1e-4, 1e-5))
        << in.what << " in dispatches of 3 workgroups";
  }
  {  // f16 q, k, v: an f16 result written by the merge
    const int L = 40, S = 150, E = 32;
    auto q = uniform(rng, L * E), k = uniform(rng, S * E), v = uniform(rng, S * E);
    for (auto* x : {&q, &k, &v})
      for (auto& f : *x) f = f16_to_f32(f32_to_f16(f));
    auto ref = ref_attention(q, k, v, 1, 1, L, S, E, E, false);
    Tensor h = scaled_dot_product_attention(Tensor::from_host(device(), q, {1, L, E}, DType::f16),
                                            Tensor::from_host(device(), k, {1, S, E}, DType::f16),
                                            Tensor::from_host(device(), v, {1, S, E}, DType::f16), Tensor(), false);
    EXPECT_EQ(h.dtype(), DType::f16);
    EXPECT_TRUE(close(h.to(DType::f32).to_vector(), ref, 2e-3, 1e-3)) << "f16";
  }
  {  // 70 chunks of 32 or 64 keys: past the scratch of every tiling, kv_combine's dispatch
    const AttentionInputs in = attention_inputs(rng, {1, 1, 5, 70 * 64 - 3, 8, 8}, false);
    EXPECT_TRUE(close(scaled_dot_product_attention(in.q, in.k, in.v, Tensor(), false).to_vector(), in.ref, 1e-4, 1e-5))
        << in.what << ", 70 chunks";
  }
  {  // NaN in key 200 reaches exactly the causal rows that see it (merged from chunks 3 and later);
     // Inf in query 0 makes its row NaN (the other tilings: SplitKVUnderALoweredLoopLimit)
    const int S = 300;
    std::vector<float> q(S * 4, 0.5f), k(S * 4, 0.25f), v(S * 4, 1.0f);
    k[200 * 4 + 1] = NAN;
    q[0] = INFINITY;
    const auto out = scaled_dot_product_attention(Tensor::from_host(device(), q, {1, S, 4}),
                                                  Tensor::from_host(device(), k, {1, S, 4}),
                                                  Tensor::from_host(device(), v, {1, S, 4}), Tensor(), true)
                         .to_vector();
    for (int i = 0; i < S; ++i)
      for (int c = 0; c < 4; ++c) {
        if (i == 0 || i >= 200)
          ASSERT_TRUE(std::isnan(out[i * 4 + c])) << i;
        else
          ASSERT_FLOAT_EQ(out[i * 4 + c], 1.0f) << i;
      }
  }
}

// attention_lanes.comp (forced, so that llvmpipe runs it too) in its widths: lanes per row (4 to
// 32: 32 to 4 rows per workgroup) and keys per lane per tile (1 to 8), tile and row-block edges,
// L != S both ways, E != Ev, each of its head-dim quad counts (4, 8, 16), broadcast k/v batches,
// a single row and key; then a strided q with f16 k/v and an all-f16 problem.
TEST(Attention, LanesKernelMatchesReference) {
  GLT_RNG(rng);
  using Case = AttentionCase;
  ScopedEnv on("GLTENSOR_ATTENTION_LANES", "1");
  // The plan's widths on every case, one other on each of three (llvmpipe compiles ~0.6 s a program:
  // every head-dim quad count, 4 to 32 lanes, 1 to 8 keys per lane, 64 and 128 invocations).
  struct Width {
    const char *width, *keys;
    std::size_t only;  // the case it runs on (none: all)
  };
  const std::size_t all = 99;
  const std::vector<Width> widths = {{nullptr, nullptr, all}, {"8", "2", 1}, {"4", "8", 2}, {"32", "1", 4}};
  const std::vector<Case> cases{{2, 2, 5, 6, 4, 3},      {2, 2, 168, 168, 15, 15}, {3, 1, 37, 70, 24, 20},
                                {1, 1, 33, 100, 16, 40}, {2, 2, 45, 129, 64, 64},  {1, 1, 1, 1, 1, 1}};
  for (std::size_t ci = 0; ci < cases.size(); ++ci)
    for (bool causal : {false, true}) {
      const Case& c = cases[ci];
      const AttentionInputs in = attention_inputs(rng, c, causal);
      const auto& [ref, tq, tk, tv, what] = in;
      for (const auto& [width, keys, only] : widths) {
        if (only != all && only != ci) continue;
        ScopedEnv w("GLTENSOR_ATTENTION_LANE_WIDTH", width);
        ScopedEnv k("GLTENSOR_ATTENTION_LANE_KEYS", keys);
        Tensor r = scaled_dot_product_attention(tq, tk, tv, Tensor(), causal);
        EXPECT_EQ(r.shape(), (Shape{c.Bq, c.L, c.Ev}));
        EXPECT_TRUE(close(r.to_vector(), ref, 1e-4, 1e-5)) << what << " with " << (width ? width : "the plan's")
                                                           << " lanes, " << (keys ? keys : "the plan's") << " keys";
      }
    }
  // q as a non-contiguous view [B, L, H, E] -> [B, H, L, E], f16 k and v: f32 out; all f16: f16 out.
  const int B = 2, H = 3, L = 40, S = 50, E = 32;
  auto q = uniform(rng, B * L * H * E), k = uniform(rng, B * H * S * E), v = uniform(rng, B * H * S * E);
  for (auto* x : {&q, &k, &v})
    for (auto& f : *x) f = f16_to_f32(f32_to_f16(f));
  Tensor tq = Tensor::from_host(device(), q, {B, L, H, E}).transpose(1, 2);
  std::vector<float> qc = tq.contiguous().to_vector();
  auto ref = ref_attention(qc, k, v, B * H, B * H, L, S, E, E, true);
  Tensor tk = Tensor::from_host(device(), k, {B, H, S, E}, DType::f16),
         tv = Tensor::from_host(device(), v, {B, H, S, E}, DType::f16);
  Tensor r = scaled_dot_product_attention(tq, tk, tv, Tensor(), true);
  EXPECT_EQ(r.dtype(), DType::f32);
  EXPECT_TRUE(close(r.to_vector(), ref, 1e-4, 1e-5)) << "strided q, f16 k/v";
  Tensor h = scaled_dot_product_attention(tq.to(DType::f16), tk, tv, Tensor(), true);
  EXPECT_EQ(h.dtype(), DType::f16);
  EXPECT_TRUE(close(h.to(DType::f32).to_vector(), ref, 2e-3, 1e-3)) << "f16";
  // NaN in key 3 reaches exactly the causal rows that see it; Inf in query 0 makes its row NaN.
  check_nan_rows(8, 3, true);
}

// attention_block.comp (forced, so that llvmpipe runs it too) in the plan's tiling (8 rows, 256 invocations) on
// every case, in 16 rows of 128 invocations on one and in 4 rows of 64 on the last (phase 3's key parts 4 to 32;
// PlanAttention.BlockByProblem checks the other tilings' plans): row-block edges (L = 1, 5, 33, 37, 45), L != S both
// ways, E != Ev, each of its head-dim quad counts (4, 8, 16), broadcast k/v batches, causal; the grid over dispatches
// of 3 workgroups; a strided f16 q with f16 k/v (an f16 result); NaN in a key and Inf in a query; scores past exp2's
// range. The plan is asserted to apply (a case that fell back to attention.comp would test nothing).
// The block kernel has no workspace (its score rows live in shared memory): the plan (plan_attention_block) takes no
// SSBO limit, and the kernel runs with the device's limit lowered to its largest operand (Device::set_ssbo_limit),
// where attention.comp's key split would find no room for its partials.
TEST(Attention, BlockKernelAtTheSsboLimit) {
  GLT_RNG(rng);
  ScopedEnv on("GLTENSOR_ATTENTION_BLOCK", "1");
  for (const AttentionCase& c : {AttentionCase{4, 4, 24, 300, 64, 64}, AttentionCase{3, 1, 17, 260, 40, 40}}) {
    const AttentionInputs in = attention_inputs(rng, c, true);
    const detail::BlockTiles t = detail::plan_attention_block(
        {c.L, c.S, c.Bq, c.E, c.Ev, 1},
        {false, 0, device().caps().max_shared_memory,
         std::min(device().caps().max_workgroup_invocations, device().caps().max_workgroup_size[0])},
        true, device().caps().max_loop_iterations, detail::settings());
    ASSERT_GT(t.local, 0) << in.what;
    const std::int64_t largest = 4 * std::int64_t{std::max({c.Bq * c.L * c.E, c.Bk * c.S * c.E, c.Bq * c.L * c.Ev})};
    ScopedSsboLimit limit(largest);
    EXPECT_TRUE(close(scaled_dot_product_attention(in.q, in.k, in.v, Tensor(), true).to_vector(), in.ref, 1e-4, 1e-5))
        << in.what << " with the SSBO limit at " << largest << " bytes";
  }
}

TEST(Attention, BlockKernelMatchesReference) {
  GLT_RNG(rng);
  using Case = AttentionCase;
  ScopedEnv on("GLTENSOR_ATTENTION_BLOCK", "1");
  struct Tiling {
    const char *rows, *local;
    std::size_t only;  // the case it runs on (none: all)
  };
  const std::size_t all = 99;
  const std::vector<Tiling> tilings = {{nullptr, nullptr, all}, {"16", "128", 1}};
  // (the 16-quad cases' keys in one power-of-two bucket, 128: one program for the three; review39's R6)
  const std::vector<Case> cases{{2, 2, 5, 6, 4, 3},      {3, 1, 37, 70, 24, 20}, {1, 1, 33, 100, 16, 40},
                                {2, 2, 45, 127, 64, 64}, {1, 1, 1, 1, 1, 1},     {2, 1, 70, 120, 64, 64}};
  for (std::size_t ci = 0; ci < cases.size(); ++ci)
    for (bool causal : {false, true}) {
      const Case& c = cases[ci];
      const AttentionInputs in = attention_inputs(rng, c, causal);
      const auto& [ref, tq, tk, tv, what] = in;
      for (const auto& [rows, local, only] : tilings) {
        if (only != all && only != ci) continue;
        ScopedEnv r("GLTENSOR_ATTENTION_BLOCK_ROWS", rows);
        ScopedEnv l("GLTENSOR_ATTENTION_BLOCK_LOCAL", local);
        const detail::BlockTiles t = detail::plan_attention_block(
            {c.L, c.S, c.Bq, c.E, c.Ev, 1},
            {false, 0, device().caps().max_shared_memory,
             std::min(device().caps().max_workgroup_invocations, device().caps().max_workgroup_size[0])},
            true, device().caps().max_loop_iterations, detail::settings());
        ASSERT_GT(t.local, 0) << what;
        if (rows) {
          EXPECT_EQ(t.rows, std::atoi(rows)) << what;
        }
        Tensor out = scaled_dot_product_attention(tq, tk, tv, Tensor(), causal);
        EXPECT_EQ(out.shape(), (Shape{c.Bq, c.L, c.Ev}));
        EXPECT_TRUE(close(out.to_vector(), ref, 1e-4, 1e-5))
            << what << " with " << (rows ? rows : "the plan's") << " rows, " << (local ? local : "the plan's")
            << " invocations";
        if (ci == 5 && !rows) {  // 5 x 2 workgroups in dispatches of 3
          ScopedDispatchLimit groups(3);
          EXPECT_TRUE(close(scaled_dot_product_attention(tq, tk, tv, Tensor(), causal).to_vector(), ref, 1e-4, 1e-5))
              << what << " in dispatches of 3 workgroups";
        }
      }
    }
  // q as a non-contiguous f16 view [B, L, H, E] -> [B, H, L, E], f16 k and v: scalar loads, an f16 result.
  const int B = 2, H = 3, L = 40, S = 50, E = 32;
  auto q = uniform(rng, B * L * H * E), k = uniform(rng, B * H * S * E), v = uniform(rng, B * H * S * E);
  for (auto* x : {&q, &k, &v})
    for (auto& f : *x) f = f16_to_f32(f32_to_f16(f));
  Tensor tq = Tensor::from_host(device(), q, {B, L, H, E}, DType::f16).transpose(1, 2);
  std::vector<float> qc = tq.to(DType::f32).contiguous().to_vector();
  auto ref = ref_attention(qc, k, v, B * H, B * H, L, S, E, E, true);
  Tensor tk = Tensor::from_host(device(), k, {B, H, S, E}, DType::f16),
         tv = Tensor::from_host(device(), v, {B, H, S, E}, DType::f16);
  Tensor h = scaled_dot_product_attention(tq, tk, tv, Tensor(), true);
  EXPECT_EQ(h.dtype(), DType::f16);
  EXPECT_TRUE(close(h.to(DType::f32).to_vector(), ref, 2e-3, 1e-3)) << "strided f16 q, f16 k/v";
  // NaN in key 3 reaches exactly the causal rows that see it; Inf in query 0 makes its row NaN.
  check_nan_rows(8, 3, false, true);
  // Scores past exp2's range: row r's keys j = r (mod 64) score 41^2 / 8 = 210 (303 in log2 units), the others 0,
  // so a row maximum that misses any partial of its reduction (phase 2's invocation i takes keys i (mod 64) in the
  // plan's 16 rows x 256 invocations and in 4 x 64 here) gives 2^(s - M) past the float range (softmax's shift
  // invariance hides it at small scores): inf, or where exp2 clamps (llvmpipe), 9 or 10 such keys a row overflow
  // the sum; every residue of the keys among 64 rows.
  {
    ScopedEnv r("GLTENSOR_ATTENTION_BLOCK_ROWS", "4");
    ScopedEnv l("GLTENSOR_ATTENTION_BLOCK_LOCAL", "64");
    const int Ls = 64, Ss = 600, Es = 64;
    std::vector<float> sq(Ls * Es, 0.0f), sk(Ss * Es, 0.0f), sv = uniform(rng, Ss * Es);
    for (int i = 0; i < Ls; ++i) sq[i * Es + i % Es] = 41.0f;
    for (int j = 0; j < Ss; ++j) sk[j * Es + j % Es] = 41.0f;
    const auto sref = ref_attention(sq, sk, sv, 1, 1, Ls, Ss, Es, Es, false);
    EXPECT_TRUE(close(scaled_dot_product_attention(Tensor::from_host(device(), sq, {1, Ls, Es}),
                                                   Tensor::from_host(device(), sk, {1, Ss, Es}),
                                                   Tensor::from_host(device(), sv, {1, Ss, Es}), Tensor(), false)
                          .to_vector(),
                      sref, 1e-4, 1e-5))
        << "scores 303 apart in log2 units";
  }
}

namespace {
// float64 gradients of loss = sum(conv2d(x, w, b) * r) (groups 1): dx, dw, db.
struct ConvGrads {
  std::vector<double> dx, dw, db;
};
ConvGrads ref_conv_grads(const HostT& x, const HostT& w, const std::vector<double>& r, const Conv2dOptions& o) {
  const std::int64_t N = x.s[0], C = x.s[1], H = x.s[2], W = x.s[3], O = w.s[0], KH = w.s[2], KW = w.s[3];
  const std::int64_t OH = (H + o.padding[0] + o.padding[2] - o.dilation[0] * (KH - 1) - 1) / o.stride[0] + 1;
  const std::int64_t OW = (W + o.padding[1] + o.padding[3] - o.dilation[1] * (KW - 1) - 1) / o.stride[1] + 1;
  ConvGrads g{std::vector<double>(x.size()), std::vector<double>(w.size()), std::vector<double>(O)};
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t oc = 0; oc < O; ++oc)
      for (std::int64_t oh = 0; oh < OH; ++oh)
        for (std::int64_t ow = 0; ow < OW; ++ow) {
          const double gy = r[((n * O + oc) * OH + oh) * OW + ow];
          g.db[oc] += gy;
          for (std::int64_t c = 0; c < C; ++c)
            for (std::int64_t kh = 0; kh < KH; ++kh)
              for (std::int64_t kw = 0; kw < KW; ++kw) {
                const std::int64_t h = oh * o.stride[0] - o.padding[0] + kh * o.dilation[0];
                const std::int64_t ww = ow * o.stride[1] - o.padding[1] + kw * o.dilation[1];
                if (h < 0 || h >= H || ww < 0 || ww >= W) continue;
                const std::size_t xi = ((n * C + c) * H + h) * W + ww, wi = ((oc * C + c) * KH + kh) * KW + kw;
                g.dw[wi] += gy * x.v[xi];
                g.dx[xi] += gy * w.v[wi];
              }
        }
  return g;
}

// conv2d forward and gradients of random inputs against float64 references.
void check_conv_grads(std::mt19937_64& rng, const Shape& xs, const Shape& ws, const Conv2dOptions& o) {
  auto xv = uniform(rng, numel_of(xs)), wv = uniform(rng, numel_of(ws)), bv = uniform(rng, ws[0]);
  HostT hx{{xv.begin(), xv.end()}, xs}, hw{{wv.begin(), wv.end()}, ws};
  std::vector<double> hb(bv.begin(), bv.end());
  Shape os;
  const auto ref_y = ref_conv(hx, hw, &hb, o, os);
  auto rv = uniform(rng, numel_of(os));
  const auto ref_g = ref_conv_grads(hx, hw, {rv.begin(), rv.end()}, o);
  Tensor x = Tensor::from_host(device(), xv, xs), w = Tensor::from_host(device(), wv, ws),
         b = Tensor::from_host(device(), bv, {ws[0]});
  requires_grad_(x);
  requires_grad_(w);
  requires_grad_(b);
  Tensor y = conv2d(x, w, b, o);
  backward(sum(mul(y, Tensor::from_host(device(), rv, os))));
  const std::int64_t K = numel_of(os) / ws[0];  // the weight gradient's K: N * OH * OW
  const std::string what = to_string(xs) + " * " + to_string(ws);
  EXPECT_TRUE(close(y.to_vector(), ref_y, 1e-4, 1e-5)) << what;
  EXPECT_TRUE(close(grad(w).to_vector(), ref_g.dw, 1e-5, 2e-6 * K)) << what << " weight gradient";
  EXPECT_TRUE(close(grad(b).to_vector(), ref_g.db, 1e-5, 2e-6 * K)) << what << " bias gradient";
  EXPECT_TRUE(close(grad(x).to_vector(), ref_g.dx, 1e-5, 1e-4)) << what << " input gradient";
}
}  // namespace

// The weight gradient is a matmul over K = N * OH * OW: past llvmpipe's loop limit it splits
// over K (the issue "Correctness on llvmpipe": batch 128 at 28x28 gave 42365 instead of 93312 on
// a ones test).
TEST(Conv2d, WeightGradientPastTheLoopLimit) {
  GLT_RNG(rng);
  Tensor x = ones(device(), {128, 1, 28, 28}), w = ones(device(), {1, 1, 2, 2});
  requires_grad_(w);
  backward(sum(conv2d(x, w)));
  EXPECT_EQ(grad(w).to_vector(), std::vector<float>(4, 128.0f * 27 * 27));
  check_conv_grads(rng, {64, 2, 28, 28}, {3, 2, 3, 3}, Conv2dOptions::pad(1));  // K = 50176
}

// The GEMMs' rows of gy ([N*OH*OW, O], conv.comp's ROWS_T: a transpose per image in 32 x 32 tiles)
// behind the weight gradient (im2col GEMM: more than 32 taps), against float64: channels and
// positions not multiples of 32, gy of more than 65535 elements, gy given as a channel slice of a
// larger tensor (strided images and channels, an offset) and as a permuted view (planes not
// contiguous: the strided copy instead). Sabotage: a tile's stored column taken modulo 16 fails.
TEST(Conv2d, GradientRowsTransposedInTiles) {
  GLT_RNG(rng);
  struct Case {
    Shape xs, ws;
  };
  for (const Case& c : {Case{{3, 5, 15, 13}, {37, 5, 3, 3}}, Case{{2, 8, 70, 66}, {33, 8, 3, 3}}})
    for (int form = 0; form < 3; ++form) {
      auto xv = uniform(rng, numel_of(c.xs)), wv = uniform(rng, numel_of(c.ws));
      HostT hx{{xv.begin(), xv.end()}, c.xs}, hw{{wv.begin(), wv.end()}, c.ws};
      const std::int64_t N = c.xs[0], O = c.ws[0], OH = c.xs[2], OW = c.xs[3];
      auto rv = uniform(rng, N * O * OH * OW);  // gy in [N, O, OH, OW] order
      const auto ref = ref_conv_grads(hx, hw, {rv.begin(), rv.end()}, Conv2dOptions::pad(1));
      Tensor gy;
      if (form == 0) {
        gy = Tensor::from_host(device(), rv, {N, O, OH, OW});
      } else if (form == 1) {  // channels 2 .. O + 2 of [N, O + 3, OH, OW]
        std::vector<float> big(static_cast<std::size_t>(N * (O + 3) * OH * OW), 7.0f);
        for (std::int64_t n = 0; n < N; ++n)
          std::copy_n(rv.begin() + n * O * OH * OW, O * OH * OW, big.begin() + (n * (O + 3) + 2) * OH * OW);
        gy = Tensor::from_host(device(), big, {N, O + 3, OH, OW}).narrow(1, 2, O);
      } else {  // [N, OH, OW, O] permuted
        std::vector<float> nhwc(rv.size());
        for (std::int64_t n = 0; n < N; ++n)
          for (std::int64_t o = 0; o < O; ++o)
            for (std::int64_t s = 0; s < OH * OW; ++s) nhwc[(n * OH * OW + s) * O + o] = rv[(n * O + o) * OH * OW + s];
        gy = Tensor::from_host(device(), nhwc, {N, OH, OW, O}).permute({0, 3, 1, 2});
      }
      Tensor x = Tensor::from_host(device(), xv, c.xs), w = Tensor::from_host(device(), wv, c.ws);
      requires_grad_(w);
      backward(conv2d(x, w, Tensor(), Conv2dOptions::pad(1)), gy);
      const std::string what = to_string(c.xs) + " * " + to_string(c.ws) + " form " + std::to_string(form);
      EXPECT_TRUE(close(grad(w).to_vector(), ref.dw, 1e-5, 2e-6 * N * OH * OW)) << what << " weight gradient";
    }
}

// ROWS_T at the 128 MiB SSBO block (the H100's limit lowered to llvmpipe's): gy [1, 16, 2048,
// 1024] is exactly 128 MiB, its 2^21 positions 65536 tiles of 32 along the grid's x, past 65535
// workgroups a dispatch (the grid split; the H100's limit lowered too). The transpose is a copy:
// every element compared bit for bit, each one distinct (the float whose bits are 0x3F800000 + its
// index, in [1, 16), times a random sign per 64). Sabotage: a tile's stored column taken modulo
// 16, the image's channel read modulo 4 (review19), and the grid's x modulo 65535 each fail.
TEST(Conv2d, GradientRowsAtTheSsboLimit) {
  GLT_RNG(rng);
  const std::int64_t O = 16, OH = 2048, OW = 1024, S = OH * OW;
  ScopedSsboLimit limit(std::int64_t{128} << 20);
  ScopedDispatchLimit groups(65535);
  std::vector<float> v(static_cast<std::size_t>(O * S));
  const auto sign = uniform_int(rng, 64, 0, 1);
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = std::bit_cast<float>(0x3F800000u + static_cast<std::uint32_t>(i)) * (sign[i % 64] ? 1.0f : -1.0f);
  const std::vector<float> rows = detail::gy_rows(Tensor::from_host(device(), v, {1, O, OH, OW})).to_vector();
  ASSERT_EQ(rows.size(), v.size());
  std::int64_t bad = 0, first = -1;
  for (std::int64_t s = 0; s < S; ++s)
    for (std::int64_t o = 0; o < O; ++o)
      if (rows[static_cast<std::size_t>(s * O + o)] != v[static_cast<std::size_t>(o * S + s)]) {
        if (first < 0) first = s * O + o;
        ++bad;
      }
  EXPECT_EQ(bad, 0) << "first wrong element of [S, O]: " << first;
}

// Small filters' weight and bias gradients from gy and x in place (conv_wgrad.comp, at most 32
// taps, one group), against float64: odd sizes, stride, asymmetric padding, dilation, 1 to 32
// taps, chunks shortened by a lowered loop limit down to one position per invocation (and the
// im2col GEMM below that); the image as a strided view without a gradient (the CNN's first layer).
TEST(Conv2d, DirectWeightGradient) {
  GLT_RNG(rng);
  check_conv_grads(rng, {3, 1, 9, 11}, {5, 1, 3, 3}, Conv2dOptions::pad(1));
  check_conv_grads(rng, {2, 3, 8, 7}, {4, 3, 3, 3}, opts({2, 1}, {1, 0, 2, 1}, {2, 1}, 1));  // 27 taps
  check_conv_grads(rng, {2, 2, 5, 9}, {3, 2, 1, 5}, opts({1, 2}, {0, 2, 0, 1}, {1, 1}, 1));
  check_conv_grads(rng, {1, 1, 1, 1}, {2, 1, 1, 1}, Conv2dOptions());
  check_conv_grads(rng, {37, 1, 13, 13}, {7, 1, 2, 2}, Conv2dOptions());      // several chunks per channel
  check_conv_grads(rng, {5, 2, 11, 9}, {8, 2, 3, 3}, Conv2dOptions::pad(1));  // 4 channels per invocation
  check_conv_grads(rng, {5, 1, 11, 9}, {6, 1, 3, 3}, Conv2dOptions::pad(1));  // 2
  // 1000: 4 channels per invocation, short chunks; 200: one channel; 105: one position per invocation; 90: the GEMM.
  for (std::uint64_t limit : {1000u, 200u, 105u, 90u}) {
    ScopedLoopLimit l(limit);
    check_conv_grads(rng, {3, 1, 9, 11}, {5, 1, 3, 3}, Conv2dOptions::pad(1));
  }
  // x: channel 1 of a [4, 3, 10, 12] tensor, its columns 1..10 (strides 360, 120, 12, 1, offset 121).
  const auto big = uniform(rng, 4 * 3 * 10 * 12), wv = uniform(rng, 6 * 9), rv = uniform(rng, 4 * 6 * 10 * 10);
  std::vector<float> xv;
  for (int n = 0; n < 4; ++n)
    for (int h = 0; h < 10; ++h)
      for (int w = 1; w < 11; ++w) xv.push_back(big[((n * 3 + 1) * 10 + h) * 12 + w]);
  const Shape xs = {4, 1, 10, 10}, ws = {6, 1, 3, 3};
  HostT hx{{xv.begin(), xv.end()}, xs}, hw{{wv.begin(), wv.end()}, ws};
  const auto ref = ref_conv_grads(hx, hw, {rv.begin(), rv.end()}, Conv2dOptions::pad(1));
  Tensor x = Tensor::from_host(device(), big, {4, 3, 10, 12}).narrow(1, 1, 1).narrow(3, 1, 10);
  Tensor w = Tensor::from_host(device(), wv, ws), b = zeros(device(), {6});
  requires_grad_(w);
  requires_grad_(b);
  backward(sum(mul(conv2d(x, w, b, Conv2dOptions::pad(1)), Tensor::from_host(device(), rv, {4, 6, 10, 10}))));
  EXPECT_TRUE(close(grad(w).to_vector(), ref.dw, 1e-5, 2e-6 * 400)) << "strided x";
  EXPECT_TRUE(close(grad(b).to_vector(), ref.db, 1e-5, 2e-6 * 400)) << "strided x";
}

// The input gradient as the direct convolution of gy with the flipped, transposed filters
// (plan_conv_input_grad; forced here with GLTENSOR_CONV=direct, GPUs choose it for the CNN's second
// layer) against float64, in the direct kernel's layouts (rows, lanes with its tiles form where the
// O filters of the transposed convolution pass the shared staging; ubo forced gives rows: the
// filters are read flipped through negated strides, never copied): odd sizes, asymmetric padding (0 up to d * (K - 1)),
// dilation, 1 x 5 and 1 x 1 filters, one image; under a lowered loop limit (the GEMM where the kernel's loop does not
// fit).
TEST(Conv2d, DirectInputGradient) {
  GLT_RNG(rng);
  for (const char* layout : {"rows", "lanes", "ubo"}) {
    SCOPED_TRACE(layout);
    ScopedSettings s;
    s->conv = detail::ConvSetting::direct;
    s->conv_direct = detail::parse_conv_direct(layout);
    check_conv_grads(rng, {3, 5, 9, 11}, {7, 5, 3, 3}, Conv2dOptions::pad(1));
    check_conv_grads(rng, {2, 3, 8, 7}, {4, 3, 3, 3}, opts({1, 1}, {0, 2, 4, 0}, {2, 1}, 1));
    check_conv_grads(rng, {2, 2, 5, 9}, {3, 2, 1, 5}, opts({1, 1}, {0, 2, 0, 1}, {1, 1}, 1));
    check_conv_grads(rng, {1, 3, 4, 4}, {2, 3, 1, 1}, Conv2dOptions());
    check_conv_grads(rng, {2, 8, 6, 5}, {64, 8, 3, 3}, Conv2dOptions::pad(1));                  // lanes: tiles, OPI 8
    check_conv_grads(rng, {1, 4, 5, 7}, {60, 4, 3, 3}, opts({1, 1}, {1, 0, 1, 2}, {1, 1}, 1));  // tiles, OPI 4
    // tiles with the input gradient's blocking: OPI 16, the plane's tiles a workgroup (6 x 3, and
    // the CNN's 14 x 7), KS 2
    check_conv_grads(rng, {2, 16, 6, 5}, {64, 16, 3, 3}, Conv2dOptions::pad(1));
    check_conv_grads(rng, {2, 32, 14, 14}, {64, 32, 3, 3}, Conv2dOptions::pad(1));
  }
  for (std::uint64_t limit : {400u, 200u}) {  // 400: the direct kernel, 200: the GEMM (its loop does not fit)
    SCOPED_TRACE(limit);
    ScopedLoopLimit l(limit);
    ScopedSettings s;
    s->conv = detail::ConvSetting::direct;
    check_conv_grads(rng, {2, 3, 7, 9}, {64, 3, 3, 3}, Conv2dOptions::pad(1));
  }
}

// The same paths under a lowered loop limit, on small shapes (so that they run on any device):
// split-K in the forward's GEMM (K = C * KH * KW = 144) and in the weight gradient.
TEST(Conv2d, SplitKUnderALoweredLoopLimit) {
  GLT_RNG(rng);
  ScopedLoopLimit limit(2000);
  check_conv_grads(rng, {4, 2, 9, 9}, {3, 2, 3, 3}, Conv2dOptions::pad(1));
  check_conv_grads(rng, {2, 16, 7, 6}, {5, 16, 3, 3}, opts({2, 1}, {1, 0, 0, 1}, {1, 2}, 1));
}

// The im2col weight gradient (colsT @ gm)^T with K (the positions) split: the split-K sum writes it
// transposed (matmul_sum.comp's TRANSPOSE, no copy); against float64, O != K so that an untransposed
// store shows, slices 2, 3 and 7.
TEST(Conv2d, WeightGradientSplitKWrittenTransposed) {
  GLT_RNG(rng);
  for (int split : {2, 3, 7}) {
    SCOPED_TRACE("split " + std::to_string(split));
    ScopedSettings s;
    s->conv = detail::ConvSetting::im2col, s->matmul_kernel = detail::MatmulKernelSetting::tile64;
    s->matmul_split = split;
    check_conv_grads(rng, {4, 3, 9, 7}, {5, 3, 3, 3}, Conv2dOptions::pad(1));
    check_conv_grads(rng, {2, 8, 14, 14}, {16, 8, 3, 3}, Conv2dOptions::pad(1));
  }
}

// conv2d's forward GEMM as a GPU plans the CNN's second layer (K = 288, 128 whole 64 x 128 tiles: the
// warp kernel's 64-row form writing the NCHW column groups, PlanMatmul.WarpForShortKColumnGroups) on
// any device: the im2col and the product only (2 dispatches, no permuting copy), and the gradients,
// against float64.
TEST(Conv2d, ForwardOnTheWarpKernelInColumnGroups) {
  GLT_RNG(rng);
  ScopedSettings s;
  s->conv = detail::ConvSetting::im2col, s->matmul_kernel = detail::MatmulKernelSetting::gpu;
  const Shape xs{64, 32, 16, 16}, ws{64, 32, 3, 3};
  {
    NoGradGuard ng;
    Generator gen(7);
    const Tensor x = randn(device(), xs, gen), w = randn(device(), ws, gen), b = randn(device(), {64}, gen);
    device().synchronize();
    const auto d0 = device().dispatch_count();
    const Tensor y = conv2d(x, w, b, Conv2dOptions::pad(1));
    EXPECT_EQ(device().dispatch_count() - d0, 2u) << "im2col and the product, no copy";
    EXPECT_EQ(y.shape(), (Shape{64, 64, 16, 16}));
  }
  check_conv_grads(rng, xs, ws, Conv2dOptions::pad(1));
}

// im2col columns past the device's max SSBO block (the issue "Model coverage": a 3x3 conv of 256
// channels at 128x128 needed 150994944 bytes of columns on llvmpipe's 128 MiB; for real in
// test_conv_ssbo_limit): the im2col path runs per piece of the output positions (whole images,
// rows, parts of rows), and the backward's columns and col2im products likewise. Under a lowered
// limit on small shapes (the inputs and outputs themselves fit), against float64: forward,
// input, weight and bias gradients; stride, dilation and asymmetric padding (pieces whose windows
// start in the padding); groups and f16 inputs (forward) and conv_transpose2d against the same
// ops without the lowered limit.
TEST(Conv2d, PiecesUnderALoweredSsboLimit) {
  GLT_RNG(rng);
  ScopedSettings s;
  s->conv = detail::ConvSetting::im2col;  // else the direct kernel takes small filters whose columns do not fit
  struct Case {
    Shape x, w;
    Conv2dOptions o;
    std::int64_t limit;
    const char* what;
  };
  for (const Case& c : std::vector<Case>{
           {{3, 4, 9, 8}, {5, 4, 3, 3}, Conv2dOptions::pad(1), 12000, "whole images"},
           {{2, 4, 9, 8}, {5, 4, 3, 3}, Conv2dOptions::pad(1), 4000, "rows"},
           {{1, 4, 5, 12}, {5, 4, 3, 3}, Conv2dOptions::pad(1), 1300, "parts of rows"},
           {{2, 3, 11, 10}, {4, 3, 3, 2}, opts({2, 1}, {1, 0, 2, 1}, {1, 2}, 1), 2700, "rows, strided"},
           {{1, 2, 4, 30}, {3, 2, 3, 3}, opts({1, 2}, {2, 1, 0, 2}, {2, 1}, 1), 1000, "parts of rows, strided"},
       }) {
    ScopedSsboLimit limit(c.limit);
    SCOPED_TRACE(c.what);
    check_conv_grads(rng, c.x, c.w, c.o);
  }
  // Groups: forward against float64, gradients against the same op without the lowered limit.
  {
    const Shape xs{2, 4, 7, 9}, ws{6, 2, 3, 3};
    const Conv2dOptions o = opts({1, 1}, {1, 1, 1, 1}, {1, 1}, 2);
    auto xv = uniform(rng, numel_of(xs)), wv = uniform(rng, numel_of(ws)), bv = uniform(rng, 6);
    HostT hx{{xv.begin(), xv.end()}, xs}, hw{{wv.begin(), wv.end()}, ws};
    std::vector<double> hb(bv.begin(), bv.end());
    Shape os;
    const auto ref = ref_conv(hx, hw, &hb, o, os);
    auto run = [&](std::int64_t lim) {
      ScopedSsboLimit limit(lim);
      Tensor x = Tensor::from_host(device(), xv, xs), w = Tensor::from_host(device(), wv, ws),
             b = Tensor::from_host(device(), bv, {6});
      requires_grad_(x);
      requires_grad_(w);
      Tensor y = conv2d(x, w, b, o);
      backward(sum(mul(y, y)));
      return std::vector<std::vector<float>>{y.to_vector(), grad(x).to_vector(), grad(w).to_vector()};
    };
    const auto full = run(0), pieces = run(3100);  // columns of 36 rows: 2 output rows per piece
    EXPECT_TRUE(close(pieces[0], ref, 1e-4, 1e-5)) << "groups";
    EXPECT_TRUE(close(pieces[1], {full[1].begin(), full[1].end()}, 1e-5, 1e-4)) << "groups: input gradient";
    EXPECT_TRUE(close(pieces[2], {full[2].begin(), full[2].end()}, 1e-5, 1e-4)) << "groups: weight gradient";
  }
  // f16 input and weights: an f16 result written piece by piece.
  {
    const Shape xs{2, 4, 9, 8}, ws{5, 4, 3, 3};
    auto xv = uniform(rng, numel_of(xs)), wv = uniform(rng, numel_of(ws));
    for (auto* v : {&xv, &wv})
      for (auto& f : *v) f = f16_to_f32(f32_to_f16(f));
    HostT hx{{xv.begin(), xv.end()}, xs}, hw{{wv.begin(), wv.end()}, ws};
    Shape os;
    const auto ref = ref_conv(hx, hw, nullptr, Conv2dOptions::pad(1), os);
    ScopedSsboLimit limit(3000);  // 2 output rows per piece
    Tensor y = conv2d(Tensor::from_host(device(), xv, xs, DType::f16), Tensor::from_host(device(), wv, ws, DType::f16),
                      Tensor(), Conv2dOptions::pad(1));
    EXPECT_EQ(y.dtype(), DType::f16);
    EXPECT_TRUE(close(y.to(DType::f32).to_vector(), ref, 2e-3, 2e-3)) << "f16";
  }
  // conv_transpose2d: its matmul + col2im per piece of the input positions.
  {
    const Shape xs{2, 4, 6, 5}, ws{4, 3, 3, 3};
    const Conv2dOptions o = opts({2, 2}, {1, 1, 1, 1}, {1, 1}, 1);
    auto xv = uniform(rng, numel_of(xs)), wv = uniform(rng, numel_of(ws));
    auto run = [&](std::int64_t lim) {
      ScopedSsboLimit limit(lim);
      return conv_transpose2d(Tensor::from_host(device(), xv, xs), Tensor::from_host(device(), wv, ws), Tensor(), o)
          .to_vector();
    };
    const auto full = run(0);
    EXPECT_TRUE(close(run(2400), {full.begin(), full.end()}, 1e-5, 1e-5)) << "conv_transpose2d";  // 4 rows per piece
  }
}

namespace {
// linear(x [B, I], w [O, I], b) and its gradients (loss = sum(y * r)) against float64.
void check_linear_grads(std::mt19937_64& rng, std::int64_t B, std::int64_t I, std::int64_t O) {
  auto xv = uniform(rng, B * I), wv = uniform(rng, O * I), bv = uniform(rng, O), rv = uniform(rng, B * O);
  std::vector<double> y(B * O), dx(B * I), dw(O * I), db(O);
  for (std::int64_t n = 0; n < B; ++n)
    for (std::int64_t o = 0; o < O; ++o) {
      double s = bv[o];
      const double r = rv[n * O + o];
      db[o] += r;
      for (std::int64_t i = 0; i < I; ++i) {
        s += double(xv[n * I + i]) * wv[o * I + i];
        dw[o * I + i] += r * xv[n * I + i];
        dx[n * I + i] += r * wv[o * I + i];
      }
      y[n * O + o] = s;
    }
  Tensor x = Tensor::from_host(device(), xv, {B, I}), w = Tensor::from_host(device(), wv, {O, I}),
         b = Tensor::from_host(device(), bv, {O});
  requires_grad_(x);
  requires_grad_(w);
  requires_grad_(b);
  Tensor out = linear(x, w, b);
  backward(sum(mul(out, Tensor::from_host(device(), rv, {B, O}))));
  const std::string what = "batch " + std::to_string(B);
  EXPECT_TRUE(close(out.to_vector(), y, 1e-5, 2e-6 * I)) << what;
  EXPECT_TRUE(close(grad(w).to_vector(), dw, 1e-5, 2e-6 * B)) << what << " weight gradient";
  EXPECT_TRUE(close(grad(b).to_vector(), db, 1e-5, 2e-6 * B)) << what << " bias gradient";
  EXPECT_TRUE(close(grad(x).to_vector(), dx, 1e-5, 2e-6 * O)) << what << " input gradient";
}
}  // namespace

// linear's weight gradient is grad_out^T [O, B] @ x [B, I]: K = B, split past the loop limit
// (the issue: wrong for batches over ~45587 rows on llvmpipe); and under a lowered limit.
TEST(Linear, WeightGradientOfLongBatches) {
  GLT_RNG(rng);
  check_linear_grads(rng, 50000, 3, 2);
  ScopedLoopLimit limit(2000);
  check_linear_grads(rng, 300, 5, 4);
  check_linear_grads(rng, 257, 130, 129);
}

namespace {
// float64 layer norm of each row of a row-major [rows, L] array, with optional w, b of L.
std::vector<double> ref_layer_norm(const std::vector<float>& x, std::int64_t rows, std::int64_t L,
                                   const std::vector<float>* w, const std::vector<float>* b, double eps) {
  std::vector<double> y(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    double m = 0, q = 0;
    for (std::int64_t l = 0; l < L; ++l) m += x[r * L + l];
    m /= L;
    for (std::int64_t l = 0; l < L; ++l) q += (x[r * L + l] - m) * (x[r * L + l] - m);
    q /= L;
    for (std::int64_t l = 0; l < L; ++l) {
      double v = (x[r * L + l] - m) / std::sqrt(q + eps);
      if (w) v *= (*w)[l];
      if (b) v += (*b)[l];
      y[r * L + l] = v;
    }
  }
  return y;
}
}  // namespace

// layer_norm's fused kernel loops over a row in strides of its workgroup: rows longer than the
// loop limit allows take the composite form (split reductions). Under a lowered limit (any
// device), over one and two normalized dims with weight and bias; and at a real length past
// llvmpipe's limit (8.5M: 2 x 33204 strides).
TEST(Norms, LayerNormRowsPastTheLoopLimit) {
  GLT_RNG(rng);
  {
    ScopedLoopLimit limit(100);
    const std::int64_t rows = 3, L = 20000;
    auto x = uniform(rng, rows * L, -2, 3), w = uniform(rng, L), b = uniform(rng, L);
    Tensor tx = Tensor::from_host(device(), x, {rows, L});
    EXPECT_TRUE(
        close(layer_norm(tx, 1, Tensor::from_host(device(), w, {L}), Tensor::from_host(device(), b, {L})).to_vector(),
              ref_layer_norm(x, rows, L, &w, &b, 1e-5), 1e-4, 1e-5));
    EXPECT_TRUE(close(layer_norm(Tensor::from_host(device(), x, {rows, 100, 200}), 2,
                                 Tensor::from_host(device(), w, {100, 200}), Tensor())
                          .to_vector(),
                      ref_layer_norm(x, rows, L, &w, nullptr, 1e-5), 1e-4, 1e-5));
  }
  const std::int64_t L = 8500000;
  auto x = uniform(rng, L, -2, 3);
  EXPECT_TRUE(close(layer_norm(Tensor::from_host(device(), x, {1, L}), 1, Tensor(), Tensor()).to_vector(),
                    ref_layer_norm(x, 1, L, nullptr, nullptr, 1e-5), 1e-4, 1e-5));
}

namespace {
// float64 pooling of x (row-major [N, C, H, W]) to [N, C, OH, OW] and the gradient of
// sum(y * gy): mode 0 max (the first maximum in row-major order, the last NaN as torch's `val > maxval ||
// isnan(val)`; the gradient to it),
// 1 avg, 2 adaptive avg.
struct PoolRef {
  std::vector<double> y, gx;
};
PoolRef ref_pool_grad(const std::vector<float>& x, const Shape& xs, int mode, const Pool2dOptions& o, std::int64_t OH,
                      std::int64_t OW, const std::vector<float>& gy) {
  const std::int64_t NC = xs[0] * xs[1], H = xs[2], W = xs[3];
  const std::int64_t sh = o.stride[0] ? o.stride[0] : o.kernel[0], sw = o.stride[1] ? o.stride[1] : o.kernel[1];
  PoolRef r{std::vector<double>(NC * OH * OW), std::vector<double>(x.size())};
  for (std::int64_t p = 0; p < NC; ++p)
    for (std::int64_t oh = 0; oh < OH; ++oh)
      for (std::int64_t ow = 0; ow < OW; ++ow) {
        const std::size_t e = (p * OH + oh) * OW + ow;
        std::vector<std::int64_t> hs, ws;  // the window's rows and columns inside the input
        double div = 0;
        if (mode == 2) {
          for (std::int64_t h = oh * H / OH; h < ((oh + 1) * H + OH - 1) / OH; ++h) hs.push_back(h);
          for (std::int64_t w = ow * W / OW; w < ((ow + 1) * W + OW - 1) / OW; ++w) ws.push_back(w);
          div = double(hs.size() * ws.size());
        } else {
          const std::int64_t dh = mode == 0 ? o.dilation[0] : 1, dw = mode == 0 ? o.dilation[1] : 1;
          const std::int64_t h0 = oh * sh - o.padding[0], w0 = ow * sw - o.padding[1];
          for (std::int64_t k = 0; k < o.kernel[0]; ++k)
            if (h0 + k * dh >= 0 && h0 + k * dh < H) hs.push_back(h0 + k * dh);
          for (std::int64_t k = 0; k < o.kernel[1]; ++k)
            if (w0 + k * dw >= 0 && w0 + k * dw < W) ws.push_back(w0 + k * dw);
          div = o.count_include_pad ? double((std::min(h0 + o.kernel[0], H + o.padding[0]) - h0) *
                                             (std::min(w0 + o.kernel[1], W + o.padding[1]) - w0))
                                    : double(hs.size() * ws.size());
        }
        if (mode == 0) {
          double best = -INFINITY;
          std::int64_t bi = -1;
          for (auto h : hs)
            for (auto w : ws) {
              const double v = x[(p * H + h) * W + w];
              if (bi < 0 || v > best || std::isnan(v)) best = v, bi = (p * H + h) * W + w;
            }
          r.y[e] = best;
          if (bi >= 0) r.gx[bi] += gy[e];
        } else {
          double s = 0;
          for (auto h : hs)
            for (auto w : ws) s += x[(p * H + h) * W + w];
          r.y[e] = s / div;
          for (auto h : hs)
            for (auto w : ws) r.gx[(p * H + h) * W + w] += gy[e] / div;
        }
      }
  return r;
}

// max_pool2d / avg_pool2d (mode 0 / 1) with o, or adaptive_avg_pool2d to `out` (mode 2), of x
// (f32 or f16 storage), forward and gradient against ref_pool_grad.
void check_pool(std::mt19937_64& rng, const std::vector<float>& xv, const Shape& xs, int mode, const Pool2dOptions& o,
                std::array<std::int64_t, 2> out, DType dt, const std::string& what) {
  Tensor x = Tensor::from_host(device(), xv, xs, dt);
  const auto stored = x.to(DType::f32).to_vector();
  requires_grad_(x);
  Tensor y = mode == 0 ? max_pool2d(x, o) : mode == 1 ? avg_pool2d(x, o) : adaptive_avg_pool2d(x, out);
  EXPECT_EQ(y.dtype(), dt) << what;
  const std::int64_t OH = y.size(2), OW = y.size(3);
  auto gy = uniform(rng, numel_of(y.shape()));
  backward(y, Tensor::from_host(device(), gy, y.shape(), dt));
  const auto ref = ref_pool_grad(stored, xs, mode, o, OH, OW, gy);
  const bool f32 = dt == DType::f32;
  EXPECT_TRUE(close(y.to(DType::f32).to_vector(), ref.y, f32 ? 1e-5 : 2e-3, f32 ? 1e-6 : 1e-3)) << what;
  EXPECT_TRUE(close(grad(x).to(DType::f32).to_vector(), ref.gx, f32 ? 1e-5 : 2e-3, f32 ? 1e-6 : 1e-3))
      << what << " gradient";
}
}  // namespace

// Windows whose loops exceed llvmpipe's limit go through two passes of one axis each (the issue
// "Correctness on llvmpipe": avg_pool2d / adaptive_avg_pool2d over a 256x256 window gave 0.99223
// instead of 1): ones, then random values with NaN for max, forward and gradients.
TEST(Pool2d, WindowsPastTheLoopLimit) {
  GLT_RNG(rng);
  Pool2dOptions k256;
  k256.kernel = {256, 256};
  Tensor ones_x = ones(device(), {1, 2, 256, 256});
  EXPECT_EQ(avg_pool2d(ones_x, k256).to_vector(), std::vector<float>(2, 1.0f));
  EXPECT_EQ(adaptive_avg_pool2d(ones_x, {1, 1}).to_vector(), std::vector<float>(2, 1.0f));
  const Shape xs{1, 2, 260, 257};
  auto xv = uniform(rng, numel_of(xs));
  Pool2dOptions s2 = k256;
  s2.stride = {2, 1};
  s2.padding = {1, 0};
  check_pool(rng, xv, xs, 1, s2, {}, DType::f32, "avg 256x256 stride (2, 1) padding (1, 0)");
  check_pool(rng, xv, xs, 2, {}, {1, 2}, DType::f32, "adaptive avg to 1x2");
  xv[1000] = NAN;
  check_pool(rng, xv, xs, 0, s2, {}, DType::f32, "max 256x256 with NaN");
}

// Max pooling whose windows tile the input (stride = kernel, no padding, planes of whole windows:
// the CNN's 2 x 2): the backward writes each window's elements from one invocation (GATHER_TILES).
// Against float64 (the gradient at each window's argmax, 0 elsewhere, from x on the host) with
// fresh random inputs, 2 x 2, 3 x 2 and 1 x 2 windows, odd plane counts, and against the per-element
// gather that a loop limit below the window's trips leaves.
TEST(Pool2d, MaxGradientOverTilingWindows) {
  GLT_RNG(rng);
  struct Case {
    Shape s;
    std::array<std::int64_t, 2> k;
  };
  for (const Case& c : std::vector<Case>{
           {{2, 3, 8, 6}, {2, 2}}, {{3, 1, 9, 4}, {3, 2}}, {{1, 5, 3, 8}, {1, 2}}, {{128, 2, 28, 28}, {2, 2}}}) {
    SCOPED_TRACE(to_string(c.s) + " kernel " + std::to_string(c.k[0]) + "x" + std::to_string(c.k[1]));
    Pool2dOptions o;
    o.kernel = c.k;
    const std::int64_t N = c.s[0], C = c.s[1], H = c.s[2], W = c.s[3], OH = H / c.k[0], OW = W / c.k[1];
    auto xv = uniform(rng, numel_of(c.s), -2, 2), gv = uniform(rng, N * C * OH * OW);
    std::vector<double> ref(xv.size(), 0.0);
    for (std::int64_t p = 0; p < N * C; ++p)
      for (std::int64_t oh = 0; oh < OH; ++oh)
        for (std::int64_t ow = 0; ow < OW; ++ow) {
          std::int64_t best = -1;
          for (std::int64_t kh = 0; kh < c.k[0]; ++kh)
            for (std::int64_t kw = 0; kw < c.k[1]; ++kw) {
              const std::int64_t e = (p * H + oh * c.k[0] + kh) * W + ow * c.k[1] + kw;
              if (best < 0 || xv[e] > xv[best]) best = e;
            }
          ref[best] = gv[(p * OH + oh) * OW + ow];
        }
    auto run = [&] {
      Tensor x = Tensor::from_host(device(), xv, c.s);
      requires_grad_(x);
      backward(max_pool2d(x, o), Tensor::from_host(device(), gv, {N, C, OH, OW}));
      return grad(x).to_vector();
    };
    const std::vector<float> tiles = run();
    EXPECT_TRUE(close(tiles, ref, 0, 0));
    ScopedLoopLimit limit(static_cast<std::uint64_t>(c.k[0] * (c.k[1] + 1) - 1));  // the per-element gather
    EXPECT_EQ(run(), tiles);
  }
}

namespace {
// Max pooling's backward forms over x of shape xs (fresh values in [-2, 2]), forward and gradient
// against float64: windows that tile x (GATHER_TILES), disjoint windows with gaps (the
// per-element gather) and overlapping ones.
void check_max_pool_backward_forms(std::mt19937_64& rng, const Shape& xs) {
  const auto xv = uniform(rng, numel_of(xs), -2, 2);
  Pool2dOptions tiles, gaps, overlap;
  tiles.kernel = {2, 2};
  gaps.kernel = {2, 2}, gaps.stride = {3, 3};
  overlap.kernel = {3, 3}, overlap.stride = {2, 2}, overlap.padding = {1, 1};
  check_pool(rng, xv, xs, 0, tiles, {}, DType::f32, "max 2x2 (tiles)");
  check_pool(rng, xv, xs, 0, gaps, {}, DType::f32, "max 2x2 stride 3 (gather)");
  check_pool(rng, xv, xs, 0, overlap, {}, DType::f32, "max 3x3 stride 2 padding 1");
}
}  // namespace

// Max pooling's backward on grids split over several dispatches (a dispatch limit of 3
// workgroups per dimension: 1-D grids as 2-D rows, as past the GPUs' 65535 workgroups): windows
// that tile the input (GATHER_TILES), disjoint windows with gaps (the per-element gather) and
// overlapping ones, forward and gradient against float64. Sabotage: GATHER_TILES' window index
// from gl_GlobalInvocationID.x (without the grid's rows) in pool.comp fails it.
TEST(Pool2d, MaxGradientGridsSplitUnderALoweredDispatchLimit) {
  GLT_RNG(rng);
  ScopedDispatchLimit limit(3);
  const Shape xs{3, 5, 40, 36};  // 21600 elements: 85 workgroups of 256 per element, 22 per 2 x 2 window
  check_max_pool_backward_forms(rng, xs);
}

// The same near the 128 MiB that llvmpipe's SSBOs allow: x [32, 16, 256, 256], 32 M float32
// values (GATHER_TILES: 8.4 M windows in 32768 workgroups; the per-element gather and the
// overlapping windows' backward: 131072 workgroups, 2-D rows past 65535). GPUs only: llvmpipe runs
// the splits at small sizes (MaxGradientGridsSplitUnderALoweredDispatchLimit).
TEST(Pool2d, MaxGradientNearTheSsboLimitOnGpus) {
  if (device().adapter().software) GTEST_SKIP() << "GPUs only (llvmpipe: the lowered-limit tests)";
  GLT_RNG(rng);
  const Shape xs{32, 16, 256, 256};
  check_max_pool_backward_forms(rng, xs);
}

// WindowsPastTheLoopLimit's passes under a lowered loop limit on small shapes (so that any device runs them),
// with windows split over several dispatches (limit 16: offsets in chunks of 14): stride,
// padding with and without count_include_pad, ceil_mode, dilation, adaptive windows smaller and
// larger than the input, f16, ties and NaN for max.
TEST(Pool2d, SeparablePassesUnderALoweredLoopLimit) {
  GLT_RNG(rng);
  const Shape xs{2, 3, 30, 27};
  auto xv = uniform(rng, numel_of(xs));
  for (std::size_t i = 0; i < xv.size(); i += 4) xv[i] = std::round(xv[i] * 2);  // ties
  Pool2dOptions a;  // windows of 17 x 15 offsets, in two dispatches each
  a.kernel = {17, 15};
  a.stride = {3, 2};
  a.padding = {8, 7};
  a.ceil_mode = true;
  Pool2dOptions b = a;
  b.count_include_pad = false;
  b.ceil_mode = false;
  Pool2dOptions c;  // stride 1: 17 and 16 windows cover a position (the gradient's passes split)
  c.kernel = {16, 15};
  c.stride = {1, 1};
  c.padding = {0, 7};
  Pool2dOptions d;
  d.kernel = {7, 5};
  d.stride = {1, 2};
  d.padding = {2, 1};
  d.dilation = {2, 3};
  ScopedLoopLimit limit(16);
  check_pool(rng, xv, xs, 1, a, {}, DType::f32, "avg, count_include_pad, ceil_mode");
  check_pool(rng, xv, xs, 1, b, {}, DType::f32, "avg, no count_include_pad");
  check_pool(rng, xv, xs, 1, c, {}, DType::f32, "avg, stride 1");
  check_pool(rng, xv, xs, 1, a, {}, DType::f16, "avg, f16");
  check_pool(rng, xv, xs, 2, {}, {4, 5}, DType::f32, "adaptive to 4x5");
  check_pool(rng, xv, xs, 2, {}, {45, 2}, DType::f32, "adaptive to 45x2");
  check_pool(rng, xv, xs, 0, a, {}, DType::f32, "max");
  check_pool(rng, xv, xs, 0, d, {}, DType::f32, "max, dilation");
  xv[5] = NAN;
  xv[700] = NAN;
  check_pool(rng, xv, xs, 0, a, {}, DType::f32, "max with NaN");
}

// Several NaN in a window: the max is NaN and its gradient goes to the window's last NaN in
// row-major order, as torch's kernels (`val > maxval || isnan(val)`), on every path: the direct
// forward with the atomic backward (overlapping windows), the gather backward (disjoint windows),
// the tiling windows' backward (2 x 2), dilation, f16, and the separable passes under a lowered
// loop limit (the last NaN over rows of each row's last). Plus one window by hand.
TEST(Pool2d, MaxGradientGoesToTheLastNaN) {
  GLT_RNG(rng);
  {
    // plane [[NaN, 1], [NaN, 0]]: torch's max_pool2d(2) gives NaN with the gradient at (1, 0)
    Tensor x = Tensor::from_host(device(), std::vector<float>{NAN, 1, NAN, 0}, {1, 1, 2, 2});
    requires_grad_(x);
    Tensor y = max_pool2d(x, Pool2dOptions{});
    EXPECT_TRUE(std::isnan(y.to_vector()[0]));
    backward(y, ones(device(), {1, 1, 1, 1}));
    EXPECT_EQ(grad(x).to_vector(), (std::vector<float>{0, 0, 1, 0}));
  }
  const Shape xs{2, 3, 12, 14};
  auto xv = uniform(rng, numel_of(xs));
  for (std::size_t i = 0; i < xv.size(); i += 5) xv[i] = NAN;  // 2 x 2 windows hold 0 to 2 of them
  auto opts = [](std::array<std::int64_t, 2> k, std::array<std::int64_t, 2> st, std::array<std::int64_t, 2> pad,
                 std::int64_t dil) {
    Pool2dOptions o;
    o.kernel = k, o.stride = st, o.padding = pad, o.dilation = {dil, dil};
    return o;
  };
  const Pool2dOptions over = opts({3, 3}, {1, 1}, {1, 1}, 1);      // overlapping windows (the atomic backward)
  const Pool2dOptions disjoint = opts({3, 2}, {4, 3}, {0, 0}, 1);  // disjoint, not tiling (the per-element gather)
  const Pool2dOptions dil = opts({3, 3}, {2, 1}, {0, 0}, 2);
  check_pool(rng, xv, xs, 0, over, {}, DType::f32, "3x3 stride 1 padding 1");
  check_pool(rng, xv, xs, 0, disjoint, {}, DType::f32, "3x2 stride 4x3");
  check_pool(rng, xv, xs, 0, Pool2dOptions{}, {}, DType::f32, "2x2 tiles");
  check_pool(rng, xv, xs, 0, dil, {}, DType::f32, "dilation 2");
  check_pool(rng, xv, xs, 0, over, {}, DType::f16, "3x3 f16");
  const Pool2dOptions big = opts({7, 6}, {2, 3}, {3, 2}, 1);  // 7 x 6 windows: several NaN each
  check_pool(rng, xv, xs, 0, big, {}, DType::f32, "7x6");
  ScopedLoopLimit limit(16);  // 7 x 6 windows past it: the separable passes
  check_pool(rng, xv, xs, 0, big, {}, DType::f32, "7x6 separable");
  check_pool(rng, xv, xs, 0, over, {}, DType::f32, "3x3 separable");
}

// The inference kernels' quad loads (glsl/nn/attention.comp's, attention_lanes.comp's and attention_block.comp's q_quad
// / k_quad / v_quad, f32 rows on 4-element boundaries) past the head dim are branched around (0, no load): q, k, v are
// the leading rows of storages whose next row (past each head's last row, past the tensor's end for the last head) is
// NaN, head dims 4 to 36 below the kernel's 64-wide quads (the quads past E would read the next row), against float64.
// Sabotage: q's and k's branch dropped fails (v's dims past Ev are not stored). (Here, not in test_attention, since
// suite41a: test_nn's Attention tests compile these programs in its GALLIVM_PERF mode; test_attention compiled them
// again.)
TEST(Attention, InferenceQuadsPastTheHeadDim) {
  GLT_RNG(rng);
  for (const auto& [E, Ev] : std::vector<std::pair<int, int>>{{4, 8}, {20, 12}, {36, 28}}) {
    const attn_test::Case c{1, 2, 2, 5, 7, E, Ev};
    SCOPED_TRACE(c.what());
    std::vector<double> hq, hk, hv;
    const Tensor q = attn_test::rows_before_nan(rng, c.H, c.L, E, hq),
                 k = attn_test::rows_before_nan(rng, c.H, c.S, E, hk),
                 v = attn_test::rows_before_nan(rng, c.H, c.S, Ev, hv);
    const attn_test::Ref r = attn_test::reference(c, hq, hk, hv, {}, {}, nullptr);
    // attention.comp, attention_lanes.comp and attention_block.comp (GPUs choose the lanes kernel for head dims up to
    // 16, the block kernel past 16 for few row blocks)
    for (const char* kernel : {"attention", "lanes", "block"}) {
      const std::string kn = kernel;
      if (kn == "block" && E != 36) continue;  // its 16 head-dim quads only (one program: review39's R6)
      ScopedEnv env("GLTENSOR_ATTENTION_LANES", kn == "lanes" ? "1" : "0");
      ScopedEnv block("GLTENSOR_ATTENTION_BLOCK", kn == "block" ? "1" : "0");
      SCOPED_TRACE(kn);
      EXPECT_TRUE(
          close(scaled_dot_product_attention(q, k, v, attn_test::options(c, Tensor())).to_vector(), r.out, 1e-4, 1e-4));
    }
  }
}

// Key sequences longer than one invocation of the fused kernel may loop over (the issue
// "Correctness on llvmpipe": 45000 keys gave 0 instead of 1) go split-KV: chunks of keys in
// separate workgroups, combined by their row maxima and sums; no [L, S] scores are stored.
TEST(Attention, KeysPastTheLoopLimitSplitKV) {
  GLT_RNG(rng);
  const int S = 45000;
  {
    auto q = uniform(rng, 8 * 16, -2, 2);
    Tensor r = scaled_dot_product_attention(Tensor::from_host(device(), q, {1, 8, 16}), ones(device(), {1, S, 16}),
                                            ones(device(), {1, S, 16}));
    EXPECT_TRUE(close(r.to_vector(), std::vector<double>(8 * 16, 1.0), 1e-5, 0)) << "ones";
  }
  // (Few query rows: llvmpipe runs this kernel at ~0.15 GFLOP/s.)
  for (bool causal : {false, true}) {
    const int B = 1, L = causal ? 40 : 8, E = 16, Ev = 8;
    auto q = uniform(rng, B * L * E, -2, 2), k = uniform(rng, B * S * E, -2, 2), v = uniform(rng, B * S * Ev);
    auto ref = ref_attention(q, k, v, B, B, L, S, E, Ev, causal);
    Tensor r = scaled_dot_product_attention(Tensor::from_host(device(), q, {B, L, E}),
                                            Tensor::from_host(device(), k, {B, S, E}),
                                            Tensor::from_host(device(), v, {B, S, Ev}), Tensor(), causal);
    EXPECT_TRUE(close(r.to_vector(), ref, 1e-4, 1e-5)) << (causal ? "causal" : "");
  }
}

// The split-KV path under a lowered loop limit (chunks of 32 or 64 keys), so that any device runs
// it on small shapes: tile edges, broadcast batches, causal rows whose later chunks hold no key,
// every tiling of the device, f16 k/v, NaN in a key and Inf in a query.
TEST(Attention, SplitKVUnderALoweredLoopLimit) {
  GLT_RNG(rng);
  ScopedLoopLimit limit(600);
  using Case = AttentionCase;
  auto tilings = smaller_attention_tilings();
  tilings.insert(tilings.begin(), {"GLTENSOR_ATTENTION_KEYS", "64"});  // the default
  for (const Case& c : std::vector<Case>{{2, 2, 5, 300, 4, 3}, {3, 1, 70, 450, 64, 64}, {1, 1, 129, 1000, 16, 40}})
    for (bool causal : {false, true}) {
      const AttentionInputs in = attention_inputs(rng, c, causal);
      const auto& [ref, tq, tk, tv, what] = in;
      for (const auto& [var, val] : tilings) {
        ScopedEnv lanes("GLTENSOR_ATTENTION_LANES", lanes_unless(var));
        ScopedEnv block("GLTENSOR_ATTENTION_BLOCK", "0");
        ScopedEnv env(var, val);
        Tensor r = scaled_dot_product_attention(tq, tk, tv, Tensor(), causal);
        EXPECT_EQ(r.shape(), (Shape{c.Bq, c.L, c.Ev}));
        EXPECT_TRUE(close(r.to_vector(), ref, 1e-4, 1e-5)) << what << " with " << var << "=" << val;
      }
    }
  // f16 k and v: an f32 result (the promoted dtype), and all f16: an f16 result.
  const int L = 40, S = 500, E = 32;
  auto q = uniform(rng, L * E), k = uniform(rng, S * E), v = uniform(rng, S * E);
  for (auto* x : {&q, &k, &v})
    for (auto& f : *x) f = f16_to_f32(f32_to_f16(f));
  auto ref = ref_attention(q, k, v, 1, 1, L, S, E, E, true);
  Tensor tk = Tensor::from_host(device(), k, {1, S, E}, DType::f16),
         tv = Tensor::from_host(device(), v, {1, S, E}, DType::f16);
  Tensor r = scaled_dot_product_attention(Tensor::from_host(device(), q, {1, L, E}), tk, tv, Tensor(), true);
  EXPECT_EQ(r.dtype(), DType::f32);
  EXPECT_TRUE(close(r.to_vector(), ref, 1e-4, 1e-5)) << "f16 k/v";
  Tensor h =
      scaled_dot_product_attention(Tensor::from_host(device(), q, {1, L, E}, DType::f16), tk, tv, Tensor(), true);
  EXPECT_EQ(h.dtype(), DType::f16);
  EXPECT_TRUE(close(h.to(DType::f32).to_vector(), ref, 2e-3, 1e-3)) << "f16";
  // NaN in key 200 reaches exactly the causal rows that see it; Inf in query 0 makes its row NaN.
  check_nan_rows(300, 200);
}

// Attention scores past the device's max SSBO block (under a lowered limit): the composite path
// (a mask, gradients, a causal split-KV problem, or GLTENSOR_ATTENTION=composite) runs per block
// of query rows (causal masks shifted to each block's rows, a mask per row narrowed to them); the
// fused kernel's split-KV partials [chunks, batch, L, Ev + 2] likewise without a causal mask.
// Against float64, and gradients and masked results against the same op without the limit.
TEST(Attention, ScoresPastTheSsboLimit) {
  GLT_RNG(rng);
  {
    const AttentionCase c{2, 2, 40, 50, 16, 8};  // scores 16000 bytes; q, k, v at most 6400
    for (bool causal : {false, true}) {
      const AttentionInputs in = attention_inputs(rng, c, causal);
      const auto& [ref, tq, tk, tv, what] = in;
      ScopedEnv env("GLTENSOR_ATTENTION", "composite");
      ScopedSsboLimit limit(7000);  // blocks of 17 rows
      EXPECT_TRUE(close(scaled_dot_product_attention(tq, tk, tv, Tensor(), causal).to_vector(), ref, 1e-4, 1e-5))
          << what;
    }
    std::vector<std::uint8_t> mv(40 * 50);
    for (std::size_t i = 0; i < mv.size(); ++i) mv[i] = i % 50 == 0 || rng() % 3 != 0;
    auto qv = uniform(rng, 2 * 40 * 16), kv = uniform(rng, 2 * 50 * 16), vv = uniform(rng, 2 * 50 * 8);
    auto run = [&](std::int64_t lim, bool masked) {
      ScopedSsboLimit limit(lim);
      Tensor q = Tensor::from_host(device(), qv, {2, 40, 16}), k = Tensor::from_host(device(), kv, {2, 50, 16}),
             v = Tensor::from_host(device(), vv, {2, 50, 8});
      for (Tensor* t : {&q, &k, &v}) requires_grad_(*t);
      Tensor mask = masked ? Tensor::from_host(device(), mv, {1, 40, 50}, DType::bool_) : Tensor();
      Tensor y = scaled_dot_product_attention(q, k, v, mask, !masked);
      backward(sum(mul(y, y)));
      return std::vector<std::vector<float>>{y.to_vector(), grad(q).to_vector(), grad(k).to_vector(),
                                             grad(v).to_vector()};
    };
    for (bool masked : {false, true}) {
      const auto full = run(0, masked), blocks = run(7000, masked);
      for (std::size_t i = 0; i < full.size(); ++i)
        EXPECT_TRUE(close(blocks[i], {full[i].begin(), full[i].end()}, 1e-5, 1e-6))
            << (masked ? "mask" : "causal") << ", output/gradient " << i;
    }
  }
  // Split-KV (lowered loop limit: chunks of 32 or 64 keys) with partials of 528000 bytes or more
  // against v's 153600: blocks of query rows; a causal problem takes the composite path's blocks.
  ScopedLoopLimit loops(600);
  const AttentionCase c{2, 2, 200, 300, 4, 64};
  for (bool causal : {false, true}) {
    const AttentionInputs in = attention_inputs(rng, c, causal);
    const auto& [ref, tq, tk, tv, what] = in;
    ScopedSsboLimit limit(160000);
    EXPECT_TRUE(close(scaled_dot_product_attention(tq, tk, tv, Tensor(), causal).to_vector(), ref, 1e-4, 1e-5)) << what;
  }
}

// batch_norm with act = relu: y = relu(bn(x)) in one kernel and its gradients (x, weight, bias)
// against finite differences of the float64 reference, in training and eval; nn::Sequential runs
// BatchNorm2d + ReLU so: the same values and gradients as the two ops apart, in fewer dispatches.
TEST(Norms, BatchNormReluFused) {
  GLT_RNG(rng);
  const Shape s = {4, 3, 2, 5};
  const std::int64_t C = 3, S = 10, n = 4 * S;
  // The batch norm's output before the ReLU (float64).
  auto pre = [&](bool training, const std::vector<double>& rm, const std::vector<double>& rv) {
    return [=](const std::vector<HostT>& in) {
      const HostT &x = in[0], &w = in[1], &b = in[2];
      std::vector<double> y(x.size());
      for (std::int64_t c = 0; c < C; ++c) {
        double m = 0, q = 0;
        for (std::int64_t i = 0; i < n; ++i) m += x.v[(i / S * C + c) * S + i % S] / n;
        for (std::int64_t i = 0; i < n; ++i) q += std::pow(x.v[(i / S * C + c) * S + i % S] - m, 2) / n;
        if (!training) m = rm[c], q = rv[c];
        for (std::int64_t i = 0; i < n; ++i) {
          const std::size_t e = static_cast<std::size_t>((i / S * C + c) * S + i % S);
          y[e] = (x.v[e] - m) / std::sqrt(q + 1e-5) * w.v[c] + b.v[c];
        }
      }
      return y;
    };
  };
  const std::vector<float> rmv = {0.1f, -0.2f, 0.3f}, rvv = {0.5f, 1.5f, 0.8f};
  for (bool training : {true, false}) {
    SCOPED_TRACE(training ? "training" : "eval");
    const auto p = pre(training, {rmv.begin(), rmv.end()}, {rvv.begin(), rvv.end()});
    // A finite difference across the ReLU's kink is not its derivative: every pre-activation is
    // kept 1e-3 away from 0 (the steps move them by about 1e-4 at most).
    auto away_from_kink = [&](const std::vector<HostT>& in) {
      for (double v : p(in))
        if (std::fabs(v) < 1e-3) return false;
      return true;
    };
    EXPECT_TRUE(grad_check(
        rng, {s, {C}, {C}},
        [&](auto& t) {
          return batch_norm(t[0], Tensor::from_host(device(), rmv, {C}), Tensor::from_host(device(), rvv, {C}), t[1],
                            t[2], training, 0.1, 1e-5, Activation::relu);
        },
        [&](const std::vector<HostT>& in) {
          auto y = p(in);
          for (auto& v : y) v = v > 0 ? v : 0;
          return y;
        },
        -1, 1, false, {}, away_from_kink));
  }
  // Sequential: BatchNorm2d + ReLU against the ops apart (same kernel arithmetic: equal values).
  Generator gen(3);
  nn::Sequential seq;
  auto bn = std::make_shared<nn::BatchNorm2d>(device(), C);
  seq.add(bn).add(std::make_shared<nn::ReLU>());
  const auto xv = uniform(rng, static_cast<std::size_t>(numel_of(s)));
  Tensor x1 = Tensor::from_host(device(), xv, s), x2 = Tensor::from_host(device(), xv, s);
  requires_grad_(x1);
  requires_grad_(x2);
  const auto d0 = device().dispatch_count();
  Tensor y1 = seq.forward(x1);
  const auto fused = device().dispatch_count() - d0;
  Tensor y2 = relu(batch_norm(x2, Tensor(), Tensor(), bn->weight, bn->bias, true));
  EXPECT_LT(fused, device().dispatch_count() - d0 - fused);
  EXPECT_EQ(y1.to_vector(), y2.to_vector());
  const auto gv = uniform(rng, static_cast<std::size_t>(numel_of(s)));
  backward(y1, Tensor::from_host(device(), gv, s));
  backward(y2, Tensor::from_host(device(), gv, s));
  EXPECT_EQ(grad(x1).to_vector(), grad(x2).to_vector());
  EXPECT_THROW(batch_norm(x1, Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5, Activation::gelu), ValueError);
}
