// Rows over every dim but one (softmax.comp; the host's RowParams in src/ops/reduce.cpp): row r
// of the kept dims' index space starts at row_bases(r).x in the input and .y in the output.
uniform uint u_kshape[KD];
uniform uint u_kstride_in[KD];
uniform uint u_kstride_out[KD];
uniform uint u_in_off;
uniform uint u_out_off;

uvec2 row_bases(uint row) {
  uvec2 b = uvec2(u_in_off, u_out_off);
  for (int d = KD - 1; d >= 0; --d) {
    uint i = row % u_kshape[d];
    row /= u_kshape[d];
    b += i * uvec2(u_kstride_in[d], u_kstride_out[d]);
  }
  return b;
}
