// Reductions, softmax and cumsum against float64 host references.
// Tolerances: sums/means atol 1e-5 * (1 + sum|x|) (f32 tree accumulation), rtol 1e-5;
// var/std/logsumexp/softmax rtol 1e-5 atol 1e-6; max/min/argmax/all/any exact.
#include <functional>
#include <memory>
#include <numeric>

#include "test_util.hpp"

using namespace glt_test;
using namespace gltensor;

namespace {

using Groups = std::vector<std::vector<std::pair<double, std::int64_t>>>;  // (value, index in reduced space)

// Groups the elements of a contiguous host tensor by output element.
Groups group(const std::vector<float>& x, const Shape& shape, const Dims& dims_in) {
  std::vector<bool> red(shape.size(), dims_in.empty());
  for (auto d : dims_in) red[d < 0 ? d + shape.size() : d] = true;
  std::int64_t nout = 1;
  for (std::size_t d = 0; d < shape.size(); ++d)
    if (!red[d]) nout *= shape[d];
  Groups g(static_cast<std::size_t>(nout));
  for (std::int64_t lin = 0; lin < static_cast<std::int64_t>(x.size()); ++lin) {
    std::int64_t rem = lin, o = 0, ostride = 1, r = 0, rstride = 1;
    for (std::int64_t d = static_cast<std::int64_t>(shape.size()) - 1; d >= 0; --d) {
      const std::int64_t i = rem % shape[d];
      rem /= shape[d];
      if (red[d]) {
        r += i * rstride;
        rstride *= shape[d];
      } else {
        o += i * ostride;
        ostride *= shape[d];
      }
    }
    g[o].push_back({x[lin], r});
  }
  for (auto& v : g) std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.second < b.second; });
  return g;
}

using Reducer = std::function<double(const std::vector<std::pair<double, std::int64_t>>&)>;

double r_sum(const std::vector<std::pair<double, std::int64_t>>& v) {
  double s = 0;
  for (auto& [x, i] : v) s += x;
  return s;
}
double r_max(const std::vector<std::pair<double, std::int64_t>>& v, bool want_index, bool is_max) {
  double best = 0;
  std::int64_t bi = -1;
  for (auto& [x, i] : v) {
    if (bi >= 0 && std::isnan(best)) break;
    if (bi < 0 || std::isnan(x) || (is_max ? x > best : x < best)) {
      best = x;
      bi = i;
    }
  }
  return want_index ? double(bi) : best;
}
double r_var(const std::vector<std::pair<double, std::int64_t>>& v, double corr) {
  const double n = v.size();
  if (n == 0) return NAN;
  const double m = r_sum(v) / n;
  double s = 0;
  for (auto& [x, i] : v) s += (x - m) * (x - m);
  return s / std::max(n - corr, 0.0);
}
double r_lse(const std::vector<std::pair<double, std::int64_t>>& v) {
  double m = -INFINITY;
  for (auto& [x, i] : v) m = std::isnan(x) || std::isnan(m) ? NAN : std::max(m, x);
  if (std::isnan(m) || std::isinf(m)) return m;
  double s = 0;
  for (auto& [x, i] : v) s += std::exp(x - m);
  return m + std::log(s);
}

struct Case {
  Shape shape;
  Dims dims;
};

void check_all(std::mt19937_64& rng, const Case& c, bool keepdim, bool noncontig, bool specials) {
  const std::size_t n = static_cast<std::size_t>(numel_of(c.shape));
  auto x = uniform(rng, n);
  if (specials && n > 30) sprinkle_specials(x);
  Tensor t;
  std::vector<float> host = x;
  if (noncontig && c.shape.size() >= 2) {
    // Store transposed and view it back: same logical values, non-contiguous strides.
    Shape ts = c.shape;
    std::swap(ts[0], ts[1]);
    std::vector<float> stored(n);
    Tensor probe = Tensor::empty(device(), ts).transpose(0, 1);
    auto offs = view_offsets(probe);
    for (std::size_t i = 0; i < n; ++i) stored[offs[i]] = x[i];
    t = Tensor::from_host(device(), stored, ts).transpose(0, 1);
    ASSERT_FALSE(t.is_contiguous() && c.shape[0] > 1 && c.shape[1] > 1);
  } else {
    t = Tensor::from_host(device(), x, c.shape);
  }
  const auto g = group(host, c.shape, c.dims);
  double abs_sum = 0;
  for (float v : x) abs_sum += std::isfinite(v) ? std::fabs(v) : 0;
  auto expect = [&](const char* name, const Tensor& r, const Reducer& f, double rtol, double atol) {
    std::vector<double> ref;
    for (auto& v : g) ref.push_back(f(v));
    EXPECT_EQ(r.numel(), static_cast<std::int64_t>(ref.size())) << name;
    EXPECT_TRUE(close(r.to_vector(), ref, rtol, atol)) << name << " shape " << to_string(c.shape) << " dims "
                                                       << to_string(c.dims) << (noncontig ? " non-contiguous" : "");
  };
  const double sa = 1e-5 * (1 + abs_sum);
  expect("sum", sum(t, c.dims, keepdim), r_sum, 1e-5, sa);
  expect(
      "mean", mean(t, c.dims, keepdim), [](auto& v) { return v.empty() ? NAN : r_sum(v) / v.size(); }, 1e-5, sa);
  expect(
      "var", var(t, c.dims, 1.0, keepdim), [](auto& v) { return r_var(v, 1); }, 1e-4, 1e-6);
  expect(
      "var0", var(t, c.dims, 0.0, keepdim), [](auto& v) { return r_var(v, 0); }, 1e-4, 1e-6);
  expect(
      "std", gltensor::std(t, c.dims, 1.0, keepdim), [](auto& v) { return std::sqrt(r_var(v, 1)); }, 1e-4, 1e-6);
  expect("logsumexp", logsumexp(t, c.dims, keepdim), r_lse, 1e-5, 1e-6);
  expect(
      "norm1", norm(t, 1, c.dims, keepdim),
      [](auto& v) {
        double s = 0;
        for (auto& [x, i] : v) s += std::fabs(x);
        return s;
      },
      1e-5, sa);
  expect(
      "norm2", norm(t, 2, c.dims, keepdim),
      [](auto& v) {
        double s = 0;
        for (auto& [x, i] : v) s += x * x;
        return std::sqrt(s);
      },
      1e-5, sa);
  expect(
      "all", all(t, c.dims, keepdim),
      [](auto& v) {
        for (auto& [x, i] : v)
          if (x == 0) return 0.0;
        return 1.0;
      },
      0, 0);
  expect(
      "any", any(t, c.dims, keepdim),
      [](auto& v) {
        for (auto& [x, i] : v)
          if (x != 0) return 1.0;
        return 0.0;
      },
      0, 0);
  if (n > 0 && !g.empty() && !g[0].empty()) {
    expect(
        "amax", amax(t, c.dims, keepdim), [](auto& v) { return r_max(v, false, true); }, 0, 0);
    expect(
        "amin", amin(t, c.dims, keepdim), [](auto& v) { return r_max(v, false, false); }, 0, 0);
    if (c.dims.size() == 1) {
      expect(
          "argmax", argmax(t, c.dims[0], keepdim), [](auto& v) { return r_max(v, true, true); }, 0, 0);
      expect(
          "argmin", argmin(t, c.dims[0], keepdim), [](auto& v) { return r_max(v, true, false); }, 0, 0);
    }
  }
  // prod on values near 1
  auto p = uniform(rng, n, 0.9f, 1.1f);
  Tensor tp = Tensor::from_host(device(), p, c.shape);
  std::vector<double> pref;
  for (auto& v : group(p, c.shape, c.dims)) {
    double s = 1;
    for (auto& [x, i] : v) s *= x;
    pref.push_back(s);
  }
  EXPECT_TRUE(close(prod(tp, c.dims, keepdim).to_vector(), pref, 1e-4, 1e-30)) << "prod " << to_string(c.shape);
}

}  // namespace

