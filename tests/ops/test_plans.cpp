// Kernel planning as pure functions, without a GPU: plan_matmul's kernel, variants, split-K and
// loop lengths for given shapes, device traits and settings; the fused attention tiling; the
// direct conv kernel's layout; softmax's form; the settings' parsing (conv2d's and pooling's
// plans: tests/nn/test_nn_plans.cpp).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "gltensor/errors.hpp"
#include "nn/attention_plan.hpp"
#include "nn/conv_direct_plan.hpp"
#include "ops/elementwise_plan.hpp"
#include "ops/matmul_plan.hpp"
#include "ops/quant_plan.hpp"
#include "ops/softmax_plan.hpp"

using namespace gltensor;
using namespace gltensor::detail;

namespace {
MatmulProblem problem(std::int64_t M, std::int64_t N, std::int64_t K, bool quads = true, std::int64_t batch = 1) {
  MatmulProblem p;
  p.M = M, p.N = N, p.K = K, p.batch = batch, p.quads = quads;
  return p;
}
const DeviceTraits kGpu{false, 0, false}, kLlvmpipe{true, 65535, false, 32768};
}  // namespace

TEST(PlanMatmul, KernelChoice) {
  const Settings s;
  // Whole 64 x 128 tiles, quad-aligned operands, >= 256 tiles (fewer than 256 warp tiles): the
  // quad-load kernel.
  MatmulPlan p = plan_matmul(problem(1024, 2048, 512), kGpu, s);
  EXPECT_EQ(p.kernel, MatmulPlan::Kernel::vec4);
  EXPECT_EQ(p.groups_x, 16u);
  EXPECT_EQ(p.groups_y, 16u);
  EXPECT_TRUE(p.tune);
  EXPECT_EQ(p.tune_key, "matmul_vec4/256/512/float32");
  // Fewer tiles, or operands that are not quads: scalar 64 x 64 tiles on GPUs (fewer than
  // kSlicedMaxTiles of them over a short K: the K-sliced REG kernel, SlicedRegForFewSmallTiles).
  EXPECT_EQ(plan_matmul(problem(128, 256, 64), kGpu, s).kernel, MatmulPlan::Kernel::reg);
  EXPECT_EQ(plan_matmul(problem(1024, 4096, 64, false), kGpu, s).kernel, MatmulPlan::Kernel::tile64);
  EXPECT_EQ(plan_matmul(problem(1024, 4096, 512, false), kGpu, s).kernel, MatmulPlan::Kernel::tile64);
  // llvmpipe: the REG kernel for every shape.
  for (auto [m, n, k] : std::vector<std::array<std::int64_t, 3>>{{1024, 4096, 512}, {100, 20, 30}, {64, 25088, 288}})
    EXPECT_EQ(plan_matmul(problem(m, n, k), kLlvmpipe, s).kernel, MatmulPlan::Kernel::reg) << m << "x" << n;
  // Ragged sizes never take the quad-load kernel (nor, for row-major B, the warp kernel).
  EXPECT_EQ(plan_matmul(problem(1000, 4096, 512), kGpu, s).kernel, MatmulPlan::Kernel::tile64);
}

TEST(PlanMatmul, ForcedVariants) {
  Settings s;
  s.matmul_kernel = MatmulKernelSetting::vec4su;
  MatmulPlan p = plan_matmul(problem(128, 256, 64), kGpu, s);  // 4 tiles, forced
  EXPECT_EQ(p.kernel, MatmulPlan::Kernel::vec4);
  EXPECT_EQ(p.variant, 3);
  EXPECT_EQ(p.local_x, 256u);
  EXPECT_FALSE(p.tune);
  s.matmul_kernel = MatmulKernelSetting::vec4s;
  EXPECT_EQ(plan_matmul(problem(128, 256, 72), kGpu, s).variant, 0) << "K = 72 does not split into 16-K tiles";
  s.matmul_kernel = MatmulKernelSetting::tile128;
  EXPECT_EQ(plan_matmul(problem(1024, 4096, 512), kGpu, s).kernel, MatmulPlan::Kernel::tile128);
  s.matmul_kernel = MatmulKernelSetting::vec4;
  EXPECT_EQ(plan_matmul(problem(1024, 4096, 512, false), kGpu, s).kernel, MatmulPlan::Kernel::tile64)
      << "the quad-load kernel only where it applies";
  // The scalar tiles or the quad-load kernel on llvmpipe, and REG on a GPU, when forced.
  s.matmul_kernel = MatmulKernelSetting::tile64;
  EXPECT_EQ(plan_matmul(problem(1024, 4096, 512), kLlvmpipe, s).kernel, MatmulPlan::Kernel::tile64);
  s.matmul_kernel = MatmulKernelSetting::vec4;
  EXPECT_EQ(plan_matmul(problem(1024, 4096, 512), kLlvmpipe, s).kernel, MatmulPlan::Kernel::vec4);
  s.matmul_kernel = MatmulKernelSetting::reg;
  EXPECT_EQ(plan_matmul(problem(1024, 4096, 512), kGpu, s).kernel, MatmulPlan::Kernel::reg);
}

// The REG kernel: its block by shape (up to 8 x 8), one
// invocation per block and local_x blocks per workgroup along x, batch and splits along z; quad loads of B where the
// operand allows them.
TEST(PlanMatmul, RegisterBlocks) {
  const Settings s;
  MatmulProblem p = problem(64, 25088, 288);  // conv2d forward (issue 15)
  p.a_quads = 1;
  p.b_quads = 1;
  MatmulPlan r = plan_matmul(p, kLlvmpipe, s);
  EXPECT_EQ(r.reg_rows, 8);
  EXPECT_EQ(r.reg_quads, 2);
  EXPECT_EQ(r.a_quad, 1);
  EXPECT_EQ(r.b_quad, 1);
  EXPECT_EQ(r.local_x, 16u);
  EXPECT_EQ(r.groups_x, 8u * 3136u / 16u);
  EXPECT_EQ(r.groups_y, 1u);
  EXPECT_EQ(r.splits, 1);
  EXPECT_EQ(r.loop_iterations, 288u / 4u + 3u);
  p.b_quads = 0;
  EXPECT_EQ(plan_matmul(p, kLlvmpipe, s).b_quad, 0);
  // Quads of 4 rows need blocks of 4 rows.
  MatmulProblem t = problem(2, 64, 64);
  t.a_quads = 2;
  EXPECT_EQ(plan_matmul(t, kLlvmpipe, s).a_quad, 0);
  t.M = 8;
  EXPECT_EQ(plan_matmul(t, kLlvmpipe, s).a_quad, 2);
  // Few rows or columns: the block shrinks with them (cost follows the product's size).
  EXPECT_EQ(plan_matmul(problem(3, 65536, 3), kLlvmpipe, s).reg_rows, 4);
  EXPECT_EQ(plan_matmul(problem(1, 100, 30), kLlvmpipe, s).reg_rows, 1);
  EXPECT_EQ(plan_matmul(problem(2, 100, 30), kLlvmpipe, s).reg_rows, 2);
  // GLTENSOR_MATMUL_REG_BLOCK caps the block (the tests' 4 x 4 on llvmpipe); A's 4-row quads stay.
  Settings capped;
  capped.matmul_reg_rows = 4, capped.matmul_reg_quads = 1;
  MatmulProblem q = problem(64, 64, 64);
  q.a_quads = 2;
  const MatmulPlan c = plan_matmul(q, kLlvmpipe, capped);
  EXPECT_EQ(c.reg_rows, 4);
  EXPECT_EQ(c.reg_quads, 1);
  EXPECT_EQ(c.a_quad, 2);
  EXPECT_EQ(c.groups_x, 16u * 16u / 16u);
  EXPECT_EQ(plan_matmul(problem(2, 100, 30), kLlvmpipe, capped).reg_rows, 2);
  const MatmulPlan col = plan_matmul(problem(100352, 1, 32), kLlvmpipe, s);
  EXPECT_EQ(col.reg_quads, 1);
  EXPECT_EQ(col.groups_x, 12544u / 16u);
  // GPUs: REG where M or N is at most 8 (a 64 x 64 tile would do 8 to 64 times the work), the
  // tiled kernels otherwise.
  EXPECT_EQ(plan_matmul(problem(3, 65536, 3), kGpu, s).kernel, MatmulPlan::Kernel::reg);
  const MatmulPlan gs = plan_matmul(problem(65536, 8, 64), kGpu, s);
  EXPECT_EQ(gs.kernel, MatmulPlan::Kernel::reg);
  EXPECT_EQ(gs.reg_rows, 8) << "GPU blocks stay within registers";
  EXPECT_EQ(gs.reg_quads, 2);
  EXPECT_EQ(gs.local_x, 64u);
  EXPECT_EQ(plan_matmul(problem(65536, 9, 64), kGpu, s).kernel, MatmulPlan::Kernel::tile64);
  // Batches along z; split-K past the loop limit and for few workgroups over a long K.
  const MatmulPlan b = plan_matmul(problem(3, 5, 7, false, 6), kLlvmpipe, s);
  EXPECT_EQ(b.groups_z, 6u);
  const MatmulPlan w = plan_matmul(problem(32, 9, 100352, false), kLlvmpipe, s);  // conv2d's weight gradient
  EXPECT_EQ(w.groups_x, 1u);
  EXPECT_GE(w.groups_x * static_cast<std::uint64_t>(w.splits), 16u);
  // GPUs: a long K over few tiles (a linear layer's weight gradient, [in, out] over batch x tokens:
  // chargpt's 384 x 1152 over 16384, 6 x 18 tiles of 64) splits into about four waves of 132
  // SMs, chunks of at least 1024; enough tiles, or K below 4096, stay whole.
  // (Operands that are not quads: the 64 x 64 kernel; quads: SplitKForFewQuadLoadTiles.)
  const MatmulPlan wg = plan_matmul(problem(384, 1152, 16384, false), kGpu, s);
  EXPECT_EQ(wg.kernel, MatmulPlan::Kernel::tile64);
  EXPECT_EQ(wg.splits, 5);
  EXPECT_GE(wg.kchunk, 1024);
  EXPECT_GE(wg.splits * wg.kchunk, 16384);
  EXPECT_EQ(plan_matmul(problem(384, 1152, 2048, false), kGpu, s).splits, 1);
  EXPECT_EQ(plan_matmul(problem(2048, 2048, 16384), kGpu, s).splits, 1);
  EXPECT_EQ(plan_matmul(problem(2048, 2048, 16384, false), kGpu, s).splits, 1);
  const MatmulPlan l = plan_matmul(problem(512, 512, 300000, false), kLlvmpipe, s);
  EXPECT_GT(l.splits, 1);
  EXPECT_LE(l.loop_iterations, kLlvmpipe.loop_limit);
  EXPECT_GE(l.splits * l.kchunk, 300000);
  // The conv2d epilogue writing NCHW applies to REG without split-K.
  p.split_columns = true;
  EXPECT_TRUE(plan_matmul(p, kLlvmpipe, s).split_columns);
}

// Split-K where one invocation would loop past the device's limit: every split within it, chunks
// of whole 16-K tiles covering K exactly.
TEST(PlanMatmul, SplitKForTheLoopLimit) {
  // Forced tile64 (REG, llvmpipe's default, loops K / 4 times: it splits only the longest K).
  Settings s;
  s.matmul_kernel = MatmulKernelSetting::tile64;
  for (std::int64_t K : {50000, 93312, 65535 * 4 + 7}) {
    for (bool quads : {false, true}) {
      if (K == 65535 * 4 + 7) s.matmul_kernel = MatmulKernelSetting::choose;
      const MatmulPlan p = plan_matmul(problem(64, 288, K, quads), kLlvmpipe, s);
      EXPECT_GT(p.splits, 1) << K;
      EXPECT_EQ(p.kchunk % 16, 0) << K;
      EXPECT_GE(p.splits * p.kchunk, K) << K;
      EXPECT_LT((p.splits - 1) * p.kchunk, K) << K;
      EXPECT_LE(p.loop_iterations, kLlvmpipe.loop_limit) << K;
      EXPECT_EQ(p.groups_z, static_cast<std::uint64_t>(p.splits)) << K;
      EXPECT_FALSE(p.split_columns);
    }
  }
  // Short K: no split on either device; long K with many tiles on a GPU: none either.
  EXPECT_EQ(plan_matmul(problem(512, 512, 3000, false), kLlvmpipe, s).splits, 1);
  EXPECT_EQ(plan_matmul(problem(4096, 4096, 50000), kGpu, s).splits, 1);
  // Each kernel's loop count grows with K and stays under the limit it was planned for.
  for (auto k :
       {MatmulPlan::Kernel::vec4, MatmulPlan::Kernel::tile64, MatmulPlan::Kernel::tile128, MatmulPlan::Kernel::reg})
    EXPECT_LT(matmul_loops(k, 1024), matmul_loops(k, 2048));
  const DeviceTraits tiny{false, 2000, false};
  const MatmulPlan t = plan_matmul(problem(70, 30, 5000, false), tiny, s);
  EXPECT_LE(t.loop_iterations, 2000u);
  EXPECT_GE(t.splits * t.kchunk, 5000);
}

// A GPU under a loop limit below one K-chunk of every tiled kernel (tests lower it to tens of
// iterations): REG, whose loops are about K / 4, within the limit.
TEST(PlanMatmul, TinyLoopLimitTakesReg) {
  const DeviceTraits tiny{false, 40, false};
  for (const auto& [M, N, K] : {std::array<std::int64_t, 3>{9, 10, 16}, {64, 128, 16}, {300, 200, 500}}) {
    const MatmulPlan p = plan_matmul(problem(M, N, K, true), tiny, Settings{});
    EXPECT_EQ(p.kernel, MatmulPlan::Kernel::reg) << M << "x" << N << "x" << K;
    EXPECT_LE(p.loop_iterations, 40u) << M << "x" << N << "x" << K;
    EXPECT_GE(p.splits * p.kchunk, K);
  }
  // Without a limit GPU problems of many tiles take the tiled kernels (few tiles: the K-sliced
  // REG kernel, SlicedRegForFewSmallTiles).
  EXPECT_NE(plan_matmul(problem(1024, 1024, 16, true), kGpu, Settings{}).kernel, MatmulPlan::Kernel::reg);
  EXPECT_EQ(plan_matmul(problem(64, 128, 16, true), kGpu, Settings{}).reg_slices, 1);
}

// GPUs: fewer than kSlicedMaxTiles 64 x 64 tiles over K < kSlicedMaxK (the training step's layers
// at batch 128): REG with 4 x 4 blocks and K sliced over the workgroup's invocations; never on
// llvmpipe, with a kernel forced, f16 math, many tiles or a long K; within a lowered loop limit.
TEST(PlanMatmul, SlicedRegForFewSmallTiles) {
  const Settings s;
  // The MLP's first layer [128, 784] x [784, 256]: 2048 blocks x 16 slices of 52 K (49 rounded to 4).
  const MatmulPlan p = plan_matmul(problem(128, 256, 784), kGpu, s);
  EXPECT_EQ(p.kernel, MatmulPlan::Kernel::reg);
  EXPECT_EQ(p.reg_rows, 4);
  EXPECT_EQ(p.reg_quads, 1);
  EXPECT_EQ(p.reg_slices, 16);
  EXPECT_EQ(p.reg_kslice, 52);
  EXPECT_EQ(p.local_x, 16u);
  EXPECT_EQ(p.local_y, 16u);
  EXPECT_EQ(p.groups_x, 128u);
  EXPECT_EQ(p.groups_y, 1u);
  EXPECT_EQ(p.splits, 1);
  EXPECT_EQ(p.loop_iterations, matmul_loops(MatmulPlan::Kernel::reg, 52) + 16);
  // Its shared memory within GLES 3.1's 16 KiB; with ROWSUM's row sums it would not be
  // (matmul_kernel then leaves the bias gradient to its own dispatch).
  EXPECT_LE(reg_sliced_shared_bytes(p.reg_slices, p.local_x, false), 16384);
  EXPECT_GT(reg_sliced_shared_bytes(p.reg_slices, p.local_x, true), 16384);
  // Its weight gradient [256, 128] x [128, 784]: 12544 blocks, 4 slices of 32 (at least kSlicedMinK).
  const MatmulPlan w = plan_matmul(problem(256, 784, 128), kGpu, s);
  EXPECT_EQ(w.reg_slices, 4);
  EXPECT_EQ(w.reg_kslice, 32);
  EXPECT_EQ(w.groups_x, 12544u / 16u);
  // The CNN's FC1 forward [128, 3136] x [3136, 128] (whole quad-load tiles, 2 of them), K >= kSlicedSplitMinK:
  // the 64 x 64 kernel in 49 chunks of kSplitShortChunk (4 tiles x 49 workgroups), not the sliced REG
  // kernel; below kSlicedSplitMinK the sliced REG kernel; from kSlicedMaxK the split quad-load kernel.
  const MatmulPlan f = plan_matmul(problem(128, 128, 3136), kGpu, s);
  EXPECT_EQ(f.kernel, MatmulPlan::Kernel::tile64);
  EXPECT_EQ(f.splits, 49);
  EXPECT_EQ(f.kchunk, kSplitShortChunk);
  EXPECT_EQ(f.reg_slices, 1);
  EXPECT_EQ(f.groups_x * f.groups_y, 4u);
  EXPECT_EQ(f.groups_z, 49u);
  EXPECT_EQ(f.loop_iterations, matmul_loops(MatmulPlan::Kernel::tile64, kSplitShortChunk));
  const MatmulPlan f2 = plan_matmul(problem(128, 128, kSlicedSplitMinK - 16), kGpu, s);
  EXPECT_EQ(f2.kernel, MatmulPlan::Kernel::reg);
  EXPECT_EQ(f2.splits, 1);
  EXPECT_EQ(f2.reg_slices, 16);
  const MatmulPlan f3 = plan_matmul(problem(64, 64, kSlicedSplitMinK), kGpu, s);  // one tile: K / 64 chunks
  EXPECT_EQ(f3.kernel, MatmulPlan::Kernel::tile64);
  EXPECT_EQ(f3.splits, kSlicedSplitMinK / kSplitShortChunk);
  EXPECT_EQ(plan_matmul(problem(128, 128, 3136), kLlvmpipe, s).kernel, MatmulPlan::Kernel::reg);
  const MatmulPlan f4 = plan_matmul(problem(128, 128, kSlicedMaxK), kGpu, s);
  EXPECT_EQ(f4.kernel, MatmulPlan::Kernel::vec4);
  EXPECT_GT(f4.splits, 1);
  // K = 10 (the last layer's input gradient): no slices, 64 blocks per workgroup.
  const MatmulPlan t = plan_matmul(problem(128, 128, 10), kGpu, s);
  EXPECT_EQ(t.kernel, MatmulPlan::Kernel::reg);
  EXPECT_EQ(t.reg_slices, 1);
  EXPECT_EQ(t.local_x, 64u);
  EXPECT_EQ(t.local_y, 1u);
  // Batches along z; operands that are not quads.
  const MatmulPlan b = plan_matmul(problem(20, 30, 100, false, 3), kGpu, s);
  EXPECT_EQ(b.kernel, MatmulPlan::Kernel::reg);
  EXPECT_EQ(b.groups_z, 3u);
  EXPECT_EQ(b.reg_slices * b.reg_kslice >= 100, true);
  // Not on llvmpipe (plain REG), not with a kernel forced, f16 math, many tiles or a long K.
  EXPECT_EQ(plan_matmul(problem(128, 256, 784), kLlvmpipe, s).reg_slices, 1);
  Settings forced;
  forced.matmul_kernel = MatmulKernelSetting::reg;
  EXPECT_EQ(plan_matmul(problem(128, 256, 784), kGpu, forced).reg_slices, 1);
  forced.matmul_kernel = MatmulKernelSetting::tile64;
  EXPECT_EQ(plan_matmul(problem(128, 256, 784), kGpu, forced).kernel, MatmulPlan::Kernel::tile64);
  MatmulProblem half = problem(128, 256, 784);
  half.precision = Precision::f16_allowed;
  EXPECT_EQ(plan_matmul(half, DeviceTraits{false, 0, true}, s).kernel, MatmulPlan::Kernel::tile64);
  EXPECT_EQ(plan_matmul(problem(1024, 1024, 512, false), kGpu, s).kernel, MatmulPlan::Kernel::tile64);
  EXPECT_NE(plan_matmul(problem(128, 256, kSlicedMaxK, false), kGpu, s).kernel, MatmulPlan::Kernel::reg);
  // "gpu" (tests of the GPU paths on llvmpipe): the GPU's choice.
  Settings gpu;
  gpu.matmul_kernel = MatmulKernelSetting::gpu;
  EXPECT_EQ(plan_matmul(problem(128, 256, 784), kLlvmpipe, gpu).reg_slices, 16);
  // A lowered loop limit: split-K for it, then slices within each split's chunk, every
  // invocation's loops (a slice and the sum of the slices) within the limit.
  for (std::uint64_t limit : {180u, 170u}) {  // above the tiled kernels' shortest chunk (TinyLoopLimitTakesReg)
    const MatmulPlan l = plan_matmul(problem(128, 256, 784), DeviceTraits{false, limit, false}, gpu);
    EXPECT_EQ(l.kernel, MatmulPlan::Kernel::reg) << limit;
    EXPECT_GT(l.reg_slices, 1) << limit;
    EXPECT_GT(l.splits, 1) << limit;
    EXPECT_LE(l.loop_iterations, limit) << limit;
    EXPECT_GE(l.splits * l.kchunk, 784) << limit;
    EXPECT_GE(static_cast<std::int64_t>(l.reg_slices) * l.reg_kslice, l.kchunk) << limit;
    EXPECT_EQ(l.reg_kslice % 4, 0) << limit;
  }
}

