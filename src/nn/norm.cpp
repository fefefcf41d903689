// layer_norm / group_norm, composed of reductions and elementwise ops (their gradients come from
// autograd); layer_norm without gradients runs fused (glsl/nn/norm.comp). batch_norm and rms_norm
// have their own kernels and autograd nodes (src/nn/batch_norm.cpp, src/nn/rms_norm.cpp).
#include "nn/norm.hpp"

#include "gltensor/autograd.hpp"
#include "gltensor/nn_functional.hpp"
#include "gltensor/ops.hpp"
#include "gltensor/reduce.hpp"
#include "nn/norm_variants.hpp"
#include "ops/autocast.hpp"
#include "runtime/launch.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {
using namespace detail;

namespace {
void check_eps(const char* op, double eps) {
  if (!(eps > 0))
    throw ValueError(std::string("gltensor::") + op + ": eps must be positive, got " + std::to_string(eps));
}
void check_param(const char* op, const Tensor& p, const Shape& want, const char* what) {
  if (p.defined() && p.shape() != want)
    throw ShapeError(std::string("gltensor::") + op + ": " + what + " has shape " + to_string(p.shape()) +
                     ", expected " + to_string(want));
}
}  // namespace

namespace {
// Uniforms of glsl/nn/norm.comp.
struct LayerNormParams {
  std::int64_t rows, L;
  double eps;
  void set(Uniforms& u) const {
    u.u32("u_rows", rows);
    u.u32("u_L", L);
    u.f32("u_eps", eps);
  }
};

// norm.comp's loops: two passes over the row in strides of the workgroup, and the tree.
std::uint64_t layer_norm_loops(std::int64_t L, std::uint32_t local) {
  return 2 * static_cast<std::uint64_t>((L + local - 1) / local) + 16;
}
std::uint32_t layer_norm_local(std::int64_t L) { return L >= 1024 ? 256 : 64; }
// ROW_REGS: rows of up to kLayerNormMaxNs elements per invocation in registers; its loops: three
// of NS trips (each with its exit test) and two trees (or the subgroups' sums).
constexpr std::int64_t kLayerNormMaxNs = 16;
std::uint64_t layer_norm_regs_loops(std::int64_t ns) { return 3 * static_cast<std::uint64_t>(ns + 1) + 32; }

// norm.comp: one dispatch, for inputs that need no gradient; y in a host-visible buffer where
// host_out (and one can be made).
Tensor layer_norm_fused(const Tensor& x_in, std::int64_t L, const Tensor& w_in, const Tensor& b_in, double eps,
                        bool host_out) {
  DeviceImpl& dev = dev_of(x_in);
  Launch launch(dev, "layer_norm");
  // The kernel indexes from element 0: views are copied first.
  auto dense = [](const Tensor& t) { return !t.defined() || (t.is_contiguous() && t.offset() == 0) ? t : t.clone(); };
  const Tensor x = dense(x_in), w = dense(w_in), b = dense(b_in);
  const DType od = is_floating(x.dtype()) ? x.dtype() : DType::f32;
  Tensor y = host_out ? alloc_host(dev, x.shape(), od, "layer_norm") : Tensor();
  if (!y.defined()) y = alloc(dev, x.shape(), od, "layer_norm");
  const std::int64_t rows = L ? x.numel() / L : 0;
  if (rows == 0 || L == 0) return y;
  NormVariant v;
  v.has_w = w.defined(), v.has_b = b.defined(), v.y = od, v.x = x.dtype();
  if (w.defined()) v.w = w.dtype();
  if (b.defined()) v.b = b.dtype();
  const std::uint32_t local = layer_norm_local(L);
  // The row in registers where it fits (one read of x), else the two passes' loops.
  const std::int64_t ns = (L + local - 1) / local;
  const std::uint64_t limit = dev.loop_limit(), regs_loops = layer_norm_regs_loops(ns);
  if (ns <= kLayerNormMaxNs && (limit == 0 || regs_loops <= limit)) v.ns = ns, v.subgroup = dev.subgroup_arithmetic();
  // x stands in for absent weight/bias bindings (never read)
  launch.program(v.kFile, v.defines(), {local}).write(y).read(x).read(w.defined() ? w : x).read(b.defined() ? b : x);
  launch.params(LayerNormParams{rows, L, eps}).loop_iterations(v.ns ? regs_loops : layer_norm_loops(L, local));
  launch.groups_1d(static_cast<std::uint64_t>(rows));
  return y;
}
}  // namespace

Tensor layer_norm(const Tensor& x, std::int64_t nd, const Tensor& weight, const Tensor& bias, double eps) {
  return detail::layer_norm_out(x, nd, weight, bias, eps, false);
}

Tensor detail::layer_norm_out(const Tensor& x, std::int64_t nd, const Tensor& weight, const Tensor& bias, double eps,
                              bool host_out) {
  if (detail::autocast_changes_f32({&x, &weight, &bias}))
    return layer_norm_out(detail::autocast_f32(x), nd, detail::autocast_f32(weight), detail::autocast_f32(bias), eps,
                          host_out);
  const char* op = "layer_norm";
  check_defined(op, x);
  check_eps(op, eps);
  if (nd < 1 || nd > x.dim())
    throw ValueError("gltensor::layer_norm: normalized_dims " + std::to_string(nd) + " out of range for " +
                     to_string(x.shape()));
  const Shape ns(x.shape().end() - nd, x.shape().end());
  check_param(op, weight, ns, "weight");
  check_param(op, bias, ns, "bias");
  const std::int64_t L = numel_of(ns);
  const std::uint64_t limit = dev_of(x).loop_limit();
  if (!autograd::any_requires_grad({&x, &weight, &bias}) &&
      (limit == 0 || layer_norm_loops(L, layer_norm_local(L)) <= limit))
    return layer_norm_fused(x, L, weight, bias, eps, host_out);
  Dims dims;
  for (std::int64_t d = x.dim() - nd; d < x.dim(); ++d) dims.push_back(d);
  Tensor y = mul(sub(x, mean(x, dims, true)), rsqrt(add(var(x, dims, 0.0, true), eps)));
  if (weight.defined()) y = mul(y, weight);
  if (bias.defined()) y = add(y, bias);
  return y;
}

Tensor group_norm(const Tensor& x, std::int64_t groups, const Tensor& weight, const Tensor& bias, double eps) {
  if (detail::autocast_changes_f32({&x, &weight, &bias}))
    return group_norm(detail::autocast_f32(x), groups, detail::autocast_f32(weight), detail::autocast_f32(bias), eps);
  const char* op = "group_norm";
  check_defined(op, x);
  check_eps(op, eps);
  if (x.dim() < 2 || groups <= 0 || x.size(1) % groups != 0)
    throw ShapeError("gltensor::group_norm: input " + to_string(x.shape()) + " channels must divide into " +
                     std::to_string(groups) + " groups");
  const std::int64_t C = x.size(1);
  check_param(op, weight, {C}, "weight");
  check_param(op, bias, {C}, "bias");
  Tensor g = x.reshape({x.size(0), groups, -1});
  Tensor y = mul(sub(g, mean(g, {2}, true)), rsqrt(add(var(g, {2}, 0.0, true), eps))).reshape(x.shape());
  Shape bshape(static_cast<std::size_t>(x.dim()), 1);
  bshape[1] = C;
  if (weight.defined()) y = mul(y, weight.reshape(bshape));
  if (bias.defined()) y = add(y, bias.reshape(bshape));
  return y;
}

}  // namespace gltensor
