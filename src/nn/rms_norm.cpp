// rms_norm and add_rms_norm: fused kernels (glsl/nn/rms_norm.comp) and their autograd nodes.
//
// Forward: one workgroup per row reduces sum(v^2) in f32 and writes the normalized row in the
// same dispatch (v = x, or x + residual also stored). Rows longer than one invocation may loop
// over on the device (Device::loop_limit) are planned in chunks: one dispatch of per-chunk partial
// sums, then the apply dispatch, whose workgroups each add up their row's partials and normalize
// their chunk. Backward: dv in the same two shapes (the row's dot sum(gy * w * v), then dv),
// dweight as per-block partial sums over rows (one invocation per column) added up by a
// reduction when there are several blocks: no float atomics.
#include <algorithm>
#include <bit>

#include "gltensor/autograd.hpp"
#include "gltensor/nn_functional.hpp"
#include "gltensor/ops.hpp"
#include "gltensor/reduce.hpp"
#include "gltensor/transformer.hpp"
#include "nn/norm_variants.hpp"
#include "ops/autocast.hpp"
#include "runtime/int_math.hpp"
#include "runtime/launch.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {
using namespace detail;

namespace {

// How rows of L elements are cut into chunks (one workgroup each) within the loop limit.
struct RmsPlan {
  std::uint32_t local;
  std::uint64_t iters, P;  // elements per invocation in a chunk, chunks per row
};

std::uint64_t tree_loops(std::uint32_t local) { return std::bit_width(local); }  // log2(local) + its exit test

// The apply variants' loops (each loop counting its exit test): the row's sum (over the row's
// chunk 0 when P = 1, else over its partials), the tree, the chunk.
std::uint64_t apply_loops(const RmsPlan& p) {
  const std::uint64_t sum = p.P == 1 ? p.iters : ceil_div(p.P, p.local);
  return sum + 1 + tree_loops(p.local) + p.iters + 1;
}
std::uint64_t partial_loops(const RmsPlan& p) { return p.iters + 1 + tree_loops(p.local); }

RmsPlan plan_rms(std::int64_t L, std::uint64_t limit) {
  const std::uint32_t local = L >= 1024 ? 256 : 64;
  RmsPlan p{local, std::max<std::uint64_t>(ceil_div(static_cast<std::uint64_t>(L), local), 1), 1};
  if (limit == 0 || apply_loops(p) <= limit) return p;
  // Chunks of `iters` per invocation: both dispatches' loops within the limit while the partials
  // fit one pass of the apply's sum (a limit below the tree's own loops leaves iters = 1, and the
  // launch's check throws LimitError).
  const std::uint64_t fixed = tree_loops(local) + 3;
  p.iters = limit > fixed + 2 ? (limit - fixed) / 2 : 1;
  p.P = ceil_div(static_cast<std::uint64_t>(L), local * p.iters);
  while (p.iters > 1 && apply_loops(p) > limit) {
    --p.iters;
    p.P = ceil_div(static_cast<std::uint64_t>(L), local * p.iters);
  }
  return p;
}

// Uniforms of rms_norm.comp's row variants.
struct RmsParams {
  std::int64_t rows, L;
  RmsPlan plan;
  bool apply, fwd;
  double eps;
  void set(Uniforms& u) const {
    u.u32("u_rows", rows);
    u.u32("u_L", L);
    u.u32("u_iters", static_cast<std::int64_t>(plan.iters));
    u.u32("u_chunk", static_cast<std::int64_t>(plan.local * plan.iters));
    u.u32("u_P", static_cast<std::int64_t>(plan.P));
    if (apply) u.f32("u_inv_L", 1.0 / static_cast<double>(L));
    if (apply && fwd) u.f32("u_eps", eps);
  }
};
// Uniforms of RMS_DW.
struct DwParams {
  std::int64_t rows, L, R;
  void set(Uniforms& u) const {
    u.u32("u_rows", rows);
    u.u32("u_L", L);
    u.u32("u_R", R);
  }
};

// The kernels index from element 0 of contiguous operands: views are copied first (without
// recording a node: gradients are recorded against the caller's tensors).
Tensor dense(const Tensor& t) {
  if (!t.defined() || (t.is_contiguous() && t.offset() == 0)) return t;
  NoGradGuard ng;
  return detach(t).clone();
}

DType float_of(DType d) { return is_floating(d) ? d : DType::f32; }

// The forward of both ops. x, res (or undefined), w (or undefined): dense. Returns y; `v_out`
// receives x + res (HAS_RES), `rstd` (if defined, [rows] f32) the rows' 1 / rms.
Tensor rms_forward(DeviceImpl& dev, const char* op, const Tensor& x, const Tensor& res, const Tensor& w, std::int64_t L,
                   double eps, DType yd, const Tensor& v_out, const Tensor& rstd) {
  Tensor y = alloc(dev, x.shape(), yd, op);
  const std::int64_t rows = L ? x.numel() / L : 0;
  if (rows == 0 || L == 0) return y;
  const RmsPlan plan = plan_rms(L, dev.loop_limit());
  const bool has_res = res.defined();
  Tensor partials;
  if (plan.P > 1) {
    partials = alloc(dev, {rows, static_cast<std::int64_t>(plan.P)}, DType::f32, op);
    Launch launch(dev, op);
    RmsNormVariant v;
    v.stage = "RMS_FWD_PARTIAL", v.has_res = has_res, v.in = x.dtype();
    if (has_res) v.res = res.dtype();
    // x stands in for the weight's binding (never read)
    launch.program(v.kFile, v.defines(), {plan.local}).write(partials).read(x).read(x).read(has_res ? res : x);
    launch.params(RmsParams{rows, L, plan, false, true, eps}).loop_iterations(partial_loops(plan));
    launch.groups(plan.P, static_cast<std::uint64_t>(rows));
  }
  Launch launch(dev, op);
  RmsNormVariant v;
  v.stage = "RMS_FWD", v.has_w = w.defined(), v.has_res = has_res, v.has_rstd = rstd.defined();
  v.partials = plan.P > 1, v.out = yd, v.in = x.dtype();
  if (w.defined()) v.w = w.dtype();
  if (has_res) v.res = res.dtype(), v.v_out = v_out.dtype();
  // x stands in for absent operands (never read or written)
  launch.program(v.kFile, v.defines(), {plan.local}).write(y).read(x).read(w.defined() ? w : x);
  launch.read(has_res ? res : x);
  has_res ? launch.write(v_out) : launch.read(x);
  rstd.defined() ? launch.write(rstd) : launch.read(x);
  if (plan.P > 1) launch.read(partials);
  launch.params(RmsParams{rows, L, plan, true, true, eps}).loop_iterations(apply_loops(plan));
  launch.groups(plan.P, static_cast<std::uint64_t>(rows));
  return y;
}

// What the backward needs (all dense, detached).
struct RmsSaved {
  Tensor v, w, rstd;  // v: the normalized input (x, or x + residual); w may be undefined
  std::int64_t rows, L;
  Shape wshape;
  bool need_v, need_w;
  DType w_dtype;
};

// dv [rows, L] in v's dtype.
Tensor rms_dv(DeviceImpl& dev, const Tensor& gy, const RmsSaved& s) {
  const char* op = "rms_norm_backward";
  Tensor dv = alloc(dev, s.v.shape(), s.v.dtype(), op);
  const RmsPlan plan = plan_rms(s.L, dev.loop_limit());
  const Tensor& w = s.w;
  Tensor partials;
  if (plan.P > 1) {
    partials = alloc(dev, {s.rows, static_cast<std::int64_t>(plan.P)}, DType::f32, op);
    Launch launch(dev, op);
    RmsNormVariant v;
    v.stage = "RMS_BWD_PARTIAL", v.has_w = w.defined(), v.in = gy.dtype(), v.v = s.v.dtype();
    if (w.defined()) v.w = w.dtype();
    launch.program(v.kFile, v.defines(), {plan.local}).write(partials).read(gy).read(s.v).read(w.defined() ? w : gy);
    launch.params(RmsParams{s.rows, s.L, plan, false, false, 0.0}).loop_iterations(partial_loops(plan));
    launch.groups(plan.P, static_cast<std::uint64_t>(s.rows));
  }
  Launch launch(dev, op);
  RmsNormVariant v;
  v.stage = "RMS_BWD", v.has_w = w.defined(), v.partials = plan.P > 1;
  v.out = dv.dtype(), v.in = gy.dtype(), v.v = s.v.dtype();
  if (w.defined()) v.w = w.dtype();
  // gy stands in for an absent weight (never read)
  launch.program(v.kFile, v.defines(), {plan.local}).write(dv).read(gy).read(s.v).read(w.defined() ? w : gy);
  launch.read(s.rstd);
  if (plan.P > 1) launch.read(partials);
  launch.params(RmsParams{s.rows, s.L, plan, true, false, 0.0}).loop_iterations(apply_loops(plan));
  launch.groups(plan.P, static_cast<std::uint64_t>(s.rows));
  return dv;
}

// Rows per dweight block: enough blocks to fill a GPU for few columns, at most 256 rows (and
// within the loop limit) per invocation.
std::int64_t dw_rows_per_block(std::int64_t rows, std::uint64_t limit) {
  std::int64_t R = std::min<std::int64_t>(rows, 256);
  if (limit != 0) R = std::min<std::int64_t>(R, static_cast<std::int64_t>(limit > 1 ? limit - 1 : 1));
  return std::max<std::int64_t>(R, 1);
}

// dweight in the weight's shape and dtype: sum over rows of gy * v * rstd.
Tensor rms_dw(DeviceImpl& dev, const Tensor& gy, const RmsSaved& s) {
  const char* op = "rms_norm_backward";
  const std::int64_t R = dw_rows_per_block(s.rows, dev.loop_limit());
  const std::int64_t blocks = (s.rows + R - 1) / R;
  Tensor part = alloc(dev, {blocks, s.L}, DType::f32, op);
  Launch launch(dev, op);
  RmsNormVariant v;
  v.stage = "RMS_DW", v.in = gy.dtype(), v.v = s.v.dtype();
  launch.program(v.kFile, v.defines(), {64}).write(part).read(gy).read(s.v).read(s.rstd);
  launch.params(DwParams{s.rows, s.L, R}).loop_iterations(static_cast<std::uint64_t>(R) + 1);
  launch.groups(ceil_div(static_cast<std::uint64_t>(s.L), 64), static_cast<std::uint64_t>(blocks));
  Tensor dw = blocks == 1 ? part.reshape({s.L}) : sum(part, {0});
  return dw.reshape(s.wshape).to(s.w_dtype);
}

// {dv, dweight} (undefined where not needed).
std::vector<Tensor> rms_backward(const Tensor& gy_in, const RmsSaved& s) {
  DeviceImpl& dev = dev_of(gy_in);
  Enter guard(dev, "rms_norm_backward");
  std::vector<Tensor> out(2);
  if (s.rows == 0 || s.L == 0) {
    if (s.need_v) out[0] = zeros(gy_in.device(), s.v.shape(), s.v.dtype());
    if (s.need_w) out[1] = zeros(gy_in.device(), s.wshape, s.w_dtype);
    return out;
  }
  const Tensor gy = dense(gy_in);
  if (s.need_v) out[0] = rms_dv(dev, gy, s);
  if (s.need_w) out[1] = rms_dw(dev, gy, s);
  return out;
}

void check_eps(const char* op, double eps) {
  if (!(eps > 0))
    throw ValueError(std::string("gltensor::") + op + ": eps must be positive, got " + std::to_string(eps));
}

// Records y's node over (v_node, weight): v_node is x (rms_norm) or the recorded sum
// (add_rms_norm); v is its dense value.
void record_rms(Tensor& y, const Tensor& v_node, const Tensor& v, const Tensor& weight, const Tensor& w,
                const Tensor& rstd, std::int64_t L, const char* op) {
  RmsSaved s{.v = detach(v),
             .w = w.defined() ? detach(w) : Tensor(),
             .rstd = rstd,
             .rows = L ? v.numel() / L : 0,
             .L = L,
             .wshape = weight.defined() ? weight.shape() : Shape{},
             .need_v = requires_grad(v_node),
             .need_w = weight.defined() && requires_grad(weight),
             .w_dtype = weight.defined() ? weight.dtype() : DType::f32};
  autograd::record(
      y, {v_node, weight}, [s](const Tensor& gy) { return rms_backward(gy, s); }, op);
}

}  // namespace

