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
/// Values start + i * step for i < ceil((end - start) / step) (numpy.arange; empty if that is <= 0),
/// generated on the device. Float dtypes: the exact value of start + i * step (start and step to
/// 2^-93 of the largest |value|) rounded once to float32 (then to f16/bf16): exact whenever the
/// value is representable; torch's CPU arange rounds twice (double, then float) and can differ by
/// 1 ulp at ties. Integer dtypes (torch): start and step truncated to integers, values wrap to the
/// dtype. Errors: ValueError for step 0 (also after truncation), a non-finite argument or a start
/// or step beyond int64 for integer dtypes; DTypeError for bool; LimitError (before any
/// allocation) past 2^31-1 elements or the device's max SSBO size.
Tensor arange(const Device& dev, double start, double end, double step = 1.0, DType dtype = DType::f32);
Tensor arange(const Device& dev, double end, DType dtype = DType::f32);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, double value);
Tensor empty_like(const Tensor& t);

// ---- unary elementwise (x -> same shape) ----
// The unary ops without parameters, one row each: X(name, dtype rule, gradient, kernel form).
// Each row declares name(x), name_(x) and name_out(out, x); src/ops/elementwise_ops.cpp defines
// them, the GLSL function is op_<name> in glsl/ops/unary.comp, and the tests check every row. The
// row is the only place that holds the op's facts: nothing is looked up by its GLSL name.
//   dtype rule: keep (the input's dtype, integers included) or floating (integer and bool inputs
//               compute and return float32; float inputs keep their dtype);
//   gradient:   grad (a backward formula in src/ops/elementwise_grads.cpp, checked against finite
//               differences) or no_grad (backward throws ValueError naming the op). Piecewise
//               constant ops (sign, floor, ceil, round, trunc) have the zero gradient, as in PyTorch;
//   kernel form: f32, or f16 (unary.comp also has op16_<name>, the f16vec2 form run where every
//               operand is f16 and the device does f16 math: docs/precision.md).
// asinh, acosh, atanh: stable forms (log1p near 0 and 1, log(2|x|) past 1e18); acosh(x < 1) and
// atanh(|x| > 1) are NaN, atanh(+-1) +-Inf (C99 / PyTorch).
// clang-format off
#define GLTENSOR_UNARY_OPS(X) \
  X(neg, keep, grad, f16) \
  X(abs, keep, grad, f32) \
  X(sign, keep, grad, f32) \
  X(square, keep, grad, f16) \
  X(exp, floating, grad, f32) \
  X(exp2, floating, grad, f32) \
  X(log, floating, grad, f32) \
  X(log2, floating, grad, f32) \
  X(log10, floating, grad, f32) \
  X(log1p, floating, grad, f32) \
  X(expm1, floating, grad, f32) \
  X(sqrt, floating, grad, f32) \
  X(rsqrt, floating, grad, f32) \
  X(reciprocal, floating, grad, f32) \
  X(sin, floating, grad, f32) \
  X(cos, floating, grad, f32) \
  X(tan, floating, grad, f32) \
  X(asin, floating, grad, f32) \
  X(acos, floating, grad, f32) \
  X(atan, floating, grad, f32) \
  X(asinh, floating, grad, f32) \
  X(acosh, floating, grad, f32) \
  X(atanh, floating, grad, f32) \
  X(sinh, floating, grad, f32) \
  X(cosh, floating, grad, f32) \
  X(tanh, floating, grad, f32) \
  X(erf, floating, grad, f32) \
  X(erfc, floating, grad, f32) \
  X(sigmoid, floating, grad, f32) \
  X(logsigmoid, floating, grad, f32) \
  X(relu, keep, grad, f16) \
  X(relu6, floating, grad, f32) \
  X(selu, floating, grad, f32) \
  X(silu, floating, grad, f32) \
  X(mish, floating, grad, f32) \
  X(hardswish, floating, grad, f32) \
  X(hardsigmoid, floating, grad, f32) \
  X(softsign, floating, grad, f32) \
  X(floor, keep, grad, f32) \
  X(ceil, keep, grad, f32) \
  X(round, keep, grad, f32) \
  X(trunc, keep, grad, f32) \
  X(frac, floating, grad, f32) \
