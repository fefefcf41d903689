// The training kernels' Variants (train_variants.hpp): defines and variant spaces.
#include "nn/train_variants.hpp"

namespace gltensor::detail {

Defines CrossEntropyVariant::defines() const {
  Defines d;
  if (loss) {
    d.flag("LOSS").flag("REDUCE", reduce).flag("DIVIDE", divide);
    d.operand(0, DType::f32, CT::f32, true).operand(1, x, CT::f32, false).operand(2, DType::i32, CT::i32, false);
    d.operand(3, DType::f32, CT::f32, true);
    if (reduce) d.operand(5, DType::f32, CT::f32, true);
  } else if (forward) {
    d.flag("FORWARD").flag("MEAN", mean);
    d.operand(0, DType::f32, CT::f32, true).operand(1, x, CT::f32, false);
    if (mean) d.operand(2, DType::f32, CT::f32, true);
  } else {
    d.flag("COUNT", count);
    d.operand(0, out, CT::f32, true).operand(1, x, CT::f32, false).operand(2, lse, CT::f32, false);
    d.operand(3, DType::i32, CT::i32, false).operand(4, w, CT::f32, false);
    if (count) d.operand(5, DType::f32, CT::f32, false);
  }
  return d;
}

std::vector<CrossEntropyVariant> CrossEntropyVariant::space() {
  std::vector<CrossEntropyVariant> out;
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    for (int f = 0; f < 4; ++f) {
      CrossEntropyVariant v;
      v.forward = f == 1 || f == 2, v.mean = f == 2, v.count = f == 3, v.out = v.x = v.w = dt;
      out.push_back(v);
    }
    for (int r = 0; r < 3; ++r) {  // per-sample terms, their sum, their mean
      CrossEntropyVariant v;
      v.loss = true, v.reduce = r > 0, v.divide = r == 2, v.x = dt;
      out.push_back(v);
    }
  }
  return out;
}

Defines OptimVariant::defines() const {
  Defines d;
  d.ident("OPT", opt).flag("MOMENTUM", momentum).flag("NESTEROV", nesterov).flag("DECOUPLED", decoupled);
  return d;
}

std::vector<OptimVariant> OptimVariant::space() {
  std::vector<OptimVariant> out;
  for (int f = 0; f < 3; ++f) {
    OptimVariant v;
    v.momentum = f > 0, v.nesterov = f == 2;
    out.push_back(v);
  }
  for (bool decoupled : {false, true}) {
    OptimVariant v;
    v.opt = "opt_adam", v.decoupled = decoupled;
    out.push_back(v);
  }
  return out;
}

}  // namespace gltensor::detail
