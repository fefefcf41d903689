// conv2d's direct kernel (glsl/nn/conv_direct.comp) against the float64 reference: images whose
// im2col columns exceed the SSBO limit (the direct kernel's default; im2col runs in pieces), f16 and
// strided operands, NaN, and the fallback to im2col where the direct loop exceeds the device's
// loop limit, each in the layouts of the kernel (rows, lanes, ubo: GLTENSOR_CONV_DIRECT; ubo only
// where it applies: f32 operands, else rows), and the
// ubo layout's own cases: chunks of output channels, quad loads of x's rows, weights at unaligned
// offsets, the fused activation, and conv_transpose2d with kernel = stride through it; the
// epilogue (activation and affine) in every layout's kernel and on the GEMM paths. Tolerances
// as in test_nn.cpp: rtol 1e-4 / atol 1e-5 (f16: 2e-3).
#include <algorithm>
#include <cmath>

#include "nn/conv_plan.hpp"
#include "nn/conv_ref.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/guard.hpp"
#include "runtime/storage.hpp"
#include "tensor/tensor_impl.hpp"

using namespace glt_test;
using namespace gltensor;

namespace {

HostT host(const std::vector<float>& v, const Shape& s) { return HostT{{v.begin(), v.end()}, s}; }

const char* const kLayouts[] = {"rows", "lanes", "ubo"};

TEST(ConvDirect, ImageWhoseColumnsExceedTheSsboLimit) {
  GLT_RNG(rng);
  // K = 27 x 1.32 M positions x 4 bytes = 143 MB of columns, more than llvmpipe's 128 MiB.
  const Shape xs{1, 3, 1100, 1200}, ws{3, 3, 3, 3};
  const std::int64_t cols = 27 * 1100 * 1200 * 4;
  auto xv = uniform(rng, numel_of(xs)), wv = uniform(rng, numel_of(ws)), bv = uniform(rng, 3);
  Tensor x = Tensor::from_host(device(), xv, xs), w = Tensor::from_host(device(), wv, ws);
  Tensor b = Tensor::from_host(device(), bv, {3});
  Shape os;
  std::vector<double> hb(bv.begin(), bv.end());
  auto ref = ref_conv(host(xv, xs), host(wv, ws), &hb, Conv2dOptions::pad(1), os);
  Tensor y = conv2d(x, w, b, Conv2dOptions::pad(1));
  EXPECT_EQ(y.shape(), os);
  EXPECT_TRUE(close(y.to_vector(), ref, 1e-4, 1e-5));
  // The im2col path forced: in pieces of output rows where the columns exceed the device's limit.
  SCOPED_TRACE(cols > device().caps().max_ssbo_block_size ? "im2col in pieces" : "im2col whole");
  ScopedSettings s;
  s->conv = detail::ConvSetting::im2col;
  EXPECT_TRUE(close(conv2d(x, w, b, Conv2dOptions::pad(1)).to_vector(), ref, 1e-4, 1e-5)) << "im2col";
}

TEST(ConvDirect, HalfAndStridedOperandsAndNaN) {
  for (const char* layout : kLayouts) {
    SCOPED_TRACE(layout);
    GLT_RNG(rng);
    ScopedSettings s;
    s->conv = detail::ConvSetting::direct;
    s->conv_direct = detail::parse_conv_direct(layout);
    const Shape xs{2, 4, 9, 11}, ws{6, 2, 3, 3};
    Conv2dOptions o;
    o.padding = {1, 0, 2, 1};
    o.stride = {2, 1};
    o.dilation = {1, 2};
    o.groups = 2;
    auto xv = uniform(rng, numel_of(xs)), wv = uniform(rng, numel_of(ws)), bv = uniform(rng, 12);
    for (auto* v : {&xv, &wv, &bv})
      for (auto& f : *v) f = f16_to_f32(f32_to_f16(f));
    xv[17] = std::nanf("");
    // x as an NHWC tensor viewed NCHW, w transposed in storage, bias every other element.
    Tensor x = Tensor::from_host(device(), xv, xs, DType::f16).permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
    Tensor w = Tensor::from_host(device(), wv, ws, DType::f16).permute({3, 2, 1, 0}).contiguous().permute({3, 2, 1, 0});
    Tensor b = Tensor::from_host(device(), bv, {12}).slice(0, 0, 12, 2);
    ASSERT_FALSE(x.is_contiguous());
    ASSERT_FALSE(w.is_contiguous());
    std::vector<double> hb;
    for (int i = 0; i < 12; i += 2) hb.push_back(bv[static_cast<std::size_t>(i)]);
    Shape os;
    auto ref = ref_conv(host(xv, xs), host(wv, ws), &hb, o, os);
    Tensor y = conv2d(x, w, b, o);
    EXPECT_EQ(y.dtype(), DType::f16);
    EXPECT_EQ(y.shape(), os);
    EXPECT_TRUE(close(y.to(DType::f32).to_vector(), ref, 2e-3, 2e-3));  // NaN where the reference has NaN
    std::size_t nans = 0;
    for (double r : ref) nans += std::isnan(r);
    EXPECT_GT(nans, 0u);
    EXPECT_LT(nans, ref.size());
  }
}

TEST(ConvDirect, BlockingVariants) {
  // Output channels per invocation (OPI: 1, 2, 3, 6, 8 of Og = 1, 2, 3, 12, 16) and positions
  // per invocation (PX 16 or 4) with partial tiles, the row segment (stride 1, dilation 1 or 3),
  // the strided path (stride 2 along rows), row dilation 1 or 2, groups.
  for (const char* layout : kLayouts) {
    SCOPED_TRACE(layout);
    GLT_RNG(rng);
    ScopedSettings s;
    s->conv = detail::ConvSetting::direct;
    s->conv_direct = detail::parse_conv_direct(layout);
    struct Case {
      std::int64_t Cg, Og, G, W;
      std::array<std::int64_t, 2> stride, dilation;
    };
    for (const Case& c : std::vector<Case>{{2, 1, 1, 13, {1, 1}, {1, 1}},
                                           {3, 2, 2, 9, {1, 1}, {2, 3}},
                                           {3, 3, 1, 17, {1, 2}, {2, 1}},
                                           {1, 12, 1, 11, {2, 1}, {1, 1}},
                                           {2, 16, 1, 5, {1, 1}, {1, 1}},
                                           {2, 6, 2, 10, {3, 2}, {1, 2}}}) {
      const Shape xs{2, c.Cg * c.G, 7, c.W}, ws{c.Og * c.G, c.Cg, 3, 3};
      Conv2dOptions o = Conv2dOptions::pad(1);
      o.stride = c.stride;
      o.dilation = c.dilation;
      o.groups = c.G;
      auto xv = uniform(rng, numel_of(xs)), wv = uniform(rng, numel_of(ws)), bv = uniform(rng, ws[0]);
      xv[3] = std::nanf("");
      std::vector<double> hb(bv.begin(), bv.end());
      Shape os;
      auto ref = ref_conv(host(xv, xs), host(wv, ws), &hb, o, os);
      Tensor y = conv2d(Tensor::from_host(device(), xv, xs), Tensor::from_host(device(), wv, ws),
                        Tensor::from_host(device(), bv, {ws[0]}), o);
      EXPECT_EQ(y.shape(), os);
      EXPECT_TRUE(close(y.to_vector(), ref, 1e-4, 1e-5)) << to_string(xs) << " * " << to_string(ws);
    }
  }
}

TEST(ConvDirect, FallsBackToIm2colPastTheLoopLimit) {
  for (const char* layout : kLayouts) {
    SCOPED_TRACE(layout);
    GLT_RNG(rng);
    // Forced direct, but its loop (over 64 x 3 x 4 = 768 iterations) exceeds the limit: im2col +
    // GEMM (which splits K) runs instead of a LimitError.
    ScopedSettings s;
    s->conv = detail::ConvSetting::direct;
    s->conv_direct = detail::parse_conv_direct(layout);
    const Shape xs{1, 64, 6, 6}, ws{2, 64, 3, 3};
    auto xv = uniform(rng, numel_of(xs)), wv = uniform(rng, numel_of(ws));
    Shape os;
    auto ref = ref_conv(host(xv, xs), host(wv, ws), nullptr, Conv2dOptions::pad(1), os);
    std::optional<ScopedLoopLimit> loop_limit{std::in_place, 600};
    Tensor y = conv2d(Tensor::from_host(device(), xv, xs), Tensor::from_host(device(), wv, ws), Tensor(),
                      Conv2dOptions::pad(1));
    loop_limit.reset();
    EXPECT_TRUE(close(y.to_vector(), ref, 1e-4, 1e-5));
    EXPECT_EQ(conv2d(zeros(device(), {0, 64, 6, 6}), zeros(device(), ws), Tensor(), Conv2dOptions::pad(1)).shape(),
              (Shape{0, 2, 6, 6}));
  }
}

TEST(ConvDirect, LanesLayoutTilesAndWeights) {
  // The lanes layout: planes of 1024 * k +- a few positions (a partial last workgroup, a last
  // invocation with fewer than PX positions), odd widths, depthwise and grouped filters, no
  // bias, filters past the shared-memory staging limit (40 x 9 x 8 floats: the tiles form; x 6:
  // read from the SSBO), x contiguous
  // (X_CONTIG) or a column view, a NaN input; the rows layout on the same cases.
  GLT_RNG(rng);
  struct Case {
    std::int64_t N, Cg, Og, G, H, W, KH, KW;
    bool bias, view;
  };
  for (const char* layout : kLayouts)
    for (const Case& c : std::vector<Case>{{1, 3, 3, 1, 34, 31, 3, 3, true, false},
                                           {2, 1, 1, 5, 32, 33, 3, 3, false, true},
                                           {1, 2, 4, 3, 17, 61, 1, 5, true, false},
                                           {1, 40, 8, 1, 9, 7, 3, 3, true, true},
                                           {1, 40, 6, 1, 9, 7, 3, 3, true, false},
                                           {1, 3, 5, 1, 2, 1, 3, 3, true, false},
                                           {3, 4, 2, 2, 5, 3, 2, 1, false, false}}) {
      ScopedSettings s;
      s->conv = detail::ConvSetting::direct;
      s->conv_direct = detail::parse_conv_direct(layout);
      const Shape xs{c.N, c.Cg * c.G, c.H, c.W}, ws{c.Og * c.G, c.Cg, c.KH, c.KW};
      Conv2dOptions o;
      o.padding = {1, 2, 0, 1};
      o.groups = c.G;
      auto xv = uniform(rng, numel_of(xs)), wv = uniform(rng, numel_of(ws)), bv = uniform(rng, ws[0]);
      xv[3] = std::nanf("");
      std::vector<double> hb(bv.begin(), bv.end());
      Shape os;
      auto ref = ref_conv(host(xv, xs), host(wv, ws), c.bias ? &hb : nullptr, o, os);
      Tensor x = Tensor::from_host(device(), xv, xs);
      if (c.view) {  // the same values in a wider tensor: a column stride of 2
        Shape wide = xs;
        wide[3] *= 2;
        Tensor big = zeros(device(), wide);
        Tensor v = big.slice(3, 0, wide[3], 2);
        v.copy_(x);
        x = v;
        ASSERT_FALSE(x.is_contiguous());
      }
      Tensor y = conv2d(x, Tensor::from_host(device(), wv, ws),
                        c.bias ? Tensor::from_host(device(), bv, {ws[0]}) : Tensor(), o);
      EXPECT_EQ(y.shape(), os);
      EXPECT_TRUE(close(y.to_vector(), ref, 1e-4, 1e-5)) << layout << " " << to_string(xs) << " * " << to_string(ws);
    }
}

// conv2d of random x, w (and b) of these shapes against float64, in one dispatch: a NaN and an
// Inf in x, x contiguous or (view) the same values as a column view of a wider tensor (a column
// stride of 2), the epilogue (HardSwish, then * 1.25 - 0.5) in the kernel where epi; without the
// epilogue also f16 operands (f32 sums, one rounding at the store; rtol and atol 2e-3).
void expect_direct_matches(std::mt19937_64& rng, const Shape& xs, const Shape& ws, const Conv2dOptions& o, bool bias,
                           bool view, bool epi, double atol, const std::string& what) {
  const auto hswish = [](double x) { return x * std::min(std::max(x + 3, 0.0), 6.0) / 6; };
  auto xv = uniform(rng, numel_of(xs)), wv = uniform(rng, numel_of(ws)), bv = uniform(rng, ws[0]);
  xv[5 % xv.size()] = std::nanf("");
  xv[xv.size() - 2] = INFINITY;
  std::vector<double> hb(bv.begin(), bv.end());
  Shape os;
  auto ref = ref_conv(host(xv, xs), host(wv, ws), bias ? &hb : nullptr, o, os);
  Epilogue e(epi ? Activation::hardswish : Activation::none);
  if (epi) {
    e.scale = 1.25f, e.shift = -0.5f;
    for (double& r : ref) r = hswish(r) * 1.25 - 0.5;
  }
  Tensor x = Tensor::from_host(device(), xv, xs);
  if (view) {
    Shape wide = xs;
    wide[3] *= 2;
    Tensor v = zeros(device(), wide).slice(3, 0, wide[3], 2);
    v.copy_(x);
    x = v;
  }
  Tensor w = Tensor::from_host(device(), wv, ws), b = bias ? Tensor::from_host(device(), bv, {ws[0]}) : Tensor();
  const std::size_t d0 = device().dispatch_count();
  Tensor y = conv2d(x, w, b, o, e);
  EXPECT_EQ(device().dispatch_count() - d0, 1u) << what;
  EXPECT_EQ(y.shape(), os);
  EXPECT_TRUE(close(y.to_vector(), ref, 1e-4, atol)) << what;
  if (epi) return;
  for (auto* v : {&xv, &wv, &bv})
    for (auto& f : *v) f = f16_to_f32(f32_to_f16(f));
  hb.assign(bv.begin(), bv.end());
  ref = ref_conv(host(xv, xs), host(wv, ws), bias ? &hb : nullptr, o, os);
  Tensor yh = conv2d(Tensor::from_host(device(), xv, xs, DType::f16), Tensor::from_host(device(), wv, ws, DType::f16),
                     bias ? Tensor::from_host(device(), bv, {ws[0]}, DType::f16) : Tensor(), o);
  EXPECT_EQ(yh.dtype(), DType::f16);
  EXPECT_TRUE(close(yh.to(DType::f32).to_vector(), ref, 2e-3, 2e-3)) << "f16 " << what;
}

TEST(ConvDirect, LanesTilesFormEdges) {
  // The lanes layout's tiles form (filters past the shared staging limit, OPI % 4 == 0: PX
  // consecutive positions of a row per invocation, the filters staged by chunks of input
  // channels; GPUs choose it for PP-OCR det's 3 x 3, 96 -> 24 convolutions) against float64:
  // one chunk (C = 96 over OPI 8: chunks of 24) or many (C = 37, prime: chunks of 1), OPI 4 or 8
  // of Og = 4, 12, 24, widths that leave a partial last tile (OW % PX != 0, OW = 1), one row,
  // planes whose tiles leave a partial last workgroup, stride and dilation along both axes,
  // asymmetric padding, groups, two images, x contiguous or a column view, no bias, NaN and Inf
  // in x, the epilogue (HardSwish and the affine) in the kernel, and f16 operands.
  GLT_RNG(rng);
  struct Case {
    std::int64_t N, Cg, Og, G, H, W;
    std::array<std::int64_t, 2> stride, dilation;
    std::array<std::int64_t, 4> pad;
    bool bias, view, epi;
  };
  for (const Case& c : std::vector<Case>{{1, 96, 24, 1, 20, 20, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, false, true},
                                         {2, 37, 12, 1, 7, 13, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, true, false},
                                         {1, 64, 4, 2, 5, 1, {1, 1}, {1, 1}, {1, 1, 1, 1}, false, false, true},
                                         {1, 40, 8, 1, 1, 33, {2, 2}, {1, 2}, {1, 2, 1, 0}, true, false, false},
                                         {1, 30, 24, 1, 23, 70, {1, 1}, {2, 1}, {2, 0, 1, 3}, false, true, true},
                                         {2, 96, 8, 1, 11, 9, {2, 1}, {1, 3}, {1, 3, 0, 3}, true, false, true}}) {
    ScopedSettings s;
    s->conv = detail::ConvSetting::direct;
    s->conv_direct = detail::ConvDirectSetting::lanes;
    const Shape xs{c.N, c.Cg * c.G, c.H, c.W}, ws{c.Og * c.G, c.Cg, 3, 3};
    Conv2dOptions o;
    o.padding = c.pad, o.stride = c.stride, o.dilation = c.dilation, o.groups = c.G;
    // f32 sums of K = Cg * 9 terms of about 1 / 3 (sums up to about 10): atol 1e-5 per 100 terms.
    const double atol = 1e-5 * std::max<double>(1.0, static_cast<double>(c.Cg * 9) / 100.0);
    expect_direct_matches(rng, xs, ws, o, c.bias, c.view, c.epi, atol, to_string(xs) + " * " + to_string(ws));
  }
}

TEST(ConvDirect, LanesQuadsFormDepthwise) {
  // The lanes layout's quads form (DWQ: depthwise filters on GPUs, any stride; PY rows x 4
  // columns of outputs per invocation, the input rows in registers) against float64: PP-OCRv4
  // rec's depthwise convolutions (5 x 5 and 3 x 3, strides 1, 2 x 1 and 1 x 2) scaled down, odd
  // widths (no quad loads, no quad stores), widths under a quad, one row, one column, one channel
  // (groups 1), each padding's shift of the quads (left padding 0 to 3), dilation, asymmetric
  // padding, two images, x contiguous or a column view, no bias, NaN and Inf, the epilogue in the
  // kernel, f16 operands (expect_direct_matches); x at an offset that is not a multiple of 4 (no
  // quad loads) and at one that is.
  GLT_RNG(rng);
  struct Case {
    std::int64_t N, C, H, W, K;
    std::array<std::int64_t, 2> stride, dilation;
    std::array<std::int64_t, 4> pad;
    bool bias, view, epi;
  };
  const std::vector<Case> cases{{2, 5, 12, 52, 5, {1, 1}, {1, 1}, {2, 2, 2, 2}, true, false, true},
                                {2, 5, 12, 52, 5, {1, 1}, {1, 1}, {2, 2, 2, 2}, true, false, false},
                                {1, 3, 47, 61, 5, {1, 1}, {1, 1}, {2, 2, 2, 2}, true, true, false},
                                {2, 4, 13, 32, 5, {2, 1}, {1, 1}, {2, 2, 2, 2}, true, false, true},
                                {1, 3, 6, 40, 5, {2, 1}, {1, 1}, {2, 2, 2, 2}, false, false, false},
                                {2, 3, 24, 32, 5, {2, 1}, {1, 1}, {2, 2, 2, 2}, true, false, true},
                                {1, 4, 12, 40, 3, {1, 2}, {1, 1}, {1, 1, 1, 1}, true, false, true},
                                {1, 3, 12, 41, 3, {1, 2}, {1, 1}, {1, 1, 1, 1}, true, false, false},
                                {1, 6, 31, 33, 3, {2, 2}, {1, 1}, {1, 1, 1, 1}, true, false, false},
                                {2, 3, 24, 16, 3, {1, 1}, {1, 1}, {1, 0, 1, 2}, true, false, true},
                                {1, 2, 9, 16, 3, {1, 1}, {1, 1}, {1, 3, 1, 0}, true, false, false},
                                {1, 2, 19, 24, 3, {1, 2}, {2, 3}, {2, 0, 1, 3}, false, true, true},
                                {1, 2, 19, 23, 5, {1, 1}, {2, 3}, {2, 0, 1, 3}, false, true, true},
                                {1, 2, 120, 70, 5, {1, 1}, {1, 1}, {2, 2, 2, 2}, true, false, true},
                                {1, 2, 19, 24, 5, {1, 1}, {2, 2}, {4, 4, 4, 4}, true, false, false},
                                {2, 3, 3, 50, 5, {1, 1}, {1, 1}, {2, 2, 2, 2}, false, false, false},
                                {1, 3, 1, 40, 5, {1, 1}, {1, 1}, {2, 2, 2, 2}, true, false, false},
                                {1, 3, 9, 1, 5, {1, 1}, {1, 1}, {2, 2, 2, 2}, true, false, true},
                                {1, 2, 7, 3, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, false, false},
                                {2, 1, 10, 16, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, false, true},
                                {1, 2, 6, 900, 5, {1, 1}, {1, 1}, {2, 2, 2, 2}, true, false, false}};
  int quads = 0;
  for (const Case& c : cases) {
    ScopedSettings s;
    s->conv = detail::ConvSetting::direct;
    s->conv_direct = detail::ConvDirectSetting::lanes;
    detail::ConvDirectProblem dp;  // the form the planner picks (the lanes layout forced)
    dp.C = dp.Og = 1, dp.groups = c.C, dp.KH = dp.KW = c.K, dp.stride_h = c.stride[0], dp.stride_w = c.stride[1];
    dp.dilation_h = c.dilation[0], dp.dilation_w = c.dilation[1];
    dp.OH = (c.H + c.pad[0] + c.pad[2] - c.dilation[0] * (c.K - 1) - 1) / c.stride[0] + 1;
    dp.OW = (c.W + c.pad[1] + c.pad[3] - c.dilation[1] * (c.K - 1) - 1) / c.stride[1] + 1;
    quads += detail::plan_conv_direct(dp, detail::DeviceTraits{true, 0}, detail::settings()).dwq;
    const Shape xs{c.N, c.C, c.H, c.W}, ws{c.C, 1, c.K, c.K};
    Conv2dOptions o;
    o.padding = c.pad, o.stride = c.stride, o.dilation = c.dilation, o.groups = c.C;
    expect_direct_matches(rng, xs, ws, o, c.bias, c.view, c.epi, 1e-5,
                          to_string(xs) + " * " + to_string(ws) + " stride " + std::to_string(c.stride[0]) + "x" +
                              std::to_string(c.stride[1]) + " pad left " + std::to_string(c.pad[1]));
  }
  EXPECT_EQ(quads, static_cast<int>(cases.size())) << "every depthwise case in the quads form";
  // x at an element offset of 1 (no quad loads) and of 4 * 16 * 20 (one image: quad loads), both
  // contiguous.
  for (std::int64_t off : {std::int64_t{1}, std::int64_t{4 * 16 * 20}}) {
    ScopedSettings s;
    s->conv = detail::ConvSetting::direct;
    s->conv_direct = detail::ConvDirectSetting::lanes;
    const Shape xs{1, 4, 16, 20}, ws{4, 1, 3, 3};
    const auto xv = uniform(rng, 4 * 16 * 20), wv = uniform(rng, 36), bv = uniform(rng, 4);
    std::vector<float> big(static_cast<std::size_t>(off + 2 * 4 * 16 * 20), 7.0f);
    std::copy(xv.begin(), xv.end(), big.begin() + off);
    Tensor x =
        Tensor::from_host(device(), big, {static_cast<std::int64_t>(big.size())}).narrow(0, off, 4 * 16 * 20).view(xs);
    ASSERT_TRUE(x.is_contiguous());
    ASSERT_EQ(x.offset(), off);
    Conv2dOptions o = Conv2dOptions::pad(1);
    o.groups = 4;
    const std::vector<double> hb(bv.begin(), bv.end());
    Shape os;
    const auto ref = ref_conv(host(xv, xs), host(wv, ws), &hb, o, os);
    Tensor y = conv2d(x, Tensor::from_host(device(), wv, ws), Tensor::from_host(device(), bv, {4}), o);
    EXPECT_EQ(y.shape(), os);
    EXPECT_TRUE(close(y.to_vector(), ref, 1e-4, 1e-5)) << "x at offset " << off;
  }
  {
    // An 8-bit image (rows of whole quads, read as values, never as quads of floats; the result
    // rounded back to u8 as conv2d does): as the rows layout's, which reads values one by one.
    const Shape xs{1, 2, 6, 16}, ws{2, 1, 3, 3};
    std::vector<float> xv(2 * 6 * 16), wv(18);
    for (std::size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>((i * 37 + 11) % 64);
    for (std::size_t i = 0; i < wv.size(); ++i) wv[i] = static_cast<float>(i % 3) * 0.25f;
    Conv2dOptions o = Conv2dOptions::pad(1);
    o.groups = 2;
    Tensor x = Tensor::from_host(device(), xv, xs).to(DType::u8), w = Tensor::from_host(device(), wv, ws);
    std::vector<std::vector<float>> got;
    for (auto layout : {detail::ConvDirectSetting::lanes, detail::ConvDirectSetting::rows}) {
      ScopedSettings s;
      s->conv = detail::ConvSetting::direct;
      s->conv_direct = layout;
      got.push_back(conv2d(x, w, Tensor(), o).to(DType::f32).to_vector());
    }
    EXPECT_EQ(got[0], got[1]) << "u8 x: the quads form against the rows layout";
    EXPECT_GT(*std::max_element(got[1].begin(), got[1].end()), 10.0f);
  }
}

// The quads form's last item of a plane whose rows are not a multiple of PY (23 rows, PY 4: its
// last items span rows 20 to 23) stores rows 0 to 22 only, and a last quad of a row past OW (18
// columns: 16 to 19) its columns in the row only; with OW = 20 the rows are whole quads (quad
// stores). A store past a plane lands in the next plane's first row, which that plane's
// invocations may write again, so the values cannot show it; past the last plane it lands past the
// output's end, in its buffer's slack: the output is made in a pool buffer of sentinels (the last
// one released of its size class), whose slack must hold them still.
TEST(ConvDirect, QuadsFormStoresNothingPastItsPlanes) {
  GLT_RNG(rng);
  ScopedSettings s;
  s->conv = detail::ConvSetting::direct;
  s->conv_direct = detail::ConvDirectSetting::lanes;
  for (std::int64_t W : {18, 20}) {
    const std::int64_t C = 2, H = 23;
    const auto xv = uniform(rng, C * H * W), wv = uniform(rng, C * 9), bv = uniform(rng, C);
    Tensor x = Tensor::from_host(device(), xv, {1, C, H, W}), w = Tensor::from_host(device(), wv, {C, 1, 3, 3});
    Tensor b = Tensor::from_host(device(), bv, {C});
    detail::ConvDirectProblem dp;
    dp.C = dp.Og = 1, dp.groups = C, dp.KH = dp.KW = 3, dp.OH = H, dp.OW = W;
    const detail::ConvDirectPlan plan = plan_conv_direct(dp, detail::DeviceTraits{true, 0}, detail::settings());
    ASSERT_TRUE(plan.dwq);
    ASSERT_EQ(plan.py, 4) << "24 rows of items for 23";
    const std::size_t bytes = static_cast<std::size_t>(C * H * W) * 4, cls = detail::Pool::size_class(bytes);
    ASSERT_GE(cls, bytes + static_cast<std::size_t>(W) * 4) << "slack for a row";
    GLuint sentinel_buffer = 0;
    {
      Tensor fill =
          Tensor::from_host(device(), std::vector<float>(cls / 4, 1234.0f), {static_cast<std::int64_t>(cls / 4)});
      sentinel_buffer = fill.impl()->storage->buffer();
      (void)fill.to_vector();  // written before it goes back to the pool
    }
    Conv2dOptions o = Conv2dOptions::pad(1);
    o.groups = C;
    Tensor y = conv2d(x, w, b, o);
    const std::vector<float> got = y.to_vector();
    ASSERT_EQ(y.impl()->storage->buffer(), sentinel_buffer)
        << "the output took another buffer: the check would be void";
    std::vector<float> slack((cls - bytes) / 4);
    {
      detail::Enter entry(*y.impl()->storage->dev, "test");  // the read-back's GL calls in the device's context
      y.impl()->storage->download(bytes, slack.size() * 4, slack.data());
    }
    EXPECT_EQ(slack, std::vector<float>(slack.size(), 1234.0f)) << "a store past the last plane, W " << W;
    const std::vector<double> hb(bv.begin(), bv.end());
    Shape os;
    const auto ref = ref_conv(host(xv, {1, C, H, W}), host(wv, {C, 1, 3, 3}), &hb, o, os);
    EXPECT_EQ(y.shape(), os);
    EXPECT_TRUE(close(got, ref, 1e-4, 1e-5)) << "W " << W;
  }
}

// The quads form past the loop limit: a depthwise filter of 2 x 3 taps whose rows are 65560 input
// rows apart (dilation 65560 over an image of 65600 rows: 40 output rows), so that each
// invocation's loop over its input rows (RR = (PY - 1) SH + (KH - 1) DH + 1) runs past 65535
// trips, against float64. GPUs (no loop limit) run it in the quads form; where the device has a
// loop limit (llvmpipe) the plan's declared loops exceed it and conv2d takes another path (never
// the quads form truncated), with the same result. Sabotage: the row loop cut at 65535 trips in
// conv_direct.comp's DWQ form (j < min(RR, 65535)) fails it on the H100.
TEST(ConvDirect, QuadsFormPastTheLoopLimit) {
  GLT_RNG(rng);
  ScopedSettings s;
  s->conv = detail::ConvSetting::direct;
  s->conv_direct = detail::ConvDirectSetting::lanes;
  const std::int64_t C = 2, H = 65600, W = 8, DH = 65560;
  const Shape xs{1, C, H, W}, ws{C, 1, 2, 3};
  Conv2dOptions o;
  o.padding = {0, 1, 0, 1}, o.dilation = {DH, 1}, o.groups = C;
  detail::ConvDirectProblem dp;
  dp.C = dp.Og = 1, dp.groups = C, dp.KH = 2, dp.KW = 3, dp.dilation_h = DH, dp.OH = H - DH, dp.OW = W;
  const detail::ConvDirectPlan gpu = plan_conv_direct(dp, detail::DeviceTraits{false, 0}, detail::settings());
  ASSERT_TRUE(gpu.dwq);
  ASSERT_GT(gpu.loop_iterations, 65535u);
  const detail::DeviceImpl& dev = *device().impl();
  const detail::ConvDirectPlan here =
      plan_conv_direct(dp, detail::DeviceTraits{dev.adapter().software, dev.loop_limit()}, detail::settings());
  const bool quads = here.dwq && (dev.loop_limit() == 0 || here.loop_iterations <= dev.loop_limit());
  if (!dev.adapter().software) {
    EXPECT_TRUE(quads) << "the GPU runs the quads form";
  }
  const auto xv = uniform(rng, numel_of(xs)), wv = uniform(rng, numel_of(ws)), bv = uniform(rng, C);
  const std::vector<double> hb(bv.begin(), bv.end());
  Shape os;
  const auto ref = ref_conv(host(xv, xs), host(wv, ws), &hb, o, os);
  ASSERT_EQ(os, (Shape{1, C, H - DH, W}));
  const std::uint64_t d0 = device().dispatch_count();
  Tensor y = conv2d(Tensor::from_host(device(), xv, xs), Tensor::from_host(device(), wv, ws),
                    Tensor::from_host(device(), bv, {C}), o);
  if (quads) {
    EXPECT_EQ(device().dispatch_count() - d0, 1u) << "one dispatch of the quads form";
  }
  EXPECT_EQ(y.shape(), os);
  EXPECT_TRUE(close(y.to_vector(), ref, 1e-4, 1e-5)) << (quads ? "quads form" : "another path");
}

// The quads form near the 128 MiB that llvmpipe's SSBOs allow (GPUs allow more), against float64:
// x and y [1, 8, 2048, 2044] f32 (133.96 MB each: rows of whole quads, quad loads and 128-bit
// stores, PY 4) under a 3 x 3 filter, and x [2, 4, 3, 1398099] (134.2 MB, 224 bytes under: odd
// rows, one load and one store a value) under a 5 x 5 filter of stride 2 x 1 (2 output rows: PY 2).
// GPUs only (llvmpipe runs the form's edges and geometry at small sizes above; this size took it 13
// s forced, GLTENSOR_CONV_DIRECT=lanes, kept out of the suite's time). Sabotage: the quads form's
// output index in 24 bits ((ybase + oh OW) & 0xffffffu) fails it on the H100; the small shapes pass.
TEST(ConvDirect, QuadsFormNearTheSsboLimitOnGpus) {
  if (device().adapter().software) GTEST_SKIP() << "GPUs only (llvmpipe: the quads form's small-shape tests)";
  GLT_RNG(rng);
  struct Case {
    Shape xs;
    std::int64_t K;
    std::array<std::int64_t, 2> stride;
  };
  for (const Case& c : {Case{{1, 8, 2048, 2044}, 3, {1, 1}}, Case{{2, 4, 3, 1398099}, 5, {2, 1}}}) {
    const std::int64_t C = c.xs[1], p = c.K / 2;
    ASSERT_LE(numel_of(c.xs) * 4, std::int64_t{128} << 20);
    ASSERT_GT(numel_of(c.xs) * 4, std::int64_t{127} << 20);
    const Shape ws{C, 1, c.K, c.K};
    Conv2dOptions o;
    o.padding = {p, p, p, p}, o.stride = c.stride, o.groups = C;
    const auto xv = uniform(rng, numel_of(c.xs)), wv = uniform(rng, numel_of(ws)), bv = uniform(rng, C);
    const std::vector<double> hb(bv.begin(), bv.end());
    Shape os;
    const auto ref = ref_conv(host(xv, c.xs), host(wv, ws), &hb, o, os);
    detail::ConvDirectProblem dp;
    dp.C = dp.Og = 1, dp.groups = C, dp.KH = dp.KW = c.K, dp.stride_h = c.stride[0], dp.stride_w = c.stride[1];
    dp.OH = os[2], dp.OW = os[3];
    ASSERT_TRUE(plan_conv_direct(dp, detail::DeviceTraits{false, 0}, detail::settings()).dwq);
    const std::uint64_t d0 = device().dispatch_count();
    Tensor y = conv2d(Tensor::from_host(device(), xv, c.xs), Tensor::from_host(device(), wv, ws),
                      Tensor::from_host(device(), bv, {C}), o);
    EXPECT_EQ(device().dispatch_count() - d0, 1u) << "one dispatch of the quads form";
    EXPECT_EQ(y.shape(), os);
    EXPECT_TRUE(close(y.to_vector(), ref, 1e-4, 1e-5)) << to_string(c.xs);
  }
}

TEST(ConvDirect, HalfOutputsOfOddWidths) {
  // f16 outputs are stored as word pairs where both halves are one invocation's: odd widths
  // and odd planes (rows and planes starting at odd elements), a width of 1, partial tiles.
  GLT_RNG(rng);
  for (const char* layout : kLayouts)
    for (std::int64_t W : {1, 2, 13, 17}) {
      ScopedSettings s;
      s->conv = detail::ConvSetting::direct;
      s->conv_direct = detail::parse_conv_direct(layout);
      const Shape xs{2, 2, 5, W}, ws{3, 2, 3, 3};
      auto xv = uniform(rng, numel_of(xs)), wv = uniform(rng, numel_of(ws)), bv = uniform(rng, 3);
      for (auto* v : {&xv, &wv, &bv})
        for (auto& f : *v) f = f16_to_f32(f32_to_f16(f));
      std::vector<double> hb(bv.begin(), bv.end());
      Shape os;
      auto ref = ref_conv(host(xv, xs), host(wv, ws), &hb, Conv2dOptions::pad(1), os);
      Tensor y =
          conv2d(Tensor::from_host(device(), xv, xs, DType::f16), Tensor::from_host(device(), wv, ws, DType::f16),
                 Tensor::from_host(device(), bv, {3}, DType::f16), Conv2dOptions::pad(1));
      EXPECT_EQ(y.dtype(), DType::f16);
      EXPECT_EQ(y.shape(), os);
      EXPECT_TRUE(close(y.to(DType::f32).to_vector(), ref, 2e-3, 2e-3)) << layout << " W = " << W;
    }
}

// `v` as a tensor of shape `s` at element offset k of its storage (after k other values).
Tensor at_offset(const std::vector<float>& v, const Shape& s, std::int64_t k) {
  std::vector<float> p(static_cast<std::size_t>(k), 0.5f);
  p.insert(p.end(), v.begin(), v.end());
  return Tensor::from_host(device(), p, {numel_of(s) + k}).narrow(0, k, numel_of(s)).view(s);
}

TEST(ConvDirect, UboLayoutChunksQuadsAndEdges) {
  // The ubo layout against the float64 reference: filters over 64 KiB (20 x 100 x 3 x 3 floats:
  // two chunks of output channels on llvmpipe), rows of whole quads (W % 4 == 0) or not, odd and
  // tiny planes (partial tiles of 8 positions, OW < 8, one row), stride and dilation along rows,
  // asymmetric padding (the segment's shift 0-3), strided and offset x (scalar loads), a weight at an
  // unaligned offset (the block bound from the aligned byte before it), transposed weights (copied),
  // NaN and Inf in x, the fused activation.
  GLT_RNG(rng);
  ScopedSettings s;
  s->conv_direct = detail::ConvDirectSetting::ubo;
  struct Case {
    std::int64_t N, C, O, H, W, K;
    std::array<std::int64_t, 2> stride, dilation;
    std::array<std::int64_t, 4> pad;
    int x_form,
        w_form;  // x: 0 contiguous, 1 offset by 1, 2 NHWC viewed NCHW; w: 0 contiguous, 1 offset by 3, 2 transposed
  };
  for (const Case& c : std::vector<Case>{{1, 100, 20, 9, 16, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}, 0, 0},
                                         {2, 100, 20, 7, 13, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}, 0, 1},
                                         {1, 5, 6, 11, 12, 3, {2, 2}, {1, 1}, {1, 2, 0, 1}, 0, 0},
                                         {1, 4, 4, 6, 20, 3, {1, 2}, {2, 2}, {2, 3, 1, 0}, 1, 0},
                                         {2, 3, 16, 1, 3, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, 0, 2},
                                         {1, 7, 10, 5, 8, 5, {1, 1}, {1, 1}, {2, 2, 2, 2}, 2, 1},
                                         {1, 48, 48, 10, 24, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, 0, 0},
                                         {1, 100, 20, 5, 12, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}, 0, 2}}) {
    const Shape xs{c.N, c.C, c.H, c.W}, ws{c.O, c.C, c.K, c.K};
    Conv2dOptions o;
    o.stride = c.stride, o.dilation = c.dilation, o.padding = c.pad;
    auto xv = uniform(rng, numel_of(xs)), wv = uniform(rng, numel_of(ws)), bv = uniform(rng, c.O);
    xv[5] = std::nanf("");
    xv[static_cast<std::size_t>(numel_of(xs)) - 2] = INFINITY;
    Tensor x = c.x_form == 1 ? at_offset(xv, xs, 1)
               : c.x_form == 2
                   ? Tensor::from_host(device(), xv, xs).permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2})
                   : Tensor::from_host(device(), xv, xs);
    Tensor w = c.w_form == 1 ? at_offset(wv, ws, 3)
               : c.w_form == 2
                   ? Tensor::from_host(device(), wv, ws).permute({3, 2, 1, 0}).contiguous().permute({3, 2, 1, 0})
                   : Tensor::from_host(device(), wv, ws);
    std::vector<double> hb(bv.begin(), bv.end());
    Shape os;
    auto ref = ref_conv(host(xv, xs), host(wv, ws), &hb, o, os);
    for (double& r : ref) r = r > 0 || std::isnan(r) ? r : 0.0;  // relu (NaN stays NaN)
    const std::size_t d0 = device().dispatch_count();
    Tensor y = conv2d(x, w, Tensor::from_host(device(), bv, {c.O}), o, Epilogue(Activation::relu));
    if (device().adapter().software && c.C * c.K * c.K * c.O * 4 > device().caps().max_uniform_block_size) {
      EXPECT_GE(device().dispatch_count() - d0, 2u) << "chunks of output channels";
    }
    EXPECT_EQ(y.shape(), os);
    // f32 sums of C * K * K products of values in [-1, 1]: their rounding grows with the sums'
    // magnitude, about sqrt(taps) (seed 11228976635687178906: 1.7e-5 off at 0.0485 over 900 taps).
    const double atol = 1e-5 * std::max(1.0, std::sqrt(static_cast<double>(c.C * c.K * c.K) / 9.0));
    EXPECT_TRUE(close(y.to_vector(), ref, 1e-4, atol)) << to_string(xs) << " * " << to_string(ws);
  }
  // Depthwise (OPI 1): 3 x 3 stride 2 and 5 x 5 over odd and quad-aligned widths.
  for (auto [K, stride, W] : std::vector<std::array<std::int64_t, 3>>{{3, 2, 17}, {5, 1, 12}, {3, 1, 40}}) {
    const Shape xs{1, 6, 9, W}, ws{6, 1, K, K};
    Conv2dOptions o = Conv2dOptions::pad(K / 2, stride);
    o.groups = 6;
    auto xv = uniform(rng, numel_of(xs)), wv = uniform(rng, numel_of(ws));
    Shape os;
    auto ref = ref_conv(host(xv, xs), host(wv, ws), nullptr, o, os);
    Tensor y = conv2d(Tensor::from_host(device(), xv, xs), Tensor::from_host(device(), wv, ws), Tensor(), o);
    EXPECT_EQ(y.shape(), os);
    EXPECT_TRUE(close(y.to_vector(), ref, 1e-4, 1e-5)) << "depthwise " << K << " stride " << stride << " W " << W;
  }
  // Empty batch.
  EXPECT_EQ(
      conv2d(zeros(device(), {0, 8, 6, 6}), zeros(device(), {4, 8, 3, 3}), Tensor(), Conv2dOptions::pad(1)).shape(),
      (Shape{0, 4, 6, 6}));
}

