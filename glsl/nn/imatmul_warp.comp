// The QDQ convolution's GEMM on the f32 warp kernel (glsl/ops/matmul_warp.comp, included below
// unchanged; src/nn/quant_int.cpp, qconv_warp): y = requant((a - za) [M, K] @ (b - zb) [K, N]) with
// 8-bit a (the filter [O, C KH KW]) and b (im2col's 8-bit columns [C KH KW, OH OW] per image).
// The kernel's quad loads read one 32-bit word of four 8-bit values and convert them to floats
// (2^23 + byte, less 2^23 + zero point: exact differences in [-255, 255]); every product is
// exact in f32, and so is each partial sum below 2^24. Past that the sums round as f32 sums do:
// the float graph DequantizeLinear -> Conv -> QuantizeLinear that the QDQ pattern stands for sums
// in f32 as well (ONNX Runtime's CPU kernels fuse it into exact int32 sums instead), so the
// host takes this kernel only for that pattern (IntRequant::f32_sums), never for ConvInteger,
// QLinearConv or MatMulInteger, whose int32 sums must be exact (imatmul.comp).
// The matmul kernel's hooks, as macros before it: quadA / quadB (its quad loads, here of 8-bit
// words), KERNEL_SETUP (B's zero point read once per invocation), ACT(x) (its epilogue's
// per-element expression, applied to the raw sum with alpha 1: here the requantization of row m,
// imatmul.comp's QUANT expression for expression, its 8-bit value kept a float) and, for an
// 8-bit output, its f32 store `t04[e >> 2u] = floatBitsToUint(v)` turned into one word of four
// 8-bit values at e / 4 of the 8-bit output (t0; N % 4 == 0: e is a multiple of 4).
// A_F32 / B_F32 (a lab form, IntRequant::f32_columns): the operand is already float32 differences
// (the host's quadA / quadB: matmul's f32 quad loads, no zero point).
// Defines: the warp kernel's (BM, BK, TN, WARP_TILE, EDGE, K_LOOP, A_SHK; BD, BN, A_KMAJOR, B_KMAJOR
// and OUT_F32 fixed below), A_I8 / B_I8 (the operand is int8, else uint8), ZA_NONE / ZB_NONE (zero
// point 0, operand undeclared), HAS_BIAS, Y_I8 (an int8 output range, else uint8), DQ_OUT (float32 output:
// float(q - zy) * ys, as quant_int.comp's DEQUANTIZE), K % 4 == 0 and N % 4 == 0 (the host's).
// Operands: 0 = c (8-bit [batch, M, N]; DQ_OUT float32), 1 = a (8-bit [M, K], offset 0), 2 = b
// (8-bit [batch, K, N]), 3 = za (one value, or one per row: u_za_row), 4 = zb (one value), 5 = sa
// [1], 6 = sb (one value or one per row: u_sb_per), 7 = bias [M] (float32), 8 = ys [1], 9 = zy [1].

// IW_SPLIT (split-K, the host's for few output tiles: warp_qconv): the warp kernel with matmul.glsl's
// SPLIT_K, K in u_nsplit chunks of u_kchunk over grid z; each workgroup writes its chunk's raw f32
// sum (no epilogue) to c [u_nsplit, batch, M, N] (float32). Each chunk's sum is exact below 2^24 as
// the whole one is. IW_SUM: the summing dispatch after it, one invocation per quad of outputs: the
// chunks' sums of the quad added in chunk order, then the requantizing epilogue (iw_requant) and
// the 8-bit store, one dispatch (operand 1 = the partial sums, float32 [u_nsplit, batch, M, N];
// operands 0 and 5-9 as below; 2-4 unbound).

// The warp kernel's defines this kernel fixes (fewer per variant: at most 32): one batch dim (the
// columns' images), 128 columns per tile, A read along K, B row-major, the f32 store hook.
#define BD 1
#define BN 128u
#define A_KMAJOR 1
#define B_KMAJOR 0
#define OUT_F32
#ifdef Y_I8
#define QMIN -128
#define QMAX 127
#else
#define QMIN 0
#define QMAX 255
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
uniform uint u_za_row;
uniform uint u_sb_per;
uniform float u_lo;
uniform float u_hi;

