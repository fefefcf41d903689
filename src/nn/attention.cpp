// scaled_dot_product_attention. The plan: for inference without mask, dropout or GQA at head dims
// <= 64, the block kernel (glsl/nn/attention_block.comp: GPUs, few row blocks, head dims past 32, 257-512 keys;
// plan_attention_block), the lanes kernel (glsl/nn/attention_lanes.comp: GPUs, few row blocks; plan_attention_lanes)
// or the register-tiled kernel (glsl/nn/attention.comp); else the flash kernels (masks,
// dropout, GQA, head dims <= 256, the row logsumexp and the recompute-based backward as an
// autograd node: glsl/nn/attention_tiled.comp's register tiles where its 32 KiB of shared memory
// fit, else glsl/nn/attention_flash.comp's row per invocation); else (head dims past 256, a mask that requires
// grad, loops or buffers that cannot fit, GLTENSOR_ATTENTION=composite) the composite reference:
// matmul -> mask -> softmax -> dropout -> matmul, differentiable by composition.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "gltensor/autograd.hpp"
#include "gltensor/indexing.hpp"
#include "gltensor/linalg.hpp"
#include "gltensor/nn_functional.hpp"
#include "gltensor/ops.hpp"
#include "gltensor/reduce.hpp"
#include "nn/attention_dropout.hpp"
#include "nn/attention_plan.hpp"
#include "nn/attention_variants.hpp"
#include "nn/kv_combine.hpp"
#include "nn/transformer_variants.hpp"
#include "ops/autocast.hpp"
#include "ops/batched.hpp"
#include "runtime/counters.hpp"
#include "runtime/int_math.hpp"
#include "runtime/launch.hpp"
#include "runtime/settings.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {
using namespace detail;

namespace {
// The fused kernel applies with no mask, no gradient to record, floating dtypes, head dims
// <= 64 and non-empty L and S (and where one of its tilings fits the device's shared memory).
// GLTENSOR_ATTENTION=composite forces the composite path.
bool fused_applies(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask) {
  if (settings().attention_composite) return false;
  if (mask.defined() || autograd::any_requires_grad({&q, &k, &v})) return false;
  for (const Tensor* t : {&q, &k, &v})
    if (!is_floating(t->dtype())) return false;
  return q.size(-1) <= 64 && v.size(-1) <= 64 && q.size(-2) > 0 && k.size(-2) > 0;
}

// Uniforms of glsl/nn/attention.comp.
struct AttentionParams {
  std::int64_t L, S, E, Ev;
  const BatchLayout& bl;
  const Tensor &q, &k, &v;  // expanded to the batch
  double scale;
  bool causal;
  std::int64_t kchunk;  // split-KV: keys per chunk (0: none)
  void set(Uniforms& u) const {
    u.u32("u_L", L);
    u.u32("u_S", S);
    u.u32("u_E", E);
    u.u32("u_Ev", Ev);
    u.u32s("u_bshape", bl.shape);
    u.u32s("u_bstride_q", bl.strides[0]);
    u.u32s("u_bstride_k", bl.strides[1]);
    u.u32s("u_bstride_v", bl.strides[2]);
    u.u32("u_q_off", q.offset());
    u.u32("u_k_off", k.offset());
    u.u32("u_v_off", v.offset());
    u.u32("u_q_sl", q.strides()[q.dim() - 2]);
    u.u32("u_q_se", q.strides()[q.dim() - 1]);
    u.u32("u_k_ss", k.strides()[k.dim() - 2]);
    u.u32("u_k_se", k.strides()[k.dim() - 1]);
    u.u32("u_v_ss", v.strides()[v.dim() - 2]);
    u.u32("u_v_se", v.strides()[v.dim() - 1]);
    u.f32("u_scale", scale * 1.4426950408889634);
    u.i32("u_causal", causal ? 1 : 0);
    if (kchunk > 0) u.u32("u_kchunk", kchunk);
  }
};

// The inference kernels' operands (attention.comp and attention_lanes.comp): q, k, v expanded to
// their common batch, the output's shape and dtype, the collapsed batch layout, and whether the
// kernels read them as quads: f32, contiguous along the head dim, rows and batches on 4-element
// boundaries, and 7 SSBO bindings for all three (GLES 3.1 guarantees 4, so no quads where a device
// has fewer).
struct InferenceOperands {
  std::int64_t L, S, E, Ev;
  Shape batch, out_shape;
  Tensor eq, ek, ev;
  DType od;
  BatchLayout bl;
  bool q_quads, kv_quads;
};
InferenceOperands inference_operands(DeviceImpl& dev, const char* op, const Tensor& q, const Tensor& k,
                                     const Tensor& v) {
  InferenceOperands o;
  o.L = q.size(-2), o.S = k.size(-2), o.E = q.size(-1), o.Ev = v.size(-1);
  o.batch = broadcast_shapes(op, broadcast_shapes(op, batch_dims(q), batch_dims(k)), batch_dims(v));
  o.eq = expand_batch(q, o.batch), o.ek = expand_batch(k, o.batch), o.ev = expand_batch(v, o.batch);
  o.out_shape = o.batch;
  o.out_shape.push_back(o.L);
  o.out_shape.push_back(o.Ev);
  o.od = promote_types(promote_types(q.dtype(), k.dtype()), v.dtype());
  o.bl = collapse_batch(o.batch, {&o.eq, &o.ek, &o.ev});
  auto quads = [](const Tensor& t) { return t.dtype() == DType::f32 && quad_aligned(t, t.dim() - 1); };
  const bool quad_bindings = dev.caps().max_ssbo_bindings >= 7;
  o.kv_quads = quad_bindings && quads(o.ek) && quads(o.ev) && o.E % 4 == 0 && o.Ev % 4 == 0;
  o.q_quads = quad_bindings && quads(o.eq) && o.E % 4 == 0;
  return o;
}

// split.kchunk > 0: split-KV, the keys in chunks of kchunk (a multiple of the tiling's BKV)
// computed by separate workgroups, then combined by the chunks' last workgroup (split.combine:
// the partials in a workspace, the arrival counters of runtime/counters.hpp) or by kv_combine's
// dispatch (for key sequences longer than one invocation may loop over; GPUs' few row blocks).
Tensor fused_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale,
                       const AttentionTiles& t, const AttentionSplit& split) {
  static_assert(kCombineSlots == WorkgroupCounters::kWords);
  const std::int64_t kchunk = split.kchunk;
  const char* op = "scaled_dot_product_attention";
  DeviceImpl& dev = dev_of(q);
  Launch launch(dev, op);
  const InferenceOperands o = inference_operands(dev, op, q, k, v);
  const std::int64_t L = o.L, S = o.S, E = o.E, Ev = o.Ev;
  const std::int64_t chunks = kchunk > 0 ? (S + kchunk - 1) / kchunk : 1, nb = numel_of(o.batch);
  if (numel_of(o.out_shape) == 0) return alloc(dev, o.out_shape, o.od, op);
  const bool combine = kchunk > 0 && split.combine;
  // the kernel's operand 0: the result, or (split without COMBINE) the partials
  Tensor out =
      kchunk > 0 && !combine ? alloc(dev, {chunks, nb, L, Ev + 2}, DType::f32, op) : alloc(dev, o.out_shape, o.od, op);
  const BatchLayout& bl = o.bl;
  const std::size_t bd = bl.shape.size();
  const std::int64_t bq = t.bq;
  const bool q_quads = o.q_quads, kv_quads = o.kv_quads;
  AttentionVariant av;
  av.bd = static_cast<int>(bd), av.bq = bq, av.kq = t.kq, av.dql = t.dql, av.subgroup = t.subgroup,
  av.split_kv = kchunk > 0, av.combine = combine;
  av.q_quads = q_quads, av.kv_quads = kv_quads;
  av.out = out.dtype(), av.q = q.dtype(), av.k = k.dtype(), av.v = v.dtype();
  launch.program(av.kFile, av.defines(), {static_cast<std::uint32_t>(bq * 2)});
  // Quad views of q, k, v take the bindings after the four operands, in that order.
  launch.write(out).read(q).read(k).read(v);
  if (q_quads) launch.read(q);
  if (kv_quads) launch.read(k).read(v);
  Tensor ws;  // COMBINE: the partials, then the counters (written: the Queue orders counting dispatches)
  if (combine) {
    ws = alloc(dev, {chunks * nb * L * kCombineRowFloats}, DType::f32, op);  // quads of o, then (m, l, 0, 0)
    launch.write(ws).bind(dev.extension<WorkgroupCounters>().storage(dev), true);
  }
  launch.params(AttentionParams{L, S, E, Ev, bl, o.eq, o.ek, o.ev, scale, causal, kchunk})
      .loop_iterations(attention_loops(t, kchunk > 0 ? kchunk : S, bd, combine ? chunks : 0, Ev))
      .groups(static_cast<std::uint64_t>((L + bq - 1) / bq), static_cast<std::uint64_t>(nb),
              static_cast<std::uint64_t>(chunks));
  if (kchunk == 0 || combine) return out;
  Tensor result = alloc(dev, o.out_shape, o.od, op);
  kv_combine(dev, op, out, result, nb * L, Ev, chunks);  // the KV cache's combine: the same layout
  return result;
}

