// The warp-tiled quad-load matmul kernel (MatmulPlan::Kernel::warp); the shared part, epilogue and
// split-K in matmul.glsl, the quad epilogue in matmul_quads.glsl.
layout(local_size_x = LOCAL_X) in;

#include "matmul.glsl"

// After Simon Boehm's "How to optimize a CUDA matmul kernel for cuBLAS-like performance"
// (kernel 10, warptiling) and ggml-vulkan's mul_mm.comp: BM x BN tiles of C per workgroup (the
// planner's 64 x 128 or 128 x 128; the kernel lab's also 128 x 256), BK = 8 or 16 values of K per shared-memory tile, LOCAL_X = BM BN / (8
// TN) invocations, each an 8 x TN block of C in registers (TN = 8 or 16): rows 4 ty .. 4 ty + 3 and
// BM/2 + 4 ty .., columns TN / 4 quads 4 tx + j BN / (TN / 4). WARP_TILE: the 32 invocations of a
// warp (gl_LocalInvocationIndex / 32, NVIDIA's) hold 8 x 4 (tx, ty) neighbours, so that each vec4
// read of shared memory takes 8 distinct quads of B and 4 of A (else 16 x 2: 16 and 2). Operands
// are read as quads (128-bit loads for f32) along their contiguous dim (A_KMAJOR: A's along K;
// B_KMAJOR: B's along K), kept in shared memory as [k][m] and [k][n] vec4 rows (a K-major operand
// without A_SHK / B_SHK is transposed on the way, its rows padded by a quad against bank conflicts), double-buffered:
// the next K-tile is loaded into registers while the current one is multiplied, one barrier per
// K-tile. The K step is written out (host's KS(X) = X(0) .. X(BK - 1)) and the accumulators are
// indexed by constants only (a looped index puts them in NVIDIA's local memory).
// EDGE: M, N or the K range need not be whole tiles (M, N and K multiples of 4, the host's
// condition): loads are clamped into the operands and zeroed past K; rows and columns past M and N
// are not stored. Without EDGE no bounds are checked (the host picks it for whole tiles only).
// K_LOOP: the K step as a loop of BK trips (the accumulators still indexed by constants), left to
// the compiler to unroll or not; else written out and every loop unrolled (optionNV).
// A_SHK / B_SHK (the host's MatmulPlan::warp_shk, TN 8): an operand read along K is kept K-major
// in shared memory (no transposing scalar stores); the K step then takes a quad of K at a time,
// each row's A quad against the four K steps' B values (as 128 x 128 x 8 tiles on the H100: 1.21x at
// 4096^3 with row-major B, 1.53x with K-major B; bench/RESULTS.md, 2026-11-27, mm72). NO_GUARD (kernel lab
// only): the next tile's loads and stores unconditional. KERNEL_SETUP: statements run once per
// invocation before the first load (an including kernel's hook).
// The tile loop takes two K-tiles per trip, so that each one's shared-memory buffer index is a
// constant: 1.24x faster on the H100 than one tile per trip with the index t & 1 (4096^3:
// 31.5 against 25.5 TFLOP/s; bench/RESULTS.md, 2026-11-27, mm70b). Loading two K-tiles ahead
// (two register sets) ran 0.65x, grouped workgroup order (L2) 0.97x; both dropped.
#ifndef K_LOOP
#pragma optionNV(unroll all)
#endif
#define NT LOCAL_X
#define TM 8u
#define NQ (uint(TN) / 4u)           // column quads per invocation
#define TXN (BN / uint(TN))         // invocations along N
#define KQ (BK / 4u)           // quads along K of a tile row
#define LA (BM * BK / 4u / NT)  // A quads per invocation and K-tile
#define LB (BN * BK / 4u / NT)  // B quads per invocation and K-tile
#if A_KMAJOR
#define PA 1u
#else
#define PA 0u
#endif
#if B_KMAJOR
#define PB 1u
#else
#define PB 0u
#endif
#include "matmul_quads.glsl"
// A_SHK (A_KMAJOR only): A kept K-major in shared memory, Ak[buf][m KQ + kq] (quads along K,
// stored as loaded: one 128-bit store); the K step reads one quad of K per row of C.
// B_SHK (B_KMAJOR only): B kept K-major, Bk[buf][n KQ + n / 4 + kq] (a quad of padding per 4
// columns: the 8 lanes of a quarter warp read 8 distinct bank groups). Both TN 8 only.
#if (defined(A_SHK) || defined(B_SHK)) && TN != 8
#error A_SHK and B_SHK take TN 8
#endif
#if defined(A_SHK) && !A_KMAJOR
#error A_SHK takes A_KMAJOR
#endif
#if defined(B_SHK) && !B_KMAJOR
#error B_SHK takes B_KMAJOR
#endif
#ifdef A_SHK
shared vec4 Ak[2][BM * KQ];
#else
shared vec4 As[2][BK][BM / 4u + PA];
#endif
#ifdef B_SHK
shared vec4 Bk[2][BN * KQ + BN / 4u];
#else
shared vec4 Bs[2][BK][BN / 4u + PB];
#endif

