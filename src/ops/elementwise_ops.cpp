// Unary, binary and ternary elementwise ops: dtype rules, forms (new / in-place / out=).
#include <cmath>

#include "autograd/grad_formulas.hpp"
#include "gltensor/ops.hpp"
#include "ops/elementwise.hpp"

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

enum class Kind { Float, Preserve, Bool };

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

Tensor unary(const char* op, const char* fn, Kind kind, const Tensor& x, Tensor* out, float p0 = 0, float p1 = 0) {
  check_defined(op, x);
  Enter guard(dev_of(x), op);
  DType rd = x.dtype();
  CT ct = natural_ct(x.dtype());
  if (kind == Kind::Float) {
    rd = is_floating(x.dtype()) ? x.dtype() : DType::f32;
    ct = CT::f32;
  } else if (kind == Kind::Bool) {
    rd = DType::bool_;
  }
  if (out) check_inplace(op, *out);
  Tensor o = prepare_out(op, out, x.shape(), rd, x);
  Elementwise e;
  e.op = op;
  e.kernel = "unary.comp";
  e.fn = fn;
  e.in_ct = ct;
  e.p0 = p0;
  e.p1 = p1;
  launch_elementwise(e, o, {x});
  if (!out && kind != Kind::Bool) grad_unary(fn, x, o, p0, p1);
  return o;
}

enum class BKind { Arith, FloatArith, Compare, Logical, Bitwise };

struct BinarySpec {
  const char* fn;
  BKind kind;
};

void check_bitwise(const char* op, DType d) {
  if (is_floating(d))
    throw DTypeError(std::string("gltensor::") + op + ": not implemented for dtype " + dtype_name(d) +
                     " (integer and bool only)");
}

