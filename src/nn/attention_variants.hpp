// The Variants (runtime/variant.hpp) of the attention kernels (internal): attention.comp (the
// tiled forward, attention_plan's AttentionTiles), attention_flash.comp (one row per
// invocation: forward, dK/dV, dQ and the dropout mask, attention_plan's FlashTiles) and
// attention_tiled.comp (the register-tiled flash forward, attention_plan's tiled_*).
#pragma once
#include <cstdint>
#include <vector>

#include "gltensor/dtype.hpp"
#include "runtime/variant.hpp"

namespace gltensor::detail {

/// attention.comp: BD batch dims, BQ query rows and KQ x 32 keys per tile, DQL head-dim quads
/// (4, 8, 16), SUBGROUP (shuffle reductions), SPLIT_KV (partial results per key chunk), Q_QUADS / KV_QUADS (f32 q / k
/// and v also read as vec4 arrays qQ / qK, qV at the bindings after the four operands); COMBINE (with
/// split_kv: the chunks merged by their last workgroup; out the result, the f32 partials and the
/// arrival counters at the two bindings after the quad arrays, WS_BINDING and CNT_BINDING).
struct AttentionVariant {
  static constexpr const char* kFile = "attention.comp";
  int bd = 1;
  std::int64_t bq = 32;
  int kq = 1, dql = 16;
  bool subgroup = false, split_kv = false, q_quads = false, kv_quads = false, combine = false;
  DType out = DType::f32, q = DType::f32, k = DType::f32, v = DType::f32;
  /// The binding of the partials' workspace under COMBINE (the counters' is the next).
  int ws_binding() const { return 4 + (q_quads ? 1 : 0) + (kv_quads ? 2 : 0); }
  Defines defines() const;
  static std::vector<AttentionVariant> space();
};

/// attention_lanes.comp: BD batch dims, G lanes per query row, KPL keys per lane per tile, DQ
/// head-dim quads (attention_plan's LaneTiles), SH_QUADS its shared quads for `local` invocations
/// (lanes_shared_bytes); Q_QUADS / KV_QUADS as AttentionVariant's.
struct AttentionLanesVariant {
  static constexpr const char* kFile = "attention_lanes.comp";
  int bd = 1, local = 128, lanes = 16, keys = 8, dq = 4;
  bool q_quads = false, kv_quads = false;
  DType out = DType::f32, q = DType::f32, k = DType::f32, v = DType::f32;
  Defines defines() const;
  static std::vector<AttentionLanesVariant> space();
};

/// attention_block.comp: BD batch dims, BR query rows, DQ head-dim quads, SH_QUADS its shared score quads for
/// `local` invocations and sk keys (attention_plan's BlockTiles, block_shared_bytes); Q_QUADS / KV_QUADS as
/// AttentionVariant's.
struct AttentionBlockVariant {
  static constexpr const char* kFile = "attention_block.comp";
  int bd = 1, local = 256, rows = 16, dq = 16;
  std::int64_t sk = 64;
  bool q_quads = false, kv_quads = false;
  DType out = DType::f32, q = DType::f32, k = DType::f32, v = DType::f32;
  Defines defines() const;
  static std::vector<AttentionBlockVariant> space();
};

/// attention_flash.comp: MODE by name (attn_fwd, attn_dkv, attn_dq, attn_keep: the dropout mask
/// alone); BD, DQ4 / DV4 (head dims in quads), BKV and BQT (tiles), SPLIT (partial results per
/// chunk), DROPOUT, a mask (HAS_MASK with MASK_BOOL or MASK_ADD, LOAD_MASK its load function),
/// CONST_DIMS (GPUs: the head-dim loops bounded by DQ4 / DV4, unrolled, arrays in registers).
struct FlashAttentionVariant {
  static constexpr const char* kFile = "attention_flash.comp";
  enum class Mask { none, bool_, add };
  const char* mode = "attn_fwd";
  int bd = 1;
  std::int64_t dq4 = 16, dv4 = 16, bkv = 32, bqt = 32;
  bool split = false, dropout = false, const_dims = false;
  Mask mask = Mask::none;
  /// attn_fwd: out (the result, or f32 partials with SPLIT), q, k, v; the backward modes: dout.
  DType out = DType::f32, q = DType::f32, k = DType::f32, v = DType::f32, dout = DType::f32, mask_dtype = DType::bool_;
  Defines defines() const;
  static std::vector<FlashAttentionVariant> space();
};

/// attention_tiled.comp: MODE by name (tiled_fwd, tiled_dkv, tiled_dq); BD batch dims, DQ4 / DV4
/// (head dims in quads), VKQ / VK (rows per K or Q chunk / per V or dO chunk, tiled_v_keys), NQQ /
/// NVQ (accumulator quads per invocation: ceil(DQ4 / 16), ceil(DV4 / 16)), SPLIT, DROPOUT and the
/// mask as FlashAttentionVariant's; operands as attention_flash.comp's in the same modes. UNIFORM_DIMS
/// (uniform_dims; llvmpipe, dq4 and dv4 <= 16): DQ4 / DV4 not defined, the uniforms u_dq4 / u_dv4 instead.
struct TiledAttentionVariant {
  static constexpr const char* kFile = "attention_tiled.comp";
  using Mask = FlashAttentionVariant::Mask;
  const char* mode = "tiled_fwd";
  int bd = 1;
  std::int64_t dq4 = 16, dv4 = 16, vkq = 64, vk = 64;
  bool split = false, dropout = false, uniform_dims = false;
  Mask mask = Mask::none;
  /// tiled_fwd: out (the result, or f32 partials with SPLIT), q, k, v; the backward modes: dout.
  DType out = DType::f32, q = DType::f32, k = DType::f32, v = DType::f32, dout = DType::f32, mask_dtype = DType::bool_;
  Defines defines() const;
  static std::vector<TiledAttentionVariant> space();
};

}  // namespace gltensor::detail
