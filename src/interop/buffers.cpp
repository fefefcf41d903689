// interop: application buffers as tensors, tensors' buffers to the application
// (gltensor/interop.hpp).
#include <string>

#include "gltensor/interop.hpp"
#include "runtime/guard.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor::interop {

using detail::DeviceImpl;
using detail::Enter;

Tensor wrap_buffer(const Device& dev, GLname buffer, std::size_t offset, const Shape& shape, DType dtype) {
  const char* op = "interop::wrap_buffer";
  if (!dev.valid()) throw ValueError("gltensor::interop::wrap_buffer: invalid Device handle");
  DeviceImpl& d = *dev.impl();
  Enter guard(d, op);
  const std::int64_t n = detail::check_shape(op, shape);
  const std::string what = "buffer " + std::to_string(buffer);
  if (buffer == 0 || !glIsBuffer(buffer))
    throw ValueError("gltensor::interop::wrap_buffer: " + what +
                     " is not a buffer object of the device's context (or its share group)");
  const std::size_t item = itemsize(dtype);
  if (offset % item != 0)
    throw ValueError("gltensor::interop::wrap_buffer: byte offset " + std::to_string(offset) + " into " + what +
                     " is not a multiple of the " + dtype_name(dtype) + " element size (" + std::to_string(item) + ")");
  d.gl().bind_buffer(detail::GlState::kCopyRead, buffer);
  GLint64 size = 0;
  glGetBufferParameteri64v(GL_COPY_READ_BUFFER, GL_BUFFER_SIZE, &size);
  const std::size_t bytes = static_cast<std::size_t>(n) * item;
  const std::size_t end = (offset + bytes + 3) & ~std::size_t{3};  // kernels access whole 32-bit words
  if (static_cast<std::int64_t>(end) > size)
    throw ShapeError("gltensor::interop::wrap_buffer: a " + std::string(dtype_name(dtype)) + " tensor of shape " +
                     to_string(shape) + " at byte offset " + std::to_string(offset) + " needs bytes up to " +
                     std::to_string(end) + " (whole 32-bit words) of " + what + ", which has " + std::to_string(size) +
                     " bytes");
  if (static_cast<std::int64_t>(end) > d.ssbo_limit())
    throw LimitError("gltensor::interop::wrap_buffer: bytes up to " + std::to_string(end) + " of " + what +
                     " lie past the device's max SSBO block size of " + std::to_string(d.ssbo_limit()) +
                     " bytes (kernels bind the whole buffer)");
  auto st = std::make_shared<detail::Storage>();
  st->dev = d.shared_from_this();
  st->external = true;
  st->block.buffer = buffer;
  st->block.capacity = static_cast<std::size_t>(size);
  st->nbytes = end;
  auto impl = std::make_shared<detail::TensorImpl>();
  impl->storage = std::move(st);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->offset = static_cast<std::int64_t>(offset / item);
  impl->dtype = dtype;
  return Tensor(impl);
}

BufferRange buffer_of(const Tensor& t) {
  detail::check_defined("interop::buffer_of", t);
  if (!t.is_contiguous())
    throw ValueError("gltensor::interop::buffer_of: the tensor of shape " + to_string(t.shape()) +
                     " is not contiguous (call contiguous() first)");
  const std::size_t item = itemsize(t.dtype());
  return {t.impl()->storage->buffer(), static_cast<std::size_t>(t.offset()) * item,
          static_cast<std::size_t>(t.numel()) * item};
}

}  // namespace gltensor::interop
