// The fused attention kernel's tiling and loop length (internal): pure functions of the device's
// traits and the settings, unit-tested without a GPU (tests/ops/test_plans.cpp).
#pragma once
#include <cstddef>
#include <cstdint>

#include "runtime/settings.hpp"

namespace gltensor::detail {

/// What the tiling depends on: subgroup shuffles usable in compute shaders (and allowed by the
/// settings), the subgroup size, the shared memory per workgroup in bytes.
struct AttentionDevice {
  bool shuffle = false;
  int subgroup_size = 0;
  int max_shared_memory = 0;
};

// The fused kernel's tiling (glsl/nn/attention.comp): BQ query rows per workgroup (2 * BQ
// invocations), 32 * KQ keys per tile, row reductions by subgroup shuffles or shared memory.
struct AttentionTiles {
  std::int64_t bq;
  int kq;
  bool subgroup;
};

/// Shared memory of a tiling: Q tile, K and V tiles, probabilities (in the K tile's memory when
/// KQ = 2), and without subgroups the row maxima and sums.
std::int64_t attention_shared_bytes(const AttentionTiles& t);

/// The largest tiling that fits the device: 64 query rows and 64 keys per tile with subgroup
/// reductions (48 KiB), else 64 rows and 32 keys (40 KiB, 44 KiB without subgroups), else 32
/// rows (24 or 30 KiB; llvmpipe has 32 KiB and no subgroups). Subgroup reductions need a row
/// group of 8 lanes inside one subgroup: subgroups of a multiple of 8 lanes that divide the
/// workgroup. Settings::attention_bq / attention_keys = 32 cap the tiling (tests run every
/// tiling the device has). bq = 0: none fits.
AttentionTiles plan_attention_tiles(const AttentionDevice& dev, const Settings& settings);

/// attention.comp's loop iterations per invocation, every loop counted (compilers unroll some):
/// per key tile the K/V stores and next loads (NLD quads, 4 lanes each without quad loads), the
/// score init, 16 head-dim quads, the row max/sum exchanges and the BKV-key products; before the
/// tiles the batch offsets and Q loads.
std::uint64_t attention_loops(const AttentionTiles& t, std::int64_t S, std::size_t bd);

}  // namespace gltensor::detail
