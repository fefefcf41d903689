// bf16 rows of gltensor_precision_error (docs/precision.md, "bf16"): bf16 tensors (storage) with
// f32 math, against a float64 host reference on the same bf16-rounded inputs.
#pragma once

#include <cstddef>
#include <random>

#include "gltensor/gltensor.hpp"

namespace glt_bench {

/// Prints the bf16 table (op, shape, max / mean error, bound); matmul/conv2d outputs are sampled
/// (`samples` of them) on large shapes.
void bf16_rows(gltensor::Device& dev, std::mt19937_64& rng, std::size_t samples);

}  // namespace glt_bench
