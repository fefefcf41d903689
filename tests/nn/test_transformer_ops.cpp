// Fused transformer kernels against float64 references: rms_norm and add_rms_norm
// (glsl/nn/rms_norm.comp), rope (rope.comp), swiglu / geglu (glu.comp). Forward and backward
// (analytic references and finite differences), edge shapes, views, 16-bit storage, NaN/Inf,
// rows split past a lowered loop limit, grids past one dispatch, errors.
// Tolerances (|got - ref| <= atol + rtol |ref|): f32 1e-4 for rms_norm (dweight's atol times
// sqrt(rows), a sum over rows), 1e-5 for rope and the gated units; 16-bit storage 2e-3 (f16) and
// 1e-2 (bf16) against the reference on the rounded inputs; rope at position 1e5 3e-2 absolute (f32
// angles); finite differences as tests/grad_check.hpp (2e-3).
#include <cmath>
#include <limits>

#include "grad_check.hpp"

using namespace gltensor;
using namespace glt_test;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

Tensor up(const std::vector<float>& v, const Shape& s) { return Tensor::from_host(device(), v, s); }

// ---- rms_norm references ----

struct RmsRef {
  std::vector<double> y, dx, dw;
};

// x as [rows, L]; w of L values or empty; gy (optional) the output gradient.
RmsRef rms_ref(const std::vector<double>& x, std::int64_t L, const std::vector<double>& w,
               const std::vector<double>* gy = nullptr, double eps = 1e-6) {
  RmsRef r;
  const std::int64_t rows = L ? static_cast<std::int64_t>(x.size()) / L : 0;
  r.y.resize(x.size());
  if (gy) r.dx.resize(x.size()), r.dw.assign(L, 0.0);
  for (std::int64_t row = 0; row < rows; ++row) {
    const double* xr = &x[row * L];
    double q = 0;
    for (std::int64_t i = 0; i < L; ++i) q += xr[i] * xr[i];
    const double rstd = 1 / std::sqrt(q / L + eps);
    double dot = 0;
    for (std::int64_t i = 0; i < L; ++i) {
      const double wi = w.empty() ? 1.0 : w[i];
      r.y[row * L + i] = xr[i] * rstd * wi;
      if (gy) dot += (*gy)[row * L + i] * wi * xr[i], r.dw[i] += (*gy)[row * L + i] * xr[i] * rstd;
    }
    if (!gy) continue;
    for (std::int64_t i = 0; i < L; ++i) {
      const double wi = w.empty() ? 1.0 : w[i];
      r.dx[row * L + i] = rstd * (*gy)[row * L + i] * wi - xr[i] * rstd * rstd * rstd * dot / L;
    }
  }
  return r;
}

std::vector<double> host_of(const Tensor& t) { return to_double(t.to(DType::f32).contiguous().to_vector()); }

// rms_norm with gradients on x (and the weight) against rms_ref, on an input of `shape`
// normalized over its last nd dims.
void check_rms(std::mt19937_64& rng, const Shape& shape, std::int64_t nd, bool weight, double tol = 1e-4) {
  SCOPED_TRACE("rms_norm " + to_string(shape) + " nd " + std::to_string(nd) + (weight ? " weight" : ""));
  const Shape ns(shape.end() - nd, shape.end());
  const std::int64_t L = numel_of(ns);
  auto xv = uniform(rng, numel_of(shape), -2, 2), gv = uniform(rng, numel_of(shape)), wv = uniform(rng, L, 0.5, 1.5);
  Tensor x = up(xv, shape), w = up(wv, ns);
  requires_grad_(x);
  if (weight) requires_grad_(w);
  Tensor y = rms_norm(x, nd, weight ? w : Tensor());
  backward(y, up(gv, shape));
  const auto gd = to_double(gv);
  RmsRef r = rms_ref(to_double(xv), L, weight ? to_double(wv) : std::vector<double>{}, &gd);
  EXPECT_TRUE(close(y.to_vector(), r.y, tol, tol)) << "y";
  EXPECT_TRUE(close(grad(x).to_vector(), r.dx, tol, tol)) << "dx";
  if (weight) {
    const double rows = static_cast<double>(numel_of(shape) / std::max<std::int64_t>(L, 1));
    EXPECT_TRUE(close(grad(w).to_vector(), r.dw, tol, tol * std::sqrt(rows))) << "dweight";
  }
}

// ---- rope reference ----

// x [..., T, D] as rows of D; pos(row) the row's position.
template <typename PosFn>
std::vector<double> rope_ref(const std::vector<double>& x, std::int64_t D, std::int64_t R, bool interleaved,
                             double base, PosFn pos, double sign = 1) {
  std::vector<double> y = x;
  const std::int64_t rows = D ? static_cast<std::int64_t>(x.size()) / D : 0;
  for (std::int64_t row = 0; row < rows; ++row)
    for (std::int64_t k = 0; k < R / 2; ++k) {
      const double th = static_cast<double>(pos(row)) * std::pow(base, -2.0 * k / R);
      const double c = std::cos(th), s = sign * std::sin(th);
      const std::int64_t a = row * D + (interleaved ? 2 * k : k), b = interleaved ? a + 1 : a + R / 2;
      y[a] = x[a] * c - x[b] * s;
      y[b] = x[b] * c + x[a] * s;
    }
  return y;
}

