// The recurrent layers' choice of time loop (internal), pure functions tested without a GPU
// (tests/nn/test_nn_plans.cpp): the sequence kernel (glsl/nn/rnn_seq.comp, or with R in
// registers glsl/nn/rnn_seq_regs.comp: one dispatch runs many time steps, one workgroup per
// direction and batch row) where the hidden size fits one workgroup's shared memory and the loop
// limit allows at least one step per dispatch, else the per-step path (rnn_fused_steps: one fused
// dispatch a step, glsl/nn/rnn_step.comp, or a batched matmul and the gate kernel per step,
// glsl/nn/rnn.comp).
#pragma once
#include <cstdint>

#include "runtime/settings.hpp"

namespace gltensor::detail {

/// Largest hidden size of the sequence kernel: its shared h (two buffers of kRnnSeqMaxHidden
/// floats, one more for LSTM's c, two more for GRU's r . h and z) and one workgroup's GEMV per step. Past it the
/// per-step path's matmul spreads h @ R^T over the whole device.
inline constexpr std::int64_t kRnnSeqMaxHidden = 256;

/// On software rasterizers, the largest recurrent GEMV work per step, G H^2 D B multiply-adds,
/// that the sequence kernel takes by default: llvmpipe runs each (direction, batch row) on one
/// thread at about 2 ns per multiply-add (R read a lane at a time) against a dispatch's ~50 us
/// (two per step on the per-step path, whose matmul uses every thread). Measured with
/// gltensor_model_bench --lstm and --model (2 cores shared with other builds, load 4-11): LSTM
/// hidden 64 with one direction (16384) 0.5-1.0x the per-step path's time; with two (32768)
/// 0.4-2x, the per-step path ahead at the lower loads; hidden 128 with one (65536) even.
inline constexpr std::int64_t kRnnSeqSoftwareMacs = 16384;
/// On GPUs, the largest recurrent GEMV work per step of one workgroup (one direction and batch
/// row), G H^2 multiply-adds, that the sequence kernel takes by default: one workgroup reads all
/// of R each step, where the per-step path spreads it over the device. H100 (bench/RESULTS.md,
/// gltensor_model_bench --lstm): LSTM hidden 64 (16384) 0.27-0.36x the per-step path's time,
/// hidden 128 (65536) 1.55-1.93x, hidden 256 2.9-3.7x.
inline constexpr std::int64_t kRnnSeqGpuMacs = 16384;

/// Largest batch of the fused per-step kernel (glsl/nn/rnn_step.comp: one workgroup per direction,
/// batch row and slice of hidden units, so R is read once per row and step).
inline constexpr std::int64_t kRnnFusedMaxBatch = 8;

struct RnnSeqProblem {
  std::int64_t T = 0, H = 0;
  int phases = 1;                    ///< barriers per step: 2 for GRU without linear_before_reset (r . h first)
  std::int64_t G = 1, D = 1, B = 1;  ///< gates, directions, batch rows
};

struct RnnSeqDevice {
  int max_local = 128;                      ///< Capabilities: min(max_workgroup_size[0], max_workgroup_invocations)
  int max_shared_memory = 16384;            ///< Capabilities::max_shared_memory (bytes)
  std::uint64_t loop_budget = UINT64_MAX;   ///< DeviceImpl::loop_budget()
  bool software = false;                    ///< a CPU rasterizer (llvmpipe)
  RnnSetting setting = RnnSetting::choose;  ///< GLTENSOR_RNN
  int shuffle_lanes = 0;                    ///< subgroup size where kernels may shuffle (0: no subgroup shuffles)
  std::int64_t force_parts = 0, force_cols = -1;  ///< GLTENSOR_RNN_REGS=KS,RR[,NG] (0, -1: the plan's)
  std::int64_t force_grid = 0;
  /// Multiprocessors known to the plan (runtime/cuda_memory.hpp's cuda_multiprocessors: NVIDIA's GPUs
  /// where libcuda tells; 0 = unknown): the GRID form's D B NG workgroups, each of at most 1024
  /// invocations whose registers and shared memory fit one multiprocessor, all run at once where
  /// they are at most this many (others' work on the GPU ends without waiting for them). 0: no GRID.
  int multiprocessors = 0;
  int ssbo_bindings = 16;  ///< Capabilities::max_ssbo_bindings (GRID binds 11, and CHECK_LOOPS its own)
};

struct RnnSeqPlan {
  bool sequence = false;        ///< the sequence kernel (else the per-step path)
  bool quads = false;           ///< 4 units per group, R^T read as quads (QUADS)
  bool regs = false;            ///< R in registers (rnn_seq_regs.comp), `parts` invocations per hidden unit
  std::int64_t parts = 1;       ///< regs: KS, invocations per hidden unit (a power of 2 dividing H)
  std::int64_t width = 1;       ///< regs: W, columns per chunk (4 where H / KS % 4 == 0: 128-bit loads)
  std::int64_t reg_cols = 0;    ///< regs: RR, columns of each gate row per invocation kept in registers (of H / KS)
  bool subgroup = false;        ///< regs: the parts' sums by subgroup shuffles (else shared memory, 2 barriers a step)
  std::int64_t grid = 1;        ///< regs: NG workgroups per direction and batch row (GRID: h exchanged through memory)
  std::uint32_t local = 0;      ///< invocations per workgroup (LOCAL_X)
  std::int64_t groups = 0;      ///< groups of units per invocation, ceil(H / width / local)
  std::int64_t chunk = 0;       ///< time steps per dispatch (the last dispatch may run fewer)
  std::int64_t dispatches = 0;  ///< ceil(T / chunk)
};

/// Largest hidden size of the sequence kernel with R in registers (glsl/nn/rnn_seq_regs.comp: KS
/// invocations per hidden unit, each holding the unit's G gate rows over H / KS columns, up to RR
/// of them per row in registers for the whole dispatch, the others read from R's buffer each step).
inline constexpr std::int64_t kRnnSeqRegsMaxHidden = 128;
/// Largest hidden size of the register sequence kernel by default on GPUs (past it only with
/// GLTENSOR_RNN=units).
inline constexpr std::int64_t kRnnSeqRegsDefaultHidden = 128;
/// Largest hidden size of the register sequence kernel's GRID form (NG workgroups per direction and
/// batch row, h exchanged through memory each step), GPUs only.
inline constexpr std::int64_t kRnnSeqGridMaxHidden = 256;
/// Most workgroups of the GRID form (D B NG; and at most RnnSeqDevice::multiprocessors): all must run
/// at once (each waits for the others' counts).
inline constexpr std::int64_t kRnnSeqGridMaxGroups = 16;
/// Hidden units per workgroup of the GRID form (NG = H / this, rounded up to a divisor of H): hidden 256 in 8
/// workgroups, 128 in 4.
inline constexpr std::int64_t kRnnSeqGridUnits = 32;
/// Floats of R per invocation of rnn_seq_regs.comp (G H / KS at most this; KS the least power of 2
/// that gives it, halved until it divides H). Fewer invocations with longer rows won on the H200
/// (bench/RESULTS.md, 2026-11-28, replayed): LSTM hidden 128, KS 4 (128 floats) 0.53 ms against
/// KS 8 (64) 0.68-0.71, KS 2 (256, half from memory) 1.00; hidden 64, KS 2 (128) 0.135-0.138
/// against KS 4 (64) 0.15-0.16, KS 1 (256) 0.16-0.17.
inline constexpr std::int64_t kRnnSeqRegsMaxFloats = 128;
/// Floats of R kept in registers per invocation: up to 512 invocations all kRnnSeqRegsMaxFloats,
/// at 1024 this many (65536 registers a workgroup: 64 an invocation, R and the rest).
inline constexpr std::int64_t kRnnSeqRegsFloats1024 = 32;

/// Loop iterations of one invocation of rnn_seq_regs.comp running `steps` steps of hidden size h
/// with g gates, `parts` invocations per unit, `reg_cols` columns of each gate row in registers:
/// the step loop, and (where a compiler keeps them as loops) the constant-trip loops over R's
/// chunks, gates and parts.
std::uint64_t rnn_seq_regs_loops(std::int64_t steps, std::int64_t h, std::int64_t g, std::int64_t parts,
                                 std::int64_t reg_cols);

/// Shared memory of the sequence kernel (bytes).
std::int64_t rnn_seq_shared_bytes(int phases);
/// Loop iterations of one invocation running `steps` steps with `groups` groups of units each,
/// `inner` = H / width groups in a GEMV, each loop counting its exit test: loading and storing h
/// (groups + 1 each), the step loop's exit, and per step its trip plus, per phase, the group
/// loop's (groups + 1) and the GEMVs' (groups * (inner + 1)), and 1 for the barrier (llvmpipe
/// counts more than the trips: 2000 steps on the device's own limit, tests/nn/test_rnn.cpp, ran
/// short with trips and exit tests alone).
std::uint64_t rnn_seq_loops(std::int64_t steps, std::int64_t groups, std::int64_t inner, int phases);
/// Whether the per-step path runs the fused kernel (glsl/nn/rnn_step.comp: the recurrent GEMV and
/// the cell in one dispatch a step): on GPUs, or on software rasterizers with GLTENSOR_RNN=steps
/// (llvmpipe runs its 256-invocation workgroups with their barriers 4-16x slower than the batched
/// matmul's GEMV and rnn.comp: LSTM seq 64 hidden 256 with two directions 120-600 ms against 37),
/// for batches up to kRnnFusedMaxBatch, and not for GRU without linear_before_reset (two GEMVs
/// a step). Else a batched matmul and the gate kernel (glsl/nn/rnn.comp) per step.
bool rnn_fused_steps(const RnnSeqProblem& p, const RnnSeqDevice& dev);
/// The sequence kernel unless GLTENSOR_RNN=steps, hidden > kRnnSeqMaxHidden, too little shared
/// memory or loop budget for one step, or (by default) a software rasterizer with more than
/// kRnnSeqSoftwareMacs per step or a GPU with more than kRnnSeqGpuMacs per workgroup and step. Quads where
/// GLTENSOR_RNN=quads, or by default on software rasterizers (llvmpipe runs a workgroup's invocations 8 at a time on
/// one thread: 4x fewer invocations and 16 FMAs per quad load), for hidden sizes that are multiples of 4; one unit per
/// invocation on GPUs. R in registers (regs) on GPUs by default up to kRnnSeqRegsDefaultHidden, or with
/// GLTENSOR_RNN=units on any device up to kRnnSeqRegsMaxHidden, one barrier a step (not GRU without
/// linear_before_reset) and H KS invocations fit a workgroup, KS the least power of 2 with G H / KS <=
/// kRnnSeqRegsMaxFloats, halved until it divides H (GLTENSOR_RNN_REGS may set KS and RR); RR = H / KS up to 512
/// invocations, else kRnnSeqRegsFloats1024 / G (an LSTM of hidden 128: 512 invocations, 4 parts of 32 columns, all in
/// registers); W = 4 where 4 divides H / KS; the parts summed by subgroup shuffles where KS lanes fit a subgroup.
/// Past hidden 128 on GPUs the GRID form: NG workgroups of kRnnSeqGridUnits units (a divisor of H), D B NG at most
/// kRnnSeqGridMaxGroups.
RnnSeqPlan plan_rnn_sequence(const RnnSeqProblem& p, const RnnSeqDevice& dev);

}  // namespace gltensor::detail
