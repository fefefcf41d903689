// Unary elementwise ops (PyTorch semantics), plus fill, copy and cast.
// Host defines: OP (a function below), operand 0 = output, operand 1 = input (absent for fill).
// Special values follow IEEE/PyTorch: NaN propagates, log(0) = -inf, log(x<0) = NaN, etc.
// Uniforms u_p0, u_p1: op parameters (fill value, clamp bounds, slopes).

uniform float u_p0;
uniform float u_p1;
uniform int u_i0;

#include "activations.glsl"

// ---- int-preserving ops ----
int op_identity(int x) { return x; }
float op_identity(float x) { return x; }
int op_neg(int x) { return -x; }
float op_neg(float x) { return -x; }
int op_abs(int x) { return abs(x); }
float op_abs(float x) { return abs(x); }
int op_sign(int x) { return sign(x); }
float op_sign(float x) { return is_nan(x) ? x : (x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : 0.0)); }
int op_relu(int x) { return x > 0 ? x : 0; }
float op_relu(float x) { return act_relu(x); }
int op_clamp(int x) { return min(max(x, int(u_p0)), int(u_p1)); }
float op_clamp(float x) { return is_nan(x) ? x : min(max(x, u_p0), u_p1); }
int op_clamp_min(int x) { return max(x, int(u_p0)); }
float op_clamp_min(float x) { return is_nan(x) ? x : max(x, u_p0); }
int op_clamp_max(int x) { return min(x, int(u_p0)); }
float op_clamp_max(float x) { return is_nan(x) ? x : min(x, u_p0); }
int op_square(int x) { return x * x; }
float op_square(float x) { return x * x; }
bool op_to_bool(float x) { return x != 0.0 || is_nan(x); }
bool op_to_bool(int x) { return x != 0; }
bool op_logical_not(float x) { return x == 0.0; }
bool op_logical_not(int x) { return x == 0; }
bool op_isnan(float x) { return is_nan(x); }
bool op_isnan(int x) { return false; }
bool op_isinf(float x) { return is_inf(x); }
bool op_isinf(int x) { return false; }
bool op_isfinite(float x) { return !is_nan(x) && !is_inf(x); }
float op_fill(float x) { return u_p0; }
int op_fill(int x) { return u_i0; }

