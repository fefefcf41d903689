// Precision::f16_allowed (issue 15, docs/precision.md): matmul with f16 products and f16 partial
// sums over blocks of K flushed to f32, elementwise ops on f16 tensors in f16 vectors, against a
// float64 reference; on devices without fp16 arithmetic the mode falls back to f32 math, and
// that fallback must give the f32 path's results bit for bit.
#include <cmath>
#include <cstdlib>

#include "test_util.hpp"

using namespace glt_test;
using namespace gltensor;

namespace {

constexpr double kU = 1.0 / 2048;  // f16 unit roundoff (2^-11)

// The test device's precision for a scope.
class ScopedPrecision {
 public:
  explicit ScopedPrecision(Precision p) : saved_(device().precision()) { device().set_precision(p); }
  ~ScopedPrecision() { device().set_precision(saved_); }
  ScopedPrecision(const ScopedPrecision&) = delete;
  ScopedPrecision& operator=(const ScopedPrecision&) = delete;

 private:
  Precision saved_;
};

// The f16 kernels run on devices with fp16 arithmetic (the F16* tests check them there) and with
// GLTENSOR_PRECISION=f16-emulate, which runs the same kernel forms with f32 types in place of the
// f16 ones on any device (llvmpipe): their indexing is checked, not the f16 rounding.
bool emulated() { return detail::settings().precision == detail::PrecisionSetting::f16_emulate; }
bool has_f16_math() {
  return device().caps().fp16_arithmetic || detail::settings().precision == detail::PrecisionSetting::f16_force ||
         emulated();
}

// matmul's f16 math is taken only on request (GLTENSOR_PRECISION=f16-matmul: slower than f32 on
// the H100, DeviceImpl::fp16_matmul); the F16Matmul tests ask for it.
class ScopedF16Matmul {
 public:
  ScopedF16Matmul() {
    using P = detail::PrecisionSetting;
    if (s_->precision == P::f32 || s_->precision == P::f16) s_->precision = P::f16_matmul;
  }

 private:
  ScopedSettings s_;
};

struct MatmulCase {
  std::int64_t M, K, N;
  DType dt;
  const char* kernel;  // Settings::matmul_kernel ("" = the planner's choice)
  std::uint64_t loop_limit;
};

// a [M, K] @ b [K, N] in float64 with the inputs as the device holds them, and sum |a||b|.
void reference(const std::vector<float>& a, const std::vector<float>& b, const MatmulCase& c, std::vector<double>& ref,
               std::vector<double>& scale) {
  ref.assign(static_cast<std::size_t>(c.M * c.N), 0.0);
  scale = ref;
  for (std::int64_t m = 0; m < c.M; ++m)
    for (std::int64_t k = 0; k < c.K; ++k) {
      const double x = a[m * c.K + k];
      for (std::int64_t n = 0; n < c.N; ++n) {
        ref[m * c.N + n] += x * b[k * c.N + n];
        scale[m * c.N + n] += std::fabs(x * b[k * c.N + n]);
      }
    }
}

Tensor run_matmul(const MatmulCase& c, const std::vector<float>& a, const std::vector<float>& b) {
  ScopedSettings s;
  s->matmul_kernel = detail::parse_matmul_kernel(c.kernel);
  ScopedLoopLimit limit(c.loop_limit);
  return matmul(Tensor::from_host(device(), a, {c.M, c.K}, c.dt), Tensor::from_host(device(), b, {c.K, c.N}, c.dt))
      .to(DType::f32);
}

// Every planned kernel: 64x64 tiles (ragged), 128x128 tiles, the quad-load kernel (plain and
// sliced/unrolled), split-K (loop limit lowered), f16 operands.
const std::vector<MatmulCase> kCases = {
    {67, 300, 45, DType::f32, "tile64", 0}, {256, 200, 256, DType::f32, "tile128", 0},
    {128, 512, 256, DType::f32, "vec4", 0}, {128, 512, 256, DType::f32, "vec4su", 0},
    {70, 5000, 30, DType::f32, "", 4000},   {64, 1000, 128, DType::f16, "vec4", 0},
    {33, 257, 17, DType::f16, "tile64", 0},
};

std::vector<float> rounded_uniform(std::mt19937_64& rng, std::size_t n, DType dt) {
  auto v = uniform(rng, n);
  if (dt == DType::f16)
    for (auto& x : v) x = f16_to_f32(f32_to_f16(x));
  return v;
}

}  // namespace

