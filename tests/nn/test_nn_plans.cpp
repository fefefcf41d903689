// conv2d's, pooling's and the recurrent layers' kernel choices as pure functions, without a GPU:
// plan_conv2d's paths (direct, depthwise, GEMM in its pointwise/im2col/grouped forms, GEMM per
// piece) forward and backward, the pieces of the output positions, plan_pool2d's direct and
// separable passes, plan_rnn_sequence's time loop (sequence kernel or per-step path, chunks), and
// plan_stft_mel's one-dispatch log-mel front end (its forms, refusals).
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "nn/conv_plan.hpp"
#include "nn/imatmul_plan.hpp"
#include "nn/pool_plan.hpp"
#include "nn/rnn_plan.hpp"
#include "nn/stft_mel.hpp"
#include "runtime/shader_sources.hpp"

using namespace gltensor;
using namespace gltensor::detail;

namespace {
const ConvDevice kGpu{false, 0, std::int64_t{1} << 31}, kLlvmpipe{true, 65535, std::int64_t{128} << 20};

// x [N, C*groups, H, W] with a KH x KW filter, stride 1, no padding, O output channels.
Conv2dProblem conv(std::int64_t N, std::int64_t C, std::int64_t H, std::int64_t W, std::int64_t K, std::int64_t O,
                   std::int64_t groups = 1) {
  Conv2dProblem p;
  p.g.N = N, p.g.C = C, p.g.H = H, p.g.W = W, p.g.KH = K, p.g.KW = K, p.g.OH = H - K + 1, p.g.OW = W - K + 1;
  p.g.o.groups = groups;
  p.O = O;
  p.x_f32_contiguous = p.x_rows_contiguous = true;
  return p;
}

// Every output position of g in exactly one piece, each piece at most `max` positions.
void expect_cover(const ConvGeometry& g, const std::vector<ConvPiece>& pieces, std::int64_t max) {
  std::vector<int> seen(static_cast<std::size_t>(g.N * g.OH * g.OW), 0);
  for (const ConvPiece& p : pieces) {
    EXPECT_LE(p.nn * p.noh * p.now, std::max<std::int64_t>(max, 1));
    for (std::int64_t n = p.n0; n < p.n0 + p.nn; ++n)
      for (std::int64_t r = p.oh0; r < p.oh0 + p.noh; ++r)
        for (std::int64_t c = p.ow0; c < p.ow0 + p.now; ++c)
          ++seen[static_cast<std::size_t>((n * g.OH + r) * g.OW + c)];
  }
  for (std::size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << "position " << i;
}
}  // namespace

// Small filters (C * KH * KW <= 32) run the direct kernel; larger ones im2col + GEMM; forced
// paths where they apply.
TEST(PlanConv2d, DirectOrGemm) {
  Settings s;
  EXPECT_EQ(plan_conv2d(conv(2, 3, 32, 32, 3, 8), kGpu, s).path, Conv2dPlan::Path::direct);  // K = 27
  EXPECT_EQ(plan_conv2d(conv(2, 4, 32, 32, 3, 8), kGpu, s).path, Conv2dPlan::Path::gemm);    // K = 36
  const Conv2dPlan gemm = plan_conv2d(conv(2, 64, 32, 32, 3, 8), kLlvmpipe, s);
  EXPECT_EQ(gemm.path, Conv2dPlan::Path::gemm);
  EXPECT_EQ(gemm.gemm_form, ConvGemmForm::im2col);
  EXPECT_TRUE(gemm.pieces.empty());
  s.conv = ConvSetting::direct;
  EXPECT_EQ(plan_conv2d(conv(2, 64, 32, 32, 3, 8), kLlvmpipe, s).path, Conv2dPlan::Path::direct);
  s.conv = ConvSetting::im2col;
  EXPECT_EQ(plan_conv2d(conv(2, 3, 32, 32, 3, 8), kGpu, s).path, Conv2dPlan::Path::gemm);
}

// GPUs run large filters of few output channels per group (Og <= 32, a multiple of 4) in the
// direct kernel's tiles form, without a gradient; else, and on software rasterizers, im2col + GEMM.
TEST(PlanConv2d, TilesFormOnGpus) {
  Settings s;
  const Conv2dPlan t = plan_conv2d(conv(1, 96, 162, 162, 3, 24), kGpu, s);
  EXPECT_EQ(t.path, Conv2dPlan::Path::direct);
  EXPECT_TRUE(t.direct.tiles);
  EXPECT_EQ(plan_conv2d(conv(1, 96, 162, 162, 3, 32), kGpu, s).path, Conv2dPlan::Path::direct);
  EXPECT_EQ(plan_conv2d(conv(1, 96, 162, 162, 3, 64), kGpu, s).path, Conv2dPlan::Path::gemm) << "Og > 32";
  EXPECT_EQ(plan_conv2d(conv(1, 96, 162, 162, 3, 18), kGpu, s).path, Conv2dPlan::Path::gemm) << "OPI 6";
  EXPECT_EQ(plan_conv2d(conv(1, 96, 162, 162, 3, 24), kLlvmpipe, s).path, Conv2dPlan::Path::gemm);
  EXPECT_EQ(plan_conv2d(conv(1, 512, 160, 160, 1, 24), kGpu, s).path, Conv2dPlan::Path::gemm) << "1 x 1";
  Conv2dProblem g = conv(1, 96, 162, 162, 3, 24);
  g.grad = true;
  EXPECT_EQ(plan_conv2d(g, kGpu, s).path, Conv2dPlan::Path::gemm) << "a gradient recorded";
  s.conv = ConvSetting::im2col;
  EXPECT_EQ(plan_conv2d(conv(1, 96, 162, 162, 3, 24), kGpu, s).path, Conv2dPlan::Path::gemm) << "forced";
}

// The direct kernel only where its loop fits the device's limit, even when forced: C = 4096
// channels of a 3 x 3 filter loop far past 65535 on llvmpipe.
TEST(PlanConv2d, DirectOnlyWhereItsLoopFits) {
  Settings s;
  s.conv = ConvSetting::direct;
  const Conv2dPlan p = plan_conv2d(conv(1, 4096, 8, 8, 3, 8), kLlvmpipe, s);
  EXPECT_GT(p.direct.loop_iterations, 65535u);
  EXPECT_EQ(p.path, Conv2dPlan::Path::gemm);
  EXPECT_EQ(plan_conv2d(conv(1, 4096, 8, 8, 3, 8), kGpu, s).path, Conv2dPlan::Path::direct) << "no loop limit";
}

// Columns past the SSBO limit: the direct kernel where its loop fits (whatever K), else the GEMM
// per piece of the output positions.
TEST(PlanConv2d, ColumnsPastTheSsboLimit) {
  Settings s;
  // K = 64 * 9 = 576 rows of 4-byte floats over 2 * 30 * 30 positions: 4.1 MB > 1 MiB.
  const ConvDevice small{true, 65535, 1 << 20};
  Conv2dProblem p = conv(2, 64, 32, 32, 3, 8);
  EXPECT_EQ(plan_conv2d(p, small, s).path, Conv2dPlan::Path::direct);
  s.conv = ConvSetting::im2col;
  const Conv2dPlan g = plan_conv2d(p, small, s);
  ASSERT_EQ(g.path, Conv2dPlan::Path::gemm_pieces);
  // (1 << 20) / (4 * 576) = 455 positions a piece: rows of 30, 15 rows a piece.
  EXPECT_EQ(g.pieces.size(), 4u);
  expect_cover(p.g, g.pieces, 455);
  for (const ConvPiece& piece : g.pieces) EXPECT_EQ(piece.now, 30);
}

// One input and one output channel per group without a gradient: the taps as shifted views;
// with a gradient, the grouped GEMM.
TEST(PlanConv2d, DepthwiseAndGrouped) {
  Settings s;
  s.conv = ConvSetting::im2col;
  Conv2dProblem p = conv(2, 1, 16, 16, 3, 32, 32);
  EXPECT_EQ(plan_conv2d(p, kGpu, s).path, Conv2dPlan::Path::depthwise);
  p.grad = true;
  const Conv2dPlan g = plan_conv2d(p, kGpu, s);
  EXPECT_EQ(g.path, Conv2dPlan::Path::gemm);
  EXPECT_EQ(g.gemm_form, ConvGemmForm::grouped);
  // Two channels per group: the grouped GEMM.
  EXPECT_EQ(plan_conv2d(conv(2, 2, 16, 16, 3, 32, 16), kGpu, s).gemm_form, ConvGemmForm::grouped);
}

// A 1x1, stride-1, unpadded conv of one contiguous f32 image is the matmul of its [C, H*W] view;
// of several images without gradient, a batched matmul of those views.
TEST(PlanConv2d, Pointwise) {
  const Settings s;
  Conv2dProblem p = conv(1, 64, 16, 16, 1, 32);
  EXPECT_EQ(plan_conv2d(p, kGpu, s).path, Conv2dPlan::Path::gemm);
  EXPECT_EQ(plan_conv2d(p, kGpu, s).gemm_form, ConvGemmForm::pointwise);
  p.g.N = 2;
  EXPECT_EQ(plan_conv2d(p, kGpu, s).gemm_form, ConvGemmForm::pointwise_batched) << "two images";
  Settings im2col;
  im2col.conv_pointwise_batched = false;
  EXPECT_EQ(plan_conv2d(p, kGpu, im2col).gemm_form, ConvGemmForm::im2col) << "GLTENSOR_CONV_POINTWISE=im2col";
  p.grad = true;
  EXPECT_EQ(plan_conv2d(p, kGpu, s).gemm_form, ConvGemmForm::im2col) << "two images, a gradient recorded";
  p.grad = false;
  p.g.N = 1, p.x_f32_contiguous = false;
  EXPECT_EQ(plan_conv2d(p, kGpu, s).gemm_form, ConvGemmForm::im2col) << "a strided or f16 image";
  p.x_f32_contiguous = true, p.g.o.stride = {2, 2}, p.g.OH = p.g.OW = 8;
  EXPECT_EQ(plan_conv2d(p, kGpu, s).gemm_form, ConvGemmForm::im2col) << "stride 2";
  p.g.o.stride = {1, 1}, p.g.o.padding = {1, 0, 0, 0}, p.g.OH = 17;
  EXPECT_EQ(plan_conv2d(p, kGpu, s).gemm_form, ConvGemmForm::im2col) << "padded";
}

// The weight gradient from the forward's columns where the GEMM kept them, else from columns
// made again (in pieces under the SSBO limit); none for a frozen weight.
TEST(PlanConv2d, Backward) {
  Settings s;
  Conv2dProblem p = conv(2, 64, 32, 32, 3, 8);
  p.grad = true;
  EXPECT_EQ(plan_conv2d(p, kGpu, s).weight_grad, Conv2dPlan::WeightGrad::none);
  p.need_w = true;
  EXPECT_EQ(plan_conv2d(p, kGpu, s).weight_grad, Conv2dPlan::WeightGrad::saved_columns);
  const Conv2dPlan d = plan_conv2d(conv(2, 3, 32, 32, 3, 8), kGpu, s);
  EXPECT_EQ(d.path, Conv2dPlan::Path::direct);
  Conv2dProblem small = conv(2, 3, 32, 32, 3, 8);
  small.grad = small.need_w = true;
  const Conv2dPlan ds = plan_conv2d(small, kGpu, s);
  EXPECT_EQ(ds.weight_grad, Conv2dPlan::WeightGrad::im2col);
  EXPECT_EQ(ds.weight_pieces.size(), 1u);
  // Pieces of one group's columns (K = 576 rows): (1 << 20) / (4 * 576) = 455 positions.
  s.conv = ConvSetting::im2col;
  const Conv2dPlan pieces = plan_conv2d(p, ConvDevice{true, 65535, 1 << 20}, s);
  EXPECT_EQ(pieces.path, Conv2dPlan::Path::gemm_pieces);
  EXPECT_EQ(pieces.weight_grad, Conv2dPlan::WeightGrad::im2col);
  expect_cover(p.g, pieces.weight_pieces, 455);
  EXPECT_GT(pieces.weight_pieces.size(), 1u);
}

// All positions, whole images, rows of one image, parts of one row.
TEST(PlanConv2d, Pieces) {
  ConvGeometry g{2, 1, 4, 5, 1, 1, 4, 5, {}};
  EXPECT_EQ(plan_pieces(g, 40).size(), 1u);
  for (std::int64_t max : {40, 39, 20, 10, 5, 3, 1, 0}) {
    SCOPED_TRACE(max);
    expect_cover(g, plan_pieces(g, max), max);
  }
  EXPECT_EQ(plan_pieces(g, 20).size(), 2u);           // whole images
  EXPECT_EQ(plan_pieces(g, 10).size(), 4u);           // two rows a piece
  EXPECT_EQ(plan_pieces(g, 3).size(), 2u * 4u * 2u);  // 3 + 2 columns of every row
  // col2im's products [positions, C*KH*KW]: (4 * 25) / (4 * 9 * 3) positions, 1 row of 5 is 5 > 0.
  ConvGeometry c{1, 3, 12, 12, 3, 3, 10, 10, {}};
  expect_cover(c, plan_col2im_pieces(c, 4 * 27 * 10), 10);
  EXPECT_EQ(plan_col2im_pieces(c, 4 * 27 * 10).size(), 10u);
}

// pool.comp where a window's loops fit, else a W pass and an H pass in dispatches of parts of
// the window.
TEST(PlanPool2d, DirectOrSeparable) {
  PoolGeom g{1, 1, 64, 64, 62, 62, {}};
  g.o.kernel = {3, 3}, g.o.stride = {1, 1};
  Pool2dPlan p = plan_pool2d(PoolMode::max, g, 65535);
  EXPECT_EQ(p.path, Pool2dPlan::Path::direct);
  EXPECT_EQ(p.loop_iterations, 3u * (3u + 2u) + 1u);
  p = plan_pool2d(PoolMode::avg, g, 10);
  ASSERT_EQ(p.path, Pool2dPlan::Path::separable);
  ASSERT_EQ(p.w_pass.size(), 1u);
  EXPECT_EQ(p.w_pass[0].j0, 0);
  EXPECT_EQ(p.w_pass[0].j1, 3);
  EXPECT_EQ(p.w_pass[0].loop_iterations, 4u);
  // A 100-wide window under a limit of 10: offsets in dispatches of 8, every one once.
  g.o.kernel = {1, 100}, g.W = 100, g.OW = 1;
  p = plan_pool2d(PoolMode::max, g, 10);
  ASSERT_EQ(p.path, Pool2dPlan::Path::separable);
  EXPECT_EQ(p.w_pass.size(), 13u);
  std::int64_t next = 0;
  for (const PoolPassDispatch& d : p.w_pass) {
    EXPECT_EQ(d.j0, next);
    EXPECT_LE(d.loop_iterations, 10u);
    EXPECT_EQ(d.loop_iterations, static_cast<std::uint64_t>(d.j1 - d.j0 + 1));
    next = d.j1;
  }
  EXPECT_EQ(next, 100);
  EXPECT_EQ(plan_pool2d(PoolMode::max, g, 0).path, Pool2dPlan::Path::direct) << "no loop limit";
}

// Adaptive windows: ceil(I / O) + 1 positions at most; the avg gradient gathers the windows
// covering one position: ceil(k / s) + 1, adaptive ceil(O / I) + 2.
TEST(PlanPool2d, AdaptiveAndGradientPasses) {
  PoolGeom g{1, 1, 10, 1000, 3, 1, {}};
  EXPECT_EQ(pool_direct_loops(PoolMode::adaptive, false, g), (4u + 1u) * (1000u + 2u + 1u) + 1u);
  EXPECT_EQ(pool_direct_loops(PoolMode::max, true, g), 1u);
  const PoolAxis a{10, 3, 0, 0, 0, 1};
  EXPECT_EQ(plan_pool_pass(PoolPass::sum, PoolMode::adaptive, a, 0).at(0).j1, 5);
  EXPECT_EQ(plan_pool_pass(PoolPass::grad, PoolMode::adaptive, a, 0).at(0).j1, 3);
  const PoolAxis k{64, 31, 5, 2, 0, 1};
  EXPECT_EQ(plan_pool_pass(PoolPass::grad, PoolMode::avg, k, 0).at(0).j1, 4);
}

// The sequence kernel up to hidden 256 with one group of units per invocation where the device
// allows (whole groups of 32 invocations; quads of 4 units on software rasterizers, or forced),
// the whole sequence in one dispatch without a loop limit, chunks within it (llvmpipe's 65535),
// and the per-step path past hidden 256, with too little shared memory, a limit below one step,
// or GLTENSOR_RNN=steps.
// The per-step path's fused kernel: on GPUs up to batch 8, one phase (not GRU without
// linear_before_reset); on software rasterizers only with GLTENSOR_RNN=steps.
TEST(PlanRnnSequence, FusedStepKernel) {
  using S = RnnSetting;
  const RnnSeqDevice gpu{1024, 49152, UINT64_MAX, false, S::choose}, llvmpipe{1024, 32768, 65535, true, S::choose};
  RnnSeqDevice llvmpipe_steps = llvmpipe;
  llvmpipe_steps.setting = S::steps;
  EXPECT_TRUE(rnn_fused_steps({256, 512, 1, 4, 2, 1}, gpu));
  EXPECT_TRUE(rnn_fused_steps({256, 512, 1, 4, 2, kRnnFusedMaxBatch}, gpu));
  EXPECT_FALSE(rnn_fused_steps({256, 512, 1, 4, 2, kRnnFusedMaxBatch + 1}, gpu));
  EXPECT_FALSE(rnn_fused_steps({256, 512, 2, 3, 2, 1}, gpu));  // GRU without linear_before_reset
  EXPECT_FALSE(rnn_fused_steps({256, 512, 1, 4, 2, 1}, llvmpipe));
  EXPECT_TRUE(rnn_fused_steps({256, 512, 1, 4, 2, 1}, llvmpipe_steps));
}

// R in registers (rnn_seq_regs.comp): GPUs by default up to hidden 128, any device with GLTENSOR_RNN=units,
// with one barrier a step: KS invocations per unit (G H / KS <= 128 floats of R each, KS halved until it
// divides H and the invocations fit), quads of columns where 4 divides H / KS, all in registers up to 512
// invocations, else 32 floats; subgroup shuffles where KS lanes fit a subgroup; the chunk within the loop limit.
TEST(PlanRnnSequence, RegistersKernel) {
  using S = RnnSetting;
  const RnnSeqDevice gpu{1024, 49152, UINT64_MAX, false, S::choose}, llvmpipe{1024, 32768, 65535, true, S::choose};
  RnnSeqDevice gpu_sg = gpu;
  gpu_sg.shuffle_lanes = 32, gpu_sg.multiprocessors = 132;
  RnnSeqPlan p = plan_rnn_sequence({64, 64, 1, 4, 1, 1}, gpu);  // LSTM hidden 64: 2 parts of 32 columns
  EXPECT_TRUE(p.sequence && p.regs);
  EXPECT_EQ(p.local, 128u);
  EXPECT_EQ(p.parts, 2);
  EXPECT_EQ(p.width, 4);
  EXPECT_EQ(p.reg_cols, 32);
  EXPECT_FALSE(p.subgroup);
  EXPECT_EQ(p.chunk, 64);
  EXPECT_TRUE(plan_rnn_sequence({64, 64, 1, 4, 1, 1}, gpu_sg).subgroup);
  EXPECT_EQ(plan_rnn_sequence({64, 37, 1, 3, 2, 1}, gpu).local, 64u);  // GRU hidden 37: one part (37 is odd)
  EXPECT_FALSE(plan_rnn_sequence({64, 37, 2, 3, 2, 1}, gpu).regs);     // GRU without linear_before_reset
  // LSTM hidden 128: 512 invocations, 4 parts of 32 columns, all in registers
  p = plan_rnn_sequence({256, 128, 1, 4, 1, 1}, gpu_sg);
  EXPECT_TRUE(p.regs && p.subgroup);
  EXPECT_EQ(p.local, 512u);
  EXPECT_EQ(p.parts, 4);
  EXPECT_EQ(p.width, 4);
  EXPECT_EQ(p.reg_cols, 32);
  RnnSeqDevice ks8 = gpu_sg;  // 8 parts: 1024 invocations, 8 of 16 columns in registers
  ks8.force_parts = 8;
  p = plan_rnn_sequence({256, 128, 1, 4, 1, 1}, ks8);
  EXPECT_EQ(p.local, 1024u);
  EXPECT_EQ(p.reg_cols, 8);
  const RnnSeqDevice gpu_units{1024, 49152, UINT64_MAX, false, S::units};
  p = plan_rnn_sequence({256, 100, 1, 3, 1, 1}, gpu_units);  // GRU hidden 100: 4 parts of 25 scalar columns
  EXPECT_TRUE(p.regs);
  EXPECT_EQ(p.local, 416u);
  EXPECT_EQ(p.width, 1);
  EXPECT_EQ(p.reg_cols, 25);
  p = plan_rnn_sequence({256, 100, 1, 1, 1, 1}, gpu_units);  // RNN hidden 100: one part, all 100 in registers
  EXPECT_EQ(p.local, 128u);
  EXPECT_EQ(p.reg_cols, 100);
  EXPECT_FALSE(plan_rnn_sequence({64, 130, 1, 1, 1, 1}, gpu_units).regs);  // past hidden 128
  p = plan_rnn_sequence({64, 127, 1, 1, 1, 1}, gpu_units);                 // one part of 127, all in registers
  EXPECT_TRUE(p.regs);
  EXPECT_EQ(p.parts, 1);
  EXPECT_EQ(p.reg_cols, 127);
  // 64 invocations at most: LSTM hidden 64 in one part, 32 of 64 columns in registers
  p = plan_rnn_sequence({64, 64, 1, 4, 1, 1}, RnnSeqDevice{64, 49152, UINT64_MAX, false, S::choose});
  EXPECT_EQ(p.parts, 1);
  EXPECT_EQ(p.reg_cols, 32);
  // GLTENSOR_RNN_REGS: forced parts and register columns (rounded down to quads); invalid parts: no regs
  RnnSeqDevice forced = gpu;
  forced.force_parts = 2, forced.force_cols = 0;
  p = plan_rnn_sequence({64, 64, 1, 4, 1, 1}, forced);
  EXPECT_EQ(p.parts, 2);
  EXPECT_EQ(p.reg_cols, 0);
  forced.force_parts = 16, forced.force_cols = 7;
  EXPECT_EQ(plan_rnn_sequence({64, 64, 1, 4, 1, 1}, forced).reg_cols, 4);
  forced.force_parts = 3;
  EXPECT_FALSE(plan_rnn_sequence({64, 64, 1, 4, 1, 1}, forced).regs);
  // without shuffles a vec4 a invocation in shared memory: 1024 of them past GLES's 16 KiB
  RnnSeqDevice gles = RnnSeqDevice{1024, 16384, UINT64_MAX, false, S::choose};
  EXPECT_TRUE(plan_rnn_sequence({64, 128, 1, 4, 1, 1}, gles).regs);  // 512 invocations: 9 KiB
  gles.force_parts = 8;
  EXPECT_FALSE(plan_rnn_sequence({64, 128, 1, 4, 1, 1}, gles).regs);
  EXPECT_FALSE(plan_rnn_sequence({64, 16, 1, 4, 1, 1}, llvmpipe).regs);  // quads there
  // GRID past hidden 128 on GPUs: NG workgroups of at most 32768 floats of R, D B NG <= 16 in all
  p = plan_rnn_sequence({256, 256, 1, 4, 2, 1}, gpu_sg);  // LSTM hidden 256, 2 directions: 8 x 32 units each
  EXPECT_TRUE(p.regs);
  EXPECT_EQ(p.grid, 8);
  EXPECT_EQ(p.local, 256u);
  EXPECT_EQ(p.parts, 8);
  EXPECT_EQ(p.reg_cols, 32);
  EXPECT_EQ(plan_rnn_sequence({256, 256, 1, 4, 1, 2}, gpu_sg).grid, 8);
  EXPECT_FALSE(plan_rnn_sequence({256, 256, 1, 4, 2, 2}, gpu_sg).sequence);  // 32 workgroups: the fused steps
  EXPECT_FALSE(plan_rnn_sequence({256, 256, 1, 4, 2, 1}, gpu).sequence);     // not known to run 16 at once
  RnnSeqDevice few_sms = gpu_sg;
  few_sms.multiprocessors = 8;  // 16 workgroups past 8 multiprocessors: not all at once
  EXPECT_FALSE(plan_rnn_sequence({256, 256, 1, 4, 2, 1}, few_sms).sequence);
  EXPECT_EQ(plan_rnn_sequence({256, 256, 1, 4, 1, 1}, few_sms).grid, 8);
  RnnSeqDevice few_bindings = gpu_sg;
  few_bindings.ssbo_bindings = 8;  // XH, CNT and the error flag at bindings 8-10
  EXPECT_FALSE(plan_rnn_sequence({256, 256, 1, 4, 2, 1}, few_bindings).sequence);
  EXPECT_FALSE(plan_rnn_sequence({256, 256, 1, 4, 1, 1}, RnnSeqDevice{1024, 32768, 65535, true, S::units}).regs);
  EXPECT_FALSE(plan_rnn_sequence({256, 256, 2, 3, 1, 1}, gpu_sg).regs);  // GRU without linear_before_reset
  RnnSeqDevice grid4 = gpu_sg;
  grid4.force_grid = 4;  // LSTM hidden 128 in 4 workgroups of 32 units (4 parts: 128 invocations, all in registers)
  p = plan_rnn_sequence({256, 128, 1, 4, 1, 1}, grid4);
  EXPECT_EQ(p.grid, 4);
  EXPECT_EQ(p.local, 128u);
  EXPECT_EQ(p.reg_cols, 32);
  grid4.force_grid = 3;
  EXPECT_FALSE(plan_rnn_sequence({256, 128, 1, 4, 1, 1}, grid4).regs);
  // 32 units a workgroup, NG rounded up to a divisor of H: hidden 192 in 6, 200 in 8 of 25 units
  EXPECT_EQ(plan_rnn_sequence({64, 192, 1, 4, 1, 1}, gpu_sg).grid, 6);
  p = plan_rnn_sequence({64, 200, 1, 4, 1, 1}, gpu_sg);
  EXPECT_EQ(p.grid, 8);
  EXPECT_EQ(p.local, 224u);
  p = plan_rnn_sequence({100000, 16, 1, 4, 1, 1}, RnnSeqDevice{1024, 32768, 65535, true, S::units});
  EXPECT_TRUE(p.regs);
  EXPECT_LE(rnn_seq_regs_loops(p.chunk, 16, 4, 1, 16), 65535u);
  EXPECT_GT(rnn_seq_regs_loops(p.chunk + 1, 16, 4, 1, 16), 65535u);
  EXPECT_EQ(p.dispatches, (100000 + p.chunk - 1) / p.chunk);
}

TEST(PlanRnnSequence, KernelChunksAndFallbacks) {
  using S = RnnSetting;
  const RnnSeqDevice gpu{1024, 49152, UINT64_MAX, false, S::choose}, gles_min{128, 16384, UINT64_MAX, false, S::units},
      llvmpipe{1024, 32768, 65535, true, S::choose};
  RnnSeqPlan p = plan_rnn_sequence({256, 128, 2}, gpu);  // two barriers a step: not the register kernel
  EXPECT_TRUE(p.sequence);
  EXPECT_FALSE(p.quads || p.regs);
  EXPECT_EQ(p.local, 128u);
  EXPECT_EQ(p.groups, 1);
  EXPECT_EQ(p.chunk, 256);
  EXPECT_EQ(p.dispatches, 1);
  p = plan_rnn_sequence({64, 37, 1}, gpu);
  EXPECT_EQ(p.local, 64u);
  p = plan_rnn_sequence({64, 256, 2}, gles_min);  // forced: 2 units per invocation of 128
  EXPECT_TRUE(p.sequence);
  EXPECT_EQ(p.local, 128u);
  EXPECT_EQ(p.groups, 2);
  // llvmpipe, hidden 128: 32 quads, one per invocation: 5 + 37 s loops (one phase), 65535 at most.
  p = plan_rnn_sequence({100000, 128, 1}, llvmpipe);  // RNN: 128^2 multiply-adds per step
  EXPECT_TRUE(p.sequence);
  EXPECT_TRUE(p.quads);
  EXPECT_EQ(p.local, 32u);
  EXPECT_EQ(p.chunk, (65535 - 5) / 37);
  EXPECT_EQ(p.dispatches, (100000 + p.chunk - 1) / p.chunk);
  EXPECT_LE(rnn_seq_loops(p.chunk, p.groups, 32, 1), 65535u);
  EXPECT_GT(rnn_seq_loops(p.chunk + 1, p.groups, 32, 1), 65535u);
  // GRU without linear_before_reset: 2 GEMVs a step
  p = plan_rnn_sequence({100000, 128, 2}, RnnSeqDevice{1024, 32768, 65535, true, S::quads});
  EXPECT_EQ(p.chunk, (65535 - 5) / 73);
  // quads asked for, hidden not a multiple of 4: one unit per invocation
  p = plan_rnn_sequence({100000, 130, 1}, RnnSeqDevice{1024, 32768, 65535, true, S::quads});
  EXPECT_TRUE(p.sequence);
  EXPECT_FALSE(p.quads);
  EXPECT_EQ(p.local, 160u);
  EXPECT_EQ(p.chunk, (65535 - 5) / 135);
  // Software rasterizers: the per-step path past kRnnSeqSoftwareMacs, unless forced.
  EXPECT_TRUE(plan_rnn_sequence({64, 64, 1, 4, 1, 1}, llvmpipe).sequence);  // LSTM 64, one direction
  EXPECT_FALSE(plan_rnn_sequence({64, 64, 1, 4, 2, 1}, llvmpipe).sequence);
  EXPECT_FALSE(plan_rnn_sequence({64, 128, 1, 4, 1, 1}, llvmpipe).sequence);
  EXPECT_TRUE(plan_rnn_sequence({64, 128, 1, 4, 1, 1}, RnnSeqDevice{1024, 32768, 65535, true, S::quads}).sequence);
  // GPUs: the per-step path past kRnnSeqGpuMacs per workgroup (directions and batch rows are
  // workgroups of their own), unless forced.
  EXPECT_TRUE(plan_rnn_sequence({64, 64, 1, 4, 2, 8}, gpu).sequence);    // LSTM 64, both directions
  EXPECT_TRUE(plan_rnn_sequence({64, 128, 1, 4, 1, 1}, gpu).regs);       // the register kernel up to hidden 128
  EXPECT_FALSE(plan_rnn_sequence({64, 128, 2, 3, 1, 1}, gpu).sequence);  // GRU without linear_before_reset
  EXPECT_TRUE(
      plan_rnn_sequence({64, 128, 1, 4, 1, 1}, RnnSeqDevice{1024, 49152, UINT64_MAX, false, S::units}).sequence);
  EXPECT_FALSE(plan_rnn_sequence({64, 256, 1, 4, 2, 8}, gpu).sequence);
  EXPECT_TRUE(plan_rnn_sequence({64, 128, 1}, RnnSeqDevice{1024, 49152, UINT64_MAX, false, S::quads}).quads);
  EXPECT_FALSE(plan_rnn_sequence({64, 128, 1}, RnnSeqDevice{1024, 49152, UINT64_MAX, true, S::units}).quads);
  EXPECT_FALSE(plan_rnn_sequence({64, kRnnSeqMaxHidden + 1, 1}, gpu).sequence);
  EXPECT_FALSE(plan_rnn_sequence({64, 128, 2}, RnnSeqDevice{1024, 2048, UINT64_MAX, false, S::choose}).sequence);
  const std::uint64_t one_step = rnn_seq_loops(1, 1, 128, 1);
  EXPECT_FALSE(plan_rnn_sequence({64, 128, 1}, RnnSeqDevice{1024, 49152, one_step - 1, false, S::choose}).sequence);
  EXPECT_EQ(plan_rnn_sequence({64, 128, 1}, RnnSeqDevice{1024, 49152, one_step, false, S::choose}).chunk, 1);
  EXPECT_FALSE(plan_rnn_sequence({64, 128, 1}, RnnSeqDevice{1024, 49152, UINT64_MAX, false, S::steps}).sequence);
  EXPECT_FALSE(plan_rnn_sequence({0, 128, 1}, gpu).sequence);
}

// The block-f32 integer matmul's forms (plan_imatmul): the defaults per device, the forced forms,
// the totals in shared memory only where they fit, K tiles of 8 only where every invocation
// stages an A word per tile; and the implicit GEMM's choice for QDQ convolutions.
TEST(PlanIMatmul, Forms) {
  const IMatmulDevice gpu{false, 48 << 10}, sw{true, 32 << 10};
  const IMatmulProblem p{256, 12544, 2304, 1, true, true};
  Settings s;
  // A plan's tiling: tile width, RB = CB, RB where it differs, K slices, invocations, A swizzled
  using Form = std::tuple<std::int64_t, int, int, int, std::uint32_t, bool>;
  const auto form = [](const IMatmulPlan& k) {
    return Form{k.v.bn, k.v.blocks, k.v.rb, k.v.slices, k.local_x, k.v.a_swizzle};
  };
  IMatmulPlan k = plan_imatmul(p, gpu, s);  // 4 x 98 workgroups of 64 x 128: 4 x 8, two K slices
  EXPECT_EQ(form(k), (Form{128, 2, 1, 2, 512u, false}));
  EXPECT_TRUE(k.v.k_pairs);  // two K tiles per loop trip: 4 x 8 only (one K slice too)
  EXPECT_TRUE(plan_imatmul(p, {false, 32 << 10}, s).v.k_pairs);
  EXPECT_FALSE(plan_imatmul(p, sw, s).v.k_pairs);
  EXPECT_FALSE(plan_imatmul({64, 3136, 288, 1}, gpu, s).v.k_pairs);  // 4 x 4, two K slices
  EXPECT_EQ(k.v.bk, 16);
  EXPECT_EQ(k.v.totals, IMatmulVariant::Totals::regs);
  EXPECT_EQ(imatmul_shared_bytes(k.v), 48 << 10);
  k = plan_imatmul(p, {false, 32 << 10}, s);  // 48 KiB do not fit: one slice
  EXPECT_EQ(form(k), (Form{128, 2, 1, 1, 256u, false}));
  k = plan_imatmul(p, {false, 48 << 10, 256}, s);  // 512 invocations do not fit: one slice
  EXPECT_EQ(form(k), (Form{128, 2, 1, 1, 256u, false}));
  k = plan_imatmul({128, 12544, 1152, 1, true, true}, gpu, s);  // 2 x 98 workgroups: 4 x 4 on 64 x 64
  EXPECT_EQ(form(k), (Form{64, 1, 0, 1, 256u, true}));
  k = plan_imatmul({64, 12544, 576, 1, true, true}, gpu, s);  // 98 workgroups: 4 x 4 on 64 x 64, A swizzled
  EXPECT_EQ(form(k), (Form{64, 1, 0, 1, 256u, true}));
  EXPECT_EQ(k.v.totals, IMatmulVariant::Totals::regs);
  // fewer than kFewGroups 64 x 64 tiles (the narrow QDQ net at 56x56: 49, 49, 98): 4 x 4 on
  // 64 x 64 with two K slices, 32 KiB of tiles; one slice where those or 512 invocations do not
  // fit, and in software
  for (const IMatmulProblem few : {IMatmulProblem{64, 3136, 288, 1}, IMatmulProblem{128, 3136, 576, 1}}) {
    k = plan_imatmul(few, gpu, s);
    EXPECT_EQ(form(k), (Form{64, 1, 0, 2, 512u, true}));
    EXPECT_EQ(k.v.totals, IMatmulVariant::Totals::regs);
    EXPECT_EQ(imatmul_shared_bytes(k.v), 32 << 10);
    EXPECT_EQ(form(plan_imatmul(few, {false, 24 << 10}, s)), (Form{64, 1, 0, 1, 256u, true}));
    EXPECT_EQ(form(plan_imatmul(few, {false, 48 << 10, 256}, s)), (Form{64, 1, 0, 1, 256u, true}));
    EXPECT_EQ(plan_imatmul(few, sw, s).v.slices, 1);
  }
  EXPECT_EQ(plan_imatmul({64, 3136 * 3, 288, 1}, gpu, s).v.slices, 1);  // 147 of 64 x 64
  EXPECT_EQ(plan_imatmul({64, 3136, 288, 3}, gpu, s).v.slices, 1);      // batch 3: 147
  s.imatmul_tile = 32;  // forced: one slice (128 invocations), K tiles of 8 not taken (B words)
  EXPECT_EQ(form(plan_imatmul(p, gpu, s)), (Form{32, 1, 0, 1, 128u, true}));
  s.imatmul_bk = 8;
  EXPECT_EQ(plan_imatmul(p, gpu, s).v.bk, 16);
  s.imatmul_slices = 2, s.imatmul_blocks = 2, s.imatmul_rb = 2;  // 4 x 4 only, two slices
  EXPECT_EQ(form(plan_imatmul(p, gpu, s)), (Form{32, 1, 0, 2, 256u, true}));
  EXPECT_EQ(plan_imatmul(p, sw, s).v.bn, 128);  // software: never
  s = Settings{};
  s.imatmul_tile = 64, s.imatmul_slices = 2;  // 4 x 4 on 64 x 64 with two slices: 512 invocations, 32 KiB
  k = plan_imatmul(p, gpu, s);
  EXPECT_EQ(form(k), (Form{64, 1, 0, 2, 512u, true}));
  EXPECT_EQ(imatmul_shared_bytes(k.v), 32 << 10);
  s = Settings{};
  EXPECT_FALSE(plan_imatmul({64, 12544, 576, 1, true, true}, sw, s).v.a_swizzle);  // software: never
  s.imatmul_swizzle = 0;  // GLTENSOR_IMATMUL_SWIZZLE: off, then on for any form
  EXPECT_FALSE(plan_imatmul({64, 12544, 576, 1, true, true}, gpu, s).v.a_swizzle);
  s.imatmul_swizzle = 1;
  EXPECT_TRUE(plan_imatmul(p, gpu, s).v.a_swizzle);
  s.imatmul_swizzle = -1;
  k = plan_imatmul({128, 12544, 1152, 2, true, true}, gpu, s);  // batch 2: 392, two slices
  EXPECT_EQ(form(k), (Form{128, 2, 1, 2, 512u, false}));
  s.imatmul = IMatmulSetting::regs;  // a forced form: 4 x 4
  EXPECT_EQ(plan_imatmul(p, gpu, s).v.bn, 64);
  s = Settings{};
  k = plan_imatmul(p, sw, s);  // 4 x 98 workgroups of 64 x 128
  EXPECT_EQ(k.v.bn, 128);
  EXPECT_EQ(k.v.blocks, 2);
  EXPECT_EQ(k.local_x, 128u);
  EXPECT_EQ(k.v.totals, IMatmulVariant::Totals::mem);
  EXPECT_EQ(plan_imatmul({64, 64, 300, 1, true, true}, sw, s).v.bn, 64);  // one workgroup
  s.imatmul_blocks = 1;  // GLTENSOR_IMATMUL_BLOCKS=1: software 64 x 64 of 4 x 4, totals in registers
  for (const IMatmulProblem q : {p, IMatmulProblem{64, 64, 300, 1, true, true}}) {
    k = plan_imatmul(q, sw, s);
    EXPECT_EQ(form(k), (Form{64, 1, 0, 1, 256u, false}));
    EXPECT_EQ(k.v.totals, IMatmulVariant::Totals::regs);
    EXPECT_FALSE(k.v.k_pairs);
  }
  for (const IMatmulProblem q : {p, IMatmulProblem{64, 3136, 288, 1}, IMatmulProblem{128, 12544, 1152, 1}})
    EXPECT_EQ(form(plan_imatmul(q, gpu, s)), form(plan_imatmul(q, gpu, Settings{})));  // GPUs: their plan
  s.imatmul_blocks = 0;
  s.imatmul_tile = 128, s.imatmul = IMatmulSetting::shared, s.imatmul_bk = 8;
  k = plan_imatmul(p, gpu, s);  // 8 x 8 on 64 x 128: totals 32 KiB + tiles 12 KiB
  EXPECT_EQ(k.v.bn, 128);
  EXPECT_EQ(k.local_x, 128u);
  EXPECT_EQ(k.v.bk, 8);
  EXPECT_EQ(k.v.totals, IMatmulVariant::Totals::shared);
  EXPECT_EQ(imatmul_shared_bytes(k.v), 44 << 10);
  s.imatmul_bk = 16;  // 32 + 24 KiB: more than the device's 48
  k = plan_imatmul(p, gpu, s);
  EXPECT_EQ(k.v.totals, IMatmulVariant::Totals::regs);
  EXPECT_EQ(imatmul_shared_bytes(k.v), 24 << 10);
  s = Settings{};
  s.imatmul_bk = 8;  // 4 x 4 on 64 x 64: 256 invocations, 128 A words per K tile of 8: stays 16
  EXPECT_EQ(plan_imatmul(p, gpu, s).v.bk, 16);
  s.imatmul_rb = 2;  // 8 x 4: 128 invocations
  k = plan_imatmul(p, gpu, s);
  EXPECT_EQ(k.v.rb, 2);
  EXPECT_EQ(k.local_x, 128u);
  EXPECT_EQ(k.v.bk, 8);
  s.imatmul_rb = 1;  // 4 x 8 needs the 64 x 128 tiles
  EXPECT_EQ(plan_imatmul(p, gpu, s).local_x, 256u);
  EXPECT_EQ(plan_imatmul(p, gpu, s).v.rb, 0);
  s.imatmul_tile = 128;
  k = plan_imatmul(p, gpu, s);
  EXPECT_EQ(k.v.rb, 1);
  EXPECT_EQ(k.v.blocks, 2);
  EXPECT_EQ(k.local_x, 256u);
  s = Settings{};
  s.imatmul_tile = 128, s.imatmul_slices = 2, s.imatmul_bk = 8, s.imatmul = IMatmulSetting::mem;
  k = plan_imatmul(p, gpu, s);  // two K slices: 256 invocations, totals in registers, tiles 24 KiB
  EXPECT_EQ(k.v.slices, 2);
  EXPECT_EQ(k.local_x, 256u);
  EXPECT_EQ(k.v.totals, IMatmulVariant::Totals::regs);
  EXPECT_EQ(imatmul_shared_bytes(k.v), 24 << 10);
  EXPECT_EQ(plan_imatmul(p, sw, s).v.slices, 1);
  s.imatmul_bk = 16;  // 48 KiB: fits
  EXPECT_EQ(plan_imatmul(p, gpu, s).v.slices, 2);
  EXPECT_EQ(plan_imatmul(p, {false, 32 << 10}, s).v.slices, 1);
  s.imatmul_rb = 1;  // 4 x 8 with two K slices: 512 invocations, tiles 48 KiB, 8 x 256 totals handed over
  k = plan_imatmul(p, gpu, s);
  EXPECT_EQ(k.v.slices, 2);
  EXPECT_EQ(k.v.rb, 1);
  EXPECT_EQ(k.local_x, 512u);
  EXPECT_EQ(imatmul_shared_bytes(k.v), 48 << 10);
  s.imatmul_bk = 8;  // not taken (128 A words per K tile of 8 for 256 invocations): 16, two slices
  EXPECT_EQ(plan_imatmul(p, gpu, s).v.slices, 2);
  EXPECT_EQ(plan_imatmul(p, gpu, s).v.bk, 16);
  s = Settings{};
  s.imatmul_blocks = 2;  // 8 x 8 on 64 x 64
  k = plan_imatmul(p, gpu, s);
  EXPECT_EQ(k.v.bn, 64);
  EXPECT_EQ(k.v.blocks, 2);
  EXPECT_EQ(k.local_x, 64u);
  EXPECT_EQ(k.v.totals, IMatmulVariant::Totals::mem);
  s.imatmul = IMatmulSetting::mem;
  EXPECT_EQ(plan_imatmul(p, gpu, s).per_tile, 101);
  s = Settings{};
  s.imatmul_tile = 128, s.imatmul_blocks = 2;  // 8 x 8 on 64 x 128 (the 128 x 128 lab tiles are gone)
  EXPECT_EQ(form(plan_imatmul(p, gpu, s)), (Form{128, 2, 0, 1, 128u, false}));
}

// The kernel's macro stays in nn/imatmul_plan.hpp (its includers see kIMatmulTileRows only).
#ifdef IMATMUL_TILE_ROWS
#error "IMATMUL_TILE_ROWS leaks out of nn/imatmul_plan.hpp"
#endif

// The tile rows are one constant (glsl/nn/imatmul_tile.glsl) that the kernel and the host both
// include: imatmul.comp's BM is it, no bare row count is left in the kernel, and the plan's
// invocations and shared-memory bytes follow kIMatmulTileRows.
TEST(PlanIMatmul, TileRowsSharedWithTheKernel) {
  const std::string kernel(shader_sources().at("imatmul.comp"));
  const std::string shared(shader_sources().at("imatmul_tile.glsl"));
  EXPECT_NE(shared.find("#define IMATMUL_TILE_ROWS " + std::to_string(kIMatmulTileRows) + "u\n"), std::string::npos);
  EXPECT_NE(kernel.find("#include \"imatmul_tile.glsl\"\n"), std::string::npos);
  EXPECT_NE(kernel.find("#define BM IMATMUL_TILE_ROWS "), std::string::npos);
  EXPECT_EQ(kernel.find("64u"), std::string::npos) << "a bare row count in imatmul.comp";
  const IMatmulDevice gpu{false, 48 << 10}, sw{true, 32 << 10};
  for (const IMatmulProblem& p : {IMatmulProblem{256, 12544, 2304, 1}, IMatmulProblem{64, 3136, 288, 1}})
    for (const IMatmulDevice& d : {gpu, sw}) {
      const IMatmulPlan k = plan_imatmul(p, d, Settings{});
      const std::int64_t rb = k.v.rb ? k.v.rb : k.v.blocks;
      EXPECT_EQ(k.local_x, kIMatmulTileRows / (4 * rb) * (k.v.bn / (4 * k.v.blocks)) * k.v.slices);
      EXPECT_EQ(imatmul_shared_bytes(k.v), k.v.slices * 2 * k.v.bk * (kIMatmulTileRows + k.v.bn) * 4);
    }
}

// The QDQ warp GEMM's K chunks (plan_iwarp_split) for the QDQ nets' layers: GPUs only (or
// GLTENSOR_MATMUL_KERNEL=gpu), no kernel forced, about kIWarpSplitTarget workgroups of chunks of at
// least the tile's rows, not below kIWarpSplitMinK nor past kIWarpSplitMaxTiles tiles.
TEST(PlanIMatmul, WarpSplit) {
  Settings s;
  const auto split = [&](std::int64_t M, std::int64_t N, std::int64_t K, bool software = false) {
    return plan_iwarp_split({M, N, K, 1}, software, s);
  };
  // the wide net at 56x56: 25 and 50 tiles of 128 x 128
  EXPECT_EQ(split(128, 3136, 576).splits, 4);  // K / 128
  EXPECT_EQ(split(128, 3136, 576).bm, 128);
  EXPECT_EQ(split(128, 3136, 1152).splits, 9);
  EXPECT_EQ(split(256, 3136, 1152).splits, 9);
  EXPECT_EQ(split(256, 3136, 2304).splits, 11);  // 528 / 50 workgroups' worth
  // the narrow net: 64 rows in 64 x 128 tiles; K 288 not split
  EXPECT_EQ(split(64, 3136, 576).splits, 9);  // K / 64
  EXPECT_EQ(split(64, 3136, 576).bm, 64);
  EXPECT_EQ(split(64, 12544, 576).splits, 6);  // 98 tiles at 112x112
  EXPECT_EQ(split(64, 3136, 288).splits, 1);
  EXPECT_EQ(split(32, 3136, 576).splits, 1);         // M below kIWarpSplitMinM
  EXPECT_EQ(split(128, 128 * 256, 576).splits, 1);   // 256 tiles
  EXPECT_EQ(split(128, 3136, 576, true).splits, 1);  // software rasterizers
  s.matmul_kernel = MatmulKernelSetting::gpu;
  EXPECT_EQ(split(128, 3136, 576, true).splits, 4);  // planned as a GPU
  s.matmul_kernel = MatmulKernelSetting::warp;
  EXPECT_EQ(split(128, 3136, 576).splits, 1);  // a kernel forced: the f32 plan's split only
}

TEST(PlanIMatmul, ImplicitConv) {
  Settings s;
  EXPECT_TRUE(plan_iconv_implicit(s));
  s.iconv_gemm = IConvGemmSetting::im2col;
  EXPECT_FALSE(plan_iconv_implicit(s));
  s.iconv_gemm = IConvGemmSetting::bytes;
  EXPECT_TRUE(plan_iconv_implicit(s));
}

// Max pooling's backward gathers where no input lies in two windows: stride >= the dilated
// kernel on both axes.
TEST(PlanPool2d, DisjointWindows) {
  auto geom = [](std::array<std::int64_t, 2> k, std::array<std::int64_t, 2> s, std::array<std::int64_t, 2> d) {
    Pool2dOptions o;
    o.kernel = k, o.stride = s, o.dilation = d;
    return PoolGeom{1, 1, 8, 8, 4, 4, o};
  };
  EXPECT_TRUE(pool_windows_disjoint(geom({2, 2}, {2, 2}, {1, 1})));
  EXPECT_TRUE(pool_windows_disjoint(geom({2, 3}, {3, 3}, {1, 1})));
  EXPECT_TRUE(pool_windows_disjoint(geom({2, 1}, {3, 1}, {2, 1})));   // dilated extent 3
  EXPECT_FALSE(pool_windows_disjoint(geom({2, 2}, {2, 2}, {2, 1})));  // extent 3 > stride 2
  EXPECT_FALSE(pool_windows_disjoint(geom({3, 3}, {2, 2}, {1, 1})));
  EXPECT_FALSE(pool_windows_disjoint(geom({2, 2}, {2, 1}, {1, 1})));
}

// The direct weight gradient (conv_wgrad.comp): one group, f32, at most kConvWgradMaxTaps taps, with
// the weight's gradient wanted; about kConvWgradGroups workgroups on GPUs (16 per channel at most
// on llvmpipe); chunks shortened to the loop limit, the im2col GEMM where not even one position fits.
TEST(PlanConv2d, DirectWeightGradient) {
  const Settings s;
  // The CNN's first layer at batch 128: 1 -> 32 channels, 3x3 (padded: 28 x 28 outputs): 2 channels per
  // invocation on GPUs, 16 groups of them x 63 chunks of 1600 positions (about 1024 workgroups); 4 on llvmpipe.
  Conv2dProblem p = conv(128, 1, 30, 30, 3, 32);
  p.grad = p.need_w = p.f32 = true;
  const Conv2dPlan gpu = plan_conv2d(p, kGpu, s);
  EXPECT_EQ(gpu.weight_grad, Conv2dPlan::WeightGrad::direct);
  EXPECT_EQ(gpu.wgrad.opi, 2);
  EXPECT_EQ(gpu.wgrad.chunk, 1600);
  EXPECT_EQ(gpu.wgrad.chunks, 63);
  EXPECT_EQ(gpu.wgrad.loop_iterations, conv_wgrad_loops(1, 3, 3, 1600 / 64, 2));
  const Conv2dPlan cpu = plan_conv2d(p, kLlvmpipe, s);
  EXPECT_EQ(cpu.weight_grad, Conv2dPlan::WeightGrad::direct);
  EXPECT_EQ(cpu.wgrad.opi, 4);
  EXPECT_EQ(cpu.wgrad.chunks, 16);
  EXPECT_LE(cpu.wgrad.loop_iterations, 65535u);
  EXPECT_GE(cpu.wgrad.chunk * cpu.wgrad.chunks, 128 * 28 * 28);
  // Channels per invocation: those that divide O and whose sums fit 16 KiB (32 taps: 2).
  Conv2dProblem odd = conv(4, 1, 30, 30, 3, 6), wide32 = conv(4, 32, 8, 8, 1, 8);
  odd.grad = odd.need_w = odd.f32 = wide32.grad = wide32.need_w = wide32.f32 = true;
  EXPECT_EQ(plan_conv2d(odd, kGpu, s).wgrad.opi, 2);
  EXPECT_EQ(plan_conv2d(wide32, kGpu, s).wgrad.opi, 1);
  // A lowered loop limit: shorter chunks (one position per invocation at the least), fewer channels
  // per invocation, else the GEMM.
  const std::uint64_t one4 = conv_wgrad_loops(1, 3, 3, 1, 4), one1 = conv_wgrad_loops(1, 3, 3, 1, 1);
  for (std::uint64_t limit : {one4 + 500, one4, one4 - 1, one1}) {
    const Conv2dPlan l = plan_conv2d(p, ConvDevice{false, limit, std::int64_t{1} << 31}, s);
    EXPECT_EQ(l.weight_grad, Conv2dPlan::WeightGrad::direct) << limit;
    EXPECT_EQ(l.wgrad.opi, limit >= conv_wgrad_loops(1, 3, 3, 1, 2) ? 2 : 1) << limit;
    EXPECT_LE(l.wgrad.loop_iterations, limit);
    EXPECT_EQ(l.wgrad.chunk % kConvWgradLocal, 0);
    EXPECT_GE(l.wgrad.chunk * l.wgrad.chunks, 128 * 28 * 28);
  }
  EXPECT_NE(plan_conv2d(p, ConvDevice{false, one1 - 1, std::int64_t{1} << 31}, s).weight_grad,
            Conv2dPlan::WeightGrad::direct);
  // Not: more taps, groups, other dtypes, no weight gradient wanted.
  Conv2dProblem wide = conv(8, 4, 10, 10, 3, 8);  // 36 taps
  wide.grad = wide.need_w = wide.f32 = true;
  EXPECT_EQ(plan_conv2d(wide, kGpu, s).weight_grad, Conv2dPlan::WeightGrad::saved_columns);
  Conv2dProblem grouped = conv(8, 2, 10, 10, 3, 8, 2);
  grouped.grad = grouped.need_w = grouped.f32 = true;
  EXPECT_NE(plan_conv2d(grouped, kGpu, s).weight_grad, Conv2dPlan::WeightGrad::direct);
  Conv2dProblem half = p;
  half.f32 = false;
  EXPECT_NE(plan_conv2d(half, kGpu, s).weight_grad, Conv2dPlan::WeightGrad::direct);
  Conv2dProblem frozen = p;
  frozen.need_w = false;
  EXPECT_EQ(plan_conv2d(frozen, kGpu, s).weight_grad, Conv2dPlan::WeightGrad::none);
}

// The input gradient as the direct convolution of gy with the flipped filters: stride 1, one
// group, f32, padding at most d * (K - 1) on each side; on GPUs where the tiles form runs it with at
// most kConvTilesMaxOg output channels (the forward's input channels), not 1 x 1; anywhere with
// GLTENSOR_CONV=direct (not with im2col); not where its loop exceeds the device's limit.
TEST(PlanConv2d, DirectInputGradient) {
  Settings s;
  // The CNN's second layer at batch 128: 32 -> 64 channels, 3x3, padding 1, 14 x 14.
  ConvGeometry g = conv(128, 32, 14, 14, 3, 64).g;
  g.o = Conv2dOptions::pad(1);
  g.OH = g.OW = 14;
  const ConvInputGradPlan gpu = plan_conv_input_grad(g, 64, true, true, kGpu, s);
  ASSERT_TRUE(gpu.direct);
  EXPECT_TRUE(gpu.kernel.tiles);
  EXPECT_EQ(gpu.kernel.layout, ConvDirectPlan::Layout::lanes);
  // Its measured blocking: 16 channels per invocation, the plane's 14 x 7 tiles a workgroup, 2 slices.
  EXPECT_EQ(gpu.kernel.opi, 16);
  EXPECT_EQ(gpu.kernel.ks, 2);
  EXPECT_EQ(gpu.kernel.local_x, 98u * 2u);
  EXPECT_EQ(gpu.kernel.groups_x, 1u);
  // The transposed convolution: gy [128, 64, 14, 14] -> [128, 32, 14, 14], padding 2 - 1 = 1.
  EXPECT_EQ(gpu.g.N, 128);
  EXPECT_EQ(gpu.g.C, 64);
  EXPECT_EQ(gpu.g.H, 14);
  EXPECT_EQ(gpu.g.OH, 14);
  EXPECT_EQ(gpu.g.OW, 14);
  EXPECT_EQ(gpu.g.o.padding, (std::array<std::int64_t, 4>{1, 1, 1, 1}));
  EXPECT_FALSE(plan_conv_input_grad(g, 64, true, true, kLlvmpipe, s).direct) << "llvmpipe: the GEMM";
  EXPECT_FALSE(plan_conv_input_grad(g, 64, false, true, kGpu, s).direct) << "not f32";
  ConvGeometry wide = g;
  wide.C = 48;  // 48 input channels: the transposed convolution's Og > 32
  EXPECT_FALSE(plan_conv_input_grad(wide, 64, true, true, kGpu, s).direct);
  ConvGeometry few = g;
  few.C = 8;  // 8 channels x 64 x 9 taps per invocation: past the 2048 staged floats, the tiles form
  const ConvInputGradPlan f = plan_conv_input_grad(few, 64, true, true, kGpu, s);
  EXPECT_TRUE(f.direct);
  EXPECT_EQ(f.kernel.opi, conv_tiles_opi(8)) << "16 does not divide 8 output channels: the default OPI";
  EXPECT_FALSE(plan_conv_input_grad(few, 8, true, true, kGpu, s).direct) << "8 x 8 x 9 floats: not tiles";
  ConvGeometry strided = g;
  strided.o.stride = {2, 1};
  strided.OH = 7;
  EXPECT_FALSE(plan_conv_input_grad(strided, 64, true, true, kGpu, s).direct);
  ConvGeometry grouped = g;
  grouped.o.groups = 2;
  EXPECT_FALSE(plan_conv_input_grad(grouped, 64, true, true, kGpu, s).direct);
  ConvGeometry padded = g;
  padded.o.padding = {1, 3, 1, 1};  // 3 > 2 on the left
  padded.OW = 16;
  EXPECT_FALSE(plan_conv_input_grad(padded, 64, true, true, kGpu, s).direct);
  // Asymmetric padding and dilation: d * (K - 1) - p per side.
  ConvGeometry dil = g;
  dil.o.dilation = {2, 1};
  dil.o.padding = {0, 2, 4, 0};
  dil.OH = 14 + 4 - 4, dil.OW = 14 + 2 - 2;
  const ConvInputGradPlan d = plan_conv_input_grad(dil, 64, true, true, kGpu, s);
  ASSERT_TRUE(d.direct);
  EXPECT_EQ(d.g.o.padding, (std::array<std::int64_t, 4>{4, 0, 0, 2}));
  EXPECT_EQ(d.g.o.dilation, (std::array<std::int64_t, 2>{2, 1}));
  s.conv = ConvSetting::direct;  // forced: any device whose loop limit the kernel fits
  const ConvInputGradPlan forced = plan_conv_input_grad(g, 64, true, true, kLlvmpipe, s);
  EXPECT_TRUE(forced.direct);
  EXPECT_LE(forced.kernel.loop_iterations, 65535u);
  EXPECT_TRUE(plan_conv_input_grad(wide, 64, true, false, kGpu, s).direct);
  // Never the ubo layout (its uniform block would need the flipped filters copied), even forced.
  const ConvDevice ubo_dev{true, 65535, std::int64_t{128} << 20, 65536};
  EXPECT_EQ(plan_conv_input_grad(g, 64, true, true, ubo_dev, s).kernel.layout, ConvDirectPlan::Layout::rows);
  s.conv_direct = ConvDirectSetting::ubo;
  EXPECT_EQ(plan_conv_input_grad(g, 64, true, true, ubo_dev, s).kernel.layout, ConvDirectPlan::Layout::rows);
  s.conv_direct = ConvDirectSetting::choose;
  EXPECT_FALSE(plan_conv_input_grad(g, 64, true, true, ConvDevice{true, 100, std::int64_t{1} << 31}, s).direct)
      << "past the loop limit";
  s.conv = ConvSetting::im2col;
  EXPECT_FALSE(plan_conv_input_grad(g, 64, true, true, kGpu, s).direct);
}

// The log-mel front end's one kernel (nn/stft_mel.hpp): on GPUs a frame a workgroup of 1024
// invocations, each bin's sums over the slices that give every bin an invocation (4 for the
// 16 kHz front end's 201 bins, 32 for few bins); on llvmpipe 4 frames, 256 invocations; forced forms
// as given; fewer invocations where the shared arrays do not fit; refusals (empty sizes, frames past
// kStftMelMaxLength, bins past n, shared memory, the loop limit) with their reasons.
TEST(PlanStftMel, FormsAndRefusals) {
  const StftMelDevice gpu{1024, 49152, ~0ull, false}, sw{1024, 32768, 65535, true};
  StftMelPlan p = plan_stft_mel(400, 201, 40, gpu, {});
  ASSERT_TRUE(p.ok) << p.why;
  EXPECT_EQ(std::make_tuple(p.frames, p.slices, p.local),
            std::make_tuple(std::int64_t{1}, std::int64_t{4}, std::int64_t{1024}));
  // 8 twiddles in registers, 16 lanes per mel column (40 of them), 13 weights each (201 bins)
  EXPECT_EQ(std::make_tuple(p.twiddles, p.mel_lanes, p.mel_regs),
            std::make_tuple(std::int64_t{8}, std::int64_t{16}, std::int64_t{13}));
  // (s_sd 201, s_tw 400, s_part 1024 vec2s, s_pow 201 floats)
  EXPECT_EQ(p.shared_bytes, 8 * (201 + 400 + 1024) + 4 * 201);
  p = plan_stft_mel(31, 16, 3, gpu, {});
  ASSERT_TRUE(p.ok) << p.why;
  EXPECT_EQ(p.slices, 16);   // (at most H = 16 slices: every slice a j)
  EXPECT_EQ(p.twiddles, 2);  // (one j a slice: the least)
  p = plan_stft_mel(400, 201, 40, gpu, {0, 0, 0, 1});
  ASSERT_TRUE(p.ok) << p.why;
  EXPECT_EQ(p.twiddles, 0);  // the table form
  p = plan_stft_mel(400, 201, 40, sw, {});
  ASSERT_TRUE(p.ok) << p.why;
  EXPECT_EQ(std::make_tuple(p.frames, p.slices, p.local),
            std::make_tuple(std::int64_t{4}, std::int64_t{1}, std::int64_t{256}));
  EXPECT_LE(p.loop_iterations, 65535u);
  p = plan_stft_mel(400, 201, 40, gpu, {3, 2, 64});
  ASSERT_TRUE(p.ok) << p.why;
  EXPECT_EQ(std::make_tuple(p.frames, p.slices, p.local),
            std::make_tuple(std::int64_t{3}, std::int64_t{2}, std::int64_t{64}));
  // 12 KiB: 512 invocations for the 16 kHz front end (1024 need 13804 bytes)
  p = plan_stft_mel(400, 201, 40, StftMelDevice{1024, 12288, ~0ull, false}, {});
  ASSERT_TRUE(p.ok) << p.why;
  EXPECT_EQ(p.local, 512);
  EXPECT_LE(p.shared_bytes, 12288);
  // refusals
  EXPECT_FALSE(plan_stft_mel(0, 1, 1, gpu, {}).ok);
  EXPECT_FALSE(plan_stft_mel(8, 4, 0, gpu, {}).ok);
  p = plan_stft_mel(kStftMelMaxLength + 1, 10, 4, gpu, {});
  EXPECT_FALSE(p.ok);
  EXPECT_NE(p.why.find("frame length"), std::string::npos) << p.why;
  EXPECT_FALSE(plan_stft_mel(16, 17, 4, gpu, {}).ok);  // bins past n
  p = plan_stft_mel(4096, 2049, 40, StftMelDevice{1024, 16384, ~0ull, false}, {});
  EXPECT_FALSE(p.ok);
  EXPECT_NE(p.why.find("shared memory"), std::string::npos) << p.why;
  p = plan_stft_mel(400, 201, 40, gpu, {8, 1, 1024});  // a forced form past the shared memory
  EXPECT_FALSE(p.ok);
  p = plan_stft_mel(1024, 513, 8, StftMelDevice{1024, std::int64_t{1} << 20, 100, true}, {});
  EXPECT_FALSE(p.ok);
  EXPECT_NE(p.why.find("loop iterations"), std::string::npos) << p.why;
  p = plan_stft_mel(400, 201, 300, sw, {});  // mel bins past the 256 invocations
  EXPECT_FALSE(p.ok);
  EXPECT_NE(p.why.find("invocations"), std::string::npos) << p.why;
  p = plan_stft_mel(400, 201, 200, gpu, {});  // dense columns over 4 lanes: 51 weights each
  ASSERT_TRUE(p.ok) << p.why;
  EXPECT_EQ(std::make_tuple(p.mel_lanes, p.mel_regs), std::make_tuple(std::int64_t{4}, std::int64_t{51}));
  p = plan_stft_mel(400, 201, 40, gpu, {0, 0, 64, 0});  // one lane a column: 201 weights, read in the loop
  ASSERT_TRUE(p.ok) << p.why;
  EXPECT_EQ(std::make_tuple(p.mel_lanes, p.mel_regs), std::make_tuple(std::int64_t{1}, std::int64_t{0}));
}
