// The implicit-GEMM integer convolution (glsl/nn/imatmul.comp's IMPLICIT, src/nn/quant_int.cpp):
// the filter times the 8-bit image read in place through the taps, no im2col columns. int32 sums
// equal exact int64 references; the dequantized and requantized (none / Relu / Clip, uint8 and
// int8) outputs match float64 references within one rounding, and the im2col path's
// (GLTENSOR_ICONV_GEMM=im2col, in the cases that say so); one dispatch per convolution. Random inputs (seed printed),
// zero points at the ends and the middle of their range, odd sizes, strides, padding, dilation, groups, batch, K over
// several exact blocks, saturated outputs, K split under a lowered loop limit, columns past the
// SSBO limit, more batch entries than one dispatch's workgroups. On software rasterizers the cases
// run at the smallest register tile (imatmul_smallest_tile), llvmpipe's planned 8 x 8 in two of them.
#include <algorithm>
#include <array>
#include <cmath>

#include "nn/conv_ref.hpp"
#include "nn/imatmul_plan.hpp"
#include "nn/qdq_ref.hpp"

using namespace gltensor;
using namespace gltensor::detail;
using namespace glt_test;

namespace {

constexpr int kRandom = 1000;
constexpr std::uint64_t kSplit = ~std::uint64_t{0};

struct Case {
  std::int64_t N = 1, C = 1, H = 1, W = 1, O = 1, KH = 3, KW = 3;
  IntConvOptions o;
  DType x = DType::u8, w = DType::i8;
  int zx = kRandom;              ///< x's zero point (kRandom: random; absent where `no_zx`)
  bool no_zx = false;            ///< x's zero point undefined (0)
  bool zw_per = true;            ///< one weight zero point per output channel (random), else one value
  float sa_scale = 1;            ///< x's scale times this (large: outputs saturate)
  bool extremes = false;         ///< x all at its maximum, w at its minimum, zero points at the other ends
  std::uint64_t dispatches = 1;  ///< the int32 sums' dispatches (0: not checked; kSplit: more than 1)
  bool every_form = false;       ///< requantized: both output types after every activation, else uint8 after Relu
  bool dequant = true;           ///< also the dequantized (float) outputs and the byte-by-byte GEMM
  bool requant = true;           ///< also the requantized (8-bit) outputs
  bool vs_im2col = false;        ///< also against the im2col path's outputs (same bits on llvmpipe)
  bool plan = false;             ///< software rasterizers: the plan's tiles, else the smallest (with_gemm)
};

std::string describe(const Case& c) {
  return "x " + to_string({c.N, c.C, c.H, c.W}) + " " + dtype_name(c.x) + ", w " +
         to_string({c.O, c.C / c.o.groups, c.KH, c.KW}) + " " + dtype_name(c.w) + ", stride " +
         std::to_string(c.o.stride[0]) + "x" + std::to_string(c.o.stride[1]) + ", dilation " +
         std::to_string(c.o.dilation[0]) + "x" + std::to_string(c.o.dilation[1]) + ", groups " +
         std::to_string(c.o.groups) + ", zx " + std::to_string(c.zx);
}

// Runs `f` with the convolutions' GEMM form set.
// The im2col path is the reference: it runs with the device's default matmul forms, whatever
// form the caller set for the implicit GEMM (one set of reference kernels to compile). On
// software rasterizers, unless the case says `plan`, both run at the smallest register tile
// (imatmul_smallest_tile, nn/qdq_ref.hpp), the implicit GEMM only where the caller forces no form
// (GLTENSOR_MATMUL_KERNEL unset: GpuTilings and GpuFewTiles force theirs).
template <class F>
auto with_gemm(const Case& c, IConvGemmSetting g, F f) {
  const bool forms = settings().matmul_kernel != MatmulKernelSetting::choose;
  ScopedSettings s;
  s->iconv_gemm = g;
  s->conv = ConvSetting::im2col;  // never the direct integer kernel
  if (g == IConvGemmSetting::im2col) {
    const Settings defaults;
    s->matmul_kernel = defaults.matmul_kernel;
    s->imatmul = defaults.imatmul;
    s->imatmul_bk = defaults.imatmul_bk, s->imatmul_tile = defaults.imatmul_tile, s->imatmul_rb = defaults.imatmul_rb;
    s->imatmul_blocks = defaults.imatmul_blocks, s->imatmul_slices = defaults.imatmul_slices;
    s->imatmul_swizzle = defaults.imatmul_swizzle;
  }
  if (device().adapter().software && !c.plan && (g == IConvGemmSetting::im2col || !forms))
    imatmul_smallest_tile(settings());
  return f();
}

void check_case(std::mt19937_64& rng, const Case& c) {
  SCOPED_TRACE(describe(c));
  const std::int64_t G = c.o.groups, CG = c.C / G, taps = CG * c.KH * c.KW;
  // extremes: every difference at its largest magnitude, sums of K * 255 * 255
  const QConvOperands q =
      qconv_operands(rng, {c.N, c.C, c.H, c.W}, {c.O, CG, c.KH, c.KW}, c.x, c.w, !c.no_zx, c.zx == kRandom, c.zx,
                     c.zw_per ? static_cast<std::size_t>(c.O) : 1, c.extremes);
  const Tensor &x = q.x, &w = q.w, &zxt = q.zxt, &zw = q.zw;
  const auto& xs = q.xs;
  const auto& ws = q.ws;  // exact sums below: int64 values in float64, below 2^53
  Conv2dOptions fo;
  fo.stride = c.o.stride, fo.dilation = c.o.dilation, fo.padding = c.o.padding, fo.groups = G;
  Shape shape;
  const auto sums = ref_conv(xs, ws, nullptr, fo, shape);

  // int32 sums: exact, in `dispatches` launches (the im2col path takes two or more).
  device().synchronize();
  const std::uint64_t d0 = device().dispatch_count();
  const Tensor yi = with_gemm(c, IConvGemmSetting::implicit, [&] { return conv_integer(x, w, zxt, zw, c.o); });
  const std::uint64_t ran = device().dispatch_count() - d0;
  ASSERT_EQ(yi.shape(), shape);
  ASSERT_EQ(yi.dtype(), DType::i32);
  if (c.dispatches == kSplit) {
    EXPECT_GT(ran, 1u) << "K split over launches";
  } else if (c.dispatches) {
    EXPECT_EQ(ran, c.dispatches) << "the implicit GEMM";
  }
  const auto gi = yi.to_int_vector();
  for (std::size_t i = 0; i < gi.size(); ++i) ASSERT_EQ(gi[i], sums[i]) << i;
  if (c.dequant && c.o.stride[1] == 1 && shape[3] % 4 == 0) {  // row words (ROWQUAD) above: also byte by byte
    const auto gb = with_gemm(c, IConvGemmSetting::bytes, [&] { return conv_integer(x, w, zxt, zw, c.o); });
    ASSERT_EQ(gb.to_int_vector(), gi) << "byte by byte";
  }
  if (c.extremes) {
    ASSERT_GT(std::abs(sums[0]), double(1 << 24));  // past f32's exact integers: several blocks
  }

  // Dequantized and requantized: as the im2col path's, within one rounding of float64.
  const float sa = c.sa_scale / (400.0f * std::sqrt(static_cast<float>(taps)));
  const QConvDequant d = qconv_dequant(rng, sa, c.O, c.zw_per, static_cast<std::size_t>(shape[2] * shape[3]));
  const IntDequant& dq = d.dq;
  const auto ref_at = [&](std::size_t i) { return d.ref(sums, i); };
  if (c.dequant) {
    const auto yd = with_gemm(c, IConvGemmSetting::implicit, [&] { return conv_dequant(x, w, zxt, zw, c.o, dq); });
    ASSERT_EQ(yd.shape(), shape);
    const auto gd = yd.to_vector();
    if (c.vs_im2col) {
      const auto yo = with_gemm(c, IConvGemmSetting::im2col, [&] { return conv_dequant(x, w, zxt, zw, c.o, dq); });
      ASSERT_TRUE(close(gd, to_double(yo.to_vector()), 1e-6, 1e-6)) << "implicit against im2col";
    }
    for (std::size_t i = 0; i < gd.size(); ++i) ASSERT_NEAR(gd[i], ref_at(i), 1e-5 * (std::abs(ref_at(i)) + 1)) << i;
  }
  const bool llvmpipe = device().caps().renderer.find("llvmpipe") != std::string::npos;
  int at_lo = 0, at_hi = 0;
  for (const RequantForm& f : c.requant ? requant_forms(c.every_form) : std::vector<RequantForm>{}) {
    SCOPED_TRACE(f.name());
    const IntRequant rq = f.requant();
    const auto q = with_gemm(c, IConvGemmSetting::implicit, [&] { return conv_requant(x, w, zxt, zw, c.o, dq, rq); });
    ASSERT_EQ(q.dtype(), f.out);
    ASSERT_EQ(q.shape(), shape);
    const auto a = q.to_int_vector();
    auto b = a;  // the im2col path's outputs, where compared
    if (c.vs_im2col) {
      b = with_gemm(c, IConvGemmSetting::im2col, [&] {
            return conv_requant(x, w, zxt, zw, c.o, dq, rq);
          }).to_int_vector();
    }
    const QRange r = QRange::of(f.out);
    for (std::size_t i = 0; i < a.size(); ++i) {
      // NVIDIA's compiler may contract the epilogue's a * b + c differently in two kernels (1 ulp)
      ASSERT_LE(std::abs(a[i] - b[i]), 1) << i << " (implicit, im2col)";
      ASSERT_NEAR(a[i], f.quantize(ref_at(i)), 1) << i << " v=" << ref_at(i);  // one rounding of v
      at_lo += a[i] == r.lo, at_hi += a[i] == r.hi;
    }
    if (llvmpipe) {
      EXPECT_EQ(a, b);
    }
  }
  if (c.sa_scale > 10) {
    EXPECT_GT(at_lo, 0) << "no output saturated at the low end";
    EXPECT_GT(at_hi, 0) << "no output saturated at the high end";
  }
}

}  // namespace

