// im2col of 8-bit images into 8-bit columns (src/nn/quant_int.cpp, warp_qconv: the columns of
// imatmul_warp.comp):
//   cols[n, (c IKH + kh) IKW + kw, p] = x[n, c, oh sh - pt + kh dh, ow sw - pl + kw dw], p = oh OW + ow,
// or the zero point zx outside the image (so that x - zx is 0 there). One invocation: ICOL_WORDS = 2
// consecutive 32-bit words (8 columns) of one row k = c IKH IKW + tap (grid y), the columns'
// positions computed once; grid x = the word pairs of a row (u_PQ = OH OW / 4 words:
// OH OW % 4 == 0; a word past u_PQ, the odd u_PQ's last pair's second, not written: it would land
// in the next row, or past the last row's end), z = the image n. The words are gathered before
// they are stored (t0 and t1 may alias as far as the compiler knows: a store orders the loads
// after it). Stride and dilation 1 along rows and OW % 4 == 0: a word's 4 columns are 4 bytes of
// one image row, read as one or two aligned words where all lie inside the row (else 4 byte loads).
// The filter's size IKH x IKW compile-time; every loop's trip count is constant (plain fors).
// 128 invocations per workgroup (the host's). On the H100 the wide QDQ net's im2col at 112 took
// 0.189 ms per run with one word per invocation (64 per workgroup: 254K workgroups, as long with
// the kernel's body removed), 0.155-0.163 with 4 words of each of a channel's IKH IKW rows, 0.122
// in this form with byte loads, 0.109 with the aligned words (bench/RESULTS.md, 2026-11-28, int8z;
// the forms not taken are gone).
// F32_OUT (a lab form, IntRequant::f32_columns): cols float32 x - zx (0 outside the image), one
// 128-bit store per word; X_I8: x int8 (sign-extended).
// Operands: 0 = cols (8-bit [N, C IKH IKW, OH OW]; F32_OUT float32), 1 = x (8-bit [N, C, H, W]), 2 = zx (one value).
layout(local_size_x = LOCAL_X) in;
uniform uint u_PQ;
// (the uniforms of quant_int.comp's ICOL geometry, src/nn/quant_int.cpp's ConvGeometry: u_count,
// u_OH, u_KH and u_KW unread here)
uniform uint u_count;
uniform int u_OH;
uniform int u_KH;
uniform int u_KW;
uniform int u_C;
uniform int u_H;
uniform int u_W;
uniform int u_OW;
uniform int u_sh;
uniform int u_sw;
uniform int u_pt;
uniform int u_pl;
uniform int u_dh;
uniform int u_dw;

#define ICOL_WORDS 2
#define ICOL_COLS (4 * ICOL_WORDS)

void main() {
  uint q0 = uint(ICOL_WORDS) * (WORKGROUP_ID.x * LOCAL_X + gl_LocalInvocationID.x), n = WORKGROUP_ID.z;
  // the row k = c IKH IKW + t
  uint c = WORKGROUP_ID.y / uint(IKH * IKW);
  int t = int(WORKGROUP_ID.y - c * uint(IKH * IKW)), kh = t / IKW, kw = t - kh * IKW;
  if (q0 >= u_PQ) return;
  uint zx = uint(load2(0u)) & 0xffu;
#ifdef F32_OUT
  int zi = int(load2(0u));
#endif
  uint base = (n * uint(u_C) + c) * uint(u_H * u_W);
  // column j's input position at tap (0, 0)
  int ih0[ICOL_COLS], iw0[ICOL_COLS];
  int p = int(4u * q0), oh = p / u_OW, ow = p - oh * u_OW;
  for (int j = 0; j < ICOL_COLS; ++j) {
    ih0[j] = oh * u_sh - u_pt;
    iw0[j] = ow * u_sw - u_pl;
    if (++ow == u_OW) {
      ow = 0;
      ++oh;
    }
  }
  uint row = (n * uint(u_C) + c) * uint(IKH * IKW);
  // stride and dilation 1 along rows, OW % 4 == 0: a word's 4 columns are 4 consecutive bytes of
  // one image row, read as one or two aligned words where all 4 lie inside the row
  bool contig = u_sw == 1 && u_dw == 1 && (u_OW & 3) == 0;
  // the words first (their loads in flight together; a store before a load would order
  // them: t0 and t1 may alias as far as the compiler knows), then the stores
  uint wd[ICOL_WORDS];
  for (int w = 0; w < ICOL_WORDS; ++w) {
    int ih = ih0[4 * w] + kh * u_dh, iwa = iw0[4 * w] + kw * u_dw;
    if (contig && uint(ih) >= uint(u_H)) {
      wd[w] = zx * 0x01010101u;
    } else if (contig && iwa >= 0 && iwa + 3 < u_W) {
      uint e = base + uint(ih * u_W + iwa), sh = 8u * (e & 3u), lo = t1[e >> 2u];
      wd[w] = sh == 0u ? lo : (lo >> sh) | (t1[(e >> 2u) + 1u] << (32u - sh));
    } else {
      uint word = 0u;
      for (int b = 0; b < 4; ++b) {
        int ihb = ih0[4 * w + b] + kh * u_dh, iwb = iw0[4 * w + b] + kw * u_dw;
        uint v = zx;
        if (uint(ihb) < uint(u_H) && uint(iwb) < uint(u_W)) {
          uint e = base + uint(ihb * u_W + iwb);
          v = (t1[e >> 2u] >> (8u * (e & 3u))) & 0xffu;
        }
        word |= v << (8u * uint(b));
      }
      wd[w] = word;
    }
  }
  uint dst = (row + uint(t)) * u_PQ + q0;
  for (int w = 0; w < ICOL_WORDS; ++w) {
    if (q0 + uint(w) < u_PQ) {
#ifdef F32_OUT
      ivec4 v = ivec4((uvec4(wd[w]) >> uvec4(0u, 8u, 16u, 24u)) & 0xffu);
#ifdef X_I8
      v = bitfieldExtract(v, 0, 8);
#endif
      t04[dst + uint(w)] = floatBitsToUint(vec4(v - zi));
#else
      t0[dst + uint(w)] = wd[w];
#endif
    }
  }
}
