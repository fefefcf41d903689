// int8 tensors and the quantization kernels of the model runtime (src/nn/quant_int.hpp):
// QuantizeLinear / DequantizeLinear (per tensor, per axis, blocked; ties, saturation, NaN),
// requantization, DynamicQuantizeLinear's parameters, and the integer matmul and convolution
// against exact int64 references, with their split paths under a lowered loop limit.
#include <cmath>
#include <optional>

#include "nn/conv_ref.hpp"
#include "nn/qdq_ref.hpp"

using namespace gltensor;
using namespace gltensor::detail;
using namespace glt_test;

namespace {

std::vector<std::int32_t> got_ints(const Tensor& t) { return t.to_int_vector(); }

// ONNX QuantizeLinear on one value (float64 division, round half to even, saturation).
int quant_ref(float x, float s, int z, int lo, int hi) {
  if (std::isnan(x)) return z;
  const double v = std::nearbyint(static_cast<double>(static_cast<float>(x / s))) + z;  // default mode: to even
  return static_cast<int>(std::clamp(v, static_cast<double>(lo), static_cast<double>(hi)));
}

}  // namespace

TEST(Int8, UploadDownloadCastAndViews) {
  GLT_RNG(rng);
  for (std::size_t n : {0u, 1u, 3u, 4u, 5u, 1027u}) {
    auto v = uniform_int(rng, n, -128, 127);
    Tensor t = ints(v, {static_cast<std::int64_t>(n)}, DType::i8);
    EXPECT_EQ(t.dtype(), DType::i8);
    EXPECT_EQ(got_ints(t), v);
    auto f = t.to(DType::f32).to_vector();
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(f[i], static_cast<float>(v[i])) << i;
    EXPECT_EQ(got_ints(t.to(DType::f32).to(DType::i8)), v);
    EXPECT_EQ(got_ints(t.to(DType::i32)), v);
    if (n > 3) {  // a view from an odd offset, made contiguous
      Tensor s = t.narrow(0, 1, static_cast<std::int64_t>(n) - 2).contiguous();
      EXPECT_EQ(got_ints(s), std::vector<std::int32_t>(v.begin() + 1, v.end() - 1));
    }
  }
  EXPECT_STREQ(dtype_name(DType::i8), "int8");
  EXPECT_EQ(itemsize(DType::i8), 1u);
  EXPECT_EQ(promote_types(DType::i8, DType::u8), DType::i32);
  EXPECT_EQ(promote_types(DType::i8, DType::bool_), DType::i8);
  EXPECT_EQ(promote_types(DType::i8, DType::f16), DType::f16);
  EXPECT_NE(ints({1, -2}, {2}, DType::i8).repr().find("int8"), std::string::npos);
}

TEST(Quant, QuantizePerTensorTiesSaturationNaN) {
  GLT_RNG(rng);
  for (DType d : {DType::u8, DType::i8}) {
    const QRange r = QRange::of(d);
    const float s = 0.5f;
    const int z = d == DType::u8 ? 128 : -3;
    for (std::size_t n : {0u, 1u, 7u, 4097u}) {
      auto x = uniform(rng, n, -100, 100);
      for (std::size_t i = 0; i < n; i += 3) x[i] = std::round(x[i] * 4) / 4;  // k / 4: ties of x / 0.5 at k + .5
      sprinkle_specials(x);
      Tensor y =
          quantize_linear(Tensor::from_host(device(), x, {static_cast<std::int64_t>(n)}),
                          Tensor::from_host(device(), std::vector<float>{s}, {1}), ints({z}, {1}, d), QAxis{}, d, r);
      ASSERT_EQ(y.dtype(), d);
      auto g = got_ints(y);
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(g[i], quant_ref(x[i], s, z, r.lo, r.hi)) << i << " x=" << x[i];
    }
  }
  // int4 range, exact ties: 2.5 -> 2, 3.5 -> 4, -2.5 -> -2, 100 -> 7, -100 -> -8.
  Tensor y = quantize_linear(Tensor::from_host(device(), std::vector<float>{2.5f, 3.5f, -2.5f, 100.f, -100.f}, {5}),
                             Tensor::from_host(device(), std::vector<float>{1.f}, {1}), Tensor(), QAxis{}, DType::i8,
                             QRange::int4());
  EXPECT_EQ(got_ints(y), (std::vector<std::int32_t>{2, 4, -2, 7, -8}));
}

