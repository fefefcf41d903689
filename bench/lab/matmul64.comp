// The library's 64x64 matmul kernel as of 2026-11-22 (scalar loads, 4x4 per invocation), f32,
// row-major, contiguous, whole tiles: C[M,N] = A[M,K] B[K,N] (bench/kernel_lab.cpp, mode matmul).
layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, binding = 0) readonly restrict buffer A_ { float A[]; };
layout(std430, binding = 1) readonly restrict buffer B_ { float B[]; };
layout(std430, binding = 2) writeonly restrict buffer C_ { float C[]; };
uniform uint M, N, K;
shared float As[16][65];
shared float Bs[16][65];
void main() {
  uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y, tid = ty * 16u + tx;
  uint m0 = gl_WorkGroupID.y * 64u, n0 = gl_WorkGroupID.x * 64u;
  float acc[4][4];
  for (int i = 0; i < 4; ++i) for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;
  for (uint k0 = 0u; k0 < K; k0 += 16u) {
    for (uint e = tid; e < 1024u; e += 256u) {
      uint mm = e / 16u, kk = e % 16u;
      As[kk][mm] = A[(m0 + mm) * K + k0 + kk];
      uint kb = e / 64u, nb = e % 64u;
      Bs[kb][nb] = B[(k0 + kb) * N + n0 + nb];
    }
    memoryBarrierShared(); barrier();
    for (uint kk = 0u; kk < 16u; ++kk) {
      float a[4], b[4];
      for (uint i = 0u; i < 4u; ++i) a[i] = As[kk][ty + 16u * i];
      for (uint j = 0u; j < 4u; ++j) b[j] = Bs[kk][tx + 16u * j];
      for (int i = 0; i < 4; ++i) for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
    }
    memoryBarrierShared(); barrier();
  }
  for (uint i = 0u; i < 4u; ++i) for (uint j = 0u; j < 4u; ++j)
    C[(m0 + ty + 16u * i) * N + n0 + tx + 16u * j] = acc[i][j];
}
