// Direct integer convolution of a QDQ Conv (gltensor.QConv; src/nn/iconv_direct.cpp), NCHW, in
// one dispatch from the 8-bit input to the layer's output:
//   s[n, o, p] = sum over c < CG, kh < KH, kw < KW of
//       (x[n, g CG + c, oh sh - pt + kh dh, ow sw - pl + kw dw] - zx) * (w[o, c, kh, kw] - zw[o])
// (g = o / Og, p = oh OW + ow; taps outside the image are skipped, as the im2col path reads zx
// there), exact in int32, then the epilogue of the im2col path's kernels, expression for
// expression (bit-identical results):
//   dequantize (imatmul.comp's DEQUANT): v = float(s) * (sa * sb[o]) (+ bias[o]), y float32;
//   QUANT, the QDQ pattern's QuantizeLinear after the conv (quant_int.comp's QUANTIZE), with
//   the activation between as act_clip(v, u_lo, u_hi) (activations.glsl; uniforms, so that none,
//   Relu and Clip are one program: none -inf, inf; Relu 0, inf; Clip its bounds):
//   y = clamp(roundEven(div_rn(act(v), ys)) + zy, QMIN, QMAX) (NaN -> zy), 8-bit;
//   DQ_OUT (with QUANT; a DequantizeLinear of the same parameters after it): float32
//   y = float(q - zy) * ys of that 8-bit q, as quant_int.comp's DEQUANTIZE.
// Exact sums on f32 FMAs, as imatmul.comp: every difference of an 8-bit value and an 8-bit zero
// point lies in [-255, 255], so a block of CB channels (CB KH KW <= 256 products of magnitude <=
// 65025) sums below 2^24 exactly in f32; each block's sums are then added to int32 totals.
// One invocation computes PX (a multiple of 4) consecutive positions of the flattened plane
// (PX / 4 words of 8-bit output) for OPI consecutive output channels of one group: each input tap
// is loaded once for OPI channels, each weight once for PX positions. ROWSEG (stride 1 along
// rows, OW % PX == 0: an invocation's positions lie in one row): the SEGLEN = PX + (KW - 1) DW
// inputs of a filter row are loaded once for its KW taps (DW the dilation along rows). The workgroup stages its OPI filters' block of
// CB channels in shared memory as floats w - zw. Grid: x = groups of LOCAL_X * PX positions,
// y = groups of OPI output channels, z = image n.
// Operands: 0 = y, 1 = x, 2 = w (contiguous, 8-bit), 3 = zx (one value), 4 = zw (one value or
// one per output channel: u_zw_per; ZW_NONE: 0, operand undeclared), 5 = sa [1], 6 = sb (one value or per channel: u_sb_per),
// 7 = bias (HAS_BIAS), 8 = ys [1] (QUANT) (float32), 9 = zy [1] (QUANT); y float32 with DQ_OUT.
#include "activations.glsl"
layout(local_size_x = LOCAL_X) in;

uniform int u_C;  // channels of x (all groups)
uniform int u_H;
uniform int u_W;
uniform int u_O;
uniform int u_Og;
uniform int u_OH;
uniform int u_OW;
uniform int u_sh;
uniform int u_sw;
uniform int u_pt;
uniform int u_pl;
uniform int u_dh;
uniform int u_dw;
uniform int u_blocks;  // CG / CB
uniform uint u_zw_per;
uniform uint u_sb_per;
#ifdef QUANT
uniform float u_lo;
uniform float u_hi;
#endif

#define TAPS (CB * KH * KW)
shared float s_w[OPI * TAPS];

