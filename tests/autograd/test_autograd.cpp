// Autograd: gradients of elementwise ops, broadcasting, reductions, softmax, matmul and views
// against finite differences of float64 references (grad_check.hpp).
#include "grad_check.hpp"

using namespace glt_test;
using namespace gltensor;

namespace {
// Applies f elementwise on the host.
RefFn ew1(double (*f)(double)) {
  return [f](const std::vector<HostT>& x) {
    std::vector<double> r;
    for (double v : x[0].v) r.push_back(f(v));
    return r;
  };
}
}  // namespace

TEST(Autograd, UnaryOps) {
  GLT_RNG(rng);
  struct C {
    const char* name;
    std::function<Tensor(const Tensor&)> f;
    double (*ref)(double);
    float lo, hi;
  };
  const std::vector<C> cases = {
      {"exp", [](auto& x) { return exp(x); }, [](double x) { return std::exp(x); }, -2, 2},
      {"log", [](auto& x) { return log(x); }, [](double x) { return std::log(x); }, 0.5f, 3},
      {"sqrt", [](auto& x) { return sqrt(x); }, [](double x) { return std::sqrt(x); }, 0.5f, 3},
      {"rsqrt", [](auto& x) { return rsqrt(x); }, [](double x) { return 1 / std::sqrt(x); }, 0.5f, 3},
      {"tanh", [](auto& x) { return tanh(x); }, [](double x) { return std::tanh(x); }, -2, 2},
      {"sigmoid", [](auto& x) { return sigmoid(x); }, [](double x) { return 1 / (1 + std::exp(-x)); }, -3, 3},
      {"relu", [](auto& x) { return relu(x); }, [](double x) { return x > 0 ? x : 0; }, -1, 1},
      {"gelu", [](auto& x) { return gelu(x); }, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); },
       -2, 2},
      {"gelu_tanh", [](auto& x) { return gelu(x, "tanh"); },
       [](double x) { return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }, -2, 2},
      {"silu", [](auto& x) { return silu(x); }, [](double x) { return x / (1 + std::exp(-x)); }, -2, 2},
      {"sin", [](auto& x) { return sin(x); }, [](double x) { return std::sin(x); }, -2, 2},
      {"square", [](auto& x) { return square(x); }, [](double x) { return x * x; }, -2, 2},
      {"neg_abs", [](auto& x) { return neg(abs(x)); }, [](double x) { return -std::fabs(x); }, -2, 2},
      {"leaky_relu", [](auto& x) { return leaky_relu(x, 0.1); }, [](double x) { return x > 0 ? x : 0.1 * x; }, -1, 1},
      {"softplus", [](auto& x) { return softplus(x); }, [](double x) { return std::log1p(std::exp(x)); }, -2, 2},
      {"clamp", [](auto& x) { return clamp(x, -0.5, 0.5); }, [](double x) { return std::clamp(x, -0.5, 0.5); }, -1, 1},
      {"reciprocal", [](auto& x) { return reciprocal(x); }, [](double x) { return 1 / x; }, 0.5f, 2},
      {"pow_scalar", [](auto& x) { return pow(x, 3.0); }, [](double x) { return x * x * x; }, -2, 2},
      {"scalar_div", [](auto& x) { return div(2.0, x); }, [](double x) { return 2 / x; }, 0.5f, 2},
  };
  for (const auto& c : cases)
    EXPECT_TRUE(grad_check(
        rng, {{3, 7}}, [&](auto& t) { return c.f(t[0]); }, ew1(c.ref), c.lo, c.hi))
        << c.name;
}

TEST(Autograd, BinaryOpsWithBroadcasting) {
  GLT_RNG(rng);
  auto bin = [](double (*f)(double, double)) {
    return [f](const std::vector<HostT>& x) {
      const Shape out = {4, 3, 5};
      std::vector<double> r;
      for (std::int64_t i = 0; i < 60; ++i)
        r.push_back(f(x[0].v[bcast_index(out, x[0].s, i)], x[1].v[bcast_index(out, x[1].s, i)]));
      return r;
    };
  };
  const std::vector<Shape> sh = {{4, 1, 5}, {3, 1}};
  EXPECT_TRUE(grad_check(
      rng, sh, [](auto& t) { return add(t[0], t[1], 0.5); }, bin([](double a, double b) { return a + 0.5 * b; })));
  EXPECT_TRUE(grad_check(
      rng, sh, [](auto& t) { return t[0] - t[1]; }, bin([](double a, double b) { return a - b; })));
  EXPECT_TRUE(grad_check(
      rng, sh, [](auto& t) { return t[0] * t[1]; }, bin([](double a, double b) { return a * b; })));
  EXPECT_TRUE(grad_check(
      rng, sh, [](auto& t) { return t[0] / add(t[1], 2.0); }, bin([](double a, double b) { return a / (b + 2); })));
  EXPECT_TRUE(grad_check(
      rng, sh, [](auto& t) { return pow(add(t[0], 2.0), t[1]); },
      bin([](double a, double b) { return std::pow(a + 2, b); })));
  EXPECT_TRUE(grad_check(
      rng, sh, [](auto& t) { return maximum(t[0], t[1]); }, bin([](double a, double b) { return std::max(a, b); })));
  EXPECT_TRUE(grad_check(
      rng, sh, [](auto& t) { return where(gt(t[0], 0.0), t[0], t[1]); },
      bin([](double a, double b) { return a > 0 ? a : b; })));
}

