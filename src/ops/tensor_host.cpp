// Host reads of tensors (to_bytes, to_vector, to_host, item, to_host_async) and contiguous(): declared in
// gltensor/tensor.hpp, defined in the ops layer because a strided view is first copied by a kernel.
#include <cstring>

#include "runtime/error_flags.hpp"
#include "runtime/guard.hpp"
#include "runtime/readback.hpp"
#include "runtime/storage.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {
namespace detail {
namespace {

template <typename T>
std::vector<T> convert_bytes(const std::vector<std::uint8_t>& b, DType d) {
  const std::size_t n = b.size() / itemsize(d);
  std::vector<T> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint8_t* p = b.data() + i * itemsize(d);
    double v = 0;
    switch (d) {
      case DType::f32: {
        float f;
        std::memcpy(&f, p, 4);
        v = f;
        break;
      }
      case DType::i32: {
        std::int32_t x;
        std::memcpy(&x, p, 4);
        v = x;
        break;
      }
      case DType::f16: {
        std::uint16_t h;
        std::memcpy(&h, p, 2);
        v = f16_to_f32(h);
        break;
      }
      case DType::bf16: {
        std::uint16_t h;
        std::memcpy(&h, p, 2);
        v = bf16_to_f32(h);
        break;
      }
      case DType::u8:
      case DType::bool_:
        v = *p;
        break;
      case DType::i8:
        v = static_cast<std::int8_t>(*p);
        break;
    }
    if constexpr (std::is_same_v<T, float>)
      out[i] = static_cast<float>(v);
    else
      out[i] = (v != v) ? 0 : static_cast<T>(v);
  }
  return out;
}

}  // namespace
}  // namespace detail

using namespace detail;

Tensor Tensor::contiguous() const {
  check_defined("contiguous", *this);
  if (is_contiguous()) return *this;
  return clone();
}

namespace {
// t's elements, row-major, as a vector of T: the copy is queued behind the tensor's writers and
// the batch's fence behind the copy (read_to_host): one fence, one round trip to the GPU, one
// submission; then the batch is retired and its error flags checked. The result is allocated and
// zeroed while the GPU works (read_to_host's HostDest; on the H200 a fresh 904 KB vector's cost
// ~20 us of a ~110 us read, gltensor_transfer_lab, bench/RESULTS.md 2026-11-28), then filled in
// pieces over helper threads.
template <class T>
std::vector<T> read_vector(const Tensor& t) {
  DeviceImpl& d = dev_of(t);
  Enter guard(d, "to_host");
  const Tensor c = t.contiguous();
  const std::size_t bytes = static_cast<std::size_t>(c.numel()) * itemsize(c.dtype());
  std::vector<T> out;
  if (bytes == 0) return out;
  const std::size_t at = static_cast<std::size_t>(c.offset()) * itemsize(c.dtype());
  read_to_host(d, *c.impl()->storage, at, bytes, [&out, bytes]() -> void* {
    out.resize(bytes / sizeof(T));
    return out.data();
  });
  check_device_errors(d);
  return out;
}
}  // namespace

std::vector<std::uint8_t> Tensor::to_bytes() const {
  check_defined("to_host", *this);
  return read_vector<std::uint8_t>(*this);
}

std::vector<float> Tensor::to_vector() const {
  check_defined("to_host", *this);
  if (dtype() != DType::f32) return convert_bytes<float>(to_bytes(), dtype());
  // f32: read into the result itself (no byte vector, no conversion pass).
  return read_vector<float>(*this);
}
void Tensor::to_host(void* dst, std::size_t nbytes) const {
  check_defined("to_host", *this);
  const std::size_t bytes = static_cast<std::size_t>(numel()) * itemsize(dtype());
  if (nbytes != bytes)
    throw ValueError("gltensor::to_host: a tensor of shape " + to_string(shape()) + " and dtype " +
                     dtype_name(dtype()) + " has " + std::to_string(bytes) + " bytes, the destination " +
                     std::to_string(nbytes));
  if (bytes == 0) return;
  if (!dst) throw ValueError("gltensor::to_host: null destination for " + std::to_string(bytes) + " bytes");
  DeviceImpl& d = dev_of(*this);
  Enter guard(d, "to_host");
  const Tensor c = contiguous();
  read_to_host(d, *c.impl()->storage, static_cast<std::size_t>(c.offset()) * itemsize(c.dtype()), bytes,
               [dst]() -> void* { return dst; });
  check_device_errors(d);
}

std::vector<std::int32_t> Tensor::to_int_vector() const { return convert_bytes<std::int32_t>(to_bytes(), dtype()); }

float Tensor::item() const {
  check_defined("item", *this);
  if (numel() != 1)
    throw ShapeError("gltensor::item: a tensor of shape " + to_string(shape()) + " has " + std::to_string(numel()) +
                     " elements, item() needs exactly 1");
  return to_vector()[0];
}

// ---- async read ----

struct AsyncRead::State {
  std::unique_ptr<Readback> read;
  DType dtype = DType::f32;
};

AsyncRead::AsyncRead() = default;
AsyncRead::~AsyncRead() = default;
AsyncRead::AsyncRead(AsyncRead&&) noexcept = default;
AsyncRead& AsyncRead::operator=(AsyncRead&&) noexcept = default;

AsyncRead Tensor::to_host_async() const {
  check_defined("to_host_async", *this);
  DeviceImpl& d = dev_of(*this);
  Enter guard(d, "to_host_async");
  const Tensor c = contiguous();
  AsyncRead r;
  r.s_ = std::make_unique<AsyncRead::State>();
  r.s_->dtype = dtype();
  r.s_->read =
      std::make_unique<Readback>(d, *c.impl()->storage, static_cast<std::size_t>(c.offset()) * itemsize(c.dtype()),
                                 static_cast<std::size_t>(c.numel()) * itemsize(c.dtype()));
  return r;
}

bool AsyncRead::ready() const {
  if (!s_) throw ValueError("gltensor::AsyncRead::ready: empty handle");
  Enter guard(*s_->read->device(), "AsyncRead::ready");
  return s_->read->ready();
}

std::vector<std::uint8_t> AsyncRead::get() {
  if (!s_) throw ValueError("gltensor::AsyncRead::get: empty handle");
  Enter guard(*s_->read->device(), "AsyncRead::get");
  std::vector<std::uint8_t> out(s_->read->bytes());
  s_->read->get(out.data());
  return out;
}

std::vector<float> AsyncRead::get_float() {
  const DType dt = s_ ? s_->dtype : DType::f32;
  return detail::convert_bytes<float>(get(), dt);
}

}  // namespace gltensor
