// Batched matmul with few rows, C = act(alpha * A @ B + beta * D) (GEMV: batch-1 decoding's
// linear layers on GPUs; src/ops/matmul_plan.hpp chooses it). Operands, uniforms, batch dims,
// SPLIT_K and the epilogue as in glsl/ops/matmul.glsl (the tiled kernels): A [M, K], B [K, N]
// and the addend D [M, N] read through strides, C contiguous [batch..., M, N] (with SPLIT_K the raw partial
// product of this split's K range at C[s][batch][M][N]; the host sums the splits and applies the
// epilogue).
// Workgroup (WORKGROUP_ID.x, .y, .z) computes an RM x NF block of C (rows m0.., output features
// n0..) of batch entry (and split) z. Its LOCAL_X invocations split the K range: invocation t
// takes K quads k0 + 4t, k0 + 4(t + LOCAL_X), ... (neighbours read neighbouring 16-byte words
// where B is K-major, as linear's w.t() is), keeping RM * NF partial dot products in f32, summed
// by a tree in shared memory (no subgroup operations: they are optional in GL ES).
// Rows and features past the edge are clamped to the last one (loads in bounds) and not stored;
// K past the range reads as 0 in both operands (never a NaN's or Inf's partner), from loads
// clamped into the range (no load past a tensor's end, even a discarded one).
// A_Q: 1 = A read as quads along K (quadA; offsets and row strides multiples of 4, unit K
// stride), 0 = elements (load1). B_Q: 2 = B read as quads along K (quadB), 0 = elements (load2).
// K ranges start at multiples of 4 (SPLIT_K chunks are multiples of 16), so quads stay aligned;
// the last, partial quad of a range is read as elements.
layout(local_size_x = LOCAL_X) in;

uniform uint u_M;
uniform uint u_N;
uniform uint u_K;
uniform uint u_bshape[BD];
uniform uint u_bstride_a[BD];
uniform uint u_bstride_b[BD];
uniform uint u_bstride_d[BD];
uniform uint u_a_off;
uniform uint u_b_off;
uniform uint u_d_off;
uniform uint u_a_sm;
uniform uint u_a_sk;
uniform uint u_b_sk;
uniform uint u_b_sn;
uniform uint u_d_sm;
uniform uint u_d_sn;
uniform float u_alpha;
uniform float u_beta;
uniform float u_act_p0;  // activation parameters (ACT's expression may use them)
uniform float u_act_p1;
uniform float u_act_scale;  // the epilogue's affine after the activation (ACT's expression may use them)
uniform float u_act_shift;
uniform uint u_kchunk;  // SPLIT_K: K per split (a multiple of 16)
uniform uint u_nsplit;  // SPLIT_K: splits per batch entry

#include "activations.glsl"
#ifndef ACT
#define ACT(x) (x)
#endif

#define NACC (RM * NF)
shared float s_red[NACC * LOCAL_X];

// Element offsets of batch entry z in A (x), B (y) and D (z).
uvec3 batch_offsets(uint z) {
  uvec3 off = uvec3(u_a_off, u_b_off, u_d_off);
#ifndef NO_BATCH
  for (int d = BD - 1; d > 0; --d) {
    uint i = z % u_bshape[d];
    z /= u_bshape[d];
    off += i * uvec3(u_bstride_a[d], u_bstride_b[d], u_bstride_d[d]);
  }
  off += z * uvec3(u_bstride_a[0], u_bstride_b[0], u_bstride_d[0]);
#endif
  return off;
}

// A[row at `off`][k .. k+3] (k < k1), 0 past k1. Every load stays inside the range: the element
// form's indices past k1 - 1 are clamped to it and their values replaced by 0 (a select, so a
// NaN or Inf there never reaches the sum), not loads guarded by a ternary that a compiler may
// evaluate speculatively past the tensor's end (3 rows of a row-major B).
vec4 a_quad(uint off, uint k, uint k1) {
#if A_Q == 1
  if (k + 4u <= k1) return quadA((off + k) >> 2);
#endif
  uint kl = k1 - 1u;  // k < k1: the range's last element, inside A
  vec4 v = vec4(float(load1(off + k * u_a_sk)), float(load1(off + min(k + 1u, kl) * u_a_sk)),
                float(load1(off + min(k + 2u, kl) * u_a_sk)), float(load1(off + min(k + 3u, kl) * u_a_sk)));
  return mix(vec4(0.0), v, lessThan(uvec4(k) + uvec4(0u, 1u, 2u, 3u), uvec4(k1)));
}

// B[k .. k+3][column at `off`] (k < k1), 0 past k1; loads clamped as a_quad's.
vec4 b_quad(uint off, uint k, uint k1) {
#if B_Q == 2
  if (k + 4u <= k1) return quadB((off + k) >> 2);
#endif
  uint kl = k1 - 1u;
  vec4 v = vec4(float(load2(off + k * u_b_sk)), float(load2(off + min(k + 1u, kl) * u_b_sk)),
                float(load2(off + min(k + 2u, kl) * u_b_sk)), float(load2(off + min(k + 3u, kl) * u_b_sk)));
  return mix(vec4(0.0), v, lessThan(uvec4(k) + uvec4(0u, 1u, 2u, 3u), uvec4(k1)));
}

void main() {
  uint t = gl_LocalInvocationID.x;
#ifdef SPLIT_K
  uint z = WORKGROUP_ID.z / u_nsplit, s = WORKGROUP_ID.z - z * u_nsplit;
  uint k0 = s * u_kchunk, k1 = min(u_K, k0 + u_kchunk);
  uint c_off = (s * (u_grid.z / u_nsplit) + z) * u_M * u_N;
#else
  uint z = WORKGROUP_ID.z, k0 = 0u, k1 = u_K;
  uint c_off = z * u_M * u_N;
#endif
  uvec3 bo = batch_offsets(z);
  uint m0 = WORKGROUP_ID.y * RM, n0 = WORKGROUP_ID.x * NF;
  uint ra[RM], cn[NF];
  for (uint r = 0u; r < RM; ++r) ra[r] = bo.x + min(m0 + r, u_M - 1u) * u_a_sm;
  for (uint f = 0u; f < NF; ++f) cn[f] = bo.y + min(n0 + f, u_N - 1u) * u_b_sn;
  float acc[NACC];
  for (uint i = 0u; i < NACC; ++i) acc[i] = 0.0;
  for (uint k = k0 + 4u * t; LOOP(k < k1); k += 4u * LOCAL_X) {
    vec4 bv[NF];
    for (uint f = 0u; f < NF; ++f) bv[f] = b_quad(cn[f], k, k1);
    for (uint r = 0u; r < RM; ++r) {
      vec4 av = a_quad(ra[r], k, k1);
      for (uint f = 0u; f < NF; ++f) acc[r * NF + f] += dot(av, bv[f]);
    }
  }
  for (uint i = 0u; i < NACC; ++i) s_red[i * LOCAL_X + t] = acc[i];
  barrier();
  for (uint h = LOCAL_X / 2u; h > 0u; h >>= 1) {
    if (t < h)
      for (uint i = 0u; i < NACC; ++i) s_red[i * LOCAL_X + t] += s_red[i * LOCAL_X + t + h];
    barrier();
  }
  if (t >= NACC) return;
  uint m = m0 + t / NF, n = n0 + t % NF;
  if (m >= u_M || n >= u_N) return;
  float v = u_alpha * s_red[t * LOCAL_X];
#ifdef ADDEND
  v += u_beta * float(load3(bo.z + m * u_d_sm + n * u_d_sn));
#endif
  store0(c_off + m * u_N + n, CT0(ACT(v)));
}
