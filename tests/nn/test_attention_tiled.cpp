// scaled_dot_product_attention's register-tiled flash forward (glsl/nn/attention_tiled.comp:
// 64 query rows x 64 keys per block) against the float64 reference: several row and key blocks
// (odd L and S past 64), head dims 1 to 256, causal, masks, GQA, dropout, NaN, more workgroups
// than one dispatch allows and keys split past the loop limit; gradients through the flash
// backward from the tiled forward's logsumexp; the GPUs' constant head dims on llvmpipe too. The one-row forward
// (GLTENSOR_ATTENTION=rows) must agree with it. Tolerances as test_attention.cpp.
#include "attention_ref.hpp"
#include "nn/attention_dropout.hpp"

using namespace gltensor;
using namespace glt_test;
using namespace attn_test;

namespace {
// The forward alone (no gradient recorded: with a mask or head dims past 64, the flash path).
void check_forward(std::mt19937_64& rng, const Case& c) {
  SCOPED_TRACE(c.what());
  Inputs in = inputs(rng, c);
  const Ref r = reference(c, in.hq, in.hk, in.hv, in.bias, {}, nullptr);
  const Tensor y = scaled_dot_product_attention(in.q, in.k, in.v, options(c, in.mask));
  EXPECT_TRUE(close(y.to(DType::f32).to_vector(), r.out, 1e-4, 1e-4)) << "forward";
}
}  // namespace

// Row and key blocks: L and S past 64 and odd (3 row blocks, 3 key blocks, partial last ones),
// L != S, causal (blocks above the diagonal skipped, the diagonal block partly masked) and not,
// every mask kind, GQA, E != Ev.
TEST(TiledAttention, Blocks) {
  GLT_RNG(rng);
  check(rng, {1, 2, 2, 130, 150, 16, 16});
  check(rng, {1, 2, 2, 150, 130, 16, 8, MaskKind::none, true});
  check(rng, {2, 2, 2, 129, 129, 12, 20, MaskKind::bool_full, true});
  check(rng, {2, 2, 1, 65, 193, 8, 8, MaskKind::key_padding});
  check(rng, {1, 4, 2, 100, 70, 16, 16, MaskKind::add_full, true});
  check(rng, {2, 3, 3, 70, 90, 8, 12, MaskKind::add_broadcast});
  check(rng, {1, 6, 2, 77, 1, 8, 8, MaskKind::none, true});  // one key
  check(rng, {1, 1, 1, 1, 200, 8, 8});                       // one query row
}

// Head dims 1 to 256 (the V chunks shrink from 64 to 16 keys, 1 to 4 output quads per
// invocation), forward alone and with gradients.
TEST(TiledAttention, HeadDims) {
  GLT_RNG(rng);
  for (const int d : {1, 3, 64, 96, 128, 256}) check(rng, {1, 2, 2, 67, 131, d, d, MaskKind::none, true});
  check_forward(rng, {1, 2, 1, 70, 99, 256, 40, MaskKind::bool_full});
  check_forward(rng, {1, 1, 1, 130, 70, 40, 256, MaskKind::add_full, true});
}

// NaN in a query row makes that row NaN; NaN in a key makes every row that sees it NaN;
// additive -inf everywhere in a row gives NaN (0 / 0); -inf elsewhere is a masked key.
TEST(TiledAttention, NanAndInf) {
  GLT_RNG(rng);
  const Case c{1, 2, 2, 140, 150, 16, 16, MaskKind::add_special, true};
  SCOPED_TRACE(c.what());
  Inputs in = inputs(rng, c);
  std::vector<float> q(in.hq.begin(), in.hq.end()), k(in.hk.begin(), in.hk.end());
  q[(70 * 16) + 5] = NAN;         // head 0, row 70
  k[(150 + 100) * 16 + 3] = NAN;  // head 1, key 100 (rows >= 100 see it)
  in.hq = to_double(q), in.hk = to_double(k);
  const Ref r = reference(c, in.hq, in.hk, in.hv, in.bias, {}, nullptr);
  const Tensor y =
      scaled_dot_product_attention(Tensor::from_host(device(), q, {1, 2, 140, 16}),
                                   Tensor::from_host(device(), k, {1, 2, 150, 16}), in.v, options(c, in.mask));
  const auto yv = y.to_vector();
  EXPECT_TRUE(close(yv, r.out, 1e-4, 1e-4));
  EXPECT_TRUE(std::isnan(yv[70 * 16]) && std::isnan(yv[16]) && std::isnan(yv[(140 + 120) * 16]));
  EXPECT_FALSE(std::isnan(yv[(140 + 99) * 16]));
}

