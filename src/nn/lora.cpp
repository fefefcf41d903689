// Low-rank adapters (include/gltensor/lora.hpp): composites of linear / quantized_linear and
// matmul, so gradients come from those ops' autograd nodes; the base weight is read detached.
#include "gltensor/lora.hpp"

#include <cmath>

#include "gltensor/autograd.hpp"
#include "gltensor/errors.hpp"
#include "gltensor/linalg.hpp"
#include "gltensor/ops.hpp"

namespace gltensor::nn {

namespace {

void check_adapter(const char* op, std::int64_t out, std::int64_t in, const LoraAdapter& a) {
  if (!a.A.defined() || !a.B.defined() || a.A.dim() != 2 || a.B.dim() != 2 || a.A.size(1) != in || a.B.size(0) != out ||
      a.B.size(1) != a.A.size(0))
    throw ShapeError(std::string("gltensor::") + op + ": adapter A " +
                     (a.A.defined() ? to_string(a.A.shape()) : "none") + " and B " +
                     (a.B.defined() ? to_string(a.B.shape()) : "none") + " must be [r, " + std::to_string(in) +
                     "] and [" + std::to_string(out) + ", r] for a weight [" + std::to_string(out) + ", " +
                     std::to_string(in) + "]");
}

// base + scale * (x @ A^T) @ B^T
Tensor add_delta(const Tensor& base, const Tensor& x, const LoraAdapter& a) {
  return add(base, linear(linear(x, a.A), a.B), a.scale);
}

}  // namespace

LoraAdapter lora_adapter(const Device& dev, std::int64_t in, std::int64_t out, std::int64_t r, double alpha,
                         Generator& gen) {
  if (in < 1 || out < 1 || r < 1 || r > std::min(in, out))
    throw ValueError("gltensor::lora_adapter: rank " + std::to_string(r) + " must be in [1, min(in " +
                     std::to_string(in) + ", out " + std::to_string(out) + ")]");
  LoraAdapter a;
  const double bound = 1.0 / std::sqrt(static_cast<double>(in));
  a.A = rand(dev, {r, in}, gen, -bound, bound);
  a.B = zeros(dev, {out, r});
  requires_grad_(a.A);
  requires_grad_(a.B);
  a.scale = alpha / static_cast<double>(r);
  return a;
}

Tensor lora_linear(const Tensor& x, const Tensor& weight, const LoraAdapter& adapter, const Tensor& bias) {
  if (!weight.defined() || weight.dim() != 2)
    throw ShapeError("gltensor::lora_linear: the base weight must be [out, in], got " +
                     (weight.defined() ? to_string(weight.shape()) : std::string("none")));
  check_adapter("lora_linear", weight.size(0), weight.size(1), adapter);
  return add_delta(linear(x, detach(weight), bias), x, adapter);
}

Tensor lora_linear(const Tensor& x, const QuantizedWeight& weight, const LoraAdapter& adapter, const Tensor& bias) {
  check_adapter("lora_linear", weight.out_features, weight.in_features, adapter);
  return add_delta(quantized_linear(x, weight, bias), x, adapter);
}

Tensor merge_lora(const Tensor& weight, const LoraAdapter& adapter) {
  if (!weight.defined() || weight.dim() != 2)
    throw ShapeError("gltensor::merge_lora: the base weight must be [out, in], got " +
                     (weight.defined() ? to_string(weight.shape()) : std::string("none")));
  check_adapter("merge_lora", weight.size(0), weight.size(1), adapter);
  NoGradGuard ng;
  return add(detach(weight).to(DType::f32), matmul(detach(adapter.B), detach(adapter.A)), adapter.scale);
}

}  // namespace gltensor::nn
