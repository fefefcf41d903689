// SGD / Adam / AdamW as fused single-kernel updates (optim.comp), LR schedules.
#include <algorithm>
#include <cmath>
#include <tuple>

#include "gltensor/autograd.hpp"
#include "gltensor/indexing.hpp"
#include "gltensor/nn.hpp"
#include "gltensor/ops.hpp"
#include "gltensor/reduce.hpp"
#include "nn/grads.hpp"
#include "nn/train_variants.hpp"
#include "runtime/launch.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor::nn {
using namespace detail;

Optimizer::Optimizer(std::vector<Tensor*> params, double lr) : lr(lr), params_(std::move(params)) {
  if (!(lr >= 0)) throw ValueError("gltensor::optim: learning rate must be >= 0, got " + std::to_string(lr));
  for (Tensor* p : params_) {
    if (!p || !p->defined()) throw ValueError("gltensor::optim: undefined parameter");
    if (p->dtype() != DType::f32 || !p->is_contiguous() || p->offset() != 0)
      throw DTypeError("gltensor::optim: parameters must be contiguous float32 tensors, got " + p->repr());
  }
}

void Optimizer::zero_grad() {
  for (Tensor* p : params_) gltensor::zero_grad(*p);
}

namespace {
// Uniforms of glsl/nn/optim.comp. SGD: a = momentum, b = dampening; Adam: a, b = betas, c1, c2
// the bias corrections.
struct OptimParams {
  double lr = 0, wd = 0, a = 0, b = 0, eps = 0, c1 = 0, c2 = 0;
  bool sgd = true, first = false;
  std::int64_t count = 0;
  void set(Uniforms& u) const {
    u.f32("u_lr", lr);
    u.f32("u_wd", wd);
    u.f32("u_a", a);
    u.f32("u_b", b);
    if (sgd) {
      u.i32("u_first", first ? 1 : 0);
    } else {
      u.f32("u_eps", eps);
      u.f32("u_c1", c1);
      u.f32("u_c2", c2);
    }
    u.u32("u_count", count);
  }
};

void launch(const OptimVariant& v, Tensor& p, const Tensor& g, Tensor& s1, Tensor& s2, OptimParams params) {
  DeviceImpl& dev = dev_of(p);
  Launch launch(dev, "optimizer.step");
  const Tensor gc = g.dtype() == DType::f32 && g.is_contiguous() && g.offset() == 0 ? g : g.to(DType::f32).clone();
  params.count = p.numel();
  launch.program(v.kFile, v.defines(), {256}).write(p).read(gc).write(s1).write(s2);
  launch.params(params).loop_iterations(0).invocations(static_cast<std::uint64_t>(p.numel()));
}
}  // namespace

SGD::SGD(std::vector<Tensor*> params, double lr, SGDOptions opt) : Optimizer(std::move(params), lr), options(opt) {
  if (opt.nesterov && (opt.momentum <= 0 || opt.dampening != 0))
    throw ValueError("gltensor::SGD: nesterov needs momentum > 0 and zero dampening");
  for (Tensor* p : params_) buf_.push_back(opt.momentum != 0 ? zeros(p->device(), p->shape()) : *p);
}

void SGD::step() {
  NoGradGuard ng;
  OptimVariant d;
  d.momentum = options.momentum != 0, d.nesterov = options.nesterov;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Tensor g = grad(*params_[i]);
    if (!g.defined() || params_[i]->numel() == 0) continue;
    OptimParams op;
    op.lr = lr, op.wd = options.weight_decay, op.a = options.momentum, op.b = options.dampening, op.first = first_;
    launch(d, *params_[i], g, buf_[i], buf_[i], op);
  }
  first_ = false;
}

Adam::Adam(std::vector<Tensor*> params, double lr, AdamOptions opt) : Optimizer(std::move(params), lr), options(opt) {
  if (opt.beta1 < 0 || opt.beta1 >= 1 || opt.beta2 < 0 || opt.beta2 >= 1 || opt.eps <= 0)
    throw ValueError("gltensor::Adam: betas must be in [0, 1) and eps > 0");
  for (Tensor* p : params_) {
    m_.push_back(zeros(p->device(), p->shape()));
    v_.push_back(zeros(p->device(), p->shape()));
  }
}

