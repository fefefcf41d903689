// The integer matmul of MatMulInteger / ConvInteger / QLinearMatMul / QLinearConv on the f32 FMA
// units (src/nn/quant_int.cpp): exact int32 results from f32 products and sums.
//   c[b, m, n] (+)= sum over k0 <= k < k1 of (a[b, m, k] - za[m]) * (b[b, k, n] - zb[n])
// Every difference of an 8-bit value and an 8-bit zero point lies in [-255, 255], so a product is
// an integer of magnitude <= 65025 and a sum of up to IBLOCK_K of them stays below 2^24: every
// partial sum is an exact integer in f32. The kernel sums blocks of IBLOCK_K values of K in f32
// FMAs, then converts each block's sums to int32 and adds them to int32 accumulators (NVIDIA GPUs
// issue f32 FMAs at twice their int32 multiply-add rate). The host defines IBLOCK_K (a multiple
// of BK, checked against 2^24 there) and uses this kernel only for 8-bit zero points; wider ones
// run quant_int.comp's IMATMUL.
// Tiling as glsl/ops/matmul.comp's VEC4 kernel: a BM x BN tile of c per workgroup (BM = 64; BN = 32,
// 64 or 128), BK = 16 or 8 (the host's BK: BM BK / 4 a multiple of NT), NT = (BM / 4 RB)(BN / 4 CB) invocations, each RB x CB blocks of 4 x 4
// (RB = CB = 2: rows 4 ty .. 4 ty + 3 and BM / 2 + 4 ty .., columns 4 tx .. and BN / 2 + 4 tx ..;
// 1: one block, as matmul's 64 x 64 tile kernel) read from shared memory as vec4s, A kept
// transposed there; the next K tile's words are loaded into registers while the
// current one is multiplied (double-buffered shared memory, one barrier per K tile; K_PAIRS below).
// NSL = 2 (as matmul's SLICE_K; 8 x 8 per invocation, TOTALS_REGS): LOCAL_X = 2 NT invocations,
// slice s (invocations s NT ..) sums the tile over its half of the launch's K tiles with its own
// shared buffers (tiles past u_k1 read as zero points: products 0); at the end slice 1 hands its
// int32 totals to slice 0 through Bs (bit patterns, 8 accumulators per round), which stores. The operands
// are read four 8-bit values per 32-bit word: A's words along K (A_WORDS: K % 4 == 0), B's along
// N (B_WORDS: N % 4 == 0); otherwise byte by byte. Values outside the matrices are read as the
// zero point (difference 0). A_I8 / B_I8: the operand is int8 (sign-extended), else uint8.
// Grid: x = column tiles, y = row tiles, z = batch (u_a_bs / u_b_bs: batch strides, 0 broadcasts).
// ACCUM adds to c (K split over launches: llvmpipe's loop limit).
// DEQUANT (one launch for all of K): c is float32, c = float(sum) * (sa * sb[i]) (+ bias[i]), i the
// row (DQ_ROW) or column index (u_sb_per: sb one per row / column, else one value), as
// DequantizeLinear of the sums with the multiplier sa * sb computed in f32, then Add of the bias.
// QUANT (with DEQUANT; the QDQ pattern's QuantizeLinear after a conv, as iconv_direct.comp's
// QUANT, expression for expression): c is 8-bit, c = clamp(roundEven(div_rn(act(v), ys)) + zy,
// QMIN, QMAX) (NaN -> zy; QMIN, QMAX from Y_I8) for the dequantized v, the activation act_clip(v, u_lo, u_hi) between
// (uniforms: none, Relu and Clip are one program); whole words of four columns (the host runs it
// only where N % 4 == 0). DQ_OUT (with QUANT; a DequantizeLinear of the same parameters after
// it): c is float32, c = float(q - zy) * ys of that 8-bit q, as quant_int.comp's DEQUANTIZE
// (one store per element: any N).
// Where the int32 totals of the blocks live: TOTALS_REGS, int32 registers beside the f32 ones
// (twice the accumulators); TOTALS_SHARED, shared memory (NACC ivec4s per invocation, so that the
// registers are those of matmul's f32 tiles; read and written once per block); TOTALS_MEM, the output's elements in memory (each invocation adds a
// block's sums to its own elements: c itself where it is int32, else operand 10, int32 [batch, M,
// N]), so that the registers are those of matmul's f32 tiles; neither: the launch's K range is
// one block (u_k1 - u_k0 <= IBLOCK_K) and the f32 sums are the totals.
// IMPLICIT (an implicit-GEMM convolution, QLinearConv / the QDQ conv: no im2col columns): a is
// the filter [G, M = Og, K = CG IKH IKW] (a_bs = M K per group), b the 8-bit image [N G, CG, H, W]
// read in place as the columns [K, N = OH OW] of image bz = n G + g (b_bs = CG H W): column n is
// the output position (n / OW, n % OW), row k the tap (channel k / (IKH IKW), filter row, column);
// positions outside the image read zb (the input's zero point, one value). Byte by byte (B_WORDS
// 0), or with ROWQUAD (stride 1 along rows, OW % 4 == 0) four bytes of one image row at a time. Rows of group g are output channels g M + m: za, sb and bias are read at that index, c's
// rows are [N, G M, OH OW] as the conv's output.
// QIN (IMPLICIT with DEQUANT, one zero point zb; the QDQ model's input QuantizeLinear fused into
// its first conv): b is the float32 image, each value quantized as it is read, as quant_int.comp's
// QUANTIZE with x's scale sa (operand 5) and zb: clamp(roundEven(div_rn(x, sa)) + zb, lo, hi)
// (NaN -> zb), lo and hi those of B's 8-bit type (B_I8); byte by byte (no ROWQUAD).
// Operands: 0 = c (int32, DEQUANT float32, QUANT 8-bit, DQ_OUT float32), 1 = a, 2 = b (8-bit; QIN float32), 3 = za, 4 = zb
// (integers of any dtype; u_za_row / u_zb_col: one per row / column, else one value; ZA_NONE /
// ZB_NONE: 0, operand undeclared), DEQUANT: 5 = sa [1], 6 = sb, 7 = bias (HAS_BIAS) (float32),
// QUANT: 8 = ys [1] (float32), 9 = zy [1]; TOTALS_MEM with DEQUANT: 10 = totals (int32).
#ifdef QUANT
#include "activations.glsl"
#ifdef Y_I8  // the 8-bit output's range (Y_I8: int8, else uint8)
#define QMIN -128
#define QMAX 127
#else
#define QMIN 0
#define QMAX 255
#endif
#endif
layout(local_size_x = LOCAL_X) in;
// K_PAIRS: two K tiles per trip of the K loop, each with a constant shared-buffer index, and every
// loop of constant trips unrolled (NVIDIA's pragma), as matmul_warp.comp (the host's: 4 x 8 per
// invocation on GPUs; the H100, 4 x 8 with two K slices at 112x112: 128 -> 256 0.430 -> 0.388 ms,
// 256 -> 256 0.811 -> 0.747; the 4 x 4 forms 2x slower so: bench/RESULTS.md, int8w); else one
// tile per trip, its buffer t & 1.
#ifdef K_PAIRS
#pragma optionNV(unroll all)
#endif
uniform uint u_M;
uniform uint u_N;
uniform uint u_K;
uniform uint u_k0;
uniform uint u_k1;
uniform uint u_a_bs;
uniform uint u_b_bs;
uniform uint u_za_row;
uniform uint u_zb_col;
uniform uint u_sb_per;
#ifdef IMPLICIT
uniform uint u_G;  // groups: a_base and the output channels' index from bz % G
uniform uint u_HW;
uniform int u_H;
uniform int u_W;
uniform int u_OW;
uniform int u_sh;
uniform int u_sw;
uniform int u_pt;
uniform int u_pl;
uniform int u_dh;
uniform int u_dw;
#endif
#ifdef QUANT
uniform float u_lo;
uniform float u_hi;
#endif

