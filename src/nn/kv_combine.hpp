// The split-KV combine shared by the KV cache's attention and scaled_dot_product_attention's key
// split: one dispatch of glsl/nn/kv_attention.comp's kv_combine.
#pragma once
#include <cstdint>

#include "gltensor/tensor.hpp"

namespace gltensor::detail {

class DeviceImpl;

/// Combines `chunks` partial results `partials` [chunks, rows, Ev + 2] f32 (per row o [Ev], then
/// m and l: the chunk's unnormalized output, its largest logit in log2 units and its sum of
/// exp2(logit - m)) into `out` [rows, Ev] (any float dtype, contiguous): with M a row's largest m
/// over the chunks that have keys (l != 0), out = sum(o exp2(m - M)) / sum(l exp2(m - M)); NaN
/// propagates; a row with no keys in any chunk is 0 / 0. The dispatch is named `op`.
void kv_combine(DeviceImpl& dev, const char* op, const Tensor& partials, const Tensor& out, std::int64_t rows,
                std::int64_t Ev, std::int64_t chunks);

}  // namespace gltensor::detail
