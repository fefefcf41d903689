// The direct integer convolution of QDQ convolutions (src/nn/iconv_direct.*, glsl/nn/iconv_direct.comp):
// its dequantized (float32) and requantized (8-bit, after none / Relu / Clip) outputs are the
// same bit for bit as the im2col path's (im2col + the integer matmul, then apply_epilogue and
// quantize_linear as separate ops), and within one rounding of float64 references on exact
// int64 sums; random inputs and zero points, odd sizes, strides, padding, dilation, groups, 1x1
// filters and images, more images than one dispatch's workgroups, non-finite scales.
#include <algorithm>
#include <cmath>

#include "nn/conv_ref.hpp"
#include "nn/iconv_direct_plan.hpp"
#include "nn/qdq_ref.hpp"
#include "tensor/tensor_impl.hpp"

using namespace gltensor;
using namespace gltensor::detail;
using namespace glt_test;

namespace {

// The reference path in the settings' scope: im2col's GEMM (the implicit GEMM, imatmul.comp), on
// software rasterizers at its smallest register tile (imatmul_smallest_tile: 4 x 4 per invocation
// where llvmpipe plans 8 x 8; its 8 x 8 runs in test_iconv_implicit and test_imatmul_forms).
void reference_gemm() {
  settings().conv = ConvSetting::im2col;
  if (device().adapter().software) imatmul_smallest_tile(settings());
}

struct Case {
  std::int64_t N = 1, C = 1, H = 1, W = 1, O = 1, KH = 1, KW = 1;
  IntConvOptions o;
  DType x = DType::u8, w = DType::i8;
  bool zx = true, zw = true, zw_per = true, sb_per = true, bias = true;
  float sa = 0.0f;         ///< x's scale (0: chosen from the filter size)
  bool every_form = true;  ///< requantized: both output types and every activation, else uint8 after Relu
  bool past_end = false;   ///< x the leading images of a storage whose next image holds the type's extreme
};

std::string describe(const Case& c) {
  return "x " + to_string({c.N, c.C, c.H, c.W}) + " " + dtype_name(c.x) + ", w " +
         to_string({c.O, c.C / c.o.groups, c.KH, c.KW}) + " " + dtype_name(c.w) + ", stride " +
         std::to_string(c.o.stride[0]) + "x" + std::to_string(c.o.stride[1]) + ", groups " + std::to_string(c.o.groups);
}

void check_case(std::mt19937_64& rng, const Case& c) {
  SCOPED_TRACE(describe(c));
  const std::int64_t G = c.o.groups, CG = c.C / G, taps = CG * c.KH * c.KW;
  const auto xv = q8_values(rng, static_cast<std::size_t>(c.N * c.C * c.H * c.W), c.x);
  const auto wv = q8_values(rng, static_cast<std::size_t>(c.O * taps), c.w);
  const auto zxv = c.zx ? q8_values(rng, 1, c.x) : std::vector<std::int32_t>{0};
  const auto zwv =
      c.zw ? q8_values(rng, static_cast<std::size_t>(c.zw_per ? c.O : 1), c.w) : std::vector<std::int32_t>{0};
  Tensor x = ints(xv, {c.N, c.C, c.H, c.W}, c.x);
  const Tensor w = ints(wv, {c.O, CG, c.KH, c.KW}, c.w);
  if (c.past_end) {  // the padded taps past the last image's end must read nothing there
    std::vector<std::int32_t> wide = xv;
    wide.resize(static_cast<std::size_t>((c.N + 1) * c.C * c.H * c.W), QRange::of(c.x).hi);
    x = ints(wide, {c.N + 1, c.C, c.H, c.W}, c.x).narrow(0, 0, c.N);
  }
  const Tensor zx = c.zx ? ints(zxv, {1}, c.x) : Tensor();
  const Tensor zw = c.zw ? ints(zwv, {static_cast<std::int64_t>(zwv.size())}, c.w) : Tensor();
  // Scales that put the outputs around a few units (y_scale 1/40: 8-bit outputs spread, some saturate).
  const float sa = c.sa != 0 ? c.sa : 1.0f / (400.0f * std::sqrt(static_cast<float>(taps)));
  const auto sb = uniform(rng, c.sb_per ? static_cast<std::size_t>(c.O) : 1, 0.002f, 0.02f);
  const auto bv = uniform(rng, static_cast<std::size_t>(c.O), -1.f, 1.f);
  const IntDequant dq{full(device(), {1}, sa), Tensor::from_host(device(), sb, {static_cast<std::int64_t>(sb.size())}),
                      c.bias ? Tensor::from_host(device(), bv, {c.O}) : Tensor(), true};
  // Exact sums (float64 on the zero-point-shifted values: below 2^53).
  HostT xs{{xv.begin(), xv.end()}, {c.N, c.C, c.H, c.W}}, ws{{wv.begin(), wv.end()}, {c.O, CG, c.KH, c.KW}};
  for (auto& v : xs.v) v -= zxv[0];
  for (std::size_t i = 0; i < ws.v.size(); ++i)
    ws.v[i] -= zwv[c.zw && c.zw_per ? i / static_cast<std::size_t>(taps) : 0];
  Conv2dOptions fo;
  fo.stride = c.o.stride, fo.dilation = c.o.dilation, fo.padding = c.o.padding, fo.groups = G;
  Shape shape;
  const auto sums = ref_conv(xs, ws, nullptr, fo, shape);
  // The plan takes the direct kernel for this problem (else the comparison below is im2col's with itself).
  const DeviceImpl& dev = dev_of(x);
  ScopedSettings direct;  // the direct kernel whatever the filter's taps (GPUs keep it for <= 32)
  direct->conv = ConvSetting::direct;
  ASSERT_TRUE(plan_iconv_direct({CG, c.O / G, c.KH, c.KW, shape[3], c.o.stride[1], c.o.dilation[1], true},
                                {dev.loop_budget(), dev.caps().max_ssbo_bindings, dev.adapter().software}, settings())
                  .direct);
  const std::size_t plane = static_cast<std::size_t>(shape[2] * shape[3]);
  const auto ref_at = [&](std::size_t i) {
    const std::size_t oc = (i / plane) % static_cast<std::size_t>(c.O);
    return sums[i] * static_cast<double>(sa * sb[c.sb_per ? oc : 0]) + (c.bias ? bv[oc] : 0.0);
  };

  // Dequantized: as im2col's (up to an FMA contraction), near the float64 reference.
  const Tensor yd = conv_dequant(x, w, zx, zw, c.o, dq);
  Tensor yi;
  {
    ScopedSettings s;
    reference_gemm();
    yi = conv_dequant(x, w, zx, zw, c.o, dq);
  }
  ASSERT_EQ(yd.shape(), shape);
  ASSERT_EQ(yd.dtype(), DType::f32);
  const auto gd = yd.to_vector(), gi = yi.to_vector();
  // up to an FMA contraction of the epilogue (NVIDIA's compiler contracts the two kernels' a * b +
  // c differently: 1 ulp on the H100)
  ASSERT_TRUE(close(gd, to_double(gi), 1e-6, 1e-6)) << "direct against im2col";
  for (std::size_t i = 0; i < gd.size(); ++i) {
    const double want = ref_at(i);
    if (std::isfinite(want)) {
      ASSERT_NEAR(gd[i], want, 1e-5 * (std::abs(want) + 1)) << i;
    }
  }

  // Requantized after none / Relu / Clip, uint8 and int8 outputs with their zero points.
  for (const RequantForm& f : requant_forms(c.every_form)) {
    SCOPED_TRACE(f.name());
    const IntRequant rq = f.requant();
    const Tensor qd = conv_requant(x, w, zx, zw, c.o, dq, rq);
    Tensor qi;
    {
      ScopedSettings s;
      reference_gemm();
      qi = conv_requant(x, w, zx, zw, c.o, dq, rq);
    }
    ASSERT_EQ(qd.dtype(), f.out);
    ASSERT_EQ(qd.shape(), shape);
    const auto a = qd.to_int_vector(), b = qi.to_int_vector();
    for (std::size_t i = 0; i < a.size(); ++i) {
      ASSERT_LE(std::abs(a[i] - b[i]), 1) << i << " (direct, im2col: an FMA contraction may move a tie)";
      const double v = ref_at(i);
      if (!std::isfinite(f.activate(v))) continue;
      ASSERT_NEAR(a[i], f.quantize(v), 1) << i << " v=" << v;  // one rounding of v
    }
  }
}

}  // namespace

