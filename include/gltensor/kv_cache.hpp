// Key/value caches for autoregressive decoding: preallocated K/V buffers per layer, appended per
// step, and attention of new queries over them (decode: one query per sequence; chunked prefill:
// several, causal within the chunk after the cached prefix). The sequences of a batch may hold
// different numbers of tokens. Each sequence's length lives on the GPU (an int32 tensor the
// kernels read, never a uniform), so that a decode step's dispatches are the same every step and
// a recorded step can be replayed with only that buffer changing; kv_cache_advance moves it on
// the GPU.
//
// One step of a layer (lengths = the tokens already cached, before the step):
//   kv_cache_append(k_cache, v_cache, k, v, lengths);       // writes at lengths[b] + t
//   y = kv_cache_attention(q, k_cache, v_cache, lengths);   // query t sees keys 0 .. lengths[b] + t
// and after the last layer: kv_cache_advance(lengths, T). KVCache bundles the layers' buffers,
// the lengths and a host-side count that checks max_len before the GPU sees an overflow.
//
// Source: flash-decoding (Dao, Haziza, Massa, Sizov, "Flash-Decoding for long-context
// inference", 2023): the keys are split into chunks whose partial softmax statistics (max, sum)
// and unnormalized outputs are combined in a second dispatch; within a chunk, the online softmax
// of FlashAttention (Dao et al. 2022).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "gltensor/tensor.hpp"

namespace gltensor {

/// Writes k [B, Hkv, T, E] and v [B, Hkv, T, Ev] (any views, float dtypes) into the caches
/// k_cache [B, Hkv, M, E] and v_cache [B, Hkv, M, Ev] (contiguous, M = max_len) at positions
/// lengths[b] .. lengths[b] + T - 1 of each sequence b, in one dispatch. lengths: int32 [B] on
/// the GPU (not changed here). A position >= M is not written; it is reported at the next read
/// as a LimitError naming kv_cache_append and max_len (detected on the GPU; KVCache checks on
/// the host first).
/// Errors: ShapeError for mismatched shapes, DTypeError for non-float tensors or lengths that
/// are not int32, ValueError for non-contiguous caches.
void kv_cache_append(const Tensor& k_cache, const Tensor& v_cache, const Tensor& k, const Tensor& v,
                     const Tensor& lengths);

/// lengths[b] += n for every sequence (one dispatch of B invocations, no read-back). lengths:
/// int32 [B]. ValueError for n < 0.
void kv_cache_advance(const Tensor& lengths, std::int64_t n);

/// Positions of a chunk of T new tokens: int32 [B, T] with positions[b, t] = lengths[b] + t (as
/// rope(x, positions) takes them).
Tensor kv_cache_positions(const Tensor& lengths, std::int64_t T);

/// Attention of q [B, Hq, T, E] (any view, float) over the cached keys and values:
///   out[b, h, t] = softmax_j(scale * q[b, h, t] . k_cache[b, h / (Hq / Hkv), j]) v_cache[...]
/// over keys j <= lengths[b] + t (causal: the T queries are the tokens at positions
/// lengths[b] .. lengths[b] + T - 1, already appended), -> [B, Hq, T, Ev] in q's dtype.
/// Grouped-query heads: Hq a multiple of Hkv (query head h reads K/V head h / (Hq / Hkv)), as
/// torch's scaled_dot_product_attention with enable_gqa. scale: 0 = 1 / sqrt(E). Keys are split
/// into chunks within the device's loop limit (kv_attention_plan), each chunk's partial results
/// combined by a second dispatch (none where one chunk covers max_len). A sequence whose
/// lengths[b] + t + 1 exceeds M sees only the M cached keys.
/// Errors: ShapeError (mismatched B, E, or Hq not a multiple of Hkv), DTypeError, LimitError
/// when max_len needs more chunks than the combine's loop limit.
Tensor kv_cache_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& lengths,
                          double scale = 0.0);