#define KQ (BK / 4u)  // K quads of an A row per tile
#define TX (BN / (4u * uint(CB)))
#include "imatmul_tile.glsl"
#define BM IMATMUL_TILE_ROWS  // the tile's rows (64; shared with the host)
#define TY (BM / (4u * uint(RB)))
#define NACC (4 * RB * CB)  // acc[(4 r + i) CB + h]: row 4 TY r + 4 ty + i, columns 4 TX h + 4 tx ..
#define NT (LOCAL_X / uint(NSL))  // invocations per K slice
#if NSL == 2 && !defined(TOTALS_REGS)
#error "two K slices hand over the totals in registers (TOTALS_REGS)"
#endif
#define LA (BM * KQ / NT)  // A words per invocation and K tile
#define LB (BK * (BN / 4u) / NT)  // B words
#define BLOCK_TILES (IBLOCK_K / BK)

shared vec4 As[NSL][2][BK][BM / 4u];  // As[slice][buf][k][q ^ SWZ(k / 4)][i] = a[row 4q + i][k] - za
// A_SWIZZLE: the rows' quads of K row k at q ^ (k / 4) (8 / KQ), so that a warp's A stores (8 rows
// by 4 K quads, 4 scalars each) fall in 32 banks where unswizzled they share 8 (4-way conflicts);
// the reads XOR the same constant (k is unrolled), 4 consecutive quads staying in one 64 bytes.
#ifdef A_SWIZZLE
#define SWZ(kq) ((kq) * (8u / KQ))
#else
#define SWZ(kq) 0u
#endif
shared vec4 Bs[NSL][2][BK][BN / 4u];  // Bs[slice][buf][k][q][i] = b[k][column 4q + i] - zb
#ifdef TOTALS_SHARED
shared ivec4 Ts[NACC][NT];  // Ts[i][tid]: invocation tid's int32 totals of accumulator i
#endif