// Geometry: odd sizes, padding (asymmetric), stride 2, dilation, batch, channels that are not
// multiples of 4, groups (the batch entries are images times groups), 1x1 filters with stride.
TEST(IConvImplicit, GeometryExact) {
  GLT_RNG(rng);
  Case c;
  c.N = 2, c.C = 5, c.H = 9, c.W = 11, c.O = 7, c.o.padding = {1, 1, 1, 1}, c.vs_im2col = true;
  c.plan = true;  // llvmpipe's 8 x 8 (the check_loops entry's one case of it)
  check_case(rng, c);
  c.vs_im2col = false, c.plan = false;
  c.o.stride = {2, 2}, c.H = c.W = 13;  // stride 2
  check_case(rng, c);
  c = Case{};
  c.N = 1, c.C = 6, c.H = 8, c.W = 7, c.O = 9, c.KH = 3, c.KW = 2;
  c.o.padding = {1, 2, 0, 1}, c.o.stride = {2, 1}, c.o.dilation = {1, 2};
  c.x = DType::i8, c.w = DType::u8, c.zw_per = false;
  check_case(rng, c);
  c = Case{};
  c.N = 3, c.C = 6, c.H = 7, c.W = 6, c.O = 9, c.o.groups = 3, c.o.padding = {1, 1, 1, 1};  // 2 channels per group
  check_case(rng, c);
  c.o.dilation = {2, 2}, c.o.padding = {2, 2, 2, 2}, c.o.groups = 1, c.O = 5;
  check_case(rng, c);
  c = Case{};  // rows of 12 positions (row words), partly left and right of the image, dilated rows
  c.N = 2, c.C = 5, c.H = 7, c.W = 13, c.O = 6, c.o.padding = {1, 2, 1, 1}, c.o.dilation = {1, 2};
  check_case(rng, c);
  c = Case{};
  c.N = 2, c.C = 10, c.H = 5, c.W = 7, c.O = 3, c.KH = c.KW = 1, c.o.stride = {2, 2};  // 1x1 with stride
  check_case(rng, c);
  c = Case{};
  c.N = 1, c.C = 3, c.H = c.W = 1, c.O = 2, c.o.padding = {1, 1, 1, 1};  // a 1x1 image, mostly padding
  check_case(rng, c);
}

