// How a matmul runs on a device (internal): the kernel variant, its tiles and workgroups, split-K
// and the loop length of one invocation. A pure function of the problem, the device's traits and
// the settings, unit-tested without a GPU (tests/ops/test_plans.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gltensor/device.hpp"
#include "gltensor/dtype.hpp"
#include "runtime/settings.hpp"

namespace gltensor::detail {

struct MatmulProblem {
  std::int64_t M = 0, N = 0, K = 0;
  std::int64_t batch = 1;  ///< product of the (broadcast) batch dims
  DType out = DType::f32;  ///< result dtype
  bool quads = false;      ///< both operands read as aligned quads (see vec4_layout in matmul.cpp)
  /// Quad loads the operands allow (offsets and other strides multiples of 4): A 1 along K, 2
  /// along M (M % 4 == 0); B 1 along N (N % 4 == 0), 2 along K; 0 none.
  int a_quads = 0, b_quads = 0;
  bool b_kmajor = false;       ///< B's elements contiguous along K (linear's w.t()): GEMV reads them coalesced
  bool split_columns = false;  ///< the caller wants the [N / split, M, split] epilogue (conv2d)
  Precision precision = Precision::f32;  ///< the device's precision setting (Device::precision)
};

struct DeviceTraits {
  bool software = false;         ///< a CPU rasterizer (llvmpipe): bigger tiles, fewer workgroups
  std::uint64_t loop_limit = 0;  ///< loop iterations one invocation may run (0 = unlimited)
  bool fp16_arithmetic = false;  ///< f16 math in matmul's shaders (DeviceImpl::fp16_matmul)
  /// Shared memory per workgroup in bytes (Capabilities::max_shared_memory; llvmpipe: 32768).
  std::int64_t max_shared = 49152;
};

struct MatmulPlan {
  enum class Kernel { vec4, tile64, tile128, reg, gemv, f16x2, warp };
  Kernel kernel = Kernel::tile64;
  /// Rows of C x columns (output features) of a workgroup (GEMV: up to 8 rows x kGemvFeatures).
  std::int64_t tile_m = 64, tile_n = 64;
  /// Quad-load kernel variant: bit 0 sliced K (256 invocations), bit 1 inner product unrolled.
  int variant = 0;
  /// Measure the quad-load variants on first use (Tuner), under tune_key: all four, or only the
  /// unsliced ones (0 and 2) where the sliced variant's shared memory exceeds the device's
  /// (tune_sliced false; tune_key then ends in "/u"). matmul_variants lists them.
  bool tune = false;
  bool tune_sliced = true;
  std::string tune_key;
  /// Split-K: `splits` partial products over K ranges of `kchunk` (a multiple of 16), summed
  /// afterwards with the epilogue applied there. 1 = no split.
  std::int64_t splits = 1, kchunk = 0;
  /// The SPLIT_COLS epilogue applies (only without split-K, with the quad-load, packed-half, warp or REG kernel).
  bool split_columns = false;
  /// REG kernel: each invocation computes reg_rows x 4 reg_quads of C; its quad loads of A and B
  /// (MatmulProblem::a_quads / b_quads, 0 = scalar loads).
  int reg_rows = 0, reg_quads = 0;
  int a_quad = 0, b_quad = 0;
  /// REG kernel, K sliced (GPUs' few small tiles, kSlicedMaxTiles): reg_slices invocations per
  /// block (local_y), each over reg_kslice values of K (a multiple of 4) of the split's range,
  /// their sums added in shared memory; 1 = one invocation per block over the whole range.
  int reg_slices = 1;
  std::int64_t reg_kslice = 0;
  /// Warp-tiled kernel (matmul_warp.comp): tile_m x tile_n tiles (set_warp_tile), warp_bk values
  /// of K per shared-memory tile (8 or 16), an 8 x warp_tn block of C per invocation (8 or 16),
  /// warp_lanes: a warp's invocations as 8 x 4 neighbours; warp_edge: tiles past M, N or K checked.
  int warp_bk = 8, warp_tn = 8;
  bool warp_lanes = true, warp_edge = false;
  bool warp_k_loop = false;  ///< warp: the K step looped (K_LOOP), else written out
  /// warp: operands read as quads along K (A_KMAJOR / B_KMAJOR) kept K-major in shared memory
  /// (A_SHK / B_SHK: one 128-bit store per quad, no transposing scalar stores); TN 8 only.
  bool warp_shk = false;
  std::uint32_t local_x = 16, local_y = 16;
  std::uint64_t groups_x = 0, groups_y = 0, groups_z = 0;
  /// F16_MATH: K values per f16 partial sum (kF16BlockK; a multiple of every kernel's K-tile);
  /// 0 = f32 products and sums.
  std::int64_t f16_block = 0;
  /// Worst-case loop iterations of one invocation (every variant the tuner may pick).
  std::uint64_t loop_iterations = 0;
};

/// The warp-tiled kernel's 128 x 128 tiles (batch entries included) from which the planner picks
/// it on GPUs (quad operands, f32 math).
inline constexpr std::int64_t kWarpMinTiles = 256;
/// With A read along K (kept K-major in shared memory): the warp kernel's whole 64 x 128 tiles (over
/// K >= 512 with row-major B, K >= 1024 with K-major B) from which the planner also picks it on GPUs (below
/// kWarpMinTiles), its 128 x 128 tiles with K-major B from which it picks those, and the 64 x 128 form's tiles
/// (row-major B) up to which it splits K in two.
inline constexpr std::int64_t kWarpMinShkTiles = 128, kWarpMinKmajorTiles = 128, kWarpSplitTiles = 512;
/// The 64 x 128 form with row-major B over K >= kWarpMinShortK where the result is written in column groups
/// (split_columns) and the quad-load tiles are kWarpMinShkTiles to 255: the CNN's conv2 forward [64, 288] x
/// [288, 25088] on the H100 (bench/RESULTS.md, 2026-11-27, cnn30) 49 us against the 64 x 64 kernel's 54 and its
/// result's permuting copy's 12.
inline constexpr std::int64_t kWarpMinShortK = 256;
/// Batched products with tile edges (the OCR recognizer's batched 1x1 convolutions, A read along K): the warp
/// kernel's 64 x 128 tiles where its 128 x 128 tiles would be fewer than this, or M <= 64.
inline constexpr std::int64_t kWarpBatchedMin128Tiles = 512;
/// Of those, with B row-major (the recognizer's own): 64 x 128 x 8 tiles with a warp's invocations as 16 x 2
/// (warp_lanes off), or 128 x 128 x 16 tiles from M = kWarpRecWideM where they are kWarpBatchedMin128Tiles or
/// more (bench/RESULTS.md, 2026-11-28, ocr9).
inline constexpr std::int64_t kWarpRecWideM = 384;

/// GPUs: fewer than 256 whole 64 x 128 quad-load tiles over K >= kSplitMinK run the quad-load
/// kernel split over K into chunks of at least kSplitMinChunk, as many as bring the tiles to
/// about kSplitTiles workgroups (else the scalar 64 x 64 kernel would take them unsplit or in
/// fewer chunks). On the H100 (bench/RESULTS.md, 2026-11-27, mm70b) 1.11 to 1.26x faster at
/// 1024^3, 256 x 4096 x 4096, 256 x 2048 x 8192, 512 x 2048 x 2048, 384 x 1152 x 16384 and 2048.
inline constexpr std::int64_t kSplitTiles = 512, kSplitMinChunk = 256, kSplitMinK = 1024;

/// GPUs: products of fewer than kSlicedMaxTiles 64 x 64 tiles over K < kSlicedMaxK that would take the 64 x 64
/// kernel or the quad-load kernel split over K (a training step's layers at batch 128: 8 to 52 workgroups for 132
/// SMs; the CNN's FC1 forward [128, 3136] x [3136, 128]: 2 quad-load tiles in 12 K chunks, then their sum and the
/// epilogue's dispatches) run the REG kernel with 4 x 4 blocks and K sliced over a workgroup's invocations
/// (MatmulPlan::reg_slices, up to kSlicedMaxSlices, slices of at least kSlicedMinK), as many slices as bring the
/// invocations to about kSlicedInvocations.
inline constexpr std::int64_t kSlicedMaxTiles = 128, kSlicedMaxK = 4096, kSlicedMinK = 32, kSlicedInvocations = 32768;
/// GPUs: of those, the ones of at most kSplitShortMaxTiles tiles over K >= kSlicedSplitMinK run the 64 x 64
/// kernel split over K into chunks of kSplitShortChunk (as many as bring the tiles to about 256 workgroups),
/// summed with the epilogue in one dispatch (matmul_sum.comp). The CNN's FC1 forward [128, 3136] x [3136, 128]
/// on the H100 (bench/RESULTS.md, 2026-11-27, cnn30): 4 tiles x 49 chunks 22 us against the sliced REG
/// kernel's 52 (16 chunks 35, 28 chunks 25; the sum and the epilogue's dispatches aside). conv2d's forward GEMMs
/// of so few tiles take it too (w [64, 2304] @ cols [2304, 256 to 1024], 4 to 16 tiles): on the H100 0.80-0.98x
/// the time of the sliced REG kernel, never slower (bench/RESULTS.md, 2026-11-28, big14: BM_conv2d_few_tiles).
inline constexpr std::int64_t kSlicedSplitMinK = 2048, kSplitShortChunk = 64, kSplitShortMaxTiles = 16;
/// Shared memory of the warp kernel's bm x bn tiles of bk values of K (two buffers), as
/// glsl/ops/matmul_warp.comp declares it: an operand read along K (a_kmajor / b_kmajor) kept
/// K-major with shk (A_SHK: bm bk / 4 quads; B_SHK: bn bk / 4 + bn / 4), else transposed into rows
/// padded by a quad (bk (bm / 4 + 1)); an operand read along M / N: bk rows of bm / 4 (bn / 4) quads.
inline std::int64_t warp_shared_bytes(int bm, int bn, int bk, bool a_kmajor, bool b_kmajor, bool shk) {
  const std::int64_t a = a_kmajor && shk ? bm * bk / 4 : bk * (bm / 4 + (a_kmajor ? 1 : 0));
  const std::int64_t b = b_kmajor && shk ? bn * bk / 4 + bn / 4 : bk * (bn / 4 + (b_kmajor ? 1 : 0));
  return 2 * (a + b) * 16;
}

/// Shared memory of the K-sliced REG kernel (glsl/ops/matmul_reg.comp's red and, with ROWSUM,
/// red_rs): the 4 x 1 vec4 blocks, and 4 row sums, of every invocation of each slice but the first.
inline std::int64_t reg_sliced_shared_bytes(int slices, std::int64_t local_x, bool rowsum) {
  return (slices - 1) * local_x * 4 * (16 + (rowsum ? 4 : 0));
}
inline constexpr int kSlicedMaxSlices = 16;

/// GEMV (glsl/ops/gemv.comp): output features and most rows of C per workgroup, most invocations.
inline constexpr std::int64_t kGemvFeatures = 4, kGemvRows = 8;
inline constexpr std::uint32_t kGemvLocal = 128;

/// The plan. Kernel choice: on GPUs the GEMV kernel where M <= 8 and B is K-major (linear's
/// w.t(): a workgroup per kGemvFeatures output features, its invocations splitting K, a
/// shared-memory reduction; no split_columns); Settings::matmul_kernel "gemv" forces it for any
/// shape and device (split_columns excepted). K = 0: REG (but GEMV where it is chosen), whatever else is forced (the
/// tiled kernels load their first K tile before their K loop). Otherwise: on software rasterizers the REG kernel
/// (register blocks straight from the SSBOs, no shared memory: bench/kernel_lab.cpp mode regmm); on GPUs the REG kernel
/// where M or N is at most 8 (a 64-row tile of a 3-row product would do 21 times its work), else the warp-tiled kernel
/// (quad operands, M, N and K multiples of 4, f32 math, its tile's shared memory within DeviceTraits::max_shared
/// (warp_shared_bytes), at least kWarpMinTiles of its 128 x 128 tiles where B is K-major, the tiles whole or the
/// product batched with M, K >= 64 and N >= 512 (64-row tiles for those: kWarpBatchedMin128Tiles), or with A read along
/// K the fewer tiles of kWarpMinShkTiles / kWarpMinKmajorTiles, K split in two over at most kWarpSplitTiles), else the
/// 64x128 quad-load kernel for whole tiles (M % 64, N % 128, K % 8) with quad-aligned operands and at least 256 tiles,
/// or fewer over K >= kSplitMinK (split into K chunks, kSplitTiles), else 64x64 tiles (Settings::matmul_kernel
/// overrides where the kernel applies: vec4*, tile64, tile128, reg, gemv); on GPUs, where that would be 64x64 tiles,
/// or the quad-load kernel split over K,
/// fewer than kSlicedMaxTiles 64 x 64 tiles over K < kSlicedMaxK with f32 math and no kernel forced: the K-sliced REG
/// kernel. Split-K where one invocation would loop past the device's limit, and where few output tiles share a long K
/// (K >= 1024 and fewer than a quarter of the target workgroups: 256 on GPUs, 16 on software rasterizers; for REG fewer
/// than the target). f16 math (f16_block = kF16BlockK) in every kernel but REG and GEMV where the problem's precision
/// is f16_allowed and the device has fp16 arithmetic, whatever the operand dtypes (f32 operands are rounded to f16 in
/// the kernel); else f32 math. With f16 math, the packed-half kernel (f16x2: matmul_f16x2.comp, the quad-load kernel's
/// tiles and operand conditions with K % 16 == 0 and K > 0, 64x128 tiles whatever their number) where
/// Settings::f16_matmul is f16x2 and the kernel is the planner's choice or a quad-load one; f16x4 or "" (today's
/// default, see docs/precision.md) keeps the other kernels' F16_MATH forms.
MatmulPlan plan_matmul(const MatmulProblem& p, const DeviceTraits& dev, const Settings& settings);
/// Shared memory per workgroup (bytes) of the plan's kernel, as its GLSL declares it. plan_matmul
/// throws LimitError (naming the kernel, the shape, the bytes and DeviceTraits::max_shared) for a plan
/// past the device's, forced by Settings::matmul_kernel or not, rather than fail at link.
std::int64_t matmul_shared_bytes(const MatmulPlan& plan, const MatmulProblem& p);
/// The quad-load variants (MatmulPlan::variant) the launch may run: those the tuner measures where
/// the plan is tuned, else the plan's own. plan_matmul checks each one's shared memory.
std::vector<int> matmul_variants(const MatmulPlan& plan);

/// A REG plan's block of `rows` x 4 `quads` of C per invocation: its quad loads (A's 4-row quads
/// only with 4-row blocks), tiles and workgroups of local_x invocations (split-K, loops unchanged:
/// REG's loops do not depend on the block). plan_matmul's choice, or a kernel lab candidate.
void set_reg_block(MatmulPlan& plan, const MatmulProblem& p, int rows, int quads);

/// A warp plan's tile: bm (64 or 128) x bn (128 or 256), bk (8 or 16), tn (8 or 16), lanes (a warp
/// as 8 x 4 invocations); its invocations (bm bn / (8 tn)), workgroups, EDGE and warp_shk (tn 8).
/// plan_matmul's choice, or a kernel lab candidate.
void set_warp_tile(MatmulPlan& plan, const MatmulProblem& p, int bm, int bn, int bk, int tn, bool lanes);

/// Loop iterations of one invocation of each kernel over a K range of `kc` (every loop counted,
/// whether or not the compiler unrolls it). slices = 2 for the sliced quad-load variant;
/// f16_block > 0: the F16_MATH form (its partial sums' reset and flush loops counted). GEMV:
/// kGemvRows x kGemvFeatures blocks of kGemvLocal invocations (the worst case of its plans).
std::uint64_t matmul_loops(MatmulPlan::Kernel kernel, std::int64_t kc, int slices = 1, std::int64_t f16_block = 0);

}  // namespace gltensor::detail