Tensor rms_norm(const Tensor& x_in, std::int64_t nd, const Tensor& weight, double eps) {
  if (detail::autocast_changes_f32({&x_in, &weight}))
    return rms_norm(detail::autocast_f32(x_in), nd, detail::autocast_f32(weight), eps);
  const char* op = "rms_norm";
  check_defined(op, x_in);
  check_eps(op, eps);
  if (nd < 1 || nd > x_in.dim())
    throw ValueError("gltensor::rms_norm: normalized_dims " + std::to_string(nd) + " out of range for input " +
                     to_string(x_in.shape()) + " (expected 1 to its rank)");
  const Shape ns(x_in.shape().end() - nd, x_in.shape().end());
  if (weight.defined() && weight.shape() != ns)
    throw ShapeError("gltensor::rms_norm: weight has shape " + to_string(weight.shape()) + ", expected " +
                     to_string(ns) + " (the last " + std::to_string(nd) + " dims of input " + to_string(x_in.shape()) +
                     ")");
  if (weight.defined() && !is_floating(weight.dtype()))
    throw DTypeError(std::string("gltensor::rms_norm: weight must be a float tensor, got ") +
                     dtype_name(weight.dtype()));
  if (weight.defined()) check_same_device(op, {&x_in, &weight});
  DeviceImpl& dev = dev_of(x_in);
  Enter guard(dev, op);
  const std::int64_t L = numel_of(ns);
  const Tensor x = dense(x_in), w = dense(weight);
  const DType yd = w.defined() ? promote_types(float_of(x.dtype()), w.dtype()) : float_of(x.dtype());
  const bool grads = autograd::any_requires_grad({&x_in, &weight});
  const std::int64_t rows = L ? x.numel() / L : 0;
  const Tensor rstd = grads && rows > 0 ? alloc(dev, {rows}, DType::f32, op) : Tensor();
  Tensor y = rms_forward(dev, op, x, Tensor(), w, L, eps, yd, Tensor(), rstd);
  if (grads) record_rms(y, x_in, x, weight, w, rstd, L, op);
  return y;
}

