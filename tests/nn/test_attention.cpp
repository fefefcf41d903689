// scaled_dot_product_attention's fused kernels (glsl/nn/attention_flash.comp) against a float64
// reference, forward and the three gradients: each mask kind (bool, additive, key padding,
// broadcast), causal with L != S both ways, GQA, head dims 1 to 256, empty batch / L / S, S = 1,
// NaN and -inf in additive masks, transposed views, f16 storage, keys and query rows split past
// a lowered loop limit, every tiling the planner can choose, dropout against the composite path
// on the same mask, finite differences through grad_check; the composite path as the reference.
// Tolerances (|got - ref| <= atol + rtol |ref|): 1e-4 forward, 1e-3 gradients (sums over rows or
// keys in f32); f16 storage against the reference on the rounded inputs, outputs rounded to f16
// (2e-3 relative).
#include <cmath>
#include <limits>

#include "gltensor/autograd.hpp"
#include "gltensor/nn_functional.hpp"
#include "grad_check.hpp"
#include "nn/attention_dropout.hpp"
#include "nn/attention_plan.hpp"

using namespace gltensor;
using namespace glt_test;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

enum class MaskKind { none, bool_full, add_full, key_padding, add_broadcast, add_special };

struct Case {
  int B, H, Hkv, L, S, E, Ev;
  MaskKind mask = MaskKind::none;
  bool causal = false;
  bool transposed = false;  // q, k, v as [B, T, H, E].transpose(1, 2)
  DType dtype = DType::f32;
  double scale = 0;
  std::string what() const {
    return std::to_string(B) + "x" + std::to_string(H) + "/" + std::to_string(Hkv) + " L" + std::to_string(L) + " S" +
           std::to_string(S) + " E" + std::to_string(E) + " Ev" + std::to_string(Ev) + " mask" +
           std::to_string(static_cast<int>(mask)) + (causal ? " causal" : "") + (transposed ? " transposed" : "") +
           (dtype == DType::f16 ? " f16" : "");
  }
};

// float64 reference: q [B, H, L, E], k [B, Hkv, S, E], v [B, Hkv, S, Ev], bias [B, H, L, S]
// (0, -inf or the additive mask; empty: none), Z [B, H, L, S] dropout scales (empty: none),
// gy [B, H, L, Ev]. Fills out and, with gy, dq, dk, dv.
struct Ref {
  std::vector<double> out, dq, dk, dv;
};
Ref reference(const Case& c, const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
              const std::vector<double>& bias, const std::vector<double>& Z, const std::vector<double>* gy) {
  const int B = c.B, H = c.H, G = c.H / c.Hkv, L = c.L, S = c.S, E = c.E, Ev = c.Ev;
  const double sc = c.scale != 0 ? c.scale : 1 / std::sqrt(double(E));
  Ref r;
  r.out.assign(std::size_t(B) * H * L * Ev, 0.0);
  if (gy)
    r.dq.assign(std::size_t(B) * H * L * E, 0.0), r.dk.assign(std::size_t(B) * c.Hkv * S * E, 0.0),
        r.dv.assign(std::size_t(B) * c.Hkv * S * Ev, 0.0);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      const int hk = h / G;
      for (int i = 0; i < L; ++i) {
        std::vector<double> s(S), p(S), z(S, 1.0);
        double m = -kInf;
        const std::size_t row = (std::size_t(b) * H + h) * L + i;
        for (int j = 0; j < S; ++j) {
          double d = 0;
          for (int e = 0; e < E; ++e) d += q[row * E + e] * k[((std::size_t(b) * c.Hkv + hk) * S + j) * E + e];
          s[j] = d * sc + (bias.empty() ? 0.0 : bias[row * S + j]);
          if (c.causal && j > i) s[j] = -kInf;
          if (!Z.empty()) z[j] = Z[row * S + j];
          m = std::isnan(s[j]) || std::isnan(m) ? NAN : std::max(m, s[j]);
        }
        double den = 0;
        for (int j = 0; j < S; ++j) den += (p[j] = std::exp(s[j] - m));
        for (int j = 0; j < S; ++j) p[j] /= den;
        for (int e = 0; e < Ev; ++e) {
          double acc = 0;
          for (int j = 0; j < S; ++j) acc += p[j] * z[j] * v[((std::size_t(b) * c.Hkv + hk) * S + j) * Ev + e];
          r.out[row * Ev + e] = S ? acc : 0.0;
        }
        if (!gy) continue;
        bool zero = true;  // a row without output gradient adds nothing (not even a NaN row's 0 * NaN)
        for (int e = 0; e < Ev; ++e) zero = zero && (*gy)[row * Ev + e] == 0;
        if (zero) continue;
        std::vector<double> dp(S);
        double D = 0;
        for (int j = 0; j < S; ++j) {
          double d = 0;
          for (int e = 0; e < Ev; ++e) d += (*gy)[row * Ev + e] * v[((std::size_t(b) * c.Hkv + hk) * S + j) * Ev + e];
          dp[j] = d * z[j];
          D += p[j] * dp[j];
        }
        for (int j = 0; j < S; ++j) {
          const double ds = p[j] * (dp[j] - D);
          const std::size_t kr = (std::size_t(b) * c.Hkv + hk) * S + j;
          for (int e = 0; e < E; ++e) {
            r.dq[row * E + e] += sc * ds * k[kr * E + e];
            r.dk[kr * E + e] += sc * ds * q[row * E + e];
          }
          for (int e = 0; e < Ev; ++e) r.dv[kr * Ev + e] += p[j] * z[j] * (*gy)[row * Ev + e];
        }
      }
    }
  return r;
}

