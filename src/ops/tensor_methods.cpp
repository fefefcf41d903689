// Tensor methods that run kernels (clone, to, fill_, copy_): defined in the ops layer, on the
// elementwise kernels, although declared in gltensor/tensor.hpp.
#include "autograd/recording.hpp"
#include "gltensor/autograd.hpp"
#include "ops/elementwise.hpp"
#include "runtime/guard.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {
using namespace detail;

Tensor Tensor::clone() const {
  check_defined("clone", *this);
  DeviceImpl& d = dev_of(*this);
  Enter guard(d, "clone");
  Tensor out = alloc(d, shape(), dtype(), "clone");
  Elementwise e;
  e.op = "clone";
  e.kernel = ElementwiseKernel::unary;
  e.fn = "op_identity";
  e.in_ct = natural_ct(dtype());
  launch_elementwise(e, out, {*this});
  autograd::record(
      out, {*this}, [](const Tensor& g) { return std::vector<Tensor>{g}; }, "clone");
  return out;
}

namespace detail {
const char* cast_fn(DType from, DType to) {
  if (to == DType::bool_) return "op_to_bool";
  if (is_floating(to)) return is_floating(from) ? "op_identity" : "op_to_float";
  return is_floating(from) ? "op_to_int" : "op_identity";
}
}  // namespace detail

Tensor Tensor::to(DType dtype) const {
  check_defined("to", *this);
  if (dtype == this->dtype()) return *this;
  DeviceImpl& d = dev_of(*this);
  Enter guard(d, "to");
  Tensor out = alloc(d, shape(), dtype, "to");
  Elementwise e;
  e.op = "to";
  e.kernel = ElementwiseKernel::unary;
  e.fn = cast_fn(this->dtype(), dtype);
  e.in_ct = natural_ct(this->dtype());
  launch_elementwise(e, out, {*this});
  if (is_floating(this->dtype()) && is_floating(dtype)) {
    const DType from = this->dtype();
    autograd::record(
        out, {*this}, [from](const Tensor& g) { return std::vector<Tensor>{g.to(from)}; }, "to");
  }
  return out;
}

Tensor& Tensor::fill_(double value) {
  check_defined("fill_", *this);
  check_inplace("fill_", *this);
  Elementwise e;
  e.op = "fill_";
  e.kernel = ElementwiseKernel::unary;
  e.fn = "op_fill";
  e.in_ct = natural_ct(dtype());
  e.p0 = static_cast<float>(value);
  e.i0 = static_cast<int>(value);
  if (dtype() == DType::bool_) e.i0 = value != 0 ? 1 : 0;
  launch_elementwise(e, *this, {});
  return *this;
}

Tensor& Tensor::copy_(const Tensor& src) {
  check_same_device("copy_", {this, &src});
  check_inplace("copy_", *this);
  broadcast_shapes("copy_", src.shape(), shape());
  if (src.expand(shape()).shape() != shape()) throw ShapeError("gltensor::copy_: bad broadcast");
  Elementwise e;
  e.op = "copy_";
  e.kernel = ElementwiseKernel::unary;
  e.fn = cast_fn(src.dtype(), dtype());
  e.in_ct = natural_ct(src.dtype());
  launch_elementwise(e, *this, {src});
  return *this;
}

}  // namespace gltensor
