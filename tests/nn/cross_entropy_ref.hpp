// float64 reference of cross_entropy (torch semantics): per-row log-sum-exp, per-sample losses
// with label smoothing and ignore_index, the reduced loss and d logits for an upstream gradient.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gltensor/gltensor.hpp"

namespace glt_test {

struct CrossEntropyRef {
  std::vector<double> per, lse;  // per-sample losses (0 where ignored), row log-sum-exp
  double total = 0, count = 0;   // sum of per, samples kept

  CrossEntropyRef(const std::vector<float>& x, const std::vector<std::int32_t>& t, int C, double ls, int ignore = -100)
      : per(t.size(), 0.0), lse(t.size(), 0.0) {
    for (std::size_t n = 0; n < t.size(); ++n) {
      if (t[n] == ignore) continue;
      double m = -std::numeric_limits<double>::infinity(), s = 0, mean_x = 0;
      for (int c = 0; c < C; ++c) m = std::max(m, static_cast<double>(x[n * C + c]));
      for (int c = 0; c < C; ++c) s += std::exp(x[n * C + c] - m), mean_x += static_cast<double>(x[n * C + c]) / C;
      lse[n] = std::isinf(m) ? m : m + std::log(s);  // torch's logsumexp: an infinite max is the result
      per[n] = (1 - ls) * (lse[n] - x[n * C + t[n]]) + (ls > 0 ? ls * (lse[n] - mean_x) : 0.0);  // no 0 * Inf
      total += per[n];
      count += 1;
    }
  }
  /// The reduced loss (mean: NaN when no sample is kept, as torch).
  double reduced(gltensor::Reduction r) const {
    return r == gltensor::Reduction::sum ? total : count > 0 ? total / count : std::nan("");
  }
  /// d logits for upstream gradient g (per sample for Reduction::none, else g[0]).
  std::vector<double> grad(const std::vector<float>& x, const std::vector<std::int32_t>& t, int C, double ls,
                           gltensor::Reduction r, const std::vector<float>& g, int ignore = -100) const {
    std::vector<double> d(x.size(), 0.0);
    for (std::size_t n = 0; n < t.size(); ++n) {
      if (t[n] == ignore) continue;
      const double w = r == gltensor::Reduction::none ? g[n] : r == gltensor::Reduction::sum ? g[0] : g[0] / count;
      for (int c = 0; c < C; ++c)
        d[n * C + c] = (std::exp(x[n * C + c] - lse[n]) - (c == t[n] ? 1 - ls : 0.0) - ls / C) * w;
    }
    return d;
  }
};

}  // namespace glt_test
