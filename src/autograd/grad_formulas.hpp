// Backward formulas recorded by the ops (internal). Each records a node on `out` when grad mode
// is on and an input requires grad; backward functions run with grad mode off.
#pragma once
#include <string>

#include "gltensor/autograd.hpp"
#include "gltensor/tensor.hpp"

namespace gltensor::detail {

/// Unary op `fn` (GLSL name, e.g. "op_exp") with parameters p0, p1: y = f(x).
void grad_unary(const std::string& fn, const Tensor& x, Tensor& y, float p0, float p1);
/// Binary op `fn` on tensors (b may be undefined for scalar forms: then `scalar` is b, or a when
/// scalar_first).
void grad_binary(const std::string& fn, const Tensor& a, const Tensor& b, double scalar, bool scalar_first, float alpha,
                 Tensor& y);
/// Throws ValueError if an in-place op would overwrite a tensor that requires grad.
void check_inplace(const char* op, const Tensor& t);
/// Records a node whose backward throws: the op has no gradient implemented.
void grad_unsupported(const char* op, std::initializer_list<const Tensor*> inputs, Tensor& y);

}  // namespace gltensor::detail
