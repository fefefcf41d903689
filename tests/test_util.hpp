// Shared test helpers: one device per test process, seeded random inputs (the seed is printed
// on failure; set GLTENSOR_TEST_SEED to replay), and comparison against float64 references.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gltensor/gltensor.hpp"
#include "runtime/settings.hpp"

namespace glt_test {

using gltensor::Device;
using gltensor::DType;
using gltensor::Shape;
using gltensor::Tensor;

inline Device& device() {
  static Device dev = Device::open();
  return dev;
}

/// The library's settings (the GLTENSOR_* variables, read once) changed for a scope:
///   ScopedSettings s; s->matmul_kernel = MatmulKernelSetting::tile64;
class ScopedSettings {
 public:
  ScopedSettings() : saved_(gltensor::detail::settings()) {}
  ~ScopedSettings() { gltensor::detail::settings() = saved_; }
  ScopedSettings(const ScopedSettings&) = delete;
  ScopedSettings& operator=(const ScopedSettings&) = delete;
  gltensor::detail::Settings* operator->() { return &gltensor::detail::settings(); }

 private:
  gltensor::detail::Settings saved_;
};

/// A GLTENSOR_* environment variable set for a scope, with the settings read again from the
/// environment (as at startup) on entry and exit.
class ScopedEnv {
 public:
  ScopedEnv(const char* var, const char* value) : var_(var) {
    if (value)
      ::setenv(var, value, 1);
    else
      ::unsetenv(var);
    gltensor::detail::settings() = gltensor::detail::Settings::from_env();
  }
  ~ScopedEnv() {
    ::unsetenv(var_);
    gltensor::detail::settings() = gltensor::detail::Settings::from_env();
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* var_;
};

/// The test device's loop limit lowered for a scope (Device::set_loop_limit), so that ops take
/// the paths that split long loops on small shapes, on any device.
class ScopedLoopLimit {
 public:
  explicit ScopedLoopLimit(std::uint64_t iterations) { device().set_loop_limit(iterations); }
  ~ScopedLoopLimit() { device().set_loop_limit(0); }
  ScopedLoopLimit(const ScopedLoopLimit&) = delete;
  ScopedLoopLimit& operator=(const ScopedLoopLimit&) = delete;
};

/// The test device's dispatch limit (workgroups per axis of one dispatch) lowered for a scope
/// (Device::set_dispatch_limit), so that grids split into several dispatches on small shapes;
/// restored however the scope ends (a failed ASSERT, an exception). Hold it in a std::optional
/// where the limit ends before the scope does.
class ScopedDispatchLimit {
 public:
  explicit ScopedDispatchLimit(std::uint32_t workgroups) { device().set_dispatch_limit(workgroups); }
  ~ScopedDispatchLimit() { device().set_dispatch_limit(0); }
  ScopedDispatchLimit(const ScopedDispatchLimit&) = delete;
  ScopedDispatchLimit& operator=(const ScopedDispatchLimit&) = delete;
};

/// The test device's max SSBO block size lowered for a scope (Device::set_ssbo_limit), so that
/// ops take the paths that split large workspaces on small shapes, on any device.
class ScopedSsboLimit {
 public:
  explicit ScopedSsboLimit(std::int64_t bytes) { device().set_ssbo_limit(bytes); }
  ~ScopedSsboLimit() { device().set_ssbo_limit(0); }
  ScopedSsboLimit(const ScopedSsboLimit&) = delete;
  ScopedSsboLimit& operator=(const ScopedSsboLimit&) = delete;
};

inline std::uint64_t fresh_seed() {
  if (const char* s = std::getenv("GLTENSOR_TEST_SEED")) return std::strtoull(s, nullptr, 10);
  return std::random_device{}() ^ (static_cast<std::uint64_t>(std::random_device{}()) << 32);
}

/// A generator whose seed appears in every failure message of the enclosing scope.
#define GLT_RNG(name)                                                                      \
  const std::uint64_t name##_seed = glt_test::fresh_seed();                                \
  SCOPED_TRACE("seed=" + std::to_string(name##_seed) + " (GLTENSOR_TEST_SEED to replay)"); \
  std::mt19937_64 name(name##_seed)

inline std::vector<float> uniform(std::mt19937_64& rng, std::size_t n, float lo = -1, float hi = 1) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

inline std::vector<std::int32_t> uniform_int(std::mt19937_64& rng, std::size_t n, int lo, int hi) {
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<std::int32_t> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

/// Replaces a few entries with NaN, +Inf, -Inf, +0, -0 (when n is large enough).
inline void sprinkle_specials(std::vector<float>& v) {
  const float s[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                     -std::numeric_limits<float>::infinity(), 0.0f, -0.0f};
  for (std::size_t i = 0; i < 5 && i * 7 < v.size(); ++i) v[i * 7] = s[i];
}

/// Compares got with a float64 reference: |got - ref| <= atol + rtol * |ref|; NaN must match
/// NaN and infinities must match exactly. Reports the first mismatches with their index.
inline ::testing::AssertionResult close(const std::vector<float>& got, const std::vector<double>& ref, double rtol,
                                        double atol) {
  if (got.size() != ref.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " vs reference " << ref.size();
  int bad = 0;
  std::string msg;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], r = ref[i];
    bool ok;
    if (std::isnan(r))
      ok = std::isnan(g);
    else if (std::isinf(r))
      ok = g == r;
    else
      ok = std::isfinite(g) && std::fabs(g - r) <= atol + rtol * std::fabs(r);
    if (!ok && bad++ < 5)
      msg += "\n  [" + std::to_string(i) + "] got " + std::to_string(g) + ", want " + std::to_string(r);
  }
  if (bad) return ::testing::AssertionFailure() << bad << " of " << got.size() << " elements differ:" << msg;
  return ::testing::AssertionSuccess();
}

/// Row-major element offsets of a view (shape, strides, offset) into its storage.
inline std::vector<std::int64_t> view_offsets(const Tensor& t) {
  std::vector<std::int64_t> out;
  const Shape& s = t.shape();
  const std::int64_t n = t.numel();
  out.reserve(n);
  for (std::int64_t lin = 0; lin < n; ++lin) {
    std::int64_t rem = lin, off = t.offset();
    for (std::int64_t d = t.dim() - 1; d >= 0; --d) {
      off += (rem % s[d]) * t.strides()[d];
      rem /= s[d];
    }
    out.push_back(off);
  }
  return out;
}

/// Values of a view computed on the host from its base storage values.
template <typename T>
std::vector<T> gather_view(const std::vector<T>& base, const Tensor& view) {
  std::vector<T> out;
  for (auto o : view_offsets(view)) out.push_back(base[static_cast<std::size_t>(o)]);
  return out;
}

/// Index of broadcast source element for output linear index lin.
inline std::size_t bcast_index(const Shape& out, const Shape& in, std::int64_t lin) {
  std::int64_t idx = 0, stride = 1;
  const std::size_t lead = out.size() - in.size();
  for (std::int64_t d = static_cast<std::int64_t>(out.size()) - 1; d >= 0; --d) {
    const std::int64_t i = lin % out[d];
    lin /= out[d];
    if (static_cast<std::size_t>(d) >= lead) {
      const std::int64_t sz = in[d - lead];
      idx += (sz == 1 ? 0 : i) * stride;
      stride *= sz;
    }
  }
  return static_cast<std::size_t>(idx);
}

inline std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

}  // namespace glt_test

// The statement throws E whose message contains `part`.
#define EXPECT_THROW_MSG(stmt, E, part)                                         \
  try {                                                                         \
    stmt;                                                                       \
    ADD_FAILURE() << #stmt " did not throw";                                    \
  } catch (const E& e) {                                                        \
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what(); \
  }
