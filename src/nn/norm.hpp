// layer_norm with a choice of where its output lives (internal; nn_functional.hpp's layer_norm is
// the public form).
#pragma once
#include <cstdint>

#include "gltensor/tensor.hpp"

namespace gltensor::detail {

/// nn_functional.hpp's layer_norm (shapes, dtypes and errors as there), with `host_out`: the fused
/// kernel's output in a host-visible buffer (detail::alloc_host), which the host reads in place,
/// without the read buffer's copy (a model's output: Args::host_output); an ordinary buffer where
/// no host-visible one can be made, and always on the composed path (gradients, loop limits).
Tensor layer_norm_out(const Tensor& x, std::int64_t normalized_dims, const Tensor& weight, const Tensor& bias,
                      double eps, bool host_out);

}  // namespace gltensor::detail
