// The data-movement kernels' Variants (data_variants.hpp): defines and variant spaces.
#include "ops/data_variants.hpp"

#include <string>

namespace gltensor::detail {

Defines SortVariant::defines() const {
  Defines d;
  if (segments) {
    d.flag("SEGMENT_SORT").uvalue("E", static_cast<std::uint64_t>(e)).value("RD", rd);
    d.flag("DESCENDING", descending).flag("KEY_FLOAT", is_floating(in));
  }
  d.flag("FINAL", final);
  d.operand(0, DType::i32, CT::i32, true);
  if (segments) {
    d.operand(1, in, natural_ct(in), false);
    if (!final) d.operand(2, DType::i32, CT::i32, true);
  } else {
    d.operand(1, DType::i32, CT::i32, false).operand(2, DType::i32, CT::i32, false);
    if (!final) d.operand(3, DType::i32, CT::i32, true);
  }
  return d;
}

std::vector<SortVariant> SortVariant::space() {
  std::vector<SortVariant> out;
  for (bool final : {false, true}) {
    SortVariant merge;
    merge.segments = false, merge.final = final;
    out.push_back(merge);
    for (bool descending : {false, true})
      for (int rd = 1; rd <= 3; ++rd)
        for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::i32, DType::u8, DType::bool_}) {
          SortVariant v;
          v.final = final, v.descending = descending, v.rd = rd, v.in = dt;
          out.push_back(v);
        }
  }
  return out;
}

namespace {
std::string scatter_red(int mode) {
  switch (static_cast<IndexMode>(mode)) {
    case IndexMode::scatter_prod:
      return "((a) * (b))";
    case IndexMode::scatter_max:
      return "max(a, b)";
    default:
      return "min(a, b)";
  }
}
}  // namespace

Defines IndexVariant::defines() const {
  Defines d;
  d.value("NDIM", ndim).value("DIM", dim);
  if (mode == IndexMode::gather) d.flag("GATHER");
  if (mode == IndexMode::scatter_add) d.flag("SCATTER_ADD");
  if (atomic_float) d.text(atomic_float_glsl());
  if (mode == IndexMode::scatter_prod || mode == IndexMode::scatter_max || mode == IndexMode::scatter_min)
    d.macro("SCATTER_RED(a, b)", scatter_red, static_cast<int>(mode));
  d.flag("OUT_INT", out == DType::i32).flag("NONNEG_INDEX", !wrap_negative);
  d.operand(0, out, natural_ct(out), true)
      .operand(1, in, natural_ct(out), false)
      .operand(2, DType::i32, CT::i32, false);
  return d;
}

std::vector<IndexVariant> IndexVariant::space() {
  std::vector<IndexVariant> out;
  for (IndexMode mode : {IndexMode::gather, IndexMode::scatter, IndexMode::scatter_add, IndexMode::scatter_prod,
                         IndexMode::scatter_max, IndexMode::scatter_min})
    for (DType dt : {DType::f32, DType::i32}) {
      IndexVariant v;
      v.mode = mode, v.out = v.in = dt;
      out.push_back(v);
      // (ATOMIC_FLOAT is not enumerated: glslang does not know NV_shader_atomic_float; NVIDIA's
      // compiler checks it in test_indexing's scatter_add tests.)
      v.wrap_negative = false, v.ndim = 4, v.dim = 3;
      out.push_back(v);
    }
  for (DType dt : {DType::f16, DType::bf16, DType::u8, DType::bool_, DType::i8}) {
    IndexVariant v;  // gather and scatter copy any dtype
    v.out = v.in = dt;
    out.push_back(v);
    v.mode = IndexMode::scatter;
    out.push_back(v);
  }
  return out;
}

Defines RandomVariant::defines() const {
  Defines d;
  d.ident("DIST", dist).operand(0, out, natural_ct(out), true);
  if (input) d.operand(1, in, CT::f32, false);
  if (input && device_offset) d.flag("OFFSET_BUF").operand(2, DType::i32, CT::i32, false);
  if (input && device_offset && save_offset) d.flag("SAVE_OFFSET").operand(3, DType::i32, CT::i32, true);
  return d;
}

std::vector<RandomVariant> RandomVariant::space() {
  std::vector<RandomVariant> out;
  for (const char* dist : {"dist_uniform", "dist_normal", "dist_bernoulli", "dist_dropout"})
    for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::i32, DType::bool_}) {
      RandomVariant v;
      v.dist = dist, v.out = dt;
      v.input = std::string(dist) == "dist_dropout";
      v.in = is_floating(dt) ? dt : DType::f32;
      out.push_back(v);
      if (v.input) {
        v.device_offset = true;
        out.push_back(v);
        v.save_offset = true;
        out.push_back(v);
      }
    }
  return out;
}

}  // namespace gltensor::detail
