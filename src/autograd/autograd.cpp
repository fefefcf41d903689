// The autograd tape: per-tensor metadata, nodes, and the backward walk.
#include "gltensor/autograd.hpp"

#include <unordered_map>
#include <unordered_set>

#include "gltensor/ops.hpp"
#include "gltensor/reduce.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {
namespace detail {

struct Node {
  const char* name = "";
  std::vector<std::shared_ptr<AutogradMeta>> inputs;  // null where no grad flows
  std::vector<Shape> input_shapes;
  autograd::BackwardFn fn;
};

struct AutogradMeta {
  bool requires_grad = false;
  Tensor grad;                    // leaves
  std::shared_ptr<Node> grad_fn;  // non-leaves
};

}  // namespace detail

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

Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  Dims dims;
  const std::int64_t lead = g.dim() - static_cast<std::int64_t>(shape.size());
  for (std::int64_t d = 0; d < g.dim(); ++d)
    if (d < lead || (shape[d - lead] == 1 && g.shape()[d] != 1)) dims.push_back(d);
  Tensor r = dims.empty() ? g : sum(g, dims, true);
  return r.reshape(shape);
}

}  // namespace autograd

void backward(const Tensor& root, const Tensor& seed_in) {
  check_defined("backward", root);
  auto rm = meta(root);
  if (!rm || (!rm->grad_fn && !rm->requires_grad))
    throw ValueError("gltensor::backward: the tensor does not require grad and has no grad_fn");
  Tensor seed = seed_in;
  if (!seed.defined()) {
    if (root.numel() != 1)
      throw ValueError("gltensor::backward: grad can be implicitly created only for scalar outputs, got shape " +
                       to_string(root.shape()));
    seed = ones(root.device(), root.shape(), root.dtype());
  } else if (seed.shape() != root.shape()) {
    throw ShapeError("gltensor::backward: seed shape " + to_string(seed.shape()) + " differs from " +
                     to_string(root.shape()));
  }
  NoGradGuard no_grad;
  if (!rm->grad_fn) {  // a leaf
    rm->grad = rm->grad.defined() ? add(rm->grad, seed) : seed;
    return;
  }
  // Topological order of nodes reachable from root (iterative DFS, post-order).
  std::vector<Node*> order;
  std::unordered_set<Node*> seen;
  std::vector<std::pair<Node*, std::size_t>> stack{{rm->grad_fn.get(), 0}};
  seen.insert(rm->grad_fn.get());
  while (!stack.empty()) {
    auto& [n, i] = stack.back();
    if (i < n->inputs.size()) {
      auto& in = n->inputs[i++];
      if (in && in->grad_fn && !seen.count(in->grad_fn.get())) {
        seen.insert(in->grad_fn.get());
        stack.push_back({in->grad_fn.get(), 0});
      }
    } else {
      order.push_back(n);
      stack.pop_back();
    }
  }
  std::unordered_map<Node*, Tensor> pending{{rm->grad_fn.get(), seed}};
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* n = *it;
    auto pg = pending.find(n);
    if (pg == pending.end()) continue;
    Tensor g = pg->second;
    pending.erase(pg);
    std::vector<Tensor> grads = n->fn(g);
    for (std::size_t i = 0; i < n->inputs.size() && i < grads.size(); ++i) {
      auto& in = n->inputs[i];
      if (!in || !grads[i].defined()) continue;
      Tensor gi = grads[i];
      if (gi.shape() != n->input_shapes[i]) gi = autograd::sum_to(gi, n->input_shapes[i]);
      if (in->grad_fn) {
        auto& slot = pending[in->grad_fn.get()];
        slot = slot.defined() ? add(slot, gi) : gi;
      } else if (in->requires_grad) {
        in->grad = in->grad.defined() ? add(in->grad, gi) : gi.contiguous();
      }
    }
  }
}

}  // namespace gltensor
