// LoRA adapters (gltensor/lora.hpp) over f32 and quantized base weights: forward against float64,
// gradients of x, A and B against finite differences with the base frozen, merging, errors.
#include "../ops/quant_ref.hpp"
#include "grad_check.hpp"
#include "test_util.hpp"

using namespace gltensor;
using namespace glt_test;

namespace {

// base [M, out] + scale * (x @ A^T) @ B^T in float64.
std::vector<double> lora_ref(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& A,
                             const std::vector<double>& B, double scale, std::int64_t M, std::int64_t out,
                             std::int64_t in, std::int64_t r) {
  std::vector<double> y = linear_ref(x, w, {}, M, out, in);
  const std::vector<double> xa = linear_ref(x, A, {}, M, r, in);
  const std::vector<double> d = linear_ref(xa, B, {}, M, out, r);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] += scale * d[i];
  return y;
}

}  // namespace

TEST(Lora, ForwardAndMerge) {
  GLT_RNG(rng);
  Generator gen(rng());
  const std::int64_t M = 7, in = 40, out = 24, r = 4;
  const auto w = uniform(rng, static_cast<std::size_t>(out * in));
  const Tensor W = Tensor::from_host(device(), w, {out, in});
  const auto x = uniform(rng, static_cast<std::size_t>(M * in));
  const Tensor X = Tensor::from_host(device(), x, {M, in});
  nn::LoraAdapter a = nn::lora_adapter(device(), in, out, r, 8.0, gen);
  EXPECT_EQ(a.rank(), r);
  EXPECT_DOUBLE_EQ(a.scale, 2.0);
  // A new adapter (B = 0) leaves the layer unchanged.
  EXPECT_TRUE(
      close(nn::lora_linear(X, W, a).to_vector(), linear_ref(to_double(x), to_double(w), {}, M, out, in), 1e-5, 1e-5));
  const auto bv = uniform(rng, static_cast<std::size_t>(out * r));
  a.B = Tensor::from_host(device(), bv, {out, r});
  const auto av = a.A.to_vector();
  const auto ref = lora_ref(to_double(x), to_double(w), to_double(av), to_double(bv), a.scale, M, out, in, r);
  EXPECT_TRUE(close(nn::lora_linear(X, W, a).to_vector(), ref, 1e-4, 1e-4));
  // Merged weight, no adapter: the same outputs.
  EXPECT_TRUE(close(linear(X, nn::merge_lora(W, a)).to_vector(), ref, 1e-4, 1e-4));
  // Quantized base: the decoded weights stand in for W.
  for (QuantFormat f : {QuantFormat::int8, QuantFormat::int4}) {
    const QuantizedWeight q = quantize(W, f);
    const auto qref = lora_ref(to_double(x), decode(q).w, to_double(av), to_double(bv), a.scale, M, out, in, r);
    EXPECT_TRUE(close(nn::lora_linear(X, q, a).to_vector(), qref, 1e-4, 1e-4)) << quant_format_name(f);
    EXPECT_TRUE(close(linear(X, nn::merge_lora(dequantize(q), a)).to_vector(), qref, 1e-4, 1e-4));
  }
}

TEST(Lora, GradientsWithFrozenBase) {
  GLT_RNG(rng);
  const std::int64_t M = 3, in = 33, out = 10, r = 3;
  const double scale = 1.5;
  const auto w = uniform(rng, static_cast<std::size_t>(out * in));
  Tensor W = Tensor::from_host(device(), w, {out, in});
  const QuantizedWeight q = quantize(W, QuantFormat::int4);
  const std::vector<double> wq = decode(q).w;
  requires_grad_(W);  // frozen even so: lora_linear reads it detached
  for (bool quantized : {false, true}) {
    SCOPED_TRACE(quantized ? "int4 base" : "f32 base");
    const std::vector<double>& wd = quantized ? wq : to_double(w);
    EXPECT_TRUE(grad_check(
        rng, {{M, in}, {r, in}, {out, r}},
        [&](const std::vector<Tensor>& t) {
          const nn::LoraAdapter a{t[1], t[2], scale};
          return quantized ? nn::lora_linear(t[0], q, a) : nn::lora_linear(t[0], W, a);
        },
        [&](const std::vector<HostT>& t) { return lora_ref(t[0].v, wd, t[1].v, t[2].v, scale, M, out, in, r); }));
  }
  EXPECT_FALSE(grad(W).defined());
}

TEST(Lora, Errors) {
  Generator gen(1);
  const Tensor W = zeros(device(), {6, 8});
  EXPECT_THROW(nn::lora_adapter(device(), 8, 6, 0, 1.0, gen), ValueError);
  EXPECT_THROW(nn::lora_adapter(device(), 8, 6, 7, 1.0, gen), ValueError);
  const nn::LoraAdapter wrong = nn::lora_adapter(device(), 6, 8, 2, 1.0, gen);  // [8, 6]'s adapter
  const Tensor x = zeros(device(), {2, 8});
  EXPECT_THROW(nn::lora_linear(x, W, wrong), ShapeError);
  EXPECT_THROW(nn::lora_linear(x, quantize(W, QuantFormat::int8), wrong), ShapeError);
  EXPECT_THROW(nn::merge_lora(W, wrong), ShapeError);
  EXPECT_THROW(nn::merge_lora(W.view({48}), wrong), ShapeError);
}
