// The training pieces of a GPT (demos/chargpt) against float64 host references: cross_entropy
// over a large vocabulary (loss and gradient, every reduction, label smoothing, ignore_index),
// clip_grad_norm_ (total norm, clipped and unclipped gradients, a gradient held twice), AdamW
// with parameter groups (per-group decoupled weight decay, as torch.optim.AdamW) under a changing
// learning rate, and the embedding's gradient (rows gathered, gradients added per row).
#include "test_util.hpp"

using namespace glt_test;
using namespace gltensor;

namespace {
Tensor ints(const std::vector<std::int32_t>& v) {
  return Tensor::from_host(device(), std::span<const std::int32_t>(v), {static_cast<std::int64_t>(v.size())});
}
}  // namespace

// N rows over C = 5003 classes (a byte vocabulary is 256; this is past one workgroup's 256
// invocations per row several times): loss and d logits in float64; under a loop limit below
// 2C the forward's per-row log-sum-exp goes through logsumexp's split reduction instead.
TEST(GptTraining, CrossEntropyLargeVocabulary) {
  for (std::uint64_t limit : {std::uint64_t{0}, std::uint64_t{4000}}) {
    SCOPED_TRACE("loop limit " + std::to_string(limit));
    ScopedLoopLimit loop_limit(limit);
    GLT_RNG(rng);
    const int N = 37, C = 5003;
    auto xv = uniform(rng, static_cast<std::size_t>(N) * C, -4, 4);
    auto tv = uniform_int(rng, N, 0, C - 1);
    tv[3] = -100;  // ignored
    tv[4] = C - 1;
    auto gv = uniform(rng, N, 0.5, 2);
    for (Reduction red : {Reduction::mean, Reduction::sum, Reduction::none}) {
      for (double ls : {0.0, 0.1}) {
        SCOPED_TRACE(std::to_string(static_cast<int>(red)) + " ls " + std::to_string(ls));
        Tensor x = Tensor::from_host(device(), xv, {N, C});
        requires_grad_(x);
        Tensor loss = cross_entropy(x, ints(tv), red, ls);
        // Host: per-row lse, per-sample loss, d = (softmax - q) * w.
        std::vector<double> per(N, 0.0), lse(N, 0.0);
        double total = 0, count = 0;
        for (int n = 0; n < N; ++n) {
          if (tv[n] == -100) continue;
          double m = -1e300, s = 0, mean_x = 0;
          for (int c = 0; c < C; ++c) m = std::max(m, static_cast<double>(xv[n * C + c]));
          for (int c = 0; c < C; ++c) s += std::exp(xv[n * C + c] - m), mean_x += xv[n * C + c] / C;
          lse[n] = m + std::log(s);
          per[n] = (1 - ls) * (lse[n] - xv[n * C + tv[n]]) + ls * (lse[n] - mean_x);
          total += per[n];
          count += 1;
        }
        Tensor seed;
        if (red == Reduction::none) {
          EXPECT_TRUE(close(loss.to_vector(), per, 1e-5, 1e-5));
          seed = Tensor::from_host(device(), gv, {N});
        } else {
          const double ref = red == Reduction::sum ? total : total / count;
          EXPECT_NEAR(loss.item(), ref, 1e-5 * std::abs(ref));
          seed = full(device(), {}, 1.5);
        }
        backward(loss, seed);
        std::vector<double> dref(static_cast<std::size_t>(N) * C, 0.0);
        for (int n = 0; n < N; ++n) {
          if (tv[n] == -100) continue;
          const double w = red == Reduction::none ? gv[n] : red == Reduction::sum ? 1.5 : 1.5 / count;
          for (int c = 0; c < C; ++c)
            dref[n * C + c] = (std::exp(xv[n * C + c] - lse[n]) - (c == tv[n] ? 1 - ls : 0.0) - ls / C) * w;
        }
        EXPECT_TRUE(close(grad(x).to_vector(), dref, 1e-4, 1e-8));
      }
    }
  }
}