TEST(Reduce, ShapesDimsKeepdimViewsAndSpecials) {
  GLT_RNG(rng);
  const std::vector<Case> cases = {{{7}, {}},         {{3, 5}, {1}},     {{3, 5}, {0}},  {{2, 3, 4}, {0, 2}},
                                   {{4, 1, 3}, {1}},  {{5, 6}, {-1}},    {{1}, {0}},     {{2, 3, 4, 5}, {1, 3}},
                                   {{0, 3}, {0}},     {{3, 0}, {1}},     {{100003}, {}}, {{3, 20011}, {1}},
                                   {{20011, 3}, {0}}, {{513, 7}, {0, 1}}};
  for (const auto& c : cases)
    for (bool keepdim : {false, true}) check_all(rng, c, keepdim, false, false);
  for (const auto& c : cases) check_all(rng, c, false, true, false);
  check_all(rng, {{4, 50}, {1}}, false, false, true);
  check_all(rng, {{50, 4}, {0}}, false, true, true);
}

// The contiguous-row fast path (reduce_rows.comp): sum, mean and L1/L2 norms of floating inputs
// whose reduced elements are contiguous. 128-bit loads where offsets and row strides allow,
// element loads otherwise; one pass, or two (partial sums) for long rows; subgroup sums where
// the device has KHR_shader_subgroup, and there the shared-memory fallback too (forced).
TEST(Reduce, ContiguousRowsFastPath) {
  GLT_RNG(rng);
  struct V {
    Shape base;
    std::function<Tensor(const Tensor&)> view;
    Dims dims;
  };
  const auto id = [](const Tensor& t) { return t; };
  const std::vector<V> cases = {
      {{1}, id, {}},
      {{3}, id, {}},
      {{4}, id, {}},
      {{5}, id, {}},
      {{1023}, id, {}},
      {{4096}, id, {}},
      {{4097}, id, {}},
      {{(1 << 20) + 3}, id, {}},                                               // two passes, 256 chunks
      {{5, 4099}, id, {-1}},                                                   // row stride 4099: element loads
      {{7, 12300}, id, {-1}},                                                  // quads, 4 chunks per row
      {{4, 4100}, [](const Tensor& t) { return t.slice(0, 0, 4, 2); }, {-1}},  // strided rows
      {{8200}, [](const Tensor& t) { return t.slice(0, 1, 8198); }, {}},       // offset 1
      {{8204}, [](const Tensor& t) { return t.slice(0, 4, 8204); }, {}},       // offset 4: quads
      {{1, 5000},
       [](const Tensor& t) {
         return t.expand({3, 5000});
       },
       {-1}},                     // row stride 0
      {{3, 4, 260}, id, {-1}},    // kept dims collapse
      {{3, 4, 260}, id, {1, 2}},  // reduced dims collapse
      {{70001, 3}, id, {-1}},     // rows beyond 65535 groups (f32 only, below)
  };
  std::vector<const char*> modes = {nullptr};
  if (device().caps().subgroup) modes.push_back("0");
  for (const char* mode : modes) {
    ScopedEnv env("GLTENSOR_SUBGROUPS", mode);
    for (const V& c : cases)
      for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
        // The rows past 65535 workgroups: the dispatch's split is the dtype's no matter, and its
        // f16 and bf16 programs are the short rows' above (each of the 70001-row reductions took
        // llvmpipe about 0.2 CPU-s: 2.4 of the test's 3.0 for the three dtypes).
        if (c.base == Shape{70001, 3} && dt != DType::f32) continue;
        const std::size_t n = static_cast<std::size_t>(numel_of(c.base));
        auto x = uniform(rng, n);
        if (c.base.size() == 2 && c.base[0] >= 3 && c.base[1] >= 20) {  // NaN row, +Inf row, +Inf and -Inf row
          const std::size_t R = c.base.back();
          x[R / 2] = NAN;
          x[R + 17] = INFINITY;
          x[2 * R + 1] = INFINITY;
          x[2 * R + R - 1] = -INFINITY;
        }
        if (c.base == Shape{7, 12300}) sprinkle_specials(x);
        Tensor v = c.view(Tensor::from_host(device(), x, c.base));
        std::vector<float> vals = gather_view(x, v);
        if (dt != DType::f32) {
          v = v.to(dt);
          for (auto& f : vals) f = dt == DType::f16 ? f16_to_f32(f32_to_f16(f)) : bf16_to_f32(f32_to_bf16(f));
        }
        std::int64_t R = c.dims.empty() ? v.numel() : 1;
        for (auto d : c.dims) R *= v.size(d);
        const std::size_t rows = vals.size() / static_cast<std::size_t>(R);
        std::vector<double> rs(rows, 0), r1(rows, 0), r2(rows, 0);
        double abs_sum = 0;
        for (std::size_t i = 0; i < vals.size(); ++i) {
          const double f = vals[i];
          rs[i / R] += f;
          r1[i / R] += std::fabs(f);
          r2[i / R] += f * f;
          if (std::isfinite(f)) abs_sum += std::fabs(f);
        }
        std::vector<double> rm(rows), rn(rows);
        for (std::size_t o = 0; o < rows; ++o) {
          rm[o] = rs[o] / static_cast<double>(R);
          rn[o] = std::sqrt(r2[o]);
        }
        if (dt == DType::f16)  // results are f16: large sums overflow to Inf as in PyTorch
          for (auto* r : {&rs, &rm, &r1, &rn})
            for (auto& f : *r) f = f16_to_f32(f32_to_f16(static_cast<float>(f)));
        const double rtol = dt == DType::f32 ? 1e-5 : dt == DType::f16 ? 1e-3 : 8e-3, atol = 1e-5 * (1 + abs_sum);
        const std::string what = std::string("view of ") + to_string(c.base) + " as " + v.repr() + " dims " +
                                 to_string(c.dims) + (mode ? " without subgroups" : "");
        EXPECT_TRUE(close(sum(v, c.dims).to_vector(), rs, rtol, atol)) << "sum, " << what;
        EXPECT_TRUE(close(mean(v, c.dims).to_vector(), rm, rtol, atol / R)) << "mean, " << what;
        EXPECT_TRUE(close(norm(v, 1, c.dims).to_vector(), r1, rtol, atol)) << "norm1, " << what;
        EXPECT_TRUE(close(norm(v, 2, c.dims).to_vector(), rn, rtol, atol)) << "norm2, " << what;
      }
  }
}

