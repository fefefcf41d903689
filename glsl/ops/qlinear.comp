// y = x @ dequant(W)^T (+ bias) over weight-only quantized W (src/ops/quant.cpp; the byte layout
// is glsl/ops/quant.comp's and include/gltensor/quant.hpp's). x f32 [M, K] contiguous, y f32
// [M, N]. Weights are dequantized in registers (GEMV) or into shared memory (GEMM), never to a
// buffer. Each launch covers the K blocks [u_b0, u_b1): longer K runs as several launches (split
// within the loop limit), those after the first adding to y (u_accumulate); bias with the first.
// No subgroup operations (they are optional in GL ES): reductions go through shared memory.
//
// Variants: Q4 or Q8 (the format), and
//   GEMV (decode: few rows of x)  workgroup (WORKGROUP_ID.x, .y) = LOCAL_X / TPR groups of ROWS
//        output features x MT rows of x; a group's TPR invocations stride over the K blocks
//        (invocation t takes blocks t, t + TPR, ...: neighbours read neighbouring 16-byte words),
//        each keeping MT * ROWS partial dot products, summed by a tree in shared memory. TPR: the
//        blocks rounded up to a power of two in [8, 64] (at least MT * ROWS), so that short rows
//        keep invocations busy; each block of x is loaded once for the ROWS features. Weights
//        become floats by bit tricks, not conversions (block_dot). Q4 scales each block's dot
//        product by its scale (one multiply per 32 products, as ggml's mul_mat_vec); Q8 scales
//        the row's sum once. X_VEC4: K % 4 == 0, x read as vec4s. SERIAL (software rasterizers):
//        an invocation per output feature loops over the blocks itself, no reduction.
//        WORDS: the group's invocations stride over the rows' 32-bit words instead of blocks
//        (invocation t takes words t, t + TPR, ..., UNROLL of them per trip, all ROWS x UNROLL
//        words loaded before any is used), so that neighbours read neighbouring words and
//        neighbouring quads of x: a block per invocation reads x 128 bytes apart across a
//        subgroup, a cache line per invocation per load. Q4 word q of a block holds columns
//        4q..4q+3 (low nibbles) and 4q+16..4q+19 (high); Q8 word i columns 4i..4i+3.
//        MANTISSA (Q4 WORDS): nibbles become floats in two instructions (accumulate_words).
//        PAIRS (Q4 WORDS): an invocation's unit is two adjacent words (a uvec2, one scale).
//   GEMM (prefill: many rows)     workgroup (WORKGROUP_ID.x, .y) = a 64 x 64 tile of y (features x
//        rows); per K block, 64 x 32 of x and the 64 x 32 dequantized weights go to shared
//        memory; each of the 256 invocations accumulates a 4 x 4 sub-tile (strided by 16).
//
// Operands: 0 = y, 1 = x, 2 = packed data, 3 = scales (f16 pairs), 4 = bias (HAS_BIAS).
layout(local_size_x = LOCAL_X) in;

layout(std430, binding = 0) buffer Y { float y[]; };
#ifdef X_VEC4
layout(std430, binding = 1) readonly buffer X { vec4 x4[]; };
#else
layout(std430, binding = 1) readonly buffer X { float x1[]; };
#endif
#if defined(WORDS) && defined(PAIRS)
layout(std430, binding = 2) readonly buffer Data { uvec2 wq[]; };  // Q4: 2 per block
#elif defined(WORDS)
layout(std430, binding = 2) readonly buffer Data { uint wq[]; };  // Q4: 4 per block, Q8: 8
#else
layout(std430, binding = 2) readonly buffer Data { uvec4 wq[]; };  // Q4: 1 per block, Q8: 2
#endif
layout(std430, binding = 3) readonly buffer Scales { uint scales[]; };
#ifdef HAS_BIAS
layout(std430, binding = 4) readonly buffer Bias { float bias[]; };
#endif

