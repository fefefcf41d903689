// matmul / gemm / linear against a float64 host reference.
// Tolerance: |got - ref| <= 2e-6 * K + 1e-5 |ref| for inputs in [-1, 1] (f32 accumulation).
#include <optional>

#include "ops/batched.hpp"
#include "test_util.hpp"

using namespace glt_test;
using namespace gltensor;

namespace {

// Reference for a [..., M, K] @ b [..., K, N] (row-major host arrays, batch broadcast).
std::vector<double> ref_matmul(const std::vector<float>& a, const Shape& sa, const std::vector<float>& b,
                               const Shape& sb, Shape& out_shape) {
  const std::int64_t M = sa[sa.size() - 2], K = sa.back(), N = sb.back();
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  const std::size_t nd = std::max(ba.size(), bb.size());
  Shape batch(nd);
  for (std::size_t i = 0; i < nd; ++i) {
    const std::int64_t x = i < nd - ba.size() ? 1 : ba[i - (nd - ba.size())];
    const std::int64_t y = i < nd - bb.size() ? 1 : bb[i - (nd - bb.size())];
    batch[i] = x == 1 ? y : x;
  }
  out_shape = batch;
  out_shape.push_back(M);
  out_shape.push_back(N);
  const std::int64_t nb = numel_of(batch);
  std::vector<double> out(static_cast<std::size_t>(nb * M * N));
  std::vector<double> bt(static_cast<std::size_t>(K * N));  // one batch entry of b, transposed
  for (std::int64_t z = 0; z < nb; ++z) {
    const std::size_t ia = bcast_index(batch, ba, z), ib = bcast_index(batch, bb, z);
    for (std::int64_t k = 0; k < K; ++k)
      for (std::int64_t n = 0; n < N; ++n) bt[n * K + k] = b[ib * K * N + k * N + n];
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t n = 0; n < N; ++n) {
        const float* ar = &a[ia * M * K + m * K];
        const double* br = &bt[n * K];
        double s = 0;
        for (std::int64_t k = 0; k < K; ++k) s += double(ar[k]) * br[k];
        out[z * M * N + m * N + n] = s;
      }
  }
  return out;
}

void check(std::mt19937_64& rng, const Shape& sa, const Shape& sb) {
  auto a = uniform(rng, numel_of(sa)), b = uniform(rng, numel_of(sb));
  Shape os;
  auto ref = ref_matmul(a, sa, b, sb, os);
  Tensor r = matmul(Tensor::from_host(device(), a, sa), Tensor::from_host(device(), b, sb));
  EXPECT_EQ(r.shape(), os);
  EXPECT_TRUE(close(r.to_vector(), ref, 1e-5, 2e-6 * sa.back() + 1e-7)) << to_string(sa) << " @ " << to_string(sb);
}

// On software rasterizers the REG kernel's register blocks are capped at 4 rows x 1 quad
// (GLTENSOR_MATMUL_REG_BLOCK=4x1, unless set) for the whole binary: llvmpipe's planned 8 x 8
// (RA 8, CB 2) took LLVM 0.34 CPU-s to compile per program against 0.075 for 4 x 4, and the tests
// sweep their flags (layouts, dtypes, epilogues, ReLU masks, row sums) over about 70 such
// programs. Every flag keeps its programs (at 4 x 4, with A's 4-row quads); the planned blocks
// (every size from 1 x 1 to 8 x 8) run in RegisterBlockedKernel (the check_loops entry) and
// HalfStorage (the plain one): ScopedPlannedRegBlocks. GPUs keep their plans (bench/RESULTS.md, suite16).
constexpr const char* kRegBlockVar = "GLTENSOR_MATMUL_REG_BLOCK";

class SmallRegBlocksOnSoftware : public ::testing::Environment {
 public:
  void SetUp() override {
    if (!device().adapter().software || std::getenv(kRegBlockVar)) return;
    ::setenv(kRegBlockVar, "4x1", 0);
    gltensor::detail::settings() = gltensor::detail::Settings::from_env();
  }
};
::testing::Environment* const small_reg_blocks = ::testing::AddGlobalTestEnvironment(new SmallRegBlocksOnSoftware);

// The planner's own REG blocks (up to 8 x 8) for a scope, the cap above restored after it.
class ScopedPlannedRegBlocks {
 public:
  ScopedPlannedRegBlocks() {
    if (const char* v = std::getenv(kRegBlockVar)) saved_ = v;
    ::unsetenv(kRegBlockVar);
    gltensor::detail::settings() = gltensor::detail::Settings::from_env();
  }
  ~ScopedPlannedRegBlocks() {
    if (saved_) ::setenv(kRegBlockVar, saved_->c_str(), 1);
    gltensor::detail::settings() = gltensor::detail::Settings::from_env();
  }
  ScopedPlannedRegBlocks(const ScopedPlannedRegBlocks&) = delete;
  ScopedPlannedRegBlocks& operator=(const ScopedPlannedRegBlocks&) = delete;

 private:
  std::optional<std::string> saved_;
};

}  // namespace

TEST(Matmul, Shapes2DAndTileEdges) {
  GLT_RNG(rng);
  for (auto [m, k, n] : std::vector<std::array<std::int64_t, 3>>{
           {1, 1, 1}, {3, 5, 7}, {64, 16, 64}, {65, 129, 33}, {128, 64, 256}, {1, 300, 1}, {200, 3, 70}})
    check(rng, {m, k}, {k, n});
}

TEST(Matmul, BatchedWithBroadcast) {
  GLT_RNG(rng);
  check(rng, {2, 3, 5, 7}, {7, 4});
  check(rng, {2, 1, 5, 7}, {3, 7, 4});
  check(rng, {4, 9, 9}, {4, 9, 9});
  check(rng, {5, 6}, {3, 6, 2});
}

TEST(Matmul, VectorsAndEmpty) {
  GLT_RNG(rng);
  auto a = uniform(rng, 7), b = uniform(rng, 7 * 3), c = uniform(rng, 4 * 7);
  Tensor ta = Tensor::from_host(device(), a, {7});
  double dot = 0;
  for (int i = 0; i < 7; ++i) dot += double(a[i]) * a[i];
  Tensor d = matmul(ta, ta);
  EXPECT_EQ(d.shape(), Shape{});
  EXPECT_NEAR(d.item(), dot, 1e-5);
  Tensor vm = matmul(ta, Tensor::from_host(device(), b, {7, 3}));
  EXPECT_EQ(vm.shape(), Shape{3});
  auto vmv = vm.to_vector();
  for (int n = 0; n < 3; ++n) {
    double s = 0;
    for (int k = 0; k < 7; ++k) s += double(a[k]) * b[k * 3 + n];
    EXPECT_NEAR(vmv[n], s, 1e-5);
  }
  Tensor mv = matmul(Tensor::from_host(device(), c, {4, 7}), ta);
  EXPECT_EQ(mv.shape(), Shape{4});
  auto mvv = mv.to_vector();
  for (int m = 0; m < 4; ++m) {
    double s = 0;
    for (int k = 0; k < 7; ++k) s += double(c[m * 7 + k]) * a[k];
    EXPECT_NEAR(mvv[m], s, 1e-5);
  }
  EXPECT_EQ(matmul(Tensor::empty(device(), {0, 3}), ones(device(), {3, 4})).shape(), (Shape{0, 4}));
  EXPECT_EQ(matmul(Tensor::empty(device(), {3, 0}), Tensor::empty(device(), {0, 4})).to_vector(),
            std::vector<float>(12, 0.0f));
}

TEST(Matmul, TransposedOperandsWithoutCopies) {
  GLT_RNG(rng);
  const int M = 37, K = 70, N = 45;
  auto a = uniform(rng, M * K), b = uniform(rng, K * N);
  // Store A^T and B^T; view them transposed.
  std::vector<float> at(K * M), bt(N * K);
  for (int m = 0; m < M; ++m)
    for (int k = 0; k < K; ++k) at[k * M + m] = a[m * K + k];
  for (int k = 0; k < K; ++k)
    for (int n = 0; n < N; ++n) bt[n * K + k] = b[k * N + n];
  Tensor ta = Tensor::from_host(device(), at, {K, M}).t(), tb = Tensor::from_host(device(), bt, {N, K}).t();
  Shape os;
  auto ref = ref_matmul(a, {M, K}, b, {K, N}, os);
  EXPECT_TRUE(close(matmul(ta, tb).to_vector(), ref, 1e-5, 2e-6 * K));
  // a strided (sliced) operand
  auto wide = uniform(rng, M * 2 * K);
  Tensor sl = Tensor::from_host(device(), wide, {M, 2 * K}).slice(1, 0, 2 * K, 2);
  auto g = gather_view(wide, sl);
  auto ref2 = ref_matmul(g, {M, K}, b, {K, N}, os);
  EXPECT_TRUE(close(matmul(sl, Tensor::from_host(device(), b, {K, N})).to_vector(), ref2, 1e-5, 2e-6 * K));
}

TEST(Matmul, HalfStorage) {
  GLT_RNG(rng);
  const ScopedPlannedRegBlocks planned;  // f16 and bf16 loads in llvmpipe's 8 x 8 blocks
  auto a = uniform(rng, 33 * 40), b = uniform(rng, 40 * 17);
  for (auto& x : a) x = f16_to_f32(f32_to_f16(x));
  for (auto& x : b) x = f16_to_f32(f32_to_f16(x));
  Shape os;
  auto ref = ref_matmul(a, {33, 40}, b, {40, 17}, os);
  Tensor r = matmul(Tensor::from_host(device(), a, {33, 40}, DType::f16),
                    Tensor::from_host(device(), b, {40, 17}, DType::f16));
  EXPECT_EQ(r.dtype(), DType::f16);
  EXPECT_TRUE(close(r.to_vector(), ref, 1e-3, 1e-3));
  Tensor mixed =
      matmul(Tensor::from_host(device(), a, {33, 40}, DType::bf16), Tensor::from_host(device(), b, {40, 17}));
  EXPECT_EQ(mixed.dtype(), DType::f32);
}