TEST(ConvDirect, UboWholeBlockWeightsShareOneProgram) {
  // The ubo layout's uniform block: weights at the start of a buffer of a whole block
  // (conv_ubo_weight_floats, as the model runtime uploads its Conv filters) bind whole blocks, so that layers of other
  // channel counts (the same filter size, stride, positions and channels per invocation) add no program; a filter that
  // fills its storage's size class exactly, at an unaligned offset (the block moved back within
  // the storage, or a copy), and filters past one block (chunks) bound from the same buffer.
  // Against the float64 reference with the relu epilogue, one dispatch each.
  GLT_RNG(rng);
  ScopedSettings s;
  s->conv_direct = detail::ConvDirectSetting::ubo;
  const int limit = device().caps().max_uniform_block_size;
  struct Case {
    std::int64_t C, O, K, W;
    bool whole;  // uploaded into a buffer of conv_ubo_weight_floats
    int w_offset;
  };
  std::size_t programs = 0;
  for (const Case& c : std::vector<Case>{{8, 8, 3, 21, true, 0},
                                         {24, 16, 3, 21, true, 0},
                                         {40, 32, 3, 21, true, 0},
                                         {16, 16, 1, 13, false, 0},
                                         {16, 16, 1, 13, false, 3},
                                         {100, 24, 3, 19, true, 0},
                                         {100, 24, 3, 19, false, 1}}) {
    const Shape xs{2, c.C, 5, c.W}, ws{c.O, c.C, c.K, c.K};
    const Conv2dOptions o = Conv2dOptions::pad(c.K / 2);
    auto xv = uniform(rng, numel_of(xs)), wv = uniform(rng, numel_of(ws)), bv = uniform(rng, c.O);
    xv[7] = std::nanf("");
    std::vector<double> hb(bv.begin(), bv.end());
    Shape os;
    auto ref = ref_conv(host(xv, xs), host(wv, ws), &hb, o, os);
    for (double& r : ref) r = r > 0 || std::isnan(r) ? r : 0.0;
    Tensor w = c.w_offset > 0 ? at_offset(wv, ws, c.w_offset) : Tensor::from_host(device(), wv, ws);
    if (c.whole) {  // HostTensor::upload's min_numel
      const std::int64_t floats = detail::conv_ubo_weight_floats(*device().impl(), ws, 1);
      if (floats > numel_of(ws)) {
        std::vector<float> padded(wv);
        padded.resize(static_cast<std::size_t>(floats), 0.0f);
        w = Tensor::from_host(device(), padded, {floats}).narrow(0, 0, numel_of(ws)).view(ws);
      }
      if (limit <= 65536) {
        EXPECT_GE(w.impl()->storage->block.capacity, static_cast<std::size_t>(limit)) << "a whole block";
      }
    }
    Tensor x = Tensor::from_host(device(), xv, xs), b = Tensor::from_host(device(), bv, {c.O});
    const std::size_t d0 = device().dispatch_count();
    Tensor y = conv2d(x, w, b, o, Epilogue(Activation::relu));
    const std::size_t dispatches = device().dispatch_count() - d0;
    if (c.C * c.K * c.K * c.O * 4 <= limit && (c.whole || c.w_offset == 0)) {
      EXPECT_EQ(dispatches, 1u) << c.C << " -> " << c.O;
    }
    EXPECT_EQ(y.shape(), os);
    EXPECT_TRUE(close(y.to_vector(), ref, 1e-4, 2e-5)) << c.C << " -> " << c.O << " K " << c.K;
    const std::size_t now = detail::dev_of(y).programs().size();
    if (c.C == 24 && c.whole && limit <= 65536) {
      EXPECT_EQ(now, programs) << "8 -> 8 and 24 -> 16 channels: the same program";
    }
    if (c.C == 40 && limit <= 65536) {
      EXPECT_EQ(now, programs) << "and 40 -> 32";
    }
    programs = now;
  }
}

