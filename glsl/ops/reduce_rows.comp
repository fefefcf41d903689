// Sum-like reductions over contiguous rows (the fast path of reduce.comp): u_rows rows of u_R
// elements, element r of row o at u_in_off + o * u_row_stride + r. One workgroup reduces a chunk
// of u_chunk elements (a multiple of 4) of one row; with u_G > 1 chunks per row the host runs
// this kernel again over the [rows, G] partial sums (written to operand 0 as f32, unscaled).
// F: 0 sum, 1 sum of |x| (L1), 2 sum of x^2 (L2, sqrt applied when POST == 2).
// POST: 0 none, 1 divide by u_div (mean), 2 sqrt (L2 norm). Only the last stage posts.
// QUADS: operand 1 is f32 read as 128-bit quads (the host checks that u_in_off and u_row_stride
// are multiples of 4); four independent accumulators per invocation keep several loads in
// flight. Otherwise elements are read one by one through load1 (any dtype).
// SUBGROUP: the workgroup's partial sums combine with subgroupAdd (KHR_shader_subgroup
// arithmetic) and one shared slot per subgroup; otherwise with a shared-memory tree.
// Sums are plain float additions: NaN and Inf propagate as IEEE arithmetic does (Inf - Inf = NaN).
layout(local_size_x = LOCAL_X) in;

uniform uint u_rows;
uniform uint u_R;
uniform uint u_row_stride;
uniform uint u_in_off;
uniform uint u_chunk;
uniform uint u_G;
uniform uint u_out_off;
uniform float u_div;

shared float s_part[LOCAL_X];

float f(float x) {
#if F == 1
  return abs(x);
#elif F == 2
  return x * x;
#else
  return x;
#endif
}

#ifdef QUADS
vec4 fq(uint q) {
  vec4 v = uintBitsToFloat(t14[q]);
#if F == 1
  return abs(v);
#elif F == 2
  return v * v;
#else
  return v;
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
  for (; q + 3u * LOCAL_X < q1; q += 4u * LOCAL_X) {
    a0 += fq(qb + q);
    a1 += fq(qb + q + LOCAL_X);
    a2 += fq(qb + q + 2u * LOCAL_X);
    a3 += fq(qb + q + 3u * LOCAL_X);
  }
  for (; q < q1; q += LOCAL_X) a0 += fq(qb + q);
  vec4 a = (a0 + a1) + (a2 + a3);
  v = (a.x + a.y) + (a.z + a.w);
  for (uint r = (q1 << 2u) + tid; r < r1; r += LOCAL_X) v += f(uintBitsToFloat(t14[qb + (r >> 2u)][r & 3u]));
#else
  for (uint r = r0 + tid; r < r1; r += LOCAL_X) v += f(float(load1(base + r)));
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
#if POST == 1
    v /= u_div;
#elif POST == 2
    v = sqrt(v);
#endif
    store0(u_out_off + wid, CT0(v));
  }
}
