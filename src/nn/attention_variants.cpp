// The attention kernels' Variants (attention_variants.hpp): defines and variant spaces.
#include "nn/attention_variants.hpp"

#include <algorithm>
#include <string>

namespace gltensor::detail {

namespace {
// out, q, k, v as operands 0-3; the quad views of q (Q_QUADS) and of k and v (KV_QUADS) as the
// arrays qQ, qK, qV at the bindings after them, in that order (attention.comp, attention_lanes.comp).
void qkv_operands(Defines& d, DType out, DType q, DType k, DType v, bool q_quads, bool kv_quads) {
  d.operand(0, out, CT::f32, true).operand(1, q, CT::f32, false).operand(2, k, CT::f32, false);
  d.operand(3, v, CT::f32, false);
  int binding = 4;
  if (q_quads) d.flag("Q_QUADS").quad_array("qQ", binding++);
  if (kv_quads) {
    d.flag("KV_QUADS").quad_array("qK", binding);
    d.quad_array("qV", binding + 1);
  }
}
}  // namespace

Defines AttentionVariant::defines() const {
  Defines d;
  if (subgroup) d.subgroup(SubgroupFeature::shuffle);
  d.value("BD", bd).uvalue("BQ", static_cast<std::uint64_t>(bq)).value("KQ", kq).flag("SPLIT_KV", split_kv);
  d.value("DQL", dql);  // (a plain int: the kernel's #if compares it)
  qkv_operands(d, out, q, k, v, q_quads, kv_quads);
  if (split_kv && combine) d.flag("COMBINE").value("WS_BINDING", ws_binding()).value("CNT_BINDING", ws_binding() + 1);
  return d;
}

std::vector<AttentionVariant> AttentionVariant::space() {
  std::vector<AttentionVariant> out;
  for (std::int64_t bq : {32, 64})
    for (int kq : {1, 2})
      for (bool subgroup : {false, true}) {
        if (kq == 2 && !subgroup) continue;  // 64-key tiles need subgroup reductions
        for (int f = 0; f < 8; ++f) {
          AttentionVariant v;
          v.bq = bq, v.kq = kq, v.subgroup = subgroup, v.split_kv = f & 1, v.q_quads = f & 2, v.kv_quads = f & 4;
          if (v.split_kv) v.out = DType::f32;
          out.push_back(v);
          if (v.split_kv) {  // the chunks merged in the dispatch (the result in any float dtype)
            v.combine = true, v.out = f & 2 ? DType::f32 : DType::f16;
            out.push_back(v);
          }
        }
      }
  for (DType dt : {DType::f16, DType::bf16}) {
    AttentionVariant v;
    v.bd = 3, v.out = v.q = v.k = v.v = dt;
    out.push_back(v);
  }
  // narrow_attention_tiles' small heads and row blocks: 4 or 8 head-dim quads, 16 rows
  for (const int dql : {4, 8})
    for (const bool subgroup : {false, true}) {
      AttentionVariant v;
      v.bq = 16, v.dql = dql, v.subgroup = subgroup, v.kq = subgroup ? 2 : 1, v.kv_quads = subgroup;
      out.push_back(v);
    }
  return out;
}

Defines AttentionLanesVariant::defines() const {
  Defines d;
  const std::int64_t kv = 2 * std::int64_t{lanes} * keys * dq, combine = std::int64_t{local} * dq;
  d.value("BD", bd).value("G", lanes).value("KPL", keys).value("DQ", dq);
  d.uvalue("SH_QUADS", static_cast<std::uint64_t>(std::max(kv, combine)));
  qkv_operands(d, out, q, k, v, q_quads, kv_quads);
  return d;
}

// At 64 invocations (tests/ops/test_kernel_variants' local size): every head-dim width, lanes per
// row and keys per lane, the quad arrays, and the 16-bit dtypes.
std::vector<AttentionLanesVariant> AttentionLanesVariant::space() {
  std::vector<AttentionLanesVariant> out;
  for (const int dq : {4, 8, 16})
    for (const int lanes : {4, 8, 16, 32})
      for (const int keys : {1, 2, 4, 8}) {
        if (lanes * keys * dq < 64) continue;
        AttentionLanesVariant v;
        v.local = 64, v.lanes = lanes, v.keys = keys, v.dq = dq, v.q_quads = keys == 2, v.kv_quads = keys != 4;
        out.push_back(v);
      }
  for (DType dt : {DType::f16, DType::bf16}) {
    AttentionLanesVariant v;
    v.local = 64, v.bd = 3, v.out = v.q = v.k = v.v = dt;
    out.push_back(v);
  }
  return out;
}

Defines AttentionBlockVariant::defines() const {
  Defines d;
  d.value("BD", bd).value("BR", rows).value("DQ", dq);
  d.uvalue("SH_QUADS", static_cast<std::uint64_t>(std::max<std::int64_t>(sk * (rows / 4), 4 * std::int64_t{local})));
  qkv_operands(d, out, q, k, v, q_quads, kv_quads);
  return d;
}

// At 64 invocations (tests/ops/test_kernel_variants' local size): every head-dim width, 4 to 16 rows, the quad
// arrays, and the 16-bit dtypes.
std::vector<AttentionBlockVariant> AttentionBlockVariant::space() {
  std::vector<AttentionBlockVariant> out;
  for (const int dq : {4, 8, 16})
    for (const int rows : {4, 8, 16}) {
      if (rows / 4 * dq > 64) continue;
      AttentionBlockVariant v;
      v.local = 64, v.rows = rows, v.dq = dq, v.q_quads = rows == 8, v.kv_quads = rows != 4;
      out.push_back(v);
    }
  for (DType dt : {DType::f16, DType::bf16}) {
    AttentionBlockVariant v;
    v.local = 64, v.bd = 3, v.dq = 8, v.out = v.q = v.k = v.v = dt;
    out.push_back(v);
  }
  return out;
}

namespace {
struct FlashDTypes {
  DType out, q, k, v, dout, mask;
};
// The flash kernels' mask flags and operands (attention_flash.comp, attention_tiled.comp):
// forward: 0 out, 1 q, 2 k, 3 v, 4 lse (not split); backward: 0 out (f32), 1 q, 2 k, 3 v, 4 stats,
// 5 dO; then the mask, read by LOAD_MASK.
void flash_operands(Defines& d, bool forward, bool split, FlashAttentionVariant::Mask mask, const FlashDTypes& t) {
  using Mask = FlashAttentionVariant::Mask;
  static const char* loads[] = {"load0", "load1", "load2", "load3", "load4", "load5", "load6"};
  if (mask != Mask::none) d.flag("HAS_MASK").flag(mask == Mask::bool_ ? "MASK_BOOL" : "MASK_ADD");
  d.operand(0, forward ? t.out : DType::f32, CT::f32, true).operand(1, t.q, CT::f32, false);
  d.operand(2, t.k, CT::f32, false).operand(3, t.v, CT::f32, false);
  int n = 4;
  if (forward && !split) d.operand(n++, DType::f32, CT::f32, true);  // lse
  if (!forward) {
    d.operand(4, DType::f32, CT::f32, false).operand(5, t.dout, CT::f32, false);
    n = 6;
  }
  if (mask != Mask::none) {
    d.operand(n, t.mask, mask == Mask::bool_ ? CT::i32 : CT::f32, false);
    d.ident("LOAD_MASK", loads[n]);
  }
}
}  // namespace

Defines FlashAttentionVariant::defines() const {
  Defines d;
  d.ident("MODE", mode);
  const std::string m = mode;
  if (m == "attn_keep") {
    d.operand(0, DType::f32, CT::f32, true);
    return d;
  }
  d.value("BD", bd).uvalue("DQ4", static_cast<std::uint64_t>(dq4)).uvalue("DV4", static_cast<std::uint64_t>(dv4));
  d.uvalue("BKV", static_cast<std::uint64_t>(bkv)).uvalue("BQT", static_cast<std::uint64_t>(bqt));
  d.flag("SPLIT", split).flag("DROPOUT", dropout).flag("CONST_DIMS", const_dims);
  flash_operands(d, m == "attn_fwd", split, mask, {out, q, k, v, dout, mask_dtype});
  return d;
}

std::vector<FlashAttentionVariant> FlashAttentionVariant::space() {
  std::vector<FlashAttentionVariant> out;
  for (const char* mode : {"attn_fwd", "attn_dkv", "attn_dq"})
    for (int f = 0; f < 4; ++f)
      for (Mask mask : {Mask::none, Mask::bool_, Mask::add}) {
        FlashAttentionVariant v;
        v.mode = mode, v.split = f & 1, v.dropout = f & 2, v.mask = mask;
        v.mask_dtype = mask == Mask::add ? DType::f32 : DType::bool_;
        if (v.split && std::string(mode) == "attn_fwd") v.out = DType::f32;
        out.push_back(v);
      }
  for (DType dt : {DType::f16, DType::bf16}) {
    FlashAttentionVariant v;
    v.bd = 2, v.dq4 = 32, v.dv4 = 8, v.out = v.q = v.k = v.v = v.dout = dt;
    out.push_back(v);
    v.mode = "attn_dq";
    out.push_back(v);
  }
  {  // the GPUs' form: constant head-dim bounds
    FlashAttentionVariant v;
    v.const_dims = true;
    for (const char* mode : {"attn_fwd", "attn_dkv", "attn_dq"}) {
      v.mode = mode;
      out.push_back(v);
    }
  }
  FlashAttentionVariant keep;
  keep.mode = "attn_keep";
  out.push_back(keep);
  return out;
}

Defines TiledAttentionVariant::defines() const {
  Defines d;
  d.ident("MODE", mode).value("BD", bd);
  if (uniform_dims)
    d.flag("UNIFORM_DIMS");
  else
    d.uvalue("DQ4", static_cast<std::uint64_t>(dq4)).uvalue("DV4", static_cast<std::uint64_t>(dv4));
  d.uvalue("VKQ", static_cast<std::uint64_t>(vkq)).uvalue("VK", static_cast<std::uint64_t>(vk));
  d.uvalue("NQQ", static_cast<std::uint64_t>((dq4 + 15) / 16))
      .uvalue("NVQ", static_cast<std::uint64_t>((dv4 + 15) / 16));
  d.flag("SPLIT", split).flag("DROPOUT", dropout);
  flash_operands(d, std::string(mode) == "tiled_fwd", split, mask, {out, q, k, v, dout, mask_dtype});
  return d;
}

std::vector<TiledAttentionVariant> TiledAttentionVariant::space() {
  std::vector<TiledAttentionVariant> out;
  for (const char* mode : {"tiled_fwd", "tiled_dkv", "tiled_dq"})
    for (int f = 0; f < 4; ++f)
      for (Mask mask : {Mask::none, Mask::bool_, Mask::add}) {
        TiledAttentionVariant v;
        v.mode = mode, v.split = f & 1, v.dropout = f & 2, v.mask = mask;
        v.mask_dtype = mask == Mask::add ? DType::f32 : DType::bool_;
        out.push_back(v);
      }
  for (const std::int64_t d4 : {1, 32, 64})  // the head dims' chunks: 64, 32, 16 rows
    for (const char* mode : {"tiled_fwd", "tiled_dkv", "tiled_dq"}) {
      TiledAttentionVariant v;
      v.mode = mode, v.bd = 2, v.dq4 = 65 - d4, v.dv4 = d4;
      v.vkq = v.dq4 <= 16 ? 64 : v.dq4 <= 32 ? 32 : 16, v.vk = d4 <= 16 ? 64 : 1024 / d4;
      v.out = v.q = v.k = v.v = v.dout = d4 == 32 ? DType::f16 : DType::f32;
      out.push_back(v);
    }
  for (const char* mode : {"tiled_fwd", "tiled_dkv", "tiled_dq"}) {  // llvmpipe's form: head dims as uniforms
    TiledAttentionVariant v;
    v.mode = mode, v.uniform_dims = true, v.mask = Mask::bool_;
    out.push_back(v);
  }
  return out;
}

}  // namespace gltensor::detail