TEST(ConvDirect, EmptyInputPaddedToAnOutput) {
  // x with no rows, columns or channels whose padding makes the output non-empty (x [1, 2, 0, 5],
  // 3 x 3, padding 2 -> [1, 3, 2, 7]): every output is the bias (or 0) through the epilogue, in
  // each layout, f32 and f16, without running the kernel over an empty x.
  GLT_RNG(rng);
  for (const char* layout : kLayouts)
    for (DType dt : {DType::f32, DType::f16})
      for (const Shape& xs : std::vector<Shape>{{1, 2, 0, 5}, {2, 2, 4, 0}, {1, 0, 3, 3}})
        for (bool has_bias : {true, false}) {
          SCOPED_TRACE(std::string(layout) + " " + to_string(xs) + (dt == DType::f16 ? " f16" : " f32"));
          ScopedSettings s;
          s->conv = detail::ConvSetting::direct;
          s->conv_direct = detail::parse_conv_direct(layout);
          const std::int64_t C = xs[1], O = 3;
          const Shape ws{O, C, 3, 3};
          auto bv = uniform(rng, O), wv = uniform(rng, numel_of(ws));
          Tensor x = zeros(device(), xs, dt), w = Tensor::from_host(device(), wv, ws).to(dt);
          Tensor b = has_bias ? Tensor::from_host(device(), bv, {O}).to(dt) : Tensor();
          Tensor y = conv2d(x, w, b, Conv2dOptions::pad(2), Epilogue(Activation::relu));
          const Shape os{xs[0], O, xs[2] + 2, xs[3] + 2};
          ASSERT_EQ(y.shape(), os);
          EXPECT_EQ(y.dtype(), dt);
          const std::vector<float> got = y.to(DType::f32).to_vector();
          for (std::size_t i = 0; i < got.size(); ++i) {
            const auto o = static_cast<std::size_t>((static_cast<std::int64_t>(i) / (os[2] * os[3])) % O);
            const float bo =
                has_bias
                    ? Tensor::from_host(device(), std::vector<float>{bv[o]}, {1}).to(dt).to(DType::f32).to_vector()[0]
                    : 0.0f;
            ASSERT_EQ(got[i], std::max(bo, 0.0f)) << "element " << i;
          }
        }
}

