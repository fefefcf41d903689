// Ceilings of the warp-tiled matmul kernel's arithmetic (bench/kernel_lab.cpp, mode `ceiling`):
// 256 invocations, each an 8 x 8 block of C in 16 vec4 accumulators as glsl/ops/matmul_warp.comp
// holds it, u_iters rounds of 8 K steps (512 FMAs per invocation and round); no global loads.
//   (none)   the operands in registers: the FP32 FMA rate GL reaches (no memory at all)
//   SHARED   the operands read from shared memory as the warp kernel's K step reads them (vec4
//            loads of two A quads and two B quads per K step, the warp's 8 x 4 lanes, two
//            buffers), one barrier per round: its inner loop without the global loads
//   EXTRA    (with SHARED) EXTRA more vec4 values live across the loop (read from shared memory
//            before it, added to the first EXTRA accumulators after it: u_a more each): the
//            rate's sensitivity to register pressure (fewer workgroups per SM)
// Every operand value is u_a (A) or u_b (B), so that each accumulator ends as 8 u_iters u_a u_b
// (exact for the host's powers of two); C[invocation][16] gets the accumulators.
#pragma optionNV(unroll all)
layout(local_size_x = 256) in;
layout(std430, binding = 0) writeonly restrict buffer C_ { vec4 c[]; };
uniform uint u_iters;
uniform float u_a;
uniform float u_b;
#ifdef SHARED
shared vec4 As[2][8][33];
shared vec4 Bs[2][8][32];
#endif

void main() {
  uint tid = gl_LocalInvocationIndex;
  uint lane = tid % 32u, warp = tid / 32u;
  uint tx = (warp % 2u) * 8u + lane % 8u, ty = (warp / 2u) * 4u + lane / 8u;
  vec4 acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = vec4(0.0);
#ifdef SHARED
  // Each invocation fills one quad of every row (A: 33 quads a row, the last the padding).
  for (uint b = 0u; b < 2u; ++b)
    for (uint k = 0u; k < 8u; ++k) {
      if (tid < 33u) As[b][k][tid] = vec4(u_a);
      if (tid < 32u) Bs[b][k][tid] = vec4(u_b);
    }
  barrier();
#ifdef EXTRA
  vec4 ex[EXTRA];
  for (uint i = 0u; i < uint(EXTRA); ++i) ex[i] = As[1][i % 8u][(tid + i) % 33u];
#endif
#else
  vec4 ra0 = vec4(u_a) + vec4(float(tx) * 0.0), ra1 = vec4(u_a) + vec4(float(ty) * 0.0);
  vec4 rb0 = vec4(u_b), rb1 = vec4(u_b);
#endif
  for (uint t = 0u; t < u_iters; ++t) {
#ifdef SHARED
    uint cur = t & 1u;
#define LOADS(k)                                              \
  vec4 a0 = As[cur][k][ty], a1 = As[cur][k][16u + ty];        \
  vec4 b0 = Bs[cur][k][tx], b1 = Bs[cur][k][16u + tx];
#else
#define LOADS(k) vec4 a0 = ra0, a1 = ra1, b0 = rb0, b1 = rb1;
#endif
#define ROW(av, h, i, c)                   \
  acc[(h * 4 + i) * 2] += av.c * b0;       \
  acc[(h * 4 + i) * 2 + 1] += av.c * b1;
#define STEP(k)                                                                  \
  {                                                                              \
    LOADS(k)                                                                     \
    ROW(a0, 0, 0, x) ROW(a0, 0, 1, y) ROW(a0, 0, 2, z) ROW(a0, 0, 3, w)          \
    ROW(a1, 1, 0, x) ROW(a1, 1, 1, y) ROW(a1, 1, 2, z) ROW(a1, 1, 3, w)          \
  }
    STEP(0u) STEP(1u) STEP(2u) STEP(3u) STEP(4u) STEP(5u) STEP(6u) STEP(7u)
#ifdef SHARED
    barrier();
#else
    // Keeps the operands live across rounds (never true for the host's values).
    if (acc[0].x < -1.0) ra0 = acc[1];
#endif
  }
  uint base = (gl_WorkGroupID.x * 256u + tid) * 16u;
#ifdef EXTRA
  for (uint i = 0u; i < uint(EXTRA); ++i) acc[i] += ex[i];
#endif
  for (uint i = 0u; i < 16u; ++i) c[base + i] = acc[i];
}
