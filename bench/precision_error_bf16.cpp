// bf16 rows of gltensor_precision_error: each op on bf16 tensors (f32 math inside the kernel, one
// bf16 rounding on store) against float64 on the same bf16-rounded inputs. The bound per row is
// one bf16 rounding of the result (2^-8 relative: round to nearest, 8 significand bits) plus the
// f32 term of the op (accumulation over K, GLSL's ulp allowances), in the row's error measure.
#include "precision_error_bf16.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "precision_reference.hpp"

using namespace gltensor;

namespace glt_bench {
namespace {

constexpr double kBf16U = 1.0 / 256;      // bf16 unit roundoff, 2^-8 (8 significand bits)
constexpr double kF32U = 1.0 / 16777216;  // f32 unit roundoff, 2^-24

std::vector<float> bf16_uniform(std::mt19937_64& rng, std::size_t n, float lo = -1, float hi = 1) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = bf16_to_f32(f32_to_bf16(u(rng)));
  return v;
}

Tensor bf16_tensor(Device& dev, const std::vector<float>& v, const Shape& shape) {
  return Tensor::from_host(dev, v, shape, DType::bf16);
}

// max and mean of |got - ref| / scale over the given outputs.
struct Err {
  double max = 0, sum = 0;
  std::size_t n = 0;
  void add(double got, double ref, double scale) {
    const double e = std::fabs(got - ref) / (scale > 0 ? scale : 1);
    max = std::isnan(e) ? INFINITY : std::max(max, e);
    sum += e;
    ++n;
  }
};

void row(const std::string& op, const std::string& shape, const Err& e, double bound) {
  std::printf("| %s | %s | %.2e / %.2e | %.2e |%s\n", op.c_str(), shape.c_str(), e.max, e.n ? e.sum / e.n : 0.0, bound,
              e.max <= bound ? "" : " OVER THE BOUND");
  std::fflush(stdout);
}

std::string dims(std::initializer_list<std::int64_t> d) {
  std::string s;
  for (auto x : d) {
    if (!s.empty()) s.push_back('x');
    s.append(std::to_string(x));
  }
  return s;
}

void matmul_row(Device& dev, std::mt19937_64& rng, std::int64_t M, std::int64_t K, std::int64_t N,
                std::size_t samples) {
  const auto a = bf16_uniform(rng, M * K), b = bf16_uniform(rng, K * N);
  const auto c = matmul(bf16_tensor(dev, a, {M, K}), bf16_tensor(dev, b, {K, N})).to_vector();
  Err e;
  std::uniform_int_distribution<std::int64_t> pick(0, M * N - 1);
  const bool all = static_cast<std::size_t>(M * N) <= samples;
  for (std::size_t s = 0; s < (all ? static_cast<std::size_t>(M * N) : samples); ++s) {
    const std::int64_t i = all ? static_cast<std::int64_t>(s) : pick(rng);
    const auto [ref, scale] = matmul_ref(a, b, K, N, i);
    e.add(c[i], ref, scale);
  }
  row("matmul", dims({M, K, N}), e, kBf16U + K * kF32U);
}

void conv_row(Device& dev, std::mt19937_64& rng, std::int64_t B, std::int64_t C, std::int64_t H, std::int64_t O,
              std::size_t samples) {
  const std::int64_t W = H;
  const auto x = bf16_uniform(rng, B * C * H * W), w = bf16_uniform(rng, O * C * 9);
  const auto y =
      conv2d(bf16_tensor(dev, x, {B, C, H, W}), bf16_tensor(dev, w, {O, C, 3, 3}), Tensor(), Conv2dOptions::pad(1))
          .to_vector();
  Err e;
  std::uniform_int_distribution<std::int64_t> pick(0, B * O * H * W - 1);
  for (std::size_t s = 0; s < samples; ++s) {
    const std::int64_t i = pick(rng);
    const auto [ref, scale] = conv3x3_ref(x, w, C, H, W, O, i);
    e.add(y[i], ref, scale);
  }
  row("conv2d 3x3 pad 1", dims({B, C, H, W}) + " -> " + std::to_string(O), e, kBf16U + C * 9 * kF32U);
}

// Elementwise ops on 2^20 + 1 elements, error relative to |reference|.
void elementwise_rows(Device& dev, std::mt19937_64& rng) {
  const std::int64_t n = (1 << 20) + 1;
  auto x = bf16_uniform(rng, n, -4, 4), y = bf16_uniform(rng, n, -4, 4);
  for (auto& v : y)
    if (std::fabs(v) < 0.01f) v = 0.5f;
  const Tensor tx = bf16_tensor(dev, x, {n}), ty = bf16_tensor(dev, y, {n});
  struct Op {
    const char* name;
    std::function<Tensor()> run;
    double (*ref)(double, double);
    double f32_ulps;  // GLSL ES 3.1's allowance for the f32 op, in ulps of the result
  };
  const Op ops[] = {
      {"add", [&] { return add(tx, ty); }, [](double a, double b) { return a + b; }, 0.5},
      {"mul", [&] { return mul(tx, ty); }, [](double a, double b) { return a * b; }, 0.5},
      {"div", [&] { return div(tx, ty); }, [](double a, double b) { return a / b; }, 2.5},
      {"exp", [&] { return exp(tx); }, [](double a, double) { return std::exp(a); }, 3 + 2 * 4},
      {"tanh", [&] { return tanh(tx); }, [](double a, double) { return std::tanh(a); }, 0},
      {"sigmoid", [&] { return sigmoid(tx); }, [](double a, double) { return 1 / (1 + std::exp(-a)); }, 0},
  };
  for (const Op& op : ops) {
    const auto r = op.run().to_vector();
    Err e;
    for (std::int64_t i = 0; i < n; ++i) {
      const double ref = op.ref(x[i], y[i]);
      e.add(r[i], ref, std::fabs(ref));
    }
    // tanh, sigmoid: no ulp allowance in GLSL (derived from exp); the bound keeps 64 f32 ulps.
    row(op.name, std::to_string(n), e, kBf16U + (op.f32_ulps > 0 ? op.f32_ulps : 64) * kF32U);
  }
}

// softmax over rows, sum/mean over a long axis, layer_norm/rms_norm over rows.
void row_rows(Device& dev, std::mt19937_64& rng) {
  {
    const std::int64_t R = 257, L = 1001;
    const auto x = bf16_uniform(rng, R * L, -8, 8);
    const auto y = softmax(bf16_tensor(dev, x, {R, L}), 1).to_vector();
    Err e;
    for (std::int64_t r = 0; r < R; ++r) {
      double mx = -INFINITY, s = 0;
      for (std::int64_t j = 0; j < L; ++j) mx = std::max(mx, double(x[r * L + j]));
      for (std::int64_t j = 0; j < L; ++j) s += std::exp(x[r * L + j] - mx);
      for (std::int64_t j = 0; j < L; ++j) {
        const double ref = std::exp(x[r * L + j] - mx) / s;
        e.add(y[r * L + j], ref, ref);
      }
    }
    row("softmax (dim 1)", dims({R, L}), e, kBf16U + 64 * kF32U);
  }
  {
    // error relative to sum |x| (mean |x|): the reduction's condition, as sum |products| for matmul
    const std::int64_t R = 3, L = 3000001;
    const auto x = bf16_uniform(rng, R * L);
    const Tensor t = bf16_tensor(dev, x, {R, L});
    const auto s = sum(t, {1}).to_vector(), m = mean(t, {1}).to_vector();
    Err es, em;
    for (std::int64_t r = 0; r < R; ++r) {
      double ref = 0, abs = 0;
      for (std::int64_t j = 0; j < L; ++j) ref += x[r * L + j], abs += std::fabs(x[r * L + j]);
      es.add(s[r], ref, abs);
      em.add(m[r], ref / L, abs / L);
    }
    const double bound = kBf16U + 2 * std::ceil(std::log2(double(L))) * kF32U;
    row("sum (dim 1)", dims({R, L}), es, bound);
    row("mean (dim 1)", dims({R, L}), em, bound);
  }
  {
    // error relative to max(|ref|, 1): the outputs have unit scale; near-zero outputs carry the
    // f32 error of the mean/rstd times |x - mean|, not of themselves
    const std::int64_t R = 513, L = 1023;
    const auto x = bf16_uniform(rng, R * L, -3, 5);
    const Tensor t = bf16_tensor(dev, x, {R, L});
    const auto ln = layer_norm(t, 1).to_vector(), rn = rms_norm(t, 1).to_vector();
    Err el, er;
    for (std::int64_t r = 0; r < R; ++r) {
      double mu = 0, ms = 0, var = 0;
      for (std::int64_t j = 0; j < L; ++j) mu += x[r * L + j], ms += double(x[r * L + j]) * x[r * L + j];
      mu /= L, ms /= L;
      for (std::int64_t j = 0; j < L; ++j) var += (x[r * L + j] - mu) * (x[r * L + j] - mu);
      var /= L;
      for (std::int64_t j = 0; j < L; ++j) {
        const double l = (x[r * L + j] - mu) / std::sqrt(var + 1e-5), q = x[r * L + j] / std::sqrt(ms + 1e-6);
        el.add(ln[r * L + j], l, std::max(std::fabs(l), 1.0));
        er.add(rn[r * L + j], q, std::max(std::fabs(q), 1.0));
      }
    }
    row("layer_norm (last dim)", dims({R, L}), el, kBf16U + 64 * kF32U);
    row("rms_norm (last dim)", dims({R, L}), er, kBf16U + 64 * kF32U);
  }
}

}  // namespace

void bf16_rows(Device& dev, std::mt19937_64& rng, std::size_t samples) {
  std::printf("\n| op (bf16 tensors, f32 math) | shape | max / mean rel. error | bound |\n|---|---|---|---|\n");
  matmul_row(dev, rng, 255, 257, 129, samples);
  matmul_row(dev, rng, 1024, 1024, 1024, samples);
  matmul_row(dev, rng, 64, 65536, 64, samples);  // split-K where the loop limit is 65535
  conv_row(dev, rng, 4, 64, 29, 64, samples);
  elementwise_rows(dev, rng);
  row_rows(dev, rng);
}

}  // namespace glt_bench
