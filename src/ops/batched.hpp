// Batched matrix operands ([batch..., rows, cols]) as the batched kernels (matmul, attention)
// take them (internal).
#pragma once
#include <initializer_list>
#include <vector>

#include "gltensor/linalg.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor::detail {

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
/// True if every 4 consecutive elements along dim `contig` (stride 1) form an aligned quad: the
/// offset and the strides of the other dims (those of size > 1) are multiples of 4.
inline bool quad_aligned(const Tensor& t, std::int64_t contig) {
  if (t.strides()[contig] != 1 || t.offset() % 4) return false;
  for (std::int64_t d = 0; d < t.dim(); ++d)
    if (d != contig && t.size(d) > 1 && t.strides()[d] % 4) return false;
  return true;
}

/// a [M, K] @ b [K, N] + addend (broadcast to [M, N]), epilogue applied, written as
/// [N / split, M, split] in one kernel, where the quad-load or REG matmul kernel applies (2-D operands,
/// whole tiles, split a multiple of 4 dividing N, no split-K, no gradient); otherwise an
/// undefined tensor (the caller permutes instead). residual (may be undefined): f32, contiguous from
/// element 0, laid out as the result, added after the epilogue in the REG kernel's stores; where the
/// plan is not REG (or splits K) an undefined tensor too (the caller adds it after).
Tensor matmul_split_columns(const Tensor& a, const Tensor& b, const Tensor& addend, std::int64_t split,
                            const Epilogue& epilogue = {}, const Tensor& residual = Tensor());

/// a [M, K] @ b [K, N] + addend (broadcast to [M, N]), epilogue applied, then + residual (f32,
/// contiguous from element 0, M * N elements laid out as the [M, N] result) in the REG matmul
/// kernel's stores, sliced over K or not (the K-sliced plans have no split-columns form); an
/// undefined tensor where the plan is another kernel or splits K, or with gradients (the caller
/// adds it after). conv2d_add's 1x1 / im2col GEMM of one image, whose [O, OH * OW] is NCHW.
Tensor matmul_residual(const Tensor& a, const Tensor& b, const Tensor& addend, const Epilogue& epilogue,
                       const Tensor& residual);

/// (a [M, K] @ b [K, N])^T as a contiguous [N, M] tensor, no gradient recorded: written so by the
/// split-K sum where the product splits K (no copy), else the product copied transposed.
/// ShapeError unless both operands are 2-D with matching K.
Tensor matmul_transposed(const Tensor& a, const Tensor& b);

}  // namespace gltensor::detail
