// conv2d from a texture to a texture in one dispatch (gltensor/interop.hpp, conv2d_texture):
// one invocation per output texel. Input channel c of picture pixel (x, y) is
// texelFetch(u_tex, (x, texel row of y)).c * u_in_scale[c] + u_in_bias[c], zero outside the
// picture (padding); output channel o is ACT(bias[o] + sum over c, ky, kx of
// w[o][c][ky][kx] * in(c, oy * stride_y - pad_top + ky * dil_y, ox * stride_x - pad_left +
// kx * dil_x)) * u_out_scale[o] + u_out_bias[o], the texel's other channels (0, 0, 0, 1),
// imageStore'd. Picture row y is texel row H - 1 - y where the flip is set (origin bottom left).
// Operands: 0 the weight [CO, CI, KH, KW] (contiguous), 1 the bias [CO] (HAS_BIAS).
// IN_LEVEL0: the input is level 0 (a constant lod for texelFetch).
// BIAS_UBO_BINDING: an f32 bias read as a uniform block (one vec4) too, instead of operand 1. IN_AFFINE / OUT_AFFINE: the input's / output's scale and bias are not the identity.
// CI, CO, KH, KW: channel counts and kernel size as compile-time constants (the loops unroll and
// index the weights with constants).
// Weights, by where they are read (every invocation reads all of them, at indices that are
// constants once the loops unroll):
//  WQ: f32 weights bound as a uniform block of WQ vec4s at UBO_BINDING (GPUs read uniform blocks
//      at constant indices from their constant caches, as operands of the multiply-adds);
//  WN: else the weight's element count where it fits in shared memory: the workgroup stages it
//      there once;
//  else read from operand 0.
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
uniform float u_in_scale[4];
uniform float u_in_bias[4];
uniform float u_out_scale[4];
uniform float u_out_bias[4];
uniform float u_act_p0;
uniform float u_act_p1;

layout(binding = TEX_UNIT) uniform highp sampler2D u_tex;
layout(binding = IMG_UNIT, IMG_FORMAT) writeonly uniform highp image2D u_img;

#include "activations.glsl"
#ifndef ACT
#define ACT(x) (x)
#endif

#if defined(WQ)
layout(std140, binding = UBO_BINDING) uniform Weights { vec4 u_wq[WQ]; };
#ifdef BIAS_UBO_BINDING
layout(std140, binding = BIAS_UBO_BINDING) uniform Bias { vec4 u_bias4; };
#endif
#define WEIGHT(i) u_wq[(i) >> 2u][(i)&3u]
#elif defined(WN)
shared float s_w[WN];
#define WEIGHT(i) s_w[i]
#else
#define WEIGHT(i) float(load0(i))
#endif

void main() {
  uvec3 g = GLOBAL_ID;
#ifdef WN
  for (uint i = gl_LocalInvocationIndex; i < uint(WN); i += LOCAL_X * LOCAL_Y) s_w[i] = float(load0(i));
  barrier();
#endif
  if (g.x >= uint(u_out_W) || g.y >= uint(u_out_H)) return;
  int ox = int(g.x), oy = int(g.y);
  vec4 acc = vec4(0.0);
#if defined(HAS_BIAS) && defined(BIAS_UBO_BINDING)
  acc = u_bias4;  // components past CO are unused
#elif defined(HAS_BIAS)
  for (int o = 0; o < CO; ++o) acc[o] = float(load1(uint(o)));
#endif
  const uint khw = uint(KH * KW);
  for (int ky = 0; ky < KH; ++ky) {
    int iy = oy * u_stride_y - u_pad_top + ky * u_dil_y;
    if (iy < 0 || iy >= u_in_H) continue;
    int ty = u_in_flip != 0 ? u_in_H - 1 - iy : iy;
    for (int kx = 0; kx < KW; ++kx) {
      int ix = ox * u_stride_x - u_pad_left + kx * u_dil_x;
      if (ix < 0 || ix >= u_in_W) continue;
#ifdef IN_LEVEL0
      vec4 t = texelFetch(u_tex, ivec2(ix, ty), 0);
#else
      vec4 t = texelFetch(u_tex, ivec2(ix, ty), u_in_level);
#endif
      uint k = uint(ky * KW + kx);
#ifdef IN_AFFINE
      t = t * vec4(u_in_scale[0], u_in_scale[1], u_in_scale[2], u_in_scale[3]) +
          vec4(u_in_bias[0], u_in_bias[1], u_in_bias[2], u_in_bias[3]);
#endif
      for (int o = 0; o < CO; ++o) {
        float s = 0.0;
        for (int c = 0; c < CI; ++c) s += WEIGHT(uint(o * CI + c) * khw + k) * t[c];
        acc[o] += s;
      }
    }
  }
  vec4 r = vec4(0.0, 0.0, 0.0, 1.0);
#ifdef OUT_AFFINE
  for (int o = 0; o < CO; ++o) r[o] = ACT(acc[o]) * u_out_scale[o] + u_out_bias[o];
#else
  for (int o = 0; o < CO; ++o) r[o] = ACT(acc[o]);
#endif
  imageStore(u_img, ivec2(ox, u_out_flip != 0 ? u_out_H - 1 - oy : oy), r);
}