// ---- gated units ----

double act_ref(GluActivation a, double x) {
  switch (a) {
    case GluActivation::silu:
      return x / (1 + std::exp(-x));
    case GluActivation::gelu:
      return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case GluActivation::gelu_tanh:
      return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  }
  return 0;
}
const char* act_label(GluActivation a) {
  return a == GluActivation::silu ? "silu" : a == GluActivation::gelu ? "gelu" : "gelu_tanh";
}
constexpr GluActivation kActs[] = {GluActivation::silu, GluActivation::gelu, GluActivation::gelu_tanh};

// gate_up as rows of 2F -> rows of F.
std::vector<double> glu_ref_fused(const std::vector<double>& gu, std::int64_t F, GluActivation a) {
  std::vector<double> y;
  for (std::size_t row = 0; F && row < gu.size() / (2 * F); ++row)
    for (std::int64_t j = 0; j < F; ++j) y.push_back(act_ref(a, gu[row * 2 * F + j]) * gu[row * 2 * F + F + j]);
  return y;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// rms_norm

TEST(RmsNorm, ForwardAndGradientsAgainstReference) {
  GLT_RNG(rng);
  // odd lengths, size-1 rows and batches, two normalized dims, rows at the 256-wide workgroup
  for (const auto& [s, nd] : std::vector<std::pair<Shape, std::int64_t>>{{{4, 8}, 1},
                                                                         {{3, 5, 7}, 1},
                                                                         {{3, 5, 7}, 2},
                                                                         {{1, 1}, 1},
                                                                         {{6, 1}, 1},
                                                                         {{1, 33}, 1},
                                                                         {{5, 1500}, 1},
                                                                         {{2, 3, 2, 65}, 2},
                                                                         {{7}, 1}})
    for (bool weight : {true, false}) check_rms(rng, s, nd, weight);
}

TEST(RmsNorm, FiniteDifferenceGradients) {
  GLT_RNG(rng);
  for (const auto& [s, nd] :
       std::vector<std::pair<Shape, std::int64_t>>{{{3, 5}, 1}, {{2, 3, 4}, 2}, {{4, 1}, 1}, {{2, 67}, 1}}) {
    SCOPED_TRACE(to_string(s) + " nd " + std::to_string(nd));
    const Shape ns(s.end() - nd, s.end());
    const std::int64_t L = numel_of(ns);
    EXPECT_TRUE(grad_check(
        rng, {s, ns}, [nd](auto& t) { return rms_norm(t[0], nd, t[1]); },
        [L](const std::vector<HostT>& h) { return rms_ref(h[0].v, L, h[1].v).y; }));
    EXPECT_TRUE(grad_check(
        rng, {s}, [nd](auto& t) { return rms_norm(t[0], nd); },
        [L](const std::vector<HostT>& h) { return rms_ref(h[0].v, L, {}).y; }));
  }
}

// Rows longer than one workgroup's loops: per-chunk partials, then the apply dispatch (forward,
// dx), and dweight in several row blocks.
TEST(RmsNorm, RowsSplitPastTheLoopLimit) {
  GLT_RNG(rng);
  for (std::uint64_t limit : {20, 40}) {
    SCOPED_TRACE("loop limit " + std::to_string(limit));
    ScopedLoopLimit scoped(limit);
    check_rms(rng, {3, 5000}, 1, true);     // chunks of 256 x 4 or 256 x 14: 5 or 2 partials a row
    check_rms(rng, {50, 7}, 1, true);       // dweight: blocks of 19 or 39 rows
    check_rms(rng, {2, 3, 300}, 2, false);  // limit 20: chunks of 64 x 5
  }
  // rows past 65535 elements at the device's own limit: one workgroup loops over 391 per invocation
  check_rms(rng, {2, 100000}, 1, true, 2e-4);
  ScopedLoopLimit tiny(8);  // below the workgroup tree's own loop: a typed error, never a wrong result
  Tensor x = up(uniform(rng, 12), {4, 3});
  EXPECT_THROW(rms_norm(x, 1), LimitError);
}

TEST(RmsNorm, ViewsHalfStorageAndPromotion) {
  GLT_RNG(rng);
  // a transposed view ([8, 6] storage read as [6, 8]) and a narrowed one
  auto bv = uniform(rng, 48, -2, 2);
  Tensor base = up(bv, {8, 6});
  requires_grad_(base);
  Tensor xt = base.t();
  ASSERT_FALSE(xt.is_contiguous());
  auto gv = uniform(rng, 48);
  Tensor y = rms_norm(xt, 1);
  backward(y, up(gv, {6, 8}));
  const auto gd = to_double(gv);
  RmsRef r = rms_ref(to_double(gather_view(bv, xt)), 8, {}, &gd);
  EXPECT_TRUE(close(y.to_vector(), r.y, 1e-4, 1e-4));
  EXPECT_TRUE(close(grad(base).t().contiguous().to_vector(), r.dx, 1e-4, 1e-4));
  Tensor xn = up(bv, {8, 6}).narrow(1, 1, 4);
  EXPECT_TRUE(close(rms_norm(xn, 1).to_vector(), rms_ref(to_double(gather_view(bv, xn)), 4, {}).y, 1e-4, 1e-4));
  // 16-bit storage: computed in f32, stored in the input's dtype
  for (DType dt : {DType::f16, DType::bf16}) {
    Tensor xh = up(bv, {6, 8}).to(dt);
    Tensor wh = up(uniform(rng, 8, 0.5, 1.5), {8}).to(dt);
    Tensor yh = rms_norm(xh, 1, wh);
    EXPECT_EQ(yh.dtype(), dt);
    EXPECT_TRUE(close(yh.to(DType::f32).to_vector(), rms_ref(host_of(xh), 8, host_of(wh)).y,
                      dt == DType::f16 ? 2e-3 : 1e-2, 1e-3))
        << dtype_name(dt);
    // f32 weight on 16-bit x: promoted to f32
    EXPECT_EQ(rms_norm(xh, 1, up(std::vector<float>(8, 1.f), {8})).dtype(), DType::f32);
    // gradients in 16-bit storage
    Tensor xg = up(bv, {6, 8}).to(dt);
    requires_grad_(xg);
    Tensor yg = rms_norm(xg, 1);
    backward(yg, up(gv, {6, 8}).to(dt));
    EXPECT_EQ(grad(xg).dtype(), dt);
    const auto g16 = host_of(up(gv, {6, 8}).to(dt));
    EXPECT_TRUE(close(grad(xg).to(DType::f32).to_vector(), rms_ref(host_of(xg), 8, {}, &g16).dx, 2e-2, 2e-2))
        << dtype_name(dt);
  }
  // integer input: f32 result
  std::vector<float> iv = {1, -2, 3, 4, 0, 5};
  Tensor yi = rms_norm(up(iv, {2, 3}).to(DType::i32), 1);
  EXPECT_EQ(yi.dtype(), DType::f32);
  EXPECT_TRUE(close(yi.to_vector(), rms_ref(to_double(iv), 3, {}).y, 1e-5, 1e-6));
}

TEST(RmsNorm, NanAndInfStayInTheirRow) {
  GLT_RNG(rng);
  for (float special : {kNaN, kInf}) {
    auto xv = uniform(rng, 4 * 9);
    xv[1 * 9 + 4] = special;
    const auto r = rms_ref(to_double(xv), 9, {});
    auto y = rms_norm(up(xv, {4, 9}), 1).to_vector();
    EXPECT_TRUE(close(y, r.y, 1e-4, 1e-5));
    // the row with the special value: NaN everywhere (NaN), NaN at the Inf and 0 elsewhere (Inf)
    for (int i = 0; i < 9; ++i)
      EXPECT_TRUE((std::isnan(special) || i == 4) ? std::isnan(y[9 + i]) : y[9 + i] == 0.0f) << i;
    for (int i = 0; i < 9; ++i) EXPECT_TRUE(std::isfinite(y[i]) && std::isfinite(y[18 + i]));
  }
}

TEST(RmsNorm, EmptyShapesAndManyRows) {
  GLT_RNG(rng);
  for (const Shape& s : std::vector<Shape>{{0, 8}, {3, 0}, {2, 0, 5}}) {
    SCOPED_TRACE(to_string(s));
    Tensor x = zeros(device(), s), w = ones(device(), {s.back()});
    requires_grad_(x), requires_grad_(w);
    Tensor y = rms_norm(x, 1, w);
    EXPECT_EQ(y.shape(), s);
    backward(sum(y));
    EXPECT_EQ(grad(x).shape(), s);
    EXPECT_EQ(grad(w).to_vector(), std::vector<float>(s.back(), 0.f));
  }
  // more rows than one dispatch's workgroup count (65535 on llvmpipe): the launch splits the grid
  // (forward and dx); dweight in 274 blocks of 256 rows, added up by a reduction
  check_rms(rng, {70001, 2}, 1, true);
}

TEST(RmsNorm, Errors) {
  Tensor x = ones(device(), {2, 3});
  EXPECT_THROW(rms_norm(x, 0), ValueError);
  EXPECT_THROW(rms_norm(x, 3), ValueError);
  EXPECT_THROW(rms_norm(x, 1, Tensor(), 0.0), ValueError);
  EXPECT_THROW(rms_norm(x, 1, ones(device(), {2})), ShapeError);
  EXPECT_THROW(rms_norm(x, 2, ones(device(), {3})), ShapeError);
  EXPECT_THROW(rms_norm(x, 1, ones(device(), {3}).to(DType::i32)), DTypeError);
  try {
    rms_norm(x, 1, ones(device(), {4}));
  } catch (const ShapeError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("rms_norm"), std::string::npos) << m;
    EXPECT_NE(m.find("[4]"), std::string::npos) << m;
    EXPECT_NE(m.find("[3]"), std::string::npos) << m;
  }
  // the device stays usable
  EXPECT_EQ(rms_norm(x, 1).numel(), 6);
}