TEST(Precision, F32IsTheDefault) {
  if (const char* p = std::getenv("GLTENSOR_PRECISION"); p && *p)
    GTEST_SKIP() << "GLTENSOR_PRECISION is set (" << p << ")";
  Device dev = Device::open();
  EXPECT_EQ(dev.precision(), Precision::f32);
  EXPECT_EQ(dev.precision_in_effect(), Precision::f32);
  OpenOptions o;
  o.precision = Precision::f16_allowed;
  Device d16 = Device::open(o);
  EXPECT_EQ(d16.precision(), Precision::f16_allowed);
  EXPECT_EQ(d16.precision_in_effect(), d16.caps().fp16_arithmetic ? Precision::f16_allowed : Precision::f32);
  ScopedEnv env("GLTENSOR_PRECISION", "f16");
  EXPECT_EQ(Device::open().precision(), Precision::f16_allowed);
}

// Without fp16 arithmetic: f16_allowed is accepted, reports f32 in effect, and every op gives
// the f32 path's results exactly.
TEST(Precision, FallbackWithoutFp16ArithmeticIsTheF32Path) {
  if (has_f16_math()) GTEST_SKIP() << "the device has fp16 arithmetic (F16* tests cover it)";
  GLT_RNG(rng);
  for (const MatmulCase& c : kCases) {
    auto a = rounded_uniform(rng, c.M * c.K, c.dt), b = rounded_uniform(rng, c.K * c.N, c.dt);
    const std::vector<float> f32 = run_matmul(c, a, b).to_vector();
    ScopedPrecision p(Precision::f16_allowed);
    EXPECT_EQ(device().precision_in_effect(), Precision::f32);
    EXPECT_EQ(run_matmul(c, a, b).to_vector(), f32) << c.M << "x" << c.K << "x" << c.N << " " << c.kernel;
  }
  auto x = rounded_uniform(rng, 1000, DType::f16), y = rounded_uniform(rng, 1000, DType::f16);
  Tensor tx = Tensor::from_host(device(), x, {1000}, DType::f16),
         ty = Tensor::from_host(device(), y, {1000}, DType::f16);
  const std::vector<float> add32 = add(tx, ty).to_vector(), relu32 = relu(tx).to_vector();
  ScopedPrecision p(Precision::f16_allowed);
  EXPECT_EQ(add(tx, ty).to_vector(), add32);
  EXPECT_EQ(relu(tx).to_vector(), relu32);
}

