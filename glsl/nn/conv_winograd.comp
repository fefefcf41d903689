// Winograd convolution F(M x M, 3 x 3) (Lavin & Gray 2015) of a 3x3, stride-1, undilated
// convolution of one group (f32): the output in tiles of M x M positions (M = WG_M: 2 or 4),
// each from an ALPHA x ALPHA input tile (ALPHA = M + 2), as
//   Y = A^T [ sum over c of (G g[o, c] G^T) .* (B^T d[c] B) ] A,
// the sum over c for each of the ALPHA^2 = T elements one GEMM: nn/conv.cpp batches them,
// M_t [O, P] = U_t [O, C] @ V_t [C, P] (t < T, P = N * TH * TW tiles), between the three stages
// of this file, one per define:
// WG_WEIGHT: U [T, O, C] from w [O, C, 3, 3] (strided): an invocation per (o, c) (GLOBAL_ID_1D =
//            o * C + c), U[t, o, c] = (G w[o, c] G^T)[t]. Operand 0 = U, 1 = w.
// WG_INPUT:  V [T, C, P] from x [N, C, H, W] (strided): an invocation per (tile p, channel c)
//            (grid x: tiles, y: channels), V[t, c, p] = (B^T d B)[t] where d is the input tile
//            at rows p's th * M - u_pt + [0, ALPHA), columns tw * M - u_pl + [0, ALPHA) (zero
//            outside the image: each load's index clamped into the image, the value then
//            selected). Operand 0 = V, 1 = x.
// WG_OUTPUT: y [N, O, OH, OW] (contiguous) from M [T, O, P]: an invocation per (tile p, output
//            channel o) (grid x: tiles, y: channels), y's tile = A^T m A (+ bias[o], HAS_BIAS),
//            ACT(x) on each value, the positions past OH / OW not stored. Operand 0 = y, 1 = M,
//            2 = bias.
// WG_FUSED:  the three of a conv in one dispatch, y from x and U (no V, no M in memory): a
//            workgroup per block of FB_O output channels x FB_P tiles (grid x: tile blocks, y:
//            channel blocks), over x's channels by chunks of FB_C: the chunk's input tiles
//            transformed into shared memory (WG_INPUT's arithmetic, an invocation per (c, tile)),
//            U's chunk there too, then each invocation's FR_O x FR_P sums of one t (LOCAL_X = T *
//            FB_O / FR_O * FB_P / FR_P); then the block's sums M through shared memory into
//            WG_OUTPUT's output transform and epilogue, an invocation per (o, tile). Operand 0 = y,
//            1 = x, 2 = U [T, O, C] (contiguous, at u_u_off), 3 = bias. The input stage's X8, XQIN,
//            X_QUADS and the output stage's YQ, YDQ, Y_VEC4 apply as there.
// The QDQ pattern (the model runtime's QConv: DequantizeLinear -> Conv -> QuantizeLinear, the float
// graph's sums): X8 (WG_INPUT), x 8-bit (X_I8: int8, else uint8), each value dequantized as read,
// float(x - u_xz) * u_xs; XQIN, x float32 through QuantizeLinear and DequantizeLinear as read (the
// net's input QuantizeLinear fused into its first conv: quant_int.comp's QUANTIZE, expression for
// expression, NaN -> u_xz); padding 0 after either (the float graph pads DequantizeLinear's output).
// YQ (WG_OUTPUT): the sum (+ bias) through act_clip(v, u_lo, u_hi) and QuantizeLinear,
// clamp(roundEven(div_rn(v, u_ys)) + u_zy, QMIN, QMAX) (NaN -> u_zy; Y_I8: int8, else uint8), as
// imatmul.comp's QUANT (div_rn only near a tie: quant_div); stored as whole words of the 4 outputs of a tile row (WG_M 4, OW % 4 == 0:
// the host's condition), or with YDQ float32, float(q - u_zy) * u_ys (the DequantizeLinear after it).
// X_QUADS (WG_INPUT): x's rows read as quads, three per tile row (x_quad: a 128-bit load of f32 x, or
// one word of four 8-bit values), the tile's columns lanes X_SHIFT + [0, ALPHA) of them (X_SHIFT =
// -u_pl mod 4; the host's condition: WG_M 4, W % 4 == 0, x's offset and strides multiples of 4, unit
// column stride). Y_VEC4 (WG_OUTPUT, f32 stores: no YQ, or YQ with YDQ): a tile row's 4 outputs as
// one 128-bit store (WG_M 4, OW % 4 == 0: the host's condition).
// Tiles: p = (n * TH + th) * TW + tw, TH = ceil(OH / M), TW = ceil(OW / M). The transforms'
// constants are Lavin's (F(4x4,3x3): B^T's 4, -5, G's 1/4, -1/6, 1/24, 1/12, A^T's 2, 4, 8): F(4x4,3x3)
// rounds more than the direct sum (tests/nn/test_conv_winograd.cpp: the tolerance relative to
// sum |w| |x|).
layout(local_size_x = LOCAL_X) in;
// Loops of constant trips unrolled (NVIDIA's pragma, as matmul_warp.comp): the register arrays
// (tiles, the fused stage's chunk loads and sums) indexed by constants only (the H200: the fused
// stage 9.46 -> 8.53 ms over 100 runs of the narrow net at 56, the QDQ input stage 4.36 -> 3.96 at
// 112; bench/RESULTS.md, cnn38).
#pragma optionNV(unroll all)