// ---------------------------------------------------------------------------------------------
// add_rms_norm

TEST(AddRmsNorm, BothOutputsAndTheirGradients) {
  GLT_RNG(rng);
  // limit 20: rows of 2000 in chunks of 256 x 4
  for (std::uint64_t limit : {0, 20}) {
    SCOPED_TRACE("loop limit " + std::to_string(limit));
    std::unique_ptr<ScopedLoopLimit> scoped;
    if (limit) scoped = std::make_unique<ScopedLoopLimit>(limit);
    for (const Shape& s : std::vector<Shape>{{4, 16}, {2, 3, 37}, {1, 1}, {3, 2000}}) {
      SCOPED_TRACE(to_string(s));
      const std::int64_t L = s.back();
      auto xv = uniform(rng, numel_of(s), -2, 2), rv = uniform(rng, numel_of(s), -2, 2);
      auto wv = uniform(rng, L, 0.5, 1.5), g1 = uniform(rng, numel_of(s)), g2 = uniform(rng, numel_of(s));
      Tensor x = up(xv, s), res = up(rv, s), w = up(wv, {L});
      requires_grad_(x), requires_grad_(res), requires_grad_(w);
      auto [sm, normed] = add_rms_norm(x, res, w);
      // loss = sum(sum * g1) + sum(normed * g2): gradients through both outputs
      // (seeded with ones rather than through sum(): reductions throw LimitError at limits this low)
      backward(add(mul(sm, up(g1, s)), mul(normed, up(g2, s))), ones(device(), s));
      std::vector<double> v(xv.size());
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = double(xv[i]) + rv[i];
      const auto gd = to_double(g2);
      RmsRef r = rms_ref(v, L, to_double(wv), &gd);
      EXPECT_TRUE(close(sm.to_vector(), v, 1e-6, 1e-6)) << "sum";
      EXPECT_TRUE(close(normed.to_vector(), r.y, 1e-4, 1e-4)) << "normed";
      std::vector<double> dv(v.size());
      for (std::size_t i = 0; i < v.size(); ++i) dv[i] = r.dx[i] + g1[i];
      EXPECT_TRUE(close(grad(x).to_vector(), dv, 1e-4, 1e-4)) << "dx";
      EXPECT_TRUE(close(grad(res).to_vector(), dv, 1e-4, 1e-4)) << "dresidual";
      EXPECT_TRUE(close(grad(w).to_vector(), r.dw, 1e-4, 1e-4 * std::sqrt(double(numel_of(s) / L)))) << "dweight";
    }
  }
}

