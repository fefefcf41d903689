// Fused layer_norm forward over contiguous rows of length u_L (the normalized trailing dims):
// one workgroup per row, y = (x - mean) * rsqrt(var + eps) [* weight] [+ bias].
// ROW_REGS (rows of up to NS * LOCAL_X): the row read once into registers (element i in invocation
// i % LOCAL_X's NS scalars, loads strided by the workgroup: coalesced), the mean and then the sum of
// squared deviations about it each summed over the workgroup (subgroupAdd where SUBGROUP, else a
// shared-memory tree), y from the registers: one read of x instead of two, e.g. rows of 1025
// (odd: no quads). Else Welford statistics per invocation, combined with Chan et al.'s formula in
// shared memory, then a second read of the row.
// Non-finite inputs: a NaN or infinity in a row makes the row NaN in both forms (as the float64
// reference of the written-out ONNX nodes: the mean or the variance is NaN or infinite).
// Operands: 0 = y, 1 = x, 2 = weight (HAS_W), 3 = bias (HAS_B); all contiguous.
layout(local_size_x = LOCAL_X) in;

uniform uint u_rows;
uniform uint u_L;
uniform float u_eps;

#ifdef ROW_REGS
shared float s_r[LOCAL_X];

// The workgroup's sum of v, returned to every invocation.
float workgroup_sum(float v) {
#ifdef SUBGROUP
  v = subgroupAdd(v);
  workgroup_sync();  // s_r is free (earlier readers are done)
  if (subgroupElect()) s_r[gl_SubgroupID] = v;
  workgroup_sync();
  v = s_r[0];
  for (uint k = 1u; k < gl_NumSubgroups; ++k) v += s_r[k];
#else
  uint tid = gl_LocalInvocationID.x;
  workgroup_sync();
  s_r[tid] = v;
  workgroup_sync();
  for (uint k = LOCAL_X / 2u; k > 0u; k >>= 1u) {
    if (tid < k) s_r[tid] += s_r[tid + k];
    workgroup_sync();
  }
  v = s_r[0];
#endif
  return v;
}

void main() {
  uint row = WORKGROUP_ID_1D;
  uint tid = gl_LocalInvocationID.x;
  if (row >= u_rows) return;
  uint base = row * u_L;
  float v[NS];
  float s = 0.0;
  for (uint k = 0u; k < NS; ++k) {
    uint i = tid + k * LOCAL_X;
    // clamped to the row's last element (no load past the row), the value past u_L replaced
    float x = float(load1(base + min(i, u_L - 1u)));
    v[k] = i < u_L ? x : 0.0;
    s += v[k];
  }
  float mu = workgroup_sum(s) / float(u_L);
  float q = 0.0;
  for (uint k = 0u; k < NS; ++k) {
    float d = tid + k * LOCAL_X < u_L ? v[k] - mu : 0.0;
    q += d * d;
  }
  float rstd = inversesqrt(workgroup_sum(q) / float(u_L) + u_eps);
  for (uint k = 0u; k < NS; ++k) {
    uint i = tid + k * LOCAL_X;
    if (i < u_L) {
      float y = (v[k] - mu) * rstd;
#ifdef HAS_W
      y *= float(load2(i));
#endif
#ifdef HAS_B
      y += float(load3(i));
#endif
      store0(base + i, CT0(y));
    }
  }
}
#else
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
#endif
