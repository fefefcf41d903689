// Backward formulas of the elementwise ops (elementwise_grads.hpp). PyTorch's derivatives
// (tools/autograd/derivatives.yaml) where it defines them: zero for piecewise constant ops, ties
// of maximum/minimum split evenly, fmax/fmin to the operand that was chosen.
#include "ops/elementwise_grads.hpp"

#include <cmath>

#include "gltensor/reduce.hpp"
#include "ops/elementwise.hpp"
#include "runtime/guard.hpp"

namespace gltensor::detail {

namespace unary_grad {

namespace {
// relu's gradient, g where x > 0 and 0 elsewhere (NaN x: 0; PyTorch's threshold_backward), as one
// binary.comp dispatch (op_relu_backward) for float32 x and g of one shape; otherwise through
// where (a comparison, the 0 and the select: three dispatches).
Tensor relu_backward(const Tensor& g, const Tensor& x) {
  if (g.dtype() != DType::f32 || x.dtype() != DType::f32 || g.shape() != x.shape()) return where(gt(x, 0.0), g, 0.0);
  Enter guard(dev_of(g), "relu_backward");
  Tensor out = alloc(dev_of(g), g.shape(), DType::f32, "relu_backward");
  Elementwise e;
  e.op = "relu_backward", e.kernel = ElementwiseKernel::binary, e.fn = "op_relu_backward", e.in_ct = CT::f32;
  launch_elementwise(e, out, {x, g});
  return out;
}

constexpr double kLn2 = 0.6931471805599453, kLn10 = 2.302585092994046, kTwoOverSqrtPi = 1.1283791670955126;
Tensor zero(const Tensor& g) { return zeros_like(g); }
}  // namespace

#define GRAD(name) Tensor name(const Tensor& g, const Tensor& x, const Tensor& y, float p0, float p1)
#define UNUSED (void)x, (void)y, (void)p0, (void)p1

GRAD(neg) {
  UNUSED;
  return neg(g);
}
GRAD(abs) {
  UNUSED;
  return mul(g, sign(x));
}
GRAD(sign) {
  UNUSED;
  return zero(g);
}
GRAD(square) {
  UNUSED;
  return mul(g, mul(x, 2.0));
}
GRAD(exp) {
  UNUSED;
  return mul(g, y);
}
GRAD(exp2) {
  UNUSED;
  return mul(g, mul(y, kLn2));
}
GRAD(log) {
  UNUSED;
  return div(g, x);
}
GRAD(log2) {
  UNUSED;
  return div(g, mul(x, kLn2));
}
GRAD(log10) {
  UNUSED;
  return div(g, mul(x, kLn10));
}
GRAD(log1p) {
  UNUSED;
  return div(g, add(x, 1.0));
}
GRAD(expm1) {
  UNUSED;
  return mul(g, add(y, 1.0));
}
GRAD(sqrt) {
  UNUSED;
  return div(g, mul(y, 2.0));
}
GRAD(rsqrt) {
  UNUSED;
  return mul(g, mul(pow(y, 3.0), -0.5));
}
GRAD(reciprocal) {
  UNUSED;
  return mul(g, neg(square(y)));
}
GRAD(sin) {
  UNUSED;
  return mul(g, cos(x));
}
GRAD(cos) {
  UNUSED;
  return mul(g, neg(sin(x)));
}
GRAD(tan) {
  UNUSED;
  return mul(g, add(square(y), 1.0));
}
GRAD(asin) {
  UNUSED;
  return mul(g, rsqrt(sub(1.0, square(x))));
}
GRAD(acos) {
  UNUSED;
  return mul(g, neg(rsqrt(sub(1.0, square(x)))));
}
GRAD(asinh) {
  UNUSED;
  return mul(g, rsqrt(add(square(x), 1.0)));
}
GRAD(acosh) {
  UNUSED;
  return mul(g, rsqrt(sub(square(x), 1.0)));
}
GRAD(atanh) {
  UNUSED;
  return div(g, sub(1.0, square(x)));
}
GRAD(atan) {
  UNUSED;
  return div(g, add(square(x), 1.0));
}
GRAD(sinh) {
  UNUSED;
  return mul(g, cosh(x));
}
GRAD(cosh) {
  UNUSED;
  return mul(g, sinh(x));
}
GRAD(tanh) {
  UNUSED;
  return mul(g, sub(1.0, square(y)));
}
GRAD(erf) {
  UNUSED;
  return mul(g, mul(exp(neg(square(x))), kTwoOverSqrtPi));
}
GRAD(erfc) {
  UNUSED;
  return mul(g, mul(exp(neg(square(x))), -kTwoOverSqrtPi));
}
GRAD(sigmoid) {
  UNUSED;
  return mul(g, mul(y, sub(1.0, y)));
}
GRAD(logsigmoid) {
  UNUSED;
  return mul(g, sigmoid(neg(x)));
}
GRAD(relu) {
  UNUSED;
  return relu_backward(g, x);
}
GRAD(relu6) {
  UNUSED;
  return where(logical_and(gt(x, 0.0), lt(x, 6.0)), g, 0.0);
}
GRAD(selu) {  // scale alpha e^x = y + scale alpha for x <= 0
  UNUSED;
  const double scale = 1.0507009873554805, alpha = 1.6732632423543772;
  return where(gt(x, 0.0), mul(g, scale), mul(g, add(y, scale * alpha)));
}
GRAD(silu) {
  UNUSED;
  Tensor s = sigmoid(x);
  return mul(g, mul(s, add(mul(x, sub(1.0, s)), 1.0)));
}
GRAD(mish) {  // tanh(sp) + x sech^2(sp) sigmoid(x), sp = softplus(x)
  UNUSED;
  Tensor t = tanh(softplus(x));
  return mul(g, add(t, mul(mul(x, sub(1.0, square(t))), sigmoid(x))));
}
GRAD(hardswish) {  // 0 below -3, x / 3 + 1/2 up to 3, 1 above (PyTorch's boundaries)
  UNUSED;
  return where(lt(x, -3.0), 0.0, where(le(x, 3.0), mul(g, add(div(x, 3.0), 0.5)), g));
}
GRAD(hardsigmoid) {
  UNUSED;
  return where(logical_and(gt(x, -3.0), lt(x, 3.0)), div(g, 6.0), 0.0);
}
GRAD(softsign) {
  UNUSED;
  return div(g, square(add(abs(x), 1.0)));
}
GRAD(floor) {
  UNUSED;
  return zero(g);
}
GRAD(ceil) {
  UNUSED;
  return zero(g);
}
GRAD(round) {
  UNUSED;
  return zero(g);
}
GRAD(trunc) {
  UNUSED;
  return zero(g);
}
GRAD(frac) {
  UNUSED;
  return g;
}

// ---- parametric ----
GRAD(gelu) {  // Phi(x) + x phi(x)
  UNUSED;
  Tensor cdf = mul(add(erf(mul(x, 0.7071067811865476)), 1.0), 0.5);
  Tensor pdf = mul(exp(mul(square(x), -0.5)), 0.3989422804014327);
  return mul(g, add(cdf, mul(x, pdf)));
}
GRAD(gelu_tanh) {
  UNUSED;
  const double k = 0.7978845608028654;
  Tensor t = tanh(mul(add(x, mul(pow(x, 3.0), 0.044715)), k));
  Tensor dinner = mul(add(mul(square(x), 3 * 0.044715), 1.0), k);
  return mul(g, add(mul(add(t, 1.0), 0.5), mul(mul(mul(x, sub(1.0, square(t))), dinner), 0.5)));
}
GRAD(leaky_relu) {  // p0: negative slope
  UNUSED;
  return where(gt(x, 0.0), g, mul(g, double(p0)));
}
GRAD(elu) {  // p0: alpha; alpha e^x = y + alpha for x <= 0
  UNUSED;
  return where(gt(x, 0.0), g, mul(g, add(y, double(p0))));
}
GRAD(celu) {  // p0: alpha; e^(x / alpha) = y / alpha + 1 for x <= 0
  UNUSED;
  return where(gt(x, 0.0), g, mul(g, add(div(y, double(p0)), 1.0)));
}
GRAD(softplus) {  // p0: beta, p1: threshold (linear above it)
  UNUSED;
  Tensor bx = mul(x, double(p0));
  return where(gt(bx, double(p1)), g, mul(g, sigmoid(bx)));
}
GRAD(hardtanh) {
  UNUSED;
  return where(logical_and(gt(x, double(p0)), lt(x, double(p1))), g, 0.0);
}
GRAD(clamp) {
  UNUSED;
  return where(logical_and(ge(x, double(p0)), le(x, double(p1))), g, 0.0);
}
GRAD(clamp_min) {
  UNUSED;
  return where(ge(x, double(p0)), g, 0.0);
}
GRAD(clamp_max) {
  UNUSED;
  return where(le(x, double(p0)), g, 0.0);
}
GRAD(shrink) {  // p0: lambd
  UNUSED;
  return where(logical_or(lt(x, -double(p0)), gt(x, double(p0))), g, 0.0);
}
#undef GRAD
#undef UNUSED

}  // namespace unary_grad

namespace binary_grad {

#define GRAD(name)                                                                                          \
  std::vector<Tensor> name(const Tensor& g, const Tensor& a, const Tensor& b, const Tensor& y, float alpha, \
                           bool need_a, bool need_b)
#define UNUSED (void)a, (void)b, (void)y, (void)alpha, (void)need_a, (void)need_b
#define IF(need, expr) ((need) ? (expr) : Tensor())

GRAD(add) {
  UNUSED;
  return {IF(need_a, g), IF(need_b, alpha == 1 ? g : mul(g, double(alpha)))};
}
GRAD(sub) {
  UNUSED;
  return {IF(need_a, g), IF(need_b, neg(g))};
}
GRAD(mul) {
  UNUSED;
  return {IF(need_a, mul(g, b)), IF(need_b, mul(g, a))};
}
GRAD(div) {
  UNUSED;
  return {IF(need_a, div(g, b)), IF(need_b, neg(div(mul(g, y), b)))};
}
GRAD(pow) {  // d/db: y log(a), zero where a == 0 and b >= 0
  UNUSED;
  return {IF(need_a, mul(g, mul(b, pow(a, sub(b, 1.0))))),
          IF(need_b, where(logical_and(eq(a, 0.0), ge(b, 0.0)), 0.0, mul(g, mul(y, log(a)))))};
}
GRAD(maximum) {  // ties split evenly
  UNUSED;
  Tensor half = where(eq(a, b), mul(g, 0.5), g);
  return {IF(need_a, where(lt(a, b), 0.0, half)), IF(need_b, where(lt(b, a), 0.0, half))};
}
GRAD(minimum) {
  UNUSED;
  Tensor half = where(eq(a, b), mul(g, 0.5), g);
  return {IF(need_a, where(gt(a, b), 0.0, half)), IF(need_b, where(gt(b, a), 0.0, half))};
}
GRAD(fmax) {  // to the operand fmax chose: a where a >= b or b is NaN
  UNUSED;
  Tensor pick_a = logical_or(ge(a, b), isnan(b));
  return {IF(need_a, where(pick_a, g, 0.0)), IF(need_b, where(pick_a, 0.0, g))};
}
GRAD(fmin) {
  UNUSED;
  Tensor pick_a = logical_or(le(a, b), isnan(b));
  return {IF(need_a, where(pick_a, g, 0.0)), IF(need_b, where(pick_a, 0.0, g))};
}
GRAD(fmod) {  // a - trunc(a / b) b
  UNUSED;
  return {IF(need_a, g), IF(need_b, neg(mul(g, trunc(div(a, b)))))};
}
GRAD(remainder) {  // a - floor(a / b) b
  UNUSED;
  return {IF(need_a, g), IF(need_b, neg(mul(g, floor(div(a, b)))))};
}
GRAD(atan2) {
  UNUSED;
  Tensor r = add(square(a), square(b));
  return {IF(need_a, mul(g, div(b, r))), IF(need_b, mul(g, neg(div(a, r))))};
}
#undef GRAD
#undef UNUSED
#undef IF

}  // namespace binary_grad

}  // namespace gltensor::detail
