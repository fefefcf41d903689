// Kernel lab mode `variants` (kernel_lab_variants.cpp): the library's own kernels timed through
// Launch, the candidates being their Variants.
#pragma once
#include "gltensor/device.hpp"

namespace gltensor::lab {

/// Prints a table per problem (matmul shapes, elementwise add); check: tiny sizes, one run per
/// candidate, every element against the float64 reference. Returns the failed candidates.
int lab_variants(Device& dev, bool check);
/// Mode `addvariants`: add's forms alone (vec4 with 1, 2, 4 and 8 quads per invocation among
/// them) at 2^20, 2^24 and 2^26 elements (check: a few odd sizes). Returns the failed candidates.
int lab_add_variants(Device& dev, bool check);

/// Mode `warp`: the quad-load and warp-tiled matmul kernels' forms at 1024 .. 8192 and a few
/// non-square or edge shapes (`only` > 0: only the square size `only`).
int lab_warp(Device& dev, bool check, std::int64_t only);
/// Mode `splitk`: the quad-load and warp kernels split over K in 1 to 8 chunks, on shapes of few
/// output tiles and long K (the planner's split-K rule). Returns the failed candidates.
int lab_splitk(Device& dev, bool check);

}  // namespace gltensor::lab