TEST(Matmul, GemmAndLinearEpilogues) {
  GLT_RNG(rng);
  const int M = 20, K = 30, N = 25;
  auto a = uniform(rng, K * M), b = uniform(rng, N * K), c = uniform(rng, N);
  Tensor ta = Tensor::from_host(device(), a, {K, M}), tb = Tensor::from_host(device(), b, {N, K});
  Tensor tc = Tensor::from_host(device(), c, {N});
  auto g = gemm(ta, tb, tc, 0.5, 2.0, true, true).to_vector();
  auto lin_ref = [&](int m, int n) {  // x = a^T [M, K], w = b [N, K]
    double s = 0;
    for (int k = 0; k < K; ++k) s += double(a[k * M + m]) * b[n * K + k];
    return s;
  };
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) ASSERT_NEAR(g[m * N + n], 0.5 * lin_ref(m, n) + 2.0 * c[n], 1e-4);
  struct A {
    Activation act;
    double (*f)(double);
  };
  const A acts[] = {
      {Activation::none, [](double x) { return x; }},
      {Activation::relu, [](double x) { return x > 0 ? x : 0; }},
      {Activation::gelu, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
      {Activation::gelu_tanh,
       [](double x) { return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }},
      {Activation::sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }},
      {Activation::tanh, [](double x) { return std::tanh(x); }},
      {Activation::silu, [](double x) { return x / (1 + std::exp(-x)); }}};
  Tensor x = ta.t();  // [M, K], non-contiguous
  for (const auto& ac : acts) {
    auto r = linear(x, tb, tc, ac.act).to_vector();
    std::vector<double> ref;
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) ref.push_back(ac.f(lin_ref(m, n) + c[n]));
    EXPECT_TRUE(close(r, ref, 1e-5, 1e-4)) << static_cast<int>(ac.act);
  }
  EXPECT_EQ(linear(Tensor::from_host(device(), a, {2, 3, 5, 20}).select(3, 0), ones(device(), {4, 5})).shape(),
            (Shape{2, 3, 4}));
}

TEST(Matmul, EpilogueAffineInEveryKernel) {
  // Epilogue::scale / shift after the activation (y = act(x @ w^T + b) * scale + shift) in each
  // kernel's epilogue (forced), with split-K (the epilogue after the summed partial products) and
  // with a gradient recorded (the ops after the kernel), against float64; NaN propagates.
  GLT_RNG(rng);
  using K = detail::MatmulKernelSetting;
  const int M = 37, Kd = 50, N = 70;
  auto a = uniform(rng, M * Kd), b = uniform(rng, N * Kd), c = uniform(rng, N);
  a[5] = std::nanf("");
  const auto hswish = [](double x) { return x * std::min(std::max(x + 3, 0.0), 6.0) / 6; };
  struct Case {
    K kernel;
    int split;
    bool grad;
  };
  for (const Case& cs : std::vector<Case>{{K::reg, 0, false},
                                          {K::vec4, 0, false},
                                          {K::tile64, 0, false},
                                          {K::tile128, 0, false},
                                          {K::gemv, 0, false},
                                          {K::warp, 0, false},
                                          {K::tile64, 3, false},
                                          {K::choose, 0, true}})
    for (Activation act : {Activation::none, Activation::hardswish}) {
      ScopedSettings s;
      s->matmul_kernel = cs.kernel, s->matmul_split = cs.split;
      Epilogue e(act);
      e.scale = -0.75f, e.shift = 0.25f;
      Tensor x = Tensor::from_host(device(), a, {M, Kd}), w = Tensor::from_host(device(), b, {N, Kd});
      if (cs.grad) requires_grad_(w);
      auto r = linear(x, w, Tensor::from_host(device(), c, {N}), e).to_vector();
      std::vector<double> ref;
      for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
          double v = c[n];
          for (int k = 0; k < Kd; ++k) v += double(a[m * Kd + k]) * b[n * Kd + k];
          ref.push_back((act == Activation::hardswish ? hswish(v) : v) * -0.75 + 0.25);
        }
      EXPECT_TRUE(close(r, ref, 1e-5, 1e-4)) << "kernel " << static_cast<int>(cs.kernel) << " split " << cs.split
                                             << " grad " << cs.grad << " " << e.name();
      EXPECT_TRUE(std::isnan(r[0])) << "row 0 read a NaN";
    }
}

TEST(Matmul, EpilogueLogAndSquareInEveryKernel) {
  // The log and square activations (the model runtime's Log after a MatMul + Add, STFT's power
  // terms) in each kernel's epilogue (forced), with split-K and with a gradient recorded (the ops
  // after the kernel), against float64: log of sums in [0.5, 30] (a bias of 0.5 and products of
  // [0, 1] values), with log(0) = -inf and log(< 0) = NaN where a bias makes them so; the square of
  // sums of either sign; with the affine after them.
  GLT_RNG(rng);
  using K = detail::MatmulKernelSetting;
  const int M = 37, Kd = 61, N = 70;
  auto a = uniform(rng, M * Kd, 0, 1), b = uniform(rng, N * Kd, 0, 1), c = uniform(rng, N, 0.5, 1);
  auto bs = uniform(rng, N * Kd);  // either sign, for the square
  // rows 0 and 1 of x zero: the log of column 0's bias 0 is -inf, of column 1's -1 NaN
  for (int k = 0; k < Kd; ++k) a[k] = a[Kd + k] = 0;
  c[0] = 0, c[1] = -1;
  struct Case {
    K kernel;
    int split;
    bool grad;
  };
  for (const Case& cs : std::vector<Case>{{K::reg, 0, false},
                                          {K::vec4, 0, false},
                                          {K::tile64, 0, false},
                                          {K::tile128, 0, false},
                                          {K::gemv, 0, false},
                                          {K::warp, 0, false},
                                          {K::tile64, 3, false},
                                          {K::choose, 0, true}})
    for (Activation act : {Activation::log, Activation::square})
      for (bool affine : {false, true}) {
        ScopedSettings s;
        s->matmul_kernel = cs.kernel, s->matmul_split = cs.split;
        Epilogue e(act);
        if (affine) e.scale = -0.75f, e.shift = 0.25f;
        const std::vector<float>& bv = act == Activation::log ? b : bs;
        Tensor x = Tensor::from_host(device(), a, {M, Kd}), w = Tensor::from_host(device(), bv, {N, Kd});
        if (cs.grad) requires_grad_(w);
        auto r = linear(x, w, Tensor::from_host(device(), c, {N}), e).to_vector();
        std::vector<double> ref;
        for (int m = 0; m < M; ++m)
          for (int n = 0; n < N; ++n) {
            double v = c[n];
            for (int k = 0; k < Kd; ++k) v += double(a[m * Kd + k]) * bv[n * Kd + k];
            v = act == Activation::log ? std::log(v) : v * v;
            ref.push_back(affine ? v * -0.75 + 0.25 : v);
          }
        EXPECT_TRUE(close(r, ref, 1e-5, 1e-4)) << "kernel " << static_cast<int>(cs.kernel) << " split " << cs.split
                                               << " grad " << cs.grad << " " << e.name();
      }
}

// The tiled kernels' edge tiles and last prefetch (matmul_tile64/tile128.comp through
// matmul.glsl's a_elem / b_elem) load no element past an operand's edge: A [M, K] and B [K, N]
// are the leading part of wider storages whose rows and columns just past them are NaN (for the
// last row: past the view's end), K ends mid-tile, also split into chunks (the chunk's end
// clamped), M and N past one tile; A's last column and B's last row have an infinity (a clamped
// load kept past K would meet the other operand's zeros there: NaN, not the infinity), against
// float64. Sabotage: either select dropped (the K part of it), or a clamp one short; rows past M
// and columns past N reach no stored output (dropping only their part of a select passes).
TEST(Matmul, TiledKernelsEdgesPastTheEnd) {
  GLT_RNG(rng);
  using K = detail::MatmulKernelSetting;
  const std::int64_t M = 67, Kd = 37, N = 69;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto a = uniform(rng, static_cast<std::size_t>((M + 1) * (Kd + 3)));
  auto b = uniform(rng, static_cast<std::size_t>((Kd + 2) * (N + 3)));
  for (std::int64_t m = 0; m <= M; ++m)
    for (std::int64_t k = 0; k < Kd + 3; ++k)
      if (m == M || k >= Kd) a[static_cast<std::size_t>(m * (Kd + 3) + k)] = nan;
  for (std::int64_t k = 0; k < Kd + 2; ++k)
    for (std::int64_t n = 0; n < N + 3; ++n)
      if (k >= Kd || n >= N) b[static_cast<std::size_t>(k * (N + 3) + n)] = nan;
  a[static_cast<std::size_t>(Kd - 1)] = std::numeric_limits<float>::infinity();               // A[0][K - 1]
  b[static_cast<std::size_t>((Kd - 1) * (N + 3))] = -std::numeric_limits<float>::infinity();  // B[K - 1][0]
  std::vector<double> ref;
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t n = 0; n < N; ++n) {
      double v = 0;
      for (std::int64_t k = 0; k < Kd; ++k)
        v += double(a[static_cast<std::size_t>(m * (Kd + 3) + k)]) * b[static_cast<std::size_t>(k * (N + 3) + n)];
      ref.push_back(v);
    }
  const Tensor ta = Tensor::from_host(device(), a, {M + 1, Kd + 3}).narrow(0, 0, M).narrow(1, 0, Kd);
  const Tensor tb = Tensor::from_host(device(), b, {Kd + 2, N + 3}).narrow(0, 0, Kd).narrow(1, 0, N);
  for (K kernel : {K::tile64, K::tile128})
    for (int split : {0, 2}) {
      ScopedSettings s;
      s->matmul_kernel = kernel, s->matmul_split = split;
      EXPECT_TRUE(close(matmul(ta, tb).to_vector(), ref, 1e-5, 1e-5))
          << "kernel " << static_cast<int>(kernel) << " split " << split;
    }
}

// K = 0 under every forced kernel: the product is zeros, the output the epilogue of the addend
// (relu(2 d), d broadcast over rows; d fresh random values), whole 64 x 128 tiles (where the
// quad-load and warp kernels apply) and edges, one product and a batch. The plan runs REG for
// every kernel but GEMV (PlanMatmul.EmptyKTakesReg): the tiled kernels' first K tile is loaded
// before their K loop, where the clamps of an empty range wrap.
TEST(Matmul, EmptyKUnderEveryKernel) {
  GLT_RNG(rng);
  for (const char* kernel : {"", "gpu", "vec4", "vec4su", "tile64", "tile128", "reg", "gemv", "warp"}) {
    ScopedEnv env("GLTENSOR_MATMUL_KERNEL", *kernel ? kernel : nullptr);
    for (auto [batch, M, N] : std::vector<std::array<std::int64_t, 3>>{{1, 64, 128}, {3, 67, 69}}) {
      const auto d = uniform(rng, static_cast<std::size_t>(N));
      const Tensor a = Tensor::empty(device(), {batch, M, 0}), b = Tensor::empty(device(), {0, N});
      const Tensor y = matmul_fused(a, b, Tensor::from_host(device(), d, {N}), 0.5, 2.0, Activation::relu);
      ASSERT_EQ(y.shape(), (Shape{batch, M, N}));
      std::vector<double> ref;
      for (std::int64_t i = 0; i < batch * M; ++i)
        for (std::int64_t n = 0; n < N; ++n) ref.push_back(std::max(0.0, 2.0 * d[static_cast<std::size_t>(n)]));
      EXPECT_TRUE(close(y.to_vector(), ref, 1e-6, 1e-6)) << kernel << " " << batch << " x " << M << " x " << N;
    }
  }
}

