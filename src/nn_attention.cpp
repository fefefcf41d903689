// scaled_dot_product_attention as matmul -> mask -> softmax -> matmul (differentiable by
// composition).
#include <cmath>

#include "gltensor/indexing.hpp"
#include "gltensor/linalg.hpp"
#include "gltensor/nn_functional.hpp"
#include "gltensor/ops.hpp"
#include "gltensor/reduce.hpp"
#include "tensor_impl.hpp"

namespace gltensor {
using namespace detail;

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal,
                                    double scale) {
  const char* op = "scaled_dot_product_attention";
  check_same_device(op, {&q, &k, &v});
  if (q.dim() < 2 || k.dim() < 2 || v.dim() < 2 || q.size(-1) != k.size(-1) || k.size(-2) != v.size(-2))
    throw ShapeError("gltensor::scaled_dot_product_attention: q " + to_string(q.shape()) + ", k " +
                     to_string(k.shape()) + ", v " + to_string(v.shape()) +
                     " do not fit q [..., L, E], k [..., S, E], v [..., S, Ev]");
  const double sc = scale != 0 ? scale : 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  Tensor s = matmul_fused(q, k.transpose(-1, -2), Tensor(), sc, 0, Activation::none);  // [..., L, S]
  const std::int64_t L = q.size(-2), S = k.size(-2);
  if (causal) s = where(tril(ones(q.device(), {L, S}, DType::bool_)), s, -INFINITY);
  if (mask.defined()) s = mask.dtype() == DType::bool_ ? where(mask, s, -INFINITY) : add(s, mask);
  return matmul(softmax(s, -1), v);
}

}  // namespace gltensor
