// The autograd tape: per-tensor metadata and nodes (the backward walk, which runs kernels, is in
// src/ops/backward.cpp).
#include "gltensor/autograd.hpp"

#include "autograd/tape.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {
using namespace detail;

namespace {
thread_local bool g_grad_enabled = true;

std::shared_ptr<AutogradMeta> meta(const Tensor& t) { return t.defined() ? t.impl()->autograd : nullptr; }
}  // namespace

bool grad_enabled() { return g_grad_enabled; }
NoGradGuard::NoGradGuard() : prev_(g_grad_enabled) { g_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { g_grad_enabled = prev_; }

Tensor& requires_grad_(Tensor& t, bool on) {
  check_defined("requires_grad_", t);
  auto m = meta(t);
  if (m && m->grad_fn)
    throw ValueError("gltensor::requires_grad_: only leaf tensors can be marked (this one is the result of " +
                     std::string(m->grad_fn->name) + ")");
  if (on && !is_floating(t.dtype()))
    throw DTypeError(std::string("gltensor::requires_grad_: only float tensors can require grad, got ") +
                     dtype_name(t.dtype()));
  if (!m) {
    m = std::make_shared<AutogradMeta>();
    t.impl()->autograd = m;
  }
  m->requires_grad = on;
  return t;
}

bool requires_grad(const Tensor& t) {
  auto m = meta(t);
  return m && (m->requires_grad || m->grad_fn);
}

Tensor grad(const Tensor& t) {
  auto m = meta(t);
  return m ? m->grad : Tensor();
}

void zero_grad(Tensor& t) {
  if (auto m = meta(t)) m->grad = Tensor();
}

Tensor detach(const Tensor& t) {
  check_defined("detach", t);
  auto impl = std::make_shared<TensorImpl>(*t.impl());
  impl->autograd.reset();
  return Tensor(impl);
}

namespace autograd {

bool any_requires_grad(std::initializer_list<const Tensor*> inputs) {
  if (!g_grad_enabled) return false;
  for (const Tensor* t : inputs)
    if (t && t->defined() && requires_grad(*t)) return true;
  return false;
}

void record(Tensor& out, std::vector<Tensor> inputs, BackwardFn fn, const char* name) {
  if (!g_grad_enabled) return;
  bool any = false;
  for (const auto& t : inputs) any = any || (t.defined() && requires_grad(t));
  if (!any) return;
  auto node = std::make_shared<Node>();
  node->name = name;
  for (const auto& t : inputs) {
    node->inputs.push_back(t.defined() && requires_grad(t) ? meta(t) : nullptr);
    node->input_shapes.push_back(t.defined() ? t.shape() : Shape{});
  }
  node->fn = std::move(fn);
  // out may share its impl with an input (an op returning its input): give it its own impl.
  auto impl = std::make_shared<TensorImpl>(*out.impl());
  impl->autograd = std::make_shared<AutogradMeta>();
  impl->autograd->grad_fn = node;
  out = Tensor(impl);
}

}  // namespace autograd

}  // namespace gltensor
