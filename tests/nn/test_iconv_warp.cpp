// The QDQ convolution on the f32 warp kernel (glsl/nn/imatmul_warp.comp, src/nn/quant_int.cpp's
// warp_qconv: IntRequant::f32_sums): im2col's 8-bit columns times the 8-bit filter in f32 FMAs,
// requantized (none / Relu / Clip, uint8 and int8, or dequantized after) in the kernel's epilogue.
// Against float64 references of the exact sums within one rounding of the output, and against the
// exact integer path (f32_sums off) bit for bit on llvmpipe where every sum is below 2^24; sums
// past 2^24 (rounded as the float graph rounds them) within one step. Random inputs (seed
// printed), zero points random, absent, one value and one per output channel, tile edges, 1x1
// filters read in place, K past 65535; the cases the kernel does not take (groups, K or OH OW not
// multiples of 4, f32_sums off) on the exact paths. The software rasterizer plans the warp
// kernel only where GLTENSOR_MATMUL_KERNEL=warp forces it, as these tests do.
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "nn/conv_ref.hpp"
#include "nn/qdq_ref.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/storage.hpp"
#include "tensor/tensor_impl.hpp"

using namespace gltensor;
using namespace gltensor::detail;
using namespace glt_test;

namespace {

struct Case {
  std::int64_t N = 1, C = 4, H = 8, W = 8, O = 8, KH = 3, KW = 3;
  IntConvOptions o;
  DType x = DType::u8, w = DType::i8;
  bool no_zx = false, no_zw = false, zw_per = true;
  bool extremes = false;   ///< the largest differences: sums past 2^24
  bool every_form = true;  ///< both output types after every activation, else uint8 after Relu
  /// every_form's output forms in two of their four programs (the output type's range Y_I8 and the
  /// dequantized output DQ_OUT): -1 all four; 0 uint8 requantized and int8 dequantized; 1 int8
  /// requantized and uint8 dequantized (each activation in each: a uniform, not a program)
  int pair = -1;
  std::int64_t dispatches = 2;  ///< the warp path's (im2col and the GEMM; 1x1: the GEMM), 0: not checked
  bool sampled = false;         ///< float64 sums of 997 outputs only (large K and outputs)
  bool lab = false;             ///< also the lab form IntRequant::f32_columns (the same outputs)
  int splits = 0;               ///< > 0: the warp kernel with K in this many chunks (Settings::matmul_split)
  bool as_gpu = false;          ///< planned as a GPU (GLTENSOR_MATMUL_KERNEL=gpu: the integer planner's K split)
};

std::string describe(const Case& c) {
  return "x " + to_string({c.N, c.C, c.H, c.W}) + " " + dtype_name(c.x) + ", w " +
         to_string({c.O, c.C / c.o.groups, c.KH, c.KW}) + " " + dtype_name(c.w) + ", stride " +
         std::to_string(c.o.stride[0]) + ", groups " + std::to_string(c.o.groups) + (c.no_zx ? ", no zx" : "") +
         (c.no_zw    ? ", no zw"
          : c.zw_per ? ", zw per channel"
                     : ", one zw");
}

// Runs `f` with the warp kernel forced on the f32 matmul plan (the software rasterizer's plan
// takes it only so) and every other setting at its default.
// splits > 0: K in that many chunks (IW_SPLIT, then IW_SUM); as_gpu: planned as a GPU instead
// (GLTENSOR_MATMUL_KERNEL=gpu), the warp kernel and its K split left to the planners.
template <class F>
auto with_warp(F f, int splits = 0, bool as_gpu = false) {
  ScopedSettings s;
  s->matmul_kernel = as_gpu ? MatmulKernelSetting::gpu : MatmulKernelSetting::warp;
  s->matmul_split = splits;
  return f();
}

void check_case(std::mt19937_64& rng, const Case& c) {
  SCOPED_TRACE(describe(c));
  const std::int64_t G = c.o.groups, CG = c.C / G, taps = CG * c.KH * c.KW;
  // extremes: every difference at its largest magnitude
  const QConvOperands q = qconv_operands(rng, {c.N, c.C, c.H, c.W}, {c.O, CG, c.KH, c.KW}, c.x, c.w, !c.no_zx, true, 0,
                                         c.no_zw    ? 0
                                         : c.zw_per ? static_cast<std::size_t>(c.O)
                                                    : 1,
                                         c.extremes);
  const Tensor &x = q.x, &w = q.w, &zxt = q.zxt, &zw = q.zw;
  const auto& xs = q.xs;
  const auto& ws = q.ws;
  Conv2dOptions fo;
  fo.stride = c.o.stride, fo.dilation = c.o.dilation, fo.padding = c.o.padding, fo.groups = G;
  Shape shape;
  std::vector<double> sums;     // exact: int64 values in float64 (sampled: NaN but at the sampled outputs)
  std::vector<std::size_t> at;  // the outputs checked against float64 (every one unless sampled)
  if (c.sampled) {              // 997 outputs' sums written out (zero outside the image: x - zx is 0 there)
    const auto out = [](std::int64_t n, std::int64_t k, std::int64_t s, std::int64_t d, std::int64_t p0,
                        std::int64_t p1) { return (n + p0 + p1 - d * (k - 1) - 1) / s + 1; };
    const std::int64_t OH = out(c.H, c.KH, c.o.stride[0], c.o.dilation[0], c.o.padding[0], c.o.padding[2]);
    const std::int64_t OW = out(c.W, c.KW, c.o.stride[1], c.o.dilation[1], c.o.padding[1], c.o.padding[3]);
    shape = {c.N, c.O, OH, OW};
    const std::size_t P = static_cast<std::size_t>(OH * OW), O = static_cast<std::size_t>(c.O);
    sums.assign(static_cast<std::size_t>(c.N) * O * P, std::nan(""));
    for (std::size_t i = 0; i < sums.size(); i += sums.size() / 997 + 1) {
      const std::size_t n = i / P / O, o = i / P % O, p = i % P;
      const std::int64_t oh = static_cast<std::int64_t>(p) / OW, ow = static_cast<std::int64_t>(p) % OW;
      double s = 0;
      for (std::int64_t k = 0; k < c.C; ++k)
        for (std::int64_t kh = 0; kh < c.KH; ++kh)
          for (std::int64_t kw = 0; kw < c.KW; ++kw) {
            const std::int64_t ih = oh * c.o.stride[0] - c.o.padding[0] + kh * c.o.dilation[0];
            const std::int64_t iw = ow * c.o.stride[1] - c.o.padding[1] + kw * c.o.dilation[1];
            if (ih < 0 || ih >= c.H || iw < 0 || iw >= c.W) continue;
            s += xs.v[static_cast<std::size_t>(((static_cast<std::int64_t>(n) * c.C + k) * c.H + ih) * c.W + iw)] *
                 ws.v[static_cast<std::size_t>(((static_cast<std::int64_t>(o) * c.C + k) * c.KH + kh) * c.KW + kw)];
          }
      sums[i] = s;
      at.push_back(i);
    }
  } else {
    sums = ref_conv(xs, ws, nullptr, fo, shape);
    for (std::size_t i = 0; i < sums.size(); ++i) at.push_back(i);
  }
  double largest = 0;
  for (std::size_t i : at) largest = std::max(largest, std::abs(sums[i]));
  const bool exact = largest < double(1 << 24);
  if (c.extremes) {
    ASSERT_FALSE(exact) << "sums past f32's exact integers";
  }

  const float sa = (c.extremes ? 0.05f : 1.0f) / (400.0f * std::sqrt(static_cast<float>(taps)));
  const QConvDequant d = qconv_dequant(rng, sa, c.O, c.zw_per, static_cast<std::size_t>(shape[2] * shape[3]));
  const IntDequant& dq = d.dq;
  const auto ref_at = [&](std::size_t i) { return d.ref(sums, i); };
  const bool llvmpipe = device().caps().renderer.find("llvmpipe") != std::string::npos;
  for (const RequantForm& f : requant_forms(c.every_form)) {
    for (bool dq_out : {false, true}) {
      if (c.pair >= 0 && ((f.out == DType::i8) == dq_out) != (c.pair == 0)) continue;
      SCOPED_TRACE(f.name() + (dq_out ? ", dequantized" : ""));
      IntRequant rq = f.requant();
      rq.dequantize = dq_out;
      const Tensor exact_y = conv_requant(x, w, zxt, zw, c.o, dq, rq);  // f32_sums off: exact int32 sums
      rq.f32_sums = true;
      device().synchronize();
      const std::uint64_t d0 = device().dispatch_count();
      const Tensor y = with_warp([&] { return conv_requant(x, w, zxt, zw, c.o, dq, rq); }, c.splits, c.as_gpu);
      const std::uint64_t ran = device().dispatch_count() - d0;
      ASSERT_EQ(y.shape(), shape);
      ASSERT_EQ(y.dtype(), dq_out ? DType::f32 : f.out);
      if (c.dispatches) {  // (an absent x zero point: a zero-filled one; an absent w zero point: none)
        EXPECT_EQ(ran, static_cast<std::uint64_t>(c.dispatches + c.no_zx)) << "the warp path";
      }
      // the 8-bit values (dequantized: back to them through ys and zy, exact for these magnitudes)
      const auto values = [&](const Tensor& t) {
        std::vector<int> r;
        if (dq_out) {
          for (float v : t.to_vector()) r.push_back(static_cast<int>(std::lround(v / f.ys)) + f.zy);
        } else {
          for (auto v : t.to_int_vector()) r.push_back(static_cast<int>(v));
        }
        return r;
      };
      const std::vector<int> a = values(y), b = values(exact_y);
      ASSERT_EQ(a.size(), sums.size());
      for (std::size_t i : at) ASSERT_NEAR(a[i], f.quantize(ref_at(i)), 1) << i << " v=" << ref_at(i);  // one rounding
      // NVIDIA's compiler may contract the epilogue's a * b + c differently in two kernels (1 ulp)
      for (std::size_t i = 0; i < a.size(); ++i) ASSERT_LE(std::abs(a[i] - b[i]), 1) << i << " (warp, exact)";
      if (llvmpipe && exact) {
        EXPECT_EQ(a, b) << "the exact path's outputs";
      }
      if (c.lab) {  // the lab form, float32 operands converted first: the same sums, the same outputs
        rq.f32_columns = true;
        const auto l = values(with_warp([&] { return conv_requant(x, w, zxt, zw, c.o, dq, rq); }));
        if (exact) {
          EXPECT_EQ(l, a) << "f32_columns";
        }
      }
    }
  }
}

}  // namespace