TEST(ConvDirect, EpilogueInTheKernel) {
  // conv2d's epilogue (activation, then Epilogue::scale / shift: PP-LCNetV3's HardSwish and
  // learnable affine) in the direct kernel's three layouts, one dispatch each, and on the GEMM
  // paths (pointwise, im2col, depthwise taps); f16 outputs apply it after the rounding. Against
  // float64: odd sizes, groups, padding, stride, NaN.
  GLT_RNG(rng);
  const auto hswish = [](double x) { return x * std::min(std::max(x + 3, 0.0), 6.0) / 6; };
  struct Case {
    std::int64_t Cg, Og, G, H, W, K, stride;
  };
  struct Path {
    detail::ConvSetting conv;
    const char* layout;
    detail::MatmulKernelSetting matmul = detail::MatmulKernelSetting::choose;
  };
  // (1 x 1 planes: squeeze-and-excitation's convolutions, the transposed product on the GEMM path,
  // also through the GEMV kernel that GPUs choose for it)
  for (const Path& path : std::vector<Path>{{detail::ConvSetting::direct, "rows"},
                                            {detail::ConvSetting::direct, "lanes"},
                                            {detail::ConvSetting::direct, "ubo"},
                                            {detail::ConvSetting::im2col, ""},
                                            {detail::ConvSetting::im2col, "", detail::MatmulKernelSetting::gemv},
                                            {detail::ConvSetting::choose, ""}})
    for (const Case& c : std::vector<Case>{{3, 5, 1, 9, 11, 3, 1},
                                           {1, 1, 7, 10, 13, 5, 2},
                                           {6, 4, 1, 5, 7, 1, 1},
                                           {2, 3, 2, 4, 17, 3, 2},
                                           {40, 9, 1, 1, 1, 1, 1}})
      for (Activation act : {Activation::none, Activation::hardswish}) {
        ScopedSettings s;
        s->conv = path.conv, s->matmul_kernel = path.matmul;
        if (*path.layout) s->conv_direct = detail::parse_conv_direct(path.layout);
        const Shape xs{1, c.Cg * c.G, c.H, c.W}, ws{c.Og * c.G, c.Cg, c.K, c.K};
        Conv2dOptions o = c.K == 1 ? Conv2dOptions() : Conv2dOptions::pad(c.K / 2, c.stride);
        o.groups = c.G;
        auto xv = uniform(rng, numel_of(xs)), wv = uniform(rng, numel_of(ws)), bv = uniform(rng, ws[0]);
        // (a NaN only where the plane has more than one position: in a 1 x 1 plane every output
        // reads it, and an all-NaN reference would accept any kernel that keeps NaN)
        if (c.H * c.W > 1) xv[2] = std::nanf("");
        std::vector<double> hb(bv.begin(), bv.end());
        Shape os;
        auto ref = ref_conv(host(xv, xs), host(wv, ws), &hb, o, os);
        EXPECT_GT(std::count_if(ref.begin(), ref.end(), [](double r) { return std::isfinite(r); }),
                  static_cast<std::ptrdiff_t>(ref.size() / 2));
        Epilogue e(act);
        e.scale = 1.25f, e.shift = -0.5f;
        for (double& r : ref) r = (act == Activation::hardswish ? hswish(r) : r) * 1.25 - 0.5;  // (NaN stays NaN)
        Tensor x = Tensor::from_host(device(), xv, xs), w = Tensor::from_host(device(), wv, ws);
        const std::size_t d0 = device().dispatch_count();
        Tensor y = conv2d(x, w, Tensor::from_host(device(), bv, {ws[0]}), o, e);
        const std::size_t dispatches = device().dispatch_count() - d0;
        EXPECT_EQ(y.shape(), os);
        const std::string what = std::string(path.layout) + " conv " + std::to_string(static_cast<int>(path.conv)) +
                                 " matmul " + std::to_string(static_cast<int>(path.matmul)) + " " + to_string(xs) +
                                 " * " + to_string(ws) + " " + e.name();
        EXPECT_TRUE(close(y.to_vector(), ref, 1e-4, 1e-5)) << what;
        const bool ubo_applies = std::string(path.layout) != "ubo" || device().caps().max_uniform_block_size > 0;
        if (path.conv == detail::ConvSetting::direct && ubo_applies) {
          EXPECT_EQ(dispatches, 1u) << what;
        }
        // f16: the kernel rounds, then the epilogue runs on the f16 values (as the ops would).
        if (path.conv != detail::ConvSetting::direct || act != Activation::hardswish) continue;
        Tensor yh =
            conv2d(x.to(DType::f16), w.to(DType::f16), Tensor::from_host(device(), bv, {ws[0]}, DType::f16), o, e);
        EXPECT_EQ(yh.dtype(), DType::f16);
        EXPECT_TRUE(close(yh.to(DType::f32).to_vector(), ref, 2e-2, 2e-2)) << "f16 " << what;
      }
}

