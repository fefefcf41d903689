// conv2d's weight and bias gradients of small filters (one group, TAPS = WG_C * WG_KH * WG_KW taps)
// without a columns matrix. Workgroup (chunk, o) sums, over its chunk of the P = N * OH * OW output
// positions, gy[n, o, oh, ow] * x[n, c, oh * sh - pt + kh * dh, ow * sw - pl + kw * dw] (0 in the
// padding) for every tap t = (c * KH + kh) * KW + kw, and gy[n, o, oh, ow] itself (the bias); its
// invocations' sums are added in shared memory in a fixed order (deterministic). Partial sums:
// out[chunk * O * (TAPS + 1) + o * TAPS + t] (t < TAPS) and out[chunk * O * (TAPS + 1) + O * TAPS + o]
// (the bias); a sum over the chunks follows. Operand 0 = out (f32), 1 = gy and 2 = x (strided views).
// WG_LOCAL: the local size (an int).
layout(local_size_x = LOCAL_X) in;

#define TAPS (WG_C * WG_KH * WG_KW)

uniform uint u_P;      // N * OH * OW
uniform uint u_chunk;  // positions per workgroup
uniform uint u_O;
uniform int u_H;
uniform int u_W;
uniform int u_OH;
uniform int u_OW;
uniform int u_sh;
uniform int u_sw;
uniform int u_pt;
uniform int u_pl;
uniform int u_dh;
uniform int u_dw;
uniform uint u_gy_stride[4];
uniform uint u_gy_off;
uniform uint u_x_stride[4];
uniform uint u_x_off;

shared float red[(TAPS + 1) * WG_LOCAL];

void main() {
  uint lid = gl_LocalInvocationID.x, chunk = WORKGROUP_ID.x, o = WORKGROUP_ID.y;
  float acc[TAPS + 1];
  for (int t = 0; t <= TAPS; ++t) acc[t] = 0.0;
  uint p0 = chunk * u_chunk, p1 = min(p0 + u_chunk, u_P), plane = uint(u_OH * u_OW);
  for (uint p = p0 + lid; LOOP(p < p1); p += uint(WG_LOCAL)) {
    uint n = p / plane, r = p - n * plane;
    int oh = int(r) / u_OW, ow = int(r) - oh * u_OW;
    float g = float(load1(u_gy_off + n * u_gy_stride[0] + o * u_gy_stride[1] + uint(oh) * u_gy_stride[2] +
                          uint(ow) * u_gy_stride[3]));
    acc[TAPS] += g;
    int h0 = oh * u_sh - u_pt, w0 = ow * u_sw - u_pl;
    for (int c = 0; c < WG_C; ++c) {
      uint xc = u_x_off + n * u_x_stride[0] + uint(c) * u_x_stride[1];
      for (int kh = 0; kh < WG_KH; ++kh) {
        int h = h0 + kh * u_dh;
        bool row = h >= 0 && h < u_H;
        for (int kw = 0; kw < WG_KW; ++kw) {
          int w = w0 + kw * u_dw;
          float v = 0.0;
          if (row && w >= 0 && w < u_W) v = float(load2(xc + uint(h) * u_x_stride[2] + uint(w) * u_x_stride[3]));
          acc[(c * WG_KH + kh) * WG_KW + kw] += g * v;
        }
      }
    }
  }
  for (int t = 0; t <= TAPS; ++t) red[t * WG_LOCAL + int(lid)] = acc[t];
  barrier();
  for (uint s = uint(WG_LOCAL) / 2u; s > 0u; s >>= 1u) {
    if (lid < s)
      for (int t = 0; t <= TAPS; ++t) red[t * WG_LOCAL + int(lid)] += red[t * WG_LOCAL + int(lid + s)];
    barrier();
  }
  uint base = chunk * u_O * uint(TAPS + 1);
  if (lid < uint(TAPS))
    store0(base + o * uint(TAPS) + lid, red[int(lid) * WG_LOCAL]);
  else if (lid == uint(TAPS))
    store0(base + u_O * uint(TAPS) + o, red[TAPS * WG_LOCAL]);
}
