// The 64x64 tiled matmul kernel (MatmulPlan::Kernel::tile64; scalar loads, any strides and
// sizes): BK = 16, 4x4 per invocation. The shared part, epilogue and split-K in matmul.glsl.
layout(local_size_x = 16, local_size_y = 16) in;

#include "matmul.glsl"

shared float As[16][65];
shared float Bs[16][65];

void main() {
  Part pt = part();
  uvec3 bo = batch_offsets(pt.z);
  uint a_off = bo.x, b_off = bo.y, d_off = bo.z;
  uint kend = pt.k1;
  uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  uint tid = ty * 16u + tx;
  uint m0 = WORKGROUP_ID.y * 64u, n0 = WORKGROUP_ID.x * 64u;
  float acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;
#ifdef F16_MATH
  f16vec4 hacc[4];  // hacc[i][j]: row i, column j
  for (int i = 0; i < 4; ++i) hacc[i] = f16vec4(0.0);
#endif

  // Register prefetch: the next K-tile's 4 + 4 values are loaded before this tile's products, so
  // a memory round trip overlaps the arithmetic (few workgroups over a long K, e.g. training's
  // [128, 784] x [784, 256], were one round trip per K-tile).
  float pa[4], pb[4];
  for (uint r = 0u; r < 4u; ++r) {
    uint e = tid + 256u * r;
    uint gm = m0 + e / 16u, gk = pt.k0 + e % 16u;
    pa[r] = A_ELEM(a_off, gm, gk, kend);
    uint gkb = pt.k0 + e / 64u, gn = n0 + e % 64u;
    pb[r] = B_ELEM(b_off, gkb, gn, kend);
  }
  for (uint k0 = pt.k0; LOOP(k0 < kend); k0 += 16u) {
    for (uint r = 0u; r < 4u; ++r) {
      uint e = tid + 256u * r;
      As[e % 16u][e / 16u] = pa[r];
      Bs[e / 64u][e % 64u] = pb[r];
    }
    workgroup_sync();
    uint k1 = k0 + 16u;
    for (uint r = 0u; r < 4u; ++r) {
      uint e = tid + 256u * r;
      uint gm = m0 + e / 16u, gk = k1 + e % 16u;
      pa[r] = A_ELEM(a_off, gm, gk, kend);
      uint gkb = k1 + e / 64u, gn = n0 + e % 64u;
      pb[r] = B_ELEM(b_off, gkb, gn, kend);
    }
    for (uint kk = 0u; kk < 16u; ++kk) {
      float a[4], b[4];
      for (uint i = 0u; i < 4u; ++i) a[i] = As[kk][ty + 16u * i];
      for (uint j = 0u; j < 4u; ++j) b[j] = Bs[kk][tx + 16u * j];
#ifdef F16_MATH
      f16vec4 hb = to_h4(vec4(b[0], b[1], b[2], b[3]));
      for (int i = 0; i < 4; ++i) hacc[i] += to_h1(a[i]) * hb;
#else
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
#endif
    }
#ifdef F16_MATH
    if (((k0 - pt.k0) / 16u + 1u) % (F16_BLOCK / 16u) == 0u || k0 + 16u >= kend) {
      for (int i = 0; i < 4; ++i) {
        vec4 f = vec4(hacc[i]);
        for (int j = 0; j < 4; ++j) acc[i][j] += f[j];
        hacc[i] = f16vec4(0.0);
      }
    }
#endif
    workgroup_sync();
  }
  uint c_off = pt.c_off;
  for (uint i = 0u; i < 4u; ++i) {
    uint m = m0 + ty + 16u * i;
    if (m >= u_M) continue;
    for (uint j = 0u; j < 4u; ++j) {
      uint n = n0 + tx + 16u * j;
      if (n >= u_N) continue;
      float v = u_alpha * acc[i][j];
#ifdef ADDEND
      v += u_beta * float(load3(d_off + m * u_d_sm + n * u_d_sn));
#endif
      store0(c_off + m * u_N + n, CT0(ACT(v)));
    }
  }
}
