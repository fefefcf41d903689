// The Variants (runtime/variant.hpp) of the transformer kernels (internal): rope.comp (rotary
// position embeddings), glu.comp (the gated units SwiGLU / GEGLU), and decoding's kv_cache.comp,
// kv_attention.comp and sample.comp.
#pragma once
#include <cstdint>
#include <vector>

#include "gltensor/dtype.hpp"
#include "gltensor/transformer.hpp"
#include "runtime/variant.hpp"

namespace gltensor::detail {

/// rope.comp: INTERLEAVED pairs, HAS_POS (positions read, operand 2; POS_BATCH: per batch
/// entry), STRIDED input rows (KD: the row index's dims).
struct RopeVariant {
  static constexpr const char* kFile = "rope.comp";
  bool interleaved = false, has_pos = false, pos_batch = false, strided = false;
  int kd = 1;
  DType x = DType::f32, pos = DType::i32;
  Defines defines() const;
  static std::vector<RopeVariant> space();
};

/// glu.comp: ACT / DACT by name (act_silu, act_gelu, act_gelu_tanh and their derivatives),
/// FUSED (gate and up halves of one tensor), BACKWARD.
struct GluVariant {
  static constexpr const char* kFile = "glu.comp";
  GluActivation act = GluActivation::silu;
  bool fused = false, backward = false;
  /// Forward: out, gate, up; backward: dgate (out), dup (dup), gy, gate, up.
  DType out = DType::f32, gate = DType::f32, up = DType::f32, gy = DType::f32, dup = DType::f32;
  Defines defines() const;
  static std::vector<GluVariant> space();
};

/// kv_cache.comp: MODE by name: kv_append (k, v rows into the caches at the lengths),
/// kv_advance (lengths += n), kv_positions (each sequence's next positions).
struct KvCacheVariant {
  static constexpr const char* kFile = "kv_cache.comp";
  const char* mode = "kv_append";
  DType k_cache = DType::f32, v_cache = DType::f32, k = DType::f32, v = DType::f32;  ///< kv_append's operands
  Defines defines() const;
  static std::vector<KvCacheVariant> space();
};

/// kv_attention.comp: MODE by name: kv_partial (a chunk of CHUNK keys per workgroup, head dims up
/// to EMAX; SINGLE: one chunk, the result written directly), kv_combine (the chunks' results
/// merged).
struct KvAttentionVariant {
  static constexpr const char* kFile = "kv_attention.comp";
  const char* mode = "kv_partial";
  std::int64_t chunk = 1, emax = 1;
  bool single = false;
  /// out: kv_partial's workspace (or the result where SINGLE), kv_combine's result.
  DType out = DType::f32, q = DType::f32, k_cache = DType::f32, v_cache = DType::f32;
  Defines defines() const;
  static std::vector<KvAttentionVariant> space();
};

/// sample.comp: GREEDY (argmax), else temperature sampling with TOP_K / TOP_P; HAS_COUNTER (the
/// draw's offset read from a tensor, operand 2).
struct SampleVariant {
  static constexpr const char* kFile = "sample.comp";
  bool greedy = false, top_k = false, top_p = false, has_counter = false;
  DType logits = DType::f32;
  Defines defines() const;
  static std::vector<SampleVariant> space();
};

}  // namespace gltensor::detail