// Shapes the warp kernel takes: whole 128 x 128 tiles and their edges (rows, columns and K not
// multiples of the tiles), batch (the columns' images), every operand dtype, zero points random,
// absent, per channel or one value, stride 2, dilation, asymmetric padding, filters that are not
// square, 1x1 filters read in place. The output forms pairwise (Case::pair, two of the four
// programs per case): each output range (uint8, int8) and each output kind (requantized,
// dequantized) with each operand's sign, zero points present and absent, both tile classes (64
// and 128 rows; edges) and the lab form; every activation in each (a uniform).
TEST(IConvWarp, MatchesExactAndFloat64) {
  GLT_RNG(rng);
  Case c;
  c.N = 2, c.C = 8, c.H = 16, c.W = 16, c.O = 128, c.o.padding = {1, 1, 1, 1};  // whole tiles of 256 columns
  c.lab = true, c.pair = 0;
  check_case(rng, c);
  c = Case{};
  c.C = 12, c.H = 9, c.W = 12, c.O = 20, c.o.padding = {1, 1, 1, 1};  // 108 columns, 20 rows, K 108: edges
  c.x = DType::i8, c.w = DType::u8, c.zw_per = false, c.pair = 1;
  check_case(rng, c);
  c.no_zx = true, c.no_zw = true, c.w = DType::i8, c.pair = 0;
  check_case(rng, c);
  c = Case{};
  c.N = 3, c.C = 4, c.H = 13, c.W = 15, c.O = 12, c.o.stride = {2, 2}, c.o.padding = {1, 0, 1, 2};  // 7 x 8
  c.pair = 1;
  check_case(rng, c);
  c = Case{};  // 2 x 3 filters, dilation along rows, stride 2 along rows, asymmetric padding: 8 x 6 outputs
  c.N = 2, c.C = 6, c.H = 8, c.W = 13, c.O = 12, c.KH = 2, c.KW = 3, c.o.dilation = {1, 2}, c.o.stride = {1, 2};
  c.o.padding = {1, 2, 0, 1}, c.w = DType::u8, c.zw_per = false, c.pair = 0;
  check_case(rng, c);
  c = Case{};
  c.N = 2, c.C = 36, c.H = 6, c.W = 10, c.O = 16, c.KH = c.KW = 1, c.dispatches = 1;  // 1x1: x is the columns
  c.x = DType::i8, c.lab = true, c.pair = 1;
  check_case(rng, c);
}

