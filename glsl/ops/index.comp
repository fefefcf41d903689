// Indexed reads and writes along one dim (torch.gather / index_select / scatter / scatter_add).
// Iterates over the index tensor's elements p (shape u_shape, NDIM dims). With GATHER:
//   out[p] = x[p with p[DIM] := index[p]];  (index_select passes a 1-D index expanded by strides)
// with SCATTER / SCATTER_ADD / SCATTER_RED(a, b):
//   out[p with p[DIM] := index[p]] = src[p]   (or +=: a compare-and-swap loop for float32, or
//   NV_shader_atomic_float's atomicAdd where the device has it (ATOMIC_FLOAT); atomicAdd for
//   int32 outputs, OUT_INT; or = SCATTER_RED(out[...], src[p]), a product, max or min: a
//   compare-and-swap loop for both).
// Negative indices count from the end (NONNEG_INDEX: class indices, only [0, size) is valid); an
// index outside [-size, size) is skipped and recorded in the error flag buffer (binding 3),
// reported as IndexError at the next read.
// Operands: 0 = out, 1 = x (GATHER) or src (SCATTER), 2 = index (i32), 3 = error flag.
layout(local_size_x = LOCAL_X) in;
layout(std430, binding = 3) buffer Flag { uint err_flag[]; };

uniform uint u_count;
uniform uint u_shape[NDIM];
uniform uint u_st_idx[NDIM];  // index strides
uniform uint u_st_src[NDIM];  // strides of the operand indexed by p (out for GATHER, src for SCATTER)
uniform uint u_st_dst[NDIM];  // strides of the operand indexed by p[DIM := index] (x for GATHER, out for SCATTER)
uniform uint u_off_idx;
uniform uint u_off_src;
uniform uint u_off_dst;
uniform int u_dim_size;       // size of DIM in the indexed operand

#ifdef SCATTER_ADD
void atomic_add_i32(uint e, int v) { atomicAdd(t0[e], uint(v)); }  // two's complement: wraps like int32
#ifdef ATOMIC_FLOAT
// The output's words as floats (the same binding): NV_shader_atomic_float's atomicAdd, one
// hardware atomic instead of a compare-and-swap loop that retries under contention (an
// embedding's gradient: 16384 token rows into 256 byte rows, bench/RESULTS.md).
layout(std430, binding = 0) buffer Out0Float { float t0_float[]; };
void atomic_add_f32(uint e, float v) { atomicAdd(t0_float[e], v); }
#else
void atomic_add_f32(uint e, float v) {
  uint old = t0[e];
  for (int i = 0; i < 1000000; ++i) {
    uint want = floatBitsToUint(uintBitsToFloat(old) + v);
    uint prev = atomicCompSwap(t0[e], old, want);
    if (prev == old) break;
    old = prev;
  }
}
#endif
#endif

#ifdef SCATTER_RED
void atomic_red_i32(uint e, int v) {
  uint old = t0[e];
  for (int i = 0; i < 1000000; ++i) {
    uint want = uint(SCATTER_RED(int(old), v));
    uint prev = atomicCompSwap(t0[e], old, want);
    if (prev == old) break;
    old = prev;
  }
}
void atomic_red_f32(uint e, float v) {
  uint old = t0[e];
  for (int i = 0; i < 1000000; ++i) {
    uint want = floatBitsToUint(SCATTER_RED(uintBitsToFloat(old), v));
    uint prev = atomicCompSwap(t0[e], old, want);
    if (prev == old) break;
    old = prev;
  }
}
#endif

void main() {
  uint lin = GLOBAL_ID_1D;
  if (lin >= u_count) return;
  uint oi = u_off_idx, os = u_off_src, od = u_off_dst, r = lin;
  uint pdim = 0u;
  for (int d = NDIM - 1; d >= 0; --d) {
    uint i = r % u_shape[d];
    r /= u_shape[d];
    oi += i * u_st_idx[d];
    os += i * u_st_src[d];
    if (d != DIM) od += i * u_st_dst[d];
  }
  int k = int(load2(oi));
#ifndef NONNEG_INDEX
  if (k < 0) k += u_dim_size;
#endif
  if (k < 0 || k >= u_dim_size) {
    atomicOr(err_flag[0], 1u);  // ErrorFlags::kIndex
    return;
  }
  od += uint(k) * u_st_dst[DIM];
#ifdef GATHER
  store0(os, CT0(load1(od)));
#elif defined(SCATTER_ADD) && defined(OUT_INT)
  atomic_add_i32(od, int(load1(os)));
#elif defined(SCATTER_ADD)
  atomic_add_f32(od, float(load1(os)));
#elif defined(SCATTER_RED) && defined(OUT_INT)
  atomic_red_i32(od, int(load1(os)));
#elif defined(SCATTER_RED)
  atomic_red_f32(od, float(load1(os)));
#else
  store0(od, CT0(load1(os)));
#endif
}