TEST(Autograd, Reductions) {
  GLT_RNG(rng);
  const Shape s = {3, 4, 5};
  auto red = [&](Dims dims, std::function<double(std::vector<double>&)> f) {
    return [=](const std::vector<HostT>& x) {
      std::vector<bool> r(3, dims.empty());
      for (auto d : dims) r[d] = true;
      std::map<std::int64_t, std::vector<double>> groups;
      for (std::int64_t i = 0; i < 3; ++i)
        for (std::int64_t j = 0; j < 4; ++j)
          for (std::int64_t k = 0; k < 5; ++k) {
            std::int64_t key = (r[0] ? 0 : i) * 100 + (r[1] ? 0 : j) * 10 + (r[2] ? 0 : k);
            groups[key].push_back(x[0].v[i * 20 + j * 5 + k]);
          }
      std::vector<double> out;
      for (auto& [k, v] : groups) out.push_back(f(v));
      return out;
    };
  };
  auto fsum = [](std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return s;
  };
  auto fvar = [](std::vector<double>& v) {
    double m = 0, s = 0;
    for (double x : v) m += x;
    m /= v.size();
    for (double x : v) s += (x - m) * (x - m);
    return s / (v.size() - 1);
  };
  EXPECT_TRUE(grad_check(
      rng, {s}, [](auto& t) { return sum(t[0], {1}); }, red({1}, fsum)));
  EXPECT_TRUE(grad_check(
      rng, {s},
      [](auto& t) {
        return mean(t[0], {0, 2}, true);
      },
      red({0, 2}, [&](std::vector<double>& v) { return fsum(v) / v.size(); })));
  EXPECT_TRUE(grad_check(
      rng, {s}, [](auto& t) { return sum(t[0]); }, red({}, fsum)));
  EXPECT_TRUE(grad_check(
      rng, {s}, [](auto& t) { return var(t[0], {2}); }, red({2}, fvar)));
  EXPECT_TRUE(grad_check(
      rng, {s}, [](auto& t) { return gltensor::std(t[0], {1}); },
      red({1}, [&](std::vector<double>& v) { return std::sqrt(fvar(v)); })));
  EXPECT_TRUE(grad_check(
      rng, {s}, [](auto& t) { return logsumexp(t[0], {2}); }, red({2}, [](std::vector<double>& v) {
        double m = *std::max_element(v.begin(), v.end()), s = 0;
        for (double x : v) s += std::exp(x - m);
        return m + std::log(s);
      })));
  EXPECT_TRUE(grad_check(
      rng, {s}, [](auto& t) { return amax(t[0], {0}); },
      red({0}, [](std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); })));
  EXPECT_TRUE(grad_check(
      rng, {s}, [](auto& t) { return norm(t[0], 2, {1}); }, red({1}, [](std::vector<double>& v) {
        double s = 0;
        for (double x : v) s += x * x;
        return std::sqrt(s);
      })));
}

TEST(Autograd, SoftmaxAndLogSoftmax) {
  GLT_RNG(rng);
  auto sm = [](bool log, int dim) {
    return [=](const std::vector<HostT>& x) {
      // x [4, 6]
      std::vector<double> out(24);
      for (int a = 0; a < (dim == 1 ? 4 : 6); ++a) {
        std::vector<std::size_t> idx;
        for (int b = 0; b < (dim == 1 ? 6 : 4); ++b) idx.push_back(dim == 1 ? a * 6 + b : b * 6 + a);
        double m = -1e300, s = 0;
        for (auto i : idx) m = std::max(m, x[0].v[i]);
        for (auto i : idx) s += std::exp(x[0].v[i] - m);
        for (auto i : idx) out[i] = log ? x[0].v[i] - m - std::log(s) : std::exp(x[0].v[i] - m) / s;
      }
      return out;
    };
  };
  EXPECT_TRUE(grad_check(
      rng, {{4, 6}}, [](auto& t) { return softmax(t[0], 1); }, sm(false, 1)));
  EXPECT_TRUE(grad_check(
      rng, {{4, 6}}, [](auto& t) { return softmax(t[0], 0); }, sm(false, 0)));
  EXPECT_TRUE(grad_check(
      rng, {{4, 6}}, [](auto& t) { return log_softmax(t[0], -1); }, sm(true, 1)));
}

