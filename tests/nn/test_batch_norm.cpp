// batch_norm (src/nn/batch_norm.cpp, glsl/nn/batch_norm.comp) against float64 references:
// forward, running statistics, dx / dweight / dbias (torch's formulas and finite differences),
// eval mode, affine=false, views, 16-bit inputs, NaN/Inf, large offsets, split reductions.
#include <cmath>
#include <functional>
#include <limits>

#include "gltensor/nn.hpp"
#include "grad_check.hpp"

using namespace gltensor;
using namespace glt_test;

namespace {

// x as [N, C, S]; element (nb, c, s) at (nb * C + c) * S + s.
struct Ref {
  std::vector<double> y, mean, var, rm, rv, dx, dw, db;
};

Ref bn_ref(const std::vector<float>& x, const Shape& shape, const std::vector<float>* w, const std::vector<float>* b,
           const std::vector<float>* gy, bool training, const std::vector<float>& rm0, const std::vector<float>& rv0,
           double momentum = 0.1, double eps = 1e-5) {
  const std::int64_t N = shape[0], C = shape[1], S = numel_of(shape) / std::max<std::int64_t>(N * C, 1);
  const double n = static_cast<double>(N * S);
  Ref r;
  r.mean.assign(C, 0);
  r.var.assign(C, 0);
  auto at = [&](std::int64_t nb, std::int64_t c, std::int64_t s) { return (nb * C + c) * S + s; };
  for (std::int64_t c = 0; c < C; ++c) {
    if (!training) {
      r.mean[c] = rm0[c], r.var[c] = rv0[c];
      continue;
    }
    double m = 0, q = 0;
    for (std::int64_t nb = 0; nb < N; ++nb)
      for (std::int64_t s = 0; s < S; ++s) m += x[at(nb, c, s)];
    m /= n;
    for (std::int64_t nb = 0; nb < N; ++nb)
      for (std::int64_t s = 0; s < S; ++s) q += (x[at(nb, c, s)] - m) * (x[at(nb, c, s)] - m);
    r.mean[c] = m, r.var[c] = q / n;
    if (!rm0.empty()) r.rm.push_back((1 - momentum) * rm0[c] + momentum * m);
    if (!rv0.empty()) r.rv.push_back((1 - momentum) * rv0[c] + momentum * q / (n - 1));
  }
  r.y.resize(x.size());
  if (gy) r.dx.resize(x.size()), r.dw.assign(C, 0), r.db.assign(C, 0);
  for (std::int64_t c = 0; c < C; ++c) {
    const double is = 1 / std::sqrt(r.var[c] + eps), wc = w ? (*w)[c] : 1.0, bc = b ? (*b)[c] : 0.0;
    for (std::int64_t nb = 0; nb < N; ++nb)
      for (std::int64_t s = 0; s < S; ++s) {
        const auto i = at(nb, c, s);
        r.y[i] = (x[i] - r.mean[c]) * is * wc + bc;
        if (gy) r.db[c] += (*gy)[i], r.dw[c] += (*gy)[i] * (x[i] - r.mean[c]) * is;
      }
    if (!gy) continue;
    for (std::int64_t nb = 0; nb < N; ++nb)
      for (std::int64_t s = 0; s < S; ++s) {
        const auto i = at(nb, c, s);
        const double xh = (x[i] - r.mean[c]) * is;
        r.dx[i] = training ? wc * is / n * (n * (*gy)[i] - r.db[c] - xh * r.dw[c]) : (*gy)[i] * wc * is;
      }
  }
  return r;
}

// Runs batch_norm with gradients on x (and weight/bias when affine) and compares everything.
void check_all(std::mt19937_64& rng, const Shape& shape, bool affine, bool training, float lo = -2, float hi = 3,
               double tol = 1e-4) {
  SCOPED_TRACE(to_string(shape) + (affine ? " affine" : "") + (training ? " training" : " eval"));
  const std::int64_t C = shape[1];
  auto xv = uniform(rng, numel_of(shape), lo, hi), gv = uniform(rng, numel_of(shape));
  auto wv = uniform(rng, C, 0.5, 2), bv = uniform(rng, C), rmv = uniform(rng, C), rvv = uniform(rng, C, 0.5, 2);
  // eval: a channel of running variance 0 is scaled by 1 / sqrt(eps) (the sabotage audit: eps left out passed)
  rvv[0] = 0.0f;
  Tensor x = Tensor::from_host(device(), xv, shape);
  Tensor w = Tensor::from_host(device(), wv, {C}), b = Tensor::from_host(device(), bv, {C});
  Tensor rm = Tensor::from_host(device(), rmv, {C}), rv = Tensor::from_host(device(), rvv, {C});
  requires_grad_(x);
  if (affine) requires_grad_(w), requires_grad_(b);
  Tensor y = batch_norm(x, rm, rv, affine ? w : Tensor(), affine ? b : Tensor(), training);
  backward(y, Tensor::from_host(device(), gv, shape));
  Ref r = bn_ref(xv, shape, affine ? &wv : nullptr, affine ? &bv : nullptr, &gv, training, rmv, rvv);
  EXPECT_TRUE(close(y.to_vector(), r.y, tol, tol)) << "y";
  EXPECT_TRUE(close(grad(x).to_vector(), r.dx, tol, tol)) << "dx";
  if (affine) {
    EXPECT_TRUE(close(grad(w).to_vector(), r.dw, tol, tol * std::sqrt(double(numel_of(shape))))) << "dweight";
    EXPECT_TRUE(close(grad(b).to_vector(), r.db, tol, tol * std::sqrt(double(numel_of(shape))))) << "dbias";
  }
  if (training) {
    EXPECT_TRUE(close(rm.to_vector(), r.rm, 1e-5, 1e-5)) << "running_mean";
    EXPECT_TRUE(close(rv.to_vector(), r.rv, 1e-4, 1e-5)) << "running_var";
  } else {
    EXPECT_EQ(rm.to_vector(), rmv);
    EXPECT_EQ(rv.to_vector(), rvv);
  }
}

// y from double inputs (finite differences perturb them by less than f32 resolves).
std::vector<double> ref_y(const std::vector<HostT>& h, bool affine) {
  const Shape& s = h[0].s;
  const std::int64_t N = s[0], C = s[1], S = numel_of(s) / (N * C);
  std::vector<double> y(h[0].size());
  for (std::int64_t c = 0; c < C; ++c) {
    double m = 0, q = 0;
    for (std::int64_t nb = 0; nb < N; ++nb)
      for (std::int64_t k = 0; k < S; ++k) m += h[0][(nb * C + c) * S + k];
    m /= N * S;
    for (std::int64_t nb = 0; nb < N; ++nb)
      for (std::int64_t k = 0; k < S; ++k) q += std::pow(h[0][(nb * C + c) * S + k] - m, 2);
    const double is = 1 / std::sqrt(q / (N * S) + 1e-5);
    for (std::int64_t nb = 0; nb < N; ++nb)
      for (std::int64_t k = 0; k < S; ++k) {
        const auto i = (nb * C + c) * S + k;
        y[i] = (h[0][i] - m) * is * (affine ? h[1][c] : 1.0) + (affine ? h[2][c] : 0.0);
      }
  }
  return y;
}

}  // namespace

