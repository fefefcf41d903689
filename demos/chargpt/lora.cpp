#include "lora.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <stdexcept>

#include "data.hpp"

namespace chargpt {
using namespace gltensor;

namespace {
const char* const kParts[4] = {"q", "k", "v", "o"};

Tensor delta(const Tensor& x, const nn::LoraAdapter& a) { return mul(linear(linear(x, a.A), a.B), a.scale); }
}  // namespace

std::vector<Tensor*> GptLora::parameters() {
  std::vector<Tensor*> r;
  for (auto& b : blocks)
    for (auto& a : b) {
      r.push_back(&a.A);
      r.push_back(&a.B);
    }
  return r;
}

std::map<std::string, Tensor> GptLora::state_dict() const {
  std::map<std::string, Tensor> s;
  for (std::size_t l = 0; l < blocks.size(); ++l)
    for (int p = 0; p < 4; ++p) {
      const std::string n = "blocks." + std::to_string(l) + "." + kParts[p] + ".lora_";
      s[n + "A"] = detach(blocks[l][static_cast<std::size_t>(p)].A);
      s[n + "B"] = detach(blocks[l][static_cast<std::size_t>(p)].B);
    }
  return s;
}

GptLora make_lora(Gpt& m, std::int64_t rank, double alpha, Generator& gen) {
  GptLora lora;
  const Device dev = m.named_parameters().front().second->device();
  for (std::int64_t l = 0; l < m.cfg.layers; ++l) {
    std::array<nn::LoraAdapter, 4> b;
    for (auto& a : b) a = nn::lora_adapter(dev, m.cfg.d_model, m.cfg.d_model, rank, alpha, gen);
    lora.blocks.push_back(b);
  }
  return lora;
}

void use_lora(Gpt& m, const GptLora& lora) {
  auto base = m.proj;
  auto adapters = std::make_shared<GptLora>(lora);
  m.proj = [base, adapters](const Tensor& x, std::size_t layer, const char* name, const Tensor& w) {
    const Tensor y = base ? base(x, layer, name, w) : linear(x, w);
    const auto& b = adapters->blocks.at(layer);
    const std::string n = name;
    if (n == "qkv") return add(y, concat({delta(x, b[0]), delta(x, b[1]), delta(x, b[2])}, -1));
    if (n == "o") return add(y, delta(x, b[3]));
    return y;
  };
}

void merge_lora(Gpt& m, const GptLora& lora) {
  NoGradGuard ng;
  const std::int64_t D = m.cfg.d_model;
  for (auto& [n, t] : m.named_parameters())
    for (std::size_t l = 0; l < lora.blocks.size(); ++l) {
      const std::string p = "blocks." + std::to_string(l) + ".";
      if (n == p + "qkv.weight")
        for (std::int64_t i = 0; i < 3; ++i) {
          Tensor part = t->narrow(0, i * D, D);
          part.copy_(nn::merge_lora(part, lora.blocks[l][static_cast<std::size_t>(i)]));
        }
      if (n == p + "o.weight") t->copy_(nn::merge_lora(*t, lora.blocks[l][3]));
    }
}

int run_lora(Gpt& m, const Device& dev, const LoraRun& r, bool quantized, const EvalFn& eval) {
  std::ifstream f(r.data, std::ios::binary);
  if (!f) throw std::runtime_error("--lora: cannot read " + r.data);
  const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const std::size_t cut = static_cast<std::size_t>(static_cast<double>(bytes.size()) * 0.9);
  const std::vector<std::uint8_t> train(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut));
  const std::vector<std::uint8_t> val(bytes.begin() + static_cast<std::ptrdiff_t>(cut), bytes.end());
  const std::int64_t T = m.cfg.context;
  if (val.size() < static_cast<std::size_t>(T + 2))
    throw std::runtime_error("--lora: " + r.data + " is too short (" + std::to_string(bytes.size()) +
                             " bytes; its last 10% must hold a window of " + std::to_string(T + 2) + ")");
  std::printf(
      "lora: %s, %zu bytes for training, %zu for validation; rank %lld, alpha %g on Q/K/V/O of %lld blocks (%s base)\n",
      r.data.c_str(), train.size(), val.size(), static_cast<long long>(r.rank), r.alpha,
      static_cast<long long>(m.cfg.layers), quantized ? "quantized" : "f32");
  const double before = eval(m, val);
  std::printf("lora: validation loss before %.4f (perplexity %.2f)\n", before, std::exp(before));
  std::fflush(stdout);
  Generator gen(r.seed);
  GptLora lora = make_lora(m, r.rank, r.alpha, gen);
  auto base = m.proj;
  use_lora(m, lora);
  std::int64_t n_params = 0;
  for (Tensor* t : lora.parameters()) n_params += t->numel();
  nn::AdamW opt({{lora.parameters(), 0.0}}, r.lr, {0.9, 0.95, 1e-8, 0.0, true});
  std::mt19937_64 rng(r.seed);
  Tensor loss;
  for (std::int64_t i = 0; i < r.steps; ++i) {
    auto [x, y] = random_batch(dev, train, r.batch, T, rng);
    opt.zero_grad();
    loss = cross_entropy(m.forward(x), y.reshape({-1}));
    backward(loss);
    opt.step();
  }
  const double after = eval(m, val);
  std::printf(
      "lora: %lld steps of %lld x %lld bytes, %lld adapter parameters (the base frozen): last train loss %.4f\n"
      "lora: validation loss after %.4f (perplexity %.2f): %s\n",
      static_cast<long long>(r.steps), static_cast<long long>(r.batch), static_cast<long long>(T),
      static_cast<long long>(n_params), r.steps ? loss.item() : NAN, after, std::exp(after),
      after < before ? "improved" : "no improvement");
  if (!r.out.empty()) {
    nn::save_safetensors(r.out, lora.state_dict());
    std::printf("lora: wrote %s\n", r.out.c_str());
  }
  if (!quantized) {
    m.proj = base;
    merge_lora(m, lora);
    const double merged = eval(m, val);
    std::printf("lora: merged into the f32 weights: validation loss %.4f (adapters %.4f, difference %.2g): %s\n",
                merged, after, std::fabs(merged - after), std::fabs(merged - after) <= 1e-3 ? "the same" : "DIFFERENT");
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace chargpt
