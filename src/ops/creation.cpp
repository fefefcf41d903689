// zeros / ones / full / arange and the *_like forms.
#include <cmath>

#include "gltensor/ops.hpp"
#include "ops/elementwise.hpp"

namespace gltensor {
using namespace detail;

Tensor full(const Device& dev, const Shape& shape, double value, DType dtype) {
  Tensor t = Tensor::empty(dev, shape, dtype);
  t.fill_(value);
  return t;
}
Tensor zeros(const Device& dev, const Shape& shape, DType dtype) { return full(dev, shape, 0.0, dtype); }
Tensor ones(const Device& dev, const Shape& shape, DType dtype) { return full(dev, shape, 1.0, dtype); }

Tensor arange(const Device& dev, double start, double end, double step, DType dtype) {
  if (step == 0 || !std::isfinite(step) || !std::isfinite(start) || !std::isfinite(end))
    throw ValueError("gltensor::arange: step must be nonzero and bounds finite (start " + std::to_string(start) +
                     ", end " + std::to_string(end) + ", step " + std::to_string(step) + ")");
  const double n = std::ceil((end - start) / step);
  const std::int64_t count = n > 0 ? static_cast<std::int64_t>(n) : 0;
  // Computed on the host in double and uploaded: exact for every dtype, one transfer.
  std::vector<float> v(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) v[i] = static_cast<float>(start + static_cast<double>(i) * step);
  if (!is_floating(dtype)) {
    std::vector<std::int32_t> iv(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) iv[i] = static_cast<std::int32_t>(start + static_cast<double>(i) * step);
    return Tensor::from_host(dev, std::span<const std::int32_t>(iv), {count}, dtype);
  }
  return Tensor::from_host(dev, std::span<const float>(v), {count}, dtype);
}

Tensor arange(const Device& dev, double end, DType dtype) { return arange(dev, 0.0, end, 1.0, dtype); }

Tensor zeros_like(const Tensor& t) { return zeros(t.device(), t.shape(), t.dtype()); }
Tensor ones_like(const Tensor& t) { return ones(t.device(), t.shape(), t.dtype()); }
Tensor full_like(const Tensor& t, double v) { return full(t.device(), t.shape(), v, t.dtype()); }
Tensor empty_like(const Tensor& t) { return Tensor::empty(t.device(), t.shape(), t.dtype()); }

}  // namespace gltensor
