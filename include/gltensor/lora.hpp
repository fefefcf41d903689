// Low-rank adapters on linear layers (Hu et al., "LoRA: Low-Rank Adaptation of Large Language
// Models", 2021; initialization and scaling as Hugging Face PEFT's LoraLayer): the frozen base
// weight W [out, in] (f32 or a QuantizedWeight: QLoRA-style serving) plus a trainable product
//
//   y = x @ W^T + bias + (alpha / r) * (x @ A^T) @ B^T,   A [r, in], B [out, r]
//
// A starts as U(-1/sqrt(in), 1/sqrt(in)) (PEFT's kaiming_uniform_(a = sqrt(5)) bound), B as zeros,
// so a new adapter leaves the layer's output unchanged. Gradients reach A, B, x and bias; never W
// (it is read detached). merge_lora folds an adapter into an f32 weight: W + (alpha / r) * B @ A.
#pragma once
#include <cstdint>

#include "gltensor/quant.hpp"
#include "gltensor/random.hpp"
#include "gltensor/tensor.hpp"

namespace gltensor::nn {

struct LoraAdapter {
  Tensor A;            ///< f32 [r, in], requires grad
  Tensor B;            ///< f32 [out, r], requires grad
  double scale = 1.0;  ///< alpha / r
  std::int64_t rank() const { return A.defined() ? A.size(0) : 0; }
};

/// A new adapter for a layer [out, in] of rank r with scale alpha / r.
/// Errors: ValueError for r < 1, r > min(in, out) or in, out < 1.
LoraAdapter lora_adapter(const Device& dev, std::int64_t in, std::int64_t out, std::int64_t r, double alpha,
                         Generator& gen);

/// The adapted layer over an f32 (f16, bf16) base weight [out, in]: x [..., in] -> [..., out].
/// Errors: ShapeError when W, A, B, bias and x disagree (naming all shapes).
Tensor lora_linear(const Tensor& x, const Tensor& weight, const LoraAdapter& adapter, const Tensor& bias = Tensor());
/// The same over a quantized base (quantized_linear for the base product).
Tensor lora_linear(const Tensor& x, const QuantizedWeight& weight, const LoraAdapter& adapter,
                   const Tensor& bias = Tensor());

/// W + scale * B @ A as a new f32 tensor [out, in] (no gradient recorded): lora_linear's output
/// with the merged weight and no adapter equals the adapter's output (up to f32 rounding).
/// Errors: ShapeError as lora_linear.
Tensor merge_lora(const Tensor& weight, const LoraAdapter& adapter);

}  // namespace gltensor::nn