// The lanes kernel (glsl/nn/attention_lanes.comp): the keys of a row split over t.lanes lanes,
// combined in the workgroup; the same uniforms as attention.comp's (no split).
Tensor lanes_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale,
                       const LaneTiles& t) {
  const char* op = "scaled_dot_product_attention";
  DeviceImpl& dev = dev_of(q);
  Launch launch(dev, op);
  const InferenceOperands o = inference_operands(dev, op, q, k, v);
  const std::int64_t L = o.L, S = o.S, E = o.E, Ev = o.Ev;
  const Shape& batch = o.batch;
  Tensor out = alloc(dev, o.out_shape, o.od, op);
  if (out.numel() == 0) return out;
  const BatchLayout& bl = o.bl;
  const bool q_quads = o.q_quads, kv_quads = o.kv_quads;
  AttentionLanesVariant av;
  av.bd = static_cast<int>(bl.shape.size()), av.local = t.local, av.lanes = t.lanes, av.keys = t.keys, av.dq = t.dq;
  av.q_quads = q_quads, av.kv_quads = kv_quads;
  av.out = out.dtype(), av.q = q.dtype(), av.k = k.dtype(), av.v = v.dtype();
  launch.program(av.kFile, av.defines(), {static_cast<std::uint32_t>(t.local)});
  launch.write(out).read(q).read(k).read(v);
  if (q_quads) launch.read(q);
  if (kv_quads) launch.read(k).read(v);
  const std::int64_t rows = t.local / t.lanes;
  launch.params(AttentionParams{L, S, E, Ev, bl, o.eq, o.ek, o.ev, scale, causal, 0})
      .loop_iterations(attention_lanes_loops(t, {L, S, numel_of(batch), E, Ev, bl.shape.size()}))
      .groups(static_cast<std::uint64_t>(ceil_div(L, rows)), static_cast<std::uint64_t>(numel_of(batch)), 1);
  return out;
}

