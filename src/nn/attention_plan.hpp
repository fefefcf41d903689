// The fused attention kernel's tiling and loop length (internal): pure functions of the device's
// traits and the settings, unit-tested without a GPU (tests/ops/test_plans.cpp).
#pragma once
#include <cstddef>
#include <cstdint>

#include "runtime/settings.hpp"

namespace gltensor::detail {

/// What the tiling depends on: subgroup shuffles usable in compute shaders (and allowed by the
/// settings), the subgroup size, the shared memory per workgroup in bytes, the invocations a
/// workgroup may have (0: unknown, taken as GLES 3.1's 128; only the block kernel passes 128).
struct AttentionDevice {
  bool shuffle = false;
  int subgroup_size = 0;
  int max_shared_memory = 0;
  int max_invocations = 0;
};

// The fused kernel's tiling (glsl/nn/attention.comp): BQ query rows per workgroup (2 * BQ
// invocations), 32 * KQ keys per tile, row reductions by subgroup shuffles or shared memory.
// DQL: the head-dim quads loaded and multiplied per row (4, 8 or 16: narrow_attention_tiles).
struct AttentionTiles {
  std::int64_t bq;
  int kq;
  bool subgroup;
  int dql = 16;
};

/// Shared memory of a tiling: Q tile, K and V tiles, probabilities (in the K tile's memory when
/// KQ = 2), and without subgroups the row maxima and sums.
std::int64_t attention_shared_bytes(const AttentionTiles& t);

/// The largest tiling that fits the device: 64 query rows and 64 keys per tile with subgroup
/// reductions (48 KiB), else 64 rows and 32 keys (40 KiB, 44 KiB without subgroups), else 32
/// rows (24 or 30 KiB; llvmpipe has 32 KiB and no subgroups). Subgroup reductions need a row
/// group of 8 lanes inside one subgroup: subgroups of a multiple of 8 lanes that divide the
/// workgroup. Settings::attention_bq (32 or 16) / attention_keys = 32 cap the tiling (tests run
/// every tiling the device has). bq = 0: none fits.
AttentionTiles plan_attention_tiles(const AttentionDevice& dev, const Settings& settings);

/// The head-dim quads attention.comp needs for head dims E, Ev (<= 64): 4, 8 or 16.
int attention_head_quads(std::int64_t E, std::int64_t Ev);

/// The device's tiling t narrowed to a problem with head dims E, Ev: dql =
/// attention_head_quads(E, Ev); with Settings::attention_bq = 16 (or 32), the largest row block at
/// or below it that keeps a row group in one subgroup ((2 bq) % subgroup size == 0, with subgroup
/// reductions) and at most 8 K (and V) quads per invocation per tile (32 kq dql / (2 bq) <= 8:
/// register room), else t.bq. (16-row blocks on GPUs where 64-row ones made fewer than 128
/// workgroups were slower on the H200, SVTR's 8 x 168 x 15: 31.7 against 24.5 us of GPU time,
/// bench/RESULTS.md 2026-11-28.)
AttentionTiles narrow_attention_tiles(AttentionTiles t, const AttentionDevice& dev, const Settings& settings,
                                      std::int64_t E, std::int64_t Ev);

/// The lanes kernel's tiling (glsl/nn/attention_lanes.comp): `local` invocations per workgroup,
/// `lanes` (G) of them per query row (local / lanes rows per workgroup), `keys` (KPL) keys per lane
/// per tile (G * KPL keys a tile), `dq` head-dim quads (attention_head_quads). local = 0: none.
struct LaneTiles {
  int local = 0, lanes = 0, keys = 0, dq = 0;
};
/// What the lanes kernel's plan depends on: query rows L, keys S, batch entries nb, head dims E
/// and Ev, the kernel's batch dims bd.
struct LaneProblem {
  std::int64_t L = 0, S = 0, nb = 0, E = 0, Ev = 0;
  std::size_t bd = 1;
  bool half = false;    ///< q, k or v stored in 16 bits (plan_attention_block's unforced range)
  bool causal = false;  ///< (plan_attention_block's unforced range)
};
/// Shared memory of a lanes tiling: the K and V tiles or the combine's local x dq quads, whichever
/// is larger, and two floats per invocation.
std::int64_t lanes_shared_bytes(const LaneTiles& t);
/// attention_lanes.comp's loop iterations per invocation over S keys, every loop counted.
std::uint64_t attention_lanes_loops(const LaneTiles& t, const LaneProblem& p);
/// Where attention.comp's 64-row blocks would be fewer than kLanesBelowGroups workgroups, on GPUs
/// (not software rasterizers), for head dims up to 16 (4 quads: SVTR's 15; at 64, 8 x 300 x 64, it
/// took the H200 94.7 us of GPU time against attention.comp's 43.0, bench/RESULTS.md 2026-11-28), the lanes kernel: 128
/// invocations in 16, 8 or 4 rows (the most rows that still give kLanesBelowGroups workgroups, else 4) of 128 / rows
/// lanes, 2 keys per lane per tile where that makes at most kLanesFewKeyTiles tiles (unforced, GPUs), else 8 (fewer,
/// then 64 invocations, where shared memory is short); none (local = 0) where
/// head dims pass 64, the loop limit (0: none) is passed, or nothing fits. Settings::attention_lanes (0 never, 1
/// wherever it applies, software rasterizers included), attention_lane_width (G) and attention_lane_keys (KPL) override
/// the choice (and, unless attention_lanes is 0, force the kernel wherever it applies).
constexpr std::int64_t kLanesBelowGroups = 128, kLanesFewKeyTiles = 16;
LaneTiles plan_attention_lanes(const LaneProblem& p, const AttentionDevice& dev, bool software,
                               std::uint64_t loop_limit, const Settings& settings);

/// The block kernel's tiling (glsl/nn/attention_block.comp): `local` invocations per workgroup, `rows` (BR, a
/// multiple of 4) query rows, `dq` head-dim quads (attention_head_quads), `sk` keys its shared score rows hold: S
/// rounded up to a power of two (at least 64), or to the largest multiple of 32 that fits the device where that is
/// less (a handful of programs as S grows, not one per 32 keys). local = 0: none.
struct BlockTiles {
  int local = 0, rows = 0, dq = 0;
  std::int64_t sk = 0;
};
/// Shared memory of a block tiling: the scores (sk x rows floats) or phase 3's partials (4 local quads), whichever
/// is larger; Q (rows x dq + rows / 4 quads); the reductions (local + 9 rows / 4 quads).
std::int64_t block_shared_bytes(const BlockTiles& t);
/// attention_block.comp's loop iterations per invocation over S keys, every loop counted.
std::uint64_t attention_block_loops(const BlockTiles& t, const LaneProblem& p);
/// Where attention.comp's 64-row blocks would be fewer than kSplitBelowGroups workgroups, on GPUs (not software
/// rasterizers), only in the range measured there (head dims 33 to 64, 16 quads as 64; 257 to 512 keys, sk 512; at
/// least `rows` query rows: decode's single rows stay with attention.comp), the block kernel: 256 invocations (fewer
/// where the device's workgroups are smaller), 8 query rows (8 x 300 x 64: 304 workgroups, 33.5 us of GPU time on
/// the H200 against attention.comp's 38.6 in 40 workgroups of 5 serial key tiles; 16 rows 40.9, 4 rows 55.9, 512
/// invocations 41.3: bench/RESULTS.md 2026-11-28, attn39), where the loop limit (0: none) allows; none (local = 0)
/// elsewhere. With q, k or v stored in 16 bits (`half`) only where the H200 measured it faster at the corners of that
/// range (rt40: head dims 40/64, keys 260/384/512, rows 8/64/300, heads 1/8/32; bench/RESULTS.md 2026-11-29): fewer
/// than kBlockHalfBelowGroups row blocks of `rows` (past them, 32 heads x 64 rows: 0.93-1.36x attention.comp's GPU
/// time, 8 x 300 rows: 1.26-1.79x), and at least kBlockHalfRows rows, kBlockHalfManyGroups row blocks, or causal
/// (else, one block of 8 non-causal rows per head, 1 or 8 heads: 1.08-1.48x). In f32 with a causal mask, at least
/// kBlockHalfBelowGroups row blocks, more than kBlockHalfRows rows, head dims past kBlockCausalHeadDim and more keys
/// than rows (every row sees fewer than S keys, and attention.comp skips the masked tiles): none (8 x 300 x 64 causal
/// at 384 / 512 keys: 1.02-1.03x and 1.10x in both windows of rt40; kept: 260 keys 0.89-0.90x, head dim 40
/// 0.85-0.88x, 32 heads x 64 rows 0.61-0.73x). Forced, it takes keys up to
/// what its shared memory holds (block_shared_bytes: 1312 in 48 KiB at 8 rows). Settings::attention_block (0 never, 1
/// wherever it applies, software rasterizers and any L included), attention_block_rows and attention_block_local
/// override the choice (and, unless attention_block is 0, force the kernel wherever it applies); local grows to rows /
/// 4 x dq where that is more (one invocation per output quad and row group); none where local passes the device's
/// invocations.
constexpr std::int64_t kBlockHalfBelowGroups = 256, kBlockHalfManyGroups = 32, kBlockHalfRows = 64,
                       kBlockCausalHeadDim = 48;
BlockTiles plan_attention_block(const LaneProblem& p, const AttentionDevice& dev, bool software,
                                std::uint64_t loop_limit, const Settings& settings);

/// What attention.comp's key split depends on: query rows L, keys S, batch entries nb; a software
/// rasterizer; the SSBO bindings the device has (COMBINE binds up to 9).
struct SplitProblem {
  std::int64_t L = 0, S = 0, nb = 0;
  bool software = false;
  int ssbo_bindings = 0;
};
/// attention.comp's keys split over workgroups (SPLIT_KV): kchunk keys per chunk (0: no split), and
/// whether the chunks' last workgroup merges them in the same dispatch (COMBINE: an arrival counter
/// per batch entry and row block, runtime/counters.hpp) or kv_attention.comp's kv_combine does in a
/// second dispatch (the KV cache's launch, kv_combine.hpp).
struct AttentionSplit {
  std::int64_t kchunk = 0;
  bool combine = false;
};
/// The counters' words (WorkgroupCounters::kWords): COMBINE needs one per batch entry and row block.
constexpr std::int64_t kCombineSlots = 16384;
/// COMBINE's workspace floats per chunk and row: 16 quads of o, then the quad (m, l, 0, 0).
constexpr std::int64_t kCombineRowFloats = 68;
/// Whether `chunks` chunks of t's row blocks may be merged by their last workgroup: at least 2, at
/// most what the scratch in the V tile's memory holds ((2 chunks + 1) * bq floats), nb * row blocks
/// counters, 9 bindings (quad arrays or not: the largest case), and not Settings::attention_combine
/// = dispatch (GLTENSOR_ATTENTION_COMBINE).
bool attention_combine_fits(const AttentionTiles& t, const SplitProblem& p, std::int64_t chunks,
                            const Settings& settings);
/// The split: Settings::attention_split = N > 0 tiles per chunk wherever the keys pass N tiles (any
/// device; tests), 0 never; unset (-1), on GPUs where the row blocks (nb * ceil(L / bq)) are fewer
/// than kSplitBelowGroups and the keys span more than one tile, the fewest tiles per chunk that
/// still give the grid kSplitBelowGroups workgroups, only where COMBINE fits: 8 x 300 x 64 on the
/// H200, 40 row blocks of 5 tiles, in 3 chunks of 2 tiles: 43.0 -> 38.5 us of GPU time merged in
/// the dispatch (1-tile chunks 50.3; kv_combine's second dispatch cost 9.5 more; end to end within
/// noise: bench/RESULTS.md 2026-11-28, attn37). A forced split combines in the dispatch where that
/// fits, else with kv_combine.
constexpr std::int64_t kSplitBelowGroups = 128;
AttentionSplit plan_attention_split(const AttentionTiles& t, const SplitProblem& p, const Settings& settings);

/// attention.comp's loop iterations per invocation, every loop counted (compilers unroll some):
/// per key tile the K/V stores and next loads (NLD quads, 4 lanes each without quad loads), the
/// score init, t.dql head-dim quads, the row max/sum exchanges and the BKV-key products; before the
/// tiles the batch offsets and Q loads; with `combine` chunks > 0 (COMBINE) the last workgroup's
/// merge of them over Ev value columns.
std::uint64_t attention_loops(const AttentionTiles& t, std::int64_t S, std::size_t bd, std::int64_t combine = 0,
                              std::int64_t Ev = 64);

// ---- the flash kernels (glsl/nn/attention_flash.comp): masks, dropout, head dims up to 256,
// the log-sum-exp for the backward, and the backward itself ----

/// The largest head dim (E and Ev) of the flash kernels.
constexpr std::int64_t kFlashMaxHeadDim = 256;

/// The flash kernels' tiling for head dims E, Ev: `rows` query rows per workgroup (attn_fwd,
/// attn_dq; one per invocation), `bkv` keys per shared-memory tile (K and V tiles: 16 bkv
/// (ceil(E/4) + ceil(Ev/4)) bytes); `keys` key rows per workgroup (attn_dkv), `bqt` query rows
/// per shared-memory tile (q and dO tiles and the rows' lse and D). Tiles of 32, 16, 8 or 4: the
/// largest that fits the device's shared memory and Settings::attention_tile; rows = 32 under
/// Settings::attention_bq = 32 or 16, else 64. bkv = 0: none fits (head dims past kFlashMaxHeadDim too).
struct FlashTiles {
  std::int64_t rows = 0, bkv = 0, keys = 0, bqt = 0;
};
FlashTiles plan_flash_tiles(std::int64_t E, std::int64_t Ev, int max_shared_memory, const Settings& settings);
/// Shared memory of the forward / dQ kernels (dkv = false) or the dK/dV kernel (true).
std::int64_t flash_shared_bytes(std::int64_t E, std::int64_t Ev, const FlashTiles& t, bool dkv);

// ---- the register-tiled flash forward (glsl/nn/attention_tiled.comp) ----

/// Its fixed tiling: 64 query rows and 64 keys per block, 256 invocations (4x4 score tiles), the
/// head dim in chunks of 16; 32 KiB of shared memory (P^T and a 16 KiB work area).
constexpr std::int64_t kTiledRows = 64, kTiledKeys = 64, kTiledLocal = 256, kTiledDk = 16;
constexpr std::int64_t kTiledSharedBytes = 32768;
/// Keys per V chunk for value head dim Ev: the largest of 64, 32, 16 whose V chunk fits the work
/// area (keys * ceil(Ev / 4) <= 1024 quads); 0 past kFlashMaxHeadDim.
std::int64_t tiled_v_keys(std::int64_t Ev);

/// forward, dkv, dq: attention_flash.comp's modes; tiled, tiled_dkv, tiled_dq: attention_tiled.comp's
/// (t unused).
enum class FlashMode { forward, dkv, dq, tiled, tiled_dkv, tiled_dq };
/// attention_flash.comp's loop iterations per invocation in `mode` over n keys (forward, dq) or
/// n query rows (dkv, tiled_dkv), every loop counted (a loop of n trips counts n + 1), with bd batch dims.
std::uint64_t flash_loops(FlashMode mode, const FlashTiles& t, std::int64_t E, std::int64_t Ev, std::int64_t n,
                          std::size_t bd, bool dropout);
/// How to split the n keys (forward, dq and their tiled forms) or query rows (dkv) within `limit` loop iterations
/// (0: none): 0 when all of them fit one invocation, else the largest chunk (a multiple of the
/// tile) that fits; -1 when not even one tile fits (the composite path takes over).
std::int64_t flash_chunk(FlashMode mode, const FlashTiles& t, std::int64_t E, std::int64_t Ev, std::int64_t n,
                         std::size_t bd, bool dropout, std::uint64_t limit);

}  // namespace gltensor::detail
