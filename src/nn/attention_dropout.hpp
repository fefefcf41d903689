// The dropout mask of the fused attention kernels (internal; tests compare the composite path
// with the fused one on the same mask).
#pragma once
#include <cstdint>

#include "gltensor/tensor.hpp"

namespace gltensor::detail {

/// The dropout scales Z [batch..., L, S] (f32: 1 / (1 - p) where kept, else 0) that
/// glsl/nn/attention_flash.comp draws for a problem of `batch` (the flattened batch index is
/// Philox's counter word 2) with Philox key `seed` and counter word 3 `offset` (a Generator's
/// next_offset()), for the global query rows row0, row0 + 1, ..., row0 + L - 1.
Tensor attention_dropout_keep(const Device& device, const Shape& batch, std::int64_t L, std::int64_t S, double p,
                              std::uint64_t seed, std::uint64_t offset, std::int64_t row0 = 0);

}  // namespace gltensor::detail
