// chargpt with weight-only quantized block matrices (--quantize int8|int4): the qkv, o, gate, up
// and down weights of every block as gltensor QuantizedWeights, run by quantized_linear through
// Gpt::proj. The embedding (tied to the output projection) and the norm weights stay f32.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "gltensor/gltensor.hpp"
#include "model.hpp"

namespace chargpt {

/// Quantized weights by parameter name (blocks.<i>.<qkv|o|gate|up|down>.weight).
using QuantizedBlocks = std::map<std::string, gltensor::QuantizedWeight>;

/// Quantizes m's block matrices (on the GPU).
QuantizedBlocks quantize_blocks(Gpt& m, gltensor::QuantFormat format);
/// Routes m's block products through the quantized weights (kept alive by the hook).
void use_quantized(Gpt& m, const QuantizedBlocks& q);
/// m's state with the quantized matrices in place of their f32 values, the format in the metadata.
void save_quantized(const std::string& path, Gpt& m, const QuantizedBlocks& q);
/// The quantized weights of a checkpoint written by save_quantized (empty for an f32 one); their
/// dequantized values are added to `state` under the f32 names, so that Gpt::load accepts it.
QuantizedBlocks load_quantized(std::map<std::string, gltensor::Tensor>& state, const std::string& path);
/// "<folder>/<stem>.int4.safetensors" for "<folder>/<stem>.safetensors".
std::string quantized_path(const std::string& checkpoint, gltensor::QuantFormat format);

/// Loss of m on a split (the caller's evaluation: the same windows every call).
using EvalFn = std::function<double(Gpt& m, const std::vector<std::uint8_t>& split)>;
/// Quantizes m's block matrices, routes m through them, evaluates the split and prints the loss,
/// perplexity and its ratio to the f32 model's (f32_loss) against the goal (int8 1%, int4 5%);
/// writes the quantized checkpoint to `path`.
void quantize_and_report(Gpt& m, gltensor::QuantFormat format, double f32_loss, const std::vector<std::uint8_t>& split,
                         const EvalFn& eval, const std::string& path);

}  // namespace chargpt
