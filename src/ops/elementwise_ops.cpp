// Unary, binary and ternary elementwise ops: dtype rules, forms (new / in-place / out=).
#include <cmath>

#include "autograd/recording.hpp"
#include "gltensor/ops.hpp"
#include "ops/elementwise.hpp"
#include "ops/elementwise_grads.hpp"
#include "runtime/error_flags.hpp"

namespace gltensor {
using namespace detail;

bool can_cast(DType from, DType to) {
  if (is_floating(from) && !is_floating(to)) return false;
  if (from != DType::bool_ && to == DType::bool_) return false;
  return true;
}

DType result_type(DType tensor, double scalar) {
  if (is_floating(tensor)) return tensor;
  if (std::isfinite(scalar) && std::floor(scalar) == scalar) return tensor == DType::bool_ ? DType::i32 : tensor;
  return DType::f32;
}

namespace {

// Result dtype rules of the unary ops (the `rule` column of GLTENSOR_UNARY_OPS, plus bool).
enum class Kind { floating, keep, boolean };

Tensor prepare_out(const char* op, Tensor* out, const Shape& shape, DType dtype, const Tensor& like) {
  if (!out) return alloc(dev_of(like), shape, dtype, op);
  check_same_device(op, {out, &like});
  if (out->shape() != shape)
    throw ShapeError(std::string("gltensor::") + op + ": out has shape " + to_string(out->shape()) +
                     ", the result has shape " + to_string(shape));
  if (!can_cast(dtype, out->dtype()))
    throw DTypeError(std::string("gltensor::") + op + ": result type " + dtype_name(dtype) +
                     " can't be cast to the output dtype " + dtype_name(out->dtype()));
  return *out;
}

// Records y = op(x)'s node: the formula, or one that throws (no_grad rows). Bool results none.
void record_unary(const char* op, UnaryGrad grad, const Tensor& x, Tensor& y, float p0, float p1) {
  if (!autograd::any_requires_grad({&x})) return;
  if (!grad) {
    grad_unsupported(op, {&x}, y);
    return;
  }
  const Tensor xd = detach(x), yd = detach(y);
  autograd::record(
      y, {x}, [=](const Tensor& g) { return std::vector<Tensor>{grad(g, xd, yd, p0, p1)}; }, op);
}

Tensor unary(const char* op, const char* fn, Kind kind, const Tensor& x, Tensor* out, UnaryGrad grad, float p0 = 0,
             float p1 = 0, const char* f16_fn = "") {
  check_defined(op, x);
  Enter guard(dev_of(x), op);
  DType rd = x.dtype();
  CT ct = natural_ct(x.dtype());
  if (kind == Kind::floating) {
    rd = is_floating(x.dtype()) ? x.dtype() : DType::f32;
    ct = CT::f32;
  } else if (kind == Kind::boolean) {
    rd = DType::bool_;
  }
  if (out) check_inplace(op, *out);
  Tensor o = prepare_out(op, out, x.shape(), rd, x);
  Elementwise e;
  e.op = op;
  e.kernel = ElementwiseKernel::unary;
  e.fn = fn;
  e.f16_fn = f16_fn;
  e.in_ct = ct;
  e.p0 = p0;
  e.p1 = p1;
  launch_elementwise(e, o, {x});
  if (!out && kind != Kind::boolean) record_unary(op, grad, x, o, p0, p1);
  return o;
}

// Result dtype rules of the binary ops (the `rule` column of GLTENSOR_BINARY_OPS).
enum class BKind { arith, float_arith, compare, logical, bitwise };

// The `kernel form` column of GLTENSOR_BINARY_OPS.
struct BinaryForm {
  bool f16 = false;           // binary.comp has op16_<name> (and op16_<name>_alpha for add)
  std::uint32_t fn_loop = 0;  // loop trips of OP per element
  bool int_division = false;  // integer zero divisors flagged (kZeroDivision)
  bool int_power = false;     // a negative integer scalar exponent is rejected
};
// fmod_finite's long division (8 quotient bits a step over the f32 exponent range) and integer
// pow's square-and-multiply: 32 trips at most.
constexpr BinaryForm form_f32{}, form_f16{true, 0, false, false}, form_int_division{false, 32, true, false},
    form_int_power{false, 32, false, true};

struct BinarySpec {
  const char* name;  // the row's name: GLSL op_<name>, op16_<name>
  BKind kind;
  BinaryGrad grad;  // null: no gradient (non-float results)
  BinaryForm form;
};

// Records the node of y = op(a, b): the formula, or one that throws (no_grad rows). A scalar
// operand comes as a 0-dim constant (it gets no gradient).
void record_binary(const char* op, const BinarySpec& s, const Tensor& a, const Tensor& b, Tensor& y, float alpha) {
  if (!autograd::any_requires_grad({&a, &b})) return;
  if (!s.grad) {
    grad_unsupported(op, {&a, &b}, y);
    return;
  }
  const Tensor ad = detach(a), bd = detach(b), yd = detach(y);
  const bool need_a = autograd::any_requires_grad({&a}), need_b = autograd::any_requires_grad({&b});
  const BinaryGrad grad = s.grad;
  autograd::record(
      y, {a, b}, [=](const Tensor& g) { return grad(g, ad, bd, yd, alpha, need_a, need_b); }, op);
}

// Integer fmod / remainder divide: a zero divisor tensor is flagged on the GPU (ValueError at the
// next read), as torch raises.
bool integer_division(const BinarySpec& s, CT ct) { return ct == CT::i32 && s.form.int_division; }

// The GLSL function of a binary row and its f16 form ("" where it has none), with add's alpha.
std::string binary_fn(const BinarySpec& s, bool alpha) { return std::string("op_") + s.name + (alpha ? "_alpha" : ""); }
std::string binary_f16_fn(const BinarySpec& s, bool alpha) {
  return s.form.f16 ? std::string("op16_") + s.name + (alpha ? "_alpha" : "") : std::string();
}

// Checks of a scalar operand that torch rejects on integer tensors.
void check_integer_scalar(const char* op, const BinarySpec& s, CT ct, double v, bool scalar_first) {
  if (ct != CT::i32 || scalar_first) return;
  if (integer_division(s, ct) && v == 0)
    throw ValueError(std::string("gltensor::") + op + ": integer division by zero (the divisor is 0)");
  if (s.form.int_power && v < 0)
    throw ValueError(std::string("gltensor::") + op +
                     ": integers to negative integer powers are not allowed (exponent " +
                     std::to_string(static_cast<long long>(v)) + ")");
}

void check_bitwise(const char* op, DType d) {
  if (is_floating(d))
    throw DTypeError(std::string("gltensor::") + op + ": not implemented for dtype " + dtype_name(d) +
                     " (integer and bool only)");
}

// Result dtype and compute type of a binary op whose operands promote to `common`.
std::pair<DType, CT> binary_types(const char* op, BKind kind, DType common) {
  switch (kind) {
    case BKind::arith:
      return {common, natural_ct(common)};
    case BKind::float_arith:
      return {is_floating(common) ? common : DType::f32, CT::f32};
    case BKind::compare:
    case BKind::logical:
      return {DType::bool_, natural_ct(common)};
    case BKind::bitwise:
      check_bitwise(op, common);
      return {common, CT::i32};
  }
  return {common, natural_ct(common)};
}

Tensor binary(const char* op, const BinarySpec& s, const Tensor& a, const Tensor& b, Tensor* out, float alpha = 1) {
  check_same_device(op, {&a, &b});
  Enter guard(dev_of(a), op);
  const Shape shape = broadcast_shapes(op, a.shape(), b.shape());
  auto [rd, ct] = binary_types(op, s.kind, promote_types(a.dtype(), b.dtype()));
  if (out == &a && shape != a.shape())
    throw ShapeError(std::string("gltensor::") + op + "_: output with shape " + to_string(a.shape()) +
                     " doesn't match the broadcast shape " + to_string(shape));
  if (out) check_inplace(op, *out);
  Tensor o = prepare_out(op, out, shape, rd, a);
  Elementwise e;
  e.op = op;
  e.kernel = ElementwiseKernel::binary;
  e.fn = binary_fn(s, alpha != 1);
  e.f16_fn = binary_f16_fn(s, alpha != 1);
  e.in_ct = ct;
  e.alpha = alpha;
  e.fn_loop = s.form.fn_loop;
  if (integer_division(s, ct)) e.error_flag = ErrorFlags::kZeroDivision;
  launch_elementwise(e, o, {a, b});
  if (!out && is_floating(rd)) record_binary(op, s, a, b, o, alpha);
  return o;
}

Tensor binary_scalar(const char* op, const BinarySpec& s, const Tensor& t, double v, bool scalar_first, Tensor* out) {
  check_defined(op, t);
  Enter guard(dev_of(t), op);
  const DType common = result_type(t.dtype(), v);
  auto [rd, ct] = binary_types(op, s.kind, common);
  check_integer_scalar(op, s, ct, v, scalar_first);
  if (out) check_inplace(op, *out);
  Tensor o = prepare_out(op, out, t.shape(), rd, t);
  Elementwise e;
  e.op = op;
  e.kernel = ElementwiseKernel::binary;
  e.fn = binary_fn(s, false);
  e.f16_fn = binary_f16_fn(s, false);
  e.in_ct = ct;
  e.scalar = v;
  e.scalar_first = scalar_first;
  e.fn_loop = s.form.fn_loop;
  if (scalar_first && integer_division(s, ct)) e.error_flag = ErrorFlags::kZeroDivision;
  launch_elementwise(e, o, {t});
  if (!out && is_floating(rd) && autograd::any_requires_grad({&t})) {
    const Tensor c = full(t.device(), {}, v, rd);
    record_binary(op, s, scalar_first ? c : t, scalar_first ? t : c, o, 1);
  }
  return o;
}

// where's gradient flows to a and b; the other ternary ops have none.
enum class TernaryGrad { where, none };

Tensor ternary(const char* op, const char* fn, TernaryGrad grad, const Tensor& a, const Tensor& b, const Tensor& c,
               DType rd, CT ct, float p0 = 0) {
  check_same_device(op, {&a, &b, &c});
  Enter guard(dev_of(a), op);
  const Shape shape = broadcast_shapes(op, broadcast_shapes(op, a.shape(), b.shape()), c.shape());
  Tensor o = alloc(dev_of(a), shape, rd, op);
  Elementwise e;
  e.op = op;
  e.kernel = ElementwiseKernel::ternary;
  e.fn = fn;
  e.in_ct = ct;
  e.p0 = p0;
  launch_elementwise(e, o, {a, b, c});
  if (grad == TernaryGrad::where) {
    if (autograd::any_requires_grad({&b, &c})) {
      const Tensor cond = detach(a);
      autograd::record(
          o, {a, b, c},
          [cond](const Tensor& g) {
            return std::vector<Tensor>{Tensor(), where(cond, g, 0.0), where(cond, 0.0, g)};
          },
          "where");
    }
  } else if (is_floating(rd)) {
    grad_unsupported(op, {&a, &b, &c}, o);
  }
  return o;
}

Tensor scalar_like(const Tensor& t, double v, DType dtype) { return full(t.device(), {}, v, dtype); }

}  // namespace

// ---- unary ----
#define GLTENSOR_GRAD_PTR_grad(name) &unary_grad::name
#define GLTENSOR_GRAD_PTR_no_grad(name) nullptr
// The `kernel form` column of GLTENSOR_UNARY_OPS: the f16 form's GLSL function.
#define GLTENSOR_UNARY_F16_f32(name) ""
#define GLTENSOR_UNARY_F16_f16(name) "op16_" #name
#define GLTENSOR_DEFINE_UNARY(name, rule, grad, form)                                                      \
  Tensor name(const Tensor& x) {                                                                           \
    return unary(#name, "op_" #name, Kind::rule, x, nullptr, GLTENSOR_GRAD_PTR_##grad(name), 0, 0,         \
                 GLTENSOR_UNARY_F16_##form(name));                                                         \
  }                                                                                                        \
  Tensor& name##_(Tensor& x) {                                                                             \
    unary(#name "_", "op_" #name, Kind::rule, x, &x, nullptr, 0, 0, GLTENSOR_UNARY_F16_##form(name));      \
    return x;                                                                                              \
  }                                                                                                        \
  Tensor& name##_out(Tensor& out, const Tensor& x) {                                                       \
    unary(#name "_out", "op_" #name, Kind::rule, x, &out, nullptr, 0, 0, GLTENSOR_UNARY_F16_##form(name)); \
    return out;                                                                                            \
  }
GLTENSOR_UNARY_OPS(GLTENSOR_DEFINE_UNARY)
#undef GLTENSOR_DEFINE_UNARY
#undef GLTENSOR_UNARY_F16_f32
#undef GLTENSOR_UNARY_F16_f16

Tensor gelu(const Tensor& x, const std::string& approximate) {
  if (approximate != "none" && approximate != "tanh")
    throw ValueError("gltensor::gelu: approximate must be \"none\" or \"tanh\", got \"" + approximate + "\"");
  const bool t = approximate == "tanh";
  return unary("gelu", t ? "op_gelu_tanh" : "op_gelu", Kind::floating, x, nullptr,
               t ? &unary_grad::gelu_tanh : &unary_grad::gelu);
}
Tensor leaky_relu(const Tensor& x, double s) {
  return unary("leaky_relu", "op_leaky_relu", Kind::floating, x, nullptr, &unary_grad::leaky_relu, float(s));
}
Tensor elu(const Tensor& x, double a) {
  return unary("elu", "op_elu", Kind::floating, x, nullptr, &unary_grad::elu, float(a));
}
Tensor celu(const Tensor& x, double a) {
  if (a == 0) throw ValueError("gltensor::celu: alpha must not be 0");
  return unary("celu", "op_celu", Kind::floating, x, nullptr, &unary_grad::celu, float(a));
}
Tensor softplus(const Tensor& x, double beta, double threshold) {
  if (beta == 0) throw ValueError("gltensor::softplus: beta must not be 0");
  return unary("softplus", "op_softplus", Kind::floating, x, nullptr, &unary_grad::softplus, float(beta),
               float(threshold));
}
Tensor hardtanh(const Tensor& x, double lo, double hi) {
  if (lo > hi)
    throw ValueError("gltensor::hardtanh: min_val " + std::to_string(lo) + " > max_val " + std::to_string(hi));
  return unary("hardtanh", "op_hardtanh", Kind::floating, x, nullptr, &unary_grad::hardtanh, float(lo), float(hi));
}
Tensor clamp(const Tensor& x, double lo, double hi) {
  return unary("clamp", "op_clamp", Kind::keep, x, nullptr, &unary_grad::clamp, float(lo), float(hi));
}
Tensor clamp_min(const Tensor& x, double lo) {
  return unary("clamp_min", "op_clamp_min", Kind::keep, x, nullptr, &unary_grad::clamp_min, float(lo));
}
Tensor clamp_max(const Tensor& x, double hi) {
  return unary("clamp_max", "op_clamp_max", Kind::keep, x, nullptr, &unary_grad::clamp_max, float(hi));
}
Tensor shrink(const Tensor& x, double lambd, double bias) {
  return unary("shrink", "op_shrink", Kind::floating, x, nullptr, &unary_grad::shrink, float(lambd), float(bias));
}
Tensor isnan(const Tensor& x) { return unary("isnan", "op_isnan", Kind::boolean, x, nullptr, nullptr); }
Tensor isinf(const Tensor& x) { return unary("isinf", "op_isinf", Kind::boolean, x, nullptr, nullptr); }
Tensor isfinite(const Tensor& x) { return unary("isfinite", "op_isfinite", Kind::boolean, x, nullptr, nullptr); }
Tensor logical_not(const Tensor& x) {
  return unary("logical_not", "op_logical_not", Kind::boolean, x, nullptr, nullptr);
}

// ---- binary ----
#define GLTENSOR_BGRAD_PTR_grad(name) &binary_grad::name
#define GLTENSOR_BGRAD_PTR_no_grad(name) nullptr
#define GLTENSOR_DEFINE_BINARY(name, rule, grad, form)                                                    \
  static const BinarySpec k_##name{#name, BKind::rule, GLTENSOR_BGRAD_PTR_##grad(name), form_##form};     \
  Tensor name(const Tensor& a, const Tensor& b) { return binary(#name, k_##name, a, b, nullptr); }        \
  Tensor name(const Tensor& a, double b) { return binary_scalar(#name, k_##name, a, b, false, nullptr); } \
  Tensor name(double a, const Tensor& b) { return binary_scalar(#name, k_##name, b, a, true, nullptr); }  \
  Tensor& name##_(Tensor& a, const Tensor& b) {                                                           \
    binary(#name "_", k_##name, a, b, &a);                                                                \
    return a;                                                                                             \
  }                                                                                                       \
  Tensor& name##_(Tensor& a, double b) {                                                                  \
    binary_scalar(#name "_", k_##name, a, b, false, &a);                                                  \
    return a;                                                                                             \
  }                                                                                                       \
  Tensor& name##_out(Tensor& out, const Tensor& a, const Tensor& b) {                                     \
    binary(#name "_out", k_##name, a, b, &out);                                                           \
    return out;                                                                                           \
  }
GLTENSOR_BINARY_OPS(GLTENSOR_DEFINE_BINARY)
#undef GLTENSOR_DEFINE_BINARY

Tensor add(const Tensor& a, const Tensor& b, double alpha) { return binary("add", k_add, a, b, nullptr, float(alpha)); }
Tensor sub(const Tensor& a, const Tensor& b, double alpha) {
  return binary("add", k_add, a, b, nullptr, float(-alpha));
}

// ---- ternary ----
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  check_same_device("where", {&cond, &a, &b});
  const DType rd = promote_types(a.dtype(), b.dtype());
  // operand order in ternary.comp: (cond, a, b); cond loads in the compute type too.
  return ternary("where", "op_where", TernaryGrad::where, cond, a, b, rd, natural_ct(rd));
}
Tensor where(const Tensor& cond, const Tensor& a, double b) {
  return where(cond, a, scalar_like(a, b, result_type(a.dtype(), b)));
}
Tensor where(const Tensor& cond, double a, const Tensor& b) {
  return where(cond, scalar_like(b, a, result_type(b.dtype(), a)), b);
}
Tensor lerp(const Tensor& a, const Tensor& b, const Tensor& w) {
  const DType rd = promote_types(promote_types(a.dtype(), b.dtype()), w.dtype());
  return ternary("lerp", "op_lerp", TernaryGrad::none, a, b, w, is_floating(rd) ? rd : DType::f32, CT::f32);
}
Tensor lerp(const Tensor& a, const Tensor& b, double w) { return lerp(a, b, scalar_like(a, w, DType::f32)); }
Tensor addcmul(const Tensor& a, const Tensor& b, const Tensor& c, double v) {
  const DType rd = promote_types(promote_types(a.dtype(), b.dtype()), c.dtype());
  return ternary("addcmul", "op_addcmul", TernaryGrad::none, a, b, c, is_floating(rd) ? rd : DType::f32, CT::f32,
                 float(v));
}
Tensor addcdiv(const Tensor& a, const Tensor& b, const Tensor& c, double v) {
  const DType rd = promote_types(promote_types(a.dtype(), b.dtype()), c.dtype());
  return ternary("addcdiv", "op_addcdiv", TernaryGrad::none, a, b, c, is_floating(rd) ? rd : DType::f32, CT::f32,
                 float(v));
}
Tensor clamp(const Tensor& x, const Tensor& lo, const Tensor& hi) {
  const DType rd = promote_types(promote_types(x.dtype(), lo.dtype()), hi.dtype());
  return ternary("clamp", "op_clamp_t", TernaryGrad::none, x, lo, hi, rd, natural_ct(rd));
}

// ---- operators ----
Tensor operator-(const Tensor& x) { return neg(x); }
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, double b) { return add(a, b); }
Tensor operator-(const Tensor& a, double b) { return sub(a, b); }
Tensor operator*(const Tensor& a, double b) { return mul(a, b); }
Tensor operator/(const Tensor& a, double b) { return div(a, b); }
Tensor operator+(double a, const Tensor& b) { return add(a, b); }
Tensor operator-(double a, const Tensor& b) { return sub(a, b); }
Tensor operator*(double a, const Tensor& b) { return mul(a, b); }
Tensor operator/(double a, const Tensor& b) { return div(a, b); }
Tensor& operator+=(Tensor& a, const Tensor& b) { return add_(a, b); }
Tensor& operator-=(Tensor& a, const Tensor& b) { return sub_(a, b); }
Tensor& operator*=(Tensor& a, const Tensor& b) { return mul_(a, b); }
Tensor& operator/=(Tensor& a, const Tensor& b) { return div_(a, b); }
Tensor& operator+=(Tensor& a, double b) { return add_(a, b); }
Tensor& operator-=(Tensor& a, double b) { return sub_(a, b); }
Tensor& operator*=(Tensor& a, double b) { return mul_(a, b); }
Tensor& operator/=(Tensor& a, double b) { return div_(a, b); }

}  // namespace gltensor