TEST(Quant, PerAxisAndBlockedRoundTrip) {
  GLT_RNG(rng);
  const Shape xs{3, 5, 7};
  const std::int64_t n = numel_of(xs);
  auto x = uniform(rng, static_cast<std::size_t>(n), -4, 4);
  Tensor xt = Tensor::from_host(device(), x, xs);
  // Per axis 1: scale [5]; blocked along axis 2 with block 3: scale [3, 5, 3].
  for (int blocked = 0; blocked < 2; ++blocked) {
    const Shape ss = blocked ? Shape{3, 5, 3} : Shape{5};
    const std::size_t ns = static_cast<std::size_t>(numel_of(ss));
    auto sc = uniform(rng, ns, 0.01f, 0.1f);
    auto zp = uniform_int(rng, ns, -20, 20);
    const QAxis ax = blocked ? QAxis{2, 3} : QAxis{1, 0};
    Tensor st = Tensor::from_host(device(), sc, ss), zt = ints(zp, ss, DType::i8);
    auto idx = [&](std::int64_t e) {
      const std::int64_t k = e % 7, c = (e / 7) % 5, o = e / 35;
      return static_cast<std::size_t>(blocked ? (o * 5 + c) * 3 + k / 3 : c);
    };
    auto q = got_ints(quantize_linear(xt, st, zt, ax, DType::i8, QRange::of(DType::i8)));
    auto dq = dequantize_linear(ints(q, xs, DType::i8), st, zt, ax).to_vector();
    for (std::int64_t e = 0; e < n; ++e) {
      const std::size_t p = idx(e);
      const int want = quant_ref(x[e], sc[p], zp[p], -128, 127);
      ASSERT_EQ(q[e], want) << e;
      ASSERT_EQ(dq[e], static_cast<float>((want - zp[p]) * static_cast<double>(sc[p]))) << e;
    }
  }
  EXPECT_THROW(quantize_linear(xt, Tensor::from_host(device(), std::vector<float>(4, 1.f), {4}), Tensor(), QAxis{1, 0},
                               DType::u8, QRange{}),
               ShapeError);
  EXPECT_THROW(dequantize_linear(xt, Tensor::from_host(device(), std::vector<float>{1.f}, {1}), Tensor(), QAxis{}),
               DTypeError);
}

TEST(Quant, RequantizeWithBias) {
  GLT_RNG(rng);
  const Shape s{2, 3, 5};
  auto acc = uniform_int(rng, 30, -100000, 100000);
  auto bias = uniform_int(rng, 3, -5000, 5000);
  auto m = uniform(rng, 3, 1e-4f, 2e-3f);
  Tensor y = requantize(ints(acc, s, DType::i32), Tensor::from_host(device(), m, {3}), ints({7}, {1}, DType::u8),
                        ints(bias, {3}, DType::i32), QAxis{1, 0}, DType::u8, "test");
  auto g = got_ints(y);
  for (std::size_t e = 0; e < 30; ++e) {
    const std::size_t c = (e / 5) % 3;
    const float v = static_cast<float>(acc[e] + bias[c]) * m[c];
    ASSERT_EQ(g[e], static_cast<int>(std::clamp(std::nearbyint(v) + 7.0, 0.0, 255.0))) << e;
  }
}

TEST(Quant, DynamicQuantParams) {
  GLT_RNG(rng);
  for (auto [lo, hi] : {std::pair{-3.f, 5.f}, std::pair{0.5f, 2.f}, std::pair{-4.f, -1.f}}) {
    auto x = uniform(rng, 101, lo, hi);
    auto [s, z] = dynamic_quant_params(Tensor::from_host(device(), x, {101}));
    const float mn = std::min(0.f, *std::min_element(x.begin(), x.end()));
    const float mx = std::max(0.f, *std::max_element(x.begin(), x.end()));
    const float scale = (mx - mn) / 255.f;
    EXPECT_FLOAT_EQ(s.to_vector()[0], scale);
    EXPECT_EQ(z.to_int_vector()[0], static_cast<int>(std::clamp(std::nearbyint(-mn / scale), 0.f, 255.f)));
  }
}