// GEMV: GPUs with M <= 8 and a K-major B (linear's w.t()); llvmpipe keeps REG unless forced.
TEST(PlanMatmul, GemvForFewRowsOnGpus) {
  const Settings s;
  auto lin = [](std::int64_t M, std::int64_t N, std::int64_t K) {
    MatmulProblem p = problem(M, N, K);
    p.b_kmajor = true, p.a_quads = 1, p.b_quads = 2;
    return p;
  };
  for (std::int64_t m = 1; m <= 8; ++m) {
    const MatmulPlan p = plan_matmul(lin(m, 1024, 384), kGpu, s);
    EXPECT_EQ(p.kernel, MatmulPlan::Kernel::gemv) << m;
    EXPECT_EQ(p.tile_m, m);
    EXPECT_EQ(p.tile_n, kGemvFeatures);
    EXPECT_EQ(p.groups_x, 1024u / kGemvFeatures);
    EXPECT_EQ(p.groups_y, 1u);
    EXPECT_EQ(p.local_x, kGemvLocal);
    EXPECT_EQ(p.a_quad, 1);
    EXPECT_EQ(p.b_quad, 2);
    EXPECT_EQ(p.f16_block, 0) << "f32 math";
    EXPECT_EQ(plan_matmul(lin(m, 1024, 384), kLlvmpipe, s).kernel, MatmulPlan::Kernel::reg) << m;
  }
  // Long K over few features: no split (the workgroup spreads K); short K: fewer invocations.
  EXPECT_EQ(plan_matmul(lin(1, 384, 1024), kGpu, s).splits, 1);
  EXPECT_EQ(plan_matmul(lin(1, 4096, 4096), kGpu, s).splits, 1);
  EXPECT_EQ(plan_matmul(lin(1, 4096, 4096), kGpu, s).groups_x, 4096u / kGemvFeatures);
  EXPECT_EQ(plan_matmul(lin(1, 64, 64), kGpu, s).local_x, 32u);
  // 9 rows, a row-major B, conv2d's split columns: not GEMV.
  EXPECT_NE(plan_matmul(lin(9, 1024, 384), kGpu, s).kernel, MatmulPlan::Kernel::gemv);
  EXPECT_EQ(plan_matmul(problem(1, 1024, 384), kGpu, s).kernel, MatmulPlan::Kernel::reg);
  MatmulProblem sc = lin(4, 1024, 384);
  sc.split_columns = true;
  EXPECT_EQ(plan_matmul(sc, kGpu, s).kernel, MatmulPlan::Kernel::reg);
  // Forced: any shape and device; batches along z, rows along y in blocks of kGemvRows.
  Settings f;
  f.matmul_kernel = MatmulKernelSetting::gemv;
  const MatmulPlan fp = plan_matmul(problem(20, 30, 5, false, 3), kLlvmpipe, f);
  EXPECT_EQ(fp.kernel, MatmulPlan::Kernel::gemv);
  EXPECT_EQ(fp.tile_m, kGemvRows);
  EXPECT_EQ(fp.groups_y, 3u);
  EXPECT_EQ(fp.groups_x, 8u);
  EXPECT_EQ(fp.groups_z, 3u);
  EXPECT_EQ(fp.b_quad, 0);
  // Under a loop limit: split-K in chunks of 16 within it; below its fixed cost, REG.
  const DeviceTraits low{true, 500, false};
  const MatmulPlan lp = plan_matmul(lin(3, 40, 5000), low, f);
  EXPECT_EQ(lp.kernel, MatmulPlan::Kernel::gemv);
  EXPECT_GT(lp.splits, 1);
  EXPECT_EQ(lp.kchunk % 16, 0);
  EXPECT_GE(lp.splits * lp.kchunk, 5000);
  EXPECT_LE(lp.loop_iterations, 500u);
  EXPECT_EQ(lp.groups_z, static_cast<std::uint64_t>(lp.splits));
  EXPECT_LT(matmul_loops(MatmulPlan::Kernel::gemv, 1024), matmul_loops(MatmulPlan::Kernel::gemv, 4096));
  EXPECT_EQ(plan_matmul(lin(3, 40, 5000), DeviceTraits{true, 40, false}, f).kernel, MatmulPlan::Kernel::reg);
}

// Split-K for parallelism: few output tiles over a long K (conv2d's weight gradient).
TEST(PlanMatmul, SplitKForFewTiles) {
  const Settings s;
  const MatmulPlan p = plan_matmul(problem(64, 288, 100352, false), kGpu, s);  // 5 tiles of 64 x 64
  EXPECT_GE(p.splits * 5, 64) << "enough workgroups to fill a GPU";
  EXPECT_GE(p.kchunk, 256);
  EXPECT_EQ(plan_matmul(problem(64, 288, 512, false), kGpu, s).splits, 1) << "short K";
  // The CNN's conv2 weight gradient (5 tiles): about 512 workgroups, chunks of 256 (cnn34's H100 step).
  const MatmulPlan w = plan_matmul(problem(288, 64, 25088), kGpu, s);
  EXPECT_EQ(w.kernel, MatmulPlan::Kernel::tile64);
  EXPECT_EQ(w.kchunk, 256);
  EXPECT_EQ(w.splits, 98);
  // Batched: the batch counts as tiles; z covers batch x splits.
  const MatmulPlan b = plan_matmul(problem(64, 64, 8192, false, 3), kGpu, s);
  EXPECT_EQ(b.groups_z, static_cast<std::uint64_t>(3 * b.splits));
}

// GPUs: fewer than 256 whole 64 x 128 quad-load tiles over K >= 2 kSplitMinChunk: the quad-load
// kernel in K chunks of at least kSplitMinChunk, about kSplitTiles workgroups in all (bench/RESULTS.md,
// 2026-11-27, mm70b); not on llvmpipe, not for ragged shapes, short K or f16 math.
TEST(PlanMatmul, SplitKForFewQuadLoadTiles) {
  const Settings s;
  const MatmulPlan p = plan_matmul(problem(256, 4096, 4096), kGpu, s);  // 4 x 32 tiles
  EXPECT_EQ(p.kernel, MatmulPlan::Kernel::vec4);
  EXPECT_EQ(p.splits, std::min(kSplitTiles / 128, 4096 / kSplitMinChunk));
  EXPECT_EQ(p.kchunk, 4096 / p.splits);
  EXPECT_EQ(p.groups_z, static_cast<std::uint64_t>(p.splits));
  EXPECT_FALSE(p.tune) << "the plain form, untuned";
  EXPECT_EQ(p.variant, 0);
  const MatmulPlan q = plan_matmul(problem(1024, 1024, 1024), kGpu, s);  // 16 x 8 tiles
  EXPECT_EQ(q.kernel, MatmulPlan::Kernel::vec4);
  EXPECT_EQ(q.splits, std::min(kSplitTiles / 128, 1024 / kSplitMinChunk));
  EXPECT_GE(q.kchunk, kSplitMinChunk);
  const MatmulPlan g = plan_matmul(problem(384, 1152, 16384), kGpu, s);  // chargpt's weight gradient, 6 x 9 tiles
  EXPECT_EQ(g.kernel, MatmulPlan::Kernel::vec4);
  EXPECT_GE(g.splits * 54, kSplitTiles);
  EXPECT_GE(g.splits * g.kchunk, 16384);
  // Unchanged: short K, ragged shapes, enough tiles, llvmpipe, f16 math.
  EXPECT_EQ(plan_matmul(problem(256, 4096, 2 * kSplitMinChunk - 8), kGpu, s).kernel, MatmulPlan::Kernel::tile64);
  EXPECT_EQ(plan_matmul(problem(256, 4100, 4096), kGpu, s).kernel, MatmulPlan::Kernel::tile64);
  EXPECT_EQ(plan_matmul(problem(2048, 2048, 4096), kGpu, s).splits, 1);
  EXPECT_EQ(plan_matmul(problem(256, 4096, 4096), kLlvmpipe, s).kernel, MatmulPlan::Kernel::reg);
  MatmulProblem half = problem(256, 4096, 4096);
  half.precision = Precision::f16_allowed;
  EXPECT_EQ(plan_matmul(half, DeviceTraits{false, 0, true}, s).kernel, MatmulPlan::Kernel::tile64);
}

TEST(PlanMatmul, ForcedSplitKButNeverPastTheLoopLimit) {
  Settings s;
  s.matmul_split = 2;  // GLTENSOR_MATMUL_SPLIT=2
  EXPECT_EQ(plan_matmul(problem(64, 288, 100352, false), kGpu, s).splits, 2) << "fewer than the planner's";
  EXPECT_EQ(plan_matmul(problem(64, 288, 512, false), kGpu, s).splits, 2) << "where the planner would not split";
  EXPECT_EQ(plan_matmul(problem(64, 288, 16, false), kGpu, s).splits, 1) << "one K-tile";
  s.matmul_kernel = MatmulKernelSetting::tile64;
  const MatmulPlan p = plan_matmul(problem(64, 288, 1 << 20, false), kLlvmpipe, s);
  EXPECT_GT(p.splits, 2) << "the loop limit's slices win";
  EXPECT_LE(p.loop_iterations, kLlvmpipe.loop_limit);
  s.matmul_kernel = MatmulKernelSetting::reg;
  EXPECT_EQ(plan_matmul(problem(64, 288, 512, false), kLlvmpipe, s).splits, 1) << "REG is not forced to split";
}

TEST(PlanMatmul, SplitColumnsOnlyWithoutSplitK) {
  const Settings s;
  MatmulProblem p = problem(64, 128 * 784, 576);  // conv2d forward: [O, C*9] @ [C*9, N*OH*OW]
  p.split_columns = true;
  EXPECT_TRUE(plan_matmul(p, kGpu, s).split_columns);
  p.K = 1 << 20;
  EXPECT_FALSE(plan_matmul(p, kLlvmpipe, s).split_columns) << "split-K writes partial products";
}

// The CNN's conv2 forward [64, 288] @ [288, 25088] written in column groups (NCHW): 196 whole 64 x 128
// tiles over K >= kWarpMinShortK take the warp kernel's 64-row form (it writes the column groups; the
// 64 x 64 kernel's result was permuted by a copy); not without split_columns, below kWarpMinShortK, with
// 256 quad-load tiles or more (the quad-load kernel), or on llvmpipe.
TEST(PlanMatmul, WarpForShortKColumnGroups) {
  const Settings s;
  MatmulProblem p = problem(64, 25088, 288);
  p.a_quads = 1, p.b_quads = 1, p.split_columns = true;
  const MatmulPlan w = plan_matmul(p, kGpu, s);
  EXPECT_EQ(w.kernel, MatmulPlan::Kernel::warp);
  EXPECT_EQ(w.tile_m, 64);
  EXPECT_EQ(w.splits, 1);
  EXPECT_TRUE(w.split_columns);
  MatmulProblem q = p;
  q.split_columns = false;
  EXPECT_NE(plan_matmul(q, kGpu, s).kernel, MatmulPlan::Kernel::warp);
  q = p, q.K = kWarpMinShortK - 8;
  EXPECT_NE(plan_matmul(q, kGpu, s).kernel, MatmulPlan::Kernel::warp);
  q = p, q.N = 128 * 256;
  EXPECT_EQ(plan_matmul(q, kGpu, s).kernel, MatmulPlan::Kernel::vec4);
  q = p, q.N = 128 * 100;
  EXPECT_NE(plan_matmul(q, kGpu, s).kernel, MatmulPlan::Kernel::warp) << "fewer than kWarpMinShkTiles";
  EXPECT_NE(plan_matmul(p, kLlvmpipe, s).kernel, MatmulPlan::Kernel::warp);
}

// The fused attention tiling by device: an H100-like GPU (32-lane subgroups with shuffles, 48 KiB
// usable), llvmpipe (no subgroups, 32 KiB), a small GPU (16 KiB: no tiling fits), and the caps.
TEST(PlanAttention, TilingByDevice) {
  const Settings s;
  AttentionTiles t = plan_attention_tiles({true, 32, 49152}, s);
  EXPECT_EQ(t.bq, 64);
  EXPECT_EQ(t.kq, 2);
  EXPECT_TRUE(t.subgroup);
  t = plan_attention_tiles({false, 0, 32768}, s);
  EXPECT_EQ(t.bq, 32);
  EXPECT_EQ(t.kq, 1);
  EXPECT_FALSE(t.subgroup);
  EXPECT_EQ(plan_attention_tiles({false, 0, 16384}, s).bq, 0);
  Settings capped;
  capped.attention_bq = 32;
  capped.attention_keys = 32;
  t = plan_attention_tiles({true, 32, 49152}, capped);
  EXPECT_EQ(t.bq, 32);
  EXPECT_EQ(t.kq, 1);
  // Subgroups of 128 lanes are larger than a 64-invocation workgroup of 32 rows: shared memory.
  EXPECT_FALSE(plan_attention_tiles({true, 128, 49152}, capped).subgroup);
  EXPECT_TRUE(plan_attention_tiles({true, 64, 49152}, capped).subgroup);
  // The loop length grows with the keys.
  EXPECT_LT(attention_loops(t, 1000, 1), attention_loops(t, 2000, 1));
  for (const auto& tt : {plan_attention_tiles({true, 32, 49152}, s), plan_attention_tiles({false, 0, 32768}, s)})
    EXPECT_LE(attention_shared_bytes(tt), 49152);
}

// The fused kernel narrowed to a problem: the head-dim quads by head dims; the device's row block
// (64 with 32-lane subgroups), or under GLTENSOR_ATTENTION_BQ=16 the smallest block at or below it
// that keeps 8 K quads per invocation (without subgroups too); the flash kernels' 32 rows then.
TEST(PlanAttention, NarrowedToTheProblem) {
  const Settings s;
  EXPECT_EQ(attention_head_quads(15, 15), 4);
  EXPECT_EQ(attention_head_quads(1, 16), 4);
  EXPECT_EQ(attention_head_quads(17, 3), 8);
  EXPECT_EQ(attention_head_quads(24, 32), 8);
  EXPECT_EQ(attention_head_quads(33, 8), 16);
  EXPECT_EQ(attention_head_quads(64, 64), 16);
  const AttentionDevice gpu{true, 32, 49152}, cpu{false, 0, 32768};
  const AttentionTiles g = plan_attention_tiles(gpu, s), c = plan_attention_tiles(cpu, s);
  AttentionTiles t = narrow_attention_tiles(g, gpu, s, 15, 15);  // SVTR: 64 rows, 4 quads
  EXPECT_EQ(t.bq, 64);
  EXPECT_EQ(t.kq, 2);
  EXPECT_EQ(t.dql, 4);
  t = narrow_attention_tiles(g, gpu, s, 64, 64);
  EXPECT_EQ(t.bq, 64);
  EXPECT_EQ(t.dql, 16);
  Settings capped;
  capped.attention_bq = 16;
  t = narrow_attention_tiles(plan_attention_tiles(gpu, capped), gpu, capped, 15, 15);
  EXPECT_EQ(t.bq, 16);
  EXPECT_EQ(t.kq, 1);
  EXPECT_EQ(narrow_attention_tiles(plan_attention_tiles(gpu, capped), gpu, capped, 64, 64).bq, 32);  // 16 quads
  EXPECT_EQ(narrow_attention_tiles(plan_attention_tiles(gpu, capped), {true, 64, 49152}, capped, 15, 15).bq, 32);
  t = narrow_attention_tiles(c, cpu, s, 15, 15);  // llvmpipe: the device's 32 rows, or 16 when set
  EXPECT_EQ(t.bq, 32);
  EXPECT_EQ(t.dql, 4);
  EXPECT_EQ(narrow_attention_tiles(plan_attention_tiles(cpu, capped), cpu, capped, 15, 15).bq, 16);
  EXPECT_EQ(narrow_attention_tiles(plan_attention_tiles(cpu, capped), cpu, capped, 64, 64).bq, 32);
  EXPECT_EQ(plan_flash_tiles(64, 64, 32768, capped).rows, 32);
  // fewer head-dim quads, fewer loop iterations
  AttentionTiles narrow = c;
  narrow.dql = 4;
  EXPECT_LT(attention_loops(narrow, 1000, 1), attention_loops(c, 1000, 1));
}

