// The quad-load kernels' shared part (matmul_vec4.comp, matmul_f16x2.comp; included after
// matmul.glsl): the quad strides of the operands' other dims, SPLIT_COLS's column group, and the
// epilogue of an invocation's 8x8 block of C held as 16 vec4 rows of 4 columns.
uniform uint u_qa_s;
uniform uint u_qb_s;
uniform uint u_split;

// Row m, columns n..n+3 of C: alpha, addend, activation, one 128-bit store (f32) or two whole
// words (f16/bf16).
void epilogue_quad(uint m, uint n, vec4 q, uint c_off, uint d_off) {
  vec4 v = u_alpha * q;
#ifdef ADDEND
  uint d = d_off + m * u_d_sm + n * u_d_sn;
  v += u_beta * vec4(float(load3(d)), float(load3(d + u_d_sn)), float(load3(d + 2u * u_d_sn)),
                     float(load3(d + 3u * u_d_sn)));
#endif
  v = vec4(ACT(v.x), ACT(v.y), ACT(v.z), ACT(v.w));
#ifdef SPLIT_COLS
  // C [M, N] stored as [N / u_split, M, u_split] (u_split a multiple of 4: a quad stays whole)
  uint g = n / u_split;
  uint e = c_off + (g * u_M + m) * u_split + (n - g * u_split);
#else
  uint e = c_off + m * u_N + n;
#endif
#ifdef OUT_F32
  t04[e >> 2u] = floatBitsToUint(v);
#else
  t0[e >> 1u] = (bits0(CT0(v.x)) & 0xffffu) | (bits0(CT0(v.y)) << 16u);
  t0[(e >> 1u) + 1u] = (bits0(CT0(v.z)) & 0xffffu) | (bits0(CT0(v.w)) << 16u);
#endif
}

// The 8x8 block's epilogue: acc[2 i] / acc[2 i + 1] rows ma + i at columns na.. / nb..,
// acc[8 + 2 i] / acc[9 + 2 i] rows mb + i (ma, mb, na, nb, c_off, d_off and acc in scope).
// Constant register indices only (a dynamically indexed acc[] may be put in local memory).
#define EPI_ROWS(I)                                                \
  epilogue_quad(ma + uint(I), na, acc[2 * I], c_off, d_off);      \
  epilogue_quad(ma + uint(I), nb, acc[2 * I + 1], c_off, d_off);  \
  epilogue_quad(mb + uint(I), na, acc[8 + 2 * I], c_off, d_off);  \
  epilogue_quad(mb + uint(I), nb, acc[9 + 2 * I], c_off, d_off);
