// NN ops against float64 host references (forward) and finite differences (gradients).
// Tolerances: forward rtol 1e-4 / atol 1e-5 (f32 accumulation); gradients as in grad_check.hpp.
#include "grad_check.hpp"
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
      s->conv = path;
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
  // and without sliced K: 64 output channels, K = 144, Nimg * OH * OW a multiple of 128.
  // Padding, bias in its epilogue; stride, dilation, asymmetric padding, OW = 6 (im2col's quads
  // of positions wrap to the next row), a non-contiguous (NHWC) input; f16 input and weights.
  for (const char* kernel : {"vec4", "vec4s"}) {
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
  // im2col's grid split into several dispatches (at most 3 workgroups per grid dimension):
  // 5 images x 18 rows (c, kh, kw) with 2 workgroups of positions each.
  {
    const Shape xs{5, 2, 20, 20}, ws{3, 2, 3, 3};
    auto xv = uniform(rng, numel_of(xs)), wv = uniform(rng, numel_of(ws));
    HostT hx{{xv.begin(), xv.end()}, xs}, hw{{wv.begin(), wv.end()}, ws};
    Shape os;
    auto ref = ref_conv(hx, hw, nullptr, Conv2dOptions::pad(1), os);
    Tensor x = Tensor::from_host(device(), xv, xs), w = Tensor::from_host(device(), wv, ws);
    ScopedSettings s;
    s->conv = "im2col";
    device().set_dispatch_limit(3);
    const auto d0 = device().dispatch_count();
    Tensor y = conv2d(x, w, Tensor(), Conv2dOptions::pad(1));
    EXPECT_GE(device().dispatch_count() - d0, 12u);  // im2col alone: 2 x 6 dispatches
    device().set_dispatch_limit(0);
    EXPECT_TRUE(close(y.to_vector(), ref, 1e-4, 1e-5)) << "split im2col grid";
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
      s->conv = path;
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
  for (const auto& [o, mode] :
       std::vector<std::pair<Pool2dOptions, int>>{{a, 0}, {b, 0}, {d, 0}, {a, 1}, {b, 1}, {c, 1}}) {
    const Shape s = {2, 3, 7, 6};
    auto fwd = [o = o, mode = mode](const Tensor& t) { return mode == 0 ? max_pool2d(t, o) : avg_pool2d(t, o); };
    Tensor probe = fwd(zeros(device(), s));
    const std::int64_t OH = probe.size(2), OW = probe.size(3);
    EXPECT_TRUE(grad_check(
        rng, {s}, [&](auto& t) { return fwd(t[0]); },
        [&](const std::vector<HostT>& x) { return ref_pool(x[0], mode, o, OH, OW); }))
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
// (none on llvmpipe: 32 KiB of shared memory and no subgroups leave one).
std::vector<std::pair<const char*, const char*>> smaller_attention_tilings() {
  std::vector<std::pair<const char*, const char*>> v;
  if (device().caps().max_shared_memory >= 44 * 1024) v.push_back({"GLTENSOR_ATTENTION_BQ", "32"});
  if (device().caps().subgroup) {
    v.push_back({"GLTENSOR_ATTENTION_KEYS", "32"});
    v.push_back({"GLTENSOR_SUBGROUPS", "0"});
  }
  return v;
}

}  // namespace

// The fused kernel (no mask, no gradient): tile edges, L != S both ways, E != Ev, head dims up to
// 64, broadcast k/v batches, a non-contiguous q, f16 inputs, NaN propagation; and the composite
// path (GLTENSOR_ATTENTION=composite) must agree with it.
TEST(Attention, FusedKernelMatchesReference) {
  GLT_RNG(rng);
  struct Case {
    int Bq, Bk, L, S, E, Ev;
  };
  for (const Case& c : std::vector<Case>{{2, 2, 5, 6, 4, 3},
                                         {3, 1, 70, 45, 64, 64},
                                         {1, 1, 33, 100, 16, 40},
                                         {2, 2, 129, 129, 64, 64},
                                         {1, 1, 1, 1, 1, 1}})
    for (bool causal : {false, true}) {
      auto q = uniform(rng, c.Bq * c.L * c.E, -2, 2), k = uniform(rng, c.Bk * c.S * c.E, -2, 2),
           v = uniform(rng, c.Bk * c.S * c.Ev);
      auto ref = ref_attention(q, k, v, c.Bq, c.Bk, c.L, c.S, c.E, c.Ev, causal);
      Tensor tq = Tensor::from_host(device(), q, {c.Bq, c.L, c.E});
      Tensor tk = Tensor::from_host(device(), k, {c.Bk, c.S, c.E}),
             tv = Tensor::from_host(device(), v, {c.Bk, c.S, c.Ev});
      const std::string what = std::to_string(c.Bq) + "x" + std::to_string(c.L) + "x" + std::to_string(c.S) + "x" +
                               std::to_string(c.E) + "x" + std::to_string(c.Ev) + (causal ? " causal" : "");
      Tensor r = scaled_dot_product_attention(tq, tk, tv, Tensor(), causal);
      EXPECT_EQ(r.shape(), (Shape{c.Bq, c.L, c.Ev}));
      EXPECT_TRUE(close(r.to_vector(), ref, 1e-4, 1e-5)) << what;
      // The kernel's other tilings where the device would choose a larger one: 32 query rows
      // per workgroup, 32 keys per tile, shared-memory row reductions instead of clusters.
      for (const auto& [var, val] : smaller_attention_tilings()) {
        ScopedEnv env(var, val);
        EXPECT_TRUE(close(scaled_dot_product_attention(tq, tk, tv, Tensor(), causal).to_vector(), ref, 1e-4, 1e-5))
            << what << " with " << var << "=" << val;
      }
      {
        ScopedEnv env("GLTENSOR_ATTENTION", "composite");
        EXPECT_TRUE(close(scaled_dot_product_attention(tq, tk, tv, Tensor(), causal).to_vector(), ref, 1e-4, 1e-5))
            << "composite " << what;
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
  std::vector<float> kq(1 * 8 * 4, 0.5f), kk(1 * 8 * 4, 0.25f), kv(1 * 8 * 4, 1.0f);
  kk[3 * 4 + 1] = NAN;
  kq[0] = INFINITY;
  auto tilings = smaller_attention_tilings();
  tilings.insert(tilings.begin(), {"GLTENSOR_ATTENTION_KEYS", "64"});  // the default
  for (const auto& [var, val] : tilings) {
    ScopedEnv env(var, val);
    auto out = scaled_dot_product_attention(Tensor::from_host(device(), kq, {1, 8, 4}),
                                            Tensor::from_host(device(), kk, {1, 8, 4}),
                                            Tensor::from_host(device(), kv, {1, 8, 4}), Tensor(), true)
                   .to_vector();
    for (int i = 0; i < 8; ++i)
      for (int c = 0; c < 4; ++c) {
        const float x = out[i * 4 + c];
        if (i == 0 || i >= 3)
          EXPECT_TRUE(std::isnan(x)) << i << " " << var << "=" << val;
        else
          EXPECT_FLOAT_EQ(x, 1.0f) << i << " " << var << "=" << val;
      }
  }
}
