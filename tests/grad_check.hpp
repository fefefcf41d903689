// Gradient checks: GPU autograd gradients against central finite differences of a float64 host
// reference. The checked loss is sum(f(inputs) * w) for fixed random weights w, so every output
// element contributes with its own weight. Tolerance: |g - fd| <= 2e-3 * max(1, |fd|).
// Functions with kinks at ties (max pooling, max/min reductions) take `distinct` inputs: a random
// permutation of evenly spaced values in [lo, hi), so that no two are within the finite
// difference's step of each other (with uniform values, a near tie made the check flaky).
// Step functions (floor, round, sign, ...) take `redraw`: a value it holds true for (one within
// reach of a jump) is drawn again, as a finite difference across the jump is not the derivative.
// Functions whose kinks depend on several inputs together (a ReLU after a normalization) take
// `accept`: all inputs are drawn again until it holds (e.g. no pre-activation within reach of 0).
// Beyond those, an element within the step of a kink or jump is found by its one-sided differences
// and left unchecked (at least half of the elements must be checked).
#pragma once
#include <algorithm>
#include <functional>

#include "test_util.hpp"

namespace glt_test {

struct HostT {
  std::vector<double> v;
  gltensor::Shape s;
  double& operator[](std::size_t i) { return v[i]; }
  double operator[](std::size_t i) const { return v[i]; }
  std::size_t size() const { return v.size(); }
};

using GpuFn = std::function<gltensor::Tensor(const std::vector<gltensor::Tensor>&)>;
using RefFn = std::function<std::vector<double>(const std::vector<HostT>&)>;

inline ::testing::AssertionResult grad_check(std::mt19937_64& rng, const std::vector<gltensor::Shape>& shapes,
                                             const GpuFn& gpu, const RefFn& ref, float lo = -1, float hi = 1,
                                             bool distinct = false, const std::function<bool(double)>& redraw = {},
                                             const std::function<bool(const std::vector<HostT>&)>& accept = {}) {
  using namespace gltensor;
  std::vector<HostT> hx;
  std::vector<Tensor> tx;
  for (int attempt = 0;; ++attempt) {
    hx.clear();
    for (const auto& s : shapes) {
      auto v = uniform(rng, static_cast<std::size_t>(numel_of(s)), lo, hi);
      hx.push_back({std::vector<double>(v.begin(), v.end()), s});
    }
    if (!accept || accept(hx)) break;
    if (attempt == 100) return ::testing::AssertionFailure() << "grad_check: no accepted inputs in 100 draws";
  }
  for (std::size_t si = 0; si < shapes.size(); ++si) {
    const auto& s = shapes[si];
    std::vector<float> v(hx[si].v.begin(), hx[si].v.end());
    if (redraw)
      for (auto& x : v)
        while (redraw(x)) x = uniform(rng, 1, lo, hi)[0];
    if (distinct) {
      for (std::size_t i = 0; i < v.size(); ++i)
        v[i] = lo + (hi - lo) * (static_cast<float>(i) + 0.5f) / static_cast<float>(v.size());
      std::shuffle(v.begin(), v.end(), rng);
    }
    hx[si] = {std::vector<double>(v.begin(), v.end()), s};
    Tensor t = Tensor::from_host(device(), v, s);
    requires_grad_(t);
    tx.push_back(t);
  }
  Tensor y = gpu(tx);
  const std::size_t ny = static_cast<std::size_t>(y.numel());
  auto w = uniform(rng, ny, -1, 1);
  Tensor loss = sum(mul(y, Tensor::from_host(device(), w, y.shape())));
  backward(loss);
  // forward values too
  auto yref = ref(hx);
  if (yref.size() != ny)
    return ::testing::AssertionFailure() << "reference has " << yref.size() << " outputs, GPU " << ny;
  auto yv = y.to_vector();
  for (std::size_t i = 0; i < ny; ++i)
    if (std::fabs(yv[i] - yref[i]) > 1e-4 * std::max(1.0, std::fabs(yref[i])))
      return ::testing::AssertionFailure() << "forward [" << i << "] " << yv[i] << " vs " << yref[i];
  auto L = [&](const std::vector<HostT>& x) {
    auto r = ref(x);
    double s = 0;
    for (std::size_t i = 0; i < r.size(); ++i) s += r[i] * w[i];
    return s;
  };
  // An element within the finite difference's step of a kink or jump of the reference (relu6's 0
  // at 5.7e-6; fmod(7, x)'s jump at 7/6 for x = 1.16666: the sanitizer pass of 2026-11-28) is no
  // derivative point: there the one-sided differences disagree by twice the central one's error,
  // so an element whose one-sided differences disagree by more than the tolerance is not checked
  // (a correct gradient is within half the tolerance of every element that is), and at least half
  // of all elements must be checked.
  const double L0 = L(hx);
  std::size_t checked = 0, total = 0;
  for (std::size_t k = 0; k < tx.size(); ++k) {
    Tensor g = grad(tx[k]);
    if (!g.defined()) return ::testing::AssertionFailure() << "input " << k << " got no gradient";
    if (g.shape() != shapes[k])
      return ::testing::AssertionFailure() << "input " << k << " gradient shape " << to_string(g.shape());
    auto gv = g.to_vector();
    for (std::size_t i = 0; i < hx[k].size(); ++i) {
      const double h = 1e-5 * std::max(1.0, std::fabs(hx[k][i]));
      auto xp = hx, xm = hx;
      xp[k][i] += h;
      xm[k][i] -= h;
      const double lp = L(xp), lm = L(xm), fd = (lp - lm) / (2 * h);
      const double tol = 2e-3 * std::max(1.0, std::fabs(fd));
      ++total;
      if (std::fabs((lp - L0) / h - (L0 - lm) / h) > tol) continue;
      ++checked;
      if (std::fabs(gv[i] - fd) > tol)
        return ::testing::AssertionFailure() << "input " << k << " grad[" << i << "] = " << gv[i]
                                             << ", finite difference " << fd << " at " << hx[k][i];
    }
  }
  if (2 * checked < total)
    return ::testing::AssertionFailure() << "only " << checked << " of " << total
                                         << " elements away from the reference's kinks and jumps";
  return ::testing::AssertionSuccess();
}

// Index helpers for references.
inline std::size_t at2(const gltensor::Shape& s, std::int64_t i, std::int64_t j) { return i * s[1] + j; }

}  // namespace glt_test