// The four 8-bit values of a word as floats 2^23 + u, u the byte (uint8) or the byte + 128 (int8,
// offset binary): the byte is placed in the mantissa of 2^23 (integer bit operations; NVIDIA
// GPUs convert int to float at a small fraction of their FMA rate). Subtracting 2^23 + (128) + z
// leaves the exact value - z.
vec4 bytes_of(uint w, bool signed8) {
  uint x = signed8 ? w ^ 0x80808080u : w;
  return uintBitsToFloat((uvec4(x, x >> 8u, x >> 16u, x >> 24u) & 0xffu) | 0x4B000000u);
}
float offset_of(bool signed8) { return signed8 ? 8388736.0 : 8388608.0; }  // 2^23 (+ 128)
uint byte_of(int v) { return uint(v) & 0xffu; }
#ifdef QIN
// The 8-bit value (B's type) of a float32 image value x, as QuantizeLinear computes it.
uint qin_byte(float x, float s, int z) {
  float v = div_rn(x, s);
#ifdef B_I8
  int q = int(clamp(roundEven(v) + float(z), -128.0, 127.0));
#else
  int q = int(clamp(roundEven(v) + float(z), 0.0, 255.0));
#endif
  return byte_of(is_nan(v) ? z : q);
}
#endif

#ifdef A_I8
#define A_SIGNED true
#else
#define A_SIGNED false
#endif
#ifdef B_I8
#define B_SIGNED true
#else
#define B_SIGNED false
#endif

#ifdef TOTALS_MEM
#ifdef DEQUANT
#define TOT_LOAD(e) load10(e)
#define TOT_STORE(e, v) store10(e, v)
#define TOT_ADD stored
#else
#define TOT_LOAD(e) load0(e)
#define TOT_STORE(e, v) store0(e, v)
#ifdef ACCUM
#define TOT_ADD true
#else
#define TOT_ADD stored
#endif
#endif
#endif

