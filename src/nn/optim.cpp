// SGD / Adam / AdamW as fused multi-tensor updates (optim.comp: several parameters per dispatch,
// the states in flat buffers), LR schedules.
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
// the bias corrections; per tensor: the grid's cumulative counts, state offsets, gradient offsets,
// weight decays.
struct OptimParams {
  double lr = 0, a = 0, b = 0, eps = 0, c1 = 0, c2 = 0;
  bool sgd = true, first = false;
  std::vector<std::uint32_t> end, state, grad_offset;
  std::vector<float> wd;
  void set(Uniforms& u) const {
    u.f32("u_lr", lr);
    u.f32("u_a", a);
    u.f32("u_b", b);
    if (sgd) {
      u.i32("u_first", first ? 1 : 0);
    } else {
      u.f32("u_eps", eps);
      u.f32("u_c1", c1);
      u.f32("u_c2", c2);
    }
    u.u32s("u_end", end);
    u.u32s("u_state", state);
    u.u32s("u_grad_off", grad_offset);
    u.f32s("u_wd", wd);
  }
};

// The tensors one dispatch of optim.comp updates: as many as the device's storage bindings allow
// (the loop check's binding and the states' kept free), OptimVariant::kMaxTensors at most.
int tensors_per_dispatch(const Device& dev, int states) {
  const int bindings = std::min(dev.caps().max_ssbo_bindings, 16) - 1 - states;
  return std::clamp(bindings / 2, 1, OptimVariant::kMaxTensors);
}

// One step over every parameter with a gradient: consecutive parameters of one slab in groups of
// up to tensors_per_dispatch, one dispatch each (a parameter whose storage the group already
// binds starts the next: a written storage is bound once per dispatch; gradients may share one,
// e.g. batch_norm's weight and bias gradients, read at their offsets). `wd(i)`: parameter i's
// weight decay.
template <typename WeightDecay>
void step_all(const std::vector<Tensor*>& params, const std::vector<std::vector<Tensor>>& slabs,
              const std::vector<std::size_t>& slab_of, const std::vector<std::int64_t>& slab_offset, OptimVariant v,
              OptimParams op, WeightDecay wd) {
  struct Member {
    Tensor* p;
    Tensor g;
    std::size_t i;
  };
  std::vector<Member> group;
  auto flush = [&] {
    if (group.empty()) return;
    DeviceImpl& dev = dev_of(*group.front().p);
    Launch launch(dev, "optimizer.step");
    v.tensors = static_cast<int>(group.size());
    launch.program(v.kFile, v.defines(), {256});
    op.end.clear(), op.state.clear(), op.grad_offset.clear(), op.wd.clear();
    std::uint64_t total = 0;
    for (const Member& m : group) {
      launch.write(*m.p).read(m.g);
      total += static_cast<std::uint64_t>(m.p->numel());
      op.end.push_back(static_cast<std::uint32_t>(total));
      op.state.push_back(static_cast<std::uint32_t>(slab_offset[m.i]));
      op.grad_offset.push_back(static_cast<std::uint32_t>(m.g.offset()));
      op.wd.push_back(static_cast<float>(wd(m.i)));
    }
    for (const auto& state : slabs) launch.write(state[slab_of[group.front().i]]);
    launch.params(op).loop_iterations(static_cast<std::uint64_t>(v.tensors)).invocations(total);
    group.clear();
  };
  int per_dispatch = 0;
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    Tensor* p = params[i];
    Tensor g = grad(*p);
    if (!g.defined() || p->numel() == 0) continue;
    if (g.dtype() != DType::f32 || !g.is_contiguous()) g = g.to(DType::f32).clone();
    const auto n = static_cast<std::uint64_t>(p->numel());
    const auto shares = [&](const Member& m) {
      return m.p->impl()->storage == p->impl()->storage || m.p->impl()->storage == g.impl()->storage ||
             m.g.impl()->storage == p->impl()->storage;
    };
    if (!group.empty() && (static_cast<int>(group.size()) == per_dispatch || slab_of[group.front().i] != slab_of[i] ||
                           total + n > UINT32_MAX || std::any_of(group.begin(), group.end(), shares))) {
      flush();
      total = 0;
    }
    // (each group on one device, one slab: its own device's binding limit)
    if (group.empty()) per_dispatch = tensors_per_dispatch(p->device(), v.states());
    group.push_back({p, g, i});
    total += n;
  }
  flush();
}
}  // namespace

