// 2-D pooling over NCHW planes, one invocation per output element (forward) or per output
// gradient element (max's backward, accumulating into the input gradient with float atomics at
// the forward's argmax; the avg gradients and windows too long for one invocation's loops go
// through pool_axis.comp).
// POOL (host: `#define POOL pool_<name>`): pool_max, pool_avg, pool_adaptive (adaptive avg);
// BACKWARD defined (pool_max only): the gradient pass, one invocation per output adding its
// gradient at its window's argmax into the zero-filled grad_x; with GATHER (windows that do not
// overlap: stride >= dilation * (kernel - 1) + 1 on both axes), one invocation per input element
// writing every element of grad_x: the gradient of the one window that can hold it (the row
// (h + pad) / stride, likewise the column) where that window's argmax is this element, else 0;
// with GATHER_TILES too (windows that tile the input: stride = kernel, no padding or dilation,
// H = OH * KH, W = OW * KW), one invocation per window writing its KH x KW elements.
// Windows: start = o*stride - pad, size kernel (dilation for max); adaptive windows follow
// torch: [floor(o*H/OH), ceil((o+1)*H/OH)). avg divides by the window clipped to the padded
// input when COUNT_PAD (count_include_pad), else by the number of real elements.
// Operands: forward 0 = out, 1 = x, 2 = indices (max; i32 flat h*W + w);
//           backward 0 = grad_x (f32, zero-filled unless GATHER), 1 = grad_out, 2 = indices.
// The names' values are private to this file.
#define pool_max 0
#define pool_avg 1
#define pool_adaptive 2

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
uniform uint u_x_stride[4];
uniform uint u_x_off;

#ifdef BACKWARD
void atomic_add_f32(uint e, float v) {
  uint old = t0[e];
  for (int i = 0; i < 1000000; ++i) {
    uint prev = atomicCompSwap(t0[e], old, floatBitsToUint(uintBitsToFloat(old) + v));
    if (prev == old) break;
    old = prev;
  }
}
#endif

void window(int o, int O, int I, int k, int s, int p, out int lo, out int hi, out int padded) {
#if POOL == pool_adaptive
  lo = (o * I) / O;
  hi = ((o + 1) * I + O - 1) / O;
  padded = hi - lo;
#else
  lo = o * s - p;
  hi = lo + k;
  padded = min(hi, I + p) - lo;
  lo = max(lo, 0);
  hi = min(hi, I);
#endif
}

#ifdef GATHER_TILES
void main() {
  uint o = GLOBAL_ID_1D;  // the window (n, c, oh, ow)
  if (o >= u_count) return;
  uint t = o / uint(u_OW);
  int ow = int(o - t * uint(u_OW)), oh = int(t % uint(u_OH));
  uint plane = (t / uint(u_OH)) * uint(u_H * u_W);
  int idx = int(load2(o));
  float gv = float(load1(o));
  for (int kh = 0; LOOP(kh < u_KH); ++kh) {
    int row = (oh * u_KH + kh) * u_W + ow * u_KW;
    for (int kw = 0; LOOP(kw < u_KW); ++kw) store0(plane + uint(row + kw), CT0(row + kw == idx ? gv : 0.0));
  }
}
#elif defined(GATHER)
void main() {
  uint e = GLOBAL_ID_1D;  // grad_x's element (n, c, h, w)
  if (e >= u_count) return;
  int w = int(e % uint(u_W)), h = int((e / uint(u_W)) % uint(u_H));
  uint nc = e / uint(u_W * u_H);
  int oh = (h + u_pt) / u_sh, ow = (w + u_pl) / u_sw;
  float d = 0.0;
  if (oh < u_OH && ow < u_OW) {
    uint o = (nc * uint(u_OH) + uint(oh)) * uint(u_OW) + uint(ow);
    if (int(load2(o)) == h * u_W + w) d = float(load1(o));
  }
  store0(e, CT0(d));
}
#else
void main() {
  uint e = GLOBAL_ID_1D;
  if (e >= u_count) return;
  int ow = int(e % uint(u_OW)), oh = int((e / uint(u_OW)) % uint(u_OH)), c = int((e / uint(u_OW * u_OH)) % uint(u_C));
  int n = int(e / uint(u_OW * u_OH * u_C));
#ifndef BACKWARD
  uint base = u_x_off + uint(n) * u_x_stride[0] + uint(c) * u_x_stride[1];
#endif
#if !defined(BACKWARD) && POOL == pool_max
  float best = -F_INF;
  int bi = -1;
  for (int kh = 0; LOOP(kh < u_KH); ++kh) {
    int h = oh * u_sh - u_pt + kh * u_dh;
    if (h < 0 || h >= u_H) continue;
    for (int kw = 0; LOOP(kw < u_KW); ++kw) {
      int w = ow * u_sw - u_pl + kw * u_dw;
      if (w < 0 || w >= u_W) continue;
      float v = float(load1(base + uint(h) * u_x_stride[2] + uint(w) * u_x_stride[3]));
      if (bi < 0 || v > best || is_nan(v)) {  // torch's rule: the last NaN
        best = v;
        bi = h * u_W + w;
      }
    }
  }
  store0(e, CT0(best));
  store2(e, bi);
#elif !defined(BACKWARD)
  int h0, h1, ph, w0, w1, pw;
  window(oh, u_OH, u_H, u_KH, u_sh, u_pt, h0, h1, ph);
  window(ow, u_OW, u_W, u_KW, u_sw, u_pl, w0, w1, pw);
  float acc = 0.0;
  for (int h = h0; LOOP(h < h1); ++h)
    for (int w = w0; LOOP(w < w1); ++w) acc += float(load1(base + uint(h) * u_x_stride[2] + uint(w) * u_x_stride[3]));
#if defined(COUNT_PAD) && POOL == pool_avg
  float div = float(ph * pw);
#else
  float div = float((h1 - h0) * (w1 - w0));
#endif
  store0(e, CT0(acc / div));
#else
  int idx = load2(e);
  if (idx >= 0) atomic_add_f32(uint((n * u_C + c) * u_H * u_W + idx), float(load1(e)));
#endif
}
#endif