TEST(Matmul, Errors) {
  Tensor a = ones(device(), {3, 4}), b = ones(device(), {5, 6});
  try {
    matmul(a, b);
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("[3, 4]"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("[5, 6]"), std::string::npos);
  }
  EXPECT_THROW(matmul(ones(device(), {2, 3, 4}), ones(device(), {3, 4, 5})), ShapeError);
  EXPECT_THROW(matmul(full(device(), {}, 1.0), a), ShapeError);
  EXPECT_THROW(linear(a, ones(device(), {5, 3})), ShapeError);
  EXPECT_THROW(linear(a, ones(device(), {5, 4}), ones(device(), {4})), ShapeError);
  EXPECT_EQ(matmul(a, ones(device(), {4, 2})).to_vector(), std::vector<float>(6, 4.0f));
}

TEST(Matmul, LargeTileEdges) {
  // 128x128 tiles: sizes just past tile boundaries, K not a multiple of 8, strided operands.
  GLT_RNG(rng);
  for (auto [m, k, n] : std::vector<std::array<std::int64_t, 3>>{{130, 37, 257}, {256, 300, 129}, {128, 7, 128}})
    check(rng, {m, k}, {k, n});
  check(rng, {2, 129, 20}, {20, 131});
  const int M = 140, K = 33, N = 150;
  auto a = uniform(rng, M * K), b = uniform(rng, K * N);
  std::vector<float> at(K * M);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < K; ++j) at[j * M + i] = a[i * K + j];
  Shape os;
  auto ref = ref_matmul(a, {M, K}, b, {K, N}, os);
  Tensor r = matmul(Tensor::from_host(device(), at, {K, M}).t(), Tensor::from_host(device(), b, {K, N}));
  EXPECT_TRUE(close(r.to_vector(), ref, 1e-5, 2e-6 * K));
}

// Every kernel (VEC4 quads with and without sliced K, looped or unrolled; scalar 64x64 and
// 128x128 tiles; GLTENSOR_MATMUL_KERNEL forces one where it applies) on operands stored row-major or transposed,
// f32/f16/bf16, broadcast batches, sizes off the tile edges, K not a multiple of the K-tile, and the fused epilogue.
TEST(Matmul, EveryKernelPath) {
  GLT_RNG(rng);
  struct Case {
    std::int64_t batch, M, K, N;
    bool a_t, b_t;  // operand stored transposed (viewed with .t())
    DType dt;
  };
  // The VEC4 kernel takes whole 64x128x8 tiles with quad-aligned operands; the others anything.
  const std::vector<Case> cases = {
      {1, 64, 16, 128, false, false, DType::f32}, {1, 128, 24, 256, true, false, DType::f32},
      {1, 64, 8, 128, false, true, DType::f32},   {1, 192, 32, 128, true, true, DType::f32},
      {3, 64, 16, 128, false, false, DType::f32}, {1, 128, 48, 128, false, false, DType::f16},
      {1, 64, 32, 256, true, true, DType::bf16},  {1, 67, 12, 132, false, false, DType::f32},
      {1, 45, 28, 60, false, true, DType::f32},   {1, 3, 5, 7, false, false, DType::f32}};
  for (const char* kernel : {"", "vec4", "vec4s", "vec4u", "vec4su", "tile64", "tile128", "reg", "gemv", "warp"}) {
    ScopedEnv env("GLTENSOR_MATMUL_KERNEL", *kernel ? kernel : nullptr);
    // VEC4's K-loop forms (SLICE_K, UNROLL_K; a program per layout, dtype and epilogue each):
    // each operand's two load layouts by cases 0 and 3 (A and B row-major; both transposed), the
    // half dtypes by cases 5 and 6, the epilogue after the (sliced) K loop at f32. Its store of
    // half outputs with the epilogue, and the layouts one operand at a time, are the same code in
    // every form: "vec4" runs them.
    const bool vec4_form = std::string(kernel).size() > 4 && std::string(kernel).rfind("vec4", 0) == 0;
    // GEMV and warp forced on software rasterizers: the half-storage cases only (5 and 6: each
    // kernel's f16 / bf16 loads and stores, with and without the epilogue). Their f32 programs at
    // these shapes add no flag or flag pair to the release pass's (GemvKernel and WarpTiledKernel
    // run the f32 layouts, edges, batches and epilogues; suite41c, 2026-11-29, scripts/program_flags.py:
    // gemv.comp 35 flags / 504 pairs and matmul_warp.comp 33 / 445 kept; 14 programs fewer here, 8
    // of them in the pass, about 2 CPU-s of llvmpipe's compiles; sabotage: an f32-only error in either
    // kernel's last row fails GemvKernel / WarpTiledKernel). GPUs run every case.
    const bool halves_only =
        device().adapter().software && (std::string(kernel) == "gemv" || std::string(kernel) == "warp");
    for (const Case& c : cases) {
      if (vec4_form && c.batch == 1 && c.a_t != c.b_t) continue;
      if (halves_only && c.dt == DType::f32) continue;
      auto a = uniform(rng, c.batch * c.M * c.K), b = uniform(rng, c.K * c.N), d = uniform(rng, c.N);
      auto round = [&](std::vector<float>& v) {
        for (auto& x : v)
          x = c.dt == DType::f16 ? f16_to_f32(f32_to_f16(x)) : c.dt == DType::bf16 ? bf16_to_f32(f32_to_bf16(x)) : x;
      };
      round(a);
      round(b);
      Shape os;
      auto ref = ref_matmul(a, {c.batch, c.M, c.K}, b, {c.K, c.N}, os);
      // Device operands: the same values, stored transposed where asked.
      auto stored = [&](const std::vector<float>& v, std::int64_t nb, std::int64_t r, std::int64_t cc, bool t) {
        if (!t) return Tensor::from_host(device(), v, nb > 1 ? Shape{nb, r, cc} : Shape{r, cc}, c.dt);
        std::vector<float> vt(v.size());
        for (std::int64_t z = 0; z < nb; ++z)
          for (std::int64_t i = 0; i < r; ++i)
            for (std::int64_t j = 0; j < cc; ++j) vt[z * r * cc + j * r + i] = v[z * r * cc + i * cc + j];
        return Tensor::from_host(device(), vt, nb > 1 ? Shape{nb, cc, r} : Shape{cc, r}, c.dt).transpose(-1, -2);
      };
      Tensor ta = stored(a, c.batch, c.M, c.K, c.a_t), tb = stored(b, 1, c.K, c.N, c.b_t);
      const double tol = c.dt == DType::f32 ? 2e-6 * c.K + 1e-6 : 2e-2;
      Tensor r = matmul(ta, tb);
      EXPECT_TRUE(close(r.to(DType::f32).to_vector(), ref, c.dt == DType::f32 ? 1e-5 : 1e-2, tol))
          << kernel << " " << c.batch << "x" << c.M << "x" << c.K << "x" << c.N << " a_t=" << c.a_t << " b_t=" << c.b_t
          << " " << dtype_name(c.dt);
      // Fused epilogue: relu(0.5 * a @ b + 2 * d), d broadcast over rows. It is the kernels'
      // store (ADDEND, ACT): its code path changes with the output's dtype, the batch and the
      // edges, not with the operands' load layouts, so the cases that differ from case 0 only by
      // a transposed operand (a program each, the same store) leave it to case 3 (both transposed).
      if (c.dt == DType::f32 && c.batch == 1 && (c.a_t != c.b_t)) continue;
      if (vec4_form && c.dt != DType::f32) continue;
      Tensor e = matmul_fused(ta, tb, Tensor::from_host(device(), d, {c.N}), 0.5, 2.0, Activation::relu);
      std::vector<double> ref_e(ref.size());
      for (std::size_t i = 0; i < ref.size(); ++i) ref_e[i] = std::max(0.0, 0.5 * ref[i] + 2.0 * d[i % c.N]);
      EXPECT_TRUE(close(e.to(DType::f32).to_vector(), ref_e, c.dt == DType::f32 ? 1e-5 : 1e-2, tol)) << kernel;
    }
  }
}

namespace {
// Values as stored in dtype dt.
// C [M, N] of operands 0.5 (A) and 0.25 (B) over K (6 unless told) with a NaN in A's row 2 and +Inf
// in B's column 5: row 2 NaN, column 5 +Inf, the rest K * 0.125.
void check_nan_row_inf_column(const std::vector<float>& c, int M, int N, int K = 6) {
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      const float v = c[m * N + n];
      if (m == 2)
        EXPECT_TRUE(std::isnan(v)) << m << "," << n;
      else if (n == 5)
        EXPECT_TRUE(std::isinf(v) && v > 0) << m << "," << n;
      else
        EXPECT_FLOAT_EQ(v, K * 0.125f) << m << "," << n;
    }
}

void round_to(std::vector<float>& v, DType dt) {
  for (auto& x : v)
    x = dt == DType::f16 ? f16_to_f32(f32_to_f16(x)) : dt == DType::bf16 ? bf16_to_f32(f32_to_bf16(x)) : x;
}
}  // namespace

