// Tensor creation and elementwise ops. Names and semantics follow PyTorch (torch.*); NumPy
// broadcasting throughout. Every op records GPU work and returns without waiting.
//
// Dtypes: float ops on integer/bool inputs compute and return float32 (torch's type promotion);
// neg/abs/sign/relu/square/clamp/floor/ceil/round/trunc keep integer dtypes; f16/bf16 inputs
// compute in f32 and round back to their dtype. Binary ops promote with promote_types(); a
// Python-style scalar keeps the tensor's dtype unless an integer tensor meets a non-integral
// scalar (then float32). Comparisons and logical ops return bool.
//
// Forms: op(x) returns a new tensor; op_(x) works in place (throws DTypeError if the result
// dtype cannot be cast to x's, e.g. float into int32); op_out(out, ...) writes into `out`, which
// must have the broadcast shape (ShapeError otherwise) and may be a non-contiguous view.
//
// Errors: ShapeError for shapes that do not broadcast (naming both shapes and the dim),
// DTypeError for unsupported dtypes, ValueError for undefined tensors or mixed devices.
#pragma once
#include <string>

#include "gltensor/tensor.hpp"

namespace gltensor {

// ---- creation ----
Tensor zeros(const Device& dev, const Shape& shape, DType dtype = DType::f32);
Tensor ones(const Device& dev, const Shape& shape, DType dtype = DType::f32);
Tensor full(const Device& dev, const Shape& shape, double value, DType dtype = DType::f32);
/// Values start, start+step, ... < end (numpy.arange); ValueError if step == 0.
Tensor arange(const Device& dev, double start, double end, double step = 1.0, DType dtype = DType::f32);
Tensor arange(const Device& dev, double end, DType dtype = DType::f32);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, double value);
Tensor empty_like(const Tensor& t);

// ---- unary elementwise (x -> same shape) ----
// The unary ops without parameters, one row each: X(name, dtype rule, gradient). Each row
// declares name(x), name_(x) and name_out(out, x); src/ops/elementwise_ops.cpp defines them, the
// GLSL function is op_<name> in glsl/ops/unary.comp, and the tests check every row.
//   dtype rule: keep (the input's dtype, integers included) or floating (integer and bool inputs
//               compute and return float32; float inputs keep their dtype);
//   gradient:   grad (a backward formula in src/ops/elementwise_grads.cpp, checked against finite
//               differences) or no_grad (backward throws ValueError naming the op). Piecewise
//               constant ops (sign, floor, ceil, round, trunc) have the zero gradient, as in PyTorch.
// clang-format off
#define GLTENSOR_UNARY_OPS(X) \
  X(neg, keep, grad) \
  X(abs, keep, grad) \
  X(sign, keep, grad) \
  X(square, keep, grad) \
  X(exp, floating, grad) \
  X(exp2, floating, grad) \
  X(log, floating, grad) \
  X(log2, floating, grad) \
  X(log10, floating, grad) \
  X(log1p, floating, grad) \
  X(expm1, floating, grad) \
  X(sqrt, floating, grad) \
  X(rsqrt, floating, grad) \
  X(reciprocal, floating, grad) \
  X(sin, floating, grad) \
  X(cos, floating, grad) \
  X(tan, floating, grad) \
  X(asin, floating, grad) \
  X(acos, floating, grad) \
  X(atan, floating, grad) \
  X(sinh, floating, grad) \
  X(cosh, floating, grad) \
  X(tanh, floating, grad) \
  X(erf, floating, grad) \
  X(erfc, floating, grad) \
  X(sigmoid, floating, grad) \
  X(logsigmoid, floating, grad) \
  X(relu, keep, grad) \
  X(relu6, floating, grad) \
  X(selu, floating, grad) \
  X(silu, floating, grad) \
  X(mish, floating, grad) \
  X(hardswish, floating, grad) \
  X(hardsigmoid, floating, grad) \
  X(softsign, floating, grad) \
  X(floor, keep, grad) \
  X(ceil, keep, grad) \
  X(round, keep, grad) \
  X(trunc, keep, grad) \
  X(frac, floating, grad) \
// clang-format on
#define GLTENSOR_DECLARE_UNARY(name, rule, grad) \
  Tensor name(const Tensor& x);                  \
  Tensor& name##_(Tensor& x);                    \
  Tensor& name##_out(Tensor& out, const Tensor& x);
GLTENSOR_UNARY_OPS(GLTENSOR_DECLARE_UNARY)
#undef GLTENSOR_DECLARE_UNARY

