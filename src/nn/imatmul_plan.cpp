// The block-f32 integer matmul's plan (imatmul_plan.hpp).
#include "nn/imatmul_plan.hpp"

#include <algorithm>

namespace gltensor::detail {

std::int64_t imatmul_shared_bytes(const IMatmulVariant& v) {
  // As, Bs: f32, double-buffered, per K slice; the totals in shared memory: an int32 per output
  const std::int64_t tiles = v.slices * 2 * v.bk * (kIMatmulTileRows + v.bn) * 4;
  return tiles + (v.totals == IMatmulVariant::Totals::shared ? kIMatmulTileRows * v.bn * 4 : 0);
}

IWarpSplit plan_iwarp_split(const IMatmulProblem& p, bool software, const Settings& s) {
  IWarpSplit w;
  const bool as_gpu = s.matmul_kernel == MatmulKernelSetting::gpu;
  if ((software && !as_gpu) || (s.matmul_kernel != MatmulKernelSetting::choose && !as_gpu)) return w;
  w.bm = p.M <= 64 ? 64 : 128;
  const std::int64_t tiles = (p.M + w.bm - 1) / w.bm * ((p.N + 127) / 128) * p.batch;
  if (p.M < kIWarpSplitMinM || p.K < kIWarpSplitMinK || tiles >= kIWarpSplitMaxTiles) return w;
  w.splits = std::max<std::int64_t>(1, std::min((kIWarpSplitTarget + tiles - 1) / tiles, p.K / w.bm));
  return w;
}

IMatmulPlan plan_imatmul(const IMatmulProblem& p, const IMatmulDevice& d, const Settings& s) {
  IMatmulPlan k;
  IMatmulVariant& v = k.v;
  // GPUs: 64 x 128 tiles of 4 x 8 per invocation with K in two slices per workgroup (512
  // invocations, 48 KiB of tiles) where that makes at least kWideGroups workgroups, else 64 x 64
  // of 4 x 4, unless a form is forced. The H100, the wide QDQ net's four convs at 112x112 as one
  // dependent chain (bench/RESULTS.md, int8gap2): all two-slice 4 x 8 1.656 ms, all 4 x 8 of one
  // slice (256 invocations, 2 workgroups per SM: 392 make 1.5 waves, whose last half each
  // dependent layer waits for) 1.748, all 4 x 4 1.689; the layers alone, back to back, hide those
  // tails (4 x 8 1.06x faster than 4 x 4 there; int8w). GLTENSOR_IMATMUL_TILE=128 for the wide
  // tiles; software rasterizers: 64 x 128 (8 x 8) where that makes at least 256 workgroups.
  const bool choose = s.imatmul == IMatmulSetting::choose && !s.imatmul_tile && !s.imatmul_rb &&
                      s.imatmul_blocks != 2 && !s.imatmul_slices && !s.imatmul_bk;
  // GLTENSOR_IMATMUL_BLOCKS=1: software rasterizers' tiles 64 x 64 of 4 x 4 per invocation (a test
  // knob: LLVM compiles llvmpipe's 8 x 8 programs in about 4x the CPU; GPUs: their plan)
  const bool soft4 = d.software && s.imatmul_blocks == 1;
  const int forced = d.software ? 0 : s.imatmul_tile;
  const std::int64_t row_tiles = (p.M + kIMatmulTileRows - 1) / kIMatmulTileRows;
  const bool wide = row_tiles * ((p.N + 127) / 128) * p.batch >= kWideGroups;
  const bool wide4x8 = !d.software && choose && wide;
  const bool sliced = wide4x8 && d.max_shared >= 48 << 10;
  // GPUs, few 64 x 64 tiles (below kFewGroups workgroups: the narrow QDQ net's convs at 56x56):
  // 4 x 4 with K in two slices (512 invocations, 32 KiB of tiles; below) where that fits, twice
  // the invocations, each over half of K (the int8 analogue of matmul's K-sliced small-GEMM
  // kernel). The H100, the narrow net's three convs at 56x56 as one dependent chain
  // (bench/RESULTS.md, int8n): 0.175 ms against one slice's 0.244, 64 x 32 tiles of two slices
  // 0.201, of one slice 0.294 (f32 0.197); at 112x112 (196, 196, 392 tiles) one slice 0.320,
  // two 0.371.
  const bool few = !d.software && choose && !wide && row_tiles * ((p.N + 63) / 64) * p.batch < kFewGroups;
  v.bn = forced ? forced : wide && ((d.software && !soft4) || wide4x8) ? 128 : 64;
  // RB = CB: 4 x 4 blocks per invocation along each dim (software rasterizers, unless
  // GLTENSOR_MATMUL_KERNEL=gpu: always 2, fewer invocations with more work each ran faster on
  // llvmpipe; bench/RESULTS.md); GLTENSOR_IMATMUL_BLOCKS=2: 2 on the GPUs' 64 x 64 tiles too;
  // 64 x 32 tiles (GLTENSOR_IMATMUL_TILE=32, GPUs only): 4 x 4; GLTENSOR_IMATMUL_BLOCKS=1: 4 x 4 in software
  v.blocks = !soft4 && (v.bn == 128 || (v.bn == 64 && (d.software || s.imatmul_blocks == 2))) ? 2 : 1;
  // GLTENSOR_IMATMUL_RB=2: 8 x 4 per invocation on the GPUs' 64 x 64 tiles; 1: 4 x 8 on 64 x 128
  const int rb = wide4x8                                             ? 1
                 : d.software || !s.imatmul_rb                       ? v.blocks
                 : v.blocks == 1 && v.bn == 64 && s.imatmul_rb == 2  ? 2
                 : v.blocks == 2 && v.bn == 128 && s.imatmul_rb == 1 ? 1
                                                                     : v.blocks;
  v.rb = rb != v.blocks ? rb : 0;
  k.local_x = static_cast<std::uint32_t>(kIMatmulTileRows / (4 * rb) * (v.bn / (4 * v.blocks)));
  v.iblock_k = kIntBlockK, v.a_words = p.a_words, v.b_words = p.b_words;
  // The int32 totals beyond one block (block_launches drops them where a launch's K is one
  // block): in memory for 8 x 8 per invocation (64 more registers beside the f32 ones would halve
  // the resident invocations), in registers for 4 x 4 (16 more; on the H100 the QDQ CNN at 56x56,
  // all 4 x 4, ran 1.46x f32 so, 1.32x with the totals in memory: bench/RESULTS.md);
  // GLTENSOR_IMATMUL=regs|mem|shared forces one.
  const bool mem =
      s.imatmul == IMatmulSetting::mem || (s.imatmul == IMatmulSetting::choose && v.blocks == 2 && rb == 2);
  const auto regs = IMatmulVariant::Totals::regs;
  v.totals = mem ? IMatmulVariant::Totals::mem : regs;
  // GLTENSOR_IMATMUL_BK=8: K tiles of 8 (as matmul's VEC4 kernel) where every invocation stages
  // at least one A word per tile (BM BK / 4 a multiple of the invocations)
  // and a B word (BK BN / 4 a multiple of the invocations too)
  if (s.imatmul_bk && kIMatmulTileRows * s.imatmul_bk / 4 % k.local_x == 0 && s.imatmul_bk * v.bn / 4 % k.local_x == 0)
    v.bk = s.imatmul_bk;
  // GLTENSOR_IMATMUL=shared: the totals in shared memory where they fit beside the tiles
  if (s.imatmul == IMatmulSetting::shared) {
    v.totals = IMatmulVariant::Totals::shared;
    if (imatmul_shared_bytes(v) > d.max_shared) v.totals = regs;
  }
  // GLTENSOR_IMATMUL_SLICES=2 (or chosen above): 8 x 8, 4 x 8 or (64 x 32, 64 x 64 tiles) 4 x 4
  // per invocation with K in two slices per workgroup (twice the invocations), the totals in
  // registers, where the tiles fit the shared memory and slice 1's totals fit its tiles for the
  // hand-over (up to 8 accumulators of every invocation per round)
  if ((s.imatmul_slices == 2 || sliced || few) && !d.software && (v.blocks == 2 || rb == 1)) {
    IMatmulVariant w = v;
    w.slices = 2, w.totals = regs;
    const std::int64_t nacc = std::min(4 * rb * v.blocks, 8);
    const std::int64_t handover = nacc * static_cast<std::int64_t>(k.local_x), bs_vec4s = 2 * 2 * w.bk * (w.bn / 4);
    if (imatmul_shared_bytes(w) <= d.max_shared && handover <= bs_vec4s && 2 * k.local_x <= d.max_invocations)
      v = w, k.local_x *= 2;
  }
  // A's tile swizzled on GPUs for 4 x 4 per invocation (the H100, QDQ convs at 112x112: 1.02-1.06x
  // faster alone, the wide chain of 4 x 4 1.689 ms against 1.763; on 4 x 8 of one slice 0.67x, more
  // registers; int8gap2), or as Settings::imatmul_swizzle says
  // Two K tiles per trip of the loop with constant buffer indices, loops unrolled (K_PAIRS), for
  // 4 x 8 per invocation on GPUs (the H100 at 112x112, two K slices: 1.09-1.11x on the wide net's
  // 256-channel layers; the 4 x 4 forms ran 2x slower so, the 8 x 8 ones faster but still slower
  // than 4 x 8; bench/RESULTS.md, int8w); one slice where 48 KiB do not fit (software rasterizers
  // planned as GPUs: the tests)
  v.k_pairs = !d.software && rb == 1 && v.blocks == 2;
  v.a_swizzle = s.imatmul_swizzle < 0 ? !d.software && v.blocks == 1 && rb == 1 : s.imatmul_swizzle == 1;
  // per K tile at most 6 (LA + LB) + 2 BK = 80 with BK 16 (with byte loads), with the totals in
  // memory 21 more (a block's 64 x (4 + 1) + 1 over its K tiles); K tiles of 8 counted as 16
  k.per_tile = v.totals == IMatmulVariant::Totals::mem ? 101 : 80;
  k.fixed = 240;
  return k;
}

bool plan_iconv_implicit(const Settings& s) {
  // The implicit GEMM wherever it applies (the H100, QDQ convs at 112x112, one process, outputs
  // byte-equal: 1.16-1.36x faster than im2col + the integer matmul for filters of 288-2304
  // values; bench/RESULTS.md, int8w); GLTENSOR_ICONV_GEMM=im2col: im2col's columns.
  return s.iconv_gemm != IConvGemmSetting::im2col;
}

}  // namespace gltensor::detail
