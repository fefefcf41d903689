// Direct 2-D convolution (NCHW) for small filters:
// out[n, o, oh, ow] = bias[o] + sum over c < CG, kh < KH, kw < KW of
//     x[n, g * CG + c, oh * sh - pt + kh * dh, ow * sw - pl + kw * dw] * w[o, c, kh, kw]
// (g = o / Og; taps outside the image are skipped). One invocation computes PX consecutive
// output positions of a row for OPI consecutive output channels of one group: each weight is
// loaded once for PX positions and each input tap once for OPI channels (register blocking;
// llvmpipe turns every SSBO load into per-lane gathers, and weight loads were 80% of the time
// with one position per invocation). The filter's sizes CG, KH, KW, OPI and PX are compile-time
// constants, so that compilers unroll the loops. ROWSEG (stride 1 along rows): the SEGLEN =
// PX + (KW - 1) * dilation inputs a row contributes to the PX positions are loaded once for all
// KW taps (the dilation DW a constant too, so that the segment stays in registers).
// Operand 0 = out (contiguous), 1 = x, 2 = w,
// 3 = bias (HAS_BIAS), each read through its strides (X_CONTIG: x contiguous, its row and
// column strides compile-time W and 1). Grid: x = tiles of PX positions of one plane (LANES:
// workgroups of LOCAL_X * PX positions), y = groups of OPI output channels (a workgroup reads
// the same weights), z = image n.
// LANES (GPUs): invocation i of a workgroup computes the positions base + q * LOCAL_X + i,
// q < PX, of the flattened plane, so that adjacent invocations read adjacent inputs and write
// adjacent outputs (coalesced; SHUFFLE as W_UBO's below); W_SHARED: the workgroup's OPI filters (OPI * CG * KH * KW
// floats) are staged once in shared memory, else read from the SSBO. OUT16 (rows): the output
// is 16-bit, pairs of positions of a row stored as whole words.
// W_UBO (software rasterizers, any number of channels): the rows layout with the weights read
// from a uniform block and the channel loop run, not unrolled (u_cg channels per group, so that
// 3x3 filters over hundreds of channels compile in a moment). llvmpipe (Mesa 22) reads a uniform
// block with one AVX2 gather per value, where an SSBO load is a loop over the lanes with a branch
// and a bounds check per value; x's taps stay SSBO loads, one row segment of SEGLEN = (PX - 1) *
// SW + (KW - 1) * DW + 1 inputs per kernel row shared by the KW taps and PX positions (SW, DW: the
// stride and dilation along rows, compile-time). The block holds the filters of output channels
// [u_o0, u_o0 + its size) of this dispatch (one dispatch per such chunk where all do not fit):
// w[o, c, kh, kw] (contiguous) at float u_wbase + ((o - u_o0) * u_cg + c) * KH * KW + kh * KW + kw.
// Its size WQ (vec4s) is the device's whole block or a size class of the filters (nn/conv.cpp's
// conv_direct_ubo), not the layer's own, so that layers of other widths share the program.
// The host writes the block out (taps, channels, positions: KWS(X), OPIS_I(X, a), PXS_IJ(X, a, b),
// SEGS(X)), so that the registers are indexed by constants and no loop but the channels' and
// the kernel rows' runs. ACT(x) (every layout but OUT16): the epilogue's activation
// (glsl/common/activations.glsl) and its affine, applied to each f32 sum before the store.
// X_QUADS (x contiguous, rows of whole quads: W % 4 == 0): the segment read as NQ aligned quads
// (QUADS(X)) from column w0 - SHIFT (SHIFT = w0 % 4, the same for every tile: PX % 4 == 0), a
// quarter of the per-lane loads. SHUFFLE (a transposed convolution whose kernel is its stride S,
// as a 1x1 convolution to S * S channels per output channel): the result's channels stored
// shuffled into S x S blocks of pixels (below), the bias one per output channel of the transposed
// convolution (channel o's at o / S^2).
// RESIDUAL (f32 outputs): operand 4 (3 without HAS_BIAS), f32 and contiguous with the output's
// shape, added after ACT at each store, EPI(v, i): y[i] = ACT(v) + r[i] (a residual Add after the
// conv, the model planner's fuse_residual: one rounding of each, as the two ops').
layout(local_size_x = LOCAL_X) in;

