// Recurrent layers as ONNX defines them (LSTM, GRU, RNN), for the model runtime (internal):
// X @ W^T of every step in one matmul, then the time loop (nn/rnn_plan.hpp chooses):
// - the sequence kernel (glsl/nn/rnn_seq.comp, up to hidden 256; on GPUs up to hidden 128
//   glsl/nn/rnn_seq_regs.comp, R in registers, and up to 256 its GRID form over several workgroups): one dispatch per
//   chunk of time steps (the chunk within the loop limit; the whole sequence on GPUs), one workgroup per direction and
//   batch row, h in shared memory;
// - per step (past the plan's bounds, or with GLTENSOR_RNN=steps): on GPUs one fused dispatch
//   (glsl/nn/rnn_step.comp: the recurrent GEMV and the cell of every direction; batches up to 8,
//   not GRU without linear_before_reset), else one batched matmul h @ R^T over the directions and
//   one gate kernel (glsl/nn/rnn.comp; GRU without linear_before_reset: two matmuls and two gate
//   stages).
// The returned Y_h / Y_c never share a buffer with a state that the steps read and write (a
// replayed model's outputs are in host-visible memory).
// Both run every attribute. No read-back: the whole sequence is queued on the GPU.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gltensor/tensor.hpp"
#include "nn/rnn_plan.hpp"
#include "runtime/variant.hpp"