std::vector<double> host(const Tensor& t) { return to_double(t.to(DType::f32).contiguous().to_vector()); }

// [B, H, T, D] data as the case lays it out (transposed: a [B, T, H, D] tensor's transpose(1, 2)).
Tensor make(const std::vector<float>& v, int B, int H, int T, int D, const Case& c) {
  if (!c.transposed) return Tensor::from_host(device(), v, {B, H, T, D}).to(c.dtype);
  std::vector<float> t(v.size());
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < T; ++i)
        for (int d = 0; d < D; ++d)
          t[((std::size_t(b) * T + i) * H + h) * D + d] = v[((std::size_t(b) * H + h) * T + i) * D + d];
  return Tensor::from_host(device(), t, {B, T, H, D}).to(c.dtype).transpose(1, 2);
}

struct Inputs {
  Tensor q, k, v, mask, gy;
  std::vector<double> hq, hk, hv, bias, hgy;
};

Inputs inputs(std::mt19937_64& rng, const Case& c) {
  Inputs in;
  auto q = uniform(rng, std::size_t(c.B) * c.H * c.L * c.E, -2, 2);
  auto k = uniform(rng, std::size_t(c.B) * c.Hkv * c.S * c.E, -2, 2);
  auto v = uniform(rng, std::size_t(c.B) * c.Hkv * c.S * c.Ev);
  auto gy = uniform(rng, std::size_t(c.B) * c.H * c.L * c.Ev);
  in.q = make(q, c.B, c.H, c.L, c.E, c);
  in.k = make(k, c.B, c.Hkv, c.S, c.E, c);
  in.v = make(v, c.B, c.Hkv, c.S, c.Ev, c);
  in.gy = Tensor::from_host(device(), gy, {c.B, c.H, c.L, c.Ev});
  in.hq = host(in.q), in.hk = host(in.k), in.hv = host(in.v), in.hgy = to_double(gy);
  const std::size_t n = std::size_t(c.B) * c.H * c.L * c.S;
  const std::uint64_t LS = std::uint64_t(c.L) * c.S;
  switch (c.mask) {
    case MaskKind::none:
      break;
    case MaskKind::bool_full: {
      std::vector<std::uint8_t> m(n);
      in.bias.resize(n);
      for (std::size_t e = 0; e < n; ++e) {
        // keep about 70%, and always key 0 of every row (no fully masked rows here)
        m[e] = (e % c.S == 0) || rng() % 10 < 7;
        in.bias[e] = m[e] ? 0.0 : -kInf;
      }
      in.mask = Tensor::from_host(device(), m, {c.B, c.H, c.L, c.S}, DType::bool_);
      break;
    }
    case MaskKind::add_full:
    case MaskKind::add_special: {
      auto m = uniform(rng, n, -3, 3);
      if (c.mask == MaskKind::add_special) {
        // -inf sprinkled, row 1 of batch entry 0 fully -inf (NaN row), a NaN in row 2
        for (std::size_t e = 0; e < n; e += 5) m[e] = -INFINITY;
        if (c.L > 1)
          for (int j = 0; j < c.S; ++j) m[std::size_t(c.S) + j] = -INFINITY;
        if (c.L > 2) m[2 * std::size_t(c.S) + 1] = NAN;
      }
      in.bias = to_double(m);
      in.mask = Tensor::from_host(device(), m, {c.B, c.H, c.L, c.S});
      break;
    }
    case MaskKind::key_padding: {
      // [B, 1, 1, S]: batch entry b keeps its first S - b keys (at least 1)
      std::vector<std::uint8_t> m(std::size_t(c.B) * c.S);
      for (int b = 0; b < c.B; ++b)
        for (int j = 0; j < c.S; ++j) m[std::size_t(b) * c.S + j] = j < std::max(1, c.S - b);
      in.mask = Tensor::from_host(device(), m, {c.B, 1, 1, c.S}, DType::bool_);
      in.bias.resize(n);
      for (std::size_t e = 0; e < n; ++e) in.bias[e] = m[(e / (LS * c.H)) * c.S + e % c.S] ? 0.0 : -kInf;
      break;
    }
    case MaskKind::add_broadcast: {
      auto m = uniform(rng, LS, -2, 2);
      in.mask = Tensor::from_host(device(), m, {c.L, c.S});
      in.bias.resize(n);
      for (std::size_t e = 0; e < n; ++e) in.bias[e] = m[e % LS];
      break;
    }
  }
  return in;
}