uniform int u_H;
uniform int u_W;
uniform int u_O;
uniform int u_Og;  // output channels per group
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
uniform int u_cg;      // W_UBO: input channels per group
uniform int u_o0;      // W_UBO: the first output channel of this dispatch's chunk
uniform uint u_wbase;  // W_UBO: the chunk's first weight in the uniform block (floats)
uniform float u_act_p0;  // activation parameters (ACT's expression may use them)
uniform float u_act_p1;
uniform float u_act_scale;  // the epilogue's affine after the activation (ACT's expression may use them)
uniform float u_act_shift;

#include "activations.glsl"
#ifndef ACT
#define ACT(x) (x)
#endif
#ifdef RESIDUAL
#ifdef HAS_BIAS
#define EPI(v, i) (ACT(v) + float(load4(i)))
#else
#define EPI(v, i) (ACT(v) + float(load3(i)))
#endif
#else
#define EPI(v, i) ACT(v)
#endif


#ifdef X_CONTIG
#define X_RS uint(u_W)
#define X_CS 1u
#else
#define X_RS u_x_stride[2]
#define X_CS u_x_stride[3]
#endif

#if defined(TILES)
// TILES (GPUs, filters past the lanes layout's shared weights: 3x3 over many input channels to few
// output channels, e.g. PP-OCR det's 96 -> 24): one invocation computes PX consecutive positions
// of one output row (tile t of the plane's OH * ceil(OW / PX) tiles; adjacent invocations,
// adjacent tiles) for OPI output channels (OPI % 4 == 0) over the KS-th part of the input channels
// (KS slices of CGK = CG / KS channels, TX = LOCAL_X / KS tiles a workgroup), an implicit GEMM
// without a columns matrix: per input channel and kernel row, the row segment of SEGLEN = (PX - 1)
// * SW + (KW - 1) * DW + 1 inputs is loaded once into registers (zero outside the image) and
// serves the KW taps and PX positions, each tap's OPI weights read as OPI / 4 vec4s of shared
// memory (the same address across a slice: a broadcast). The filters are staged CH input channels
// of every slice at a time (CH divides CGK), laid out [slice][c][kh][kw][o], between two barriers;
// the KH segments of a channel are loaded together (PREFETCH: the next channel's while this one's
// FMAs run). KS > 1: slices 1.. leave their sums in shared memory (over the staged weights) and
// slice 0 adds them in order and stores. Invocations past the last tile compute a clamped tile and
// store nothing (they take part in the barriers).
#define OQ (OPI / 4)
#define TX (int(LOCAL_X) / KS)
#define CGK (CG / KS)
#define S_W (KS * CH * KH * KW * OQ)     // vec4s of staged weights
#define S_P ((KS - 1) * TX * PX * OQ)   // vec4s of the slices' partial sums
shared vec4 s_w[S_W > S_P ? S_W : S_P];