#define ALPHA (WG_M + 2)
#define T (ALPHA * ALPHA)

uniform uint u_C;
uniform uint u_O;
uniform uint u_P;  // tiles over all images
uniform int u_H;
uniform int u_W;
uniform int u_TH;
uniform int u_TW;
uniform int u_OH;
uniform int u_OW;
uniform int u_pt;
uniform int u_pl;
uniform uint u_x_stride[4];  // x (WG_INPUT) or w (WG_WEIGHT)
uniform uint u_x_off;
uniform uint u_b_stride;
uniform uint u_b_off;
uniform float u_act_p0;  // activation parameters (ACT's expression may use them)
uniform float u_act_p1;
uniform float u_act_scale;  // the epilogue's affine after the activation
uniform float u_act_shift;

uniform float u_xs;  // X8, XQIN: x's scale and zero point, 1 / u_xs (f32)
uniform int u_xz;
uniform float u_xs_inv;
uniform float u_ys;  // YQ: y's scale and zero point, 1 / u_ys (f32), the activation's bounds
uniform float u_ys_inv;
uniform float u_zy;
uniform float u_lo;
uniform float u_hi;

#include "activations.glsl"
#ifdef X_I8
#define XQMIN -128.0
#define XQMAX 127.0
#else
#define XQMIN 0.0
#define XQMAX 255.0
#endif
#ifdef Y_I8
#define QMIN -128.0
#define QMAX 127.0
#else
#define QMIN 0.0
#define QMAX 255.0
#endif
// v / s correctly rounded (div_rn) where roundEven of it could tell: v * (1 / s) is within 1.5 ulp
// of it, so that only a product within 1e-4 of a tie k + 0.5 can round otherwise (below 384 in
// magnitude, where 1.5 ulp < 5e-5; from 384 on, every 8-bit range saturates on either side of a
// tie); those take div_rn (two divisions and an fma: twice the output transform's arithmetic where
// every value took it). NaN passes (fract(NaN) < 1e-4 is false), as do infinities.
float quant_div(float v, float s, float s_inv) {
  float t = v * s_inv;
  return abs(fract(t) - 0.5) < 1e-4 ? div_rn(v, s) : t;
}
// XQIN: f32 x through QuantizeLinear and DequantizeLinear (quant_int.comp's QUANTIZE).
float x_qin(float x) {
  float v = quant_div(x, u_xs, u_xs_inv);
  float q = is_nan(v) ? float(u_xz) : clamp(roundEven(v) + float(u_xz), XQMIN, XQMAX);
  return (q - float(u_xz)) * u_xs;
}
// x's value at element e as the float graph's conv input sees it.
float x_value(uint e) {
#if defined(X8)
  return float(int(load1(e)) - u_xz) * u_xs;
#elif defined(XQIN)
  return x_qin(float(load1(e)));
#else
  return float(load1(e));
#endif
}
#ifndef ACT
#define ACT(x) (x)
#endif
#ifdef X_QUADS
// Quad q of x (elements 4q .. 4q + 3) as the float graph's conv input sees them: one 128-bit load
// (f32), or one word of four 8-bit values (X8).
vec4 x_quad(uint q) {
#if defined(X8)
  uint w = t1[q];
#ifdef X_I8
  ivec4 b = ivec4(bitfieldExtract(int(w), 0, 8), bitfieldExtract(int(w), 8, 8), bitfieldExtract(int(w), 16, 8),
                  bitfieldExtract(int(w), 24, 8));
#else
  ivec4 b = ivec4(w & 0xffu, (w >> 8u) & 0xffu, (w >> 16u) & 0xffu, w >> 24u);
#endif
  return vec4(b - ivec4(u_xz)) * u_xs;
#else
  return uintBitsToFloat(t14[q]);  // (XQIN: quantized once selected, x_qin)
#endif
}
#endif