// The warp kernel with K in chunks (imatmul_warp.comp's IW_SPLIT: float32 partial sums per chunk,
// then IW_SUM: the chunks' sums added and requantized in one dispatch; warp_qconv's form for few
// output tiles): K 324 in 3 chunks of 112, 112 and 100 (a chunk's last K-tile ragged), 132 rows and
// 108 columns (tile edges), two images (the partial sums [chunk, image, row, column]; the scales and
// bias per output channel), against float64 and the exact path bit for bit; the output forms
// pairwise as above. Then the integer planner's own split (plan_iwarp_split), planned as a GPU:
// 64 output channels in one tile of 64 x 128, K 576 in 9 chunks of 64. Sabotage: IW_SUM's loop over the chunks
// stopped one short (`k + 1u < u_nsplit`), the row of a quad taken as q / u_N (not 4 q / u_N) or
// without `% u_M` (the second image's rows: review19) for the requantization's per-channel scale and
// bias, or each chunk's K range cut by a K-tile (matmul.glsl's p.k1): each fails it.
TEST(IConvWarp, SplitKMatchesExactAndFloat64) {
  GLT_RNG(rng);
  Case c;
  c.N = 2, c.C = 36, c.H = 9, c.W = 12, c.O = 132, c.o.padding = {1, 1, 1, 1}, c.splits = 3, c.dispatches = 3;
  c.pair = 0;
  check_case(rng, c);
  c = Case{};
  c.C = 64, c.H = 8, c.W = 16, c.O = 64, c.o.padding = {1, 1, 1, 1}, c.as_gpu = true, c.dispatches = 3;
  c.x = DType::i8, c.zw_per = false, c.every_form = false;
  check_case(rng, c);
}