TEST(AddRmsNorm, FiniteDifferences) {
  GLT_RNG(rng);
  const Shape s = {3, 2, 5}, ws = {2, 5};  // a 2-d weight: normalized over the last two dims
  EXPECT_TRUE(grad_check(
      rng, {s, s, ws},
      [](auto& t) {
        auto o = add_rms_norm(t[0], t[1], t[2]);
        return add(mul(o.sum, 0.7), o.normed);
      },
      [](const std::vector<HostT>& h) {
        std::vector<double> v(h[0].size());
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = h[0][i] + h[1][i];
        auto y = rms_ref(v, 10, h[2].v).y;
        for (std::size_t i = 0; i < v.size(); ++i) y[i] += 0.7 * v[i];
        return y;
      }));
  // no weight: the last dim
  EXPECT_TRUE(grad_check(
      rng, {{4, 3}, {4, 3}}, [](auto& t) { return add_rms_norm(t[0], t[1]).normed; },
      [](const std::vector<HostT>& h) {
        std::vector<double> v(h[0].size());
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = h[0][i] + h[1][i];
        return rms_ref(v, 3, {}).y;
      }));
}

TEST(AddRmsNorm, HalfStorageViewsNanAndErrors) {
  GLT_RNG(rng);
  auto xv = uniform(rng, 5 * 12, -2, 2), rv = uniform(rng, 5 * 12, -2, 2), wv = uniform(rng, 12, 0.5, 1.5);
  // f16 x and residual, f16 weight: both outputs f16
  Tensor xh = up(xv, {5, 12}).to(DType::f16), rh = up(rv, {5, 12}).to(DType::f16), wh = up(wv, {12}).to(DType::f16);
  auto o = add_rms_norm(xh, rh, wh);
  EXPECT_EQ(o.sum.dtype(), DType::f16);
  EXPECT_EQ(o.normed.dtype(), DType::f16);
  auto xd = host_of(xh), rd = host_of(rh);
  std::vector<double> v(xd.size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = xd[i] + rd[i];
  EXPECT_TRUE(close(o.sum.to(DType::f32).to_vector(), v, 1e-3, 1e-3));
  // the kernel normalizes the f32 sum (not the rounded f16 one)
  EXPECT_TRUE(close(o.normed.to(DType::f32).to_vector(), rms_ref(v, 12, host_of(wh)).y, 2e-3, 2e-3));
  // views: residual transposed
  Tensor rt = up(rv, {12, 5}).t();
  auto o2 = add_rms_norm(up(xv, {5, 12}), rt);
  auto rtv = gather_view(rv, rt);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = double(xv[i]) + rtv[i];
  EXPECT_TRUE(close(o2.normed.to_vector(), rms_ref(v, 12, {}).y, 1e-4, 1e-4));
  // NaN in the residual: its row of both outputs
  rv[2 * 12 + 3] = kNaN;
  auto o3 = add_rms_norm(up(xv, {5, 12}), up(rv, {5, 12}));
  auto s3 = o3.sum.to_vector(), n3 = o3.normed.to_vector();
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(std::isnan(s3[24 + i]), i == 3);
    EXPECT_TRUE(std::isnan(n3[24 + i]));
    EXPECT_TRUE(std::isfinite(n3[i]) && std::isfinite(n3[36 + i]));
  }
  // errors
  Tensor a = ones(device(), {2, 4});
  EXPECT_THROW(add_rms_norm(a, ones(device(), {2, 3})), ShapeError);
  EXPECT_THROW(add_rms_norm(a, ones(device(), {1, 4})), ShapeError);  // no broadcasting
  EXPECT_THROW(add_rms_norm(a, a, ones(device(), {3})), ShapeError);
  EXPECT_THROW(add_rms_norm(a, a, ones(device(), {3, 2, 4})), ShapeError);
  EXPECT_THROW(add_rms_norm(a, a, ones(device(), {4}).to(DType::i32)), DTypeError);
  EXPECT_THROW(add_rms_norm(a, a, Tensor(), -1.0), ValueError);
  // empty
  auto e = add_rms_norm(zeros(device(), {0, 4}), zeros(device(), {0, 4}), ones(device(), {4}));
  EXPECT_EQ(e.sum.shape(), (Shape{0, 4}));
  EXPECT_EQ(e.normed.shape(), (Shape{0, 4}));
}