namespace {

// matmul_integer of the given values against the int64 reference; zero points of dtype dz
// (default: the operand's own type).
void check_matmul_values(const std::vector<std::int32_t>& a, const Shape& as, const std::vector<std::int32_t>& b,
                         const Shape& bs, const std::vector<std::int32_t>& za, const std::vector<std::int32_t>& zb,
                         DType da, DType db, std::optional<DType> dz = std::nullopt) {
  const std::int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  const std::int64_t BA = numel_of(as) / std::max<std::int64_t>(M * K, 1),
                     BB = numel_of(bs) / std::max<std::int64_t>(K * N, 1);
  const bool za_row = za.size() > 1, zb_col = zb.size() > 1;
  Tensor c = matmul_integer(ints(a, as, da), ints(b, bs, db),
                            ints(za, {static_cast<std::int64_t>(za.size())}, dz.value_or(da)),
                            ints(zb, {static_cast<std::int64_t>(zb.size())}, dz.value_or(db)));
  ASSERT_EQ(c.dtype(), DType::i32);
  const std::int64_t B = std::max(BA, BB);
  ASSERT_EQ(c.numel(), B * M * N);
  auto g = got_ints(c);
  for (std::int64_t bi = 0; bi < B; ++bi)
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t n = 0; n < N; ++n) {
        std::int64_t s = 0;
        for (std::int64_t k = 0; k < K; ++k)
          s += (a[((BA > 1 ? bi : 0) * M + m) * K + k] - za[za_row ? m : 0]) *
               (b[((BB > 1 ? bi : 0) * K + k) * N + n] - zb[zb_col ? n : 0]);
        ASSERT_EQ(g[(bi * M + m) * N + n], s) << bi << "," << m << "," << n << " of " << M << "x" << K << "x" << N;
      }
}

void check_matmul(std::mt19937_64& rng, const Shape& as, const Shape& bs, DType da, DType db, bool per_row) {
  const std::int64_t M = as[as.size() - 2], N = bs.back();
  const QRange ra = QRange::of(da), rb = QRange::of(db);
  auto a = uniform_int(rng, static_cast<std::size_t>(numel_of(as)), ra.lo, ra.hi);
  auto b = uniform_int(rng, static_cast<std::size_t>(numel_of(bs)), rb.lo, rb.hi);
  auto za = uniform_int(rng, per_row ? static_cast<std::size_t>(M) : 1, ra.lo, ra.hi);
  auto zb = uniform_int(rng, per_row ? static_cast<std::size_t>(N) : 1, rb.lo, rb.hi);
  check_matmul_values(a, as, b, bs, za, zb, da, db);
}

// Every difference at its extreme, |a - za| = |b - zb| = 255 (a at one end of its range, za at
// the other; likewise b), with the sign of each product chosen by `sign`: +1 all positive, -1
// all negative, 0 random (ends picked at random per element, zero points fixed).
// `batch` > 1: A [batch, M, K] against one B (enough workgroups for the 64 x 128 tiles).
void check_extremes(std::mt19937_64& rng, std::int64_t M, std::int64_t K, std::int64_t N, DType da, DType db, int sign,
                    std::int64_t batch = 1) {
  const QRange ra = QRange::of(da), rb = QRange::of(db);
  std::vector<std::int32_t> a(static_cast<std::size_t>(batch * M * K)), b(static_cast<std::size_t>(K * N));
  std::bernoulli_distribution coin(0.5);
  for (auto& v : a) v = sign == 0 && coin(rng) ? ra.lo : ra.hi;
  for (auto& v : b) v = sign == 0 && coin(rng) ? rb.lo : (sign < 0 ? rb.lo : rb.hi);
  check_matmul_values(a, batch > 1 ? Shape{batch, M, K} : Shape{M, K}, b, {K, N}, {ra.lo}, {sign < 0 ? rb.hi : rb.lo},
                      da, db);
}

}  // namespace

