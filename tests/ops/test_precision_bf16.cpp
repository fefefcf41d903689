// bf16 tensors (storage; f32 math on every device) against float64 on the same bf16-rounded
// inputs, within docs/precision.md's bf16 bound: one bf16 rounding of the result (2^-8 |ref|)
// plus the op's f32 term (K 2^-24 sum |products| for matmul/conv2d, 2 log2(L) 2^-24 sum |x| for
// sum/mean, 64 f32 ulps for elementwise ops, softmax and norms). Odd shapes, broadcasting, NaN/Inf, empty tensors and
// lowered loop limits (the split-K and split-reduction paths).
#include <algorithm>
#include <cmath>
#include <functional>

#include "test_util.hpp"

using namespace glt_test;
using namespace gltensor;

namespace {

constexpr double kU = 1.0 / 256;          // bf16 unit roundoff (8 significand bits)
constexpr double kF32U = 1.0 / 16777216;  // f32 unit roundoff

std::vector<float> bf16_uniform(std::mt19937_64& rng, std::size_t n, float lo = -1, float hi = 1) {
  auto v = uniform(rng, n, lo, hi);
  for (auto& x : v) x = bf16_to_f32(f32_to_bf16(x));
  return v;
}

Tensor bf16(const std::vector<float>& v, const Shape& shape) {
  return Tensor::from_host(device(), v, shape, DType::bf16);
}

// |got - ref| <= kU |ref| + f32_term * scale for every element: one bf16 rounding of the result
// plus the f32 error of the op relative to its condition (sum |products|, sum |x|, |ref|).
::testing::AssertionResult within(const std::vector<float>& got, const std::vector<double>& ref,
                                  const std::vector<double>& scale, double f32_term) {
  if (got.size() != ref.size()) return ::testing::AssertionFailure() << "size " << got.size() << " vs " << ref.size();
  int bad = 0;
  std::string msg;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - ref[i]) <= kU * std::fabs(ref[i]) + f32_term * scale[i]) && bad++ < 5)
      msg += "\n  [" + std::to_string(i) + "] got " + std::to_string(got[i]) + ", want " + std::to_string(ref[i]) +
             " (scale " + std::to_string(scale[i]) + ")";
  if (bad) return ::testing::AssertionFailure() << bad << " of " << got.size() << " beyond the bound:" << msg;
  return ::testing::AssertionSuccess();
}

}  // namespace

TEST(PrecisionBf16, MatmulWithinOneRoundingOfSumOfProducts) {
  GLT_RNG(rng);
  struct Case {
    std::int64_t M, K, N;
    std::uint64_t loop_limit;
  };
  const Case cases[] = {{1, 1, 1, 0}, {67, 300, 45, 0}, {33, 257, 17, 0}, {128, 512, 256, 0}, {70, 5000, 30, 4000}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.M) + "x" + std::to_string(c.K) + "x" + std::to_string(c.N));
    const auto a = bf16_uniform(rng, c.M * c.K), b = bf16_uniform(rng, c.K * c.N);
    ScopedLoopLimit limit(c.loop_limit);
    const Tensor y = matmul(bf16(a, {c.M, c.K}), bf16(b, {c.K, c.N}));
    ASSERT_EQ(y.dtype(), DType::bf16);
    std::vector<double> ref(c.M * c.N, 0.0), scale(c.M * c.N, 0.0);
    for (std::int64_t m = 0; m < c.M; ++m)
      for (std::int64_t k = 0; k < c.K; ++k)
        for (std::int64_t n = 0; n < c.N; ++n) {
          const double p = double(a[m * c.K + k]) * b[k * c.N + n];
          ref[m * c.N + n] += p;
          scale[m * c.N + n] += std::fabs(p);
        }
    EXPECT_TRUE(within(y.to_vector(), ref, scale, 1.01 * c.K * kF32U));
  }
  EXPECT_EQ(matmul(bf16({}, {0, 7}), bf16(bf16_uniform(rng, 35), {7, 5})).shape(), (Shape{0, 5}));
}

TEST(PrecisionBf16, Conv2dWithinOneRoundingOfSumOfProducts) {
  GLT_RNG(rng);
  const std::int64_t B = 2, C = 5, H = 9, W = 11, O = 7;
  const auto x = bf16_uniform(rng, B * C * H * W), w = bf16_uniform(rng, O * C * 9);
  const Tensor y = conv2d(bf16(x, {B, C, H, W}), bf16(w, {O, C, 3, 3}), Tensor(), Conv2dOptions::pad(1));
  ASSERT_EQ(y.shape(), (Shape{B, O, H, W}));
  std::vector<double> ref(B * O * H * W, 0.0), scale(ref.size(), 0.0);
  for (std::int64_t i = 0; i < B * O * H * W; ++i) {
    const std::int64_t ox = i % W, oy = (i / W) % H, o = (i / (W * H)) % O, b = i / (W * H * O);
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t ky = 0; ky < 3; ++ky)
        for (std::int64_t kx = 0; kx < 3; ++kx) {
          const std::int64_t iy = oy + ky - 1, ix = ox + kx - 1;
          if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
          const double p = double(x[((b * C + c) * H + iy) * W + ix]) * w[((o * C + c) * 3 + ky) * 3 + kx];
          ref[i] += p;
          scale[i] += std::fabs(p);
        }
  }
  EXPECT_TRUE(within(y.to_vector(), ref, scale, 1.01 * C * 9 * kF32U));
}