TEST(BatchNorm, FiniteDifferenceGradients) {
  GLT_RNG(rng);
  // rows of 10, 1, 7 values (one invocation per element) and of 72 (the row grid)
  for (const Shape& s : std::vector<Shape>{{4, 3, 2, 5}, {5, 3}, {3, 2, 7}, {2, 2, 8, 9}}) {
    SCOPED_TRACE(to_string(s));
    const Shape c = {s[1]};
    EXPECT_TRUE(grad_check(
        rng, {s, c, c}, [](auto& t) { return batch_norm(t[0], Tensor(), Tensor(), t[1], t[2], true); },
        [](const std::vector<HostT>& h) { return ref_y(h, true); }));
    EXPECT_TRUE(grad_check(
        rng, {s}, [](auto& t) { return batch_norm(t[0], Tensor(), Tensor(), Tensor(), Tensor(), true); },
        [](const std::vector<HostT>& h) { return ref_y(h, false); }));
  }
}

TEST(BatchNorm, ForwardRunningStatsGradients) {
  GLT_RNG(rng);
  for (const Shape& s : std::vector<Shape>{{6, 4}, {3, 5, 7}, {4, 3, 5, 6}, {2, 3, 1, 1}, {3, 2, 17, 19}, {2, 1, 300}})
    for (bool affine : {true, false})
      for (bool training : {true, false}) check_all(rng, s, affine, training);
}

TEST(BatchNorm, OnlyWeightAndBiasRequireGrad) {
  GLT_RNG(rng);
  const Shape s = {4, 3, 6, 5};
  auto xv = uniform(rng, numel_of(s)), gv = uniform(rng, numel_of(s)), wv = uniform(rng, 3), bv = uniform(rng, 3);
  Tensor x = Tensor::from_host(device(), xv, s);
  Tensor w = Tensor::from_host(device(), wv, {3}), b = Tensor::from_host(device(), bv, {3});
  requires_grad_(w);
  Tensor y = batch_norm(x, Tensor(), Tensor(), w, b, true);
  backward(y, Tensor::from_host(device(), gv, s));
  Ref r = bn_ref(xv, s, &wv, &bv, &gv, true, {}, {});
  EXPECT_TRUE(close(grad(w).to_vector(), r.dw, 1e-4, 1e-3));
  EXPECT_FALSE(grad(x).defined());
  EXPECT_FALSE(grad(b).defined());
  // nothing requires grad: no node
  EXPECT_FALSE(requires_grad(batch_norm(x, Tensor(), Tensor(), detach(w), b, true)));
}

TEST(BatchNorm, PermutedViewAndHalfInputs) {
  GLT_RNG(rng);
  // x [2, 3, 4, 5] stored as [2, 4, 5, 3] (channels last), viewed back with permute
  const Shape base = {2, 4, 5, 3}, s = {2, 3, 4, 5};
  auto bv = uniform(rng, numel_of(base), -2, 2), gv = uniform(rng, numel_of(s));
  Tensor xb = Tensor::from_host(device(), bv, base);
  requires_grad_(xb);
  Tensor x = xb.permute({0, 3, 1, 2});
  ASSERT_FALSE(x.is_contiguous());
  auto xv = gather_view(bv, x);
  Tensor y = batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), true);
  backward(y, Tensor::from_host(device(), gv, s));
  Ref r = bn_ref(xv, s, nullptr, nullptr, &gv, true, {}, {});
  EXPECT_TRUE(close(y.to_vector(), r.y, 1e-4, 1e-4));
  // grad(xb) is in base layout: permute it back to compare
  EXPECT_TRUE(close(grad(xb).permute({0, 3, 1, 2}).contiguous().to_vector(), r.dx, 1e-4, 1e-4));
  // f16 and bf16 inputs compute in f32 and return their dtype
  for (DType dt : {DType::f16, DType::bf16}) {
    Tensor xh = Tensor::from_host(device(), bv, base).to(dt).permute({0, 3, 1, 2});
    auto xr = xh.to(DType::f32).contiguous().to_vector();  // the 16-bit values, in [2, 3, 4, 5] order
    Tensor yh = batch_norm(xh, Tensor(), Tensor(), Tensor(), Tensor(), true);
    EXPECT_EQ(yh.dtype(), dt);
    EXPECT_TRUE(close(yh.to(DType::f32).to_vector(), bn_ref(xr, s, nullptr, nullptr, nullptr, true, {}, {}).y, 1e-2,
                      dt == DType::f16 ? 4e-3 : 3e-2))
        << dtype_name(dt);
  }
}

TEST(BatchNorm, IntegerInputsReturnFloat32) {
  GLT_RNG(rng);
  const Shape s = {4, 2, 3};
  auto iv = uniform_int(rng, numel_of(s), -50, 50);
  std::vector<float> xv(iv.begin(), iv.end());
  Tensor y =
      batch_norm(Tensor::from_host(device(), xv, s).to(DType::i32), Tensor(), Tensor(), Tensor(), Tensor(), true);
  EXPECT_EQ(y.dtype(), DType::f32);
  EXPECT_TRUE(close(y.to_vector(), bn_ref(xv, s, nullptr, nullptr, nullptr, true, {}, {}).y, 1e-4, 1e-4));
}

TEST(BatchNorm, NanAndInfStayInTheirChannel) {
  GLT_RNG(rng);
  const Shape s = {4, 3, 5, 5};
  for (float special : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    auto xv = uniform(rng, numel_of(s));
    xv[(2 * 3 + 1) * 25 + 7] = special;  // channel 1
    Tensor x = Tensor::from_host(device(), xv, s);
    Tensor rm = zeros(device(), {3}), rv = ones(device(), {3});
    auto y = batch_norm(x, rm, rv, Tensor(), Tensor(), true).to_vector();
    Ref r = bn_ref(xv, s, nullptr, nullptr, nullptr, true, {0, 0, 0}, {1, 1, 1});
    EXPECT_TRUE(close(y, r.y, 1e-4, 1e-4));  // NaN in channel 1 (the reference's too), exact elsewhere
    for (std::int64_t nb = 0; nb < 4; ++nb)
      for (int k = 0; k < 25; ++k) EXPECT_TRUE(std::isnan(y[(nb * 3 + 1) * 25 + k]));
    auto rmv = rm.to_vector(), rvv = rv.to_vector();
    EXPECT_TRUE(std::isfinite(rmv[0]) && std::isfinite(rmv[2]) && std::isfinite(rvv[0]) && std::isfinite(rvv[2]));
    EXPECT_FALSE(std::isfinite(rvv[1]));
  }
}