// The lanes kernel (attention_lanes.comp): on GPUs where attention.comp's 64-row blocks are
// fewer than 128 workgroups, rows of 128 / R lanes (R: 16, 8 or 4 rows, the most that give 128
// workgroups), 8 keys per lane per tile; 64 invocations where shared memory is short; never on
// software rasterizers unless forced, past head dim 64, or past the loop limit; the settings.
// attention_block.comp's plan: 8 x 300 x 64 on a GPU (40 row blocks of attention.comp) takes 16 rows, 256
// invocations, 320 keys of scores; SVTR's head dim 15 (the lanes kernel's), enough row blocks, software rasterizers,
// head dims past 64, keys past shared memory or past a lowered loop limit: none; with 16-bit storage only the part
// measured faster (rt40); the settings force and shape it.
TEST(PlanAttention, BlockByProblem) {
  const Settings s;
  const AttentionDevice gpu{true, 32, 49152, 1024}, cpu{false, 0, 32768, 1024}, small{true, 32, 49152, 128};
  BlockTiles t = plan_attention_block({300, 300, 8, 64, 64, 1}, gpu, false, 0, s);
  EXPECT_EQ(t.local, 256);
  EXPECT_EQ(t.rows, 8);
  EXPECT_EQ(t.dq, 16);
  EXPECT_EQ(t.sk, 512);  // a power of two: one program for 257 to 512 keys
  EXPECT_EQ(block_shared_bytes(t), 16 * (1024 + 8 * 16 + 256 + 20));
  EXPECT_LT(attention_block_loops(t, {300, 300, 8, 64, 64, 1}), 1000u);
  // unforced only where measured: 16 head-dim quads, 257 to 512 keys (review39's R5)
  EXPECT_EQ(plan_attention_block({300, 256, 8, 64, 64, 1}, gpu, false, 0, s).local, 0);
  EXPECT_EQ(plan_attention_block({300, 257, 8, 64, 64, 1}, gpu, false, 0, s).sk, 512);
  EXPECT_EQ(plan_attention_block({300, 512, 8, 33, 64, 1}, gpu, false, 0, s).sk, 512);
  EXPECT_EQ(plan_attention_block({300, 513, 8, 64, 64, 1}, gpu, false, 0, s).local, 0);
  EXPECT_EQ(plan_attention_block({300, 300, 8, 48, 48, 1}, gpu, false, 0, s).dq, 16);  // (padded to 16 quads)
  EXPECT_EQ(plan_attention_block({300, 300, 8, 32, 32, 1}, gpu, false, 0, s).local, 0);
  // workgroups of at most 128 invocations (GLES 3.1's minimum; unknown taken so): 128
  EXPECT_EQ(plan_attention_block({300, 300, 8, 64, 64, 1}, small, false, 0, s).local, 128);
  EXPECT_EQ(plan_attention_block({300, 300, 8, 64, 64, 1}, {true, 32, 49152, 0}, false, 0, s).local, 128);
  EXPECT_EQ(plan_attention_block({168, 168, 8, 15, 15, 1}, gpu, false, 0, s).local, 0);     // dq 4: lanes
  EXPECT_EQ(plan_attention_block({168, 300, 8, 17, 15, 1}, gpu, false, 0, s).local, 0);     // dq 8: unmeasured
  EXPECT_EQ(plan_attention_block({1024, 1024, 16, 64, 64, 2}, gpu, false, 0, s).local, 0);  // 256 row blocks
  EXPECT_EQ(plan_attention_block({7, 300, 8, 64, 64, 1}, gpu, false, 0, s).local, 0);       // fewer rows than a block
  // 16-bit storage, unforced: only what rt40 measured faster on the H200 (fewer than 256 row blocks of 8; at least 64
  // rows, 32 row blocks, or causal)
  auto half = [&](std::int64_t L, std::int64_t nb, bool causal) {
    return plan_attention_block({L, 384, nb, 64, 64, 1, true, causal}, gpu, false, 0, s).local;
  };
  EXPECT_EQ(half(8, 1, false), 0);
  EXPECT_EQ(half(8, 8, false), 0);
  EXPECT_EQ(half(8, 8, true), 256);    // causal: 8 keys a row
  EXPECT_EQ(half(8, 32, false), 256);  // 32 row blocks
  EXPECT_EQ(half(64, 1, false), 256);
  EXPECT_EQ(half(64, 8, false), 256);
  EXPECT_EQ(half(300, 1, false), 256);
  EXPECT_EQ(half(64, 32, true), 0);                                                                    // 256 row blocks
  EXPECT_EQ(half(300, 8, false), 0);                                                                   // 304
  EXPECT_EQ(plan_attention_block({8, 384, 8, 64, 64, 1, false, false}, gpu, false, 0, s).local, 256);  // f32: all
  EXPECT_EQ(plan_attention_block({300, 384, 8, 64, 64, 1, false, false}, gpu, false, 0, s).local, 256);
  // f32, causal, 304 row blocks of 300-row heads: none past head dim 48 with more keys than rows (rt40's windows 1-2)
  EXPECT_EQ(plan_attention_block({300, 384, 8, 64, 64, 1, false, true}, gpu, false, 0, s).local, 0);
  EXPECT_EQ(plan_attention_block({300, 512, 8, 64, 64, 1, false, true}, gpu, false, 0, s).local, 0);
  EXPECT_EQ(plan_attention_block({300, 260, 8, 64, 64, 1, false, true}, gpu, false, 0, s).local, 256);   // S < L
  EXPECT_EQ(plan_attention_block({300, 384, 8, 40, 40, 1, false, true}, gpu, false, 0, s).local, 256);   // E 40
  EXPECT_EQ(plan_attention_block({64, 384, 32, 64, 64, 1, false, true}, gpu, false, 0, s).local, 256);   // 256, 64 rows
  EXPECT_EQ(plan_attention_block({72, 384, 28, 64, 64, 1, false, true}, gpu, false, 0, s).local, 256);   // 252, 72
  EXPECT_EQ(plan_attention_block({72, 384, 32, 64, 64, 1, false, true}, gpu, false, 0, s).local, 0);     // 288, 72
  EXPECT_EQ(plan_attention_block({200, 384, 10, 64, 64, 1, false, true}, gpu, false, 0, s).local, 256);  // 250
  EXPECT_EQ(plan_attention_block({300, 300, 8, 64, 64, 1}, cpu, true, 65535, s).local, 0);               // software
  EXPECT_EQ(plan_attention_block({300, 300, 8, 65, 64, 1}, gpu, false, 0, s).local, 0);
  EXPECT_EQ(plan_attention_block({300, 300, 8, 64, 65, 1}, gpu, false, 0, s).local, 0);
  Settings on;
  on.attention_block = 1;
  t = plan_attention_block({300, 1312, 8, 64, 64, 1}, gpu, false, 0, on);  // forced, 48 KiB: up to 1312 keys
  EXPECT_EQ(t.sk, 1312);
  EXPECT_LE(block_shared_bytes(t), 49152);
  EXPECT_EQ(plan_attention_block({300, 1025, 8, 64, 64, 1}, gpu, false, 0, on).sk, 1312);
  EXPECT_EQ(plan_attention_block({300, 1313, 8, 64, 64, 1}, gpu, false, 0, on).local, 0);
  EXPECT_EQ(plan_attention_block({300, 200, 8, 64, 64, 1}, gpu, false, 0, on).sk, 256);
  EXPECT_EQ(plan_attention_block({300, 20, 8, 64, 64, 1}, gpu, false, 0, on).sk, 64);
  EXPECT_EQ(plan_attention_block({168, 168, 8, 17, 15, 1}, gpu, false, 0, on).dq, 8);
  EXPECT_EQ(plan_attention_block({300, 300, 8, 64, 64, 1}, gpu, false, 200, s).local, 0);  // loop limit
  t = plan_attention_block({300, 300, 8, 64, 64, 1}, cpu, true, 65535, on);                // 32 KiB
  EXPECT_EQ(t.local, 256);
  EXPECT_EQ(t.sk, 512);
  EXPECT_LE(block_shared_bytes(t), 32768);
  EXPECT_EQ(plan_attention_block({168, 168, 8, 15, 15, 1}, cpu, true, 65535, on).dq, 4);
  EXPECT_EQ(plan_attention_block({1, 168, 8, 64, 64, 1}, gpu, false, 0, on).rows, 8);  // forced: any L
  Settings rows;
  rows.attention_block_rows = 16;
  t = plan_attention_block({300, 300, 8, 64, 64, 1}, cpu, true, 65535, rows);  // 16 rows in 32 KiB: 352 keys
  EXPECT_EQ(t.sk, 352);
  EXPECT_LE(block_shared_bytes(t), 32768);
  rows.attention_block_rows = 32, rows.attention_block_local = 64;
  t = plan_attention_block({37, 70, 3, 24, 20, 1}, cpu, true, 65535, rows);
  EXPECT_EQ(t.rows, 32);
  EXPECT_EQ(t.local, 64);  // 8 row groups x 8 quads; 2 x 32 divides it
  rows.attention_block_rows = 32, rows.attention_block_local = 0;
  EXPECT_EQ(plan_attention_block({37, 70, 3, 64, 64, 1}, cpu, true, 65535, rows).local, 256);
  EXPECT_EQ(plan_attention_block({37, 70, 3, 64, 64, 1}, small, false, 0, rows).local, 128);  // 8 x 16 quads
  rows.attention_block_local = 512;
  EXPECT_EQ(plan_attention_block({37, 70, 3, 64, 64, 1}, small, false, 0, rows).local, 0);  // past the device's
  Settings off = on;
  off.attention_block = 0;
  off.attention_block_rows = 8;
  EXPECT_EQ(plan_attention_block({300, 300, 8, 64, 64, 1}, gpu, false, 0, off).local, 0);
}

TEST(PlanAttention, LanesByProblem) {
  const Settings s;
  const AttentionDevice gpu{true, 32, 49152}, cpu{false, 0, 32768};
  // SVTR's 8 heads x 168 rows of 15: 8 rows of 16 lanes (168 workgroups), 2 keys a lane: 32 keys a tile (6 tiles)
  LaneTiles t = plan_attention_lanes({168, 168, 8, 15, 15, 1}, gpu, false, 0, s);
  EXPECT_EQ(t.local, 128);
  EXPECT_EQ(t.lanes, 16);
  EXPECT_EQ(t.keys, 2);
  EXPECT_EQ(t.dq, 4);
  EXPECT_LE(lanes_shared_bytes(t), 49152);
  // past 16 tiles of 32 keys (513 keys): 8 keys a lane
  EXPECT_EQ(plan_attention_lanes({168, 512, 8, 15, 15, 1}, gpu, false, 0, s).keys, 2);
  EXPECT_EQ(plan_attention_lanes({168, 513, 8, 15, 15, 1}, gpu, false, 0, s).keys, 8);
  // 8 x 300 x 64 (forced: head dims past 16): 16 rows of 8 lanes (152 workgroups), 64 keys a tile in 32 KiB (+ 1 KiB)
  Settings on;
  on.attention_lanes = 1;
  t = plan_attention_lanes({300, 300, 8, 64, 64, 1}, gpu, false, 0, on);
  EXPECT_EQ(t.local, 128);
  EXPECT_EQ(t.lanes, 8);
  EXPECT_EQ(t.keys, 8);
  EXPECT_EQ(t.dq, 16);
  EXPECT_EQ(lanes_shared_bytes(t), 32768 + 1024);
  // one row: 4 rows of 32 lanes
  EXPECT_EQ(plan_attention_lanes({1, 50, 1, 16, 16, 1}, gpu, false, 0, s).lanes, 32);
  // enough row blocks for attention.comp (2 x 8 x 1024 rows: 256 workgroups), software, head dims past 64: none
  EXPECT_EQ(plan_attention_lanes({1024, 1024, 16, 64, 64, 2}, gpu, false, 0, s).local, 0);
  EXPECT_EQ(plan_attention_lanes({168, 168, 8, 15, 15, 1}, cpu, true, 65535, s).local, 0);
  EXPECT_EQ(plan_attention_lanes({168, 168, 8, 65, 15, 1}, gpu, false, 0, s).local, 0);
  EXPECT_EQ(plan_attention_lanes({168, 168, 8, 15, 65, 1}, gpu, false, 0, s).local, 0);
  // forced on llvmpipe (32 KiB): head dims of 64 take 64 invocations
  t = plan_attention_lanes({168, 168, 8, 15, 15, 1}, cpu, true, 65535, on);
  EXPECT_EQ(t.local, 128);
  EXPECT_EQ(t.lanes, 16);
  t = plan_attention_lanes({300, 300, 8, 64, 64, 1}, cpu, true, 65535, on);
  EXPECT_EQ(t.local, 64);
  EXPECT_EQ(t.lanes, 4);
  EXPECT_EQ(t.keys, 8);
  EXPECT_LE(lanes_shared_bytes(t), 32768);
  EXPECT_EQ(plan_attention_lanes({1024, 1024, 16, 64, 64, 2}, cpu, true, 65535, on).local, 64);
  Settings off;
  off.attention_lanes = 0;
  EXPECT_EQ(plan_attention_lanes({168, 168, 8, 15, 15, 1}, gpu, false, 0, off).local, 0);
  // the width and keys settings (each forces the kernel; each tile loads at least a quad per invocation)
  Settings w;
  w.attention_lane_width = 4;
  w.attention_lane_keys = 8;
  t = plan_attention_lanes({168, 168, 8, 16, 16, 1}, cpu, true, 65535, w);
  EXPECT_EQ(t.local, 128);
  EXPECT_EQ(t.lanes, 4);
  EXPECT_EQ(t.keys, 8);
  w.attention_lane_keys = 1;  // 4 keys a tile of 4 quads: fewer quads than invocations
  EXPECT_EQ(plan_attention_lanes({168, 168, 8, 16, 16, 1}, cpu, true, 65535, w).local, 0);
  // the loop length grows with the keys; a plan stays within the limit
  const LaneProblem p{168, 168, 8, 15, 15, 1};
  t = plan_attention_lanes(p, gpu, false, 0, s);
  const std::uint64_t loops = attention_lanes_loops(t, p);
  EXPECT_LT(loops, attention_lanes_loops(t, {168, 1000, 8, 15, 15, 1}));
  const LaneTiles r = plan_attention_lanes(p, gpu, false, loops - 1, s);
  EXPECT_TRUE(r.local == 0 || attention_lanes_loops(r, p) <= loops - 1);
  EXPECT_FALSE(r.local == t.local && r.lanes == t.lanes && r.keys == t.keys);
  EXPECT_EQ(plan_attention_lanes({168, 100000, 8, 15, 15, 1}, gpu, false, 65535, s).local, 0);
}

// attention.comp's keys split over workgroups: by default on GPUs where the row blocks are fewer
// than 128 workgroups, in chunks that give the grid 128 and only where the chunks' last workgroup
// merges them (COMBINE: its scratch, counters and bindings fit); under GLTENSOR_ATTENTION_SPLIT=N
// chunks of N tiles where the keys pass them, merged in the dispatch where that fits; =0 never;
// GLTENSOR_ATTENTION_COMBINE=dispatch: kv_combine's dispatch (and no default split).
TEST(PlanAttention, SplitByProblem) {
  const Settings s;
  const AttentionTiles t{64, 2, true, 16};  // 64 rows, 64 keys a tile
  const auto split = [&](const AttentionTiles& at, SplitProblem p, const Settings& st) {
    const AttentionSplit r = plan_attention_split(at, p, st);
    return std::pair<std::int64_t, bool>(r.kchunk, r.combine);
  };
  using R = std::pair<std::int64_t, bool>;
  // 8 x 300 x 64 on the H200: 40 row blocks of 5 tiles -> 3 chunks of 2 tiles (120 workgroups)
  EXPECT_EQ(split(t, {300, 300, 8, false, 16}, s), R(128, true));
  EXPECT_EQ(split(t, {300, 300, 8, true, 16}, s), R(0, false));    // software rasterizer
  EXPECT_EQ(split(t, {300, 300, 8, false, 8}, s), R(0, false));    // 8 SSBO bindings
  EXPECT_EQ(split(t, {300, 300, 32, false, 16}, s), R(0, false));  // 160 row blocks
  EXPECT_EQ(split(t, {300, 64, 8, false, 16}, s), R(0, false));    // one tile
  // one row block: 128 chunks wanted, at most 31 fit the scratch ((2 * 31 + 1) * 64 floats)
  EXPECT_EQ(split(t, {64, 4096, 1, false, 16}, s), R(3 * 64, true));      // 64 tiles: 22 chunks of 3
  EXPECT_EQ(split(t, {64, 128 * 64, 1, false, 16}, s), R(5 * 64, true));  // 128 tiles: 26 chunks of 5
  Settings zero, one, two, dispatch;
  zero.attention_split = 0;
  one.attention_split = 1;
  two.attention_split = 2;
  dispatch.attention_combine_dispatch = true;
  EXPECT_EQ(split(t, {300, 300, 8, false, 16}, zero), R(0, false));
  EXPECT_EQ(split(t, {300, 300, 8, false, 16}, dispatch), R(0, false));
  EXPECT_EQ(split(t, {300, 300, 8, true, 16}, one), R(64, true));
  EXPECT_EQ(split(t, {300, 300, 8, false, 16}, two), R(128, true));
  one.attention_combine_dispatch = true;
  EXPECT_EQ(split(t, {300, 300, 8, false, 16}, one), R(64, false));
  one.attention_combine_dispatch = false;
  EXPECT_EQ(split(t, {1024, 64, 16, false, 16}, one), R(0, false));   // one tile
  EXPECT_EQ(split(t, {1024, 128, 16, false, 16}, two), R(0, false));  // one chunk
  EXPECT_EQ(split({32, 1, false, 16}, {1024, 100, 16, true, 16}, one), R(32, true));
  // the scratch: (2 chunks + 1) * bq floats in the V tile's bkv * 64
  EXPECT_TRUE(attention_combine_fits({32, 1, false, 16}, {32, 1, 1, true, 16}, 31, s));
  EXPECT_FALSE(attention_combine_fits({32, 1, false, 16}, {32, 1, 1, true, 16}, 32, s));
  EXPECT_FALSE(attention_combine_fits(t, {64, 1, 1, false, 16}, 1, s));  // one chunk
  EXPECT_TRUE(attention_combine_fits(t, {64, 1, kCombineSlots, false, 16}, 2, s));
  EXPECT_FALSE(attention_combine_fits(t, {65, 1, kCombineSlots, false, 16}, 2, s));  // counters
  // the merge's loops counted
  EXPECT_LT(attention_loops(t, 128, 1), attention_loops(t, 128, 1, 3, 64));
  EXPECT_LT(attention_loops(t, 128, 1, 3, 64), attention_loops(t, 128, 1, 6, 64));
  // the lanes kernel stays at head dims up to 16 unless forced
  EXPECT_EQ(plan_attention_lanes({300, 300, 8, 64, 64, 1}, {true, 32, 49152}, false, 0, s).local, 0);
}

