// Reverse-mode automatic differentiation on a tape (as torch.autograd).
//
// A tensor with requires_grad records, for every differentiable op applied to it while grad mode
// is on, a node holding the op's backward function. backward() on a scalar walks the nodes in
// reverse topological order; leaf tensors accumulate into grad() (gradients add up across calls
// until zero_grad()). Broadcasting is undone by summing gradients to each input's shape.
// Backward kernels run on the GPU like every other op. In-place ops on tensors that require
// grad throw ValueError (they would invalidate saved values). Every elementwise op has a gradient
// (the op tables in ops.hpp mark each row). Ops without a gradient formula (sort/topk values,
// scatter, prod, conv_transpose2d, lerp/addcmul/addcdiv) record a node whose backward throws
// ValueError naming the op, so a missing gradient is never silently zero.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "gltensor/tensor.hpp"

namespace gltensor {

/// Marks a leaf tensor as requiring gradients (returns it for chaining).
Tensor& requires_grad_(Tensor& t, bool on = true);
bool requires_grad(const Tensor& t);
/// Accumulated gradient of a leaf (undefined until a backward() reached it).
Tensor grad(const Tensor& t);
/// Clears the accumulated gradient.
void zero_grad(Tensor& t);
/// Same storage, no autograd history.
Tensor detach(const Tensor& t);
/// Back-propagates from `root` (a 1-element tensor; seed gradient 1) or with an explicit
/// `seed` of root's shape. ValueError if root does not require grad or is not a scalar.
void backward(const Tensor& root, const Tensor& seed = Tensor());

/// While alive, ops record nothing (as torch.no_grad()). Per thread.
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};
bool grad_enabled();

namespace autograd {
/// For op implementers: the backward of an op with inputs `inputs` maps the output gradient to
/// one gradient per input (undefined for inputs that need none). Records only when grad mode is
/// on and some input requires grad.
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_out)>;
bool any_requires_grad(std::initializer_list<const Tensor*> inputs);
void record(Tensor& out, std::vector<Tensor> inputs, BackwardFn fn, const char* name);
/// Sums `g` down to `shape` (undoing broadcasting).
Tensor sum_to(const Tensor& g, const Shape& shape);
}  // namespace autograd

}  // namespace gltensor
