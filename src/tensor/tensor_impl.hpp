// Tensor internals shared by the ops (internal).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "gltensor/tensor.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/guard.hpp"
#include "runtime/storage.hpp"

namespace gltensor::detail {

struct AutogradMeta;

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape shape;
  Shape strides;
  std::int64_t offset = 0;
  DType dtype = DType::f32;
  std::shared_ptr<AutogradMeta> autograd;  // set by the autograd layer
};

inline DeviceImpl& dev_of(const Tensor& t) { return *t.impl()->storage->dev; }

/// Throws if t is undefined.
void check_defined(const char* op, const Tensor& t, const char* what = "input");
/// Throws ValueError unless every tensor lives on the same device as the first.
void check_same_device(const char* op, std::initializer_list<const Tensor*> ts);
/// Validates dims and sizes, returns numel. Throws ValueError / LimitError naming op.
std::int64_t check_shape(const char* op, const Shape& shape);
/// New contiguous tensor backed by a pool buffer. Throws LimitError past max SSBO size.
/// host_write: the caller will upload into it (see Pool::acquire).
Tensor alloc(DeviceImpl& dev, const Shape& shape, DType dtype, const char* op, bool host_write = false);
/// New contiguous tensor in a host-visible buffer (Pool::acquire_host: kernels read and write
/// it in host memory, the host in place through its mapping; Storage::upload / download), or an
/// undefined tensor where the device has none (no buffer storage, GLTENSOR_HOST_IO=copy).
Tensor alloc_host(DeviceImpl& dev, const Shape& shape, DType dtype, const char* op);
/// A view sharing t's storage.
Tensor make_view(const Tensor& t, Shape shape, Shape strides, std::int64_t offset);
/// Normalizes a possibly negative dim; throws IndexError naming op.
std::int64_t wrap_dim(const char* op, std::int64_t dim, std::int64_t ndim);
/// NumPy broadcast of two shapes; throws ShapeError naming op.
Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b);
/// The element span [first, last] of storage a view touches, in elements.
std::pair<std::int64_t, std::int64_t> element_span(const Tensor& t);
/// True if the two views touch overlapping storage elements.
bool may_overlap(const Tensor& a, const Tensor& b);
/// True if a and b are the very same view (storage, offset, shape, strides).
bool same_view(const Tensor& a, const Tensor& b);
std::shared_ptr<DeviceImpl> dev_ptr(const Tensor& t);

/// Merges the dims of an index space walked over several operands (strides[j]: operand j's
/// strides over `sizes`): drops size-1 dims and merges neighbours d, d + 1 where every operand
/// has stride[d] == stride[d + 1] * size[d + 1]. With no dim left: one dim of size 1 and stride
/// `empty_stride`. Used by elementwise kernels, reductions and batched kernels.
inline void merge_dims(Shape& sizes, std::vector<Shape>& strides, std::int64_t empty_stride) {
  Shape s;
  std::vector<Shape> st(strides.size());
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    bool merge = !s.empty();
    for (std::size_t j = 0; j < strides.size(); ++j) merge = merge && st[j].back() == strides[j][d] * sizes[d];
    for (std::size_t j = 0; j < strides.size(); ++j) {
      if (merge)
        st[j].back() = strides[j][d];
      else
        st[j].push_back(strides[j][d]);
    }
    if (merge)
      s.back() *= sizes[d];
    else
      s.push_back(sizes[d]);
  }
  if (s.empty()) {
    s.push_back(1);
    for (auto& v : st) v.push_back(empty_stride);
  }
  sizes = s;
  strides = st;
}
}  // namespace gltensor::detail
