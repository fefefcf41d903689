// Sampling tokens on the GPU (src/nn/sampling.cpp, glsl/nn/sample.comp) against float64
// references: greedy = argmax (first index on ties), top-k = 1 = argmax; the kept sets of top-k
// and top-p exactly as Hugging Face's warpers (ties at the cut kept), and the frequencies of
// many draws against the float64 probabilities by a chi-square test (p < 1e-6 to fail: a
// correct kernel fails once in a million runs); seeds reproduce, counters and offsets change the
// draws; NaN and -inf logits are never drawn; views and f16 logits; errors.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "test_util.hpp"

using namespace gltensor;
using namespace glt_test;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// The kept probabilities of one row of logits, float64, as HF's warpers (temperature, top-k,
// top-p; NaN dropped), normalized.
std::vector<double> ref_probs(const std::vector<float>& x, double temp, std::int64_t top_k, double top_p) {
  const std::size_t V = x.size();
  std::vector<double> p(V, 0.0);
  std::vector<float> finite;
  for (float v : x)
    if (!std::isnan(v)) finite.push_back(v);
  std::sort(finite.begin(), finite.end(), std::greater<>());
  double kth = -INFINITY;
  if (top_k > 0 && static_cast<std::size_t>(top_k) <= finite.size()) kth = finite[top_k - 1];
  const double mx = finite.empty() ? 0 : finite[0];
  for (std::size_t i = 0; i < V; ++i)
    if (!std::isnan(x[i]) && x[i] >= kth && x[i] != -INFINITY) p[i] = std::exp((x[i] - mx) / temp);
  if (top_p < 1) {
    const double total = std::accumulate(p.begin(), p.end(), 0.0);
    std::vector<double> sorted(p);
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    double cum = 0, cut = 0;
    for (double v : sorted) {  // the smallest set of the largest whose mass reaches top_p
      cum += v;
      cut = v;
      if (cum >= top_p * total) break;
    }
    for (auto& v : p)
      if (v < cut) v = 0;
  }
  const double z = std::accumulate(p.begin(), p.end(), 0.0);
  for (auto& v : p) v /= z;
  return p;
}

// Draws `rows` tokens of the same logits in one dispatch (rows are independent draws) and checks
// the counts: zero outside the kept set, chi-square over the kept set below the 1e-6 quantile.
void check_distribution(const std::vector<float>& x, const SamplingOptions& o, std::uint64_t seed,
                        std::int64_t rows = 6000) {
  const std::int64_t V = static_cast<std::int64_t>(x.size());
  std::vector<float> all;
  for (std::int64_t r = 0; r < rows; ++r) all.insert(all.end(), x.begin(), x.end());
  Generator gen(seed);
  const auto tok = sample_tokens(Tensor::from_host(device(), all, {rows, V}), o, gen).to_int_vector();
  const auto p = ref_probs(x, o.temperature, o.top_k, o.top_p);
  std::vector<double> n(V, 0.0);
  for (auto t : tok) {
    ASSERT_TRUE(t >= 0 && t < V) << t;
    n[t] += 1;
  }
  double chi2 = 0;
  int df = -1;
  for (std::int64_t i = 0; i < V; ++i) {
    if (p[i] == 0) {
      EXPECT_EQ(n[i], 0) << "token " << i << " (logit " << x[i] << ") is outside the kept set";
      continue;
    }
    const double e = p[i] * static_cast<double>(rows);
    chi2 += (n[i] - e) * (n[i] - e) / e;
    ++df;
  }
  // the chi-square 1e-6 upper quantile, Wilson-Hilferty's approximation
  const double z = 4.753, d = std::max(df, 1);
  const double bound = d * std::pow(1 - 2 / (9 * d) + z * std::sqrt(2 / (9 * d)), 3);
  EXPECT_LT(chi2, bound) << "chi-square over " << df << " degrees of freedom";
}

TEST(Sampling, GreedyIsArgmaxWithFirstIndexOnTies) {
  GLT_RNG(rng);
  const std::int64_t B = 37, V = 1000;
  auto x = uniform(rng, B * V, -3, 3);
  for (std::int64_t b = 0; b < B; b += 3) x[b * V + 900] = x[b * V + 17] = 5;  // a tie: 17 wins
  x[V + 5] = kNaN;                                                             // NaN is never the answer
  Generator gen(1);
  const auto got = sample_tokens(Tensor::from_host(device(), x, {B, V}), {0.0, 0, 1.0}, gen).to_int_vector();
  for (std::int64_t b = 0; b < B; ++b) {
    std::int64_t best = 0;
    for (std::int64_t i = 1; i < V; ++i)
      if (x[b * V + i] > x[b * V + best] || std::isnan(x[b * V + best])) best = i;
    EXPECT_EQ(got[b], best) << "row " << b;
  }
  // top-k = 1 at temperature 1 is argmax too, where the largest logit is unique (ties at the cut
  // are kept: rows with the tie draw 17 or 900)
  const auto k1 = sample_tokens(Tensor::from_host(device(), x, {B, V}), {1.0, 1, 1.0}, gen).to_int_vector();
  for (std::int64_t b = 0; b < B; ++b) {
    if (b % 3 == 0)
      EXPECT_TRUE(k1[b] == 17 || k1[b] == 900) << "row " << b << ": " << k1[b];
    else
      EXPECT_EQ(k1[b], got[b]) << "row " << b;
  }
}

