// Error of Precision::f16_allowed against f32 math (docs/precision.md's table): each op runs on
// the same inputs with the device's precision at f32 and at f16_allowed, and both results are
// compared with a float64 host reference. matmul and conv2d errors are relative to the sum of
// |products| of the output element (sampled outputs on large shapes); elementwise errors are
// relative to |reference|. Prints a Markdown table, one row per op and shape.
//   gltensor_precision_error [--samples N] [--bf16-only]
//   A second table follows: bf16 tensors with f32 math (precision_error_bf16.cpp).
//   gltensor_precision_error --compile-check: runs each f16 kernel form once, each failure
//   printed and skipped (scripts/check_f16_glsl.sh: with GLTENSOR_PRECISION=f16-force on a
//   device without fp16 arithmetic, to hand the dumped sources to an offline compiler).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gltensor/gltensor.hpp"
#include "precision_error_bf16.hpp"
#include "precision_reference.hpp"

using namespace gltensor;

namespace {

struct Err {
  double max = 0, sum = 0;
  std::size_t n = 0;
  void add(double e) {
    max = std::max(max, e);
    sum += e;
    ++n;
  }
  double mean() const { return n ? sum / n : 0; }
};

std::vector<float> host_uniform(std::mt19937_64& rng, std::size_t n, DType dt) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = dt == DType::f16 ? f16_to_f32(f32_to_f16(u(rng))) : u(rng);
  return v;
}

void row(const std::string& op, const std::string& shape, const Err& f32, const Err& f16, bool f16_on) {
  char f16_cell[64] = "(f32 math: no fp16 arithmetic)";
  if (f16_on) std::snprintf(f16_cell, sizeof f16_cell, "%.2e / %.2e", f16.max, f16.mean());
  std::printf("| %s | %s | %.2e / %.2e | %s |\n", op.c_str(), shape.c_str(), f32.max, f32.mean(), f16_cell);
  std::fflush(stdout);
}

// Runs fn at both precisions; fn returns the result as f32 values.
template <typename Fn>
std::pair<std::vector<float>, std::vector<float>> both(Device& dev, Fn fn) {
  dev.set_precision(Precision::f32);
  std::vector<float> a = fn();
  dev.set_precision(Precision::f16_allowed);
  std::vector<float> b = fn();
  dev.set_precision(Precision::f32);
  return {a, b};
}

void matmul_case(Device& dev, std::mt19937_64& rng, std::int64_t M, std::int64_t K, std::int64_t N, DType dt,
                 std::size_t samples, bool f16_on) {
  const auto a = host_uniform(rng, M * K, dt), b = host_uniform(rng, K * N, dt);
  Tensor ta = Tensor::from_host(dev, a, {M, K}, dt), tb = Tensor::from_host(dev, b, {K, N}, dt);
  auto [r32, r16] = both(dev, [&] { return matmul(ta, tb).to(DType::f32).to_vector(); });
  Err e32, e16;
  std::uniform_int_distribution<std::int64_t> pick(0, M * N - 1);
  const bool all = static_cast<std::size_t>(M * N) <= samples;
  for (std::size_t s = 0; s < (all ? static_cast<std::size_t>(M * N) : samples); ++s) {
    const std::int64_t i = all ? static_cast<std::int64_t>(s) : pick(rng);
    const auto [ref, scale] = glt_bench::matmul_ref(a, b, K, N, i);
    e32.add(std::fabs(r32[i] - ref) / scale);
    e16.add(std::fabs(r16[i] - ref) / scale);
  }
  row(std::string("matmul ") + dtype_name(dt), std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N),
      e32, e16, f16_on);
}

void conv_case(Device& dev, std::mt19937_64& rng, std::int64_t B, std::int64_t C, std::int64_t H, std::int64_t O,
               std::size_t samples, bool f16_on) {
  const std::int64_t W = H, KH = 3;
  const auto x = host_uniform(rng, B * C * H * W, DType::f32), w = host_uniform(rng, O * C * KH * KH, DType::f32);
  Tensor tx = Tensor::from_host(dev, x, {B, C, H, W}), tw = Tensor::from_host(dev, w, {O, C, KH, KH});
  auto [r32, r16] = both(dev, [&] { return conv2d(tx, tw, Tensor(), Conv2dOptions::pad(1)).to_vector(); });
  Err e32, e16;
  std::uniform_int_distribution<std::int64_t> pick(0, B * O * H * W - 1);
  for (std::size_t s = 0; s < samples; ++s) {
    const std::int64_t i = pick(rng);
    const auto [ref, scale] = glt_bench::conv3x3_ref(x, w, C, H, W, O, i);
    e32.add(std::fabs(r32[i] - ref) / scale);
    e16.add(std::fabs(r16[i] - ref) / scale);
  }
  row("conv2d 3x3 f32",
      std::to_string(B) + "x" + std::to_string(C) + "x" + std::to_string(H) + "x" + std::to_string(W) + " -> " +
          std::to_string(O),
      e32, e16, f16_on);
}

