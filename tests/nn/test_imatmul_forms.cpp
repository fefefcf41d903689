// The block-f32 integer matmul's forms (glsl/nn/imatmul.comp, src/nn/quant_int.cpp): the int32
// totals of K past one exact block in registers (GLTENSOR_IMATMUL=regs) or in the output's
// elements in memory (mem, the default), against exact int64 references, at the extremes where
// an f32 sum of more than one block would lose integers; and the requantizing epilogue of a QDQ
// convolution on the im2col path (QUANT: Relu / Clip and QuantizeLinear in the matmul's
// epilogue, one dispatch after im2col) against the separate ops (GLTENSOR_QCONV_REQUANT=0) and a
// float64 reference. Random inputs and zero points, odd sizes, K within one block and across
// several, K split over launches (a lowered loop limit), images in pieces (a lowered SSBO limit),
// more images than one dispatch's workgroups.
#include "nn/conv_ref.hpp"
#include "nn/qdq_ref.hpp"

using namespace gltensor;
using namespace gltensor::detail;
using namespace glt_test;

namespace {

// f(first) under each form of the totals (GLTENSOR_IMATMUL=mem, regs, shared), and shared with K
// tiles of 8 (GLTENSOR_IMATMUL_BK=8); `first` is true for the first form only (mem). On software
// rasterizers at the smallest register tile (imatmul_smallest_tile: 4 x 4 per invocation, where
// llvmpipe plans 8 x 8), except inside imatmul_at_plan.
template <typename F>
void each_form(F f) {
  for (int bk : {0, 8})
    for (IMatmulSetting form : {IMatmulSetting::mem, IMatmulSetting::regs, IMatmulSetting::shared}) {
      if (bk && form != IMatmulSetting::shared) continue;
      SCOPED_TRACE(std::string(form == IMatmulSetting::regs  ? "totals in registers"
                               : form == IMatmulSetting::mem ? "totals in memory"
                                                             : "totals in shared memory") +
                   (bk ? ", K tiles of 8" : ""));
      ScopedSettings s;
      s->imatmul = form;
      s->imatmul_bk = bk;
      if (device().adapter().software) imatmul_smallest_tile(settings(), form);
      f(!bk && form == IMatmulSetting::mem);
    }
}

// (a - za) @ (b - zb) against the int64 reference. `extreme`: every difference +-255 (a, b at one
// end of their range, the zero points at the other; signs at random), else random values and
// zero points (za one per row, zb one per column).
void check_matmul(std::mt19937_64& rng, std::int64_t B, std::int64_t M, std::int64_t K, std::int64_t N, DType da,
                  DType db, bool extreme) {
  SCOPED_TRACE(std::to_string(B) + " x " + std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N) +
               (extreme ? " extremes" : " random"));
  const QRange ra = QRange::of(da), rb = QRange::of(db);
  std::vector<std::int32_t> a, b, za, zb;
  if (extreme) {
    std::bernoulli_distribution coin(0.5);
    a.resize(static_cast<std::size_t>(B * M * K));
    b.resize(static_cast<std::size_t>(K * N));
    for (auto& v : a) v = ra.hi;
    for (auto& v : b) v = coin(rng) ? rb.lo : rb.hi;
    za = {ra.lo};
    zb = {coin(rng) ? rb.lo : rb.hi};
  } else {
    a = q8_values(rng, static_cast<std::size_t>(B * M * K), da);
    b = q8_values(rng, static_cast<std::size_t>(K * N), db);
    za = q8_values(rng, static_cast<std::size_t>(M), da);
    zb = q8_values(rng, static_cast<std::size_t>(N), db);
  }
  const Tensor c =
      matmul_integer(ints(a, {B, M, K}, da), ints(b, {K, N}, db), ints(za, {static_cast<std::int64_t>(za.size())}, da),
                     ints(zb, {static_cast<std::int64_t>(zb.size())}, db));
  ASSERT_EQ(c.shape(), (Shape{B, M, N}));
  const auto g = c.to_int_vector();
  for (std::int64_t bi = 0; bi < B; ++bi)
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t n = 0; n < N; ++n) {
        std::int64_t s = 0;
        for (std::int64_t k = 0; k < K; ++k)
          s += std::int64_t{a[static_cast<std::size_t>((bi * M + m) * K + k)] - za[za.size() > 1 ? m : 0]} *
               (b[static_cast<std::size_t>(k * N + n)] - zb[zb.size() > 1 ? n : 0]);
        ASSERT_EQ(g[static_cast<std::size_t>((bi * M + m) * N + n)], s) << bi << "," << m << "," << n;
      }
}