uniform uint u_M;
uniform uint u_N;
uniform uint u_K;
uniform uint u_Kb;
uniform uint u_b0;
uniform uint u_b1;
uniform uint u_accumulate;

float scale_at(uint i) { return f16_bits_to_f32(scales[i >> 1] >> ((i & 1u) * 16u)); }

// The bytes of a word as signed values (Q8) and as its low and high nibbles less 8 (Q4).
vec4 bytes_i8(uint w) {
  int v = int(w);
  return vec4(bitfieldExtract(v, 0, 8), bitfieldExtract(v, 8, 8), bitfieldExtract(v, 16, 8), bitfieldExtract(v, 24, 8));
}
vec4 nibbles_lo(uint w) { return vec4(uvec4(w, w >> 8, w >> 16, w >> 24) & 0xfu) - 8.0; }
vec4 nibbles_hi(uint w) { return vec4(uvec4(w >> 4, w >> 12, w >> 20, w >> 28) & 0xfu) - 8.0; }

// y[m, n] from the launch's sum v.
void store_y(uint m, uint n, float v) {
  uint i = m * u_N + n;
  if (u_accumulate != 0u) {
    v += y[i];
  } else {
#ifdef HAS_BIAS
    v += bias[n];
#endif
  }
  y[i] = v;
}

#ifdef GEMV
// x[m, k..k+3], zero past K (a NaN or Inf in x meets every weight of its column, never a pad).
// The loads are clamped to row m's last element (or quad) and their values past K replaced by a
// select: no load past x's end (the last row's pad columns), even one a ternary would discard.
vec4 x_quad(uint m, uint k) {
#ifdef X_VEC4
  vec4 v = x4[(m * u_K + min(k, u_K - 4u)) >> 2];
  return k < u_K ? v : vec4(0.0);
#else
  uint b = m * u_K, kl = u_K - 1u;
  vec4 v = vec4(x1[b + min(k, kl)], x1[b + min(k + 1u, kl)], x1[b + min(k + 2u, kl)], x1[b + min(k + 3u, kl)]);
  return mix(vec4(0.0), v, lessThan(uvec4(k) + uvec4(0u, 1u, 2u, 3u), uvec4(u_K)));
#endif
}

#define NACC (MT * ROWS)

// The dot product of a block's 32 weights (4 words: Q4's nibbles, or Q8's bytes of words w0 and
// w1) with x quads xs[0..7]. Each 4-bit or 8-bit field u becomes a float without a conversion
// instruction (those run at a fraction of the FMA rate): the bits 0x4b000000 | u are the float
// 2^23 + u, and subtracting 2^23 + offset (Q4: 8; Q8: 128, after flipping the sign bits) leaves
// u - offset exactly.
vec4 fields(uint w, uint shift, uint mask, float bias) {
  uvec4 u = (uvec4(w) >> (uvec4(0u, 8u, 16u, 24u) + shift)) & mask;
  return uintBitsToFloat(u | 0x4b000000u) - bias;
}
#ifdef Q4
float block_dot(uvec4 w, vec4 xs[8]) {
  vec4 acc = vec4(0.0);
  for (uint i = 0u; i < 4u; ++i) {
    acc += fields(w[i], 0u, 0xfu, 8388616.0) * xs[i];
    acc += fields(w[i], 4u, 0xfu, 8388616.0) * xs[i + 4u];
  }
  return dot(acc, vec4(1.0));
}
#else
float block_dot(uvec4 w0, uvec4 w1, vec4 xs[8]) {
  vec4 acc = vec4(0.0);
  for (uint i = 0u; i < 4u; ++i) {
    acc += fields(w0[i] ^ 0x80808080u, 0u, 0xffu, 8388736.0) * xs[i];
    acc += fields(w1[i] ^ 0x80808080u, 0u, 0xffu, 8388736.0) * xs[i + 4u];
  }
  return dot(acc, vec4(1.0));
}
#endif

