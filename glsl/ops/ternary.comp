// Ternary elementwise ops with broadcasting: operand 0 = output, 1..3 = inputs.
// where(cond, a, b) (ONNX Where / torch.where); lerp(a, b, w) = a + w * (b - a);
// addcmul(a, b, c) = a + u_p0 * b * c; clamp_t(x, lo, hi) with tensor bounds.

uniform float u_p0;

float op_where(CT1 c, float a, float b) { return c != CT1(0) ? a : b; }
int op_where(CT1 c, int a, int b) { return c != CT1(0) ? a : b; }
float op_lerp(float a, float b, float w) { return a + w * (b - a); }
float op_addcmul(float a, float b, float c) { return a + u_p0 * b * c; }
float op_addcdiv(float a, float b, float c) { return a + u_p0 * b / c; }
float op_clamp_t(float x, float lo, float hi) { return is_nan(x) ? x : min(max(x, lo), hi); }
int op_clamp_t(int x, int lo, int hi) { return min(max(x, lo), hi); }

CT0 compute(uint off[NOPS]) { return CT0(OP(load1(off[1]), load2(off[2]), load3(off[3]))); }

#include "elementwise.glsl"