// ---------------------------------------------------------------------------------------------
// rope

TEST(Rope, LayoutsRotaryDimsAndPositions) {
  GLT_RNG(rng);
  const std::int64_t B = 2, H = 3, T = 5;
  // (D, R): R = 0 means D; odd head dims with pass-through dims
  for (const auto& [D, R] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {2, 0}, {8, 0}, {8, 2}, {8, 6}, {10, 10}, {10, 4}, {7, 4}, {7, 6}})
    for (bool inter : {false, true}) {
      {
        const std::int64_t Re = R == 0 ? D : R;
        SCOPED_TRACE("D " + std::to_string(D) + " R " + std::to_string(R) + (inter ? " interleaved" : " half"));
        const Shape s = {B, H, T, D};
        auto xv = uniform(rng, numel_of(s), -2, 2), gv = uniform(rng, numel_of(s));
        Tensor x = up(xv, s);
        requires_grad_(x);
        RopeOptions o;
        o.rotary_dim = R;
        o.interleaved = inter;
        o.offset = 7;
        Tensor y = rope(x, o);
        backward(y, up(gv, s));
        auto pos = [&](std::int64_t row) { return 7 + row % T; };
        EXPECT_TRUE(close(y.to_vector(), rope_ref(to_double(xv), D, Re, inter, 10000.0, pos), 1e-5, 1e-5));
        // backward: the rotation by the negative angle
        EXPECT_TRUE(close(grad(x).to_vector(), rope_ref(to_double(gv), D, Re, inter, 10000.0, pos, -1), 1e-5, 1e-5));
      }
    }
}

TEST(Rope, ExplicitPositionsBaseAndLargePositions) {
  GLT_RNG(rng);
  const std::int64_t B = 2, H = 2, T = 6, D = 16;
  const Shape s = {B, H, T, D};
  auto xv = uniform(rng, numel_of(s), -1, 1);
  Tensor x = up(xv, s);
  // [T] positions (with an offset added), a different base
  std::vector<float> p1 = {3, 0, 9, 2, 100, 41};
  RopeOptions o;
  o.base = 500000.0;
  o.offset = 2;
  Tensor y1 = rope(x, up(p1, {T}).to(DType::i32), o);
  EXPECT_TRUE(close(y1.to_vector(),
                    rope_ref(to_double(xv), D, D, false, 500000.0, [&](std::int64_t r) { return 2 + p1[r % T]; }), 1e-5,
                    1e-5));
  // [B, T] positions: one row per batch (HF position_ids), uint8
  std::vector<float> p2 = {0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15};
  Tensor y2 = rope(x, up(p2, {B, T}).to(DType::u8), RopeOptions{0, true, 10000.0, 0});
  EXPECT_TRUE(
      close(y2.to_vector(),
            rope_ref(to_double(xv), D, D, true, 10000.0, [&](std::int64_t r) { return p2[(r / (H * T)) * T + r % T]; }),
            1e-5, 1e-5));
  // the same as the offset form where the positions are offset + t
  std::vector<float> p3(T);
  for (std::int64_t t = 0; t < T; ++t) p3[t] = 30 + t;
  EXPECT_EQ(rope(x, up(p3, {T}).to(DType::i32)).to_vector(), rope(x, RopeOptions{0, false, 10000.0, 30}).to_vector());
  // decoding far into a context: angles in f32 lose p * 2^-24 radians (PyTorch's f32 caches too)
  const std::int64_t far = 100000;
  Tensor y3 = rope(x, RopeOptions{0, false, 10000.0, far});
  EXPECT_TRUE(close(y3.to_vector(),
                    rope_ref(to_double(xv), D, D, false, 10000.0, [&](std::int64_t r) { return far + r % T; }), 0,
                    3e-2));
  // rank 2: [T, D]
  Tensor y4 = rope(x.reshape({B * H * T, D}).narrow(0, 0, T));
  EXPECT_TRUE(close(y4.to_vector(),
                    rope_ref(std::vector<double>(xv.begin(), xv.begin() + T * D), D, D, false, 10000.0,
                             [](std::int64_t r) { return r; }),
                    1e-5, 1e-5));
}