TEST(Reduce, ShapesAndDtypes) {
  Tensor x = ones(device(), {2, 3, 4});
  EXPECT_EQ(sum(x, {1}).shape(), (Shape{2, 4}));
  EXPECT_EQ(sum(x, {1}, true).shape(), (Shape{2, 1, 4}));
  EXPECT_EQ(sum(x).shape(), Shape{});
  EXPECT_EQ(argmax(x).shape(), Shape{});
  EXPECT_EQ(argmax(x, kAllDims, true).shape(), (Shape{1, 1, 1}));
  EXPECT_EQ(argmax(x, 2).dtype(), DType::i32);
  Tensor i = arange(device(), 0, 10, 1, DType::i32);
  EXPECT_EQ(sum(i).dtype(), DType::i32);
  EXPECT_EQ(sum(i).item(), 45.0f);
  EXPECT_EQ(mean(i).dtype(), DType::f32);
  EXPECT_EQ(mean(i).item(), 4.5f);
  EXPECT_EQ(cumsum(i, 0).to_int_vector(), (std::vector<int>{0, 1, 3, 6, 10, 15, 21, 28, 36, 45}));
  EXPECT_EQ(sum(gt(i, 4.0)).item(), 5.0f);
  Tensor h = full(device(), {1000}, 0.5, DType::f16);
  EXPECT_EQ(sum(h).dtype(), DType::f16);
  EXPECT_EQ(sum(h).item(), 500.0f);
  EXPECT_EQ(sum(Tensor::empty(device(), {0})).item(), 0.0f);
  EXPECT_EQ(prod(Tensor::empty(device(), {0})).item(), 1.0f);
  EXPECT_TRUE(std::isnan(mean(Tensor::empty(device(), {0})).item()));
  EXPECT_EQ(logsumexp(Tensor::empty(device(), {0}), {0}).item(), -INFINITY);
  EXPECT_THROW(amax(Tensor::empty(device(), {0, 3}), {0}), IndexError);
  EXPECT_THROW(sum(x, {1, 1}), ValueError);
  EXPECT_THROW(sum(x, {3}), IndexError);
  EXPECT_THROW(norm(x, 3), ValueError);
  EXPECT_EQ(sum(x).item(), 24.0f);  // still usable
}

TEST(Softmax, AnyDimViewsAndSpecials) {
  GLT_RNG(rng);
  struct C {
    Shape shape;
    std::int64_t dim;
  };
  // Rows of 4n contiguous f32 take the row-in-registers path ({4, 1000}: one quad per
  // invocation, {3, 4100}: 5 with a partial last, {2, 8192}: 8, {5, 12}: 64 invocations);
  // {2, 8196} is one quad too long for it. With subgroups, each also runs without them.
  const bool sg = device().caps().subgroup;
  for (const C& c : std::vector<C>{{{5, 17}, -1},
                                   {{5, 17}, 0},
                                   {{2, 3, 300}, 1},
                                   {{1}, 0},
                                   {{3, 1}, 1},
                                   {{4, 1000}, 1},
                                   {{3, 4100}, 1},
                                   {{2, 8192}, -1},
                                   {{2, 8196}, 1},
                                   {{5, 12}, 1}}) {
    const std::size_t n = numel_of(c.shape);
    auto x = uniform(rng, n, -8, 8);
    Tensor t = Tensor::from_host(device(), x, c.shape);
    const std::int64_t d = c.dim < 0 ? c.dim + c.shape.size() : c.dim;
    auto g = group(x, c.shape, {d});
    // reference in the same element order: for each element, its group's stats (each group's
    // logsumexp once: per element it cost the test's CPU quadratically in the row length, about
    // 2 CPU-s for the rows of 8192 and 8196)
    std::vector<double> lses(g.size());
    for (std::size_t o = 0; o < g.size(); ++o) lses[o] = r_lse(g[o]);
    std::vector<double> ref(n), lref(n);
    Shape st = contiguous_strides(c.shape);
    for (std::size_t lin = 0; lin < n; ++lin) {
      std::int64_t rem = lin, o = 0, ostride = 1;
      for (std::int64_t k = static_cast<std::int64_t>(c.shape.size()) - 1; k >= 0; --k) {
        const std::int64_t i = rem % c.shape[k];
        rem /= c.shape[k];
        if (k != d) {
          o += i * ostride;
          ostride *= c.shape[k];
        }
      }
      const double lse = lses[static_cast<std::size_t>(o)];
      ref[lin] = std::exp(x[lin] - lse);
      lref[lin] = x[lin] - lse;
    }
    for (const char* subgroups : {"1", "0"}) {
      if (!sg && *subgroups == '0') continue;
      ScopedEnv env("GLTENSOR_SUBGROUPS", subgroups);
      EXPECT_TRUE(close(softmax(t, c.dim).to_vector(), ref, 1e-5, 1e-7))
          << to_string(c.shape) << " dim " << c.dim << " subgroups " << subgroups;
      EXPECT_TRUE(close(log_softmax(t, c.dim).to_vector(), lref, 1e-5, 1e-5))
          << to_string(c.shape) << " dim " << c.dim << " subgroups " << subgroups;
    }
  }
  // Specials in both paths (rows of 4, of 3): NaN or +Inf make the row NaN, -Inf entries get 0,
  // a row of -Inf only is NaN (as PyTorch: exp(-inf - -inf)).
  for (int len : {4, 3}) {
    const float I = INFINITY;
    std::vector<std::vector<float>> rows = {{1, NAN, 2, 3}, {I, 1, 2, 3}, {-I, 0, 1, -I}, {-I, -I, -I, -I}};
    std::vector<float> flat;
    for (auto& rw : rows) flat.insert(flat.end(), rw.begin(), rw.begin() + len);
    auto out = softmax(Tensor::from_host(device(), flat, {4, len}), 1).to_vector();
    for (int j = 0; j < len; ++j) {
      EXPECT_TRUE(std::isnan(out[j])) << "NaN row, length " << len;
      EXPECT_TRUE(std::isnan(out[len + j])) << "+Inf row, length " << len;
      EXPECT_TRUE(std::isnan(out[3 * len + j])) << "-Inf row, length " << len;
    }
    EXPECT_EQ(out[2 * len], 0.0f);
    EXPECT_NEAR(out[2 * len + 1], 1 / (1 + std::exp(1.0)), 1e-6) << len;
    if (len == 4) {
      EXPECT_EQ(out[2 * len + 3], 0.0f);
    }
  }
  // non-contiguous input, f16, NaN row and -inf entries
  auto x = uniform(rng, 60, -3, 3);
  Tensor t = Tensor::from_host(device(), x, {6, 10}).t();  // [10, 6]
  auto s = softmax(t, 1).to_vector();
  for (int i = 0; i < 10; ++i) {
    double m = 0;
    for (int j = 0; j < 6; ++j) m += std::exp(double(x[j * 10 + i]));
    for (int j = 0; j < 6; ++j) ASSERT_NEAR(s[i * 6 + j], std::exp(double(x[j * 10 + i])) / m, 1e-6);
  }
  std::vector<float> sp = {1, NAN, 2, -INFINITY, 0, 1};
  auto r = softmax(Tensor::from_host(device(), sp, {2, 3}), 1).to_vector();
  EXPECT_TRUE(std::isnan(r[0]) && std::isnan(r[1]) && std::isnan(r[2]));
  EXPECT_EQ(r[3], 0.0f);
  EXPECT_NEAR(r[4], 1 / (1 + std::exp(1.0)), 1e-6);
  Tensor h = Tensor::from_host(device(), x, {6, 10}, DType::f16);
  EXPECT_EQ(softmax(h, 1).dtype(), DType::f16);
  EXPECT_NEAR(sum(softmax(h, 1).to(DType::f32), {1}).to_vector()[0], 1.0, 2e-3);
  EXPECT_THROW(softmax(t, 2), IndexError);
}

