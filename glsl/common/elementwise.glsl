// Generic strided elementwise driver, included by the unary/binary/ternary families.
// Operand 0 is the output, operands 1..NOPS-1 the inputs (already broadcast: stride 0).
// The host collapses dims that are contiguous in every operand, so NDIM is usually small, and
// defines CONTIG when every operand is contiguous (offsets are then base + linear index).
// F16V: f16 math (Precision::f16_allowed) over contiguous f16 operands, one word each.
// Output modes: OUT_WORDS = each invocation writes one whole 32-bit word of a contiguous output
// (2 f16/bf16 or 4 u8/bool elements); otherwise one element per invocation (storeN is atomic for
// sub-word dtypes, so strided 16/8-bit views are written without races).
// The family defines `CT0 compute(uint off[NOPS])` before including this file; with ELEM_INDEX
// it also declares `uint g_elem`, set here to the linear index (in the collapsed iteration
// order) of the element that compute() is about to produce.
layout(local_size_x = LOCAL_X) in;
#ifndef QUADS
#define QUADS 1  // VEC4: quads per invocation
#endif

uniform uint u_count;  // invocations in the whole grid (VEC4: quads)
uniform uint u_numel;
uniform uint u_shape[NDIM];
uniform uint u_strides[NOPS * NDIM];
uniform uint u_offset[NOPS];

void operand_offsets(uint lin, out uint off[NOPS]) {
  for (int j = 0; j < NOPS; ++j) off[j] = u_offset[j];
#ifdef CONTIG
  for (int j = 0; j < NOPS; ++j) off[j] += lin;
#else
  for (int d = NDIM - 1; d >= 0; --d) {
    uint s = u_shape[d];
    uint i = lin % s;
    lin /= s;
    for (int j = 0; j < NOPS; ++j) off[j] += i * u_strides[j * NDIM + d];
  }
#endif
}

void main() {
  uint off[NOPS];
#ifdef VEC4
  // Contiguous 32-bit operands, offsets and numel multiples of 4: QUADS quads of four elements
  // per invocation (u_count quads in all), a workgroup's invocations on consecutive quads, every
  // load (one 128-bit load per input into a register: FETCH_QUADS, host-generated) before the
  // first store; compute() sees lane numbers as offsets (loadN(lane)); one 128-bit store each.
  uint first = WORKGROUP_ID_1D * uint(LOCAL_X) * uint(QUADS) + gl_LocalInvocationID.x;
  uvec4 r[QUADS];
  for (int s = 0; s < QUADS; ++s) {
    uint q = first + uint(s) * uint(LOCAL_X);
    if (q >= u_count) break;
    FETCH_QUADS(q)
    for (int k = 0; k < 4; ++k) {
      for (int j = 0; j < NOPS; ++j) off[j] = uint(k);
#ifdef ELEM_INDEX
      g_elem = q * 4u + uint(k);
#endif
      r[s][k] = bits0(compute(off));
    }
  }
  for (int s = 0; s < QUADS; ++s) {
    uint q = first + uint(s) * uint(LOCAL_X);
    if (q >= u_count) break;
    t04[(u_offset[0] >> 2u) + q] = r[s];
  }
#else
  uint inv = GLOBAL_ID_1D;
  if (inv >= u_count) return;
#if defined(F16V)
  // F16V (f16 math: contiguous f16 operands at even offsets, even numel): one word (two
  // elements) of each operand per invocation, computed in f16vec2 by the family's compute16().
  for (int j = 0; j < NOPS; ++j) off[j] = (u_offset[j] >> 1u) + inv;
  t0[off[0]] = compute16(off);
#elif defined(OUT_WORDS)
  const uint BITS = 32u / PER_WORD0;
  const uint MASK = (BITS == 32u) ? 0xffffffffu : ((1u << BITS) - 1u);
  uint w = u_offset[0] / PER_WORD0 + inv;
  uint word = t0[w];
  for (uint k = 0u; k < PER_WORD0; ++k) {
    uint e = w * PER_WORD0 + k;
    if (e < u_offset[0] || e - u_offset[0] >= u_numel) continue;
    operand_offsets(e - u_offset[0], off);
#ifdef ELEM_INDEX
    g_elem = e - u_offset[0];
#endif
    uint shift = k * BITS;
    word = (word & ~(MASK << shift)) | ((bits0(compute(off)) & MASK) << shift);
  }
  t0[w] = word;
#else
  operand_offsets(inv, off);
#ifdef ELEM_INDEX
  g_elem = inv;
#endif
  store0(off[0], compute(off));
#endif
#endif
}
