// Gradient walks shared by clip_grad_norm_ and GradScaler (internal).
#pragma once
#include <vector>

#include "gltensor/tensor.hpp"

namespace gltensor::nn {

/// The accumulated gradients of `params` that exist and are not empty, each once (a gradient held
/// by two parameters, as tied weights, appears once). ValueError "gltensor::OP: undefined
/// parameter" for a null or undefined parameter.
std::vector<Tensor> unique_grads(const std::vector<Tensor*>& params, const char* op);

}  // namespace gltensor::nn