void main() {
  int tiles = (u_OW + PX - 1) / PX;
  uint lid = gl_LocalInvocationID.x, tl = lid % uint(TX), ks = lid / uint(TX);
  uint t = WORKGROUP_ID.x * uint(TX) + tl;
  bool live = t < uint(u_OH * tiles);
  int tc = live ? int(t) : 0;
  uint ob = WORKGROUP_ID.y * uint(OPI), n = WORKGROUP_ID.z;
  int oh = tc / tiles, ow0 = (tc - oh * tiles) * PX;
  int h0 = oh * u_sh - u_pt, w0 = ow0 * SW - u_pl;
  uint c0 = (ob / uint(u_Og)) * uint(CG);
  vec4 acc[PX * OQ];  // acc[q * OQ + i]: channels ob + 4i .. 4i + 3 at position q
  for (int i = 0; i < OQ; ++i) {
#ifdef HAS_BIAS
    uint o = ob + uint(4 * i);
    vec4 b = vec4(float(load3(u_b_off + o * u_b_stride)), float(load3(u_b_off + (o + 1u) * u_b_stride)),
                  float(load3(u_b_off + (o + 2u) * u_b_stride)), float(load3(u_b_off + (o + 3u) * u_b_stride)));
    if (ks > 0u) b = vec4(0.0);
#else
    vec4 b = vec4(0.0);
#endif
    for (int q = 0; q < PX; ++q) acc[q * OQ + i] = b;
  }
  // The segment's columns: clamped into the row (loads stay in it), zero outside.
  int wc[SEGLEN];
  bool win[SEGLEN];
  for (int i = 0; i < SEGLEN; ++i) {
    wc[i] = clamp(w0 + i, 0, u_W - 1);
    win[i] = w0 + i >= 0 && w0 + i < u_W;
  }
  uint xn = u_x_off + n * u_x_stride[0] + (c0 + ks * uint(CGK)) * u_x_stride[1];  // the slice's first channel
  // The KH row segments of the slice's channel c (zero outside the image) into dst.
#define LOAD_ROWS(dst, c)                                                       \
  for (int kh = 0; kh < KH; ++kh) {                                             \
    int h = h0 + kh * u_dh;                                                     \
    bool hin = h >= 0 && h < u_H;                                               \
    uint xr = xn + uint(c) * u_x_stride[1] + uint(clamp(h, 0, u_H - 1)) * X_RS; \
    for (int i = 0; i < SEGLEN; ++i) {                                          \
      float v = float(load1(xr + uint(wc[i]) * X_CS));                          \
      dst[kh * SEGLEN + i] = hin && win[i] ? v : 0.0;                           \
    }                                                                           \
  }
  float seg[KH * SEGLEN];
#ifdef PREFETCH
  // The next channel's segments loaded while this one's FMAs run.
  float nxt[KH * SEGLEN];
  LOAD_ROWS(seg, 0)
#endif
  int wk = int(ks) * CH * KH * KW * OQ;  // the slice's staged filters
  for (int c = 0; c < CGK; ++c) {
    int cc = c % CH;
    if (cc == 0) {  // (uniform: every invocation stages together)
      barrier();    // the previous chunk's weights read by every invocation
      for (uint i = lid; i < uint(KS * CH * KH * KW * OPI); i += uint(LOCAL_X)) {
        uint j = i % uint(OPI), r = i / uint(OPI), sl = r / uint(CH * KH * KW), rr = r % uint(CH * KH * KW);
        uint kw = rr % uint(KW), kh = (rr / uint(KW)) % uint(KH), ci = sl * uint(CGK) + uint(c) + rr / uint(KW * KH);
        s_w[r * uint(OQ) + j / 4u][j % 4u] = float(
            load2(u_w_off + (ob + j) * u_w_stride[0] + ci * u_w_stride[1] + kh * u_w_stride[2] + kw * u_w_stride[3]));
      }
      barrier();
    }
#ifdef PREFETCH
    if (c + 1 < CGK) {
      LOAD_ROWS(nxt, c + 1)
    }
#else
    LOAD_ROWS(seg, c)
#endif
    for (int kh = 0; kh < KH; ++kh)
      for (int kw = 0; kw < KW; ++kw)
        for (int i = 0; i < OQ; ++i) {
          vec4 wv = s_w[wk + ((cc * KH + kh) * KW + kw) * OQ + i];
          for (int q = 0; q < PX; ++q) acc[q * OQ + i] += seg[kh * SEGLEN + q * SW + kw * DW] * wv;
        }
#ifdef PREFETCH
    seg = nxt;
#endif
  }
#if KS > 1
  barrier();  // every slice done with the staged weights
  if (ks > 0u)
    for (int k = 0; k < PX * OQ; ++k) s_w[((int(ks) - 1) * TX + int(tl)) * PX * OQ + k] = acc[k];
  barrier();
  if (ks > 0u) return;
  for (int sl = 1; sl < KS; ++sl)
    for (int k = 0; k < PX * OQ; ++k) acc[k] += s_w[((sl - 1) * TX + int(tl)) * PX * OQ + k];
#endif
  if (!live) return;
  uint P = uint(u_OH * u_OW), ybase = (n * uint(u_O) + ob) * P + uint(oh * u_OW + ow0);
  int cnt = min(PX, u_OW - ow0);
  for (int q = 0; q < PX; ++q) {
    if (q >= cnt) continue;
    for (int i = 0; i < OQ; ++i)
      for (int k = 0; k < 4; ++k) {
        uint e = ybase + uint(4 * i + k) * P + uint(q);
        store0(e, CT0(EPI(acc[q * OQ + i][k], e)));
      }
  }
}
#elif defined(DWQ)
// DWQ (GPUs; depthwise: CG = 1 and one output channel per group, OPI = 1; any stride and
// dilation, compile-time SH, SW, DH, DW): invocation t of image n's grid (workgroup z = n) computes
// a quad of 4 consecutive outputs of a row for PY consecutive rows of one plane (channel o = t /
// items, items = ceil(OH / PY) * ceil(OW / 4) a plane; adjacent invocations, adjacent quads of a
// row), no shared memory and no barrier: each of the RR = (PY - 1) * SH + (KH - 1) * DH + 1 input
// rows the PY x 4 outputs read is loaded once into QCOLS = 3 * SW + (KW - 1) * DW + 1 registers
// (zero outside the image) and serves every kernel row and output that reads it. X_QUADS (x
// contiguous, rows of whole quads, its offset a multiple of 4): a row's columns read as NQ aligned
// quads from column w0 - SHIFT (SHIFT = -pl mod 4, the same for every quad: 4 * SW outputs apart
// start 4 * SW columns apart). Y_QUADS (f32 out, OW % 4 == 0): each row's 4 outputs one 128-bit
// store, else one store each (those past OW skipped). The filter's KH x KW weights and the bias
// sit in registers; ACT(x) on each sum.
#define QCOLS (3 * SW + (KW - 1) * DW + 1)
#define RR ((PY - 1) * SH + (KH - 1) * DH + 1)
#ifdef Y_QUADS
layout(std430, binding = 0) writeonly buffer QuadY { vec4 qY[]; };
#endif