// f16 math: |c - ref| <= (3 + F16_BLOCK - 1) u sum_k |a_ik b_kj| elementwise (inputs rounded to
// f16: 2u; each product: u; a block's recursive f16 sum: (block - 1) u, all relative to the sum
// of |products|; f32 parts negligible), the mean of |c - ref| / scale within 4u (rounding errors
// of random signs grow as sqrt(block)), and above 0 (the f16 path ran: f32 math is ~1e-7).
TEST(Precision, F16MatmulWithinTheDocumentedBound) {
  if (!has_f16_math()) GTEST_SKIP() << "the device has no fp16 arithmetic (Capabilities::fp16_arithmetic)";
  GLT_RNG(rng);
  ScopedPrecision p(Precision::f16_allowed);
  ScopedF16Matmul f16_matmul;
  ASSERT_EQ(device().precision_in_effect(), Precision::f16_allowed);
  for (const MatmulCase& c : kCases) {
    auto a = rounded_uniform(rng, c.M * c.K, c.dt), b = rounded_uniform(rng, c.K * c.N, c.dt);
    std::vector<double> ref, scale;
    reference(a, b, c, ref, scale);
    const std::vector<float> got = run_matmul(c, a, b).to_vector();
    ASSERT_EQ(got.size(), ref.size());
    const double out_round = c.dt == DType::f16 ? kU : 0.0;  // an f16 result is rounded once more
    double max_rel = 0, sum_rel = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double err = std::fabs(got[i] - ref[i]), s = scale[i] > 0 ? scale[i] : 1;
      ASSERT_LE(err, (3 + kF16BlockK - 1) * kU * s + out_round * std::fabs(ref[i]) + 1e-30)
          << "element " << i << " of " << c.M << "x" << c.K << "x" << c.N << " " << c.kernel;
      max_rel = std::max(max_rel, err / s);
      sum_rel += err / s;
    }
    const double mean_rel = sum_rel / got.size();
    std::printf("f16 matmul %lldx%lldx%lld %s %s: max |err|/sum|ab| %.3g, mean %.3g\n", (long long)c.M, (long long)c.K,
                (long long)c.N, dtype_name(c.dt), c.kernel, max_rel, mean_rel);
    EXPECT_LE(mean_rel, 4 * kU);
    if (!emulated()) {
      EXPECT_GT(max_rel, 1e-6) << "no f16 rounding seen: the f16 path did not run";
    }
  }
}

// f16 tensors, ops with an f16 form: each result within one f16 ulp (2u relative) of the exact
// value of the f16 inputs.
TEST(Precision, F16ElementwiseWithinOneUlp) {
  if (!has_f16_math()) GTEST_SKIP() << "the device has no fp16 arithmetic (Capabilities::fp16_arithmetic)";
  GLT_RNG(rng);
  ScopedPrecision p(Precision::f16_allowed);
  const std::int64_t n = 4098;
  auto x = rounded_uniform(rng, n, DType::f16), y = rounded_uniform(rng, n, DType::f16);
  for (auto& v : y)
    if (std::fabs(v) < 0.01f) v = 0.5f;  // divisors away from 0
  x[0] = NAN, x[1] = -INFINITY, x[2] = -0.0f;
  Tensor tx = Tensor::from_host(device(), x, {n}, DType::f16), ty = Tensor::from_host(device(), y, {n}, DType::f16);
  struct Op {
    const char* name;
    Tensor got;
    double (*ref)(double, double);
  };
  const std::vector<Op> ops = {
      {"add", add(tx, ty), [](double a, double b) { return a + b; }},
      {"sub", sub(tx, ty), [](double a, double b) { return a - b; }},
      {"mul", mul(tx, ty), [](double a, double b) { return a * b; }},
      {"div", div(tx, ty), [](double a, double b) { return a / b; }},
      {"mul_scalar", mul(tx, 3.0), [](double a, double) { return a * 3.0; }},
      {"neg", neg(tx), [](double a, double) { return -a; }},
      {"square", square(tx), [](double a, double) { return a * a; }},
      {"reciprocal", reciprocal(ty), [](double, double b) { return 1 / b; }},
      {"relu", relu(tx), [](double a, double) { return std::isnan(a) ? a
                                                       : a > 0       ? a
                                                                     : 0.0; }},
  };
  for (const Op& op : ops) {
    EXPECT_EQ(op.got.dtype(), DType::f16) << op.name;
    const std::vector<float> got = op.got.to_vector();
    for (std::int64_t i = 0; i < n; ++i) {
      const double r = op.ref(x[i], y[i]);
      if (std::isnan(r)) {
        EXPECT_TRUE(std::isnan(got[i])) << op.name << " at " << i;
      } else if (std::isinf(r) || std::fabs(r) > 65504) {
        EXPECT_EQ(got[i], r > 0 ? INFINITY : -INFINITY) << op.name << " at " << i;
      } else {
        EXPECT_LE(std::fabs(got[i] - r), 2 * kU * std::fabs(r) + 6e-8) << op.name << " at " << i << ": " << got[i];
      }
    }
  }
}