// Zero points at 0, 128 and 255 (uint8 x) and at -128 / 127 (int8 x), absent; outputs saturated at
// both ends; K over several exact blocks (64 x 9 = 576, 300 x 9 = 2700) with every difference at
// its extreme (sums past 2^24), several tiles of channels and positions.
TEST(IConvImplicit, ZeroPointsBlocksSaturation) {
  GLT_RNG(rng);
  for (int zx : {0, 128, 255}) {
    Case c;
    c.N = 1, c.C = 4, c.H = 6, c.W = 12, c.O = 5, c.zx = zx, c.o.padding = {1, 1, 1, 1};
    check_case(rng, c);
  }
  for (int zx : {-128, 127}) {
    Case c;
    c.C = 3, c.H = c.W = 5, c.O = 4, c.x = DType::i8, c.zx = zx, c.o.padding = {0, 1, 2, 1};
    check_case(rng, c);
  }
  Case c;
  c.C = 2, c.H = c.W = 4, c.O = 3, c.no_zx = true, c.o.padding = {1, 1, 1, 1};
  c.dispatches = 2;  // the absent zero point's zeros, the GEMM
  check_case(rng, c);
  c = Case{};
  c.N = 1, c.C = 64, c.H = 10, c.W = 16, c.O = 70, c.o.padding = {1, 1, 1, 1}, c.sa_scale = 40;  // saturates
  c.every_form = true, c.vs_im2col = true;
  check_case(rng, c);
  c = Case{};
  c.N = 1, c.C = 300, c.H = 4, c.W = 5, c.O = 3, c.extremes = true;
  check_case(rng, c);
  c.x = DType::i8, c.w = DType::u8, c.extremes = true;
  check_case(rng, c);
  // llvmpipe's planned 8 x 8 once (the cases above: its smallest tile): random values over both
  // blocks of rows and of columns (M 40, N 64 past 32) and K 270 over two blocks (its totals in
  // memory); the int32 sums and the requantized outputs
  c = Case{};
  c.N = 1, c.C = 30, c.H = c.W = 8, c.O = 40, c.o.padding = {1, 1, 1, 1}, c.plan = true, c.dequant = false;
  check_case(rng, c);
}