AttentionOptions options(const Case& c, const Tensor& mask) {
  AttentionOptions o;
  o.attn_mask = mask;
  o.is_causal = c.causal;
  o.scale = c.scale;
  o.enable_gqa = c.H != c.Hkv;
  return o;
}

// Forward and gradients of one case against the reference.
void check(std::mt19937_64& rng, const Case& c, double gtol = 1e-3) {
  SCOPED_TRACE(c.what());
  Inputs in = inputs(rng, c);
  const Ref r = reference(c, in.hq, in.hk, in.hv, in.bias, {}, &in.hgy);
  // without gradients (the forward alone)
  const Tensor y0 = scaled_dot_product_attention(in.q, in.k, in.v, options(c, in.mask));
  const double ftol = c.dtype == DType::f32 ? 1e-4 : 2e-3;
  ASSERT_EQ(y0.shape(), (Shape{c.B, c.H, c.L, c.Ev}));
  EXPECT_TRUE(close(y0.to(DType::f32).to_vector(), r.out, ftol, ftol)) << "forward";
  // with gradients
  Tensor q = in.q, k = in.k, v = in.v;
  requires_grad_(q);
  requires_grad_(k);
  requires_grad_(v);
  const Tensor y = scaled_dot_product_attention(q, k, v, options(c, in.mask));
  EXPECT_TRUE(close(y.to(DType::f32).to_vector(), r.out, ftol, ftol)) << "forward (recording)";
  backward(y, in.gy.to(y.dtype()));
  const double tol = c.dtype == DType::f32 ? gtol : 1e-2;
  EXPECT_TRUE(close(grad(q).to(DType::f32).contiguous().to_vector(), r.dq, tol, tol)) << "dq";
  EXPECT_TRUE(close(grad(k).to(DType::f32).contiguous().to_vector(), r.dk, tol, tol)) << "dk";
  EXPECT_TRUE(close(grad(v).to(DType::f32).contiguous().to_vector(), r.dv, tol, tol)) << "dv";
}

// The flash kernels' tilings on this device: the default and every smaller tile cap.
std::vector<const char*> tile_caps() { return {nullptr, "16", "8", "4"}; }

}  // namespace