// log_softmax = (x - max) - log(sum): with large logits, x - (max + log(sum)) rounds max + log(sum)
// to the ulp of max (6e-5 at 1000) and loses the small results. Rows of 5 (and a transposed view)
// take the generic path, rows of 8 the row-in-registers path.
TEST(Softmax, LogSoftmaxKeepsPrecisionOnLargeLogits) {
  GLT_RNG(rng);
  auto ref_row = [](const std::vector<float>& x, std::size_t begin, std::size_t len, std::size_t step) {
    double m = -INFINITY, s = 0;
    for (std::size_t j = 0; j < len; ++j) m = std::max(m, double(x[begin + j * step]));
    for (std::size_t j = 0; j < len; ++j) s += std::exp(double(x[begin + j * step]) - m);
    std::vector<double> r;
    for (std::size_t j = 0; j < len; ++j) r.push_back(double(x[begin + j * step]) - m - std::log(s));
    return r;
  };
  const bool sg = device().caps().subgroup;
  for (std::int64_t len : {5, 8}) {
    std::vector<float> x = {1000, 1000, -1000, 0, 1, 500, -3, 999.5f};
    x.resize(static_cast<std::size_t>(len));
    for (float off : {1000.0f, -1e4f, 3e4f, 0.0f})
      for (float v : uniform(rng, static_cast<std::size_t>(len), -8, 8)) x.push_back(off + v);
    const std::int64_t rows = static_cast<std::int64_t>(x.size()) / len;
    std::vector<double> ref;
    for (std::int64_t r = 0; r < rows; ++r) {
      auto rr = ref_row(x, static_cast<std::size_t>(r * len), static_cast<std::size_t>(len), 1);
      ref.insert(ref.end(), rr.begin(), rr.end());
    }
    for (const char* subgroups : {"1", "0"}) {
      if (!sg && *subgroups == '0') continue;
      setenv("GLTENSOR_SUBGROUPS", subgroups, 1);
      auto got = log_softmax(Tensor::from_host(device(), x, {rows, len}), 1).to_vector();
      EXPECT_TRUE(close(got, ref, 1e-6, 2e-6)) << "rows of " << len << ", subgroups " << subgroups;
      unsetenv("GLTENSOR_SUBGROUPS");
    }
    if (len == 5) {
      EXPECT_NEAR(log_softmax(Tensor::from_host(device(), x, {rows, len}), 1).to_vector()[0], -0.6931471805599453,
                  1e-6);
    }
    // Along dim 0 of the [len, rows] transpose: strided rows.
    Tensor tt = Tensor::from_host(device(), x, {rows, len}).t();
    auto got = log_softmax(tt, 0).t().contiguous().to_vector();
    EXPECT_TRUE(close(got, ref, 1e-6, 2e-6)) << "transposed, rows of " << len;
  }
}

TEST(Cumsum, RowsAndViews) {
  GLT_RNG(rng);
  auto x = uniform(rng, 4 * 33);
  Tensor t = Tensor::from_host(device(), x, {4, 33});
  auto c1 = cumsum(t, 1).to_vector(), c0 = cumsum(t, 0).to_vector();
  auto ct = cumsum(t.t(), 1).to_vector();  // [33, 4]
  for (int i = 0; i < 4; ++i) {
    double s = 0;
    for (int j = 0; j < 33; ++j) {
      s += x[i * 33 + j];
      ASSERT_NEAR(c1[i * 33 + j], s, 1e-5);
    }
  }
  for (int j = 0; j < 33; ++j) {
    double s = 0;
    for (int i = 0; i < 4; ++i) {
      s += x[i * 33 + j];
      ASSERT_NEAR(c0[i * 33 + j], s, 1e-5);
      ASSERT_NEAR(ct[j * 4 + i], s, 1e-5);
    }
  }
  EXPECT_EQ(cumsum(Tensor::empty(device(), {0, 3}), 1).shape(), (Shape{0, 3}));
}

namespace {
// float64 inclusive prefix sums of a row-major [outer, L, inner] array along the middle dim.
std::vector<double> ref_cumsum(const std::vector<double>& x, std::int64_t outer, std::int64_t L, std::int64_t inner) {
  std::vector<double> out(x.size());
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      double s = 0;
      for (std::int64_t l = 0; l < L; ++l) {
        const std::size_t e = static_cast<std::size_t>((o * L + l) * inner + i);
        s += x[e];
        out[e] = s;
      }
    }
  return out;
}
}  // namespace

