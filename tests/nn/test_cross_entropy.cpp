// cross_entropy's two forward paths against the float64 reference (cross_entropy_ref.hpp): the
// whole loss in one dispatch (cross_entropy.comp's LOSS: per-sample terms, or their sum / mean in
// one workgroup looping over the rows) and the row reductions it falls back to (more rows than
// one workgroup takes, or a loop limit below its loops), with the backward for each.
#include "nn/cross_entropy_ref.hpp"
#include "test_util.hpp"

using namespace glt_test;
using namespace gltensor;

namespace {
Tensor ints(const std::vector<std::int32_t>& v) {
  return Tensor::from_host(device(), std::span<const std::int32_t>(v), {static_cast<std::int64_t>(v.size())});
}

// Loss and d logits of [N, C] random logits against the reference; every 7th target ignored.
// `forward_dispatches`: the dispatches the forward must take (0: not checked).
void check(std::mt19937_64& rng, int N, int C, Reduction red, double ls, int forward_dispatches = 0) {
  SCOPED_TRACE("N " + std::to_string(N) + " C " + std::to_string(C) + " reduction " +
               std::to_string(static_cast<int>(red)) + " ls " + std::to_string(ls));
  auto xv = uniform(rng, static_cast<std::size_t>(N) * C, -4, 4);
  auto tv = uniform_int(rng, static_cast<std::size_t>(N), 0, C - 1);
  for (int n = 3; n < N; n += 7) tv[n] = -100;
  if (N > 1) xv[static_cast<std::size_t>(3) * C] = NAN;  // in an ignored row: never read
  const CrossEntropyRef ref(xv, tv, C, ls);
  Tensor x = Tensor::from_host(device(), xv, {N, C});
  requires_grad_(x);
  const Tensor t = ints(tv);
  const auto d0 = device().dispatch_count();
  Tensor loss = cross_entropy(x, t, red, ls);
  if (forward_dispatches > 0) {
    EXPECT_EQ(device().dispatch_count() - d0, static_cast<std::uint64_t>(forward_dispatches));
  }
  std::vector<float> gv;
  if (red == Reduction::none) {
    ASSERT_EQ(loss.shape(), (Shape{N}));
    EXPECT_TRUE(close(loss.to_vector(), ref.per, 1e-5, 1e-5));
    gv = uniform(rng, static_cast<std::size_t>(N), 0.5, 2);
  } else {
    ASSERT_EQ(loss.dim(), 0);
    const double want = ref.reduced(red);
    if (std::isnan(want))
      EXPECT_TRUE(std::isnan(loss.item()));
    else
      EXPECT_NEAR(loss.item(), want, 1e-5 * std::max(1.0, std::abs(want)));
    gv = {1.5f};
  }
  if (N == 0) return;
  backward(loss, Tensor::from_host(device(), gv, loss.shape()));
  // Absolute error: f32 rounding of softmax - q (terms up to 1, cancelling) times the largest w.
  const double w_max = red == Reduction::none ? 2.0 : red == Reduction::sum ? 1.5 : 1.5 / std::max(1.0, ref.count);
  EXPECT_TRUE(close(grad(x).to_vector(), ref.grad(xv, tv, C, ls, red, gv), 1e-4, 1e-6 * w_max));
}
}  // namespace

// Row counts around one workgroup's 256 invocations (several rows each), one row, none, and past
// the fused path's 8192 rows; class counts of 1, the demo's 10 and an odd 37.
TEST(CrossEntropy, FusedLossMatchesReference) {
  GLT_RNG(rng);
  for (int N : {0, 1, 5, 128, 257, 600, 8193})
    for (int C : {1, 10, 37})
      for (Reduction red : {Reduction::mean, Reduction::sum, Reduction::none})
        for (double ls : {0.0, 0.2}) {
          if (N == 8193 && (C != 10 || ls > 0)) continue;
          check(rng, N, C, red, ls, N > 0 && N <= 8192 ? 1 : 0);
        }
}