// A strided (transposed) logits view and 16-bit logits go through the same kernels.
TEST(GptTraining, CrossEntropyViewsAndHalf) {
  GLT_RNG(rng);
  const int N = 6, C = 300;
  auto xv = uniform(rng, static_cast<std::size_t>(N) * C, -2, 2);
  auto tv = uniform_int(rng, N, 0, C - 1);
  Tensor xt = Tensor::from_host(device(), xv, {C, N});  // logits = xt^T: element [n, c] is xv[c * N + n]
  requires_grad_(xt);
  Tensor loss = cross_entropy(xt.t(), ints(tv));
  double total = 0;
  std::vector<double> lse(N);
  for (int n = 0; n < N; ++n) {
    double s = 0;
    for (int c = 0; c < C; ++c) s += std::exp(static_cast<double>(xv[c * N + n]));
    lse[n] = std::log(s);
    total += lse[n] - xv[tv[n] * N + n];
  }
  EXPECT_NEAR(loss.item(), total / N, 1e-5);
  backward(loss);
  std::vector<double> dref(static_cast<std::size_t>(N) * C);
  for (int c = 0; c < C; ++c)
    for (int n = 0; n < N; ++n) dref[c * N + n] = (std::exp(xv[c * N + n] - lse[n]) - (c == tv[n] ? 1 : 0)) / N;
  EXPECT_TRUE(close(grad(xt).to_vector(), dref, 1e-4, 1e-8));
  Tensor xh = Tensor::from_host(device(), xv, {C, N}).to(DType::f16).t();
  EXPECT_NEAR(cross_entropy(xh, ints(tv)).item(), total / N, 2e-3);
}

TEST(GptTraining, ClipGradNorm) {
  GLT_RNG(rng);
  const std::vector<Shape> shapes = {{7, 5}, {13}, {3, 2, 4}};
  for (double max_norm : {1.0, 1e3}) {
    SCOPED_TRACE(max_norm);
    std::vector<Tensor> ps;
    std::vector<std::vector<float>> gs;
    double sq = 0;
    for (const Shape& s : shapes) {
      std::int64_t n = 1;
      for (auto d : s) n *= d;
      Tensor p = zeros(device(), s);
      requires_grad_(p);
      gs.push_back(uniform(rng, static_cast<std::size_t>(n)));
      for (float v : gs.back()) sq += static_cast<double>(v) * v;
      ps.push_back(p);
    }
    Tensor unused = zeros(device(), {3});  // no gradient: skipped
    requires_grad_(unused);
    Tensor loss = full(device(), {}, 0.0);
    for (std::size_t i = 0; i < ps.size(); ++i)
      loss = add(loss, sum(mul(ps[i], Tensor::from_host(device(), gs[i], ps[i].shape()))));
    backward(loss);
    std::vector<Tensor*> ptrs{&ps[0], &ps[1], &unused, &ps[2]};
    Tensor total = nn::clip_grad_norm_(ptrs, max_norm);
    const double ref = std::sqrt(sq);
    EXPECT_EQ(total.dim(), 0);
    EXPECT_NEAR(total.item(), ref, 1e-5 * ref);
    const double coef = std::min(1.0, max_norm / (ref + 1e-6));
    for (std::size_t i = 0; i < ps.size(); ++i) {
      std::vector<double> want(gs[i].begin(), gs[i].end());
      for (double& v : want) v *= coef;
      EXPECT_TRUE(close(grad(ps[i]).to_vector(), want, 1e-5, 1e-7));
    }
    EXPECT_FALSE(grad(unused).defined());
  }
  // One gradient tensor held by two parameters is scaled once (and counted once).
  Tensor a = zeros(device(), {4});
  requires_grad_(a);
  backward(sum(mul(a, full(device(), {4}, 3.0))));  // grad 3 everywhere: norm 6
  EXPECT_NEAR(nn::clip_grad_norm_({&a, &a}, 3.0).item(), 6.0, 1e-5);
  EXPECT_TRUE(close(grad(a).to_vector(), std::vector<double>(4, 3.0 * 3.0 / (6.0 + 1e-6)), 1e-6, 1e-7));
  EXPECT_THROW(nn::clip_grad_norm_({&a}, 0.0), ValueError);
  const std::vector<Tensor*> none;
  EXPECT_THROW(nn::clip_grad_norm_(none, 1.0), ValueError);
}

