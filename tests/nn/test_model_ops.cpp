// Ops added for ONNX models: resize (ONNX Resize), prelu, conv1d / conv_transpose1d,
// max_pool1d / avg_pool1d, and the Epilogue activations of matmul_fused / linear / conv2d,
// against float64 CPU references written from the ONNX specification.
#include <cmath>

#include "test_util.hpp"

using namespace gltensor;
using namespace glt_test;

namespace {

using C = ResizeOptions::Coord;
using NM = ResizeOptions::Nearest;

// ONNX Resize reference on [N, C, H, W] (2-D spatial), element by element.
// len: in * scale (unrounded) with scales, else the output size out.
double src_coord(C c, std::int64_t o, std::int64_t in, double len, std::int64_t out, double scale) {
  switch (c) {
    case C::half_pixel:
      return (o + 0.5) / scale - 0.5;
    case C::half_pixel_symmetric:  // Resize-19: centers aligned when out was rounded from len
      return in / 2.0 * (1.0 - out / len) + (o + 0.5) / scale - 0.5;
    case C::tf_crop_and_resize:  // the whole input as the region (roi empty)
      return len > 1 ? o * (in - 1.0) / (len - 1.0) : 0.5 * (in - 1.0);
    case C::pytorch_half_pixel:
      return len > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
    case C::align_corners:
      return len == 1 ? 0.0 : o * (in - 1.0) / (len - 1.0);
    case C::asymmetric:
      return o / scale;
    case C::tf_half_pixel_for_nn:
      return (o + 0.5) / scale;
  }
  return 0;
}

std::int64_t nearest_index(NM m, double x, std::int64_t in, double scale) {
  double r = 0;
  const double f = std::floor(x), frac = x - f;
  switch (m) {
    case NM::round_prefer_floor:
      r = frac == 0.5 ? f : std::round(x);
      break;
    case NM::round_prefer_ceil:
      r = frac == 0.5 ? f + 1 : std::round(x);
      break;
    case NM::floor:
      r = f;
      break;
    case NM::ceil:
      r = std::ceil(x);
      break;
    case NM::simple:
      r = scale < 1 ? std::ceil(x) : f;
      break;
  }
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(r), 0, in - 1);
}

std::vector<double> ref_resize(const std::vector<float>& x, const Shape& s, const Shape& out, const ResizeOptions& o) {
  const std::int64_t N = s[0], Ch = s[1], H = s[2], W = s[3], OH = out[2], OW = out[3];
  const double sh = o.scales.empty() ? double(OH) / H : o.scales[2],
               sw = o.scales.empty() ? double(OW) / W : o.scales[3];
  const double lh = o.scales.empty() ? OH : H * sh, lw = o.scales.empty() ? OW : W * sw;
  std::vector<double> y;
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t c = 0; c < Ch; ++c)
      for (std::int64_t oh = 0; oh < OH; ++oh)
        for (std::int64_t ow = 0; ow < OW; ++ow) {
          const double ys = src_coord(o.coord, oh, H, lh, OH, sh), xs = src_coord(o.coord, ow, W, lw, OW, sw);
          auto at = [&](std::int64_t h, std::int64_t w) {
            h = std::clamp<std::int64_t>(h, 0, H - 1);
            w = std::clamp<std::int64_t>(w, 0, W - 1);
            return static_cast<double>(x[((n * Ch + c) * H + h) * W + w]);
          };
          if (o.mode == ResizeOptions::Mode::nearest) {
            y.push_back(at(nearest_index(o.nearest, ys, H, sh), nearest_index(o.nearest, xs, W, sw)));
          } else {
            const double fy = std::floor(ys), fx = std::floor(xs), wy = ys - fy, wx = xs - fx;
            const auto h0 = static_cast<std::int64_t>(fy), w0 = static_cast<std::int64_t>(fx);
            y.push_back((1 - wy) * ((1 - wx) * at(h0, w0) + wx * at(h0, w0 + 1)) +
                        wy * ((1 - wx) * at(h0 + 1, w0) + wx * at(h0 + 1, w0 + 1)));
          }
        }
  return y;
}

