// chargpt fine-tuning with LoRA adapters (--lora DATA): rank-r adapters on the attention's Q, K, V
// and output projections of every block (gltensor/lora.hpp), trained with AdamW on a text file
// while the base model (f32 or quantized) stays frozen; then merged into an f32 base.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "gltensor/gltensor.hpp"
#include "model.hpp"
#include "quantize.hpp"

namespace chargpt {

/// Per block: the adapters of Q, K, V (the three parts of the fused qkv weight) and O.
struct GptLora {
  std::vector<std::array<gltensor::nn::LoraAdapter, 4>> blocks;
  std::vector<gltensor::Tensor*> parameters();
  /// "blocks.<i>.<q|k|v|o>.lora_A" / "lora_B" -> the tensors.
  std::map<std::string, gltensor::Tensor> state_dict() const;
};

GptLora make_lora(Gpt& m, std::int64_t rank, double alpha, gltensor::Generator& gen);
/// Adds the adapters to m's Q/K/V/O products, over whatever m.proj did before (f32 or quantized).
void use_lora(Gpt& m, const GptLora& lora);
/// Folds the adapters into m's f32 qkv and o weights (call after resetting m.proj).
void merge_lora(Gpt& m, const GptLora& lora);

struct LoraRun {
  std::string data;  ///< the text file to fine-tune on (90% training, the last 10% validation)
  std::int64_t rank = 8, steps = 100, batch = 8, eval_batches = 8;
  double alpha = 16, lr = 2e-3;
  std::uint64_t seed = 1;
  std::string out;  ///< adapters written here (safetensors)
};
/// Evaluates the frozen base on the file's validation split, trains the adapters, evaluates again,
/// writes the adapters, and (for an f32 base, quantized == false) merges them and evaluates the
/// merged model. Prints each step's result; returns 0.
int run_lora(Gpt& m, const gltensor::Device& dev, const LoraRun& r, bool quantized, const EvalFn& eval);

}  // namespace chargpt
