// Tensor: creation from host data and metadata (host reads, which may copy a view first, are in
// src/ops/tensor_host.cpp).
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <type_traits>

#include "runtime/guard.hpp"
#include "runtime/storage.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {
namespace detail {

void check_defined(const char* op, const Tensor& t, const char* what) {
  if (!t.defined()) throw ValueError(std::string("gltensor::") + op + ": " + what + " is an undefined tensor");
}

void check_same_device(const char* op, std::initializer_list<const Tensor*> ts) {
  const DeviceImpl* first = nullptr;
  for (const Tensor* t : ts) {
    check_defined(op, *t);
    if (!first)
      first = &dev_of(*t);
    else if (&dev_of(*t) != first)
      throw ValueError(std::string("gltensor::") + op + ": tensors are on different devices");
  }
}

std::int64_t check_shape(const char* op, const Shape& shape) {
  if (shape.size() > static_cast<std::size_t>(kMaxDims))
    throw LimitError(std::string("gltensor::") + op + ": shape " + to_string(shape) + " has " +
                     std::to_string(shape.size()) + " dims; the limit is " + std::to_string(kMaxDims));
  std::int64_t n = 1;
  for (auto s : shape) {
    if (s < 0) throw ValueError(std::string("gltensor::") + op + ": negative size in shape " + to_string(shape));
    n *= s;
    if (n > 0x7fffffffll)
      throw LimitError(std::string("gltensor::") + op + ": shape " + to_string(shape) +
                       " has more than 2^31-1 elements (32-bit element indices)");
  }
  return n;
}

namespace {

// The bytes of a contiguous tensor of `shape` (checked against the device's SSBO limit).
std::size_t checked_bytes(DeviceImpl& dev, const Shape& shape, DType dtype, const char* op) {
  const std::int64_t n = check_shape(op, shape);
  const std::size_t bytes = (static_cast<std::size_t>(n) * itemsize(dtype) + 3) & ~std::size_t{3};
  if (const std::int64_t limit = dev.ssbo_limit(); static_cast<std::int64_t>(bytes) > limit)
    throw LimitError(std::string("gltensor::") + op + ": a " + dtype_name(dtype) + " tensor of shape " +
                     to_string(shape) + " needs " + std::to_string(bytes) +
                     " bytes, more than the device's max SSBO block size of " + std::to_string(limit) + " bytes" +
                     (limit < dev.caps().max_ssbo_block_size ? " (lowered by Device::set_ssbo_limit)" : ""));
  return bytes;
}

Tensor wrap_block(DeviceImpl& dev, Pool::Block block, std::size_t bytes, const Shape& shape, DType dtype) {
  auto st = std::make_shared<Storage>();
  st->block = block;
  st->dev = dev.shared_from_this();
  st->nbytes = bytes;
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(st);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(impl);
}

}  // namespace

Tensor alloc(DeviceImpl& dev, const Shape& shape, DType dtype, const char* op, bool host_write) {
  const std::size_t bytes = checked_bytes(dev, shape, dtype, op);
  return wrap_block(dev, dev.pool().acquire(std::max<std::size_t>(bytes, 4), op, host_write), bytes, shape, dtype);
}

Tensor alloc_host(DeviceImpl& dev, const Shape& shape, DType dtype, const char* op) {
  const std::size_t bytes = checked_bytes(dev, shape, dtype, op);
  const Pool::Block b = dev.pool().acquire_host(std::max<std::size_t>(bytes, 4), op);
  return b.buffer ? wrap_block(dev, b, bytes, shape, dtype) : Tensor();
}

Tensor make_view(const Tensor& t, Shape shape, Shape strides, std::int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = t.impl()->storage;
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = t.dtype();
  return Tensor(impl);
}

std::int64_t wrap_dim(const char* op, std::int64_t dim, std::int64_t ndim) {
  const std::int64_t n = std::max<std::int64_t>(ndim, 1);
  if (dim < -n || dim >= n)
    throw IndexError(std::string("gltensor::") + op + ": dim " + std::to_string(dim) + " is out of range for a " +
                     std::to_string(ndim) + "-dim tensor (expected [" + std::to_string(-n) + ", " +
                     std::to_string(n - 1) + "])");
  return dim < 0 ? dim + n : dim;
}

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b) {
  const std::size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const std::int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1)
      throw ShapeError(std::string("gltensor::") + op + ": shapes " + to_string(a) + " and " + to_string(b) +
                       " cannot be broadcast (dim " + std::to_string(i) + ": " + std::to_string(x) + " vs " +
                       std::to_string(y) + ")");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

std::pair<std::int64_t, std::int64_t> element_span(const Tensor& t) {
  std::int64_t lo = t.offset(), hi = t.offset();
  for (std::int64_t d = 0; d < t.dim(); ++d) hi += (t.shape()[d] - 1) * t.strides()[d];
  return {lo, hi};
}

bool may_overlap(const Tensor& a, const Tensor& b) {
  if (!a.shares_storage(b) || a.numel() == 0 || b.numel() == 0) return false;
  auto [alo, ahi] = element_span(a);
  auto [blo, bhi] = element_span(b);
  return alo <= bhi && blo <= ahi;
}

bool same_view(const Tensor& a, const Tensor& b) {
  return a.shares_storage(b) && a.offset() == b.offset() && a.shape() == b.shape() && a.strides() == b.strides() &&
         a.dtype() == b.dtype();
}

std::shared_ptr<DeviceImpl> dev_ptr(const Tensor& t) { return t.impl()->storage->dev; }

