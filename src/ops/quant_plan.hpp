// The quantized linear op's plan (internal, pure: tested without a GPU in tests/ops/test_plans.cpp):
// the kernel (GEMV for up to 8 rows of x, else GEMM), the GEMV's rows of x (MT) and output
// features (ROWS) per workgroup, and the K blocks per launch within the device's loop limit.
#pragma once
#include <algorithm>
#include <cstdint>

#include "runtime/settings.hpp"

namespace gltensor::detail {

/// GEMV on GPUs: output features per group of invocations, each block of x loaded once for
/// them (H100, bench/RESULTS.md: 4 rather than 2 took the int4 GEMV from 0.31 to 0.46 of a copy's
/// bandwidth at 14336 x 4096; 8 spilled registers in the int8 form).
inline constexpr std::int64_t kQLinearRows = 4;
/// The words GEMV (an invocation per 32-bit word of packed weights, so that a subgroup's loads of
/// x are contiguous; the GPUs' default): output features per group and words per invocation per
/// trip, all loaded before any is used (overridden by Settings::qlinear_gemv for tuning). H100,
/// bench/RESULTS.md: 8 x 1 x 64 with int4 in pairs took int8 at 14336 x 4096 from 0.62 to 0.90
/// of a copy's bandwidth and int4 from 0.48 to 0.57 (28672 x 8192: 0.83 -> 0.94, 0.60 -> 0.68);
/// 4 or 16 rows, more words per trip or the mantissa form were no faster.
inline constexpr std::int64_t kQLinearWordRows = 8, kQLinearWordUnroll = 1;
inline constexpr bool kQLinearWordPairs = true;  // int4: two adjacent words per invocation's unit

struct QLinearPlan {
  bool gemv = true;
  bool serial = false;       // GEMV on a software rasterizer: an invocation per output feature
  bool words = false;        // GEMV: an invocation per word (4 Q4 / Q8 columns' fields), not per block
  std::uint32_t local = 64;  // invocations per workgroup
  // GEMV: rows of x and output features per group of tpr invocations (local / tpr groups)
  std::int64_t mt = 1, rows = 2, tpr = 64;
  std::int64_t unroll = 1;             // words GEMV: words per invocation per trip (tpr apart)
  bool pairs = false;                  // words GEMV: int4 in pairs of adjacent words
  bool mantissa = false;               // words GEMV: int4's nibbles decoded through the mantissa
  std::int64_t blocks_per_launch = 1;  // K blocks of 32 per launch (later launches add to y)
};

/// Worst-case loop iterations of one invocation of qlinear.comp over `blocks` K blocks, all loops
/// counted (nested ones multiplied).
inline std::uint64_t qlinear_loops(const QLinearPlan& p, std::int64_t blocks) {
  if (p.gemv && p.serial)
    return static_cast<std::uint64_t>(blocks * (p.rows + p.mt * (8 + p.rows * 5)) + 2 * p.mt * p.rows + 1);
  if (p.gemv && p.words) {  // Q8's 8 words per block (Q4: 4)
    const std::int64_t per_trip = p.unroll * (p.rows + 1) + p.mt * (1 + p.unroll * (p.rows + 1)) + 1;
    const std::int64_t nacc = p.mt * p.rows;
    std::int64_t steps = 0;
    while ((std::int64_t{1} << steps) < p.tpr) ++steps;
    const std::int64_t trips = (8 * blocks + p.tpr * p.unroll - 1) / (p.tpr * p.unroll);
    return static_cast<std::uint64_t>(trips * per_trip + 2 * nacc + steps * (nacc + 1) + 1);
  }
  if (p.gemv) {
    const std::int64_t per_block = p.rows + p.mt * (8 + p.rows * 5);
    const std::int64_t nacc = p.mt * p.rows;
    std::int64_t steps = 0;  // log2(tpr)
    while ((std::int64_t{1} << steps) < p.tpr) ++steps;
    const std::int64_t mine = (blocks + p.tpr - 1) / p.tpr;
    return static_cast<std::uint64_t>(mine * per_block + 2 * nacc + steps * (nacc + 1) + 1);
  }
  // x tile (8), weights (Q8: 2 x (1 + 4), Q4: 4), 32 columns x (1 + 4); then the 4 x 4 stores.
  return static_cast<std::uint64_t>(blocks * (8 + 10 + 4 + 32 * 5) + 16 + 20 + 1);
}

/// M rows of x, K input features (Kb = ceil(K / 32) blocks), under a loop limit.
/// software: a CPU rasterizer (llvmpipe), where the GEMV's shared-memory reduction costs more
/// than it saves (the serial form). forced: Settings::qlinear_kernel (choose, or the kernel to use);
/// shape: Settings::qlinear_gemv (the words GEMV's rows, unroll and invocations per group);
/// N: output features (0 = unknown), for the words GEMV's group size.
inline QLinearPlan plan_qlinear(std::int64_t M, std::int64_t K, bool software, std::uint64_t loop_limit,
                                QlinearKernelSetting forced = QlinearKernelSetting::choose, QlinearGemvShape shape = {},
                                std::int64_t N = 0) {
  using Q = QlinearKernelSetting;
  QLinearPlan p;
  p.gemv = forced == Q::choose ? M <= 8 : forced != Q::gemm;
  p.serial = forced == Q::choose ? p.gemv && software : forced == Q::serial;
  p.words = p.gemv && (forced == Q::words || (forced == Q::choose && !software));
  p.mt = M <= 1 ? 1 : M <= 2 ? 2 : 4;
  p.rows = p.serial ? 1 : p.words ? (shape.rows > 0 ? shape.rows : kQLinearWordRows) : kQLinearRows;
  p.unroll = p.words ? (shape.unroll > 0 ? shape.unroll : kQLinearWordUnroll) : 1;
  p.mantissa = p.words && shape.mantissa;
  p.pairs = p.words && (shape.rows > 0 ? shape.pairs : kQLinearWordPairs);
  const std::int64_t Kb = std::max<std::int64_t>(1, (K + 31) / 32);
  // Invocations per group of output features (GEMV): >= mt * rows (the reduction's last step
  // stores them), enough for the row's blocks (words: Q4's 4 per block, each trip `unroll`).
  const std::int64_t most = p.words && shape.tpr > 0 ? shape.tpr : 64, units = p.words ? 4 * Kb : Kb;
  p.tpr = 8;
  while (p.tpr < p.mt * p.rows || (p.tpr < most && p.tpr * p.unroll < units)) p.tpr *= 2;
  // Words: few output features over a long K (a down projection: N 4096, K 14336 made 512 groups
  // of 64, too few invocations for the H100's 132 SMs, bench/RESULTS.md) get larger groups, up
  // to 256 invocations, until the launch has 64Ki invocations (N: 0 = unknown).
  const std::int64_t groups = (N + p.rows - 1) / p.rows;
  while (p.words && shape.tpr == 0 && N > 0 && p.tpr < 256 && groups * p.tpr < 65536 && p.tpr * p.unroll < units)
    p.tpr *= 2;
  // The reduction's shared floats (mt * rows per invocation) within 16 KiB, GL ES's minimum.
  while (p.tpr > 64 && p.tpr * p.mt * p.rows > 4096) p.tpr /= 2;
  p.local = p.gemv ? static_cast<std::uint32_t>(std::max<std::int64_t>(64, p.tpr)) : 256;
  // The most blocks whose loops fit the limit (at least one per launch).
  std::int64_t lo = 1, hi = Kb;
  if (qlinear_loops(p, hi) <= loop_limit) lo = hi;
  while (lo < hi) {
    const std::int64_t mid = (lo + hi + 1) / 2;
    if (qlinear_loops(p, mid) <= loop_limit)
      lo = mid;
    else
      hi = mid - 1;
  }
  p.blocks_per_launch = lo;
  return p;
}

}  // namespace gltensor::detail