void main() {
  int qpr = (u_OW + 3) / 4, items = (u_OH + PY - 1) / PY * qpr;  // quads of a row, items of a plane
  uint n = WORKGROUP_ID.z, t = WORKGROUP_ID.x * uint(LOCAL_X) + gl_LocalInvocationID.x;
  if (t >= uint(u_O * items)) return;
  int o = int(t) / items, it = int(t) - o * items;
  int g = it / qpr, ow0 = (it - g * qpr) * 4, oh0 = g * PY;
  int h0 = oh0 * SH - u_pt, w0 = ow0 * SW - u_pl;
  uint xc = u_x_off + n * u_x_stride[0] + uint(o) * u_x_stride[1];  // channel o (c0 = o / Og * CG = o)
  float wt[KH * KW];
  for (int kh = 0; kh < KH; ++kh)
    for (int kw = 0; kw < KW; ++kw)
      wt[kh * KW + kw] = float(load2(u_w_off + uint(o) * u_w_stride[0] + uint(kh) * u_w_stride[2] + uint(kw) * u_w_stride[3]));
#ifdef HAS_BIAS
  float b = float(load3(u_b_off + uint(o) * u_b_stride));
#else
  float b = 0.0;
#endif
  float acc[PY * 4];
  for (int i = 0; i < PY * 4; ++i) acc[i] = b;
#ifdef X_QUADS
  int wq0 = (w0 - SHIFT) >> 2;  // the first quad's index in the row (w0 - SHIFT: a multiple of 4)
#endif
  for (int j = 0; j < RR; ++j) {
    int h = h0 + j;
    bool hin = h >= 0 && h < u_H;
    uint xr = xc + uint(clamp(h, 0, u_H - 1)) * X_RS;
    float seg[QCOLS];
#ifdef X_QUADS
    vec4 sq[NQ];
    for (int i = 0; i < NQ; ++i) {
      int qc = wq0 + i;
      vec4 v = quadX((xr >> 2u) + uint(clamp(qc, 0, u_W / 4 - 1)));
      sq[i] = hin && qc >= 0 && qc < u_W / 4 ? v : vec4(0.0);
    }
    for (int i = 0; i < QCOLS; ++i) seg[i] = sq[(i + SHIFT) / 4][(i + SHIFT) % 4];
#else
    for (int i = 0; i < QCOLS; ++i) {
      int w = w0 + i;
      float v = float(load1(xr + uint(clamp(w, 0, u_W - 1)) * X_CS));  // clamped: no load outside the row
      seg[i] = hin && w >= 0 && w < u_W ? v : 0.0;
    }
#endif
    // Row j serves output row y through kernel row kh where j = y * SH + kh * DH.
    for (int y = 0; y < PY; ++y) {
      int d = j - y * SH;
      if (d >= 0 && d % DH == 0 && d / DH < KH)
        for (int kw = 0; kw < KW; ++kw)
          for (int q = 0; q < 4; ++q) acc[y * 4 + q] += seg[q * SW + kw * DW] * wt[(d / DH) * KW + kw];
    }
  }
  uint ybase = (n * uint(u_O) + uint(o)) * uint(u_OH * u_OW) + uint(ow0);
  for (int y = 0; y < PY; ++y) {
    int oh = oh0 + y;
    if (oh >= u_OH) break;
    uint e = ybase + uint(oh * u_OW);
#ifdef Y_QUADS
    qY[e >> 2u] = vec4(EPI(acc[y * 4], e), EPI(acc[y * 4 + 1], e + 1u), EPI(acc[y * 4 + 2], e + 2u),
                       EPI(acc[y * 4 + 3], e + 3u));
#else
    for (int q = 0; q < 4; ++q)
      if (ow0 + q < u_OW) store0(e + uint(q), CT0(EPI(acc[y * 4 + q], e + uint(q))));
#endif
  }
}
#elif defined(LANES)
#define TAPS (CG * KH * KW)
#ifdef W_SHARED
shared float s_w[OPI * TAPS];
#define WEIGHT(j, c, kh, kw) s_w[(j) * TAPS + ((c) * KH + (kh)) * KW + (kw)]
#else
#define WEIGHT(j, c, kh, kw)                                                                          \
  float(load2(u_w_off + (ob + uint(j)) * u_w_stride[0] + uint(c) * u_w_stride[1] + uint(kh) * u_w_stride[2] + \
              uint(kw) * u_w_stride[3]))
