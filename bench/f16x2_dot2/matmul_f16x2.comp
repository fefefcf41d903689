// EXPERIMENT (issue 20), not built into the library: matmul_f16x2.comp with pairs along K
// ("dot2"), loaded in place of the built-in kernel with GLTENSOR_GLSL_DIR=bench/f16x2_dot2
// (GLTENSOR_PRECISION=f16-matmul GLTENSOR_F16_MATMUL=f16x2; scripts/gpu_run.sh phase f16mm).
// Same interface, tiles, staging from global memory and f32 epilogue as the built-in kernel; A
// and B are staged as f16 pairs of neighbouring K values (uvec4 = 4 rows / columns), so that each
// f16vec2 FMA multiplies two vectors with no broadcast: h(i, j) += a(i, k:k+2) * b(k:k+2, j), the
// even and odd K values summed apart and added at the f32 flush (64 f16vec2 accumulators).
layout(local_size_x = LOCAL_X) in;

#include "matmul.glsl"

#define BK 16u
#define NT 128u
#define TX (BN / 8u)
#define TY (BM / 8u)
#define KV (BK / 4u)
#define LA (BM * KV / NT)
#define LB (BN * KV / NT)
#define LID gl_LocalInvocationID.x
#include "matmul_quads.glsl"
shared uvec4 As[2][BK / 2u][BM / 4u];
shared uvec4 Bs[2][BK / 2u][BN / 4u];
uvec2 ra[LA], rb[LB];  // the next tile's words, staged in registers

// Quad q of an operand as two words of f16 pairs.
uvec2 words_a(uint q) {
#if A_F16
  return qA[q];
#else
  vec4 v = quadA(q);
  return uvec2(packHalf2x16(v.xy), packHalf2x16(v.zw));
#endif
}
uvec2 words_b(uint q) {
#if B_F16
  return qB[q];
#else
  vec4 v = quadB(q);
  return uvec2(packHalf2x16(v.xy), packHalf2x16(v.zw));
#endif
}

// Quad l of this invocation's share of the tile at k0. K-major: quad e holds 4 K values of one
// row (column); else quads l and l + 1 (l even) are K values 2 kp and 2 kp + 1 of 4 rows (columns).
void fetch(uint m0, uint n0, uint k0, uint qa, uint qb) {
  for (uint l = 0u; l < LA; ++l) {
#if A_KMAJOR
    uint e = LID + NT * l;
    ra[l] = words_a(qa + (m0 + e / KV) * u_qa_s + k0 / 4u + e % KV);
#else
    uint c = LID + NT * (l / 2u), kp = c / (BM / 4u);
    ra[l] = words_a(qa + (k0 + 2u * kp + l % 2u) * u_qa_s + m0 / 4u + c % (BM / 4u));
#endif
  }
  for (uint l = 0u; l < LB; ++l) {
#if B_KMAJOR
    uint e = LID + NT * l;
    rb[l] = words_b(qb + (n0 + e / KV) * u_qb_s + k0 / 4u + e % KV);
#else
    uint c = LID + NT * (l / 2u), kp = c / (BN / 4u);
    rb[l] = words_b(qb + (k0 + 2u * kp + l % 2u) * u_qb_s + n0 / 4u + c % (BN / 4u));
#endif
  }
}

// Two quads x (K value 2 kp) and y (2 kp + 1) of 4 rows as the words (x_j, y_j) of rows j = 0..3.
uvec4 interleave(uvec2 x, uvec2 y) {
  return uvec4((x.x & 0xffffu) | (y.x << 16u), (x.x >> 16u) | (y.x & 0xffff0000u), (x.y & 0xffffu) | (y.y << 16u),
               (x.y >> 16u) | (y.y & 0xffff0000u));
}

