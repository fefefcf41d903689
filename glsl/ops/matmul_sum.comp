// matmul's split-K sum (src/ops/matmul.cpp; MatmulSumVariant, src/ops/matmul_variant.hpp): the
// splits' raw partial products P [u_nsplit, u_n] (f32, operand 1; u_n = batch x M x N outputs)
// summed in split order, one invocation per output, then the epilogue the matmul kernels apply
// (glsl/ops/matmul.glsl): C = ACT(u_alpha * sum + u_beta * D). One dispatch where the sum
// (reduce.comp) and the epilogue's ops took one to four, the partials read along their rows.
// ADDEND: D (operand 2) at u_d_off + m * u_d_sm + n * u_d_sn (one batch entry: the host's).
// TRANSPOSE: C written as [N, M] (one batch entry), element (m, n) at n * u_M + m: the transposed
// result without a copy (conv2d's weight gradient as (colsT @ gm)^T, src/nn/conv.cpp).
layout(local_size_x = LOCAL_X) in;

uniform uint u_n;
uniform uint u_M;
uniform uint u_N;
uniform uint u_nsplit;
uniform float u_alpha;
uniform float u_beta;
uniform uint u_d_off;
uniform uint u_d_sm;
uniform uint u_d_sn;
uniform float u_act_p0;  // activation parameters (ACT's expression may use them)
uniform float u_act_p1;
uniform float u_act_scale;  // the epilogue's affine after the activation
uniform float u_act_shift;

#include "activations.glsl"
#ifndef ACT
#define ACT(x) (x)
#endif

void main() {
  uint i = GLOBAL_ID_1D;
  if (i >= u_n) return;
  float s = 0.0;
  for (uint k = 0u; LOOP(k < u_nsplit); ++k) s += float(load1(k * u_n + i));
  s *= u_alpha;
#if defined(ADDEND) || defined(TRANSPOSE)
  uint m = i / u_N, n = i - m * u_N;
#endif
#ifdef ADDEND
  s += u_beta * float(load2(u_d_off + m * u_d_sm + n * u_d_sn));
#endif
#ifdef TRANSPOSE
  store0(n * u_M + m, ACT(s));
#else
  store0(i, ACT(s));
#endif
}
