// One stage of a frame filter (gltensor/interop.hpp: conv2d_texture, FrameFilter): conv2d with
// elementwise steps fused before it (on its input, first stage only) and after it (its epilogue),
// from the application's texture or an intermediate to an intermediate or the application's
// texture. One invocation per output position.
//
// Input channel c of picture pixel (x, y), before the PRE steps:
//  IN_TEXTURE: texelFetch(u_tex, (x, texel row of y)).c, picture row y at texel row
//              u_in_H - 1 - y where u_in_flip is set (origin bottom left);
//  else        the intermediate operand 2, [u_in_H, u_in_W, CI] (channels innermost), f32 words,
//              or with MID_IN_F16 pairs of f16 (channel 2k in the low half of word k, CI rounded
//              up to even per position);
// zero outside the picture (padding; the PRE steps do not apply there). Output channel o is
// POST(bias[o] + sum over c, ky, kx of w[o][c][ky][kx] * in(c, oy * stride_y - pad_top + ky * dil_y,
// ox * stride_x - pad_left + kx * dil_x)), written
//  OUT_IMAGE: imageStore'd (channels past CO: 0, alpha 1), picture row flipped by u_out_flip;
//  else       to the intermediate operand 3, laid out as operand 2 (MID_OUT_F16: f16 pairs, rounded
//             to nearest even).
// PRE_STEPS / POST_STEPS: the fused elementwise steps, statements on `v` (the value) and `ch` (its
// channel): affine steps v = v * s + b with per-channel s, b from u_pre_s/u_pre_b (or u_post_*)
// at step * CI + ch (CO for post), activations of glsl/common/activations.glsl with their two
// parameters at step * CI (CO) of the same arrays. PRE_N / POST_N: the arrays' sizes.
// CI, CO, KH, KW: channel counts and kernel size as compile-time constants (the loops unroll and
// index the weights and the per-channel arrays with constants).
// IN_LEVEL0: the input texture level is 0 (a constant lod).
// Weights [CO, CI, KH, KW] (contiguous), every invocation reading all of them:
//  WQ: weights bound as a uniform block of WQ vec4s at UBO_BINDING (GPUs read uniform blocks
//      at constant indices from their constant caches, as operands of the multiply-adds): f32,
//      or with WQ16 f16 (8 per uvec4, widened exactly as f16 operands are: the same f32 math);
//  WN: else the weight's element count where it fits in shared memory: staged there once;
//  else read from operand 0.
// Bias [CO]: HAS_BIAS; BIAS_UBO_BINDING: read as a uniform block of BQ vec4s (BQ16: of f16, 8 per
// uvec4), else operand 1.
// NVIDIA's compiler left the loops over channels rolled and acc[] / t[] in local memory (the
// fused 1080p 3x3 filter took 0.168 ms against 0.027 ms unrolled, H100); other drivers ignore
// the pragma. Not for big filters: a 25 x 25 kernel over 12 channels unrolled passed the
// driver's instruction limit ("too many instructions").
#if CI * CO * KH * KW <= 2048
#pragma optionNV(unroll all)
#endif
layout(local_size_x = LOCAL_X, local_size_y = LOCAL_Y) in;

uniform int u_in_W;
uniform int u_in_H;
uniform int u_in_level;
uniform int u_in_flip;
uniform int u_out_W;
uniform int u_out_H;
uniform int u_out_flip;
uniform int u_stride_y;
uniform int u_stride_x;
uniform int u_dil_y;
uniform int u_dil_x;
uniform int u_pad_top;
uniform int u_pad_left;
uniform float u_pre_s[PRE_N];
uniform float u_pre_b[PRE_N];
uniform float u_post_s[POST_N];
uniform float u_post_b[POST_N];

#ifdef IN_TEXTURE
layout(binding = TEX_UNIT) uniform highp sampler2D u_tex;
#endif
#ifdef OUT_IMAGE
layout(binding = IMG_UNIT, IMG_FORMAT) writeonly uniform highp image2D u_img;
#endif

#include "activations.glsl"