// On software rasterizers the block-f32 kernel's cases below run at its smallest register tile
// (ScopedSmallestTile, nn/qdq_ref.hpp: 4 x 4 per invocation, the same flags), llvmpipe's planned
// 8 x 8 on 64 x 128 tiles in the 256-workgroup cases (imatmul_at_plan).
TEST(Quant, MatmulIntegerExact) {
  GLT_RNG(rng);
  const ScopedSmallestTile small;
  check_matmul(rng, {1, 1}, {1, 1}, DType::u8, DType::u8, false);
  check_matmul(rng, {17, 33}, {33, 19}, DType::u8, DType::i8, true);
  check_matmul(rng, {3, 5, 40}, {40, 7}, DType::i8, DType::i8, false);    // batch x one matrix
  check_matmul(rng, {1, 6, 9}, {4, 9, 18}, DType::u8, DType::u8, false);  // broadcast A
  check_matmul(rng, {2, 0, 9}, {9, 5}, DType::u8, DType::u8, false);      // empty
  check_matmul(rng, {4, 300}, {300, 5}, DType::i8, DType::u8, true);
  check_matmul(rng, {2, 130, 70}, {2, 70, 129}, DType::u8, DType::i8, true);  // several 64 x 64 tiles
  // 256 workgroups: the block-f32 kernel's 64 x 128 tiles, with byte loads (K, N odd) and words
  imatmul_at_plan([&] {
    check_matmul(rng, {256, 3, 21}, {256, 21, 130}, DType::u8, DType::i8, false);
    check_matmul(rng, {256, 5, 64}, {64, 8}, DType::i8, DType::u8, false);
  });
  {
    ScopedSettings gpu;  // the GPUs' choice on llvmpipe too: 64 x 64 tiles of 256 invocations (4 x 4 each)
    gpu->matmul_kernel = MatmulKernelSetting::gpu;
    gpu->imatmul = Settings{}.imatmul, gpu->imatmul_tile = Settings{}.imatmul_tile;
    gpu->imatmul_swizzle = Settings{}.imatmul_swizzle;
    check_matmul(rng, {2, 130, 70}, {2, 70, 129}, DType::u8, DType::i8, true);
    check_extremes(rng, 65, 513, 130, DType::i8, DType::u8, 0);
  }
  {
    ScopedLoopLimit lim(1000);  // split K: 2 tiles of 16 per launch
    check_matmul(rng, {5, 300}, {300, 6}, DType::u8, DType::i8, true);
  }
  // 127 * 127 * K past 2^24 (float would lose it): K = 2000, all extremes.
  std::vector<std::int32_t> a(2000, -128), b(2000, -128);
  Tensor c = matmul_integer(ints(a, {1, 2000}, DType::i8), ints(b, {2000, 1}, DType::i8), Tensor(), Tensor());
  EXPECT_EQ(got_ints(c)[0], 2000 * 128 * 128);
  EXPECT_THROW(matmul_integer(ints({1, 2}, {1, 2}, DType::u8), ints({1, 2, 3}, {3, 1}, DType::u8), Tensor(), Tensor()),
               ShapeError);
}

