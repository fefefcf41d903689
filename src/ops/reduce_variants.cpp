// The reduction kernels' Variants (reduce_variants.hpp): defines and variant spaces.
#include "ops/reduce_variants.hpp"

#include <string>

namespace gltensor::detail {

Defines ReduceVariant::defines() const {
  Defines d;
  d.ident("RED", red).value("KD", kd).value("RD", rd).ident("STAGE", stage);
  d.operand(0, out, natural_ct(out), true).operand(1, in, CT::f32, false);
  return d;
}

std::vector<ReduceVariant> ReduceVariant::space() {
  std::vector<ReduceVariant> out;
  for (const char* red : kReduceFunctions)
    for (const char* stage : {"stage_whole", "stage_partial", "stage_combine"}) {
      ReduceVariant v;
      v.red = red, v.stage = stage;
      const std::string r = red;
      if (r == "red_argmax" || r == "red_argmin") v.out = DType::i32;
      if (r == "red_all" || r == "red_any") v.out = DType::bool_, v.in = DType::bool_;
      out.push_back(v);
    }
  for (int kd = 1; kd <= 4; ++kd)
    for (int rd = 1; rd <= 4; ++rd) {
      ReduceVariant v;
      v.kd = kd, v.rd = rd;
      out.push_back(v);
    }
  for (DType dt : {DType::f16, DType::bf16, DType::i32, DType::u8}) {
    ReduceVariant v;
    v.in = dt, v.out = is_floating(dt) ? dt : DType::i32;
    out.push_back(v);
  }
  return out;
}

Defines ReduceRowsVariant::defines() const {
  Defines d;
  d.ident("TERM", term).ident("POST", post);
  if (subgroup) d.subgroup(SubgroupFeature::arithmetic);
  d.flag("SEGMENTS", segments);
  d.operand(0, out, CT::f32, true);
  if (quads)
    d.flag("QUADS").operand_vec4(1, in, CT::f32, false);
  else
    d.operand(1, in, CT::f32, false);
  return d;
}

std::vector<ReduceRowsVariant> ReduceRowsVariant::space() {
  std::vector<ReduceRowsVariant> out;
  for (const char* term : {"term_x", "term_abs", "term_square"})
    for (const char* post : {"post_none", "post_mean", "post_sqrt"})
      for (bool subgroup : {false, true})
        for (bool quads : {false, true})
          for (bool segments : {false, true}) {
            ReduceRowsVariant v;
            v.term = term, v.post = post, v.subgroup = subgroup, v.quads = quads, v.segments = segments;
            out.push_back(v);
          }
  for (DType dt : {DType::f16, DType::bf16}) {
    ReduceRowsVariant v;
    v.in = v.out = dt;
    out.push_back(v);
  }
  return out;
}

Defines SoftmaxVariant::defines() const {
  Defines d;
  if (subgroup) d.subgroup(SubgroupFeature::arithmetic);
  d.value("KD", kd).flag("LOG", log);
  if (row_quads) {
    d.flag("ROW_QUADS").uvalue("NQ", static_cast<std::uint64_t>(nq));
    d.operand_vec4(0, DType::f32, CT::f32, true).operand_vec4(1, DType::f32, CT::f32, false);
  } else {
    if (row_regs) d.flag("ROW_REGS").uvalue("NS", static_cast<std::uint64_t>(ns));
    d.operand(0, out, CT::f32, true).operand(1, in, CT::f32, false);
  }
  return d;
}

std::vector<SoftmaxVariant> SoftmaxVariant::space() {
  std::vector<SoftmaxVariant> out;
  for (std::int64_t kd : {1, 2, 5})
    for (bool log : {false, true}) {
      SoftmaxVariant v;
      v.kd = kd, v.log = log;
      out.push_back(v);
      for (std::int64_t nq = 1; nq <= 8; ++nq)
        for (bool subgroup : {false, true}) {
          v.row_quads = true, v.nq = nq, v.subgroup = subgroup;
          out.push_back(v);
        }
      v.row_quads = false, v.nq = 0;
      for (std::int64_t ns : {1, 2, 5, 26, 32})
        for (bool subgroup : {false, true}) {
          v.row_regs = true, v.ns = ns, v.subgroup = subgroup;
          out.push_back(v);
        }
    }
  for (DType dt : {DType::f16, DType::bf16}) {
    SoftmaxVariant v;
    v.in = v.out = dt;
    out.push_back(v);
    v.row_regs = true, v.ns = 3;
    out.push_back(v);
  }
  SoftmaxVariant mixed;
  mixed.in = DType::i32;  // integer inputs: float32 results
  out.push_back(mixed);
  mixed.row_regs = true, mixed.ns = 1;
  out.push_back(mixed);
  return out;
}

Defines ScanVariant::defines() const {
  Defines d;
  const bool blocked = std::string(mode) != "ROW_SCAN";
  d.flag(mode).value("KD", kd);
  if (blocked) d.uvalue("E", static_cast<std::uint64_t>(e));
  const CT ct = natural_ct(out);
  // BLOCK_SUMS writes the sums in the compute type (f32 or i32).
  d.operand(0, std::string(mode) == "BLOCK_SUMS" ? (ct == CT::f32 ? DType::f32 : DType::i32) : out, ct, true);
  d.operand(1, in, ct, false);
  if (carry) d.flag("CARRY").operand(2, carries, ct, false);
  return d;
}

std::vector<ScanVariant> ScanVariant::space() {
  std::vector<ScanVariant> out;
  for (const char* mode : {"ROW_SCAN", "BLOCK_SUMS", "BLOCK_SCAN"})
    for (int kd = 1; kd <= 3; ++kd)
      for (DType dt : {DType::f32, DType::f16, DType::i32, DType::u8}) {
        ScanVariant v;
        v.mode = mode, v.kd = kd, v.in = dt, v.out = is_floating(dt) ? dt : DType::i32;
        v.carries = is_floating(dt) ? DType::f32 : DType::i32;
        out.push_back(v);
        if (std::string(mode) == "BLOCK_SCAN") {
          v.carry = true;
          out.push_back(v);
        }
      }
  return out;
}

}  // namespace gltensor::detail