// Split-K at real lengths past llvmpipe's 65535 loop iterations per invocation (the issue
// "Correctness on llvmpipe": ones [1, 50000] @ ones [50000, 1] gave 45587), on every kernel:
// each one's chunk is planned from its loop count, so a count that is too low fails here.
TEST(Matmul, LongKPastTheLoopLimit) {
  GLT_RNG(rng);
  EXPECT_EQ(matmul(ones(device(), {1, 50000}), ones(device(), {50000, 1})).item(), 50000.0f);
  check(rng, {3, 50000}, {50000, 5});
  check(rng, {2, 1, 2, 3000}, {3, 3000, 3});
  // K = 12000 is past the longest chunk of every kernel (2233 to 10680 K per invocation).
  for (const char* kernel : {"tile64", "tile128", "vec4", "vec4su", "reg", "warp"}) {
    ScopedEnv env("GLTENSOR_MATMUL_KERNEL", kernel);
    const bool t128 = std::string(kernel) == "tile128" || std::string(kernel) == "warp";
    const std::int64_t M = t128 ? 128 : 64, N = 128, K = 12000;
    auto a = uniform(rng, M * K), b = uniform(rng, K * N);
    Shape os;
    auto ref = ref_matmul(a, {M, K}, b, {K, N}, os);
    Tensor r = matmul(Tensor::from_host(device(), a, {M, K}), Tensor::from_host(device(), b, {K, N}));
    EXPECT_TRUE(close(r.to_vector(), ref, 1e-5, 2e-6 * K)) << kernel;
  }
  // f16 operands and result.
  auto a = uniform(rng, 2 * 12000), b = uniform(rng, 12000 * 3);
  round_to(a, DType::f16);
  round_to(b, DType::f16);
  Shape os;
  auto ref = ref_matmul(a, {2, 12000}, b, {12000, 3}, os);
  Tensor r = matmul(Tensor::from_host(device(), a, {2, 12000}, DType::f16),
                    Tensor::from_host(device(), b, {12000, 3}, DType::f16));
  EXPECT_EQ(r.dtype(), DType::f16);
  EXPECT_TRUE(close(r.to(DType::f32).to_vector(), ref, 2e-3, 0.05));
}

// The split-K path under a lowered loop limit (so that it runs on small shapes on any device,
// the GPU included): every kernel with a batch, a transposed operand and f16/bf16 storage; on
// the default kernels K off the chunk and tile edges, and the epilogues applied after the
// partial sums (alpha, beta with a broadcast or full addend, activations).
TEST(Matmul, SplitKUnderALoweredLoopLimit) {
  GLT_RNG(rng);
  ScopedLoopLimit limit(6000);  // chunks of 192 (tile64), 800 (vec4) and 960 (tile128) K
  struct Case {
    std::int64_t batch, M, K, N;
    bool a_t;
    DType dt;
    bool epilogues;
  };
  auto run = [&](const char* kernel, const Case& c) {
    auto a = uniform(rng, c.batch * c.M * c.K), b = uniform(rng, c.K * c.N), d = uniform(rng, c.N),
         full_d = uniform(rng, c.batch * c.M * c.N);
    round_to(a, c.dt);
    round_to(b, c.dt);
    Shape os;
    auto ref = ref_matmul(a, {c.batch, c.M, c.K}, b, {c.K, c.N}, os);
    Tensor ta;
    if (c.a_t) {
      std::vector<float> at(a.size());
      for (std::int64_t z = 0; z < c.batch; ++z)
        for (std::int64_t i = 0; i < c.M; ++i)
          for (std::int64_t j = 0; j < c.K; ++j) at[(z * c.K + j) * c.M + i] = a[(z * c.M + i) * c.K + j];
      ta = Tensor::from_host(device(), at, {c.batch, c.K, c.M}, c.dt).transpose(-1, -2);
    } else {
      ta = Tensor::from_host(device(), a, {c.batch, c.M, c.K}, c.dt);
    }
    Tensor tb = Tensor::from_host(device(), b, {c.K, c.N}, c.dt);
    const bool f32 = c.dt == DType::f32;
    const double rtol = f32 ? 1e-5 : 1e-2, atol = f32 ? 2e-6 * c.K : 5e-2;
    const std::string what = std::string(kernel) + " " + std::to_string(c.batch) + "x" + std::to_string(c.M) + "x" +
                             std::to_string(c.K) + "x" + std::to_string(c.N) + " " + dtype_name(c.dt);
    Tensor r = matmul(ta, tb);
    EXPECT_EQ(r.dtype(), c.dt) << what;
    EXPECT_TRUE(close(r.to(DType::f32).to_vector(), ref, rtol, atol)) << what;
    if (!c.epilogues) return;
    // relu(0.5 a @ b + 2 d), d broadcast over rows; gelu(-1.5 a @ b + 0.25 D), D full.
    Tensor e = matmul_fused(ta, tb, Tensor::from_host(device(), d, {c.N}), 0.5, 2.0, Activation::relu);
    Tensor f =
        matmul_fused(ta, tb, Tensor::from_host(device(), full_d, {c.batch, c.M, c.N}), -1.5, 0.25, Activation::gelu);
    std::vector<double> ref_e(ref.size()), ref_f(ref.size());
    for (std::size_t i = 0; i < ref.size(); ++i) {
      ref_e[i] = std::max(0.0, 0.5 * ref[i] + 2.0 * d[i % c.N]);
      const double v = -1.5 * ref[i] + 0.25 * full_d[i];
      ref_f[i] = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    }
    EXPECT_TRUE(close(e.to(DType::f32).to_vector(), ref_e, rtol, atol)) << what << " relu epilogue";
    EXPECT_TRUE(close(f.to(DType::f32).to_vector(), ref_f, rtol, 2 * atol)) << what << " gelu epilogue";
  };
  for (const char* kernel : {"vec4", "vec4s", "vec4u", "vec4su", "tile64", "tile128", "warp"}) {
    ScopedEnv env("GLTENSOR_MATMUL_KERNEL", kernel);
    run(kernel, {2, 64, 2600, 128, true, DType::f32, false});
    run(kernel, {1, 128, 1304, 128, false, std::string(kernel) == "tile64" ? DType::bf16 : DType::f16, false});
  }
  for (const Case& c : {Case{2, 64, 2600, 128, true, DType::f32, true}, Case{1, 67, 1003, 45, false, DType::f32, true},
                        Case{1, 1, 4099, 1, false, DType::f32, false}})
    run("default", c);
  // REG loops 4 K per iteration: a lower limit (chunks of 1184 K) splits these.
  ScopedEnv env("GLTENSOR_MATMUL_KERNEL", "reg");
  ScopedLoopLimit reg_limit(300);
  run("reg", {2, 64, 2600, 128, true, DType::f32, true});
  run("reg", {1, 67, 1303, 45, false, DType::f16, true});
  run("reg", {1, 128, 1304, 128, false, DType::bf16, false});
}

// Split-K partial products past the device's max SSBO block (under a lowered limit, with loop
// limits that split K into 10 chunks): computed per block of rows, or of columns of one row where
// a row's partials alone exceed it (a batch broadcast over b), each written into its slice; with
// the epilogue (alpha, beta and a full addend, an activation) applied per block.
TEST(Matmul, SplitKPartialsPastTheSsboLimit) {
  GLT_RNG(rng);
  ScopedEnv env("GLTENSOR_MATMUL_KERNEL", "reg");
  ScopedLoopLimit loops(32);      // REG: 10 chunks of K
  ScopedSsboLimit limit(700000);  // a, b: 655360 bytes; partials of 10 chunks: 1024000 bytes
  const std::int64_t K = 1024, N = 160;
  for (const Shape& sa : {Shape{160, K}, Shape{160, 1, K}}) {
    auto a = uniform(rng, numel_of(sa)), b = uniform(rng, K * N);
    Shape os;
    const auto ref = ref_matmul(a, sa, b, {K, N}, os);
    auto d = uniform(rng, numel_of(os));
    Tensor ta = Tensor::from_host(device(), a, sa), tb = Tensor::from_host(device(), b, {K, N});
    const std::string what = to_string(sa) + " @ [1024, 160]";
    Tensor r = matmul(ta, tb);
    EXPECT_EQ(r.shape(), os) << what;
    EXPECT_TRUE(close(r.to_vector(), ref, 1e-5, 2e-6 * K)) << what;
    Tensor e = matmul_fused(ta, tb, Tensor::from_host(device(), d, os), -1.5, 0.25, Activation::relu);
    std::vector<double> ref_e(ref.size());
    for (std::size_t i = 0; i < ref.size(); ++i) ref_e[i] = std::max(0.0, -1.5 * ref[i] + 0.25 * d[i]);
    EXPECT_TRUE(close(e.to_vector(), ref_e, 1e-5, 4e-6 * K)) << what << " with epilogue";
  }
}

// The REG kernel (register blocks without shared memory: llvmpipe's default, and small M or N on
// GPUs) forced on every device: sizes off its blocks (M of 1 to 9 takes 1-, 2-, 4- and 8-row
// blocks, N of 1 to 4 one quad), 0-size, B read as quads (row-major, N % 4 == 0) or through
// strides (a misaligned slice, a transposed view), NaN and Inf reaching only their row / column.
TEST(Matmul, RegisterBlockedKernel) {
  GLT_RNG(rng);
  const ScopedPlannedRegBlocks planned;  // the blocks the planner sizes, 1 x 1 to 8 x 8
  ScopedEnv env("GLTENSOR_MATMUL_KERNEL", "reg");
  for (auto [m, k, n] : std::vector<std::array<std::int64_t, 3>>{{1, 1, 1},
                                                                 {1, 300, 1},
                                                                 {2, 7, 3},
                                                                 {3, 3, 4096},
                                                                 {4, 9, 8},
                                                                 {5, 13, 5},
                                                                 {9, 1, 17},
                                                                 {37, 41, 29},
                                                                 {130, 64, 12},
                                                                 {4099, 6, 2},
                                                                 {1, 5, 9},
                                                                 {2, 7, 9}})
    check(rng, {m, k}, {k, n});
  check(rng, {3, 1, 5, 7}, {2, 7, 8});  // broadcast batches, quads of B with a batch stride
  EXPECT_EQ(matmul(Tensor::empty(device(), {0, 3}), ones(device(), {3, 4})).shape(), (Shape{0, 4}));
  EXPECT_EQ(matmul(Tensor::empty(device(), {5, 0}), Tensor::empty(device(), {0, 4})).to_vector(),
            std::vector<float>(20, 0.0f));
  // B as a slice at element offset 1 (no quads), and as a transposed view.
  const int M = 19, K = 23, N = 16;
  auto a = uniform(rng, M * K), wide = uniform(rng, K * (N + 1));
  Tensor bs = Tensor::from_host(device(), wide, {K, N + 1}).slice(1, 1, N + 1);
  auto bv = gather_view(wide, bs);
  Shape os;
  auto ref = ref_matmul(a, {M, K}, bv, {K, N}, os);
  Tensor ta = Tensor::from_host(device(), a, {M, K});
  EXPECT_TRUE(close(matmul(ta, bs).to_vector(), ref, 1e-5, 2e-6 * K)) << "B at offset 1";
  std::vector<float> bt(N * K);
  for (int k = 0; k < K; ++k)
    for (int n = 0; n < N; ++n) bt[n * K + k] = bv[k * N + n];
  EXPECT_TRUE(close(matmul(ta, Tensor::from_host(device(), bt, {N, K}).t()).to_vector(), ref, 1e-5, 2e-6 * K))
      << "B transposed";
  // NaN in A's row 2 makes row 2 NaN; +Inf in B's column 5 (positive A) makes column 5 +Inf.
  std::vector<float> pa(9 * 6, 0.5f), pb(6 * 11, 0.25f);
  pa[2 * 6 + 3] = std::numeric_limits<float>::quiet_NaN();
  pb[4 * 11 + 5] = std::numeric_limits<float>::infinity();
  check_nan_row_inf_column(
      matmul(Tensor::from_host(device(), pa, {9, 6}), Tensor::from_host(device(), pb, {6, 11})).to_vector(), 9, 11);
  // The blocks a GPU plans where M or N is at most 8 (workgroups of 64): 8 x 8 and 1 x 8 (last:
  // this ScopedEnv's end unsets the forced kernel).
  ScopedEnv gpu("GLTENSOR_MATMUL_KERNEL", "gpu");
  check(rng, {37, 20}, {20, 8});
  check(rng, {1, 20}, {20, 9});
}