double act_ref(const Epilogue& e, double x) {
  using K = Activation;
  switch (e.act) {
    case K::none:
      return x;
    case K::relu:
      return x > 0 || std::isnan(x) ? x : 0;  // NaN stays NaN (torch)
    case K::sigmoid:
      return 1 / (1 + std::exp(-x));
    case K::tanh:
      return std::tanh(x);
    case K::silu:
      return x / (1 + std::exp(-x));
    case K::gelu:
      return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case K::gelu_tanh:
      return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case K::clip:
      return std::min(std::max(x, double(e.p0)), double(e.p1));
    case K::hardsigmoid:
      return std::clamp(e.p0 * x + e.p1, 0.0, 1.0);
    case K::hardswish:
      return x * std::clamp(x + 3, 0.0, 6.0) / 6;
    case K::leaky_relu:
      return x < 0 ? e.p0 * x : x;
    case K::log:
      return std::log(x);
    case K::square:
      return x * x;
  }
  return x;
}

const std::vector<Epilogue> kEpilogues = {Epilogue(),
                                          Epilogue(Activation::relu),
                                          Epilogue(Activation::sigmoid),
                                          Epilogue(Activation::tanh),
                                          Epilogue(Activation::silu),
                                          Epilogue(Activation::gelu),
                                          Epilogue(Activation::gelu_tanh),
                                          Epilogue::clip(0, 6),
                                          Epilogue::clip(-0.5, 0.25),
                                          Epilogue::clip(0, INFINITY),
                                          Epilogue::hardsigmoid(),
                                          Epilogue::hardsigmoid(1.0 / 6, 0.5),
                                          Epilogue::hardsigmoid(0.3, 0.1),
                                          Epilogue::hardswish(),
                                          Epilogue::leaky_relu(0.1)};

}  // namespace

