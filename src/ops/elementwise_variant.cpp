// ElementwiseVariant (elementwise.hpp): its defines and its variant space.
#include <algorithm>

#include "gltensor/ops.hpp"
#include "ops/elementwise.hpp"
#include "ops/fused_elementwise.hpp"
#include "runtime/glsl_text.hpp"

namespace gltensor::detail {

namespace {
// FETCH_QUADS(q): one quad of every input (operands 1 .. nops - 1) into its register.
std::string fetch_quads(int nops) {
  std::string s;
  for (int j = 1; j < nops; ++j)
    s += " fetch" + std::to_string(j) + "((u_offset[" + std::to_string(j) + "] >> 2u) + q);";
  return s;
}

// A fused expression over `inputs` tensors that uses every FusedOp, rounding to f16 on `f16`.
std::string every_fused_op(int inputs, bool f16) {
  FusedExpr e;
  e.inputs = inputs;
  int x = e.add({FusedOp::input, 0});
  for (int j = 1; j < inputs; ++j) x = e.add({FusedOp::add, x, e.add({FusedOp::input, j})});
  const int k = e.add({FusedOp::constant, -1, -1, -1, 3.0f});
  for (FusedOp op : {FusedOp::sub, FusedOp::mul, FusedOp::div}) x = e.add({op, x, k});
  for (FusedOp op : {FusedOp::neg, FusedOp::abs, FusedOp::exp, FusedOp::erf, FusedOp::relu, FusedOp::sigmoid,
                     FusedOp::tanh, FusedOp::hardswish})
    x = e.add({op, x});
  x = e.add({FusedOp::leaky_relu, x, -1, -1, 0.01f});
  x = e.add({FusedOp::clip, x, -1, -1, -1.0f, 6.0f, f16});
  e.add({FusedOp::muladd, x, k, x});
  return render_fused_glsl(e);
}
}  // namespace

Defines ElementwiseVariant::defines() const {
  Defines d;
  d.value("NOPS", nops).value("NDIM", ndim);
  if (kernel == ElementwiseKernel::fused)
    d.macro("FUSED_BODY", fn);
  else
    d.ident("OP", fn);
  d.flag("CONTIG", contig).flag("OUT_WORDS", words).flag("VEC4", vec4);
  if (!f16_fn.empty()) d.text(f16_ext).flag("F16V").ident("OP16", f16_fn);
  d.flag("ERR_FLAG", error_flag);
  d.flag("SCALAR_A", scalar == Scalar::a).flag("SCALAR_B", scalar == Scalar::b);
  d.flag("SCALAR_INT", scalar != Scalar::none && in_ct == CT::i32);
  const DType od = dtypes[0];
  if (vec4) {
    d.value("QUADS", quads);
    d.operand_vec4(0, od, natural_ct(od), true);
    d.macro("FETCH_QUADS(q)", fetch_quads, nops);
    for (int j = 1; j < nops; ++j) d.operand_vec4(j, dtypes[j], in_ct, false);
    return d;
  }
  d.operand(0, od, natural_ct(od), true);
  for (int j = 1; j < nops; ++j) d.operand(j, dtypes[j], in_ct, false);
  return d;
}

std::vector<ElementwiseVariant> ElementwiseVariant::space() {
  using K = ElementwiseKernel;
  const DType f = DType::f32, i = DType::i32, b = DType::bool_, h = DType::f16;
  std::vector<ElementwiseVariant> out;
  auto add = [&](K kernel, const std::string& fn, CT ct, std::vector<DType> dtypes) {
    ElementwiseVariant v;
    v.kernel = kernel, v.fn = fn, v.in_ct = ct, v.contig = true;
    v.nops = static_cast<int>(dtypes.size());
    std::copy(dtypes.begin(), dtypes.end(), v.dtypes.begin());
    out.push_back(v);
    return &out.back();
  };
  // Unary rows: f32 compute; the `keep` rows on integers too (int overloads of OP).
  const std::vector<std::string> int_unary = {"neg",   "abs",  "sign",  "relu", "square",
                                              "floor", "ceil", "round", "trunc"};
#define GLT_UNARY_ROW(name, ...) add(K::unary, "op_" #name, CT::f32, {f, f});
  GLTENSOR_UNARY_OPS(GLT_UNARY_ROW)
#undef GLT_UNARY_ROW
#define GLT_PARAMETRIC_ROW(name) add(K::unary, "op_" #name, CT::f32, {f, f});
  GLTENSOR_PARAMETRIC_UNARY_OPS(GLT_PARAMETRIC_ROW)
#undef GLT_PARAMETRIC_ROW
  for (const std::string& n : int_unary) add(K::unary, "op_" + n, CT::i32, {i, i});
  for (const char* n : {"op_clamp", "op_clamp_min", "op_clamp_max"}) add(K::unary, n, CT::i32, {i, i});
  for (const char* n : {"op_isnan", "op_isinf", "op_isfinite"}) add(K::unary, n, CT::f32, {b, f});
  add(K::unary, "op_logical_not", CT::i32, {b, i});
  // Tensor methods and creation: casts, fill, arange.
  add(K::unary, "op_identity", CT::f32, {h, f});
  add(K::unary, "op_identity", CT::i32, {i, i});
  add(K::unary, "op_to_bool", CT::f32, {b, f});
  add(K::unary, "op_to_float", CT::i32, {f, i});
  add(K::unary, "op_to_int", CT::f32, {i, f});
  add(K::unary, "op_fill", CT::f32, {f});
  add(K::unary, "op_fill", CT::i32, {i});
  add(K::unary, "op_arange", CT::f32, {f});
  add(K::unary, "op_arange", CT::i32, {i});
  // Binary rows: f32 compute but for the bitwise rule (integers only), integers where the rule
  // allows.
#define GLT_BINARY_F32_arith(name) add(K::binary, "op_" #name, CT::f32, {f, f, f});
#define GLT_BINARY_F32_float_arith(name) GLT_BINARY_F32_arith(name)
#define GLT_BINARY_F32_compare(name) GLT_BINARY_F32_arith(name)
#define GLT_BINARY_F32_logical(name) GLT_BINARY_F32_arith(name)
#define GLT_BINARY_F32_bitwise(name)
#define GLT_BINARY_ROW(name, rule, ...) GLT_BINARY_F32_##rule(name)
  GLTENSOR_BINARY_OPS(GLT_BINARY_ROW)
#undef GLT_BINARY_ROW
  add(K::binary, "op_add_alpha", CT::f32, {f, f, f});
  add(K::binary, "op_relu_backward", CT::f32, {f, f, f});  // relu's gradient (elementwise_grads.cpp)
  for (const char* n : {"op_add", "op_add_alpha", "op_sub", "op_mul", "op_maximum", "op_minimum", "op_pow", "op_fmod",
                        "op_remainder", "op_bitwise_and", "op_bitwise_or", "op_bitwise_xor"})
    add(K::binary, n, CT::i32, {i, i, i});
  for (const char* n :
       {"op_eq", "op_ne", "op_lt", "op_le", "op_gt", "op_ge", "op_logical_and", "op_logical_or", "op_logical_xor"}) {
    add(K::binary, n, CT::f32, {b, f, f});
    add(K::binary, n, CT::i32, {b, i, i});
  }
  add(K::binary, "op_fmod", CT::i32, {i, i, i})->error_flag = true;
  // Scalar operands: b, a (integer and float).
  add(K::binary, "op_mul", CT::f32, {f, f})->scalar = Scalar::b;
  add(K::binary, "op_sub", CT::f32, {f, f})->scalar = Scalar::a;
  add(K::binary, "op_pow", CT::i32, {i, i})->scalar = Scalar::b;
  ElementwiseVariant* rem = add(K::binary, "op_remainder", CT::i32, {i, i});
  rem->scalar = Scalar::a, rem->error_flag = true;
  // Ternary.
  add(K::ternary, "op_where", CT::f32, {f, b, f, f});
  add(K::ternary, "op_where", CT::i32, {i, b, i, i});
  for (const char* n : {"op_lerp", "op_addcmul", "op_addcdiv", "op_clamp_t"}) add(K::ternary, n, CT::f32, {f, f, f, f});
  add(K::ternary, "op_clamp_t", CT::i32, {i, i, i, i});
  // Layouts and dtypes for one op each: strided dims, quads, words of 16- and 8-bit outputs.
  for (int nd = 1; nd <= 6; ++nd) {
    ElementwiseVariant* v = add(K::binary, "op_add", CT::f32, {f, f, f});
    v->contig = false, v->ndim = nd;
  }
  for (int q : {1, 2, 4, 8}) {
    ElementwiseVariant* v = add(K::binary, "op_add", CT::f32, {f, f, f});
    v->vec4 = true, v->quads = q;
  }
  add(K::unary, "op_neg", CT::i32, {i, i})->vec4 = true;
  add(K::ternary, "op_where", CT::f32, {f, f, f, f})->vec4 = true;
  for (DType d : {DType::f16, DType::bf16, DType::u8, DType::i8, DType::bool_}) {
    const CT ct = natural_ct(d);
    add(K::binary, "op_add", ct, {d, d, d})->words = true;
    ElementwiseVariant* s = add(K::unary, "op_identity", ct, {d, d});
    s->contig = false, s->ndim = 3;
  }
  // F16V: the rows with an f16 form (f16 operands), with the EXT_shader_explicit_arithmetic_types
  // extension text that devices without NV_gpu_shader5 get.
  const std::string ext = kF16TypesExtensionGlsl;
#define GLT_F16_UNARY_f32(name)
#define GLT_F16_UNARY_f16(name) add(K::unary, "op_" #name, CT::f32, {h, h})->f16_fn = "op16_" #name;
#define GLT_F16_UNARY(name, rule, grad, form) GLT_F16_UNARY_##form(name)
  GLTENSOR_UNARY_OPS(GLT_F16_UNARY)
#define GLT_F16_BINARY_f16(name) add(K::binary, "op_" #name, CT::f32, {h, h, h})->f16_fn = "op16_" #name;
#define GLT_F16_BINARY_f32(name)
#define GLT_F16_BINARY_int_division(name)
#define GLT_F16_BINARY_int_power(name)
#define GLT_F16_BINARY(name, rule, grad, form) GLT_F16_BINARY_##form(name)
  GLTENSOR_BINARY_OPS(GLT_F16_BINARY)
  add(K::binary, "op_add_alpha", CT::f32, {h, h, h})->f16_fn = "op16_add_alpha";
  ElementwiseVariant* hs = add(K::binary, "op_mul", CT::f32, {h, h});
  hs->f16_fn = "op16_mul", hs->scalar = Scalar::b;
  for (ElementwiseVariant& v : out)
    if (!v.f16_fn.empty()) v.f16_ext = ext;
  // Fused expressions (fused_elementwise.comp): every step op, 1 to kFusedMaxInputs inputs, strided,
  // quads, f16 operands and whole f16 output words.
  for (int n = 1; n <= kFusedMaxInputs; ++n) {
    std::vector<DType> dt(static_cast<std::size_t>(n) + 1, f);
    add(K::fused, every_fused_op(n, false), CT::f32, dt)->vec4 = n % 2 == 0;
    ElementwiseVariant* s = add(K::fused, every_fused_op(n, false), CT::f32, dt);
    s->contig = false, s->ndim = n;
  }
  add(K::fused, every_fused_op(2, true), CT::f32, {h, h, f})->words = true;
  add(K::fused, every_fused_op(2, true), CT::f32, {h, h, h});
  return out;
}

}  // namespace gltensor::detail
