// Sampling the next token from logits on the GPU: temperature, top-k, top-p (nucleus), seeded,
// greedy at temperature 0. The result is an int32 tensor on the GPU (nothing is read back), so
// that it can feed the next decode step's embedding directly.
//
// The filters follow Hugging Face transformers' logits warpers, applied in this order:
// temperature (logits / T), top-k (TopKLogitsWarper: keep the logits >= the k-th largest; ties
// with it are kept), top-p (TopPLogitsWarper, Holtzman et al., "The Curious Case of Neural Text
// Degeneration", ICLR 2020: keep the smallest set of the largest probabilities, renormalized
// over what top-k kept, whose mass reaches top_p; ties at the cut are kept). The token is then
// drawn from the kept probabilities with one uniform number of Philox4x32-10 (random.hpp).
// NaN logits are never drawn; a row of only NaN (or -inf) logits gives token 0.
#pragma once
#include <cstdint>

#include "gltensor/random.hpp"
#include "gltensor/tensor.hpp"

namespace gltensor {

struct SamplingOptions {
  double temperature = 1.0;  ///< 0: greedy (the first index of the largest logit, as argmax)
  std::int64_t top_k = 0;    ///< keep the k largest logits (0: all)
  double top_p = 1.0;        ///< nucleus mass in (0, 1] (1: all)
};

/// One token per row of logits [B, V] (or [V]: one token; any float dtype and view) ->
/// int32 [B] (or []). Draws with gen's seed at its next offset (advancing it).
/// Errors: ShapeError for other ranks or V = 0; DTypeError for non-float logits; ValueError for
/// temperature < 0, top_k < 0 or top_p outside (0, 1]; LimitError for vocabularies past the
/// device's loop limit (about 260,000 on llvmpipe).
Tensor sample_tokens(const Tensor& logits, const SamplingOptions& opt, Generator& gen);
/// As above, the draw of row b keyed by (seed, b, counter[b]) with counter an int32 [B] tensor on
/// the GPU (e.g. the KV cache's lengths: a new draw per position, with no value from the host
/// changing between steps, so that a recorded decode step can be replayed).
Tensor sample_tokens(const Tensor& logits, const SamplingOptions& opt, std::uint64_t seed, const Tensor& counter);

}  // namespace gltensor