TEST(IConvDirect, MatchesIm2colBitForBit) {
  GLT_RNG(rng);
  Case c;
  check_case(rng, c);  // 1x1 filter, 1x1 image
  c = Case{};
  c.N = 2, c.C = 5, c.H = 9, c.W = 11, c.O = 7, c.KH = c.KW = 3;  // odd sizes, one channel block
  c.o.padding = {1, 1, 1, 1};
  check_case(rng, c);
  c.C = 40, c.O = 12, c.H = c.W = 8;  // two exact blocks of 20 channels; rows of whole words (ROWSEG)
  check_case(rng, c);
  c.C = 3, c.O = 4, c.H = 5, c.W = 12;  // ROWSEG, three words per row
  check_case(rng, c);
  c = Case{};
  c.N = 1, c.C = 4, c.H = 8, c.W = 7, c.O = 6, c.KH = 3, c.KW = 2;
  c.o.padding = {1, 2, 0, 1}, c.o.stride = {2, 1}, c.o.dilation = {1, 2};  // ROWSEG with DW 2 (OW 8)
  c.x = DType::i8, c.w = DType::u8, c.zw_per = false, c.sb_per = false, c.bias = false;
  check_case(rng, c);
  c = Case{};
  c.N = 2, c.C = 6, c.H = 5, c.W = 6, c.O = 4, c.KH = c.KW = 3;  // groups (P % 4 == 2: byte stores)
  c.o.groups = 2, c.o.padding = {1, 1, 1, 1};
  check_case(rng, c);
  c.o.groups = 6, c.C = 6, c.O = 12;  // depthwise with two outputs per channel
  c.zx = c.zw = false;                // absent zero points
  check_case(rng, c);
  c = Case{};
  c.N = 1, c.C = 3, c.H = c.W = 40, c.O = 16, c.KH = c.KW = 5;  // several workgroups along positions and channels
  c.o.stride = {2, 2}, c.o.padding = {2, 2, 2, 2};
  check_case(rng, c);
  {
    ScopedSettings s;  // the workgroup-count rule: OPI 4, 2 and 1 instead of 8
    for (std::int64_t groups : {8, 16, 1000}) {
      s->iconv_groups = groups;
      check_case(rng, c);
    }
  }
}

