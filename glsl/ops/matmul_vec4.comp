// The 64x128 quad-load matmul kernel (MatmulPlan::Kernel::vec4); the shared part, epilogue
// and split-K in matmul.glsl.
layout(local_size_x = LOCAL_X) in;

#include "matmul.glsl"

// VEC4: BM x BN tiles (BM = 64, BN = 128), BK = 8, LOCAL_X = (BM/8)(BN/8) = 128 invocations,
// each computing an 8x8 block (rows 4ty.. and BM/2+4ty.., columns 4tx.. and BN/2+4tx.., so that
// shared reads are conflict-free vec4s). The host picks it only for whole tiles (M, N, K
// multiples of BM, BN, BK): no bounds checks. Operands are read as quads of 4 consecutive
// elements along their contiguous dim, quadA(i) / quadB(i) taking quad indices (128-bit loads
// for f32, 64-bit for f16/bf16): K for A_KMAJOR (row-major A) and B_KMAJOR (a transposed B, as in
// linear), else M / N; u_qa_s / u_qb_s are the quad strides of the other dim. A is kept
// transposed in shared memory so both operands are read as vec4s; the next K-tile is loaded
// into registers while the current one is multiplied (double-buffered shared memory, one
// barrier per K-tile). Measured against other tile shapes in bench/kernel_lab.cpp.
// SLICE_K: 2 x 128 invocations; slice s (invocations 128s..) computes the tile over the K half
// [s K/2, (s+1) K/2) with its own shared buffers, and slice 1 hands its accumulators to slice
// 0 through shared memory at the end (sliced K: twice the workgroups' invocations per tile, so
// that few tiles fill a GPU's waves; bench/RESULTS.md). NT = invocations per slice.
#define BK 8u
#define NT 128u
#define TX (BN / 8u)
#define TY (BM / 8u)
#define KV (BK / 4u)
#define LA (BM * KV / NT)
#define LB (BN * KV / NT)
#ifdef SLICE_K
#define NSL 2u
#else
#define NSL 1u
#endif
#define LID (gl_LocalInvocationID.x % NT)  // invocation within its slice
#define SLICE (gl_LocalInvocationID.x / NT)
#include "matmul_quads.glsl"
shared vec4 As[NSL][2][BK][BM / 4u];
shared vec4 Bs[NSL][2][BK][BN / 4u];