TEST(Resize, NearestAndLinearMatchOnnxReference) {
  GLT_RNG(rng);
  struct Case {
    Shape in, out;
    ResizeOptions o;
  };
  auto opt = [](ResizeOptions::Mode m, C c, NM n, std::vector<double> scales = {}) {
    ResizeOptions o;
    o.mode = m;
    o.coord = c;
    o.nearest = n;
    o.scales = std::move(scales);
    return o;
  };
  using M = ResizeOptions::Mode;
  std::vector<Case> cases;
  for (C c : {C::half_pixel, C::pytorch_half_pixel, C::align_corners, C::asymmetric, C::tf_half_pixel_for_nn,
              C::half_pixel_symmetric, C::tf_crop_and_resize}) {
    for (NM n : {NM::round_prefer_floor, NM::round_prefer_ceil, NM::floor, NM::ceil, NM::simple}) {
      cases.push_back({{1, 2, 5, 7}, {1, 2, 9, 3}, opt(M::nearest, c, n)});
      cases.push_back({{2, 1, 4, 4}, {2, 1, 8, 8}, opt(M::nearest, c, n)});  // integer upsampling
    }
    cases.push_back({{1, 3, 5, 7}, {1, 3, 11, 4}, opt(M::linear, c, NM::floor)});
    cases.push_back({{1, 1, 1, 1}, {1, 1, 3, 2}, opt(M::linear, c, NM::floor)});                    // size-1 input
    cases.push_back({{1, 1, 4, 6}, {1, 1, 1, 1}, opt(M::linear, c, NM::floor)});                    // size-1 output
    cases.push_back({{1, 2, 4, 4}, {1, 2, 2, 2}, opt(M::linear, c, NM::floor, {1, 1, 0.6, 0.6})});  // scales
    cases.push_back({{1, 2, 5, 4}, {1, 2, 8, 2}, opt(M::linear, c, NM::floor, {1, 1, 1.7, 0.7})});  // rounded sizes
    cases.push_back({{1, 2, 5, 4}, {1, 2, 8, 2}, opt(M::nearest, c, NM::round_prefer_floor, {1, 1, 1.7, 0.7})});
    // Integer factors along H and W (software rasterizers: a shuffled 1x1 convolution where every
    // output repeats an input): rows of quads or not, factors 2, 4 and 8, scales given.
    cases.push_back({{1, 5, 3, 5}, {1, 5, 6, 10}, opt(M::nearest, c, NM::floor)});
    cases.push_back({{2, 3, 2, 8}, {2, 3, 8, 32}, opt(M::nearest, c, NM::round_prefer_ceil, {1, 1, 4, 4})});
    cases.push_back({{1, 2, 3, 4}, {1, 2, 24, 32}, opt(M::nearest, c, NM::round_prefer_floor)});
    cases.push_back({{1, 2, 3, 4}, {1, 2, 6, 12}, opt(M::nearest, c, NM::floor)});  // different factors
  }
  for (const auto& c : cases) {
    auto xv = uniform(rng, numel_of(c.in));
    sprinkle_specials(xv);
    Tensor y = resize(Tensor::from_host(device(), xv, c.in), c.out, c.o);
    ASSERT_EQ(y.shape(), c.out);
    auto ref = ref_resize(xv, c.in, c.out, c.o);
    if (c.o.mode == ResizeOptions::Mode::linear)  // NaN/Inf spread differently through lerps
      for (auto& v : ref)
        if (!std::isfinite(v)) v = NAN;
    auto got = y.to_vector();
    if (c.o.mode == ResizeOptions::Mode::linear)
      for (auto& v : got)
        if (!std::isfinite(v)) v = NAN;
    EXPECT_TRUE(close(got, ref, 1e-5, 1e-6))
        << to_string(c.in) << " -> " << to_string(c.out) << " mode " << int(c.o.mode) << " coord " << int(c.o.coord)
        << " nearest " << int(c.o.nearest);
  }
  // Nearest upsampling by integer factors in f16 storage (not the software rasterizers' shuffled
  // convolution): one broadcast copy for both dims, the values copied exactly.
  for (const auto& c : cases) {
    const bool repeat = c.o.mode == ResizeOptions::Mode::nearest && c.o.coord != C::tf_crop_and_resize &&
                        c.out[2] % c.in[2] == 0 && c.out[3] % c.in[3] == 0;
    if (!repeat) continue;
    auto xv = uniform(rng, numel_of(c.in));
    for (auto& v : xv) v = f16_to_f32(f32_to_f16(v));
    sprinkle_specials(xv);
    Tensor xh = Tensor::from_host(device(), xv, c.in, DType::f16);
    const std::size_t d0 = device().dispatch_count();
    Tensor y = resize(xh, c.out, c.o);
    const std::size_t dispatches = device().dispatch_count() - d0;
    EXPECT_EQ(y.dtype(), DType::f16);
    const std::string what = to_string(c.in) + " -> " + to_string(c.out) + " coord " + std::to_string(int(c.o.coord)) +
                             " nearest " + std::to_string(int(c.o.nearest));
    EXPECT_TRUE(close(y.to(DType::f32).to_vector(), ref_resize(xv, c.in, c.out, c.o), 0, 0)) << what;
    // (a coordinate transform that does not repeat each input k times in order: index_select per dim)
    const auto idx = [&](std::int64_t o, std::int64_t in, std::int64_t out, double sc) {
      const double len = c.o.scales.empty() ? double(out) : in * sc;
      return nearest_index(c.o.nearest, src_coord(c.o.coord, o, in, len, out, sc), in, sc);
    };
    bool in_order = true;
    for (int d : {2, 3}) {
      const double sc = c.o.scales.empty() ? double(c.out[d]) / c.in[d] : c.o.scales[d];
      for (std::int64_t o = 0; o < c.out[d]; ++o)
        in_order = in_order && idx(o, c.in[d], c.out[d], sc) == o / (c.out[d] / c.in[d]);
    }
    if (in_order) {
      EXPECT_EQ(dispatches, 1u) << what;
    }
  }
  // 1-D and 5-D inputs, dims left alone, f16 storage
  auto xv = uniform(rng, 10);
  Tensor y = resize(Tensor::from_host(device(), xv, {10}), {4}, opt(M::nearest, C::asymmetric, NM::floor));
  std::vector<double> ref;
  for (int i = 0; i < 4; ++i) ref.push_back(xv[static_cast<std::size_t>(std::floor(i * 2.5))]);
  EXPECT_TRUE(close(y.to_vector(), ref, 0, 0));
  Tensor h = resize(Tensor::from_host(device(), uniform(rng, 2 * 3 * 4), {1, 2, 1, 3, 4}, DType::f16), {1, 2, 1, 6, 8},
                    opt(M::linear, C::half_pixel, NM::floor));
  EXPECT_EQ(h.dtype(), DType::f16);
  EXPECT_EQ(h.shape(), (Shape{1, 2, 1, 6, 8}));
}