#ifdef WORDS
// Units (an invocation's share per trip) per block: PAIRS (Q4) two adjacent words, else a word.
#if defined(Q4) && defined(PAIRS)
#define WPB 2u
#define WORD uvec2
#elif defined(Q4)
#define WPB 4u
#define WORD uint
#else
#define WPB 8u
#define WORD uint
#endif
// Adds words i0 + j * TPR (j < UNROLL; those at or past iend add nothing) of output features
// n0.. (ROWS) against rows m0.. (MT) of x to acc[m * ROWS + r]; rows past N or M repeat the last.
void accumulate_words(uint i0, uint iend, uint n0, uint m0, inout float acc[NACC]) {
  WORD w[UNROLL * ROWS];
#ifdef Q4
  float d[UNROLL * ROWS];
#endif
  for (uint j = 0u; j < UNROLL; ++j) {
    uint i = min(i0 + j * TPR, iend - 1u);
    for (uint r = 0u; r < ROWS; ++r) {
      uint n = min(n0 + r, u_N - 1u);
      w[j * ROWS + r] = wq[n * u_Kb * WPB + i];
#ifdef Q4
      d[j * ROWS + r] = scale_at(n * u_Kb + i / WPB);
#endif
    }
  }
  for (uint m = 0u; m < MT; ++m) {
    uint mm = min(m0 + m, u_M - 1u);
    for (uint j = 0u; j < UNROLL; ++j) {
      uint i = i0 + j * TPR;
      bool live = i < iend;
#if defined(Q4) && defined(PAIRS)
      // Words 2h and 2h + 1 of block i / 2 (h = i % 2): columns 8h..8h+7 and 8h+16..8h+23.
      uint k = (i / 2u) * 32u + (i % 2u) * 8u;
      vec4 x0 = live ? x_quad(mm, k) : vec4(0.0), x1 = live ? x_quad(mm, k + 4u) : vec4(0.0);
      vec4 x2 = live ? x_quad(mm, k + 16u) : vec4(0.0), x3 = live ? x_quad(mm, k + 20u) : vec4(0.0);
      for (uint r = 0u; r < ROWS; ++r) {
        uvec2 v = w[j * ROWS + r];
        vec4 p = fields(v.x, 0u, 0xfu, 8388616.0) * x0 + fields(v.y, 0u, 0xfu, 8388616.0) * x1 +
                 fields(v.x, 4u, 0xfu, 8388616.0) * x2 + fields(v.y, 4u, 0xfu, 8388616.0) * x3;
        acc[m * ROWS + r] += dot(p, vec4(1.0)) * d[j * ROWS + r];
      }
#elif defined(Q4)
      uint k = (i / 4u) * 32u + (i % 4u) * 4u;
      vec4 xl = live ? x_quad(mm, k) : vec4(0.0), xh = live ? x_quad(mm, k + 16u) : vec4(0.0);
#ifdef MANTISSA
      // Two instructions a field: u into the mantissa's top bits makes the float 1 + u / 16, and
      // sum((u - 8) x) = 16 (sum((1 + u / 16) x) - 1.5 sum(x)), the sum of x once per word for
      // the ROWS features. An infinite x (or a sum that overflows) takes the exact form instead,
      // which keeps Inf * w as IEEE has it (Inf - Inf would be NaN).
      float xsum = 1.5 * (dot(xl, vec4(1.0)) + dot(xh, vec4(1.0)));
      bool finite = !isinf(xsum) && !isnan(xsum);
#endif
      for (uint r = 0u; r < ROWS; ++r) {
        uint v = w[j * ROWS + r];
#ifdef MANTISSA
        if (finite) {
          vec4 lo = uintBitsToFloat(((uvec4(v << 19, v << 11, v << 3, v >> 5)) & 0x00780000u) | 0x3f800000u);
          vec4 hi = uintBitsToFloat(((uvec4(v << 15, v << 7, v >> 1, v >> 9)) & 0x00780000u) | 0x3f800000u);
          acc[m * ROWS + r] += (dot(lo, xl) + dot(hi, xh) - xsum) * (16.0 * d[j * ROWS + r]);
          continue;
        }
#endif
        vec4 p = fields(v, 0u, 0xfu, 8388616.0) * xl + fields(v, 4u, 0xfu, 8388616.0) * xh;
        acc[m * ROWS + r] += dot(p, vec4(1.0)) * d[j * ROWS + r];
      }
#else
      vec4 xq = live ? x_quad(mm, 4u * i) : vec4(0.0);
      for (uint r = 0u; r < ROWS; ++r)
        acc[m * ROWS + r] += dot(fields(w[j * ROWS + r] ^ 0x80808080u, 0u, 0xffu, 8388736.0), xq);
#endif
    }
  }
}
#else
// Adds K block b of output features n0.. (ROWS) against rows m0.. (MT) of x to acc[m * ROWS + r]
// (rows past N or M repeat the last one; their sums are not stored). Each row of x's block is
// loaded once for the ROWS features.
void accumulate_block(uint b, uint n0, uint m0, inout float acc[NACC]) {
#ifdef Q4
  uvec4 w[ROWS];
  float d[ROWS];
  for (uint r = 0u; r < ROWS; ++r) {
    uint blk = min(n0 + r, u_N - 1u) * u_Kb + b;
    w[r] = wq[blk];
    d[r] = scale_at(blk);
  }
#else
  uvec4 w[2u * ROWS];
  for (uint r = 0u; r < ROWS; ++r) {
    uint blk = min(n0 + r, u_N - 1u) * u_Kb + b;
    w[2u * r] = wq[2u * blk];
    w[2u * r + 1u] = wq[2u * blk + 1u];
  }
#endif
  for (uint m = 0u; m < MT; ++m) {
    uint mm = min(m0 + m, u_M - 1u), k0 = b * 32u;
    vec4 xs[8];
    for (uint i = 0u; i < 8u; ++i) xs[i] = x_quad(mm, k0 + 4u * i);
    for (uint r = 0u; r < ROWS; ++r) {
#ifdef Q4
      acc[m * ROWS + r] += block_dot(w[r], xs) * d[r];
#else
      acc[m * ROWS + r] += block_dot(w[2u * r], w[2u * r + 1u], xs);
#endif
    }
  }
}
#endif  // WORDS