// Head dims 1 to 256 (the planner's tiles shrink with them), E != Ev, tile edges.
TEST(FlashAttention, HeadDims) {
  GLT_RNG(rng);
  for (const int d : {1, 63, 64, 65, 128, 256}) check(rng, {1, 2, 2, 37, 41, d, d});
  check(rng, {2, 1, 1, 20, 33, 256, 8});
  check(rng, {1, 1, 1, 9, 70, 5, 200}, 2e-3);
}

// Each mask kind, with and without causal, L < S, L > S, L == S.
TEST(FlashAttention, Masks) {
  GLT_RNG(rng);
  for (const MaskKind m :
       {MaskKind::none, MaskKind::bool_full, MaskKind::add_full, MaskKind::key_padding, MaskKind::add_broadcast})
    for (const bool causal : {false, true})
      for (const auto& [L, S] : std::vector<std::pair<int, int>>{{13, 29}, {29, 13}, {40, 40}}) {
        Case c{3, 2, 2, L, S, 16, 12, m, causal};
        check(rng, c);
      }
}

// -inf and NaN in an additive mask: a fully -inf row gives NaN (as torch), a NaN gives a NaN
// row; the reference has NaN in the same rows. Gradients of the other rows are checked (the
// fused backward leaves the fully masked row's contribution at 0; see the header).
TEST(FlashAttention, InfAndNanInAdditiveMask) {
  GLT_RNG(rng);
  const Case c{1, 1, 1, 6, 9, 8, 8, MaskKind::add_special};
  Inputs in = inputs(rng, c);
  const Ref r = reference(c, in.hq, in.hk, in.hv, in.bias, {}, nullptr);
  for (const char* cap : tile_caps()) {
    ScopedEnv env("GLTENSOR_ATTENTION_TILE", cap);
    const auto y = scaled_dot_product_attention(in.q, in.k, in.v, options(c, in.mask)).to_vector();
    EXPECT_TRUE(close(y, r.out, 1e-4, 1e-4));
    for (int e = 0; e < 8; ++e) EXPECT_TRUE(std::isnan(y[8 + e]) && std::isnan(y[16 + e]));
  }
  // gradients without the NaN (a NaN row's gradients are NaN, as torch's), the fully masked
  // row's output gradient 0: finite, that row's dq 0
  std::vector<double> bias = in.bias;
  for (double& x : bias) x = std::isnan(x) ? 0.0 : x;
  std::vector<float> biasf(bias.begin(), bias.end());
  std::vector<double> gy = in.hgy;
  for (int e = 8; e < 16; ++e) gy[e] = 0;
  std::vector<float> gyf(gy.begin(), gy.end());
  const Ref rg = reference(c, in.hq, in.hk, in.hv, bias, {}, &gy);
  for (const char* cap : tile_caps()) {
    ScopedEnv env("GLTENSOR_ATTENTION_TILE", cap);
    Tensor q = in.q, k = in.k, v = in.v;
    requires_grad_(q);
    requires_grad_(k);
    requires_grad_(v);
    backward(scaled_dot_product_attention(q, k, v, options(c, Tensor::from_host(device(), biasf, {1, 1, 6, 9}))),
             Tensor::from_host(device(), gyf, {1, 1, 6, 8}));
    auto dq = grad(q).to_vector();
    EXPECT_TRUE(close(dq, rg.dq, 1e-3, 1e-3));
    for (int e = 8; e < 16; ++e) EXPECT_EQ(dq[e], 0.0f);
    EXPECT_TRUE(close(grad(k).to_vector(), rg.dk, 1e-3, 1e-3));
    EXPECT_TRUE(close(grad(v).to_vector(), rg.dv, 1e-3, 1e-3));
    for (Tensor* t : {&q, &k, &v}) zero_grad(*t);  // the same leaves next time
  }
}

// Grouped-query attention: Hq = 6 query heads on Hkv = 3 or 1 key/value heads, with a mask and
// causal; k/v gradients sum over each group.
TEST(FlashAttention, GroupedQuery) {
  GLT_RNG(rng);
  check(rng, {2, 6, 3, 17, 23, 16, 16});
  check(rng, {2, 6, 1, 23, 17, 32, 8, MaskKind::bool_full, true});
  check(rng, {1, 4, 2, 30, 30, 64, 64, MaskKind::key_padding, true});
  check(rng, {2, 4, 2, 11, 19, 8, 8, MaskKind::add_broadcast, false, true});  // transposed views
  // Hq not a multiple of Hkv
  const Tensor q = zeros(device(), {1, 3, 4, 8}), k = zeros(device(), {1, 2, 4, 8});
  AttentionOptions o;
  o.enable_gqa = true;
  EXPECT_THROW(scaled_dot_product_attention(q, k, k, o), ShapeError);
}

