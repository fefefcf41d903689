// Backward formulas of the elementwise ops (internal), one function per differentiable row of
// GLTENSOR_UNARY_OPS / GLTENSOR_BINARY_OPS and per row of GLTENSOR_PARAMETRIC_UNARY_OPS
// (include/gltensor/ops.hpp). A row marked `grad` without a function here fails to link.
#pragma once
#include <vector>

#include "gltensor/ops.hpp"

namespace gltensor::detail {

/// dL/dx from g = dL/dy, the input x, the output y and the op's parameters (p0, p1).
using UnaryGrad = Tensor (*)(const Tensor& g, const Tensor& x, const Tensor& y, float p0, float p1);
/// {dL/da, dL/db} from g, a, b (broadcast to y's shape as needed by the formula), y and alpha
/// (add's scale of b); an entry may be undefined where need_a / need_b is false.
using BinaryGrad = std::vector<Tensor> (*)(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor& y,
                                           float alpha, bool need_a, bool need_b);

namespace unary_grad {
#define GLTENSOR_UNARY_GRAD_grad(name) \
  Tensor name(const Tensor& g, const Tensor& x, const Tensor& y, float p0, float p1);
#define GLTENSOR_UNARY_GRAD_no_grad(name)
#define GLTENSOR_DECLARE_UNARY_GRAD(name, rule, grad, ...) GLTENSOR_UNARY_GRAD_##grad(name)
GLTENSOR_UNARY_OPS(GLTENSOR_DECLARE_UNARY_GRAD)
GLTENSOR_PARAMETRIC_UNARY_OPS(GLTENSOR_UNARY_GRAD_grad)
#undef GLTENSOR_DECLARE_UNARY_GRAD
}  // namespace unary_grad

namespace binary_grad {
#define GLTENSOR_BINARY_GRAD_grad(name)                                                                     \
  std::vector<Tensor> name(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor& y, float alpha, \
                           bool need_a, bool need_b);
#define GLTENSOR_BINARY_GRAD_no_grad(name)
#define GLTENSOR_DECLARE_BINARY_GRAD(name, rule, grad, ...) GLTENSOR_BINARY_GRAD_##grad(name)
GLTENSOR_BINARY_OPS(GLTENSOR_DECLARE_BINARY_GRAD)
#undef GLTENSOR_DECLARE_BINARY_GRAD
}  // namespace binary_grad

}  // namespace gltensor::detail
