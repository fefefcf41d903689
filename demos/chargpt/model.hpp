// The chargpt model: the GPT of ../shared/gpu/torch_gpt_reference.py on gltensor. Byte tokens,
// an embedding tied to the output projection, pre-norm blocks (RMSNorm with weight, attention
// with rotary embeddings on q and k (half-split) and a causal mask, RMSNorm, SwiGLU MLP), no
// biases, a final RMSNorm. Matrices start as N(0, 0.02), norm weights as 1 (the reference's
// initialization).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gltensor/gltensor.hpp"

namespace chargpt {

struct GptConfig {
  std::int64_t layers = 6, d_model = 384, heads = 6, context = 256, ffn = 1024, vocab = 256;
  double eps = 1e-5, rope_base = 10000;
  /// "6 layers, d_model 384, 6 heads of 64, context 256, SwiGLU 1024"
  std::string describe() const;
};

class Gpt {
 public:
  /// Throws std::invalid_argument when d_model is not a multiple of heads or the head dim is odd.
  Gpt(const gltensor::Device& dev, const GptConfig& cfg, gltensor::Generator& gen);
  /// idx int32 [B, T] (T <= context) -> logits [B * T, vocab].
  gltensor::Tensor forward(const gltensor::Tensor& idx);
  /// Decoding: idx int32 [B, T], the tokens after those in the cache (positions from the cache's
  /// lengths; a prefill chunk or one token), appended to the cache, which advances by T ->
  /// logits [B, vocab] of the last token. No gradients.
  gltensor::Tensor forward_cached(const gltensor::Tensor& idx, gltensor::KVCache& cache);
  /// A cache for this model: [batch, heads, max_len, head dim] per layer.
  gltensor::KVCache make_cache(std::int64_t batch, std::int64_t max_len) const;
  gltensor::Device device() const { return emb_.device(); }
  /// Names as the reference's state_dict: emb.weight, blocks.<i>.{n1,qkv,o,n2,gate,up,down}.weight, norm.weight.
  std::vector<std::pair<std::string, gltensor::Tensor*>> named_parameters();
  /// Matrices (weight decay) and vectors (none), as the reference's two AdamW groups.
  std::vector<gltensor::Tensor*> matrices();
  std::vector<gltensor::Tensor*> vectors();
  std::vector<gltensor::Tensor*> parameters();
  std::int64_t num_parameters();
  /// The parameters and the configuration ("config": int32 [layers, d_model, heads, context, ffn, vocab]).
  std::map<std::string, gltensor::Tensor> state_dict();
  /// The configuration a checkpoint holds (std::runtime_error without one).
  static GptConfig config_of(const std::map<std::string, gltensor::Tensor>& state);
  /// Copies a checkpoint's parameters in (std::runtime_error naming a missing or misshapen one).
  void load(const std::map<std::string, gltensor::Tensor>& state);

  GptConfig cfg;
  /// When set, the blocks' products x @ W^T (W: qkv, o, gate, up, down of block `layer`) call
  /// proj(x, layer, name, W) instead of linear (quantized weights, LoRA adapters: quantize.hpp,
  /// lora.hpp). The tied output projection and the embedding stay f32.
  std::function<gltensor::Tensor(const gltensor::Tensor& x, std::size_t layer, const char* name,
                                 const gltensor::Tensor& w)>
      proj;

 private:
  gltensor::Tensor lin(const gltensor::Tensor& x, std::size_t layer, const char* name, const gltensor::Tensor& w) {
    return proj ? proj(x, layer, name, w) : gltensor::linear(x, w);
  }
  struct Block {
    gltensor::Tensor n1, qkv, o, n2, gate, up, down;
  };
  // The blocks over idx [B, T] -> the final norm's output [B, T, D]; with a cache, attention
  // over the cache (forward_cached), else causal attention over the T tokens.
  gltensor::Tensor hidden(const gltensor::Tensor& idx, gltensor::KVCache* cache);

  gltensor::Tensor emb_, norm_;
  std::vector<Block> blocks_;
};

}  // namespace chargpt