// matmul_dequant over K past one block (DEQUANT with the totals in operand 10 in memory).
void check_dequant(std::mt19937_64& rng, std::int64_t M, std::int64_t K, std::int64_t N) {
  SCOPED_TRACE("dequant " + std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N));
  const auto a = q8_values(rng, static_cast<std::size_t>(M * K), DType::u8);
  const auto b = q8_values(rng, static_cast<std::size_t>(K * N), DType::i8);
  const std::int32_t za = q8_values(rng, 1, DType::u8)[0];
  const auto sb = uniform(rng, static_cast<std::size_t>(N), 0.001f, 0.01f);
  const auto bv = uniform(rng, static_cast<std::size_t>(N), -1.f, 1.f);
  const float sa = 0.02f;
  const IntDequant dq{full(device(), {1}, sa), Tensor::from_host(device(), sb, {N}),
                      Tensor::from_host(device(), bv, {N}), false};
  const Tensor y =
      matmul_dequant(ints(a, {M, K}, DType::u8), ints(b, {K, N}, DType::i8), ints({za}, {1}, DType::u8), Tensor(), dq);
  ASSERT_EQ(y.shape(), (Shape{M, N}));
  const auto g = y.to_vector();
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t n = 0; n < N; ++n) {
      std::int64_t s = 0;
      for (std::int64_t k = 0; k < K; ++k)
        s += std::int64_t{a[static_cast<std::size_t>(m * K + k)] - za} * b[static_cast<std::size_t>(k * N + n)];
      const double want = static_cast<double>(s) * static_cast<double>(sa * sb[static_cast<std::size_t>(n)]) +
                          bv[static_cast<std::size_t>(n)];
      ASSERT_NEAR(g[static_cast<std::size_t>(m * N + n)], want, 1e-6 * (std::abs(want) + 1)) << m << "," << n;
    }
}

}  // namespace

// Both forms of the totals: exact where one block's f32 sum is exact and the whole K's is not
// (K = 1100 extremes: 1100 * 65025 > 2^26), within one block (K 256: no totals), across blocks
// with a partial last one (257, 513), on the 64 x 64 tiles (4 x 4 or 8 x 8 per invocation) and
// the 64 x 128 ones (256 workgroups), with K split over launches of several blocks each.
TEST(IMatmulForms, TotalsExact) {
  GLT_RNG(rng);
  // Signedness, byte loads and zero-point layouts are the same code under every form of the
  // totals: the first form runs them all, the others the cases whose totals differ.
  each_form([&](bool first) {
    // Partial last blocks: 257 and 513 (bytes of A: K % 4 != 0) under the first form, 260 and 516
    // (words of A, the same blocks and tiles) under the others: A's loads are the same code under
    // every form of the totals, and each form's flushes see the same partial blocks.
    for (std::int64_t K : {256, first ? 257 : 260, first ? 513 : 516, 1100}) {
      check_matmul(rng, 1, 65, K, 130, DType::u8, DType::i8, true);
      if (first) check_matmul(rng, 1, 3, K, 5, DType::i8, DType::u8, true);
    }
    // byte loads of B, per-row / column zero points; on llvmpipe its plan's 8 x 8 with the totals in
    // memory, once: random values over both blocks of rows and of columns (M 70, N 45 past 32)
    if (first) imatmul_at_plan([&] { check_matmul(rng, 1, 70, 700, 45, DType::u8, DType::i8, false); });
    imatmul_at_plan([&] { check_matmul(rng, 256, 2, 600, 8, DType::u8, DType::i8, true); });  // 64 x 128 tiles
    {
      ScopedSettings gpu;  // the GPUs' 64 x 64 tiles of 4 x 4 per invocation (A's tile swizzled)
      gpu->matmul_kernel = MatmulKernelSetting::gpu;
      gpu->imatmul_tile = Settings{}.imatmul_tile, gpu->imatmul_swizzle = Settings{}.imatmul_swizzle;
      check_matmul(rng, 1, 65, 1100, 130, DType::i8, DType::i8, true);
    }
    {
      ScopedLoopLimit lim(4300);  // launches of 640 (mem) or 800 (regs) values of K: 2 or 3 blocks each
      check_matmul(rng, 1, 5, 1500, 6, DType::u8, DType::i8, true);
      if (first) check_matmul(rng, 1, 9, 1500, 7, DType::u8, DType::u8, false);
    }
    check_dequant(rng, 70, 600, 131);
    if (first) check_dequant(rng, 3, 257, 4);
  });
}

