// Index ops shared by src/ops and src/nn (internal).
#pragma once
#include <cstdint>

#include "tensor/tensor_impl.hpp"

namespace gltensor::detail {

/// gather(x, dim, index) for class indices (losses): an index must lie in [0, x.size(dim)), as in
/// torch (no counting from the end); others are skipped and raised as IndexError naming `op` at
/// the next read. No autograd.
Tensor gather_classes(const char* op, const Tensor& x, std::int64_t dim, const Tensor& index);

}  // namespace gltensor::detail
