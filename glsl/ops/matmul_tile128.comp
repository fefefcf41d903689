// The 128x128 tiled matmul kernel (MatmulPlan::Kernel::tile128; scalar loads, any strides and
// sizes): BK = 8, each invocation an 8x8 block read from shared memory as vec4s (rows
// 4 ty .. 4 ty + 3 and 64 + 4 ty .., columns likewise), next K-tile prefetched into registers
// while the current one is multiplied. The shared part, epilogue and split-K in matmul.glsl.
layout(local_size_x = 16, local_size_y = 16) in;

#include "matmul.glsl"

#define BM 128u
#define BK 8u
shared vec4 As[BK][BM / 4u];
shared vec4 Bs[BK][BM / 4u];

void main() {
  Part pt = part();
  uvec3 bo = batch_offsets(pt.z);
  uint a_off = bo.x, b_off = bo.y, d_off = bo.z;
  uint kend = pt.k1;
  uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  uint tid = ty * 16u + tx;
  uint m0 = WORKGROUP_ID.y * BM, n0 = WORKGROUP_ID.x * BM;
  vec4 acc[8][2];
  for (int i = 0; i < 8; ++i) {
    acc[i][0] = vec4(0.0);
    acc[i][1] = vec4(0.0);
  }
#ifdef F16_MATH
  f16vec4 hacc[8][2];
  for (int i = 0; i < 8; ++i) {
    hacc[i][0] = f16vec4(0.0);
    hacc[i][1] = f16vec4(0.0);
  }
#endif
  // Global -> register staging: 4 elements of A (rows am + 32 r, column ak) and of B.
  uint am = tid / 8u, ak = tid % 8u;  // A tile 128 x 8: thread reads rows am, am+32, am+64, am+96
  uint bk = tid / 32u, bn = tid % 32u;  // B tile 8 x 128: thread reads columns bn, bn+32, ...
  float ra[4], rb[4];
  for (uint r = 0u; r < 4u; ++r) {
    uint gm = m0 + am + 32u * r, gk = pt.k0 + ak;
    ra[r] = A_ELEM(a_off, gm, gk, kend);
    uint gn = n0 + bn + 32u * r, gkb = pt.k0 + bk;
    rb[r] = B_ELEM(b_off, gkb, gn, kend);
  }
  for (uint k0 = pt.k0; LOOP(k0 < kend); k0 += BK) {
    // registers -> shared (scalar writes into the vec4 arrays)
    for (uint r = 0u; r < 4u; ++r) {
      uint m = am + 32u * r, n = bn + 32u * r;
      As[ak][m / 4u][m % 4u] = ra[r];
      Bs[bk][n / 4u][n % 4u] = rb[r];
    }
    workgroup_sync();
    // prefetch the next tile into registers
    uint k1 = k0 + BK;
    if (k1 < kend) {
      for (uint r = 0u; r < 4u; ++r) {
        uint gm = m0 + am + 32u * r, gk = k1 + ak;
        ra[r] = A_ELEM(a_off, gm, gk, kend);
        uint gkb = k1 + bk, gn = n0 + bn + 32u * r;
        rb[r] = B_ELEM(b_off, gkb, gn, kend);
      }
    }
    for (uint kk = 0u; kk < BK; ++kk) {
      HVEC a0 = TO_H(As[kk][ty]), a1 = TO_H(As[kk][16u + ty]);
      HVEC b0 = TO_H(Bs[kk][tx]), b1 = TO_H(Bs[kk][16u + tx]);
      for (int i = 0; i < 4; ++i) {
        HACC[i][0] += a0[i] * b0;
        HACC[i][1] += a0[i] * b1;
        HACC[4 + i][0] += a1[i] * b0;
        HACC[4 + i][1] += a1[i] * b1;
      }
    }
#ifdef F16_MATH
    if (((k0 - pt.k0) / BK + 1u) % (F16_BLOCK / BK) == 0u || k0 + BK >= kend) {
      for (int i = 0; i < 8; ++i) {
        acc[i][0] += vec4(hacc[i][0]);
        acc[i][1] += vec4(hacc[i][1]);
        hacc[i][0] = f16vec4(0.0);
        hacc[i][1] = f16vec4(0.0);
      }
    }
#endif
    workgroup_sync();
  }
  uint c_off = pt.c_off;
  for (uint i = 0u; i < 8u; ++i) {
    uint m = m0 + (i < 4u ? 4u * ty + i : 64u + 4u * ty + (i - 4u));
    if (m >= u_M) continue;
    for (uint h = 0u; h < 2u; ++h)
      for (uint j = 0u; j < 4u; ++j) {
        uint n = n0 + h * 64u + 4u * tx + j;
        if (n >= u_N) continue;
        float v = u_alpha * acc[i][h][j];
#ifdef ADDEND
        v += u_beta * float(load3(d_off + m * u_d_sm + n * u_d_sn));
#endif
        store0(c_off + m * u_N + n, CT0(ACT(v)));
      }
  }
}