#if defined(WQ) && defined(WQ16)
layout(std140, binding = UBO_BINDING) uniform Weights { uvec4 u_wq[WQ]; };
#define WEIGHT(i) f16_bits_to_f32(u_wq[(i) >> 3u][((i) >> 1u) & 3u] >> (((i)&1u) * 16u))
#elif defined(WQ)
layout(std140, binding = UBO_BINDING) uniform Weights { vec4 u_wq[WQ]; };
#define WEIGHT(i) u_wq[(i) >> 2u][(i)&3u]
#elif defined(WN)
shared float s_w[WN];
#define WEIGHT(i) s_w[i]
#else
#define WEIGHT(i) float(load0(i))
#endif
// The bias word's vector is read whole, then its component picked: Mesa 25.0.7's llvmpipe
// corrupted its heap linking `acc[o] = u_bq[o >> 2][o & 3]` in the loop over o below (a crash
// in glLinkProgram in most processes, wrong sums in others; bench/RESULTS.md, Mesa 25), not this form.
#if defined(BIAS_UBO_BINDING) && defined(BQ16)
layout(std140, binding = BIAS_UBO_BINDING) uniform Bias { uvec4 u_bq[BQ]; };
float bias_at(int o) {
  uvec4 q = u_bq[o >> 3];
  return f16_bits_to_f32(q[(o >> 1) & 3] >> (uint(o & 1) * 16u));
}
#define BIAS(o) bias_at(o)
#elif defined(BIAS_UBO_BINDING)
layout(std140, binding = BIAS_UBO_BINDING) uniform Bias { vec4 u_bq[BQ]; };
float bias_at(int o) {
  vec4 q = u_bq[o >> 2];
  return q[o & 3];
}
#define BIAS(o) bias_at(o)
#endif

// 32-bit words per position of an intermediate with C channels.
#define MID_WORDS_F32(C) uint(C)
#define MID_WORDS_F16(C) uint(((C) + 1) / 2)

void main() {
  uvec3 g = GLOBAL_ID;
#ifdef WN
  for (uint i = gl_LocalInvocationIndex; i < uint(WN); i += LOCAL_X * LOCAL_Y) s_w[i] = float(load0(i));
  barrier();
#endif
  if (g.x >= uint(u_out_W) || g.y >= uint(u_out_H)) return;
  int ox = int(g.x), oy = int(g.y);
  float acc[CO];
  for (int o = 0; o < CO; ++o) {
#if defined(HAS_BIAS) && defined(BIAS_UBO_BINDING)
    acc[o] = BIAS(o);
#elif defined(HAS_BIAS)
    acc[o] = float(load1(uint(o)));
#else
    acc[o] = 0.0;
#endif
  }
  const uint khw = uint(KH * KW);
  for (int ky = 0; ky < KH; ++ky) {
    int iy = oy * u_stride_y - u_pad_top + ky * u_dil_y;
    if (iy < 0 || iy >= u_in_H) continue;
    for (int kx = 0; kx < KW; ++kx) {
      int ix = ox * u_stride_x - u_pad_left + kx * u_dil_x;
      if (ix < 0 || ix >= u_in_W) continue;
      float t[CI];
#ifdef IN_TEXTURE
      int ty = u_in_flip != 0 ? u_in_H - 1 - iy : iy;
#ifdef IN_LEVEL0
      vec4 tv = texelFetch(u_tex, ivec2(ix, ty), 0);
#else
      vec4 tv = texelFetch(u_tex, ivec2(ix, ty), u_in_level);
#endif
      for (int c = 0; c < CI; ++c) t[c] = tv[c];
#elif defined(MID_IN_F16)
      uint base = uint(iy * u_in_W + ix) * MID_WORDS_F16(CI);
      for (int c = 0; c < CI; ++c) t[c] = f16_bits_to_f32(t2[base + uint(c >> 1)] >> (uint(c & 1) * 16u));
#else
      uint base = uint(iy * u_in_W + ix) * MID_WORDS_F32(CI);
      for (int c = 0; c < CI; ++c) t[c] = uintBitsToFloat(t2[base + uint(c)]);
#endif
      for (int ch = 0; ch < CI; ++ch) {
        float v = t[ch];
        PRE_STEPS
        t[ch] = v;
      }
      uint k = uint(ky * KW + kx);
      for (int o = 0; o < CO; ++o) {
        float s = 0.0;
        for (int c = 0; c < CI; ++c) s += WEIGHT(uint(o * CI + c) * khw + k) * t[c];
        acc[o] += s;
      }
    }
  }
  for (int ch = 0; ch < CO; ++ch) {
    float v = acc[ch];
    POST_STEPS
    acc[ch] = v;
  }
#ifdef OUT_IMAGE
  vec4 r = vec4(0.0, 0.0, 0.0, 1.0);
  for (int o = 0; o < CO; ++o) r[o] = acc[o];
  imageStore(u_img, ivec2(ox, u_out_flip != 0 ? u_out_H - 1 - oy : oy), r);
#elif defined(MID_OUT_F16)
  uint obase = uint(oy * u_out_W + ox) * MID_WORDS_F16(CO);
  for (int o = 0; o < CO; o += 2) {
    uint lo = f32_to_f16_bits(acc[o]), hi = o + 1 < CO ? f32_to_f16_bits(acc[min(o + 1, CO - 1)]) : 0u;
    t3[obase + uint(o >> 1)] = lo | (hi << 16u);
  }
#else
  uint obase = uint(oy * u_out_W + ox) * MID_WORDS_F32(CO);
  for (int o = 0; o < CO; ++o) t3[obase + uint(o)] = floatBitsToUint(acc[o]);
#endif
}