// y[m, n] from a finished sum (Q8: times the row's scale).
void finish(uint m, uint n, float v) {
  if (m >= u_M || n >= u_N) return;
#ifdef Q8
  v *= scale_at(n);
#endif
  store_y(m, n, v);
}

#ifdef SERIAL
// Software rasterizers: an invocation per ROWS output features, all of the launch's K blocks in
// one loop (no barriers: llvmpipe runs a workgroup's invocations as SIMD lanes of one thread).
void main() {
  uint n0 = GLOBAL_ID.x * ROWS, m0 = WORKGROUP_ID.y * MT;
  if (n0 >= u_N) return;
  float acc[NACC];
  for (uint i = 0u; i < NACC; ++i) acc[i] = 0.0;
  for (uint b = u_b0; LOOP(b < u_b1); ++b) accumulate_block(b, n0, m0, acc);
  for (uint i = 0u; i < NACC; ++i) finish(m0 + i / ROWS, n0 + i % ROWS, acc[i]);
}
#else
shared float s_red[NACC * LOCAL_X];

// LOCAL_X / TPR groups of TPR invocations, each group ROWS output features.
void main() {
  uint t = gl_LocalInvocationID.x, g = t / TPR, lt = t % TPR;
  uint n0 = (WORKGROUP_ID.x * (LOCAL_X / TPR) + g) * ROWS, m0 = WORKGROUP_ID.y * MT;
  float acc[NACC];
  for (uint i = 0u; i < NACC; ++i) acc[i] = 0.0;
#ifdef WORDS
  uint iend = u_b1 * WPB;
  for (uint i = u_b0 * WPB + lt; LOOP(i < iend); i += TPR * UNROLL) accumulate_words(i, iend, n0, m0, acc);
#else
  for (uint b = u_b0 + lt; LOOP(b < u_b1); b += TPR) accumulate_block(b, n0, m0, acc);
#endif
  for (uint i = 0u; i < NACC; ++i) s_red[i * LOCAL_X + t] = acc[i];
  barrier();
  for (uint s = TPR / 2u; s > 0u; s >>= 1) {
    if (lt < s)
      for (uint i = 0u; i < NACC; ++i) s_red[i * LOCAL_X + t] += s_red[i * LOCAL_X + t + s];
    barrier();
  }
  if (lt < NACC) finish(m0 + lt / ROWS, n0 + lt % ROWS, s_red[lt * LOCAL_X + g * TPR]);
}
#endif