void put(uint buf) {
#if A_KMAJOR
  for (uint l = 0u; l < LA; ++l) {
    uint e = LID + NT * l, m = e / KV, kp = 2u * (e % KV);
    As[buf][kp][m / 4u][m % 4u] = ra[l].x;
    As[buf][kp + 1u][m / 4u][m % 4u] = ra[l].y;
  }
#else
  for (uint l = 0u; l < LA; l += 2u) {
    uint c = LID + NT * (l / 2u);
    As[buf][c / (BM / 4u)][c % (BM / 4u)] = interleave(ra[l], ra[l + 1u]);
  }
#endif
#if B_KMAJOR
  for (uint l = 0u; l < LB; ++l) {
    uint e = LID + NT * l, n = e / KV, kp = 2u * (e % KV);
    Bs[buf][kp][n / 4u][n % 4u] = rb[l].x;
    Bs[buf][kp + 1u][n / 4u][n % 4u] = rb[l].y;
  }
#else
  for (uint l = 0u; l < LB; l += 2u) {
    uint c = LID + NT * (l / 2u);
    Bs[buf][c / (BN / 4u)][c % (BN / 4u)] = interleave(rb[l], rb[l + 1u]);
  }
#endif
}

void main() {
  Part pt = part();
  uvec3 bo = batch_offsets(pt.z);
  uint tx = LID % TX, ty = LID / TX;
  uint m0 = WORKGROUP_ID.y * BM, n0 = WORKGROUP_ID.x * BN;
  uint qa = bo.x / 4u, qb = bo.y / 4u;
  // acc[2 r + c]: f32 sums of block row r at column quad c (as the built-in kernel);
  // h[8 r + j]: f16 partial sums of row r, column j (4 tx.. then BN / 2 + 4 tx..), even K in x, odd in y.
  vec4 acc[16];
  f16vec2 h[64];
  for (int i = 0; i < 16; ++i) acc[i] = vec4(0.0);
  for (int i = 0; i < 64; ++i) h[i] = f16vec2(0.0);
  uint nk = (pt.k1 - pt.k0) / BK;
  fetch(m0, n0, pt.k0, qa, qb);
  put(0u);
  workgroup_sync();
  for (uint t = 0u; LOOP(t < nk); ++t) {
    uint cur = t & 1u;
    if (t + 1u < nk) fetch(m0, n0, pt.k0 + (t + 1u) * BK, qa, qb);
    for (uint kp = 0u; kp < BK / 2u; ++kp) {
      uvec4 wa = As[cur][kp][ty], wa2 = As[cur][kp][TY + ty], wb = Bs[cur][kp][tx], wb2 = Bs[cur][kp][TX + tx];
      f16vec2 b0 = unpackFloat2x16(wb.x), b1 = unpackFloat2x16(wb.y), b2 = unpackFloat2x16(wb.z),
              b3 = unpackFloat2x16(wb.w), b4 = unpackFloat2x16(wb2.x), b5 = unpackFloat2x16(wb2.y),
              b6 = unpackFloat2x16(wb2.z), b7 = unpackFloat2x16(wb2.w);
#define ROW(r, w)                             \
  {                                           \
    f16vec2 a = unpackFloat2x16(w);           \
    h[8 * r] += a * b0;                       \
    h[8 * r + 1] += a * b1;                   \
    h[8 * r + 2] += a * b2;                   \
    h[8 * r + 3] += a * b3;                   \
    h[8 * r + 4] += a * b4;                   \
    h[8 * r + 5] += a * b5;                   \
    h[8 * r + 6] += a * b6;                   \
    h[8 * r + 7] += a * b7;                   \
  }
      ROW(0, wa.x) ROW(1, wa.y) ROW(2, wa.z) ROW(3, wa.w) ROW(4, wa2.x) ROW(5, wa2.y) ROW(6, wa2.z) ROW(7, wa2.w)
    }
    if ((t + 1u) % (F16_BLOCK / BK) == 0u || t + 1u == nk) {
      for (int r = 0; r < 8; ++r)
        for (int q = 0; q < 2; ++q) {
          vec4 s;
          for (int j = 0; j < 4; ++j) {
            vec2 v = vec2(h[8 * r + 4 * q + j]);
            s[j] = v.x + v.y;
            h[8 * r + 4 * q + j] = f16vec2(0.0);
          }
          acc[2 * r + q] += s;
        }
    }
    if (t + 1u < nk) put(cur ^ 1u);
    workgroup_sync();
  }
  uint c_off = pt.c_off;
  uint d_off = bo.z;
  uint ma = m0 + 4u * ty, mb = m0 + BM / 2u + 4u * ty, na = n0 + 4u * tx, nb = n0 + BN / 2u + 4u * tx;
  EPI_ROWS(0)
  EPI_ROWS(1)
  EPI_ROWS(2)
  EPI_ROWS(3)
}