// The int32 kernel (IMATMUL, quant_int.comp: int32 zero points) loads its tiles' edges from no
// element past an operand's end: rows, columns and k clamped into the operand (and the launch's
// K chunk), the values past them replaced by 0 with selects. A [M, K], B [K, N] and the per-row /
// per-column zero points are the leading part of wider storages whose elements just past them
// hold extremes (A 255, B -128, zero points 100000): a tile's k past K whose A and B loads kept
// those values would add their products to every output. M, N past one 64 x 64 tile by 1 and 3,
// K ending mid-tile, also split into chunks by a lowered loop limit (the chunk's end clamped).
// Sabotage: both selects of the A and B tiles dropped, or the k clamp one short.
TEST(Quant, MatmulIntegerEdgesPastTheEnd) {
  GLT_RNG(rng);
  const std::int64_t M = 65, K = 37, N = 67;
  auto a = uniform_int(rng, static_cast<std::size_t>((M + 1) * K), 0, 255);
  auto b = uniform_int(rng, static_cast<std::size_t>((K + 16) * N), -128, 127);
  auto za = uniform_int(rng, static_cast<std::size_t>(M + 1), -300, 300);
  auto zb = uniform_int(rng, static_cast<std::size_t>(N + 1), -300, 300);
  std::fill(a.begin() + M * K, a.end(), 255);
  std::fill(b.begin() + K * N, b.end(), -128);
  za[M] = zb[N] = 100000;
  const Tensor ta = ints(a, {M + 1, K}, DType::u8).narrow(0, 0, M),
               tb = ints(b, {K + 16, N}, DType::i8).narrow(0, 0, K);
  const Tensor tza = ints(za, {M + 1}, DType::i32).narrow(0, 0, M), tzb = ints(zb, {N + 1}, DType::i32).narrow(0, 0, N);
  std::vector<std::int64_t> ref(static_cast<std::size_t>(M * N));
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t k = 0; k < K; ++k)
        ref[static_cast<std::size_t>(m * N + n)] +=
            std::int64_t(a[static_cast<std::size_t>(m * K + k)] - za[static_cast<std::size_t>(m)]) *
            (b[static_cast<std::size_t>(k * N + n)] - zb[static_cast<std::size_t>(n)]);
  for (std::uint64_t limit : {0, 600}) {  // 600: K in chunks of 16 (one tile per launch)
    SCOPED_TRACE("loop limit " + std::to_string(limit));
    ScopedLoopLimit lim(limit);
    const auto g = got_ints(matmul_integer(ta, tb, tza, tzb));
    ASSERT_EQ(g.size(), ref.size());
    for (std::size_t i = 0; i < g.size(); ++i) ASSERT_EQ(g[i], ref[i]) << "[" << i / N << ", " << i % N << "]";
  }
}

// The block-f32 kernel sums kIntBlockK = 256 values of K exactly in f32 (256 * 255^2 < 2^24):
// K around the block (255, 256, 257, 513) with every product at +-65025. The first sums past
// 2^24 are 259 such products, and a block is a whole number of the kernel's 16-value K tiles:
// any longer block (272, ...) loses odd integers past 2^24 here (sabotage-checked with 512 and 272).
TEST(Quant, MatmulIntegerBlockBoundary) {
  GLT_RNG(rng);
  const ScopedSmallestTile small;  // llvmpipe: 4 x 4 per invocation, its plan's 8 x 8 in the last case
  for (std::int64_t K : {255, 256, 257, 272, 513, 1100}) {
    SCOPED_TRACE("K = " + std::to_string(K));
    check_extremes(rng, 3, K, 5, DType::u8, DType::i8, -1);    // (255 - 0) * (-128 - 127)
    check_extremes(rng, 2, K, 8, DType::i8, DType::i8, +1);    // (127 + 128) * (127 + 128), B as words
    check_extremes(rng, 1, K, 1, DType::u8, DType::u8, +1);    // (255 - 0) * (255 - 0)
    check_extremes(rng, 65, K, 130, DType::i8, DType::u8, 0);  // random signs, several tiles
  }
  imatmul_at_plan([&] { check_extremes(rng, 2, 513, 8, DType::u8, DType::i8, -1, 256); });  // 64 x 128 (256 groups)
  // Zero points wider than 8 bits (int32): the int32 kernel, exact although |a - za| > 255.
  check_matmul_values(std::vector<std::int32_t>(300, 255), {1, 300}, std::vector<std::int32_t>(300 * 3, 0), {300, 3},
                      {-1000}, {300}, DType::u8, DType::u8, DType::i32);
}

