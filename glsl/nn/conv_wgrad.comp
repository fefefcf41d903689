// conv2d's weight and bias gradients of small filters (one group, TAPS = WG_C * WG_KH * WG_KW taps)
// without a columns matrix. Workgroup (chunk, og) sums, over its chunk of the P = N * OH * OW output
// positions, for its OPI output channels o = og * OPI + j, gy[n, o, oh, ow] * x[n, c, oh * sh - pt +
// kh * dh, ow * sw - pl + kw * dw] (0 in the padding) for every tap t = (c * KH + kh) * KW + kw (each
// position's taps loaded once for the OPI channels), and gy[n, o, oh, ow] itself (the bias); its
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

#define SUMS (OPI * (TAPS + 1))  // per invocation: channel j's taps then its bias at j * (TAPS + 1)
shared float red[SUMS * WG_LOCAL];

void main() {
  uint lid = gl_LocalInvocationID.x, chunk = WORKGROUP_ID.x, o0 = WORKGROUP_ID.y * uint(OPI);
  float acc[SUMS];
  for (int i = 0; i < SUMS; ++i) acc[i] = 0.0;
  float xv[TAPS];
  uint p0 = chunk * u_chunk, p1 = min(p0 + u_chunk, u_P), plane = uint(u_OH * u_OW);
  for (uint p = p0 + lid; LOOP(p < p1); p += uint(WG_LOCAL)) {
    uint n = p / plane, r = p - n * plane;
    int oh = int(r) / u_OW, ow = int(r) - oh * u_OW;
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
          xv[(c * WG_KH + kh) * WG_KW + kw] = v;
        }
      }
    }
    uint gp = u_gy_off + n * u_gy_stride[0] + uint(oh) * u_gy_stride[2] + uint(ow) * u_gy_stride[3];
    for (int j = 0; j < OPI; ++j) {
      float g = float(load1(gp + (o0 + uint(j)) * u_gy_stride[1]));
      int a = j * (TAPS + 1);
      for (int t = 0; t < TAPS; ++t) acc[a + t] += g * xv[t];
      acc[a + TAPS] += g;
    }
  }
  for (int i = 0; i < SUMS; ++i) red[i * WG_LOCAL + int(lid)] = acc[i];
  barrier();
  for (uint s = uint(WG_LOCAL) / 2u; s > 0u; s >>= 1u) {
    if (lid < s)
      for (int i = 0; i < SUMS; ++i) red[i * WG_LOCAL + int(lid)] += red[i * WG_LOCAL + int(lid + s)];
    barrier();
  }
  uint base = chunk * u_O * uint(TAPS + 1);
  for (uint i = lid; i < uint(SUMS); i += uint(WG_LOCAL)) {
    uint j = i / uint(TAPS + 1), t = i - j * uint(TAPS + 1), o = o0 + j;
    float v = red[int(i) * WG_LOCAL];
    if (t < uint(TAPS))
      store0(base + o * uint(TAPS) + t, v);
    else
      store0(base + u_O * uint(TAPS) + o, v);
  }
}
