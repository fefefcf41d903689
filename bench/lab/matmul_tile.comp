// matmul f32 (or f16 with F16), row-major, whole tiles: C[M,N] = A[M,K] B[K,N]
// (bench/kernel_lab.cpp, modes matmul and bisect). (BM/8)*(BN/8) invocations, each computing an
// 8x8 block (rows 4ty.. and BM/2+4ty.., columns 4tx.. and BN/2+4tx..) of a BM x BN tile. A is
// stored transposed in shared memory so both operands are read as vec4s; global loads are vec4s
// (uvec2 = 4 halves with F16). Chosen by the lab:
//   BM, BN, BK  tile (uint literals); NTL / NT = BM * BN / 64 invocations (int / uint literal)
//   PREFETCH    next K-tile loaded into registers during the current one's products, shared
//               memory double-buffered (one barrier per K-tile)
//   F16         A and B hold f16 (read as uvec2 quads)
//   LIB_STRIDES, LIB_BATCH, LIB_OUT, LIB_EPI: the library's VEC4 kernel's differences (as of
//               2026-11), one at a time (bisecting the lab/library gap)
#define TX (BN / 8u)
#define TY (BM / 8u)
layout(local_size_x = NTL) in;
#ifdef F16
layout(std430, binding = 0) readonly restrict buffer A_ { uvec2 A[]; };
layout(std430, binding = 1) readonly restrict buffer B_ { uvec2 B[]; };
vec4 ld(uvec2 u) { return vec4(unpackHalf2x16(u.x), unpackHalf2x16(u.y)); }
#define LDA(i) ld(A[i])
#define LDB(i) ld(B[i])
#else
layout(std430, binding = 0) readonly restrict buffer A_ { vec4 A[]; };
layout(std430, binding = 1) readonly restrict buffer B_ { vec4 B[]; };
#define LDA(i) A[i]
#define LDB(i) B[i]
#endif
#ifdef LIB_OUT
layout(std430, binding = 2) buffer C_ { uvec4 C[]; };
#define STORE_C(i, v) C[i] = floatBitsToUint(v)
#else
layout(std430, binding = 2) writeonly restrict buffer C_ { vec4 C[]; };
#define STORE_C(i, v) C[i] = v
#endif
uniform uint M, N, K;
// LIB_*: the library's VEC4 kernel's differences, one at a time (bisecting the lab/library gap).
uniform uint u_qa_s, u_qb_s, u_a_off, u_b_off, u_zbase, u_bshape[1], u_bstride_a[1], u_bstride_b[1];
uniform float u_alpha;
#define KV (BK / 4u)
#define LA (BM * KV / NT)
#define LB (BK * (BN / 4u) / NT)
#ifdef PREFETCH
#define NBUF 2
#else
#define NBUF 1
#endif
shared vec4 As[NBUF][BK][BM / 4u];
shared vec4 Bs[NBUF][BK][BN / 4u];
float act(float x) { return x; }
void epilogue_quad(uint m, uint n, vec4 q, uint c_off) {
  vec4 v = u_alpha * q;
  v = vec4(act(v.x), act(v.y), act(v.z), act(v.w));
  uint e = c_off + m * N + n;
  STORE_C(e >> 2u, v);
}
void main() {
  uint lid = gl_LocalInvocationID.x, tx = lid % TX, ty = lid / TX;
  uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
  uint nb4 = n0 / 4u;
  uint z = 0u, qa0 = 0u, qb0 = 0u;
#ifdef LIB_STRIDES
  uint K4 = u_qa_s, N4 = u_qb_s;
  qa0 = u_a_off / 4u;
  qb0 = u_b_off / 4u;
#else
  uint K4 = K / 4u, N4 = N / 4u;
#endif
#ifdef LIB_BATCH
  z = u_zbase + gl_WorkGroupID.z;
  uint zz = z, a_b = 0u, b_b = 0u;
  for (int d = 0; d >= 0; --d) {
    uint i = zz % u_bshape[d];
    zz /= u_bshape[d];
    a_b += i * u_bstride_a[d];
    b_b += i * u_bstride_b[d];
  }
  qa0 += a_b / 4u;
  qb0 += b_b / 4u;
#endif
  vec4 acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = vec4(0.0);
  vec4 ra[LA], rb[LB];
  uint nk = K / BK;
#ifdef PREFETCH
  for (uint l = 0u; l < LA; ++l) { uint e = lid + NT * l; ra[l] = LDA(qa0 + (m0 + e / KV) * K4 + e % KV); }
  for (uint l = 0u; l < LB; ++l) { uint e = lid + NT * l; rb[l] = LDB(qb0 + (e / (BN / 4u)) * N4 + nb4 + e % (BN / 4u)); }
  for (uint l = 0u; l < LA; ++l) {
    uint e = lid + NT * l, r = e / KV, q = e % KV;
    for (uint j = 0u; j < 4u; ++j) As[0][4u * q + j][r / 4u][r % 4u] = ra[l][j];
  }
  for (uint l = 0u; l < LB; ++l) { uint e = lid + NT * l; Bs[0][e / (BN / 4u)][e % (BN / 4u)] = rb[l]; }
  memoryBarrierShared();
  barrier();
#endif
  for (uint t = 0u; t < nk; ++t) {
#ifdef PREFETCH
    uint cur = t & 1u;
    if (t + 1u < nk) {
      uint k1 = (t + 1u) * BK;
      for (uint l = 0u; l < LA; ++l) { uint e = lid + NT * l; ra[l] = LDA(qa0 + (m0 + e / KV) * K4 + k1 / 4u + e % KV); }
      for (uint l = 0u; l < LB; ++l) { uint e = lid + NT * l; rb[l] = LDB(qb0 + (k1 + e / (BN / 4u)) * N4 + nb4 + e % (BN / 4u)); }
    }
#else
    const uint cur = 0u;
    uint k0 = t * BK;
    for (uint l = 0u; l < LA; ++l) { uint e = lid + NT * l; ra[l] = LDA(qa0 + (m0 + e / KV) * K4 + k0 / 4u + e % KV); }
    for (uint l = 0u; l < LB; ++l) { uint e = lid + NT * l; rb[l] = LDB(qb0 + (k0 + e / (BN / 4u)) * N4 + nb4 + e % (BN / 4u)); }
    for (uint l = 0u; l < LA; ++l) {
      uint e = lid + NT * l, r = e / KV, q = e % KV;
      for (uint j = 0u; j < 4u; ++j) As[0][4u * q + j][r / 4u][r % 4u] = ra[l][j];
    }
    for (uint l = 0u; l < LB; ++l) { uint e = lid + NT * l; Bs[0][e / (BN / 4u)][e % (BN / 4u)] = rb[l]; }
    memoryBarrierShared();
    barrier();
#endif
    for (uint k = 0u; k < BK; ++k) {
      vec4 a0 = As[cur][k][ty], a1 = As[cur][k][TY + ty];
      vec4 b0 = Bs[cur][k][tx], b1 = Bs[cur][k][TX + tx];
      for (int i = 0; i < 4; ++i) {
        acc[2 * i] += a0[i] * b0;
        acc[2 * i + 1] += a0[i] * b1;
        acc[8 + 2 * i] += a1[i] * b0;
        acc[8 + 2 * i + 1] += a1[i] * b1;
      }
    }
#ifdef PREFETCH
    if (t + 1u < nk) {
      uint nxt = cur ^ 1u;
      for (uint l = 0u; l < LA; ++l) {
        uint e = lid + NT * l, r = e / KV, q = e % KV;
        for (uint j = 0u; j < 4u; ++j) As[nxt][4u * q + j][r / 4u][r % 4u] = ra[l][j];
      }
      for (uint l = 0u; l < LB; ++l) { uint e = lid + NT * l; Bs[nxt][e / (BN / 4u)][e % (BN / 4u)] = rb[l]; }
    }
#endif
    memoryBarrierShared();
    barrier();
  }
#ifdef LIB_EPI
  uint c_off = z * M * N;
  uint ma = m0 + 4u * ty, mb = m0 + BM / 2u + 4u * ty, na = n0 + 4u * tx, nb = n0 + BN / 2u + 4u * tx;
#define EPI_ROWS(I)                                         \
  epilogue_quad(ma + uint(I), na, acc[2 * I], c_off);      \
  epilogue_quad(ma + uint(I), nb, acc[2 * I + 1], c_off);  \
  epilogue_quad(mb + uint(I), na, acc[8 + 2 * I], c_off);  \
  epilogue_quad(mb + uint(I), nb, acc[9 + 2 * I], c_off);
  EPI_ROWS(0)
  EPI_ROWS(1)
  EPI_ROWS(2)
  EPI_ROWS(3)
#else
  uint N4c = N / 4u;
  for (uint i = 0u; i < 8u; ++i) {
    uint m = m0 + (i < 4u ? 4u * ty + i : BM / 2u + 4u * ty + i - 4u);
    STORE_C(m * N4c + nb4 + tx, acc[2u * i]);
    STORE_C(m * N4c + nb4 + TX + tx, acc[2u * i + 1u]);
  }
#endif
}
