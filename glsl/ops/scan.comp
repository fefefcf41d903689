// Inclusive prefix sum along one dim: one invocation per row, sequential in the row, in the
// compute type of the output (f32 for floats, int for integers). Rows as in softmax.comp.
layout(local_size_x = LOCAL_X) in;

uniform uint u_count;
uniform uint u_L;
uniform uint u_kshape[KD];
uniform uint u_kstride_in[KD];
uniform uint u_kstride_out[KD];
uniform uint u_in_off;
uniform uint u_out_off;
uniform uint u_in_step;
uniform uint u_out_step;

void main() {
  uint row = GLOBAL_ID_1D;
  if (row >= u_count) return;
  uint bi = u_in_off, bo = u_out_off, r = row;
  for (int d = KD - 1; d >= 0; --d) {
    uint i = r % u_kshape[d];
    r /= u_kshape[d];
    bi += i * u_kstride_in[d];
    bo += i * u_kstride_out[d];
  }
  CT0 acc = CT0(0);
  for (uint i = 0u; i < u_L; ++i) {
    acc += CT0(load1(bi + i * u_in_step));
    store0(bo + i * u_out_step, acc);
  }
}
