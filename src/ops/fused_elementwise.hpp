// Generated elementwise kernels (internal): a small expression IR over up to kFusedMaxInputs
// broadcast input tensors, rendered to GLSL once (glsl/ops/fused_elementwise.comp's FUSED_BODY,
// part of the program key) and run by the strided elementwise driver (glsl/common/elementwise.glsl)
// in one dispatch. The model planner's fuse_elementwise builds these from chains of ONNX
// elementwise nodes (src/model/planner.cpp).
//
// Each step computes what the unfused op computes (the same GLSL functions: binary.comp's
// correctly rounded division, glsl/common/activations.glsl's activations, unary.comp's clamp),
// with no contraction into FMAs (`precise`), and rounds its result to f16 where the unfused
// op's output would be stored as f16 (round_f16): results match the unfused ops bit for bit.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gltensor/tensor.hpp"

namespace gltensor::detail {

/// The most tensor inputs of one fused expression (7 SSBOs with the output).
constexpr int kFusedMaxInputs = 6;

enum class FusedOp {
  input,       ///< tensor input `a` (0 .. inputs - 1)
  constant,    ///< the float32 value p0
  add,         ///< a + b (ONNX Add)
  sub,         ///< a - b
  mul,         ///< a * b
  div,         ///< a / b correctly rounded (binary.comp's op_div)
  neg,         ///< -a
  abs,         ///< |a|
  exp,         ///< exp(a)
  erf,         ///< erf(a) (common.glsl's erf_f)
  relu,        ///< act_relu (NaN kept)
  sigmoid,     ///< act_sigmoid
  tanh,        ///< act_tanh
  hardswish,   ///< act_hardswish: a * clamp(a + 3, 0, 6) / 6
  leaky_relu,  ///< act_leaky_relu(a, p0)
  clip,        ///< act_clip(a, p0, p1): NaN kept, bounds may be +-Inf
  muladd,      ///< a + 1.0 * b * c (gltensor.MulAdd's addcmul(a, b, c), value 1)
};

/// One step: op over earlier steps' results (indices into FusedExpr::steps).
struct FusedStep {
  FusedOp op = FusedOp::input;
  int a = -1, b = -1, c = -1;  ///< operands: the input index for FusedOp::input, else step indices
  float p0 = 0, p1 = 0;        ///< constant value, leaky_relu slope, clip bounds
  bool round_f16 = false;      ///< round the result to f16 (the unfused op's f16 output)
};

/// An expression over `inputs` tensors; the last step is the result.
struct FusedExpr {
  int inputs = 0;
  /// The output has at least this many dims (leading 1s): constants of shape [1] folded into
  /// literals broadcast the output to rank 1 as the unfused op does.
  int min_rank = 0;
  std::vector<FusedStep> steps;
  /// Appends a step and returns its index.
  int add(FusedStep s) {
    steps.push_back(s);
    return static_cast<int>(steps.size()) - 1;
  }
  /// "mul(in0, in1) -> add(., 3) -> relu": a short description for plan dumps.
  std::string describe() const;
};

/// The GLSL statements of FUSED_BODY: `PRECISE float vK = ...;` per step, then
/// `return CT0(vLAST);`. Throws ValueError for a malformed expression (an operand that is not an
/// earlier step, an input index out of range, no steps).
std::string render_fused_glsl(const FusedExpr& e);

/// Evaluates e (rendered as `glsl`, render_fused_glsl(e)) over `inputs` (floating tensors of one
/// device, any layout, NumPy-broadcast against each other) into a new contiguous tensor of the
/// broadcast shape (at least e.min_rank dims) and dtype `out` (f32, f16 or bf16). Grids beyond one dispatch are split
/// by the launch. Throws ValueError for more than kFusedMaxInputs inputs or a count unlike e.inputs, DTypeError for a
/// non-floating input or output dtype, ShapeError for inputs that do not broadcast (naming `op`).
Tensor fused_elementwise(const char* op, const FusedExpr& e, const std::string& glsl, const std::vector<Tensor>& inputs,
                         DType out);

}  // namespace gltensor::detail