/// The chunking of kv_cache_attention: keys per chunk and chunks over max_len.
struct KvAttentionPlan {
  std::int64_t chunk = 0;   ///< keys per workgroup (a multiple of 64, 64 .. 1024)
  std::int64_t splits = 0;  ///< ceil(max_len / chunk)
  std::uint64_t loops = 0;  ///< the attention kernel's loop iterations per invocation
};
/// The chunk: max_len rounded up to a multiple of 64 where that is at most 1024 (one chunk: no
/// combine dispatch), else 512 keys (chunks in parallel: flash-decoding), less by 64 at a time
/// while the kernel's loops pass loop_limit; and the chunks over max_len. LimitError when even 64
/// keys do not fit, or when twice the chunks pass the limit (the combine loops over them).
KvAttentionPlan kv_attention_plan(std::int64_t max_len, std::int64_t E, std::int64_t Ev, std::uint64_t loop_limit);

/// The K/V buffers of a decoder's layers, [batch, kv_heads, max_len, head_dim] each (zeros at
/// first), and the cached lengths (int32 [batch], on the GPU). The host keeps a count of the
/// largest length for the max_len check, exact when the lengths change only through this class:
/// set_lengths() (never captured: CaptureError), and append(), advance() and reset(), eagerly or
/// as steps of a Recording that captured them (each replay checks and advances the count on the
/// host before its dispatches: a replay that would pass max_len throws append()'s LimitError and
/// dispatches nothing).
/// Lengths written otherwise (kv_cache_advance on lengths() itself) are checked on the GPU only
/// (kv_cache_append's LimitError at the next read). Copies share the buffers and the count.
class KVCache {
 public:
  KVCache() = default;
  /// ValueError for non-positive sizes.
  KVCache(const Device& dev, std::int64_t layers, std::int64_t batch, std::int64_t kv_heads, std::int64_t max_len,
          std::int64_t head_dim, DType dtype = DType::f32);

  /// Appends a step's k, v [batch, kv_heads, T, head_dim] of one layer at the current lengths.
  /// LimitError naming kv_cache_append and max_len when a sequence would pass max_len (on the
  /// host: here, and in each replay of a Recording that captured this append).
  void append(std::int64_t layer, const Tensor& k, const Tensor& v);
  /// Attention of q [batch, Hq, T, head_dim] over the layer's cache (after its append).
  Tensor attention(std::int64_t layer, const Tensor& q, double scale = 0.0) const;
  /// After every layer appended T tokens: lengths += T on the GPU (and the host's count, also
  /// in each replay of a Recording that captured it).
  void advance(std::int64_t T);
  /// Positions of the next T tokens (int32 [batch, T]), for rope.
  Tensor positions(std::int64_t T) const { return kv_cache_positions(lengths_, T); }
  /// Sets every sequence's length (uploads; the cached K/V past them is ignored and overwritten).
  /// ShapeError for a count other than batch, LimitError for a length outside [0, max_len],
  /// CaptureError while a Recording is being captured on the cache's device (the replays would
  /// restore these values each time): a captured decode step reads the lengths from the GPU
  /// buffer, so set them before the capture or between replays, and advance() them inside it.
  void set_lengths(std::span<const std::int32_t> lengths);
  /// Every length (and the host's count) to 0; captured, each replay sets them to 0 again.
  /// Nothing for a default-constructed or moved-from cache.
  void reset();

  const Tensor& key(std::int64_t layer) const { return k_.at(static_cast<std::size_t>(layer)); }
  const Tensor& value(std::int64_t layer) const { return v_.at(static_cast<std::size_t>(layer)); }
  const Tensor& lengths() const { return lengths_; }
  std::int64_t layers() const { return static_cast<std::int64_t>(k_.size()); }
  std::int64_t batch() const { return lengths_.defined() ? lengths_.size(0) : 0; }
  std::int64_t max_len() const { return max_len_; }
  /// The longest sequence as the host counts it (replays of captured steps included).
  std::int64_t max_length() const { return host_max_ ? *host_max_ : 0; }

 private:
  std::vector<Tensor> k_, v_;
  Tensor lengths_;
  std::int64_t max_len_ = 0;
  // The host's count, shared with the host steps of Recordings that captured this cache's ops.
  std::shared_ptr<std::int64_t> host_max_ = std::make_shared<std::int64_t>(0);
};

}  // namespace gltensor