// The flash kernels' tiles (attention_flash.comp) by head dim and shared memory: the largest of
// 32, 16, 8, 4 keys (query rows for the backward) that fit; none past head dim 256 or where even
// 4 do not fit; the caps that tests use to run every tiling.
TEST(PlanAttention, FlashTilesByHeadDim) {
  const Settings s;
  FlashTiles t = plan_flash_tiles(64, 64, 32768, s);  // llvmpipe
  EXPECT_EQ(t.rows, 64);
  EXPECT_EQ(t.keys, 64);
  EXPECT_EQ(t.bkv, 32);
  EXPECT_EQ(t.bqt, 32);  // 32 rows of q and dO: 32 * (512 + 8) bytes
  t = plan_flash_tiles(256, 256, 32768, s);
  EXPECT_EQ(t.bkv, 16);  // 16 * 16 * 128 = 32 KiB exactly
  EXPECT_EQ(t.bqt, 8);
  t = plan_flash_tiles(256, 256, 49152, s);
  EXPECT_EQ(t.bkv, 16);
  EXPECT_EQ(t.bqt, 16);
  t = plan_flash_tiles(1, 1, 32768, s);
  EXPECT_EQ(t.bkv, 32);
  EXPECT_EQ(t.bqt, 32);
  for (const std::int64_t E : {1, 63, 64, 65, 128, 200, 256})
    for (const int shared : {16384, 32768, 49152}) {
      const FlashTiles f = plan_flash_tiles(E, E, shared, s);
      ASSERT_GT(f.bkv, 0) << E << " " << shared;
      EXPECT_LE(flash_shared_bytes(E, E, f, false), shared);
      EXPECT_LE(flash_shared_bytes(E, E, f, true), shared);
    }
  EXPECT_EQ(plan_flash_tiles(257, 64, 1 << 20, s).bkv, 0);
  EXPECT_EQ(plan_flash_tiles(64, 257, 1 << 20, s).bkv, 0);
  EXPECT_EQ(plan_flash_tiles(0, 64, 1 << 20, s).bkv, 0);
  EXPECT_EQ(plan_flash_tiles(256, 256, 4096, s).bkv, 0);  // 4 keys need 8 KiB
  Settings capped;
  capped.attention_tile = 4;
  capped.attention_bq = 32;
  t = plan_flash_tiles(64, 64, 32768, capped);
  EXPECT_EQ(t.bkv, 4);
  EXPECT_EQ(t.bqt, 4);
  EXPECT_EQ(t.rows, 32);
}

// The flash kernels' splits: none without a limit or where the loops fit; otherwise the largest
// chunk of whole tiles that fits, its loops within the limit and one more tile's past it; -1
// where not even one tile fits (the composite path takes over). Dropout's Philox rounds count.
TEST(PlanAttention, FlashChunks) {
  const FlashTiles t = plan_flash_tiles(64, 64, 32768, Settings());
  for (const FlashMode m : {FlashMode::forward, FlashMode::dkv, FlashMode::dq, FlashMode::tiled, FlashMode::tiled_dkv,
                            FlashMode::tiled_dq}) {
    const bool tiled = m == FlashMode::tiled || m == FlashMode::tiled_dkv || m == FlashMode::tiled_dq;
    const std::int64_t tile = tiled ? kTiledKeys : m == FlashMode::dkv ? t.bqt : t.bkv;
    EXPECT_EQ(flash_chunk(m, t, 64, 64, 100000, 2, false, 0), 0);
    EXPECT_EQ(flash_chunk(m, t, 64, 64, 100, 2, false, 65535), 0);
    for (const bool drop : {false, true}) {
      const std::int64_t c = flash_chunk(m, t, 64, 64, 100000, 2, drop, 65535);
      ASSERT_GT(c, 0);
      EXPECT_EQ(c % tile, 0);
      EXPECT_LE(flash_loops(m, t, 64, 64, c, 2, drop), 65535u);
      EXPECT_GT(flash_loops(m, t, 64, 64, c + tile, 2, drop), 65535u);
    }
    EXPECT_LT(flash_chunk(m, t, 64, 64, 100000, 2, true, 65535), flash_chunk(m, t, 64, 64, 100000, 2, false, 65535));
    EXPECT_EQ(flash_chunk(m, t, 64, 64, 100000, 2, false, 50), -1);
  }
  // head dim 256 on llvmpipe's limit: a few hundred keys per chunk
  const FlashTiles w = plan_flash_tiles(256, 256, 32768, Settings());
  const std::int64_t c = flash_chunk(FlashMode::forward, w, 256, 256, 1 << 20, 1, false, 65535);
  EXPECT_GE(c, 256);
  EXPECT_LE(c, 1024);
}

// The tiled kernels' V (and K, Q, dO) chunks: 64 rows up to head dim 64, 32 up to 128, 16 up to
// 256 (the 16 KiB work area), none past 256; at head dim 128 one invocation loops over thousands of
// keys within llvmpipe's limit, and more with smaller head dims.
TEST(PlanAttention, TiledChunks) {
  EXPECT_EQ(tiled_v_keys(1), 64);
  EXPECT_EQ(tiled_v_keys(64), 64);
  EXPECT_EQ(tiled_v_keys(65), 32);
  EXPECT_EQ(tiled_v_keys(128), 32);
  EXPECT_EQ(tiled_v_keys(129), 16);
  EXPECT_EQ(tiled_v_keys(256), 16);
  EXPECT_EQ(tiled_v_keys(257), 0);
  EXPECT_EQ(tiled_v_keys(0), 0);
  for (const std::int64_t d : {1, 64, 65, 128, 200, 256}) EXPECT_LE(tiled_v_keys(d) * ((d + 3) / 4), 1024);
  const FlashTiles t;
  for (const FlashMode m : {FlashMode::tiled, FlashMode::tiled_dkv, FlashMode::tiled_dq}) {
    EXPECT_GE(flash_chunk(m, t, 128, 128, 1 << 20, 2, false, 65535), 2048);
    EXPECT_GE(flash_chunk(m, t, 256, 256, 1 << 20, 2, true, 65535), 512);
    EXPECT_GT(flash_chunk(m, t, 16, 16, 1 << 20, 2, false, 65535),
              flash_chunk(m, t, 128, 128, 1 << 20, 2, false, 65535));
  }
}

// Precision (issue 15): f16 math only where it is allowed and the device has fp16 arithmetic.
TEST(PlanMatmul, F16MathNeedsPrecisionAndDeviceTrait) {
  const Settings s;
  const DeviceTraits gpu16{false, 0, true}, llvm16{true, 65535, true};
  for (const MatmulProblem& base :
       {problem(1024, 2048, 512), problem(1000, 1000, 30, false), problem(1024, 4096, 512, false)}) {
    MatmulProblem p = base;
    EXPECT_EQ(plan_matmul(p, gpu16, s).f16_block, 0) << "f32 stays the default";
    p.precision = Precision::f16_allowed;
    EXPECT_EQ(plan_matmul(p, kGpu, s).f16_block, 0) << "no fp16 arithmetic: f32 math";
    EXPECT_EQ(plan_matmul(p, kLlvmpipe, s).f16_block, 0);
    const MatmulPlan f16 = plan_matmul(p, gpu16, s), f32 = plan_matmul(base, gpu16, s);
    EXPECT_EQ(f16.f16_block, kF16BlockK);
    EXPECT_EQ(f16.kernel, f32.kernel) << "the same kernels, with F16_MATH";
    EXPECT_EQ(plan_matmul(p, llvm16, s).kernel, plan_matmul(base, llvm16, s).kernel);
    EXPECT_EQ(plan_matmul(p, llvm16, s).f16_block, 0) << "REG (software rasterizers) has no f16 math";
    // Blocks are whole K-tiles of every kernel (8 for vec4/tile128, 16 for tile64).
    EXPECT_EQ(f16.f16_block % 16, 0);
  }
  // Few small tiles: f32 math takes the K-sliced REG kernel, f16 math the 64 x 64 one.
  MatmulProblem few = problem(100, 20, 30, false);
  EXPECT_EQ(plan_matmul(few, gpu16, s).kernel, MatmulPlan::Kernel::reg);
  few.precision = Precision::f16_allowed;
  EXPECT_EQ(plan_matmul(few, gpu16, s).kernel, MatmulPlan::Kernel::tile64);
  EXPECT_EQ(plan_matmul(few, gpu16, s).f16_block, kF16BlockK);
  // f16 operands and output too.
  MatmulProblem p = problem(1024, 4096, 512);
  p.out = DType::f16;
  p.precision = Precision::f16_allowed;
  EXPECT_EQ(plan_matmul(p, gpu16, s).f16_block, kF16BlockK);
}

TEST(PlanMatmul, F16MathTunesUnderItsOwnKeyAndCountsItsLoops) {
  const Settings s;
  const DeviceTraits gpu16{false, 0, true};
  MatmulProblem p = problem(1024, 4096, 512);
  p.precision = Precision::f16_allowed;
  const MatmulPlan plan = plan_matmul(p, gpu16, s);
  EXPECT_EQ(plan.tune_key, "matmul_vec4/512/512/float32/f16math");
  EXPECT_GT(plan.loop_iterations, plan_matmul(problem(1024, 4096, 512), gpu16, s).loop_iterations);
  for (auto k : {MatmulPlan::Kernel::vec4, MatmulPlan::Kernel::tile64, MatmulPlan::Kernel::tile128})
    for (std::int64_t K : {0, 8, 32, 33, 1000, 4096}) {
      // The f32 form plus the reset and at least one flush per started block and the last tile.
      const std::uint64_t blocks = static_cast<std::uint64_t>((K + 31) / 32);
      EXPECT_GE(matmul_loops(k, K, 1, 32), matmul_loops(k, K) + (blocks + 1) * 8) << K;
      EXPECT_GE(matmul_loops(k, K, 2, 32), matmul_loops(k, K, 2));
    }
}

TEST(PlanMatmul, F16MathSplitsWithinTheLoopLimit) {
  const Settings s;
  // A GPU with fp16 arithmetic and llvmpipe's loop limit (a software rasterizer gets REG, which
  // has no f16 math).
  const DeviceTraits llvm16{false, 65535, true};
  for (std::int64_t K : {50000, 93312, 65535 * 4 + 7}) {
    for (bool quads : {true, false}) {
      MatmulProblem p = problem(64, 128, K, quads);
      p.precision = Precision::f16_allowed;
      const MatmulPlan plan = plan_matmul(p, llvm16, s);
      EXPECT_EQ(plan.f16_block, kF16BlockK);
      EXPECT_GT(plan.splits, 1) << K;
      EXPECT_LE(plan.loop_iterations, 65535u) << K;
      EXPECT_EQ(plan.loop_iterations, matmul_loops(plan.kernel, plan.kchunk, 1, kF16BlockK));
      EXPECT_EQ(plan.kchunk % 16, 0);
      EXPECT_GE(plan.kchunk * plan.splits, K);
      EXPECT_LT(plan.kchunk * (plan.splits - 1), K);
    }
  }
}

// GLTENSOR_F16_MATMUL=f16x2: the packed-half kernel wherever the quad-load kernel's conditions hold
// (any number of tiles), K is whole 16-K tiles and f16 math applies; elsewhere the F16_MATH forms.
TEST(PlanMatmul, F16x2WhereQuadsAndWhole16KTiles) {
  Settings s;
  s.f16_matmul = F16MatmulSetting::f16x2;
  const DeviceTraits gpu16{false, 0, true}, limited16{false, 65535, true};
  auto f16 = [](MatmulProblem p) {
    p.precision = Precision::f16_allowed;
    return p;
  };
  for (std::int64_t n : {1024, 2048, 4096}) {
    const MatmulPlan plan = plan_matmul(f16(problem(n, n, n)), gpu16, s);
    EXPECT_EQ(plan.kernel, MatmulPlan::Kernel::f16x2) << n;
    EXPECT_EQ(plan.f16_block, kF16BlockK);
    EXPECT_EQ(plan.local_x, 128u);
    EXPECT_FALSE(plan.tune);
    EXPECT_EQ(plan.groups_x, static_cast<std::uint64_t>(n / 128));
    EXPECT_EQ(plan.groups_y, static_cast<std::uint64_t>(n / 64));
    EXPECT_EQ(plan.loop_iterations, matmul_loops(MatmulPlan::Kernel::f16x2, plan.kchunk));
  }
  EXPECT_EQ(plan_matmul(f16(problem(64, 128, 16)), gpu16, s).kernel, MatmulPlan::Kernel::f16x2) << "one tile";
  // Not: K % 16 != 0, ragged tiles, no quads, K = 0, f32 math, no fp16 arithmetic, another kernel forced.
  EXPECT_EQ(plan_matmul(f16(problem(2048, 2048, 1000)), gpu16, s).kernel, MatmulPlan::Kernel::vec4);
  EXPECT_EQ(plan_matmul(f16(problem(1000, 1024, 1024)), gpu16, s).kernel, MatmulPlan::Kernel::tile64);
  EXPECT_EQ(plan_matmul(f16(problem(1024, 1024, 1024, false)), gpu16, s).kernel, MatmulPlan::Kernel::tile64);
  EXPECT_NE(plan_matmul(f16(problem(1024, 1024, 0)), gpu16, s).kernel, MatmulPlan::Kernel::f16x2);
  EXPECT_EQ(plan_matmul(problem(2048, 1024, 2048), gpu16, s).kernel, MatmulPlan::Kernel::vec4);
  EXPECT_EQ(plan_matmul(f16(problem(2048, 1024, 2048)), kGpu, s).kernel, MatmulPlan::Kernel::vec4);
  EXPECT_EQ(plan_matmul(problem(2048, 2048, 2048), gpu16, s).kernel, MatmulPlan::Kernel::warp) << "f32 math";
  Settings forced = s;
  forced.matmul_kernel = MatmulKernelSetting::tile128;
  EXPECT_EQ(plan_matmul(f16(problem(1024, 1024, 1024)), gpu16, forced).kernel, MatmulPlan::Kernel::tile128);
  forced.matmul_kernel = MatmulKernelSetting::vec4su;
  EXPECT_EQ(plan_matmul(f16(problem(128, 256, 64)), gpu16, forced).kernel, MatmulPlan::Kernel::f16x2);
  // f16x4 (and today's default) keep the F16_MATH forms of the other kernels.
  for (F16MatmulSetting f : {F16MatmulSetting::f16x4, F16MatmulSetting::choose}) {
    Settings o = s;
    o.f16_matmul = f;
    EXPECT_EQ(plan_matmul(f16(problem(2048, 2048, 2048)), gpu16, o).kernel, MatmulPlan::Kernel::vec4);
  }
  // Split-K within a loop limit, in whole 16-K tiles; the split epilogue (conv2d's columns).
  for (std::int64_t K : {50000 * 16, 65536 * 16}) {
    const MatmulPlan plan = plan_matmul(f16(problem(64, 128, K)), limited16, s);
    EXPECT_EQ(plan.kernel, MatmulPlan::Kernel::f16x2);
    EXPECT_GT(plan.splits, 1);
    EXPECT_LE(plan.loop_iterations, 65535u);
    EXPECT_EQ(plan.kchunk % 16, 0);
  }
  MatmulProblem cols = f16(problem(64, 1024, 64));
  cols.split_columns = true;
  EXPECT_TRUE(plan_matmul(cols, gpu16, s).split_columns);
  EXPECT_EQ(parse_f16_matmul("f16x2"), F16MatmulSetting::f16x2);
  EXPECT_EQ(parse_f16_matmul(""), F16MatmulSetting::choose);
  EXPECT_THROW(parse_f16_matmul("f16x8"), ValueError);
  EXPECT_EQ(parse_f16_ext("amd"), F16ExtSetting::amd);
  EXPECT_EQ(parse_f16_ext(""), F16ExtSetting::choose);
  EXPECT_THROW(parse_f16_ext("AMD"), ValueError);
}

namespace {
// A 3 x 3 filter, 3 -> 3 channels, over a 1920 x 1080 frame (the interop bench's frame).
ConvDirectProblem frame_problem() {
  ConvDirectProblem p;
  p.C = 3, p.Og = 3, p.KH = 3, p.KW = 3, p.OH = 1080, p.OW = 1920;
  p.x_rows_contiguous = true;
  return p;
}
}  // namespace