// Rows longer than llvmpipe's 65535 loop iterations (the issue "Correctness on llvmpipe": a
// sequential scan per row gave zeros from index 65535 on), block boundaries, every level of the
// blocked scan (1024-element blocks: 1024^2 + 3 needs three), integers exact.
TEST(Cumsum, LongRowsBlockedScan) {
  GLT_RNG(rng);
  {
    auto c = cumsum(ones(device(), {65536}), 0).to_vector();
    ASSERT_EQ(c.size(), 65536u);
    EXPECT_EQ(c[65535], 65536.0f);
    std::vector<double> ref(65536);
    for (int i = 0; i < 65536; ++i) ref[i] = i + 1;
    EXPECT_TRUE(close(c, ref, 0, 0));
  }
  for (std::int64_t L : {65, 1023, 1024, 1025, 4097, 100003}) {
    auto x = uniform(rng, static_cast<std::size_t>(3 * L));
    sprinkle_specials(x);
    Tensor t = Tensor::from_host(device(), x, {3, L});
    EXPECT_TRUE(close(cumsum(t, 1).to_vector(), ref_cumsum(to_double(x), 3, L, 1), 1e-5, 2e-3)) << "L=" << L;
  }
  for (std::int64_t L : {70001, 1024 * 1024 + 3}) {
    auto x = uniform_int(rng, static_cast<std::size_t>(2 * L), -1000, 1000);
    Tensor t = Tensor::from_host(device(), x, {2, L});
    Tensor c = cumsum(t, -1);
    EXPECT_EQ(c.dtype(), DType::i32);
    auto got = c.to_int_vector();
    std::vector<std::int64_t> ref(got.size());
    for (std::int64_t r = 0; r < 2; ++r) {
      std::int64_t s = 0;
      for (std::int64_t l = 0; l < L; ++l) ref[r * L + l] = s += x[r * L + l];
    }
    std::int64_t bad = 0;
    for (std::size_t i = 0; i < got.size(); ++i) bad += got[i] != ref[i];
    EXPECT_EQ(bad, 0) << "L=" << L << ": first values " << got[L - 1] << " vs " << ref[L - 1];
  }
}

// Long rows along a non-last dim, strided and transposed views, many short rows, u8 and bool
// inputs (i32 results), f16 results.
TEST(Cumsum, LongRowsViewsAndDtypes) {
  GLT_RNG(rng);
  const std::int64_t L = 70000;
  auto x = uniform(rng, static_cast<std::size_t>(L * 3));
  Tensor t = Tensor::from_host(device(), x, {L, 3});
  const auto ref0 = ref_cumsum(to_double(x), 1, L, 3);
  EXPECT_TRUE(close(cumsum(t, 0).to_vector(), ref0, 1e-5, 2e-3));
  // [3, L] transposed view of t: rows of step 3, results in a contiguous [3, L].
  std::vector<double> ref_t(ref0.size());
  for (std::int64_t l = 0; l < L; ++l)
    for (int c = 0; c < 3; ++c) ref_t[c * L + l] = ref0[l * 3 + c];
  EXPECT_TRUE(close(cumsum(t.t(), 1).to_vector(), ref_t, 1e-5, 2e-3));
  // Every other row of a [2L, 3] tensor, column 1: a view with offset and step 6.
  auto y = uniform(rng, static_cast<std::size_t>(2 * L * 3));
  Tensor ty = Tensor::from_host(device(), y, {2 * L, 3});
  Tensor v = ty.slice(0, 0, 2 * L, 2).select(1, 1);
  std::vector<double> yv;
  for (std::int64_t l = 0; l < L; ++l) yv.push_back(y[l * 6 + 1]);
  EXPECT_TRUE(close(cumsum(v, 0).to_vector(), ref_cumsum(yv, 1, L, 1), 1e-5, 2e-3));
  // Many short rows (one invocation per row) and rows just past that.
  for (std::int64_t n : {7, 64, 65}) {
    auto z = uniform(rng, static_cast<std::size_t>(5000 * n));
    Tensor tz = Tensor::from_host(device(), z, {5000, n});
    EXPECT_TRUE(close(cumsum(tz, 1).to_vector(), ref_cumsum(to_double(z), 5000, n, 1), 1e-5, 1e-5)) << n;
  }
  // u8 and bool inputs sum in i32.
  auto u = uniform_int(rng, 80000, 0, 255);
  Tensor tu = Tensor::from_host(device(), u, {80000}).to(DType::u8);
  Tensor tb = gt(tu, 127.0);
  auto cu = cumsum(tu, 0), cb = cumsum(tb, 0);
  EXPECT_EQ(cu.dtype(), DType::i32);
  EXPECT_EQ(cb.dtype(), DType::i32);
  auto gu = cu.to_int_vector(), gb = cb.to_int_vector();
  std::int64_t su = 0, sb = 0, bad = 0;
  for (std::size_t i = 0; i < u.size(); ++i) {
    su += u[i];
    sb += u[i] > 127;
    bad += gu[i] != su || gb[i] != sb;
  }
  EXPECT_EQ(bad, 0);
  // f16 in and out: sums in f32, each result rounded once.
  auto h = uniform(rng, 70000, 0, 1);
  Tensor th = Tensor::from_host(device(), h, {70000}).to(DType::f16);
  const auto hv = th.to(DType::f32).to_vector();
  Tensor ch = cumsum(th, 0);
  EXPECT_EQ(ch.dtype(), DType::f16);
  EXPECT_TRUE(close(ch.to(DType::f32).to_vector(), ref_cumsum(to_double(hv), 1, 70000, 1), 1e-3, 1e-3));
}

// The gradient of a long cumsum: reversed cumsum of the incoming gradient.
TEST(Cumsum, LongRowGradient) {
  const std::int64_t L = 70000;
  Tensor x = zeros(device(), {L});
  requires_grad_(x);
  backward(sum(cumsum(x, 0)));
  auto g = grad(x).to_vector();
  std::vector<double> ref(L);
  for (std::int64_t i = 0; i < L; ++i) ref[i] = static_cast<double>(L - i);
  EXPECT_TRUE(close(g, ref, 0, 0));
}

namespace {
// float64 softmax and log_softmax of each row of a row-major [rows, L] array.
void ref_softmax_rows(const std::vector<float>& x, std::int64_t rows, std::int64_t L, std::vector<double>& sm,
                      std::vector<double>& lsm) {
  sm.resize(x.size());
  lsm.resize(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    std::vector<std::pair<double, std::int64_t>> row;
    for (std::int64_t l = 0; l < L; ++l) row.push_back({x[r * L + l], l});
    const double lse = r_lse(row);
    for (std::int64_t l = 0; l < L; ++l) {
      const double v = x[r * L + l];
      // torch: a row with NaN or +Inf is NaN, as is a row of -Inf only.
      const bool nan_row = std::isnan(lse) || lse == INFINITY || lse == -INFINITY;
      lsm[r * L + l] = nan_row ? NAN : v - lse;
      sm[r * L + l] = nan_row ? NAN : std::exp(v - lse);
    }
  }
}
}  // namespace