// torch.optim.AdamW with two groups (decay 0.1 on a matrix, 0 on a vector), betas 0.9 / 0.95,
// the learning rate changed before each step (warm-up), against its update rule in float64.
TEST(GptTraining, AdamWParamGroups) {
  GLT_RNG(rng);
  const double b1 = 0.9, b2 = 0.95, eps = 1e-8;
  const std::vector<double> wds = {0.1, 0.0};
  const std::vector<Shape> shapes = {{6, 4}, {4}};
  std::vector<Tensor> ps;
  std::vector<std::vector<double>> hp, m, v;
  for (const Shape& s : shapes) {
    const std::size_t n = static_cast<std::size_t>(s.size() == 2 ? s[0] * s[1] : s[0]);
    auto p0 = uniform(rng, n);
    ps.push_back(Tensor::from_host(device(), p0, s));
    requires_grad_(ps.back());
    hp.emplace_back(p0.begin(), p0.end());
    m.emplace_back(n, 0.0);
    v.emplace_back(n, 0.0);
  }
  nn::AdamW opt({{{&ps[0]}, wds[0]}, {{&ps[1]}, wds[1]}}, 1e-3, {b1, b2, eps, 0.5, true});
  for (int t = 1; t <= 6; ++t) {
    const double lr = 1e-2 * t / 4.0;
    opt.lr = lr;
    opt.zero_grad();
    std::vector<std::vector<float>> gs;
    Tensor loss = full(device(), {}, 0.0);
    for (std::size_t i = 0; i < ps.size(); ++i) {
      gs.push_back(uniform(rng, hp[i].size()));
      loss = add(loss, sum(mul(ps[i], Tensor::from_host(device(), gs[i], shapes[i]))));
    }
    backward(loss);
    opt.step();
    for (std::size_t i = 0; i < ps.size(); ++i)
      for (std::size_t j = 0; j < hp[i].size(); ++j) {
        const double g = gs[i][j];
        hp[i][j] *= 1 - lr * wds[i];
        m[i][j] = b1 * m[i][j] + (1 - b1) * g;
        v[i][j] = b2 * v[i][j] + (1 - b2) * g * g;
        const double mh = m[i][j] / (1 - std::pow(b1, t)), vh = v[i][j] / (1 - std::pow(b2, t));
        hp[i][j] -= lr * mh / (std::sqrt(vh) + eps);
      }
  }
  EXPECT_EQ(opt.steps(), 6);
  for (std::size_t i = 0; i < ps.size(); ++i) EXPECT_TRUE(close(ps[i].to_vector(), hp[i], 1e-5, 1e-6));
  EXPECT_THROW(nn::AdamW({{{&ps[0]}, -1.0}}, 1e-3), ValueError);
}

// Token embedding as the GPT uses it: [B, T] indices into [V, D], repeated tokens; the weight's
// gradient adds the rows' gradients per token.
TEST(GptTraining, EmbeddingGradient) {
  GLT_RNG(rng);
  const int V = 256, D = 24, B = 3, T = 17;
  auto wv = uniform(rng, static_cast<std::size_t>(V) * D);
  auto iv = uniform_int(rng, B * T, 0, 9);  // few distinct tokens: many repeats
  auto gv = uniform(rng, static_cast<std::size_t>(B) * T * D);
  Tensor w = Tensor::from_host(device(), wv, {V, D});
  requires_grad_(w);
  Tensor idx = ints(iv).view({B, T});
  Tensor y = embedding(w, idx);
  ASSERT_EQ(y.shape(), (Shape{B, T, D}));
  std::vector<double> yref(static_cast<std::size_t>(B) * T * D), dref(static_cast<std::size_t>(V) * D, 0.0);
  for (int i = 0; i < B * T; ++i)
    for (int d = 0; d < D; ++d) {
      yref[i * D + d] = wv[iv[i] * D + d];
      dref[iv[i] * D + d] += gv[i * D + d];
    }
  EXPECT_TRUE(close(y.to_vector(), yref, 0, 0));
  backward(y, Tensor::from_host(device(), gv, {B, T, D}));
  EXPECT_TRUE(close(grad(w).to_vector(), dref, 1e-5, 1e-6));
}
