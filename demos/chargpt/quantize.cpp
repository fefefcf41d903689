#include "quantize.hpp"

#include <cmath>
#include <cstdio>
#include <memory>

namespace chargpt {
using namespace gltensor;

namespace {
std::string weight_name(std::size_t layer, const char* name) {
  return "blocks." + std::to_string(layer) + "." + name + ".weight";
}
bool is_block_matrix(const std::string& n) {
  return n.rfind("blocks.", 0) == 0 &&
         (n.ends_with(".qkv.weight") || n.ends_with(".o.weight") || n.ends_with(".gate.weight") ||
          n.ends_with(".up.weight") || n.ends_with(".down.weight"));
}
}  // namespace

QuantizedBlocks quantize_blocks(Gpt& m, QuantFormat format) {
  QuantizedBlocks q;
  for (auto& [n, t] : m.named_parameters())
    if (is_block_matrix(n)) q[n] = quantize(*t, format);
  return q;
}

void use_quantized(Gpt& m, const QuantizedBlocks& q) {
  auto weights = std::make_shared<QuantizedBlocks>(q);
  m.proj = [weights](const Tensor& x, std::size_t layer, const char* name, const Tensor& w) {
    auto it = weights->find(weight_name(layer, name));
    return it == weights->end() ? linear(x, w) : quantized_linear(x, it->second);
  };
}

void save_quantized(const std::string& path, Gpt& m, const QuantizedBlocks& q) {
  std::map<std::string, Tensor> state = m.state_dict();
  std::map<std::string, std::string> meta;
  for (const auto& [n, w] : q) {
    state.erase(n);
    to_state(w, n, state, meta);
  }
  nn::save_safetensors(path, state, meta);
}

QuantizedBlocks load_quantized(std::map<std::string, Tensor>& state, const std::string& path) {
  const auto meta = nn::load_safetensors_metadata(path);
  QuantizedBlocks q;
  for (const auto& [key, value] : meta) {
    if (!key.ends_with(".quant")) continue;
    const std::string n = key.substr(0, key.size() - 6);
    q[n] = from_state(n, state, meta);
    state[n] = dequantize(q[n]);
  }
  return q;
}

std::string quantized_path(const std::string& checkpoint, QuantFormat format) {
  std::string stem = checkpoint;
  if (stem.ends_with(".safetensors")) stem.resize(stem.size() - 12);
  return stem + "." + quant_format_name(format) + ".safetensors";
}

void quantize_and_report(Gpt& m, QuantFormat format, double f32_loss, const std::vector<std::uint8_t>& split,
                         const EvalFn& eval, const std::string& path) {
  const QuantizedBlocks q = quantize_blocks(m, format);
  std::int64_t f32_bytes = 0, q_bytes = 0;
  for (const auto& [n, w] : q) {
    f32_bytes += 4 * w.out_features * w.in_features;
    q_bytes += w.nbytes();
  }
  use_quantized(m, q);
  const double loss = eval(m, split);
  const double ratio = std::exp(loss - f32_loss), goal = format == QuantFormat::int8 ? 1.01 : 1.05;
  std::printf(
      "%s: block matrices %.2f MB -> %.2f MB; validation loss %.4f (perplexity %.2f), perplexity ratio %.4f "
      "to f32 (goal <= %.2f): %s\n",
      quant_format_name(format), static_cast<double>(f32_bytes) / 1e6, static_cast<double>(q_bytes) / 1e6, loss,
      std::exp(loss), ratio, goal, ratio <= goal ? "within" : "OVER");
  save_quantized(path, m, q);
  std::printf("wrote %s\n", path.c_str());
  std::fflush(stdout);
}

}  // namespace chargpt