#if WG_M == 4
const float BT[36] = float[36](4.0, 0.0, -5.0, 0.0, 1.0, 0.0,   //
                               0.0, -4.0, -4.0, 1.0, 1.0, 0.0,  //
                               0.0, 4.0, -4.0, -1.0, 1.0, 0.0,  //
                               0.0, -2.0, -1.0, 2.0, 1.0, 0.0,  //
                               0.0, 2.0, -1.0, -2.0, 1.0, 0.0,  //
                               0.0, 4.0, 0.0, -5.0, 0.0, 1.0);
const float G[18] = float[18](0.25, 0.0, 0.0,                                   //
                              -1.0 / 6.0, -1.0 / 6.0, -1.0 / 6.0,               //
                              -1.0 / 6.0, 1.0 / 6.0, -1.0 / 6.0,                //
                              1.0 / 24.0, 1.0 / 12.0, 1.0 / 6.0,                //
                              1.0 / 24.0, -1.0 / 12.0, 1.0 / 6.0,               //
                              0.0, 0.0, 1.0);
const float AT[24] = float[24](1.0, 1.0, 1.0, 1.0, 1.0, 0.0,   //
                               0.0, 1.0, -1.0, 2.0, -2.0, 0.0, //
                               0.0, 1.0, 1.0, 4.0, 4.0, 0.0,   //
                               0.0, 1.0, -1.0, 8.0, -8.0, 1.0);
#elif WG_M == 2
const float BT[16] = float[16](1.0, 0.0, -1.0, 0.0,  //
                               0.0, 1.0, 1.0, 0.0,   //
                               0.0, -1.0, 1.0, 0.0,  //
                               0.0, 1.0, 0.0, -1.0);
const float G[12] = float[12](1.0, 0.0, 0.0,    //
                              0.5, 0.5, 0.5,    //
                              0.5, -0.5, 0.5,   //
                              0.0, 0.0, 1.0);
const float AT[8] = float[8](1.0, 1.0, 1.0, 0.0,  //
                             0.0, 1.0, -1.0, -1.0);
#else
#error WG_M must be 2 or 4
#endif