// Rows longer than one workgroup may loop over go through logsumexp's split reduction: under a
// lowered loop limit (any device) with specials, along dim 0 of a view, f16; and at a real
// length past llvmpipe's limit (8.5M: 2 x 33204 workgroup strides plus the tree).
TEST(Softmax, RowsPastTheLoopLimit) {
  GLT_RNG(rng);
  {
    ScopedLoopLimit limit(100);
    const std::int64_t rows = 5, L = 20000;
    auto x = uniform(rng, rows * L, -8, 8);
    x[3] = NAN;                                                     // row 0: NaN
    x[L + 7] = INFINITY;                                            // row 1: +Inf
    for (std::int64_t l = 0; l < L; ++l) x[2 * L + l] = -INFINITY;  // row 2: -Inf only
    x[3 * L + 11] = -INFINITY;                                      // row 3: one -Inf entry
    std::vector<double> sm, lsm;
    ref_softmax_rows(x, rows, L, sm, lsm);
    Tensor t = Tensor::from_host(device(), x, {rows, L});
    EXPECT_TRUE(close(softmax(t, 1).to_vector(), sm, 1e-5, 1e-9));
    EXPECT_TRUE(close(log_softmax(t, -1).to_vector(), lsm, 1e-5, 1e-4));
    // dim 0 of the transposed view: the same rows, strided.
    Tensor tt = Tensor::from_host(device(), x, {rows, L}).t();  // [L, rows]
    auto s0 = softmax(tt, 0);
    EXPECT_EQ(s0.shape(), (Shape{L, rows}));
    EXPECT_TRUE(close(s0.t().contiguous().to_vector(), sm, 1e-5, 1e-9));
    // f16 storage: computed in f32, rounded once.
    auto h = uniform(rng, 2 * L, -4, 4);
    Tensor th = Tensor::from_host(device(), h, {2, L}).to(DType::f16);
    const auto hv = th.to(DType::f32).to_vector();
    ref_softmax_rows(hv, 2, L, sm, lsm);
    Tensor sh = softmax(th, 1);
    EXPECT_EQ(sh.dtype(), DType::f16);
    EXPECT_TRUE(close(sh.to(DType::f32).to_vector(), sm, 2e-3, 1e-7));
  }
  const std::int64_t L = 8500000;
  auto x = uniform(rng, L, -8, 8);
  std::vector<double> sm, lsm;
  ref_softmax_rows(x, 1, L, sm, lsm);
  Tensor t = Tensor::from_host(device(), x, {1, L});
  EXPECT_TRUE(close(log_softmax(t, 1).to_vector(), lsm, 1e-5, 1e-4));
}

// Rows of any length read once (ROW_REGS: the row in registers as scalars, up to 32 x 256
// elements; ROW_QUADS where f32, contiguous and whole quads): odd lengths (6625: the OCR
// recognizer's classes), 1, the longest in registers (8191) and the first past them (8193: two
// strided passes), strided views, f16 and int inputs, NaN / +Inf / -Inf rows, and more rows than
// one dispatch's workgroups (70000). Against float64.
TEST(Softmax, AnyLengthInOneRead) {
  GLT_RNG(rng);
  const bool sg = device().caps().subgroup;
  for (const char* subgroups : {"1", "0"}) {
    if (!sg && *subgroups == '0') continue;
    ScopedEnv env("GLTENSOR_SUBGROUPS", subgroups);
    SCOPED_TRACE(::testing::Message() << "subgroups " << subgroups);
    for (const auto& [rows, L] : std::vector<std::pair<std::int64_t, std::int64_t>>{
             {7, 6625}, {3, 1}, {5, 255}, {4, 257}, {3, 1001}, {2, 8191}, {2, 8193}, {70000, 3}}) {
      SCOPED_TRACE(::testing::Message() << "[" << rows << ", " << L << "]");
      auto x = uniform(rng, static_cast<std::size_t>(rows * L), -20, 20);
      if (rows >= 5 && L >= 3) {
        x[static_cast<std::size_t>(L / 2)] = NAN;                       // row 0: NaN
        x[static_cast<std::size_t>(L + L - 1)] = INFINITY;              // row 1: +Inf (last element)
        for (std::int64_t l = 0; l < L; ++l) x[2 * L + l] = -INFINITY;  // row 2: -Inf only
        x[static_cast<std::size_t>(3 * L)] = -INFINITY;                 // row 3: one -Inf entry
      }
      std::vector<double> sm, lsm;
      ref_softmax_rows(x, rows, L, sm, lsm);
      Tensor t = Tensor::from_host(device(), x, {rows, L});
      EXPECT_TRUE(close(softmax(t, 1).to_vector(), sm, 1e-5, 1e-9));
      EXPECT_TRUE(close(log_softmax(t, -1).to_vector(), lsm, 1e-5, 1e-5));
      if (rows * L > 300000) continue;
      // The same rows along dim 0 of the transposed view (strided loads and stores), and at an
      // offset of one element (no quads).
      Tensor tt = Tensor::from_host(device(), x, {rows, L}).t();  // [L, rows]
      EXPECT_TRUE(close(softmax(tt, 0).t().contiguous().to_vector(), sm, 1e-5, 1e-9));
      std::vector<float> shifted(x.size() + 1, 0.0f);
      std::copy(x.begin(), x.end(), shifted.begin() + 1);
      Tensor ts = Tensor::from_host(device(), shifted, {static_cast<std::int64_t>(shifted.size())})
                      .narrow(0, 1, rows * L)
                      .view({rows, L});
      EXPECT_TRUE(close(log_softmax(ts, 1).to_vector(), lsm, 1e-5, 1e-5));
    }
    // f16 storage (computed in f32, rounded once) and int32 inputs (f32 results).
    const std::int64_t L = 6625;
    auto h = uniform(rng, 3 * L, -4, 4);
    Tensor th = Tensor::from_host(device(), h, {3, L}).to(DType::f16);
    std::vector<double> sm, lsm;
    ref_softmax_rows(th.to(DType::f32).to_vector(), 3, L, sm, lsm);
    Tensor sh = softmax(th, 1);
    EXPECT_EQ(sh.dtype(), DType::f16);
    EXPECT_TRUE(close(sh.to(DType::f32).to_vector(), sm, 2e-3, 1e-7));
    std::vector<float> iv(2 * 1001);
    for (auto& v : iv) v = static_cast<float>(static_cast<int>(rng() % 21) - 10);
    ref_softmax_rows(iv, 2, 1001, sm, lsm);
    Tensor ti = Tensor::from_host(device(), iv, {2, 1001}).to(DType::i32);
    Tensor si = softmax(ti, 1);
    EXPECT_EQ(si.dtype(), DType::f32);
    EXPECT_TRUE(close(si.to_vector(), sm, 1e-5, 1e-9));
  }
  // Empty rows and no rows: empty results of the input's shape.
  for (const Shape& shape : {Shape{3, 0}, Shape{0, 6625}}) {
    EXPECT_EQ(softmax(Tensor::empty(device(), shape), 1).shape(), shape);
    EXPECT_EQ(log_softmax(Tensor::empty(device(), shape), 1).shape(), shape);
  }
}

