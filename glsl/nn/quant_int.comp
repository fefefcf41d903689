// Linear quantization (ONNX QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear) and the
// integer kernels of MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv; src/nn/quant_int.cpp.
// Integer sums are exact int32 (no float accumulation); rounding is round half to even, then
// saturation to [QMIN, QMAX], as ONNX specifies.
//
// Elementwise variants (x contiguous, viewed as [outer, u_C, u_inner]; element e's parameter
// index is o * u_so + (c / u_block) * u_sc + i * u_si, which covers per-tensor (all strides 0),
// per-axis (u_sc = 1) and blocked (u_block > 1, scale shaped like x) parameters; the zero point
// reads index 0 when u_zs = 0):
//   QUANTIZE    y = clamp(roundEven(x / scale) + zp, QMIN, QMAX)   (NaN -> zp)
//   REQUANT     y = clamp(roundEven(float(x + bias[c]) * scale) + zp, QMIN, QMAX): int32 sums to
//               8 bits, scale the multiplier x_scale * w_scale / y_scale (HAS_BIAS: int32 bias per c)
//   DEQUANTIZE  y = float(x - zp) * scale
//   QUANTIZE and REQUANT write 8-bit y, four elements (one word) per invocation.
//   Operands: 0 = y, 1 = x, 2 = scale (f32), 3 = zero point (int32), 4 = bias (HAS_BIAS).
// DQPARAMS (one invocation): DynamicQuantizeLinear's uint8 parameters from min(x) and max(x):
//   lo = min(min, 0), hi = max(max, 0), scale = (hi - lo) / 255,
//   zp = clamp(roundEven(-lo / scale), 0, 255) (0 when scale is 0).
//   Operands: 0 = scale (f32 [1]), 1 = zp (int32 [1]), 2 = min, 3 = max.
// IMATMUL (int32 arithmetic, for zero points wider than 8 bits; 8-bit ones run imatmul.comp on f32
// FMAs) (16 x 16 workgroups, 64 x 64 outputs each; grid x = column tiles, y = row tiles, z = batch):
//   c[b, m, n] (+)= sum over k0 <= k < k1 of (a[b, m, k] - za[m]) * (b[b, k, n] - zb[n])
//   (u_za_row / u_zb_col: 0 for one zero point), ACCUM adds to c (split K).
//   Operands: 0 = c (int32), 1 = a, 2 = b, 3 = za, 4 = zb (int32).
// ICOL (im2col for the integer matmul, four 8-bit columns entries per invocation, one word store):
//   cols[n, (c * KH + kh) * KW + kw, oh * OW + ow] = x[n, c, oh * sh - pt + kh * dh, ow * sw - pl + kw * dw],
//   or zx outside the image (so that x - zx is 0 there). Operands: 0 = cols, 1 = x, 2 = zx (int32).
// ICONV (one output per invocation, NCHW):
//   y[n, o, oh, ow] (+)= sum over c0 <= c < c1, kh, kw of
//       (x[n, g * CG + c, oh * sh - pt + kh * dh, ow * sw - pl + kw * dw] - zx) * (w[o, c, kh, kw] - zw[o])
//   (taps outside the image are skipped: ONNX pads with the zero point), ACCUM adds to y (split C).
//   Operands: 0 = y (int32), 1 = x, 2 = w, 3 = zx, 4 = zw (int32).

// div_rn (common.glsl): division rounded as IEEE division is, which roundEven needs at ties.

#if defined(QUANTIZE) || defined(REQUANT) || defined(DEQUANTIZE)
layout(local_size_x = LOCAL_X) in;
uniform uint u_count;
uniform uint u_C;
uniform uint u_inner;
uniform uint u_block;
uniform uint u_so;
uniform uint u_sc;
uniform uint u_si;
uniform uint u_zs;

uint param_index(uint e, out uint c) {
  uint i = e % u_inner;
  uint r = e / u_inner;
  c = r % u_C;
  uint o = r / u_C;
  return o * u_so + (c / u_block) * u_sc + i * u_si;
}

