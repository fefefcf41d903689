// conv2d's Winograd path (glsl/nn/conv_winograd.comp, F(2x2,3x3) and F(4x4,3x3), forced with
// Settings::conv_winograd on any device) against the float64 reference: odd H and W (partial
// tiles), padding on each side (asymmetric, none, 2), channel counts that fill no tile of the GEMM,
// several images, strided x, w and bias, the fused epilogue (ReLU; clip with the affine),
// NaN and infinities, grids past one dispatch's workgroups, W % 4 == 0 (quad loads) at every left
// padding mod 4 and at offsets into x's buffer, OW % 4 == 0 (128-bit stores); the model runtime's Conv (a constant
// weight's filters transformed once and kept, a graph input's per run); plan_conv_winograd's choice.
// Tolerance: |y - ref| <= tol * (sum over the taps of |w| |x| + |bias|) per output, tol 1e-6 for
// F(2x2,3x3) and 2e-5 for F(4x4,3x3): its transforms' constants (up to 8 in A^T, 5 in B^T, 1/24 in
// G) scale each product's f32 rounding on its way to the output; measured worst cases on llvmpipe
// (printed): 2.3e-7 (F(2x2)) and 2.5e-6 (F(4x4)), about 8x under each tolerance.
#include <algorithm>
#include <cmath>
#include <limits>

#include "gltensor/model.hpp"
#include "model/onnx_builder.hpp"
#include "nn/conv_plan.hpp"
#include "nn/conv_ref.hpp"

using namespace glt_test;
using namespace gltensor;

namespace {

HostT host(const std::vector<float>& v, const Shape& s) { return HostT{{v.begin(), v.end()}, s}; }

double tolerance(std::int64_t m) { return m == 4 ? 2e-5 : 1e-6; }

struct Case {
  Shape xs;
  std::int64_t O;
  std::array<std::int64_t, 4> pad;  // top, left, bottom, right
  bool bias;
  Epilogue epi;
};

double act_ref(double v, const Epilogue& e) {
  if (e.act == Activation::relu) v = std::max(v, 0.0);
  if (e.act == Activation::clip) v = std::min(std::max(v, static_cast<double>(e.p0)), static_cast<double>(e.p1));
  return v * e.scale + e.shift;
}

// The fused stage (WG_FUSED) forced: 0 not, 1 at the default blocking (prefetched), 2 and 3 at a
// small one (8 output channels x 4 tiles, chunks of 4 channels: partial blocks and chunks in every
// case), not prefetched (2) and prefetched (3).
void fuse(ScopedSettings& s, int fused) {
  s->conv_winograd_fused = fused > 0 ? 1 : 0;
  if (fused >= 2) s->conv_winograd_block_o = 8, s->conv_winograd_block_p = 4, s->conv_winograd_block_c = 4;
  if (fused >= 2) s->conv_winograd_block_f = fused == 3 ? 1 : 0;
}

// Runs one case with F(m x m, 3 x 3) forced; x, w and bias strided views where `strided`; x a
// contiguous view at element `offset` of a larger buffer where offset > 0 (a multiple of 4 keeps
// the input transform's quad loads, X_QUADS, where W % 4 == 0; else its element loads).
void check_case(const Case& c, std::int64_t m, bool strided, std::int64_t offset = 0, int fused = 0,
                std::uint64_t extra_dispatches = 0) {
  GLT_RNG(rng);
  SCOPED_TRACE("m=" + std::to_string(m) + " x=" + to_string(c.xs) + " O=" + std::to_string(c.O) +
               (strided ? " strided" : "") + (offset ? " offset " + std::to_string(offset) : "") +
               (fused ? " fused " + std::to_string(fused) : ""));
  ScopedSettings s;
  s->conv_winograd = static_cast<int>(m);
  fuse(s, fused);
  const Shape ws{c.O, c.xs[1], 3, 3};
  auto xv = uniform(rng, numel_of(c.xs)), wv = uniform(rng, numel_of(ws)), bv = uniform(rng, c.O);
  Tensor x = Tensor::from_host(device(), xv, c.xs), w = Tensor::from_host(device(), wv, ws);
  Tensor b = Tensor::from_host(device(), bv, {c.O});
  if (strided) {
    x = x.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
    w = w.permute({3, 2, 1, 0}).contiguous().permute({3, 2, 1, 0});
    std::vector<float> b2(static_cast<std::size_t>(2 * c.O), std::nanf(""));
    for (std::int64_t i = 0; i < c.O; ++i) b2[static_cast<std::size_t>(2 * i)] = bv[static_cast<std::size_t>(i)];
    b = Tensor::from_host(device(), b2, {2 * c.O}).slice(0, 0, 2 * c.O, 2);
    ASSERT_FALSE(x.is_contiguous());
  }
  if (offset > 0) {
    std::vector<float> big(static_cast<std::size_t>(offset), std::nanf(""));
    big.insert(big.end(), xv.begin(), xv.end());
    big.push_back(std::nanf(""));
    x = Tensor::from_host(device(), big, {numel_of(c.xs) + offset + 1})
            .slice(0, offset, numel_of(c.xs) + offset)
            .view(c.xs);
  }
  Conv2dOptions o;
  o.padding = c.pad;
  std::vector<double> hb(bv.begin(), bv.end());
  Shape os;
  const auto ref = ref_conv(host(xv, c.xs), host(wv, ws), c.bias ? &hb : nullptr, o, os);
  std::vector<float> xa(xv), wa(wv);
  for (auto& v : xa) v = std::fabs(v);
  for (auto& v : wa) v = std::fabs(v);
  std::vector<double> hba(hb);
  for (auto& v : hba) v = std::fabs(v);
  const auto mag = ref_conv(host(xa, c.xs), host(wa, ws), c.bias ? &hba : nullptr, o, os);
  device().synchronize();
  const std::uint64_t d0 = device().dispatch_count();
  const Tensor y = conv2d(x, w, c.bias ? b : Tensor(), o, c.epi);
  // the filters' transform, then the fused stage's one dispatch (a grid split past the device's
  // workgroup counts: more)
  if (fused) {
    EXPECT_EQ(device().dispatch_count() - d0, 2u + extra_dispatches) << "fused";
  }
  ASSERT_EQ(y.shape(), os);
  const auto yv = y.to_vector();
  const double tol = tolerance(m);
  double worst = 0;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < yv.size(); ++i) {
    // The epilogue's affine scales the error too; clip and ReLU shrink it.
    const double want = act_ref(ref[i], c.epi), err = std::fabs(yv[i] - want);
    const double scale = std::max(mag[i], 1e-30) * std::fabs(static_cast<double>(c.epi.scale));
    worst = std::max(worst, err / scale);
    if (!(err <= tol * scale + 1e-30) && bad++ < 5)
      ADD_FAILURE() << "output " << i << ": " << yv[i] << " vs " << want << " (sum |w||x| " << mag[i] << ")";
  }
  EXPECT_EQ(bad, 0u);
  std::printf("[ winograd ] F(%lldx%lld,3x3)%s x %s O %lld: worst |y - ref| / sum|w||x| = %.3g (tolerance %.0e)\n",
              static_cast<long long>(m), static_cast<long long>(m), fused ? " fused" : "", to_string(c.xs).c_str(),
              static_cast<long long>(c.O), worst, tol);
}

