// Binary elementwise ops with NumPy broadcasting (the host expands inputs to stride 0).
// Host defines: OP (a function below); operand 0 = output, 1 = a, 2 = b. With SCALAR_A or
// SCALAR_B that operand is the uniform u_scalar (float) / u_iscalar (int with SCALAR_INT) and the
// tensor input is operand 1.

uniform float u_scalar;
uniform int u_iscalar;
uniform float u_alpha;  // add/sub: a + alpha * b

// ERR_FLAG: the device's error flag word, bound after the operands (integer division by zero).
#ifdef ERR_FLAG
layout(std430, binding = NOPS) buffer ErrFlag { uint err_flag[]; };
void flag_zero_division() { atomicOr(err_flag[0], 2u); }  // ErrorFlags::kZeroDivision
#else
void flag_zero_division() {}
#endif

float op_add(float a, float b) { return a + b; }
int op_add(int a, int b) { return a + b; }
float op_add_alpha(float a, float b) { return a + u_alpha * b; }
int op_add_alpha(int a, int b) { return a + int(u_alpha) * b; }
float op_sub(float a, float b) { return a - b; }
int op_sub(int a, int b) { return a - b; }
float op_mul(float a, float b) { return a * b; }
int op_mul(int a, int b) { return a * b; }
float op_div(float a, float b) { return div_rn(a, b); }  // correctly rounded (common.glsl)
float op_maximum(float a, float b) { return (is_nan(a) || is_nan(b)) ? F_NAN : max(a, b); }
int op_maximum(int a, int b) { return max(a, b); }
float op_minimum(float a, float b) { return (is_nan(a) || is_nan(b)) ? F_NAN : min(a, b); }
int op_minimum(int a, int b) { return min(a, b); }
// fmax/fmin: NaN only if both are NaN (numpy.fmax).
float op_fmax(float a, float b) { return is_nan(a) ? b : (is_nan(b) ? a : max(a, b)); }
float op_fmin(float a, float b) { return is_nan(a) ? b : (is_nan(b) ? a : min(a, b)); }

