// The register-blocked matmul kernel (MatmulPlan::Kernel::reg); the shared part, epilogue and
// split-K in matmul.glsl.
layout(local_size_x = LOCAL_X, local_size_y = KSL) in;

#include "matmul.glsl"

// REG: register blocking without shared memory or barriers, for CPU rasterizers and for products
// with few rows or columns. llvmpipe (Mesa 22) runs a workgroup on one thread with invocations as
// SIMD lanes, and every SSBO or shared-memory load is a loop over the lanes with a bounds check
// per component, so loads per multiply-add decide, and a vec4 load costs far less than four
// scalar ones (bench/RESULTS.md). Invocation GLOBAL_ID.x computes an RA x 4 CB block of C (blocks
// numbered along N first, so that M or N of 1 wastes no lanes) straight from the SSBOs, 4 K per
// step: per step RA + 4 CB quad loads (where the operands allow quads) feed 16 RA CB multiply-adds.
// Rows and columns past the edge are clamped to the last one (loads stay in bounds, no branch in
// the K loop) and not stored.
// A_Q: A's quads: 1 along K (row-major A: quadA), 2 along M (transposed A; M % 4 == 0, RA % 4
// == 0), 0 scalar loads (load1). B_Q: 1 along N (row-major B; N % 4 == 0), 2 along K
// (transposed B), 0 scalar loads (load2). Quads along K need 4-aligned K ranges: the K steps
// start at u_k0 multiples of 4 and a K % 4 tail runs with scalar loads (A_Q/B_Q != 0 declare
// both views of the operand).
// The host defines RA, CB and the block written out (acc is then indexed by constants and no
// loop but K's runs): ROWS(X) = X(0) .. X(RA - 1), ROWQ(X) = X(0) .. X(RA / 4 - 1),
// COLS(X) = X(0) .. X(CB - 1), COLN(X) = X(0) .. X(4 CB - 1), COLS_I(X, i) = X(i, 0) .. X(i, CB - 1).
// KSL > 1 (GPUs' few small tiles, MatmulPlan::reg_slices): the workgroup's KSL rows of LOCAL_X
// invocations (gl_LocalInvocationID.y: the slice) share each block; slice s sums K range
// [k0 + s * u_kslice, k0 + (s + 1) * u_kslice) of the split's range, slices 1 .. KSL - 1 leave their
// sums in shared memory, and slice 0 adds them in slice order and runs the epilogue (every
// invocation reaches the barrier: blocks past the edge run no K steps and store nothing).
// ROWSUM (a linear layer's bias gradient with its weight gradient, A = g^T; one batch entry, no
// split-K): the sums of A's rows over K, rs[m] = sum_k A[m, k] (no alpha), stored to the operand
// after the others (binding 4 with ADDEND, else 3) by the invocations of the first column block.
// RESIDUAL (the model's Conv -> Add on the 1x1 GEMM path; one batch entry, no split-K): an f32
// operand laid out as C (after the others, RES_LOAD its load) added after the epilogue at each store.
// MASK_A = b > 0 (ReLU's gradient in the products that read it, A = g or g^T): A's elements are
// taken where the f32 operand at binding b, laid out as A (same offsets and strides), is > 0,
// else 0 (NaN in A too: relu_backward's x > 0 ? g : 0); quads of it (quadY) where A's are.
uniform uint u_split;  // SPLIT_COLS
#if MASK_A == 3
#define LOAD_Y load3
#elif MASK_A == 4
#define LOAD_Y load4
#elif MASK_A == 5
#define LOAD_Y load5
#endif
#if MASK_A > 0
bvec4 yv_pos(vec4 y) { return greaterThan(y, vec4(0.0)); }
#endif
#ifdef ROWSUM
#ifdef ADDEND
#define STORE_RS store4
#else
#define STORE_RS store3
#endif
#endif
#if KSL > 1
uniform uint u_kslice;  // K per slice, a multiple of 4
// red[(s * RA * CB + e) * LOCAL_X + x]: block element e (acc's index) of invocation x of slice s + 1.
shared vec4 red[(KSL - 1) * RA * CB * int(LOCAL_X)];
#ifdef ROWSUM
shared float red_rs[(KSL - 1) * RA * int(LOCAL_X)];  // red_rs[(s * RA + i) * LOCAL_X + x]: rs[i]
#endif
#endif