// Quad l of this invocation's share of A's K-tile at k0 (zero past k1): the tile's first row m0,
// the batch's first quad qa.
vec4 fetch_a(uint l, uint k0, uint m0, uint k1, uint qa) {
  uint e = gl_LocalInvocationIndex + NT * l;
#if A_KMAJOR
  uint m = m0 + e / KQ, k = k0 + 4u * (e % KQ);
#ifdef EDGE
  m = min(m, u_M - 1u);
  if (k >= k1) return vec4(0.0);
#endif
  return quadA(qa + m * u_qa_s + k / 4u);
#else
  uint k = k0 + e / (BM / 4u), mq = m0 / 4u + e % (BM / 4u);
#ifdef EDGE
  mq = min(mq, u_M / 4u - 1u);
  if (k >= k1) return vec4(0.0);
#endif
  return quadA(qa + k * u_qa_s + mq);
#endif
}
void put_a(uint buf, uint l, vec4 v) {
  uint e = gl_LocalInvocationIndex + NT * l;
#ifdef A_SHK
  Ak[buf][e] = v;
#elif A_KMAJOR
  uint m = e / KQ, k = 4u * (e % KQ);
  As[buf][k][m / 4u][m % 4u] = v.x;
  As[buf][k + 1u][m / 4u][m % 4u] = v.y;
  As[buf][k + 2u][m / 4u][m % 4u] = v.z;
  As[buf][k + 3u][m / 4u][m % 4u] = v.w;
#else
  As[buf][e / (BM / 4u)][e % (BM / 4u)] = v;
#endif
}
vec4 fetch_b(uint l, uint k0, uint n0, uint k1, uint qb) {
  uint e = gl_LocalInvocationIndex + NT * l;
#if B_KMAJOR
  uint n = n0 + e / KQ, k = k0 + 4u * (e % KQ);
#ifdef EDGE
  n = min(n, u_N - 1u);
  if (k >= k1) return vec4(0.0);
#endif
  return quadB(qb + n * u_qb_s + k / 4u);
#else
  uint k = k0 + e / (BN / 4u), nq = n0 / 4u + e % (BN / 4u);
#ifdef EDGE
  nq = min(nq, u_N / 4u - 1u);
  if (k >= k1) return vec4(0.0);
#endif
  return quadB(qb + k * u_qb_s + nq);
#endif
}
void put_b(uint buf, uint l, vec4 v) {
  uint e = gl_LocalInvocationIndex + NT * l;
#ifdef B_SHK
  Bk[buf][e + e / (4u * KQ)] = v;
#elif B_KMAJOR
  uint n = e / KQ, k = 4u * (e % KQ);
  Bs[buf][k][n / 4u][n % 4u] = v.x;
  Bs[buf][k + 1u][n / 4u][n % 4u] = v.y;
  Bs[buf][k + 2u][n / 4u][n % 4u] = v.z;
  Bs[buf][k + 3u][n / 4u][n % 4u] = v.w;
#else
  Bs[buf][e / (BN / 4u)][e % (BN / 4u)] = v;
#endif
}

// C's row m at columns n .. n + 3 (EDGE: only rows and quads inside C).
void store_quad(uint m, uint n, vec4 q, uint c_off, uint d_off) {
#ifdef EDGE
  if (m >= u_M || n >= u_N) return;
#endif
  epilogue_quad(m, n, q, c_off, d_off);
}