#endif

void main() {
  uint ob = WORKGROUP_ID.y * uint(OPI), n = WORKGROUP_ID.z, lid = gl_LocalInvocationID.x;
#ifdef W_SHARED
  for (uint i = lid; i < uint(OPI * TAPS); i += uint(LOCAL_X)) {
    uint j = i / uint(TAPS), r = i - j * uint(TAPS), c = r / uint(KH * KW), k = r - c * uint(KH * KW);
    uint kh = k / uint(KW), kw = k - kh * uint(KW);
    s_w[i] = float(load2(u_w_off + (ob + j) * u_w_stride[0] + c * u_w_stride[1] + kh * u_w_stride[2] +
                         kw * u_w_stride[3]));
  }
  barrier();
#endif
  uint P = uint(u_OH * u_OW), c0 = (ob / uint(u_Og)) * uint(CG);
  uint xn = u_x_off + n * u_x_stride[0] + c0 * u_x_stride[1];
  uint ybase = (n * uint(u_O) + ob) * P;
  for (int q = 0; q < PX; ++q) {
    uint p = (WORKGROUP_ID.x * uint(PX) + uint(q)) * uint(LOCAL_X) + lid;
    if (p >= P) break;
    int oh = int(p) / u_OW, ow = int(p) - oh * u_OW;
    int h0 = oh * u_sh - u_pt, w0 = ow * u_sw - u_pl;
    float acc[OPI];
    for (int j = 0; j < OPI; ++j)
#if defined(HAS_BIAS) && defined(SHUFFLE)
      acc[j] = float(load3(u_b_off + ((ob + uint(j)) / uint(SHUFFLE * SHUFFLE)) * u_b_stride));
#elif defined(HAS_BIAS)
      acc[j] = float(load3(u_b_off + (ob + uint(j)) * u_b_stride));
#else
      acc[j] = 0.0;
#endif
    // Every tap loaded (addresses clamped into the image, taps outside read as 0), no branch:
    // all of a position's loads can be in flight at once.
    for (int c = 0; c < CG; ++c) {
      uint xb = xn + uint(c) * u_x_stride[1];
      for (int kh = 0; kh < KH; ++kh) {
        int h = h0 + kh * u_dh;
        bool hin = h >= 0 && h < u_H;
        uint xr = xb + uint(clamp(h, 0, u_H - 1)) * X_RS;
        for (int kw = 0; kw < KW; ++kw) {
          int w = w0 + kw * u_dw;
          float v = float(load1(xr + uint(clamp(w, 0, u_W - 1)) * X_CS));
          v = hin && w >= 0 && w < u_W ? v : 0.0;
          for (int j = 0; j < OPI; ++j) acc[j] += v * WEIGHT(j, c, kh, kw);
        }
      }
    }
    for (int j = 0; j < OPI; ++j) {
#ifdef SHUFFLE
      // Channel o = (oc * SHUFFLE + si) * SHUFFLE + sj to (oc, oh * SHUFFLE + si, ow * SHUFFLE + sj)
      // of out [N, u_O / SHUFFLE^2, OH * SHUFFLE, OW * SHUFFLE] (as W_UBO's below).
      uint o = ob + uint(j), oc = o / uint(SHUFFLE * SHUFFLE), si = (o / uint(SHUFFLE)) % uint(SHUFFLE);
      uint y = ((n * uint(u_O / (SHUFFLE * SHUFFLE)) + oc) * uint(u_OH * SHUFFLE) + uint(oh * SHUFFLE) + si) *
                   uint(u_OW * SHUFFLE) +
               uint(ow * SHUFFLE) + o % uint(SHUFFLE);
      store0(y, CT0(EPI(acc[j], y)));
#else
      store0(ybase + uint(j) * P + p, CT0(EPI(acc[j], ybase + uint(j) * P + p)));
#endif
    }
  }
}
#elif defined(W_UBO)
layout(std140, binding = UBO_BINDING) uniform Weights { vec4 u_wq[WQ]; };
float weight(uint i) { return u_wq[i >> 2u][i & 3u]; }

