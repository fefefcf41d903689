// The matmul kernels' Variant (matmul_variant.hpp): defines and variant space.
#include "ops/matmul_variant.hpp"

#include "ops/activation.hpp"
#include "runtime/glsl_text.hpp"

namespace gltensor::detail {

namespace {
// ACT(x)'s body from act_code: the activation in the low byte, 256 for the affine after it.
std::string act_body(int code) { return epilogue_glsl(static_cast<Activation>(code & 255), code >= 256); }
int act_code(Activation act, bool affine) { return static_cast<int>(act) + (affine ? 256 : 0); }
// The REG kernel's block written out: ROWS(X) = X(0) .. X(RA - 1) and the other lists.
std::string list(int n, const char* pre) { return glsl_macro_list(n, pre); }
std::string rows_list(int ra) { return list(ra, ""); }
std::string rowq_list(int ra) { return list(ra / 4, ""); }
std::string cols_list(int cb) { return list(cb, ""); }
std::string coln_list(int cb) { return list(4 * cb, ""); }
std::string cols_i_list(int cb) { return list(cb, "i, "); }
}  // namespace

const char* MatmulVariant::file() const {
  switch (kernel) {
    case MatmulPlan::Kernel::vec4:
      return "matmul_vec4.comp";
    case MatmulPlan::Kernel::tile128:
      return "matmul_tile128.comp";
    case MatmulPlan::Kernel::reg:
      return "matmul_reg.comp";
    case MatmulPlan::Kernel::f16x2:
      return "matmul_f16x2.comp";
    case MatmulPlan::Kernel::warp:
      return "matmul_warp.comp";
    default:
      return "matmul_tile64.comp";
  }
}

Defines MatmulVariant::defines() const {
  const bool f16x2 = kernel == MatmulPlan::Kernel::f16x2;
  const bool warp = kernel == MatmulPlan::Kernel::warp;
  const bool vec4 = kernel == MatmulPlan::Kernel::vec4 || f16x2 || warp, reg = kernel == MatmulPlan::Kernel::reg;
  Defines d;
  d.value("BD", bd);
  if (act != Activation::none || affine) d.macro("ACT(x)", act_body, act_code(act, affine));
  if (reg) {
    d.value("RA", ra).value("CB", cb).value("A_Q", a_q).value("B_Q", b_q).value("KSL", ksl).flag("ROWSUM", rowsum);
    d.macro("ROWS(X)", rows_list, ra).macro("ROWQ(X)", rowq_list, ra).macro("COLS(X)", cols_list, cb);
    d.macro("COLN(X)", coln_list, cb).macro("COLS_I(X, i)", cols_i_list, cb);
  } else if (vec4) {
    d.uvalue("BM", warp ? static_cast<std::uint64_t>(bm) : 64)
        .uvalue("BN", warp ? static_cast<std::uint64_t>(bn) : 128)
        .value("A_KMAJOR", a_kmajor)
        .value("B_KMAJOR", b_kmajor);
    d.flag("OUT_F32", out == DType::f32);
    if (f16x2) d.value("A_F16", this->a == DType::f16).value("B_F16", this->b == DType::f16);
  }
  if (warp) {
    d.uvalue("BK", static_cast<std::uint64_t>(bk)).value("TN", tn).value("WARP_TILE", warp_lanes).flag("EDGE", edge);
    d.flag("K_LOOP", k_loop).flag("A_SHK", shk && a_kmajor).flag("B_SHK", shk && b_kmajor);
    d.macro("KS(X)", rows_list, bk);
  }
  d.flag("ADDEND", addend);
  if (!f16_ext.empty()) d.text(f16_ext);
  if (f16_block > 0) d.flag("F16_MATH").uvalue("F16_BLOCK", static_cast<std::uint64_t>(f16_block));
  d.flag("NO_BATCH", no_batch).flag("SPLIT_COLS", split_cols).flag("SPLIT_K", split_k);
  if (vec4) {
    if (out == DType::f32)
      d.operand_vec4(0, out, CT::f32, true);
    else
      d.operand(0, out, CT::f32, true);
    d.quads("A", 1, this->a).quads("B", 2, this->b);
  } else {
    // REG reads quads and, for a K % 4 tail, elements: both views of a quad operand.
    d.operand(0, out, CT::f32, true).operand(1, this->a, CT::f32, false).operand(2, this->b, CT::f32, false);
    if (reg && a_q) d.quads("A", 1, this->a);
    if (reg && b_q) d.quads("B", 2, this->b);
  }
  if (addend) d.operand(3, this->d, CT::f32, false);
  if (reg && rowsum) d.operand(addend ? 4 : 3, DType::f32, CT::f32, true);
  if (reg) {
    const int y = mask ? 3 + (addend ? 1 : 0) + (rowsum ? 1 : 0) : 0;  // MASK_A: the mask's binding
    d.value("MASK_A", y);
    if (mask) d.operand(y, DType::f32, CT::f32, false);
    if (mask && a_q) d.quads("Y", y, DType::f32);
    const int r = 3 + (addend ? 1 : 0) + (rowsum ? 1 : 0) + (mask ? 1 : 0);  // RESIDUAL: its binding
    // (literals: Defines::ident keeps the pointer, not a copy)
    static const char* const kLoads[] = {"load3", "load4", "load5", "load6"};
    if (residual) d.flag("RESIDUAL").ident("RES_LOAD", kLoads[r - 3]).operand(r, DType::f32, CT::f32, false);
  }
  if (vec4 && !f16x2 && !warp) d.flag("SLICE_K", slice_k).flag("UNROLL_K", unroll_k);
  return d;
}

std::vector<MatmulVariant> MatmulVariant::space() {
  using K = MatmulPlan::Kernel;
  std::vector<MatmulVariant> out;
  // Every kernel with every epilogue and form flag, one at a time.
  for (K k : {K::vec4, K::tile64, K::tile128, K::reg}) {
    MatmulVariant base;
    base.kernel = k;
    out.push_back(base);
    for (int bd = 2; bd <= 4; ++bd) {
      MatmulVariant v = base;
      v.bd = bd;
      out.push_back(v);
    }
    for (int a = 1; a <= static_cast<int>(Activation::square); ++a) {
      MatmulVariant v = base;
      v.act = static_cast<Activation>(a);
      out.push_back(v);
    }
    for (Activation a : {Activation::none, Activation::hardswish}) {  // the affine after the activation
      MatmulVariant v = base;
      v.act = a, v.affine = true;
      out.push_back(v);
    }
    for (int f = 0; f < 4; ++f) {
      MatmulVariant v = base;
      (f == 0 ? v.addend : f == 1 ? v.no_batch : f == 2 ? v.split_k : v.split_cols) = true;
      if (f == 3 && (k == K::tile64 || k == K::tile128)) continue;  // SPLIT_COLS: vec4 and reg only
      out.push_back(v);
    }
    for (DType dt : {DType::f16, DType::bf16}) {
      MatmulVariant v = base;
      v.out = v.a = v.b = v.d = dt;
      v.addend = true;
      out.push_back(v);
    }
    MatmulVariant all = base;  // everything at once
    all.bd = 3, all.act = Activation::gelu, all.addend = all.split_k = true;
    all.split_cols = k == K::vec4 || k == K::reg;
    out.push_back(all);
  }
  // vec4: every layout and form.
  for (int bits = 0; bits < 16; ++bits) {
    MatmulVariant v;
    v.kernel = K::vec4;
    v.a_kmajor = bits & 1, v.b_kmajor = bits & 2, v.slice_k = bits & 4, v.unroll_k = bits & 8;
    out.push_back(v);
    v.out = DType::f16;
    out.push_back(v);
  }
  // reg: every block and quad load the planner makes.
  for (int ra : {1, 2, 4, 8})
    for (int cb : {1, 2})
      for (int a_q = 0; a_q <= 2; ++a_q)
        for (int b_q = 0; b_q <= 2; ++b_q) {
          if (a_q == 2 && ra % 4 != 0) continue;
          MatmulVariant v;
          v.kernel = K::reg;
          v.ra = ra, v.cb = cb, v.a_q = a_q, v.b_q = b_q;
          out.push_back(v);
        }
  // reg with K slices: the planner's 4 x 4 blocks, every quad load, the epilogue's forms.
  for (int ksl : {2, 16})
    for (int q = 0; q < 3; ++q) {
      MatmulVariant v;
      v.kernel = K::reg;
      v.ra = 4, v.cb = 1, v.a_q = q, v.b_q = 2 - q, v.ksl = ksl;
      out.push_back(v);
      v.bd = 2, v.act = Activation::relu, v.addend = v.split_k = true, v.out = DType::f16;
      out.push_back(v);
      v.bd = 1, v.split_k = false, v.split_cols = v.no_batch = true, v.affine = true;
      out.push_back(v);
    }
  // ROWSUM (the bias gradient with the weight gradient), sliced or not, with and without an addend;
  // MASK_A (ReLU's gradient) with each of A's loads, with and without ROWSUM.
  for (int ksl : {1, 16})
    for (bool addend : {false, true}) {
      MatmulVariant v;
      v.kernel = K::reg;
      v.ra = 4, v.cb = 1, v.a_q = 2, v.b_q = 1, v.ksl = ksl, v.rowsum = true, v.addend = addend, v.no_batch = true;
      out.push_back(v);
      for (int a_q = 0; a_q < 3; ++a_q) {
        v.mask = true, v.a_q = a_q, v.rowsum = a_q == 2;
        out.push_back(v);
      }
    }
  // RESIDUAL (conv2d_add's 1x1 GEMM): one batch entry, the split columns (NCHW) or not, with and without the
  // bias addend and an activation, sliced or not, each of the quad loads.
  for (int ksl : {1, 16})
    for (int q = 0; q < 3; ++q) {
      MatmulVariant v;
      v.kernel = K::reg;
      v.ra = 4, v.cb = 1, v.a_q = q, v.b_q = 2 - q, v.ksl = ksl, v.residual = v.no_batch = true;
      out.push_back(v);
      v.addend = v.split_cols = true, v.act = q == 1 ? Activation::hardswish : Activation::none;
      out.push_back(v);
    }
  // warp: the planner's tiles (128 x 128, 8 x 8 per invocation, 16- or 8-K tiles) with every
  // operand layout, whole or edge tiles, f16 storage, and every epilogue flag at once.
  for (int bits = 0; bits < 16; ++bits) {
    MatmulVariant v;
    v.kernel = K::warp;
    v.a_kmajor = bits & 1, v.b_kmajor = bits & 2, v.edge = bits & 4, v.bk = bits & 8 ? 8 : 16, v.k_loop = bits & 1;
    out.push_back(v);
  }
  for (DType dt : {DType::f16, DType::bf16}) {
    MatmulVariant v;
    v.kernel = K::warp, v.a = v.b = v.out = v.d = dt, v.edge = true;
    out.push_back(v);
    v.bd = 3, v.act = Activation::gelu, v.addend = v.split_k = v.split_cols = true, v.out = DType::f32;
    out.push_back(v);
  }
  // f16 math (the EXT extension, as on Mesa) in every kernel but reg, and the f32 kernels with the
  // extension only (GLTENSOR_PRECISION=f16-ext-only).
  for (K k : {K::vec4, K::tile64, K::tile128}) {
    MatmulVariant v;
    v.kernel = k, v.f16_ext = kF16TypesExtensionGlsl;
    out.push_back(v);
    v.f16_block = kF16BlockK;
    out.push_back(v);
    v.unroll_k = v.slice_k = k == K::vec4;
    v.addend = v.split_k = true, v.out = v.a = v.b = DType::f16;
    out.push_back(v);
  }
  // The packed-half kernel (f16 math only): every operand layout, operand and result dtypes, the
  // epilogue's forms.
  for (int bits = 0; bits < 4; ++bits)
    for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
      MatmulVariant v;
      v.kernel = K::f16x2, v.f16_ext = kF16TypesExtensionGlsl, v.f16_block = kF16BlockK;
      v.a_kmajor = bits & 1, v.b_kmajor = bits & 2;
      v.a = v.b = v.out = dt;
      out.push_back(v);
      v.a = DType::f32, v.act = Activation::gelu, v.addend = v.split_k = true, v.d = dt;
      out.push_back(v);
      v.split_k = false, v.split_cols = v.no_batch = true, v.bd = 2;
      out.push_back(v);
    }
  return out;
}