// linear's weight gradient, g^T x (computed as such, so that it is contiguous without a copy),
// against float64 for odd, non-square shapes; the bias's and the input's too.
TEST(Autograd, LinearWeightGradientAgainstFloat64) {
  GLT_RNG(rng);
  const std::int64_t N = 37, K = 13, M = 9;
  auto hx = uniform(rng, N * K), hw = uniform(rng, M * K), hb = uniform(rng, M), hg = uniform(rng, N * M);
  Tensor x = Tensor::from_host(device(), hx, {N, K}), w = Tensor::from_host(device(), hw, {M, K});
  Tensor b = Tensor::from_host(device(), hb, {M}), g = Tensor::from_host(device(), hg, {N, M});
  requires_grad_(x), requires_grad_(w), requires_grad_(b);
  backward(linear(x, w, b), g);
  std::vector<double> dw(M * K, 0.0), dx(N * K, 0.0), db(M, 0.0);
  for (std::int64_t i = 0; i < N; ++i)
    for (std::int64_t j = 0; j < M; ++j) {
      db[j] += hg[i * M + j];
      for (std::int64_t k = 0; k < K; ++k) {
        dw[j * K + k] += double(hg[i * M + j]) * hx[i * K + k];
        dx[i * K + k] += double(hg[i * M + j]) * hw[j * K + k];
      }
    }
  ASSERT_EQ(grad(w).shape(), (Shape{M, K}));
  EXPECT_TRUE(grad(w).is_contiguous());
  EXPECT_TRUE(close(grad(w).to_vector(), dw, 1e-5, 1e-5));
  EXPECT_TRUE(close(grad(x).to_vector(), dx, 1e-5, 1e-5));
  EXPECT_TRUE(close(grad(b).to_vector(), db, 1e-5, 1e-5));
}

TEST(Autograd, MatmulLinearAndViews) {
  GLT_RNG(rng);
  // x [2, 3, 4] @ w [4, 5] (broadcast batch)
  EXPECT_TRUE(grad_check(
      rng, {{2, 3, 4}, {4, 5}}, [](auto& t) { return matmul(t[0], t[1]); },
      [](const std::vector<HostT>& x) {
        std::vector<double> r;
        for (int b = 0; b < 2; ++b)
          for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 5; ++j) {
              double s = 0;
              for (int k = 0; k < 4; ++k) s += x[0].v[b * 12 + i * 4 + k] * x[1].v[k * 5 + j];
              r.push_back(s);
            }
        return r;
      }));
  // linear with bias and fused relu/gelu: x [3, 4], w [5, 4], b [5]
  for (Activation act : {Activation::none, Activation::tanh, Activation::gelu}) {
    EXPECT_TRUE(grad_check(
        rng, {{3, 4}, {5, 4}, {5}}, [act](auto& t) { return linear(t[0], t[1], t[2], act); },
        [act](const std::vector<HostT>& x) {
          std::vector<double> r;
          for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 5; ++j) {
              double s = x[2].v[j];
              for (int k = 0; k < 4; ++k) s += x[0].v[i * 4 + k] * x[1].v[j * 4 + k];
              if (act == Activation::tanh) s = std::tanh(s);
              if (act == Activation::gelu) s = 0.5 * s * (1 + std::erf(s / std::sqrt(2.0)));
              r.push_back(s);
            }
          return r;
        }));
  }
  // views: permute + slice + select + reshape + unsqueeze/expand of x [3, 4, 5]
  EXPECT_TRUE(grad_check(
      rng, {{3, 4, 5}},
      [](auto& t) {
        Tensor v = t[0].permute({2, 0, 1}).slice(0, 1, 5, 2).select(2, 3);  // [2, 3]
        return mul(v.reshape({6}).unsqueeze(0).expand({2, 6}), 3.0);
      },
      [](const std::vector<HostT>& x) {
        std::vector<double> r;
        for (int rep = 0; rep < 2; ++rep)
          for (int a = 0; a < 2; ++a)
            for (int b = 0; b < 3; ++b) r.push_back(3.0 * x[0].v[b * 20 + 3 * 5 + (1 + 2 * a)]);
        return r;
      }));
}

