// In-place checks and nodes for ops without a gradient (recording.hpp).
#include "autograd/recording.hpp"

#include "tensor/tensor_impl.hpp"

namespace gltensor::detail {

void check_inplace(const char* op, const Tensor& t) {
  if (grad_enabled() && requires_grad(t))
    throw ValueError(std::string("gltensor::") + op +
                     ": in-place op on a tensor that requires grad (use it under NoGradGuard, or an out-of-place op)");
}

void grad_unsupported(const char* op, std::initializer_list<const Tensor*> inputs, Tensor& y) {
  if (!autograd::any_requires_grad(inputs)) return;
  std::vector<Tensor> ins;
  for (auto* t : inputs) ins.push_back(*t);
  std::string name = op;
  autograd::record(
      y, ins,
      [name](const Tensor&) -> std::vector<Tensor> {
        throw ValueError("gltensor::backward: no gradient is implemented for " + name);
      },
      op);
}

}  // namespace gltensor::detail