Defines GemvVariant::defines() const {
  Defines dd;
  dd.value("BD", bd);
  if (act != Activation::none || affine) dd.macro("ACT(x)", act_body, act_code(act, affine));
  dd.uvalue("RM", static_cast<std::uint64_t>(rm)).uvalue("NF", static_cast<std::uint64_t>(nf));
  dd.value("A_Q", a_q).value("B_Q", b_q).flag("ADDEND", addend).flag("NO_BATCH", no_batch).flag("SPLIT_K", split_k);
  dd.operand(0, out, CT::f32, true).operand(1, a, CT::f32, false).operand(2, b, CT::f32, false);
  if (a_q) dd.quads("A", 1, a);
  if (b_q) dd.quads("B", 2, b);
  if (addend) dd.operand(3, d, CT::f32, false);
  return dd;
}

std::vector<GemvVariant> GemvVariant::space() {
  std::vector<GemvVariant> out;
  for (std::int64_t rm : {1, 2, 8})
    for (int q : {0, 1}) {
      GemvVariant v;
      v.rm = rm, v.a_q = q, v.b_q = 2 * q, v.no_batch = true;
      out.push_back(v);
    }
  for (int bd = 1; bd <= 3; ++bd) {
    GemvVariant v;
    v.bd = bd;
    out.push_back(v);
  }
  GemvVariant e;
  e.act = Activation::relu, e.addend = true, e.split_k = true, e.no_batch = true;
  out.push_back(e);
  e.affine = true;
  out.push_back(e);
  for (DType dt : {DType::f16, DType::bf16}) {
    GemvVariant v;
    v.a = v.b = v.out = v.d = dt, v.a_q = 1, v.b_q = 2, v.addend = true;
    out.push_back(v);
  }
  return out;
}

Defines MatmulSumVariant::defines() const {
  Defines dd;
  if (act != Activation::none || affine) dd.macro("ACT(x)", act_body, act_code(act, affine));
  dd.flag("ADDEND", addend).flag("TRANSPOSE", transpose);
  dd.operand(0, out, CT::f32, true).operand(1, DType::f32, CT::f32, false);
  if (addend) dd.operand(2, d, CT::f32, false);
  return dd;
}

std::vector<MatmulSumVariant> MatmulSumVariant::space() {
  std::vector<MatmulSumVariant> out;
  for (bool addend : {false, true})
    for (bool transpose : {false, true}) {
      MatmulSumVariant v;
      v.addend = addend, v.transpose = transpose;
      out.push_back(v);
      v.act = Activation::relu;
      out.push_back(v);
    }
  MatmulSumVariant v;
  v.act = Activation::gelu, v.affine = true, v.addend = true, v.out = DType::f16, v.d = DType::bf16;
  out.push_back(v);
  return out;
}

}  // namespace gltensor::detail