namespace {
// linear(x [..., K], w [N, K], bias, act) against float64, values stored as dtype dt.
void check_linear(std::mt19937_64& rng, const Shape& sx, std::int64_t N, DType dt, bool with_bias,
                  Activation act = Activation::none, double (*f)(double) = nullptr) {
  const std::int64_t K = sx.back(), rows = numel_of(sx) / std::max<std::int64_t>(K, 1);
  auto x = uniform(rng, numel_of(sx)), w = uniform(rng, N * K), bias = uniform(rng, N);
  round_to(x, dt);
  round_to(w, dt);
  std::vector<double> ref(static_cast<std::size_t>(rows * N));
  for (std::int64_t m = 0; m < rows; ++m)
    for (std::int64_t n = 0; n < N; ++n) {
      double s = with_bias ? bias[n] : 0.0;
      for (std::int64_t k = 0; k < K; ++k) s += double(x[m * K + k]) * w[n * K + k];
      ref[m * N + n] = f ? f(s) : s;
    }
  Tensor b = with_bias ? Tensor::from_host(device(), bias, {N}) : Tensor();
  Tensor r = linear(Tensor::from_host(device(), x, sx, dt), Tensor::from_host(device(), w, {N, K}, dt), b, act);
  Shape os = sx;
  os.back() = N;
  EXPECT_EQ(r.shape(), os);
  const bool f32 = dt == DType::f32;
  EXPECT_TRUE(close(r.to(DType::f32).to_vector(), ref, f32 ? 1e-5 : 1e-2, f32 ? 2e-6 * K + 1e-6 : 2e-2))
      << to_string(sx) << " x [" << N << ", " << K << "] " << dtype_name(dt);
}
}  // namespace

// The GEMV kernel (glsl/ops/gemv.comp: GPUs' choice for M <= 8 with a K-major B) forced on
// every device: M of 1 to 8 and past it, odd K and N (partial quads, features past the last
// workgroup's block), B K-major (linear) and row-major or at an offset (element loads), batch
// dims, the bias + activation epilogue, f16/bf16 operands, NaN/Inf, K split under a lowered loop
// limit, more workgroups than one dispatch allows.
TEST(Matmul, GemvKernel) {
  GLT_RNG(rng);
  ScopedEnv env("GLTENSOR_MATMUL_KERNEL", "gemv");
  // Rows per workgroup RM = min(M, 8) is only the length of the kernel's register arrays and
  // loops (a program each): one row, an even and an odd count below 8, and 8 (with 11 below).
  for (std::int64_t m : {1, 2, 5, 8})
    for (auto [k, n] : std::vector<std::array<std::int64_t, 2>>{{1, 1}, {7, 5}, {384, 33}, {1027, 9}}) {
      check_linear(rng, {m, k}, n, DType::f32, m % 2 == 0);
      check(rng, {m, k}, {k, n});  // row-major B: element loads at stride N
    }
  check(rng, {11, 37}, {37, 6});        // past 8 rows: blocks of rows along y
  check(rng, {3, 1, 5, 7}, {2, 7, 8});  // broadcast batch dims
  check_linear(rng, {2, 3, 4, 65}, 17, DType::f32, true);
  check_linear(rng, {3, 200}, 21, DType::f16, true);
  check_linear(rng, {5, 96}, 12, DType::bf16, false);
  check_linear(rng, {1, 130}, 19, DType::f32, true, Activation::gelu,
               [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); });
  check_linear(rng, {4, 130}, 19, DType::f32, true, Activation::relu, [](double x) { return x > 0 ? x : 0; });
  EXPECT_EQ(matmul(Tensor::empty(device(), {5, 0}), Tensor::empty(device(), {0, 4})).to_vector(),
            std::vector<float>(20, 0.0f));
  {  // alpha, beta and a full addend; B at element offset 1 (no quads)
    const int M = 3, K = 29, N = 10;
    auto a = uniform(rng, M * K), wide = uniform(rng, K * (N + 1)), d = uniform(rng, M * N);
    Tensor bs = Tensor::from_host(device(), wide, {K, N + 1}).slice(1, 1, N + 1);
    Shape os;
    auto ref = ref_matmul(a, {M, K}, gather_view(wide, bs), {K, N}, os);
    Tensor e = matmul_fused(Tensor::from_host(device(), a, {M, K}), bs, Tensor::from_host(device(), d, {M, N}), -1.5,
                            0.25, Activation::none);
    for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = -1.5 * ref[i] + 0.25 * d[i];
    EXPECT_TRUE(close(e.to_vector(), ref, 1e-5, 1e-4)) << "epilogue with a full addend";
  }
  {  // NaN in x's row 2 makes row 2 NaN; +Inf in w's feature 5 (positive x) makes column 5 +Inf.
    std::vector<float> px(4 * 6, 0.5f), pw(11 * 6, 0.25f);
    px[2 * 6 + 3] = std::numeric_limits<float>::quiet_NaN();
    pw[5 * 6 + 4] = std::numeric_limits<float>::infinity();
    check_nan_row_inf_column(
        linear(Tensor::from_host(device(), px, {4, 6}), Tensor::from_host(device(), pw, {11, 6})).to_vector(), 4, 11);
  }
  {  // x and w narrowed from rows of 8 (quads, the last one partial): the hidden column holds
     // NaN (x) and Inf (w), which must never be read
    const int M = 3, K = 7, N = 5;
    auto xw = uniform(rng, M * 8), ww = uniform(rng, N * 8);
    for (int m = 0; m < M; ++m) xw[m * 8 + 7] = std::numeric_limits<float>::quiet_NaN();
    for (int n = 0; n < N; ++n) ww[n * 8 + 7] = std::numeric_limits<float>::infinity();
    Tensor x = Tensor::from_host(device(), xw, {M, 8}).slice(1, 0, K);
    Tensor w = Tensor::from_host(device(), ww, {N, 8}).slice(1, 0, K);
    std::vector<double> ref;
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        double s = 0;
        for (int k = 0; k < K; ++k) s += double(xw[m * 8 + k]) * ww[n * 8 + k];
        ref.push_back(s);
      }
    EXPECT_TRUE(close(linear(x, w).to_vector(), ref, 1e-5, 1e-5)) << "narrowed operands";
  }
  {  // K ending mid-quad in the element loads of both operands, each operand the leading part of
     // a wider storage whose elements just past K are NaN (A: x transposed, K at stride M, the
     // storage's rows K..K+2 NaN; B row-major, its rows K..K+2 NaN): the tail's clamped loads
     // must give zeros, never the NaN past the range (nor a repeated last element)
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (std::int64_t k : {1, 2, 3, 5, 6, 7, 13, 4099}) {
      const std::int64_t M = 3, N = 6, KW = k + 3;
      std::vector<float> at = uniform(rng, static_cast<std::size_t>(KW * M)),
                         bw = uniform(rng, static_cast<std::size_t>(KW * N));
      for (std::int64_t i = k * M; i < KW * M; ++i) at[static_cast<std::size_t>(i)] = nan;
      for (std::int64_t i = k * N; i < KW * N; ++i) bw[static_cast<std::size_t>(i)] = nan;
      // The last element in range infinite (B's column 0, A's row 1): a tail whose zeros multiply
      // it (a clamped load's value kept past K in the other operand) gives NaN, not the Inf.
      bw[static_cast<std::size_t>((k - 1) * N)] = std::numeric_limits<float>::infinity();
      at[static_cast<std::size_t>((k - 1) * M + 1)] = -std::numeric_limits<float>::infinity();
      Tensor a = Tensor::from_host(device(), at, {KW, M}).narrow(0, 0, k).t();
      Tensor b = Tensor::from_host(device(), bw, {KW, N}).narrow(0, 0, k);
      std::vector<double> ref;
      for (std::int64_t m = 0; m < M; ++m)
        for (std::int64_t n = 0; n < N; ++n) {
          double acc = 0;
          for (std::int64_t j = 0; j < k; ++j)
            acc += double(at[static_cast<std::size_t>(j * M + m)]) * bw[static_cast<std::size_t>(j * N + n)];
          ref.push_back(acc);
        }
      ScopedLoopLimit limit(k > 1000 ? 500 : 0);  // 4099: split K, the last chunk ending mid-quad
      EXPECT_TRUE(close(matmul(a, b).to_vector(), ref, 1e-5, 2e-6 * static_cast<double>(k) + 1e-6))
          << "K = " << k << " ending mid-quad, NaN past it";
    }
  }
  {  // K split under a lowered loop limit (chunks of 1536 K), with the epilogue after the sum
    ScopedLoopLimit limit(500);
    check_linear(rng, {3, 5000}, 13, DType::f32, true, Activation::relu, [](double x) { return x > 0 ? x : 0; });
    check(rng, {2, 4100}, {4100, 3});
  }
  {  // 3001 feature blocks, more than a dispatch of 1000 workgroups per axis
    std::optional<ScopedDispatchLimit> dispatch_limit{std::in_place, 1000};
    check_linear(rng, {2, 8}, 12001, DType::f32, true);
    dispatch_limit.reset();
  }
}

