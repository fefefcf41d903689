// Pooling one axis at a time (AXIS 2 = H, 3 = W of NCHW): avg, adaptive avg and max pooling
// are separable (a window is the product of an H range and a W range, the avg divisor the
// product of per-axis counts, a row-major first maximum (the last NaN, as torch's `val > maxval
// || isnan(val)`) the same over rows of each row's), so a 2-D window of kh x kw costs kh + kw loop
// trips over two passes instead of kh x kw, and long windows split over dispatches (u_j0..u_j1 of
// the offsets, each dispatch after the first combining with what the one before wrote: u_accum).
// PASS (host: `#define PASS pass_<name>`):
//   pass_sum:  out[.., o, ..] = sum of in over the window of o (the divisor applied by the last
//              dispatch, u_last); windows as pool.comp's (ADAPTIVE: torch's adaptive windows).
//   pass_max:  out = first maximum over the window (NaN wins: its last), out index (operand 2) = the
//              position along the axis; with ROW_INDEX (the H pass after the W pass) operand 3
//              holds each row's column index and the index out is h * u_W + w (-1: no element).
//   pass_grad: the avg gradient gathered: out[.., i, ..] = sum over the windows o covering i of
//              in[.., o, ..] / divisor(o) (no atomics).
// Operands: 0 = out (f32, contiguous, this pass's shape u_shape), 1 = in (strided), 2 = index
// out (pass_max), 3 = index in (ROW_INDEX; the same shape and strides as operand 1).
// Along the axis: u_I input positions, u_O windows (in both directions: the pooling's sizes).
#define pass_sum 0
#define pass_max 1
#define pass_grad 2

layout(local_size_x = LOCAL_X) in;

uniform uint u_count;
uniform uint u_shape[4];
uniform uint u_in_stride[4];
uniform uint u_in_off;
uniform int u_I;
uniform int u_O;
uniform int u_k;
uniform int u_s;
uniform int u_p;
uniform int u_d;
uniform int u_j0;
uniform int u_j1;
uniform int u_accum;
uniform int u_last;
uniform int u_W;

// Window of output o: [lo, hi) clipped to the input; `padded`: its extent clipped to the padded
// input (count_include_pad's divisor).
void window(int o, out int lo, out int hi, out int padded) {
#ifdef ADAPTIVE
  lo = int((uint(o) * uint(u_I)) / uint(u_O));
  hi = int(((uint(o) + 1u) * uint(u_I) + uint(u_O) - 1u) / uint(u_O));
  padded = hi - lo;
#else
  lo = o * u_s - u_p;
  hi = lo + u_k;
  padded = min(hi, u_I + u_p) - lo;
  lo = max(lo, 0);
  hi = min(hi, u_I);
#endif
}

float divisor(int o) {
  int lo, hi, padded;
  window(o, lo, hi, padded);
#ifdef COUNT_PAD
  return float(padded);
#else
  return float(hi - lo);
#endif
}

int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

void main() {
  uint e = GLOBAL_ID_1D;
  if (e >= u_count) return;
  uint c3 = e % u_shape[3], r = e / u_shape[3];
  uint c2 = r % u_shape[2];
  r /= u_shape[2];
  uint c1 = r % u_shape[1], c0 = r / u_shape[1];
#if AXIS == 2
  int o = int(c2);
  uint base = u_in_off + c0 * u_in_stride[0] + c1 * u_in_stride[1] + c3 * u_in_stride[3];
#else
  int o = int(c3);
  uint base = u_in_off + c0 * u_in_stride[0] + c1 * u_in_stride[1] + c2 * u_in_stride[2];
#endif
  uint step = u_in_stride[AXIS];
#if PASS == pass_sum
  int lo, hi, padded;
  window(o, lo, hi, padded);
  float acc = u_accum != 0 ? float(load0(e)) : 0.0;
  for (int j = u_j0; LOOP(j < u_j1); ++j) {
    int pos = lo + j;
    if (pos >= hi) break;
    acc += float(load1(base + uint(pos) * step));
  }
  if (u_last != 0) acc /= divisor(o);
  store0(e, CT0(acc));
#elif PASS == pass_max
  float best = -F_INF;
  int bi = -1;
  if (u_accum != 0) {
    best = float(load0(e));
    bi = load2(e);
  }
  int start = o * u_s - u_p;
  for (int j = u_j0; LOOP(j < u_j1); ++j) {
    int pos = start + j * u_d;
    if (pos < 0 || pos >= u_I) continue;
#ifdef ROW_INDEX
    int col = load3(base + uint(pos) * step);
    if (col < 0) continue;
    int idx = pos * u_W + col;
#else
    int idx = pos;
#endif
    float v = float(load1(base + uint(pos) * step));
    if (bi < 0 || v > best || is_nan(v)) {  // torch's rule: the last NaN
      best = v;
      bi = idx;
    }
  }
  store0(e, CT0(best));
  store2(e, bi);
#else
  // The windows covering input position o: [olo, ohi].
#ifdef ADAPTIVE
  int olo = int((uint(o) * uint(u_O)) / uint(u_I));
  int ohi = int(((uint(o) + 1u) * uint(u_O) + uint(u_I) - 1u) / uint(u_I)) - 1;
#else
  int olo = max(0, floor_div(o + u_p - u_k, u_s) + 1);
  int ohi = min(u_O - 1, floor_div(o + u_p, u_s));
#endif
  float acc = u_accum != 0 ? float(load0(e)) : 0.0;
  for (int j = u_j0; LOOP(j < u_j1); ++j) {
    int w = olo + j;
    if (w > ohi) break;
    acc += float(load1(base + uint(w) * step)) / divisor(w);
  }
  store0(e, CT0(acc));
#endif
}