#else  // GEMM: LOCAL_X = 256
shared float s_x[32 * 64];  // [k][row of x]
shared float s_w[32 * 64];  // [k][feature]

void main() {
  uint t = gl_LocalInvocationID.x, tx = t % 16u, ty = t / 16u;
  uint n0 = WORKGROUP_ID.x * 64u, m0 = WORKGROUP_ID.y * 64u;
  float acc[16];
  for (uint i = 0u; i < 16u; ++i) acc[i] = 0.0;
  for (uint b = u_b0; LOOP(b < u_b1); ++b) {
    uint k0 = b * 32u;
    for (uint e = t; e < 2048u; e += 256u) {  // x: 64 rows x 32 columns
      uint r = e / 32u, c = e % 32u, m = m0 + r, k = k0 + c;
      float x = x1[min(m, u_M - 1u) * u_K + min(k, u_K - 1u)];  // clamped: no load past x's end
      s_x[c * 64u + r] = m < u_M && k < u_K ? x : 0.0;
    }
#ifdef Q4
    {  // 64 features x 4 words
      uint r = t / 4u, i = t % 4u, n = n0 + r;
      uint blk = min(n, u_N - 1u) * u_Kb + b;
      float d = n < u_N ? scale_at(blk) : 0.0;
      uint w = wq[blk][i];
      vec4 lo = nibbles_lo(w) * d, hi = nibbles_hi(w) * d;
      for (uint j = 0u; j < 4u; ++j) {
        s_w[(4u * i + j) * 64u + r] = lo[j];
        s_w[(4u * i + j + 16u) * 64u + r] = hi[j];
      }
    }
#else
    for (uint e = t; e < 512u; e += 256u) {  // 64 features x 8 words
      uint r = e / 8u, i = e % 8u, n = n0 + r;
      uint nn = min(n, u_N - 1u);
      float d = n < u_N ? scale_at(nn) : 0.0;
      vec4 v = bytes_i8(wq[2u * (nn * u_Kb + b) + i / 4u][i % 4u]) * d;
      for (uint j = 0u; j < 4u; ++j) s_w[(4u * i + j) * 64u + r] = v[j];
    }
#endif
    barrier();
    for (uint c = 0u; c < 32u; ++c) {
      vec4 a = vec4(s_x[c * 64u + ty], s_x[c * 64u + ty + 16u], s_x[c * 64u + ty + 32u], s_x[c * 64u + ty + 48u]);
      vec4 w = vec4(s_w[c * 64u + tx], s_w[c * 64u + tx + 16u], s_w[c * 64u + tx + 32u], s_w[c * 64u + tx + 48u]);
      for (uint i = 0u; i < 4u; ++i) {
        acc[i * 4u + 0u] += a[i] * w.x;
        acc[i * 4u + 1u] += a[i] * w.y;
        acc[i * 4u + 2u] += a[i] * w.z;
        acc[i * 4u + 3u] += a[i] * w.w;
      }
    }
    barrier();
  }
  for (uint i = 0u; i < 4u; ++i)
    for (uint j = 0u; j < 4u; ++j) {
      uint m = m0 + ty + 16u * i, n = n0 + tx + 16u * j;
      if (m < u_M && n < u_N) store_y(m, n, acc[i * 4u + j]);
    }
}
#endif