vec4 fetch_a(uint l, uint m0, uint k0, uint qbase) {
  uint e = LID + NT * l;
#if A_KMAJOR
  return quadA(qbase + (m0 + e / KV) * u_qa_s + k0 / 4u + e % KV);
#else
  return quadA(qbase + (k0 + e / (BM / 4u)) * u_qa_s + m0 / 4u + e % (BM / 4u));
#endif
}
void put_a(uint buf, uint l, vec4 v) {
  uint e = LID + NT * l;
#if A_KMAJOR
  uint m = e / KV, q = e % KV;
  for (uint j = 0u; j < 4u; ++j) As[SLICE][buf][4u * q + j][m / 4u][m % 4u] = v[j];
#else
  As[SLICE][buf][e / (BM / 4u)][e % (BM / 4u)] = v;
#endif
}
vec4 fetch_b(uint l, uint n0, uint k0, uint qbase) {
  uint e = LID + NT * l;
#if B_KMAJOR
  return quadB(qbase + (n0 + e / KV) * u_qb_s + k0 / 4u + e % KV);
#else
  return quadB(qbase + (k0 + e / (BN / 4u)) * u_qb_s + n0 / 4u + e % (BN / 4u));
#endif
}
void put_b(uint buf, uint l, vec4 v) {
  uint e = LID + NT * l;
#if B_KMAJOR
  uint n = e / KV, q = e % KV;
  for (uint j = 0u; j < 4u; ++j) Bs[SLICE][buf][4u * q + j][n / 4u][n % 4u] = v[j];
#else
  Bs[SLICE][buf][e / (BN / 4u)][e % (BN / 4u)] = v;
#endif
}
void main() {
  Part pt = part();
  uvec3 bo = batch_offsets(pt.z);
  uint tid = LID, tx = tid % TX, ty = tid / TX, sl = SLICE;
  uint m0 = WORKGROUP_ID.y * BM, n0 = WORKGROUP_ID.x * BN;
  uint qa = bo.x / 4u, qb = bo.y / 4u;
  vec4 acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = vec4(0.0);
#ifdef F16_MATH
  f16vec4 hacc[16];
  for (int i = 0; i < 16; ++i) hacc[i] = f16vec4(0.0);
#endif
  vec4 ra[LA], rb[LB];
  uint nk = (pt.k1 - pt.k0) / BK / NSL, kb = pt.k0 + sl * nk * BK;  // this slice's K-tiles start at kb
  for (uint l = 0u; l < LA; ++l) ra[l] = fetch_a(l, m0, kb, qa);
  for (uint l = 0u; l < LB; ++l) rb[l] = fetch_b(l, n0, kb, qb);
  for (uint l = 0u; l < LA; ++l) put_a(0u, l, ra[l]);
  for (uint l = 0u; l < LB; ++l) put_b(0u, l, rb[l]);
  workgroup_sync();
  for (uint t = 0u; LOOP(t < nk); ++t) {
    uint cur = t & 1u;
    if (t + 1u < nk) {
      for (uint l = 0u; l < LA; ++l) ra[l] = fetch_a(l, m0, kb + (t + 1u) * BK, qa);
      for (uint l = 0u; l < LB; ++l) rb[l] = fetch_b(l, n0, kb + (t + 1u) * BK, qb);
    }
#ifdef UNROLL_K
    // Written out per k and row (no loops), so that acc is only indexed by constants (NVIDIA's
    // intermediate code keeps the looped form's acc[] in local memory, indexed per iteration;
    // which form runs faster depends on the shape, so the host's tuner measures both).
#define FMA_ROW(i, C)           \
  HACC[2 * i] += a0.C * b0;     \
  HACC[2 * i + 1] += a0.C * b1; \
  HACC[8 + 2 * i] += a1.C * b0; \
  HACC[9 + 2 * i] += a1.C * b1;
#define K_STEP(k)                                                               \
  {                                                                             \
    HVEC a0 = TO_H(As[sl][cur][k][ty]), a1 = TO_H(As[sl][cur][k][TY + ty]);     \
    HVEC b0 = TO_H(Bs[sl][cur][k][tx]), b1 = TO_H(Bs[sl][cur][k][TX + tx]);     \
    FMA_ROW(0, x) FMA_ROW(1, y) FMA_ROW(2, z) FMA_ROW(3, w)                     \
  }
    K_STEP(0u) K_STEP(1u) K_STEP(2u) K_STEP(3u) K_STEP(4u) K_STEP(5u) K_STEP(6u) K_STEP(7u)  // BK = 8
#else
    for (uint k = 0u; k < BK; ++k) {
      HVEC a0 = TO_H(As[sl][cur][k][ty]), a1 = TO_H(As[sl][cur][k][TY + ty]);
      HVEC b0 = TO_H(Bs[sl][cur][k][tx]), b1 = TO_H(Bs[sl][cur][k][TX + tx]);
      for (int i = 0; i < 4; ++i) {
        HACC[2 * i] += a0[i] * b0;
        HACC[2 * i + 1] += a0[i] * b1;
        HACC[8 + 2 * i] += a1[i] * b0;
        HACC[9 + 2 * i] += a1[i] * b1;
      }
    }
#endif
#ifdef F16_MATH
    if ((t + 1u) % (F16_BLOCK / BK) == 0u || t + 1u == nk) {
      for (int i = 0; i < 16; ++i) {
        acc[i] += vec4(hacc[i]);
        hacc[i] = f16vec4(0.0);
      }
    }
#endif
    if (t + 1u < nk) {
      for (uint l = 0u; l < LA; ++l) put_a(cur ^ 1u, l, ra[l]);
      for (uint l = 0u; l < LB; ++l) put_b(cur ^ 1u, l, rb[l]);
    }
    workgroup_sync();
  }
#ifdef SLICE_K
  // Slice 1's accumulators into slice 0's, 8 per invocation at a time through Bs (1024 quads).
#define BS_FLAT(f) Bs[(f) / 512u][((f) / 256u) % 2u][((f) / 32u) % 8u][(f) % 32u]
#define PUT(i, r) BS_FLAT(uint(i) * NT + tid) = acc[8 * r + i];
#define ADD(i, r) acc[8 * r + i] += BS_FLAT(uint(i) * NT + tid);
#define ALL8(X, r) X(0, r) X(1, r) X(2, r) X(3, r) X(4, r) X(5, r) X(6, r) X(7, r)
#define HAND(r)                 \
  if (sl == 1u) { ALL8(PUT, r) } \
  workgroup_sync();             \
  if (sl == 0u) { ALL8(ADD, r) } \
  workgroup_sync();
  HAND(0)
  HAND(1)
  if (sl != 0u) return;
#endif
  uint c_off = pt.c_off;
  uint d_off = bo.z;
  uint ma = m0 + 4u * ty, mb = m0 + BM / 2u + 4u * ty, na = n0 + 4u * tx, nb = n0 + BN / 2u + 4u * tx;
  EPI_ROWS(0)
  EPI_ROWS(1)
  EPI_ROWS(2)
  EPI_ROWS(3)
}