// Rows of PX positions on software rasterizers, positions interleaved across invocations with the
// weights in shared memory on GPUs; the loop lengths every loop counted.
TEST(PlanConvDirect, LayoutByDevice) {
  const Settings s;
  ConvDirectPlan r = plan_conv_direct(frame_problem(), kLlvmpipe, s);
  EXPECT_EQ(r.layout, ConvDirectPlan::Layout::rows);
  EXPECT_EQ(r.opi, 3);
  EXPECT_EQ(r.px, 16);
  EXPECT_TRUE(r.rowseg);
  EXPECT_EQ(r.seglen, 18);
  EXPECT_TRUE(r.x_rows_contiguous);
  EXPECT_EQ(r.groups_x, (1080u * 120u + 255u) / 256u);
  // opi (1 + px) + opi px + C KH (1 + seglen + KW (1 + opi + px (1 + opi)))
  EXPECT_EQ(r.loop_iterations, 51u + 48u + 9u * (19u + 3u * 68u));
  ConvDirectPlan l = plan_conv_direct(frame_problem(), kGpu, s);
  EXPECT_EQ(l.layout, ConvDirectPlan::Layout::lanes);
  EXPECT_EQ(l.px, 4);
  EXPECT_TRUE(l.shared_weights);
  EXPECT_FALSE(l.rowseg);
  EXPECT_EQ(l.groups_x, 1920u * 1080u / 1024u);
  // One staging iteration, then per position: 1 + opi + C (1 + KH (1 + KW (1 + opi))) + opi.
  EXPECT_EQ(l.loop_iterations, 1u + 4u * (1u + 3u + 3u * (1u + 3u * (1u + 3u * 4u)) + 3u));
  // A partial last workgroup.
  ConvDirectProblem odd = frame_problem();
  odd.OW = 1919;
  EXPECT_EQ(plan_conv_direct(odd, kGpu, s).groups_x, (1919u * 1080u + 1023u) / 1024u);
}

TEST(PlanConvDirect, BlockingWeightsAndForcedLayouts) {
  Settings s;
  ConvDirectProblem p = frame_problem();
  // Og = 12: 6 channels per invocation, fewer positions; stride 2 along rows: no row segment.
  p.Og = 12, p.stride_w = 2;
  ConvDirectPlan r = plan_conv_direct(p, kLlvmpipe, s), l = plan_conv_direct(p, kGpu, s);
  EXPECT_EQ(r.opi, 6);
  EXPECT_EQ(r.px, 4);
  EXPECT_FALSE(r.rowseg);
  EXPECT_EQ(l.opi, 6);
  EXPECT_EQ(l.px, 2);
  // Filters past kConvDirectSharedWeights floats are read from the SSBO.
  p.C = 64, p.Og = 8;
  EXPECT_FALSE(plan_conv_direct(p, kGpu, s).shared_weights);
  p.C = 28;  // 8 x 28 x 9 = 2016 floats
  EXPECT_TRUE(plan_conv_direct(p, kGpu, s).shared_weights);
  EXPECT_EQ(plan_conv_direct(p, kGpu, s).loop_iterations % 2u, 0u) << "8 staging iterations, then 2 positions";
  s.conv_direct = ConvDirectSetting::lanes;
  EXPECT_EQ(plan_conv_direct(p, kLlvmpipe, s).layout, ConvDirectPlan::Layout::lanes);
  s.conv_direct = ConvDirectSetting::rows;
  EXPECT_EQ(plan_conv_direct(p, kGpu, s).layout, ConvDirectPlan::Layout::rows);
}

// The lanes layout's tiles form: filters past the shared staging limit whose groups have a
// multiple of 4 output channels (PP-OCR det's 3 x 3, 96 -> 24): 4 channels per invocation, 2
// consecutive positions of a row, 128 tiles a workgroup, the filters staged by chunks of input
// channels (the largest divisor of C within the limit); KS slices of the input channels where one
// image's invocations are few; its loop count.
TEST(PlanConvDirect, LanesTilesForm) {
  Settings s;
  ConvDirectProblem p;
  p.C = 96, p.Og = 24, p.KH = 3, p.KW = 3, p.OH = 160, p.OW = 160, p.x_rows_contiguous = true;
  ConvDirectPlan t = plan_conv_direct(p, kGpu, s);
  EXPECT_EQ(t.layout, ConvDirectPlan::Layout::lanes);
  EXPECT_TRUE(t.tiles);
  EXPECT_FALSE(t.shared_weights);
  EXPECT_EQ(t.opi, 4);
  EXPECT_EQ(t.px, 2);
  EXPECT_EQ(t.ks, 1) << "12800 tiles x 6 groups of 4 channels = 76800 invocations";
  EXPECT_EQ(t.local_x, 128u);
  EXPECT_EQ(t.ch, 48) << "2048 / 36 = 56: 48 divides 96";
  EXPECT_EQ(t.seglen, 4);
  EXPECT_EQ(t.groups_x, 160u * 80u / 128u);
  EXPECT_TRUE(t.prefetch);
  // oq (1 + px) + seglen + KH (1 + seglen) + C / ks / ch (1 + stage + ch (1 + KH (1 + seglen) + KH (1 + KW (1 + oq
  // (1 + px))))) + px (1 + 5 oq)
  EXPECT_EQ(t.loop_iterations, 3u + 4u + 15u + 2u * (1u + 14u + 48u * (1u + 15u + 3u * (1u + 3u * 4u))) + 12u);
  // 40 x 40: 800 tiles x 6 = 4800 invocations: 4 slices of 24 channels (512 invocations a
  // workgroup), filters staged 12 channels of each slice at a time (4 x 12 x 36 floats); the
  // partial sums 3 x 128 x 2 x 4 = 3072 floats; their loops (ks px oq + ks).
  p.OH = p.OW = 40;
  t = plan_conv_direct(p, kGpu, s);
  EXPECT_EQ(t.ks, 4);
  EXPECT_EQ(t.local_x, 512u);
  EXPECT_EQ(t.ch, 12);
  EXPECT_EQ(t.groups_x, 7u);
  EXPECT_EQ(t.loop_iterations, 3u + 4u + 15u + 2u * (1u + 4u + 12u * 55u) + 12u + 12u);
  ConvDirectProblem small = p;  // a device of 256 invocations a workgroup: 2 slices
  small.max_local = 256;
  EXPECT_EQ(plan_conv_direct(small, kGpu, s).ks, 2);
  EXPECT_EQ(plan_conv_direct(small, kGpu, s).local_x, 256u);
  small.max_local = 64;
  EXPECT_FALSE(plan_conv_direct(small, kGpu, s).tiles) << "128 tiles a workgroup do not fit";
  EXPECT_EQ(conv_tiles_opi(24), 4);
  EXPECT_EQ(conv_tiles_opi(12), 4);
  EXPECT_EQ(conv_tiles_opi(6), 0);
  // Stride 2 and dilation 3 along rows: the segment (PX - 1) * 2 + 2 * 3 + 1; a prime C: chunks of
  // 1, one slice.
  p.stride_w = 2, p.dilation_w = 3, p.C = 37;
  t = plan_conv_direct(p, kGpu, s);
  EXPECT_TRUE(t.tiles);
  EXPECT_EQ(t.seglen, 1 * 2 + 2 * 3 + 1);
  EXPECT_EQ(t.ch, 37) << "8 x 37 x 9 > 2048 (lanes' OPI 8), 37 x 36 <= 2048";
  EXPECT_EQ(t.ks, 1) << "37 channels: one slice";
  p.C = 74;
  EXPECT_EQ(plan_conv_direct(p, kGpu, s).ks, 2);
  EXPECT_EQ(plan_conv_direct(p, kGpu, s).ch, 1) << "2 slices x 37 x 36 > 2048: chunks of 1 channel";
  // Og without a multiple of 4 (OPI 6), filters within the limit, software rasterizers: not tiles.
  p.C = 96, p.Og = 6;
  EXPECT_FALSE(plan_conv_direct(p, kGpu, s).tiles);
  p.Og = 24, p.C = 8;
  EXPECT_FALSE(plan_conv_direct(p, kGpu, s).tiles);
  EXPECT_TRUE(plan_conv_direct(p, kGpu, s).shared_weights);
  p.C = 96;
  EXPECT_EQ(plan_conv_direct(p, kLlvmpipe, s).layout, ConvDirectPlan::Layout::rows);
  s.conv_direct = ConvDirectSetting::lanes;
  EXPECT_TRUE(plan_conv_direct(p, kLlvmpipe, s).tiles) << "forced";
  p.shuffle = true;
  EXPECT_FALSE(plan_conv_direct(p, kGpu, s).tiles) << "a transposed conv's shuffled channels";
}

// The lanes layout's quads form (depthwise filters on GPUs, any size, stride and dilation): 4
// columns of PY rows per invocation, PY fewer where the last item's rows would pass OH by more
// than OH / 8, one image's planes over groups_x workgroups of 128; not for grouped filters,
// shuffles or software rasterizers (unless forced); its loop count.
TEST(PlanConvDirect, LanesQuadsForm) {
  Settings s;
  ConvDirectProblem p;  // PP-OCRv4 rec's 5 x 5 depthwise over [240, 12, 208] (pad 2)
  p.C = 1, p.Og = 1, p.groups = 240, p.KH = 5, p.KW = 5, p.OH = 12, p.OW = 208, p.x_rows_contiguous = true;
  ConvDirectPlan t = plan_conv_direct(p, kGpu, s);
  EXPECT_EQ(t.layout, ConvDirectPlan::Layout::lanes);
  EXPECT_TRUE(t.dwq);
  EXPECT_FALSE(t.tiles);
  EXPECT_EQ(t.opi, 1);
  EXPECT_EQ(t.py, 4);
  EXPECT_EQ(t.local_x, 128u);
  EXPECT_EQ(t.groups_x, (3u * 52u * 240u + 127u) / 128u) << "3 x 52 items a plane, 240 planes an image";
  // KH (1 + KW) + 4 py + rr (1 + 2 qcols + 2 + py (1 + 5 KW)) + 5 py: rr = 3 + 4 + 1 = 8, qcols = 3 + 4 + 1.
  EXPECT_EQ(t.loop_iterations, 30u + 16u + 8u * (1u + 16u + 2u + 4u * 26u) + 20u);
  // Rows per invocation: fewer where the last item's rows would pass OH by more than OH / 8.
  for (auto [oh, py] : {std::pair{1, 1}, {3, 3}, {6, 3}, {5, 1}, {9, 3}, {10, 2}, {23, 4}, {24, 4}}) {
    ConvDirectProblem q = p;
    q.OH = oh;
    EXPECT_EQ(plan_conv_direct(q, kGpu, s).py, py) << "OH " << oh;
  }
  // Strides, 3 x 3, dilation, rows of any width, one channel: the same form; qcols = 3 SW + (KW - 1) DW + 1.
  ConvDirectProblem other = p;
  other.stride_h = 2, other.OH = 6;
  EXPECT_TRUE(plan_conv_direct(other, kGpu, s).dwq);
  EXPECT_EQ(plan_conv_direct(other, kGpu, s).py, 3);
  other = p, other.stride_w = 2, other.KH = other.KW = 3, other.dilation_h = 2, other.OW = 2000;
  t = plan_conv_direct(other, kGpu, s);
  EXPECT_TRUE(t.dwq);
  // rr = 3 * 1 + 2 * 2 + 1 = 8, qcols = 6 + 2 + 1 = 9.
  EXPECT_EQ(t.loop_iterations, 12u + 16u + 8u * (1u + 18u + 2u + 4u * 16u) + 20u);
  EXPECT_EQ(t.groups_x, (3u * 500u * 240u + 127u) / 128u);
  other = p, other.groups = 1;
  EXPECT_TRUE(plan_conv_direct(other, kGpu, s).dwq) << "one channel";
  EXPECT_FALSE(plan_conv_direct(p, kLlvmpipe, s).dwq) << "software rasterizers: rows";
  ConvDirectProblem grouped = p;
  grouped.C = 2;
  EXPECT_FALSE(plan_conv_direct(grouped, kGpu, s).dwq);
  grouped = p, grouped.Og = 2;
  EXPECT_FALSE(plan_conv_direct(grouped, kGpu, s).dwq);
  grouped = p, grouped.shuffle = true, grouped.KH = grouped.KW = 1;
  EXPECT_FALSE(plan_conv_direct(grouped, kGpu, s).dwq);
  s.conv_direct = ConvDirectSetting::lanes;
  EXPECT_TRUE(plan_conv_direct(p, kLlvmpipe, s).dwq) << "forced";
}

// The ubo layout (weights in a uniform block, the channel loop run) on software rasterizers where
// the weights may go there (ubo_floats > 0) and more than one output channel per group; chunks of
// output channels where the filters exceed the block, spread evenly; the loop over channels and
// kernel rows only.
TEST(PlanConvDirect, UboLayoutChunksAndLoops) {
  Settings s;
  ConvDirectProblem p;
  p.C = 96, p.Og = 24, p.KH = 3, p.KW = 3, p.OH = 160, p.OW = 160, p.x_rows_contiguous = true;
  EXPECT_EQ(plan_conv_direct(p, kLlvmpipe, s).layout, ConvDirectPlan::Layout::rows) << "no block offered";
  p.ubo_floats = 16384;  // 64 KiB
  ConvDirectPlan u = plan_conv_direct(p, kLlvmpipe, s);
  EXPECT_EQ(u.layout, ConvDirectPlan::Layout::ubo);
  EXPECT_EQ(u.opi, 8);
  EXPECT_EQ(u.px, 16);
  // 16381 / 864 = 18 filters fit, 16 in whole OPI blocks: two dispatches of 12 -> 16 (OPI multiples).
  EXPECT_EQ(u.chunk, 16);
  EXPECT_EQ(u.wq, 4096) << "16 x 864 floats: 3456 vec4s, in the class of 4096 (the whole block)";
  EXPECT_LE(u.wq * 4, p.ubo_floats);
  EXPECT_EQ(u.seglen, 18);
  EXPECT_EQ(u.groups_x, (160u * 10u + 15u) / 16u);
  EXPECT_EQ(u.loop_iterations, 96u * 4u + 1u);
  EXPECT_EQ(plan_conv_direct(p, kGpu, s).layout, ConvDirectPlan::Layout::lanes) << "GPUs unchanged";
  // Stride 2 along rows: a segment of 2 (PX - 1) + KW inputs; OPI a divisor of Og (20: 5).
  p.stride_w = 2, p.Og = 20;
  u = plan_conv_direct(p, kLlvmpipe, s);
  EXPECT_EQ(u.opi, 5);
  EXPECT_EQ(u.seglen, 15 * 2 + 2 + 1);
  // Positions per invocation: 16 where it wastes at most OW / 8 of a row, else 8 (no 32: its
  // programs cost LLVM 3x the compile for no faster run; suite17).
  for (auto [ow, px] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {80, 16}, {40, 8}, {20, 8}, {30, 16}, {3, 8}, {128, 16}, {136, 16}, {1000, 16}}) {
    ConvDirectProblem q = p;
    q.OW = ow;
    EXPECT_EQ(plan_conv_direct(q, kLlvmpipe, s).px, px) << "OW " << ow;
  }
  EXPECT_EQ(u.chunk, 15 - 5) << "18 fit, 15 in OPI blocks: 2 dispatches of 10";
  // All in one block; a filter of 1 x 1 over 384 channels.
  p.C = 384, p.KH = p.KW = 1, p.Og = 384, p.stride_w = 1;
  u = plan_conv_direct(p, kLlvmpipe, s);
  EXPECT_EQ(u.chunk, 40) << "16381 / 384 = 42 -> 40 in blocks of 8: 10 dispatches of 40 (the last 24)";
  p.Og = 8;
  EXPECT_EQ(plan_conv_direct(p, kLlvmpipe, s).chunk, 8);
  // Depthwise (one output channel per group): OPI 1, one dispatch; filters past the block: rows.
  p.C = 1, p.KH = p.KW = 3, p.Og = 1, p.groups = 384;
  u = plan_conv_direct(p, kLlvmpipe, s);
  EXPECT_EQ(u.layout, ConvDirectPlan::Layout::ubo);
  EXPECT_EQ(u.opi, 1);
  EXPECT_EQ(u.chunk, 384);
  EXPECT_EQ(u.wq, 1024) << "one dispatch: 384 filters of 9, 864 vec4s in the class of 1024";
  EXPECT_EQ(u.loop_iterations, 1u * 4u + 1u);
  p.KH = p.KW = 1, p.Og = 2, p.groups = 1, p.C = 17000;
  EXPECT_EQ(plan_conv_direct(p, kLlvmpipe, s).layout, ConvDirectPlan::Layout::rows)
      << "one filter of 17000 floats > 16384";
  // The block's size classes (the SSBO pool's, in vec4s), capped by the device's block.
  for (auto [floats, vec4s] : std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 16},
                                                                                 {64, 16},
                                                                                 {65, 24},
                                                                                 {96, 24},
                                                                                 {97, 32},
                                                                                 {128, 32},
                                                                                 {129, 48},
                                                                                 {3456, 1024},
                                                                                 {4096, 1024},
                                                                                 {4097, 1536},
                                                                                 {16381, 4096}})
    EXPECT_EQ(conv_ubo_block_vec4s(floats, 16384), vec4s) << floats << " floats";
  EXPECT_EQ(conv_ubo_block_vec4s(4000, 4096), 1024) << "the device's block of 16 KiB";
  // Forced: ubo on a GPU where it applies; rows on a software rasterizer.
  p.C = 64;
  s.conv_direct = ConvDirectSetting::ubo;
  EXPECT_EQ(plan_conv_direct(p, kGpu, s).layout, ConvDirectPlan::Layout::ubo);
  s.conv_direct = ConvDirectSetting::rows;
  EXPECT_EQ(plan_conv_direct(p, kLlvmpipe, s).layout, ConvDirectPlan::Layout::rows);
}

// Elementwise (docs/precision.md): the f16 form only where every operand, the output included,
// is an f16 tensor, contiguous, at an even offset, with an even count, on a device with f16 math.
namespace {
// An op whose table row gives the f16 form `f16_fn` ("" none).
ElementwiseProblem ew(const char* f16_fn, std::vector<ElementwiseOperand> ops, std::int64_t n, bool f16_math = true) {
  ElementwiseProblem p;
  p.f16_fn = f16_fn, p.f16_math = f16_math, p.contig = true, p.out_contiguous = true, p.numel = n;
  p.operands = std::move(ops);
  return p;
}
const ElementwiseOperand kH{DType::f16, 0};
}  // namespace

