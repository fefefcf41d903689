// zeros / ones / full / arange and the *_like forms.
#include <algorithm>
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
  if (!dev.valid()) throw ValueError("gltensor::arange: invalid Device handle");
  DeviceImpl& d = *dev.impl();
  Enter guard(d, "arange");
  const auto args = [&] {
    return "(start " + std::to_string(start) + ", end " + std::to_string(end) + ", step " + std::to_string(step) + ")";
  };
  if (step == 0 || !std::isfinite(step) || !std::isfinite(start) || !std::isfinite(end))
    throw ValueError("gltensor::arange: step must be nonzero and bounds finite " + args());
  if (dtype == DType::bool_) throw DTypeError("gltensor::arange: not implemented for dtype bool");
  const bool integer = !is_floating(dtype);
  // torch: integer dtypes truncate start and step (to int64); the length uses the given values.
  if (integer && (std::fabs(start) >= 0x1p63 || std::fabs(step) >= 0x1p63))
    throw ValueError("gltensor::arange: start and step must fit in int64 for dtype " + std::string(dtype_name(dtype)) +
                     " " + args());
  if (integer && std::trunc(step) == 0)
    throw ValueError("gltensor::arange: step " + std::to_string(step) + " truncates to 0 for dtype " +
                     dtype_name(dtype));
  // The length is checked before anything is allocated: no host copy of the values.
  const double len = std::ceil((end - start) / step);
  if (!(len <= 0x7fffffff) && len > 0)
    throw LimitError("gltensor::arange: " + args() + " has " + std::to_string(len) +
                     " elements, more than 2^31-1 (32-bit element indices)");
  const std::int64_t count = len > 0 ? static_cast<std::int64_t>(len) : 0;
  Tensor out = alloc(d, {count}, dtype, "arange");  // LimitError past the max SSBO size
  Elementwise e;
  e.op = "arange";
  e.kernel = ElementwiseKernel::unary;
  e.fn = "op_arange";
  e.in_ct = natural_ct(dtype);
  // Values (S + i T) 2^E with 96-bit integers S, T (unary.comp's op_arange), as words
  // {2^0, 2^32, 2^64} of two's complement. Integer dtypes: S and T are torch's int64 start and step
  // at 2^32 (only their low words are used). Floats: E = ilogb(largest |value|) - 93, so that every
  // value fits in 95 bits; S, T are start and step rounded to multiples of 2^E.
  std::uint64_t S = 0, T = 0;    // the words at 2^32 and 2^64
  std::uint32_t Sf = 0, Tf = 0;  // the words at 2^0
  int E = -32;
  const auto split = [&](double x, std::uint64_t& hi, std::uint32_t& lo) {
    const double y = std::ldexp(x, -E - 32), f = std::floor(y);  // |y| < 2^63: both exact
    double r = std::nearbyint(std::ldexp(y - f, 32));            // y - f in [0, 1): exact
    double fi = f;
    if (r == 0x1p32) {
      r = 0;
      fi += 1;
    }
    hi = static_cast<std::uint64_t>(static_cast<std::int64_t>(fi));
    lo = static_cast<std::uint32_t>(r);
  };
  if (integer) {
    S = static_cast<std::uint64_t>(static_cast<std::int64_t>(start));
    T = static_cast<std::uint64_t>(static_cast<std::int64_t>(step));
  } else {
    const double M = std::max(std::fabs(start), std::fabs(start + static_cast<double>(count - 1) * step));
    if (M > 0) E = std::ilogb(M) - 61 - 32;
    split(start, S, Sf);
    if (count > 1) split(step, T, Tf);
  }
  e.words = {Sf,
             static_cast<std::uint32_t>(S),
             static_cast<std::uint32_t>(S >> 32),
             Tf,
             static_cast<std::uint32_t>(T),
             static_cast<std::uint32_t>(T >> 32),
             static_cast<std::uint32_t>(E)};
  if (!integer) e.fn_loop = 3;  // op_arange's rounding: any_below96 over up to 3 words
  launch_elementwise(e, out, {});
  return out;
}

Tensor arange(const Device& dev, double end, DType dtype) { return arange(dev, 0.0, end, 1.0, dtype); }

Tensor zeros_like(const Tensor& t) { return zeros(t.device(), t.shape(), t.dtype()); }
Tensor ones_like(const Tensor& t) { return ones(t.device(), t.shape(), t.dtype()); }
Tensor full_like(const Tensor& t, double v) { return full(t.device(), t.shape(), v, t.dtype()); }
Tensor empty_like(const Tensor& t) { return Tensor::empty(t.device(), t.shape(), t.dtype()); }

}  // namespace gltensor
