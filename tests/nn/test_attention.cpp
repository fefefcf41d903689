// scaled_dot_product_attention's fused kernels (glsl/nn/attention_flash.comp) against a float64
// reference, forward and the three gradients: each mask kind (bool, additive, key padding,
// broadcast), causal with L != S both ways, GQA (head dims 1 to 256: test_attention_head_dims), empty batch / L / S, S
// = 1, NaN and -inf in additive masks, transposed views, f16 storage, keys and query rows split past a lowered loop
// limit, every tiling the planner can choose, dropout against the composite path on the same mask, finite differences
// through grad_check; the composite path as the reference. Tolerances (|got - ref| <= atol + rtol |ref|): 1e-4 forward,
// 1e-3 gradients (sums over rows or keys in f32); f16 storage against the reference on the rounded inputs, outputs
// rounded to f16 (2e-3 relative).
#include "attention_ref.hpp"
#include "nn/attention_dropout.hpp"

using namespace gltensor;
using namespace glt_test;
using namespace attn_test;

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
  for (std::size_t e = 0; e < gy.size(); ++e)
    if (e >= 8 && e < 16) gy[e] = 0;  // (indexing 8..15 directly trips gcc's -Wstringop-overflow)
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
// causal; k/v gradients sum over each group. Head dims 16 and 12, as in Masks: the kernels bake
// them in (a program per pair), and the group's indexing does not depend on them (every head dim
// from 1 to 256, GQA included: test_attention_head_dims).
TEST(FlashAttention, GroupedQuery) {
  GLT_RNG(rng);
  check(rng, {2, 6, 3, 17, 23, 16, 12});
  check(rng, {2, 6, 1, 23, 17, 16, 12, MaskKind::bool_full, true});
  check(rng, {1, 4, 2, 30, 30, 16, 12, MaskKind::key_padding, true});
  check(rng, {2, 4, 2, 11, 19, 16, 12, MaskKind::add_broadcast, false, true});  // transposed views
  // Hq not a multiple of Hkv
  const Tensor q = zeros(device(), {1, 3, 4, 8}), k = zeros(device(), {1, 2, 4, 8});
  AttentionOptions o;
  o.enable_gqa = true;
  EXPECT_THROW(scaled_dot_product_attention(q, k, k, o), ShapeError);
}