void main() {
  uint lid = gl_LocalInvocationID.x, ob = WORKGROUP_ID.y * uint(OPI), n = WORKGROUP_ID.z;
  uint P = uint(u_OH * u_OW), p0 = (WORKGROUP_ID.x * LOCAL_X + lid) * uint(PX);
  uint CG = uint(u_blocks * CB), plane = uint(u_H * u_W), ktaps = CG * uint(KH * KW);
  uint xn = (n * uint(u_C) + (ob / uint(u_Og)) * CG) * plane;
  int h0[PX], w0[PX];
  bool live[PX];
  for (int q = 0; q < PX; ++q) {
    uint p = p0 + uint(q);
    live[q] = p < P;
    int oh = live[q] ? int(p) / u_OW : 0, ow = live[q] ? int(p) - oh * u_OW : 0;
    h0[q] = oh * u_sh - u_pt;
    w0[q] = ow * u_sw - u_pl;
  }
  float zx = float(load3(0u));
  int total[OPI * PX];
  float acc[OPI * PX];
  for (int i = 0; i < OPI * PX; ++i) total[i] = 0;
  for (int b = 0; LOOP(b < u_blocks); ++b) {
    workgroup_sync();  // the previous block's weights are read
    for (uint i = lid; i < uint(OPI * TAPS); i += LOCAL_X) {
      uint j = i / uint(TAPS);
#ifdef ZW_NONE
      s_w[i] = float(load2((ob + j) * ktaps + uint(b * TAPS) + (i - j * uint(TAPS))));
#else
      s_w[i] = float(load2((ob + j) * ktaps + uint(b * TAPS) + (i - j * uint(TAPS))) - load4(u_zw_per * (ob + j)));
#endif
    }
    workgroup_sync();
    for (int i = 0; i < OPI * PX; ++i) acc[i] = 0.0;
    for (int c = 0; c < CB; ++c) {
      uint xc = xn + uint(b * CB + c) * plane;
      for (int kh = 0; kh < KH; ++kh) {
#ifdef ROWSEG
        int h = h0[0] + kh * u_dh;
        bool row_in = live[0] && h >= 0 && h < u_H;
        float seg[SEGLEN];
        for (int i = 0; i < SEGLEN; ++i) {
          int w = w0[0] + i;
          float x = float(load1(xc + uint(clamp(h, 0, u_H - 1) * u_W + clamp(w, 0, u_W - 1)))) - zx;
          seg[i] = row_in && w >= 0 && w < u_W ? x : 0.0;
        }
#endif
        for (int kw = 0; kw < KW; ++kw) {
          float v[PX];
          for (int q = 0; q < PX; ++q) {
#ifdef ROWSEG
            v[q] = seg[q + kw * DW];
#else
            int h = h0[q] + kh * u_dh, w = w0[q] + kw * u_dw;
            bool in_image = live[q] && h >= 0 && h < u_H && w >= 0 && w < u_W;
            float x = float(load1(xc + uint(clamp(h, 0, u_H - 1) * u_W + clamp(w, 0, u_W - 1)))) - zx;
            v[q] = in_image ? x : 0.0;
#endif
          }
          for (int j = 0; j < OPI; ++j) {
            float wv = s_w[j * TAPS + (c * KH + kh) * KW + kw];
            for (int q = 0; q < PX; ++q) acc[j * PX + q] += v[q] * wv;
          }
        }
      }
    }
    for (int i = 0; i < OPI * PX; ++i) total[i] += int(acc[i]);
  }
  for (int j = 0; j < OPI; ++j) {
    uint o = ob + uint(j), e0 = (n * uint(u_O) + o) * P + p0;
    float mult = float(load5(0u)) * float(load6(u_sb_per * o));
#ifdef HAS_BIAS
    float bias = float(load7(o));
#endif
#ifdef QUANT
    float ys = float(load8(0u)), zy = float(load9(0u));
    uint word = 0u;  // positions q - q % 4 .. q
#endif
    for (int q = 0; q < PX; ++q) {
      if (!live[q]) break;
      float v = float(total[j * PX + q]) * mult;
#ifdef HAS_BIAS
      v += bias;
#endif
#ifdef QUANT
      v = act_clip(v, u_lo, u_hi);
      float t = div_rn(v, ys);
      int r = is_nan(t) ? int(zy) : int(clamp(roundEven(t) + zy, float(QMIN), float(QMAX)));
#ifdef DQ_OUT
      store0(e0 + uint(q), float(r - int(zy)) * ys);
#else
      // whole words where the plane's positions start on one (P % 4 == 0), else bytes
      word |= (uint(r) & 0xffu) << (8u * uint(q & 3));
      if ((P & 3u) != 0u) {
        store0(e0 + uint(q), r);
      } else if ((q & 3) == 3) {
        t0[(e0 + uint(q)) >> 2u] = word;
        word = 0u;
      }
#endif
#else
      store0(e0 + uint(q), v);
#endif
    }
  }
}