const Case kCases[] = {
    {{2, 5, 9, 11}, 7, {1, 1, 1, 1}, true, Epilogue()},                 // odd H, W; C, O fill no tile
    {{1, 3, 6, 6}, 4, {0, 0, 0, 0}, false, Epilogue()},                 // no padding: 4 x 4 outputs
    {{1, 4, 5, 7}, 3, {2, 0, 1, 2}, true, Epilogue(Activation::relu)},  // asymmetric padding
    {{3, 16, 13, 10},
     17,
     {1, 1, 1, 1},
     true,
     [] {  // clip and affine
       Epilogue e = Epilogue::clip(-0.5, 0.75);
       e.scale = 1.5f, e.shift = -0.25f;
       return e;
     }()},
    {{1, 70, 3, 3}, 66, {1, 1, 1, 1}, true, Epilogue()},  // one partial tile, many channels
    {{1, 2, 1, 1}, 3, {2, 2, 2, 2}, true, Epilogue()},    // a 1 x 1 image, padding 2
    // W % 4 == 0: x's rows read as quads (X_QUADS), left paddings 1, 0, 2 (lanes from 3, 0, 2;
    // padding 3 in QuadLoadsMatchElementLoads); OW % 4 == 0 (F(4x4)): the outputs' 128-bit stores
    // (Y_VEC4), partial tile rows (OH 9)
    {{2, 6, 9, 12}, 5, {1, 1, 1, 1}, true, Epilogue(Activation::relu)},
    {{1, 3, 5, 8}, 4, {0, 0, 0, 2}, true, Epilogue()},
    {{1, 3, 8, 16}, 4, {0, 2, 1, 2}, false, Epilogue()},
};

}  // namespace

TEST(ConvWinograd, MatchesFloat64) {
  for (std::int64_t m : {2, 4})
    for (const Case& c : kCases) check_case(c, m, false);
}

TEST(ConvWinograd, StridedOperands) {
  for (std::int64_t m : {2, 4}) check_case(kCases[0], m, true), check_case(kCases[3], m, true);
}

// x at an offset into its buffer: a multiple of 4 (quad loads from there) and not (element loads).
TEST(ConvWinograd, OffsetInput) {
  for (std::int64_t m : {2, 4})
    for (std::int64_t offset : {8, 4 * 3 * 5, 1, 3}) check_case(kCases[6], m, false, offset);
}