TEST(Autograd, AccumulationNoGradAndErrors) {
  Tensor x = full(device(), {3}, 2.0);
  requires_grad_(x);
  backward(sum(mul(x, x)));
  backward(sum(mul(x, 3.0)));
  EXPECT_EQ(grad(x).to_vector(), std::vector<float>(3, 7.0f));  // 2x + 3
  zero_grad(x);
  EXPECT_FALSE(grad(x).defined());
  {
    NoGradGuard ng;
    Tensor y = mul(x, x);
    EXPECT_FALSE(requires_grad(y));
    x.fill_(1.0);  // allowed under no_grad
  }
  EXPECT_THROW(x.fill_(0.0), ValueError);
  EXPECT_THROW(mul_(x, 2.0), ValueError);
  EXPECT_THROW(backward(mul(x, 2.0)), ValueError);  // not a scalar
  Tensor c = ones(device(), {3});
  EXPECT_THROW(backward(c), ValueError);
  Tensor i = arange(device(), 0, 3, 1, DType::i32);
  EXPECT_THROW(requires_grad_(i), DTypeError);
  Tensor p = prod(x);
  EXPECT_THROW(backward(p), ValueError);  // no gradient implemented: said clearly
  // a shared subexpression gets both contributions
  Tensor z = full(device(), {2}, 3.0);
  requires_grad_(z);
  Tensor e = mul(z, z);
  backward(sum(add(e, mul(e, 2.0))));  // 3 z^2 -> 6 z
  EXPECT_EQ(grad(z).to_vector(), std::vector<float>(2, 18.0f));
}

TEST(Autograd, IndexingJoinsAndPadding) {
  GLT_RNG(rng);
  auto ints = [](std::vector<std::int32_t> v, Shape s) {
    return Tensor::from_host(device(), std::span<const std::int32_t>(v), s);
  };
  // index_select with a repeated index: gradients add up
  Tensor idx = ints({2, 0, 2}, {3});
  EXPECT_TRUE(grad_check(
      rng, {{4, 3}}, [&](auto& t) { return index_select(t[0], 0, idx); },
      [](const std::vector<HostT>& x) {
        std::vector<double> r;
        for (int row : {2, 0, 2})
          for (int c = 0; c < 3; ++c) r.push_back(x[0].v[row * 3 + c]);
        return r;
      }));
  // embedding (index_select over rows)
  Tensor ids = ints({1, 1, 3, 0}, {2, 2});
  EXPECT_TRUE(grad_check(
      rng, {{4, 2}}, [&](auto& t) { return embedding(t[0], ids); },
      [](const std::vector<HostT>& x) {
        std::vector<double> r;
        for (int row : {1, 1, 3, 0})
          for (int c = 0; c < 2; ++c) r.push_back(x[0].v[row * 2 + c]);
        return r;
      }));
  // gather along dim 1
  Tensor gi = ints({0, 2, 2, 1, 1, 0}, {2, 3});
  EXPECT_TRUE(grad_check(
      rng, {{2, 3}}, [&](auto& t) { return gather(t[0], 1, gi); },
      [](const std::vector<HostT>& x) {
        const int g[] = {0, 2, 2, 1, 1, 0};
        std::vector<double> r;
        for (int i = 0; i < 6; ++i) r.push_back(x[0].v[(i / 3) * 3 + g[i]]);
        return r;
      }));
  // concat along dim 1, then flip (index_select) and constant pad with a negative (crop) side
  EXPECT_TRUE(grad_check(
      rng, {{2, 2}, {2, 3}},
      [](auto& t) {
        return pad(flip(concat({t[0], t[1]}, 1), {1}), {1, -2}, PadMode::constant, 0.5);
      },
      [](const std::vector<HostT>& x) {
        std::vector<double> r;
        for (int i = 0; i < 2; ++i) {
          std::vector<double> row;
          for (int c = 0; c < 2; ++c) row.push_back(x[0].v[i * 2 + c]);
          for (int c = 0; c < 3; ++c) row.push_back(x[1].v[i * 3 + c]);
          std::reverse(row.begin(), row.end());
          r.push_back(0.5);                                 // left pad 1
          for (int c = 0; c < 3; ++c) r.push_back(row[c]);  // right side cropped by 2
        }
        return r;
      }));
  // ops without a gradient say so instead of dropping it
  Tensor x = full(device(), {4}, 1.0);
  requires_grad_(x);
  EXPECT_THROW(backward(sum(sort(x).values)), ValueError);
  EXPECT_THROW(backward(sum(scatter(x, 0, ints({0}, {1}), x.slice(0, 0, 1)))), ValueError);
}