// Sums past 2^24 (every difference at its largest: K 1152 x 255 x 255): rounded in f32, within
// one step of the exact outputs (llvmpipe 4 tiles of 64 x 128, GPUs 64: the software plan splits K
// below 16 tiles, a GPU's below 64: neither splits here). K past 65535 (1x1 over 65540 channels):
// the plan splits K (llvmpipe's loop limit; a GPU's 32 tiles of 128 x 128, below 64), and the warp
// path runs it in chunks (IW_SPLIT, then IW_SUM: the chunks' sums past 2^24 added in f32); one
// launch over K past 65535 on GPUs: NearTheSsboLimitPastTheLoopLimitOnGpus.
TEST(IConvWarp, LargeSums) {
  GLT_RNG(rng);
  const bool llvmpipe = device().caps().renderer.find("llvmpipe") != std::string::npos;
  // llvmpipe: the exact path's integer matmul (the reference here; K past one block, the fused
  // requantization and dequantization after its totals in memory) at 4 x 4 per invocation, not the
  // plan's 8 x 8 (GLTENSOR_IMATMUL_BLOCKS=1, totals in memory: 4 programs of 0.8-1.5 CPU-s of LLVM at
  // 0.3-0.4; suite41b, bench/RESULTS.md). Every flag and flag pair still runs in the pass, but DQ_OUT,
  // ACCUM and the dequantizing totals in memory no longer at 8 x 8 on llvmpipe (LargeSums was their
  // last 8 x 8 run there; store_row's epilogue is the same code at every tile): GPUs, their plan.
  ScopedSettings s;
  if (llvmpipe) s->imatmul_blocks = 1, s->imatmul = IMatmulSetting::mem;
  Case c;  // (GPUs: 2 x 32 tiles of 64 x 128)
  c.C = 128, c.H = c.W = llvmpipe ? 16 : 64, c.O = 128, c.o.padding = {1, 1, 1, 1}, c.extremes = true;
  c.every_form = false;
  check_case(rng, c);
  c = Case{};
  // the GPU's: 2 x 16 tiles of 128 x 128 (K % 8 != 0: not 64-row tiles; a GPU's plan splits K below 64 tiles)
  c.C = 65540, c.H = llvmpipe ? 2 : 16, c.W = llvmpipe ? 64 : 128, c.O = llvmpipe ? 64 : 256, c.KH = c.KW = 1;
  c.dispatches = 2, c.every_form = false, c.sampled = true;
  check_case(rng, c);
}

