// Fused transformer kernels, forward and backward, each one dispatch where the shapes allow:
// residual add + RMSNorm, rotary position embeddings and gated linear units. (rms_norm itself is
// in nn_functional.hpp; it runs on the same kernel.) Inputs may be any view: rope reads views in
// place, the others copy non-contiguous inputs first. Results are contiguous; arithmetic is f32
// whatever the storage dtype (f32, f16, bf16).
//
// Sources: RMSNorm, Zhang & Sennrich, "Root Mean Square Layer Normalization" (2019); rotary
// embeddings, Su et al., "RoFormer: Enhanced Transformer with Rotary Position Embedding" (2021);
// gated units, Shazeer, "GLU Variants Improve Transformer" (2020).
#pragma once
#include <cstdint>

#include "gltensor/tensor.hpp"

namespace gltensor {

/// add_rms_norm's outputs: the residual stream and its normalization.
struct AddRmsNorm {
  Tensor sum;     ///< x + residual
  Tensor normed;  ///< rms_norm(sum) * weight
};

/// sum = x + residual; normed = sum * rsqrt(mean(sum^2) + eps) [* weight], mean over the weight's
/// dims (the trailing dims of x of the weight's shape; without a weight the last dim), in one
/// dispatch (the pre-norm transformer block's "residual add, then norm"). Gradients flow through
/// both outputs (to x, residual and weight). x and residual: the same shape, any dtypes (integers
/// give f32; sum's dtype is their promotion); normed: sum's dtype promoted with the weight's.
/// Errors: ShapeError when x and residual differ or the weight's shape is not a trailing part of
/// x's; DTypeError for an integer weight; ValueError for eps <= 0.
AddRmsNorm add_rms_norm(const Tensor& x, const Tensor& residual, const Tensor& weight = Tensor(), double eps = 1e-6);

/// Rotary position embeddings on x [..., T, D] (attention's [B, H, T, D]; any rank >= 2: T, the
/// positions, is dim -2, D the head dim, dim -1). Pair k < R / 2 (R = rotary_dim) of the row at
/// position p rotates by the angle p * base^(-2k / R):
///   half-split (default; GPT-NeoX, llama's HF `rotate_half`): pairs (k, k + R / 2)
///   interleaved (GPT-J, the original RoFormer): pairs (2k, 2k + 1)
///   out_a = x_a cos - x_b sin,  out_b = x_b cos + x_a sin
/// Dims past R pass through. The angle is computed in f32 (as PyTorch's f32 cos/sin caches): its
/// error grows as p * 2^-24 radians. The gradient is the rotation by the negative angle.
struct RopeOptions {
  std::int64_t rotary_dim = 0;  ///< R: even, <= D; 0 = D
  bool interleaved = false;
  double base = 10000.0;    ///< theta
  std::int64_t offset = 0;  ///< added to every position (decoding: the tokens already in the cache)
};
/// Positions offset, offset + 1, ..., offset + T - 1.
/// Errors: ShapeError for rank < 2; DTypeError for a non-float x; ValueError for an odd R, R > D,
/// R < 0, base <= 0 or positions beyond int32.
Tensor rope(const Tensor& x, const RopeOptions& opt = {});
/// Explicit integer positions (int32 or uint8; offset is added): [T], shared by all rows, or
/// [B, T] with B = x.size(0) (x of rank >= 3), one row of positions per batch (HF's position_ids).
/// Errors as above, and ShapeError / DTypeError for positions of another shape or dtype.
Tensor rope(const Tensor& x, const Tensor& positions, const RopeOptions& opt = {});

/// The activation of a gated unit.
enum class GluActivation {
  silu,       ///< SwiGLU: silu(gate) * up
  gelu,       ///< GEGLU: gelu(gate) * up, exact GELU (erf)
  gelu_tanh,  ///< GEGLU with GELU's tanh approximation (torch's approximate="tanh")
};
/// act(gate) * up in one dispatch, one output element per invocation; the backward computes both
/// gradients in one dispatch: dgate = gy * up * act'(gate), dup = gy * act(gate).
/// gate_up [..., 2F] holds gate then up along its last dim (gate first, as vLLM's SiluAndMul;
/// torch's F.glu takes its sigmoid of the second half) -> [..., F].
/// Errors: ShapeError for rank 0 or an odd last dim; DTypeError for non-float inputs.
Tensor gated_linear_unit(const Tensor& gate_up, GluActivation act);
/// gate and up of the same shape -> that shape (ShapeError otherwise); the result's dtype is their
/// promotion.
Tensor gated_linear_unit(const Tensor& gate, const Tensor& up, GluActivation act);
/// silu(gate) * up (SwiGLU, Shazeer 2020; llama's MLP: down(silu(gate(x)) * up(x))).
inline Tensor swiglu(const Tensor& gate_up) { return gated_linear_unit(gate_up, GluActivation::silu); }
inline Tensor swiglu(const Tensor& gate, const Tensor& up) { return gated_linear_unit(gate, up, GluActivation::silu); }
/// gelu(gate) * up (GEGLU, Shazeer 2020); tanh: GELU's tanh approximation.
inline Tensor geglu(const Tensor& gate_up, bool tanh = false) {
  return gated_linear_unit(gate_up, tanh ? GluActivation::gelu_tanh : GluActivation::gelu);
}
inline Tensor geglu(const Tensor& gate, const Tensor& up, bool tanh = false) {
  return gated_linear_unit(gate, up, tanh ? GluActivation::gelu_tanh : GluActivation::gelu);
}

}  // namespace gltensor
