// The normalization kernels' Variants (norm_variants.hpp): defines and variant spaces.
#include "nn/norm_variants.hpp"

#include <string>

namespace gltensor::detail {

namespace {
bool is(const char* a, const char* b) { return std::string(a) == b; }
}  // namespace

Defines NormVariant::defines() const {
  Defines d;
  if (subgroup) d.subgroup(SubgroupFeature::arithmetic);
  d.flag("HAS_W", has_w).flag("HAS_B", has_b);
  if (ns > 0) d.flag("ROW_REGS").uvalue("NS", static_cast<std::uint64_t>(ns));
  d.operand(0, y, CT::f32, true).operand(1, x, CT::f32, false);
  d.operand(2, has_w ? w : DType::f32, CT::f32, false).operand(3, has_b ? b : DType::f32, CT::f32, false);
  return d;
}

std::vector<NormVariant> NormVariant::space() {
  std::vector<NormVariant> out;
  for (DType dt : {DType::f32, DType::f16, DType::bf16})
    for (int f = 0; f < 4; ++f) {
      NormVariant v;
      v.has_w = f & 1, v.has_b = f & 2, v.y = v.x = v.w = v.b = dt;
      out.push_back(v);
      for (std::int64_t ns : {1, 2, 5, 16})
        for (bool subgroup : {false, true}) {
          if (dt != DType::f32 && (ns != 2 || subgroup)) continue;
          v.ns = ns, v.subgroup = subgroup;
          out.push_back(v);
        }
    }
  return out;
}

Defines RmsNormVariant::defines() const {
  Defines d;
  d.flag(stage);
  if (is(stage, "RMS_FWD_PARTIAL")) {
    d.flag("HAS_RES", has_res);
    d.operand(0, DType::f32, CT::f32, true).operand(1, in, CT::f32, false);
    if (has_res) d.operand(3, res, CT::f32, false);
  } else if (is(stage, "RMS_FWD")) {
    d.flag("HAS_W", has_w).flag("HAS_RES", has_res).flag("HAS_RSTD", has_rstd).flag("PARTIALS", partials);
    if (partials) d.ident("PARTIALS_LOAD", "load6");
    d.operand(0, out, CT::f32, true).operand(1, in, CT::f32, false);
    if (has_w) d.operand(2, w, CT::f32, false);
    if (has_res) d.operand(3, res, CT::f32, false).operand(4, v_out, CT::f32, true);
    if (has_rstd) d.operand(5, DType::f32, CT::f32, true);
    if (partials) d.operand(6, DType::f32, CT::f32, false);
  } else if (is(stage, "RMS_BWD_PARTIAL")) {
    d.flag("HAS_W", has_w);
    d.operand(0, DType::f32, CT::f32, true).operand(1, in, CT::f32, false).operand(2, v, CT::f32, false);
    if (has_w) d.operand(3, w, CT::f32, false);
  } else if (is(stage, "RMS_BWD")) {
    d.flag("HAS_W", has_w).flag("PARTIALS", partials);
    if (partials) d.ident("PARTIALS_LOAD", "load5");
    d.operand(0, out, CT::f32, true).operand(1, in, CT::f32, false).operand(2, v, CT::f32, false);
    if (has_w) d.operand(3, w, CT::f32, false);
    d.operand(4, DType::f32, CT::f32, false);
    if (partials) d.operand(5, DType::f32, CT::f32, false);
  } else {  // RMS_DW
    d.operand(0, DType::f32, CT::f32, true).operand(1, in, CT::f32, false).operand(2, v, CT::f32, false);
    d.operand(3, DType::f32, CT::f32, false);
  }
  return d;
}

std::vector<RmsNormVariant> RmsNormVariant::space() {
  std::vector<RmsNormVariant> out;
  for (const char* stage : {"RMS_FWD_PARTIAL", "RMS_FWD", "RMS_BWD_PARTIAL", "RMS_BWD", "RMS_DW"})
    for (DType dt : {DType::f32, DType::f16, DType::bf16})
      for (int f = 0; f < 16; ++f) {
        RmsNormVariant v;
        v.stage = stage, v.has_w = f & 1, v.has_res = f & 2, v.has_rstd = f & 4, v.partials = f & 8;
        v.out = v.in = v.v = v.w = v.res = v.v_out = dt;
        if (is(stage, "RMS_DW") && f != 0) continue;
        if ((is(stage, "RMS_BWD_PARTIAL") || is(stage, "RMS_BWD")) && (v.has_res || v.has_rstd)) continue;
        if (is(stage, "RMS_BWD_PARTIAL") && v.partials) continue;
        if (is(stage, "RMS_FWD_PARTIAL") && (v.has_w || v.has_rstd || v.partials)) continue;
        out.push_back(v);
      }
  return out;
}

Defines BatchNormVariant::defines() const {
  Defines d;
  d.flag(stage);
  if (is(stage, "BN_STATS") || is(stage, "BN_STATS_MERGE")) {
    d.flag("FINAL", final).operand(1, in, CT::f32, false);
    if (final) {
      d.flag("HAS_RM", has_rm).flag("HAS_RV", has_rv);
      d.operand(0, DType::f32, CT::f32, true).operand(2, DType::f32, CT::f32, true);
      if (has_rm) d.operand(3, rm, CT::f32, true);
      if (has_rv) d.operand(4, rv, CT::f32, true);
      if (is(stage, "BN_STATS_MERGE")) d.operand(5, x, CT::f32, false);  // the shift: the channel's first value
    } else {
      d.operand(0, DType::f32, CT::f32, true);
    }
  } else if (is(stage, "BN_NORM")) {
    d.flag("ROWS", rows).flag("EVAL", eval).flag("HAS_W", has_w).flag("HAS_B", has_b).flag("RELU", relu);
    d.flag("MERGE_PARTIALS", merge_partials).flag("POOL", pool);
    // MERGE_PARTIALS writes mean and invstd (f32, as BN_STATS' FINAL)
    d.operand(0, y, CT::f32, true).operand(1, x, CT::f32, false).operand(2, a, CT::f32, merge_partials);
    d.operand(3, v, CT::f32, merge_partials);
    if (has_w) d.operand(4, w, CT::f32, false);
    if (has_b) d.operand(5, b, CT::f32, false);
    if (merge_partials) {
      d.operand(6, DType::f32, CT::f32, false).flag("HAS_RM", has_rm).flag("HAS_RV", has_rv);
      if (has_rm) d.operand(7, rm, CT::f32, true);
      if (has_rv) d.operand(8, rv, CT::f32, true);
    }
    if (pool) d.operand(9, DType::i32, CT::i32, true);
  } else if (is(stage, "BN_GRAD_SUMS")) {
    d.flag("EVAL", eval).operand(0, DType::f32, CT::f32, true).operand(1, in, CT::f32, false);
    d.operand(2, x, CT::f32, false).operand(3, a, CT::f32, false).operand(4, v, CT::f32, false);
    d.flag("RELU_MASK", relu_mask).flag("POOL", pool);
    if (relu_mask) d.operand(5, y, CT::f32, false);
    if (pool) d.operand(5, DType::i32, CT::i32, false);
  } else if (is(stage, "BN_SUM_MERGE")) {
    d.operand(0, DType::f32, CT::f32, true).operand(1, in, CT::f32, false);
  } else {  // BN_DX
    d.flag("ROWS", rows).flag("EVAL", eval).flag("HAS_W", has_w);
    d.operand(0, y, CT::f32, true).operand(1, in, CT::f32, false).operand(2, x, CT::f32, false);
    d.operand(3, a, CT::f32, false).operand(4, v, CT::f32, false);
    if (has_w) d.operand(5, w, CT::f32, false);
    if (!eval) d.operand(6, DType::f32, CT::f32, false);
    d.flag("RELU_MASK", relu_mask).flag("SUM_PARTIALS", sum_partials).flag("POOL", pool);
    if (relu_mask) d.operand(7, y, CT::f32, false);  // (the mask: y's dtype, dx's)
    if (pool) d.operand(7, DType::i32, CT::i32, false);
    if (sum_partials) d.operand(8, DType::f32, CT::f32, true);
  }
  return d;
}

std::vector<BatchNormVariant> BatchNormVariant::space() {
  std::vector<BatchNormVariant> out;
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    auto add = [&](BatchNormVariant v) {
      v.in = v.x = v.y = v.w = v.b = v.rm = v.rv = dt;
      out.push_back(v);
    };
    for (const char* stage : {"BN_STATS", "BN_STATS_MERGE"})
      for (int f = 0; f < 8; ++f) {
        BatchNormVariant v;
        v.stage = stage, v.final = f & 1, v.has_rm = f & 2, v.has_rv = f & 4;
        if (!v.final && (v.has_rm || v.has_rv)) continue;
        add(v);
      }
    for (const char* stage : {"BN_NORM", "BN_DX"})
      for (int f = 0; f < 32; ++f) {
        BatchNormVariant v;
        v.stage = stage, v.rows = f & 1, v.eval = f & 2, v.has_w = f & 4, v.has_b = f & 8, v.relu = f & 16;
        if (is(stage, "BN_DX") && (v.has_b || v.relu)) continue;
        add(v);
        if (v.rows && !v.eval) {  // the merges in the kernel
          BatchNormVariant m = v;
          (is(stage, "BN_DX") ? m.sum_partials : m.merge_partials) = true;
          add(m);
          // with the running statistics both, or one (a stand-in bound for the other)
          if (m.merge_partials)
            for (int r = 1; r < 4; ++r) {
              m.has_rm = r & 1, m.has_rv = r & 2;
              add(m);
            }
        }
        if (!is(stage, "BN_DX")) continue;
        v.relu_mask = true;
        add(v);
        if (v.rows && !v.eval) {
          v.sum_partials = true;
          add(v);
        }
      }
    for (bool eval : {false, true})
      for (bool mask : {false, true}) {
        BatchNormVariant v;
        v.stage = "BN_GRAD_SUMS", v.eval = eval, v.relu_mask = mask;
        add(v);
      }
    BatchNormVariant merge;
    merge.stage = "BN_SUM_MERGE";
    add(merge);
    if (dt != DType::f32) continue;
    // the fused max pooling (f32 inputs only): its forward on the row grid, with or without
    // the merged partials, the ReLU, eval; its backward's sums and dx (both grids)
    for (int f = 0; f < 8; ++f) {
      BatchNormVariant v;
      v.stage = "BN_NORM", v.rows = true, v.pool = true, v.relu = f & 1, v.eval = f & 2, v.has_w = v.has_b = f & 4;
      add(v);
      if (v.eval) continue;
      v.merge_partials = v.has_rm = v.has_rv = true;
      add(v);
    }
    for (bool eval : {false, true}) {
      BatchNormVariant v;
      v.stage = "BN_GRAD_SUMS", v.eval = eval, v.pool = true;
      add(v);
      v.stage = "BN_DX", v.has_w = true, v.rows = true;  // (on BN_NORM's POOL grid)
      add(v);
      if (eval) continue;
      v.sum_partials = true;
      add(v);
    }
  }
  return out;
}

}  // namespace gltensor::detail