// llvmpipe's loop limit lowered: K split over launches (int32 sums added to, ACCUM) and the
// dequantized forms through those sums; the columns of im2col past the SSBO limit (the implicit
// GEMM has none: one dispatch); more images than one dispatch's workgroups along z.
TEST(IConvImplicit, LimitsSplitK) {
  GLT_RNG(rng);
  {
    ScopedLoopLimit lim(1000);  // at most 9 K tiles of 16 per launch: 576 in 4 or more launches
    Case c;
    c.C = 64, c.H = 5, c.W = 6, c.O = 6, c.o.padding = {1, 1, 1, 1}, c.dispatches = kSplit;
    check_case(rng, c);
  }
  {
    ScopedSsboLimit lim(400);  // im2col's 2 x 9 x 25 = 450 bytes per image would not fit
    Case c;
    c.N = 3, c.C = 2, c.H = c.W = 5, c.O = 1, c.o.padding = {1, 1, 1, 1};
    check_case(rng, c);
  }
  // More batch entries than one dispatch's z: 1001 images of one 2 x 2 plane under dispatches
  // lowered to 1000 workgroups per axis (the split of 65537 at llvmpipe's own limit, the same
  // path, ran three kernels over 65537 workgroups: 15 CPU-s of llvmpipe).
  const ScopedDispatchLimit limit(1000);  // restored however the case ends (a failed ASSERT, an exception)
  Case c;
  c.N = 1001, c.C = 1, c.H = c.W = 2, c.O = 1, c.o.padding = {1, 1, 1, 1}, c.dispatches = 2;  // z split in two
  check_case(rng, c);
}