// C's element (m, n) of this workgroup's output: alpha, addend, activation, residual, store.
void epilogue_reg(uint m, uint n, float a, uint c_off, uint d_off) {
  float v = u_alpha * a;
#ifdef ADDEND
  v += u_beta * float(load3(d_off + m * u_d_sm + n * u_d_sn));
#endif
#ifdef SPLIT_COLS
  // C [M, N] stored as [N / u_split, M, u_split]
  uint g = n / u_split;
  uint ci = c_off + (g * u_M + m) * u_split + (n - g * u_split);
#else
  uint ci = c_off + m * u_N + n;
#endif
  float y = ACT(v);
#ifdef RESIDUAL
  y += float(RES_LOAD(ci));  // laid out as C (one batch entry): its element at C's index
#endif
  store0(ci, CT0(y));
}

void main() {
  Part pt = part();
  uvec3 bo = batch_offsets(pt.z);
  uint ncb = (u_N + 4u * uint(CB) - 1u) / (4u * uint(CB));
  uint blk = GLOBAL_ID.x;
  uint m0 = (blk / ncb) * uint(RA), n0 = (blk % ncb) * (4u * uint(CB));
#if KSL > 1
  uint slice = gl_LocalInvocationID.y;
  uint kb = min(pt.k1, pt.k0 + slice * u_kslice);
  uint ke = m0 < u_M ? min(pt.k1, kb + u_kslice) : kb;
#else
  if (m0 >= u_M) return;
  uint kb = pt.k0, ke = pt.k1;
#endif
  vec4 acc[RA * CB];
#define ZERO_C(i, j) acc[i * CB + j] = vec4(0.0);
#define ZERO_R(i) COLS_I(ZERO_C, i)
  ROWS(ZERO_R)
#ifdef ROWSUM
  float rs[RA];
#define ZERO_RS(i) rs[i] = 0.0;
  ROWS(ZERO_RS)
#define RS_ADD(i) rs[i] += (av[i].x + av[i].y) + (av[i].z + av[i].w);
#define RS_TAIL(i) rs[i] += a;
#else
#define RS_ADD(i)
#define RS_TAIL(i)
#endif
  // Element offsets of the clamped rows of A (ra) and columns of B (cn); quads: of the clamped
  // 4-row groups (raq) and 4-column groups (cq).
  uint ra[RA], cn[4 * CB];
#define ROW_OFF(i) ra[i] = bo.x + min(m0 + uint(i), u_M - 1u) * u_a_sm;
  ROWS(ROW_OFF)
#define COL_OFF(c) cn[c] = bo.y + min(n0 + uint(c), u_N - 1u) * u_b_sn;
  COLN(COL_OFF)
#if A_Q == 2
  uint raq[RA / 4];
#define ROWQ_OFF(r) raq[r] = bo.x + min(m0 + 4u * uint(r), u_M - 4u);
  ROWQ(ROWQ_OFF)
#endif
#if B_Q == 1
  uint cq[CB];
#define COLQ_OFF(j) cq[j] = bo.y + min(n0 + 4u * uint(j), u_N - 4u);
  COLS(COLQ_OFF)
#endif
  // One step of 4 K: av[i] = A[row i][k .. k+3], bv[4 j + t] = B[k + t][columns 4j .. 4j+3].
  vec4 av[RA], bv[4 * CB];
#if A_Q == 1
#define LOAD_A(i) av[i] = quadA((ra[i] + k) / 4u);
#define LOAD_AQ(r)
#elif A_Q == 2
  vec4 aq[RA];  // aq[4 r + t] = A[rows 4r .. 4r+3][k + t]
#define LOAD_AQ(r)                                     \
  aq[4 * r] = quadA((raq[r] + k * u_a_sk) / 4u);       \
  aq[4 * r + 1] = quadA((raq[r] + (k + 1u) * u_a_sk) / 4u); \
  aq[4 * r + 2] = quadA((raq[r] + (k + 2u) * u_a_sk) / 4u); \
  aq[4 * r + 3] = quadA((raq[r] + (k + 3u) * u_a_sk) / 4u);
#define LOAD_A(i)                                                                        \
  av[i] = vec4(aq[(i / 4) * 4][i % 4], aq[(i / 4) * 4 + 1][i % 4], aq[(i / 4) * 4 + 2][i % 4], \
               aq[(i / 4) * 4 + 3][i % 4]);
#else
#define LOAD_AQ(r)
#define LOAD_A(i)                                                                   \
  av[i] = vec4(float(load1(ra[i] + k * u_a_sk)), float(load1(ra[i] + (k + 1u) * u_a_sk)), \
               float(load1(ra[i] + (k + 2u) * u_a_sk)), float(load1(ra[i] + (k + 3u) * u_a_sk)));
#endif
#if B_Q == 1
#define LOAD_BC(c)
#define LOAD_B(j)                                              \
  bv[4 * j] = quadB((cq[j] + k * u_b_sk) / 4u);                 \
  bv[4 * j + 1] = quadB((cq[j] + (k + 1u) * u_b_sk) / 4u);      \
  bv[4 * j + 2] = quadB((cq[j] + (k + 2u) * u_b_sk) / 4u);      \
  bv[4 * j + 3] = quadB((cq[j] + (k + 3u) * u_b_sk) / 4u);
#elif B_Q == 2
  vec4 bc[4 * CB];  // bc[c] = B[k .. k+3][column c]
#define LOAD_BC(c) bc[c] = quadB((cn[c] + k) / 4u);
#define LOAD_B(j)                                                                                   \
  bv[4 * j] = vec4(bc[4 * j].x, bc[4 * j + 1].x, bc[4 * j + 2].x, bc[4 * j + 3].x);                 \
  bv[4 * j + 1] = vec4(bc[4 * j].y, bc[4 * j + 1].y, bc[4 * j + 2].y, bc[4 * j + 3].y);             \
  bv[4 * j + 2] = vec4(bc[4 * j].z, bc[4 * j + 1].z, bc[4 * j + 2].z, bc[4 * j + 3].z);             \
  bv[4 * j + 3] = vec4(bc[4 * j].w, bc[4 * j + 1].w, bc[4 * j + 2].w, bc[4 * j + 3].w);
#else
#define LOAD_BC(c)
#define LOAD_B1(j, t)                                                                                  \
  bv[4 * j + t] = vec4(float(load2((k + uint(t)) * u_b_sk + cn[4 * j])),                              \
                       float(load2((k + uint(t)) * u_b_sk + cn[4 * j + 1])),                          \
                       float(load2((k + uint(t)) * u_b_sk + cn[4 * j + 2])),                          \
                       float(load2((k + uint(t)) * u_b_sk + cn[4 * j + 3])));
#define LOAD_B(j) LOAD_B1(j, 0) LOAD_B1(j, 1) LOAD_B1(j, 2) LOAD_B1(j, 3)
#endif
#if MASK_A > 0
#if A_Q == 1
#define LOAD_YQ(r)
#define MASK_AV(i) av[i] = mix(vec4(0.0), av[i], yv_pos(quadY((ra[i] + k) / 4u)));
#elif A_Q == 2
  vec4 yq[RA];  // as aq
#define LOAD_YQ(r)                                      \
  yq[4 * r] = quadY((raq[r] + k * u_a_sk) / 4u);        \
  yq[4 * r + 1] = quadY((raq[r] + (k + 1u) * u_a_sk) / 4u); \
  yq[4 * r + 2] = quadY((raq[r] + (k + 2u) * u_a_sk) / 4u); \
  yq[4 * r + 3] = quadY((raq[r] + (k + 3u) * u_a_sk) / 4u);
#define MASK_AV(i)                                                                                           \
  av[i] = mix(vec4(0.0), av[i],                                                                              \
              yv_pos(vec4(yq[(i / 4) * 4][i % 4], yq[(i / 4) * 4 + 1][i % 4], yq[(i / 4) * 4 + 2][i % 4], \
                          yq[(i / 4) * 4 + 3][i % 4])));
#else
#define LOAD_YQ(r)
#define MASK_AV(i)                                                                                              \
  av[i] = mix(vec4(0.0), av[i],                                                                                 \
              yv_pos(vec4(LOAD_Y(ra[i] + k * u_a_sk), LOAD_Y(ra[i] + (k + 1u) * u_a_sk),                         \
                          LOAD_Y(ra[i] + (k + 2u) * u_a_sk), LOAD_Y(ra[i] + (k + 3u) * u_a_sk))));
#endif
#define MASK_TAIL(i) \
  if (!(LOAD_Y(ra[i] + k * u_a_sk) > 0.0)) a = 0.0;
#else
#define LOAD_YQ(r)
#define MASK_AV(i)
#define MASK_TAIL(i)
#endif
#define FMA_C(i, j)                               \
  acc[i * CB + j] += av[i].x * bv[4 * j];         \
  acc[i * CB + j] += av[i].y * bv[4 * j + 1];     \
  acc[i * CB + j] += av[i].z * bv[4 * j + 2];     \
  acc[i * CB + j] += av[i].w * bv[4 * j + 3];
#define FMA_R(i) COLS_I(FMA_C, i)
  uint k = kb;
  for (; LOOP(k + 4u <= ke); k += 4u) {
    ROWQ(LOAD_AQ)
    ROWS(LOAD_A)
    ROWQ(LOAD_YQ)
    ROWS(MASK_AV)
    ROWS(RS_ADD)
    COLN(LOAD_BC)
    COLS(LOAD_B)
    ROWS(FMA_R)
  }
  // The K % 4 tail, one K at a time with scalar loads.
  for (; LOOP(k < ke); ++k) {
#define TAIL_B(j)                                                                                        \
  bv[j] = vec4(float(load2(k * u_b_sk + cn[4 * j])), float(load2(k * u_b_sk + cn[4 * j + 1])),            \
               float(load2(k * u_b_sk + cn[4 * j + 2])), float(load2(k * u_b_sk + cn[4 * j + 3])));
    COLS(TAIL_B)
#define TAIL_C(i, j) acc[i * CB + j] += a * bv[j];
#define TAIL_R(i)                               \
  {                                             \
    float a = float(load1(ra[i] + k * u_a_sk)); \
    MASK_TAIL(i)                                \
    COLS_I(TAIL_C, i)                           \
    RS_TAIL(i)                                  \
  }
    ROWS(TAIL_R)
  }
#if KSL > 1
  uint lx = gl_LocalInvocationID.x;
  if (slice > 0u) {
#define RED_PUT(i, j) red[((slice - 1u) * uint(RA * CB) + uint(i * CB + j)) * LOCAL_X + lx] = acc[i * CB + j];
#define RED_PUT_R(i) COLS_I(RED_PUT, i)
    ROWS(RED_PUT_R)
#ifdef ROWSUM
#define RS_PUT(i) red_rs[((slice - 1u) * uint(RA) + uint(i)) * LOCAL_X + lx] = rs[i];
    ROWS(RS_PUT)
#endif
  }
  workgroup_sync();
  if (slice > 0u) return;
  for (uint s = 0u; s < uint(KSL - 1); ++s) {
#define RED_ADD(i, j) acc[i * CB + j] += red[(s * uint(RA * CB) + uint(i * CB + j)) * LOCAL_X + lx];
#define RED_ADD_R(i) COLS_I(RED_ADD, i)
    ROWS(RED_ADD_R)
#ifdef ROWSUM
#define RS_RED(i) rs[i] += red_rs[(s * uint(RA) + uint(i)) * LOCAL_X + lx];
    ROWS(RS_RED)
#endif
  }
#endif
#ifdef ROWSUM
#define RS_STORE(i) \
  if (m0 + uint(i) < u_M) STORE_RS(m0 + uint(i), rs[i]);
  if (n0 == 0u) { ROWS(RS_STORE) }
#endif
  uint c_off = pt.c_off, d_off = bo.z;
#define EPI_C1(i, j, c)                 \
  if (n0 + uint(4 * j + c) < u_N)       \
    epilogue_reg(m, n0 + uint(4 * j + c), acc[i * CB + j][c], c_off, d_off);
#define EPI_C(i, j) EPI_C1(i, j, 0) EPI_C1(i, j, 1) EPI_C1(i, j, 2) EPI_C1(i, j, 3)
#define EPI_R(i)                      \
  {                                   \
    uint m = m0 + uint(i);            \
    if (m < u_M) { COLS_I(EPI_C, i) } \
  }
  ROWS(EPI_R)
}
