// Sum-like reductions over contiguous rows (the fast path of reduce.comp): u_rows rows of u_R
// elements, element r of row o at u_in_off + o * u_row_stride + r. One workgroup reduces a chunk
// of u_chunk elements (a multiple of 4) of one row; with u_G > 1 chunks per row the host runs
// this kernel again over the [rows, G] partial sums (written to operand 0 as f32, unscaled).
// SEGMENTS: a row is u_R / u_seg segments of u_seg contiguous elements, segment a at u_seg_stride
// * a past the row's start (element r at u_in_off + o * u_row_stride + (r / u_seg) * u_seg_stride +
// r % u_seg): sums over dims 0, 2, 3 of a contiguous [N, C, H, W] (a conv's bias gradient) in one
// pass, each row a channel's N planes. With QUADS, u_seg and u_seg_stride are multiples of 4.
// TERM (host: `#define TERM term_<name>`): term_x (sum), term_abs (L1), term_square (L2).
// POST: post_none, post_mean (divide by u_div), post_sqrt (L2 norm). Only the last stage posts.
// QUADS: operand 1 is f32 read as 128-bit quads (the host checks that u_in_off and u_row_stride
// are multiples of 4); four independent accumulators per invocation keep several loads in
// flight. Otherwise elements are read one by one through load1 (any dtype).
// SUBGROUP: the workgroup's partial sums combine with subgroupAdd (KHR_shader_subgroup
// arithmetic) and one shared slot per subgroup; otherwise with a shared-memory tree.
// Sums are plain float additions: NaN and Inf propagate as IEEE arithmetic does (Inf - Inf = NaN).
// The names' values are private to this file.
#define term_x 0
#define term_abs 1
#define term_square 2
#define post_none 0
#define post_mean 1
#define post_sqrt 2

layout(local_size_x = LOCAL_X) in;

uniform uint u_rows;
uniform uint u_R;
uniform uint u_row_stride;
uniform uint u_in_off;
uniform uint u_chunk;
uniform uint u_G;
uniform uint u_out_off;
uniform float u_div;
#ifdef SEGMENTS
uniform uint u_seg;
uniform uint u_seg_stride;
#endif

shared float s_part[LOCAL_X];

float f(float x) {
#if TERM == term_abs
  return abs(x);
#elif TERM == term_square
  return x * x;
#else
  return x;
#endif
}

#ifdef QUADS
vec4 fq(uint q) {
  vec4 v = uintBitsToFloat(t14[q]);
#if TERM == term_abs
  return abs(v);
#elif TERM == term_square
  return v * v;
#else
  return v;
#endif
}
#endif

// Element r of the row starting at `base` (elements).
uint at(uint base, uint r) {
#ifdef SEGMENTS
  uint a = r / u_seg;
  return base + a * u_seg_stride + (r - a * u_seg);
#else
  return base + r;
#endif
}

#ifdef QUADS
// Quad q of the row starting at quad qb.
uint qat(uint qb, uint q) {
#ifdef SEGMENTS
  uint a = q / (u_seg >> 2u);
  return qb + a * (u_seg_stride >> 2u) + (q - a * (u_seg >> 2u));
#else
  return qb + q;
#endif
}
#endif

void main() {
  uint wid = WORKGROUP_ID_1D;
  uint tid = gl_LocalInvocationID.x;
  uint o = wid / u_G;
  if (o >= u_rows) return;
  uint base = u_in_off + o * u_row_stride;
  uint r0 = (wid % u_G) * u_chunk;
  uint r1 = min(u_R, r0 + u_chunk);
  float v = 0.0;
#ifdef QUADS
  uint qb = base >> 2u;
  uint q1 = r1 >> 2u;  // whole quads end here; the tail (r1 % 4 elements) follows
  uint q = (r0 >> 2u) + tid;
  vec4 a0 = vec4(0.0), a1 = vec4(0.0), a2 = vec4(0.0), a3 = vec4(0.0);
  for (; LOOP(q + 3u * LOCAL_X < q1); q += 4u * LOCAL_X) {
    a0 += fq(qat(qb, q));
    a1 += fq(qat(qb, q + LOCAL_X));
    a2 += fq(qat(qb, q + 2u * LOCAL_X));
    a3 += fq(qat(qb, q + 3u * LOCAL_X));
  }
  for (; LOOP(q < q1); q += LOCAL_X) a0 += fq(qat(qb, q));
  vec4 a = (a0 + a1) + (a2 + a3);
  v = (a.x + a.y) + (a.z + a.w);
  for (uint r = (q1 << 2u) + tid; LOOP(r < r1); r += LOCAL_X) {
    uint i = at(base, r);
    v += f(uintBitsToFloat(t14[i >> 2u][i & 3u]));
  }
#else
  for (uint r = r0 + tid; LOOP(r < r1); r += LOCAL_X) v += f(float(load1(at(base, r))));
#endif

#ifdef SUBGROUP
  v = subgroupAdd(v);
  if (subgroupElect()) s_part[gl_SubgroupID] = v;
  workgroup_sync();
  if (tid == 0u) {
    v = 0.0;
    for (uint k = 0u; k < gl_NumSubgroups; ++k) v += s_part[k];
  }
#else
  s_part[tid] = v;
  workgroup_sync();
  for (uint s = LOCAL_X / 2u; s > 0u; s >>= 1u) {
    if (tid < s) s_part[tid] += s_part[tid + s];
    workgroup_sync();
  }
  v = s_part[0];
#endif
  if (tid == 0u) {
#if POST == post_mean
    v /= u_div;
#elif POST == post_sqrt
    v = sqrt(v);
#endif
    store0(u_out_off + wid, CT0(v));
  }
}