// ---- float ops ----
float op_exp(float x) { return exp(x); }
float op_exp2(float x) { return exp2(x); }
float op_log(float x) {
  if (is_nan(x) || x < 0.0) return F_NAN;
  if (x == 0.0) return -F_INF;
  if (is_inf(x)) return x;
  return log(x);
}
float op_log2(float x) { return op_log(x) * 1.4426950408889634; }
float op_log10(float x) { return op_log(x) * 0.4342944819032518; }
float op_log1p(float x) { return log1p_f(x); }
float op_expm1(float x) { return expm1_f(x); }
float op_sqrt(float x) {
  if (is_nan(x) || x < 0.0) return F_NAN;
  return sqrt(x);
}
float op_rsqrt(float x) {
  if (is_nan(x) || x < 0.0) return F_NAN;
  if (x == 0.0) return 1.0 / x;  // +-0 -> +-inf
  if (is_inf(x)) return 0.0;
  return inversesqrt(x);
}
float op_reciprocal(float x) { return 1.0 / x; }
float op_sin(float x) { return is_inf(x) ? F_NAN : sin(x); }
float op_cos(float x) { return is_inf(x) ? F_NAN : cos(x); }
float op_tan(float x) { return is_inf(x) ? F_NAN : sin(x) / cos(x); }
// asin/acos: Cephes asinf/acosf (driver built-ins can be off by 2e-4, as on llvmpipe).
float asin_poly(float x) {
  float z = x * x;
  return ((((4.2163199048e-2 * z + 2.4181311049e-2) * z + 4.5470025998e-2) * z + 7.4953002686e-2) * z +
          1.6666752422e-1) * z * x + x;
}
float op_asin(float x) {
  if (is_nan(x) || abs(x) > 1.0) return F_NAN;
  float a = abs(x);
  float r = a > 0.5 ? 1.5707963267948966 - 2.0 * asin_poly(sqrt(0.5 * (1.0 - a))) : asin_poly(a);
  return x < 0.0 ? -r : r;
}
float op_acos(float x) {
  if (is_nan(x) || abs(x) > 1.0) return F_NAN;
  if (x > 0.5) return 2.0 * asin_poly(sqrt(0.5 * (1.0 - x)));
  if (x < -0.5) return 3.141592653589793 - 2.0 * asin_poly(sqrt(0.5 * (1.0 + x)));
  return 1.5707963267948966 - asin_poly(x);
}
float op_atan(float x) { return is_nan(x) ? x : atan(x); }
float op_sinh(float x) {
  if (is_nan(x)) return x;
  float u = expm1_f(abs(x));
  float r = is_inf(u) ? u : 0.5 * (u + u / (u + 1.0));
  return x < 0.0 ? -r : r;
}
float op_cosh(float x) {
  if (is_nan(x)) return x;
  float a = abs(x);
  return exp(a - 0.6931471805599453) + 0.5 * exp(-a);
}
float op_tanh(float x) { return act_tanh(x); }
float op_erf(float x) { return erf_f(x); }
float op_erfc(float x) { return erfc_f(x); }
float op_sigmoid(float x) { return act_sigmoid(x); }
float op_logsigmoid(float x) { return x < 0.0 ? x - log1p_f(exp(x)) : -log1p_f(exp(-x)); }
float op_leaky_relu(float x) { return act_leaky_relu(x, u_p0); }
float op_elu(float x) { return x > 0.0 ? x : u_p0 * expm1_f(x); }
float op_selu(float x) {
  return 1.0507009873554805 * (x > 0.0 ? x : 1.6732632423543772 * expm1_f(x));
}
float op_celu(float x) { return max(0.0, x) + min(0.0, u_p0 * expm1_f(x / u_p0)); }
float op_gelu(float x) { return act_gelu(x); }
float op_gelu_tanh(float x) { return act_gelu_tanh(x); }
float op_silu(float x) { return act_silu(x); }
// softplus(x) = log(1 + exp(beta x)) / beta; linear above threshold (u_p0 = beta, u_p1 = threshold).
float op_softplus(float x) {
  float bx = u_p0 * x;
  return bx > u_p1 ? x : log1p_f(exp(bx)) / u_p0;
}
float softplus1(float x) { return x > 20.0 ? x : log1p_f(exp(x)); }
float op_mish(float x) { return x * tanh_f(softplus1(x)); }
float op_hardswish(float x) { return act_hardswish(x); }
float op_hardsigmoid(float x) { return act_hardsigmoid(x, 1.0 / 6.0, 0.5); }
float op_hardtanh(float x) { return act_clip(x, u_p0, u_p1); }
float op_relu6(float x) { return act_clip(x, 0.0, 6.0); }
float op_softsign(float x) { return x / (1.0 + abs(x)); }
float op_floor(float x) { return floor(x); }
float op_ceil(float x) { return ceil(x); }
float op_round(float x) { return roundEven(x); }
float op_trunc(float x) { return trunc(x); }
float op_frac(float x) { return x - trunc(x); }
int op_floor(int x) { return x; }
int op_ceil(int x) { return x; }
int op_round(int x) { return x; }
int op_trunc(int x) { return x; }
// Casts with PyTorch semantics: float -> int truncates toward zero.
int op_to_int(float x) { return int(x); }
int op_to_int(int x) { return x; }
float op_to_float(float x) { return x; }
float op_to_float(int x) { return float(x); }

#if NOPS == 1
CT0 compute(uint off[NOPS]) { return CT0(OP(CT0(0))); }
#else
CT0 compute(uint off[NOPS]) { return CT0(OP(load1(off[1]))); }
#endif

#include "elementwise.glsl"