TEST(ConvDirect, OnePositionPlanesOfSeveralImages) {
  // Squeeze-and-excitation's 1x1 convolutions of N pooled images [N, C, 1, 1] on the GEMM path:
  // the transposed product [N, C] @ w^T [C, O] + bias (per column), against float64 with the
  // hardswish and affine epilogue; N from 2 to 17 (the GEMV kernel's rows and past them), odd C
  // and O, the matmul planner's own choice and a GPU's (MatmulKernelSetting::gpu) on any device.
  GLT_RNG(rng);
  const auto hswish = [](double x) { return x * std::min(std::max(x + 3, 0.0), 6.0) / 6; };
  for (auto [N, C, O] : std::vector<std::array<std::int64_t, 3>>{{2, 40, 9}, {16, 60, 240}, {17, 33, 7}, {9, 480, 120}})
    for (auto mk : {detail::MatmulKernelSetting::choose, detail::MatmulKernelSetting::gpu}) {
      ScopedSettings s;
      s->conv = detail::ConvSetting::im2col, s->matmul_kernel = mk;
      const Shape xs{N, C, 1, 1}, ws{O, C, 1, 1};
      auto xv = uniform(rng, numel_of(xs)), wv = uniform(rng, numel_of(ws)), bv = uniform(rng, O);
      std::vector<double> hb(bv.begin(), bv.end());
      Shape os;
      auto ref = ref_conv(host(xv, xs), host(wv, ws), &hb, Conv2dOptions(), os);
      for (double& r : ref) r = hswish(r) * 1.25 - 0.5;
      Epilogue e(Activation::hardswish);
      e.scale = 1.25f, e.shift = -0.5f;
      Tensor x = Tensor::from_host(device(), xv, xs), w = Tensor::from_host(device(), wv, ws);
      const std::size_t d0 = device().dispatch_count();
      Tensor y = conv2d(x, w, Tensor::from_host(device(), bv, {O}), Conv2dOptions(), e);
      EXPECT_EQ(device().dispatch_count() - d0, 1u) << "one matmul, its epilogue fused";
      EXPECT_EQ(y.shape(), os);
      EXPECT_TRUE(close(y.to_vector(), ref, 1e-4, 1e-5))
          << to_string(xs) << " * " << to_string(ws) << " matmul " << static_cast<int>(mk);
    }
}

