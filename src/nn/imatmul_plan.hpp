// How the block-f32 integer matmul (glsl/nn/imatmul.comp) runs a product (internal): its tiling
// (outputs per invocation, tile width, K tile), where the int32 totals of K past one exact block
// live, the loop length per K tile, and whether a QDQ convolution's GEMM reads the 8-bit image in
// place (the implicit GEMM) or im2col's columns. Pure functions of the problem, the device's
// traits and Settings, unit-tested without a GPU (tests/nn/test_nn_plans.cpp).
#pragma once
#include <cstdint>

#include "../../glsl/nn/imatmul_tile.glsl"  // IMATMUL_TILE_ROWS: shared with glsl/nn/imatmul.comp
#include "nn/quant_int_variants.hpp"
#include "runtime/settings.hpp"

namespace gltensor::detail {

/// The kernel's tile rows (BM): every block-f32 form's tiles are kIMatmulTileRows x BN.
inline constexpr std::int64_t kIMatmulTileRows = IMATMUL_TILE_ROWS;
#undef IMATMUL_TILE_ROWS  // the kernel's name, not the includers': C++ uses kIMatmulTileRows
static_assert(kIMatmulTileRows % 16 == 0);

/// Values of K per exact f32 partial sum: 256 products of magnitude <= 255 * 255 stay below 2^24
/// (a multiple of every K tile the kernel takes, 8 and 16).
inline constexpr std::int64_t kIntBlockK = 256;
static_assert(kIntBlockK * 255 * 255 <= (std::int64_t{1} << 24) && kIntBlockK % 16 == 0);

/// c [batch, M, N] (+)= (a - za) [M, K] @ (b - zb) [K, N] per batch entry.
struct IMatmulProblem {
  std::int64_t M = 0, N = 0, K = 0, batch = 1;
  bool a_words = true, b_words = true;  ///< A read four bytes per word (K % 4 == 0), B likewise (N % 4 == 0)
};

struct IMatmulDevice {
  bool software = true;                 ///< a software rasterizer (llvmpipe), else a GPU
  std::int64_t max_shared = 0;          ///< bytes of shared memory per workgroup (Capabilities)
  std::int64_t max_invocations = 1024;  ///< invocations per workgroup (Capabilities)
};

struct IMatmulPlan {
  IMatmulVariant v;             ///< the tiling: bn, blocks, rb, bk, iblock_k, words, totals
  std::uint32_t local_x = 256;  ///< invocations per workgroup: (kIMatmulTileRows / 4 RB) (BN / 4 CB)
  std::int64_t per_tile = 80;   ///< loop iterations per K tile of v.bk values
  std::int64_t fixed = 240;     ///< loop iterations outside the K tiles
};

/// Workgroups of 64 x 128 tiles from which those are taken (software rasterizers: 8 x 8 per
/// invocation; GPUs: 4 x 8 with two K slices).
inline constexpr std::int64_t kWideGroups = 256;

/// GPUs: workgroups of 64 x 64 tiles below which 4 x 4 per invocation takes two K slices.
inline constexpr std::int64_t kFewGroups = 128;

/// The block-f32 kernel's form. Software rasterizers: 64 x 128 tiles of 8 x 8 where that makes at
/// least kWideGroups workgroups, else 64 x 64 of 8 x 8, totals in memory. GPUs: 64 x 128 tiles of
/// 4 x 8 with two K slices per workgroup (one where 48 KiB of shared memory do not fit) where that
/// makes at least kWideGroups workgroups, else 64 x 64 of 4 x 4 with A's tile swizzled, with K
/// in two slices (512 invocations) below kFewGroups workgroups; totals in registers, K tiles of 16. Settings
/// (GLTENSOR_IMATMUL, _TILE, _RB, _BLOCKS, _BK) force forms; the totals in shared memory only where they fit beside the
/// tiles (else registers), K tiles of 8 only where every invocation stages an A word per tile, two K slices (_SLICES)
/// for 8 x 8, 4 x 8 and 4 x 4 per invocation on GPUs, with the totals in registers;
/// GLTENSOR_IMATMUL_TILE=32: 64 x 32 tiles of 4 x 4 (a lab form); GLTENSOR_IMATMUL_BLOCKS=1: software
/// rasterizers' tiles 64 x 64 of 4 x 4, totals in registers (a test knob; GPUs keep their plan).
/// A's tile is swizzled (A_SWIZZLE) for the GPUs' 4 x 4 only, unless GLTENSOR_IMATMUL_SWIZZLE=0|1 (Settings::
/// imatmul_swizzle) turns it off / on for every form on any device (gltensor_iconv_forms_bench).
IMatmulPlan plan_imatmul(const IMatmulProblem& p, const IMatmulDevice& d, const Settings& s);

/// Shared memory of a form in bytes: the double-buffered f32 tiles, and the totals where in shared memory.
std::int64_t imatmul_shared_bytes(const IMatmulVariant& v);

/// The QDQ convolution's warp GEMM (glsl/nn/imatmul_warp.comp) with K in chunks over workgroups
/// (IW_SPLIT, then IW_SUM's summing requantization), for a product of M x N outputs per image over
/// K where the f32 matmul plan does not take the warp kernel: GPUs (or GLTENSOR_MATMUL_KERNEL=gpu),
/// no matmul kernel forced, M >= kIWarpSplitMinM, K >= kIWarpSplitMinK, fewer than
/// kIWarpSplitMaxTiles tiles of bm x 128 (bm 64 where M <= 64, else 128): chunks for about
/// kIWarpSplitTarget workgroups, each at least bm values of K, in K-tiles of bk 8.
/// splits 1: not split (the caller's exact implicit GEMM). On the H100 (bench/RESULTS.md,
/// 2026-11-28, int8ab) the wide QDQ net at 56x56 ran in 0.461 ms for about 528 workgroups a layer
/// (264: 0.490, 132: 0.574, 1056: 0.488; K-tiles of 16: 0.478-0.499; chunks of at least 64 on its
/// 128-row tiles: 0.473), the exact implicit GEMM's 0.73; the narrow net's 32 -> 64 layers (K 288)
/// lost on it (0.048 against 0.033 ms at 56x56, 0.057 against 0.053 at 112x112), its 64 -> 64
/// layer (K 576) gained (0.049 against 0.056 at 56x56 in chunks of at least 128, 0.042 of 64;
/// 0.062-0.067 against 0.096 at 112x112).
inline constexpr std::int64_t kIWarpSplitMinM = 64;
inline constexpr std::int64_t kIWarpSplitMinK = 512;
inline constexpr std::int64_t kIWarpSplitMaxTiles = 256;
inline constexpr std::int64_t kIWarpSplitTarget = 528;
struct IWarpSplit {
  std::int64_t splits = 1;
  int bm = 128, bk = 8;
};
IWarpSplit plan_iwarp_split(const IMatmulProblem& p, bool software, const Settings& s);

/// Whether a QDQ convolution's GEMM reads the 8-bit image in place (the implicit GEMM, every
/// device) rather than im2col's columns (GLTENSOR_ICONV_GEMM=im2col).
bool plan_iconv_implicit(const Settings& s);

}  // namespace gltensor::detail
