// Tensor internals shared by the ops (internal).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "gltensor/linalg.hpp"
#include "gltensor/tensor.hpp"
#include "runtime/device_impl.hpp"

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

// Batched matrix operands ([batch..., rows, cols]), as matmul and attention pass them to kernels.
/// The batch dims of t (all but the last two).
inline Shape batch_dims(const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 2); }
/// t with its batch dims expanded to `batch` (stride 0 where broadcast).
inline Tensor expand_batch(const Tensor& t, const Shape& batch) {
  Shape s = batch;
  s.push_back(t.size(-2));
  s.push_back(t.size(-1));
  return t.expand(s);
}
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
/// The batch of a batched kernel (matmul, attention) with its dims merged (merge_dims): `shape`
/// (at least one dim) and each operand's strides over it, as uniforms. Operands are already
/// expanded to `batch`; an undefined one gets zero strides.
struct BatchLayout {
  std::vector<std::uint32_t> shape;
  std::vector<std::vector<std::uint32_t>> strides;  // one per operand
};
inline BatchLayout collapse_batch(const Shape& batch, std::initializer_list<const Tensor*> ops) {
  Shape sizes = batch;
  std::vector<Shape> strides;
  for (const Tensor* t : ops)
    strides.push_back(t->defined() ? Shape(t->strides().begin(), t->strides().begin() + batch.size())
                                   : Shape(batch.size(), 0));
  merge_dims(sizes, strides, 0);
  BatchLayout b{{sizes.begin(), sizes.end()}, {}};
  for (const auto& st : strides) b.strides.emplace_back(st.begin(), st.end());
  return b;
}
/// a [M, K] @ b [K, N] + addend (broadcast to [M, N]) written as [N / split, M, split] in one
/// kernel, where the quad-load matmul kernel applies (2-D operands, whole tiles, split a multiple
/// of 4 dividing N, no gradient); otherwise an undefined tensor (the caller permutes instead).
Tensor matmul_split_columns(const Tensor& a, const Tensor& b, const Tensor& addend, std::int64_t split,
                            Activation activation = Activation::none);
/// True if every 4 consecutive elements along dim `contig` (stride 1) form an aligned quad: the
/// offset and the strides of the other dims (those of size > 1) are multiples of 4.
inline bool quad_aligned(const Tensor& t, std::int64_t contig) {
  if (t.strides()[contig] != 1 || t.offset() % 4) return false;
  for (std::int64_t d = 0; d < t.dim(); ++d)
    if (d != contig && t.size(d) > 1 && t.strides()[d] % 4) return false;
  return true;
}

}  // namespace gltensor::detail