// F(4x4)'s quad loads (x contiguous, W % 4 == 0) against its element loads (the same values at
// offset 1 of a buffer) at each left padding mod 4, padding 3 too (whose first output column
// sums padding only: its bias alone, which Winograd's tile arithmetic rounds relative to the
// tile's other values, past the float64 check's per-output tolerance): the same arithmetic on
// the same values, within 1e-6 of max |y| (a lane taken from the wrong column is off by O(max |y|)).
TEST(ConvWinograd, QuadLoadsMatchElementLoads) {
  GLT_RNG(rng);
  ScopedSettings s;
  s->conv_winograd = 4;
  for (std::int64_t left : {0, 1, 2, 3, 5}) {
    SCOPED_TRACE("left padding " + std::to_string(left));
    const Shape xs{1, 4, 7, 8}, ws{3, 4, 3, 3};
    const auto xv = uniform(rng, numel_of(xs)), wv = uniform(rng, numel_of(ws)), bv = uniform(rng, 3);
    std::vector<float> big{std::nanf("")};
    big.insert(big.end(), xv.begin(), xv.end());
    const Tensor x = Tensor::from_host(device(), xv, xs);
    const Tensor x1 = Tensor::from_host(device(), big, {numel_of(xs) + 1}).slice(0, 1, numel_of(xs) + 1).view(xs);
    const Tensor w = Tensor::from_host(device(), wv, ws), b = Tensor::from_host(device(), bv, {3});
    Conv2dOptions o;
    o.padding = {1, left, 0, 1};
    const auto quads = conv2d(x, w, b, o).to_vector(), elements = conv2d(x1, w, b, o).to_vector();
    ASSERT_EQ(quads.size(), elements.size());
    float top = 0;
    for (float v : elements) top = std::max(top, std::fabs(v));
    for (std::size_t i = 0; i < quads.size(); ++i) ASSERT_NEAR(quads[i], elements[i], 1e-6 * top) << "output " << i;
  }
}

// Grids split over several dispatches: tiles (x) and channels (y) past a 3-workgroup limit (the
// fused stage: tile blocks (x) and channel blocks (y)).
TEST(ConvWinograd, MoreWorkgroupsThanOneDispatch) {
  ScopedDispatchLimit limit(3);
  for (std::int64_t m : {2, 4}) check_case({{2, 5, 37, 41}, 6, {1, 1, 1, 1}, true, Epilogue()}, m, false);
  // fused, 8 x 4 blocks: 2 x 5 x 5 tiles in 13 x 3 blocks (5 dispatches)
  check_case({{2, 5, 17, 20}, 19, {1, 1, 1, 1}, true, Epilogue(Activation::relu)}, 4, false, 0, 2, 4);
}

// The fused stage (one dispatch: input transform, the T products and output transform per block
// of output channels x tiles) against float64: at the default blocking the cases of odd sizes,
// clip + affine, quad loads and 128-bit stores, strided operands (the tiles' loads and stores are
// the three stages' functions, every case there); F(2x2) at a small blocking, prefetched; C 37 ->
// O 29 at the default blocking and the small one prefetched and not (10 chunks of 4, split in 2);
// C 37 -> O 40 over 1, 4 and 2 workgroups per block. Each form's programs a compile on llvmpipe:
// the cases share them where they can.
TEST(ConvWinograd, FusedMatchesFloat64) {
  for (int i : {0, 3, 6}) check_case(kCases[i], 4, false, 0, 1);
  check_case(kCases[3], 4, true, 0, 1);
  check_case(kCases[0], 2, true, 0, 3);
  for (int fused : {1, 3, 2})
    check_case({{1, 37, 10, 12}, 29, {1, 1, 1, 1}, true, Epilogue(Activation::relu)}, 4, false, 0, fused);
  // the input channels over 1 (not split), 4 (the last part's 2 channels in its first chunk) and 2
  // workgroups per block (5 chunks of 8, 2 x 3 blocks)
  for (int split : {1, 4, 2}) {
    ScopedSettings s;
    s->conv_winograd_split = split;
    check_case({{2, 37, 13, 12}, 40, {1, 1, 1, 1}, true, Epilogue(Activation::relu)}, 4, false, 0, 1);
  }
}

// NaN and infinities in x: every output the reference makes non-finite is non-finite (NaN or
// +-inf); Winograd mixes a tile's inputs, so an input tile holding one may make others of its
// M x M outputs NaN too (inf - inf, 0 * inf; as cuDNN's Winograd), never an output of another
// tile; finite outputs are within 1e-3 of the reference.
TEST(ConvWinograd, NanAndInfinity) {
  for (std::int64_t m : {2, 4}) {
    GLT_RNG(rng);
    SCOPED_TRACE("m=" + std::to_string(m));
    ScopedSettings s;
    s->conv_winograd = static_cast<int>(m);
    const Shape xs{1, 3, 10, 9}, ws{4, 3, 3, 3};
    auto xv = uniform(rng, numel_of(xs)), wv = uniform(rng, numel_of(ws));
    xv[1 * 90 + 2 * 9 + 3] = std::nanf("");
    xv[2 * 90 + 8 * 9 + 8] = std::numeric_limits<float>::infinity();  // the last element
    xv[0 * 90 + 9 * 9 + 0] = -std::numeric_limits<float>::infinity();
    Conv2dOptions o = Conv2dOptions::pad(1);
    Shape os;
    const auto ref = ref_conv(host(xv, xs), host(wv, ws), nullptr, o, os);
    const auto yv =
        conv2d(Tensor::from_host(device(), xv, xs), Tensor::from_host(device(), wv, ws), Tensor(), o).to_vector();
    const std::int64_t OH = os[2], OW = os[3];
    // Whether the input tile of output (oh, ow) holds a non-finite x of any channel.
    const auto tile_bad = [&](std::int64_t oh, std::int64_t ow) {
      const std::int64_t h0 = oh / m * m - 1, w0 = ow / m * m - 1;
      for (std::int64_t c = 0; c < 3; ++c)
        for (std::int64_t h = std::max<std::int64_t>(h0, 0); h < std::min<std::int64_t>(h0 + m + 2, 10); ++h)
          for (std::int64_t w = std::max<std::int64_t>(w0, 0); w < std::min<std::int64_t>(w0 + m + 2, 9); ++w)
            if (!std::isfinite(xv[static_cast<std::size_t>((c * 10 + h) * 9 + w)])) return true;
      return false;
    };
    int nonfinite = 0, spread = 0;
    for (std::int64_t oc = 0; oc < 4; ++oc)
      for (std::int64_t oh = 0; oh < OH; ++oh)
        for (std::int64_t ow = 0; ow < OW; ++ow) {
          const std::size_t i = static_cast<std::size_t>((oc * OH + oh) * OW + ow);
          if (!std::isfinite(ref[i])) {
            EXPECT_FALSE(std::isfinite(yv[i])) << "output " << i << " of reference " << ref[i];
            ++nonfinite;
          } else if (std::isfinite(yv[i])) {
            EXPECT_NEAR(yv[i], ref[i], 1e-3) << "output " << i;
          } else {
            EXPECT_TRUE(tile_bad(oh, ow)) << "output " << i << " non-finite outside the tiles of non-finite inputs";
            ++spread;
          }
        }
    EXPECT_GT(nonfinite, 0);
    std::printf("[ winograd ] F(%lldx%lld,3x3): %d outputs non-finite as the reference's, %d more in their tiles\n",
                static_cast<long long>(m), static_cast<long long>(m), nonfinite, spread);
  }
}

