// cross_entropy (fused log_softmax + NLL, explicit backward), nll_loss, mse_loss.
#include "gltensor/autograd.hpp"
#include "gltensor/indexing.hpp"
#include "gltensor/nn_functional.hpp"
#include "gltensor/ops.hpp"
#include "gltensor/reduce.hpp"
#include "ops/index.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {
using namespace detail;

namespace {
void check_class_inputs(const char* op, const Tensor& x, const Tensor& target) {
  check_same_device(op, {&x, &target});
  if (x.dim() != 2 || target.dim() != 1 || target.size(0) != x.size(0))
    throw ShapeError(std::string("gltensor::") + op + ": expects input [N, C] and target [N], got " +
                     to_string(x.shape()) + " and " + to_string(target.shape()));
  if (is_floating(target.dtype()))
    throw DTypeError(std::string("gltensor::") + op + ": target must hold class indices (integer dtype), got " +
                     dtype_name(target.dtype()));
}
// The upstream gradient of a reduced loss, per sample, shaped to broadcast over [N, C].
Tensor per_sample_grad(const Tensor& g, Reduction r, std::int64_t n) {
  if (r == Reduction::none) return g.unsqueeze(1);
  return r == Reduction::mean ? div(g, static_cast<double>(n)) : g;
}
Tensor reduce_loss(const Tensor& per_sample, Reduction r) {
  if (r == Reduction::none) return per_sample;
  return r == Reduction::sum ? sum(per_sample) : mean(per_sample);
}
}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction reduction, double ls) {
  const char* op = "cross_entropy";
  check_class_inputs(op, logits, target);
  if (ls < 0 || ls > 1) throw ValueError("gltensor::cross_entropy: label_smoothing must be in [0, 1]");
  const std::int64_t N = logits.size(0), C = logits.size(1);
  const Tensor t = target.dtype() == DType::i32 ? target : target.to(DType::i32);
  Tensor loss, lsm;
  {
    NoGradGuard ng;
    lsm = log_softmax(logits, 1);                                             // [N, C]
    Tensor nll = neg(gather_classes(op, lsm, 1, t.unsqueeze(1)).squeeze(1));  // [N]
    if (ls > 0) nll = add(mul(nll, 1 - ls), mul(neg(mean(lsm, {1})), ls));
    loss = reduce_loss(nll, reduction);
  }
  if (autograd::any_requires_grad({&logits})) {
    autograd::record(
        loss, {logits},
        [lsm, t, N, C, ls, reduction](const Tensor& g) {
          // d/dlogits = softmax - target distribution, times the upstream gradient per sample.
          Tensor q = one_hot(t, C).to(DType::f32);
          if (ls > 0) q = add(mul(q, 1 - ls), ls / static_cast<double>(C));
          Tensor d = sub(exp(lsm), q);
          Tensor gs = per_sample_grad(g, reduction, N);
          return std::vector<Tensor>{mul(d, gs)};
        },
        op);
  }
  return loss;
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, Reduction reduction) {
  const char* op = "nll_loss";
  check_class_inputs(op, log_probs, target);
  const std::int64_t N = log_probs.size(0), C = log_probs.size(1);
  const Tensor t = target.dtype() == DType::i32 ? target : target.to(DType::i32);
  Tensor loss;
  {
    NoGradGuard ng;
    loss = reduce_loss(neg(gather_classes(op, log_probs, 1, t.unsqueeze(1)).squeeze(1)), reduction);
  }
  if (autograd::any_requires_grad({&log_probs})) {
    autograd::record(
        loss, {log_probs},
        [t, N, C, reduction](const Tensor& g) {
          Tensor q = neg(one_hot(t, C).to(DType::f32));
          Tensor gs = per_sample_grad(g, reduction, N);
          return std::vector<Tensor>{mul(q, gs)};
        },
        op);
  }
  return loss;
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  check_same_device("mse_loss", {&input, &target});
  if (input.shape() != target.shape())
    throw ShapeError("gltensor::mse_loss: input " + to_string(input.shape()) + " and target " +
                     to_string(target.shape()) + " must have the same shape");
  return reduce_loss(square(sub(input, target)), reduction);
}

}  // namespace gltensor