// The f16 form covers every word of its output (root cause: the grid was counted as f16 words,
// then counted again as output words, so it was half as long and the second half of the output
// was never written: a product of 100 elements kept elements 50..99 of whatever the buffer
// held, BinaryOps.MixedDtypesPromote's h * h; of 4098, from 2050 on). The outputs are prefilled
// with a sentinel (a fresh buffer may hold the right answer from an earlier identical op), at
// offset 0 and at even offsets (views), for counts around the word and workgroup boundaries.
TEST(Precision, F16ElementwiseWritesEveryElement) {
  if (!has_f16_math()) GTEST_SKIP() << "the device has no fp16 arithmetic (Capabilities::fp16_arithmetic)";
  GLT_RNG(rng);
  ScopedPrecision p(Precision::f16_allowed);
  for (std::int64_t n : {2, 4, 100, 510, 512, 514, 4096, 4098, 8194}) {
    for (std::int64_t off : {0, 2, 6}) {
      auto x = rounded_uniform(rng, n + off, DType::f16), y = rounded_uniform(rng, n + off, DType::f16);
      for (auto& v : y)
        if (std::fabs(v) < 0.01f) v = 0.5f;
      const Tensor tx = Tensor::from_host(device(), x, {n + off}, DType::f16).narrow(0, off, n);
      const Tensor ty = Tensor::from_host(device(), y, {n + off}, DType::f16).narrow(0, off, n);
      const std::vector<float> sentinel(n + off, 1234.0f);
      auto check = [&](const char* name, double (*ref)(double, double), auto run) {
        Tensor out = Tensor::from_host(device(), sentinel, {n + off}, DType::f16).narrow(0, off, n);
        run(out);
        const std::vector<float> got = out.to_vector();
        for (std::int64_t i = 0; i < n; ++i) {
          const double r = ref(x[off + i], y[off + i]);
          ASSERT_LE(std::fabs(got[i] - r), 2 * kU * std::fabs(r) + 6e-8)
              << name << " of " << n << " at offset " << off << ", element " << i << ": " << got[i];
        }
      };
      check(
          "relu", [](double a, double) { return a > 0 ? a : 0.0; }, [&](Tensor& o) { relu_out(o, tx); });
      check(
          "neg", [](double a, double) { return -a; }, [&](Tensor& o) { neg_out(o, tx); });
      check(
          "add", [](double a, double b) { return a + b; }, [&](Tensor& o) { add_out(o, tx, ty); });
      check(
          "mul", [](double a, double b) { return a * b; }, [&](Tensor& o) { mul_out(o, tx, ty); });
      check(
          "div", [](double a, double b) { return a / b; }, [&](Tensor& o) { div_out(o, tx, ty); });
      // h * h (the same tensor twice), in place.
      Tensor h = Tensor::from_host(device(), x, {n + off}, DType::f16).narrow(0, off, n);
      mul_(h, h);
      const std::vector<float> got = h.to_vector();
      for (std::int64_t i = 0; i < n; ++i) {
        const double r = double(x[off + i]) * x[off + i];
        ASSERT_LE(std::fabs(got[i] - r), 2 * kU * r + 6e-8) << "h * h of " << n << " at " << off << ", " << i;
      }
    }
  }
}