namespace {

struct ConvCase {
  std::int64_t N = 1, C = 1, H = 1, W = 1, O = 1, K = 3;
  IntConvOptions o;
  bool every_form = true;  ///< both output types and every activation, else uint8 after Relu
};

// conv_requant on the im2col path: the requantizing epilogue in the integer matmul against the
// separate ops (GLTENSOR_QCONV_REQUANT=0) and against QuantizeLinear of the float64 reference
// (within one rounding of the dequantized value). `dispatches` (0: not checked): the fused
// form's count (im2col, unless 1x1, and the matmul with the epilogue).
void check_conv(std::mt19937_64& rng, const ConvCase& c, std::uint64_t dispatches) {
  SCOPED_TRACE("x " + to_string({c.N, c.C, c.H, c.W}) + ", w " + to_string({c.O, c.C, c.K, c.K}));
  const auto xv = q8_values(rng, static_cast<std::size_t>(c.N * c.C * c.H * c.W), DType::u8);
  const auto wv = q8_values(rng, static_cast<std::size_t>(c.O * c.C * c.K * c.K), DType::i8);
  const auto zxv = q8_values(rng, 1, DType::u8), zwv = q8_values(rng, static_cast<std::size_t>(c.O), DType::i8);
  const Tensor x = ints(xv, {c.N, c.C, c.H, c.W}, DType::u8), w = ints(wv, {c.O, c.C, c.K, c.K}, DType::i8);
  const Tensor zx = ints(zxv, {1}, DType::u8), zw = ints(zwv, {c.O}, DType::i8);
  const float sa = 1.0f / (400.0f * std::sqrt(static_cast<float>(c.C * c.K * c.K)));
  const auto sb = uniform(rng, static_cast<std::size_t>(c.O), 0.002f, 0.02f);
  const auto bv = uniform(rng, static_cast<std::size_t>(c.O), -1.f, 1.f);
  const IntDequant dq{full(device(), {1}, sa), Tensor::from_host(device(), sb, {c.O}),
                      Tensor::from_host(device(), bv, {c.O}), true};
  HostT xs{{xv.begin(), xv.end()}, {c.N, c.C, c.H, c.W}}, ws{{wv.begin(), wv.end()}, {c.O, c.C, c.K, c.K}};
  for (auto& v : xs.v) v -= zxv[0];
  for (std::size_t i = 0; i < ws.v.size(); ++i) ws.v[i] -= zwv[i / static_cast<std::size_t>(c.C * c.K * c.K)];
  Conv2dOptions fo;
  fo.stride = c.o.stride, fo.dilation = c.o.dilation, fo.padding = c.o.padding;
  Shape shape;
  const auto sums = ref_conv(xs, ws, nullptr, fo, shape);
  const std::size_t plane = static_cast<std::size_t>(shape[2] * shape[3]);
  ScopedSettings im2col;  // im2col's columns (tests/nn/test_iconv_implicit.cpp: the implicit GEMM)
  im2col->conv = ConvSetting::im2col;
  im2col->iconv_gemm = IConvGemmSetting::im2col;
  for (const RequantForm& f : requant_forms(c.every_form)) {
    SCOPED_TRACE(f.name());
    const IntRequant rq = f.requant();
    device().synchronize();
    const std::uint64_t d0 = device().dispatch_count();
    const Tensor q = conv_requant(x, w, zx, zw, c.o, dq, rq);
    const std::uint64_t ran = device().dispatch_count() - d0;
    Tensor qs;
    {
      ScopedSettings sep;  // the separate ops, with the default form of the totals (llvmpipe's: in memory)
      sep->qconv_requant = false;
      sep->imatmul = device().adapter().software ? IMatmulSetting::mem : Settings{}.imatmul;
      sep->imatmul_bk = Settings{}.imatmul_bk, sep->imatmul_rb = Settings{}.imatmul_rb;
      qs = conv_requant(x, w, zx, zw, c.o, dq, rq);
    }
    ASSERT_EQ(q.dtype(), f.out);
    ASSERT_EQ(q.shape(), shape);
    if (dispatches) {
      EXPECT_EQ(ran, dispatches) << "im2col and the matmul with the requantizing epilogue";
    }
    const auto a = q.to_int_vector(), b = qs.to_int_vector();
    for (std::size_t i = 0; i < a.size(); ++i) {
      // NVIDIA's compiler may contract the epilogue's a * b + c differently in the two kernels
      // (an FMA: 1 ulp, which may move a tie); llvmpipe: the same bits
      ASSERT_LE(std::abs(a[i] - b[i]), 1) << i << " (fused, separate ops)";
      const std::size_t oc = (i / plane) % static_cast<std::size_t>(c.O);
      const double v = sums[i] * static_cast<double>(sa * sb[oc]) + bv[oc];
      ASSERT_NEAR(a[i], f.quantize(v), 1) << i << " v=" << v;  // one rounding of v
    }
    if (device().caps().renderer.find("llvmpipe") != std::string::npos) {
      EXPECT_EQ(a, b);
    }
  }
}

}  // namespace

