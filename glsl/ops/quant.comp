// Weight-only quantization (src/ops/quant.cpp; layout in include/gltensor/quant.hpp): symmetric,
// no zero point, f16 scales, rows padded with zeros to Kp = ceil(K / 32) * 32 columns.
//
//   Q8 (int8, one scale per output row):  d = f16(amax / 127),  q = clamp(roundEven(w / d), -127, 127)
//   Q4 (int4, one scale per 32 columns):  d = f16(m / -8) with m the block's value of largest |w|
//                                         (as ggml's q4_0), q = clamp(roundEven(w / d), -8, 7)
//   A zero row or block has d = 0 and q = 0. dequant = q * d (exact in f32: 8-bit q, 11-bit d).
//
// Bytes: Q8 row n is Kp bytes at n * Kp, q as two's complement; Q4 block b of row n is 16 bytes
// at (n * Kb + b) * 16 (Kb = Kp / 32), byte j holding column 32b + j in its low nibble and
// column 32b + j + 16 in its high nibble, each as q + 8.
//
// Variants (one per launch):
//   QUANTIZE Q4  invocation per block (GLOBAL_ID_1D < N * Kb). 0 = data words, 1 = scales, 2 = w
//   QUANTIZE Q8  workgroup per row (WORKGROUP_ID_1D < N), absmax reduced in shared memory.
//                0 = data words, 1 = scales, 2 = w
//   DEQUANTIZE   invocation per element of the [N, K] output. 0 = out, 1 = data, 2 = scales
layout(local_size_x = LOCAL_X) in;

uniform uint u_N;
uniform uint u_K;
uniform uint u_Kb;  // blocks of 32 per (padded) row

#ifdef QUANTIZE
layout(std430, binding = 0) buffer Data { uint data[]; };

float f16_round(float v) { return f16_bits_to_f32(f32_to_f16_bits(v)); }
// w[n][k], 0 past K (the pad columns): the load's column clamped to K - 1 (a row's last column,
// inside w) and its value replaced by a select, never a load past w's end (the last row's pad)
// guarded by a ternary that a compiler may evaluate speculatively.
float w_at(uint n, uint k) {
  float v = float(load2(n * u_K + min(k, u_K - 1u)));
  return k < u_K ? v : 0.0;
}
int quant(float w, float d, int lo, int hi) { return d == 0.0 ? 0 : clamp(int(roundEven(w / d)), lo, hi); }

#ifdef Q4
void main() {
  uint id = GLOBAL_ID_1D;
  if (id >= u_N * u_Kb) return;
  uint n = id / u_Kb, k0 = (id % u_Kb) * 32u;
  float m = 0.0, amax = 0.0;
  for (uint j = 0u; j < 32u; ++j) {
    float v = w_at(n, k0 + j);
    if (abs(v) > amax) {
      amax = abs(v);
      m = v;
    }
  }
  float d = f16_round(m / -8.0);
  for (uint i = 0u; i < 4u; ++i) {
    uint word = 0u;
    for (uint j = 0u; j < 4u; ++j) {
      uint c = 4u * i + j;
      uint lo = uint(quant(w_at(n, k0 + c), d, -8, 7) + 8);
      uint hi = uint(quant(w_at(n, k0 + c + 16u), d, -8, 7) + 8);
      word |= (lo | (hi << 4)) << (8u * j);
    }
    data[id * 4u + i] = word;
  }
  store1(id, d);
}
#else  // Q8
shared float s_max[LOCAL_X];
void main() {
  uint n = WORKGROUP_ID_1D, t = gl_LocalInvocationID.x;
  if (n >= u_N) return;  // uniform per workgroup
  float amax = 0.0;
  for (uint k = t; LOOP(k < u_K); k += LOCAL_X) amax = max(amax, abs(w_at(n, k)));
  s_max[t] = amax;
  barrier();
  for (uint s = LOCAL_X / 2u; s > 0u; s >>= 1) {
    if (t < s) s_max[t] = max(s_max[t], s_max[t + s]);
    barrier();
  }
  float d = f16_round(s_max[0] / 127.0);
  uint words = u_Kb * 8u;
  for (uint i = t; LOOP(i < words); i += LOCAL_X) {
    uint word = 0u;
    for (uint j = 0u; j < 4u; ++j) word |= (uint(quant(w_at(n, 4u * i + j), d, -127, 127)) & 0xffu) << (8u * j);
    data[n * words + i] = word;
  }
  if (t == 0u) store1(n, d);
}
#endif

#else  // DEQUANTIZE
layout(std430, binding = 1) readonly buffer Data { uint data[]; };
layout(std430, binding = 2) readonly buffer Scales { uint scales[]; };
float scale_at(uint i) { return f16_bits_to_f32(scales[i >> 1] >> ((i & 1u) * 16u)); }

void main() {
  uint id = GLOBAL_ID_1D;
  if (id >= u_N * u_K) return;
  uint n = id / u_K, k = id % u_K;
#ifdef Q4
  uint blk = n * u_Kb + k / 32u, c = k % 32u;
  uint byte_ = (data[blk * 4u + (c % 16u) / 4u] >> (8u * (c % 4u))) & 0xffu;
  float q = float(int(c < 16u ? byte_ & 0xfu : byte_ >> 4) - 8);
  store0(id, q * scale_at(blk));
#else
  uint e = n * u_Kb * 32u + k;
  float q = float(bitfieldExtract(int(data[e >> 2]), int(8u * (e & 3u)), 8));
  store0(id, q * scale_at(n));
#endif
}
#endif