TEST(Resize, AntialiasedLinear) {
  GLT_RNG(rng);
  ResizeOptions o;
  o.mode = ResizeOptions::Mode::linear;
  o.antialias = true;
  // Halving with half_pixel: taps (0.125, 0.375, 0.375, 0.125) around 2o + 0.5, edge taps clamped.
  const std::int64_t n = 12;
  auto xv = uniform(rng, 3 * n);
  Tensor y = resize(Tensor::from_host(device(), xv, {3, n}), {3, n / 2}, o);
  std::vector<double> ref;
  for (std::int64_t r = 0; r < 3; ++r)
    for (std::int64_t i = 0; i < n / 2; ++i) {
      double s = 0;
      const double w[4] = {0.125, 0.375, 0.375, 0.125};
      for (int k = 0; k < 4; ++k) s += w[k] * xv[r * n + std::clamp<std::int64_t>(2 * i - 1 + k, 0, n - 1)];
      ref.push_back(s);
    }
  EXPECT_TRUE(close(y.to_vector(), ref, 1e-5, 1e-6));
  // Upscaling: the filter is the plain linear one.
  Tensor x = Tensor::from_host(device(), uniform(rng, 2 * 5 * 7), {1, 2, 5, 7});
  ResizeOptions plain = o;
  plain.antialias = false;
  EXPECT_TRUE(close(
      resize(x, {1, 2, 9, 13}, o).to_vector(),
      [&] {
        auto v = resize(x, {1, 2, 9, 13}, plain).to_vector();
        return std::vector<double>(v.begin(), v.end());
      }(),
      1e-5, 1e-6));
}

TEST(Resize, Errors) {
  Tensor x = ones(device(), {1, 1, 2, 2});
  EXPECT_THROW(resize(x, {1, 1, 4}), ShapeError);
  EXPECT_THROW(resize(x, {1, 1, 0, 4}), ValueError);
  ResizeOptions o;
  o.scales = {1, 1, 2};
  EXPECT_THROW(resize(x, {1, 1, 4, 4}, o), ValueError);
  o.scales = {};
  o.mode = ResizeOptions::Mode::linear;
  EXPECT_THROW(resize(ones(device(), {1, 1, 2, 2}, DType::i32), {1, 1, 4, 4}, o), DTypeError);
  EXPECT_EQ(resize(x, {1, 1, 3, 3}).shape(), (Shape{1, 1, 3, 3}));  // device still usable
}

TEST(Prelu, BroadcastNaNAndErrors) {
  GLT_RNG(rng);
  auto xv = uniform(rng, 2 * 3 * 4 * 5), sv = uniform(rng, 3);
  sprinkle_specials(xv);
  Tensor y = prelu(Tensor::from_host(device(), xv, {2, 3, 4, 5}), Tensor::from_host(device(), sv, {3, 1, 1}));
  std::vector<double> ref;
  for (std::size_t i = 0; i < xv.size(); ++i) {
    const double x = xv[i], s = sv[(i / 20) % 3];
    ref.push_back(x < 0 ? s * x : x);
  }
  EXPECT_TRUE(close(y.to_vector(), ref, 1e-6, 0));
  auto s1 = uniform(rng, 1);
  Tensor z = prelu(Tensor::from_host(device(), xv, {2, 3, 4, 5}), Tensor::from_host(device(), s1, {1}));
  for (std::size_t i = 0; i < xv.size(); ++i) ref[i] = xv[i] < 0 ? double(s1[0]) * xv[i] : xv[i];
  EXPECT_TRUE(close(z.to_vector(), ref, 1e-6, 0));
  EXPECT_THROW(prelu(ones(device(), {2, 3}), ones(device(), {4})), ShapeError);
  EXPECT_THROW(prelu(ones(device(), {2, 3}, DType::i32), ones(device(), {3})), DTypeError);
  EXPECT_THROW(prelu(ones(device(), {2, 3}), ones(device(), {2, 2, 3})), ShapeError);  // would grow x
}

