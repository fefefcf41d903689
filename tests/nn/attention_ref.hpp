// The float64 attention reference and the case helpers of the attention tests
// (test_attention.cpp, test_attention_head_dims.cpp, test_nn.cpp's Attention.InferenceQuadsPastTheHeadDim).
#pragma once
#include <cmath>
#include <limits>

#include "gltensor/autograd.hpp"
#include "gltensor/nn_functional.hpp"
#include "grad_check.hpp"

namespace attn_test {
using namespace gltensor;
using namespace glt_test;

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
inline Ref reference(const Case& c, const std::vector<double>& q, const std::vector<double>& k,
                     const std::vector<double>& v, const std::vector<double>& bias, const std::vector<double>& Z,
                     const std::vector<double>* gy) {
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

inline std::vector<double> host(const Tensor& t) { return to_double(t.to(DType::f32).contiguous().to_vector()); }

// [B, H, T, D] data as the case lays it out (transposed: a [B, T, H, D] tensor's transpose(1, 2)).
inline Tensor make(const std::vector<float>& v, int B, int H, int T, int D, const Case& c) {
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

inline Inputs inputs(std::mt19937_64& rng, const Case& c) {
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

inline AttentionOptions options(const Case& c, const Tensor& mask) {
  AttentionOptions o;
  o.attn_mask = mask;
  o.is_causal = c.causal;
  o.scale = c.scale;
  o.enable_gqa = c.H != c.Hkv;
  return o;
}

// Forward and gradients of one case against the reference.
inline void check(std::mt19937_64& rng, const Case& c, double gtol = 1e-3) {
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
inline std::vector<const char*> tile_caps() { return {nullptr, "16", "8", "4"}; }

// [1, H, T, D] random values in [-2, 2): the leading T rows of a storage whose next row (after
// each head's last, past the tensor's end for the last head) is NaN; h gets them row-major.
inline Tensor rows_before_nan(std::mt19937_64& rng, int H, int T, int D, std::vector<double>& h) {
  auto w = uniform(rng, std::size_t(H) * (T + 1) * D, -2, 2);
  h.clear();
  for (int hd = 0; hd < H; ++hd)
    for (int i = 0; i <= T; ++i)
      for (int d = 0; d < D; ++d) {
        float& x = w[(std::size_t(hd) * (T + 1) + i) * D + d];
        if (i == T)
          x = NAN;
        else
          h.push_back(x);
      }
  return Tensor::from_host(device(), w, {1, H, T + 1, D}).narrow(2, 0, T);
}

}  // namespace attn_test