// The GPUs' tilings on any device: 64 x 64 tiles of 4 x 4 per invocation (the default), 8 x 4
// (GLTENSOR_IMATMUL_RB=2), 64 x 128 of 8 x 8 with the totals in memory and in registers; the
// totals in shared memory (GLTENSOR_IMATMUL=shared) with 4 x 4, 8 x 4 and K tiles of 8
// (GLTENSOR_IMATMUL_BK=8), 8 x 8 (where the device's shared memory holds them) and 8 x 8 in
// registers with K tiles of 8; 4 x 8 on 64 x 128 (GLTENSOR_IMATMUL_RB=1) with the totals in
// registers; 8 x 8 on 64 x 64 (GLTENSOR_IMATMUL_BLOCKS=2), totals in shared memory; 8 x 8 on
// 64 x 128 with two K slices (GLTENSOR_IMATMUL_SLICES=2), K tiles of 8 and 16; 4 x 8 on 64 x 128
// with two K slices (each slice's 256 invocations hand over 8 accumulators: all of Bs; 48 KiB of
// shared memory: GPUs only). A's tile swizzled (A_SWIZZLE) as planned (the GPUs' 4 x 4: forms 0
// and 4), and forms 13-17 with it set (Settings::imatmul_swizzle): 8 x 4, 8 x 8 (64 x 128, 64 x 64), 4 x 8,
// 8 x 8 with two K slices (K tiles of 8), 4 x 8 with two K slices; 18: 4 x 4 on 64 x 64
// unswizzled. Form 0 (the plan's choice for these few tiles) is 4 x 4 on 64 x 64 tiles with two
// K slices (32 KiB of shared memory); 19: 4 x 4 on 64 x 64 with one (GLTENSOR_IMATMUL_TILE=64, the
// plan's choice for more tiles), 20: 4 x 4 on 64 x 32 with one K slice (GLTENSOR_IMATMUL_TILE=32),
// 21: 4 x 4 on 64 x 32 with two K slices. Forms 0, 20 and 21 run in GpuFewTiles (the few-tile
// forms: positions and taps not multiples of 4, several blocks of rows, K over several exact
// blocks per slice and split over launches, requantized and dequantized, against im2col), not
// here again at this test's shape (its row words, its three blocks: the same loads and epilogue
// code, run there by the other shapes).
TEST(IConvImplicit, GpuTilings) {
  GLT_RNG(rng);
  for (int f = 0; f < 22; ++f) {
    if (f == 0 || f == 20 || f == 21) continue;  // GpuFewTiles' three forms, at its five shapes
    // Software rasterizers: not form 14 (A swizzled on 64 x 128 tiles of 8 x 8 with the totals in memory;
    // 0.9 CPU-s of LLVM): the swizzle on 8 x 8 runs in forms 15 and 17, on 64 x 128 in 16, and its
    // flags, flag pairs and tile x flag pairs elsewhere in the pass (suite41b, bench/RESULTS.md)
    if (f == 14 && device().adapter().software) continue;
    SCOPED_TRACE("form " + std::to_string(f));
    const bool own = f < 13 || f > 18;  // the form as its settings give it
    const int form = own ? f : std::array<int, 6>{1, 2, 9, 8, 10, 19}[static_cast<std::size_t>(f - 13)];
    ScopedSettings s;
    s->imatmul_swizzle = own ? -1 : f < 18 ? 1 : 0;  // forced for forms 13 to 18
    s->matmul_kernel = MatmulKernelSetting::gpu;
    if (form == 19) s->imatmul_tile = 64;
    if (form == 20 || form == 21) s->imatmul_tile = 32;
    if (form == 21) s->imatmul_slices = 2;
    if (form == 1 || form == 5) s->imatmul_rb = 2;
    if (form == 2 || form == 3 || form == 6 || form == 7) s->imatmul_tile = 128;
    if (form == 3 || form == 7) s->imatmul = IMatmulSetting::regs;
    if (form >= 4 && form <= 6) s->imatmul = IMatmulSetting::shared;
    if (form >= 5 && form <= 7) s->imatmul_bk = 8;
    if (form == 8) s->imatmul_tile = 128, s->imatmul_rb = 1, s->imatmul = IMatmulSetting::regs;
    if (form == 9) s->imatmul_blocks = 2, s->imatmul = IMatmulSetting::shared;
    if (form == 10 || form == 11) s->imatmul_tile = 128, s->imatmul_slices = 2, s->imatmul_bk = form == 10 ? 8 : 16;
    if (form == 12) s->imatmul_tile = 128, s->imatmul_rb = 1, s->imatmul_slices = 2, s->imatmul = IMatmulSetting::regs;
    Case c;
    c.N = 2, c.C = 60, c.H = 9, c.W = 12, c.O = 70, c.o.padding = {1, 1, 1, 1};  // K 540: three blocks
    c.dequant = false;  // the exact sums and the requantizing epilogue (float outputs: the tests above)
    // Forms 13-18 differ from their forms (1, 2, 9, 8, 10, 19) by A's tile in shared memory only
    // (A_SWIZZLE), which the exact sums read whole; the epilogue after it is the same code: their
    // requantizing programs would test nothing new (6 programs, about 1 s each on llvmpipe).
    // On software rasterizers only form 8 (4 x 8 with K in pairs: K_PAIRS) requantizes: every flag
    // and flag pair of the other forms' requantizing programs runs in the other tests and entries of
    // the pass (scripts/program_flags.py; the sums above read every form's loads and totals), and
    // K_PAIRS' epilogue pairs only here; the dequantizing totals in memory (operand 10) no longer on
    // 64 x 128 tiles on llvmpipe (store_row's epilogue: the same code at every tile). Sabotage: form
    // 8's requantized value moved by 4 (K_PAIRS only) fails it (suite41b, bench/RESULTS.md). GPUs
    // requantize at every form.
    c.requant = own && (!device().adapter().software || form == 8);
    check_case(rng, c);
  }
}

