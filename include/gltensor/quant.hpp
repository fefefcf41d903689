// Weight-only quantization for serving: linear layers whose weights are stored as int8 (one scale
// per output feature) or int4 (one scale per 32 input features), symmetric (no zero point), with
// f16 scales, as ggml's q8_0 / q4_0 (llama.cpp's ggml-quants.c) but with int8's scale per row.
// Quantization runs on the GPU; the linear op dequantizes in registers (decode GEMV) or in shared
// memory (prefill GEMM) and never materializes f32 weights.
//
// Byte layout of a weight W [N, K] (N = out_features, K = in_features), also docs/quantization.md.
// Every row is padded with zeros to Kp = ceil(K / 32) * 32 columns (Kb = Kp / 32 blocks; any K is
// accepted; the pad columns quantize to 0 and meet no input).
//   int8: data  uint8 [N, Kp]      q of W[n, k] at byte n * Kp + k, two's complement, |q| <= 127
//         scales float16 [N]       d_n = f16(max_k |W[n, k]| / 127)
//   int4: data  uint8 [N, Kp / 2]  block b of row n = the 16 bytes at (n * Kb + b) * 16; byte j
//                                  holds column 32b + j in its low nibble and 32b + j + 16 in its
//                                  high nibble, each stored as q + 8 (q in [-8, 7])
//         scales float16 [N, Kb]   d = f16(m / -8), m the block's value of largest magnitude
//                                  (so m itself maps to q = -8 exactly; values of the
//                                  other sign beyond 7.5 |d| clamp to q = 7, as q4_0's)
//   q = clamp(roundEven(W / d), lo, hi) with the f16-rounded d; d = 0 (and q = 0) for an all-zero
//   row or block. dequant(W)[n, k] = q * d, exact in f32.
// Weights must be finite: a NaN or Inf weight leaves its row (int8) or block (int4) unspecified.
//
// Checkpoints: to_state / from_state store a QuantizedWeight as safetensors entries
// "<name>.qdata" (U8) and "<name>.qscales" (F16), with metadata "<name>.quant" = "int8" or "int4"
// and "<name>.in_features" = K (save_safetensors / load_safetensors_metadata in nn.hpp).
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "gltensor/tensor.hpp"

namespace gltensor {

enum class QuantFormat {
  int8,  ///< one f16 scale per output feature
  int4,  ///< one f16 scale per 32 input features
};
/// "int8" / "int4".
const char* quant_format_name(QuantFormat f);
/// The inverse of quant_format_name; ValueError for other names.
QuantFormat quant_format_from_name(const std::string& name);

/// A quantized weight [out_features, in_features] (layout above). Frozen: it has no gradient
/// itself, but quantized_linear passes gradients to its input.
struct QuantizedWeight {
  QuantFormat format = QuantFormat::int8;
  std::int64_t out_features = 0, in_features = 0;
  Tensor data;    ///< uint8, packed q
  Tensor scales;  ///< float16
  /// Kp: in_features rounded up to a multiple of 32.
  std::int64_t padded_in() const { return (in_features + 31) / 32 * 32; }
  /// Bytes of data and scales on the device.
  std::int64_t nbytes() const;
};

/// Quantizes a float weight [N, K] (f32, f16 or bf16; any view) on the GPU.
/// Errors: ShapeError for a weight that is not 2-D; DTypeError for a non-float weight; LimitError
/// when an int8 row is too long for one workgroup's loops (K beyond ~2M columns on llvmpipe).
QuantizedWeight quantize(const Tensor& weight, QuantFormat format);

/// dequant(W): f32 [N, K], q * d per element (exact).
Tensor dequantize(const QuantizedWeight& w);

/// y = x @ dequant(W)^T + bias (torch.nn.functional.linear over the dequantized weight).
/// x [..., K] any float dtype (computed in f32), bias [N] or undefined -> f32 [..., N].
/// Rows of x up to 8 run the GEMV kernel, more the GEMM kernel (glsl/ops/qlinear.comp); K longer
/// than one invocation may loop is split into launches that add to the result. NaN and Inf in x
/// propagate as in the f32 product. Gradients flow to x (through dequant(W), materialized for the
/// backward only) and to bias; W is frozen.
/// Errors: ShapeError when x's last dim is not K or bias is not [N]; DTypeError for non-float
/// x or bias.
Tensor quantized_linear(const Tensor& x, const QuantizedWeight& w, const Tensor& bias = Tensor());

/// Adds w's entries to a safetensors state ("<name>.qdata", "<name>.qscales") and metadata
/// ("<name>.quant", "<name>.in_features").
void to_state(const QuantizedWeight& w, const std::string& name, std::map<std::string, Tensor>& tensors,
              std::map<std::string, std::string>& metadata);
/// The quantized weight `name` of a loaded state. ValueError naming the entry for a missing or
/// inconsistent entry (dtype, shape or metadata).
QuantizedWeight from_state(const std::string& name, const std::map<std::string, Tensor>& tensors,
                           const std::map<std::string, std::string>& metadata);
/// True when the metadata names a quantized weight `name`.
bool has_quantized(const std::string& name, const std::map<std::string, std::string>& metadata);

}  // namespace gltensor
