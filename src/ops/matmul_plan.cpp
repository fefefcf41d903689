// plan_matmul (matmul_plan.hpp).
#include "ops/matmul_plan.hpp"

#include <algorithm>
#include <string>

#include "gltensor/errors.hpp"
#include "runtime/int_math.hpp"

namespace gltensor::detail {

std::uint64_t matmul_loops(MatmulPlan::Kernel kernel, std::int64_t kc, int slices, std::int64_t f16_block) {
  const auto k = static_cast<std::uint64_t>(std::max<std::int64_t>(kc, 0));
  if (f16_block > 0 && kernel != MatmulPlan::Kernel::f16x2) {
    // F16_MATH: the f32 form (whose k-steps count at least the f16 ones), the partial sums'
    // reset, and a flush after every block of K and after the last K-tile of each slice.
    const std::uint64_t flushes = (k + f16_block - 1) / f16_block + 1;
    const std::uint64_t per = kernel == MatmulPlan::Kernel::vec4 ? 16 : kernel == MatmulPlan::Kernel::tile128 ? 8 : 20;
    const std::uint64_t reset = kernel == MatmulPlan::Kernel::tile64 ? 4 : per;
    return matmul_loops(kernel, kc, slices) + reset + flushes * per;
  }
  switch (kernel) {
    case MatmulPlan::Kernel::vec4:
      // Per 8-K tile: 3 fetch loops, 3 put loops of 4 lanes, 8 k-steps of 4 rows, the tile
      // loop; before: accumulators, the first fetch/put, batch dims.
      return (k + 8u * slices - 1) / (8u * slices) * 59 + 48;
    case MatmulPlan::Kernel::f16x2:
      // f16 math only. Per 16-K tile: 6 fetch loops, 6 put loops (and 3 x 4 word stores where
      // K-major), 16 k-steps, the flush of 16 and the tile loop; before: 48 accumulator resets,
      // the first fetch/put, batch dims.
      return (k + 15) / 16 * 57 + 96;
    case MatmulPlan::Kernel::tile128:
      // Per 8-K tile: stores and prefetches of 4, 8 k-steps of 4 rows; the 8 x 2 x 4 epilogue.
      return (k + 7) / 8 * 49 + 108;
    case MatmulPlan::Kernel::warp:
      // Per 8 K: fetches and puts of up to 4 quads each (of 8 per 16-K tile), 8 K steps (K_LOOP),
      // the tile loop; before: up to 32 accumulators, the first fetches and puts, batch dims (and a
      // 16-K tile's slack).
      return (k + 7) / 8 * 17 + 128;
    case MatmulPlan::Kernel::tile64:
      // Per 16-K tile: 4 stores, 4 prefetches, 16 k-steps of (4 + 4 + 4 x 4); the first 4
      // fetches and the 4 x 4 epilogue.
      return (k + 15) / 16 * 473 + 52;
    case MatmulPlan::Kernel::reg:
      // The K loop unrolled by 4 and the remainder's up to 3 steps (the block is written out).
      return k / 4 + 3;
    case MatmulPlan::Kernel::gemv: {
      // Per step of 4 kGemvLocal K: the step, B's quads, A's rows each with its features. Once:
      // offsets, accumulators, their stores to shared memory, the tree's log2(local) levels of
      // (1 + block) and up to 16 batch dims.
      constexpr std::uint64_t rows = kGemvRows, feats = kGemvFeatures, block = rows * feats;
      const std::uint64_t steps = (k + 4 * kGemvLocal - 1) / (4 * kGemvLocal);
      return steps * (1 + feats + rows * (1 + feats)) + rows + feats + 2 * block + 7 * (1 + block) + 16;
    }
  }
  return 0;
}

void set_reg_block(MatmulPlan& plan, const MatmulProblem& p, int rows, int quads) {
  plan.reg_rows = rows;
  plan.reg_quads = quads;
  plan.a_quad = p.a_quads == 2 && rows % 4 != 0 ? 0 : p.a_quads;  // 4-row quads need 4-row blocks
  plan.b_quad = p.b_quads;
  plan.tile_m = rows;
  plan.tile_n = 4 * quads;
  plan.groups_x = static_cast<std::uint64_t>(ceil_div(ceil_div(p.M, rows) * ceil_div(p.N, 4 * quads), plan.local_x));
}

void set_warp_tile(MatmulPlan& plan, const MatmulProblem& p, int bm, int bn, int bk, int tn, bool lanes) {
  plan.tile_m = bm;
  plan.tile_n = bn;
  plan.warp_bk = bk;
  plan.warp_tn = tn;
  plan.warp_lanes = lanes;
  plan.warp_shk = tn == 8;
  plan.warp_edge = p.M % bm != 0 || p.N % bn != 0 || p.K % bk != 0 || p.K == 0 || plan.kchunk % bk != 0;
  plan.local_x = static_cast<std::uint32_t>(bm * bn / (8 * tn));
  plan.local_y = 1;
  plan.groups_x = static_cast<std::uint64_t>(ceil_div(p.N, bn));
  plan.groups_y = static_cast<std::uint64_t>(ceil_div(p.M, bm));
}

namespace {

const char* kernel_name(MatmulPlan::Kernel k) {
  using Kn = MatmulPlan::Kernel;
  switch (k) {
    case Kn::vec4:
      return "vec4";
    case Kn::tile64:
      return "tile64";
    case Kn::tile128:
      return "tile128";
    case Kn::reg:
      return "reg";
    case Kn::gemv:
      return "gemv";
    case Kn::f16x2:
      return "f16x2";
    case Kn::warp:
      return "warp";
  }
  return "?";
}

}  // namespace

std::int64_t matmul_shared_bytes(const MatmulPlan& plan, const MatmulProblem& p) {
  using Kn = MatmulPlan::Kernel;
  switch (plan.kernel) {
    case Kn::vec4:
      return ((plan.variant & 1) ? 2 : 1) * 2 * 8 * (plan.tile_m / 4 + plan.tile_n / 4) * 16;
    case Kn::tile64:
      return 2 * 16 * 65 * 4;
    case Kn::tile128:
      return 2 * 8 * (128 / 4) * 16;
    case Kn::reg:
      return plan.reg_slices > 1 ? reg_sliced_shared_bytes(plan.reg_slices, plan.local_x, false) : 0;
    case Kn::gemv:
      return plan.tile_m * plan.tile_n * plan.local_x * 4;
    case Kn::f16x2:
      return 2 * 16 * (plan.tile_m / 4 + plan.tile_n / 4) * 8;
    case Kn::warp:
      return warp_shared_bytes(static_cast<int>(plan.tile_m), static_cast<int>(plan.tile_n), plan.warp_bk,
                               p.a_quads == 1, p.b_quads == 2, plan.warp_shk);
  }
  return 0;
}

std::vector<int> matmul_variants(const MatmulPlan& plan) {
  if (!plan.tune) return {plan.variant};
  if (plan.tune_sliced) return {0, 1, 2, 3};
  return {0, 2};
}

namespace {

// A kernel whose shared memory exceeds the device's would fail at link (a forced one, or a plan's
// mistake): LimitError naming the kernel, the product's shape, the bytes and the limit.
// Every variant the launch may run is checked (the tuner's too).
void check_shared(const MatmulPlan& plan, const MatmulProblem& p, const DeviceTraits& dev, bool forced) {
  std::int64_t bytes = 0;
  for (int v : matmul_variants(plan)) {
    MatmulPlan variant = plan;
    variant.variant = v;
    bytes = std::max(bytes, matmul_shared_bytes(variant, p));
  }
  if (bytes <= dev.max_shared) return;
  throw LimitError(std::string("gltensor::matmul: the ") + kernel_name(plan.kernel) + " kernel" +
                   (forced ? " (forced by GLTENSOR_MATMUL_KERNEL)" : "") + " for [" + std::to_string(p.batch) +
                   "] x [" + std::to_string(p.M) + ", " + std::to_string(p.K) + "] x [" + std::to_string(p.K) + ", " +
                   std::to_string(p.N) + "] needs " + std::to_string(bytes) +
                   " bytes of shared memory, more than the device's " + std::to_string(dev.max_shared) +
                   " per workgroup" + (forced ? "; force another kernel or leave the choice to the planner" : ""));
}

}  // namespace

MatmulPlan plan_matmul(const MatmulProblem& p, const DeviceTraits& dev, const Settings& settings) {
  MatmulPlan plan;
  // "gpu": the choice a GPU would get, on any device (tests of the GPU paths on llvmpipe).
  using K = MatmulKernelSetting;
  const bool as_gpu = settings.matmul_kernel == K::gpu;
  const K forced = as_gpu ? K::choose : settings.matmul_kernel;
  const bool chosen = forced == K::choose;  // no variant forced
  const bool software = dev.software && !as_gpu;
  const bool whole = p.M % 64 == 0 && p.N % 128 == 0 && p.K % 8 == 0;
  const std::int64_t vec4_tiles = (p.M / 64) * (p.N / 128) * p.batch;
  const bool forced_vec4 = forced == K::vec4 || forced == K::vec4s || forced == K::vec4u || forced == K::vec4su;
  const bool small = std::min(p.M, p.N) <= 8;
  // A loop limit below what one K-chunk of 16 of a tiled kernel runs (tests lower it that far):
  // only REG's loops (about K / 4) fit.
  const auto fb0 = p.precision == Precision::f16_allowed && dev.fp16_arithmetic ? kF16BlockK : 0;
  const bool tiles_too_long =
      dev.loop_limit != 0 && std::min({matmul_loops(MatmulPlan::Kernel::vec4, 16, 1, fb0),
                                       matmul_loops(MatmulPlan::Kernel::tile64, 16, 1, fb0),
                                       matmul_loops(MatmulPlan::Kernel::tile128, 16, 1, fb0)}) > dev.loop_limit;
  // GEMV: where its loops fit (a lowered limit may leave room only for REG's).
  const bool gemv_fits = dev.loop_limit == 0 || matmul_loops(MatmulPlan::Kernel::gemv, 16) <= dev.loop_limit;
  const bool gemv =
      gemv_fits && !p.split_columns && (forced == K::gemv || (chosen && !software && p.M <= kGemvRows && p.b_kmajor));
  // K = 0 (a product of zeros, then the epilogue): REG, whatever is forced. The tiled and quad-load
  // kernels prefetch their first K tile before the K loop, and their edge clamps (the range's last
  // k) wrap at K = 0: they would load from the empty operands; REG and GEMV load inside the loop.
  const bool reg =
      !gemv && (forced == K::reg || forced == K::gemv || p.K == 0 || (chosen && (software || small || tiles_too_long)));
  // The warp-tiled kernel: quad operands, M, N and K multiples of 4, f32 math.
  const bool warp_ok = !reg && !gemv && p.quads && p.M % 4 == 0 && p.N % 4 == 0 && p.K % 4 == 0 && fb0 == 0;
  // Chosen on GPUs over at least 256 of its tiles: for B read as quads along K (linear's w.t(): the
  // quad-load kernel's scalar transposing stores into unpadded rows ran 1.2x slower there), and for
  // B row-major in whole 128 x 128 x 8 tiles (two K-tiles per trip of its loop: 31.5 TFLOP/s at
  // 4096^3 on the H100 against the quad-load kernel's 27.5; tile edges not measured).
  const std::int64_t warp_tiles = ceil_div(p.M, 128) * ceil_div(p.N, 128) * p.batch;
  const bool warp_whole = p.M % 128 == 0 && p.N % 128 == 0 && p.K % 8 == 0 && p.K > 0;
  // And for batched products with tile edges whose sides are all long enough: the OCR recognizer's
  // batched 1x1 convolutions ([O, C] against each image's [C, H*W]; O, C >= 64, H*W >= 512) ran in 0.84x
  // tile64's time on the H100 where O, C >= 128 and H*W >= 1024 with 128 x 128 tiles (rec3), and at O = C =
  // 480, H*W = 624 in 0.60x, at O = C = 64 in 0.84x with 64 x 128 tiles (warp_rows; bench/RESULTS.md, ocr6).
  const bool warp_batched = p.batch > 1 && p.M >= 64 && p.K >= 64 && p.K % 8 == 0 && p.N >= 512;
  // With A read along K (a_quads 1; the warp kernel then keeps K-major operands K-major in shared
  // memory, warp_shk): B row-major in whole 64 x 128 tiles, also over fewer of them (at least
  // kWarpMinShkTiles, K >= 512); B K-major over at least kWarpMinKmajorTiles 128 x 128 tiles, or in
  // whole 64 x 128 tiles where those are fewer (kWarpMinShkTiles of them, K >= 1024). On the H100
  // (bench/RESULTS.md, 2026-11-27, mm72) 0.78-0.85x cuBLAS from 1024^3 to 8192^3 with row-major B
  // (the quad-load kernel's 0.57x at 1024^3; 0.74x at 1024 x 1024 x 512, tile64's 0.49x), 0.72-0.80x
  // with K-major B (before: 0.39x at 1024^3, 0.33x at 512 x 4096 x 4096).
  const bool a_kq = p.a_quads == 1;
  const bool whole64 = p.M % 64 == 0 && p.N % 128 == 0 && p.K % 8 == 0 && p.K >= 8;
  const std::int64_t tiles64 = ceil_div(p.M, 64) * ceil_div(p.N, 128) * p.batch;
  const bool warp_row64 = a_kq && p.b_quads == 1 && whole64;
  const bool warp_kmajor64 = a_kq && p.b_quads == 2 && whole64 && warp_tiles < kWarpMinKmajorTiles && p.K >= 1024 &&
                             tiles64 >= kWarpMinShkTiles;
  // The batched products with A read along K in 64 x 128 tiles where 128 x 128 tiles would be half empty
  // (M <= 64) or few (kWarpBatchedMin128Tiles): on the H100 (ocr6, kernel lab) 0.92x the time of 128 x 128
  // tiles at 480 x 9984 x 480, 0.57x at 64 x 159744 x 64; 1.06x over more tiles (480 x 19968 x 480).
  // Of those, the recognizer's own (B row-major, one product per image, no column groups): 64 x 128 x 8
  // tiles with a warp's invocations as 16 x 2 (WARP_TILE off), but 128 x 128 x 16 tiles over M >=
  // kWarpRecWideM and at least kWarpBatchedMin128Tiles of them (the H100, ocr9: the page's two shapes'
  // products in 0.87-0.97x the time of 64 x 128 with 8 x 4 lanes, or of 128 x 128 x 8).
  const bool warp_rec = warp_batched && a_kq && p.b_quads == 1 && !p.split_columns;
  const bool warp_rec_wide = warp_rec && p.M >= kWarpRecWideM && warp_tiles >= kWarpBatchedMin128Tiles &&
                             warp_shared_bytes(128, 128, 16, true, false, true) <= dev.max_shared;
  const bool warp_batched64 =
      warp_rec ? !warp_rec_wide : warp_batched && a_kq && (p.M <= 64 || warp_tiles < kWarpBatchedMin128Tiles);
  const std::int64_t warp_rows = warp_row64 || warp_kmajor64 || warp_batched64 ? 64 : 128;
  // Also over K >= kWarpMinShortK where the result is written in column groups (conv2d's NCHW output,
  // split_columns: the 64 x 64 kernel has no such form and its result is permuted by a copy) and the
  // quad-load kernel's tiles are too few for it (kWarpMinShkTiles to 255 of them).
  const bool warp_cols_short =
      warp_row64 && p.split_columns && p.K >= kWarpMinShortK && tiles64 >= kWarpMinShkTiles && tiles64 < 256;
  const bool warp_shk_chosen = (warp_row64 && p.K >= 512 && tiles64 >= kWarpMinShkTiles) || warp_kmajor64 ||
                               warp_cols_short || (a_kq && p.b_quads == 2 && warp_tiles >= kWarpMinKmajorTiles);
  // Chosen only where its tile's 8-K buffers fit the device's shared memory: GLES 3.1 promises 16
  // KiB, and 128 x 128 x 8 with B kept K-major takes 17 KiB (16 KiB with B row-major; 64 x 128 x 8
  // 13 KiB). Unmeasured on such devices: the other kernels there (forced: as asked).
  const bool warp_fits =
      warp_shared_bytes(static_cast<int>(warp_rows), 128, 8, a_kq, p.b_quads == 2, true) <= dev.max_shared;
  const bool warp =
      warp_ok &&
      (forced == K::warp ||
       (chosen && !software && warp_fits &&
        (((p.b_quads == 2 || warp_whole || warp_batched) && warp_tiles >= kWarpMinTiles) || warp_shk_chosen)));
  const bool vec4_ok = !reg && !gemv && !warp && p.quads && whole;
  // Fewer tiles over a long K: split into K chunks (kSplitTiles), f32 math only (as measured).
  const bool vec4_split = chosen && !software && fb0 == 0 && vec4_tiles < 256 && p.K >= kSplitMinK && !p.split_columns;
  // GPUs, few 64 x 64 tiles over a short K (a training step's layers at batch 128): the REG kernel
  // with 4 x 4 blocks, K sliced over a workgroup's invocations (kSlicedMaxTiles), rather than the
  // 64 x 64 kernel or the quad-load kernel split over K.
  const bool sliced_fits = chosen && !software && fb0 == 0 && p.K > 0 && p.K < kSlicedMaxK &&
                           ceil_div(p.M, 64) * ceil_div(p.N, 64) * p.batch < kSlicedMaxTiles;
  const bool vec4 = vec4_ok && (forced_vec4 || (chosen && (vec4_tiles >= 256 || (vec4_split && !sliced_fits))));
  // The packed-half f16-math kernel: the quad-load kernel's conditions, whole 16-K tiles, any number of tiles.
  const bool f16x2 = vec4_ok && fb0 > 0 && p.K % 16 == 0 && p.K > 0 && (forced_vec4 || chosen) &&
                     settings.f16_matmul == F16MatmulSetting::f16x2;
  const bool tiled = !reg && !gemv && !warp && !vec4 && !f16x2;
  // At most kSplitShortMaxTiles of them from K = kSlicedSplitMinK: the 64 x 64 kernel split into short
  // chunks instead (kSplitShortChunk).
  const bool split_short = tiled && sliced_fits && p.K >= kSlicedSplitMinK &&
                           ceil_div(p.M, 64) * ceil_div(p.N, 64) * p.batch <= kSplitShortMaxTiles;
  const bool reg_sliced = tiled && sliced_fits && !split_short;
  const bool regk = reg || reg_sliced;  // the REG kernel, sliced or not
  if (gemv) {
    plan.kernel = MatmulPlan::Kernel::gemv;
    plan.tile_m = std::min<std::int64_t>(std::max<std::int64_t>(p.M, 1), kGemvRows);
    plan.tile_n = kGemvFeatures;
    // Invocations along K: 4 K each per step, fewer where K is short (32 to kGemvLocal).
    plan.local_x = 32;
    while (plan.local_x < kGemvLocal && 4 * plan.local_x < p.K) plan.local_x *= 2;
    plan.local_y = 1;
    plan.a_quad = p.a_quads == 1 ? 1 : 0;
    plan.b_quad = p.b_quads == 2 ? 2 : 0;
  } else if (reg) {
    // Blocks (bench/RESULTS.md): up to 8 rows x 8 columns, fewer where M or N is (cost follows
    // the product's size). On llvmpipe 16 x 32 blocks ran 1.4 to 2.8x faster but took LLVM
    // minutes to compile per variant (register allocation of the spilled accumulators). Software
    // rasterizers: workgroups of 16 (few idle lanes where the blocks are few); GPUs: 64.
    // GLTENSOR_MATMUL_REG_BLOCK caps them (the tests' smaller blocks on llvmpipe).
    plan.kernel = MatmulPlan::Kernel::reg;
    const int max_rows = settings.matmul_reg_rows, max_quads = settings.matmul_reg_quads;
    int rows = 1, quads = 1;
    while (rows < max_rows && rows < p.M) rows *= 2;
    while (quads < max_quads && 4 * quads < p.N) quads *= 2;
    plan.local_x = software ? 16 : 64;
    plan.local_y = 1;
    set_reg_block(plan, p, rows, quads);
  } else if (reg_sliced) {
    plan.kernel = MatmulPlan::Kernel::reg;
    plan.local_x = 16;  // widened below where the slices are fewer than 4
    plan.local_y = 1;
    set_reg_block(plan, p, 4, 1);
  } else if (warp) {
    plan.kernel = MatmulPlan::Kernel::warp;
    plan.tile_m = warp_rows;
    plan.tile_n = 128;
  } else if (f16x2) {
    plan.kernel = MatmulPlan::Kernel::f16x2;
    plan.tile_m = 64;
    plan.tile_n = 128;
    plan.local_x = 128;
    plan.local_y = 1;
  } else if (vec4) {
    plan.kernel = MatmulPlan::Kernel::vec4;
    plan.tile_m = 64;
    plan.tile_n = 128;
  } else {
    const bool big = p.M >= 128 && p.N >= 128 && p.K >= 8;
    const int want = forced == K::tile128 ? 128 : forced == K::tile64 ? 64 : (software ? 128 : 64);
    plan.kernel = want == 128 && big ? MatmulPlan::Kernel::tile128 : MatmulPlan::Kernel::tile64;
    plan.tile_m = plan.tile_n = plan.kernel == MatmulPlan::Kernel::tile128 ? 128 : 64;
  }
  // Workgroups per batch entry (REG: blocks of one invocation each, local_x per workgroup).
  const std::int64_t blocks = ceil_div(p.M, plan.tile_m) * ceil_div(p.N, plan.tile_n);
  const std::int64_t groups = regk ? ceil_div(blocks, plan.local_x) : blocks;
  const std::int64_t tiles = groups * p.batch;
  // F16_MATH is in every kernel but REG and GEMV (which compute in f32 where they are chosen).
  plan.f16_block = p.precision == Precision::f16_allowed && dev.fp16_arithmetic && !regk && !gemv ? kF16BlockK : 0;
  const std::int64_t fb = plan.f16_block;

  // Split-K. Chunks are multiples of 16 (whole K-tiles of every kernel and of both slices).
  std::int64_t splits = 1;
  if (dev.loop_limit != 0 && matmul_loops(plan.kernel, p.K, 1, fb) > dev.loop_limit) {
    std::int64_t max_kc = 16;
    while (matmul_loops(plan.kernel, max_kc * 2, 1, fb) <= dev.loop_limit) max_kc *= 2;
    for (std::int64_t step = max_kc / 2; step >= 16; step /= 2)
      if (matmul_loops(plan.kernel, max_kc + step, 1, fb) <= dev.loop_limit) max_kc += step;
    splits = ceil_div(p.K, max_kc);
  }
  const std::int64_t target = software ? 16 : 256;
  const std::int64_t needed = splits;  // the loop limit's
  // REG's workgroups are single invocations' blocks over all of K: split below the target itself
  // (a few workgroups leave cores idle on a CPU rasterizer).
  // GEMV spreads K over a workgroup's invocations already: it splits only for the loop limit.
  // GPUs' 64 x 64 and 128 x 128 kernels (not the quad-load, warp or REG ones) take chunks for about
  // twice the target's workgroups (at least 256 long; a change only where K > 65536 / tiles): the CNN's
  // conv2 weight gradient (5 tiles of 64 x 64 over K = 25088, H100) in 98 chunks of 256 ran the
  // training step in 0.495 ms against 0.505 in 51 chunks of 496 and 0.527-0.572 in 32 to 16
  // (bench/RESULTS.md, 2026-11-28, cnn34, with other shapes of this rule).
  const bool tiles_kernel = tiled && !regk && !software;
  if (!gemv && p.K >= 1024 && tiles * (reg ? 1 : 4) < target)
    splits = std::max(splits, std::min(ceil_div(tiles_kernel ? 2 * target : target, tiles), p.K / 256));
  // GPUs, long K over few tiles (weight gradients: K = batch x tokens, [in, out] outputs): at
  // least about four waves of an H100's 132 SMs, chunks of at least 1024 (chargpt's step,
  // bench/RESULTS.md: 108 tiles over K = 16384 ran 2.3x longer unsplit).
  // Not the warp kernel: 256 of its 128 x 128 tiles hold the work of 1024 tiles of 64 x 64.
  if (!software && !gemv && !reg && !warp && p.K >= 4096 && tiles < 512)
    splits = std::max(splits, std::min(ceil_div(512, tiles), p.K / 1024));
  if (vec4 && vec4_split) splits = std::max(splits, std::min(ceil_div(kSplitTiles, vec4_tiles), p.K / kSplitMinChunk));
  if (split_short) splits = std::max(splits, std::min(ceil_div(target, tiles), p.K / kSplitShortChunk));
  // The 64 x 128 warp form over row-major B in at most kWarpSplitTiles tiles, K >= 1024: K in two
  // chunks (H100: 1.10x at 1024^3, 1.46x at 256 x 4096 x 4096, 1.32x at 512 x 2048 x 2048, 1.07x at
  // 2048^3; 1.00x at 4096^3, 0.98x in 64 tiles at 256 x 2048 x 8192, not planned).
  if (warp && chosen && !software && warp_row64 && !p.split_columns && tiles <= kWarpSplitTiles && p.K >= 1024)
    splits = std::max<std::int64_t>(splits, 2);
  // Forced slices (Settings::matmul_split) for tiled kernels and the K-sliced REG kernel (its
  // slices then within each chunk); never fewer than the loop limit needs.
  if (settings.matmul_split > 0 && !gemv && !reg)
    splits = std::max(needed, std::min<std::int64_t>(settings.matmul_split, std::max<std::int64_t>(p.K / 16, 1)));
  if (splits > 1) {
    plan.kchunk = ceil_div(ceil_div(p.K, splits), 16) * 16;
    plan.splits = ceil_div(p.K, plan.kchunk);
  } else {
    plan.kchunk = p.K;
  }
  plan.split_columns = p.split_columns && (vec4 || f16x2 || reg || warp) && plan.splits == 1;
  if (reg_sliced) {
    // Slices of at least kSlicedMinK values of K, doubled while the invocations stay below
    // kSlicedInvocations; each slice's loops and the sum of the slices' blocks within the loop limit.
    const std::int64_t blocks4 = ceil_div(p.M, 4) * ceil_div(p.N, 4) * p.batch * plan.splits;
    std::int64_t ksl = 1;
    while (ksl < kSlicedMaxSlices && blocks4 * ksl < kSlicedInvocations && plan.kchunk / (2 * ksl) >= kSlicedMinK)
      ksl *= 2;
    auto slice_len = [&](std::int64_t n) { return ceil_div(ceil_div(plan.kchunk, n), 4) * 4; };
    while (ksl > 1 && dev.loop_limit != 0 &&
           matmul_loops(MatmulPlan::Kernel::reg, slice_len(ksl)) + static_cast<std::uint64_t>(ksl) > dev.loop_limit)
      ksl /= 2;
    // The slices' blocks in shared memory within GLES 3.1's guaranteed 16 KiB, so that every GPU
    // compiles the form (4 x 1 blocks of vec4s per invocation of each slice but the first;
    // matmul_kernel takes ROWSUM's row sums, 4 floats more each, only where they fit too).
    while (ksl > 1 &&
           reg_sliced_shared_bytes(static_cast<int>(ksl), std::max<std::int64_t>(16, 64 / ksl), false) > 16384)
      ksl /= 2;
    plan.reg_slices = static_cast<int>(ksl);
    plan.reg_kslice = slice_len(ksl);
    plan.local_x = static_cast<std::uint32_t>(std::max<std::int64_t>(16, 64 / ksl));  // 64 to 256 invocations
    plan.local_y = static_cast<std::uint32_t>(ksl);
    set_reg_block(plan, p, 4, 1);
  }

  if (vec4 && !f16x2) {
    // Variants (bench/RESULTS.md): sliced K fills a GPU's waves better where the tiles make a
    // fraction of a wave over a whole one, the unrolled inner product runs faster or slower by
    // shape; neither follows from what GL reports, so they are measured on first use where K
    // splits into whole K-tiles, K >= 256 and the tiles are at most 4096.
    const bool slice_ok = p.K % 16 == 0;  // whole 16-K tiles in every split (chunks are multiples of 16)
    const bool sliced = forced == K::vec4s || forced == K::vec4su, unrolled = forced == K::vec4u || forced == K::vec4su;
    plan.variant = (slice_ok && sliced ? 1 : 0) | (unrolled ? 2 : 0);
    // Few tiles split over K: the plain form, untuned (on the H100 it was the fastest split form
    // in every row, where the tuner picked the sliced one for K-major B at 0.57x).
    plan.tune = slice_ok && chosen && p.K >= 256 && vec4_tiles <= 4096 && !vec4_split;
    // The sliced variants only where their shared memory fits the device's (24 KiB for 64 x 128
    // tiles, past GLES 3.1's guaranteed 16 KiB: it failed at link there); else the unsliced two,
    // under their own key (a choice measured among four never picks a sliced one here).
    MatmulPlan sliced_plan = plan;
    sliced_plan.variant |= 1;
    plan.tune_sliced = matmul_shared_bytes(sliced_plan, p) <= dev.max_shared;
    if (plan.tune)
      plan.tune_key = "matmul_vec4/" + std::to_string(vec4_tiles) + "/" + std::to_string(p.K) + "/" +
                      dtype_name(p.out) + (plan.splits > 1 ? "/s" + std::to_string(plan.splits) : "") +
                      (fb ? "/f16math" : "") + (plan.tune_sliced ? "" : "/u");
    plan.local_x = (plan.variant & 1) ? 256 : 128;
    plan.local_y = 1;
  }
  plan.loop_iterations = matmul_loops(plan.kernel, plan.kchunk, 1, fb);
  // Sliced REG: one slice's loops and the loop over the other slices' blocks.
  if (plan.reg_slices > 1)
    plan.loop_iterations = matmul_loops(plan.kernel, plan.reg_kslice) + static_cast<std::uint64_t>(plan.reg_slices);
  plan.groups_x = static_cast<std::uint64_t>(reg          ? groups
                                             : reg_sliced ? plan.groups_x
                                                          : ceil_div(p.N, plan.tile_n));  // GEMV: features
  plan.groups_y = static_cast<std::uint64_t>(regk ? 1 : ceil_div(p.M, plan.tile_m));
  plan.groups_z = static_cast<std::uint64_t>(p.batch * plan.splits);
  // Tiles (H100, bench/RESULTS.md, 2026-11-27, mm72; above): 64 x 128 x 8 (A kept K-major in shared
  // memory, and B where K-major); B K-major in 128 x 128 tiles of 16 K with both operands kept K-major
  // (39.6 TFLOP/s at 4096^3 against 35.6 with 8-K tiles, 23.0 as merged), 8-K tiles where the 16-K
  // tile's 33 KiB of shared memory do not fit (llvmpipe's 32 KiB); else 128 x 128 x 8 (as merged,
  // a K-major A kept so; without warp_shk 16-K tiles ran 1.4x slower).
  if (warp) {
    const bool bk16 = (p.b_quads == 2 && warp_rows == 128 &&
                       warp_shared_bytes(128, 128, 16, p.a_quads == 1, true, true) <= dev.max_shared) ||
                      warp_rec_wide;
    set_warp_tile(plan, p, static_cast<int>(warp_rows), 128, bk16 ? 16 : 8, 8, !(warp_rec && !warp_rec_wide));
  }
  check_shared(plan, p, dev, !chosen);
  return plan;
}

}  // namespace gltensor::detail
