// Gradients of the elementwise ops.
#include "autograd/grad_formulas.hpp"

#include <cmath>

#include "gltensor/ops.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor::detail {

using autograd::record;

void check_inplace(const char* op, const Tensor& t) {
  if (grad_enabled() && requires_grad(t))
    throw ValueError(std::string("gltensor::") + op +
                     ": in-place op on a tensor that requires grad (use it under NoGradGuard, or an out-of-place op)");
}

void grad_unsupported(const char* op, std::initializer_list<const Tensor*> inputs, Tensor& y) {
  if (!autograd::any_requires_grad(inputs)) return;
  std::vector<Tensor> ins;
  for (auto* t : inputs) ins.push_back(*t);
  std::string name = op;
  record(
      y, ins,
      [name](const Tensor&) -> std::vector<Tensor> {
        throw ValueError("gltensor::backward: no gradient is implemented for " + name);
      },
      op);
}

void grad_unary(const std::string& fn, const Tensor& x, Tensor& y, float p0, float p1) {
  if (!autograd::any_requires_grad({&x})) return;
  const Tensor xd = detach(x), yd = detach(y);
  autograd::BackwardFn f;
  auto F = [&](auto lambda) { f = [=](const Tensor& g) { return std::vector<Tensor>{lambda(g)}; }; };
  if (fn == "op_neg")
    F([](const Tensor& g) { return neg(g); });
  else if (fn == "op_identity" || fn == "op_to_float")
    F([xd](const Tensor& g) { return g.to(xd.dtype()); });
  else if (fn == "op_abs")
    F([xd](const Tensor& g) { return mul(g, sign(xd)); });
  else if (fn == "op_square")
    F([xd](const Tensor& g) { return mul(g, mul(xd, 2.0)); });
  else if (fn == "op_exp")
    F([yd](const Tensor& g) { return mul(g, yd); });
  else if (fn == "op_exp2")
    F([yd](const Tensor& g) { return mul(g, mul(yd, std::log(2.0))); });
  else if (fn == "op_expm1")
    F([yd](const Tensor& g) { return mul(g, add(yd, 1.0)); });
  else if (fn == "op_log")
    F([xd](const Tensor& g) { return div(g, xd); });
  else if (fn == "op_log2")
    F([xd](const Tensor& g) { return div(g, mul(xd, std::log(2.0))); });
  else if (fn == "op_log10")
    F([xd](const Tensor& g) { return div(g, mul(xd, std::log(10.0))); });
  else if (fn == "op_log1p")
    F([xd](const Tensor& g) { return div(g, add(xd, 1.0)); });
  else if (fn == "op_sqrt")
    F([yd](const Tensor& g) { return div(g, mul(yd, 2.0)); });
  else if (fn == "op_rsqrt")
    F([yd](const Tensor& g) { return mul(g, mul(pow(yd, 3.0), -0.5)); });
  else if (fn == "op_reciprocal")
    F([yd](const Tensor& g) { return mul(g, neg(square(yd))); });
  else if (fn == "op_sin")
    F([xd](const Tensor& g) { return mul(g, cos(xd)); });
  else if (fn == "op_cos")
    F([xd](const Tensor& g) { return mul(g, neg(sin(xd))); });
  else if (fn == "op_tanh")
    F([yd](const Tensor& g) { return mul(g, sub(1.0, square(yd))); });
  else if (fn == "op_sigmoid")
    F([yd](const Tensor& g) { return mul(g, mul(yd, sub(1.0, yd))); });
  else if (fn == "op_logsigmoid")
    F([xd](const Tensor& g) { return mul(g, sigmoid(neg(xd))); });
  else if (fn == "op_relu")
    F([xd](const Tensor& g) { return where(gt(xd, 0.0), g, 0.0); });
  else if (fn == "op_relu6")
    F([xd](const Tensor& g) { return where(logical_and(gt(xd, 0.0), lt(xd, 6.0)), g, 0.0); });
  else if (fn == "op_leaky_relu")
    F([xd, p0](const Tensor& g) { return where(gt(xd, 0.0), g, mul(g, double(p0))); });
  else if (fn == "op_elu")
    F([xd, yd, p0](const Tensor& g) { return where(gt(xd, 0.0), g, mul(g, add(yd, double(p0)))); });
  else if (fn == "op_silu")
    F([xd](const Tensor& g) {
      Tensor s = sigmoid(xd);
      return mul(g, mul(s, add(1.0, mul(xd, sub(1.0, s)))));
    });
  else if (fn == "op_gelu")
    F([xd](const Tensor& g) {  // Phi(x) + x phi(x)
      Tensor cdf = mul(add(erf(mul(xd, 0.7071067811865476)), 1.0), 0.5);
      Tensor pdf = mul(exp(mul(square(xd), -0.5)), 0.3989422804014327);
      return mul(g, add(cdf, mul(xd, pdf)));
    });
  else if (fn == "op_gelu_tanh")
    F([xd](const Tensor& g) {
      const double k = 0.7978845608028654;
      Tensor inner = mul(add(xd, mul(pow(xd, 3.0), 0.044715)), k);
      Tensor t = tanh(inner);
      Tensor dinner = mul(add(mul(square(xd), 3 * 0.044715), 1.0), k);
      Tensor d = add(mul(add(t, 1.0), 0.5), mul(mul(mul(xd, sub(1.0, square(t))), dinner), 0.5));
      return mul(g, d);
    });
  else if (fn == "op_softplus")
    F([xd, p0, p1](const Tensor& g) {
      Tensor bx = mul(xd, double(p0));
      return where(gt(bx, double(p1)), g, mul(g, sigmoid(bx)));
    });
  else if (fn == "op_erf")
    F([xd](const Tensor& g) { return mul(g, mul(exp(neg(square(xd))), 1.1283791670955126)); });
  else if (fn == "op_clamp")
    F([xd, p0, p1](const Tensor& g) { return where(logical_and(ge(xd, double(p0)), le(xd, double(p1))), g, 0.0); });
  else if (fn == "op_clamp_min")
    F([xd, p0](const Tensor& g) { return where(ge(xd, double(p0)), g, 0.0); });
  else if (fn == "op_clamp_max")
    F([xd, p0](const Tensor& g) { return where(le(xd, double(p0)), g, 0.0); });
  else if (fn == "op_hardtanh")
    F([xd, p0, p1](const Tensor& g) { return where(logical_and(gt(xd, double(p0)), lt(xd, double(p1))), g, 0.0); });
  else {
    grad_unsupported(fn.c_str() + 3, {&x}, y);
    return;
  }
  record(y, {x}, f, fn.c_str() + 3);
}