// Result dtype and compute type of a binary op whose operands promote to `common`.
std::pair<DType, CT> binary_types(const char* op, BKind kind, DType common) {
  switch (kind) {
    case BKind::Arith:
      return {common, natural_ct(common)};
    case BKind::FloatArith:
      return {is_floating(common) ? common : DType::f32, CT::f32};
    case BKind::Compare:
    case BKind::Logical:
      return {DType::bool_, natural_ct(common)};
    case BKind::Bitwise:
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
  e.kernel = "binary.comp";
  e.fn = alpha != 1 ? std::string(s.fn) + "_alpha" : s.fn;
  e.in_ct = ct;
  e.alpha = alpha;
  launch_elementwise(e, o, {a, b});
  if (!out && is_floating(rd)) grad_binary(s.fn, a, b, 0, false, alpha, o);
  return o;
}

Tensor binary_scalar(const char* op, const BinarySpec& s, const Tensor& t, double v, bool scalar_first, Tensor* out) {
  check_defined(op, t);
  Enter guard(dev_of(t), op);
  const DType common = result_type(t.dtype(), v);
  auto [rd, ct] = binary_types(op, s.kind, common);
  if (out) check_inplace(op, *out);
  Tensor o = prepare_out(op, out, t.shape(), rd, t);
  Elementwise e;
  e.op = op;
  e.kernel = "binary.comp";
  e.fn = s.fn;
  e.in_ct = ct;
  e.scalar = v;
  e.scalar_first = scalar_first;
  launch_elementwise(e, o, {t});
  if (!out && is_floating(rd)) grad_binary(s.fn, t, Tensor(), v, scalar_first, 1, o);
  return o;
}

Tensor ternary(const char* op, const char* fn, const Tensor& a, const Tensor& b, const Tensor& c, DType rd, CT ct,
               float p0 = 0) {
  check_same_device(op, {&a, &b, &c});
  Enter guard(dev_of(a), op);
  const Shape shape = broadcast_shapes(op, broadcast_shapes(op, a.shape(), b.shape()), c.shape());
  Tensor o = alloc(dev_of(a), shape, rd, op);
  Elementwise e;
  e.op = op;
  e.kernel = "ternary.comp";
  e.fn = fn;
  e.in_ct = ct;
  e.p0 = p0;
  launch_elementwise(e, o, {a, b, c});
  if (std::string(fn) == "op_where") {
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
#define GLTENSOR_DEFINE_UNARY(name, kind)                                                    \
  Tensor name(const Tensor& x) { return unary(#name, "op_" #name, Kind::kind, x, nullptr); } \
  Tensor& name##_(Tensor& x) {                                                               \
    unary(#name "_", "op_" #name, Kind::kind, x, &x);                                        \
    return x;                                                                                \
  }                                                                                          \
  Tensor& name##_out(Tensor& out, const Tensor& x) {                                         \
    unary(#name "_out", "op_" #name, Kind::kind, x, &out);                                   \
    return out;                                                                              \
  }
GLTENSOR_DEFINE_UNARY(neg, Preserve)
GLTENSOR_DEFINE_UNARY(abs, Preserve)
GLTENSOR_DEFINE_UNARY(sign, Preserve)
GLTENSOR_DEFINE_UNARY(square, Preserve)
GLTENSOR_DEFINE_UNARY(relu, Preserve)
GLTENSOR_DEFINE_UNARY(floor, Preserve)
GLTENSOR_DEFINE_UNARY(ceil, Preserve)
GLTENSOR_DEFINE_UNARY(round, Preserve)
GLTENSOR_DEFINE_UNARY(trunc, Preserve)
GLTENSOR_DEFINE_UNARY(exp, Float)
GLTENSOR_DEFINE_UNARY(exp2, Float)
GLTENSOR_DEFINE_UNARY(log, Float)
GLTENSOR_DEFINE_UNARY(log2, Float)
GLTENSOR_DEFINE_UNARY(log10, Float)
GLTENSOR_DEFINE_UNARY(log1p, Float)
GLTENSOR_DEFINE_UNARY(expm1, Float)
GLTENSOR_DEFINE_UNARY(sqrt, Float)
GLTENSOR_DEFINE_UNARY(rsqrt, Float)
GLTENSOR_DEFINE_UNARY(reciprocal, Float)
GLTENSOR_DEFINE_UNARY(sin, Float)
GLTENSOR_DEFINE_UNARY(cos, Float)
GLTENSOR_DEFINE_UNARY(tan, Float)
GLTENSOR_DEFINE_UNARY(asin, Float)
GLTENSOR_DEFINE_UNARY(acos, Float)
GLTENSOR_DEFINE_UNARY(atan, Float)
GLTENSOR_DEFINE_UNARY(sinh, Float)
GLTENSOR_DEFINE_UNARY(cosh, Float)
GLTENSOR_DEFINE_UNARY(tanh, Float)
GLTENSOR_DEFINE_UNARY(erf, Float)
GLTENSOR_DEFINE_UNARY(erfc, Float)
GLTENSOR_DEFINE_UNARY(sigmoid, Float)
GLTENSOR_DEFINE_UNARY(logsigmoid, Float)
GLTENSOR_DEFINE_UNARY(relu6, Float)
GLTENSOR_DEFINE_UNARY(selu, Float)
GLTENSOR_DEFINE_UNARY(silu, Float)
GLTENSOR_DEFINE_UNARY(mish, Float)
GLTENSOR_DEFINE_UNARY(hardswish, Float)
GLTENSOR_DEFINE_UNARY(hardsigmoid, Float)
GLTENSOR_DEFINE_UNARY(softsign, Float)
GLTENSOR_DEFINE_UNARY(frac, Float)
#undef GLTENSOR_DEFINE_UNARY

Tensor gelu(const Tensor& x, const std::string& approximate) {
  if (approximate != "none" && approximate != "tanh")
    throw ValueError("gltensor::gelu: approximate must be \"none\" or \"tanh\", got \"" + approximate + "\"");
  return unary("gelu", approximate == "tanh" ? "op_gelu_tanh" : "op_gelu", Kind::Float, x, nullptr);
}
Tensor leaky_relu(const Tensor& x, double s) {
  return unary("leaky_relu", "op_leaky_relu", Kind::Float, x, nullptr, float(s));
}
Tensor elu(const Tensor& x, double a) { return unary("elu", "op_elu", Kind::Float, x, nullptr, float(a)); }
Tensor celu(const Tensor& x, double a) {
  if (a == 0) throw ValueError("gltensor::celu: alpha must not be 0");
  return unary("celu", "op_celu", Kind::Float, x, nullptr, float(a));
}
Tensor softplus(const Tensor& x, double beta, double threshold) {
  if (beta == 0) throw ValueError("gltensor::softplus: beta must not be 0");
  return unary("softplus", "op_softplus", Kind::Float, x, nullptr, float(beta), float(threshold));
}
Tensor hardtanh(const Tensor& x, double lo, double hi) {
  if (lo > hi)
    throw ValueError("gltensor::hardtanh: min_val " + std::to_string(lo) + " > max_val " + std::to_string(hi));
  return unary("hardtanh", "op_hardtanh", Kind::Float, x, nullptr, float(lo), float(hi));
}
Tensor clamp(const Tensor& x, double lo, double hi) {
  return unary("clamp", "op_clamp", Kind::Preserve, x, nullptr, float(lo), float(hi));
}
Tensor clamp_min(const Tensor& x, double lo) {
  return unary("clamp_min", "op_clamp_min", Kind::Preserve, x, nullptr, float(lo));
}
Tensor clamp_max(const Tensor& x, double hi) {
  return unary("clamp_max", "op_clamp_max", Kind::Preserve, x, nullptr, float(hi));
}
Tensor isnan(const Tensor& x) { return unary("isnan", "op_isnan", Kind::Bool, x, nullptr); }
Tensor isinf(const Tensor& x) { return unary("isinf", "op_isinf", Kind::Bool, x, nullptr); }
Tensor isfinite(const Tensor& x) { return unary("isfinite", "op_isfinite", Kind::Bool, x, nullptr); }
Tensor logical_not(const Tensor& x) { return unary("logical_not", "op_logical_not", Kind::Bool, x, nullptr); }

// ---- binary ----
#define GLTENSOR_DEFINE_BINARY(name, kind)                                                                           \
  Tensor name(const Tensor& a, const Tensor& b) { return binary(#name, {"op_" #name, BKind::kind}, a, b, nullptr); } \
  Tensor name(const Tensor& a, double b) {                                                                           \
    return binary_scalar(#name, {"op_" #name, BKind::kind}, a, b, false, nullptr);                                   \
  }                                                                                                                  \
  Tensor name(double a, const Tensor& b) {                                                                           \
    return binary_scalar(#name, {"op_" #name, BKind::kind}, b, a, true, nullptr);                                    \
  }                                                                                                                  \
  Tensor& name##_(Tensor& a, const Tensor& b) {                                                                      \
    binary(#name "_", {"op_" #name, BKind::kind}, a, b, &a);                                                         \
    return a;                                                                                                        \
  }                                                                                                                  \
  Tensor& name##_(Tensor& a, double b) {                                                                             \
    binary_scalar(#name "_", {"op_" #name, BKind::kind}, a, b, false, &a);                                           \
    return a;                                                                                                        \
  }                                                                                                                  \
  Tensor& name##_out(Tensor& out, const Tensor& a, const Tensor& b) {                                                \
    binary(#name "_out", {"op_" #name, BKind::kind}, a, b, &out);                                                    \
    return out;                                                                                                      \
  }
GLTENSOR_DEFINE_BINARY(add, Arith)
GLTENSOR_DEFINE_BINARY(sub, Arith)
GLTENSOR_DEFINE_BINARY(mul, Arith)
GLTENSOR_DEFINE_BINARY(div, FloatArith)
GLTENSOR_DEFINE_BINARY(pow, Arith)
GLTENSOR_DEFINE_BINARY(maximum, Arith)
GLTENSOR_DEFINE_BINARY(minimum, Arith)
GLTENSOR_DEFINE_BINARY(fmax, FloatArith)
GLTENSOR_DEFINE_BINARY(fmin, FloatArith)
GLTENSOR_DEFINE_BINARY(fmod, Arith)
GLTENSOR_DEFINE_BINARY(remainder, Arith)
GLTENSOR_DEFINE_BINARY(atan2, FloatArith)
GLTENSOR_DEFINE_BINARY(eq, Compare)
GLTENSOR_DEFINE_BINARY(ne, Compare)
GLTENSOR_DEFINE_BINARY(lt, Compare)
GLTENSOR_DEFINE_BINARY(le, Compare)
GLTENSOR_DEFINE_BINARY(gt, Compare)
GLTENSOR_DEFINE_BINARY(ge, Compare)
GLTENSOR_DEFINE_BINARY(logical_and, Logical)
GLTENSOR_DEFINE_BINARY(logical_or, Logical)
GLTENSOR_DEFINE_BINARY(logical_xor, Logical)
GLTENSOR_DEFINE_BINARY(bitwise_and, Bitwise)
GLTENSOR_DEFINE_BINARY(bitwise_or, Bitwise)
GLTENSOR_DEFINE_BINARY(bitwise_xor, Bitwise)
#undef GLTENSOR_DEFINE_BINARY

Tensor add(const Tensor& a, const Tensor& b, double alpha) {
  return binary("add", {"op_add", BKind::Arith}, a, b, nullptr, float(alpha));
}
Tensor sub(const Tensor& a, const Tensor& b, double alpha) {
  return binary("add", {"op_add", BKind::Arith}, a, b, nullptr, float(-alpha));
}

// ---- ternary ----
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  check_same_device("where", {&cond, &a, &b});
  const DType rd = promote_types(a.dtype(), b.dtype());
  // operand order in ternary.comp: (cond, a, b); cond loads in the compute type too.
  return ternary("where", "op_where", cond, a, b, rd, natural_ct(rd));
}
Tensor where(const Tensor& cond, const Tensor& a, double b) {
  return where(cond, a, scalar_like(a, b, result_type(a.dtype(), b)));
}
Tensor where(const Tensor& cond, double a, const Tensor& b) {
  return where(cond, scalar_like(b, a, result_type(b.dtype(), a)), b);
}
Tensor lerp(const Tensor& a, const Tensor& b, const Tensor& w) {
  const DType rd = promote_types(promote_types(a.dtype(), b.dtype()), w.dtype());
  return ternary("lerp", "op_lerp", a, b, w, is_floating(rd) ? rd : DType::f32, CT::f32);
}
Tensor lerp(const Tensor& a, const Tensor& b, double w) { return lerp(a, b, scalar_like(a, w, DType::f32)); }
Tensor addcmul(const Tensor& a, const Tensor& b, const Tensor& c, double v) {
  const DType rd = promote_types(promote_types(a.dtype(), b.dtype()), c.dtype());
  return ternary("addcmul", "op_addcmul", a, b, c, is_floating(rd) ? rd : DType::f32, CT::f32, float(v));
}
Tensor addcdiv(const Tensor& a, const Tensor& b, const Tensor& c, double v) {
  const DType rd = promote_types(promote_types(a.dtype(), b.dtype()), c.dtype());
  return ternary("addcdiv", "op_addcdiv", a, b, c, is_floating(rd) ? rd : DType::f32, CT::f32, float(v));
}
Tensor clamp(const Tensor& x, const Tensor& lo, const Tensor& hi) {
  const DType rd = promote_types(promote_types(x.dtype(), lo.dtype()), hi.dtype());
  return ternary("clamp", "op_clamp_t", x, lo, hi, rd, natural_ct(rd));
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