// Non-contiguous q/k/v ([B, T, H, E].transpose(1, 2)), f16 storage, an explicit scale.
TEST(FlashAttention, ViewsAndF16) {
  GLT_RNG(rng);
  check(rng, {2, 3, 3, 21, 34, 24, 24, MaskKind::bool_full, true, true});
  Case f16{2, 2, 2, 19, 27, 32, 16, MaskKind::add_full, true, false, DType::f16, 0.3};
  check(rng, f16);
  f16.transposed = true;
  check(rng, f16);
}

// Empty batch, L or S, S = 1, L = 1.
TEST(FlashAttention, EdgeShapes) {
  GLT_RNG(rng);
  check(rng, {0, 2, 2, 5, 6, 8, 8});
  check(rng, {1, 2, 2, 0, 6, 8, 8, MaskKind::add_full});
  check(rng, {1, 2, 2, 5, 0, 8, 8});
  check(rng, {2, 2, 2, 7, 1, 8, 8, MaskKind::bool_full, true});
  check(rng, {2, 2, 1, 1, 9, 8, 3, MaskKind::key_padding});
}

// Every tiling the planner can choose on this device (tile caps 16, 8, 4; 64 or 32 query rows
// per workgroup), with a mask, causal and GQA; small head dims (each tiling compiles its own
// programs; HeadDims covers the wide ones in the default tiling).
TEST(FlashAttention, EveryTiling) {
  GLT_RNG(rng);
  for (const char* cap : tile_caps())
    for (const char* bq : {static_cast<const char*>(nullptr), "32"}) {
      ScopedEnv e1("GLTENSOR_ATTENTION_TILE", cap);
      ScopedEnv e2("GLTENSOR_ATTENTION_BQ", bq);
      SCOPED_TRACE(std::string("tile cap ") + (cap ? cap : "none") + (bq ? " BQ 32" : ""));
      check(rng, {1, 4, 2, 70, 45, 20, 12, MaskKind::bool_full, true});
    }
}

// Long key sequences and query rows past a lowered loop limit: the forward and dQ split the
// keys, dK/dV the query rows, into chunks; with masks, causal (the chunks' rows with no key) and
// dropout-free; and an SSBO limit small enough to split the forward's partials by query rows.
TEST(FlashAttention, SplitPastTheLoopLimit) {
  GLT_RNG(rng);
  {
    ScopedLoopLimit limit(3000);
    check(rng, {1, 2, 1, 150, 300, 16, 16, MaskKind::bool_full, true});
    check(rng, {1, 1, 1, 300, 150, 16, 8, MaskKind::add_full});
    check(rng, {2, 1, 1, 64, 260, 64, 64, MaskKind::key_padding, true});
  }
  {
    // chunks of 64 keys: partials 5 x 100 rows x 10 floats (20000 bytes) in blocks of 60 rows
    // (the backward's outputs do not fit either: the composite path differentiates)
    ScopedLoopLimit limit(600);
    ScopedSsboLimit ssbo(12000);
    check(rng, {1, 1, 1, 100, 300, 8, 8, MaskKind::key_padding, true});
  }
  // one tile past the limit: the composite path takes over (still correct)
  ScopedLoopLimit tiny(40);
  check(rng, {1, 1, 1, 9, 10, 16, 16, MaskKind::bool_full, true});
}

// The composite path (GLTENSOR_ATTENTION=composite) agrees with the fused kernels: forward and
// gradients, with masks, causal, GQA.
TEST(FlashAttention, CompositeAgrees) {
  GLT_RNG(rng);
  ScopedEnv env("GLTENSOR_ATTENTION", "composite");
  check(rng, {2, 4, 2, 13, 17, 8, 8, MaskKind::bool_full, true});
  check(rng, {1, 2, 2, 9, 12, 300, 4, MaskKind::add_full});  // E past the fused kernels' 256
}