// matmul_dequant / conv_dequant: float(sum) * (sa * sb[i]) + bias[i] against float64 on the
// exact int64 sums; the fused epilogue (one block-f32 launch) and the unfused forms (K split by a
// lowered loop limit; int32 zero points; grouped convolution).
namespace {

void check_dequant(std::mt19937_64& rng, std::int64_t M, std::int64_t K, std::int64_t N, bool per_col, bool bias,
                   DType dz = DType::u8) {
  auto a = uniform_int(rng, static_cast<std::size_t>(M * K), 0, 255);
  auto b = uniform_int(rng, static_cast<std::size_t>(K * N), -128, 127);
  const int za = uniform_int(rng, 1, 0, 255)[0];
  const std::int64_t ns = per_col ? N : 1;
  const auto sb = uniform(rng, static_cast<std::size_t>(ns), 0.001f, 0.01f);
  const auto bv = uniform(rng, static_cast<std::size_t>(N), -1.f, 1.f);
  const float sa = 0.02f;
  IntDequant dq{full(device(), {1}, sa), Tensor::from_host(device(), sb, {ns}),
                bias ? Tensor::from_host(device(), bv, {N}) : Tensor(), false};
  Tensor y = matmul_dequant(ints(a, {M, K}, DType::u8), ints(b, {K, N}, DType::i8), ints({za}, {1}, dz), Tensor(), dq);
  ASSERT_EQ(y.dtype(), DType::f32);
  ASSERT_EQ(y.shape(), (Shape{M, N}));
  const auto g = y.to_vector();
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t n = 0; n < N; ++n) {
      std::int64_t s = 0;
      for (std::int64_t k = 0; k < K; ++k) s += (a[m * K + k] - za) * b[k * N + n];
      const double mult = static_cast<double>(sa * sb[per_col ? n : 0]);  // the f32 multiplier
      const double want = static_cast<double>(s) * mult + (bias ? bv[n] : 0.0);
      ASSERT_NEAR(g[m * N + n], want, 1e-6 * (std::abs(want) + 1))
          << m << "," << n << " of " << M << "x" << K << "x" << N;
    }
}

}  // namespace

TEST(Quant, MatmulDequantEpilogue) {
  GLT_RNG(rng);
  const ScopedSmallestTile small;  // llvmpipe: 4 x 4 per invocation (8 x 8 in MatmulIntegerExact)
  check_dequant(rng, 1, 1, 1, false, false);
  check_dequant(rng, 70, 300, 131, true, true);  // several tiles, byte loads of B (N % 4 != 0)
  check_dequant(rng, 5, 257, 8, false, true);
  check_dequant(rng, 3, 40, 6, true, true, DType::i32);  // int32 zero point: int32 kernel, then the ops
  {
    ScopedLoopLimit lim(1000);  // K split over launches: the unfused form
    check_dequant(rng, 5, 300, 6, true, true);
  }
  // Per output channel in the convolution (im2col and grouped), against conv_integer's sums.
  for (std::int64_t groups : {1, 2}) {
    IntConvOptions o;
    o.padding = {1, 1, 1, 1};
    o.groups = groups;
    const std::int64_t N = 2, C = 4, H = 5, O = 6;
    Tensor x = ints(uniform_int(rng, static_cast<std::size_t>(N * C * H * H), 0, 255), {N, C, H, H}, DType::u8);
    Tensor w = ints(uniform_int(rng, static_cast<std::size_t>(O * C / groups * 9), -128, 127), {O, C / groups, 3, 3},
                    DType::i8);
    Tensor zx = ints({100}, {1}, DType::u8);
    const auto sw = uniform(rng, static_cast<std::size_t>(O), 0.001f, 0.01f);
    const auto bv = uniform(rng, static_cast<std::size_t>(O), -1.f, 1.f);
    IntDequant dq{full(device(), {1}, 0.05f), Tensor::from_host(device(), sw, {O}),
                  Tensor::from_host(device(), bv, {O}), false};
    const auto sums = got_ints(conv_integer(x, w, zx, Tensor(), o));
    Tensor y = conv_dequant(x, w, zx, Tensor(), o, dq);
    ASSERT_EQ(y.shape(), (Shape{N, O, H, H}));
    const auto g = y.to_vector();
    for (std::size_t i = 0; i < g.size(); ++i) {
      const std::size_t oc = (i / static_cast<std::size_t>(H * H)) % static_cast<std::size_t>(O);
      const double want = sums[i] * static_cast<double>(0.05f * sw[oc]) + bv[oc];
      ASSERT_NEAR(g[i], want, 1e-6 * (std::abs(want) + 1)) << i << " groups " << groups;
    }
  }
}