// Stores one 4 x 4 block's row of sums `tot`: row m, columns n .. n + 3 (of batch entry bz; the
// output channel row0 + m), through the epilogue. Called with each accumulator by a constant
// index (NVIDIA keeps an array indexed by a loop variable in local memory).
void store_row(ivec4 tot, uint m, uint n, uint bz, uint row0, bool stored) {
  if (m >= u_M) return;
#ifdef DEQUANT
#ifdef DQ_ROW
  float mult = float(load5(0u)) * float(load6(u_sb_per * (row0 + m)));
#ifdef HAS_BIAS
  float bias = float(load7(row0 + m));
#endif
#endif
#ifdef QUANT
  float ys = float(load8(0u)), zy = float(load9(0u));
  uint word = 0u;
#endif
#endif
  for (uint j = 0u; j < 4u; ++j) {
    if (n + j >= u_N) break;
    uint e = (bz * u_M + m) * u_N + n + j;
    int s = tot[j];
#ifdef TOTALS_MEM
#if defined(ACCUM) && !defined(DEQUANT)
    s += TOT_LOAD(e);
#else
    if (stored) s += TOT_LOAD(e);
#endif
#elif defined(ACCUM)
    s += load0(e);
#endif
#ifdef DEQUANT
#ifndef DQ_ROW
    float mult = float(load5(0u)) * float(load6(u_sb_per * (n + j)));
#endif
    float v = float(s) * mult;
#ifdef HAS_BIAS
#ifdef DQ_ROW
    v += bias;
#else
    v += float(load7(n + j));
#endif
#endif
#ifdef QUANT
    v = act_clip(v, u_lo, u_hi);
    float q = div_rn(v, ys);
    int r = is_nan(q) ? int(zy) : int(clamp(roundEven(q) + zy, float(QMIN), float(QMAX)));
#ifdef DQ_OUT
    store0(e, float(r - int(zy)) * ys);
#else
    word |= (uint(r) & 0xffu) << (8u * j);
    if (j == 3u) t0[e >> 2u] = word;  // e + 1 is a multiple of 4 (N % 4 == 0)
#endif
#else
    store0(e, v);
#endif
#else
    store0(e, s);
#endif
  }
}

#ifdef TOTALS_MEM
// Adds one block's exact sums `s` of row m, columns n .. to the totals in memory.
void add_row(ivec4 s, uint m, uint n, uint bz, bool stored) {
  if (m >= u_M) return;
  uint e = (bz * u_M + m) * u_N + n;
  for (uint j = 0u; j < 4u; ++j)
    if (n + j < u_N) TOT_STORE(e + j, s[j] + (TOT_ADD ? TOT_LOAD(e + j) : 0));
}
#endif

// X(i) for every accumulator index i, as constants.
#define FOR_ACC4(X, b) X(b) X(b + 1) X(b + 2) X(b + 3)
#if NACC == 4
#define FOR_ACC(X) FOR_ACC4(X, 0)
#elif NACC == 8
#define FOR_ACC(X) FOR_ACC4(X, 0) FOR_ACC4(X, 4)
#else
#define FOR_ACC(X) FOR_ACC4(X, 0) FOR_ACC4(X, 4) FOR_ACC4(X, 8) FOR_ACC4(X, 12)
#endif
// Row and first column of accumulator i: acc[(4 r + row) CB + h] is row 4 TY r + 4 ty + row,
// columns 4 TX h + 4 tx ..
#define ACC_M(i) (m0 + (uint(i) / uint(CB) / 4u) * 4u * TY + 4u * ty + (uint(i) / uint(CB)) % 4u)
#define ACC_N(i) (n0 + (uint(i) % uint(CB)) * 4u * TX + 4u * tx)

