// Index ops shared by src/ops and src/nn (internal).
#pragma once
#include <cstdint>

#include "tensor/tensor_impl.hpp"

namespace gltensor::detail {

/// gather(x, dim, index) for class indices (losses): an index must lie in [0, x.size(dim)), as in
/// torch (no counting from the end); others are skipped and raised as IndexError naming `op` at
/// the next read. No autograd.
Tensor gather_classes(const char* op, const Tensor& x, std::int64_t dim, const Tensor& index);

/// scatter with a reduction (torch.scatter_reduce with include_self = true): out = x, then
/// out[p with p[dim] := index[p]] = red(out[...], src[p]) for every p, red one of sum, prod, max,
/// min (a compare-and-swap loop per element: duplicates combine in an unspecified order).
/// float32 and int32 outputs (DTypeError else); no autograd. For ONNX ScatterElements/ScatterND.
enum class ScatterReduce { sum, prod, max, min };
Tensor scatter_reduce(const Tensor& x, std::int64_t dim, const Tensor& index, const Tensor& src, ScatterReduce red);

}  // namespace gltensor::detail
