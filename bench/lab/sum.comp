// Stage 1 of a sum of n4 quads (vec4) of x: each workgroup of 256 writes its partial sum to
// part[workgroup] (bench/kernel_lab.cpp, mode sum). Chosen by the lab:
//   ACC4      four independent accumulators per invocation (absent: one), grid-stride loads
//   SUBGROUP  the workgroup's sum through KHR_shader_subgroup_arithmetic (absent: a shared
//             memory tree)
#ifdef SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly restrict buffer X_ { vec4 x[]; };
layout(std430, binding = 1) writeonly restrict buffer P_ { float part[]; };
uniform uint n4;
shared float s[256];

// This invocation's sum over its grid-stride share of x.
float accumulate() {
  uint stride = gl_NumWorkGroups.x * 256u;
#ifdef ACC4
  vec4 a0 = vec4(0.0), a1 = vec4(0.0), a2 = vec4(0.0), a3 = vec4(0.0);
  uint i = gl_GlobalInvocationID.x;
  for (; i + 3u * stride < n4; i += 4u * stride) {
    a0 += x[i];
    a1 += x[i + stride];
    a2 += x[i + 2u * stride];
    a3 += x[i + 3u * stride];
  }
  for (; i < n4; i += stride) a0 += x[i];
  vec4 acc = (a0 + a1) + (a2 + a3);
#else
  vec4 acc = vec4(0.0);
  for (uint i = gl_GlobalInvocationID.x; i < n4; i += stride) acc += x[i];
#endif
  return (acc.x + acc.y) + (acc.z + acc.w);
}

void main() {
  float v = accumulate();
#ifdef SUBGROUP
  v = subgroupAdd(v);
  if (subgroupElect()) s[gl_SubgroupID] = v;
  memoryBarrierShared();
  barrier();
  if (gl_LocalInvocationID.x == 0u) {
    float t = 0.0;
    for (uint k = 0u; k < gl_NumSubgroups; ++k) t += s[k];
    part[gl_WorkGroupID.x] = t;
  }
#else
  uint t = gl_LocalInvocationID.x;
  s[t] = v;
  barrier();
  for (uint h = 128u; h > 0u; h >>= 1u) {
    if (t < h) s[t] += s[t + h];
    memoryBarrierShared();
    barrier();
  }
  if (t == 0u) part[gl_WorkGroupID.x] = s[0];
#endif
}
