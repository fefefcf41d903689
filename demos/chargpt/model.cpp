#include "model.hpp"

#include <cstdio>
#include <stdexcept>

namespace chargpt {
using namespace gltensor;

std::string GptConfig::describe() const {
  char b[200];
  std::snprintf(b, sizeof b, "%lld layers, d_model %lld, %lld heads of %lld, context %lld, SwiGLU %lld",
                static_cast<long long>(layers), static_cast<long long>(d_model), static_cast<long long>(heads),
                static_cast<long long>(heads > 0 ? d_model / heads : 0), static_cast<long long>(context),
                static_cast<long long>(ffn));
  return b;
}

Gpt::Gpt(const Device& dev, const GptConfig& c, Generator& gen) : cfg(c) {
  if (c.heads <= 0 || c.d_model % c.heads != 0 || (c.d_model / c.heads) % 2 != 0)
    throw std::invalid_argument("--d-model " + std::to_string(c.d_model) + " must be a multiple of --heads " +
                                std::to_string(c.heads) + " with an even head dim (rotary pairs)");
  auto matrix = [&](std::int64_t rows, std::int64_t cols) {
    Tensor w = randn(dev, {rows, cols}, gen, 0.0, 0.02);
    return requires_grad_(w);
  };
  auto ones_vec = [&]() {
    Tensor w = ones(dev, {c.d_model});
    return requires_grad_(w);
  };
  emb_ = matrix(c.vocab, c.d_model);
  for (std::int64_t l = 0; l < c.layers; ++l) {
    Block b;
    b.n1 = ones_vec();
    b.qkv = matrix(3 * c.d_model, c.d_model);
    b.o = matrix(c.d_model, c.d_model);
    b.n2 = ones_vec();
    b.gate = matrix(c.ffn, c.d_model);
    b.up = matrix(c.ffn, c.d_model);
    b.down = matrix(c.d_model, c.ffn);
    blocks_.push_back(b);
  }
  norm_ = ones_vec();
}

Tensor Gpt::hidden(const Tensor& idx, KVCache* cache) {
  const std::int64_t B = idx.size(0), T = idx.size(1), D = cfg.d_model, H = cfg.heads, HD = D / H;
  RopeOptions ro;
  ro.base = cfg.rope_base;
  const Tensor pos = cache ? cache->positions(T) : Tensor();  // the cached tokens come first
  const auto rotate = [&](const Tensor& t) { return cache ? rope(t, pos, ro) : rope(t, ro); };
  Tensor x = embedding(emb_, idx);  // [B, T, D]: the residual stream
  Tensor h = rms_norm(x, 1, blocks_.empty() ? norm_ : blocks_[0].n1, cfg.eps);
  for (std::size_t l = 0; l < blocks_.size(); ++l) {
    const Block& b = blocks_[l];
    // Attention: q, k, v [B, H, T, HD] as views of one projection; rotary embeddings on q and k.
    Tensor qkv = lin(h, l, "qkv", b.qkv).view({B, T, 3, H, HD}).permute({2, 0, 3, 1, 4});
    Tensor q = rotate(qkv.select(0, 0)), k = rotate(qkv.select(0, 1));
    Tensor y;
    if (cache) {
      cache->append(static_cast<std::int64_t>(l), k, qkv.select(0, 2));
      y = cache->attention(static_cast<std::int64_t>(l), q);
    } else {
      y = scaled_dot_product_attention(q, k, qkv.select(0, 2), Tensor(), true);
    }
    Tensor a = lin(y.transpose(1, 2).reshape({B, T, D}), l, "o", b.o);
    AddRmsNorm r = add_rms_norm(x, a, b.n2, cfg.eps);  // x + attention, and its norm
    Tensor m = lin(swiglu(lin(r.normed, l, "gate", b.gate), lin(r.normed, l, "up", b.up)), l, "down", b.down);
    // x + MLP, normalized for the next block (or by the final norm).
    AddRmsNorm n = add_rms_norm(r.sum, m, l + 1 < blocks_.size() ? blocks_[l + 1].n1 : norm_, cfg.eps);
    x = n.sum;
    h = n.normed;
  }
  if (cache) cache->advance(T);
  return h;
}

Tensor Gpt::forward(const Tensor& idx) {
  const std::int64_t B = idx.size(0), T = idx.size(1);
  return linear(hidden(idx, nullptr).reshape({B * T, cfg.d_model}), emb_);  // tied output projection: h @ emb^T
}

Tensor Gpt::forward_cached(const Tensor& idx, KVCache& cache) {
  NoGradGuard ng;
  return linear(hidden(idx, &cache).select(1, idx.size(1) - 1), emb_);
}

KVCache Gpt::make_cache(std::int64_t batch, std::int64_t max_len) const {
  return KVCache(emb_.device(), cfg.layers, batch, cfg.heads, max_len, cfg.d_model / cfg.heads);
}

std::vector<std::pair<std::string, Tensor*>> Gpt::named_parameters() {
  std::vector<std::pair<std::string, Tensor*>> r{{"emb.weight", &emb_}};
  for (std::size_t l = 0; l < blocks_.size(); ++l) {
    const std::string p = "blocks." + std::to_string(l) + ".";
    Block& b = blocks_[l];
    for (auto [n, t] : {std::pair{"n1", &b.n1},
                        {"qkv", &b.qkv},
                        {"o", &b.o},
                        {"n2", &b.n2},
                        {"gate", &b.gate},
                        {"up", &b.up},
                        {"down", &b.down}})
      r.emplace_back(p + n + ".weight", t);
  }
  r.emplace_back("norm.weight", &norm_);
  return r;
}

std::vector<Tensor*> Gpt::parameters() {
  std::vector<Tensor*> r;
  for (auto& [n, t] : named_parameters()) r.push_back(t);
  return r;
}
std::vector<Tensor*> Gpt::matrices() {
  std::vector<Tensor*> r;
  for (Tensor* t : parameters())
    if (t->dim() == 2) r.push_back(t);
  return r;
}
std::vector<Tensor*> Gpt::vectors() {
  std::vector<Tensor*> r;
  for (Tensor* t : parameters())
    if (t->dim() < 2) r.push_back(t);
  return r;
}
std::int64_t Gpt::num_parameters() {
  std::int64_t n = 0;
  for (Tensor* t : parameters()) n += t->numel();
  return n;
}

std::map<std::string, Tensor> Gpt::state_dict() {
  std::map<std::string, Tensor> s;
  for (auto& [n, t] : named_parameters()) s[n] = detach(*t);
  const std::vector<std::int32_t> c = {static_cast<std::int32_t>(cfg.layers), static_cast<std::int32_t>(cfg.d_model),
                                       static_cast<std::int32_t>(cfg.heads),  static_cast<std::int32_t>(cfg.context),
                                       static_cast<std::int32_t>(cfg.ffn),    static_cast<std::int32_t>(cfg.vocab)};
  s["config"] = Tensor::from_host(emb_.device(), std::span<const std::int32_t>(c), {6});
  return s;
}

GptConfig Gpt::config_of(const std::map<std::string, Tensor>& state) {
  auto it = state.find("config");
  if (it == state.end() || it->second.numel() != 6)
    throw std::runtime_error("not a chargpt checkpoint (no 6-value 'config' tensor)");
  const auto v = it->second.to_int_vector();
  GptConfig c;
  c.layers = v[0], c.d_model = v[1], c.heads = v[2], c.context = v[3], c.ffn = v[4], c.vocab = v[5];
  return c;
}

void Gpt::load(const std::map<std::string, Tensor>& state) {
  for (auto& [n, t] : named_parameters()) {
    auto it = state.find(n);
    if (it == state.end()) throw std::runtime_error("checkpoint has no tensor " + n);
    if (it->second.shape() != t->shape())
      throw std::runtime_error("checkpoint tensor " + n + " is " + to_string(it->second.shape()) + ", the model's " +
                               to_string(t->shape()));
    NoGradGuard ng;
    t->copy_(it->second.to(DType::f32));
  }
}

}  // namespace chargpt