// A scalar operand or alpha is of another dtype than the f16 tensors: the f16 form rounded it to
// f16 first (x + 0.1 at x = f16(-0.1): 0 instead of 2.44e-5; x * 1e5: Inf; a + 3 b rounded 3 b
// before the sum). Each result within one f16 ulp of the exact value with the scalar as given.
TEST(Precision, F16ElementwiseScalarsAreNotRoundedToF16) {
  if (!has_f16_math()) GTEST_SKIP() << "the device has no fp16 arithmetic (Capabilities::fp16_arithmetic)";
  ScopedPrecision p(Precision::f16_allowed);
  const float m01 = f16_to_f32(f32_to_f16(-0.1f));
  std::vector<float> x = {m01, m01, 1e-4f, -2e-4f, 0.5f, -0.25f, 3.0f, m01};
  for (auto& v : x) v = f16_to_f32(f32_to_f16(v));
  std::vector<float> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = f16_to_f32(f32_to_f16(-x[i] / 3.0f));
  const auto n = static_cast<std::int64_t>(x.size());
  const Tensor tx = Tensor::from_host(device(), x, {n}, DType::f16),
               ty = Tensor::from_host(device(), y, {n}, DType::f16);
  struct Op {
    const char* name;
    Tensor got;
    double (*ref)(double, double);
  };
  const std::vector<Op> ops = {
      {"x + 0.1", add(tx, 0.1), [](double a, double) { return a + double(0.1f); }},
      {"0.1 - x", sub(0.1, tx), [](double a, double) { return double(0.1f) - a; }},
      {"x * 1e5", mul(tx, 1e5), [](double a, double) { return a * 1e5; }},
      {"x / 0.3", div(tx, 0.3), [](double a, double) { return a / double(0.3f); }},
      {"x + 3 y", add(tx, ty, 3.0), [](double a, double b) { return a + 3 * b; }},
      {"x - 0.1 y", sub(tx, ty, 0.1), [](double a, double b) { return a - double(0.1f) * b; }},
  };
  for (const Op& op : ops) {
    const std::vector<float> got = op.got.to_vector();
    for (std::int64_t i = 0; i < n; ++i) {
      const double r = op.ref(x[i], y[i]);
      if (std::fabs(r) > 65504) {
        EXPECT_EQ(got[i], r > 0 ? INFINITY : -INFINITY) << op.name << " at " << i;
      } else {
        EXPECT_LE(std::fabs(got[i] - r), 2 * kU * std::fabs(r) + 6e-8) << op.name << " at " << i << ": " << got[i];
      }
    }
  }
}

