// im2col of 8-bit images into 8-bit columns, one 32-bit word (four consecutive columns) per
// invocation (src/nn/quant_int.cpp, warp_qconv: the columns of imatmul_warp.comp):
//   cols[n, (c IKH + kh) IKW + kw, p] = x[n, c, oh sh - pt + kh dh, ow sw - pl + kw dw], p = oh OW + ow,
// or the zero point zx outside the image (so that x - zx is 0 there). Grid: x = the words of a
// row (u_PQ = OH OW / 4: OH OW % 4 == 0), y = the row k (C IKH IKW of them), z = the image n; the
// filter's size IKH x IKW compile-time (its divisions by constants), one division by OW per word.
// F32_OUT (a lab form, IntRequant::f32_columns): cols float32 x - zx (0 outside the image), one
// 128-bit store per invocation; X_I8: x int8 (sign-extended).
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

void main() {
  uint q = WORKGROUP_ID.x * LOCAL_X + gl_LocalInvocationID.x, k = WORKGROUP_ID.y, n = WORKGROUP_ID.z;
  if (q >= u_PQ) return;
  uint c = k / uint(IKH * IKW), t = k - c * uint(IKH * IKW);
  int kh = int(t) / IKW, kw = int(t) - (int(t) / IKW) * IKW;
  uint zx = uint(load2(0u)) & 0xffu;
  uint base = (n * uint(u_C) + c) * uint(u_H * u_W);
  int p = int(4u * q), oh = p / u_OW, ow = p - oh * u_OW;
  uint word = 0u;
#ifdef F32_OUT
  vec4 f = vec4(0.0);
  int zi = int(load2(0u));
#endif
  for (uint j = 0u; LOOP(j < 4u); ++j) {
    int ih = oh * u_sh - u_pt + kh * u_dh, iw = ow * u_sw - u_pl + kw * u_dw;
    uint b = zx;
    if (uint(ih) < uint(u_H) && uint(iw) < uint(u_W)) {
      uint e = base + uint(ih * u_W + iw);
      b = (t1[e >> 2u] >> (8u * (e & 3u))) & 0xffu;
    }
    word |= b << (8u * j);
#ifdef F32_OUT
#ifdef X_I8
    f[j] = float(bitfieldExtract(int(b), 0, 8) - zi);
#else
    f[j] = float(int(b) - zi);
#endif
#endif
    if (++ow == u_OW) {
      ow = 0;
      ++oh;
    }
  }
#ifdef F32_OUT
  t04[((n * uint(u_C) * uint(IKH * IKW)) + k) * u_PQ + q] = floatBitsToUint(f);
#else
  t0[((n * uint(u_C) * uint(IKH * IKW)) + k) * u_PQ + q] = word;
#endif
}