// Word w's four 8-bit values less a zero point, exact: off = 2^23 + z and off2 = 2^15 + z, z the
// zero point (+ 128 for int8, read as offset binary u = byte ^ 0x80). Bytes 0 and 2 as floats 2^23 + u
// less off; bytes 1 and 3 masked in place, 2^23 + 256 u, times 2^-8 (exact: 2^15 + u) less off2
// (one FMA where contracted): one shift per word, not three (the H100: the wide QDQ net's GEMMs at
// 112x112 0.887-0.888 -> 0.881-0.883 ms; bench/RESULTS.md, int8aa).
vec4 iw_diffs(uint w, bool signed8, float off, float off2) {
  uint x = signed8 ? w ^ 0x80808080u : w, y = x >> 16u;
  return vec4(uintBitsToFloat((x & 0xffu) | 0x4B000000u) - off,
              uintBitsToFloat((x & 0xff00u) | 0x4B000000u) * 0.00390625 - off2,
              uintBitsToFloat((y & 0xffu) | 0x4B000000u) - off,
              uintBitsToFloat((y & 0xff00u) | 0x4B000000u) * 0.00390625 - off2);
}
float iw_offset(bool signed8) { return signed8 ? 8388736.0 : 8388608.0; }  // 2^23 (+ 128)
float iw_offset2(bool signed8) { return signed8 ? 32896.0 : 32768.0; }     // 2^15 (+ 128)
// B's zero point (one value) as off and off2, read and converted once per invocation (the warp
// kernel's KERNEL_SETUP hook), not with every word (the H100: 0.902-0.905 -> 0.887-0.888 ms, as above).
#ifndef IW_SUM
float iw_zb_off, iw_zb_off2;
void iw_setup() {
#ifdef ZB_NONE
  float z = 0.0;
#else
  float z = float(load4(0u));
#endif
  iw_zb_off = iw_offset(B_SIGNED) + z;
  iw_zb_off2 = iw_offset2(B_SIGNED) + z;
}
#define KERNEL_SETUP iw_setup();
#endif

#if !defined(A_F32) && !defined(IW_SUM)
vec4 quadA(uint i);  // the quad loads, defined after the kernel (its uniform u_qa_s)
#endif
#if !defined(B_F32) && !defined(IW_SUM)
vec4 quadB(uint i);
#endif
#ifdef IW_SPLIT
#define SPLIT_K
#else
float iw_requant(float s, uint m);  // defined after the kernel (activations.glsl's act_clip)
#define ACT(x) iw_requant(x, m)
#endif
#if !defined(DQ_OUT) && !defined(IW_SPLIT)
// The four requantized values of a quad of columns (exact integers as floats) as one word.
uint iw_pack(vec4 v) {
  // 1.5 2^23 + v (in [2^23, 2^24) for v an integer of magnitude below 2^22: spacing 1) holds
  // 2^22 + v in its mantissa bits, so its low byte is v's (two's complement for v < 0), without a
  // float-to-int conversion
  uvec4 b = floatBitsToUint(v + 12582912.0) & 0xffu;
  return b.x | (b.y << 8u) | (b.z << 16u) | (b.w << 24u);
}
#define t04 t0
#define floatBitsToUint(v) iw_pack(v)
#endif

#ifdef IW_SUM
layout(local_size_x = LOCAL_X) in;
uniform uint u_nq;      // quads of outputs: batch M N / 4
uniform uint u_N;       // columns per row (a multiple of 4)
uniform uint u_M;       // rows per image
uniform uint u_nsplit;  // the chunks' sums per output
#include "activations.glsl"
float iw_requant(float s, uint m);
void main() {
  uint q = GLOBAL_ID_1D;
  if (q >= u_nq) return;
  vec4 s = vec4(0.0);
  for (uint k = 0u; LOOP(k < u_nsplit); ++k) s += uintBitsToFloat(t14[k * u_nq + q]);
  uint m = ((4u * q) / u_N) % u_M;
  vec4 v = vec4(iw_requant(s.x, m), iw_requant(s.y, m), iw_requant(s.z, m), iw_requant(s.w, m));
#ifdef DQ_OUT
  t04[q] = floatBitsToUint(v);
#else
  t0[q] = iw_pack(v);
#endif
}
#else
#include "matmul_warp.comp"
#endif

#ifndef IW_SPLIT
// Row m's sum s dequantized (s * (sa * sb[m]) + bias[m]), activated and quantized: the 8-bit
// value r as a float, or with DQ_OUT float(r - zy) * ys.
float iw_requant(float s, uint m) {
  float v = s * (float(load5(0u)) * float(load6(u_sb_per * m)));
#ifdef HAS_BIAS
  v += float(load7(m));
#endif
  v = act_clip(v, u_lo, u_hi);
  float ys = float(load8(0u)), zy = float(load9(0u));
  float q = div_rn(v, ys);
  // r as a float (an integer, the value of imatmul.comp's int r): no conversions to int and back
  // (the H100: the wide net's GEMMs 0.885-0.888 -> 0.881-0.883 ms, as above)
  float r = is_nan(q) ? zy : clamp(roundEven(q) + zy, float(QMIN), float(QMAX));
#ifdef DQ_OUT
  return (r - zy) * ys;
#else
  return r;
#endif
}

#endif  // IW_SPLIT

#if !defined(A_F32) && !defined(IW_SUM)
// A's word i (row i / u_qa_s: A starts at element 0), less its row's zero point.
vec4 quadA(uint i) {
#ifdef ZA_NONE
  float z = 0.0;
#else
  float z = float(load3(u_za_row * (i / u_qa_s)));
#endif
  return iw_diffs(t1[i], A_SIGNED, iw_offset(A_SIGNED) + z, iw_offset2(A_SIGNED) + z);
}
#endif
#if !defined(B_F32) && !defined(IW_SUM)
// B's word i, less the image's zero point.
vec4 quadB(uint i) { return iw_diffs(t2[i], B_SIGNED, iw_zb_off, iw_zb_off2); }
#endif