// f16 matmul at the tile and block edges, per kernel and operand dtype: K around the K-tiles
// (8, 16) and the f16 block (32: a flush after every block and after the last tile), M and N
// around the tiles (64, 128) and ragged, the HalfStorage and epilogue shapes of test_matmul (f16
// operands 33x40x17; gemm with transposed operands, alpha, beta and a broadcast addend, the one
// that gave NaN at test_matmul.cpp:151). Each output finite and within the documented bound.
TEST(Precision, F16MatmulTileAndBlockEdges) {
  if (!has_f16_math()) GTEST_SKIP() << "the device has no fp16 arithmetic (Capabilities::fp16_arithmetic)";
  GLT_RNG(rng);
  ScopedPrecision p(Precision::f16_allowed);
  ScopedF16Matmul f16_matmul;
  std::vector<MatmulCase> cases;
  for (const char* kernel : {"tile64", "tile128"})
    for (DType dt : {DType::f32, DType::f16})
      for (std::int64_t k : {1, 8, 15, 16, 17, 31, 32, 33, 48, 64, 65}) {
        cases.push_back({9, k, 9, dt, kernel, 0});
        cases.push_back({65, k, 130, dt, kernel, 0});
      }
  for (DType dt : {DType::f32, DType::f16}) {
    cases.push_back({33, 40, 17, dt, "tile64", 0});
    for (std::int64_t k : {8, 16, 24, 32, 40, 64, 72}) cases.push_back({64, k, 128, dt, "vec4", 0});
    cases.push_back({64, 64, 128, dt, "vec4s", 0});
    cases.push_back({64, 64, 128, dt, "vec4u", 0});
  }
  cases.push_back({70, 5000, 30, DType::f32, "tile64", 4000});  // split-K with F16_MATH
  for (const MatmulCase& c : cases) {
    auto a = rounded_uniform(rng, c.M * c.K, c.dt), b = rounded_uniform(rng, c.K * c.N, c.dt);
    std::vector<double> ref, scale;
    reference(a, b, c, ref, scale);
    const std::vector<float> got = run_matmul(c, a, b).to_vector();
    const double out_round = c.dt == DType::f16 ? kU : 0.0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      ASSERT_TRUE(std::isfinite(got[i])) << "element " << i << " of " << c.M << "x" << c.K << "x" << c.N << " "
                                         << dtype_name(c.dt) << " " << c.kernel;
      // plus f16's subnormal spacing (2^-24) for each rounding of a product or partial sum that
      // lands below 2^-14, where f16's error is absolute, not relative (H100: 1.5e-8 against a
      // relative bound of 1.3e-8 for an element of scale 7.6e-7)
      ASSERT_LE(std::fabs(got[i] - ref[i]),
                (3 + kF16BlockK - 1) * kU * scale[i] + out_round * std::fabs(ref[i]) + (3 + kF16BlockK) * 0x1p-24)
          << "element " << i << " of " << c.M << "x" << c.K << "x" << c.N << " " << dtype_name(c.dt) << " " << c.kernel;
    }
  }
  // test_matmul.cpp:151: gemm(a^T, b^T) * 0.5 + 2 c, M 20, K 30, N 25 (tile64 on GPUs).
  ScopedSettings s;
  s->matmul_kernel = detail::MatmulKernelSetting::tile64;
  const int M = 20, K = 30, N = 25;
  auto a = rounded_uniform(rng, K * M, DType::f32), b = rounded_uniform(rng, N * K, DType::f32),
       cv = rounded_uniform(rng, N, DType::f32);
  Tensor ta = Tensor::from_host(device(), a, {K, M}), tb = Tensor::from_host(device(), b, {N, K});
  const std::vector<float> g = gemm(ta, tb, Tensor::from_host(device(), cv, {N}), 0.5, 2.0, true, true).to_vector();
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double s = 0, sa = 0;
      for (int k = 0; k < K; ++k) {
        s += double(a[k * M + m]) * b[n * K + k];
        sa += std::fabs(double(a[k * M + m]) * b[n * K + k]);
      }
      ASSERT_TRUE(std::isfinite(g[m * N + n])) << "gemm (" << m << ", " << n << ")";
      ASSERT_NEAR(g[m * N + n], 0.5 * s + 2.0 * cv[n], 0.5 * (3 + kF16BlockK - 1) * kU * sa + 1e-6)
          << "gemm (" << m << ", " << n << ")";
    }
}

namespace {

// The packed-half kernel (GLTENSOR_F16_MATMUL=f16x2, matmul_f16x2.comp) with the planner's GPU
// choice (llvmpipe with GLTENSOR_PRECISION=f16-emulate runs it too).
class ScopedF16x2 {
 public:
  ScopedF16x2() {
    s_->f16_matmul = detail::F16MatmulSetting::f16x2;
    s_->matmul_kernel = detail::MatmulKernelSetting::gpu;
  }

 private:
  ScopedF16Matmul f16_matmul_;
  ScopedSettings s_;
};

// a [M, K] @ b [K, N] stored row-major or transposed (a_t: A held as [K, M], read as a.t(): quads
// along M; b_t: B held as [N, K], linear's w.t(): quads along K), over `batch` entries of B (A
// broadcast); the result [batch, M, N] in f32.
struct PackedCase {
  std::int64_t M, K, N;
  DType dt;
  bool a_t, b_t;
  std::int64_t batch;
};

Tensor host_matrix(const std::vector<float>& v, std::int64_t rows, std::int64_t cols, bool transposed, DType dt,
                   std::int64_t batch = 1) {
  if (!transposed) return Tensor::from_host(device(), v, {batch, rows, cols}, dt).squeeze(0);
  std::vector<float> t(v.size());
  for (std::int64_t z = 0; z < batch; ++z)
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c) t[(z * cols + c) * rows + r] = v[(z * rows + r) * cols + c];
  return Tensor::from_host(device(), t, {batch, cols, rows}, dt).squeeze(0).transpose(-1, -2);
}

}  // namespace