namespace {

void check_conv(std::mt19937_64& rng, std::int64_t N, std::int64_t C, std::int64_t H, std::int64_t W, std::int64_t O,
                std::int64_t KH, std::int64_t KW, const IntConvOptions& o, bool per_channel) {
  const std::int64_t CG = C / o.groups;
  auto x = uniform_int(rng, static_cast<std::size_t>(N * C * H * W), 0, 255);
  auto w = uniform_int(rng, static_cast<std::size_t>(O * CG * KH * KW), -128, 127);
  const int zx = uniform_int(rng, 1, 0, 255)[0];
  auto zw = uniform_int(rng, per_channel ? static_cast<std::size_t>(O) : 1, -128, 127);
  Tensor y = conv_integer(ints(x, {N, C, H, W}, DType::u8), ints(w, {O, CG, KH, KW}, DType::i8),
                          ints({zx}, {1}, DType::u8), ints(zw, {static_cast<std::int64_t>(zw.size())}, DType::i8), o);
  // The float64 reference (exact: sums below 2^53) on the zero-point-shifted values.
  HostT xs{{x.begin(), x.end()}, {N, C, H, W}}, ws{{w.begin(), w.end()}, {O, CG, KH, KW}};
  for (auto& v : xs.v) v -= zx;
  for (std::size_t i = 0; i < ws.v.size(); ++i)
    ws.v[i] -= zw[per_channel ? i / static_cast<std::size_t>(CG * KH * KW) : 0];
  Conv2dOptions fo;
  fo.stride = o.stride;
  fo.dilation = o.dilation;
  fo.padding = o.padding;
  fo.groups = o.groups;
  Shape ref_shape;
  const auto ref = ref_conv(xs, ws, nullptr, fo, ref_shape);
  ASSERT_EQ(y.shape(), ref_shape);
  auto g = got_ints(y);
  for (std::size_t i = 0; i < ref.size(); ++i) ASSERT_EQ(g[i], ref[i]) << i;
}

}  // namespace

TEST(Quant, ConvIntegerExact) {
  GLT_RNG(rng);
  const ScopedSmallestTile small;  // llvmpipe: the integer GEMMs at 4 x 4 per invocation
  IntConvOptions o;
  check_conv(rng, 1, 1, 1, 1, 1, 1, 1, o, false);
  check_conv(rng, 2, 3, 9, 11, 5, 3, 3, o, true);
  o.padding = {1, 2, 0, 1};
  o.stride = {2, 1};
  o.dilation = {1, 2};
  check_conv(rng, 1, 4, 8, 7, 6, 3, 2, o, true);
  o = IntConvOptions{};
  o.groups = 2;
  check_conv(rng, 2, 6, 5, 5, 4, 3, 3, o, true);
  o.groups = 1;
  check_conv(rng, 1, 5, 6, 7, 3, 1, 1, o, true);  // 1x1: x read as the matmul's columns
  o.stride = {2, 2};
  check_conv(rng, 2, 5, 6, 7, 3, 1, 1, o, false);  // 1x1 with stride: im2col
  {
    ScopedLoopLimit lim(30);  // grouped, direct: 3x3 filter, 13 iterations per channel -> 2 channels per launch
    IntConvOptions g;
    g.groups = 2;
    check_conv(rng, 1, 10, 6, 6, 4, 3, 3, g, false);
  }
  {
    IntConvOptions p;
    p.padding = {1, 1, 1, 1};
    ScopedSsboLimit lim(1000);  // im2col of 450 bytes per image: pieces of 2 images
    check_conv(rng, 3, 2, 5, 5, 2, 3, 3, p, true);
  }
  {
    IntConvOptions p;
    p.padding = {1, 1, 1, 1};
    ScopedSsboLimit lim(400);  // one image's columns exceed the limit: the direct kernel
    check_conv(rng, 3, 2, 5, 5, 1, 3, 3, p, true);
  }
  EXPECT_THROW(conv_integer(ints({1}, {1, 1, 1, 1}, DType::u8), ints({1, 1}, {1, 2, 1, 1}, DType::u8), Tensor(),
                            Tensor(), IntConvOptions{}),
               ShapeError);
}