TEST(Conv1d, MatchesDirectConvolutionAndPooling) {
  GLT_RNG(rng);
  struct Case {
    std::int64_t N, C, L, O, K, stride, pb, pe, dil, groups;
  };
  for (const Case& c : std::vector<Case>{{2, 3, 11, 4, 3, 1, 1, 1, 1, 1},
                                         {1, 4, 16, 6, 2, 2, 0, 1, 2, 2},
                                         {1, 5, 9, 5, 5, 1, 2, 2, 1, 5},  // depthwise
                                         {3, 1, 1, 2, 1, 1, 0, 0, 1, 1}}) {
    auto xv = uniform(rng, c.N * c.C * c.L), wv = uniform(rng, c.O * (c.C / c.groups) * c.K), bv = uniform(rng, c.O);
    Conv1dOptions o{c.stride, {c.pb, c.pe}, c.dil, c.groups};
    Tensor y = conv1d(Tensor::from_host(device(), xv, {c.N, c.C, c.L}),
                      Tensor::from_host(device(), wv, {c.O, c.C / c.groups, c.K}),
                      Tensor::from_host(device(), bv, {c.O}), o, Epilogue::clip(-0.5, 0.5));
    const std::int64_t OL = (c.L + c.pb + c.pe - c.dil * (c.K - 1) - 1) / c.stride + 1, Cg = c.C / c.groups,
                       Og = c.O / c.groups;
    ASSERT_EQ(y.shape(), (Shape{c.N, c.O, OL}));
    std::vector<double> ref;
    for (std::int64_t n = 0; n < c.N; ++n)
      for (std::int64_t oc = 0; oc < c.O; ++oc)
        for (std::int64_t ol = 0; ol < OL; ++ol) {
          double s = bv[oc];
          for (std::int64_t ci = 0; ci < Cg; ++ci)
            for (std::int64_t k = 0; k < c.K; ++k) {
              const std::int64_t l = ol * c.stride - c.pb + k * c.dil;
              if (l >= 0 && l < c.L)
                s += double(xv[(n * c.C + (oc / Og) * Cg + ci) * c.L + l]) * wv[(oc * Cg + ci) * c.K + k];
            }
          ref.push_back(std::clamp(s, -0.5, 0.5));
        }
    EXPECT_TRUE(close(y.to_vector(), ref, 1e-4, 1e-5)) << "L " << c.L << " K " << c.K << " groups " << c.groups;
  }
  // conv_transpose1d = the input-gradient of conv1d: <conv1d(x, w), y> == <x, conv_transpose1d(y, w)>
  auto xv = uniform(rng, 2 * 3 * 10), wv = uniform(rng, 4 * 3 * 3);
  Tensor x = Tensor::from_host(device(), xv, {2, 3, 10}), w = Tensor::from_host(device(), wv, {4, 3, 3});
  Conv1dOptions o{2, {1, 1}, 1, 1};
  Tensor y = conv1d(x, w, Tensor(), o);
  auto yv = uniform(rng, static_cast<std::size_t>(y.numel()));
  Tensor yt = Tensor::from_host(device(), yv, y.shape());
  Tensor xt = conv_transpose1d(yt, w, Tensor(), o, 1);
  ASSERT_EQ(xt.shape(), x.shape());
  double lhs = 0, rhs = 0;
  auto yg = y.to_vector(), xg = xt.to_vector();
  for (std::size_t i = 0; i < yv.size(); ++i) lhs += double(yg[i]) * yv[i];
  for (std::size_t i = 0; i < xv.size(); ++i) rhs += double(xg[i]) * xv[i];
  EXPECT_NEAR(lhs, rhs, 1e-3 * (1 + std::fabs(lhs)));
  // pooling
  auto pv = uniform(rng, 2 * 3 * 9);
  sprinkle_specials(pv);
  Tensor p = Tensor::from_host(device(), pv, {2, 3, 9});
  Pool1dOptions po;
  po.kernel = 3;
  po.stride = 2;
  po.padding = 1;
  Tensor mx = max_pool1d(p, po), av = avg_pool1d(p, po);
  ASSERT_EQ(mx.shape(), (Shape{2, 3, 5}));
  std::vector<double> rmx, rav;
  for (std::int64_t r = 0; r < 6; ++r)
    for (std::int64_t ol = 0; ol < 5; ++ol) {
      double m = -INFINITY, s = 0;
      bool nan = false;
      for (std::int64_t k = 0; k < 3; ++k) {
        const std::int64_t l = ol * 2 - 1 + k;
        if (l < 0 || l >= 9) continue;
        const double v = pv[r * 9 + l];
        nan = nan || std::isnan(v);
        m = std::max(m, v);
        s += v;
      }
      rmx.push_back(nan ? NAN : m);
      rav.push_back(s / 3);  // count_include_pad
    }
  EXPECT_TRUE(close(mx.to_vector(), rmx, 0, 0));
  EXPECT_TRUE(close(av.to_vector(), rav, 1e-5, 1e-6));
  EXPECT_THROW(conv1d(ones(device(), {2, 3, 4, 5}), ones(device(), {1, 3, 1})), ShapeError);
  EXPECT_THROW(max_pool1d(ones(device(), {3, 4}), po), ShapeError);
}