// The model runtime: Conv + Relu of a constant weight (its filters' transform made at the first
// run and kept: one dispatch fewer in later runs), Conv + Relu + Mul + Add by scalars (the affine
// epilogue, fuse_conv_affine, in the output transform) and a Conv of a weight that is a graph input
// (made per run), against the float64 reference, in two runs; replayed (ModelOptions::replay),
// three runs with the same values.
void model_conv_keeps_filters(int fused) {
  GLT_RNG(rng);
  SCOPED_TRACE(fused ? "fused" : "three stages");
  ScopedSettings s;
  s->conv_winograd = 4;
  fuse(s, fused);
  s->conv_winograd_split = fused ? 2 : 0;
  // fused: 40 channels, 5 chunks of 8 over 2 workgroups per block (the parts' sums merged, the
  // counters reset for the next run and replay)
  const std::int64_t C = fused ? 40 : 8;
  const Shape xs{2, C, 11, 13}, ws{12, C, 3, 3};
  auto xv = uniform(rng, numel_of(xs)), wv = uniform(rng, numel_of(ws)), bv = uniform(rng, 12);
  auto w2v = uniform(rng, numel_of(ws));
  OnnxBuilder b;
  auto w3v = uniform(rng, numel_of(ws));
  b.input("x", xs).input("w2", ws).output("y", {2, 12, 11, 13}).output("z", {2, 12, 11, 13});
  b.output("v", {2, 12, 11, 13});
  b.init("w", ws, wv).init("b", {12}, bv).init("w3", ws, w3v).init("k", {}, {1.5f}).init("s", {}, {-0.25f});
  OnnxBuilder::attr_ints(b.node("Conv", {"x", "w", "b"}, {"c"}), "pads", {1, 1, 1, 1});
  b.node("Relu", {"c"}, {"y"});
  OnnxBuilder::attr_ints(b.node("Conv", {"x", "w2"}, {"z"}), "pads", {1, 1, 1, 1});
  OnnxBuilder::attr_ints(b.node("Conv", {"x", "w3", "b"}, {"c3"}), "pads", {1, 1, 1, 1});
  b.node("Relu", {"c3"}, {"r3"});
  b.node("Mul", {"r3", "k"}, {"m3"});
  b.node("Add", {"m3", "s"}, {"v"});
  const std::string path = b.save("winograd_conv");
  Model m = Model::load(device(), path);
  EXPECT_NE(m.plan_summary().find("2 scalar Mul/Add into conv epilogues"), std::string::npos) << m.plan_summary();
  const std::map<std::string, Tensor> feeds{{"x", Tensor::from_host(device(), xv, xs)},
                                            {"w2", Tensor::from_host(device(), w2v, ws)}};
  std::vector<double> hb(bv.begin(), bv.end());
  Shape os;
  const auto ry = ref_conv(host(xv, xs), host(wv, ws), &hb, Conv2dOptions::pad(1), os);
  const auto rz = ref_conv(host(xv, xs), host(w2v, ws), nullptr, Conv2dOptions::pad(1), os);
  const auto rv = ref_conv(host(xv, xs), host(w3v, ws), &hb, Conv2dOptions::pad(1), os);
  std::uint64_t dispatches[2] = {0, 0};
  std::vector<float> first[3];
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    device().synchronize();
    const std::uint64_t d0 = device().dispatch_count();
    auto out = m.run(feeds);
    const auto y = out.at("y").to_vector(), z = out.at("z").to_vector(), v = out.at("v").to_vector();
    dispatches[run] = device().dispatch_count() - d0;
    ASSERT_EQ(y.size(), ry.size());
    const double tol = 1e-4 * static_cast<double>(C) / 8;  // (F(4x4)'s rounding grows with the sum's length)
    for (std::size_t i = 0; i < y.size(); ++i) {
      ASSERT_NEAR(y[i], std::max(ry[i], 0.0), tol) << "y " << i;
      ASSERT_NEAR(z[i], rz[i], tol) << "z " << i;
      ASSERT_NEAR(v[i], std::max(rv[i], 0.0) * 1.5 - 0.25, 2 * tol) << "v " << i;
    }
    if (run == 0) first[0] = y, first[1] = z, first[2] = v;
  }
  EXPECT_EQ(dispatches[1] + 2, dispatches[0]) << "the constant weights' filters made once";
  ModelOptions o;
  o.replay = true;
  Model rm = Model::load(device(), path, o);
  for (int run = 0; run < 3; ++run) {
    SCOPED_TRACE("replayed run " + std::to_string(run));
    auto out = rm.run(feeds);
    EXPECT_EQ(out.at("y").to_vector(), first[0]);
    EXPECT_EQ(out.at("z").to_vector(), first[1]);
    EXPECT_EQ(out.at("v").to_vector(), first[2]);
  }
}

