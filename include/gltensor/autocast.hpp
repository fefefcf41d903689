// Automatic mixed precision: an autocast scope (torch.autocast(device_type, dtype=torch.float16)).
//
// While an Autocast is alive on a thread, ops of the low-precision list compute on f16 (or bf16)
// copies of their float32 inputs and return f16: matmul, gemm, linear, conv1d, conv2d and
// scaled_dot_product_attention (storage and bandwidth halve; matmul keeps f32 accumulation, and
// f32 math unless GLTENSOR_PRECISION=f16-matmul: docs/precision.md). Ops of the float32 list
// compute on float32 copies of f16/bf16 inputs and return float32: softmax, log_softmax,
// layer_norm, group_norm, rms_norm, cross_entropy, nll_loss, mse_loss (reductions, norms and
// losses, whose range and accuracy need it). Every other op follows its inputs' dtypes (PyTorch's
// promotion), so activations after an f16 matmul stay f16. The casts are ordinary differentiable
// `to()` ops: gradients reach float32 parameters (the master weights the optimizers update) as
// float32. Pair with nn::GradScaler (loss scaling, inf/NaN steps skipped) for training.
// Scopes nest (an inner Autocast(false) turns it off); the state is per thread, as torch's.
#pragma once
#include "gltensor/dtype.hpp"

namespace gltensor {

class Autocast {
 public:
  /// dtype: DType::f16 or DType::bf16 (ValueError otherwise).
  explicit Autocast(bool enabled = true, DType dtype = DType::f16);
  ~Autocast();
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

 private:
  bool prev_enabled_;
  DType prev_dtype_;
};

/// Whether an Autocast scope is on for this thread, and its low-precision dtype.
bool autocast_enabled();
DType autocast_dtype();

}  // namespace gltensor