void Optimizer::init_states(int states) {
  slabs_.assign(static_cast<std::size_t>(states), {});
  slab_of_.clear(), slab_offset_.clear();
  // Parameters in order, a new slab where the next would pass its device's SSBO limit, lies on
  // another device than the slab's (a dispatch binds one device's buffers) or would be one more than
  // a dispatch updates (tensors_per_dispatch): the dispatches write state buffers of their own, so
  // the queue puts no barrier between them (the CNN's step: its 12 parameters' two dispatches ran
  // one after the other, a barrier between them).
  std::vector<std::int64_t> sizes;
  std::vector<const Tensor*> first;  // each slab's first parameter (its device)
  std::vector<int> count;            // each slab's parameters
  for (Tensor* p : params_) {
    const std::int64_t limit = dev_of(*p).ssbo_limit() / static_cast<std::int64_t>(sizeof(float));
    if (sizes.empty() || &dev_of(*first.back()) != &dev_of(*p) ||
        (sizes.back() > 0 && sizes.back() + p->numel() > limit) ||
        count.back() == tensors_per_dispatch(first.back()->device(), states)) {
      sizes.push_back(0);
      first.push_back(p);
      count.push_back(0);
    }
    ++count.back();
    slab_of_.push_back(sizes.size() - 1);
    slab_offset_.push_back(sizes.back());
    sizes.back() += p->numel();
  }
  for (auto& state : slabs_)
    for (std::size_t k = 0; k < sizes.size(); ++k)
      state.push_back(zeros(first[k]->device(), {std::max<std::int64_t>(sizes[k], 1)}));
}

SGD::SGD(std::vector<Tensor*> params, double lr, SGDOptions opt) : Optimizer(std::move(params), lr), options(opt) {
  if (opt.nesterov && (opt.momentum <= 0 || opt.dampening != 0))
    throw ValueError("gltensor::SGD: nesterov needs momentum > 0 and zero dampening");
  init_states(opt.momentum != 0 ? 1 : 0);
}

void SGD::step() {
  NoGradGuard ng;
  OptimVariant d;
  d.momentum = options.momentum != 0, d.nesterov = options.nesterov;
  OptimParams op;
  op.lr = lr, op.a = options.momentum, op.b = options.dampening, op.first = first_;
  const double wd = options.weight_decay;
  step_all(params_, slabs_, slab_of_, slab_offset_, d, op, [wd](std::size_t) { return wd; });
  first_ = false;
}

Adam::Adam(std::vector<Tensor*> params, double lr, AdamOptions opt) : Optimizer(std::move(params), lr), options(opt) {
  if (opt.beta1 < 0 || opt.beta1 >= 1 || opt.beta2 < 0 || opt.beta2 >= 1 || opt.eps <= 0)
    throw ValueError("gltensor::Adam: betas must be in [0, 1) and eps > 0");
  init_states(2);
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
  op.sgd = false, op.lr = lr, op.a = options.beta1, op.b = options.beta2;
  op.eps = options.eps;
  op.c1 = 1 - std::pow(options.beta1, static_cast<double>(t_));
  op.c2 = 1 - std::pow(options.beta2, static_cast<double>(t_));
  const double wd = options.weight_decay;
  step_all(params_, slabs_, slab_of_, slab_offset_, d, op,
           [this, wd](std::size_t i) { return wd_.empty() ? wd : wd_[i]; });
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