namespace gltensor::detail {

enum class RnnCell { lstm, gru, rnn };

/// One activation of a direction, as ONNX names it (Sigmoid, Tanh, Relu, Affine, LeakyRelu,
/// ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus; any case).
struct RnnActivation {
  std::string name;
  double alpha = 0, beta = 0;
};

struct RnnSpec {
  RnnCell cell = RnnCell::lstm;
  int directions = 1;
  bool reverse0 = false;  ///< direction 0 runs backwards ("reverse")
  /// Per direction: LSTM f, g, h; GRU f, g; RNN f (direction 0's first, then direction 1's).
  std::vector<RnnActivation> acts;
  bool has_clip = false;
  double clip = 0;
  bool input_forget = false;         ///< LSTM
  bool linear_before_reset = false;  ///< GRU
  bool layout1 = false;              ///< X [B, T, I], Y [B, T, D, H], states [B, D, H]
};

/// The cell's compile-time choices, shared by rnn.comp's and rnn_seq.comp's Variants
/// (runtime/variant.hpp): the cell (CELL_LSTM, CELL_GRU, else RNN) with G gates, GRU_LBR,
/// INPUT_FORGET, HAS_CLIP, LAYOUT1, HAS_P (LSTM peepholes), HAS_SEQ (sequence lengths), the
/// activations ACT_F<d>, ACT_G<d>, ACT_H<d> (calls of rnn.glsl's rnn_<name>, with the model's
/// parameters).
struct RnnCellVariant {
  RnnCell cell = RnnCell::lstm;
  std::int64_t gates = 4;
  bool gru_lbr = false, input_forget = false, has_clip = false, layout1 = false, has_p = false, has_seq = false;
  std::string act[2][3];  ///< direction d's activation calls (f, g, h; empty where the cell has fewer)
  /// The cell's defines and the operands both kernels share (3 XW, 5 bias, 6 P, 7 sequence_lens).
  void add_defines(Defines& d) const;
  /// A covering set of cells: every cell with every flag and, across them, every activation.
  static std::vector<RnnCellVariant> space();
};

/// rnn.comp's Variant: the cell and the stage: GRU_STAGE1 (r * h for the second matmul), or the
/// gate update (TWO_STAGE: reading that product's matmul; operands as rnn.comp lists them).
struct RnnVariant : RnnCellVariant {
  static constexpr const char* kFile = "rnn.comp";
  bool stage1 = false, two_stage = false;
  Defines defines() const;
  static std::vector<RnnVariant> space();
};

/// rnn_seq.comp's Variant: the cell, QUADS (4 units per group, R^T read as quads: RnnSeqPlan),
/// and MAX_H (kRnnSeqMaxHidden: its shared arrays' length); with regs, rnn_seq_regs.comp (R in
/// registers) for hidden size HK = `hidden`, KS = `parts`, RR = `reg_cols`, QUAD_COLS (`width` 4) and (SUBGROUP) the
/// parts' sums by subgroup shuffles.
struct RnnSeqVariant : RnnCellVariant {
  static constexpr const char* kFile = "rnn_seq.comp";
  static constexpr const char* kRegsFile = "rnn_seq_regs.comp";
  bool quads = false, regs = false;
  std::int64_t hidden = 0, parts = 1, width = 1, reg_cols = 0;  ///< regs: HK, KS, W, RR (RnnSeqPlan)
  bool subgroup = false;                                        ///< regs: SUBGROUP (shuffles)
  std::int64_t grid = 1;    ///< regs: NG workgroups per direction and batch row (GRID where > 1)
  bool grid_stall = false;  ///< GRID: GRID_STALL (GLTENSOR_RNN_GRID_STALL, tests only)
  const char* file() const { return regs ? kRegsFile : kFile; }
  Defines defines() const;
  static std::vector<RnnSeqVariant> space();
  /// rnn_seq_regs.comp's: every cell of RnnCellVariant::space() that has one barrier a step.
  static std::vector<RnnSeqVariant> regs_space();
};

/// rnn_step.comp's Variant: the cell (LSTM, GRU with linear_before_reset, RNN), S hidden units
/// per workgroup and KS invocations summing each gate row's GEMV (LOCAL_X = G S KS; KS a power
/// of 2). 2 and 32: on the H200 (bench/RESULTS.md, 2026-11-28, torchcmp's three LSTMs past hidden
/// 64, replayed, one call) 0.90-0.99x the time of 4 and 16; 1 and 32 0.98x, 8 and 8 1.03-1.15x,
/// 16 and 4 1.14-1.50x.
struct RnnStepVariant : RnnCellVariant {
  static constexpr const char* kFile = "rnn_step.comp";
  std::int64_t units = 2, parts = 32;
  Defines defines() const;
  static std::vector<RnnStepVariant> space();
};

struct RnnOutputs {
  Tensor y, y_h, y_c;
};

/// True if `name` is an activation the gate kernel has (case-insensitive).
bool rnn_activation_known(const std::string& name);
/// The default alpha and beta of an activation (ONNX Runtime's: LeakyRelu 0.01, HardSigmoid 0.2
/// and 0.5, Elu 1, ThresholdedRelu 1, Affine 1 and 0, ScaledTanh 1 and 1) and how many of them it
/// takes from activation_alpha / activation_beta.
void rnn_activation_defaults(const std::string& name, double& alpha, double& beta, bool& uses_alpha, bool& uses_beta);

/// x [T, B, I] (layout1: [B, T, I]), w [D, G H, I], r [D, G H, H], optional b [D, 2 G H],
/// seq_lens [B] (int32), h0 / c0 [D, B, H] (layout1: [B, D, H]), p [D, 3 H]. Float tensors of
/// any float dtype; outputs are float32.
RnnOutputs rnn_forward(const RnnSpec& spec, const Tensor& x, const Tensor& w, const Tensor& r, const Tensor& b,
                       const Tensor& seq_lens, const Tensor& h0, const Tensor& c0, const Tensor& p);

/// The operands of the time loop, as rnn_forward prepares them (float32, contiguous from
/// element 0, but rt on the per-step path): y (output), h and c [D, B, H] (in place; c only for
/// LSTM), xw [D, T, B, G H], rt = R^T [D, H, G H] (the per-step path: a transposed view of R,
/// K-major for matmul's GEMV), bias [D, 2 G H], p [D, 3 H] or undefined, seq [B] int32 or
/// undefined.
struct RnnLoop {
  Tensor y, h, c, xw, rt, bias, p, seq;
  std::int64_t T = 0, B = 0, H = 0, D = 0;
  std::int64_t rev = 0;  ///< bit d: direction d runs backwards
  double clip = 0;
  Tensor r;  ///< R [D, G H, H] dense (the sequence kernel with R in registers), else undefined
  /// The register sequence kernel: bit 0 h, bit 1 c start from zeros (no initial state given: the
  /// buffers are not filled, the first dispatch writes them), else read from h / c.
  std::uint32_t zero = 0;
};
/// Runs the time loop with the sequence kernel in plan.dispatches dispatches of plan.chunk steps
/// (src/nn/rnn_seq.cpp).
void rnn_sequence(const RnnSeqVariant& v, const RnnSeqPlan& plan, const RnnLoop& loop);

}  // namespace gltensor::detail