// add/mul/div with a broadcast operand, exp/tanh/sigmoid; NaN and +-Inf among the inputs.
TEST(PrecisionBf16, ElementwiseWithinOneRounding) {
  GLT_RNG(rng);
  const std::int64_t R = 3, n = 4099;
  auto x = bf16_uniform(rng, R * n, -4, 4), y = bf16_uniform(rng, n, -4, 4);
  sprinkle_specials(x);
  for (auto& v : y)
    if (std::fabs(v) < 0.01f) v = 0.5f;
  const Tensor tx = bf16(x, {R, n}), ty = bf16(y, {n});
  struct Op {
    const char* name;
    std::function<Tensor()> run;
    double (*ref)(double, double);
  };
  const Op ops[] = {
      {"add", [&] { return add(tx, ty); }, [](double a, double b) { return a + b; }},
      {"mul", [&] { return mul(tx, ty); }, [](double a, double b) { return a * b; }},
      {"div", [&] { return div(tx, ty); }, [](double a, double b) { return a / b; }},
      {"exp", [&] { return exp(tx); }, [](double a, double) { return std::exp(a); }},
      {"tanh", [&] { return tanh(tx); }, [](double a, double) { return std::tanh(a); }},
      {"sigmoid", [&] { return sigmoid(tx); }, [](double a, double) { return 1 / (1 + std::exp(-a)); }},
  };
  for (const Op& op : ops) {
    SCOPED_TRACE(op.name);
    const Tensor r = op.run();
    ASSERT_EQ(r.dtype(), DType::bf16);
    std::vector<double> ref(R * n);
    for (std::int64_t i = 0; i < R * n; ++i) ref[i] = op.ref(x[i], y[i % n]);
    EXPECT_TRUE(close(r.to_vector(), ref, kU + 64 * kF32U, 0));
  }
}

// softmax over rows; layer_norm/rms_norm relative to max(|ref|, 1) (unit-scale outputs).
TEST(PrecisionBf16, SoftmaxAndNormsWithinOneRounding) {
  GLT_RNG(rng);
  const std::int64_t R = 7, L = 1001;
  const auto x = bf16_uniform(rng, R * L, -8, 8);
  const Tensor t = bf16(x, {R, L});
  std::vector<double> sm(R * L), ln(R * L), rn(R * L), one(R * L), sm_scale(R * L);
  for (std::int64_t r = 0; r < R; ++r) {
    const float* row = &x[r * L];
    double mx = -INFINITY, s = 0, mu = 0, ms = 0, var = 0;
    for (std::int64_t j = 0; j < L; ++j) mx = std::max(mx, double(row[j])), mu += row[j], ms += double(row[j]) * row[j];
    mu /= L, ms /= L;
    for (std::int64_t j = 0; j < L; ++j) s += std::exp(row[j] - mx), var += (row[j] - mu) * (row[j] - mu);
    var /= L;
    for (std::int64_t j = 0; j < L; ++j) {
      const std::int64_t i = r * L + j;
      sm[i] = std::exp(row[j] - mx) / s;
      sm_scale[i] = sm[i];
      ln[i] = (row[j] - mu) / std::sqrt(var + 1e-5);
      rn[i] = row[j] / std::sqrt(ms + 1e-6);
    }
  }
  const double bound = 64 * kF32U;
  EXPECT_TRUE(within(softmax(t, 1).to_vector(), sm, sm_scale, bound)) << "softmax";
  auto unit = [](const std::vector<double>& ref) {
    std::vector<double> s(ref.size());
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = std::max(std::fabs(ref[i]), 1.0);
    return s;
  };
  EXPECT_TRUE(within(layer_norm(t, 1).to_vector(), ln, unit(ln), bound)) << "layer_norm";
  EXPECT_TRUE(within(rms_norm(t, 1).to_vector(), rn, unit(rn), bound)) << "rms_norm";
}

// sum/mean over a long axis, split into partial sums by a lowered loop limit; error relative to
// sum |x| (mean |x|).
TEST(PrecisionBf16, SumMeanOverALongAxisWithinOneRounding) {
  GLT_RNG(rng);
  const std::int64_t R = 16, L = 100003;
  const auto x = bf16_uniform(rng, R * L);
  const Tensor t = bf16(x, {R, L});
  ScopedLoopLimit limit(3000);
  const auto s = sum(t, {1}).to_vector(), m = mean(t, {1}).to_vector();
  std::vector<double> rs(R, 0.0), abs(R, 0.0), rm(R), am(R);
  for (std::int64_t r = 0; r < R; ++r) {
    for (std::int64_t j = 0; j < L; ++j) rs[r] += x[r * L + j], abs[r] += std::fabs(x[r * L + j]);
    rm[r] = rs[r] / L, am[r] = abs[r] / L;
  }
  const double bound = 2 * std::ceil(std::log2(double(L))) * kF32U;
  EXPECT_TRUE(within(s, rs, abs, bound)) << "sum";
  EXPECT_TRUE(within(m, rm, am, bound)) << "mean";
  EXPECT_EQ(sum(bf16({}, {2, 0}), {1}).to_vector(), (std::vector<float>{0, 0}));
}
