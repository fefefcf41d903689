// Register-blocked matmul without shared memory or barriers, for CPU rasterizers (llvmpipe runs
// a workgroup on one thread with its invocations as SIMD lanes; barriers and shared memory cost
// per-lane loops there). f32, C[M,N] = A[M,K] B[K,N] through strides (a_sm, a_sk, b_sk, b_sn).
// Each invocation computes RA rows x 4 CB columns straight from the SSBOs, columns blocks
// fastest across invocations; K unrolled by UK. Defines: LX (local size), RA, CB, UK, B_QUAD (B
// read as vec4 quads along N: b_sn = 1, N and b_sk multiples of 4), A_QUAD (A read as quads
// of 4 rows: a_sm = 1, RA a multiple of 4, M and a_sk multiples of 4).
layout(local_size_x = LX) in;
layout(std430, binding = 0) readonly restrict buffer A_ { float A[]; };
layout(std430, binding = 1) readonly restrict buffer B_ { float B[]; };
layout(std430, binding = 2) writeonly restrict buffer C_ { float C[]; };
layout(std430, binding = 0) readonly restrict buffer A4_ { vec4 A4[]; };
layout(std430, binding = 1) readonly restrict buffer B4_ { vec4 B4[]; };
uniform uint M, N, K;
uniform uint a_sm, a_sk, b_sk, b_sn;

void main() {
  uint ncb = (N + 4u * uint(CB) - 1u) / (4u * uint(CB));
  uint g = gl_WorkGroupID.x * LX + gl_LocalInvocationID.x;
  uint cb = g % ncb, rb = g / ncb;
  uint m0 = rb * uint(RA), n0 = cb * 4u * uint(CB);
  if (m0 >= M) return;
  vec4 acc[RA * CB];
  for (int i = 0; i < RA * CB; ++i) acc[i] = vec4(0.0);
  // Clamped rows and columns: every load in bounds, no branch in the K loop.
  uint ra[RA];
  for (int i = 0; i < RA; ++i) ra[i] = min(m0 + uint(i), M - 1u) * a_sm;
#ifdef B_QUAD
  uint cq[CB];
  for (int j = 0; j < CB; ++j) cq[j] = min(n0 + 4u * uint(j), N - 4u) / 4u;
#else
  uint cn[4 * CB];
  for (int j = 0; j < 4 * CB; ++j) cn[j] = min(n0 + uint(j), N - 1u) * b_sn;
#endif
  uint k = 0u;
  for (; k + UK <= K; k += UK) {
    for (uint u = 0u; u < UK; ++u) {
      uint kk = k + u;
      vec4 b[CB];
#ifdef B_QUAD
      for (int j = 0; j < CB; ++j) b[j] = B4[kk * (b_sk / 4u) + cq[j]];
#else
      for (int j = 0; j < CB; ++j)
        b[j] = vec4(B[kk * b_sk + cn[4 * j]], B[kk * b_sk + cn[4 * j + 1]], B[kk * b_sk + cn[4 * j + 2]],
                    B[kk * b_sk + cn[4 * j + 3]]);
#endif
#ifdef A_QUAD
      for (int i = 0; i < RA / 4; ++i) {
        vec4 a = A4[(kk * a_sk + m0) / 4u + uint(i)];
        for (int j = 0; j < CB; ++j) {
          acc[(4 * i) * CB + j] += a.x * b[j];
          acc[(4 * i + 1) * CB + j] += a.y * b[j];
          acc[(4 * i + 2) * CB + j] += a.z * b[j];
          acc[(4 * i + 3) * CB + j] += a.w * b[j];
        }
      }
#else
      for (int i = 0; i < RA; ++i) {
        float a = A[ra[i] + kk * a_sk];
        for (int j = 0; j < CB; ++j) acc[i * CB + j] += a * b[j];
      }
#endif
    }
  }
  for (; k < K; ++k) {
    vec4 b[CB];
#ifdef B_QUAD
    for (int j = 0; j < CB; ++j) b[j] = B4[k * (b_sk / 4u) + cq[j]];
#else
    for (int j = 0; j < CB; ++j)
      b[j] = vec4(B[k * b_sk + cn[4 * j]], B[k * b_sk + cn[4 * j + 1]], B[k * b_sk + cn[4 * j + 2]],
                  B[k * b_sk + cn[4 * j + 3]]);
#endif
    for (int i = 0; i < RA; ++i) {
      float a = A[ra[i] + k * a_sk];
      for (int j = 0; j < CB; ++j) acc[i * CB + j] += a * b[j];
    }
  }
  for (int i = 0; i < RA; ++i) {
    uint m = m0 + uint(i);
    if (m >= M) break;
    for (int j = 0; j < CB; ++j)
      for (int c = 0; c < 4; ++c) {
        uint n = n0 + 4u * uint(j) + uint(c);
        if (n < N) C[m * N + n] = acc[i * CB + j][c];
      }
  }
}