TEST(ConvWinograd, ModelConvKeepsConstantFilters) { model_conv_keeps_filters(0); }
TEST(ConvWinograd, FusedModelConvKeepsConstantFilters) { model_conv_keeps_filters(1); }

// The QDQ pattern through Winograd (the model runtime's QConv: conv2d_winograd_quant): a chain of
// two 3x3 convs with ReLU, x's QuantizeLinear fused into the first (XQIN: f32 x quantized and
// dequantized in the input transform), its 8-bit output (uint8, or int8 with a negative zero
// point: YQ's whole words) dequantized in the second's input transform (X8), whose output
// DequantizeLinear is fused (YDQ), half of x at QuantizeLinear's ties, W = 12 and 13 (a partial last tile column: the
// integer path where the 8-bit output has OW % 4 != 0), against the exact integer path (GLTENSOR_CONV_WINOGRAD=0):
// within two quanta (the f32 sums round differently: a first-layer tie moves the second layer's
// output by up to about 1.3 quanta, as test_model's QdqConvOnTheWarpKernelMatchesOnnxRuntime), most
// outputs equal, the dispatches of the Winograd convs (input transform, GEMM, output transform).
TEST(ConvWinograd, QdqConvChain) {
  GLT_RNG(rng);
  const int kU8 = onnx::TensorProto::UINT8, kI8 = onnx::TensorProto::INT8;
  const auto ints = [&](std::int64_t n, int lo, int hi) {
    std::uniform_int_distribution<int> d(lo, hi);
    std::vector<std::int32_t> v(static_cast<std::size_t>(n));
    for (auto& e : v) e = d(rng);
    return v;
  };
  for (int y_i8 : {0, 1})
    for (std::int64_t W : {12, 13}) {
      SCOPED_TRACE(std::string(y_i8 ? "int8" : "uint8") + " W=" + std::to_string(W));
      const std::int64_t C = 8, O = 16, H = 11;
      OnnxBuilder m(13);
      m.input("x", {1, C, H, W}).output("y", {1, O, H, W});
      m.init("s0", {}, {0.02f}).init_int("z0", {}, {128}, kU8);
      m.node("QuantizeLinear", {"x", "s0", "z0"}, {"xq"});
      m.node("DequantizeLinear", {"xq", "s0", "z0"}, {"xd"});
      std::string cur = "xd";
      for (int l = 0; l < 2; ++l) {
        const std::string i = std::to_string(l), sc = "s" + std::to_string(l + 1), zp = "z" + std::to_string(l + 1);
        const std::int64_t c = l == 0 ? C : O;
        m.init_int("wq" + i, {O, c, 3, 3}, ints(O * c * 9, -127, 127), kI8);
        m.init("ws" + i, {O}, uniform(rng, O, 0.002f, 0.01f)).init("b" + i, {O}, uniform(rng, O));
        m.init_int("wz" + i, {O}, ints(O, -3, 3), kI8);
        m.init(sc, {}, {0.03f});
        if (l == 0 && y_i8)
          m.init_int(zp, {}, {-20}, kI8);
        else
          m.init_int(zp, {}, {l == 0 ? 0 : 5}, kU8);
        OnnxBuilder::attr_i(m.node("DequantizeLinear", {"wq" + i, "ws" + i, "wz" + i}, {"w" + i}), "axis", 0);
        OnnxBuilder::attr_ints(m.node("Conv", {cur, "w" + i, "b" + i}, {"c" + i}), "pads", {1, 1, 1, 1});
        m.node("Relu", {"c" + i}, {"r" + i});
        m.node("QuantizeLinear", {"r" + i, sc, zp}, {"q" + i});
        m.node("DequantizeLinear", {"q" + i, sc, zp}, {l == 1 ? "y" : "d" + i});
        cur = "d" + i;
      }
      const std::string path = m.save("winograd_qdq");
      // x at QuantizeLinear's ties: float((k + 0.5) * 0.02), whose quotient by 0.02 rounds to k + 0.5
      // exactly for most k, where x * float(1 / 0.02) may be an ulp off (quant_div's exact fallback)
      std::vector<float> xv = uniform(rng, C * H * W, -2, 2);
      std::uniform_int_distribution<int> tie(-100, 100);
      for (std::size_t i = 0; i < xv.size(); i += 2) xv[i] = static_cast<float>((tie(rng) + 0.5) * 0.02);
      const Tensor x = Tensor::from_host(device(), xv, {1, C, H, W});
      std::vector<float> got[3];
      std::uint64_t dispatches[3];
      for (int wino : {0, 1, 2}) {  // the integer path, Winograd, Winograd fused (W 12 only)
        if (wino == 2 && W != 12) continue;
        ScopedSettings s;
        s->conv_winograd = wino ? 4 : 0;
        fuse(s, wino == 2 ? 2 : 0);
        Model mod = Model::load(device(), path);
        mod.run({{"x", x}});
        device().synchronize();
        const std::uint64_t d0 = device().dispatch_count();
        got[wino] = mod.run({{"x", x}}).at("y").to_vector();
        dispatches[wino] = device().dispatch_count() - d0;
      }
      // W = 13: the first conv's 8-bit output has OW % 4 != 0 (its integer path); the last's is float32
      if (W == 12) {
        EXPECT_EQ(dispatches[1], 6u) << "integer path: " << dispatches[0];
        EXPECT_EQ(dispatches[2], 2u) << "fused";
      } else {  // the first conv's integer dispatches (fewer than both convs'), the second's 3
        EXPECT_GT(dispatches[1], 3u) << "integer path: " << dispatches[0];
        EXPECT_LT(dispatches[1] - 3u, dispatches[0]) << "integer path: " << dispatches[0];
      }
      if (W == 12) {
        ASSERT_EQ(got[2].size(), got[1].size());
        int fused_equal = 0;
        for (std::size_t i = 0; i < got[1].size(); ++i) {
          ASSERT_LE(std::fabs(got[2][i] - got[0][i]), 0.0601f) << "fused " << i;
          fused_equal += got[2][i] == got[0][i];
        }
        EXPECT_GT(fused_equal, static_cast<int>(got[0].size()) * 9 / 10);
      }
      ASSERT_EQ(got[1].size(), got[0].size());
      int nonzero = 0, equal = 0;
      for (std::size_t i = 0; i < got[0].size(); ++i) {
        ASSERT_LE(std::fabs(got[1][i] - got[0][i]), 0.0601f) << i;
        nonzero += got[0][i] != 0;
        equal += got[1][i] == got[0][i];
      }
      EXPECT_GT(nonzero, static_cast<int>(got[0].size()) / 4);
      EXPECT_GT(equal, static_cast<int>(got[0].size()) * 9 / 10);
      std::printf(
          "[ winograd ] QDQ chain %s W=%lld: %d of %zu outputs equal to the integer path's, %llu vs %llu dispatches\n",
          y_i8 ? "int8" : "uint8", static_cast<long long>(W), equal, got[0].size(),
          static_cast<unsigned long long>(dispatches[1]), static_cast<unsigned long long>(dispatches[0]));
    }
}

