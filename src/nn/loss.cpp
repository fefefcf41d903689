// cross_entropy (the whole forward in one dispatch where it fits, else log-sum-exp + NLL from row
// reductions; one fused backward kernel writing the only [N, C] buffer,
// glsl/nn/cross_entropy.comp), nll_loss, mse_loss.
#include <cstdint>
#include <optional>
#include <tuple>
#include <utility>

#include "gltensor/autograd.hpp"
#include "gltensor/indexing.hpp"
#include "gltensor/nn_functional.hpp"
#include "gltensor/ops.hpp"
#include "gltensor/reduce.hpp"
#include "nn/train_variants.hpp"
#include "ops/autocast.hpp"
#include "ops/index.hpp"
#include "runtime/error_flags.hpp"
#include "runtime/launch.hpp"
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

namespace {
// The contiguous f32-or-16-bit copy the backward kernel indexes from element 0.
Tensor dense(const Tensor& t) { return t.is_contiguous() && t.offset() == 0 ? t : t.clone(); }

// d logits in one dispatch of glsl/nn/cross_entropy.comp (see there).
// With `count` (the fused forward's rows kept), w is divided by it in the kernel (the mean's).
Tensor cross_entropy_backward(const Tensor& logits, const Tensor& lse, const Tensor& target, const Tensor& w, double ls,
                              std::int64_t ignore_index, const Tensor& count = Tensor()) {
  const char* op = "cross_entropy_backward";
  DeviceImpl& dev = dev_of(logits);
  Enter guard(dev, op);
  const std::int64_t N = logits.size(0), C = logits.size(1);
  Tensor out = alloc(dev, logits.shape(), logits.dtype(), op);
  if (out.numel() == 0) return out;
  const Tensor x = dense(logits), l = dense(lse), t = dense(target), wd = dense(w);
  CrossEntropyVariant v;
  v.out = out.dtype(), v.x = x.dtype(), v.lse = l.dtype(), v.w = wd.dtype(), v.count = count.defined();
  struct Params {
    std::int64_t count, C, w_step, ignore;
    double on, off;
    void set(Uniforms& u) const {
      u.u32("u_count", count);
      u.u32("u_C", C);
      u.u32("u_w_step", w_step);
      u.i32("u_ignore", ignore);
      u.f32("u_on", on);
      u.f32("u_off", off);
    }
  };
  const bool ignore_fits = ignore_index >= INT32_MIN && ignore_index <= INT32_MAX;
  Launch launch(dev, op);
  launch.program(v.kFile, v.defines(), {256}).write(out).read(x).read(l).read(t).read(wd);
  if (v.count) launch.read(count);
  launch
      .params(Params{out.numel(), C, wd.numel() == 1 ? 0 : 1, ignore_fits ? ignore_index : INT32_MIN, 1 - ls,
                     ls / static_cast<double>(C)})
      .loop_iterations(0)
      .invocations(static_cast<std::uint64_t>(N * C));
  return out;
}
// {lse [N], row mean [N] (with_mean) or undefined} in one dispatch of cross_entropy.comp's
// FORWARD, one invocation per row; rows longer than the loop limit allows one invocation go
// through logsumexp (and mean), reductions split across workgroups.
std::pair<Tensor, Tensor> row_lse(const Tensor& logits, bool with_mean) {
  const char* op = "cross_entropy";
  DeviceImpl& dev = dev_of(logits);
  Enter guard(dev, op);
  const std::int64_t N = logits.size(0), C = logits.size(1);
  const std::uint64_t limit = dev.loop_limit();
  if (C == 0 || (limit != 0 && static_cast<std::uint64_t>(2 * C) > limit))
    return {logsumexp(logits, {1}), with_mean ? mean(logits, {1}) : Tensor()};
  const Tensor x = dense(logits);
  Tensor lse = alloc(dev, {N}, DType::f32, op);
  Tensor mu = with_mean ? alloc(dev, {N}, DType::f32, op) : Tensor();
  if (N == 0) return {lse, mu};
  CrossEntropyVariant v;
  v.forward = true, v.mean = with_mean, v.x = x.dtype();
  struct Params {
    std::int64_t rows, C;
    void set(Uniforms& u) const {
      u.u32("u_rows", rows);
      u.u32("u_C", C);
    }
  };
  Launch launch(dev, op);
  launch.program(v.kFile, v.defines(), {64}).write(lse).read(x);
  if (with_mean) launch.write(mu);
  launch.params(Params{N, C})
      .loop_iterations(static_cast<std::uint64_t>(2 * C))
      .invocations(static_cast<std::uint64_t>(N));
  return {lse, mu};
}

// The loss in one dispatch (cross_entropy.comp's LOSS): the training step's case, where the
// separate path takes about a dozen small dispatches. Reduced losses take one workgroup, so only
// up to kFusedLossRows rows; no result where the kernel does not apply (then the row reductions).
constexpr std::int64_t kFusedLossRows = 8192;
constexpr std::int64_t kFusedLossLocal = 256;
struct FusedLoss {
  Tensor loss, lse, count;  // count: f32 [1], the rows kept (reduced losses only)
};
std::optional<FusedLoss> fused_loss(const Tensor& logits, const Tensor& t32, Reduction r, double ls,
                                    std::int64_t ignore_index) {
  const char* op = "cross_entropy";
  DeviceImpl& dev = dev_of(logits);
  Enter guard(dev, op);
  const std::int64_t N = logits.size(0), C = logits.size(1);
  const bool reduce = r != Reduction::none;
  if (C == 0 || ignore_index < INT32_MIN || ignore_index > INT32_MAX || (reduce && N > kFusedLossRows))
    return std::nullopt;
  // Loops: the rows an invocation takes (one without reduce), two passes over C each, then the
  // workgroup's sum (log2 of its size).
  const std::int64_t rows = reduce ? (N + kFusedLossLocal - 1) / kFusedLossLocal : 1;
  const auto iterations = static_cast<std::uint64_t>(rows * (2 * C + 1) + (reduce ? 8 : 0));
  const std::uint64_t limit = dev.loop_limit();
  if (limit != 0 && iterations > limit) return std::nullopt;
  FusedLoss f;
  const Tensor x = dense(logits), t = dense(t32);
  f.lse = alloc(dev, {N}, DType::f32, op);
  f.loss = reduce ? alloc(dev, {}, DType::f32, op) : alloc(dev, {N}, DType::f32, op);
  if (reduce) f.count = alloc(dev, {1}, DType::f32, op);
  if (!reduce && N == 0) return f;
  CrossEntropyVariant v;
  v.loss = true, v.reduce = reduce, v.divide = r == Reduction::mean, v.x = x.dtype();
  struct Params {
    std::int64_t rows, C, ignore;
    double ls;
    void set(Uniforms& u) const {
      u.u32("u_rows", rows);
      u.u32("u_C", C);
      u.i32("u_ignore", ignore);
      u.f32("u_ls", ls);
    }
  };
  ErrorFlags& flags = dev.extension<ErrorFlags>();
  Launch launch(dev, op);
  launch.program(v.kFile, v.defines(), {kFusedLossLocal}).write(f.lse).read(x).read(t).write(f.loss);
  launch.bind(flags.storage(dev), true);
  if (reduce) launch.write(f.count);
  launch.params(Params{N, C, ignore_index, ls}).loop_iterations(iterations);
  if (reduce)
    launch.groups(1);
  else
    launch.invocations(static_cast<std::uint64_t>(N));
  flags.expect(dev, op, ErrorFlags::kIndex);
  return f;
}
}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction reduction, double ls,
                     std::int64_t ignore_index) {
  if (detail::autocast_changes_f32({&logits, &target}))
    return cross_entropy(detail::autocast_f32(logits), detail::autocast_f32(target), reduction, ls, ignore_index);
  const char* op = "cross_entropy";
  check_class_inputs(op, logits, target);
  if (ls < 0 || ls > 1) throw ValueError("gltensor::cross_entropy: label_smoothing must be in [0, 1]");
  const Tensor t32 = target.dtype() == DType::i32 ? detach(target) : target.to(DType::i32);
  if (auto f = fused_loss(detach(logits), t32, reduction, ls, ignore_index)) {
    if (autograd::any_requires_grad({&logits})) {
      const Tensor saved = detach(logits), lse = f->lse, count = f->count;
      autograd::record(
          f->loss, {logits},
          [saved, lse, t32, count, ls, reduction, ignore_index](const Tensor& g) {
            const Tensor w = g.dtype() == DType::f32 ? g : g.to(DType::f32);
            return std::vector<Tensor>{cross_entropy_backward(saved, lse, t32, w, ls, ignore_index,
                                                              reduction == Reduction::mean ? count : Tensor())};
          },
          op);
    }
    return f->loss;
  }
  Tensor loss, lse;
  ClassTargets ct;
  {
    // Row reductions only: log-sum-exp [N], the target's logit [N] (and the row mean for label
    // smoothing); nll = lse - x[target]. No [N, C] buffer.
    NoGradGuard ng;
    const Tensor x = detach(logits);
    ct = class_targets(target, ignore_index, reduction);
    Tensor row_mean;
    std::tie(lse, row_mean) = row_lse(x, ls > 0);                                      // [N]
    Tensor nll = sub(lse, gather_classes(op, x, 1, ct.safe.unsqueeze(1)).squeeze(1));  // [N]
    if (ls > 0) nll = add(mul(nll, 1 - ls), mul(sub(lse, row_mean), ls));
    loss = reduce_loss(nll, ct, reduction);
  }
  if (autograd::any_requires_grad({&logits})) {
    const Tensor saved = detach(logits);
    autograd::record(
        loss, {logits},
        [saved, lse, t32, ct, ls, reduction, ignore_index](const Tensor& g) {
          // d/dlogits = (softmax - target distribution) * the upstream gradient per sample.
          Tensor w = reduction == Reduction::none ? g : reduction == Reduction::mean ? div(g, ct.count) : g;
          if (w.dtype() != DType::f32) w = w.to(DType::f32);
          return std::vector<Tensor>{cross_entropy_backward(saved, lse, t32, w, ls, ignore_index)};
        },
        op);
  }
  return loss;
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, Reduction reduction, std::int64_t ignore_index) {
  if (detail::autocast_changes_f32({&log_probs}))
    return nll_loss(detail::autocast_f32(log_probs), target, reduction, ignore_index);
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
  if (detail::autocast_changes_f32({&input, &target}))
    return mse_loss(detail::autocast_f32(input), detail::autocast_f32(target), reduction);
  check_same_device("mse_loss", {&input, &target});
  if (input.shape() != target.shape())
    throw ShapeError("gltensor::mse_loss: input " + to_string(input.shape()) + " and target " +
                     to_string(target.shape()) + " must have the same shape");
  const Tensor e = square(sub(input, target));
  if (reduction == Reduction::none) return e;
  return reduction == Reduction::sum ? sum(e) : mean(e);
}

}  // namespace gltensor