TEST(ConvDirect, TransposeWithKernelEqualToStride) {
  // conv_transpose2d whose kernel is its stride (DBNet's head: 2 x 2, stride 2), through the ubo
  // and lanes layouts' shuffled 1x1 convolution where it applies, against the definition: channels into
  // blocks of S x S pixels, S 2 and 3, odd sizes, with and without bias, filters over 64 KiB
  // (chunks), x offset (scalar loads).
  GLT_RNG(rng);
  struct Case {
    std::int64_t N, Cin, Cout, H, W, S;
    bool bias, offset;
  };
  // Each case in the ubo (software rasterizers) and lanes (GPUs) layouts, each without an
  // epilogue, with sigmoid (DBNet's probability map) and with relu then the affine * 1.25 - 0.5
  // in the kernel: every layout's shuffled store with ACT reached on any device.
  const auto sigmoid = [](double v) { return 1 / (1 + std::exp(-v)); };
  const auto relu_affine = [](double v) { return (std::isnan(v) ? v : std::max(v, 0.0)) * 1.25 - 0.5; };
  for (const char* layout : {"ubo", "lanes"})
    for (int epi : {0, 1, 2})
      for (const Case& c : std::vector<Case>{{1, 24, 24, 9, 16, 2, true, false},
                                             {2, 5, 3, 3, 7, 3, false, true},
                                             {1, 300, 20, 2, 5, 2, true, false},
                                             {1, 6, 1, 1, 1, 2, true, false},
                                             {1, 24, 1, 13, 11, 2, true, false}}) {
        ScopedSettings s;
        s->conv_direct = detail::parse_conv_direct(layout);
        const Shape xs{c.N, c.Cin, c.H, c.W}, ws{c.Cin, c.Cout, c.S, c.S};
        auto xv = uniform(rng, numel_of(xs)), wv = uniform(rng, numel_of(ws)), bv = uniform(rng, c.Cout);
        xv[1] = std::nanf("");
        Tensor x = Tensor::from_host(device(), xv, xs);
        if (c.offset) x = at_offset(xv, xs, 1);
        Conv2dOptions o;
        o.stride = {c.S, c.S};
        Epilogue e = epi == 1 ? Epilogue(Activation::sigmoid) : epi == 2 ? Epilogue(Activation::relu) : Epilogue();
        if (epi == 2) e.scale = 1.25f, e.shift = -0.5f;
        const std::size_t d0 = device().dispatch_count();
        Tensor y = detail::conv_transpose2d_epilogue(x, Tensor::from_host(device(), wv, ws),
                                                     c.bias ? Tensor::from_host(device(), bv, {c.Cout}) : Tensor(), o,
                                                     {0, 0}, e);
        const std::size_t dispatches = device().dispatch_count() - d0;
        if (std::string(layout) == "lanes") {  // the weight read in place through strides, the bias per block
          EXPECT_EQ(dispatches, 1u) << layout << " " << to_string(xs) << " " << e.name();
        }
        const std::int64_t OH = c.H * c.S, OW = c.W * c.S;
        ASSERT_EQ(y.shape(), (Shape{c.N, c.Cout, OH, OW}));
        std::vector<double> ref(static_cast<std::size_t>(c.N * c.Cout * OH * OW));
        for (std::int64_t n = 0; n < c.N; ++n)
          for (std::int64_t co = 0; co < c.Cout; ++co)
            for (std::int64_t oh = 0; oh < OH; ++oh)
              for (std::int64_t ow = 0; ow < OW; ++ow) {
                double v = c.bias ? bv[static_cast<std::size_t>(co)] : 0.0;
                for (std::int64_t ci = 0; ci < c.Cin; ++ci)
                  v += double(xv[static_cast<std::size_t>(((n * c.Cin + ci) * c.H + oh / c.S) * c.W + ow / c.S)]) *
                       wv[static_cast<std::size_t>(((ci * c.Cout + co) * c.S + oh % c.S) * c.S + ow % c.S)];
                ref[static_cast<std::size_t>(((n * c.Cout + co) * OH + oh) * OW + ow)] = epi == 1   ? sigmoid(v)
                                                                                         : epi == 2 ? relu_affine(v)
                                                                                                    : v;
              }
        EXPECT_TRUE(close(y.to_vector(), ref, 1e-4, 1e-5))
            << layout << " " << to_string(xs) << " * " << to_string(ws) << " " << e.name();
      }
}

}  // namespace