TEST(PlanElementwise, F16FormOnlyForAllF16Operands) {
  EXPECT_EQ(plan_elementwise(ew("op16_mul", {kH, kH, kH}, 100)).f16_fn, "op16_mul");
  EXPECT_EQ(plan_elementwise(ew("op16_add_alpha", {kH, kH, kH}, 100)).f16_fn, "op16_add_alpha");
  EXPECT_EQ(plan_elementwise(ew("op16_relu", {kH, kH}, 100)).f16_fn, "op16_relu");
  EXPECT_EQ(plan_elementwise(ew("op16_mul", {kH, kH}, 100)).f16_fn, "op16_mul") << "tensor * scalar";
  // Mixed dtypes (BinaryOps.MixedDtypesPromote): f16 + i32 -> f16, f16 + bf16 -> f32, an f32
  // input or output: f32 math.
  const ElementwiseOperand i32{DType::i32, 0}, bf{DType::bf16, 0}, f32{DType::f32, 0};
  EXPECT_EQ(plan_elementwise(ew("op16_add", {kH, kH, i32}, 100)).f16_fn, "");
  EXPECT_EQ(plan_elementwise(ew("op16_add", {kH, i32, kH}, 100)).f16_fn, "");
  EXPECT_EQ(plan_elementwise(ew("op16_add", {f32, kH, bf}, 100)).f16_fn, "");
  EXPECT_EQ(plan_elementwise(ew("op16_add", {f32, kH, kH}, 100)).f16_fn, "");
  EXPECT_EQ(plan_elementwise(ew("op16_add", {kH, kH, f32}, 100)).f16_fn, "");
  EXPECT_EQ(plan_elementwise(ew("op16_add", {kH, bf, bf}, 100)).f16_fn, "");
  EXPECT_EQ(plan_elementwise(ew("op16_relu", {f32, kH}, 100)).f16_fn, "");
  EXPECT_EQ(plan_elementwise(ew("op16_relu", {bf, bf}, 100)).f16_fn, "");
  // Odd counts, odd offsets, strided operands, ops without an f16 form, integer compute, error
  // flags, no f16 math: the f32 form.
  EXPECT_EQ(plan_elementwise(ew("op16_mul", {kH, kH, kH}, 99)).f16_fn, "");
  EXPECT_EQ(plan_elementwise(ew("op16_mul", {kH, {DType::f16, 1}, kH}, 100)).f16_fn, "");
  EXPECT_EQ(plan_elementwise(ew("op16_mul", {{DType::f16, 3}, kH, kH}, 100)).f16_fn, "");
  EXPECT_EQ(plan_elementwise(ew("op16_mul", {{DType::f16, 2}, kH, {DType::f16, 4}}, 100)).f16_fn, "op16_mul");
  ElementwiseProblem strided = ew("op16_mul", {kH, kH, kH}, 100);
  strided.contig = false;
  EXPECT_EQ(plan_elementwise(strided).f16_fn, "");
  // Ops whose row has no f16 form (pow, exp, where).
  EXPECT_EQ(plan_elementwise(ew("", {kH, kH, kH}, 100)).f16_fn, "");
  EXPECT_EQ(plan_elementwise(ew("", {kH, kH}, 100)).f16_fn, "");
  EXPECT_EQ(plan_elementwise(ew("", {kH, kH, kH, kH}, 100)).f16_fn, "");
  ElementwiseProblem ints = ew("op16_add", {kH, kH, kH}, 100);
  ints.in_ct = CT::i32;
  EXPECT_EQ(plan_elementwise(ints).f16_fn, "");
  ElementwiseProblem flagged = ew("op16_add", {kH, kH, kH}, 100);
  flagged.error_flag = true;
  EXPECT_EQ(plan_elementwise(flagged).f16_fn, "");
  EXPECT_EQ(plan_elementwise(ew("op16_mul", {kH, kH, kH}, 100, false)).f16_fn, "");
}

// The f16 form's grid is one invocation per word of the output (numel / 2), not halved again by
// the OUT_WORDS count: with 100 elements 50 invocations (the bug: 25, and elements 50..99 never
// written; 4098 elements: 2049, not 1025).
TEST(PlanElementwise, F16FormCoversEveryWord) {
  for (std::int64_t n : {2, 100, 4096, 4098, 8192, 1 << 20}) {
    const ElementwisePlan p = plan_elementwise(ew("op16_relu", {kH, kH}, n));
    EXPECT_EQ(p.f16_fn, "op16_relu");
    EXPECT_EQ(p.invocations, static_cast<std::uint64_t>(n / 2)) << n;
    const ElementwisePlan off = plan_elementwise(ew("op16_add", {{DType::f16, 6}, kH, kH}, n));
    EXPECT_EQ(off.invocations, static_cast<std::uint64_t>(n / 2)) << n << " at offset 6";
  }
  // Without f16 math: OUT_WORDS, one invocation per output word the view touches.
  const ElementwisePlan w = plan_elementwise(ew("op16_relu", {kH, kH}, 100, false));
  EXPECT_TRUE(w.words);
  EXPECT_EQ(w.invocations, 50u);
  EXPECT_EQ(plan_elementwise(ew("op16_relu", {{DType::f16, 1}, kH}, 100, false)).invocations, 51u);
  // f32: quads.
  const ElementwisePlan q = plan_elementwise(ew("op16_relu", {{DType::f32, 0}, {DType::f32, 0}}, 100));
  EXPECT_TRUE(q.vec4);
  EXPECT_EQ(q.f16_fn, "");
  EXPECT_EQ(q.count, 25u);
}

// VEC4: u_count is the quads, the grid whole workgroups of kElementwiseLocal invocations with
// `quads` quads each (the setting's, else kElementwiseQuads), covering every quad; not where a
// size or an offset is not a multiple of 4.
TEST(PlanElementwise, QuadsCoverEveryQuad) {
  const ElementwiseOperand f{DType::f32, 0};
  for (int quads : {0, 1, 2, 4, 8})
    for (std::int64_t n : {std::int64_t{4}, std::int64_t{100}, std::int64_t{4100}, std::int64_t{1} << 26}) {
      ElementwiseProblem pr = ew("", {f, f, f}, n);
      pr.quads = quads;
      const ElementwisePlan p = plan_elementwise(pr);
      ASSERT_TRUE(p.vec4) << n;
      EXPECT_EQ(p.quads, quads ? quads : kElementwiseQuads);
      EXPECT_EQ(p.count, static_cast<std::uint64_t>(n / 4));
      const std::uint64_t block = static_cast<std::uint64_t>(kElementwiseLocal) * p.quads;
      EXPECT_EQ(p.invocations % kElementwiseLocal, 0u) << n;
      EXPECT_GE(p.invocations / kElementwiseLocal * block, p.count) << n << " quads " << quads;
      EXPECT_LT((p.invocations / kElementwiseLocal - 1) * block, p.count) << n << " quads " << quads;
    }
  EXPECT_FALSE(plan_elementwise(ew("", {f, f, f}, 102)).vec4);
  EXPECT_FALSE(plan_elementwise(ew("", {f, {DType::f32, 2}, f}, 100)).vec4);
  const ElementwisePlan s = plan_elementwise(ew("", {f, f, f}, 102));
  EXPECT_EQ(s.count, 102u);
  EXPECT_EQ(s.invocations, 102u);
}

// Scalars and alpha are values of another dtype: the f16 form rounds them to f16, so it is
// chosen only where that rounding is exact (and alpha * b exact: alpha a power of two).
TEST(PlanElementwise, F16FormScalarsAndAlphaMustBeF16Exact) {
  ElementwiseProblem p = ew("op16_mul", {kH, kH}, 100);
  for (double v : {3.0, -0.5, 1024.0, 0.0, 65504.0, 0.099975585937500}) {
    p.scalar = v;
    EXPECT_EQ(plan_elementwise(p).f16_fn, "op16_mul") << v;
  }
  for (double v : {0.1, 1e5, 65520.0, 1.0 / 3, std::nan("")}) {
    p.scalar = v;
    EXPECT_EQ(plan_elementwise(p).f16_fn, "") << v;
  }
  ElementwiseProblem a = ew("op16_add_alpha", {kH, kH, kH}, 100);
  for (double alpha : {2.0, -1.0, 0.5, -0.25}) {
    a.alpha = alpha;
    EXPECT_EQ(plan_elementwise(a).f16_fn, "op16_add_alpha") << alpha;
  }
  for (double alpha : {3.0, 0.1, -1.5}) {
    a.alpha = alpha;
    EXPECT_EQ(plan_elementwise(a).f16_fn, "") << alpha;
  }
}

// softmax.comp: workgroups of 256 for rows of 256 and more (64 below), the row in registers as
// quads where it is f32, aligned and at most 8 quads per invocation, else as scalars where at most
// 32 per invocation; past the loop limit the split path through logsumexp.
TEST(PlanSoftmax, FormAndLoops) {
  SoftmaxProblem p;
  p.L = 1000, p.kept_dims = 1, p.quad_rows = true, p.loop_limit = 65535;
  SoftmaxPlan plan = plan_softmax(p);
  EXPECT_EQ(plan.path, SoftmaxPlan::Path::kernel);
  EXPECT_EQ(plan.local, 256u);
  EXPECT_TRUE(plan.row_quads);
  EXPECT_EQ(plan.nq, 1);
  EXPECT_FALSE(plan.subgroup);
  EXPECT_EQ(plan.loop_iterations, 1u + 2u * 4u + 24u);  // KD, two passes of ceil(1000 / 256), the tree
  p.subgroup_arithmetic = true;
  EXPECT_TRUE(plan_softmax(p).subgroup);
  p.L = 1002;  // not whole quads: scalars in registers, 4 per invocation
  plan = plan_softmax(p);
  EXPECT_FALSE(plan.row_quads);
  EXPECT_TRUE(plan.row_regs);
  EXPECT_EQ(plan.ns, 4);
  EXPECT_EQ(plan.nq, 0);
  EXPECT_TRUE(plan.subgroup);
  EXPECT_EQ(plan.loop_iterations, 1u + 3u * 5u + 24u);  // KD, three loops of NS + exit, the tree
  p.L = 6625;                                           // the OCR recognizer's classes: 26 per invocation
  EXPECT_TRUE(plan_softmax(p).row_regs);
  EXPECT_EQ(plan_softmax(p).ns, 26);
  p.L = 8192;  // 8 quads per invocation
  EXPECT_TRUE(plan_softmax(p).row_quads);
  EXPECT_FALSE(plan_softmax(p).row_regs);
  EXPECT_EQ(plan_softmax(p).nq, 8);
  p.L = 8196;  // past both register forms: two strided passes
  plan = plan_softmax(p);
  EXPECT_FALSE(plan.row_quads);
  EXPECT_FALSE(plan.row_regs);
  EXPECT_FALSE(plan.subgroup) << "subgroups only in the register forms";
  EXPECT_EQ(plan.loop_iterations, 1u + 2u * 33u + 24u);
  p.L = 8191;  // odd, 32 per invocation
  EXPECT_TRUE(plan_softmax(p).row_regs);
  EXPECT_EQ(plan_softmax(p).ns, 32);
  p.L = 100, p.kept_dims = 3;
  plan = plan_softmax(p);
  EXPECT_EQ(plan.local, 64u);
  EXPECT_EQ(plan.loop_iterations, 3u + 2u * 2u + 24u);
  p.quad_rows = false;  // a view, or not f32: scalars
  EXPECT_FALSE(plan_softmax(p).row_quads);
  EXPECT_TRUE(plan_softmax(p).row_regs);
  EXPECT_EQ(plan_softmax(p).ns, 2);
  // Registers only where their loops fit the limit: 3 + 3 * 33 + 24 > 100.
  p.L = 8000, p.loop_limit = 100;
  plan = plan_softmax(p);
  EXPECT_EQ(plan.path, SoftmaxPlan::Path::kernel);
  EXPECT_FALSE(plan.row_regs);
  EXPECT_EQ(plan.loop_iterations, 3u + 2u * 32u + 24u);
  p.loop_limit = 65535;
  // 1 + 2 ceil(L / 256) + 24 <= 65535: rows up to 32755 * 256 in the kernel.
  p.kept_dims = 1, p.L = 32755 * 256;
  EXPECT_EQ(plan_softmax(p).path, SoftmaxPlan::Path::kernel);
  EXPECT_EQ(plan_softmax(p).loop_iterations, 65535u);
  p.L += 1;
  EXPECT_EQ(plan_softmax(p).path, SoftmaxPlan::Path::logsumexp);
  p.loop_limit = 0;
  EXPECT_EQ(plan_softmax(p).path, SoftmaxPlan::Path::kernel) << "no loop limit";
}

// The GLTENSOR_* kernel settings are parsed once into enums; a value outside the list throws
// naming the variable.
TEST(Settings, ParsedIntoEnums) {
  EXPECT_EQ(parse_matmul_kernel(""), MatmulKernelSetting::choose);
  EXPECT_EQ(parse_matmul_kernel("vec4su"), MatmulKernelSetting::vec4su);
  EXPECT_EQ(parse_matmul_kernel("gpu"), MatmulKernelSetting::gpu);
  EXPECT_EQ(parse_conv("im2col"), ConvSetting::im2col);
  EXPECT_EQ(parse_conv_direct("lanes"), ConvDirectSetting::lanes);
  EXPECT_EQ(parse_precision("f16-emulate"), PrecisionSetting::f16_emulate);
  EXPECT_EQ(parse_precision("f32"), PrecisionSetting::f32);
  EXPECT_EQ(parse_precision("f16-matmul"), PrecisionSetting::f16_matmul);
  EXPECT_EQ(parse_qlinear_kernel("serial"), QlinearKernelSetting::serial);
  EXPECT_EQ(parse_qlinear_kernel(""), QlinearKernelSetting::choose);
  EXPECT_EQ(parse_qlinear_kernel("words"), QlinearKernelSetting::words);
  {
    const QlinearGemvShape g = parse_qlinear_gemv("8x2x128m");
    EXPECT_EQ(g.rows, 8);
    EXPECT_EQ(g.unroll, 2);
    EXPECT_EQ(g.tpr, 128);
    EXPECT_TRUE(g.mantissa);
    EXPECT_FALSE(parse_qlinear_gemv("4x1x64").mantissa);
    EXPECT_EQ(parse_qlinear_gemv("").rows, 0);
    for (const char* bad : {"8x2", "8x2x96", "0x1x64", "4x9x64", "4x1x512", "4x1x64q", "4x1x64mm"})
      EXPECT_THROW(parse_qlinear_gemv(bad), ValueError) << bad;
  }
  try {
    parse_matmul_kernel("vec5");
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("GLTENSOR_MATMUL_KERNEL=\"vec5\""), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_conv("Direct"), ValueError);
}

// The lab knobs read from the environment like every setting (no process-wide setters): the
// imatmul swizzle, the pool's smallest class, the model planner's passes; bad values throw
// naming the variable.
TEST(Settings, LabKnobsFromTheEnvironment) {
  const auto with = [](const char* var, const char* value) {
    ::setenv(var, value, 1);
    const Settings s = Settings::from_env();
    ::unsetenv(var);
    return s;
  };
  const Settings d = Settings::from_env();
  EXPECT_EQ(d.imatmul_swizzle, -1);
  EXPECT_EQ(d.pool_min_class, 0u);
  EXPECT_TRUE(d.fuse_elementwise && d.fuse_qdq_output && d.fuse_qdq_input && d.fuse_layernorm && d.fuse_attention);
  EXPECT_EQ(with("GLTENSOR_IMATMUL_SWIZZLE", "0").imatmul_swizzle, 0);
  EXPECT_EQ(with("GLTENSOR_IMATMUL_SWIZZLE", "1").imatmul_swizzle, 1);
  EXPECT_EQ(with("GLTENSOR_POOL_MIN_CLASS", "65536").pool_min_class, 65536u);
  EXPECT_FALSE(with("GLTENSOR_FUSE_ELEMENTWISE", "0").fuse_elementwise);
  EXPECT_FALSE(with("GLTENSOR_FUSE_QDQ_OUTPUT", "0").fuse_qdq_output);
  // Every boolean variable parses alike (settings.cpp's env_flag): 1/on/true, 0/off/false.
  EXPECT_TRUE(with("GLTENSOR_FUSE_QDQ_INPUT", "1").fuse_qdq_input);
  EXPECT_TRUE(with("GLTENSOR_FUSE_QDQ_INPUT", "on").fuse_qdq_input);
  EXPECT_TRUE(with("GLTENSOR_FUSE_QDQ_INPUT", "TRUE").fuse_qdq_input);
  EXPECT_FALSE(with("GLTENSOR_FUSE_QDQ_INPUT", "off").fuse_qdq_input);
  EXPECT_TRUE(with("GLTENSOR_FUSE_QDQ_INPUT", "").fuse_qdq_input);  // unset: the default, on
  EXPECT_FALSE(with("GLTENSOR_FUSE_QDQ_INPUT", "0").fuse_qdq_input);
  EXPECT_FALSE(with("GLTENSOR_SUBGROUPS", "false").subgroups);
  EXPECT_TRUE(with("GLTENSOR_PROFILE", "on").profile);
  EXPECT_FALSE(with("GLTENSOR_CUDA_MEMORY", "Off").cuda_memory);
  EXPECT_EQ(with("GLTENSOR_IMATMUL_SWIZZLE", "on").imatmul_swizzle, 1);
  EXPECT_EQ(with("GLTENSOR_TUNE", "0").tune, 0);
  EXPECT_EQ(d.tune, -1);
  EXPECT_EQ(d.matmul_reg_rows, 8);
  EXPECT_EQ(d.matmul_reg_quads, 2);
  const Settings rb = with("GLTENSOR_MATMUL_REG_BLOCK", "4x1");
  EXPECT_EQ(rb.matmul_reg_rows, 4);
  EXPECT_EQ(rb.matmul_reg_quads, 1);
  // GLTENSOR_IMATMUL_BLOCKS: 1 (software 4 x 4, the tests' cap) or 2 (GPUs' 8 x 8), else the plan's
  EXPECT_EQ(d.imatmul_blocks, 0);
  EXPECT_EQ(with("GLTENSOR_IMATMUL_BLOCKS", "1").imatmul_blocks, 1);
  EXPECT_EQ(with("GLTENSOR_IMATMUL_BLOCKS", "2").imatmul_blocks, 2);
  EXPECT_EQ(with("GLTENSOR_IMATMUL_BLOCKS", "4").imatmul_blocks, 0);
  // GLTENSOR_RNN_REGS=KS,RR[,NG]: the register sequence kernel's forms (unset: the plan's)
  EXPECT_EQ(d.rnn_regs_parts, 0);
  EXPECT_EQ(d.rnn_regs_cols, -1);
  const Settings regs = with("GLTENSOR_RNN_REGS", "4,32");
  EXPECT_EQ(regs.rnn_regs_parts, 4);
  EXPECT_EQ(regs.rnn_regs_cols, 32);
  EXPECT_EQ(regs.rnn_regs_grid, 0);
  EXPECT_EQ(with("GLTENSOR_RNN_REGS", "0,128,1").rnn_regs_grid, 1);
  for (auto [var, bad] : {std::pair{"GLTENSOR_RNN_REGS", "4"},
                          {"GLTENSOR_RNN_REGS", "4,x"},
                          {"GLTENSOR_RNN_REGS", "1,2,3,4"},
                          {"GLTENSOR_RNN_REGS", "4,,2"},
                          {"GLTENSOR_IMATMUL_SWIZZLE", "2"},
                          {"GLTENSOR_POOL_MIN_CLASS", "4k"},
                          {"GLTENSOR_FUSE_QDQ_INPUT", "yes"},
                          {"GLTENSOR_FUSE_LAYERNORM", "2"},
                          {"GLTENSOR_FULL_BARRIERS", "enable"},
                          {"GLTENSOR_CHECK_LOOPS", "01"},
                          {"GLTENSOR_TUNE", "always"},
                          {"GLTENSOR_MATMUL_REG_BLOCK", "3x1"},
                          {"GLTENSOR_MATMUL_REG_BLOCK", "4x4"},
                          {"GLTENSOR_MATMUL_REG_BLOCK", "8"}}) {
    try {
      with(var, bad);
      ADD_FAILURE() << var << "=" << bad << " accepted";
    } catch (const ValueError& e) {
      ::unsetenv(var);
      EXPECT_NE(std::string(e.what()).find(var), std::string::npos) << e.what();
    }
  }
}