// Near the 128 MiB that llvmpipe's SSBOs allow, past the loop limit (GPUs; the warp path is forced,
// as above): a 3 x 3 filter over 7288 channels, K = 65592 (icol.comp's grid 65592 rows of words
// deep: dispatches split along y past 65535; the warp kernel over K past 65535 in one launch, its
// declared loop count past llvmpipe's limit), 16 x 120 outputs, 512 output channels (8 x 15 tiles
// of 64 x 128: a GPU's plan splits K below 64 tiles, not here): im2col's
// 8-bit columns 125.9 MB, the filter 33.6 MB, against float64 sums of 997 outputs and the exact
// int32 path over every output. GPUs only (on llvmpipe the plan splits this K under the loop limit
// and the warp path runs it in chunks, as LargeSums' K 65540 there; the grid's split:
// GridsSplitUnderALoweredDispatchLimit). Sabotage
// (H100): icol.comp's row k from gl_WorkGroupID.y (without the dispatch's group base), or the warp
// kernel's K loop cut at K = 65528, fails it.
TEST(IConvWarp, NearTheSsboLimitPastTheLoopLimitOnGpus) {
  if (device().adapter().software) GTEST_SKIP() << "GPUs only (llvmpipe: a loop limit, K in chunks)";
  GLT_RNG(rng);
  Case c;
  c.C = 7288, c.H = 16, c.W = 120, c.O = 512, c.o.padding = {1, 1, 1, 1};
  c.every_form = false, c.sampled = true;
  const std::int64_t cols = c.C * 9 * c.H * c.W;
  ASSERT_LE(cols, std::int64_t{128} << 20);
  ASSERT_GT(cols, std::int64_t{120} << 20);
  ASSERT_GT(c.C * 9, 65535);
  // the warp path's dispatches: im2col's rows of words split along y, then the GEMM
  const std::int64_t rows = device().impl()->max_groups(1);
  c.dispatches = (c.C * 9 + rows - 1) / rows + 1;
  check_case(rng, c);
}