// Taps in the padding load no element outside x (iconv_direct.comp clamps the tap into the image
// and replaces its value by 0 with a select): x the leading images of a storage whose next image
// is all the type's largest value, padding on every side (bottom and right: the last image's
// padded taps would read past x's end), odd sizes, the row-segment form (ROWSEG) and the general
// one. Sabotage: either select dropped (the border's or the next image's values in the padding),
// or a clamp one short (the last row or column lost).
TEST(IConvDirect, PaddingPastTheEnd) {
  GLT_RNG(rng);
  Case c;
  c.past_end = true, c.every_form = false;
  c.N = 2, c.C = 3, c.H = 7, c.W = 9, c.O = 5, c.KH = c.KW = 3;  // general form (OW 11 with padding 2)
  c.o.padding = {2, 2, 2, 2};
  check_case(rng, c);
  c.W = 8, c.o.padding = {1, 1, 1, 1};  // ROWSEG: OW 8 at stride 1
  check_case(rng, c);
  c.x = DType::i8, c.w = DType::u8, c.KH = 2, c.KW = 3, c.o.padding = {0, 1, 2, 1};  // OH 8, OW 8, ROWSEG
  check_case(rng, c);
}

// More groups of output channels than one dispatch's workgroups along y (65535 on most devices):
// the launch splits the grid.
TEST(IConvDirect, ManyWorkgroups) {
  GLT_RNG(rng);
  Case c;
  c.C = 2, c.O = 8 * 65537, c.every_form = false;
  check_case(rng, c);
}

