// Fused layer_norm forward over contiguous rows of length u_L (the normalized trailing dims):
// one workgroup per row; Welford statistics per invocation, combined with Chan et al.'s formula
// in shared memory, then y = (x - mean) * rsqrt(var + eps) [* weight] [+ bias].
// Operands: 0 = y, 1 = x, 2 = weight (HAS_W), 3 = bias (HAS_B); all contiguous.
layout(local_size_x = LOCAL_X) in;

uniform uint u_rows;
uniform uint u_L;
uniform float u_eps;

shared float s_n[LOCAL_X];
shared float s_mean[LOCAL_X];
shared float s_m2[LOCAL_X];

void main() {
  uint row = WORKGROUP_ID_1D;
  uint tid = gl_LocalInvocationID.x;
  if (row >= u_rows) return;
  uint base = row * u_L;
  float n = 0.0, mean = 0.0, m2 = 0.0;
  for (uint i = tid; LOOP(i < u_L); i += LOCAL_X) {
    float x = float(load1(base + i));
    n += 1.0;
    float d = x - mean;
    mean += d / n;
    m2 += d * (x - mean);
  }
  s_n[tid] = n;
  s_mean[tid] = mean;
  s_m2[tid] = m2;
  workgroup_sync();
  for (uint k = LOCAL_X / 2u; k > 0u; k >>= 1u) {
    if (tid < k) {
      float nb = s_n[tid + k];
      if (nb > 0.0) {
        float na = s_n[tid], nt = na + nb;
        float d = s_mean[tid + k] - s_mean[tid];
        s_mean[tid] += d * (nb / nt);
        s_m2[tid] += s_m2[tid + k] + d * d * (na * nb / nt);
        s_n[tid] = nt;
      }
    }
    workgroup_sync();
  }
  float mu = s_mean[0];
  float rstd = inversesqrt(s_m2[0] / s_n[0] + u_eps);
  for (uint i = tid; LOOP(i < u_L); i += LOCAL_X) {
    float y = (float(load1(base + i)) - mu) * rstd;
#ifdef HAS_W
    y *= float(load2(i));
#endif
#ifdef HAS_B
    y += float(load3(i));
#endif
    store0(base + i, CT0(y));
  }
}
