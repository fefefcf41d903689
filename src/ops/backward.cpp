// The backward walk over the tape (autograd/tape.hpp) and the broadcast reduction of gradients:
// in the ops layer, since accumulating gradients runs kernels (add, sum, ones).
#include <unordered_map>
#include <unordered_set>

#include "autograd/tape.hpp"
#include "gltensor/ops.hpp"
#include "gltensor/reduce.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {
using namespace detail;

namespace {
std::shared_ptr<AutogradMeta> meta(const Tensor& t) { return t.defined() ? t.impl()->autograd : nullptr; }
}  // namespace

namespace autograd {

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
    // f32: the 1 uploaded, no fill dispatch (a Recording keeps the uploaded buffer and its replays
    // do not repeat the upload: no leaf's gradient is that buffer, see below).
    const float one = 1.0f;
    seed = root.dtype() == DType::f32 ? Tensor::from_host(root.device(), std::span<const float>(&one, 1), root.shape())
                                      : ones(root.device(), root.shape(), root.dtype());
  } else if (seed.shape() != root.shape()) {
    throw ShapeError("gltensor::backward: seed shape " + to_string(seed.shape()) + " differs from " +
                     to_string(root.shape()));
  }
  NoGradGuard no_grad;
  if (!rm->grad_fn) {  // a leaf
    rm->grad = rm->grad.defined() ? add(rm->grad, seed) : seed_in.defined() ? seed : seed.clone();
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
        // A gradient that is the implicit seed itself (an identity's backward) gets its own copy: the
        // caller may change it in place between a Recording's replays, which read the seed's buffer
        // without uploading it again.
        in->grad = in->grad.defined()                              ? add(in->grad, gi)
                   : !seed_in.defined() && gi.shares_storage(seed) ? gi.clone()
                                                                   : gi.contiguous();
      }
    }
  }
}

}  // namespace gltensor
