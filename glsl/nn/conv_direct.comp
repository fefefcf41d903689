// Direct 2-D convolution (NCHW) for small filters: one invocation per output element
// out[n, o, oh, ow] = bias[o] + sum over c < Cg, kh, kw of
//     x[n, g * Cg + c, oh * sh - pt + kh * dh, ow * sw - pl + kw * dw] * w[o, c, kh, kw]
// (g = o / Og; taps outside the image are 0). Operand 0 = out (contiguous), 1 = x, 2 = w,
// 3 = bias (HAS_BIAS), each read through its strides. Grid: x = output positions of one plane,
// y = output channel o (every invocation of a workgroup reads the same weights), z = image n.
layout(local_size_x = LOCAL_X) in;

uniform int u_C;  // input channels per group
uniform int u_H;
uniform int u_W;
uniform int u_O;
uniform int u_Og;  // output channels per group
uniform int u_KH;
uniform int u_KW;
uniform int u_OH;
uniform int u_OW;
uniform int u_sh;
uniform int u_sw;
uniform int u_pt;
uniform int u_pl;
uniform int u_dh;
uniform int u_dw;
uniform uint u_x_stride[4];
uniform uint u_x_off;
uniform uint u_w_stride[4];
uniform uint u_w_off;
uniform uint u_b_stride;
uniform uint u_b_off;

void main() {
  uint P = uint(u_OH * u_OW), p = GLOBAL_ID.x;
  if (p >= P) return;
  uint o = WORKGROUP_ID.y, n = WORKGROUP_ID.z;
  int oh = int(p) / u_OW, ow = int(p) - oh * u_OW;
  int h0 = oh * u_sh - u_pt, w0 = ow * u_sw - u_pl;
  uint c0 = (o / uint(u_Og)) * uint(u_C);
#ifdef HAS_BIAS
  float acc = float(load3(u_b_off + o * u_b_stride));
#else
  float acc = 0.0;
#endif
  for (int c = 0; c < u_C; ++c) {
    uint xb = u_x_off + n * u_x_stride[0] + (c0 + uint(c)) * u_x_stride[1];
    uint wb = u_w_off + o * u_w_stride[0] + uint(c) * u_w_stride[1];
    for (int kh = 0; kh < u_KH; ++kh) {
      int h = h0 + kh * u_dh;
      if (h < 0 || h >= u_H) continue;
      uint xr = xb + uint(h) * u_x_stride[2], wr = wb + uint(kh) * u_w_stride[2];
      for (int kw = 0; kw < u_KW; ++kw) {
        int w = w0 + kw * u_dw;
        if (w < 0 || w >= u_W) continue;
        acc += float(load1(xr + uint(w) * u_x_stride[3])) * float(load2(wr + uint(kw) * u_w_stride[3]));
      }
    }
  }
  store0((n * uint(u_O) + o) * P + p, CT0(acc));
}