// The warp path's dispatches split over a grid of at most 3 workgroups a dimension (im2col's rows
// of words and images, the GEMM's tiles), any device, against float64 and the exact path.
// Sabotage: icol.comp's row k from gl_WorkGroupID.y (without the dispatch's group base) fails it.
TEST(IConvWarp, GridsSplitUnderALoweredDispatchLimit) {
  GLT_RNG(rng);
  ScopedDispatchLimit limit(3);
  Case c;
  c.N = 2, c.C = 8, c.H = 16, c.W = 16, c.O = 128, c.o.padding = {1, 1, 1, 1}, c.every_form = false;
  c.dispatches = 0;  // (each launch dispatches several times)
  check_case(rng, c);
}

// icol.comp's last word pair of a row of an odd number of words (OH OW / 4 = 9) holds one word past
// the row, which its guard (`q0 + w < u_PQ`) leaves unwritten. Past any other row that word lands
// in the next row's first word, which that row's invocations write again (after it on llvmpipe, in
// order: the values cannot show it); past the last row it lands past the columns' end, in their
// buffer's slack. The columns are made in a pool buffer of sentinels (the last one released of their
// size class), and the buffer taken again after the conv (the last one released again: the
// columns') must hold them still; the outputs against float64 and the exact path. Sabotage: the
// guard removed fails it (llvmpipe).
TEST(IConvWarp, IcolStoresNothingPastItsRows) {
  GLT_RNG(rng);
  const std::int64_t C = 4, H = 6, W = 6, O = 4, P = 36;  // 3 x 3, padding 1: K 36, OH OW 36
  IntConvOptions o;
  o.padding = {1, 1, 1, 1};
  // zx 7: the word past the last row (its tap's row 7, outside the image) would be 0x07070707
  const QConvOperands q =
      qconv_operands(rng, {1, C, H, W}, {O, C, 3, 3}, DType::u8, DType::i8, true, false, 7, 1, false);
  const QConvDequant d = qconv_dequant(rng, 1.0f / (400.0f * 6.0f), O, false, P);
  const RequantForm f = requant_forms(false)[0];
  IntRequant rq = f.requant();
  const Tensor exact_y = conv_requant(q.x, q.w, q.zxt, q.zw, o, d.dq, rq);
  rq.f32_sums = true;
  const std::size_t bytes = static_cast<std::size_t>(C * 9 * P), cls = Pool::size_class(bytes);
  ASSERT_GE(cls, bytes + 4) << "slack for a word";
  constexpr std::uint8_t kSentinel = 0xa5;
  GLuint sentinel_buffer = 0;
  {
    Tensor fill = Tensor::from_host(device(), std::vector<std::uint8_t>(cls, kSentinel),
                                    {static_cast<std::int64_t>(cls)}, DType::u8);
    sentinel_buffer = fill.impl()->storage->buffer();
    (void)fill.to_int_vector();  // written before it goes back to the pool
  }
  device().synchronize();
  const std::uint64_t d0 = device().dispatch_count();
  const Tensor y = with_warp([&] { return conv_requant(q.x, q.w, q.zxt, q.zw, o, d.dq, rq); });
  ASSERT_EQ(device().dispatch_count() - d0, 2u) << "the warp path (im2col and the GEMM)";
  const Tensor again = Tensor::empty(device(), {static_cast<std::int64_t>(cls)}, DType::u8);
  ASSERT_EQ(again.impl()->storage->buffer(), sentinel_buffer)
      << "the columns took another buffer: the check would be void";
  const std::vector<std::int32_t> all = again.to_int_vector();
  const std::vector<std::int32_t> slack(all.begin() + static_cast<std::ptrdiff_t>(bytes), all.end());
  EXPECT_EQ(slack, std::vector<std::int32_t>(cls - bytes, kSentinel)) << "a store past the last row";
  Conv2dOptions fo;
  fo.padding = o.padding;
  Shape shape;
  const std::vector<double> sums = ref_conv(q.xs, q.ws, nullptr, fo, shape);
  ASSERT_EQ(y.shape(), shape);
  const std::vector<std::int32_t> a = y.to_int_vector(), b = exact_y.to_int_vector();
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], f.quantize(d.ref(sums, i)), 1) << i;
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_LE(std::abs(a[i] - b[i]), 1) << i << " (warp, exact)";
}