TEST(BatchNorm, LargeOffsetKeepsVarianceAccurate) {
  GLT_RNG(rng);
  const Shape s = {16, 2, 40, 40};
  auto xv = uniform(rng, numel_of(s), -1, 1);
  for (auto& v : xv) v += 1e4f;
  Tensor x = Tensor::from_host(device(), xv, s);
  Tensor rm = zeros(device(), {2}), rv = zeros(device(), {2});
  auto y = batch_norm(x, rm, rv, Tensor(), Tensor(), true, 1.0).to_vector();
  Ref r = bn_ref(xv, s, nullptr, nullptr, nullptr, true, {0, 0}, {0, 0}, 1.0);
  // x is exact to 1e-3 (its f32 ulp); the variance ~1/3 must keep ~3 digits (E[x^2] - E[x]^2 in
  // f32 would lose all of them)
  EXPECT_TRUE(close(rv.to_vector(), r.rv, 2e-3, 0)) << "variance";
  EXPECT_TRUE(close(rm.to_vector(), r.rm, 2e-7, 0)) << "mean";
  EXPECT_TRUE(close(y, r.y, 0, 3e-3));
}

// The shift K is the channel's first value: an outlier there (1000 against values in [-1, 1]) must
// not cost the variance its digits (shifted sums of squares would: 16e6 - 16e6 per invocation).
TEST(BatchNorm, OutlierFirstValueKeepsVarianceAccurate) {
  GLT_RNG(rng);
  const Shape s = {8, 2, 32, 32};
  auto xv = uniform(rng, numel_of(s), -1, 1);
  xv[0] = 1000.0f, xv[32 * 32] = -1000.0f;  // channel 0's and 1's first values
  Tensor x = Tensor::from_host(device(), xv, s);
  Tensor rm = zeros(device(), {2}), rv = zeros(device(), {2});
  auto y = batch_norm(x, rm, rv, Tensor(), Tensor(), true, 1.0).to_vector();
  Ref r = bn_ref(xv, s, nullptr, nullptr, nullptr, true, {0, 0}, {0, 0}, 1.0);
  EXPECT_TRUE(close(rv.to_vector(), r.rv, 1e-5, 1e-4)) << "variance";
  EXPECT_TRUE(close(rm.to_vector(), r.rm, 0, 1e-4)) << "mean";  // K + the shifted mean: ulp(1000) = 6e-5
  EXPECT_TRUE(close(y, r.y, 1e-4, 1e-4));
}

// Per-channel lengths past llvmpipe's 65535 loop iterations, and a lowered loop limit that makes
// the reduction take three levels at limit 9 (chunks of 64 x 3 values, merges of 64 x 3 partials).
TEST(BatchNorm, SplitReductionsPastTheLoopLimit) {
  GLT_RNG(rng);
  const Shape s = {2, 2, 200, 200};  // 80000 values per channel
  for (std::uint64_t limit : {0, 9, 12}) {
    SCOPED_TRACE("loop limit " + std::to_string(limit));
    std::unique_ptr<ScopedLoopLimit> scoped;
    if (limit) scoped = std::make_unique<ScopedLoopLimit>(limit);
    check_all(rng, s, true, true, -1, 4, 2e-4);
  }
  ScopedLoopLimit tiny(6);  // below the workgroup tree's own loop: a typed error, never a wrong result
  Tensor x = Tensor::from_host(device(), uniform(rng, 4 * 3), {4, 3});
  EXPECT_THROW(batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), true), LimitError);
}

// act = relu: the ReLU's gradient in the backward kernels' loads of gy (RELU_MASK: gy where the
// output y > 0, else 0), against float64 (torch's formulas with gy masked by the kernel's own y),
// and against batch_norm then relu() apart (relu_backward's dispatch; bit for bit on llvmpipe): rows of 1, 20
// and 99 values (one invocation per element, the row grid), training and eval, affine or not, only
// x or only the weight and bias requiring grad, and the reductions in three levels (loop limit 9: 39200
// values per channel; relu() and its gradient there one element per invocation, loose12).
TEST(BatchNorm, ReluGradientInTheKernels) {
  GLT_RNG(rng);
  struct Case {
    Shape s;
    bool affine, training, need_x, need_wb;
    std::uint64_t limit;
  };
  for (const Case& c : std::vector<Case>{{{3, 5, 9, 11}, true, true, true, true, 0},
                                         {{2, 3, 4, 5}, true, true, true, true, 0},
                                         {{6, 4, 1, 1}, false, true, true, false, 0},
                                         {{3, 5, 9, 11}, true, false, true, true, 0},
                                         {{2, 3, 4, 5}, false, false, true, false, 0},
                                         {{4, 2, 10, 12}, true, true, false, true, 0},
                                         {{2, 2, 140, 140}, true, true, true, true, 9}}) {
    SCOPED_TRACE(to_string(c.s) + (c.affine ? " affine" : "") + (c.training ? " training" : " eval") + " limit " +
                 std::to_string(c.limit));
    std::unique_ptr<ScopedLoopLimit> scoped;
    if (c.limit) scoped = std::make_unique<ScopedLoopLimit>(c.limit);
    const std::int64_t C = c.s[1];
    auto xv = uniform(rng, numel_of(c.s), -2, 3), gv = uniform(rng, numel_of(c.s));
    auto wv = uniform(rng, C, 0.5, 2), bv = uniform(rng, C), rmv = uniform(rng, C), rvv = uniform(rng, C, 0.5, 2);
    auto run = [&](bool fused, std::vector<float>& y, std::vector<float>& dx, std::vector<float>& dw,
                   std::vector<float>& db) {
      Tensor x = Tensor::from_host(device(), xv, c.s);
      Tensor w = Tensor::from_host(device(), wv, {C}), b = Tensor::from_host(device(), bv, {C});
      Tensor rm = Tensor::from_host(device(), rmv, {C}), rv = Tensor::from_host(device(), rvv, {C});
      if (c.need_x) requires_grad_(x);
      if (c.affine && c.need_wb) requires_grad_(w), requires_grad_(b);
      const Tensor wa = c.affine ? w : Tensor(), ba = c.affine ? b : Tensor();
      Tensor out = fused ? batch_norm(x, rm, rv, wa, ba, c.training, 0.1, 1e-5, Activation::relu)
                         : relu(batch_norm(x, rm, rv, wa, ba, c.training));
      backward(out, Tensor::from_host(device(), gv, c.s));
      y = out.to_vector();
      if (c.need_x) dx = grad(x).to_vector();
      if (c.affine && c.need_wb) dw = grad(w).to_vector(), db = grad(b).to_vector();
    };
    std::vector<float> y, dx, dw, db, y2, dx2, dw2, db2;
    run(true, y, dx, dw, db);
    {
      run(false, y2, dx2, dw2, db2);
      // (the same formulas; a GPU's compiler may contract them into FMAs differently per kernel)
      EXPECT_TRUE(close(y, {y2.begin(), y2.end()}, 1e-6, 1e-7)) << "y: fused against relu()";
      EXPECT_TRUE(close(dx, {dx2.begin(), dx2.end()}, 1e-5, 1e-6)) << "dx: fused against relu_backward's";
      EXPECT_TRUE(close(dw, {dw2.begin(), dw2.end()}, 1e-5, 1e-5)) << "dweight: fused against relu_backward's";
      EXPECT_TRUE(close(db, {db2.begin(), db2.end()}, 1e-5, 1e-5)) << "dbias: fused against relu_backward's";
    }
    std::vector<float> gm(gv.size());
    std::size_t masked = 0;
    for (std::size_t i = 0; i < gv.size(); ++i) {
      gm[i] = y[i] > 0 ? gv[i] : 0.0f;
      masked += y[i] > 0 ? 0 : 1;
    }
    EXPECT_GT(masked, 0u);
    const Ref r = bn_ref(xv, c.s, c.affine ? &wv : nullptr, c.affine ? &bv : nullptr, &gm, c.training, rmv, rvv);
    const double tol = 1e-4, sums = tol * std::sqrt(double(numel_of(c.s)));
    if (c.need_x) {
      EXPECT_TRUE(close(dx, r.dx, tol, tol)) << "dx";
    }
    if (c.affine && c.need_wb) {
      EXPECT_TRUE(close(dw, r.dw, tol, sums)) << "dweight";
      EXPECT_TRUE(close(db, r.db, tol, sums)) << "dbias";
    }
  }
}