void grad_binary(const std::string& fn, const Tensor& a, const Tensor& b, double s, bool scalar_first, float alpha,
                 Tensor& y) {
  const bool has_b = b.defined();
  if (!autograd::any_requires_grad({&a, has_b ? &b : nullptr})) return;
  const Tensor ad = detach(a), bd = has_b ? detach(b) : Tensor(), yd = detach(y);
  autograd::BackwardFn f;
  if (!has_b) {  // tensor op scalar (or scalar op tensor when scalar_first)
    auto F = [&](auto lambda) { f = [=](const Tensor& g) { return std::vector<Tensor>{lambda(g)}; }; };
    if (fn == "op_add")
      F([](const Tensor& g) { return g; });
    else if (fn == "op_sub")
      F([scalar_first](const Tensor& g) { return scalar_first ? neg(g) : g; });
    else if (fn == "op_mul")
      F([s](const Tensor& g) { return mul(g, s); });
    else if (fn == "op_div")
      F([s, scalar_first, ad](const Tensor& g) {
        return scalar_first ? mul(g, mul(reciprocal(square(ad)), -s)) : div(g, s);
      });
    else if (fn == "op_pow")
      F([s, scalar_first, ad, yd](const Tensor& g) {
        return scalar_first ? mul(g, mul(yd, std::log(s))) : mul(g, mul(pow(ad, s - 1.0), s));
      });
    else if (fn == "op_maximum" || fn == "op_minimum")
      F([s, ad, fn](const Tensor& g) { return where(fn == "op_maximum" ? gt(ad, s) : lt(ad, s), g, 0.0); });
    else {
      grad_unsupported(fn.c_str() + 3, {&a}, y);
      return;
    }
    autograd::record(y, {a}, f, fn.c_str() + 3);
    return;
  }
  auto F2 = [&](auto lambda) { f = lambda; };
  if (fn == "op_add")
    F2([alpha](const Tensor& g) { return std::vector<Tensor>{g, alpha == 1 ? g : mul(g, double(alpha))}; });
  else if (fn == "op_sub")
    F2([](const Tensor& g) { return std::vector<Tensor>{g, neg(g)}; });
  else if (fn == "op_mul")
    F2([ad, bd](const Tensor& g) { return std::vector<Tensor>{mul(g, bd), mul(g, ad)}; });
  else if (fn == "op_div")
    F2([ad, bd, yd](const Tensor& g) { return std::vector<Tensor>{div(g, bd), neg(div(mul(g, yd), bd))}; });
  else if (fn == "op_pow")
    F2([ad, bd, yd](const Tensor& g) {
      return std::vector<Tensor>{mul(g, mul(bd, pow(ad, sub(bd, 1.0)))), mul(g, mul(yd, log(ad)))};
    });
  else if (fn == "op_maximum" || fn == "op_minimum")
    F2([ad, bd, fn](const Tensor& g) {
      Tensor pick_a = fn == "op_maximum" ? ge(ad, bd) : le(ad, bd);
      return std::vector<Tensor>{where(pick_a, g, 0.0), where(pick_a, 0.0, g)};
    });
  else {
    grad_unsupported(fn.c_str() + 3, {&a, &b}, y);
    return;
  }
  autograd::record(y, {a, b}, f, fn.c_str() + 3);
}

}  // namespace gltensor::detail