TEST(Rope, ViewsHalfStorageNanAndFiniteDifferences) {
  GLT_RNG(rng);
  // [B, T, H, D] storage read as [B, H, T, D] (attention's layout after the projection)
  const std::int64_t B = 2, T = 4, H = 3, D = 6;
  auto bv = uniform(rng, B * T * H * D, -1, 1);
  Tensor base = up(bv, {B, T, H, D});
  Tensor x = base.transpose(1, 2);
  ASSERT_FALSE(x.is_contiguous());
  auto xv = gather_view(bv, x);
  auto pos = [&](std::int64_t r) { return r % T; };
  EXPECT_TRUE(close(rope(x).to_vector(), rope_ref(to_double(xv), D, D, false, 10000.0, pos), 1e-5, 1e-5));
  // the head dim strided: [B, H, D, T] storage read as [B, H, T, D]
  {
    auto dv = uniform(rng, 2 * 3 * 8 * 5, -1, 1);
    Tensor xs = up(dv, {2, 3, 8, 5}).transpose(2, 3);
    EXPECT_TRUE(
        close(rope(xs, RopeOptions{6, false, 10000.0, 0}).to_vector(),
              rope_ref(to_double(gather_view(dv, xs)), 8, 6, false, 10000.0, [](std::int64_t r) { return r % 5; }),
              1e-5, 1e-5));
  }
  // k of a fused projection: qkv [B, T, 3, H, D], k = qkv[:, :, 1].transpose(1, 2) (an offset and
  // strides on every dim), with the gradient arriving as a transposed view too
  {
    auto qv = uniform(rng, B * T * 3 * H * D, -1, 1), sv = uniform(rng, B * T * H * D);
    Tensor qkv = up(qv, {B, T, 3, H, D});
    requires_grad_(qkv);
    Tensor k = qkv.select(2, 1).transpose(1, 2);
    ASSERT_NE(k.offset(), 0);
    const auto kv = to_double(gather_view(qv, k));
    RopeOptions o{4, true, 10000.0, 5};
    Tensor yk = rope(k, o);
    auto p5 = [&](std::int64_t r) { return 5 + r % T; };
    EXPECT_TRUE(close(yk.to_vector(), rope_ref(kv, D, 4, true, 10000.0, p5), 1e-5, 1e-5));
    // seed given as [B, T, H, D]: rope's gradient is its transposed view
    backward(yk.transpose(1, 2), up(sv, {B, T, H, D}));
    Tensor gk = grad(qkv).select(2, 1).transpose(1, 2);
    const auto gy = to_double(gather_view(sv, up(sv, {B, T, H, D}).transpose(1, 2)));
    EXPECT_TRUE(close(gk.contiguous().to_vector(), rope_ref(gy, D, 4, true, 10000.0, p5, -1), 1e-5, 1e-5));
    // q and v got zero gradients
    auto gq = grad(qkv).select(2, 0).contiguous().to_vector();
    EXPECT_EQ(gq, std::vector<float>(gq.size(), 0.f));
  }
  // f16 / bf16 storage
  for (DType dt : {DType::f16, DType::bf16}) {
    Tensor xh = x.to(dt);
    Tensor yh = rope(xh, RopeOptions{4, true, 10000.0, 0});
    EXPECT_EQ(yh.dtype(), dt);
    EXPECT_TRUE(close(yh.to(DType::f32).to_vector(), rope_ref(host_of(xh), D, 4, true, 10000.0, pos),
                      dt == DType::f16 ? 2e-3 : 1e-2, 2e-3))
        << dtype_name(dt);
  }
  // NaN reaches its pair partner only
  auto nv = uniform(rng, 2 * 8);
  nv[8 + 1] = kNaN;  // row 1, element 1: half-split partner 5, interleaved partner 0
  for (bool inter : {false, true}) {
    auto y = rope(up(nv, {2, 8}), RopeOptions{0, inter, 10000.0, 0}).to_vector();
    const int partner = inter ? 0 : 5;
    for (int i = 0; i < 16; ++i) EXPECT_EQ(std::isnan(y[i]), i == 9 || i == 8 + partner) << i;
  }
  // finite differences, rotary dim below the head dim
  for (bool inter : {false, true})
    EXPECT_TRUE(grad_check(
        rng, {{2, 3, 6}},
        [inter](auto& t) {
          return rope(t[0], RopeOptions{4, inter, 100.0, 3});
        },
        [inter](const std::vector<HostT>& h) {
          return rope_ref(h[0].v, 6, 4, inter, 100.0, [](std::int64_t r) { return 3 + r % 3; });
        }));
}

