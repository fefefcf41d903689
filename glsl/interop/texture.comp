// Texture <-> tensor transfers (gltensor/interop.hpp). One invocation per texel (x, y) of a
// W x H texture level; the tensor element of channel c at picture row y, column x is
// u_off + c * u_stride[0] + y * u_stride[1] + x * u_stride[2], and picture row y is texel row
// H - 1 - y when u_flip is set (texture origin at the bottom left), else texel row y.
// FROM_TEXTURE: texelFetch from u_tex (sampler2D bound at unit TEX_UNIT), channel c times
//               u_scale[c] plus u_bias[c], stored to operand 0.
// else (to the texture): operand 0's channels times u_scale plus u_bias, the rest (0, 0, 0, 1),
//               imageStore to u_img (image unit IMG_UNIT, format IMG_FORMAT).
// CH: the channel count (u_C) as a compile-time constant, so that the channel loop unrolls and
// the vector and uniform arrays are indexed by constants (llvmpipe gathers dynamically indexed
// ones lane by lane).
layout(local_size_x = LOCAL_X, local_size_y = LOCAL_Y) in;

uniform int u_W;
uniform int u_H;
uniform int u_C;
uniform int u_level;
uniform int u_flip;
uniform uint u_off;
uniform uint u_stride[3];
uniform float u_scale[4];
uniform float u_bias[4];

#ifdef FROM_TEXTURE
layout(binding = TEX_UNIT) uniform highp sampler2D u_tex;
#else
layout(binding = IMG_UNIT, IMG_FORMAT) writeonly uniform highp image2D u_img;
#endif

void main() {
  uvec3 g = GLOBAL_ID;
  if (g.x >= uint(u_W) || g.y >= uint(u_H)) return;
  int ty = u_flip != 0 ? u_H - 1 - int(g.y) : int(g.y);
  uint base = u_off + g.y * u_stride[1] + g.x * u_stride[2];
#ifdef FROM_TEXTURE
  vec4 v = texelFetch(u_tex, ivec2(int(g.x), ty), u_level);
  for (int c = 0; c < CH; ++c) store0(base + uint(c) * u_stride[0], CT0(v[c] * u_scale[c] + u_bias[c]));
#else
  vec4 v = vec4(0.0, 0.0, 0.0, 1.0);
  for (int c = 0; c < CH; ++c) v[c] = float(load0(base + uint(c) * u_stride[0])) * u_scale[c] + u_bias[c];
  imageStore(u_img, ivec2(int(g.x), ty), v);
#endif
}
