// The integer kernels' Variants (quant_int_variants.hpp): defines and variant spaces.
#include "nn/quant_int_variants.hpp"

#include <utility>

#include "runtime/glsl_text.hpp"

namespace gltensor::detail {

namespace {
CT int_ct(DType d) { return is_floating(d) ? CT::f32 : CT::i32; }
constexpr DType kQ8[] = {DType::u8, DType::i8};
// KS(X): X(0) .. X(n - 1), the warp kernel's K steps written out.
std::string k_steps(int n) { return glsl_macro_list(n, ""); }
}  // namespace

Defines QuantIntVariant::defines() const {
  Defines d;
  switch (kind) {
    case Kind::quantize:
    case Kind::requant:
    case Kind::dequantize: {
      const bool deq = kind == Kind::dequantize;
      d.flag(kind == Kind::quantize ? "QUANTIZE" : kind == Kind::requant ? "REQUANT" : "DEQUANTIZE");
      d.value("QMIN", qmin).value("QMAX", qmax).flag("HAS_BIAS", bias);
      d.operand(0, dt[0], deq ? CT::f32 : CT::i32, true).operand(1, dt[1], int_ct(dt[1]), false);
      d.operand(2, DType::f32, CT::f32, false).operand(3, dt[3], CT::i32, false).operand(4, DType::i32, CT::i32, false);
      break;
    }
    case Kind::dqparams:
      d.flag("DQPARAMS").operand(0, DType::f32, CT::f32, true).operand(1, DType::i32, CT::i32, true);
      d.operand(2, DType::f32, CT::f32, false).operand(3, DType::f32, CT::f32, false);
      break;
    case Kind::icol:
      d.flag("ICOL").operand(0, dt[0], CT::i32, true).operand(1, dt[1], CT::i32, false);
      d.operand(2, dt[2], CT::i32, false);
      break;
    case Kind::imatmul:
    case Kind::iconv:
      d.flag(kind == Kind::imatmul ? "IMATMUL" : "ICONV").flag("ACCUM", accum);
      d.operand(0, DType::i32, CT::i32, true);
      for (int i = 1; i < 5; ++i) d.operand(i, dt[static_cast<std::size_t>(i)], CT::i32, false);
      break;
  }
  return d;
}

std::vector<QuantIntVariant> QuantIntVariant::space() {
  using K = Kind;
  std::vector<QuantIntVariant> out;
  for (DType q : kQ8) {
    const std::int64_t lo = q == DType::u8 ? 0 : -128, hi = q == DType::u8 ? 255 : 127;
    for (DType x : {DType::f32, DType::f16})
      out.push_back({K::quantize, lo, hi, false, false, {q, x, DType::f32, q, DType::i32}});
    for (bool bias : {false, true})
      out.push_back({K::requant, lo, hi, bias, false, {q, DType::i32, DType::f32, q, DType::i32}});
    out.push_back({K::dequantize, 0, 0, false, false, {DType::f32, q, DType::f32, q, DType::i32}});
    out.push_back({K::dequantize, 0, 0, false, false, {DType::f32, DType::i32, DType::f32, DType::i32, DType::i32}});
    out.push_back({K::icol, 0, 0, false, false, {q, q, q, DType::i32, DType::i32}});
    for (DType w : kQ8)
      for (bool accum : {false, true}) {
        out.push_back({K::imatmul, 0, 0, false, accum, {DType::i32, q, w, DType::i32, DType::i32}});
        out.push_back({K::iconv, 0, 0, false, accum, {DType::i32, q, w, q, w}});
      }
  }
  out.push_back({K::dqparams, 0, 0, false, false, {}});
  return out;
}

Defines IMatmulVariant::defines() const {
  Defines d;
  d.uvalue("BN", static_cast<std::uint64_t>(bn)).value("RB", rb ? rb : blocks).value("CB", blocks);
  d.uvalue("IBLOCK_K", static_cast<std::uint64_t>(iblock_k)).uvalue("BK", static_cast<std::uint64_t>(bk));
  d.value("NSL", slices).flag("A_SWIZZLE", a_swizzle).flag("K_PAIRS", k_pairs);  // NSL an int: #if compares it
  d.value("A_WORDS", a_words ? 1 : 0);
  if (!implicit) d.value("B_WORDS", b_words ? 1 : 0);  // (IMPLICIT: bytes or row words; a define fewer)
  if (implicit) d.flag("IMPLICIT").value("IKH", kh).value("IKW", kw).flag("ROWQUAD", rowquad);
  d.flag("ZA_NONE", za_none).flag("ZB_NONE", zb_none);
  d.flag("A_I8", a == DType::i8).flag("B_I8", b == DType::i8).flag("ACCUM", accum);
  d.flag("TOTALS_REGS", totals == Totals::regs).flag("TOTALS_MEM", totals == Totals::mem);
  d.flag("TOTALS_SHARED", totals == Totals::shared);
  const bool q8 = quant && !dq_out;  // 8-bit c
  const DType c = q8 ? y : dequant ? DType::f32 : DType::i32;
  d.operand(0, c, dequant && !q8 ? CT::f32 : CT::i32, true);
  d.operand(1, a, CT::i32, false);
  if (qin) {
    d.flag("QIN");
    d.operand(2, DType::f32, CT::f32, false);
  } else {
    d.operand(2, b, CT::i32, false);
  }
  // zero points absent: the operand is bound to A, never read, and not declared (at most 32 entries:
  // the GPUs' implicit 4 x 4 forms with int8 operands, no zero points and an int8 output had 33)
  if (!za_none) d.operand(3, za, CT::i32, false);
  if (!zb_none) d.operand(4, zb, CT::i32, false);
  if (dequant) {
    d.flag("DEQUANT").flag("DQ_ROW", dq_row).flag("HAS_BIAS", bias);
    for (int i = 5; i < 8; ++i) d.operand(i, DType::f32, CT::f32, false);
    if (quant) {
      d.flag("QUANT").flag("Y_I8", y == DType::i8);  // (QMIN / QMAX in the kernel: one entry fewer)
      d.flag("DQ_OUT", dq_out);
      d.operand(8, DType::f32, CT::f32, false).operand(9, zy, CT::i32, false);
    } else if (totals == Totals::mem) {
      d.operand(8, DType::f32, CT::f32, false).operand(9, DType::f32, CT::f32, false);  // unread (sa bound)
    }
    if (totals == Totals::mem) d.operand(10, DType::i32, CT::i32, true);
  }
  return d;
}

std::vector<IMatmulVariant> IMatmulVariant::space() {
  std::vector<IMatmulVariant> out;
  // the tilings quant_int.cpp's block_f32_kernel makes: 64 x 64 with 4 x 4 or 8 x 8 per
  // invocation, 64 x 128 with 8 x 8
  for (auto [bn, blocks] : {std::pair<std::int64_t, int>{64, 1}, {64, 2}, {128, 2}})
    for (bool words : {false, true}) {
      IMatmulVariant v;
      v.bn = bn, v.blocks = blocks, v.a_words = words, v.b_words = !words;
      out.push_back(v);
    }
  for (DType a : kQ8)
    for (DType b : kQ8)
      for (bool none : {false, true}) {
        IMatmulVariant v;
        v.a = v.za = a, v.b = v.zb = b, v.za_none = v.zb_none = none, v.accum = none;
        out.push_back(v);
      }
  for (bool row : {false, true})
    for (bool bias : {false, true}) {
      IMatmulVariant v;
      v.dequant = true, v.dq_row = row, v.bias = bias;
      out.push_back(v);
    }
  // the forms of the totals (int32 output, dequantizing, requantizing with each activation)
  for (auto t : {IMatmulVariant::Totals::mem, IMatmulVariant::Totals::none}) {
    IMatmulVariant v;
    v.totals = t;
    for (bool accum : {false, true}) {
      v.accum = accum;
      out.push_back(v);
    }
    v.accum = false, v.dequant = true, v.dq_row = true, v.bias = true;
    out.push_back(v);
    for (DType y : kQ8) {
      v.quant = true, v.y = v.zy = y;
      out.push_back(v);
      v.dq_out = true;  // requantized, then dequantized (float32 c)
      out.push_back(v);
      v.dq_out = false;
    }
  }
  for (auto [bn, blocks] : {std::pair<std::int64_t, int>{64, 1}, {128, 2}}) {
    IMatmulVariant v;  // the implicit-GEMM convolution, requantizing and int32
    v.implicit = true, v.kh = v.kw = 3, v.bn = bn, v.blocks = blocks, v.b_words = false;
    out.push_back(v);
    v.dequant = v.dq_row = v.bias = v.quant = true;
    out.push_back(v);
    v.rowquad = true, v.rb = blocks == 1 ? 2 : 0;  // row words; 8 x 4 per invocation
    out.push_back(v);
  }
  {
    IMatmulVariant v;  // 8 x 8 on 64 x 128 tiles with two K slices (24 KiB of shared memory), requantizing, implicit
    v.bn = 128, v.blocks = 2, v.bk = 8, v.slices = 2, v.totals = IMatmulVariant::Totals::regs;
    v.dequant = v.dq_row = v.bias = v.quant = true;
    out.push_back(v);
    v.implicit = true, v.kh = v.kw = 3, v.b_words = false, v.rowquad = true;
    out.push_back(v);
  }
  {
    IMatmulVariant v;  // 4 x 8 per invocation on 64 x 128 tiles, requantizing
    v.bn = 128, v.blocks = 2, v.rb = 1, v.dequant = v.dq_row = v.bias = v.quant = true;
    out.push_back(v);
    // the same with two K slices (48 KiB of shared memory), implicit, K tiles in pairs (the GPUs' plan);
    // the input QuantizeLinear in it (the most defines)
    v.slices = 2, v.implicit = true, v.kh = v.kw = 3, v.b_words = false, v.rowquad = true, v.k_pairs = true;
    out.push_back(v);
    v.rowquad = false, v.qin = true, v.a = DType::i8, v.za_none = true;
    out.push_back(v);
  }
  {
    IMatmulVariant v;  // A's tile swizzled: 4 x 4 (K tiles of 16), 8 x 8 on 64 x 64 (K tiles of 8)
    v.a_swizzle = true, v.implicit = true, v.kh = v.kw = 3, v.b_words = false, v.rowquad = true;
    v.dequant = v.dq_row = v.bias = v.quant = true;
    out.push_back(v);
    v.bn = 64, v.blocks = 2, v.bk = 8, v.totals = IMatmulVariant::Totals::shared;
    out.push_back(v);
  }
  for (auto [bn, blocks] : {std::pair<std::int64_t, int>{64, 2}, {128, 2}, {64, 1}}) {
    IMatmulVariant v;  // K tiles of 8 (8 x 8 per invocation), totals in shared memory
    v.bn = bn, v.blocks = blocks, v.bk = blocks == 2 ? 8 : 16, v.totals = IMatmulVariant::Totals::shared;
    out.push_back(v);
    v.dequant = v.dq_row = v.bias = v.quant = true;
    out.push_back(v);
    v.implicit = true, v.kh = v.kw = 3, v.b_words = false, v.rowquad = true;
    out.push_back(v);
  }
  {
    IMatmulVariant v;  // 4 x 4 on 64 x 32 tiles with two K slices, requantizing, implicit
    v.bn = 32, v.slices = 2, v.a_swizzle = true, v.implicit = true, v.kh = v.kw = 3, v.b_words = false;
    v.rowquad = true, v.dequant = v.dq_row = v.bias = v.quant = true;
    out.push_back(v);
    v.dq_out = true;  // the last conv's output dequantized
    out.push_back(v);
    v.dq_out = false, v.rowquad = false, v.qin = true;  // the input QuantizeLinear in the first conv
    out.push_back(v);
    v.bn = 64, v.b = v.zb = DType::i8;  // 4 x 4 on 64 x 64 with two K slices (GPUs' few tiles), int8 image
    out.push_back(v);
    v.a = DType::i8, v.za_none = true;  // int8 weights without a zero point
    out.push_back(v);
    v.a = DType::u8, v.za_none = false;
    v.qin = false, v.dq_out = true, v.rowquad = true;  // the last conv
    out.push_back(v);
    // int8 operands without zero points, an int8 output dequantized: the most entries (operands
    // included; at most 32: Defines throws past them), as test_iconv_warp's exact path ran it on the H100
    v.a = v.za = v.b = v.zb = v.y = v.zy = DType::i8, v.za_none = v.zb_none = true;
    out.push_back(v);
  }
  {
    IMatmulVariant v;  // requantizing with int32 totals in registers, zero point int32
    v.dequant = v.dq_row = v.quant = true, v.zy = DType::i32;
    out.push_back(v);
  }
  return out;
}

Defines IColVariant::defines() const {
  Defines d;
  d.value("IKH", kh).value("IKW", kw).flag("X_I8", x == DType::i8).flag("F32_OUT", f32_out);
  if (f32_out)
    d.operand_vec4(0, DType::f32, CT::f32, true);
  else
    d.operand(0, x, CT::i32, true);
  d.operand(1, x, CT::i32, false).operand(2, zx, CT::i32, false);
  return d;
}

std::vector<IColVariant> IColVariant::space() {
  std::vector<IColVariant> out;
  for (auto [kh, kw] : {std::pair<std::int64_t, std::int64_t>{3, 3}, {1, 1}, {5, 2}}) {
    IColVariant v;
    v.kh = kh, v.kw = kw;
    out.push_back(v);
  }
  IColVariant v;  // int8 images, an int32 zero point (zero_point's 0 for an absent one)
  v.x = DType::i8, v.zx = DType::i32;
  out.push_back(v);
  v.f32_out = true;  // the lab's float32 columns
  out.push_back(v);
  return out;
}

Defines IWarpVariant::defines() const {
  Defines d;
  if (sum) {  // the summing requantization: the epilogue's defines and operands only
    d.flag("IW_SUM").flag("HAS_BIAS", bias).flag("Y_I8", y == DType::i8).flag("DQ_OUT", dq_out);
    if (dq_out)
      d.operand_vec4(0, DType::f32, CT::f32, true);
    else
      d.operand(0, y, CT::i32, true);
    d.operand_vec4(1, DType::f32, CT::f32, false);
    for (int i = 5; i < 9; ++i) d.operand(i, DType::f32, CT::f32, false);
    d.operand(9, zy, CT::i32, false);
    return d;
  }
  // (BD, BN, A_KMAJOR, B_KMAJOR and OUT_F32: the kernel's own)
  d.uvalue("BM", static_cast<std::uint64_t>(bm));
  d.uvalue("BK", static_cast<std::uint64_t>(bk)).value("TN", tn).value("WARP_TILE", lanes).flag("EDGE", edge);
  d.flag("K_LOOP", k_loop).flag("A_SHK", shk);
  d.macro("KS(X)", k_steps, bk);
  d.flag("A_I8", a == DType::i8).flag("B_I8", b == DType::i8).flag("ZA_NONE", za_none).flag("ZB_NONE", zb_none);
  if (split) {  // the chunks' float32 sums
    d.flag("IW_SPLIT").operand_vec4(0, DType::f32, CT::f32, true);
  } else {
    d.flag("HAS_BIAS", bias).flag("Y_I8", y == DType::i8).flag("DQ_OUT", dq_out);
    if (dq_out)
      d.operand_vec4(0, DType::f32, CT::f32, true);
    else
      d.operand(0, y, CT::i32, true);
  }
  d.flag("A_F32", a_f32).flag("B_F32", b_f32);
  if (a_f32)
    d.quads("A", 1, DType::f32);
  else
    d.operand(1, a, CT::i32, false);
  if (b_f32)
    d.quads("B", 2, DType::f32);
  else
    d.operand(2, b, CT::i32, false);
  // zero points absent: the operand is bound to A, never read, and not declared
  if (!za_none) d.operand(3, za, CT::i32, false);
  if (!zb_none) d.operand(4, zb, CT::i32, false);
  if (split) return d;
  for (int i = 5; i < 9; ++i) d.operand(i, DType::f32, CT::f32, false);
  d.operand(9, zy, CT::i32, false);
  return d;
}

std::vector<IWarpVariant> IWarpVariant::space() {
  std::vector<IWarpVariant> out;
  IWarpVariant v;  // the wide QDQ net's layers: 128 x 128 tiles of 8 x 8, K-major A in shared memory
  out.push_back(v);
  v.dq_out = true;  // its last conv
  out.push_back(v);
  {
    IWarpVariant s = v;  // the 56x56 layers: K in chunks, edges, then the chunks' sum (both output kinds)
    s.split = true, s.edge = true;
    out.push_back(s);
    s.split = false, s.sum = true;
    out.push_back(s);
    s.dq_out = false, s.y = s.zy = DType::i8;
    out.push_back(s);
  }
  v.dq_out = false, v.bm = 64, v.edge = true, v.bk = 8;  // 64 x 128 tiles, edges, K tiles of 8
  out.push_back(v);
  v.shk = false, v.k_loop = true, v.lanes = false, v.bias = false;  // A transposed in shared memory
  out.push_back(v);
  {
    IWarpVariant f = v;  // the lab's float32 operands
    f.a_f32 = f.b_f32 = f.za_none = f.zb_none = true;
    out.push_back(f);
  }
  for (DType t : kQ8) {  // the operands' types, without zero points, int8 output
    v.a = v.za = v.b = v.zb = v.y = v.zy = t, v.za_none = v.zb_none = t == DType::i8;
    out.push_back(v);
  }
  return out;
}

}  // namespace gltensor::detail