AddRmsNorm add_rms_norm(const Tensor& x_in, const Tensor& res_in, const Tensor& weight, double eps) {
  const char* op = "add_rms_norm";
  check_defined(op, x_in);
  check_defined(op, res_in, "residual");
  check_eps(op, eps);
  if (x_in.shape() != res_in.shape())
    throw ShapeError("gltensor::add_rms_norm: x " + to_string(x_in.shape()) + " and residual " +
                     to_string(res_in.shape()) + " must have the same shape");
  if (x_in.dim() < 1)
    throw ShapeError("gltensor::add_rms_norm: expects inputs of rank >= 1, got " + to_string(x_in.shape()));
  const std::int64_t nd = weight.defined() ? std::max<std::int64_t>(weight.dim(), 1) : 1;
  if (weight.defined() &&
      (weight.dim() < 1 || weight.dim() > x_in.dim() ||
       !std::equal(weight.shape().begin(), weight.shape().end(), x_in.shape().end() - weight.dim())))
    throw ShapeError("gltensor::add_rms_norm: weight has shape " + to_string(weight.shape()) +
                     ", which is not a trailing part of x " + to_string(x_in.shape()) +
                     " (the normalized dims are the weight's)");
  if (weight.defined() && !is_floating(weight.dtype()))
    throw DTypeError(std::string("gltensor::add_rms_norm: weight must be a float tensor, got ") +
                     dtype_name(weight.dtype()));
  check_same_device(op, {&x_in, &res_in});
  if (weight.defined()) check_same_device(op, {&x_in, &weight});
  DeviceImpl& dev = dev_of(x_in);
  Enter guard(dev, op);
  const Shape ns(x_in.shape().end() - nd, x_in.shape().end());
  const std::int64_t L = numel_of(ns);
  const Tensor x = dense(x_in), res = dense(res_in), w = dense(weight);
  const DType sd = float_of(promote_types(x.dtype(), res.dtype()));
  const DType yd = w.defined() ? promote_types(sd, w.dtype()) : sd;
  const bool grads = autograd::any_requires_grad({&x_in, &res_in, &weight});
  const std::int64_t rows = L ? x.numel() / L : 0;
  const Tensor rstd = grads && rows > 0 ? alloc(dev, {rows}, DType::f32, op) : Tensor();
  AddRmsNorm out;
  out.sum = alloc(dev, x.shape(), sd, op);
  out.normed = rms_forward(dev, op, x, res, w, L, eps, yd, out.sum, rstd);
  if (!grads) return out;
  const Tensor v = out.sum;
  if (autograd::any_requires_grad({&x_in, &res_in})) {
    const DType xd = x_in.dtype(), rd = res_in.dtype();
    autograd::record(
        out.sum, {x_in, res_in},
        [xd, rd](const Tensor& g) {
          // in each input's dtype (none for an integer input, which takes no gradient)
          return std::vector<Tensor>{is_floating(xd) ? g.to(xd) : Tensor(), is_floating(rd) ? g.to(rd) : Tensor()};
        },
        op);
  }
  record_rms(out.normed, out.sum, v, weight, w, rstd, L, op);
  return out;
}

}  // namespace gltensor