// plan_conv_winograd: 3x3, stride 1, undilated, one group, f32, no gradient, within the SSBO
// limit; F(4x4,3x3) on GPUs from kWinogradMinC / kWinogradMinO channels and kWinogradMinPositions
// output positions, never on software rasterizers unless forced; GLTENSOR_CONV (direct / im2col) and
// GLTENSOR_CONV_WINOGRAD=0 off.
TEST(ConvWinograd, Plan) {
  using namespace gltensor::detail;
  const ConvDevice gpu{false, 0, std::int64_t{1} << 31}, sw{true, 65535, std::int64_t{128} << 20};
  Settings s;
  const auto conv = [](std::int64_t C, std::int64_t O, std::int64_t hw) {
    Conv2dProblem p;
    p.g.N = 1, p.g.C = C, p.g.H = hw, p.g.W = hw, p.g.KH = 3, p.g.KW = 3, p.g.OH = hw, p.g.OW = hw;
    p.g.o = Conv2dOptions::pad(1);
    p.O = O, p.f32 = true, p.x_f32_contiguous = p.x_rows_contiguous = true;
    return p;
  };
  EXPECT_EQ(plan_conv_winograd(conv(64, 128, 56), gpu, s), 4);
  EXPECT_EQ(plan_conv2d(conv(256, 256, 112), gpu, s).path, Conv2dPlan::Path::winograd);
  EXPECT_EQ(plan_conv2d(conv(256, 256, 112), gpu, s).winograd_m, 4);
  EXPECT_EQ(plan_conv_winograd(conv(32, 64, 56), gpu, s), 4);
  EXPECT_EQ(plan_conv_winograd(conv(16, 64, 56), gpu, s), 0) << "C < kWinogradMinC";
  EXPECT_EQ(plan_conv_winograd(conv(64, 32, 56), gpu, s), 0) << "O < kWinogradMinO";
  EXPECT_EQ(plan_conv_winograd(conv(64, 128, 56), sw, s), 0) << "software rasterizer";
  EXPECT_EQ(plan_conv_winograd(conv(64, 128, 28), gpu, s), 0) << "28 x 28 < kWinogradMinPositions";
  Conv2dProblem batch = conv(64, 128, 28);
  batch.g.N = 4;
  EXPECT_EQ(plan_conv_winograd(batch, gpu, s), 4) << "4 images of 28 x 28";
  Conv2dProblem p = conv(64, 128, 56);
  p.grad = true;
  EXPECT_EQ(plan_conv_winograd(p, gpu, s), 0) << "gradient";
  p = conv(64, 128, 56), p.f32 = false;
  EXPECT_EQ(plan_conv_winograd(p, gpu, s), 0) << "f16";
  p = conv(64, 128, 56), p.g.o.stride = {2, 2};
  EXPECT_EQ(plan_conv_winograd(p, gpu, s), 0) << "stride 2";
  p = conv(64, 128, 56), p.g.o.dilation = {1, 2};
  EXPECT_EQ(plan_conv_winograd(p, gpu, s), 0) << "dilation";
  p = conv(64, 128, 56), p.g.o.groups = 2;
  EXPECT_EQ(plan_conv_winograd(p, gpu, s), 0) << "groups";
  p = conv(64, 128, 56), p.g.KW = 5;
  EXPECT_EQ(plan_conv_winograd(p, gpu, s), 0) << "5 wide";
  EXPECT_EQ(plan_conv_winograd(conv(512, 512, 400), sw, s), 0) << "off";
  s.conv_winograd = 2;
  EXPECT_EQ(plan_conv_winograd(conv(4, 4, 8), sw, s), 2) << "forced";
  EXPECT_EQ(plan_conv_winograd(conv(512, 512, 400), sw, s), 0) << "V past 128 MiB";
  s.conv_winograd = 0;
  EXPECT_EQ(plan_conv_winograd(conv(64, 128, 56), gpu, s), 0) << "GLTENSOR_CONV_WINOGRAD=0";
  s.conv_winograd = -1, s.conv = ConvSetting::im2col;
  EXPECT_EQ(plan_conv_winograd(conv(64, 128, 56), gpu, s), 0) << "GLTENSOR_CONV=im2col";
}

