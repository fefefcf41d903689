// Softmax / log_softmax along one dim: one workgroup per row; three passes over the row (max,
// sum of exp(x - max), write). Rows are addressed through the kept dims' strides (KD of them),
// the softmax dim through u_in_step / u_out_step, so any dim and any view works without a copy.
// LOG defined: log_softmax. NaN in a row makes the row NaN (as in PyTorch).
layout(local_size_x = LOCAL_X) in;

uniform uint u_rows;
uniform uint u_L;
uniform uint u_kshape[KD];
uniform uint u_kstride_in[KD];
uniform uint u_kstride_out[KD];
uniform uint u_in_off;
uniform uint u_out_off;
uniform uint u_in_step;
uniform uint u_out_step;

shared float s_red[LOCAL_X];

float max_nan(float a, float b) { return (is_nan(a) || is_nan(b)) ? F_NAN : max(a, b); }

void main() {
  uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  uint tid = gl_LocalInvocationID.x;
  if (row >= u_rows) return;
  uint bi = u_in_off, bo = u_out_off, r = row;
  for (int d = KD - 1; d >= 0; --d) {
    uint i = r % u_kshape[d];
    r /= u_kshape[d];
    bi += i * u_kstride_in[d];
    bo += i * u_kstride_out[d];
  }
  float m = -F_INF;
  for (uint i = tid; i < u_L; i += LOCAL_X) m = max_nan(m, float(load1(bi + i * u_in_step)));
  s_red[tid] = m;
  barrier();
  for (uint s = LOCAL_X / 2u; s > 0u; s >>= 1u) {
    if (tid < s) s_red[tid] = max_nan(s_red[tid], s_red[tid + s]);
    barrier();
  }
  m = s_red[0];
  barrier();
  float sum = 0.0;
  for (uint i = tid; i < u_L; i += LOCAL_X) sum += exp(float(load1(bi + i * u_in_step)) - m);
  s_red[tid] = sum;
  barrier();
  for (uint s = LOCAL_X / 2u; s > 0u; s >>= 1u) {
    if (tid < s) s_red[tid] += s_red[tid + s];
    barrier();
  }
  sum = s_red[0];
#ifdef LOG
  float lse = m + log(sum);
  for (uint i = tid; i < u_L; i += LOCAL_X) store0(bo + i * u_out_step, CT0(float(load1(bi + i * u_in_step)) - lse));
#else
  float inv = 1.0 / sum;
  for (uint i = tid; i < u_L; i += LOCAL_X)
    store0(bo + i * u_out_step, CT0(exp(float(load1(bi + i * u_in_step)) - m) * inv));
#endif
}