// Under a loop limit below the fused kernel's loops (600 rows: 3 per invocation, 3 * 21 + 8),
// the row reductions give the same results.
TEST(CrossEntropy, RowPathUnderLoopLimit) {
  GLT_RNG(rng);
  for (std::uint64_t limit : {std::uint64_t{60}, std::uint64_t{30}}) {
    SCOPED_TRACE("loop limit " + std::to_string(limit));
    ScopedLoopLimit loop_limit(limit);
    for (Reduction red : {Reduction::mean, Reduction::sum}) {
      const auto d0 = device().dispatch_count();
      check(rng, 600, 10, red, 0.1);
      EXPECT_GT(device().dispatch_count() - d0, 3u);  // the row reductions ran
    }
  }
}

// A NaN logit in a kept row makes the mean NaN; every row ignored: mean NaN, sum 0; a target
// outside [0, C) is IndexError naming cross_entropy, after which the device still works.
TEST(CrossEntropy, FusedLossNanAndBadTargets) {
  std::vector<float> x(300 * 10, 0.25f);
  x[299 * 10 + 4] = NAN;
  std::vector<std::int32_t> t(300, 1);
  EXPECT_TRUE(std::isnan(cross_entropy(Tensor::from_host(device(), x, {300, 10}), ints(t)).item()));
  t[299] = -100;
  EXPECT_NEAR(cross_entropy(Tensor::from_host(device(), x, {300, 10}), ints(t)).item(), std::log(10.0), 1e-6);
  const std::vector<std::int32_t> all(300, -100);
  EXPECT_TRUE(std::isnan(cross_entropy(Tensor::from_host(device(), x, {300, 10}), ints(all)).item()));
  EXPECT_EQ(cross_entropy(Tensor::from_host(device(), x, {300, 10}), ints(all), Reduction::sum).item(), 0.0f);
  t[280] = 10;
  try {
    cross_entropy(Tensor::from_host(device(), x, {300, 10}), ints(t)).item();
    ADD_FAILURE() << "target 10 of 10 classes accepted";
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("cross_entropy"), std::string::npos) << e.what();
  }
  t[280] = 2;
  EXPECT_NEAR(cross_entropy(Tensor::from_host(device(), x, {300, 10}), ints(t), Reduction::sum).item(),
              299 * std::log(10.0), 1e-3);
}

// Infinite logits (torch's logsumexp: a row whose largest logit is infinite has it as its
// log-sum-exp): +Inf in another class than the target gives +Inf, +Inf at the target NaN
// (Inf - Inf), -Inf anywhere is a class of probability 0; in the fused kernel and in the row
// reductions. Found by the sabotage audit (issue 22): a kernel without its Inf case passed.
TEST(CrossEntropy, InfiniteLogits) {
  GLT_RNG(rng);
  const float inf = std::numeric_limits<float>::infinity();
  const int N = 5, C = 37;
  std::vector<float> xv = uniform(rng, N * C, -4, 4);
  const std::vector<std::int32_t> tv = {1, 1, 3, 1, 4};
  xv[1 * C + 2] = inf;                                              // row 1: +Inf elsewhere -> +Inf
  xv[2 * C + 3] = inf;                                              // row 2: +Inf at the target -> NaN
  xv[3 * C + 0] = -inf;                                             // row 3: a class of probability 0
  for (int c = 0; c < C; ++c) xv[4 * C + c] = c == 0 ? inf : -inf;  // row 4: +Inf and -Infs -> +Inf
  const CrossEntropyRef ref(xv, tv, C, 0.0);
  ASSERT_TRUE(std::isinf(ref.per[1]) && std::isnan(ref.per[2]) && std::isfinite(ref.per[3]));
  for (std::uint64_t limit : {std::uint64_t{0}, std::uint64_t{60}}) {  // fused; the row reductions
    SCOPED_TRACE("loop limit " + std::to_string(limit));
    ScopedLoopLimit loop_limit(limit);
    const auto d0 = device().dispatch_count();
    const Tensor loss = cross_entropy(Tensor::from_host(device(), xv, {N, C}), ints(tv), Reduction::none);
    EXPECT_EQ(device().dispatch_count() - d0 == 1, limit == 0) << "the fused kernel, else the row reductions";
    EXPECT_TRUE(close(loss.to_vector(), ref.per, 1e-5, 1e-5));
    EXPECT_TRUE(std::isnan(cross_entropy(Tensor::from_host(device(), xv, {N, C}), ints(tv), Reduction::sum).item()))
        << "a NaN term";
  }
}