// Requantization rounds ties to even (ONNX QuantizeLinear), exactly: power-of-two scales make
// every output an exact multiple of 0.5, so the random tests' one-unit tolerance cannot hide a
// rounding of ties away from zero (the sabotage audit: floor(t + 0.5) passed them). x of every
// uint8 value through a 1x1 filter of 1 (and -1: negative ties), scales 1 and 0.5, y_scale 1;
// the direct kernel and the im2col path.
TEST(IConvDirect, RequantizationRoundsTiesToEven) {
  std::vector<std::int32_t> xv(256);
  for (int i = 0; i < 256; ++i) xv[static_cast<std::size_t>(i)] = i;
  const Tensor x = ints(xv, {1, 1, 16, 16}, DType::u8), w = ints({1, -1}, {2, 1, 1, 1}, DType::i8);
  const IntDequant dq{full(device(), {1}, 1.0), full(device(), {1}, 0.5), Tensor(), true};
  const IntRequant rq{full(device(), {1}, 1.0), ints({0}, {1}, DType::i8), Epilogue{}, DType::i8};
  for (ConvSetting path : {ConvSetting::direct, ConvSetting::im2col}) {
    SCOPED_TRACE(path == ConvSetting::direct ? "direct" : "im2col");
    ScopedSettings s;
    s->conv = path;
    const std::vector<std::int32_t> y =
        conv_requant(x, w, Tensor(), Tensor(), IntConvOptions{}, dq, rq).to_int_vector();
    ASSERT_EQ(y.size(), 512u);
    for (int o = 0; o < 2; ++o)
      for (int i = 0; i < 256; ++i) {
        const double v = (o == 0 ? 0.5 : -0.5) * i;                        // x * w * 0.5
        const double want = std::clamp(std::nearbyint(v), -128.0, 127.0);  // the default mode: ties to even
        ASSERT_EQ(y[static_cast<std::size_t>(o * 256 + i)], static_cast<std::int32_t>(want))
            << "channel " << o << ", x " << i;
      }
  }
}

// Non-finite scales: NaN and infinite outputs as the im2col path's (requantized: NaN -> y_zero_point,
// infinities saturate).
TEST(IConvDirect, NonFiniteScales) {
  GLT_RNG(rng);
  for (float sa : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    Case c;
    c.N = 1, c.C = 3, c.H = 4, c.W = 4, c.O = 2, c.KH = c.KW = 3, c.sa = sa;
    c.o.padding = {1, 1, 1, 1};
    check_case(rng, c);
  }
}