TEST(Sampling, DistributionMatchesTheProbabilities) {
  GLT_RNG(rng);
  const std::uint64_t s = rng();
  const std::vector<float> x{1.0f, 0.5f, -0.3f, 2.0f, 0.0f, -1.5f, 1.2f, 0.7f};
  check_distribution(x, {1.0, 0, 1.0}, s);
  check_distribution(x, {0.6, 0, 1.0}, s + 1);
  check_distribution(x, {1.3, 5, 1.0}, s + 2);  // top-k
  check_distribution(x, {1.0, 0, 0.7}, s + 3);  // top-p
  check_distribution(x, {0.8, 6, 0.9}, s + 4);  // both: top-p renormalized over top-k
}

TEST(Sampling, TopKAndTopPKeepTheRightSets) {
  GLT_RNG(rng);
  // 300 random logits (more than one per invocation), ties at the top-k cut kept
  auto x = uniform(rng, 300, -2, 2);
  std::vector<float> s(x);
  std::sort(s.begin(), s.end(), std::greater<>());
  x[7] = s[9];  // a tie with the 10th largest
  check_distribution(x, {1.0, 10, 1.0}, rng(), 3000);
  check_distribution(x, {0.5, 0, 0.5}, rng(), 3000);
  check_distribution(x, {2.0, 40, 0.3}, rng(), 3000);
}

TEST(Sampling, NaNAndInfiniteLogitsAreNeverDrawn) {
  const std::vector<float> x{kNaN, 0.5f, -kInf, 0.2f, kNaN, 0.0f};
  check_distribution(x, {1.0, 0, 1.0}, 7, 3000);
  check_distribution(x, {1.0, 2, 1.0}, 8, 3000);
  Generator gen(3);
  const std::vector<float> none{kNaN, -kInf};
  EXPECT_EQ(sample_tokens(Tensor::from_host(device(), none, {2}), {1.0, 0, 1.0}, gen).to_int_vector(),
            std::vector<std::int32_t>{0});
}

TEST(Sampling, SeedsReproduceAndCountersChangeDraws) {
  GLT_RNG(rng);
  const std::int64_t B = 64, V = 50;
  Tensor x = Tensor::from_host(device(), uniform(rng, B * V), {B, V});
  const SamplingOptions o{1.0, 0, 1.0};
  Generator a(11), b(11);
  const auto t1 = sample_tokens(x, o, a).to_int_vector();
  EXPECT_EQ(sample_tokens(x, o, b).to_int_vector(), t1);  // same seed, same offset
  EXPECT_NE(sample_tokens(x, o, a).to_int_vector(), t1);  // the next offset
  EXPECT_EQ(a.offset(), 2u);
  std::vector<std::int32_t> c0(B, 5), c1(B, 6);
  Tensor ct0 = Tensor::from_host(device(), std::span<const std::int32_t>(c0), {B});
  Tensor ct1 = Tensor::from_host(device(), std::span<const std::int32_t>(c1), {B});
  const auto u0 = sample_tokens(x, o, 99, ct0).to_int_vector();
  EXPECT_EQ(sample_tokens(x, o, 99, ct0).to_int_vector(), u0);
  EXPECT_NE(sample_tokens(x, o, 99, ct1).to_int_vector(), u0);
  EXPECT_NE(sample_tokens(x, o, 98, ct0).to_int_vector(), u0);
}

TEST(Sampling, ViewsAndHalfLogits) {
  GLT_RNG(rng);
  const std::int64_t B = 5, V = 40;
  auto x = uniform(rng, B * V, -3, 3);
  Tensor t = Tensor::from_host(device(), x, {V, B}).transpose(0, 1);  // [B, V] view
  Generator gen(1);
  const auto g = sample_tokens(t, {0.0, 0, 1.0}, gen).to_int_vector();
  const auto h = sample_tokens(t.to(DType::f16), {0.0, 0, 1.0}, gen).to_int_vector();
  // argmax, the first index on ties: of the f32 logits, and of the f16-rounded ones (two logits
  // within an f16 ulp tie there).
  auto r16 = [](float v) { return f16_to_f32(f32_to_f16(v)); };
  for (std::int64_t b = 0; b < B; ++b) {
    std::int64_t best = 0, best16 = 0;
    for (std::int64_t i = 1; i < V; ++i) {
      if (x[i * B + b] > x[best * B + b]) best = i;
      if (r16(x[i * B + b]) > r16(x[best16 * B + b])) best16 = i;
    }
    EXPECT_EQ(g[b], best);
    EXPECT_EQ(h[b], best16);
  }
}

TEST(Sampling, Errors) {
  Generator gen(1);
  Tensor x = zeros(device(), {2, 4});
  EXPECT_THROW(sample_tokens(x, {-1.0, 0, 1.0}, gen), ValueError);
  EXPECT_THROW(sample_tokens(x, {1.0, -1, 1.0}, gen), ValueError);
  EXPECT_THROW(sample_tokens(x, {1.0, 0, 0.0}, gen), ValueError);
  EXPECT_THROW(sample_tokens(x, {1.0, 0, 1.5}, gen), ValueError);
  EXPECT_THROW(sample_tokens(zeros(device(), {2, 4}, DType::i32), {}, gen), DTypeError);
  EXPECT_THROW(sample_tokens(zeros(device(), {2, 2, 4}), {}, gen), ShapeError);
  EXPECT_THROW(sample_tokens(zeros(device(), {2, 0}), {}, gen), ShapeError);
  EXPECT_THROW(sample_tokens(x, {}, 1, zeros(device(), {3}, DType::i32)), ShapeError);
  {
    ScopedLoopLimit limit(300);  // top-k and top-p need 66 passes over the row
    EXPECT_THROW(sample_tokens(x, {1.0, 2, 0.5}, gen), LimitError);
  }
  EXPECT_EQ(sample_tokens(x, {1.0, 2, 0.5}, gen).dim(), 1);
}

}  // namespace