// The one-read forms' row tails come from no load past the row's end (softmax.comp clamps the
// index to the row's last element or quad and replaces the value past L by -Inf with a select):
// rows [rows, L] are the leading columns of a wider storage [rows, L + 4] whose columns past L
// are NaN (for the last row: past the view's end), each row's last element its largest (a clamped
// load kept past L repeats it). Odd lengths (ROW_REGS, one and several values per invocation) and
// multiples of 4 (ROW_QUADS, one and several quads). Sabotage: either select dropped (rows NaN),
// or the clamp one short (the last element lost).
TEST(Softmax, RowTailsPastTheEnd) {
  GLT_RNG(rng);
  for (const auto& [rows, L] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {3, 1}, {3, 5}, {2, 63}, {4, 257}, {3, 1001}, {2, 4}, {3, 8}, {2, 260}, {2, 2052}}) {
    SCOPED_TRACE(::testing::Message() << "[" << rows << ", " << L << "] in [" << rows << ", " << L + 4 << "]");
    const std::int64_t LW = L + 4;
    auto wide = uniform(rng, static_cast<std::size_t>(rows * LW), -8, 8);
    std::vector<float> x;
    for (std::int64_t r = 0; r < rows; ++r) {
      wide[static_cast<std::size_t>(r * LW + L - 1)] = 9.0f;
      for (std::int64_t l = L; l < LW; ++l) wide[static_cast<std::size_t>(r * LW + l)] = NAN;
      x.insert(x.end(), wide.begin() + r * LW, wide.begin() + r * LW + L);
    }
    std::vector<double> sm, lsm;
    ref_softmax_rows(x, rows, L, sm, lsm);
    const Tensor t = Tensor::from_host(device(), wide, {rows, LW}).narrow(1, 0, L);
    EXPECT_TRUE(close(softmax(t, 1).to_vector(), sm, 1e-5, 1e-9));
    EXPECT_TRUE(close(log_softmax(t, 1).to_vector(), lsm, 1e-5, 1e-5));
  }
}

// The blocked scan's last block of a row (scan.comp's BLOCK_SCAN clamps its loads to the row's
// last element, the values past L replaced by 0): rows of the leading columns of a wider storage
// whose columns past L are NaN, against float64. An inclusive scan carries values forward only,
// so values past L reach no stored output: this catches a wrong clamp (sabotage: clamped one
// short, the last element lost), not a dropped select (sabotage-checked: passes, as it must).
TEST(Cumsum, RowTailsPastTheEnd) {
  GLT_RNG(rng);
  for (std::int64_t L : {65, 1023, 1025, 2049}) {
    SCOPED_TRACE("L = " + std::to_string(L));
    const std::int64_t rows = 3, LW = L + 3;
    auto wide = uniform(rng, static_cast<std::size_t>(rows * LW));
    std::vector<double> x;
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t l = L; l < LW; ++l) wide[static_cast<std::size_t>(r * LW + l)] = NAN;
      x.insert(x.end(), wide.begin() + r * LW, wide.begin() + r * LW + L);
    }
    const Tensor t = Tensor::from_host(device(), wide, {rows, LW}).narrow(1, 0, L);
    EXPECT_TRUE(close(cumsum(t, 1).to_vector(), ref_cumsum(x, rows, L, 1), 1e-5, 1e-4));
  }
}

// sum / mean / norms under very low loop limits (20 to 40): the contiguous-rows fast path
// (reduce_rows.comp) planned 22 iterations for any row (its tree and exit tests) and threw an
// internal LimitError at limits 20-24; it now counts its tree honestly, shortens its chunks and
// leaves what cannot fit to the general kernel. Sums against float64.
TEST(Reduce, SumUnderVeryLowLoopLimits) {
  GLT_RNG(rng);
  for (const std::uint64_t lim : {20u, 21u, 22u, 23u, 24u, 30u, 40u})
    for (const std::int64_t n : {1, 7, 64, 1000, 5000}) {
      SCOPED_TRACE("limit " + std::to_string(lim) + " n " + std::to_string(n));
      ScopedLoopLimit limit(lim);
      auto x = uniform(rng, static_cast<std::size_t>(3 * n));
      std::vector<double> rows(3, 0.0), all(1, 0.0), l2(3, 0.0);
      for (std::int64_t r = 0; r < 3; ++r)
        for (std::int64_t i = 0; i < n; ++i) {
          rows[r] += x[r * n + i];
          l2[r] += double(x[r * n + i]) * x[r * n + i];
        }
      for (double v : rows) all[0] += v;
      for (double& v : l2) v = std::sqrt(v);
      const Tensor t = Tensor::from_host(device(), x, {3, n});
      ASSERT_TRUE(close(sum(t).to_vector(), all, 1e-5, 1e-4));
      ASSERT_TRUE(close(sum(t, {1}).to_vector(), rows, 1e-5, 1e-4));
      ASSERT_TRUE(close(norm(t, 2.0, {1}).to_vector(), l2, 1e-5, 1e-4));
    }
}

// A short sum over many outputs (R <= 16 views, >= 1024 outputs: split-K partials) goes through
// generated add chains of up to 6 views per dispatch: every R from 2 to 16 over dim 0 and over a
// middle dim (strided views), against the float64 sum; one dispatch up to 6 views.
TEST(Reduce, ShortSumOverManyOutputs) {
  GLT_RNG(rng);
  const std::int64_t A = 31, B = 37;  // 1147 outputs
  for (std::int64_t R = 2; R <= 16; ++R) {
    SCOPED_TRACE("R " + std::to_string(R));
    const auto xv = uniform(rng, static_cast<std::size_t>(R * A * B));
    const Tensor x = Tensor::from_host(device(), xv, {R, A, B});
    std::vector<double> ref0(static_cast<std::size_t>(A * B), 0.0);
    for (std::int64_t r = 0; r < R; ++r)
      for (std::int64_t a = 0; a < A; ++a)
        for (std::int64_t b = 0; b < B; ++b) ref0[a * B + b] += xv[(r * A + a) * B + b];
    const auto d0 = device().dispatch_count();
    const Tensor s0 = sum(x, {0});
    const auto dispatches = device().dispatch_count() - d0;
    EXPECT_LE(dispatches, static_cast<std::uint64_t>(R <= 6 ? 1 : (R - 2) / 5 + 1));
    EXPECT_EQ(s0.shape(), (Shape{A, B}));
    EXPECT_TRUE(close(s0.to_vector(), ref0, 1e-5, 1e-5));
    // The same values as [A, R, B] (a permuted view: the reduced dim strided by B, the kept dims
    // by R * B and 1).
    const Tensor xt = x.permute({1, 0, 2});
    EXPECT_TRUE(close(sum(xt, {1}).to_vector(), ref0, 1e-5, 1e-5));
    EXPECT_TRUE(close(sum(xt, {1}, true).reshape({A * B}).to_vector(), ref0, 1e-5, 1e-5));
    // Under a loop limit of 30 the elementwise driver takes 4 views per dispatch (7 operands
    // would loop 39 times): the same sums.
    ScopedLoopLimit limit(30);
    EXPECT_TRUE(close(sum(x, {0}).to_vector(), ref0, 1e-5, 1e-5));
  }
}