// The packed-half kernel against float64 within the documented bound (per element, and a mean
// within 4u), on every operand layout (K-major or not, A and B), f32 and f16 operands, K of one
// 16-K tile, one f16 block, a block and a half, many blocks and split-K (K = 4096 over 4 tiles),
// batched B, and shapes it does not take (odd M, N, K: the other kernels' F16_MATH forms).
TEST(Precision, F16x2MatmulWithinTheDocumentedBound) {
  if (!has_f16_math()) GTEST_SKIP() << "the device has no fp16 arithmetic (Capabilities::fp16_arithmetic)";
  GLT_RNG(rng);
  ScopedPrecision p(Precision::f16_allowed);
  ScopedF16x2 f16x2;
  std::vector<PackedCase> cases;
  for (DType dt : {DType::f32, DType::f16})
    for (int layout = 0; layout < 4; ++layout) {
      const bool a_t = layout & 1, b_t = layout & 2;
      for (std::int64_t k : {16, 32, 48, 1008}) cases.push_back({64, k, 128, dt, a_t, b_t, 1});
      cases.push_back({128, 80, 256, dt, a_t, b_t, 2});
    }
  cases.push_back({64, 4096, 128, DType::f32, false, false, 1});  // split-K
  cases.push_back({64, 4096, 128, DType::f16, false, true, 1});
  for (DType dt : {DType::f32, DType::f16}) {  // not the packed kernel's
    cases.push_back({67, 300, 45, dt, false, false, 1});
    cases.push_back({64, 40, 128, dt, false, false, 1});
    cases.push_back({33, 257, 17, dt, true, true, 1});
  }
  for (const PackedCase& c : cases) {
    const std::string name = std::to_string(c.M) + "x" + std::to_string(c.K) + "x" + std::to_string(c.N) + " " +
                             dtype_name(c.dt) + (c.a_t ? " a.t()" : "") + (c.b_t ? " b.t()" : "") + " batch " +
                             std::to_string(c.batch);
    auto a = rounded_uniform(rng, c.M * c.K, c.dt), b = rounded_uniform(rng, c.batch * c.K * c.N, c.dt);
    const Tensor got_t = matmul(host_matrix(a, c.M, c.K, c.a_t, c.dt), host_matrix(b, c.K, c.N, c.b_t, c.dt, c.batch));
    ASSERT_EQ(got_t.dtype(), c.dt) << name;
    const std::vector<float> got = got_t.to(DType::f32).to_vector();
    ASSERT_EQ(got.size(), static_cast<std::size_t>(c.batch * c.M * c.N)) << name;
    const double out_round = c.dt == DType::f16 ? kU : 0.0;
    double max_rel = 0, sum_rel = 0;
    for (std::int64_t z = 0; z < c.batch; ++z) {
      const std::vector<float> bz(b.begin() + z * c.K * c.N, b.begin() + (z + 1) * c.K * c.N);
      std::vector<double> ref, scale;
      reference(a, bz, {c.M, c.K, c.N, c.dt, "", 0}, ref, scale);
      for (std::size_t i = 0; i < ref.size(); ++i) {
        const double g = got[z * c.M * c.N + i], err = std::fabs(g - ref[i]), s = scale[i] > 0 ? scale[i] : 1;
        ASSERT_TRUE(std::isfinite(g)) << "element " << i << " of entry " << z << ", " << name;
        ASSERT_LE(err,
                  (3 + kF16BlockK - 1) * kU * scale[i] + out_round * std::fabs(ref[i]) + (3 + kF16BlockK) * 0x1p-24)
            << "element " << i << " of entry " << z << ", " << name;
        max_rel = std::max(max_rel, err / s);
        sum_rel += err / s;
      }
    }
    EXPECT_LE(sum_rel / got.size(), 4 * kU) << name;
    if (!emulated()) {
      EXPECT_GT(max_rel, 1e-6) << "no f16 rounding seen: the f16 path did not run, " << name;
    }
  }
}