// The warp-tiled kernel (glsl/ops/matmul_warp.comp: 128 x 128 tiles, 16 or 8 K per shared-memory
// tile; GPUs' choice for large products) forced on every device, where its quad loads apply (M, N
// and K multiples of 4): M, N and K off its tiles (EDGE: clamped loads, zeros past K, no stores
// past M or N), K = 4 (one partial K-tile), whole tiles in a grid of several, broadcast batches,
// operands transposed or narrowed from wider rows (quad strides, an offset), f16 storage, the
// fused epilogue, NaN and Inf reaching only their row / column, more workgroups than one dispatch
// allows; shapes it does not take (K = 1, odd M) fall back to the other kernels.
TEST(Matmul, WarpTiledKernel) {
  GLT_RNG(rng);
  ScopedEnv env("GLTENSOR_MATMUL_KERNEL", "warp");
  for (auto [m, k, n] : std::vector<std::array<std::int64_t, 3>>{
           {132, 36, 260}, {128, 4, 128}, {4, 8, 4}, {256, 272, 384}, {124, 20, 4}, {256, 1, 128}, {131, 12, 128}})
    check(rng, {m, k}, {k, n});
  check(rng, {2, 3, 68, 20}, {20, 132});     // batch dims folded into rows
  check(rng, {3, 1, 68, 20}, {2, 20, 132});  // broadcast batches
  check(rng, {68, 24}, {3, 24, 136});
  check(rng, {68, 64}, {3, 64, 516});  // batched, A along K: 64-row tiles (few), edges in M and N
  check(rng, {132, 72}, {2, 72, 1028});
  // The recognizer's batched 1x1 products (A along K, B row-major; the two above too): 64 x 128 x 8 tiles with
  // a warp as 16 x 2 invocations; 128 x 128 x 16 tiles from M = 384 over 512 tiles or more (here 4 x 5 x 26),
  // edges in M, N and K (72: four 16-K tiles and half of one).
  check(rng, {196, 136}, {2, 136, 516});
  check(rng, {388, 72}, {26, 72, 516});
  // A and B transposed; A narrowed from rows of 48 at column 4 (quads, a quad offset).
  const int M = 136, K = 40, N = 132;
  auto a = uniform(rng, M * K), b = uniform(rng, K * N), wide = uniform(rng, M * 48);
  Shape os;
  const auto ref = ref_matmul(a, {M, K}, b, {K, N}, os);
  std::vector<float> at(K * M), bt(N * K);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < K; ++j) at[j * M + i] = a[i * K + j];
  for (int i = 0; i < K; ++i)
    for (int j = 0; j < N; ++j) bt[j * K + i] = b[i * N + j];
  Tensor ta = Tensor::from_host(device(), a, {M, K}), tb = Tensor::from_host(device(), b, {K, N});
  Tensor tat = Tensor::from_host(device(), at, {K, M}).t(), tbt = Tensor::from_host(device(), bt, {N, K}).t();
  EXPECT_TRUE(close(matmul(tat, tb).to_vector(), ref, 1e-5, 2e-6 * K)) << "A transposed";
  EXPECT_TRUE(close(matmul(ta, tbt).to_vector(), ref, 1e-5, 2e-6 * K)) << "B transposed";
  EXPECT_TRUE(close(matmul(tat, tbt).to_vector(), ref, 1e-5, 2e-6 * K)) << "both transposed";
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < K; ++j) wide[i * 48 + 4 + j] = a[i * K + j];
  Tensor narrowed = Tensor::from_host(device(), wide, {M, 48}).slice(1, 4, 4 + K);
  EXPECT_TRUE(close(matmul(narrowed, tb).to_vector(), ref, 1e-5, 2e-6 * K)) << "A narrowed";
  // f16 storage and result.
  auto ah = a, bh = b;
  round_to(ah, DType::f16);
  round_to(bh, DType::f16);
  const auto ref_h = ref_matmul(ah, {M, K}, bh, {K, N}, os);
  Tensor rh =
      matmul(Tensor::from_host(device(), ah, {M, K}, DType::f16), Tensor::from_host(device(), bh, {K, N}, DType::f16));
  EXPECT_EQ(rh.dtype(), DType::f16);
  EXPECT_TRUE(close(rh.to(DType::f32).to_vector(), ref_h, 2e-3, 2e-2)) << "f16";
  // relu(0.5 a @ b + 2 d), d broadcast over rows; -1.5 a @ b + 0.25 D, D full.
  auto d = uniform(rng, N), full_d = uniform(rng, M * N);
  Tensor e = matmul_fused(ta, tb, Tensor::from_host(device(), d, {N}), 0.5, 2.0, Activation::relu);
  Tensor f = matmul_fused(tat, tbt, Tensor::from_host(device(), full_d, {M, N}), -1.5, 0.25, Activation::none);
  std::vector<double> ref_e(ref.size()), ref_f(ref.size());
  for (std::size_t i = 0; i < ref.size(); ++i) {
    ref_e[i] = std::max(0.0, 0.5 * ref[i] + 2.0 * d[i % N]);
    ref_f[i] = -1.5 * ref[i] + 0.25 * full_d[i];
  }
  EXPECT_TRUE(close(e.to_vector(), ref_e, 1e-5, 4e-6 * K)) << "relu epilogue";
  EXPECT_TRUE(close(f.to_vector(), ref_f, 1e-5, 4e-6 * K)) << "full addend";
  {  // NaN in A's row 2 makes row 2 NaN; +Inf in B's column 5 (positive A) makes column 5 +Inf.
    std::vector<float> pa(132 * 8, 0.5f), pb(8 * 136, 0.25f);
    pa[2 * 8 + 3] = std::numeric_limits<float>::quiet_NaN();
    pb[4 * 136 + 5] = std::numeric_limits<float>::infinity();
    check_nan_row_inf_column(
        matmul(Tensor::from_host(device(), pa, {132, 8}), Tensor::from_host(device(), pb, {8, 136})).to_vector(), 132,
        136, 8);
  }
  {  // Operands narrowed along K from wider storage whose hidden part holds NaN (A, and B stored
     // [K + 4, N]) or Inf (B stored K-major [N, K + 4]): K = 36 ends inside a K-tile, and nothing
     // past K may be read into the sums (0 x NaN is NaN).
    const int m = 132, k = 36, n = 136, kw = 40;
    auto aw = uniform(rng, m * kw), bw = uniform(rng, kw * n), bkw = uniform(rng, n * kw);
    for (int i = 0; i < m; ++i)
      for (int j = k; j < kw; ++j) aw[i * kw + j] = std::numeric_limits<float>::quiet_NaN();
    for (int j = k * n; j < kw * n; ++j) bw[j] = std::numeric_limits<float>::quiet_NaN();
    for (int i = 0; i < n; ++i)
      for (int j = k; j < kw; ++j) bkw[i * kw + j] = std::numeric_limits<float>::infinity();
    Tensor an = Tensor::from_host(device(), aw, {m, kw}).slice(1, 0, k);
    Tensor bn = Tensor::from_host(device(), bw, {kw, n}).slice(0, 0, k);
    Tensor bkn = Tensor::from_host(device(), bkw, {n, kw}).slice(1, 0, k).t();
    std::vector<double> want(m * n), want_k(m * n);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j)
        for (int q = 0; q < k; ++q) {
          want[i * n + j] += double(aw[i * kw + q]) * bw[q * n + j];
          want_k[i * n + j] += double(aw[i * kw + q]) * bkw[j * kw + q];
        }
    EXPECT_TRUE(close(matmul(an, bn).to_vector(), want, 1e-5, 2e-6 * k)) << "narrowed along K, B row-major";
    EXPECT_TRUE(close(matmul(an, bkn).to_vector(), want_k, 1e-5, 2e-6 * k)) << "narrowed along K, B K-major";
  }
  {  // 3 x 5 x 2 tiles over dispatches of at most 2 workgroups per axis
    std::optional<ScopedDispatchLimit> dispatch_limit{std::in_place, 2};
    check(rng, {2, 260, 12}, {12, 600});
    dispatch_limit.reset();
  }
  {  // The planner's own choice as on a GPU (tests/ops/test_plans.cpp): linear's K-major weight over
     // 16 x 16 tiles, K whole and off the 8-K tiles, with the bias and an activation.
    ScopedEnv gpu("GLTENSOR_MATMUL_KERNEL", "gpu");
    check_linear(rng, {2048, 16}, 2048, DType::f32, false);
    check_linear(rng, {2, 1024, 12}, 2048, DType::f32, true, Activation::relu, [](double x) { return x > 0 ? x : 0; });
    // The forms with A kept K-major in shared memory over few tiles (PlanMatmul.WarpTilesKeepOperandsKMajor):
    // row-major B in 128 tiles of 64 x 128 with K in two chunks; K-major B in 64 x 128 tiles.
    check(rng, {1024, 1024}, {1024, 1024});
    check_linear(rng, {1024, 1024}, 1024, DType::f32, false);
  }
}

// The planner's split-K for few quad-load tiles over a long K (tests/ops/test_plans.cpp
// SplitKForFewQuadLoadTiles) as a GPU plans it: one and two tiles (a batch of two) split into
// chunks, row-major and K-major B, the epilogue applied after the partial sums.
TEST(Matmul, SplitKForFewQuadLoadTilesAsOnAGpu) {
  GLT_RNG(rng);
  ScopedEnv gpu("GLTENSOR_MATMUL_KERNEL", "gpu");
  check(rng, {64, 1024}, {1024, 128});
  check(rng, {2, 64, 1536}, {1536, 128});
  check_linear(rng, {64, 1024}, 128, DType::f32, true, Activation::relu, [](double x) { return x > 0 ? x : 0; });
}

