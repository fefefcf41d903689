// What ops need from autograd besides autograd::record (internal): the in-place check and nodes
// for ops without a gradient. The formulas live with the ops (e.g. src/ops/elementwise_grads.cpp).
#pragma once

#include "gltensor/autograd.hpp"
#include "gltensor/tensor.hpp"

namespace gltensor::detail {

/// Throws ValueError if an in-place op would overwrite a tensor that requires grad.
void check_inplace(const char* op, const Tensor& t);
/// Records a node whose backward throws: the op has no gradient implemented.
void grad_unsupported(const char* op, std::initializer_list<const Tensor*> inputs, Tensor& y);

}  // namespace gltensor::detail