// The requantizing epilogue: whole words of 8-bit output (positions % 4 == 0), K within one block
// (C 28, 3x3: 252) and across several (C 64: 576), 1x1 filters (x read as the columns), several
// tiles of output channels and positions; positions % 4 != 0 and grouped convolutions take the
// separate ops; images in pieces; more images than one dispatch's workgroups along z.
TEST(IMatmulForms, ConvRequantEpilogue) {
  GLT_RNG(rng);
  each_form([&](bool first) {  // every epilogue under one form of the totals, uint8 after Relu under the others
    ConvCase base;
    base.every_form = first;
    ConvCase c = base;
    c.N = 2, c.C = 5, c.H = 6, c.W = 6, c.O = 7, c.o.padding = {1, 1, 1, 1};
    check_conv(rng, c, 2);
    c.C = 64, c.H = 10, c.W = 14, c.O = 70;  // K 576: three blocks; two tiles of channels
    check_conv(rng, c, 2);
    c = base;
    c.N = 2, c.C = 300, c.H = 3, c.W = 4, c.O = 5, c.K = 1;  // 1x1: K 300
    check_conv(rng, c, 1);
    if (!first) return;  // the rest: the epilogue's geometry, the same code under every form of the totals
    c = base;
    c.N = 1, c.C = 28, c.H = c.W = 20, c.O = 9;  // K 252: one block; several tiles of positions
    c.o.padding = {1, 1, 1, 1};
    check_conv(rng, c, 2);
    c = base;
    c.N = 1, c.C = 3, c.H = 5, c.W = 5, c.O = 4, c.o.padding = {1, 1, 1, 1};  // 25 positions: separate ops
    check_conv(rng, c, 0);
    c.o.stride = {2, 2}, c.H = c.W = 7;  // stride 2: 4 x 4 positions
    check_conv(rng, c, 2);
  });
  {
    ScopedSsboLimit lim(2200);  // 2 x 9 x 36 = 648 bytes of columns per image: pieces of 3 images
    ConvCase c;
    c.N = 5, c.C = 2, c.H = c.W = 6, c.O = 3, c.o.padding = {1, 1, 1, 1};
    check_conv(rng, c, 0);
  }
  // More batch entries than one dispatch's z: 1001 images of one 2 x 2 plane under dispatches
  // lowered to 1000 workgroups per axis (the split of 65537 images at llvmpipe's own limit, the
  // same path, ran the im2col and matmul kernels over 65537 workgroups).
  const ScopedDispatchLimit limit(1000);  // restored however the case ends
  ConvCase c;
  c.N = 1001, c.C = 1, c.H = c.W = 2, c.O = 1, c.K = 1, c.every_form = false;
  check_conv(rng, c, 0);
}