// The K-sliced REG kernel as a GPU plans it (few 64 x 64 tiles over a short K; test_plans
// SlicedRegForFewSmallTiles): the MLP's shapes, odd sizes with K % 4 tails and blocks past the
// edges, batches, transposed operands (quads along M / K), linear's epilogue, NaN/Inf through the
// slices' sums, and split-K under a lowered loop limit with slices within each chunk.
TEST(Matmul, SlicedRegisterKernelAsOnAGpu) {
  GLT_RNG(rng);
  ScopedEnv gpu("GLTENSOR_MATMUL_KERNEL", "gpu");
  for (auto [m, k, n] : std::vector<std::array<std::int64_t, 3>>{
           {128, 784, 256}, {128, 256, 128}, {128, 128, 10}, {10, 128, 128}, {67, 130, 45}, {13, 999, 9}, {9, 5, 11}})
    check(rng, {m, k}, {k, n});
  check(rng, {3, 20, 100}, {100, 30});
  check(rng, {2, 1, 33, 77}, {3, 77, 18});
  // The training step's products: x w^T (B K-major), g^T x (A transposed: quads along M).
  check_linear(rng, {128, 784}, 256, DType::f32, true, Activation::relu, [](double x) { return x > 0 ? x : 0; });
  check_linear(rng, {37, 203}, 21, DType::f32, true);
  check_linear(rng, {64, 96}, 40, DType::f16, false);
  // The CNN's FC1 forward (K = 3136, 4 tiles of 64 x 64: the 64 x 64 kernel in 49 chunks of 64,
  // summed with the bias and ReLU in one dispatch; kSlicedSplitMinK), and a long odd K.
  check_linear(rng, {128, 3136}, 128, DType::f32, true, Activation::relu, [](double x) { return x > 0 ? x : 0; });
  check(rng, {33, 2999}, {2999, 70});
  {
    const std::int64_t M = 256, K = 128, N = 784;
    auto at = uniform(rng, K * M), b = uniform(rng, K * N);
    std::vector<float> a(M * K);
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = 0; j < K; ++j) a[i * K + j] = at[j * M + i];
    Shape os;
    auto ref = ref_matmul(a, {M, K}, b, {K, N}, os);
    Tensor r = matmul(Tensor::from_host(device(), at, {K, M}).t(), Tensor::from_host(device(), b, {K, N}));
    EXPECT_TRUE(close(r.to_vector(), ref, 1e-5, 2e-6 * K)) << "A transposed";
  }
  // NaN in A's row 2 and +Inf in B's column 5 over K = 200 (slices of 32 or more).
  const int K = 200;
  std::vector<float> pa(9 * K, 0.5f), pb(K * 11, 0.25f);
  pa[2 * K + 150] = std::numeric_limits<float>::quiet_NaN();
  pb[20 * 11 + 5] = std::numeric_limits<float>::infinity();
  check_nan_row_inf_column(
      matmul(Tensor::from_host(device(), pa, {9, K}), Tensor::from_host(device(), pb, {K, 11})).to_vector(), 9, 11, K);
  // A lowered loop limit: split-K (chunks summed after the kernel), slices within each chunk.
  ScopedLoopLimit limit(180);
  check(rng, {128, 784}, {784, 256});
  check(rng, {2, 45, 901}, {901, 19});
}

// linear's bias gradient taken by the weight gradient's kernel (REG: llvmpipe's kernel, and the
// K-sliced one as a GPU plans it): one dispatch for both where x needs no gradient, against
// float64 with odd sizes (rows off the quads, K % 4 tails, slices) and a NaN in one output's
// gradient; split-K under a lowered loop limit and f16 operands fall back to the sum, same values.
TEST(Matmul, LinearBiasGradientWithTheWeightGradient) {
  GLT_RNG(rng);
  for (const char* kernel : {"", "gpu"})
    for (auto [rows, K, N] : std::vector<std::array<std::int64_t, 3>>{
             {128, 784, 256}, {7, 13, 5}, {130, 65, 9}, {203, 37, 21}, {64, 96, 10}, {300, 20, 33}})
      for (int mode = 0; mode < 3; ++mode) {  // 0 fused, 1 split-K (loop limit), 2 f16 weights
        SCOPED_TRACE(std::string(kernel) + " " + std::to_string(rows) + "x" + std::to_string(K) + "x" +
                     std::to_string(N) + " mode " + std::to_string(mode));
        if (mode == 1 && rows < 200) continue;  // the weight gradient's K (rows) split in chunks of 148
        if (mode == 2 && rows != 64) continue;
        ScopedEnv env("GLTENSOR_MATMUL_KERNEL", *kernel ? kernel : nullptr);
        std::optional<ScopedLoopLimit> limit;
        if (mode == 1) limit.emplace(40);
        const DType dt = mode == 2 ? DType::f16 : DType::f32;
        auto xv = uniform(rng, static_cast<std::size_t>(rows * K)), wv = uniform(rng, static_cast<std::size_t>(N * K));
        auto bv = uniform(rng, static_cast<std::size_t>(N)), gv = uniform(rng, static_cast<std::size_t>(rows * N));
        round_to(xv, dt);
        round_to(wv, dt);
        round_to(gv, dt);
        if (mode == 0) gv[3 * N + N - 1] = std::numeric_limits<float>::quiet_NaN();  // bias N-1 and w's row N-1
        Tensor x = Tensor::from_host(device(), xv, {rows, K}, dt), w = Tensor::from_host(device(), wv, {N, K}, dt);
        Tensor b = Tensor::from_host(device(), bv, {N}, dt);
        requires_grad_(w);
        requires_grad_(b);
        Tensor y = linear(x, w, b);
        const Tensor seed = Tensor::from_host(device(), gv, {rows, N}, dt);
        device().synchronize();
        const auto d0 = device().dispatch_count();
        backward(y, seed);
        if (mode == 0) {
          EXPECT_EQ(device().dispatch_count() - d0, 1u) << "the bias gradient in the weight gradient's dispatch";
        }
        std::vector<double> db(static_cast<std::size_t>(N), 0.0), dw(wv.size(), 0.0);
        for (std::int64_t m = 0; m < rows; ++m)
          for (std::int64_t n = 0; n < N; ++n) {
            db[n] += gv[m * N + n];
            for (std::int64_t k = 0; k < K; ++k) dw[n * K + k] += double(gv[m * N + n]) * xv[m * K + k];
          }
        const double tol = dt == DType::f32 ? 2e-6 * rows + 1e-6 : 0.05;
        EXPECT_TRUE(close(grad(b).to(DType::f32).to_vector(), db, dt == DType::f32 ? 1e-5 : 1e-2, tol));
        EXPECT_TRUE(close(grad(w).to(DType::f32).to_vector(), dw, dt == DType::f32 ? 1e-5 : 1e-2, tol));
      }
}

// linear + ReLU under autograd: one dispatch forward (the epilogue) and the gradients of x, w
// and bias against float64 (dz = g where the pre-activation > 0, so 0 at exact zeros: a zero row
// of x with a zero bias entry gives z = 0, and a NaN there stays out), for batched and 2-D inputs
// and odd sizes; on llvmpipe's REG kernel and as a GPU plans them (the K-sliced REG kernel), ReLU's
// mask in both products' loads and the bias gradient in the weight gradient's: two dispatches.
TEST(Matmul, LinearReluGradientInOneNode) {
  GLT_RNG(rng);
  for (const char* kernel : {"", "gpu"})
    for (const Shape& sx : std::vector<Shape>{{7, 13}, {1, 5}, {2, 3, 33}, {130, 65}, {128, 784}}) {
      SCOPED_TRACE(std::string(kernel) + " " + to_string(sx));
      ScopedEnv env("GLTENSOR_MATMUL_KERNEL", *kernel ? kernel : nullptr);
      const std::int64_t K = sx.back(), rows = numel_of(sx) / K, N = K % 2 ? 5 : K > 100 ? 256 : 9;
      auto xv = uniform(rng, static_cast<std::size_t>(rows * K)), wv = uniform(rng, static_cast<std::size_t>(N * K));
      auto bv = uniform(rng, static_cast<std::size_t>(N)), gv = uniform(rng, static_cast<std::size_t>(rows * N));
      std::fill(xv.begin(), xv.begin() + K, 0.0f);      // row 0: z = bias
      bv[0] = 0;                                        // z[0, 0] = 0 exactly: no gradient
      gv[0] = std::numeric_limits<float>::quiet_NaN();  // masked out (relu_backward's x > 0 ? g : 0)
      Tensor x = Tensor::from_host(device(), xv, sx), w = Tensor::from_host(device(), wv, {N, K});
      Tensor b = Tensor::from_host(device(), bv, {N});
      for (Tensor* t : {&x, &w, &b}) requires_grad_(*t);
      const auto d0 = device().dispatch_count();
      Tensor y = linear(x, w, b, Activation::relu);
      EXPECT_EQ(device().dispatch_count() - d0, 1u);
      Shape os = sx;
      os.back() = N;
      const Tensor seed = Tensor::from_host(device(), gv, os);
      device().synchronize();
      const auto d1 = device().dispatch_count();
      backward(y, seed);
      EXPECT_EQ(device().dispatch_count() - d1, 2u) << "grad x; grad w with grad b";
      std::vector<double> yr(static_cast<std::size_t>(rows * N)), dz(yr.size()), dx(xv.size(), 0.0), dw(wv.size(), 0.0),
          db(bv.size(), 0.0);
      for (std::int64_t m = 0; m < rows; ++m)
        for (std::int64_t n = 0; n < N; ++n) {
          double z = bv[n];
          for (std::int64_t k = 0; k < K; ++k) z += double(xv[m * K + k]) * wv[n * K + k];
          yr[m * N + n] = z > 0 ? z : 0;
          dz[m * N + n] = z > 0 ? gv[m * N + n] : 0;
          db[n] += dz[m * N + n];
          for (std::int64_t k = 0; k < K; ++k) {
            dx[m * K + k] += dz[m * N + n] * wv[n * K + k];
            dw[n * K + k] += dz[m * N + n] * xv[m * K + k];
          }
        }
      EXPECT_TRUE(close(y.to_vector(), yr, 1e-5, 2e-6 * K));
      EXPECT_TRUE(close(grad(x).to_vector(), dx, 1e-5, 2e-6 * N));
      EXPECT_TRUE(close(grad(w).to_vector(), dw, 1e-5, 2e-6 * rows));
      EXPECT_TRUE(close(grad(b).to_vector(), db, 1e-5, 2e-6 * rows));
    }
}

