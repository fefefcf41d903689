// Modules: Linear, Conv2d, BatchNorm2d, ReLU, Flatten, MaxPool2d, Dropout, Sequential.
#include <cmath>
#include <typeinfo>

#include "gltensor/autograd.hpp"
#include "gltensor/errors.hpp"
#include "gltensor/nn.hpp"
#include "gltensor/ops.hpp"

namespace gltensor::nn {

std::vector<Tensor*> Module::parameters() {
  std::vector<Tensor*> out;
  for (auto& [n, t] : named_parameters()) out.push_back(t);
  return out;
}

namespace {
Tensor uniform_param(const Device& dev, const Shape& shape, double bound, Generator& gen) {
  Tensor t = rand(dev, shape, gen, -bound, bound);
  requires_grad_(t);
  return t;
}
}  // namespace

Linear::Linear(const Device& dev, std::int64_t in, std::int64_t out, Generator& gen, bool has_bias, Activation act)
    : activation(act) {
  if (in <= 0 || out <= 0) throw ValueError("gltensor::nn::Linear: sizes must be positive");
  const double bound = 1.0 / std::sqrt(static_cast<double>(in));
  weight = uniform_param(dev, {out, in}, bound, gen);
  if (has_bias) bias = uniform_param(dev, {out}, bound, gen);
}
Tensor Linear::forward(const Tensor& x) { return linear(x, weight, bias, activation); }
std::vector<std::pair<std::string, Tensor*>> Linear::named_parameters() {
  std::vector<std::pair<std::string, Tensor*>> p{{"weight", &weight}};
  if (bias.defined()) p.push_back({"bias", &bias});
  return p;
}

Conv2d::Conv2d(const Device& dev, std::int64_t in, std::int64_t out, std::int64_t k, Generator& gen, Conv2dOptions opt,
               bool has_bias)
    : options(opt) {
  if (in <= 0 || out <= 0 || k <= 0 || in % opt.groups || out % opt.groups)
    throw ValueError("gltensor::nn::Conv2d: channels and kernel must be positive and divisible by groups");
  const double bound = 1.0 / std::sqrt(static_cast<double>(in / opt.groups * k * k));
  weight = uniform_param(dev, {out, in / opt.groups, k, k}, bound, gen);
  if (has_bias) bias = uniform_param(dev, {out}, bound, gen);
}
Tensor Conv2d::forward(const Tensor& x) { return conv2d(x, weight, bias, options); }
std::vector<std::pair<std::string, Tensor*>> Conv2d::named_parameters() {
  std::vector<std::pair<std::string, Tensor*>> p{{"weight", &weight}};
  if (bias.defined()) p.push_back({"bias", &bias});
  return p;
}

BatchNorm2d::BatchNorm2d(const Device& dev, std::int64_t c, double momentum, double eps)
    : momentum(momentum), eps(eps) {
  weight = ones(dev, {c});
  bias = zeros(dev, {c});
  requires_grad_(weight);
  requires_grad_(bias);
  running_mean = zeros(dev, {c});
  running_var = ones(dev, {c});
}
Tensor BatchNorm2d::forward(const Tensor& x) { return forward(x, Activation::none); }
Tensor BatchNorm2d::forward(const Tensor& x, Activation act) {
  return batch_norm(x, running_mean, running_var, weight, bias, training_, momentum, eps, act);
}
std::vector<std::pair<std::string, Tensor*>> BatchNorm2d::named_parameters() {
  return {{"weight", &weight}, {"bias", &bias}};
}
std::vector<std::pair<std::string, Tensor*>> BatchNorm2d::named_buffers() {
  return {{"running_mean", &running_mean}, {"running_var", &running_var}};
}

Tensor ReLU::forward(const Tensor& x) { return relu(x); }
Tensor Flatten::forward(const Tensor& x) { return x.flatten(1); }
Tensor MaxPool2d::forward(const Tensor& x) { return max_pool2d(x, options); }
Tensor Dropout::forward(const Tensor& x) {
  if (!training_ || p == 0) return x;
  // mask * x / (1 - p) in one dispatch; the backward draws the mask again (gltensor::dropout)
  if (!device_offset) return dropout(x, p, *gen);
  // Made from host data, not by a dispatch: a recording of the first forward must not reset it.
  const std::int32_t zero = 0;
  if (!offset.defined()) offset = Tensor::from_host(x.device(), std::span<const std::int32_t>(&zero, 1), {1});
  Tensor y = dropout(x, p, *gen, offset);
  add_(offset, 1.0);  // the next forward's (a replay's) draw
  return y;
}

Sequential& Sequential::add(std::shared_ptr<Module> m) {
  layers.push_back(std::move(m));
  return *this;
}
namespace {
// The module itself if it is exactly a T, not a subclass (whose forward may differ: the fusion
// rules below would skip it).
template <class T>
T* exactly(const std::shared_ptr<Module>& m) {
  if (!m) return nullptr;
  const Module& ref = *m;
  return typeid(ref) == typeid(T) ? static_cast<T*>(m.get()) : nullptr;
}
}  // namespace
Tensor Sequential::forward(const Tensor& x) {
  Tensor h = x;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    // BatchNorm2d then ReLU: one kernel (batch_norm's act), one dispatch less each way; then
    // MaxPool2d too: batch_norm_max_pool2d (no y, no pooling dispatches where the windows tile).
    // Only the library's own modules, not subclasses (their forward runs as written).
    auto* bn = exactly<BatchNorm2d>(layers[i]);
    auto* pool = i + 2 < layers.size() ? exactly<MaxPool2d>(layers[i + 2]) : nullptr;
    if (bn && pool && exactly<ReLU>(layers[i + 1]) && h.dim() == 4) {
      h = batch_norm_max_pool2d(h, bn->running_mean, bn->running_var, bn->weight, bn->bias, bn->training(),
                                bn->momentum, bn->eps, Activation::relu, pool->options);
      i += 2;
      continue;
    }
    if (bn && i + 1 < layers.size() && exactly<ReLU>(layers[i + 1])) {
      h = bn->forward(h, Activation::relu);
      ++i;
      continue;
    }
    h = layers[i]->forward(h);
  }
  return h;
}
std::vector<std::pair<std::string, Tensor*>> Sequential::named_parameters() {
  std::vector<std::pair<std::string, Tensor*>> out;
  for (std::size_t i = 0; i < layers.size(); ++i)
    for (auto& [n, t] : layers[i]->named_parameters()) out.push_back({std::to_string(i) + "." + n, t});
  return out;
}
std::vector<std::pair<std::string, Tensor*>> Sequential::named_buffers() {
  std::vector<std::pair<std::string, Tensor*>> out;
  for (std::size_t i = 0; i < layers.size(); ++i)
    for (auto& [n, t] : layers[i]->named_buffers()) out.push_back({std::to_string(i) + "." + n, t});
  return out;
}
void Sequential::train(bool on) {
  training_ = on;
  for (auto& l : layers) l->train(on);
}

}  // namespace gltensor::nn