namespace {

void check_count(const char* op, std::size_t got, const Shape& shape) {
  const std::int64_t n = check_shape(op, shape);
  if (static_cast<std::int64_t>(got) != n)
    throw ShapeError(std::string("gltensor::") + op + ": " + std::to_string(got) + " host values for shape " +
                     to_string(shape) + " (" + std::to_string(n) + " elements)");
}

template <typename Src>
Tensor from_host_values(const Device& dev, std::span<const Src> values, const Shape& shape, DType dtype) {
  check_count("from_host", values.size(), shape);
  // The dtype of the values themselves: their bytes as they are (no conversion pass).
  if ((std::is_same_v<Src, float> && dtype == DType::f32) ||
      (std::is_same_v<Src, std::int32_t> && dtype == DType::i32) ||
      (std::is_same_v<Src, std::uint8_t> && dtype == DType::u8))
    return Tensor::from_bytes(dev, values.data(), values.size() * sizeof(Src), shape, dtype);
  std::vector<std::uint8_t> bytes(values.size() * itemsize(dtype));
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::uint8_t* p = bytes.data() + i * itemsize(dtype);
    const Src v = values[i];
    switch (dtype) {
      case DType::f32: {
        float f = static_cast<float>(v);
        std::memcpy(p, &f, 4);
        break;
      }
      case DType::i32: {
        std::int32_t x = static_cast<std::int32_t>(v);
        std::memcpy(p, &x, 4);
        break;
      }
      case DType::f16: {
        std::uint16_t h = f32_to_f16(static_cast<float>(v));
        std::memcpy(p, &h, 2);
        break;
      }
      case DType::bf16: {
        std::uint16_t h = f32_to_bf16(static_cast<float>(v));
        std::memcpy(p, &h, 2);
        break;
      }
      case DType::u8:
      case DType::i8:
        *p = static_cast<std::uint8_t>(static_cast<std::int32_t>(v));
        break;
      case DType::bool_:
        *p = v != Src(0) ? 1 : 0;
        break;
    }
  }
  return Tensor::from_bytes(dev, bytes.data(), bytes.size(), shape, dtype);
}

}  // namespace
}  // namespace detail

using namespace detail;

std::string to_string(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::int64_t numel_of(const Shape& shape) {
  return std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>());
}

Shape contiguous_strides(const Shape& shape) {
  Shape s(shape.size());
  std::int64_t acc = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    acc *= std::max<std::int64_t>(shape[i], 1);
  }
  return s;
}

Tensor Tensor::empty(const Device& dev, const Shape& shape, DType dtype) {
  if (!dev.valid()) throw ValueError("gltensor::empty: invalid Device handle");
  Enter guard(*dev.impl(), "empty");
  return alloc(*dev.impl(), shape, dtype, "empty");
}

Tensor Tensor::from_host(const Device& dev, std::span<const float> v, const Shape& shape, DType dtype) {
  return from_host_values<float>(dev, v, shape, dtype);
}
Tensor Tensor::from_host(const Device& dev, std::span<const std::int32_t> v, const Shape& shape, DType dtype) {
  return from_host_values<std::int32_t>(dev, v, shape, dtype);
}
Tensor Tensor::from_host(const Device& dev, std::span<const std::uint8_t> v, const Shape& shape, DType dtype) {
  return from_host_values<std::uint8_t>(dev, v, shape, dtype);
}

Tensor Tensor::from_bytes(const Device& dev, const void* data, std::size_t nbytes, const Shape& shape, DType dtype) {
  if (!dev.valid()) throw ValueError("gltensor::from_bytes: invalid Device handle");
  const std::int64_t n = check_shape("from_bytes", shape);
  if (nbytes != static_cast<std::size_t>(n) * itemsize(dtype))
    throw ShapeError("gltensor::from_bytes: " + std::to_string(nbytes) + " bytes for a " + dtype_name(dtype) +
                     " tensor of shape " + to_string(shape) + " (" +
                     std::to_string(static_cast<std::size_t>(n) * itemsize(dtype)) + " bytes)");
  DeviceImpl& d = *dev.impl();
  Enter guard(d, "from_host");
  Tensor t = alloc(d, shape, dtype, "from_host", /*host_write=*/true);
  if (nbytes % 4 == 0) {
    t.impl()->storage->upload(data, nbytes);
  } else {  // pad the last word
    const auto* p = static_cast<const std::uint8_t*>(data);
    std::vector<std::uint8_t> padded(p, p + nbytes);
    padded.resize((nbytes + 3) & ~std::size_t{3}, 0);
    t.impl()->storage->upload(padded.data(), padded.size());
  }
  return t;
}

Device Tensor::device() const { return Device(impl_->storage->dev); }
DType Tensor::dtype() const { return impl_->dtype; }
const Shape& Tensor::shape() const { return impl_->shape; }
const Shape& Tensor::strides() const { return impl_->strides; }
std::int64_t Tensor::offset() const { return impl_->offset; }
std::int64_t Tensor::dim() const { return static_cast<std::int64_t>(impl_->shape.size()); }
std::int64_t Tensor::size(std::int64_t d) const { return impl_->shape[wrap_dim("size", d, dim())]; }
std::int64_t Tensor::numel() const { return numel_of(impl_->shape); }
bool Tensor::shares_storage(const Tensor& o) const {
  return defined() && o.defined() && impl_->storage == o.impl_->storage;
}

bool Tensor::is_contiguous() const {
  std::int64_t expected = 1;
  for (std::size_t i = impl_->shape.size(); i-- > 0;) {
    if (impl_->shape[i] == 1) continue;
    if (impl_->strides[i] != expected) return false;
    expected *= impl_->shape[i];
  }
  return true;
}

std::string Tensor::repr() const {
  if (!defined()) return "Tensor(undefined)";
  return "Tensor(shape=" + to_string(shape()) + ", dtype=" + dtype_name(dtype()) + ")";
}

}  // namespace gltensor
