// im2col / col2im for 2-D convolution (NCHW). Geometry: an image [N, C, H, W] and output
// positions [OH, OW] with stride (sh, sw), padding (pt, pl) at the top/left and dilation
// (dh, dw); the "columns" matrix has one row per (n, oh, ow) and one column per (c, kh, kw).
// IM2COL: the transposed columns matrix, one row per (c, kh, kw) and one column per (n, oh, ow):
//         colsT[(c*KH + kh)*KW + kw, (n*OH + oh)*OW + ow] = image[n, c, oh*sh - pt + kh*dh, ...]
//         (0 outside the image), so that consecutive invocations read consecutive w of one image
//         row and write consecutive columns. Operand 0 = colsT (contiguous), 1 = image (strided).
//         Grid: x = output position over the images (n = position / (OH * OW)), z = row (c, kh,
//         kw), so that two integer divisions per element (QUADS: per quad) remain (the flat
//         index's six divisions made it ALU-bound, bench/RESULTS.md); every workgroup's
//         invocations busy where a plane has few positions (x over one image's positions and y
//         over the images left most of each workgroup idle at 14 x 14: cnn33, 2026-11-28).
// COL2IM: image[n, c, h, w] = sum over (kh, kw) hitting (h, w) of cols[...] (gather form: no
//         atomics, deterministic). Operand 0 = image (contiguous), operand 1 = cols (strided).
// ROWS_T: a conv's output gradient gy [N, O, OH, OW] (each plane contiguous) as the GEMMs' rows
//         [N*OH*OW, O] (contiguous): per image a transpose of [O, OH*OW], 32 x 32 tiles through
//         shared memory, read along positions and written along channels (both coalesced; the
//         strided copy's reads were not). LOCAL_X = 256. Grid: x = 32 positions, y = 32
//         channels, z = image n. O is u_C. Operand 0 = rows, 1 = gy (strided images and channels).
// Used for conv2d forward (weights @ colsT), its input gradient and conv_transpose2d (col2im).
layout(local_size_x = LOCAL_X) in;

uniform uint u_count;
uniform int u_N;
uniform int u_C;
uniform int u_H;
uniform int u_W;
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
uniform uint u_img_stride[4];
uniform uint u_img_off;
uniform uint u_col_rs;  // cols row stride
uniform uint u_col_cs;  // cols column stride
uniform uint u_col_off;

#ifdef ROWS_T
shared float s_tile[32][33];  // [channel][position], padded against bank conflicts
#endif

void main() {
#if defined(ROWS_T)
  uint S = uint(u_OH * u_OW), O = uint(u_C);
  uint n = WORKGROUP_ID.z, s0 = WORKGROUP_ID.x * 32u, o0 = WORKGROUP_ID.y * 32u;
  uint tx = gl_LocalInvocationID.x & 31u, ty = gl_LocalInvocationID.x >> 5u;
  uint img = u_img_off + n * u_img_stride[0];
  for (uint i = 0u; i < 32u; i += 8u) {
    uint o = o0 + ty + i, s = s0 + tx;
    if (o < O && s < S) s_tile[ty + i][tx] = float(load1(img + o * u_img_stride[1] + s));
  }
  workgroup_sync();
  for (uint i = 0u; i < 32u; i += 8u) {
    uint s = s0 + ty + i, o = o0 + tx;
    if (o < O && s < S) store0((n * S + s) * O + o, CT0(s_tile[tx][ty + i]));
  }
#elif defined(IM2COL)
#ifdef QUADS
  uint P1 = uint(u_OH * u_OW), q = GLOBAL_ID.x * 4u;  // P1 % 4 == 0: a quad in one image
#else
  uint P1 = uint(u_OH * u_OW), q = GLOBAL_ID.x;
#endif
  if (q >= uint(u_N) * P1) return;
  uint n = q / P1, p = q - n * P1, k = WORKGROUP_ID.z;
  int kw = int(k) % u_KW, kh = (int(k) / u_KW) % u_KH, c = int(k) / (u_KW * u_KH);
  int oh = int(p) / u_OW, ow = int(p) - oh * u_OW;
  int h = oh * u_sh - u_pt + kh * u_dh, w = ow * u_sw - u_pl + kw * u_dw;
  uint img = u_img_off + n * u_img_stride[0] + uint(c) * u_img_stride[1];
#ifdef QUADS
  // OH * OW a multiple of 4: positions p..p+3 (p = 4 x invocation), one 128-bit store.
  uvec4 r;
  for (int i = 0; i < 4; ++i) {
    float v = 0.0;
    if (h >= 0 && h < u_H && w >= 0 && w < u_W) v = float(load1(img + uint(h) * u_img_stride[2] + uint(w) * u_img_stride[3]));
    r[i] = floatBitsToUint(v);
    w += u_sw;
    if (++ow == u_OW) {  // next output row
      ow = 0;
      h += u_sh;
      w = -u_pl + kw * u_dw;
    }
  }
  t04[((k * uint(u_N) + n) * P1 + p) >> 2u] = r;
#else
  CT0 v = CT0(0);
  if (h >= 0 && h < u_H && w >= 0 && w < u_W)
    v = CT0(load1(img + uint(h) * u_img_stride[2] + uint(w) * u_img_stride[3]));
  store0((k * uint(u_N) + n) * P1 + p, v);
#endif
#else
  uint e = GLOBAL_ID_1D;
  if (e >= u_count) return;
  int w = int(e % uint(u_W)), h = int((e / uint(u_W)) % uint(u_H)), c = int((e / uint(u_W * u_H)) % uint(u_C));
  int n = int(e / uint(u_W * u_H * u_C));
  float acc = 0.0;
  for (int kh = 0; LOOP(kh < u_KH); ++kh) {
    int th = h + u_pt - kh * u_dh;
    if (th < 0 || th % u_sh != 0) continue;
    int oh = th / u_sh;
    if (oh >= u_OH) continue;
    for (int kw = 0; LOOP(kw < u_KW); ++kw) {
      int tw = w + u_pl - kw * u_dw;
      if (tw < 0 || tw % u_sw != 0) continue;
      int ow = tw / u_sw;
      if (ow >= u_OW) continue;
      uint row = uint((n * u_OH + oh) * u_OW + ow), col = uint((c * u_KH + kh) * u_KW + kw);
      acc += float(load1(u_col_off + row * u_col_rs + col * u_col_cs));
    }
  }
  store0(e, CT0(acc));
#endif
}