// The segmented rows at the 128 MiB SSBO block (the H100's limit lowered to llvmpipe's): a sum
// over dims 0, 2, 3 of [16, 2, 1024, 1024], exactly 128 MiB, each channel's row 16 planes of 2^20
// (2^24 elements: 65536 trips of 256 invocations in one pass, past 65535; chunked, two passes).
// Exact sums, compared exactly: channel 1 all ones (2^24, every partial an exact integer: an
// element lost or read twice shows), channel 0 zeros but random integer spikes, among them each
// plane's first and last element (a segment read from channel 1 shows). Sabotage: the last quad
// of every chunk dropped fails.
TEST(Reduce, SegmentedRowsAtTheSsboLimit) {
  GLT_RNG(rng);
  const std::int64_t N = 16, C = 2, P = 1024 * 1024;
  ScopedSsboLimit limit(std::int64_t{128} << 20);
  std::vector<float> x(static_cast<std::size_t>(N * C * P), 0.0f);
  for (std::int64_t n = 0; n < N; ++n) std::fill_n(x.begin() + (n * C + 1) * P, P, 1.0f);
  const auto pos = uniform_int(rng, 1000, 0, static_cast<int>(P - 1)), val = uniform_int(rng, 1000 + 2 * N, 1, 100);
  double spikes = 0;
  auto spike = [&](std::int64_t n, std::int64_t i, int v) {
    float& f = x[static_cast<std::size_t>(n * C * P + i)];
    spikes += v - f;
    f = static_cast<float>(v);
  };
  for (std::size_t k = 0; k < pos.size(); ++k) spike(static_cast<std::int64_t>(k) % N, pos[k], val[k]);
  for (std::int64_t n = 0; n < N; ++n) spike(n, 0, val[1000 + 2 * n]), spike(n, P - 1, val[1001 + 2 * n]);
  const Tensor t = Tensor::from_host(device(), x, {N, C, 1024, 1024});
  x = {};
  EXPECT_EQ(sum(t, {0, 2, 3}).to_vector(), (std::vector<float>{static_cast<float>(spikes), 16777216.0f}));
}

// Sums over dims 0, 2, 3 of [N, C, H, W] (a conv's bias gradient) on the row fast path as rows of
// segments (reduce_rows.comp's SEGMENTS: channel c's N planes of H * W elements, C * H * W apart):
// 128-bit loads where the planes are whole quads, element loads otherwise (odd planes, an offset
// of one element); one pass, or two over chunks of the segmented row (past 4096 elements, and
// chunks that end inside a plane under a lowered loop limit); past 65535 elements; f32 and f16;
// sum, mean, L1 and L2 norms against float64. Sabotage: the segment stride read as the segment's
// length in the quads' addresses, and in the elements': both fail.
TEST(Reduce, SegmentedRowsOverDims023) {
  GLT_RNG(rng);
  struct V {
    Shape base;
    std::function<Tensor(const Tensor&)> view;
    Dims dims;
    std::uint64_t limit = 0;
  };
  const auto id = [](const Tensor& t) { return t; };
  const std::vector<V> cases = {
      {{5, 7, 14, 14}, id, {0, 2, 3}},   // the CNN's layer in small: planes of 49 quads
      {{3, 5, 7, 9}, id, {0, 2, 3}},     // planes of 63: element loads
      {{2, 4, 3, 4}, id, {0, 2, 3}},     // planes of 3 quads
      {{40, 3, 30, 30}, id, {0, 2, 3}},  // 36000 per channel: chunks, two passes; 108000 elements
      {{6, 3, 20}, id, {0, 2}},          // 3-D
      {{7, 3, 21}, [](const Tensor& t) { return t.narrow(2, 1, 20); }, {0, 2}},  // offset 1: element loads
      {{7, 3, 24}, [](const Tensor& t) { return t.narrow(0, 1, 6); }, {0, 2}},   // offset 72: quads
      {{9, 5, 12, 12}, id, {0, 2, 3}, 24},  // lowered loop limit: short chunks inside the planes
      {{9, 5, 11, 11}, id, {0, 2, 3}, 24},
  };
  for (const V& c : cases)
    for (DType dt : {DType::f32, DType::f16}) {
      std::unique_ptr<ScopedLoopLimit> limit;
      if (c.limit) limit = std::make_unique<ScopedLoopLimit>(c.limit);
      auto x = uniform(rng, static_cast<std::size_t>(numel_of(c.base)));
      Tensor v = c.view(Tensor::from_host(device(), x, c.base));
      std::vector<float> vals = gather_view(x, v);
      if (dt != DType::f32) {
        v = v.to(dt);
        for (auto& f : vals) f = f16_to_f32(f32_to_f16(f));
      }
      const Groups g = group(vals, v.shape(), c.dims);
      std::vector<double> rs, rm, r1, rn;
      double abs_sum = 0;
      for (const auto& e : g) {
        double s = 0, a = 0, q = 0;
        for (const auto& [f, i] : e) s += f, a += std::fabs(f), q += f * f;
        abs_sum += a;
        rs.push_back(s), rm.push_back(s / static_cast<double>(e.size())), r1.push_back(a), rn.push_back(std::sqrt(q));
      }
      if (dt == DType::f16)
        for (auto* r : {&rs, &rm, &r1, &rn})
          for (auto& f : *r) f = f16_to_f32(f32_to_f16(static_cast<float>(f)));
      const double rtol = dt == DType::f32 ? 1e-5 : 1e-3, atol = 1e-5 * (1 + abs_sum);
      const std::string what = "view of " + to_string(c.base) + " as " + v.repr() + " dims " + to_string(c.dims) +
                               " limit " + std::to_string(c.limit);
      EXPECT_TRUE(close(sum(v, c.dims).to_vector(), rs, rtol, atol)) << "sum, " << what;
      EXPECT_TRUE(close(mean(v, c.dims).to_vector(), rm, rtol, atol / static_cast<double>(g[0].size())))
          << "mean, " << what;
      EXPECT_TRUE(close(norm(v, 1, c.dims).to_vector(), r1, rtol, atol)) << "norm1, " << what;
      EXPECT_TRUE(close(norm(v, 2, c.dims).to_vector(), rn, rtol, atol)) << "norm2, " << what;
    }
}