TEST(ConvDirect, EmptyInputPaddedToAnOutputGradients) {
  // The empty-input branch's autograd (x [1, 2, 0, 5] or [2, 2, 4, 0], 3 x 3, padding 2): every
  // tap reads padding, so dweight is 0, dbias the sum of gy over the batch and positions, dx empty.
  GLT_RNG(rng);
  for (const char* layout : kLayouts)
    for (const Shape& xs : std::vector<Shape>{{1, 2, 0, 5}, {2, 2, 4, 0}}) {
      SCOPED_TRACE(std::string(layout) + " " + to_string(xs));
      ScopedSettings s;
      s->conv = detail::ConvSetting::direct;
      s->conv_direct = detail::parse_conv_direct(layout);
      const std::int64_t O = 3;
      Tensor x = zeros(device(), xs), w = Tensor::from_host(device(), uniform(rng, O * 2 * 9), {O, 2, 3, 3});
      Tensor b = Tensor::from_host(device(), uniform(rng, O), {O});
      requires_grad_(x), requires_grad_(w), requires_grad_(b);
      Tensor y = conv2d(x, w, b, Conv2dOptions::pad(2));
      const auto gv = uniform(rng, static_cast<std::size_t>(y.numel()));
      backward(y, Tensor::from_host(device(), gv, y.shape()));
      std::vector<double> db(O, 0.0);
      const std::int64_t P = y.size(2) * y.size(3);
      for (std::size_t i = 0; i < gv.size(); ++i)
        db[static_cast<std::size_t>((static_cast<std::int64_t>(i) / P) % O)] += gv[i];
      EXPECT_TRUE(close(grad(b).to_vector(), db, 1e-5, 1e-5)) << "dbias";
      EXPECT_TRUE(close(grad(w).to_vector(), std::vector<double>(O * 2 * 9, 0.0), 0, 0)) << "dweight";
      EXPECT_EQ(grad(x).shape(), xs);
    }
}