// Split-K's sum in one dispatch (matmul_sum.comp) with the epilogue, and written transposed
// (detail::matmul_transposed: conv2d's weight gradient): against float64 with forced K slices
// (2, 3, 7, the CNN's 51), odd sizes, outputs past 65535 elements, an addend broadcast along rows
// (linear's bias) with ReLU, batched products (no addend), and without split-K (the copy).
TEST(Matmul, SplitKSumTransposedWithEpilogue) {
  GLT_RNG(rng);
  using K = detail::MatmulKernelSetting;
  for (auto [M, Kd, N] :
       std::vector<std::array<std::int64_t, 3>>{{288, 816, 64}, {37, 129, 70}, {300, 200, 250}, {1, 64, 5}, {5, 48, 1}})
    for (int split : {0, 2, 3, 7, 51}) {
      SCOPED_TRACE(std::to_string(M) + "x" + std::to_string(Kd) + "x" + std::to_string(N) + " split " +
                   std::to_string(split));
      ScopedSettings s;
      s->matmul_kernel = split ? K::tile64 : K::choose, s->matmul_split = split;
      const bool splits = split > 0 && Kd / 16 >= 2;  // the planner's slices: min(split, K / 16)
      auto a = uniform(rng, static_cast<std::size_t>(M * Kd)), b = uniform(rng, static_cast<std::size_t>(Kd * N));
      auto c = uniform(rng, static_cast<std::size_t>(N));
      Shape os;
      const auto ref = ref_matmul(a, {M, Kd}, b, {Kd, N}, os);
      const Tensor ta = Tensor::from_host(device(), a, {M, Kd}), tb = Tensor::from_host(device(), b, {Kd, N});
      const double atol = 2e-6 * static_cast<double>(Kd) + 1e-7;
      device().synchronize();
      auto d0 = device().dispatch_count();
      Tensor t = detail::matmul_transposed(ta, tb);
      if (splits) {
        EXPECT_EQ(device().dispatch_count() - d0, 2u) << "the product and the transposing sum";
      }
      ASSERT_EQ(t.shape(), (Shape{N, M}));
      EXPECT_TRUE(t.is_contiguous());
      std::vector<double> reft(ref.size());
      for (std::int64_t m = 0; m < M; ++m)
        for (std::int64_t n = 0; n < N; ++n) reft[n * M + m] = ref[m * N + n];
      EXPECT_TRUE(close(t.to_vector(), reft, 1e-5, atol)) << "transposed";
      // linear's form: x [M, K] @ w^T + bias, ReLU.
      std::vector<float> wt(static_cast<std::size_t>(N * Kd));
      for (std::int64_t k = 0; k < Kd; ++k)
        for (std::int64_t n = 0; n < N; ++n) wt[n * Kd + k] = b[k * N + n];
      const Tensor w = Tensor::from_host(device(), wt, {N, Kd}), bias = Tensor::from_host(device(), c, {N});
      device().synchronize();
      d0 = device().dispatch_count();
      Tensor y = linear(ta, w, bias, Epilogue(Activation::relu));
      if (splits) {
        EXPECT_EQ(device().dispatch_count() - d0, 2u) << "the product and the sum with the epilogue";
      }
      std::vector<double> refy(ref.size());
      for (std::int64_t m = 0; m < M; ++m)
        for (std::int64_t n = 0; n < N; ++n) refy[m * N + n] = std::max(0.0, ref[m * N + n] + c[n]);
      EXPECT_TRUE(close(y.to_vector(), refy, 1e-5, atol)) << "linear + bias + relu";
    }
  EXPECT_THROW(detail::matmul_transposed(ones(device(), {2, 3, 4}), ones(device(), {4, 5})), ShapeError);
  EXPECT_THROW(detail::matmul_transposed(ones(device(), {3, 4}), ones(device(), {5, 2})), ShapeError);
  // Batched (two entries, no addend): the sum over [splits, 2, M, N].
  for (int split : {3, 51}) {
    ScopedSettings s;
    s->matmul_kernel = K::tile64, s->matmul_split = split;
    check(rng, {2, 33, 900}, {2, 900, 47});
    check(rng, {3, 70, 1000}, {1000, 20});
  }
}

namespace {
// Split-K's sum as the tests below force it: a [M, K] @ b [K, N] against float64 as a product,
// as act(alpha a @ b + beta d) with d [N] broadcast over rows and ReLU, and transposed
// (detail::matmul_transposed).
void check_split_sum_forms(std::mt19937_64& rng, std::int64_t M, std::int64_t K, std::int64_t N, double alpha,
                           double beta) {
  auto a = uniform(rng, M * K), b = uniform(rng, K * N), d = uniform(rng, N);
  Shape os;
  const auto ref = ref_matmul(a, {M, K}, b, {K, N}, os);
  const Tensor ta = Tensor::from_host(device(), a, {M, K}), tb = Tensor::from_host(device(), b, {K, N});
  const double atol = 2e-6 * static_cast<double>(K);
  EXPECT_TRUE(close(matmul(ta, tb).to_vector(), ref, 1e-5, atol)) << "the product";
  const Tensor e = matmul_fused(ta, tb, Tensor::from_host(device(), d, {N}), alpha, beta, Activation::relu);
  std::vector<double> ref_e(ref.size()), ref_t(ref.size());
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t n = 0; n < N; ++n) {
      ref_e[m * N + n] = std::max(0.0, alpha * ref[m * N + n] + beta * d[n]);
      ref_t[n * M + m] = ref[m * N + n];
    }
  EXPECT_TRUE(close(e.to_vector(), ref_e, 1e-5, atol)) << "alpha, beta, addend, relu";
  const Tensor t = detail::matmul_transposed(ta, tb);
  ASSERT_EQ(t.shape(), (Shape{N, M}));
  EXPECT_TRUE(close(t.to_vector(), ref_t, 1e-5, atol)) << "transposed";
}
}  // namespace

// Split-K into more chunks than the device's loop limit lets one invocation loop over: the sum
// with the epilogue cannot run in matmul_sum.comp's one dispatch (its loop over the chunks would
// pass the limit: LimitError "internal error"), so the partials go through the sum's reduction,
// then the epilogue's ops (and the transposing copy). REG under a limit of 32 loops: K = 8192 in
// about 75 chunks. Against float64: the product, alpha / beta with an addend broadcast over rows
// and ReLU, and the transposed product. Sabotage: the loop-limit condition on the one-dispatch
// sum left out (all three throw LimitError).
TEST(Matmul, SplitKSumPastTheLoopLimit) {
  GLT_RNG(rng);
  ScopedEnv env("GLTENSOR_MATMUL_KERNEL", "reg");
  ScopedLoopLimit loops(32);
  check_split_sum_forms(rng, 6, 8192, 5, 0.5, -2.0);
}

// matmul_sum.comp near the device limits (GPUs; llvmpipe runs the same forms at small sizes above):
// 2 forced K slices of a 4097 x 32 x 4095 product, the partials 8 bytes under 128 MiB (the second
// slice's from element 16777215) and the sum's grid 65537 workgroups (one row on the H100; two rows
// where a device allows 65535 along x: SplitKSumOnASplitGrid); then 65540 forced slices of 16 over
// K = 1048640 (5 x 3 outputs): the sum's loop over the slices past 65535 trips in one dispatch.
// Each as a product, with alpha, beta, an addend and ReLU, and transposed, against float64.
// Sabotage (H100): the sum's loop cut at 65535 trips (k < min(u_nsplit, 65535u)) in matmul_sum.comp
// fails the second, the partials' index in 24 bits ((k u_n + i) & 0xffffffu) the first.
TEST(Matmul, SplitKSumNearTheSsboLimitAndPastTheLoopLimitOnGpus) {
  if (device().adapter().software) GTEST_SKIP() << "GPUs only (llvmpipe: the sum's forms at small sizes)";
  GLT_RNG(rng);
  {
    ScopedSettings s;
    s->matmul_kernel = detail::MatmulKernelSetting::tile64, s->matmul_split = 2;
    const std::int64_t M = 4097, K = 32, N = 4095;
    ASSERT_LE(2 * M * N * 4, std::int64_t{128} << 20);
    ASSERT_GT(2 * M * N, std::int64_t{1} << 24);  // partials past element 2^24
    check_split_sum_forms(rng, M, K, N, -0.5, 1.5);
  }
  {
    ScopedSettings s;
    s->matmul_kernel = detail::MatmulKernelSetting::tile64, s->matmul_split = 65540;
    check_split_sum_forms(rng, 5, 16 * 65540, 3, 0.5, -2.0);
  }
}

// The result written in column groups (conv2d's NCHW: detail::matmul_split_columns) by the warp
// kernel's 64-row form, as a GPU plans it for 128 to 255 whole 64 x 128 tiles over K >= 256 (cnn30;
// PlanMatmul.WarpForShortKColumnGroups): groups that straddle the 128-column tiles (the CNN's
// conv2: 196 positions an image; 12; 20) and ones that split them (64), with conv's per-channel
// bias (an addend broadcast along rows) and ReLU; one dispatch, against float64. (Conv2d.
// ForwardOnTheWarpKernelInColumnGroups runs 256 positions an image only: whole tiles.) Sabotage:
// the column group's index in matmul_quads.glsl's SPLIT_COLS store taken as (n / 4) / u_split.
TEST(Matmul, SplitColumnsOnTheWarpKernel) {
  GLT_RNG(rng);
  ScopedSettings s;
  s->matmul_kernel = detail::MatmulKernelSetting::gpu;
  const std::int64_t M = 64, K = 288, N = 128 * 147;  // 147 tiles; 18816 = 96 x 196
  auto a = uniform(rng, M * K), b = uniform(rng, K * N), bias = uniform(rng, M);
  Shape os;
  const auto ref = ref_matmul(a, {M, K}, b, {K, N}, os);
  const Tensor ta = Tensor::from_host(device(), a, {M, K}), tb = Tensor::from_host(device(), b, {K, N});
  const Tensor tbias = Tensor::from_host(device(), bias, {M, 1});
  for (std::int64_t split : {196, 12, 84, 64}) {
    SCOPED_TRACE("split " + std::to_string(split));
    ASSERT_EQ(N % split, 0);
    device().synchronize();
    const auto d0 = device().dispatch_count();
    const Tensor y = detail::matmul_split_columns(ta, tb, tbias, split, Activation::relu);
    ASSERT_TRUE(y.defined()) << "the planner did not write the column groups";
    EXPECT_EQ(device().dispatch_count() - d0, 1u);
    ASSERT_EQ(y.shape(), (Shape{N / split, M, split}));
    std::vector<double> want(ref.size());
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t n = 0; n < N; ++n)
        want[((n / split) * M + m) * split + n % split] = std::max(0.0, ref[m * N + n] + bias[m]);
    EXPECT_TRUE(close(y.to_vector(), want, 1e-5, 2e-6 * K));
  }
}

// matmul_sum.comp's one-dimensional grid split over several dispatches (a dispatch limit of 3
// workgroups per dimension, as grids past the GPUs' 65535 workgroups are: 2-D rows, then several
// dispatches): split-K's sum with alpha, beta, an addend broadcast over rows and ReLU, and the
// transposed store, 37 x 300 x 70 (11 workgroups of 256 outputs) against float64. Sabotage: the
// output's index from gl_GlobalInvocationID.x instead of GLOBAL_ID_1D in matmul_sum.comp.
TEST(Matmul, SplitKSumOnASplitGrid) {
  GLT_RNG(rng);
  ScopedSettings s;
  s->matmul_kernel = detail::MatmulKernelSetting::tile64, s->matmul_split = 3;
  ScopedDispatchLimit limit(3);
  check_split_sum_forms(rng, 37, 300, 70, -0.5, 1.5);
}