// The packed-half kernel's epilogue and special values: gemm(a^T, b^T) * 0.5 + 2 bias (A quads
// along M, B along K, a broadcast addend) to an f16 result; an Inf in A gives +-Inf along its row
// (the sign of each product), a NaN in B NaN down its column, everything else finite and within
// the bound.
TEST(Precision, F16x2MatmulEpilogueAndSpecialValues) {
  if (!has_f16_math()) GTEST_SKIP() << "the device has no fp16 arithmetic (Capabilities::fp16_arithmetic)";
  GLT_RNG(rng);
  ScopedPrecision p(Precision::f16_allowed);
  ScopedF16x2 f16x2;
  const std::int64_t M = 128, K = 96, N = 256;
  auto a = rounded_uniform(rng, M * K, DType::f16), b = rounded_uniform(rng, K * N, DType::f16),
       bias = rounded_uniform(rng, N, DType::f16);
  const Tensor ta = host_matrix(a, M, K, true, DType::f16), tb = host_matrix(b, K, N, true, DType::f16);
  const std::vector<float> g =
      gemm(ta, tb, Tensor::from_host(device(), bias, {N}, DType::f16), 0.5, 2.0).to(DType::f32).to_vector();
  std::vector<double> ref, scale;
  reference(a, b, {M, K, N, DType::f16, "", 0}, ref, scale);
  for (std::int64_t i = 0; i < M * N; ++i) {
    const double r = 0.5 * ref[i] + 2.0 * bias[i % N];
    ASSERT_LE(std::fabs(g[i] - r), 0.5 * (3 + kF16BlockK - 1) * kU * scale[i] + kU * std::fabs(r) + 1e-6)
        << "gemm element " << i;
  }
  const std::int64_t inf_row = 5, inf_k = 37, nan_col = 77, nan_k = 90;
  a[inf_row * K + inf_k] = INFINITY;
  b[nan_k * N + nan_col] = NAN;
  for (std::int64_t n = 0; n < N; ++n)
    if (b[inf_k * N + n] == 0) b[inf_k * N + n] = 0.5f;  // Inf * 0 would be NaN
  for (DType dt : {DType::f32, DType::f16}) {
    const std::vector<float> c =
        matmul(host_matrix(a, M, K, false, dt), host_matrix(b, K, N, false, dt)).to(DType::f32).to_vector();
    reference(a, b, {M, K, N, dt, "", 0}, ref, scale);
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t n = 0; n < N; ++n) {
        const float v = c[m * N + n];
        if (n == nan_col) {
          EXPECT_TRUE(std::isnan(v)) << dtype_name(dt) << " (" << m << ", " << n << ")";
        } else if (m == inf_row) {
          EXPECT_EQ(v, b[inf_k * N + n] > 0 ? INFINITY : -INFINITY) << dtype_name(dt) << " (" << m << ", " << n << ")";
        } else {
          const double out_round = dt == DType::f16 ? kU * std::fabs(ref[m * N + n]) : 0.0;
          ASSERT_LE(std::fabs(v - ref[m * N + n]), (3 + kF16BlockK - 1) * kU * scale[m * N + n] + out_round + 1e-6)
              << dtype_name(dt) << " (" << m << ", " << n << ")";
        }
      }
  }
}
