// Sort along the last dim by rank: one invocation per element counts the elements of its row
// that precede it (O(L^2) per row; stable: ties keep their original order). NaN sorts after
// every number in ascending order and first in descending order (torch.sort).
// Operands: 0 = sorted values (contiguous [rows, L]), 1 = input, 2 = indices out (i32).
layout(local_size_x = LOCAL_X) in;

uniform uint u_count;
uniform uint u_L;
uniform uint u_rows_shape[RD];
uniform uint u_rows_stride[RD];
uniform uint u_in_off;
uniform uint u_in_step;

// a strictly before b in ascending order, NaN last
bool before(float a, float b) {
  if (is_nan(a)) return false;
  if (is_nan(b)) return true;
  return a < b;
}

void main() {
  uint e = GLOBAL_ID_1D;
  if (e >= u_count) return;
  uint row = e / u_L, i = e % u_L;
  uint base = u_in_off, r = row;
  for (int d = RD - 1; d >= 0; --d) {
    base += (r % u_rows_shape[d]) * u_rows_stride[d];
    r /= u_rows_shape[d];
  }
  float v = float(load1(base + i * u_in_step));
  uint rank = 0u;
  for (uint j = 0u; j < u_L; ++j) {
    float w = float(load1(base + j * u_in_step));
#ifdef DESCENDING
    bool prec = before(v, w);
#else
    bool prec = before(w, v);
#endif
    bool tie = !before(v, w) && !before(w, v);
    if (prec || (tie && j < i)) ++rank;
  }
  store0(row * u_L + rank, CT0(load1(base + i * u_in_step)));
  store2(row * u_L + rank, int(i));
}