TEST(PlanQLinear, KernelAndSplitK) {
  // Decode rows take the GEMV (serial on software rasterizers), with as many rows of x per
  // workgroup as there are (up to 4); more rows the GEMM; Settings::qlinear_kernel forces one.
  QLinearPlan p = plan_qlinear(1, 4096, false, 65535);
  EXPECT_TRUE(p.gemv);
  EXPECT_FALSE(p.serial);
  EXPECT_TRUE(p.words);  // GPUs: the words GEMV
  EXPECT_EQ(p.mt, 1);
  EXPECT_EQ(p.rows, kQLinearWordRows);
  EXPECT_EQ(plan_qlinear(1, 4096, false, 65535, QlinearKernelSetting::gemv).rows, kQLinearRows);
  EXPECT_EQ(p.blocks_per_launch, 128);
  // A group's invocations cover its MT x ROWS sums (the reduction's last step stores them).
  for (std::int64_t M : {1, 2, 4, 8})
    for (std::int64_t K : {32, 100, 4096}) {
      const QLinearPlan g = plan_qlinear(M, K, false, 65535);
      EXPECT_GE(g.tpr, g.mt * g.rows) << M << " " << K;
      EXPECT_LE(g.tpr, g.local);
    }
  // The words GEMV (forced): the shape's rows and unroll; enough invocations per group for the
  // row's words (4 per block) up to T, at least mt * rows, and the reduction within 16 KiB.
  {
    const QLinearPlan w = plan_qlinear(1, 4096, true, 65535, QlinearKernelSetting::words);
    EXPECT_TRUE(w.gemv && w.words && !w.serial);
    EXPECT_EQ(w.rows, kQLinearWordRows);
    EXPECT_EQ(w.unroll, kQLinearWordUnroll);
    EXPECT_EQ(w.pairs, kQLinearWordPairs);
    EXPECT_FALSE(plan_qlinear(1, 4096, true, 65535, QlinearKernelSetting::words, {4, 2, 64, false, false}).pairs);
    EXPECT_EQ(w.tpr, 64);
    EXPECT_EQ(plan_qlinear(1, 64, false, 65535, QlinearKernelSetting::words).tpr, 8);  // 8 words
    const QLinearPlan big = plan_qlinear(4, 4096, false, 65535, QlinearKernelSetting::words, {16, 1, 256, true});
    EXPECT_EQ(big.rows, 16);
    EXPECT_TRUE(big.mantissa);
    EXPECT_EQ(big.tpr, 64);  // 4 x 16 sums per invocation: 64 invocations fill 16 KiB
    EXPECT_EQ(big.local, 64u);
    const QLinearPlan wide = plan_qlinear(1, 4096, false, 65535, QlinearKernelSetting::words, {4, 1, 256, false});
    EXPECT_EQ(wide.tpr, 256);
    EXPECT_EQ(wide.local, 256u);
    EXPECT_FALSE(plan_qlinear(1, 4096, false, 65535, QlinearKernelSetting::gemv).words);  // the block GEMV
    // Few features over a long K: larger groups (up to 256) until 64Ki invocations.
    EXPECT_EQ(plan_qlinear(1, 14336, false, 65535, QlinearKernelSetting::choose, {}, 4096).tpr, 128);
    EXPECT_EQ(plan_qlinear(1, 14336, false, 65535, QlinearKernelSetting::choose, {}, 1024).tpr, 256);
    EXPECT_EQ(plan_qlinear(1, 4096, false, 65535, QlinearKernelSetting::choose, {}, 14336).tpr, 64);
    EXPECT_EQ(plan_qlinear(1, 64, false, 65535, QlinearKernelSetting::choose, {}, 8).tpr, 8);  // 8 words
  }
  p = plan_qlinear(1, 4096, true, 65535);
  EXPECT_TRUE(p.gemv && p.serial);
  EXPECT_EQ(p.rows, 1);
  EXPECT_FALSE(plan_qlinear(1, 4096, true, 65535, QlinearKernelSetting::gemm).gemv);
  EXPECT_FALSE(plan_qlinear(1, 4096, true, 65535, QlinearKernelSetting::gemv).serial);
  EXPECT_TRUE(plan_qlinear(100, 4096, false, 65535, QlinearKernelSetting::serial).serial);
  EXPECT_EQ(p.blocks_per_launch, 128);  // one launch: every block within the limit
  EXPECT_EQ(plan_qlinear(3, 384, true, 65535).mt, 4);
  EXPECT_EQ(plan_qlinear(8, 384, true, 65535).mt, 4);
  EXPECT_FALSE(plan_qlinear(9, 384, true, 65535).gemv);
  // Under the loop limit: every launch fits it, and the launches cover K.
  for (auto kernel : {QlinearKernelSetting::choose, QlinearKernelSetting::words})
    for (std::int64_t M : {1, 4, 64})
      for (std::int64_t K : {32, 1000, 4100, 100000})
        for (std::uint64_t limit : {60u, 500u, 65535u}) {
          const QLinearPlan q = plan_qlinear(M, K, false, limit, kernel);
          const std::int64_t Kb = (K + 31) / 32;
          EXPECT_GE(q.blocks_per_launch, 1);
          EXPECT_LE(q.blocks_per_launch, Kb);
          if (qlinear_loops(q, 1) <= limit) {
            EXPECT_LE(qlinear_loops(q, q.blocks_per_launch), limit) << M << " " << K << " " << limit;
            if (q.blocks_per_launch < Kb) {
              EXPECT_GT(qlinear_loops(q, q.blocks_per_launch + 1), limit);
            }
          }
        }
}

// The warp-tiled kernel forced: 128 x 128 tiles of 256 invocations, 8-K tiles, EDGE where M, N or K
// are off the tiles; only quad operands with
// M, N and K multiples of 4 and f32 math (else the planner's other kernels); split-K within the
// loop limit in whole 16-K chunks; SPLIT_COLS without split-K.
TEST(PlanMatmul, WarpKernelForced) {
  Settings s;
  s.matmul_kernel = MatmulKernelSetting::warp;
  const DeviceTraits h100{false, 0, false};
  MatmulPlan p = plan_matmul(problem(1024, 4096, 512), h100, s);
  EXPECT_EQ(p.kernel, MatmulPlan::Kernel::warp);
  EXPECT_EQ(p.tile_m, 128);
  EXPECT_EQ(p.tile_n, 128);
  EXPECT_EQ(p.warp_bk, 8);
  EXPECT_EQ(p.local_x, 256u);
  EXPECT_EQ(p.groups_x, 32u);
  EXPECT_EQ(p.groups_y, 8u);
  EXPECT_FALSE(p.warp_edge);
  EXPECT_FALSE(p.tune);
  EXPECT_EQ(p.loop_iterations, matmul_loops(MatmulPlan::Kernel::warp, 512));
  p = plan_matmul(problem(132, 260, 36), h100, s);
  EXPECT_EQ(p.kernel, MatmulPlan::Kernel::warp);
  EXPECT_TRUE(p.warp_edge);
  EXPECT_EQ(p.groups_x, 3u);
  EXPECT_EQ(p.groups_y, 2u);
  EXPECT_TRUE(plan_matmul(problem(128, 128, 28), h100, s).warp_edge) << "K off the 8-K tiles";
  // Not quads, M not a multiple of 4, f16 math: other kernels.
  EXPECT_NE(plan_matmul(problem(1024, 4096, 512, false), h100, s).kernel, MatmulPlan::Kernel::warp);
  EXPECT_NE(plan_matmul(problem(1022, 4096, 512), h100, s).kernel, MatmulPlan::Kernel::warp);
  EXPECT_NE(plan_matmul(problem(1024, 4096, 1), h100, s).kernel, MatmulPlan::Kernel::warp);
  MatmulProblem half = problem(1024, 4096, 512);
  half.precision = Precision::f16_allowed;
  EXPECT_NE(plan_matmul(half, DeviceTraits{false, 0, true}, s).kernel, MatmulPlan::Kernel::warp);
  // The loop limit: K in chunks of whole 16-K tiles, each within the limit.
  const DeviceTraits limited{false, 2000, false};
  p = plan_matmul(problem(256, 256, 8192), limited, s);
  EXPECT_EQ(p.kernel, MatmulPlan::Kernel::warp);
  EXPECT_GT(p.splits, 1);
  EXPECT_EQ(p.kchunk % 16, 0);
  EXPECT_LE(p.loop_iterations, 2000u);
  EXPECT_GE(p.splits * p.kchunk, 8192);
  MatmulProblem cols = problem(256, 512, 64);
  cols.split_columns = true;
  EXPECT_TRUE(plan_matmul(cols, h100, s).split_columns);
}

// Chosen (no kernel forced): on GPUs over at least kWarpMinTiles 128 x 128 tiles, batch entries
// included, where B is read as quads along K (linear's w.t()) or, row-major, in whole 128 x 128 x 8
// tiles; never on llvmpipe, for fewer tiles, for row-major B off the tile edges or with f16 math.
TEST(PlanMatmul, WarpKernelChosenForKMajorB) {
  const Settings s;
  auto kmajor = [](std::int64_t M, std::int64_t N, std::int64_t K, std::int64_t batch = 1) {
    MatmulProblem p = problem(M, N, K, true, batch);
    p.b_quads = 2, p.b_kmajor = true;
    return p;
  };
  MatmulPlan p = plan_matmul(kmajor(2048, 2048, 1024), kGpu, s);
  EXPECT_EQ(p.kernel, MatmulPlan::Kernel::warp);
  EXPECT_EQ(p.warp_bk, 16);
  EXPECT_TRUE(p.warp_shk);
  EXPECT_FALSE(p.tune);
  EXPECT_EQ(plan_matmul(kmajor(1024, 1024, 1024, 4), kGpu, s).kernel, MatmulPlan::Kernel::warp) << "4 x 64 tiles";
  EXPECT_EQ(plan_matmul(kmajor(2044, 2048, 1020), kGpu, s).kernel, MatmulPlan::Kernel::warp) << "edges";
  EXPECT_NE(plan_matmul(kmajor(1024, 1024, 1024), kGpu, s).kernel, MatmulPlan::Kernel::warp) << "64 tiles";
  EXPECT_NE(plan_matmul(kmajor(2048, 2048, 1024), kLlvmpipe, s).kernel, MatmulPlan::Kernel::warp);
  MatmulProblem row = problem(2048, 2048, 1024);
  row.b_quads = 1;
  EXPECT_EQ(plan_matmul(row, kGpu, s).kernel, MatmulPlan::Kernel::warp) << "row-major B, whole tiles";
  EXPECT_EQ(plan_matmul(problem(4096, 4096, 4096), kGpu, s).kernel, MatmulPlan::Kernel::warp);
  EXPECT_EQ(plan_matmul(problem(4096, 4096, 4096), kGpu, s).splits, 1);
  EXPECT_FALSE(plan_matmul(problem(4096, 4096, 4096), kGpu, s).warp_edge);
  EXPECT_EQ(plan_matmul(problem(1024, 1024, 1024, true, 4), kGpu, s).kernel, MatmulPlan::Kernel::warp) << "batch";
  EXPECT_EQ(plan_matmul(problem(2048, 2048, 1020), kGpu, s).kernel, MatmulPlan::Kernel::tile64) << "K off 8";
  EXPECT_EQ(plan_matmul(problem(2048, 2176, 1024), kGpu, s).kernel, MatmulPlan::Kernel::warp);
  EXPECT_EQ(plan_matmul(problem(2048, 2112, 1024), kGpu, s).kernel, MatmulPlan::Kernel::tile64) << "N off 128";
  // Batched with edges, every side long enough (the recognizer's batched 1x1 convolutions: M, K >= 64,
  // N >= 512): warp; with A read along K (the convolutions' weights) in 64-row tiles where M <= 64 or the
  // 128 x 128 tiles are fewer than kWarpBatchedMin128Tiles.
  EXPECT_EQ(plan_matmul(problem(240, 2496, 240, true, 16), kGpu, s).kernel, MatmulPlan::Kernel::warp);
  EXPECT_TRUE(plan_matmul(problem(240, 2496, 240, true, 16), kGpu, s).warp_edge);
  EXPECT_EQ(plan_matmul(problem(480, 1248, 480, true, 16), kGpu, s).kernel, MatmulPlan::Kernel::warp);
  auto conv1x1 = [](std::int64_t O, std::int64_t HW, std::int64_t C, std::int64_t N) {
    MatmulProblem q = problem(O, HW, C, true, N);
    q.a_quads = 1, q.b_quads = 1;  // [O, C] read along K, each image's [C, H*W] along N
    return q;
  };
  // B row-major (the recognizer's): 64 x 128 x 8 tiles with a warp as 16 x 2 invocations (lanes off), but
  // 128 x 128 x 16 with 8 x 4 lanes from M = kWarpRecWideM over at least kWarpBatchedMin128Tiles of them.
  for (auto [O, HW, C, rows] : std::vector<std::array<std::int64_t, 4>>{{240, 2496, 240, 64},   // M < 384
                                                                        {480, 1248, 480, 128},  // 640 tiles
                                                                        {384, 1248, 240, 128},  // 480 (3 x 10 x 16)
                                                                        {480, 624, 480, 64},    // 320
                                                                        {480, 2064, 480, 128},  // 612 (batch 9)
                                                                        {240, 4128, 240, 64},   // batch 9
                                                                        {64, 9984, 64, 64},     // M <= 64
                                                                        {240, 4992, 64, 64},    // 1248
                                                                        {128, 4992, 64, 64},    // whole 64 x 128
                                                                        {128, 8256, 128, 64},   // batch 9
                                                                        {68, 516, 64, 64}}) {   // edges
    const std::int64_t batch = O == 68 ? 96 : HW == 2064 || HW == 4128 || HW == 8256 ? 9 : O == 384 ? 22 : 16;
    const MatmulPlan q = plan_matmul(conv1x1(O, HW, C, batch), kGpu, s);
    EXPECT_EQ(q.kernel, MatmulPlan::Kernel::warp) << O << " x " << HW << " x " << C;
    EXPECT_EQ(q.tile_m, rows) << O << " x " << HW << " x " << C;
    EXPECT_EQ(q.tile_n, 128) << O << " x " << HW << " x " << C;
    EXPECT_EQ(q.warp_bk, rows == 128 ? 16 : 8) << O << " x " << HW << " x " << C;
    EXPECT_EQ(q.warp_lanes, rows == 128) << O << " x " << HW << " x " << C;
    EXPECT_TRUE(q.warp_shk) << O << " x " << HW << " x " << C;
    EXPECT_EQ(q.groups_y, static_cast<std::uint64_t>((O + rows - 1) / rows));
    EXPECT_EQ(q.local_x, static_cast<std::uint32_t>(rows * 128 / 64));
  }
  // 384 x 1248 x 240 in 16 images: 3 x 10 x 16 = 480 tiles of 128 x 128, fewer than kWarpBatchedMin128Tiles.
  EXPECT_EQ(plan_matmul(conv1x1(384, 1248, 240, 16), kGpu, s).tile_m, 64);
  // Not the recognizer's: B K-major, or the result in column groups (conv2d's NCHW epilogue), keep 8 x 4 lanes.
  {
    MatmulProblem q = conv1x1(240, 2496, 240, 16);
    q.split_columns = true;
    EXPECT_TRUE(plan_matmul(q, kGpu, s).warp_lanes);
    EXPECT_EQ(plan_matmul(q, kGpu, s).tile_m, 128);
  }
  EXPECT_EQ(plan_matmul(problem(480, 624, 480, true, 16), kGpu, s).tile_m, 128) << "A not read along K";
  EXPECT_NE(plan_matmul(conv1x1(480, 508, 480, 16), kGpu, s).kernel, MatmulPlan::Kernel::warp) << "N < 512";
  EXPECT_NE(plan_matmul(conv1x1(60, 9984, 64, 16), kGpu, s).kernel, MatmulPlan::Kernel::warp) << "M < 64";
  EXPECT_NE(plan_matmul(conv1x1(64, 9984, 60, 16), kGpu, s).kernel, MatmulPlan::Kernel::warp) << "K < 64";
  EXPECT_NE(plan_matmul(conv1x1(64, 512, 64, 16), kGpu, s).kernel, MatmulPlan::Kernel::warp) << "64 tiles";
  EXPECT_NE(plan_matmul(problem(240, 2496, 240), kGpu, s).kernel, MatmulPlan::Kernel::warp) << "one product";
  EXPECT_NE(plan_matmul(problem(240, 2496, 240, true, 2), kGpu, s).kernel, MatmulPlan::Kernel::warp) << "80 tiles";
  EXPECT_NE(plan_matmul(problem(240, 2496, 240, true, 16), kLlvmpipe, s).kernel, MatmulPlan::Kernel::warp);
  MatmulProblem half = kmajor(2048, 2048, 1024);
  half.precision = Precision::f16_allowed;
  EXPECT_NE(plan_matmul(half, DeviceTraits{false, 0, true}, s).kernel, MatmulPlan::Kernel::warp);
  Settings gpu;
  gpu.matmul_kernel = MatmulKernelSetting::gpu;
  EXPECT_EQ(plan_matmul(kmajor(2048, 2048, 1024), kLlvmpipe, gpu).kernel, MatmulPlan::Kernel::warp)
      << "GLTENSOR_MATMUL_KERNEL=gpu";
}