void main() {
  uint tid = gl_LocalInvocationID.x % NT, sl = gl_LocalInvocationID.x / NT, tx = tid % TX, ty = tid / TX;
  uint m0 = WORKGROUP_ID.y * BM, n0 = WORKGROUP_ID.x * BN, bz = WORKGROUP_ID.z;
#ifdef IMPLICIT
  uint row0 = (bz % u_G) * u_M;  // the group's first output channel
  uint a_base = (bz % u_G) * u_a_bs, b_base = bz * u_b_bs;
#else
  uint row0 = 0u;
  uint a_base = bz * u_a_bs, b_base = bz * u_b_bs;
#endif
  // Staging: A word e = tid + NT l is row e / KQ, K quad e % KQ (the same quad for every l);
  // B word e is K row e / (BN / 4), column quad e % (BN / 4) (the same columns for every l).
  uint akq = tid % KQ, bnq = tid % (BN / 4u), bn = n0 + 4u * bnq;
  int za[LA];
  uint zaw[LA];  // za's byte, four times: the word read outside A
  for (uint l = 0u; l < LA; ++l) {
    uint m = m0 + (tid + NT * l) / KQ;
#ifdef ZA_NONE
    za[l] = 0;
#else
    int z = int(load3(u_za_row * (row0 + min(m, u_M - 1u))));  // clamped: no load past za's end
    za[l] = m < u_M ? z : 0;
#endif
    zaw[l] = byte_of(za[l]) * 0x01010101u;
  }
  ivec4 zb;
#ifdef ZB_NONE
  zb = ivec4(0);
#else
  for (uint j = 0u; j < 4u; ++j) {
    int z = int(load4(u_zb_col * min(bn + j, u_N - 1u)));  // clamped: no load past zb's end
    zb[j] = bn + j < u_N ? z : 0;
  }
#endif
  uint zbw = byte_of(zb.x) | (byte_of(zb.y) << 8u) | (byte_of(zb.z) << 16u) | (byte_of(zb.w) << 24u);
  vec4 zbf = vec4(zb) + offset_of(B_SIGNED);  // exact: below 2^24
  float zaf[LA];
  for (uint l = 0u; l < LA; ++l) zaf[l] = float(za[l]) + offset_of(A_SIGNED);

#ifdef IMPLICIT
  // The input origins of this invocation's four columns (output positions); past N: outside.
  ivec4 ih0, iw0;
  for (uint j = 0u; j < 4u; ++j) {
    int n = int(bn + j), oh = n / u_OW, ow = n - oh * u_OW;
    ih0[j] = bn + j < u_N ? oh * u_sh - u_pt : -0x40000000;
    iw0[j] = ow * u_sw - u_pl;
  }
#endif
#ifdef QIN
  float qin_s = float(load5(0u));
#endif
  uint wa[LA], wb[LB];
#define FETCH(k0)                                                                                  \
  for (uint l = 0u; l < LA; ++l) {                                                                 \
    uint m = m0 + (tid + NT * l) / KQ, k = (k0) + 4u * akq;                                  \
    uint e = a_base + m * u_K + k;                                                                 \
    wa[l] = zaw[l];                                                                                \
    if (m < u_M) {                                                                                 \
      if (A_WORDS == 1) {                                                                          \
        if (k < u_k1) wa[l] = t1[e >> 2u];                                                         \
      } else {                                                                                     \
        for (uint j = 0u; j < 4u; ++j)                                                             \
          if (k + j < u_k1) wa[l] = (wa[l] & ~(0xffu << (8u * j))) | (byte_of(load1(e + j)) << (8u * j)); \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
  FETCH_B(k0)
#ifdef ROWQUAD
// The four columns are consecutive positions of one output row (stride 1 along rows, OW % 4 ==
// 0): where their four inputs lie inside the image, two aligned words and a funnel shift.
#define ROW_WORD                                                                                   \
  {                                                                                                \
    int ih = ih0.x + dh, iw = iw0.x + dw;                                                          \
    if (uint(ih) < uint(u_H) && iw >= 0 && iw + 3 < u_W) {                                         \
      uint e = cb + uint(ih * u_W + iw), sh = 8u * (e & 3u), lo = t2[e >> 2u];                     \
      /* the word of byte e + 3 (inside the image): lo itself where aligned, never a word past x */ \
      uint hi = t2[(e + 3u) >> 2u];                                                                \
      wb[l] = sh == 0u ? lo : (lo >> sh) | (hi << (32u - sh));                                     \
      continue;                                                                                    \
    }                                                                                              \
  }
#else
#define ROW_WORD
#endif
#ifdef QIN
#define QIN_BYTE(e) qin_byte(float(load2(e)), qin_s, zb.x)
#else
#define QIN_BYTE(e) ((t2[(e) >> 2u] >> (8u * ((e) & 3u))) & 0xffu)
#endif
#ifdef IMPLICIT
#define FETCH_B(k0)                                                                                \
  for (uint l = 0u; l < LB; ++l) {                                                                 \
    uint k = (k0) + (tid + NT * l) / (BN / 4u);                                               \
    wb[l] = zbw;                                                                                   \
    if (k < u_k1) {                                                                                \
      uint c = k / uint(IKH * IKW), r = k - c * uint(IKH * IKW), fr = r / uint(IKW);               \
      int dh = int(fr) * u_dh, dw = int(r - fr * uint(IKW)) * u_dw;                                \
      uint cb = b_base + c * u_HW;                                                                 \
      ROW_WORD                                                                                     \
      for (uint j = 0u; j < 4u; ++j) {                                                             \
        int ih = ih0[j] + dh, iw = iw0[j] + dw;                                                    \
        if (uint(ih) < uint(u_H) && uint(iw) < uint(u_W)) {                                        \
          uint e = cb + uint(ih * u_W + iw);                                                       \
          wb[l] = (wb[l] & ~(0xffu << (8u * j))) | (QIN_BYTE(e) << (8u * j));                      \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }
#else
#define FETCH_B(k0)                                                                                \
  for (uint l = 0u; l < LB; ++l) {                                                                 \
    uint k = (k0) + (tid + NT * l) / (BN / 4u);                                               \
    uint e = b_base + k * u_N + bn;                                                                \
    wb[l] = zbw;                                                                                   \
    if (k < u_k1) {                                                                                \
      if (B_WORDS == 1) {                                                                          \
        if (bn < u_N) wb[l] = t2[e >> 2u];                                                         \
      } else {                                                                                     \
        for (uint j = 0u; j < 4u; ++j)                                                             \
          if (bn + j < u_N) wb[l] = (wb[l] & ~(0xffu << (8u * j))) | (byte_of(load2(e + j)) << (8u * j)); \
      }                                                                                            \
    }                                                                                              \
  }
#endif
#define PUT(buf)                                                                 \
  for (uint l = 0u; l < LA; ++l) {                                               \
    uint m = (tid + NT * l) / KQ;                                           \
    vec4 v = bytes_of(wa[l], A_SIGNED) - zaf[l];                                 \
    As[sl][buf][4u * akq][(m / 4u) ^ SWZ(akq)][m % 4u] = v.x;                                     \
    As[sl][buf][4u * akq + 1u][(m / 4u) ^ SWZ(akq)][m % 4u] = v.y;                                \
    As[sl][buf][4u * akq + 2u][(m / 4u) ^ SWZ(akq)][m % 4u] = v.z;                                \
    As[sl][buf][4u * akq + 3u][(m / 4u) ^ SWZ(akq)][m % 4u] = v.w;                                \
  }                                                                              \
  for (uint l = 0u; l < LB; ++l)                                                 \
    Bs[sl][buf][(tid + NT * l) / (BN / 4u)][bnq] = bytes_of(wb[l], B_SIGNED) - zbf;

  vec4 acc[NACC];
#ifdef TOTALS_REGS
  ivec4 iacc[NACC];
#define INIT_ACC(i) acc[i] = vec4(0.0); iacc[i] = ivec4(0);
#elif defined(TOTALS_SHARED)
#define INIT_ACC(i) acc[i] = vec4(0.0); Ts[i][tid] = ivec4(0);
#else
#define INIT_ACC(i) acc[i] = vec4(0.0);
#endif
  FOR_ACC(INIT_ACC)
  bool stored = false;  // TOTALS_MEM: this launch's totals are in memory (a block was added there)
  uint nk = ((u_k1 - u_k0 + BK - 1u) / BK + uint(NSL) - 1u) / uint(NSL), kb = u_k0 + sl * nk * BK;  // this slice's tiles
  FETCH(kb)
  PUT(0u)
  workgroup_sync();
  // acc indexed by constants only (NVIDIA keeps a looped index's array in local memory).
#if CB == 2
#define FMA_COLS(r, i, av) \
  acc[(4 * r + i) * 2] += av * b0; \
  acc[(4 * r + i) * 2 + 1] += av * b1;
#define LOAD_B1 vec4 b1 = Bs[sl][cur][k][TX + tx];
#else
#define FMA_COLS(r, i, av) acc[4 * r + i] += av * b0;
#define LOAD_B1
#endif
#if RB == 2
#define FMA_ROW(i, C) FMA_COLS(0, i, a0.C) FMA_COLS(1, i, a1.C)
#define LOAD_A1 vec4 a1 = As[sl][cur][k][(TY + ty) ^ SWZ(k / 4u)];
#else
#define FMA_ROW(i, C) FMA_COLS(0, i, a0.C)
#define LOAD_A1
#endif
  // After each block of K tiles, its exact f32 sums into the int32 totals.
#ifdef TOTALS_REGS
#define FLUSH_REGS(i) iacc[i] += ivec4(acc[i]); acc[i] = vec4(0.0);
#define TILE_FLUSH if ((t + 1u) % BLOCK_TILES == 0u) { FOR_ACC(FLUSH_REGS) }
#elif defined(TOTALS_SHARED)
// (own slots: no barrier)
#define FLUSH_SHARED(i) Ts[i][tid] += ivec4(acc[i]); acc[i] = vec4(0.0);
#define TILE_FLUSH if ((t + 1u) % BLOCK_TILES == 0u) { FOR_ACC(FLUSH_SHARED) }
#elif defined(TOTALS_MEM)
#define FLUSH_MEM(i) add_row(ivec4(acc[i]), ACC_M(i), ACC_N(i), bz, stored); acc[i] = vec4(0.0);
#define TILE_FLUSH if ((t + 1u) % BLOCK_TILES == 0u && t + 1u < nk) { FOR_ACC(FLUSH_MEM) stored = true; }
#else
#define TILE_FLUSH
#endif
  // K tile t from buffer CUR (K_PAIRS: a constant): the next tile's words into registers, this
  // tile's K steps from shared memory, the block's flush, the next tile's stores to the other
  // buffer, one barrier.
#define TILE(CUR)                                                   \
  {                                                                 \
    uint cur = CUR;                                                 \
    if (t + 1u < nk) { FETCH(kb + (t + 1u) * BK) }                  \
    for (uint k = 0u; k < BK; ++k) {                                \
      vec4 a0 = As[sl][cur][k][ty ^ SWZ(k / 4u)];                   \
      vec4 b0 = Bs[sl][cur][k][tx];                                 \
      LOAD_A1 LOAD_B1                                               \
      FMA_ROW(0, x) FMA_ROW(1, y) FMA_ROW(2, z) FMA_ROW(3, w)       \
    }                                                               \
    TILE_FLUSH                                                      \
    if (t + 1u < nk) { PUT(cur ^ 1u) }                              \
    workgroup_sync();                                               \
  }
  // LOOP: GLTENSOR_CHECK_LOOPS counts the trips against the launch's loop_iterations
#ifdef K_PAIRS
  for (uint t = 0u; LOOP(t < nk); ++t) {
    TILE(0u)
    if (!(++t < nk)) break;
    TILE(1u)
  }
#else
  for (uint t = 0u; LOOP(t < nk); ++t) TILE(t & 1u)
#endif
#if NSL == 2
  // Slice 1's int32 totals to slice 0 through Bs (free after the loop's last barrier), as bit
  // patterns, accumulators 0-7 then 8-15: element j of Bs read flat.
#define BS_AT(j) Bs[(j) / (2u * BK * (BN / 4u))][((j) / (BK * (BN / 4u))) % 2u][((j) / (BN / 4u)) % BK][(j) % (BN / 4u)]
#define FLUSH_LAST(i) iacc[i] += ivec4(acc[i]);
  FOR_ACC(FLUSH_LAST)
#define HAND_PUT0(i) if (uint(i) < 8u) BS_AT(uint(i) * NT + tid) = intBitsToFloat(iacc[i]);
#define HAND_GET0(i) if (uint(i) < 8u) iacc[i] += floatBitsToInt(BS_AT(uint(i) * NT + tid));
#define HAND_PUT1(i) if (uint(i) >= 8u) BS_AT((uint(i) - 8u) * NT + tid) = intBitsToFloat(iacc[i]);
#define HAND_GET1(i) if (uint(i) >= 8u) iacc[i] += floatBitsToInt(BS_AT((uint(i) - 8u) * NT + tid));
  if (sl == 1u) { FOR_ACC(HAND_PUT0) }
  workgroup_sync();
  if (sl == 0u) { FOR_ACC(HAND_GET0) }
  workgroup_sync();
  if (sl == 1u) { FOR_ACC(HAND_PUT1) }
  workgroup_sync();
  if (sl == 1u) return;
  FOR_ACC(HAND_GET1)
#define STORE_ACC(i) store_row(iacc[i], ACC_M(i), ACC_N(i), bz, row0, stored);
#elif defined(TOTALS_REGS)
#define STORE_ACC(i) store_row(iacc[i] + ivec4(acc[i]), ACC_M(i), ACC_N(i), bz, row0, stored);
#elif defined(TOTALS_SHARED)
#define STORE_ACC(i) store_row(Ts[i][tid] + ivec4(acc[i]), ACC_M(i), ACC_N(i), bz, row0, stored);
#else
#define STORE_ACC(i) store_row(ivec4(acc[i]), ACC_M(i), ACC_N(i), bz, row0, stored);
#endif
  FOR_ACC(STORE_ACC)
}