void main() {
  int tiles = (u_OW + PX - 1) / PX;
  uint t = GLOBAL_ID.x;
  if (t >= uint(u_OH * tiles)) return;
  uint ob = uint(u_o0) + WORKGROUP_ID.y * uint(OPI), n = WORKGROUP_ID.z;
  int oh = int(t) / tiles, ow0 = (int(t) - oh * tiles) * PX;
  int h0 = oh * u_sh - u_pt, w0 = ow0 * SW - u_pl;
  uint c0 = (ob / uint(u_Og)) * uint(u_cg);
  float acc[OPI * PX];
#ifdef HAS_BIAS
#define INIT_Q(j, q) acc[j * PX + q] = b;
#ifdef SHUFFLE
#define BIAS_AT(o) ((o) / uint(SHUFFLE * SHUFFLE))  // one bias per block of S x S channels
#else
#define BIAS_AT(o) (o)
#endif
#define INIT_J(j)                                                            \
  {                                                                          \
    float b = float(load3(u_b_off + BIAS_AT(ob + uint(j)) * u_b_stride));    \
    PXS_I(INIT_Q, j)                                                         \
  }
#else
#define INIT_Q(j, q) acc[j * PX + q] = 0.0;
#define INIT_J(j) PXS_I(INIT_Q, j)
#endif
  OPIS(INIT_J)
  // The segment's columns: clamped into the row (loads stay in it), zero outside.
  int wc[SEGLEN];
  bool win[SEGLEN];
#define SEG_COL(i)                          \
  wc[i] = clamp(w0 + i, 0, u_W - 1);  \
  win[i] = w0 + i >= 0 && w0 + i < u_W;
  SEGS(SEG_COL)
#ifdef X_QUADS
  int wq0 = (w0 - SHIFT) >> 2;  // the first quad's index in the row
#endif
  uint wstep = uint(u_cg * KH * KW);  // floats between two output channels' filters
  uint wj = u_wbase + WORKGROUP_ID.y * uint(OPI) * wstep;
  uint xn = u_x_off + n * u_x_stride[0] + c0 * u_x_stride[1];
  for (int c = 0; LOOP(c < u_cg); ++c) {
    uint xc = xn + uint(c) * u_x_stride[1], wk = wj + uint(c * KH * KW);
    for (int kh = 0; kh < KH; ++kh) {
      int h = h0 + kh * u_dh;
      bool hin = h >= 0 && h < u_H;
      uint xr = xc + uint(clamp(h, 0, u_H - 1)) * X_RS;
      float seg[SEGLEN];
#ifdef X_QUADS
      // NQ aligned quads from column w0 - SHIFT (rows of whole quads: each quad in or out).
      vec4 sq[NQ];
#define SEG_QUAD(i)                                                                  \
  {                                                                                  \
    int qc = wq0 + i;                                                                \
    vec4 v = quadX((xr >> 2u) + uint(clamp(qc, 0, u_W / 4 - 1)));                   \
    sq[i] = hin && qc >= 0 && qc < u_W / 4 ? v : vec4(0.0);                          \
  }
      QUADS(SEG_QUAD)
#define SEG_LOAD(i) seg[i] = sq[(i + SHIFT) / 4][(i + SHIFT) % 4];
#else
#define SEG_LOAD(i)                                     \
  {                                                     \
    float v = float(load1(xr + uint(wc[i]) * X_CS));    \
    seg[i] = hin && win[i] ? v : 0.0;                   \
  }
#endif
      SEGS(SEG_LOAD)
      uint wr = wk + uint(kh * KW);
#define FMA_Q(kw, j, q) acc[j * PX + q] += seg[q * SW + kw * DW] * wv;
#define FMA_J(kw, j)                                     \
  {                                                      \
    float wv = weight(wr + uint(j) * wstep + uint(kw));  \
    PXS_IJ(FMA_Q, kw, j)                                 \
  }
#define FMA_KW(kw) OPIS_I(FMA_J, kw)
      KWS(FMA_KW)
    }
  }
  uint P = uint(u_OH * u_OW), base = uint(oh * u_OW + ow0);
  int cnt = min(PX, u_OW - ow0);
#ifdef SHUFFLE
  // Channel o = (oc * SHUFFLE + si) * SHUFFLE + sj of [N, u_O, OH, OW] goes to (oc, oh * SHUFFLE + si,
  // ow * SHUFFLE + sj) of out [N, u_O / SHUFFLE^2, OH * SHUFFLE, OW * SHUFFLE].
  uint OWS = uint(u_OW * SHUFFLE);
#define STORE_Q(j, q) \
  if (q < cnt) store0(yj + uint(q * SHUFFLE), CT0(EPI(acc[j * PX + q], yj + uint(q * SHUFFLE))));
#define STORE_J(j)                                                                                         \
  {                                                                                                        \
    uint o = ob + uint(j), oc = o / uint(SHUFFLE * SHUFFLE), si = (o / uint(SHUFFLE)) % uint(SHUFFLE);       \
    uint yj = ((n * uint(u_O / (SHUFFLE * SHUFFLE)) + oc) * uint(u_OH * SHUFFLE) + uint(oh * SHUFFLE) + si) * OWS + \
              uint(ow0 * SHUFFLE) + o % uint(SHUFFLE);                                                      \
    PXS_I(STORE_Q, j)                                                                                      \
  }
#else
  uint ybase = (n * uint(u_O) + ob) * P + base;
#define STORE_Q(j, q) \
  if (q < cnt) store0(ybase + uint(j) * P + uint(q), CT0(EPI(acc[j * PX + q], ybase + uint(j) * P + uint(q))));
#define STORE_J(j) PXS_I(STORE_Q, j)
#endif
  OPIS(STORE_J)
}
#else
void main() {
  int tiles = (u_OW + PX - 1) / PX;
  uint t = GLOBAL_ID.x;
  if (t >= uint(u_OH * tiles)) return;
  uint ob = WORKGROUP_ID.y * uint(OPI), n = WORKGROUP_ID.z;
  int oh = int(t) / tiles, ow0 = (int(t) - oh * tiles) * PX;
  int h0 = oh * u_sh - u_pt;
  uint c0 = (ob / uint(u_Og)) * uint(CG);
  float acc[OPI * PX];
  for (int j = 0; j < OPI; ++j) {
#ifdef HAS_BIAS
    float b = float(load3(u_b_off + (ob + uint(j)) * u_b_stride));
#else
    float b = 0.0;
#endif
    for (int q = 0; q < PX; ++q) acc[j * PX + q] = b;
  }
  for (int c = 0; c < CG; ++c) {
    uint xb = u_x_off + n * u_x_stride[0] + (c0 + uint(c)) * u_x_stride[1];
    uint wc = u_w_off + ob * u_w_stride[0] + uint(c) * u_w_stride[1];
    for (int kh = 0; kh < KH; ++kh) {
      int h = h0 + kh * u_dh;
      if (h < 0 || h >= u_H) continue;
      uint xr = xb + uint(h) * X_RS;
#ifdef ROWSEG
      float seg[SEGLEN];
      bool seg_in[SEGLEN];
      for (int i = 0; i < SEGLEN; ++i) {
        int w = ow0 - u_pl + i;
        seg_in[i] = w >= 0 && w < u_W;
        float x = float(load1(xr + uint(clamp(w, 0, u_W - 1)) * X_CS));  // clamped: no load outside the row
        seg[i] = seg_in[i] ? x : 0.0;
      }
#endif
      for (int kw = 0; kw < KW; ++kw) {
        uint wt = wc + uint(kh) * u_w_stride[2] + uint(kw) * u_w_stride[3];
        float wv[OPI];
        for (int j = 0; j < OPI; ++j) wv[j] = float(load2(wt + uint(j) * u_w_stride[0]));
#ifdef ROWSEG
        for (int q = 0; q < PX; ++q) {
          int i = q + kw * DW;
          if (!seg_in[i]) continue;
          for (int j = 0; j < OPI; ++j) acc[j * PX + q] += seg[i] * wv[j];
        }
#else
        int w = ow0 * u_sw - u_pl + kw * u_dw;
        for (int q = 0; q < PX; ++q, w += u_sw) {
          if (w < 0 || w >= u_W) continue;
          float v = float(load1(xr + uint(w) * X_CS));
          for (int j = 0; j < OPI; ++j) acc[j * PX + q] += v * wv[j];
        }
#endif
      }
    }
  }
  uint P = uint(u_OH * u_OW), base = uint(oh * u_OW + ow0);
  int cnt = min(PX, u_OW - ow0);
  for (int j = 0; j < OPI; ++j) {
    uint e0 = (n * uint(u_O) + ob + uint(j)) * P + base;
    for (int q = 0; q < PX; ++q) {
      if (q >= cnt) continue;
#ifdef OUT16
      // 16-bit outputs: a word whose halves are both this invocation's is one plain store (two
      // atomics per element otherwise); an odd first element shares its word with the tile before.
      uint e = e0 + uint(q);
      bool even = (e & 1u) == 0u;
      if (even && q + 1 < cnt)
        t0[e >> 1u] = bits0(CT0(acc[j * PX + q])) | (bits0(CT0(acc[j * PX + q + 1])) << 16u);
      else if (even || q == 0)
        store0(e, CT0(acc[j * PX + q]));
#else
      store0(e0 + uint(q), CT0(EPI(acc[j * PX + q], e0 + uint(q))));
#endif
    }
  }
}
#endif