// Batch x heads past one dispatch's workgroup limit (the grid split into dispatches with a
// group base), with causal and a mask.
TEST(TiledAttention, MoreWorkgroupsThanOneDispatch) {
  GLT_RNG(rng);
  std::optional<ScopedDispatchLimit> dispatch_limit{std::in_place, 2};
  check(rng, {3, 3, 3, 130, 70, 8, 8, MaskKind::bool_full, true});
  dispatch_limit.reset();
}

// Keys past a lowered loop limit: the tiled forward splits them into chunks of whole blocks
// (partials combined on the host; the causal chunks with rows that see no key of theirs).
TEST(TiledAttention, SplitPastTheLoopLimit) {
  GLT_RNG(rng);
  ScopedLoopLimit limit(1000);
  check(rng, {1, 2, 1, 150, 300, 16, 16, MaskKind::bool_full, true});
  check(rng, {1, 1, 1, 70, 330, 16, 8, MaskKind::add_full});
}

// Dropout: the tiled forward draws the mask that the backward and attention_dropout_keep draw.
TEST(TiledAttention, Dropout) {
  GLT_RNG(rng);
  const Case c{1, 2, 2, 100, 140, 16, 16, MaskKind::none, true};
  SCOPED_TRACE(c.what());
  Inputs in = inputs(rng, c);
  const double p = 0.25;
  const std::uint64_t seed = 77;
  const auto z = host(detail::attention_dropout_keep(device(), {c.B, c.H}, c.L, c.S, p, seed, 0));
  const Ref r = reference(c, in.hq, in.hk, in.hv, in.bias, z, &in.hgy);
  Generator gen(seed);
  AttentionOptions o = options(c, in.mask);
  o.dropout_p = p;
  o.generator = &gen;
  Tensor q = in.q, k = in.k, v = in.v;
  for (Tensor* t : {&q, &k, &v}) requires_grad_(*t);
  const Tensor y = scaled_dot_product_attention(q, k, v, o);
  EXPECT_TRUE(close(y.to_vector(), r.out, 1e-4, 1e-4));
  backward(y, in.gy);
  EXPECT_TRUE(close(grad(q).to_vector(), r.dq, 1e-3, 1e-3)) << "dq";
  EXPECT_TRUE(close(grad(k).to_vector(), r.dk, 1e-3, 1e-3)) << "dk";
  EXPECT_TRUE(close(grad(v).to_vector(), r.dv, 1e-3, 1e-3)) << "dv";
}

// The GPUs' form, head dims as constants (GLTENSOR_ATTENTION_UNIFORM_DIMS=0), on llvmpipe too, where the default
// takes head dims up to 64 as uniforms (UNIFORM_DIMS): each mode with a bool mask, causal, GQA, odd head dims E 10 and
// Ev 20 (DQ4 3, DV4 5), forward and gradients; an additive mask with the keys split past a lowered loop limit (SPLIT).
TEST(TiledAttention, ConstantHeadDims) {
  GLT_RNG(rng);
  ScopedSettings s;  // restores the settings as they were (GLTENSOR_ATTENTION_UNIFORM_DIMS=1 outside, for one)
  s->attention_uniform_dims = 0;
  check(rng, {2, 4, 2, 70, 90, 10, 20, MaskKind::bool_full, true});
  ScopedLoopLimit limit(1000);
  check(rng, {1, 1, 1, 70, 330, 16, 8, MaskKind::add_full});
}

// The one-row forward (GLTENSOR_ATTENTION=rows) and the tiled one agree.
TEST(TiledAttention, AgreesWithRows) {
  GLT_RNG(rng);
  const Case c{2, 2, 1, 131, 97, 24, 20, MaskKind::bool_full, true};
  SCOPED_TRACE(c.what());
  Inputs in = inputs(rng, c);
  const auto tiled = scaled_dot_product_attention(in.q, in.k, in.v, options(c, in.mask)).to_vector();
  ScopedEnv env("GLTENSOR_ATTENTION", "rows");
  const auto rows = scaled_dot_product_attention(in.q, in.k, in.v, options(c, in.mask)).to_vector();
  EXPECT_TRUE(close(tiled, to_double(rows), 1e-5, 1e-5));
}