float pow_abs(float a, float b) { return exp2(b * log2(a)); }
// pow with C99/PyTorch special cases.
float op_pow(float a, float b) {
  if (b == 0.0) return 1.0;
  if (a == 1.0) return 1.0;
  if (is_nan(a) || is_nan(b)) return F_NAN;
  if (b == 1.0) return a;
  if (b == 2.0) return a * a;
  bool b_int = trunc(b) == b && !is_inf(b);
  bool b_odd = b_int && abs(mod(b, 2.0)) == 1.0;
  if (a == 0.0) {
    if (b > 0.0) return b_odd ? a : 0.0;
    return (b_odd && floatBitsToUint(a) != 0u) ? -F_INF : F_INF;
  }
  if (is_inf(b)) {
    float aa = abs(a);
    if (aa == 1.0) return 1.0;
    return ((aa > 1.0) == (b > 0.0)) ? F_INF : 0.0;
  }
  if (is_inf(a)) {
    if (a > 0.0) return b > 0.0 ? F_INF : 0.0;
    if (b > 0.0) return b_odd ? -F_INF : F_INF;
    return b_odd ? -0.0 : 0.0;
  }
  if (a < 0.0) {
    if (!b_int) return F_NAN;
    float r = pow_abs(-a, b);
    return b_odd ? -r : r;
  }
  return pow_abs(a, b);
}
// Integers (torch's integer pow for tensor exponents; the host rejects negative scalar ones):
// a negative exponent gives 1 for a = 1, +-1 for a = -1, else 0.
int op_pow(int a, int b) {
  if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) == 1 ? -1 : 1) : 0);
  int r = 1;
  int base = a;
  for (int e = b; LOOP(e > 0); e >>= 1) {
    if ((e & 1) == 1) r *= base;
    base *= base;
  }
  return r;
}
// fmod: C fmod, result has the sign of a. remainder: Python %, result has the sign of b.
// C's fmod is exact (the result is always representable); a - b * trunc(a / b) is not once the
// quotient passes 2^24. fmod_finite divides the integer significands, 8 quotient bits per step
// (the f32 exponent range needs at most 32 steps), so nothing rounds and no denormal is flushed.
float fmod_finite(float a, float b) {  // a finite, b finite and nonzero
  uint xa = floatBitsToUint(a) & 0x7fffffffu, xb = floatBitsToUint(b) & 0x7fffffffu;
  if (xa < xb) return a;  // |a| < |b|, a = +-0 included
  // value = m * 2^(e - 150); denormals have e = 1 and no implicit bit.
  int ea = max(int(xa >> 23), 1), eb = max(int(xb >> 23), 1);
  uint ma = (xa & 0x7fffffu) | (xa >= 0x800000u ? 0x800000u : 0u);
  uint mb = (xb & 0x7fffffu) | (xb >= 0x800000u ? 0x800000u : 0u);
  uint m = ma % mb;
  for (int d = ea - eb; LOOP(d > 0 && m != 0u); d -= 8) {
    int s = min(d, 8);
    m = (m << uint(s)) % mb;  // m < mb < 2^24: m << 8 fits in 32 bits
  }
  uint sign = floatBitsToUint(a) & 0x80000000u;
  if (m == 0u) return uintBitsToFloat(sign);
  // m * 2^(eb - 150) with m < 2^24: normalize to a 24-bit significand, or encode as a denormal.
  int e = eb + findMSB(m) - 23;
  uint r = e >= 1 ? (uint(e) << 23) | ((m << uint(23 - findMSB(m))) & 0x7fffffu) : m << uint(eb - 1);
  return uintBitsToFloat(sign | r);
}
bool is_zero_bits(float x) { return (floatBitsToUint(x) & 0x7fffffffu) == 0u; }  // a denormal is not 0
float op_fmod(float a, float b) {
  if (is_zero_bits(b) || is_inf(a) || is_nan(a) || is_nan(b)) return F_NAN;
  if (is_inf(b)) return a;
  return fmod_finite(a, b);
}
// Integers: division by zero gives 0 and sets the flag (torch raises); b = -1 avoids INT_MIN / -1.
int op_fmod(int a, int b) {
  if (b == 0) flag_zero_division();
  return (b == 0 || b == -1) ? 0 : a - b * (a / b);
}
// PyTorch: r = fmod(a, b); r + b when r and b have opposite signs (r + b rounds when |r| << |b|).
float op_remainder(float a, float b) {
  if (is_zero_bits(b) || is_inf(a) || is_nan(a) || is_nan(b)) return F_NAN;
  float r = is_inf(b) ? a : fmod_finite(a, b);
  // Bit tests: a device that treats denormals as zero in comparisons must still adjust a tiny r.
  bool adjust = !is_zero_bits(r) && (floatBitsToUint(r) >> 31) != (floatBitsToUint(b) >> 31);
  return adjust ? r + b : r;
}
int op_remainder(int a, int b) {
  if (b == 0) flag_zero_division();
  if (b == 0 || b == -1) return 0;
  int r = a - b * (a / b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
// atan2 with C99 signed zeros: atan2(+-0, x) is +-0 for x > 0 or x = +0, +-pi for x < 0 or x = -0
// (drivers' atan(y, x) may drop the sign of a zero y, as NVIDIA's does).
float op_atan2(float a, float b) {
  if (is_nan(a) || is_nan(b)) return F_NAN;
  if (a == 0.0) {
    bool neg_a = floatBitsToUint(a) != 0u, neg_b = (floatBitsToUint(b) & 0x80000000u) != 0u;
    if (b > 0.0 || (b == 0.0 && !neg_b)) return a;
    return neg_a ? -3.141592653589793 : 3.141592653589793;
  }
  return atan(a, b);
}
bool op_eq(float a, float b) { return a == b; }
bool op_eq(int a, int b) { return a == b; }
bool op_ne(float a, float b) { return !(a == b); }
bool op_ne(int a, int b) { return a != b; }
bool op_lt(float a, float b) { return a < b; }
bool op_lt(int a, int b) { return a < b; }
bool op_le(float a, float b) { return a <= b; }
bool op_le(int a, int b) { return a <= b; }
bool op_gt(float a, float b) { return a > b; }
bool op_gt(int a, int b) { return a > b; }
bool op_ge(float a, float b) { return a >= b; }
bool op_ge(int a, int b) { return a >= b; }
bool truthy(float a) { return a != 0.0 || is_nan(a); }
bool truthy(int a) { return a != 0; }
bool op_logical_and(float a, float b) { return truthy(a) && truthy(b); }
bool op_logical_and(int a, int b) { return truthy(a) && truthy(b); }
bool op_logical_or(float a, float b) { return truthy(a) || truthy(b); }
bool op_logical_or(int a, int b) { return truthy(a) || truthy(b); }
bool op_logical_xor(float a, float b) { return truthy(a) != truthy(b); }
bool op_logical_xor(int a, int b) { return truthy(a) != truthy(b); }
int op_bitwise_and(int a, int b) { return a & b; }
int op_bitwise_or(int a, int b) { return a | b; }
int op_bitwise_xor(int a, int b) { return a ^ b; }
// Gradient helpers used by autograd (x, dy).
float op_relu_backward(float x, float g) { return x > 0.0 ? g : 0.0; }
float op_sigmoid_backward(float y, float g) { return g * y * (1.0 - y); }
float op_tanh_backward(float y, float g) { return g * (1.0 - y * y); }

// With a scalar, the one tensor input is operand 1.
#ifdef SCALAR_A
#define LOAD_A(off) CT1(u_scalar_value())
#define LOAD_B(off) load1(off[1])
#elif defined(SCALAR_B)
#define LOAD_A(off) load1(off[1])
#define LOAD_B(off) CT1(u_scalar_value())
#else
#define LOAD_A(off) load1(off[1])
#define LOAD_B(off) load2(off[2])
#endif

#ifdef SCALAR_INT
int u_scalar_value() { return u_iscalar; }
#else
float u_scalar_value() { return u_scalar; }
#endif

CT0 compute(uint off[NOPS]) { return CT0(OP(LOAD_A(off), LOAD_B(off))); }

#ifdef F16V
// F16V (Precision::f16_allowed, f16 operands): the ops' f16 forms, two elements at a time in
// f16vec2 arithmetic; off[j] is operand j's word index (glsl/common/elementwise.glsl).
f16vec2 op16_add(f16vec2 a, f16vec2 b) { return a + b; }
f16vec2 op16_add_alpha(f16vec2 a, f16vec2 b) { return a + float16_t(u_alpha) * b; }
f16vec2 op16_sub(f16vec2 a, f16vec2 b) { return a - b; }
f16vec2 op16_mul(f16vec2 a, f16vec2 b) { return a * b; }
f16vec2 op16_div(f16vec2 a, f16vec2 b) { return a / b; }
#ifdef SCALAR_A
#define LOAD16_A(off) f16vec2(float16_t(u_scalar))
#define LOAD16_B(off) unpackFloat2x16(t1[off[1]])
#elif defined(SCALAR_B)
#define LOAD16_A(off) unpackFloat2x16(t1[off[1]])
#define LOAD16_B(off) f16vec2(float16_t(u_scalar))
#else
#define LOAD16_A(off) unpackFloat2x16(t1[off[1]])
#define LOAD16_B(off) unpackFloat2x16(t2[off[2]])
#endif
uint compute16(uint off[NOPS]) { return packFloat2x16(OP16(LOAD16_A(off), LOAD16_B(off))); }
#endif

#include "elementwise.glsl"