namespace {
std::vector<Tensor*> group_params(const std::vector<ParamGroup>& groups) {
  std::vector<Tensor*> all;
  for (const ParamGroup& g : groups) all.insert(all.end(), g.params.begin(), g.params.end());
  return all;
}
}  // namespace

Adam::Adam(const std::vector<ParamGroup>& groups, double lr, AdamOptions opt) : Adam(group_params(groups), lr, opt) {
  for (const ParamGroup& g : groups) {
    if (!(g.weight_decay >= 0))
      throw ValueError("gltensor::Adam: weight_decay must be >= 0, got " + std::to_string(g.weight_decay));
    wd_.insert(wd_.end(), g.params.size(), g.weight_decay);
  }
}

void Adam::step() {
  NoGradGuard ng;
  ++t_;
  OptimVariant d;
  d.opt = "opt_adam", d.decoupled = options.decoupled;
  OptimParams op;
  op.sgd = false, op.lr = lr, op.wd = options.weight_decay, op.a = options.beta1, op.b = options.beta2;
  op.eps = options.eps;
  op.c1 = 1 - std::pow(options.beta1, static_cast<double>(t_));
  op.c2 = 1 - std::pow(options.beta2, static_cast<double>(t_));
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Tensor g = grad(*params_[i]);
    if (!g.defined() || params_[i]->numel() == 0) continue;
    op.wd = wd_.empty() ? options.weight_decay : wd_[i];
    launch(d, *params_[i], g, m_[i], v_[i], op);
  }
}

AdamW::AdamW(std::vector<Tensor*> params, double lr, AdamOptions opt)
    : Adam(std::move(params), lr, [&] {
        opt.decoupled = true;
        return opt;
      }()) {}
AdamW::AdamW(const std::vector<ParamGroup>& groups, double lr, AdamOptions opt)
    : Adam(groups, lr, [&] {
        opt.decoupled = true;
        return opt;
      }()) {}

std::vector<Tensor> unique_grads(const std::vector<Tensor*>& params, const char* op) {
  std::vector<Tensor> grads;
  std::vector<std::tuple<const void*, std::int64_t, std::int64_t>> seen;
  for (Tensor* p : params) {
    if (!p || !p->defined()) throw ValueError(std::string("gltensor::") + op + ": undefined parameter");
    Tensor g = grad(*p);
    if (!g.defined() || g.numel() == 0) continue;
    const auto key = std::make_tuple(static_cast<const void*>(g.impl()->storage.get()), g.offset(), g.numel());
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;  // one gradient held twice
    seen.push_back(key);
    grads.push_back(g);
  }
  return grads;
}

Tensor clip_grad_norm_(const std::vector<Tensor*>& params, double max_norm) {
  if (!(max_norm > 0))
    throw ValueError("gltensor::clip_grad_norm_: max_norm must be > 0, got " + std::to_string(max_norm));
  NoGradGuard ng;
  std::vector<Tensor> grads = unique_grads(params, "clip_grad_norm_"), norms;
  for (const Tensor& g : grads) norms.push_back(norm(g.dtype() == DType::f32 ? g : g.to(DType::f32)).reshape({1}));
  if (params.empty()) throw ValueError("gltensor::clip_grad_norm_: no parameters");
  if (grads.empty()) return zeros(params.front()->device(), {});
  const Tensor total = norm(concat(norms));  // sqrt(sum of the squared norms)
  const Tensor coef = clamp_max(div(full(total.device(), {}, max_norm), add(total, 1e-6)), 1.0);
  for (Tensor& g : grads) g *= coef;
  return total;
}

double step_lr(double base, std::int64_t epoch, std::int64_t step_size, double gamma) {
  if (step_size <= 0) throw ValueError("gltensor::step_lr: step_size must be positive");
  return base * std::pow(gamma, static_cast<double>(epoch / step_size));
}

double cosine_lr(double base, std::int64_t t, std::int64_t t_max, double eta_min) {
  if (t_max <= 0) throw ValueError("gltensor::cosine_lr: t_max must be positive");
  return eta_min + (base - eta_min) * (1 + std::cos(M_PI * static_cast<double>(t) / static_cast<double>(t_max))) / 2;
}

}  // namespace gltensor::nn