#ifdef DEQUANTIZE
void main() {
  uint q = GLOBAL_ID_1D;
  for (uint j = 0u; j < 4u; ++j) {
    uint e = q * 4u + j;
    if (e >= u_count) return;
    uint c;
    uint p = param_index(e, c);
    store0(e, float(load1(e) - load3(u_zs * p)) * float(load2(p)));
  }
}
#else
int quantize_one(uint e) {
  uint c;
  uint p = param_index(e, c);
  float z = float(load3(u_zs * p));
#ifdef QUANTIZE
  float v = div_rn(float(load1(e)), float(load2(p)));
#else
  int acc = int(load1(e));
#ifdef HAS_BIAS
  acc += int(load4(c));
#endif
  float v = float(acc) * float(load2(p));
#endif
  if (is_nan(v)) return int(z);
  return int(clamp(roundEven(v) + z, float(QMIN), float(QMAX)));
}

void main() {
  uint q = GLOBAL_ID_1D;
  if (q * 4u >= u_count) return;
  uint word = 0u;
  for (uint j = 0u; j < 4u; ++j) {
    uint e = q * 4u + j;
    if (e < u_count) word |= (uint(quantize_one(e)) & 0xffu) << (8u * j);
  }
  t0[q] = word;
}
#endif
#endif

#ifdef DQPARAMS
layout(local_size_x = LOCAL_X) in;
void main() {
  float lo = min(float(load2(0u)), 0.0), hi = max(float(load3(0u)), 0.0);
  float scale = div_rn(hi - lo, 255.0);
  float zp = scale > 0.0 ? clamp(roundEven(div_rn(-lo, scale)), 0.0, 255.0) : 0.0;
  store0(0u, scale);
  store1(0u, int(zp));
}
#endif

#ifdef IMATMUL
layout(local_size_x = LOCAL_X, local_size_y = LOCAL_Y) in;  // 16 x 16
uniform uint u_M;
uniform uint u_N;
uniform uint u_K;
uniform uint u_k0;
uniform uint u_k1;
uniform uint u_a_bs;  // batch strides (0: broadcast)
uniform uint u_b_bs;
uniform uint u_za_row;
uniform uint u_zb_col;

// A 64 x 64 tile of c per workgroup, 4 x 4 outputs per invocation (rows ty + 16 i, columns
// tx + 16 j), K in steps of 16 through shared memory (zero points already subtracted).
shared int s_a[16][64];
shared int s_b[16][64];

void main() {
  uvec3 wg = WORKGROUP_ID;
  uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y, tid = ty * 16u + tx;
  uint m0 = wg.y * 64u, n0 = wg.x * 64u, b = wg.z;
  int acc[4][4];
  for (uint i = 0u; i < 4u; ++i)
    for (uint j = 0u; j < 4u; ++j) acc[i][j] = 0;
  // Staging: element tid + 256 r of each tile; A's row (tid >> 4) + 16 r, k tid & 15; B's k
  // (tid >> 6) + 4 r, column tid & 63 (the same column for every r): zero points loaded once.
  uint ak = tid & 15u, bn = tid & 63u, n = n0 + bn;
  // Every load's index clamped into its operand (the last row / column / k), the value past the
  // edge then replaced by 0: no load past a tensor's end, even one a ternary would discard.
  int zb = load4(u_zb_col * min(n, u_N - 1u));
  zb = n < u_N ? zb : 0;
  int za[4];
  for (uint r = 0u; r < 4u; ++r) {
    uint m = m0 + (tid >> 4u) + 16u * r;
    int z = load3(u_za_row * min(m, u_M - 1u));
    za[r] = m < u_M ? z : 0;
  }
  for (uint k0 = u_k0; LOOP(k0 < u_k1); k0 += 16u) {
    for (uint r = 0u; r < 4u; ++r) {
      uint am = (tid >> 4u) + 16u * r, m = m0 + am, k = k0 + ak;  // A: 64 rows x 16
      int av = int(load1(b * u_a_bs + min(m, u_M - 1u) * u_K + min(k, u_k1 - 1u))) - za[r];
      s_a[ak][am] = m < u_M && k < u_k1 ? av : 0;
      uint bk = (tid >> 6u) + 4u * r, kb = k0 + bk;  // B: 16 x 64 columns
      int bv = int(load2(b * u_b_bs + min(kb, u_k1 - 1u) * u_N + min(n, u_N - 1u))) - zb;
      s_b[bk][bn] = n < u_N && kb < u_k1 ? bv : 0;
    }
    barrier();
    for (uint k = 0u; k < 16u; ++k) {
      int av[4], bv[4];
      for (uint i = 0u; i < 4u; ++i) av[i] = s_a[k][ty + 16u * i];
      for (uint j = 0u; j < 4u; ++j) bv[j] = s_b[k][tx + 16u * j];
      for (uint i = 0u; i < 4u; ++i)
        for (uint j = 0u; j < 4u; ++j) acc[i][j] += av[i] * bv[j];
    }
    barrier();
  }
  for (uint i = 0u; i < 4u; ++i) {
    uint m = m0 + ty + 16u * i;
    if (m >= u_M) break;
    for (uint j = 0u; j < 4u; ++j) {
      uint n = n0 + tx + 16u * j;
      if (n >= u_N) break;
      uint e = (b * u_M + m) * u_N + n;
      int v = acc[i][j];
#ifdef ACCUM
      v += int(load0(e));
#endif
      store0(e, v);
    }
  }
}
#endif