// The warp kernel's tiles (issue 21, mm72): K-major operands kept K-major in shared memory (warp_shk,
// 8 x 8 blocks). A read along K with B row-major: whole 64 x 128 x 8 tiles, chosen on GPUs also over
// fewer than kWarpMinTiles 128 x 128 tiles (at least kWarpMinShkTiles of 64 x 128, K >= 512), K in two
// chunks over at most kWarpSplitTiles of them (K >= 1024). B K-major: 128 x 128 x 16 tiles over at
// least kWarpMinKmajorTiles (8-K tiles where 33 KiB of shared memory do not fit: llvmpipe's 32 KiB),
// else whole 64 x 128 x 8 tiles (kWarpMinShkTiles, K >= 1024). A read along M: 128 x 128 x 8.
TEST(PlanMatmul, WarpTilesKeepOperandsKMajor) {
  const Settings s;
  auto shape = [](std::int64_t M, std::int64_t N, std::int64_t K, int aq, int bq) {
    MatmulProblem p = problem(M, N, K);
    p.a_quads = aq, p.b_quads = bq, p.b_kmajor = bq == 2;
    return p;
  };
  MatmulPlan p = plan_matmul(shape(4096, 4096, 4096, 1, 1), kGpu, s);
  EXPECT_EQ(p.kernel, MatmulPlan::Kernel::warp);
  EXPECT_EQ(p.tile_m, 64);
  EXPECT_EQ(p.tile_n, 128);
  EXPECT_EQ(p.warp_bk, 8);
  EXPECT_EQ(p.warp_tn, 8);
  EXPECT_TRUE(p.warp_shk);
  EXPECT_EQ(p.local_x, 128u);
  EXPECT_EQ(p.groups_x, 32u);
  EXPECT_EQ(p.groups_y, 64u);
  EXPECT_EQ(p.splits, 1) << "2048 tiles";
  EXPECT_FALSE(p.warp_edge);
  p = plan_matmul(shape(2048, 2048, 2048, 1, 1), kGpu, s);  // 512 tiles: K in two chunks
  EXPECT_EQ(p.tile_m, 64);
  EXPECT_EQ(p.splits, 2);
  EXPECT_EQ(p.kchunk, 1024);
  EXPECT_EQ(p.groups_z, 2u);
  EXPECT_FALSE(p.warp_edge);
  p = plan_matmul(shape(256, 4096, 4096, 1, 1), kGpu, s);  // 128 tiles
  EXPECT_EQ(p.kernel, MatmulPlan::Kernel::warp);
  EXPECT_EQ(p.splits, 2);
  p = plan_matmul(shape(1024, 1024, 512, 1, 1), kGpu, s);
  EXPECT_EQ(p.kernel, MatmulPlan::Kernel::warp);
  EXPECT_EQ(p.splits, 1) << "K < 1024";
  EXPECT_NE(plan_matmul(shape(1024, 1024, 256, 1, 1), kGpu, s).kernel, MatmulPlan::Kernel::warp) << "K < 512";
  EXPECT_NE(plan_matmul(shape(512, 1024, 1024, 1, 1), kGpu, s).kernel, MatmulPlan::Kernel::warp) << "64 tiles";
  EXPECT_NE(plan_matmul(shape(1024, 1024, 1024, 1, 1), kLlvmpipe, s).kernel, MatmulPlan::Kernel::warp);
  MatmulProblem cols = shape(2048, 2048, 2048, 1, 1);
  cols.split_columns = true;
  EXPECT_EQ(plan_matmul(cols, kGpu, s).splits, 1) << "split_columns: no split-K";
  // B K-major: 16-K tiles where 33 KiB of shared memory fit, over 128 tiles of 128 x 128 and more.
  p = plan_matmul(shape(4096, 4096, 4096, 1, 2), kGpu, s);
  EXPECT_EQ(p.kernel, MatmulPlan::Kernel::warp);
  EXPECT_EQ(p.tile_m, 128);
  EXPECT_EQ(p.warp_bk, 16);
  EXPECT_TRUE(p.warp_shk);
  EXPECT_EQ(p.splits, 1);
  EXPECT_EQ(warp_shared_bytes(128, 128, 16, true, true, true), 33792);
  p = plan_matmul(shape(512, 4096, 4096, 1, 2), kGpu, s);
  EXPECT_EQ(p.kernel, MatmulPlan::Kernel::warp);
  EXPECT_EQ(p.tile_m, 128);
  EXPECT_EQ(p.warp_bk, 16);
  p = plan_matmul(shape(1024, 1024, 1024, 1, 2), kGpu, s);  // 64 tiles of 128 x 128: 64 x 128 x 8
  EXPECT_EQ(p.kernel, MatmulPlan::Kernel::warp);
  EXPECT_EQ(p.tile_m, 64);
  EXPECT_EQ(p.warp_bk, 8);
  EXPECT_EQ(p.splits, 1);
  EXPECT_NE(plan_matmul(shape(1024, 1024, 512, 1, 2), kGpu, s).kernel, MatmulPlan::Kernel::warp) << "K < 1024";
  Settings gpu;
  gpu.matmul_kernel = MatmulKernelSetting::gpu;
  EXPECT_EQ(plan_matmul(shape(4096, 4096, 4096, 1, 2), kLlvmpipe, gpu).warp_bk, 8) << "32 KiB";
  // Forced on any device: the same tiles; edges off 64 x 128 take 128 x 128 (A still kept K-major).
  Settings w;
  w.matmul_kernel = MatmulKernelSetting::warp;
  p = plan_matmul(shape(128, 256, 64, 1, 1), kLlvmpipe, w);
  EXPECT_EQ(p.tile_m, 64);
  EXPECT_TRUE(p.warp_shk);
  p = plan_matmul(shape(132, 260, 36, 1, 1), kLlvmpipe, w);
  EXPECT_EQ(p.tile_m, 128);
  EXPECT_TRUE(p.warp_edge);
  EXPECT_TRUE(p.warp_shk);
  p = plan_matmul(shape(256, 256, 64, 2, 1), kGpu, w);  // A read along M: as merged
  EXPECT_EQ(p.tile_m, 128);
  EXPECT_EQ(p.warp_bk, 8);
}

// The warp kernel is chosen only where its tile's shared memory (as matmul_warp.comp declares it)
// fits the device's: GLES 3.1 promises 16 KiB, and 128 x 128 x 8 with B kept K-major (linear's
// w.t()) takes 17 KiB. Every operand layout, tile count and K the planner's rules tell apart, on
// devices of 16, 32 and 48 KiB: a planned warp tile always fits; at 16 KiB B K-major in 128-row
// tiles is left to the other kernels, row-major B (16 KiB) and the 64-row forms (13 KiB) stay.
TEST(PlanMatmul, WarpTileWithinTheDevicesSharedMemory) {
  const Settings s;
  EXPECT_EQ(warp_shared_bytes(128, 128, 8, false, false, true), 16384);
  EXPECT_EQ(warp_shared_bytes(128, 128, 8, false, true, true), 17408);
  EXPECT_EQ(warp_shared_bytes(128, 128, 8, true, true, true), 17408);
  EXPECT_EQ(warp_shared_bytes(128, 128, 8, false, true, false), 16640);  // B transposed into padded rows
  EXPECT_EQ(warp_shared_bytes(64, 128, 8, true, true, true), 13312);
  int warps = 0;
  for (std::int64_t shared : {16384, 32768, 49152})
    for (int aq : {1, 2})
      for (int bq : {1, 2})
        for (auto [M, N, K] : std::vector<std::array<std::int64_t, 3>>{
                 {4096, 4096, 4096}, {2048, 2048, 2048}, {1024, 1024, 1024}, {1024, 1024, 512}, {256, 4096, 4096}}) {
          MatmulProblem p = problem(M, N, K);
          p.a_quads = aq, p.b_quads = bq, p.b_kmajor = bq == 2;
          const MatmulPlan plan = plan_matmul(p, DeviceTraits{false, 0, false, shared}, s);
          if (plan.kernel != MatmulPlan::Kernel::warp) continue;
          ++warps;
          EXPECT_LE(warp_shared_bytes(static_cast<int>(plan.tile_m), static_cast<int>(plan.tile_n), plan.warp_bk,
                                      aq == 1, bq == 2, plan.warp_shk),
                    shared)
              << M << " x " << N << " x " << K << ", A quads " << aq << ", B quads " << bq;
        }
  EXPECT_GT(warps, 20);
  auto kind = [&](std::int64_t M, std::int64_t N, std::int64_t K, int aq, int bq, std::int64_t shared) {
    MatmulProblem p = problem(M, N, K);
    p.a_quads = aq, p.b_quads = bq, p.b_kmajor = bq == 2;
    return plan_matmul(p, DeviceTraits{false, 0, false, shared}, s);
  };
  EXPECT_EQ(kind(4096, 4096, 4096, 2, 2, 32768).kernel, MatmulPlan::Kernel::warp);
  EXPECT_NE(kind(4096, 4096, 4096, 2, 2, 16384).kernel, MatmulPlan::Kernel::warp) << "B K-major, 128 rows: 17 KiB";
  EXPECT_NE(kind(4096, 4096, 4096, 1, 2, 16384).kernel, MatmulPlan::Kernel::warp) << "both K-major, 128 rows";
  EXPECT_EQ(kind(4096, 4096, 4096, 2, 1, 16384).kernel, MatmulPlan::Kernel::warp) << "row-major B: 16 KiB";
  const MatmulPlan rows64 = kind(4096, 4096, 4096, 1, 1, 16384);
  EXPECT_EQ(rows64.kernel, MatmulPlan::Kernel::warp);
  EXPECT_EQ(rows64.tile_m, 64);
  Settings w;
  w.matmul_kernel = MatmulKernelSetting::warp;
  MatmulProblem p = problem(4096, 4096, 4096);
  p.a_quads = 2, p.b_quads = 2, p.b_kmajor = true;
  EXPECT_EQ(plan_matmul(p, DeviceTraits{false, 0, false, 17408}, w).kernel, MatmulPlan::Kernel::warp) << "forced";
  // Forced past the device's shared memory: LimitError naming the kernel, the bytes and the limit
  // (review11: it failed at link), as for every forced kernel (matmul_shared_bytes).
  try {
    (void)plan_matmul(p, DeviceTraits{false, 0, false, 16384}, w);
    ADD_FAILURE() << "forced warp past 16 KiB planned";
  } catch (const LimitError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("warp kernel"), std::string::npos) << m;
    EXPECT_NE(m.find("17408"), std::string::npos) << m;
    EXPECT_NE(m.find("16384"), std::string::npos) << m;
    EXPECT_NE(m.find("[4096, 4096] x [4096, 4096]"), std::string::npos) << m;
  }
}

// K = 0 (zeros, then the epilogue): the REG kernel, planned or forced (the tiled and quad-load
// kernels load their first K tile before the K loop, where the range's last k wraps at K = 0);
// GEMV where it is the choice (its loads are in its K loop).
TEST(PlanMatmul, EmptyKTakesReg) {
  for (const auto& traits : {kGpu, kLlvmpipe})
    for (MatmulKernelSetting forced :
         {MatmulKernelSetting::choose, MatmulKernelSetting::gpu, MatmulKernelSetting::vec4, MatmulKernelSetting::vec4su,
          MatmulKernelSetting::tile64, MatmulKernelSetting::tile128, MatmulKernelSetting::warp}) {
      Settings s;
      s.matmul_kernel = forced;
      for (auto [M, N, batch] : std::vector<std::array<std::int64_t, 3>>{{1024, 2048, 1}, {256, 512, 4}, {67, 69, 1}}) {
        const MatmulPlan p = plan_matmul(problem(M, N, 0, true, batch), traits, s);
        EXPECT_EQ(p.kernel, MatmulPlan::Kernel::reg) << M << " x " << N << " forced " << static_cast<int>(forced);
        EXPECT_EQ(p.splits, 1);
      }
    }
  Settings s;
  MatmulProblem p = problem(4, 4096, 0);
  p.b_kmajor = true;
  EXPECT_EQ(plan_matmul(p, kGpu, s).kernel, MatmulPlan::Kernel::gemv);
  EXPECT_EQ(plan_matmul(problem(1024, 2048, 8), kGpu, s).kernel, MatmulPlan::Kernel::vec4) << "K = 8: the tiles";
}

TEST(PlanMatmul, ForcedKernelsWithinTheDevicesSharedMemory) {
  // Each forced kernel's shared memory as its GLSL declares it; planned where it fits (to the
  // byte), LimitError below (limits lowered in DeviceTraits, as the loop limits are).
  struct Case {
    MatmulKernelSetting forced;
    MatmulPlan::Kernel kernel;
    std::int64_t bytes;
  };
  using K = MatmulKernelSetting;
  using Kn = MatmulPlan::Kernel;
  for (const Case& c : {Case{K::tile64, Kn::tile64, 2 * 16 * 65 * 4}, Case{K::tile128, Kn::tile128, 8192},
                        Case{K::vec4, Kn::vec4, 12288}, Case{K::vec4s, Kn::vec4, 24576},
                        Case{K::gemv, Kn::gemv, 8 * 4 * 128 * 4}, Case{K::warp, Kn::warp, 16384}}) {
    Settings s;
    s.matmul_kernel = c.forced;
    MatmulProblem p = problem(c.forced == K::gemv ? 8 : 512, 512, 1024);
    p.b_kmajor = c.forced == K::gemv;
    const MatmulPlan plan = plan_matmul(p, DeviceTraits{false, 0, false, c.bytes}, s);
    EXPECT_EQ(plan.kernel, c.kernel) << c.bytes;
    EXPECT_EQ(matmul_shared_bytes(plan, p), c.bytes) << static_cast<int>(c.kernel);
    EXPECT_THROW((void)plan_matmul(p, DeviceTraits{false, 0, false, c.bytes - 4}, s), LimitError) << c.bytes;
  }
  // The planner's own choices fit the 16 KiB every GLES 3.1 device has.
  for (auto [M, N, K] : std::vector<std::array<std::int64_t, 3>>{{1, 4096, 4096}, {64, 64, 64}, {4096, 4096, 4096}}) {
    const MatmulPlan plan = plan_matmul(problem(M, N, K), DeviceTraits{false, 0, false, 16384}, Settings{});
    EXPECT_LE(matmul_shared_bytes(plan, problem(M, N, K)), 16384);
  }
}

TEST(PlanMatmul, TunedVariantsWithinTheDevicesSharedMemory) {
  // A tuned quad-load plan measures its K-sliced variants too, 24 KiB of shared memory for 64 x 128
  // tiles: on a device of 16 KiB (GLES 3.1's minimum) it failed at link. There it measures the
  // unsliced two only, under their own key; each variant it may run fits (limits lowered in
  // DeviceTraits, as the loop limits are).
  const MatmulProblem p = problem(1024, 2048, 512);
  for (std::int64_t limit : {std::int64_t{16384}, std::int64_t{24576 - 4}, std::int64_t{24576}, std::int64_t{49152}}) {
    const MatmulPlan plan = plan_matmul(p, DeviceTraits{false, 0, false, limit}, Settings{});
    ASSERT_EQ(plan.kernel, MatmulPlan::Kernel::vec4) << limit;
    ASSERT_TRUE(plan.tune) << limit;
    const bool sliced_fit = limit >= 24576;
    EXPECT_EQ(plan.tune_sliced, sliced_fit) << limit;
    EXPECT_EQ(matmul_variants(plan), sliced_fit ? std::vector<int>({0, 1, 2, 3}) : std::vector<int>({0, 2})) << limit;
    EXPECT_EQ(plan.tune_key, std::string("matmul_vec4/256/512/float32") + (sliced_fit ? "" : "/u")) << limit;
    for (int v : matmul_variants(plan)) {
      MatmulPlan variant = plan;
      variant.variant = v;
      EXPECT_LE(matmul_shared_bytes(variant, p), limit) << "variant " << v << " at " << limit;
    }
  }
  // The unsliced variant past the limit too (12 KiB): LimitError, as for a forced kernel.
  EXPECT_THROW((void)plan_matmul(p, DeviceTraits{false, 0, false, 12288 - 4}, Settings{}), LimitError);
}

TEST(PlanElementwise, OneElementPerInvocationAndItsLoops) {
  // The form launch_elementwise falls back to past a lowered loop limit: neither quads nor whole
  // output words; its loop trips (contiguous: 2 per operand; strided: NOPS + NDIM (1 + NOPS); OP's
  // own loop per element; a word's elements each).
  ElementwiseProblem p;
  p.contig = true, p.out_contiguous = true, p.numel = 1000;
  p.operands = {{DType::f32, 0}, {DType::f32, 0}};
  ElementwisePlan plan = plan_elementwise(p);
  EXPECT_TRUE(plan.vec4);
  p.one_element = true;
  plan = plan_elementwise(p);
  EXPECT_FALSE(plan.vec4);
  EXPECT_FALSE(plan.words);
  EXPECT_EQ(plan.count, 1000u);
  EXPECT_EQ(plan.invocations, 1000u);
  EXPECT_EQ(elementwise_element_loops(plan, DType::f32, true, 1, 2, 0), 4u);     // relu
  EXPECT_EQ(elementwise_element_loops(plan, DType::f32, false, 2, 3, 32), 43u);  // pow: 3 + 2 x 4 + 32
  p.operands = {{DType::bool_, 0}, {DType::f32, 0}, {DType::f32, 0}};
  p.one_element = false;
  plan = plan_elementwise(p);
  EXPECT_TRUE(plan.words);
  EXPECT_EQ(elementwise_element_loops(plan, DType::bool_, true, 1, 3, 0), 28u);  // 4 x (1 + 6)
  p.one_element = true;
  plan = plan_elementwise(p);
  EXPECT_FALSE(plan.words);
  EXPECT_EQ(plan.count, 1000u);
  EXPECT_EQ(elementwise_element_loops(plan, DType::bool_, true, 1, 3, 0), 6u);
}