// Training mode's eps (invstd = 1 / sqrt(var + eps), in the statistics' last level): channels of
// small but nonzero variance (about 3e-7 and 3e-5, around 0.5) where eps dominates it, and one of
// variance about 1, at eps 1e-5 (the default) and 1e-3, against float64 (the other training tests'
// variances near 1 leave eps within their tolerance). Sabotage: eps left out of the last level, or
// added twice.
TEST(BatchNorm, TrainingEpsOnSmallVariance) {
  GLT_RNG(rng);
  const Shape s = {4, 3, 7, 9};
  const std::int64_t S = 63, C = 3;
  auto xv = uniform(rng, numel_of(s), -1, 1);
  const double spread[] = {1e-3, 1e-2, 1.0};
  for (std::int64_t nb = 0; nb < 4; ++nb)
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t k = 0; k < S; ++k) {
        float& v = xv[static_cast<std::size_t>((nb * C + c) * S + k)];
        v = static_cast<float>(0.5 + spread[c] * v);
      }
  for (double eps : {1e-5, 1e-3}) {
    SCOPED_TRACE("eps " + std::to_string(eps));
    Tensor x = Tensor::from_host(device(), xv, s);
    Tensor rm = zeros(device(), {C}), rv = ones(device(), {C});
    const auto y = batch_norm(x, rm, rv, Tensor(), Tensor(), true, 0.1, eps).to_vector();
    const Ref r = bn_ref(xv, s, nullptr, nullptr, nullptr, true, {0, 0, 0}, {1, 1, 1}, 0.1, eps);
    EXPECT_TRUE(close(y, r.y, 1e-3, 1e-3)) << "y";
    EXPECT_TRUE(close(rv.to_vector(), r.rv, 1e-4, 1e-6)) << "running_var (no eps)";
  }
}

// The GPUs' first level of 8 values per invocation (and 16), forced on any device
// (Settings::batch_norm_iters, GLTENSOR_BATCH_NORM_ITERS), against float64: odd sizes with a
// partial last chunk, one and several workgroups per channel (merge levels), with gradients, a
// lowered loop limit (three levels), and under test_batch_norm_check_loops (its declared loops).
// Sabotage: the first level's chunk left at 64 values per invocation whatever the form.
TEST(BatchNorm, GpuFirstLevelForms) {
  GLT_RNG(rng);
  for (int iters : {16, 8}) {
    ScopedSettings set;
    set->batch_norm_iters = iters;
    SCOPED_TRACE("batch_norm_iters " + std::to_string(iters));
    check_all(rng, {2, 3, 5}, true, true);
    check_all(rng, {3, 5, 17, 23}, true, true);       // 1173 per channel: 2 chunks at 16 (1024 each)
    check_all(rng, {7, 3, 31, 37}, false, true);      // 8029: 8 chunks at 16, 16 at 8
    check_all(rng, {1, 2, 3001}, true, true, -1, 4);  // S past the walk's step
    ScopedLoopLimit limit(12);                        // 6 values per invocation, 3 levels
    check_all(rng, {2, 2, 3, 1001}, true, true, -1, 4, 2e-4);
  }
}