#ifdef ICONV
layout(local_size_x = LOCAL_X) in;
uniform uint u_count;
uniform int u_C;
uniform int u_H;
uniform int u_W;
uniform int u_O;
uniform int u_Og;
uniform int u_CG;
uniform int u_OH;
uniform int u_OW;
uniform int u_KH;
uniform int u_KW;
uniform int u_sh;
uniform int u_sw;
uniform int u_pt;
uniform int u_pl;
uniform int u_dh;
uniform int u_dw;
uniform int u_c0;
uniform int u_c1;
uniform uint u_zw_per;

void main() {
  uint e = GLOBAL_ID_1D;
  if (e >= u_count) return;
  int ow = int(e % uint(u_OW));
  uint r = e / uint(u_OW);
  int oh = int(r % uint(u_OH));
  r /= uint(u_OH);
  int o = int(r % uint(u_O));
  int n = int(r / uint(u_O));
  int g = o / u_Og;
  int zx = load3(0u);
  int zw = load4(u_zw_per * uint(o));
  int acc = 0;
  for (int c = u_c0; LOOP(c < u_c1); ++c) {
    int xc = (n * u_C + g * u_CG + c) * u_H;
    int wc = (o * u_CG + c) * u_KH;
    for (int kh = 0; LOOP(kh < u_KH); ++kh) {
      int ih = oh * u_sh - u_pt + kh * u_dh;
      if (ih < 0 || ih >= u_H) continue;
      for (int kw = 0; LOOP(kw < u_KW); ++kw) {
        int iw = ow * u_sw - u_pl + kw * u_dw;
        if (iw < 0 || iw >= u_W) continue;
        acc += (int(load1(uint((xc + ih) * u_W + iw))) - zx) * (int(load2(uint((wc + kh) * u_KW + kw))) - zw);
      }
    }
  }
#ifdef ACCUM
  acc += int(load0(e));
#endif
  store0(e, acc);
}
#endif

#ifdef ICOL
layout(local_size_x = LOCAL_X) in;
uniform uint u_count;
uniform int u_C;
uniform int u_H;
uniform int u_W;
uniform int u_OH;
uniform int u_OW;
uniform int u_KH;
uniform int u_KW;
uniform int u_sh;
uniform int u_sw;
uniform int u_pt;
uniform int u_pl;
uniform int u_dh;
uniform int u_dw;

int col_value(uint e, int zx) {
  uint ohw = uint(u_OH * u_OW), taps = uint(u_KH * u_KW);
  uint p = e % ohw, r = e / ohw;
  uint ck = r % (uint(u_C) * taps), n = r / (uint(u_C) * taps);
  int c = int(ck / taps), t = int(ck % taps), kh = t / u_KW, kw = t % u_KW;
  int ih = int(p / uint(u_OW)) * u_sh - u_pt + kh * u_dh, iw = int(p % uint(u_OW)) * u_sw - u_pl + kw * u_dw;
  if (ih < 0 || ih >= u_H || iw < 0 || iw >= u_W) return zx;
  return int(load1(uint(((int(n) * u_C + c) * u_H + ih) * u_W + iw)));
}

void main() {
  uint q = GLOBAL_ID_1D;
  if (q * 4u >= u_count) return;
  int zx = load2(0u);
  uint word = 0u;
  for (uint j = 0u; j < 4u; ++j) {
    uint e = q * 4u + j;
    if (e < u_count) word |= (uint(col_value(e, zx)) & 0xffu) << (8u * j);
  }
  t0[q] = word;
}
#endif