void main() {
  Part pt = part();
  uvec3 bo = batch_offsets(pt.z);
  uint tid = gl_LocalInvocationIndex;
#ifdef KERNEL_SETUP
  KERNEL_SETUP  // an including kernel's per-invocation setup before any load (imatmul_warp.comp's)
#endif
#if WARP_TILE
  uint lane = tid % 32u, warp = tid / 32u;
  uint tx = (warp % (TXN / 8u)) * 8u + lane % 8u, ty = (warp / (TXN / 8u)) * 4u + lane / 8u;
#else
  uint tx = tid % TXN, ty = tid / TXN;
#endif
  uint m0 = WORKGROUP_ID.y * BM, n0 = WORKGROUP_ID.x * BN, qa = bo.x / 4u, qb = bo.y / 4u;
  // acc[(h * 4 + i) * NQ + j]: row (h ? BM / 2 : 0) + 4 ty + i, column quad 4 tx + j BN / NQ.
  vec4 acc[8u * NQ];
  for (uint i = 0u; i < 8u * NQ; ++i) acc[i] = vec4(0.0);
  vec4 ra[LA], rb[LB];
  uint nk = (pt.k1 - pt.k0 + BK - 1u) / BK;
  for (uint l = 0u; l < LA; ++l) ra[l] = fetch_a(l, pt.k0, m0, pt.k1, qa);
  for (uint l = 0u; l < LB; ++l) rb[l] = fetch_b(l, pt.k0, n0, pt.k1, qb);
  for (uint l = 0u; l < LA; ++l) put_a(0u, l, ra[l]);
  for (uint l = 0u; l < LB; ++l) put_b(0u, l, rb[l]);
  workgroup_sync();
  // One K-tile: the next tile's loads into registers, this tile's K steps from shared memory
  // (buffer `cur`), the next tile's stores to the other buffer, one barrier.
#ifdef NO_GUARD
// NO_GUARD: the next tile's loads and stores unconditional (the last trip loads its own tile
// again and stores it to the buffer no later trip reads): no branches around them.
#define TILE_IF_NEXT
#define TILE_NEXT min(t + 1u, nk - 1u)
#else
#define TILE_IF_NEXT if (t + 1u < nk)
#define TILE_NEXT (t + 1u)
#endif
#define TILE_FETCH                                                           \
  TILE_IF_NEXT {                                                             \
    uint kn = pt.k0 + TILE_NEXT * BK;                                        \
    for (uint l = 0u; l < LA; ++l) ra[l] = fetch_a(l, kn, m0, pt.k1, qa);   \
    for (uint l = 0u; l < LB; ++l) rb[l] = fetch_b(l, kn, n0, pt.k1, qb);   \
  }
#define FMA_Q(av, h, i, c, bv, j) acc[(h * 4 + i) * int(NQ) + j] += av.c * bv;
#if TN == 8
#define FMA_R(av, h, i, c) FMA_Q(av, h, i, c, b0, 0) FMA_Q(av, h, i, c, b1, 1)
#define LOAD_B(k)                      \
  vec4 b0 = Bs[cur][k][tx];            \
  vec4 b1 = Bs[cur][k][TXN + tx];
#else
#define FMA_R(av, h, i, c) \
  FMA_Q(av, h, i, c, b0, 0) FMA_Q(av, h, i, c, b1, 1) FMA_Q(av, h, i, c, b2, 2) FMA_Q(av, h, i, c, b3, 3)
#define LOAD_B(k)                         \
  vec4 b0 = Bs[cur][k][tx];               \
  vec4 b1 = Bs[cur][k][TXN + tx];         \
  vec4 b2 = Bs[cur][k][2u * TXN + tx];    \
  vec4 b3 = Bs[cur][k][3u * TXN + tx];
#endif
#define K_STEP(k)                                                                        \
  {                                                                                      \
    vec4 a0 = As[cur][k][ty], a1 = As[cur][k][BM / 8u + ty];                             \
    LOAD_B(k)                                                                            \
    FMA_R(a0, 0, 0, x) FMA_R(a0, 0, 1, y) FMA_R(a0, 0, 2, z) FMA_R(a0, 0, 3, w)          \
    FMA_R(a1, 1, 0, x) FMA_R(a1, 1, 1, y) FMA_R(a1, 1, 2, z) FMA_R(a1, 1, 3, w)          \
  }
#if defined(A_SHK) || defined(B_SHK)
  // One quad of K (steps 4 kq .. 4 kq + 3) at a time; each accumulator still sums k in order.
#ifdef B_SHK
  // bc[c]: column 4 (tx + (c / 4) TXN) + c % 4 at the quad's 4 K values.
#define BQ_LOAD(c) bc[c] = Bk[cur][(4u * (tx + uint(c / 4) * TXN) + uint(c % 4)) * KQ + tx + uint(c / 4) * TXN + kq];
#define LOAD_BQ                                                                                   \
  vec4 bc[8];                                                                                     \
  BQ_LOAD(0) BQ_LOAD(1) BQ_LOAD(2) BQ_LOAD(3) BQ_LOAD(4) BQ_LOAD(5) BQ_LOAD(6) BQ_LOAD(7)
#define BV(s, j) vec4(bc[4 * j][s], bc[4 * j + 1][s], bc[4 * j + 2][s], bc[4 * j + 3][s])
#else
#define BQ_LOAD(s) bq[2 * s] = Bs[cur][4u * kq + uint(s)][tx], bq[2 * s + 1] = Bs[cur][4u * kq + uint(s)][TXN + tx];
#define LOAD_BQ \
  vec4 bq[8];   \
  BQ_LOAD(0) BQ_LOAD(1) BQ_LOAD(2) BQ_LOAD(3)
#define BV(s, j) bq[2 * s + j]
#endif
#define FMA_AB(a, s, h, i, c) FMA_Q(a, h, i, c, BV(s, 0), 0) FMA_Q(a, h, i, c, BV(s, 1), 1)
#ifdef A_SHK
#define AROW(h, i)                                                                   \
  {                                                                                  \
    vec4 ar = Ak[cur][(uint(h) * (BM / 2u) + 4u * ty + uint(i)) * KQ + kq];          \
    FMA_AB(ar, 0, h, i, x) FMA_AB(ar, 1, h, i, y) FMA_AB(ar, 2, h, i, z) FMA_AB(ar, 3, h, i, w) \
  }
#define QSTEP_A AROW(0, 0) AROW(0, 1) AROW(0, 2) AROW(0, 3) AROW(1, 0) AROW(1, 1) AROW(1, 2) AROW(1, 3)
#else
#define ASTEP(s)                                                                     \
  {                                                                                  \
    vec4 a0 = As[cur][4u * kq + uint(s)][ty], a1 = As[cur][4u * kq + uint(s)][BM / 8u + ty];  \
    FMA_AB(a0, s, 0, 0, x) FMA_AB(a0, s, 0, 1, y) FMA_AB(a0, s, 0, 2, z) FMA_AB(a0, s, 0, 3, w) \
    FMA_AB(a1, s, 1, 0, x) FMA_AB(a1, s, 1, 1, y) FMA_AB(a1, s, 1, 2, z) FMA_AB(a1, s, 1, 3, w) \
  }
#define QSTEP_A ASTEP(0) ASTEP(1) ASTEP(2) ASTEP(3)
#endif
#define TILE_MATH                    \
  for (uint kq = 0u; kq < KQ; ++kq) { \
    LOAD_BQ                          \
    QSTEP_A                          \
  }
#elif defined(K_LOOP)
#define TILE_MATH for (uint k = 0u; k < BK; ++k) K_STEP(k)
#else
#define TILE_MATH KS(K_STEP)
#endif
#define TILE_PUT                                                  \
  TILE_IF_NEXT {                                                  \
    for (uint l = 0u; l < LA; ++l) put_a(cur ^ 1u, l, ra[l]);    \
    for (uint l = 0u; l < LB; ++l) put_b(cur ^ 1u, l, rb[l]);    \
  }                                                               \
  workgroup_sync();
// K-tile t from buffer CUR (0u or 1u: a constant index).
#define TILE(CUR)        \
  {                      \
    uint cur = CUR;       \
    TILE_FETCH           \
    TILE_MATH            \
    TILE_PUT             \
  }
  for (uint t = 0u; LOOP(t < nk); ++t) {
    TILE(0u)
    if (!(++t < nk)) break;
    TILE(1u)
  }
  uint c_off = pt.c_off, d_off = bo.z;
  uint ma = m0 + 4u * ty, mb = m0 + BM / 2u + 4u * ty;
#define EPI_Q(h, i, j) store_quad((h == 0 ? ma : mb) + uint(i), n0 + 4u * (tx + uint(j) * TXN), acc[(h * 4 + i) * int(NQ) + j], c_off, d_off);
#if TN == 8
#define EPI_R(h, i) EPI_Q(h, i, 0) EPI_Q(h, i, 1)
#else
#define EPI_R(h, i) EPI_Q(h, i, 0) EPI_Q(h, i, 1) EPI_Q(h, i, 2) EPI_Q(h, i, 3)
#endif
  EPI_R(0, 0) EPI_R(0, 1) EPI_R(0, 2) EPI_R(0, 3)
  EPI_R(1, 0) EPI_R(1, 1) EPI_R(1, 2) EPI_R(1, 3)
}