void elementwise_cases(Device& dev, std::mt19937_64& rng, bool f16_on) {
  const std::int64_t n = 1 << 20;
  auto x = host_uniform(rng, n, DType::f16), y = host_uniform(rng, n, DType::f16);
  for (auto& v : y)
    if (std::fabs(v) < 0.01f) v = 0.5f;
  Tensor tx = Tensor::from_host(dev, x, {n}, DType::f16), ty = Tensor::from_host(dev, y, {n}, DType::f16);
  struct Op {
    const char* name;
    Tensor (*run)(const Tensor&, const Tensor&);
    double (*ref)(double, double);
  };
  const Op ops[] = {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); }, [](double a, double b) { return a + b; }},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); }, [](double a, double b) { return a - b; }},
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }, [](double a, double b) { return a * b; }},
      {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); }, [](double a, double b) { return a / b; }},
      {"neg", [](const Tensor& a, const Tensor&) { return neg(a); }, [](double a, double) { return -a; }},
      {"square", [](const Tensor& a, const Tensor&) { return square(a); }, [](double a, double) { return a * a; }},
      {"reciprocal", [](const Tensor&, const Tensor& b) { return reciprocal(b); },
       [](double, double b) { return 1 / b; }},
      {"relu", [](const Tensor& a, const Tensor&) { return relu(a); }, [](double a, double) { return a > 0 ? a : 0; }},
  };
  for (const Op& op : ops) {
    auto [r32, r16] = both(dev, [&] { return op.run(tx, ty).to_vector(); });
    Err e32, e16;
    for (std::int64_t i = 0; i < n; ++i) {
      const double r = op.ref(x[i], y[i]), s = std::max(std::fabs(r), 6.1e-5);  // f16's smallest normal
      e32.add(std::fabs(r32[i] - r) / s);
      e16.add(std::fabs(r16[i] - r) / s);
    }
    row(std::string(op.name) + " f16", std::to_string(n), e32, e16, f16_on);
  }
}

// Each f16 kernel form once (see the file comment); returns the number of failures.
int compile_check(Device& dev) {
  dev.set_precision(Precision::f16_allowed);
  Generator g(1);
  int failures = 0;
  auto attempt = [&](const char* what, auto fn) {
    try {
      fn();
      dev.synchronize();
      std::printf("ok: %s\n", what);
    } catch (const std::exception& e) {
      ++failures;
      std::printf("failed: %s: %.300s\n", what, e.what());
    }
  };
  for (DType dt : {DType::f32, DType::f16}) {
    attempt("matmul", [&] { matmul(randn(dev, {67, 45}, g, 0, 1, dt), randn(dev, {45, 33}, g, 0, 1, dt)); });
    attempt("matmul big", [&] { matmul(randn(dev, {256, 64}, g, 0, 1, dt), randn(dev, {64, 256}, g, 0, 1, dt)); });
    attempt("matmul batched", [&] {
      matmul(randn(dev, {3, 64, 32}, g, 0, 1, dt), randn(dev, {32, 128}, g, 0, 1, dt));
    });
    attempt("linear + bias + relu", [&] {
      linear(randn(dev, {64, 32}, g, 0, 1, dt), randn(dev, {128, 32}, g, 0, 1, dt), randn(dev, {128}, g, 0, 1, dt),
             Epilogue(Activation::relu));
    });
    attempt("matmul split-K", [&] {
      dev.set_loop_limit(3000);
      Tensor r = matmul(randn(dev, {64, 4096}, g, 0, 1, dt), randn(dev, {4096, 128}, g, 0, 1, dt));
      dev.set_loop_limit(0);
    });
  }
  attempt("conv2d", [&] { conv2d(randn(dev, {2, 16, 9, 9}, g), randn(dev, {32, 16, 3, 3}, g), randn(dev, {32}, g)); });
  Tensor x = randn(dev, {256}, g, 0, 1, DType::f16), y = randn(dev, {256}, g, 0, 1, DType::f16);
  attempt("add", [&] { add(x, y); });
  attempt("add alpha", [&] { add(x, y, 2.0); });
  attempt("sub", [&] { sub(x, y); });
  attempt("mul", [&] { mul(x, y); });
  attempt("mul scalar", [&] { mul(x, 3.0); });
  attempt("scalar div", [&] { div(2.0, y); });
  attempt("div", [&] { div(x, y); });
  attempt("neg", [&] { neg(x); });
  attempt("square", [&] { square(x); });
  attempt("reciprocal", [&] { reciprocal(x); });
  attempt("relu", [&] { relu(x); });
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t samples = 4096;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--samples") == 0) samples = std::strtoull(argv[i + 1], nullptr, 10);
  Device dev = Device::open();
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--compile-check") == 0) return compile_check(dev) == 0 ? 0 : 1;
    if (std::strcmp(argv[i], "--bf16-only") == 0) {
      std::mt19937_64 rng(16);
      std::printf("device: %s (%s)\n", dev.caps().renderer.c_str(), dev.caps().version.c_str());
      glt_bench::bf16_rows(dev, rng, samples);
      return 0;
    }
  }
  dev.set_precision(Precision::f16_allowed);
  const bool f16_on = dev.precision_in_effect() == Precision::f16_allowed;
  dev.set_precision(Precision::f32);
  std::printf("device: %s (%s); fp16 arithmetic: %s; f16 block: %d\n\n", dev.caps().renderer.c_str(),
              dev.caps().version.c_str(), f16_on ? "yes" : "no", kF16BlockK);
  std::printf(
      "| op | shape | f32 path: max / mean rel. error | f16_allowed: max / mean rel. error |\n|---|---|---|---|\n");
  std::mt19937_64 rng(15);
  for (DType dt : {DType::f32, DType::f16}) {
    matmul_case(dev, rng, 256, 256, 256, dt, samples, f16_on);
    matmul_case(dev, rng, 1024, 1024, 1024, dt, samples, f16_on);
    matmul_case(dev, rng, 2048, 4096, 2048, dt, samples, f16_on);  // the quad-load kernel on GPUs
    matmul_case(dev, rng, 64, 65536, 64, dt, samples, f16_on);     // split-K
  }
  conv_case(dev, rng, 8, 64, 28, 64, samples, f16_on);
  elementwise_cases(dev, rng, f16_on);
  std::mt19937_64 rng_bf16(16);
  glt_bench::bf16_rows(dev, rng_bf16, samples);
  return 0;
}
