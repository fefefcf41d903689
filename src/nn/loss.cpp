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
// Targets with ignore_index: `keep` (bool [N]) marks the others; `safe` holds class 0 in their
// place (so that only targets outside [0, C) other than ignore_index are IndexError).
struct ClassTargets {
  Tensor safe, keep, keep_f, count;  // count: f32 scalar, the number kept (the mean's denominator)
};
ClassTargets class_targets(const Tensor& target, std::int64_t ignore_index, Reduction r) {
  const Tensor t = target.dtype() == DType::i32 ? target : target.to(DType::i32);
  ClassTargets c;
  c.keep = ne(t, static_cast<double>(ignore_index));
  c.safe = where(c.keep, t, 0.0);
  c.keep_f = c.keep.to(DType::f32);
  if (r == Reduction::mean) c.count = sum(c.keep_f);
  return c;
}
// Per-sample losses (ignored samples 0, even if their row holds NaN) reduced: the mean divides
// by the number of samples kept (NaN if none, as torch).
Tensor reduce_loss(const Tensor& per_sample, const ClassTargets& c, Reduction r) {
  const Tensor p = where(c.keep, per_sample, 0.0);
  if (r == Reduction::none) return p;
  return r == Reduction::sum ? sum(p) : div(sum(p), c.count);
}
// The upstream gradient of a reduced loss, per sample (0 for ignored samples), shaped [N, 1].
Tensor per_sample_grad(const Tensor& g, const ClassTargets& c, Reduction r) {
  const Tensor k = c.keep_f.unsqueeze(1);
  if (r == Reduction::none) return mul(g.unsqueeze(1), k);
  return mul(r == Reduction::mean ? div(g, c.count) : g, k);
}
}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction reduction, double ls,
                     std::int64_t ignore_index) {
  const char* op = "cross_entropy";
  check_class_inputs(op, logits, target);
  if (ls < 0 || ls > 1) throw ValueError("gltensor::cross_entropy: label_smoothing must be in [0, 1]");
  const std::int64_t C = logits.size(1);
  Tensor loss, lsm;
  ClassTargets ct;
  {
    NoGradGuard ng;
    ct = class_targets(target, ignore_index, reduction);
    lsm = log_softmax(logits, 1);                                                   // [N, C]
    Tensor nll = neg(gather_classes(op, lsm, 1, ct.safe.unsqueeze(1)).squeeze(1));  // [N]
    if (ls > 0) nll = add(mul(nll, 1 - ls), mul(neg(mean(lsm, {1})), ls));
    loss = reduce_loss(nll, ct, reduction);
  }
  if (autograd::any_requires_grad({&logits})) {
    autograd::record(
        loss, {logits},
        [lsm, ct, C, ls, reduction](const Tensor& g) {
          // d/dlogits = softmax - target distribution, times the upstream gradient per sample.
          Tensor q = one_hot(ct.safe, C).to(DType::f32);
          if (ls > 0) q = add(mul(q, 1 - ls), ls / static_cast<double>(C));
          Tensor d = sub(exp(lsm), q);
          return std::vector<Tensor>{where(ct.keep.unsqueeze(1), mul(d, per_sample_grad(g, ct, reduction)), 0.0)};
        },
        op);
  }
  return loss;
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, Reduction reduction, std::int64_t ignore_index) {
  const char* op = "nll_loss";
  check_class_inputs(op, log_probs, target);
  const std::int64_t C = log_probs.size(1);
  Tensor loss;
  ClassTargets ct;
  {
    NoGradGuard ng;
    ct = class_targets(target, ignore_index, reduction);
    loss = reduce_loss(neg(gather_classes(op, log_probs, 1, ct.safe.unsqueeze(1)).squeeze(1)), ct, reduction);
  }
  if (autograd::any_requires_grad({&log_probs})) {
    autograd::record(
        loss, {log_probs},
        [ct, C, reduction](const Tensor& g) {
          Tensor q = neg(one_hot(ct.safe, C).to(DType::f32));
          return std::vector<Tensor>{mul(q, per_sample_grad(g, ct, reduction))};
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
  const Tensor e = square(sub(input, target));
  if (reduction == Reduction::none) return e;
  return reduction == Reduction::sum ? sum(e) : mean(e);
}

}  // namespace gltensor