// The block kernel (glsl/nn/attention_block.comp): t.rows query rows per workgroup with their whole score rows in
// shared memory; the same uniforms as attention.comp's (no split).
Tensor block_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale,
                       const BlockTiles& t) {
  const char* op = "scaled_dot_product_attention";
  DeviceImpl& dev = dev_of(q);
  Launch launch(dev, op);
  const InferenceOperands o = inference_operands(dev, op, q, k, v);
  const std::int64_t L = o.L, S = o.S, E = o.E, Ev = o.Ev;
  Tensor out = alloc(dev, o.out_shape, o.od, op);
  if (out.numel() == 0) return out;
  const BatchLayout& bl = o.bl;
  AttentionBlockVariant av;
  av.bd = static_cast<int>(bl.shape.size()), av.local = t.local, av.rows = t.rows, av.dq = t.dq, av.sk = t.sk;
  av.q_quads = o.q_quads, av.kv_quads = o.kv_quads;
  av.out = out.dtype(), av.q = q.dtype(), av.k = k.dtype(), av.v = v.dtype();
  launch.program(av.kFile, av.defines(), {static_cast<std::uint32_t>(t.local)});
  launch.write(out).read(q).read(k).read(v);
  if (o.q_quads) launch.read(q);
  if (o.kv_quads) launch.read(k).read(v);
  launch.params(AttentionParams{L, S, E, Ev, bl, o.eq, o.ek, o.ev, scale, causal, 0})
      .loop_iterations(attention_block_loops(t, {L, S, numel_of(o.batch), E, Ev, bl.shape.size()}))
      .groups(static_cast<std::uint64_t>(ceil_div(L, std::int64_t{t.rows})),
              static_cast<std::uint64_t>(numel_of(o.batch)), 1);
  return out;
}

// ---- the flash kernels (glsl/nn/attention_flash.comp) ----

struct DropoutDraw {
  double p = 0;
  std::uint64_t seed = 0, offset = 0;
};

// The problem after the GQA views: q, k, v [batch..., rows, cols] expanded to the batch; the mask
// expanded to [batch..., L, S] (undefined without one).
struct Problem {
  Tensor q, k, v, mask;
  Shape batch;
  std::int64_t L, S, E, Ev;
  bool causal;
  double scale;
  DropoutDraw drop;
};

// Uniforms of attention_flash.comp.
struct FlashParams {
  const Problem& p;
  const BatchLayout& bl;  // strides of q, k, v, mask, dO
  const Tensor &q, &mask, *dout;
  std::int64_t L, row0, chunk;
  bool tiled = false;         // attention_tiled.comp: no head-dim bounds (nor u_scale_e in its forward)
  bool uniform_dims = false;  // attention_tiled.comp's UNIFORM_DIMS: the head-dim bounds
  void set(Uniforms& u) const {
    u.u32("u_L", L);
    u.u32("u_S", p.S);
    u.u32("u_E", p.E);
    u.u32("u_Ev", p.Ev);
    if (!tiled || uniform_dims) {
      u.u32("u_dq4", (p.E + 3) / 4);
      u.u32("u_dv4", (p.Ev + 3) / 4);
    }
    if (!tiled || dout) u.f32("u_scale_e", p.scale);
    u.i32("u_causal", p.causal ? 1 : 0);
    u.u32("u_row0", row0);
    u.u32s("u_bshape", bl.shape);
    u.u32s("u_bstride_q", bl.strides[0]);
    u.u32s("u_bstride_k", bl.strides[1]);
    u.u32s("u_bstride_v", bl.strides[2]);
    u.u32("u_q_off", q.offset());
    u.u32("u_k_off", p.k.offset());
    u.u32("u_v_off", p.v.offset());
    u.u32("u_q_sl", q.strides()[q.dim() - 2]);
    u.u32("u_q_se", q.strides()[q.dim() - 1]);
    u.u32("u_k_ss", p.k.strides()[p.k.dim() - 2]);
    u.u32("u_k_se", p.k.strides()[p.k.dim() - 1]);
    u.u32("u_v_ss", p.v.strides()[p.v.dim() - 2]);
    u.u32("u_v_se", p.v.strides()[p.v.dim() - 1]);
    u.f32("u_scale", p.scale * 1.4426950408889634);
    if (chunk > 0) u.u32("u_chunk", chunk);
    if (mask.defined()) {
      u.u32s("u_bstride_m", bl.strides[3]);
      u.u32("u_m_off", mask.offset());
      u.u32("u_m_sl", mask.strides()[mask.dim() - 2]);
      u.u32("u_m_ss", mask.strides()[mask.dim() - 1]);
    }
    if (dout) {
      u.u32s("u_bstride_o", bl.strides[4]);
      u.u32("u_o_off", dout->offset());
      u.u32("u_o_sl", dout->strides()[dout->dim() - 2]);
      u.u32("u_o_se", dout->strides()[dout->dim() - 1]);
    }
    if (p.drop.p > 0) {
      u.uvec2("u_seed", static_cast<std::uint32_t>(p.drop.seed), static_cast<std::uint32_t>(p.drop.seed >> 32));
      u.u32("u_doff", static_cast<std::uint32_t>(p.drop.offset));
      u.f32("u_keep", 1.0 - p.drop.p);
    }
  }
};

const char* const kOp = "scaled_dot_product_attention";

// attention_flash.comp's variant for a mode: the problem's tiles, mask and dropout.
FlashAttentionVariant flash_variant(const char* mode, std::size_t bd, const FlashTiles& t, bool split,
                                    const Problem& p) {
  using Mask = FlashAttentionVariant::Mask;
  FlashAttentionVariant v;
  v.mode = mode, v.bd = static_cast<int>(bd), v.dq4 = (p.E + 3) / 4, v.dv4 = (p.Ev + 3) / 4;
  v.bkv = t.bkv, v.bqt = t.bqt, v.split = split, v.dropout = p.drop.p > 0;
  v.const_dims = !dev_of(p.q).adapter().software;  // llvmpipe: uniform bounds (compile time)
  v.q = p.q.dtype(), v.k = p.k.dtype(), v.v = p.v.dtype();
  if (p.mask.defined()) {
    v.mask = p.mask.dtype() == DType::bool_ ? Mask::bool_ : Mask::add;
    v.mask_dtype = p.mask.dtype();
  }
  return v;
}