// Non-contiguous q/k/v ([B, T, H, E].transpose(1, 2)), f16 storage, an explicit scale.
TEST(FlashAttention, ViewsAndF16) {
  GLT_RNG(rng);
  check(rng, {2, 3, 3, 21, 34, 16, 12, MaskKind::bool_full, true, true});
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

// The flash kernels' edge loads (attention_flash.comp's QUAD and rows, attention_tiled.comp's
// GEMM_TILE / ACC_TILE staging, the row statistics, the mask's bias) clamp their indices into the
// tensors and replace the values past them with selects: q, k, v, their gradient's gy and an
// additive mask are the leading part of storages whose next row (and the mask's next column) is
// NaN, odd head dims and lengths past no tile, forward and gradients against float64, in the
// tiled kernels and the one-row ones (GLTENSOR_ATTENTION=rows: attn_fwd, attn_dkv, attn_dq).
// Sabotage: QUAD's mix condition dropped, the tiled staging's, or a row clamp one short.
TEST(FlashAttention, EdgeLoadsPastTheEnd) {
  GLT_RNG(rng);
  for (const char* form : {"", "rows"})
    for (const auto& [E, Ev] : std::vector<std::pair<int, int>>{{5, 7}, {20, 12}}) {
      ScopedEnv env("GLTENSOR_ATTENTION", *form ? form : nullptr);
      const Case c{1, 2, 2, 37, 41, E, Ev};
      SCOPED_TRACE(c.what() + (*form ? " rows" : " tiled"));
      std::vector<double> hq, hk, hv, hgy;
      Tensor q = rows_before_nan(rng, c.H, c.L, E, hq), k = rows_before_nan(rng, c.H, c.S, E, hk),
             v = rows_before_nan(rng, c.H, c.S, Ev, hv);
      const Tensor gy = rows_before_nan(rng, c.H, c.L, Ev, hgy);
      auto mw = uniform(rng, std::size_t(c.L + 1) * (c.S + 1), -2, 2);
      std::vector<double> bias;
      for (int i = 0; i <= c.L; ++i)
        for (int j = 0; j <= c.S; ++j) {
          float& x = mw[std::size_t(i) * (c.S + 1) + j];
          if (i == c.L || j == c.S) x = NAN;
        }
      for (int h = 0; h < c.H; ++h)
        for (int i = 0; i < c.L; ++i)
          for (int j = 0; j < c.S; ++j) bias.push_back(mw[std::size_t(i) * (c.S + 1) + j]);
      const Tensor mask = Tensor::from_host(device(), mw, {c.L + 1, c.S + 1}).narrow(0, 0, c.L).narrow(1, 0, c.S);
      const Ref r = reference(c, hq, hk, hv, bias, {}, &hgy);
      requires_grad_(q);
      requires_grad_(k);
      requires_grad_(v);
      const Tensor y = scaled_dot_product_attention(q, k, v, options(c, mask));
      EXPECT_TRUE(close(y.to_vector(), r.out, 1e-4, 1e-4)) << "forward";
      backward(y, gy);
      EXPECT_TRUE(close(grad(q).contiguous().to_vector(), r.dq, 1e-3, 1e-3)) << "dq";
      EXPECT_TRUE(close(grad(k).contiguous().to_vector(), r.dk, 1e-3, 1e-3)) << "dk";
      EXPECT_TRUE(close(grad(v).contiguous().to_vector(), r.dv, 1e-3, 1e-3)) << "dv";
    }
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

// Finite differences (float64) of the reference against the fused gradients: causal GQA, and
// an additive [L, S] mask with a bool key-padding mask's -inf and an explicit scale. The first
// case at Masks' head dims 16 and 12 and flags (no mask, one batch dim): it runs Masks' programs
// (suite18: at head dims 4 and 3 it compiled 3 of its own, about 1.7 CPU-s of llvmpipe; one quad
// of head dim without a mask runs in test_attention_tiled's HeadDims); the second at one quad.
TEST(FlashAttention, FiniteDifferences) {
  GLT_RNG(rng);
  const Case c{1, 2, 1, 5, 7, 16, 12, MaskKind::none, true};
  EXPECT_TRUE(grad_check(
      rng, {{1, 2, 5, 16}, {1, 1, 7, 16}, {1, 1, 7, 12}},
      [&](auto& t) {
        AttentionOptions o;
        o.is_causal = true;
        o.enable_gqa = true;
        return scaled_dot_product_attention(t[0], t[1], t[2], o);
      },
      [&](const std::vector<HostT>& x) { return reference(c, x[0].v, x[1].v, x[2].v, {}, {}, nullptr).out; }));
  Case m{2, 2, 2, 6, 5, 3, 4, MaskKind::add_broadcast, false};
  m.scale = 0.7;
  auto mv = uniform(rng, 30, -2, 2);
  mv[4] = -INFINITY;  // row 0 never sees key 4
  std::vector<double> bias(2 * 2 * 30);
  for (std::size_t e = 0; e < bias.size(); ++e) bias[e] = mv[e % 30];
  const Tensor mask = Tensor::from_host(device(), mv, {6, 5});
  EXPECT_TRUE(grad_check(
      rng, {{2, 2, 6, 3}, {2, 2, 5, 3}, {2, 2, 5, 4}},
      [&](auto& t) {
        AttentionOptions o;
        o.attn_mask = mask;
        o.scale = 0.7;
        return scaled_dot_product_attention(t[0], t[1], t[2], o);
      },
      [&](const std::vector<HostT>& x) { return reference(m, x[0].v, x[1].v, x[2].v, bias, {}, nullptr).out; }));
}

// Typed errors: integer q, a mask neither bool nor float, shapes that do not fit.
TEST(FlashAttention, Errors) {
  const Tensor x = zeros(device(), {1, 2, 4, 8});
  AttentionOptions o;
  EXPECT_THROW(scaled_dot_product_attention(zeros(device(), {1, 2, 4, 8}, DType::i32), x, x, o), DTypeError);
  o.attn_mask = zeros(device(), {4, 4}, DType::i32);
  EXPECT_THROW(scaled_dot_product_attention(x, x, x, o), DTypeError);
  o.attn_mask = zeros(device(), {3, 4});
  EXPECT_THROW(scaled_dot_product_attention(x, x, x, o), ShapeError);
  EXPECT_THROW(scaled_dot_product_attention(x, zeros(device(), {1, 2, 4, 7}), x), ShapeError);
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