// The plan: narrow zero points only, at most 256 taps per channel and 576 per filter (unless
// GLTENSOR_CONV=direct), the loop within the device's budget (else im2col), GLTENSOR_CONV=im2col;
// blocks of whole channels of at most 256 products.
TEST(IConvDirect, Plan) {
  Settings s;
  const IConvDirectLimits dev{65535, 16};
  IConvDirectPlan p = plan_iconv_direct({64, 128, 3, 3, 56, 1, 1, true}, dev, s);
  EXPECT_TRUE(p.direct);
  EXPECT_EQ(p.opi, 8);
  EXPECT_EQ(p.cb, 16);  // 28 * 9 <= 256, the largest divisor of 64 up to 28
  EXPECT_LE(p.cb * 9, kIConvBlock);
  EXPECT_FALSE(plan_iconv_direct({64, 128, 3, 3, 56, 1, 1, false}, dev, s).direct);
  EXPECT_FALSE(plan_iconv_direct({1, 1, 17, 17, 56, 1, 1, true}, dev, s).direct);
  EXPECT_FALSE(plan_iconv_direct({512, 64, 3, 3, 56, 1, 1, true}, dev, s).direct);      // past llvmpipe's loop budget
  EXPECT_FALSE(plan_iconv_direct({512, 64, 3, 3, 56, 1, 1, true}, {0, 16}, s).direct);  // wide: im2col
  EXPECT_FALSE(plan_iconv_direct({65, 64, 3, 3, 56, 1, 1, true}, {0, 16}, s).direct);   // 585 taps
  s.conv = ConvSetting::direct;
  EXPECT_TRUE(plan_iconv_direct({512, 64, 3, 3, 56, 1, 1, true}, {0, 16}, s).direct);
  EXPECT_FALSE(plan_iconv_direct({512, 64, 3, 3, 56, 1, 1, true}, dev, s).direct);  // the loop budget still counts
  s.conv = ConvSetting::choose;
  EXPECT_FALSE(plan_iconv_direct({64, 64, 3, 3, 56, 1, 1, true}, {65535, 8}, s).direct);  // too few SSBO bindings
  s.conv = ConvSetting::im2col;
  EXPECT_FALSE(plan_iconv_direct({64, 128, 3, 3, 56, 1, 1, true}, dev, s).direct);
  EXPECT_EQ(p.px, 4);
  const IConvDirectPlan q = plan_iconv_direct({7, 6, 1, 1, 56, 1, 1, true}, dev, Settings{});
  EXPECT_EQ(q.opi, 6);
  EXPECT_EQ(q.cb, 7);
  // GPUs: at most 32 taps per filter (im2col + the integer matmul beyond), unless GLTENSOR_CONV=direct
  const IConvDirectLimits gpu{0, 16, false};
  EXPECT_FALSE(plan_iconv_direct({64, 128, 3, 3, 56, 1, 1, true}, gpu, Settings{}).direct);
  EXPECT_FALSE(plan_iconv_direct({4, 8, 3, 3, 56, 1, 1, true}, gpu, Settings{}).direct);  // 36 taps
  EXPECT_TRUE(plan_iconv_direct({3, 8, 3, 3, 56, 1, 1, true}, gpu, Settings{}).direct);   // 27 taps
  Settings forced;
  forced.conv = ConvSetting::direct;
  EXPECT_TRUE(plan_iconv_direct({64, 128, 3, 3, 56, 1, 1, true}, gpu, forced).direct);
  // GLTENSOR_ICONV_GROUPS: OPI lowered until the grid has that many workgroups (56^2 positions
  // make 13 groups of 256 along the plane)
  Settings g;
  g.iconv_groups = 264;
  const IConvDirectProblem at56{32, 64, 3, 3, 56, 1, 1, true, 56 * 56, 1};
  EXPECT_EQ(plan_iconv_direct(at56, dev, Settings{}).opi, 8);  // 13 x 8 = 104 workgroups
  EXPECT_EQ(plan_iconv_direct(at56, dev, g).opi, 2);           // 13 x 32 = 416
  EXPECT_EQ(plan_iconv_direct({32, 64, 3, 3, 112, 1, 1, true, 112 * 112, 1}, dev, g).opi, 8);  // 49 x 8 = 392
  EXPECT_EQ(plan_iconv_direct({32, 64, 3, 3, 56, 1, 1, true, 56 * 56, 4}, dev, g).opi, 8);     // 4 images: 416
  EXPECT_EQ(plan_iconv_direct({32, 6, 3, 3, 56, 1, 1, true, 56 * 56, 1}, dev, g).opi, 1);      // as low as it goes
}

// Bad requantization parameters: typed errors naming the op.
TEST(IConvDirect, Errors) {
  const Tensor x = ints({1, 2, 3, 4}, {1, 1, 2, 2}, DType::u8), w = ints({1}, {1, 1, 1, 1}, DType::i8);
  const IntDequant dq{full(device(), {1}, 0.1f), full(device(), {1}, 0.1f), Tensor(), true};
  IntRequant rq{full(device(), {2}, 0.1f), Tensor(), Epilogue(), DType::u8};
  EXPECT_THROW(conv_requant(x, w, Tensor(), Tensor(), IntConvOptions{}, dq, rq, "Conv"), ShapeError);
  rq.scale = full(device(), {1}, 0.1f);
  rq.out = DType::f32;
  EXPECT_THROW(conv_requant(x, w, Tensor(), Tensor(), IntConvOptions{}, dq, rq, "Conv"), DTypeError);
  rq.out = DType::u8;
  EXPECT_EQ(conv_requant(x, w, Tensor(), Tensor(), IntConvOptions{}, dq, rq, "Conv").to_int_vector(),
            (std::vector<std::int32_t>{0, 0, 0, 0}));  // 0.01 v / 0.1 rounds to 0 for v <= 4
}