// plan_winograd_fused: chosen on GPUs for f32 F(4x4) convs of at most kWinogradFusedMaxTiles tiles
// and C * O <= kWinogradFusedMaxCO (the narrow CNN's first two layers at 56 x 56), not for the QDQ
// conv nor on software rasterizers; forced (GLTENSOR_CONV_WINOGRAD_FUSED=1) at the default
// blocking, its tiles then channels halved until it fits the device's invocations, shared memory
// and loop limit, or at the setting's blocking where that fits; never with 0; the channels split
// over 2 workgroups from 4 chunks, or as GLTENSOR_CONV_WINOGRAD_SPLIT asks.
TEST(ConvWinograd, PlanFused) {
  using namespace gltensor::detail;
  const ConvDevice gpu{false, 0, std::int64_t{1} << 31, 0, 1024}, sw{true, 65535, std::int64_t{128} << 20, 0, 1024};
  const ConvDevice small_groups{false, 0, std::int64_t{1} << 31, 0, 256};
  Settings s;
  const WinogradFusedBlock b = plan_winograd_fused(4, 64, 64, 196, false, gpu, 49152, s);
  EXPECT_EQ(b.o, 16);
  EXPECT_EQ(b.p, 16);
  EXPECT_EQ(b.c, 8);
  EXPECT_EQ(b.ro, 4);
  EXPECT_EQ(b.rp, 4);
  EXPECT_TRUE(b.prefetch);
  EXPECT_EQ(b.split, 2) << "8 chunks: 2 parts";
  ConvWinogradVariant v{ConvWinogradVariant::Stage::fused, 4};
  v.fb = b;
  EXPECT_EQ(v.local(), 576u);
  EXPECT_EQ(b.shared_floats(4), 36 * 16 * 16) << "M's 36 x 16 x 16: as U and V's chunks, 36 x 8 x 32";
  EXPECT_EQ(plan_winograd_fused(4, 32, 64, 196, false, gpu, 49152, s).o, 16) << "the narrow CNN's first layer";
  EXPECT_EQ(plan_winograd_fused(4, 32, 64, 196, false, gpu, 49152, s).split, 2) << "4 chunks: 2 parts";
  EXPECT_EQ(plan_winograd_fused(4, 24, 64, 196, false, gpu, 49152, s).split, 1) << "3 chunks: not split";
  EXPECT_EQ(plan_winograd_fused(4, 64, 128, 196, false, gpu, 49152, s).o, 0) << "C * O past 64 x 64";
  s.conv_winograd_split = 2;
  EXPECT_EQ(plan_winograd_fused(4, 64, 64, 196, false, gpu, 49152, s).split, 2) << "GLTENSOR_CONV_WINOGRAD_SPLIT=2";
  EXPECT_EQ(plan_winograd_fused(4, 8, 64, 196, false, gpu, 49152, s).split, 1) << "1 chunk: not split";
  s.conv_winograd_split = 4;
  EXPECT_EQ(plan_winograd_fused(4, 32, 64, 196, false, gpu, 49152, s).split, 4) << "GLTENSOR_CONV_WINOGRAD_SPLIT=4";
  EXPECT_EQ(plan_winograd_fused(4, 16, 64, 196, false, gpu, 49152, s).split, 1) << "4 parts of 2 chunks: 1";
  s.conv_winograd_split = 0;
  EXPECT_EQ(plan_winograd_fused(4, 64, 128, 784, false, gpu, 49152, s).o, 0) << "784 tiles (112 x 112)";
  EXPECT_EQ(plan_winograd_fused(4, 64, 128, 196, true, gpu, 49152, s).o, 0) << "the QDQ conv";
  EXPECT_EQ(plan_winograd_fused(2, 64, 128, 196, false, gpu, 49152, s).o, 0) << "F(2x2)";
  EXPECT_EQ(plan_winograd_fused(4, 64, 128, 196, false, sw, 32768, s).o, 0) << "software rasterizer";
  s.conv_winograd_fused = 1;
  EXPECT_EQ(plan_winograd_fused(4, 128, 256, 784, true, gpu, 49152, s).o, 16) << "forced";
  const WinogradFusedBlock l = plan_winograd_fused(4, 64, 128, 196, false, sw, 32768, s);
  EXPECT_EQ(l.o, 16) << "forced on llvmpipe: 16 x 8 in its 32 KiB";
  EXPECT_EQ(l.p, 8);
  const WinogradFusedBlock h = plan_winograd_fused(4, 64, 128, 196, false, gpu, 16384, s);
  EXPECT_EQ(h.o, 8) << "16 KiB: 8 x 4";
  EXPECT_EQ(h.p, 4);
  EXPECT_EQ(plan_winograd_fused(4, 64, 128, 196, false, small_groups, 49152, s).p, 4) << "256 invocations: 16 x 4";
  EXPECT_EQ(plan_winograd_fused(2, 64, 128, 196, false, small_groups, 49152, s).p, 16) << "F(2x2): 256 invocations";
  EXPECT_EQ(plan_winograd_fused(4, 4096, 128, 196, false, sw, 32768, s).o, 0) << "past the loop limit";
  s.conv_winograd_block_o = 8, s.conv_winograd_block_p = 2, s.conv_winograd_block_c = 16, s.conv_winograd_block_f = 0;
  const WinogradFusedBlock b2 = plan_winograd_fused(4, 64, 128, 196, false, gpu, 49152, s);
  EXPECT_EQ(b2.o, 8);
  EXPECT_EQ(b2.p, 2);
  EXPECT_EQ(b2.c, 16);
  EXPECT_EQ(b2.ro, 4);
  EXPECT_EQ(b2.rp, 2);
  EXPECT_FALSE(b2.prefetch);
  s.conv_winograd_block_o = 32, s.conv_winograd_block_p = 16;
  EXPECT_EQ(plan_winograd_fused(4, 64, 128, 196, false, gpu, 49152, s).o, 0) << "the setting's 1152 invocations";
  s.conv_winograd_fused = 0, s.conv_winograd_block_o = s.conv_winograd_block_p = 0;
  EXPECT_EQ(plan_winograd_fused(4, 64, 128, 196, false, gpu, 49152, s).o, 0) << "GLTENSOR_CONV_WINOGRAD_FUSED=0";
}

