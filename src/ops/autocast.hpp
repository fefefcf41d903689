// The casts ops make under an Autocast scope (include/gltensor/autocast.hpp), internal.
#pragma once
#include <initializer_list>

#include "gltensor/tensor.hpp"

namespace gltensor::detail {

/// Low-precision list: a float32 tensor as the scope's f16/bf16 (a differentiable copy); anything
/// else (undefined, other dtypes, no scope) unchanged.
Tensor autocast_low(const Tensor& t);
/// Float32 list: an f16/bf16 tensor as float32 under a scope; anything else unchanged.
Tensor autocast_f32(const Tensor& t);
/// Whether autocast_low / autocast_f32 would change any of `ts` (an op then calls itself again
/// with the cast arguments).
bool autocast_changes_low(std::initializer_list<const Tensor*> ts);
bool autocast_changes_f32(std::initializer_list<const Tensor*> ts);

}  // namespace gltensor::detail
