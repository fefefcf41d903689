// softmax / log_softmax with a choice of where the output lives (internal; reduce.hpp's softmax and
// log_softmax are the public forms).
#pragma once
#include <cstdint>

#include "gltensor/tensor.hpp"

namespace gltensor::detail {

/// reduce.hpp's softmax (log: log_softmax) along `dim` (shapes, dtypes and errors as there), with
/// `host_out`: softmax.comp's output in a host-visible buffer (detail::alloc_host), which the host
/// reads in place, without the read buffer's copy (a model's output: Args::host_output); an
/// ordinary buffer where no host-visible one can be made. Records the gradient as the public forms.
Tensor softmax_out(const Tensor& x, std::int64_t dim, bool log, bool host_out);

}  // namespace gltensor::detail