TEST(Epilogue, EveryKindMatchesReference) {
  GLT_RNG(rng);
  const std::int64_t M = 7, K = 13, N = 9;
  auto av = uniform(rng, M * K), bv = uniform(rng, K * N), cv = uniform(rng, N),
       xv = uniform(rng, 2 * 3 * 6 * 5, -4, 4);
  Tensor a = Tensor::from_host(device(), av, {M, K}), b = Tensor::from_host(device(), bv, {K, N}),
         c = Tensor::from_host(device(), cv, {N});
  const auto xclean = xv;
  sprinkle_specials(xv);
  Tensor x = Tensor::from_host(device(), xv, {2, 3, 6, 5});
  const auto wv = uniform(rng, 4 * 3 * 3 * 3), wb = uniform(rng, 4);
  Tensor w = Tensor::from_host(device(), wv, {4, 3, 3, 3}), bias = Tensor::from_host(device(), wb, {4});
  for (const Epilogue& e : kEpilogues) {
    SCOPED_TRACE(e.name());
    // apply_epilogue on values with specials
    std::vector<double> ref;
    for (float v : xv) ref.push_back(act_ref(e, v));
    EXPECT_TRUE(close(apply_epilogue(x, e).to_vector(), ref, 1e-5, 1e-6));
    // matmul_fused: act(0.5 a @ b + 2 c)
    std::vector<double> mref;
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (std::int64_t k = 0; k < K; ++k) s += double(av[i * K + k]) * bv[k * N + j];
        mref.push_back(act_ref(e, 0.5 * s + 2.0 * cv[j]));
      }
    EXPECT_TRUE(close(matmul_fused(a, b, c, 0.5, 2.0, e).to_vector(), mref, 1e-4, 1e-5));
    // linear: act(a @ b^T + c) with b^T given as [N, K]
    std::vector<double> lref;
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = 0; j < N; ++j) {
        double s = cv[j];
        for (std::int64_t k = 0; k < K; ++k) s += double(av[i * K + k]) * bv[k * N + j];
        lref.push_back(act_ref(e, s));
      }
    EXPECT_TRUE(close(linear(a, b.t(), c, e).to_vector(), lref, 1e-4, 1e-5));
    // conv2d with the epilogue = conv2d, then the activation
    Tensor xc = Tensor::from_host(device(), xclean, {2, 3, 6, 5});  // no specials through the convolution
    Conv2dOptions o = Conv2dOptions::pad(1);
    auto plain = conv2d(xc, w, bias, o).to_vector();
    std::vector<double> cref;
    for (float v : plain) cref.push_back(act_ref(e, v));
    EXPECT_TRUE(close(conv2d(xc, w, bias, o, e).to_vector(), cref, 1e-4, 1e-5));
  }
  EXPECT_THROW(apply_epilogue(x, Epilogue::clip(1, 0)), ValueError);
  EXPECT_THROW(matmul_fused(a, b, c, 1, 1, Epilogue::clip(1, 0)), ValueError);
  EXPECT_THROW(apply_epilogue(ones(device(), {2}, DType::i32), Epilogue::hardswish()), DTypeError);
  EXPECT_EQ(Epilogue::clip(0, 6).name(), "clip(0, 6)");
}