TEST(Rope, EmptyShapesAndErrors) {
  for (const Shape& s : std::vector<Shape>{{2, 0, 8}, {0, 3, 4}, {2, 3, 0}}) {
    Tensor x = zeros(device(), s);
    requires_grad_(x);
    RopeOptions o;
    Tensor y = rope(x, o);
    EXPECT_EQ(y.shape(), s);
    backward(sum(y));
    EXPECT_EQ(grad(x).shape(), s);
  }
  Tensor x = ones(device(), {2, 3, 8});
  EXPECT_THROW(rope(ones(device(), {8})), ShapeError);
  EXPECT_THROW(rope(x.to(DType::i32)), DTypeError);
  EXPECT_THROW(rope(x, RopeOptions{3}), ValueError);
  EXPECT_THROW(rope(x, RopeOptions{10}), ValueError);
  EXPECT_THROW(rope(x, RopeOptions{-2}), ValueError);
  EXPECT_THROW(rope(x, RopeOptions{0, false, 0.0}), ValueError);
  EXPECT_THROW(rope(x, RopeOptions{0, false, 10000.0, std::int64_t{1} << 40}), ValueError);
  EXPECT_THROW(rope(x, ones(device(), {3})), DTypeError);  // float positions
  EXPECT_THROW(rope(x, ones(device(), {4}).to(DType::i32)), ShapeError);
  EXPECT_THROW(rope(x, ones(device(), {3, 3}).to(DType::i32)), ShapeError);
  EXPECT_THROW(rope(ones(device(), {3, 8}), ones(device(), {1, 3}).to(DType::i32)), ShapeError);
  try {
    rope(x, RopeOptions{10});
  } catch (const ValueError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("rope"), std::string::npos) << m;
    EXPECT_NE(m.find("[2, 3, 8]"), std::string::npos) << m;
  }
}

// ---------------------------------------------------------------------------------------------
// swiglu / geglu

TEST(GatedUnits, FusedAndSplitFormsWithGradients) {
  GLT_RNG(rng);
  for (GluActivation a : kActs)
    for (const Shape& s : std::vector<Shape>{{3, 10}, {2, 3, 14}, {1, 2}, {5, 66}}) {
      SCOPED_TRACE(std::string(act_label(a)) + " " + to_string(s));
      const std::int64_t F = s.back() / 2;
      Shape hs = s;
      hs.back() = F;
      // fused [..., 2F]: forward and finite differences
      EXPECT_TRUE(grad_check(
          rng, {s}, [a](auto& t) { return gated_linear_unit(t[0], a); },
          [a, F](const std::vector<HostT>& h) { return glu_ref_fused(h[0].v, F, a); }, -3, 3));
      // split gate, up
      EXPECT_TRUE(grad_check(
          rng, {hs, hs}, [a](auto& t) { return gated_linear_unit(t[0], t[1], a); },
          [a](const std::vector<HostT>& h) {
            std::vector<double> y;
            for (std::size_t i = 0; i < h[0].size(); ++i) y.push_back(act_ref(a, h[0][i]) * h[1][i]);
            return y;
          },
          -3, 3));
    }
  // the named forms
  auto gv = uniform(rng, 4 * 6, -3, 3);
  Tensor gu = up(gv, {4, 6});
  EXPECT_EQ(swiglu(gu).to_vector(), gated_linear_unit(gu, GluActivation::silu).to_vector());
  EXPECT_EQ(geglu(gu).to_vector(), gated_linear_unit(gu, GluActivation::gelu).to_vector());
  EXPECT_EQ(geglu(gu, true).to_vector(), gated_linear_unit(gu, GluActivation::gelu_tanh).to_vector());
  EXPECT_TRUE(close(swiglu(gu).to_vector(), glu_ref_fused(to_double(gv), 3, GluActivation::silu), 1e-5, 1e-6));
  EXPECT_TRUE(close(geglu(gu).to_vector(), glu_ref_fused(to_double(gv), 3, GluActivation::gelu), 1e-5, 1e-6));
  EXPECT_TRUE(
      close(geglu(gu, true).to_vector(), glu_ref_fused(to_double(gv), 3, GluActivation::gelu_tanh), 1e-5, 1e-6));
}