// GLTENSOR_CONV_WINOGRAD_FUSED's values: 0, 1, OxP, OxPxC, OxPxCxF (powers of 2 up to 64, F 0 or 1),
// GLTENSOR_CONV_WINOGRAD_SPLIT's 1, 2, 4; anything else a ValueError naming the variable.
TEST(ConvWinograd, FusedSetting) {
  using gltensor::detail::settings;
  {
    ScopedEnv e("GLTENSOR_CONV_WINOGRAD_FUSED", "0");
    EXPECT_EQ(settings().conv_winograd_fused, 0);
  }
  EXPECT_EQ(settings().conv_winograd_fused, -1) << "unset: choose";
  {
    ScopedEnv e("GLTENSOR_CONV_WINOGRAD_FUSED", "16x8");
    EXPECT_EQ(settings().conv_winograd_fused, 1);
    EXPECT_EQ(settings().conv_winograd_block_o, 16);
    EXPECT_EQ(settings().conv_winograd_block_p, 8);
    EXPECT_EQ(settings().conv_winograd_block_c, 0);
    EXPECT_EQ(settings().conv_winograd_block_f, -1);
  }
  {
    ScopedEnv e("GLTENSOR_CONV_WINOGRAD_FUSED", "8x16x4x0");
    EXPECT_EQ(settings().conv_winograd_block_c, 4);
    EXPECT_EQ(settings().conv_winograd_block_f, 0);
  }
  {
    ScopedEnv e("GLTENSOR_CONV_WINOGRAD_SPLIT", "4");
    EXPECT_EQ(settings().conv_winograd_split, 4);
  }
  EXPECT_EQ(settings().conv_winograd_split, 0) << "unset: choose";
  ::setenv("GLTENSOR_CONV_WINOGRAD_SPLIT", "3", 1);
  EXPECT_THROW(gltensor::detail::Settings::from_env(), ValueError) << "GLTENSOR_CONV_WINOGRAD_SPLIT=3";
  ::unsetenv("GLTENSOR_CONV_WINOGRAD_SPLIT");
  for (const char* bad : {"2", "12x8", "16x8x8x2", "128x8", "16x", "x8", "16x8x8x1x1", "on"}) {
    ::setenv("GLTENSOR_CONV_WINOGRAD_FUSED", bad, 1);
    EXPECT_THROW(gltensor::detail::Settings::from_env(), ValueError) << bad;
  }
  ::unsetenv("GLTENSOR_CONV_WINOGRAD_FUSED");
}