// Not taken (the exact paths, same results): groups, K or OH OW not multiples of 4.
TEST(IConvWarp, OtherShapesTakeTheExactPaths) {
  GLT_RNG(rng);
  Case c;
  c.C = 8, c.O = 8, c.o.groups = 2, c.o.padding = {1, 1, 1, 1}, c.dispatches = 0, c.every_form = false;
  check_case(rng, c);
  c.o.groups = 1, c.C = 3;  // K 27
  check_case(rng, c);
  c.C = 4, c.H = 7, c.W = 7;  // 49 columns
  check_case(rng, c);
}

namespace {

// Byte q % 4 of word q / 4 for q in [0, 1024): every value at every byte of a word (lane j holds
// (t + 64 j) % 256 at t = q / 4).
int byte_at(std::int64_t q) { return static_cast<int>((q / 4 + 64 * (q % 4)) % 256); }
int value_of(int byte, DType d) { return d == DType::i8 && byte > 127 ? byte - 256 : byte; }

// The requantizations checked: y_scale 1 (the difference itself) into both ranges at zero points at
// both ends (every difference in [-255, 255] inside one of them, the rest saturated), and y_scale 2
// (halves: round half to even).
struct ExactForm {
  DType out;
  int zy;
  float ys;
};
constexpr std::array<ExactForm, 6> kExactForms{{{DType::u8, 0, 1},
                                                {DType::u8, 255, 1},
                                                {DType::i8, -128, 1},
                                                {DType::i8, 127, 1},
                                                {DType::u8, 128, 2},
                                                {DType::i8, 0, 2}}};

IntRequant exact_requant(const ExactForm& f) {
  IntRequant rq{full(device(), {1}, f.ys), ints({f.zy}, {1}, f.out), Epilogue{}, f.out};
  rq.f32_sums = true;
  return rq;
}

// The warp kernel's output of (x - zx) (w - zw) (1x1 filters, unit scales, no bias) against the
// integer reference `diff(o, p)` requantized by f: every output compared.
void expect_requantized(const Tensor& x, const Tensor& w, const Tensor& zx, const Tensor& zw, const ExactForm& f,
                        const std::function<int(std::int64_t, std::int64_t)>& diff, std::vector<std::string>& wrong) {
  const std::int64_t O = w.shape()[0], P = x.shape()[2] * x.shape()[3];
  IntDequant dq{full(device(), {1}, 1.0), full(device(), {1}, 1.0), zeros(device(), {O}), true};
  const IntRequant rq = exact_requant(f);
  device().synchronize();
  const std::uint64_t d0 = device().dispatch_count();
  const Tensor y = with_warp([&] { return conv_requant(x, w, zx, zw, IntConvOptions{}, dq, rq); });
  if (const auto ran = device().dispatch_count() - d0; ran != 1) wrong.push_back(std::to_string(ran) + " dispatches");
  const auto got = y.to_int_vector();
  const int lo = f.out == DType::u8 ? 0 : -128, hi = f.out == DType::u8 ? 255 : 127;
  for (std::int64_t o = 0; o < O && wrong.size() < 8; ++o)
    for (std::int64_t p = 0; p < P; ++p) {
      const int d = diff(o, p), want = quant_ref_f64(d, f.ys, f.zy, lo, hi);
      const auto g = got[static_cast<std::size_t>(o * P + p)];
      if (g != want) {
        wrong.push_back("o " + std::to_string(o) + " p " + std::to_string(p) + ": difference " + std::to_string(d) +
                        ", y " + std::to_string(g) + ", expected " + std::to_string(want));
        break;
      }
    }
}

}  // namespace