// The row grid's kernels merge the last level's partials themselves (MERGE_PARTIALS in the
// forward, SUM_PARTIALS in dx): 2 dispatches each way instead of 3. Against float64 with partials
// of 1, 72 (two per invocation) and past kFusedPartials (264: a merge level first, then one
// partial), running statistics one or both or neither, and lowered loop limits: 10 leaves room for
// the merge's two trips (rows of 2 values, 100 partials merged 2 per invocation, the tree's 6),
// 9 for one (a merge level first, then one partial).
TEST(BatchNorm, PartialsMergedInTheElementwiseKernels) {
  GLT_RNG(rng);
  ScopedSettings set;
  set->batch_norm_iters = 8;  // chunks of 512 values: many partials with small shapes
  auto dispatches = [](const std::function<void()>& f) {
    const auto d0 = device().dispatch_count();
    f();
    device().synchronize();
    return device().dispatch_count() - d0;
  };
  {
    Tensor x = Tensor::from_host(device(), uniform(rng, 9 * 2 * 64 * 64), {9, 2, 64, 64});  // 72 partials
    Tensor w = Tensor::from_host(device(), uniform(rng, 2), {2}), b = Tensor::from_host(device(), uniform(rng, 2), {2});
    requires_grad_(x), requires_grad_(w);
    Tensor y;
    EXPECT_EQ(dispatches([&] { y = batch_norm(x, Tensor(), Tensor(), w, b, true); }), 2u);
    Tensor gy = Tensor::from_host(device(), uniform(rng, y.numel()), y.shape());
    EXPECT_EQ(dispatches([&] { backward(y, gy); }), 2u);
  }
  for (const Shape& s : std::vector<Shape>{{2, 3, 8, 8}, {9, 2, 64, 64}, {33, 1, 64, 64}, {5, 3, 99}})
    for (bool affine : {true, false}) check_all(rng, s, affine, true);
  // only running_var, only running_mean (stand-ins bound for the other)
  for (int which : {1, 2}) {
    SCOPED_TRACE(which == 1 ? "running_var only" : "running_mean only");
    const Shape s = {9, 2, 64, 64};
    auto xv = uniform(rng, numel_of(s), -1, 3), rv0 = uniform(rng, 2, 0.5, 2), rm0 = uniform(rng, 2);
    Tensor x = Tensor::from_host(device(), xv, s);
    Tensor rm = Tensor::from_host(device(), rm0, {2}), rv = Tensor::from_host(device(), rv0, {2});
    Tensor y = batch_norm(x, which == 2 ? rm : Tensor(), which == 1 ? rv : Tensor(), Tensor(), Tensor(), true);
    Ref r = bn_ref(xv, s, nullptr, nullptr, nullptr, true, rm0, rv0);
    EXPECT_TRUE(close(y.to_vector(), r.y, 1e-4, 1e-4));
    if (which == 1) {
      EXPECT_TRUE(close(rv.to_vector(), r.rv, 1e-4, 1e-5));
      EXPECT_EQ(rm.to_vector(), rm0);
    } else {
      EXPECT_TRUE(close(rm.to_vector(), r.rm, 1e-5, 1e-5));
      EXPECT_EQ(rv.to_vector(), rv0);
    }
  }
  for (std::uint64_t limit : {10, 9}) {
    SCOPED_TRACE("loop limit " + std::to_string(limit));
    ScopedLoopLimit scoped(limit);  // first level: 64 x 4 values per workgroup, 100 partials
    check_all(rng, {200, 2, 128}, true, true);
  }
}

// Grids split over several dispatches (a dispatch limit of 3 workgroups per dimension, as grids
// past the GPUs' 65535 are): the statistics' and sums' levels (P x C workgroups), the row grid's
// normalizing and dx kernels (S chunks x C x N: N past the limit along z), the one-element grid
// (rows under 64 values) as 2-D rows, against float64. Any device runs these at small sizes;
// NearTheSsboLimitOnGpus runs the same paths at full size on GPUs. Sabotage: the row grid's image
// index from gl_WorkGroupID.z (without the dispatch's group base) in batch_norm.comp fails it.
TEST(BatchNorm, GridsSplitUnderALoweredDispatchLimit) {
  GLT_RNG(rng);
  ScopedDispatchLimit limit(3);
  for (const Shape& s : std::vector<Shape>{{7, 5, 9, 11}, {5, 4, 3, 700}, {9, 2, 64, 64}, {300, 3, 5}}) {
    check_all(rng, s, true, true);
    check_all(rng, s, false, false);
  }
}

// Near the 128 MiB that llvmpipe's SSBOs allow (GPUs allow more): 32 M float32 values, training
// with gradients, against float64. [64, 2, 512, 511]: 16.7 M values per channel (16352 partials
// at the GPUs' first level: a merge level, then the row grid's merged partials), the row grid
// 64 images deep; [8388608, 2, 2]: the one-element grid of 524288 workgroups (2-D rows past
// 65535). GPUs only: on llvmpipe the same splits run at small sizes under lowered loop and
// dispatch limits (SplitReductionsPastTheLoopLimit, PartialsMergedInTheElementwiseKernels,
// GridsSplitUnderALoweredDispatchLimit), where this size would take minutes.
TEST(BatchNorm, NearTheSsboLimitOnGpus) {
  if (device().adapter().software) GTEST_SKIP() << "GPUs only (llvmpipe: the lowered-limit tests)";
  GLT_RNG(rng);
  for (const Shape& s : std::vector<Shape>{{64, 2, 512, 511}, {8388608, 2, 2}}) {
    ASSERT_LE(numel_of(s) * 4, std::int64_t{128} << 20);
    check_all(rng, s, true, true, -1, 4, 2e-4);
  }
}