// attention_tiled.comp's variant in `mode` with the flash variant's batch dims, chunking, mask,
// dropout and dtypes.
TiledAttentionVariant tiled_variant(const char* mode, const FlashAttentionVariant& fv, std::int64_t E,
                                    std::int64_t Ev) {
  TiledAttentionVariant tv;
  tv.mode = mode, tv.bd = fv.bd, tv.dq4 = fv.dq4, tv.dv4 = fv.dv4, tv.vkq = tiled_v_keys(E), tv.vk = tiled_v_keys(Ev);
  tv.split = fv.split, tv.dropout = fv.dropout, tv.mask = fv.mask, tv.mask_dtype = fv.mask_dtype;
  tv.out = fv.out, tv.q = fv.q, tv.k = fv.k, tv.v = fv.v, tv.dout = fv.dout;
  // llvmpipe (as attention_flash.comp's bounds without CONST_DIMS): one program per mode and flags for every head
  // dim up to 64; past it (NQQ or NVQ > 1) the constants; GLTENSOR_ATTENTION_UNIFORM_DIMS forces either form
  const int uniform = settings().attention_uniform_dims;
  tv.uniform_dims = tv.dq4 <= 16 && tv.dv4 <= 16 && (uniform < 0 ? !fv.const_dims : uniform == 1);
  return tv;
}

struct Forward {
  Tensor out, lse;  // out [nb, L, Ev] (od); lse [nb, L] f32 (log2 units)
};

// The forward over query rows [row0, row0 + lc) (q and mask narrowed to them): kchunk > 0
// splits the keys into chunks combined here. tiled: attention_tiled.comp, else attn_fwd.
Forward flash_forward_rows(const Problem& p, const FlashTiles& t, bool tiled, std::int64_t row0, std::int64_t lc,
                           std::int64_t kchunk, DType od) {
  NoGradGuard ng;
  DeviceImpl& dev = dev_of(p.q);
  Launch launch(dev, kOp);
  const Tensor q = lc == p.L ? p.q : p.q.narrow(-2, row0, lc);
  const Tensor mask = !p.mask.defined() || lc == p.L ? p.mask : p.mask.narrow(-2, row0, lc);
  const std::int64_t nb = numel_of(p.batch), chunks = kchunk > 0 ? (p.S + kchunk - 1) / kchunk : 1;
  const BatchLayout bl = collapse_batch(p.batch, {&q, &p.k, &p.v, &mask});
  const bool split = kchunk > 0;
  Tensor out = split ? alloc(dev, {chunks, nb, lc, p.Ev + 2}, DType::f32, kOp) : alloc(dev, {nb, lc, p.Ev}, od, kOp);
  Tensor lse = alloc(dev, {nb, lc}, DType::f32, kOp);
  FlashAttentionVariant fv = flash_variant("attn_fwd", bl.shape.size(), t, split, p);
  fv.out = out.dtype(), fv.q = q.dtype();
  if (mask.defined()) fv.mask_dtype = mask.dtype();
  launch.write(out).read(q).read(p.k).read(p.v);
  if (!split) launch.write(lse);
  if (mask.defined()) launch.read(mask);
  // no keys: softmax over nothing times nothing is 0 (torch's math path)
  if (p.S == 0) return {zeros(q.device(), {nb, lc, p.Ev}, od), zeros(q.device(), {nb, lc}, DType::f32)};
  if (out.numel() == 0 || lse.numel() == 0) return {split ? alloc(dev, {nb, lc, p.Ev}, od, kOp) : out, lse};
  const std::int64_t rows = tiled ? kTiledRows : t.rows;
  const TiledAttentionVariant tv = tiled_variant("tiled_fwd", fv, p.E, p.Ev);
  if (tiled) {
    launch.program(TiledAttentionVariant::kFile, tv.defines(), {static_cast<std::uint32_t>(kTiledLocal)});
  } else {
    launch.program(fv.kFile, fv.defines(), {static_cast<std::uint32_t>(t.rows)});
  }
  launch.params(FlashParams{p, bl, q, mask, nullptr, lc, row0, kchunk, tiled, tiled && tv.uniform_dims})
      .loop_iterations(flash_loops(tiled ? FlashMode::tiled : FlashMode::forward, t, p.E, p.Ev, split ? kchunk : p.S,
                                   bl.shape.size(), p.drop.p > 0))
      .groups(static_cast<std::uint64_t>((lc + rows - 1) / rows), static_cast<std::uint64_t>(nb),
              static_cast<std::uint64_t>(chunks));
  if (!split) return {out, lse};
  if (out.numel() == 0) return {alloc(dev, {nb, lc, p.Ev}, od, kOp), alloc(dev, {nb, lc}, DType::f32, kOp)};
  // out = sum(o w) / sum(l w), lse = M + log2(sum(l w)), w = exp2(m - M) (M: the rows' largest m)
  const Tensor o = out.narrow(-1, 0, p.Ev), m = out.narrow(-1, p.Ev, 1), l = out.narrow(-1, p.Ev + 1, 1);
  const Tensor M = amax(m, {0}, true);
  const Tensor w = exp2(sub(m, M)), lw = sum(mul(l, w), {0});
  return {div(sum(mul(o, w), {0}), lw).to(od), add(M.squeeze(0), log2(lw)).squeeze(-1)};
}

// The whole forward: query rows in blocks where the split partials would exceed the device's
// largest buffer.
Forward flash_forward(const Problem& p, const FlashTiles& t, bool tiled, std::int64_t kchunk, DType od) {
  if (kchunk <= 0) return flash_forward_rows(p, t, tiled, 0, p.L, 0, od);
  const std::int64_t chunks = (p.S + kchunk - 1) / kchunk;
  const std::int64_t row_bytes = chunks * numel_of(p.batch) * (p.Ev + 2) * 4;
  const std::int64_t per = std::max<std::int64_t>(dev_of(p.q).ssbo_limit() / std::max<std::int64_t>(row_bytes, 1), 1);
  if (p.L <= per) return flash_forward_rows(p, t, tiled, 0, p.L, kchunk, od);
  std::vector<Tensor> outs, lses;
  for (std::int64_t l0 = 0; l0 < p.L; l0 += per) {
    Forward f = flash_forward_rows(p, t, tiled, l0, std::min(per, p.L - l0), kchunk, od);
    outs.push_back(f.out);
    lses.push_back(f.lse);
  }
  NoGradGuard ng;
  return {concat(outs, -2), concat(lses, -1)};
}