// Finite differences (float64) of the reference against the fused gradients.
TEST(FlashAttention, FiniteDifferences) {
  GLT_RNG(rng);
  const Case c{1, 2, 1, 5, 7, 4, 3, MaskKind::none, true};
  EXPECT_TRUE(grad_check(
      rng, {{1, 2, 5, 4}, {1, 1, 7, 4}, {1, 1, 7, 3}},
      [&](auto& t) {
        AttentionOptions o;
        o.is_causal = true;
        o.enable_gqa = true;
        return scaled_dot_product_attention(t[0], t[1], t[2], o);
      },
      [&](const std::vector<HostT>& x) { return reference(c, x[0].v, x[1].v, x[2].v, {}, {}, nullptr).out; }));
}

// Dropout: the fused forward and backward use the mask attention_dropout_keep regenerates (the
// float64 reference with that mask), agree with the composite path on the same generator
// state, and keep about 1 - p of the weights.
TEST(FlashAttention, Dropout) {
  GLT_RNG(rng);
  for (const auto& c : {Case{2, 4, 2, 33, 45, 16, 16, MaskKind::bool_full, true}, Case{1, 2, 2, 20, 70, 64, 32}}) {
    SCOPED_TRACE(c.what());
    Inputs in = inputs(rng, c);
    const double p = 0.3;
    const std::uint64_t seed = 1234;
    const Tensor Z = detail::attention_dropout_keep(device(), {c.B, c.H}, c.L, c.S, p, seed, 0);
    const auto z = host(Z);
    std::size_t kept = 0;
    for (double x : z) kept += x != 0;
    const double rate = double(kept) / double(z.size()), n = double(z.size());
    EXPECT_NEAR(rate, 1 - p, 4 * std::sqrt(p * (1 - p) / n)) << n << " draws";
    for (double x : z) ASSERT_TRUE(x == 0 || std::fabs(x - 1 / (1 - p)) < 1e-6);
    const Ref r = reference(c, in.hq, in.hk, in.hv, in.bias, z, &in.hgy);
    for (const bool composite : {false, true}) {
      ScopedEnv env("GLTENSOR_ATTENTION", composite ? "composite" : nullptr);
      Generator gen(seed);
      AttentionOptions o = options(c, in.mask);
      o.dropout_p = p;
      o.generator = &gen;
      Tensor q = in.q, k = in.k, v = in.v;
      requires_grad_(q);
      requires_grad_(k);
      requires_grad_(v);
      const Tensor y = scaled_dot_product_attention(q, k, v, o);
      EXPECT_EQ(gen.offset(), 1u);
      EXPECT_TRUE(close(y.to_vector(), r.out, 1e-4, 1e-4)) << (composite ? "composite" : "fused");
      backward(y, in.gy);
      EXPECT_TRUE(close(grad(q).to_vector(), r.dq, 1e-3, 1e-3)) << "dq " << composite;
      EXPECT_TRUE(close(grad(k).to_vector(), r.dk, 1e-3, 1e-3)) << "dk " << composite;
      EXPECT_TRUE(close(grad(v).to_vector(), r.dv, 1e-3, 1e-3)) << "dv " << composite;
      for (Tensor* t : {&q, &k, &v}) zero_grad(*t);  // the same leaves next time
    }
  }
  // a second draw uses another mask
  const Tensor a = detail::attention_dropout_keep(device(), {1}, 8, 8, 0.5, 1, 0),
               b = detail::attention_dropout_keep(device(), {1}, 8, 8, 0.5, 1, 1);
  EXPECT_NE(a.to_vector(), b.to_vector());
  AttentionOptions bad;
  bad.dropout_p = 0.5;
  const Tensor x = zeros(device(), {1, 2, 4});
  EXPECT_THROW(scaled_dot_product_attention(x, x, x, bad), ValueError);
  bad.dropout_p = 1.0;
  Generator g;
  bad.generator = &g;
  EXPECT_THROW(scaled_dot_product_attention(x, x, x, bad), ValueError);
}