// batch_norm_max_pool2d's fused form (POOL in batch_norm.comp: the pooled y and argmax written by
// the normalizing kernel, the backward reading the pooled gradient at the argmax) against float64
// (batch norm, ReLU, max pooling and their gradients, the first of equal values winning) and
// against the two ops on the GPU: training (partials merged in the pooling kernel, or a merge
// level first under a lowered loop limit) and eval, affine or not, ReLU or none, windows 2 x 2,
// 3 x 3 and 2 x 3, rows under 64 values (dx's one-element grid), past 65535 elements, grids
// split under a lowered dispatch limit; ties (values on a grid of 0.5) and NaN against the two ops;
// windows that do not tile run the two ops. Sabotage (each fails here): dx's argmax test off by
// one; the sums' x index with the windows' plane size (u_S) for x's (u_xS); the ReLU's -1 left out
// of the forward's argmax; the window's first element without its row (oh * KH * W), in the
// forward or in dx.
namespace {
struct PoolCase {
  Shape s;
  std::array<std::int64_t, 2> k;
  bool affine, training, relu;
};
// The composition's float64 reference: pooled y, dx, dw, db for pooled gradient gp.
struct PoolRef {
  std::vector<double> y, dx, dw, db, rm, rv;
};
PoolRef bn_pool_ref(const std::vector<float>& xv, const PoolCase& c, const std::vector<float>& wv,
                    const std::vector<float>& bv, const std::vector<float>& gp, const std::vector<float>& rmv,
                    const std::vector<float>& rvv) {
  const std::int64_t N = c.s[0], C = c.s[1], H = c.s[2], W = c.s[3], OH = H / c.k[0], OW = W / c.k[1];
  Ref f = bn_ref(xv, c.s, c.affine ? &wv : nullptr, c.affine ? &bv : nullptr, nullptr, c.training, rmv, rvv);
  PoolRef r;
  r.y.resize(static_cast<std::size_t>(N * C * OH * OW));
  std::vector<float> g(xv.size(), 0.0f);
  for (std::int64_t pl = 0; pl < N * C; ++pl)
    for (std::int64_t oh = 0; oh < OH; ++oh)
      for (std::int64_t ow = 0; ow < OW; ++ow) {
        double best = 0;
        std::int64_t bi = -1;
        for (std::int64_t kh = 0; kh < c.k[0]; ++kh)
          for (std::int64_t kw = 0; kw < c.k[1]; ++kw) {
            const std::int64_t i = pl * H * W + (oh * c.k[0] + kh) * W + ow * c.k[1] + kw;
            const double v = c.relu ? std::max(f.y[i], 0.0) : f.y[i];
            if (bi < 0 || v > best) best = v, bi = i;
          }
        const std::int64_t o = (pl * OH + oh) * OW + ow;
        r.y[o] = best;
        if (!c.relu || best > 0) g[bi] = gp[o];
      }
  Ref b = bn_ref(xv, c.s, c.affine ? &wv : nullptr, c.affine ? &bv : nullptr, &g, c.training, rmv, rvv);
  r.dx = b.dx, r.dw = b.dw, r.db = b.db, r.rm = f.rm, r.rv = f.rv;
  return r;
}
// Runs the fused op (or the two ops) with gradients on x, weight and bias.
struct PoolRun {
  std::vector<float> y, dx, dw, db, rm, rv;
};
PoolRun run_bn_pool(const PoolCase& c, bool fused, const std::vector<float>& xv, const std::vector<float>& wv,
                    const std::vector<float>& bv, const std::vector<float>& gp, const std::vector<float>& rmv,
                    const std::vector<float>& rvv) {
  const std::int64_t C = c.s[1];
  Tensor x = Tensor::from_host(device(), xv, c.s);
  Tensor w = Tensor::from_host(device(), wv, {C}), b = Tensor::from_host(device(), bv, {C});
  Tensor rm = Tensor::from_host(device(), rmv, {C}), rv = Tensor::from_host(device(), rvv, {C});
  requires_grad_(x);
  if (c.affine) requires_grad_(w), requires_grad_(b);
  const Tensor wa = c.affine ? w : Tensor(), ba = c.affine ? b : Tensor();
  const Activation act = c.relu ? Activation::relu : Activation::none;
  Pool2dOptions po;
  po.kernel = c.k;
  Tensor y = fused ? batch_norm_max_pool2d(x, rm, rv, wa, ba, c.training, 0.1, 1e-5, act, po)
                   : max_pool2d(batch_norm(x, rm, rv, wa, ba, c.training, 0.1, 1e-5, act), po);
  backward(y, Tensor::from_host(device(), gp, y.shape()));
  PoolRun r{y.to_vector(), grad(x).to_vector(), {}, {}, rm.to_vector(), rv.to_vector()};
  if (c.affine) r.dw = grad(w).to_vector(), r.db = grad(b).to_vector();
  return r;
}
void check_bn_pool(std::mt19937_64& rng, const PoolCase& c) {
  SCOPED_TRACE(to_string(c.s) + " kernel " + std::to_string(c.k[0]) + "x" + std::to_string(c.k[1]) +
               (c.affine ? " affine" : "") + (c.training ? " training" : " eval") + (c.relu ? " relu" : ""));
  const std::int64_t C = c.s[1], O = c.s[0] * C * (c.s[2] / c.k[0]) * (c.s[3] / c.k[1]);
  auto xv = uniform(rng, numel_of(c.s), -2, 3), gp = uniform(rng, O);
  auto wv = uniform(rng, C, 0.5, 2), bv = uniform(rng, C), rmv = uniform(rng, C), rvv = uniform(rng, C, 0.5, 2);
  const PoolRun f = run_bn_pool(c, true, xv, wv, bv, gp, rmv, rvv);
  const PoolRef r = bn_pool_ref(xv, c, wv, bv, gp, rmv, rvv);
  const double tol = 1e-4, sums = tol * std::sqrt(double(numel_of(c.s)));
  EXPECT_TRUE(close(f.y, r.y, tol, tol)) << "pooled y";
  EXPECT_TRUE(close(f.dx, r.dx, tol, tol)) << "dx";
  if (c.affine) {
    EXPECT_TRUE(close(f.dw, r.dw, tol, sums)) << "dweight";
    EXPECT_TRUE(close(f.db, r.db, tol, sums)) << "dbias";
  }
  if (c.training) {
    EXPECT_TRUE(close(f.rm, r.rm, 1e-5, 1e-5)) << "running_mean";
    EXPECT_TRUE(close(f.rv, r.rv, 1e-4, 1e-5)) << "running_var";
  } else {
    EXPECT_EQ(f.rm, rmv);
    EXPECT_EQ(f.rv, rvv);
  }
}
}  // namespace

TEST(BatchNorm, MaxPoolFusedAgainstFloat64) {
  GLT_RNG(rng);
  for (const PoolCase& c : std::vector<PoolCase>{{{3, 5, 8, 10}, {2, 2}, true, true, true},
                                                 {{3, 5, 8, 10}, {2, 2}, false, true, false},
                                                 {{2, 3, 9, 12}, {3, 3}, true, true, true},
                                                 {{2, 3, 4, 9}, {2, 3}, true, false, true},
                                                 {{4, 3, 4, 6}, {2, 2}, true, true, true},
                                                 {{5, 2, 6, 6}, {2, 2}, false, false, false},
                                                 {{6, 4, 1, 2}, {1, 2}, true, true, true},
                                                 {{67, 3, 18, 20}, {2, 2}, true, true, true}})
    check_bn_pool(rng, c);
  {
    SCOPED_TRACE("more partials than the kernel merges: a merge level first (loop limit 34)");
    ScopedLoopLimit scoped(34);
    ScopedSettings set;
    set->batch_norm_iters = 8;
    check_bn_pool(rng, {{41, 2, 28, 28}, {2, 2}, true, true, true});
  }
  {
    SCOPED_TRACE("partials merged in the pooling kernel (first level of 512 values)");
    ScopedSettings set;
    set->batch_norm_iters = 8;
    check_bn_pool(rng, {{9, 2, 28, 28}, {2, 2}, true, true, true});
  }
  {
    SCOPED_TRACE("grids split under a dispatch limit of 3 workgroups");
    ScopedDispatchLimit limit(3);
    check_bn_pool(rng, {{7, 5, 8, 10}, {2, 2}, true, true, true});
    check_bn_pool(rng, {{7, 5, 8, 10}, {2, 2}, true, false, true});
  }
}

