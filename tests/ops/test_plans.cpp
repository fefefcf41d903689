// Kernel planning as pure functions, without a GPU: plan_matmul's kernel, variants, split-K and
// loop lengths for given shapes, device traits and settings; the fused attention tiling.
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "nn/attention_plan.hpp"
#include "ops/matmul_plan.hpp"

using namespace gltensor;
using namespace gltensor::detail;

namespace {
MatmulProblem problem(std::int64_t M, std::int64_t N, std::int64_t K, bool quads = true, std::int64_t batch = 1) {
  MatmulProblem p;
  p.M = M, p.N = N, p.K = K, p.batch = batch, p.quads = quads;
  return p;
}
const DeviceTraits kGpu{false, 0}, kLlvmpipe{true, 65535};
}  // namespace

TEST(PlanMatmul, KernelChoice) {
  const Settings s;
  // Whole 64 x 128 tiles, quad-aligned operands, >= 256 tiles: the quad-load kernel.
  MatmulPlan p = plan_matmul(problem(1024, 4096, 512), kGpu, s);
  EXPECT_EQ(p.kernel, MatmulPlan::Kernel::vec4);
  EXPECT_EQ(p.groups_x, 32u);
  EXPECT_EQ(p.groups_y, 16u);
  EXPECT_TRUE(p.tune);
  EXPECT_EQ(p.tune_key, "matmul_vec4/512/512/float32");
  // Fewer tiles, or operands that are not quads: scalar 64 x 64 tiles on GPUs.
  EXPECT_EQ(plan_matmul(problem(128, 256, 64), kGpu, s).kernel, MatmulPlan::Kernel::tile64);
  EXPECT_EQ(plan_matmul(problem(1024, 4096, 512, false), kGpu, s).kernel, MatmulPlan::Kernel::tile64);
  // llvmpipe: the REG kernel for every shape.
  for (auto [m, n, k] : std::vector<std::array<std::int64_t, 3>>{{1024, 4096, 512}, {100, 20, 30}, {64, 25088, 288}})
    EXPECT_EQ(plan_matmul(problem(m, n, k), kLlvmpipe, s).kernel, MatmulPlan::Kernel::reg) << m << "x" << n;
  // Ragged sizes never take the quad-load kernel.
  EXPECT_EQ(plan_matmul(problem(1000, 4096, 512), kGpu, s).kernel, MatmulPlan::Kernel::tile64);
}

TEST(PlanMatmul, ForcedVariants) {
  Settings s;
  s.matmul_kernel = "vec4su";
  MatmulPlan p = plan_matmul(problem(128, 256, 64), kGpu, s);  // 4 tiles, forced
  EXPECT_EQ(p.kernel, MatmulPlan::Kernel::vec4);
  EXPECT_EQ(p.variant, 3);
  EXPECT_EQ(p.local_x, 256u);
  EXPECT_FALSE(p.tune);
  s.matmul_kernel = "vec4s";
  EXPECT_EQ(plan_matmul(problem(128, 256, 72), kGpu, s).variant, 0) << "K = 72 does not split into 16-K tiles";
  s.matmul_kernel = "tile128";
  EXPECT_EQ(plan_matmul(problem(1024, 4096, 512), kGpu, s).kernel, MatmulPlan::Kernel::tile128);
  s.matmul_kernel = "vec4";
  EXPECT_EQ(plan_matmul(problem(1024, 4096, 512, false), kGpu, s).kernel, MatmulPlan::Kernel::tile64)
      << "the quad-load kernel only where it applies";
  // The scalar tiles or the quad-load kernel on llvmpipe, and REG on a GPU, when forced.
  s.matmul_kernel = "tile64";
  EXPECT_EQ(plan_matmul(problem(1024, 4096, 512), kLlvmpipe, s).kernel, MatmulPlan::Kernel::tile64);
  s.matmul_kernel = "vec4";
  EXPECT_EQ(plan_matmul(problem(1024, 4096, 512), kLlvmpipe, s).kernel, MatmulPlan::Kernel::vec4);
  s.matmul_kernel = "reg";
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
  s.matmul_kernel = "tile64";
  for (std::int64_t K : {50000, 93312, 65535 * 4 + 7}) {
    for (bool quads : {false, true}) {
      if (K == 65535 * 4 + 7) s.matmul_kernel.clear();
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
  const DeviceTraits tiny{false, 2000};
  const MatmulPlan t = plan_matmul(problem(70, 30, 5000, false), tiny, s);
  EXPECT_LE(t.loop_iterations, 2000u);
  EXPECT_GE(t.splits * t.kchunk, 5000);
}

// Split-K for parallelism: few output tiles over a long K (conv2d's weight gradient).
TEST(PlanMatmul, SplitKForFewTiles) {
  const Settings s;
  const MatmulPlan p = plan_matmul(problem(64, 288, 100352, false), kGpu, s);  // 5 tiles of 64 x 64
  EXPECT_GE(p.splits * 5, 64) << "enough workgroups to fill a GPU";
  EXPECT_GE(p.kchunk, 256);
  EXPECT_EQ(plan_matmul(problem(64, 288, 512, false), kGpu, s).splits, 1) << "short K";
  // Batched: the batch counts as tiles; z covers batch x splits.
  const MatmulPlan b = plan_matmul(problem(64, 64, 8192, false, 3), kGpu, s);
  EXPECT_EQ(b.groups_z, static_cast<std::uint64_t>(3 * b.splits));
}

TEST(PlanMatmul, SplitColumnsOnlyWithoutSplitK) {
  const Settings s;
  MatmulProblem p = problem(64, 128 * 784, 576);  // conv2d forward: [O, C*9] @ [C*9, N*OH*OW]
  p.split_columns = true;
  EXPECT_TRUE(plan_matmul(p, kGpu, s).split_columns);
  p.K = 1 << 20;
  EXPECT_FALSE(plan_matmul(p, kLlvmpipe, s).split_columns) << "split-K writes partial products";
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
