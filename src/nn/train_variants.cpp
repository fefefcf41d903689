// The training kernels' Variants (train_variants.hpp): defines and variant spaces.
#include "nn/train_variants.hpp"

#include <string>

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

namespace {
// optim.comp's operand selectors: `k == 0u ? load0(min(j, u_end[0u] - 1u)) : k == 1u ?
// load2(min(j, u_end[1u] - u_end[0u] - 1u)) : ...` over K tensors (`first` 0: parameters; 1:
// gradients, each from its offset u_grad_off[q]): every load's index inside its own tensor (its
// last element from the grid's ends, constant indices), whichever k is (see optim.comp).
std::string select_load(int K, int first) {
  std::string s = "(";
  for (int k = 0; k < K; ++k) {
    const std::string q = std::to_string(k) + "u";
    const std::string last = "u_end[" + q + "]" + (k > 0 ? " - u_end[" + std::to_string(k - 1) + "u]" : "") + " - 1u";
    const std::string index = "min(j, " + last + ")" + (first ? " + u_grad_off[" + q + "]" : "");
    const std::string load = "float(load" + std::to_string(2 * k + first) + "(" + index + "))";
    s += k + 1 < K ? "(k) == " + q + " ? " + load + " : " : load;
  }
  return s + ")";
}
std::string load_params(int K) { return select_load(K, 0); }
std::string load_grads(int K) { return select_load(K, 1); }
std::string store_params(int K) {
  std::string s = "{";
  for (int k = 0; k < K; ++k) {
    const std::string store = "store" + std::to_string(2 * k) + "(j, CT" + std::to_string(2 * k) + "(v));";
    s += k + 1 < K ? " if ((k) == " + std::to_string(k) + "u) " + store + " else" : " " + store;
  }
  return s + " }";
}
std::string load_state(int n) { return "float(load" + std::to_string(n) + "(s))"; }
std::string store_state(int n) { return "store" + std::to_string(n) + "(s, CT" + std::to_string(n) + "(v))"; }
}  // namespace

int OptimVariant::states() const { return std::string(opt) == "opt_adam" ? 2 : momentum ? 1 : 0; }

Defines OptimVariant::defines() const {
  Defines d;
  d.ident("OPT", opt).flag("MOMENTUM", momentum).flag("NESTEROV", nesterov).flag("DECOUPLED", decoupled);
  d.value("K", tensors);
  for (int k = 0; k < tensors; ++k)
    d.operand(2 * k, DType::f32, CT::f32, true).operand(2 * k + 1, DType::f32, CT::f32, false);
  const int n = states();
  for (int i = 0; i < n; ++i) d.operand(2 * tensors + i, DType::f32, CT::f32, true);
  d.macro("LOAD_P(k, j)", load_params, tensors).macro("LOAD_G(k, j)", load_grads, tensors);
  d.macro("STORE_P(k, j, v)", store_params, tensors);
  if (n > 0) d.macro("LOAD_S1(s)", load_state, 2 * tensors).macro("STORE_S1(s, v)", store_state, 2 * tensors);
  if (n > 1) d.macro("LOAD_S2(s)", load_state, 2 * tensors + 1).macro("STORE_S2(s, v)", store_state, 2 * tensors + 1);
  return d;
}

std::vector<OptimVariant> OptimVariant::space() {
  std::vector<OptimVariant> out;
  for (int tensors : {1, 2, kMaxTensors}) {
    for (int f = 0; f < 3; ++f) {
      OptimVariant v;
      v.momentum = f > 0, v.nesterov = f == 2, v.tensors = tensors;
      out.push_back(v);
    }
    for (bool decoupled : {false, true}) {
      OptimVariant v;
      v.opt = "opt_adam", v.decoupled = decoupled, v.tensors = tensors;
      out.push_back(v);
    }
  }
  return out;
}

}  // namespace gltensor::detail