// The few-tile forms (4 x 4 on 64 x 64 tiles with two K slices, the GPUs' plan below kFewGroups
// 64 x 64 tiles; 64 x 32 tiles with two K slices and with one) at odd shapes: positions and taps not multiples of 4
// (bytes, the dequantized form), a 1x1 image, one K tile in two slices (slice 1 past K: zero products), K at its
// extremes (sums past 2^24), K split over launches under a lowered loop limit (int32 sums added to), and the
// dequantized outputs.
TEST(IConvImplicit, GpuFewTiles) {
  GLT_RNG(rng);
  for (int form = 0; form < 3; ++form) {  // the plan's; 64 x 32 with two K slices, with one
    SCOPED_TRACE("form " + std::to_string(form));
    ScopedSettings s;
    s->matmul_kernel = MatmulKernelSetting::gpu;
    if (form > 0) s->imatmul_tile = 32, s->imatmul_slices = form == 1 ? 2 : 0;
    Case c;
    c.N = 1, c.C = 7, c.H = 7, c.W = 9, c.O = 5, c.o.padding = {1, 1, 1, 1};  // 63 positions, K 63
    check_case(rng, c);
    c = Case{};
    c.N = 1, c.C = 1, c.H = c.W = 1, c.O = 3, c.o.padding = {1, 1, 1, 1};  // K 9: one K tile
    check_case(rng, c);
    c = Case{};
    c.N = 3, c.C = 33, c.H = 6, c.W = 8, c.O = 65, c.o.padding = {1, 1, 1, 1}, c.vs_im2col = true;  // 2 row tiles
    check_case(rng, c);
    c = Case{};  // K 2700 at its extremes: sums past 2^24, several exact blocks per slice
    c.C = 300, c.H = 4, c.W = 5, c.O = 3, c.extremes = true;
    check_case(rng, c);
    {
      ScopedLoopLimit lim(1000);
      c = Case{};
      c.C = 64, c.H = 5, c.W = 6, c.O = 6, c.o.padding = {1, 1, 1, 1}, c.dispatches = kSplit;
      check_case(rng, c);
    }
  }
}

TEST(IConvImplicit, Setting) {
  EXPECT_EQ(parse_iconv_gemm(""), IConvGemmSetting::choose);
  EXPECT_EQ(parse_iconv_gemm("implicit"), IConvGemmSetting::implicit);
  EXPECT_EQ(parse_iconv_gemm("im2col"), IConvGemmSetting::im2col);
  EXPECT_EQ(parse_iconv_gemm("bytes"), IConvGemmSetting::bytes);
  EXPECT_THROW(parse_iconv_gemm("direct"), ValueError);
}
