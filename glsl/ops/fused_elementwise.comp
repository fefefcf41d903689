// A generated elementwise expression over up to 6 broadcast inputs (the model planner's
// fuse_elementwise: chains of Add, Mul, activations, ... in one dispatch), into one output.
// Operand 0 = output, 1..NOPS-1 = the inputs (broadcast to the output by the host: stride 0),
// loaded as float whatever their storage dtype (f32, f16).
// Host defines: FUSED_BODY, the expression's statements (src/ops/fused_elementwise.cpp,
// render_fused_glsl): `PRECISE float vK = ...;` per step over loadN(off[N]), the functions below
// and glsl/common/activations.glsl, ending in `return CT0(vLAST);`.
// Every step is `precise`: no a * b + c contracted into an FMA, so that each step rounds as the
// unfused op's own dispatch does (GLSL ES 3.10 has no `precise`: there it is left to the driver).

#if !defined(GL_ES) || __VERSION__ >= 320
#define PRECISE precise
#else
#define PRECISE
#endif

#include "activations.glsl"

// The unfused ops' formulas (unary.comp's op_neg/op_abs/op_exp, binary.comp's op_div, the
// clamp of unary.comp's op_clamp = act_clip), so that results match bit for bit.
float f_neg(float x) { return -x; }
float f_abs(float x) { return abs(x); }
float f_exp(float x) { return exp(x); }
float f_div(float a, float b) { return div_rn(a, b); }
// A value rounded to f16 (an f16 node's intermediate, as its unfused store rounds it).
float f_round_f16(float x) { return f16_bits_to_f32(f32_to_f16_bits(x)); }

CT0 compute(uint off[NOPS]) { FUSED_BODY }

#include "elementwise.glsl"