TEST(GatedUnits, OnlyOneInputRequiresGradAndViews) {
  GLT_RNG(rng);
  auto gv = uniform(rng, 5 * 8, -3, 3), uv = uniform(rng, 5 * 8), yv = uniform(rng, 5 * 8);
  Tensor g = up(gv, {5, 8}), u = up(uv, {5, 8});
  requires_grad_(u);
  Tensor y = swiglu(g, u);
  backward(y, up(yv, {5, 8}));
  std::vector<double> du;
  for (std::size_t i = 0; i < gv.size(); ++i) du.push_back(yv[i] * act_ref(GluActivation::silu, gv[i]));
  EXPECT_TRUE(close(grad(u).to_vector(), du, 1e-5, 1e-6));
  EXPECT_FALSE(grad(g).defined());
  // narrowed halves of a [rows, 2F] tensor (non-contiguous): the same as the fused form
  auto guv = uniform(rng, 6 * 10, -3, 3);
  Tensor gu = up(guv, {6, 10});
  Tensor gate = gu.narrow(1, 0, 5), upv = gu.narrow(1, 5, 5);
  ASSERT_FALSE(gate.is_contiguous());
  EXPECT_TRUE(close(geglu(gate, upv).to_vector(), glu_ref_fused(to_double(guv), 5, GluActivation::gelu), 1e-5, 1e-6));
  // a transposed fused input
  Tensor gut = up(guv, {10, 6}).t();
  EXPECT_TRUE(close(swiglu(gut).to_vector(), glu_ref_fused(to_double(gather_view(guv, gut)), 5, GluActivation::silu),
                    1e-5, 1e-6));
}

TEST(GatedUnits, HalfStorageNanInfAndLargeGrids) {
  GLT_RNG(rng);
  auto gv = uniform(rng, 4 * 16, -4, 4);
  for (DType dt : {DType::f16, DType::bf16}) {
    Tensor gu = up(gv, {4, 16}).to(dt);
    requires_grad_(gu);
    Tensor y = swiglu(gu);
    EXPECT_EQ(y.dtype(), dt);
    EXPECT_TRUE(close(y.to(DType::f32).to_vector(), glu_ref_fused(host_of(gu), 8, GluActivation::silu),
                      dt == DType::f16 ? 2e-3 : 1e-2, 2e-3))
        << dtype_name(dt);
    backward(sum(y));
    EXPECT_EQ(grad(gu).dtype(), dt);
  }
  // NaN / Inf: NaN gate or up -> NaN; silu(+Inf) * 1 = +Inf; silu(-Inf) * u: -Inf / Inf = NaN as
  // x / (1 + exp(-x)) (PyTorch's formula); gelu(-Inf) = -Inf * 0 = NaN, gelu(+Inf) = +Inf
  std::vector<float> gate = {kNaN, 1, kInf, -kInf, 2, -30};
  std::vector<float> upv = {1, kNaN, 1, 1, kInf, 2};
  for (GluActivation a : kActs) {
    SCOPED_TRACE(act_label(a));
    auto y = gated_linear_unit(up(gate, {6}), up(upv, {6}), a).to_vector();
    std::vector<double> r;
    for (int i = 0; i < 6; ++i) r.push_back(act_ref(a, gate[i]) * upv[i]);
    EXPECT_TRUE(close(y, r, 1e-5, 1e-6));
  }
  // more than one dispatch's worth of workgroups (65535 x 64 invocations on llvmpipe)
  const std::int64_t n = 65536 * 64 + 37;
  auto big = uniform(rng, 2 * n, -3, 3);
  auto yb = swiglu(up(big, {n, 2})).to_vector();
  auto rb = glu_ref_fused(to_double(big), 1, GluActivation::silu);
  EXPECT_TRUE(close(yb, rb, 1e-5, 1e-6));
}

TEST(GatedUnits, EmptyShapesAndErrors) {
  for (const Shape& s : std::vector<Shape>{{0, 8}, {3, 0}}) {
    Tensor gu = zeros(device(), s);
    requires_grad_(gu);
    Tensor y = swiglu(gu);
    Shape hs = s;
    hs.back() /= 2;
    EXPECT_EQ(y.shape(), hs);
    backward(sum(y));
    EXPECT_EQ(grad(gu).shape(), s);
  }
  EXPECT_THROW(swiglu(ones(device(), {3, 5})), ShapeError);
  EXPECT_THROW(swiglu(ones(device(), {3, 4}), ones(device(), {3, 2})), ShapeError);
  EXPECT_THROW(swiglu(ones(device(), {3, 4}), ones(device(), {4})), ShapeError);  // no broadcasting
  EXPECT_THROW(swiglu(ones(device(), {3, 4}).to(DType::i32)), DTypeError);
  EXPECT_THROW(geglu(ones(device(), {2}), ones(device(), {2}).to(DType::i32)), DTypeError);
  try {
    geglu(ones(device(), {3, 5}), true);
  } catch (const ShapeError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("geglu (tanh)"), std::string::npos) << m;
    EXPECT_NE(m.find("[3, 5]"), std::string::npos) << m;
  }
}