struct Grads {
  Tensor dq, dk, dv;  // f32 [batch..., rows, cols]
};

// dQ, dK, dV from dO, the output and its lse (FlashAttention-2's backward): D = rowsum(dO * O),
// then the dK/dV kernel (per key tile, query rows split in chunks of qchunk) and the dQ kernel
// (per query tile, keys split in chunks of kchunk); chunk partials are summed.
Grads flash_backward(const Problem& p, const FlashTiles& t, bool tiled, const Tensor& out, const Tensor& lse,
                     const Tensor& dout_in, std::int64_t qchunk, std::int64_t kchunk) {
  NoGradGuard ng;
  DeviceImpl& dev = dev_of(p.q);
  const std::int64_t nb = numel_of(p.batch);
  Shape bshape = p.batch;
  bshape.push_back(p.L);
  bshape.push_back(p.Ev);
  const Tensor dout = dout_in.expand(bshape);
  const Tensor D = sum(mul(dout.to(DType::f32), out.to(DType::f32).reshape(bshape)), {-1}).reshape({nb, p.L});
  const Tensor stats = stack({lse, D}, -1).contiguous();  // [nb, L, 2]
  const BatchLayout bl = collapse_batch(p.batch, {&p.q, &p.k, &p.v, &p.mask, &dout});
  const std::size_t bd = bl.shape.size();
  const bool drop = p.drop.p > 0;
  auto run = [&](const char* mode, FlashMode fm, const Tensor& dst, std::int64_t chunk, std::uint32_t local,
                 std::int64_t tiles) {
    Launch launch(dev, kOp);
    FlashAttentionVariant fv = flash_variant(mode, bd, t, chunk > 0, p);
    fv.dout = dout.dtype();
    launch.write(dst).read(p.q).read(p.k).read(p.v).read(stats).read(dout);
    if (p.mask.defined()) launch.read(p.mask);
    const std::int64_t n = fm == FlashMode::dkv || fm == FlashMode::tiled_dkv ? p.L : p.S;
    const TiledAttentionVariant tv = tiled_variant(mode, fv, p.E, p.Ev);
    if (tiled)
      launch.program(TiledAttentionVariant::kFile, tv.defines(), {local});
    else
      launch.program(fv.kFile, fv.defines(), {local});
    launch.params(FlashParams{p, bl, p.q, p.mask, &dout, p.L, 0, chunk, tiled, tiled && tv.uniform_dims})
        .loop_iterations(flash_loops(fm, t, p.E, p.Ev, chunk > 0 ? chunk : n, bd, drop))
        .groups(static_cast<std::uint64_t>(tiles), static_cast<std::uint64_t>(nb),
                static_cast<std::uint64_t>(chunk > 0 ? (n + chunk - 1) / chunk : 1));
  };
  const std::int64_t qc = qchunk > 0 ? (p.L + qchunk - 1) / qchunk : 1,
                     kc = kchunk > 0 ? (p.S + kchunk - 1) / kchunk : 1;
  Tensor kv = alloc(dev, {qc, nb, p.S, p.E + p.Ev}, DType::f32, kOp);
  Tensor dq = alloc(dev, {kc, nb, p.L, p.E}, DType::f32, kOp);
  const std::uint32_t local = static_cast<std::uint32_t>(kTiledLocal);
  if (kv.numel() > 0 && tiled)
    run("tiled_dkv", FlashMode::tiled_dkv, kv, qchunk, local, (p.S + kTiledKeys - 1) / kTiledKeys);
  else if (kv.numel() > 0)
    run("attn_dkv", FlashMode::dkv, kv, qchunk, static_cast<std::uint32_t>(t.keys), (p.S + t.keys - 1) / t.keys);
  if (dq.numel() > 0 && tiled)
    run("tiled_dq", FlashMode::tiled_dq, dq, kchunk, local, (p.L + kTiledRows - 1) / kTiledRows);
  else if (dq.numel() > 0)
    run("attn_dq", FlashMode::dq, dq, kchunk, static_cast<std::uint32_t>(t.rows), (p.L + t.rows - 1) / t.rows);
  if (qc > 1) kv = sum(kv, {0}, true);
  if (kc > 1) dq = sum(dq, {0}, true);
  Shape sq = p.batch, sk = p.batch, sv = p.batch;
  sq.insert(sq.end(), {p.L, p.E});
  sk.insert(sk.end(), {p.S, p.E});
  sv.insert(sv.end(), {p.S, p.Ev});
  return {dq.reshape(sq), kv.narrow(-1, 0, p.E).reshape(sk), kv.narrow(-1, p.E, p.Ev).reshape(sv)};
}
}  // namespace

namespace detail {
Tensor attention_dropout_keep(const Device& device, const Shape& batch, std::int64_t L, std::int64_t S, double p,
                              std::uint64_t seed, std::uint64_t offset, std::int64_t row0) {
  DeviceImpl& dev = *device.impl();
  Launch launch(dev, kOp);
  Shape shape = batch;
  shape.push_back(L);
  shape.push_back(S);
  Tensor out = alloc(dev, shape, DType::f32, kOp);
  if (out.numel() == 0) return out;
  Problem pr{Tensor(), Tensor(), Tensor(), Tensor(), batch, L, S, 1, 1, false, 1.0, {p, seed, offset}};
  struct KeepParams {
    const Problem& p;
    std::int64_t count, row0;
    void set(Uniforms& u) const {
      u.u32("u_count", count);
      u.u32("u_L", p.L);
      u.u32("u_S", p.S);
      u.u32("u_row0", row0);
      u.uvec2("u_seed", static_cast<std::uint32_t>(p.drop.seed), static_cast<std::uint32_t>(p.drop.seed >> 32));
      u.u32("u_doff", static_cast<std::uint32_t>(p.drop.offset));
      u.f32("u_keep", 1.0 - p.drop.p);
    }
  };
  FlashAttentionVariant keep;
  keep.mode = "attn_keep";
  launch.program(keep.kFile, keep.defines(), {256})
      .write(out)
      .params(KeepParams{pr, out.numel(), row0})
      .loop_iterations(16)
      .invocations(static_cast<std::uint64_t>(out.numel()));
  return out;
}
}  // namespace detail