TEST(BatchNorm, MaxPoolFusedTiesNanAndFallback) {
  GLT_RNG(rng);
  auto dispatches = [](const std::function<void()>& f) {
    const auto d0 = device().dispatch_count();
    f();
    device().synchronize();
    return device().dispatch_count() - d0;
  };
  // ties: values on a grid of 0.5 (equal normalized values in most windows), then NaN in one window
  for (bool nan : {false, true}) {
    SCOPED_TRACE(nan ? "NaN" : "ties");
    const PoolCase c{{4, 3, 8, 8}, {2, 2}, true, false, true};
    auto xv = uniform(rng, numel_of(c.s), -2, 2), gp = uniform(rng, 4 * 3 * 16);
    for (float& v : xv) v = std::round(v * 2) / 2;
    if (nan) xv[9] = std::numeric_limits<float>::quiet_NaN();
    auto wv = uniform(rng, 3, 0.5, 2), bv = uniform(rng, 3), rmv = uniform(rng, 3), rvv = uniform(rng, 3, 0.5, 2);
    const PoolRun f = run_bn_pool(c, true, xv, wv, bv, gp, rmv, rvv);
    const PoolRun u = run_bn_pool(c, false, xv, wv, bv, gp, rmv, rvv);
    auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
      if (a.size() != b.size()) return false;
      for (std::size_t i = 0; i < a.size(); ++i)
        if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])) || std::abs(a[i] - b[i]) <= 1e-6f)) return false;
      return true;
    };
    EXPECT_TRUE(same(f.y, u.y)) << "pooled y";
    EXPECT_TRUE(same(f.dx, u.dx)) << "dx";
    if (nan) {
      EXPECT_TRUE(std::isnan(f.y[0]));  // x[9]: plane 0, window (0, 0)
    }
  }
  // dispatches: training forward 2 (statistics, normalize and pool), backward 2 (sums, dx)
  {
    Tensor x = Tensor::from_host(device(), uniform(rng, 8 * 4 * 16 * 16), {8, 4, 16, 16});
    Tensor w = ones(device(), {4}), b = zeros(device(), {4});
    requires_grad_(x), requires_grad_(w), requires_grad_(b);
    Pool2dOptions po;
    Tensor y;
    EXPECT_EQ(dispatches([&] {
                y = batch_norm_max_pool2d(x, Tensor(), Tensor(), w, b, true, 0.1, 1e-5, Activation::relu, po);
              }),
              2u);
    EXPECT_EQ(y.shape(), (Shape{8, 4, 8, 8}));
    Tensor gy = Tensor::from_host(device(), uniform(rng, y.numel()), y.shape());
    EXPECT_EQ(dispatches([&] { backward(y, gy); }), 2u);
  }
  // windows that do not tile (stride 1; odd H, floor and ceil_mode; padding; dilation): the two ops,
  // the same values and dx (odd H: the last row in no window, whose dx the fused grid never writes);
  // dx to rounding where windows overlap (stride 1, dilation): max_pool2d's backward adds them with
  // float atomics, in an order that differs between runs on GPUs (the H100 failed the exact compare)
  for (int k = 0; k < 5; ++k) {
    SCOPED_TRACE("fallback " + std::to_string(k));
    const Shape s = k == 1 || k == 3 ? Shape{2, 3, 7, 8} : Shape{2, 3, 8, 8};
    Pool2dOptions po;
    if (k == 0) po.stride = {1, 1};
    if (k == 2) po.padding = {1, 1};
    if (k == 3) po.ceil_mode = true;
    if (k == 4) po.dilation = {2, 2};
    const auto xv = uniform(rng, numel_of(s));
    Tensor x1 = Tensor::from_host(device(), xv, s), x2 = Tensor::from_host(device(), xv, s);
    requires_grad_(x1), requires_grad_(x2);
    Tensor a = batch_norm_max_pool2d(x1, Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5, Activation::relu, po);
    Tensor e =
        max_pool2d(batch_norm(x2, Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5, Activation::relu), po);
    EXPECT_EQ(a.shape(), e.shape());
    EXPECT_EQ(a.to_vector(), e.to_vector());
    const auto gv = uniform(rng, e.numel());
    backward(a, Tensor::from_host(device(), gv, a.shape()));
    backward(e, Tensor::from_host(device(), gv, e.shape()));
    const auto g1 = grad(x1).to_vector(), g2 = grad(x2).to_vector();
    if (k == 0 || k == 4)
      EXPECT_TRUE(close(g1, std::vector<double>(g2.begin(), g2.end()), 1e-5, 1e-6)) << "dx";
    else
      EXPECT_EQ(g1, g2) << "dx";
  }
  // two NaN in one window (no ReLU, eval): the gradient goes where max_pool2d and torch send it (the
  // last NaN)
  {
    const Shape s = {1, 2, 4, 4};
    auto xv = uniform(rng, numel_of(s));
    xv[1] = xv[4] = std::numeric_limits<float>::quiet_NaN();  // window (0, 0) of plane 0
    Tensor rm = zeros(device(), {2}), rv = ones(device(), {2});
    Tensor x1 = Tensor::from_host(device(), xv, s), x2 = Tensor::from_host(device(), xv, s);
    requires_grad_(x1), requires_grad_(x2);
    Tensor a =
        batch_norm_max_pool2d(x1, rm, rv, Tensor(), Tensor(), false, 0.1, 1e-5, Activation::none, Pool2dOptions{});
    Tensor e = max_pool2d(batch_norm(x2, rm, rv, Tensor(), Tensor(), false, 0.1, 1e-5), Pool2dOptions{});
    const auto gv = uniform(rng, e.numel(), 1, 2);
    backward(a, Tensor::from_host(device(), gv, a.shape()));
    backward(e, Tensor::from_host(device(), gv, e.shape()));
    const auto g1 = grad(x1).to_vector(), g2 = grad(x2).to_vector();
    EXPECT_EQ(g1, g2);
    EXPECT_EQ(g1[1], 0.0f);
    EXPECT_NE(g1[4], 0.0f);
  }
  // nn::Sequential runs BatchNorm2d + ReLU + MaxPool2d as batch_norm_max_pool2d: the same values and
  // gradients (to rounding) as the ops apart, 4 dispatches fewer each way (no pooling, no relu dispatches)
  {
    Generator gen(3);
    nn::Sequential seq;
    auto bn = std::make_shared<nn::BatchNorm2d>(device(), 3);
    seq.add(bn).add(std::make_shared<nn::ReLU>()).add(std::make_shared<nn::MaxPool2d>(Pool2dOptions{}));
    const Shape s = {5, 3, 8, 12};
    const auto xv = uniform(rng, numel_of(s));
    Tensor x1 = Tensor::from_host(device(), xv, s), x2 = Tensor::from_host(device(), xv, s);
    requires_grad_(x1), requires_grad_(x2);
    Tensor y1, y2;
    Tensor rm = zeros(device(), {3}), rv = ones(device(), {3});  // BatchNorm2d's initial statistics
    auto as_double = [](const Tensor& t) {
      const auto v = t.to_vector();
      return std::vector<double>(v.begin(), v.end());
    };
    const auto fused = dispatches([&] { y1 = seq.forward(x1); });
    const auto apart =
        dispatches([&] { y2 = max_pool2d(relu(batch_norm(x2, rm, rv, bn->weight, bn->bias, true)), Pool2dOptions{}); });
    EXPECT_EQ(fused + 2, apart);  // the relu and the pooling
    EXPECT_EQ(y1.to_vector(), y2.to_vector());
    // the module's running statistics updated as batch_norm updates them (its momentum)
    EXPECT_TRUE(close(bn->running_mean.to_vector(), as_double(rm), 1e-6, 1e-6)) << "running_mean";
    EXPECT_TRUE(close(bn->running_var.to_vector(), as_double(rv), 1e-6, 1e-6)) << "running_var";
    const auto gv = uniform(rng, y1.numel());
    const auto fb = dispatches([&] { backward(y1, Tensor::from_host(device(), gv, y1.shape())); });
    const auto ab = dispatches([&] { backward(y2, Tensor::from_host(device(), gv, y2.shape())); });
    EXPECT_LT(fb, ab);
    // (the sums over a channel's windows, not its elements: another order of the same terms)
    const auto g1 = grad(x1).to_vector(), g2 = grad(x2).to_vector();
    EXPECT_TRUE(close(g1, {g2.begin(), g2.end()}, 1e-5, 1e-6));
    // eval: the running statistics, the same values
    seq.train(false);
    EXPECT_EQ(seq.forward(x1).to_vector(),
              max_pool2d(relu(batch_norm(x2, bn->running_mean, bn->running_var, bn->weight, bn->bias, false)),
                         Pool2dOptions{})
                  .to_vector());
  }
  // errors: batch_norm's (weight not [C]) named as the fused op on its path and on the two ops'
  // (overlapping windows), max_pool2d's on the latter (rank 3, padding past half the kernel)
  const Pool2dOptions po;
  Pool2dOptions pad, overlapping;
  pad.padding = {2, 2};
  overlapping.stride = {1, 1};
  for (const Pool2dOptions& o : {po, overlapping}) {
    try {
      batch_norm_max_pool2d(ones(device(), {2, 3, 4, 4}), Tensor(), Tensor(), ones(device(), {2}), Tensor(), true, 0.1,
                            1e-5, Activation::none, o);
      ADD_FAILURE() << "no ShapeError";
    } catch (const ShapeError& e) {
      EXPECT_NE(std::string(e.what()).find("gltensor::batch_norm_max_pool2d: weight has shape [2]"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(batch_norm_max_pool2d(ones(device(), {2, 3, 4}), Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5,
                                     Activation::none, po),
               ShapeError);
  EXPECT_THROW(batch_norm_max_pool2d(ones(device(), {2, 3, 4, 4}), Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1,
                                     1e-5, Activation::none, pad),
               ValueError);
}

// nn::Sequential fuses only the library's own BatchNorm2d, ReLU and MaxPool2d: a subclass's forward
// (here counting its calls) runs as written, none skipped by the fusion rules.
namespace {
struct CountingReLU : nn::ReLU {
  int calls = 0;
  Tensor forward(const Tensor& x) override { return ++calls, nn::ReLU::forward(x); }
};
struct CountingMaxPool : nn::MaxPool2d {
  CountingMaxPool() : nn::MaxPool2d(Pool2dOptions{}) {}
  int calls = 0;
  Tensor forward(const Tensor& x) override { return ++calls, nn::MaxPool2d::forward(x); }
};
struct CountingBatchNorm : nn::BatchNorm2d {
  using nn::BatchNorm2d::BatchNorm2d;
  int calls = 0;
  Tensor forward(const Tensor& x) override { return ++calls, nn::BatchNorm2d::forward(x); }
};
}  // namespace

TEST(BatchNorm, SequentialFusesOnlyItsOwnModules) {
  GLT_RNG(rng);
  const Shape s = {2, 3, 4, 6};
  const Tensor x = Tensor::from_host(device(), uniform(rng, numel_of(s)), s);
  auto bn = std::make_shared<nn::BatchNorm2d>(device(), 3);
  auto relu = std::make_shared<CountingReLU>();
  auto pool = std::make_shared<CountingMaxPool>();
  auto cbn = std::make_shared<CountingBatchNorm>(device(), 3);
  nn::Sequential a, b, c;
  a.add(bn).add(relu).add(std::make_shared<nn::MaxPool2d>(Pool2dOptions{}));
  b.add(bn).add(std::make_shared<nn::ReLU>()).add(pool);
  c.add(cbn).add(std::make_shared<nn::ReLU>());
  EXPECT_EQ(a.forward(x).shape(), (Shape{2, 3, 2, 3}));
  EXPECT_EQ(b.forward(x).shape(), (Shape{2, 3, 2, 3}));
  EXPECT_EQ(c.forward(x).shape(), s);
  EXPECT_EQ(relu->calls, 1);
  EXPECT_EQ(pool->calls, 1);
  EXPECT_EQ(cbn->calls, 1);
}

TEST(BatchNorm, Errors) {
  Tensor rm = zeros(device(), {3}), rv = ones(device(), {3});
  EXPECT_THROW(batch_norm(ones(device(), {1, 3}), rm, rv, Tensor(), Tensor(), true), ValueError);
  EXPECT_THROW(batch_norm(ones(device(), {0, 3, 4}), rm, rv, Tensor(), Tensor(), true), ValueError);
  EXPECT_THROW(batch_norm(ones(device(), {2, 3}), Tensor(), Tensor(), Tensor(), Tensor(), false), ValueError);
  EXPECT_THROW(batch_norm(ones(device(), {2, 3}), rm, rv, ones(device(), {4}), Tensor(), true), ShapeError);
  EXPECT_THROW(batch_norm(ones(device(), {4}), rm, rv, Tensor(), Tensor(), true), ShapeError);
  EXPECT_THROW(batch_norm(ones(device(), {2, 3}), rm, rv, Tensor(), Tensor(), true, 0.1, 0.0), ValueError);
  // eval on an empty batch: an empty result
  EXPECT_EQ(batch_norm(ones(device(), {0, 3, 4}), rm, rv, Tensor(), Tensor(), false).numel(), 0);
  // the device stays usable
  EXPECT_EQ(batch_norm(ones(device(), {2, 3}), rm, rv, Tensor(), Tensor(), true).numel(), 6);
}