// imatmul_warp.comp's loads (iw_diffs: bytes 0 and 2 as floats 2^23 + u, bytes 1 and 3 masked in
// place, 2^23 + 256 u, times 2^-8, each less 2^23 or 2^15 plus the zero point) and its float
// epilogue, exhaustively: every 8-bit value less every zero point of its type, at each of a word's
// four bytes, for the filter (zero points per output channel: 256 of them, 16 rows each) and for
// the image (B: its one zero point read once per invocation, KERNEL_SETUP; 256 convolutions per
// type), both signs; requantized (kExactForms: round half to even, saturation, int8 outputs packed
// from negative values) bit for bit against integer references. The other operand one-hot or an
// identity, so that each output is one difference (review18 of int8aa). 1.4 s on llvmpipe.
// Sabotage (scripts/sabotage.sh on imatmul_warp.comp), each caught here: byte 3's mask 0xff00 ->
// 0x7f00; the image's zero point read as max(z, -127) (only z = -128 wrong); roundEven(q) ->
// floor(q + 0.5) (halves rounded up).
TEST(IConvWarp, EveryByteLessEveryZeroPoint) {
  for (DType d : {DType::u8, DType::i8}) {
    SCOPED_TRACE(dtype_name(d));
    const int zlo = d == DType::u8 ? 0 : -128;
    std::vector<std::string> wrong;
    {  // the filter: 4096 rows of 64 taps, row o: zero point zlo + o / 16, bytes (o % 16) * 64 + k
      const std::int64_t O = 4096, C = 64;
      std::vector<std::int32_t> wv(static_cast<std::size_t>(O * C)), zw(static_cast<std::size_t>(O)),
          xv(static_cast<std::size_t>(C * C), 0);
      for (std::int64_t o = 0; o < O; ++o) {
        zw[static_cast<std::size_t>(o)] = zlo + static_cast<int>(o / 16);
        for (std::int64_t k = 0; k < C; ++k)
          wv[static_cast<std::size_t>(o * C + k)] = value_of(byte_at(o % 16 * 64 + k), d);
      }
      for (std::int64_t c = 0; c < C; ++c) xv[static_cast<std::size_t>(c * C + c)] = 1;  // x[c][p] = c == p
      const Tensor w = ints(wv, {O, C, 1, 1}, d), zwt = ints(zw, {O}, d);
      const Tensor x = ints(xv, {1, C, 8, 8}, DType::u8), zx = ints({0}, {1}, DType::u8);
      for (const ExactForm& f : kExactForms)
        expect_requantized(
            x, w, zx, zwt, f,
            [&](std::int64_t o, std::int64_t p) {
              return wv[static_cast<std::size_t>(o * C + p)] - zw[static_cast<std::size_t>(o)];
            },
            wrong);
      EXPECT_TRUE(wrong.empty()) << "filter: " << ::testing::PrintToString(wrong);
      wrong.clear();
    }
    // the image: x [1, 4, 32, 32], every channel's positions p holding byte_at(p), the filter the
    // identity, its zero point 0: y[o][p] = x[o][p] - zx (two forms: each difference inside one)
    std::vector<std::int32_t> xv(4 * 1024), wv(16, 0);
    for (std::size_t i = 0; i < xv.size(); ++i) xv[i] = value_of(byte_at(static_cast<std::int64_t>(i % 1024)), d);
    for (int o = 0; o < 4; ++o) wv[static_cast<std::size_t>(o * 4 + o)] = 1;
    const Tensor x = ints(xv, {1, 4, 32, 32}, d), w = ints(wv, {4, 4, 1, 1}, DType::i8);
    const Tensor zw = ints({0}, {1}, DType::i8);
    for (int z = zlo; z < zlo + 256 && wrong.empty(); ++z) {
      for (const ExactForm& f : {kExactForms[0], kExactForms[3]})
        expect_requantized(
            x, w, ints({z}, {1}, d), zw, f,
            [&](std::int64_t o, std::int64_t p) { return xv[static_cast<std::size_t>(o * 1024 + p)] - z; }, wrong);
      if (!wrong.empty()) wrong.push_back("zx " + std::to_string(z));
    }
    EXPECT_TRUE(wrong.empty()) << "image: " << ::testing::PrintToString(wrong);
  }
}