namespace {
// q/k/v's views for GQA: [..., Hq, L, E] -> [..., Hkv, G, L, E]; k, v [..., Hkv, S, *] ->
// [..., Hkv, 1, S, *]; the mask (broadcast to [..., Hq, L, S]) as q.
struct GqaViews {
  Tensor q, k, v, mask;
  bool on = false;
};
GqaViews gqa_views(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool enable) {
  if (!enable || q.dim() < 3 || k.dim() < 3 || v.dim() < 3 || q.size(-3) == k.size(-3)) return {q, k, v, mask, false};
  const std::int64_t Hq = q.size(-3), Hkv = k.size(-3);
  if (v.size(-3) != Hkv || Hkv == 0 || Hq % Hkv != 0)
    throw ShapeError("gltensor::scaled_dot_product_attention: enable_gqa needs q's heads " + std::to_string(Hq) +
                     " a multiple of k's and v's " + std::to_string(Hkv) + " and " + std::to_string(v.size(-3)));
  const std::int64_t G = Hq / Hkv;
  Shape qs(q.shape().begin(), q.shape().end() - 3);
  qs.insert(qs.end(), {Hkv, G, q.size(-2), q.size(-1)});
  GqaViews g{q.reshape(qs), k.unsqueeze(-3), v.unsqueeze(-3), Tensor(), true};
  if (mask.defined()) {
    // broadcast to q's batch with [L, S], then split the heads like q
    Shape b4 = broadcast_shapes(kOp, Shape(q.shape().begin(), q.shape().end() - 2),
                                mask.dim() > 2 ? Shape(mask.shape().begin(), mask.shape().end() - 2) : Shape{});
    const std::int64_t nb4 = static_cast<std::int64_t>(b4.size());
    Shape ms = b4;
    ms.insert(ms.end(), {q.size(-2), k.size(-2)});
    const Tensor me = mask.expand(ms);
    Shape m5(b4.begin(), b4.end() - 1);
    m5.insert(m5.end(), {b4[nb4 - 1] / G, G, q.size(-2), k.size(-2)});
    if (b4[nb4 - 1] != Hq)
      throw ShapeError("gltensor::scaled_dot_product_attention: mask " + to_string(mask.shape()) +
                       " does not broadcast to q's heads " + std::to_string(Hq));
    g.mask = me.reshape(m5);
  }
  return g;
}
}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in,
                                    const AttentionOptions& opt) {
  if (detail::autocast_changes_low({&q_in, &k_in, &v_in}))
    return scaled_dot_product_attention(detail::autocast_low(q_in), detail::autocast_low(k_in),
                                        detail::autocast_low(v_in), opt);
  const char* op = kOp;
  check_same_device(op, {&q_in, &k_in, &v_in});
  if (q_in.dim() < 2 || k_in.dim() < 2 || v_in.dim() < 2 || q_in.size(-1) != k_in.size(-1) ||
      k_in.size(-2) != v_in.size(-2))
    throw ShapeError("gltensor::scaled_dot_product_attention: q " + to_string(q_in.shape()) + ", k " +
                     to_string(k_in.shape()) + ", v " + to_string(v_in.shape()) +
                     " do not fit q [..., L, E], k [..., S, E], v [..., S, Ev]");
  for (const Tensor* t : {&q_in, &k_in, &v_in})
    if (!is_floating(t->dtype()))
      throw DTypeError(std::string("gltensor::scaled_dot_product_attention: needs float q, k, v, got ") +
                       dtype_name(t->dtype()));
  const Tensor& mask_in = opt.attn_mask;
  if (mask_in.defined()) {
    check_same_device(op, {&q_in, &mask_in});
    if (mask_in.dtype() != DType::bool_ && !is_floating(mask_in.dtype()))
      throw DTypeError(std::string("gltensor::scaled_dot_product_attention: the mask must be bool or float, got ") +
                       dtype_name(mask_in.dtype()));
  }
  if (!(opt.dropout_p >= 0 && opt.dropout_p < 1))
    throw ValueError("gltensor::scaled_dot_product_attention: dropout_p must be in [0, 1), got " +
                     std::to_string(opt.dropout_p));
  if (opt.dropout_p > 0 && !opt.generator)
    throw ValueError("gltensor::scaled_dot_product_attention: dropout_p > 0 needs a generator");
  const double sc = opt.scale != 0 ? opt.scale : 1.0 / std::sqrt(static_cast<double>(q_in.size(-1)));
  const GqaViews g = gqa_views(q_in, k_in, v_in, mask_in, opt.enable_gqa);
  const std::int64_t L = q_in.size(-2), S = k_in.size(-2), E = q_in.size(-1), Ev = v_in.size(-1);
  const Shape batch = broadcast_shapes(op, broadcast_shapes(op, batch_dims(g.q), batch_dims(g.k)), batch_dims(g.v));
  Shape out_shape = batch;
  out_shape.insert(out_shape.end(), {L, Ev});
  Shape user_shape = batch;  // the output's batch: GQA's [..., Hkv, G] as [..., Hq]
  if (g.on) {
    user_shape = Shape(batch.begin(), batch.end() - 2);
    user_shape.push_back(batch[batch.size() - 2] * batch[batch.size() - 1]);
  }
  user_shape.insert(user_shape.end(), {L, Ev});
  Shape mshape = batch;
  mshape.insert(mshape.end(), {L, S});
  Tensor mask;
  if (g.mask.defined()) mask = g.mask.expand(mshape);
  const DType od = promote_types(promote_types(q_in.dtype(), k_in.dtype()), v_in.dtype());
  DropoutDraw drop;
  if (opt.dropout_p > 0) drop = {opt.dropout_p, opt.generator->seed(), opt.generator->next_offset()};

  // The plan: the old register-tiled kernel, the flash kernels or the composite path.
  DeviceImpl& dev = dev_of(q_in);
  const bool grad = autograd::any_requires_grad({&q_in, &k_in, &v_in});
  const bool mask_grad = mask_in.defined() && autograd::any_requires_grad({&mask_in});
  if (!mask.defined() && drop.p == 0 && !grad && fused_applies(q_in, k_in, v_in, Tensor()) && !g.on) {
    const AttentionDevice ad{dev.subgroup_shuffle(), dev.caps().subgroup_size, dev.caps().max_shared_memory,
                             std::min(dev.caps().max_workgroup_invocations, dev.caps().max_workgroup_size[0])};
    const std::size_t lbd = std::max<std::size_t>(batch.size(), 1);  // (at least the merged batch dims)
    // Few row blocks, head dims past 32, 257 to 512 keys (GPUs): blocks of 8 rows with their whole score rows in
    // shared memory.
    const bool half = q_in.dtype() != DType::f32 || k_in.dtype() != DType::f32 || v_in.dtype() != DType::f32;
    const BlockTiles bt = plan_attention_block({L, S, numel_of(batch), E, Ev, lbd, half, opt.is_causal}, ad,
                                               dev.adapter().software, dev.loop_limit(), settings());
    if (bt.local > 0) return block_attention(q_in, k_in, v_in, opt.is_causal, sc, bt);
    // Few row blocks (GPUs): the keys of each row over lanes, many short workgroups.
    const LaneTiles lt = plan_attention_lanes({L, S, numel_of(batch), E, Ev, lbd}, ad, dev.adapter().software,
                                              dev.loop_limit(), settings());
    if (lt.local > 0) return lanes_attention(q_in, k_in, v_in, opt.is_causal, sc, lt);
    const AttentionTiles t = narrow_attention_tiles(plan_attention_tiles(ad, settings()), ad, settings(), E, Ev);
    const std::uint64_t limit = dev.loop_limit();
    const std::int64_t bkv = 32 * t.kq;
    const SplitProblem sp{L, S, numel_of(batch), dev.adapter().software, dev.caps().max_ssbo_bindings};
    auto split_loops = [&](const AttentionSplit& s) {
      const std::int64_t n = s.kchunk > 0 ? s.kchunk : S;
      return attention_loops(t, n, q_in.dim(), s.combine ? (S + n - 1) / n : 0, Ev);
    };
    if (t.bq > 0 && (limit == 0 || attention_loops(t, S, q_in.dim()) <= limit)) {
      // The keys in chunks over more workgroups (few row blocks; GLTENSOR_ATTENTION_SPLIT), where
      // the partials and the loops fit.
      AttentionSplit split = plan_attention_split(t, sp, settings());
      const std::int64_t row_floats = split.combine ? kCombineRowFloats : Ev + 2;
      const std::int64_t ws_bytes =
          split.kchunk > 0 ? (S + split.kchunk - 1) / split.kchunk * numel_of(batch) * L * row_floats * 4 : 0;
      if (ws_bytes > dev.ssbo_limit() || (limit != 0 && split_loops(split) > limit)) split = {};
      return fused_attention(q_in, k_in, v_in, opt.is_causal, sc, t, split);
    }
    // Keys past what one invocation may loop over: split-KV, chunks of the most key tiles that fit.
    if (t.bq > 0 && attention_loops(t, bkv, q_in.dim()) <= limit) {
      std::int64_t lo = 1, hi = (S + bkv - 1) / bkv;  // tiles per chunk: lo fits, hi does not
      while (hi - lo > 1) {
        const std::int64_t mid = (lo + hi) / 2;
        (attention_loops(t, mid * bkv, q_in.dim()) <= limit ? lo : hi) = mid;
      }
      const std::int64_t chunks = (S + lo * bkv - 1) / (lo * bkv);
      const std::int64_t row_bytes = chunks * numel_of(batch) * (Ev + 2) * 4;
      const std::int64_t per = dev.ssbo_limit() / std::max<std::int64_t>(row_bytes, 1);
      if (L <= per) {
        // merged by the chunks' last workgroup where that and its loops fit, else by kv_combine
        AttentionSplit split{lo * bkv, attention_combine_fits(t, sp, chunks, settings())};
        if (split.combine &&
            (split_loops(split) > limit || chunks * numel_of(batch) * L * kCombineRowFloats * 4 > dev.ssbo_limit()))
          split.combine = false;
        return fused_attention(q_in, k_in, v_in, opt.is_causal, sc, t, split);
      }
    }
  }
  const FlashTiles ft = plan_flash_tiles(E, Ev, dev.caps().max_shared_memory, settings());
  const Problem p{expand_batch(g.q, batch),
                  expand_batch(g.k, batch),
                  expand_batch(g.v, batch),
                  mask,
                  batch,
                  L,
                  S,
                  E,
                  Ev,
                  opt.is_causal,
                  sc,
                  drop};
  const std::size_t bd = collapse_batch(batch, {&p.q, &p.k, &p.v, &p.mask}).shape.size();
  const std::uint64_t limit = dev.loop_limit();
  const bool drop_on = drop.p > 0;
  // The forward: the register-tiled kernel where its 32 KiB fit and one key block fits the loop
  // limit (GLTENSOR_ATTENTION=rows: never), else one row per invocation.
  const bool tiled_fits = !settings().attention_rows && ft.bkv > 0 && tiled_v_keys(E) > 0 && tiled_v_keys(Ev) > 0 &&
                          dev.caps().max_shared_memory >= kTiledSharedBytes;
  std::int64_t kchunk = tiled_fits ? flash_chunk(FlashMode::tiled, ft, E, Ev, S, bd, drop_on, limit) : -1;
  const bool tiled = tiled_fits && kchunk >= 0;
  if (!tiled && ft.bkv > 0) kchunk = flash_chunk(FlashMode::forward, ft, E, Ev, S, bd, drop_on, limit);
  // The backward likewise: the tiled dK/dV and dQ kernels where one block of each fits.
  std::int64_t bq_chunk = -1, bk_chunk = -1;
  bool tiled_bwd = false;
  if (grad && ft.bkv > 0) {
    // (the backward's batch operands include dO: at most batch.size() dims after merging)
    const std::size_t bdb = std::max<std::size_t>(batch.size(), bd);
    if (tiled_fits) {
      bq_chunk = flash_chunk(FlashMode::tiled_dkv, ft, E, Ev, L, bdb, drop_on, limit);
      bk_chunk = flash_chunk(FlashMode::tiled_dq, ft, E, Ev, S, bdb, drop_on, limit);
      tiled_bwd = bq_chunk >= 0 && bk_chunk >= 0;
    }
    if (!tiled_bwd) {
      bq_chunk = flash_chunk(FlashMode::dkv, ft, E, Ev, L, bdb, drop_on, limit);
      bk_chunk = flash_chunk(FlashMode::dq, ft, E, Ev, S, bdb, drop_on, limit);
    }
  }
  // The backward's f32 outputs, dK|dV [query-row chunks, batch, S, E + Ev] and dQ [key chunks,
  // batch, L, E], must fit the device's largest buffer (else the composite path, which splits
  // its scores by query rows).
  auto chunks = [](std::int64_t n, std::int64_t c) { return c > 0 ? (n + c - 1) / c : 1; };
  const bool bwd_fits = !grad || (bq_chunk >= 0 && bk_chunk >= 0 &&
                                  chunks(L, bq_chunk) * numel_of(batch) * S * (E + Ev) * 4 <= dev.ssbo_limit() &&
                                  chunks(S, bk_chunk) * numel_of(batch) * L * E * 4 <= dev.ssbo_limit());
  const bool flash = !settings().attention_composite && ft.bkv > 0 && dev.caps().max_ssbo_bindings >= 7 &&
                     kchunk >= 0 && !mask_grad && bwd_fits;
  if (flash) {
    const Forward f = flash_forward(p, ft, tiled, kchunk, od);
    Tensor out = f.out.reshape(user_shape);
    if (grad) {
      const Tensor qi = q_in, ki = k_in, vi = v_in, qv = g.q, kv = g.k, vv = g.v;
      const Tensor o = detach(f.out), lse = f.lse;
      const Problem pd{
          detach(p.q),   detach(p.k), detach(p.v), p.mask.defined() ? detach(p.mask) : Tensor(), batch, L, S, E, Ev,
          opt.is_causal, sc,          drop};
      autograd::record(
          out, {q_in, k_in, v_in},
          [pd, ft, tiled_bwd, o, lse, bq_chunk, bk_chunk, qi, ki, vi, qv, kv, vv, out_shape](const Tensor& gy) {
            NoGradGuard ng;
            const Grads gr = flash_backward(pd, ft, tiled_bwd, o, lse, gy.reshape(out_shape), bq_chunk, bk_chunk);
            auto back = [](const Tensor& gt, const Tensor& view, const Tensor& in) {
              return autograd::sum_to(gt, view.shape()).reshape(in.shape()).to(in.dtype());
            };
            return std::vector<Tensor>{requires_grad(qi) ? back(gr.dq, qv, qi) : Tensor(),
                                       requires_grad(ki) ? back(gr.dk, kv, ki) : Tensor(),
                                       requires_grad(vi) ? back(gr.dv, vv, vi) : Tensor()};
          },
          op);
    }
    return out;
  }

  // Composite: scores [..., L, S] -> mask -> softmax -> dropout -> matmul, for query rows
  // [l0, l0 + lc).
  const Tensor &q = g.q, &k = g.k, &v = g.v;
  auto rows = [&](std::int64_t l0, std::int64_t lc) {
    const Tensor qr = lc == L ? q : q.narrow(-2, l0, lc);
    Tensor s = matmul_fused(qr, k.transpose(-1, -2), Tensor(), sc, 0, Epilogue());  // [..., lc, S]
    if (opt.is_causal) s = where(tril(ones(q.device(), {lc, S}, DType::bool_), l0), s, -INFINITY);
    if (g.mask.defined()) {
      const Tensor mr = lc != L && g.mask.dim() >= 2 && g.mask.size(-2) == L ? g.mask.narrow(-2, l0, lc) : g.mask;
      s = g.mask.dtype() == DType::bool_ ? where(mr, s, -INFINITY) : add(s, mr);
    }
    Tensor a = softmax(s, -1);
    if (drop.p > 0)
      a = mul(a, detail::attention_dropout_keep(q.device(), batch, lc, S, drop.p, drop.seed, drop.offset, l0));
    return matmul(a, v);
  };
  // Scores past the device's max SSBO block: blocks of query rows whose scores fit (4-byte
  // floats), concatenated.
  const std::int64_t row_bytes = std::max<std::int64_t>(numel_of(batch) * S * 4, 1);
  const std::int64_t per = std::max<std::int64_t>(dev.ssbo_limit() / row_bytes, 1);
  Tensor out;
  if (L <= per) {
    out = rows(0, L);
  } else {
    std::vector<Tensor> parts;
    for (std::int64_t l0 = 0; l0 < L; l0 += per) parts.push_back(rows(l0, std::min(per, L - l0)));
    out = concat(parts, -2);
  }
  return g.on ? out.reshape(user_shape) : out;
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal,
                                    double scale) {
  AttentionOptions o;
  o.attn_mask = mask;
  o.is_causal = causal;
  o.scale = scale;
  return scaled_dot_product_attention(q, k, v, o);
}

}  // namespace gltensor
