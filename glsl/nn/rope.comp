// Rotary position embeddings (Su et al. 2021, "RoFormer: Enhanced Transformer with Rotary Position
// Embedding"), src/nn/transformer.cpp. x is [rows, D] with rows = (..., T), contiguous, or with
// STRIDED any view: row r starts at row_bases(r).x (rows.glsl: the leading dims' strides) and its
// elements are u_in_step apart; the output is contiguous. The position of row r is
// u_offset + (r % T), or with HAS_POS the integer positions[b * T + r % T] (POS_BATCH: one row of
// positions per batch b = r / u_rows_per_batch) or positions[r % T].
//
// Pair k < R / 2 (R = rotary dim) rotates by angle pos * base^(-2k / R) (f32; the angle is reduced
// to [-pi, pi] before cos / sin):
//   half-split (GPT-NeoX, llama's rotate_half): elements (k, k + R / 2)
//   INTERLEAVED (GPT-J, RoFormer):               elements (2k, 2k + 1)
//   out_a = x_a cos - x_b sin,  out_b = x_b cos + x_a sin
// u_sign = -1 rotates by the negative angle (the backward: the transposed rotation). Elements
// past R are copied. One invocation per pair or copied element: rows * (R / 2 + D - R).
// Operands: 0 = out, 1 = x, 2 = positions (HAS_POS).
// Loops: row_bases' KD dims (STRIDED).
layout(local_size_x = LOCAL_X) in;

uniform uint u_count;  // rows * u_per_row
uniform uint u_per_row;  // R / 2 + D - R
uniform uint u_D;
uniform uint u_half;  // R / 2
uniform uint u_T;
uniform int u_offset;
uniform float u_freq_exp;  // -2 log2(base) / R: inv_freq(k) = exp2(k * u_freq_exp)
uniform float u_sign;
#ifdef POS_BATCH
uniform uint u_rows_per_batch;
#endif
#ifdef STRIDED
#include "rows.glsl"
uniform uint u_in_step;
#define IN(e) (in_base + (e) * u_in_step)
#else
#define IN(e) (base + (e))
#endif

void main() {
  uint i = GLOBAL_ID_1D;
  if (i >= u_count) return;
  uint row = i / u_per_row;
  uint k = i - row * u_per_row;
  uint base = row * u_D;
#ifdef STRIDED
  uint in_base = row_bases(row).x;
#endif
  if (k >= u_half) {  // past the rotary dims
    uint e = u_half + k;  // R + (k - R / 2)
    store0(base + e, CT0(float(load1(IN(e)))));
    return;
  }
  uint t = row % u_T;
#ifdef HAS_POS
#ifdef POS_BATCH
  int pos = int(load2((row / u_rows_per_batch) * u_T + t));
#else
  int pos = int(load2(t));
#endif
  pos += u_offset;
#else
  int pos = u_offset + int(t);
#endif
  float angle = float(pos) * exp2(float(k) * u_freq_exp);
  // Cody-Waite reduction by 2 pi = 6.28125 + 1.9353071795864769e-3 (n * 6.28125 exact for
  // |n| < 2^15), so cos / sin see arguments in [-pi, pi] where GPUs' approximations are accurate.
  float n = floor(angle * 0.15915494309189535 + 0.5);
  float r = (angle - n * 6.28125) - n * 1.9353071795864769e-3;
  float c = cos(r), s = sin(r) * u_sign;
#ifdef INTERLEAVED
  uint a = 2u * k, b = a + 1u;
#else
  uint a = k, b = a + u_half;
#endif
  float xa = float(load1(IN(a))), xb = float(load1(IN(b)));
  store0(base + a, CT0(xa * c - xb * s));
  store0(base + b, CT0(xb * c + xa * s));
}