#if defined(WG_INPUT) || defined(WG_FUSED)
// The input tile d of tile p, channel c: rows th * M - u_pt + [0, ALPHA), columns tw * M - u_pl +
// [0, ALPHA) of x's plane (n, c), zero outside the image (each load's index clamped into the
// image, the value then selected).
void input_tile(uint p, uint c, out float d[T]) {
  uint tiles = uint(u_TH * u_TW), n = p / tiles, r0 = p - n * tiles;
  int th = int(r0 / uint(u_TW)), tw = int(r0) - th * u_TW;
  int h0 = th * WG_M - u_pt, w0 = tw * WG_M - u_pl;
  uint base = u_x_off + n * u_x_stride[0] + c * u_x_stride[1];
#ifdef X_QUADS
  // w0 - X_SHIFT is a multiple of 4: the tile row's columns are lanes X_SHIFT + [0, ALPHA) of the
  // quads q0, q0 + 1, q0 + 2 (each clamped into the row: a clamped quad's lanes are all outside x,
  // so selected away).
  int q0 = (w0 - X_SHIFT) >> 2, nq = u_W >> 2;
  for (int i = 0; i < ALPHA; ++i) {
    int h = h0 + i;
    bool hin = h >= 0 && h < u_H;
    uint rowq = (base + uint(clamp(h, 0, u_H - 1)) * u_x_stride[2]) >> 2u;
    float r[12];
    for (int k = 0; k < 3; ++k) {
      vec4 v = x_quad(rowq + uint(clamp(q0 + k, 0, nq - 1)));
      r[4 * k] = v.x, r[4 * k + 1] = v.y, r[4 * k + 2] = v.z, r[4 * k + 3] = v.w;
    }
    for (int j = 0; j < ALPHA; ++j) {
      int w = w0 + j;
#ifdef XQIN
      float v = x_qin(r[X_SHIFT + j]);
#else
      float v = r[X_SHIFT + j];
#endif
      d[i * ALPHA + j] = hin && w >= 0 && w < u_W ? v : 0.0;
    }
  }
#else
  for (int i = 0; i < ALPHA; ++i) {
    int h = h0 + i;
    bool hin = h >= 0 && h < u_H;
    uint row = base + uint(clamp(h, 0, u_H - 1)) * u_x_stride[2];
    for (int j = 0; j < ALPHA; ++j) {
      int w = w0 + j;
      float v = x_value(row + uint(clamp(w, 0, u_W - 1)) * u_x_stride[3]);  // clamped: no load outside x
      d[i * ALPHA + j] = hin && w >= 0 && w < u_W ? v : 0.0;
    }
  }
#endif
}
// v = B^T d B.
void input_transform(float d[T], out float v[T]) {
  float t[T];  // B^T d
  for (int i = 0; i < ALPHA; ++i)
    for (int j = 0; j < ALPHA; ++j) {
      float s = 0.0;
      for (int k = 0; k < ALPHA; ++k) s += BT[i * ALPHA + k] * d[k * ALPHA + j];
      t[i * ALPHA + j] = s;
    }
  for (int i = 0; i < ALPHA; ++i)
    for (int j = 0; j < ALPHA; ++j) {
      float s = 0.0;  // (B^T d) B: row j of B^T
      for (int k = 0; k < ALPHA; ++k) s += t[i * ALPHA + k] * BT[j * ALPHA + k];
      v[i * ALPHA + j] = s;
    }
}
#endif
#if defined(WG_OUTPUT) || defined(WG_FUSED)
#ifdef WG_FUSED
#define BIAS_LOAD(e) load3(e)
#else
#define BIAS_LOAD(e) load2(e)
#endif
// y's tile of tile p, output channel o from the transformed sums m: A^T m A (+ bias[o]), the
// epilogue (ACT, or YQ's quantization), stored (the positions past OH / OW not).
void output_tile(float m[T], uint o, uint p) {
  float a[WG_M * ALPHA];  // A^T m
  for (int i = 0; i < WG_M; ++i)
    for (int j = 0; j < ALPHA; ++j) {
      float s = 0.0;
      for (int k = 0; k < ALPHA; ++k) s += AT[i * ALPHA + k] * m[k * ALPHA + j];
      a[i * ALPHA + j] = s;
    }
#ifdef HAS_BIAS
  float b = float(BIAS_LOAD(u_b_off + o * u_b_stride));
#else
  float b = 0.0;
#endif
  uint tiles = uint(u_TH * u_TW), n = p / tiles, r0 = p - n * tiles;
  int th = int(r0 / uint(u_TW)), tw = int(r0) - th * u_TW;
  int oh0 = th * WG_M, ow0 = tw * WG_M;
  uint ybase = (n * u_O + o) * uint(u_OH * u_OW);
  for (int i = 0; i < WG_M; ++i) {
    if (oh0 + i >= u_OH) break;
    uint yrow = ybase + uint((oh0 + i) * u_OW + ow0);
#if defined(YQ) && !defined(YDQ)
    uint word = 0u;
#endif
#ifdef Y_VEC4
    vec4 row;
#endif
    for (int j = 0; j < WG_M; ++j) {
      float s = b;
      for (int k = 0; k < ALPHA; ++k) s += a[i * ALPHA + k] * AT[j * ALPHA + k];
#ifdef YQ
      float q = quant_div(act_clip(s, u_lo, u_hi), u_ys, u_ys_inv);
      float r = is_nan(q) ? u_zy : clamp(roundEven(q) + u_zy, QMIN, QMAX);
#ifdef YDQ
      float v = (r - u_zy) * u_ys;
#else
      word |= (uint(int(r)) & 0xffu) << (8u * uint(j));
#endif
#else
      float v = ACT(s);
#endif
#if defined(Y_VEC4)
      row[j] = v;
#elif !defined(YQ) || defined(YDQ)
      if (ow0 + j < u_OW) store0(yrow + uint(j), CT0(v));
#endif
    }
#if defined(YQ) && !defined(YDQ)
    t0[yrow >> 2u] = word;  // WG_M 4, OW % 4 == 0: the row's 4 outputs are one word
#endif
#ifdef Y_VEC4
    t04[yrow >> 2u] = floatBitsToUint(row);  // WG_M 4, OW % 4 == 0: the row's 4 outputs, one 128-bit store
#endif
  }
}
#endif
#ifdef WG_FUSED
// The fused stage's blocking: FB_O output channels x FB_P tiles a workgroup, input channels by
// chunks of FB_C, FR_O x FR_P sums per invocation for one t (LOCAL_X = T * FB_NO * FB_NP).
#define FB_NO (FB_O / FR_O)
#define FB_NP (FB_P / FR_P)
#define FB_V uint(T * FB_C * FB_O)  // V's chunk after U's
#define FB_SIZE (T * FB_C * (FB_O + FB_P) > T * FB_O * FB_P ? T * FB_C * (FB_O + FB_P) : T * FB_O * FB_P)
shared float fs[FB_SIZE];
uniform uint u_u_off;  // U's offset (operand 2)
#ifdef FB_SPLIT
// FB_SPLIT workgroups (grid z) per block over parts of x's channels: their sums in the coherent
// workspace, their arrivals counted (runtime/counters.hpp's words), the last one finishing.
layout(std430, binding = WS_BINDING) coherent buffer WsBuf { float ws[]; };
layout(std430, binding = CNT_BINDING) coherent buffer CntBuf { uint cnt[]; };
#endif
// A chunk's loads in registers (fused_fetch), then transformed and stored into shared memory
// (fused_stage): FB_TPT input tiles (c, tile) and FB_UPT filter values of U per invocation. With
// FB_PREFETCH the next chunk's loads are issued before this chunk's sums, so that their latency
// passes under them.
#define FB_TPT ((FB_C * FB_P + int(LOCAL_X) - 1) / int(LOCAL_X))
#define FB_UPT ((T * FB_C * FB_O + int(LOCAL_X) - 1) / int(LOCAL_X))
float fd[FB_TPT * T];
float fu[FB_UPT];
void fused_fetch(uint p0, uint o0, uint c0, uint cend) {
  uint lid = gl_LocalInvocationIndex;
  for (int k = 0; k < FB_TPT; ++k) {
    uint e = lid + uint(k) * LOCAL_X, c = e / uint(FB_P), pl = e - c * uint(FB_P);
    float d[T];
    for (int t = 0; t < T; ++t) d[t] = 0.0;
    if (e < uint(FB_C * FB_P) && p0 + pl < u_P && c0 + c < cend) input_tile(p0 + pl, c0 + c, d);
    for (int t = 0; t < T; ++t) fd[k * T + t] = d[t];
  }
  // U [T, O, C] at u_u_off: (t, o, c) of e = (t * FB_O + o) * FB_C + c, 0 past O or C
  for (int k = 0; k < FB_UPT; ++k) {
    uint e = lid + uint(k) * LOCAL_X, c = e % uint(FB_C), r = e / uint(FB_C), o = r % uint(FB_O), t = r / uint(FB_O);
    bool in_u = e < uint(T * FB_C * FB_O) && o0 + o < u_O && c0 + c < cend;
    float u = float(load2(u_u_off + (in_u ? (t * u_O + o0 + o) * u_C + c0 + c : 0u)));
    fu[k] = in_u ? u : 0.0;
  }
}
// V of the chunk's channels and the block's tiles at fs[FB_V + (t * FB_C + c) * FB_P + pl], U of
// the block's output channels and the chunk's channels at fs[(t * FB_C + c) * FB_O + o].
void fused_stage() {
  uint lid = gl_LocalInvocationIndex;
  for (int k = 0; k < FB_TPT; ++k) {
    uint e = lid + uint(k) * LOCAL_X, c = e / uint(FB_P), pl = e - c * uint(FB_P);
    if (e >= uint(FB_C * FB_P)) break;
    float d[T], v[T];
    for (int t = 0; t < T; ++t) d[t] = fd[k * T + t];
    input_transform(d, v);
    for (int t = 0; t < T; ++t) fs[FB_V + (uint(t) * uint(FB_C) + c) * uint(FB_P) + pl] = v[t];
  }
  for (int k = 0; k < FB_UPT; ++k) {
    uint e = lid + uint(k) * LOCAL_X, c = e % uint(FB_C), r = e / uint(FB_C), o = r % uint(FB_O), t = r / uint(FB_O);
    if (e >= uint(T * FB_C * FB_O)) break;
    fs[(t * uint(FB_C) + c) * uint(FB_O) + o] = fu[k];
  }
}
#endif
void main() {
#if defined(WG_WEIGHT)
  uint i = GLOBAL_ID_1D, OC = u_O * u_C;
  if (i >= OC) return;
  uint o = i / u_C, c = i - o * u_C;
  uint base = u_x_off + o * u_x_stride[0] + c * u_x_stride[1];
  float g[9];
  for (int kh = 0; kh < 3; ++kh)
    for (int kw = 0; kw < 3; ++kw) g[kh * 3 + kw] = float(load1(base + uint(kh) * u_x_stride[2] + uint(kw) * u_x_stride[3]));
  float tg[ALPHA * 3];  // G g
  for (int r = 0; r < ALPHA; ++r)
    for (int k = 0; k < 3; ++k) tg[r * 3 + k] = G[r * 3] * g[k] + G[r * 3 + 1] * g[3 + k] + G[r * 3 + 2] * g[6 + k];
  for (int r = 0; r < ALPHA; ++r)
    for (int s = 0; s < ALPHA; ++s)
      store0(uint(r * ALPHA + s) * OC + i,
             CT0(tg[r * 3] * G[s * 3] + tg[r * 3 + 1] * G[s * 3 + 1] + tg[r * 3 + 2] * G[s * 3 + 2]));
#elif defined(WG_INPUT)
  uint p = GLOBAL_ID.x, c = WORKGROUP_ID.y;
  if (p >= u_P) return;
  float d[T], v[T];
  input_tile(p, c, d);
  input_transform(d, v);
  uint CP = u_C * u_P, dst = c * u_P + p;
  for (int t = 0; t < T; ++t) store0(uint(t) * CP + dst, CT0(v[t]));
#elif defined(WG_OUTPUT)
  uint p = GLOBAL_ID.x, o = WORKGROUP_ID.y;
  if (p >= u_P) return;
  uint OP = u_O * u_P, at = o * u_P + p;
  float m[T];
  for (int t = 0; t < T; ++t) m[t] = float(load1(uint(t) * OP + at));
  output_tile(m, o, p);
#elif defined(WG_FUSED)
  // Invocation roles: the GEMMs' (t = gt, output channels og * FR_O + [0, FR_O), tiles pg * FR_P +
  // [0, FR_P) of the workgroup's block), and over the workgroup by turns the chunk's input tiles,
  // its filters and the block's output tiles.
  uint lid = gl_LocalInvocationIndex;
  uint p0 = WORKGROUP_ID.x * uint(FB_P), o0 = WORKGROUP_ID.y * uint(FB_O);
  uint gt = lid / uint(FB_NO * FB_NP), gr = lid - gt * uint(FB_NO * FB_NP);
  uint og = gr / uint(FB_NP), pg = gr - og * uint(FB_NP);
  uint ua = gt * uint(FB_C) * uint(FB_O) + og * uint(FR_O), va = FB_V + gt * uint(FB_C) * uint(FB_P) + pg * uint(FR_P);
  float acc[FR_O * FR_P];
  for (int i = 0; i < FR_O * FR_P; ++i) acc[i] = 0.0;
#ifdef FB_SPLIT
  // This workgroup's part kz of x's channels: whole chunks, FB_SPLIT parts
  uint kz = WORKGROUP_ID.z, cs = (u_C + uint(FB_SPLIT * FB_C) - 1u) / uint(FB_SPLIT * FB_C) * uint(FB_C);
  uint cbeg = kz * cs, cend = min(u_C, cbeg + cs);
#else
  uint cbeg = 0u, cend = u_C;
#endif
  fused_fetch(p0, o0, cbeg, cend);
  for (uint c0 = cbeg; LOOP(c0 < cend); c0 += uint(FB_C)) {
#ifndef FB_PREFETCH
    if (c0 > cbeg) fused_fetch(p0, o0, c0, cend);
#endif
    fused_stage();
    workgroup_sync();
#ifdef FB_PREFETCH
    if (c0 + uint(FB_C) < cend) fused_fetch(p0, o0, c0 + uint(FB_C), cend);  // the next chunk's loads under these sums
#endif
    for (int c = 0; c < FB_C; ++c) {
      float a[FR_O], b[FR_P];
      for (int i = 0; i < FR_O; ++i) a[i] = fs[ua + uint(c * FB_O + i)];
      for (int j = 0; j < FR_P; ++j) b[j] = fs[va + uint(c * FB_P + j)];
      for (int i = 0; i < FR_O; ++i)
        for (int j = 0; j < FR_P; ++j) acc[i * FR_P + j] += a[i] * b[j];
    }
    workgroup_sync();
  }
#ifdef FB_SPLIT
  // Each part's sums into the workspace (block slot's FB_SPLIT parts, each FR_O * FR_P rows of
  // LOCAL_X), then its arrival counted; the part that arrives last adds every part's sums in the
  // parts' order (the same rounding whichever arrives last), resets the count and goes on.
  uint slot = WORKGROUP_ID.x + WORKGROUP_ID.y * u_grid.x, part = uint(FR_O * FR_P) * LOCAL_X;
  for (int i = 0; i < FR_O * FR_P; ++i) ws[(slot * uint(FB_SPLIT) + kz) * part + uint(i) * LOCAL_X + lid] = acc[i];
  memoryBarrierBuffer();
  workgroup_sync();
  if (lid == 0u) fs[0] = float(atomicAdd(cnt[slot], 1u));  // (fs: free since the loop's last sync)
  workgroup_sync();
  bool last = fs[0] == float(FB_SPLIT - 1);
  workgroup_sync();  // fs[0] read by all before M's stores
  if (!last) return;
  memoryBarrierBuffer();
  for (int i = 0; i < FR_O * FR_P; ++i) {
    float v = 0.0;
    for (uint z = 0u; z < uint(FB_SPLIT); ++z)
      v += z == kz ? acc[i] : ws[(slot * uint(FB_SPLIT) + z) * part + uint(i) * LOCAL_X + lid];
    acc[i] = v;
  }
  if (lid == 0u) atomicExchange(cnt[slot], 0u);  // zero for the next dispatch
#endif
  // M of the block: fs[(t * FB_O + o) * FB_P + pl], then each (o, pl)'s output tile
  for (int i = 0; i < FR_O; ++i)
    for (int j = 0; j < FR_P; ++j)
      fs[(gt * uint(FB_O) + og * uint(FR_O) + uint(i)) * uint(FB_P) + pg * uint(FR_P) + uint(j)] = acc[i * FR_P + j];
  workgroup_sync();
  for (uint e = lid; e < uint(FB_O * FB_P); e += uint(LOCAL_X)) {
    uint o = e / uint(FB_P), pl = e - o * uint(FB_P);
    if (o0 + o >= u_O || p0 + pl >= u_P) continue;
    float m[T];
    for (int t = 0; t < T; ++t) m[t] = fs[(uint(t) * uint(FB_O) + o) * uint(FB_P) + pl];
    output_tile(m, o0 + o, p0 + pl);
  }
#endif
}