// clang-format on
#define GLTENSOR_DECLARE_UNARY(name, rule, grad, ...) \
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
/// ONNX Shrink: x + bias where x < -lambd, x - bias where x > lambd, else 0 (NaN gives 0, as
/// ONNX's reference); gradient 1 outside [-lambd, lambd]. shrink(x, l, 0) is torch's hardshrink
/// (but for NaN), shrink(x, l, l) its softshrink.
Tensor shrink(const Tensor& x, double lambd = 0.5, double bias = 0.0);
// The unary ops with parameters above, one row each (declared by hand: they validate their
// parameters): X(name). Each has the GLSL function op_<name> in glsl/ops/unary.comp (its
// parameters in u_p0, u_p1) and a backward formula in src/ops/elementwise_grads.cpp.
// clang-format off
#define GLTENSOR_PARAMETRIC_UNARY_OPS(X) \
  X(gelu) X(gelu_tanh) X(leaky_relu) X(elu) X(celu) X(softplus) X(hardtanh) X(clamp) X(clamp_min) X(clamp_max) \
  X(shrink)
// clang-format on
/// Tensor bounds, broadcast with x.
Tensor clamp(const Tensor& x, const Tensor& min, const Tensor& max);
Tensor isnan(const Tensor& x);        ///< -> bool
Tensor isinf(const Tensor& x);        ///< -> bool
Tensor isfinite(const Tensor& x);     ///< -> bool
Tensor logical_not(const Tensor& x);  ///< -> bool

// ---- binary elementwise with broadcasting ----
// One row each: X(name, dtype rule, gradient, kernel form). Each row declares name(a, b),
// name(a, scalar), name(scalar, b), name_(a, b), name_(a, scalar) and name_out(out, a, b); the
// GLSL function is op_<name> in glsl/ops/binary.comp.
//   dtype rule: arith (promote_types of the operands), float_arith (as arith, integers -> float32),
//               compare and logical (-> bool), bitwise (integer and bool only, DTypeError else);
//   gradient:   grad (src/ops/elementwise_grads.cpp) or no_grad (non-float results);
//   kernel form: f32; f16 (binary.comp also has op16_<name>, and op16_<name>_alpha for add);
//               int_division (OP loops up to 32 times an element, float fmod's long division; on
//               integers a zero divisor tensor sets an error flag, ValueError at the next read);
//               int_power (OP loops up to 32 times an element, integer square-and-multiply; a
//               negative integer scalar exponent is a ValueError).
// clang-format off
#define GLTENSOR_BINARY_OPS(X) \
  X(add, arith, grad, f16) \
  X(sub, arith, grad, f16) \
  X(mul, arith, grad, f16) \
  X(div, float_arith, grad, f32) \
  X(pow, arith, grad, int_power) \
  X(maximum, arith, grad, f32) \
  X(minimum, arith, grad, f32) \
  X(fmax, float_arith, grad, f32) \
  X(fmin, float_arith, grad, f32) \
  X(fmod, arith, grad, int_division) \
  X(remainder, arith, grad, int_division) \
  X(atan2, float_arith, grad, f32) \
  X(eq, compare, no_grad, f32) \
  X(ne, compare, no_grad, f32) \
  X(lt, compare, no_grad, f32) \
  X(le, compare, no_grad, f32) \
  X(gt, compare, no_grad, f32) \
  X(ge, compare, no_grad, f32) \
  X(logical_and, logical, no_grad, f32) \
  X(logical_or, logical, no_grad, f32) \
  X(logical_xor, logical, no_grad, f32) \
  X(bitwise_and, bitwise, no_grad, f32) \
  X(bitwise_or, bitwise, no_grad, f32) \
  X(bitwise_xor, bitwise, no_grad, f32) \
// clang-format on
#define GLTENSOR_DECLARE_BINARY(name, rule, grad, ...) \
  Tensor name(const Tensor& a, const Tensor& b); \
  Tensor name(const Tensor& a, double b);        \
  Tensor name(double a, const Tensor& b);        \
  Tensor& name##_(Tensor& a, const Tensor& b);   \
  Tensor& name##_(Tensor& a, double b);          \
  Tensor& name##_out(Tensor& out, const Tensor& a, const Tensor& b);
GLTENSOR_BINARY_OPS(GLTENSOR_DECLARE_BINARY)
#undef GLTENSOR_DECLARE_BINARY

/// fmod: C's fmod (exact; sign of a). remainder: torch.remainder / Python's % (fmod plus b when
/// the signs differ; sign of b). Floats: NaN for a zero divisor, an infinite a or a NaN operand.
/// Integers (torch raises "ZeroDivisionError"): ValueError for division by zero, at the call
/// for a scalar divisor 0, at the next read for a zero in a divisor tensor (detected on the GPU;
/// those elements are 0).
/// pow on integers: ValueError for a negative scalar exponent ("Integers to negative integer
/// powers are not allowed", as torch); a negative exponent in a tensor gives torch's integer pow:
/// 1 for base 1, +-1 for base -1, 0 otherwise. Integer results wrap on overflow.

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