/// round(x) rounds half to even (torch.round). gelu: approximate = "none" (erf form, Hendrycks &
/// Gimpel 2016) or "tanh". softplus: log(1 + exp(beta x)) / beta, x where beta x > threshold.
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor elu(const Tensor& x, double alpha = 1.0);
Tensor celu(const Tensor& x, double alpha = 1.0);
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
Tensor hardtanh(const Tensor& x, double min_val = -1.0, double max_val = 1.0);
/// NaN stays NaN; ValueError if min > max is not checked (torch semantics: result is max).
Tensor clamp(const Tensor& x, double min, double max);
Tensor clamp_min(const Tensor& x, double min);
Tensor clamp_max(const Tensor& x, double max);
/// Tensor bounds, broadcast with x.
Tensor clamp(const Tensor& x, const Tensor& min, const Tensor& max);
Tensor isnan(const Tensor& x);        ///< -> bool
Tensor isinf(const Tensor& x);        ///< -> bool
Tensor isfinite(const Tensor& x);     ///< -> bool
Tensor logical_not(const Tensor& x);  ///< -> bool

// ---- binary elementwise with broadcasting ----
// One row each: X(name, dtype rule, gradient). Each row declares name(a, b), name(a, scalar),
// name(scalar, b), name_(a, b), name_(a, scalar) and name_out(out, a, b); the GLSL function is
// op_<name> in glsl/ops/binary.comp.
//   dtype rule: arith (promote_types of the operands), float_arith (as arith, integers -> float32),
//               compare and logical (-> bool), bitwise (integer and bool only, DTypeError else);
//   gradient:   grad (src/ops/elementwise_grads.cpp) or no_grad (non-float results).
// clang-format off
#define GLTENSOR_BINARY_OPS(X) \
  X(add, arith, grad) \
  X(sub, arith, grad) \
  X(mul, arith, grad) \
  X(div, float_arith, grad) \
  X(pow, arith, grad) \
  X(maximum, arith, grad) \
  X(minimum, arith, grad) \
  X(fmax, float_arith, grad) \
  X(fmin, float_arith, grad) \
  X(fmod, arith, grad) \
  X(remainder, arith, grad) \
  X(atan2, float_arith, grad) \
  X(eq, compare, no_grad) \
  X(ne, compare, no_grad) \
  X(lt, compare, no_grad) \
  X(le, compare, no_grad) \
  X(gt, compare, no_grad) \
  X(ge, compare, no_grad) \
  X(logical_and, logical, no_grad) \
  X(logical_or, logical, no_grad) \
  X(logical_xor, logical, no_grad) \
  X(bitwise_and, bitwise, no_grad) \
  X(bitwise_or, bitwise, no_grad) \
  X(bitwise_xor, bitwise, no_grad) \
// clang-format on
#define GLTENSOR_DECLARE_BINARY(name, rule, grad) \
  Tensor name(const Tensor& a, const Tensor& b); \
  Tensor name(const Tensor& a, double b);        \
  Tensor name(double a, const Tensor& b);        \
  Tensor& name##_(Tensor& a, const Tensor& b);   \
  Tensor& name##_(Tensor& a, double b);          \
  Tensor& name##_out(Tensor& out, const Tensor& a, const Tensor& b);
GLTENSOR_BINARY_OPS(GLTENSOR_DECLARE_BINARY)
#undef GLTENSOR_DECLARE_BINARY

/// a + alpha * b and a - alpha * b (torch.add/sub with alpha).
Tensor add(const Tensor& a, const Tensor& b, double alpha);
Tensor sub(const Tensor& a, const Tensor& b, double alpha);

// ---- ternary ----
/// cond ? a : b elementwise, all three broadcast (torch.where, ONNX Where); cond is any dtype
/// (nonzero = true). Result dtype promote_types(a, b).
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, double b);
Tensor where(const Tensor& cond, double a, const Tensor& b);
/// a + weight * (b - a).
Tensor lerp(const Tensor& a, const Tensor& b, const Tensor& weight);
Tensor lerp(const Tensor& a, const Tensor& b, double weight);
/// a + value * b * c, a + value * b / c.
Tensor addcmul(const Tensor& a, const Tensor& b, const Tensor& c, double value = 1.0);
Tensor addcdiv(const Tensor& a, const Tensor& b, const Tensor& c, double value = 1.0);

// ---- operators ----
Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);
Tensor& operator+=(Tensor& a, const Tensor& b);
Tensor& operator-=(Tensor& a, const Tensor& b);
Tensor& operator*=(Tensor& a, const Tensor& b);
Tensor& operator/=(Tensor& a, const Tensor& b);
Tensor& operator+=(Tensor& a, double b);
Tensor& operator-=(Tensor& a, double b);
Tensor& operator*=(Tensor& a, double b);
Tensor& operator/=(Tensor& a, double b);

/// Result dtype of a binary op on a tensor and a scalar (torch.result_type).
DType result_type(DType tensor, double scalar);
/// Whether a value of dtype `from` may be written into `to` in place (torch.can_cast).
bool can_cast(DType from, DType to);

}  // namespace gltensor
