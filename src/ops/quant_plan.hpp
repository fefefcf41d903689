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

struct QLinearPlan {
  bool gemv = true;
  bool serial = false;       // GEMV on a software rasterizer: an invocation per output feature
  std::uint32_t local = 64;  // invocations per workgroup
  // GEMV: rows of x and output features per group of tpr invocations (local / tpr groups)
  std::int64_t mt = 1, rows = 2, tpr = 64;
  std::int64_t blocks_per_launch = 1;  // K blocks of 32 per launch (later launches add to y)
};

/// Worst-case loop iterations of one invocation of qlinear.comp over `blocks` K blocks, all loops
/// counted (nested ones multiplied).
inline std::uint64_t qlinear_loops(const QLinearPlan& p, std::int64_t blocks) {
  if (p.gemv && p.serial)
    return static_cast<std::uint64_t>(blocks * (p.rows + p.mt * (8 + p.rows * 5)) + 2 * p.mt * p.rows + 1);
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
/// than it saves (the serial form). forced: Settings::qlinear_kernel (choose, or the kernel to use).
inline QLinearPlan plan_qlinear(std::int64_t M, std::int64_t K, bool software, std::uint64_t loop_limit,
                                QlinearKernelSetting forced = QlinearKernelSetting::choose) {
  using Q = QlinearKernelSetting;
  QLinearPlan p;
  p.gemv = forced == Q::choose ? M <= 8 : forced != Q::gemm;
  p.serial = forced == Q::choose ? p.gemv && software : forced == Q::serial;
  p.local = p.gemv ? 64 : 256;
  p.mt = M <= 1 ? 1 : M <= 2 ? 2 : 4;
  p.rows = p.serial ? 1 : kQLinearRows;
  const std::int64_t Kb = std::max<std::int64_t>(1, (K + 31) / 32);
  p.tpr = 8;  // invocations per group of output features (GEMV): >= mt * rows, <= local
  while (p.tpr < 64 && (p.tpr < Kb || p.tpr < p.mt * p.rows)) p.tpr *= 2;
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
