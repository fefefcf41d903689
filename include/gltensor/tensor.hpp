// Tensor: a strided view (shape, strides, offset in elements, dtype) of refcounted storage held
// in one SSBO from the device's pool. Views share storage and never copy; storage returns to
// the pool when the last tensor using it is destroyed.
//
// Limits: at most 8 dims; storage no larger than the device's max SSBO block size (128 MiB on
// llvmpipe) -> LimitError naming the size and the limit; element indices are 32-bit.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gltensor/device.hpp"
#include "gltensor/dtype.hpp"

namespace gltensor {

using Shape = std::vector<std::int64_t>;
inline constexpr int kMaxDims = 8;

/// "[2, 3, 4]"
std::string to_string(const Shape& shape);
/// Product of the sizes (1 for a 0-dim shape).
std::int64_t numel_of(const Shape& shape);
/// Row-major (C-contiguous) strides of a shape, in elements.
Shape contiguous_strides(const Shape& shape);

namespace detail {
struct TensorImpl;
}

/// A host-side read whose copy runs on the GPU: poll ready(), then get() (which waits if needed).
class AsyncRead {
 public:
  AsyncRead();
  ~AsyncRead();
  AsyncRead(AsyncRead&&) noexcept;
  AsyncRead& operator=(AsyncRead&&) noexcept;
  /// True once the GPU copy finished (non-blocking).
  bool ready() const;
  /// Waits, then returns the bytes in row-major order (the tensor's dtype).
  std::vector<std::uint8_t> get();
  /// get() converted to float (any dtype).
  std::vector<float> get_float();

  struct State;

 private:
  std::unique_ptr<State> s_;
  friend class Tensor;
};

class Tensor {
 public:
  Tensor() = default;
  bool defined() const { return impl_ != nullptr; }

  // ---- creation (see ops.hpp for zeros/ones/full/arange) ----
  /// Uninitialized tensor.
  static Tensor empty(const Device& dev, const Shape& shape, DType dtype = DType::f32);
  /// Copies row-major host values; converted to dtype on the host (float -> f16/bf16 rounds to
  /// nearest even). Throws ShapeError if values.size() != numel(shape).
  static Tensor from_host(const Device& dev, std::span<const float> values, const Shape& shape,
                          DType dtype = DType::f32);
  static Tensor from_host(const Device& dev, std::span<const std::int32_t> values, const Shape& shape,
                          DType dtype = DType::i32);
  static Tensor from_host(const Device& dev, std::span<const std::uint8_t> values, const Shape& shape,
                          DType dtype = DType::u8);
  /// Raw bytes already in dtype's layout (f16/bf16 as uint16 bits, bool as 0/1 bytes), row-major,
  /// read during the call only. Errors: ShapeError where nbytes is not numel(shape) *
  /// itemsize(dtype) (naming both); ValueError for a negative dim or an invalid Device; LimitError
  /// past kMaxDims dims or 2^31 - 1 elements.
  static Tensor from_bytes(const Device& dev, const void* data, std::size_t nbytes, const Shape& shape, DType dtype);

  // ---- metadata ----
  Device device() const;
  DType dtype() const;
  const Shape& shape() const;
  const Shape& strides() const;  ///< in elements
  std::int64_t offset() const;   ///< storage offset in elements
  std::int64_t dim() const;
  std::int64_t size(std::int64_t d) const;  ///< negative d counts from the end
  std::int64_t numel() const;
  bool is_contiguous() const;
  bool shares_storage(const Tensor& other) const;
  std::string repr() const;  ///< "Tensor(shape=[2, 3], dtype=float32)"

  // ---- views (no copy) ----
  /// Same elements, new shape; one size may be -1. Throws ShapeError if the strides cannot
  /// express it without a copy (use reshape()).
  Tensor view(const Shape& shape) const;
  /// view() when possible, else a contiguous copy.
  Tensor reshape(const Shape& shape) const;
  Tensor flatten(std::int64_t start_dim = 0, std::int64_t end_dim = -1) const;
  Tensor permute(const std::vector<std::int64_t>& dims) const;
  Tensor transpose(std::int64_t d0, std::int64_t d1) const;
  Tensor t() const;  ///< transpose of a tensor with <= 2 dims
  /// Elements start, start+step, ... < end along dim (Python slice semantics: negative start/end
  /// count from the end and are clamped; step must be > 0).
  Tensor slice(std::int64_t dim, std::int64_t start, std::int64_t end, std::int64_t step = 1) const;
  Tensor narrow(std::int64_t dim, std::int64_t start, std::int64_t length) const;
  /// Removes dim, taking element index (negative counts from the end).
  Tensor select(std::int64_t dim, std::int64_t index) const;
  /// Broadcasts size-1 dims (and new leading dims) to shape; -1 keeps a size. Stride 0, no copy.
  Tensor expand(const Shape& shape) const;
  Tensor broadcast_to(const Shape& shape) const { return expand(shape); }
  Tensor squeeze() const;
  Tensor squeeze(std::int64_t dim) const;
  Tensor unsqueeze(std::int64_t dim) const;

  // ---- copies ----
  /// This tensor if already contiguous, else a row-major copy.
  Tensor contiguous() const;
  Tensor clone() const;
  /// Cast (PyTorch .to(dtype)): float->int truncates toward zero, nonzero->bool is true.
  Tensor to(DType dtype) const;

  // ---- host transfer ----
  /// Row-major bytes in this tensor's dtype. Waits only on the fence of the last writer.
  std::vector<std::uint8_t> to_bytes() const;
  /// Values converted to float (any dtype).
  std::vector<float> to_vector() const;
  /// Row-major bytes in this tensor's dtype (as to_bytes) written to `dst`, the caller's memory of
  /// `nbytes` bytes: no allocation, nothing zeroed first (a destination reused run after run, or
  /// memory the caller has not touched yet, as PyTorch's `.cpu()` reads into an empty tensor).
  /// Waits only on the fence of the last writer. Throws ValueError unless nbytes == numel() *
  /// itemsize(dtype()) (dst may then be null only where nbytes is 0).
  void to_host(void* dst, std::size_t nbytes) const;
  /// Values converted to int32 (floats truncate toward zero).
  std::vector<std::int32_t> to_int_vector() const;
  /// The single value of a 1-element tensor.
  float item() const;
  /// Starts a GPU-side copy for an asynchronous read.
  AsyncRead to_host_async() const;

  // ---- in place ----
  Tensor& fill_(double value);
  /// Copies src (broadcast to this shape, cast to this dtype) into this tensor or view.
  Tensor& copy_(const Tensor& src);

  const std::shared_ptr<detail::TensorImpl>& impl() const { return impl_; }
  explicit Tensor(std::shared_ptr<detail::TensorImpl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<detail::TensorImpl> impl_;
};

}  // namespace gltensor
