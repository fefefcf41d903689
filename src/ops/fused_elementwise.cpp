// Generated elementwise kernels (fused_elementwise.hpp): rendering and launch.
#include "ops/fused_elementwise.hpp"

#include <cstdio>
#include <cstring>

#include "ops/elementwise.hpp"
#include "runtime/guard.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor::detail {

namespace {

struct OpInfo {
  const char* name;  // for describe()
  int arity;         // step operands (input and constant: none)
  const char* fn;    // GLSL function of the step
};

OpInfo info(FusedOp op) {
  switch (op) {
    case FusedOp::input:
      return {"in", 0, ""};
    case FusedOp::constant:
      return {"const", 0, ""};
    case FusedOp::add:
      return {"add", 2, ""};
    case FusedOp::sub:
      return {"sub", 2, ""};
    case FusedOp::mul:
      return {"mul", 2, ""};
    case FusedOp::div:
      return {"div", 2, "f_div"};
    case FusedOp::neg:
      return {"neg", 1, "f_neg"};
    case FusedOp::abs:
      return {"abs", 1, "f_abs"};
    case FusedOp::exp:
      return {"exp", 1, "f_exp"};
    case FusedOp::erf:
      return {"erf", 1, "erf_f"};
    case FusedOp::relu:
      return {"relu", 1, "act_relu"};
    case FusedOp::sigmoid:
      return {"sigmoid", 1, "act_sigmoid"};
    case FusedOp::tanh:
      return {"tanh", 1, "act_tanh"};
    case FusedOp::hardswish:
      return {"hardswish", 1, "act_hardswish"};
    case FusedOp::leaky_relu:
      return {"leaky_relu", 1, "act_leaky_relu"};
    case FusedOp::clip:
      return {"clip", 1, "act_clip"};
    case FusedOp::muladd:
      return {"muladd", 3, ""};
  }
  return {"?", 0, ""};
}

// A float32 value exactly (NaN, Inf and -0 included): its bits.
std::string literal(float f) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  char buf[40];
  std::snprintf(buf, sizeof buf, "uintBitsToFloat(0x%08xu)", static_cast<unsigned>(bits));
  return buf;
}

std::string v(int k) {
  std::string s = "v";  // (not "v" + to_string: GCC 12's false -Wrestrict)
  s += std::to_string(k);
  return s;
}

[[noreturn]] void malformed(const FusedExpr& e, std::size_t k, const std::string& why) {
  throw ValueError("gltensor::fused_elementwise: step " + std::to_string(k) + " of " + e.describe() + ": " + why);
}

}  // namespace

std::string FusedExpr::describe() const {
  std::string s;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const FusedStep& st = steps[k];
    s += (k ? "; " : "") + v(static_cast<int>(k)) + " = " + info(st.op).name;
    if (st.op == FusedOp::input) {
      s += std::to_string(st.a);
    } else if (st.op == FusedOp::constant) {
      s += ' ';
      s += std::to_string(st.p0);
    } else {
      s += "(";
      const int args[3] = {st.a, st.b, st.c};
      for (int j = 0; j < info(st.op).arity; ++j) s += (j ? ", " : "") + v(args[j]);
      s += ")";
    }
    if (st.round_f16) s += " f16";
  }
  return s;
}

std::string render_fused_glsl(const FusedExpr& e) {
  if (e.steps.empty()) throw ValueError("gltensor::fused_elementwise: an expression with no steps");
  std::string s;
  for (std::size_t k = 0; k < e.steps.size(); ++k) {
    const FusedStep& st = e.steps[k];
    const OpInfo in = info(st.op);
    const int args[3] = {st.a, st.b, st.c};
    std::string a[3];
    for (int j = 0; j < in.arity; ++j) {
      if (args[j] < 0 || args[j] >= static_cast<int>(k))
        malformed(e, k, "operand " + v(args[j]) + " is not a step before");
      a[j] = v(args[j]);
    }
    std::string x;
    switch (st.op) {
      case FusedOp::input:
        if (st.a < 0 || st.a >= e.inputs) malformed(e, k, "input " + std::to_string(st.a) + " out of range");
        x = "load" + std::to_string(st.a + 1) + "(off[" + std::to_string(st.a + 1) + "])";
        break;
      case FusedOp::constant:
        x = literal(st.p0);
        break;
      case FusedOp::add:
        x = a[0] + " + " + a[1];
        break;
      case FusedOp::sub:
        x = a[0] + " - " + a[1];
        break;
      case FusedOp::mul:
        x = a[0] + " * " + a[1];
        break;
      case FusedOp::leaky_relu:
        x = std::string(in.fn) + "(" + a[0] + ", " + literal(st.p0) + ")";
        break;
      case FusedOp::clip:
        x = std::string(in.fn) + "(" + a[0] + ", " + literal(st.p0) + ", " + literal(st.p1) + ")";
        break;
      case FusedOp::muladd:  // ternary.comp's op_addcmul with u_p0 = 1
        x = a[0] + " + 1.0 * " + a[1] + " * " + a[2];
        break;
      default:
        x = std::string(in.fn) + "(" + a[0] + (in.arity > 1 ? ", " + a[1] : std::string()) + ")";
        break;
    }
    if (st.round_f16) x = "f_round_f16(" + x + ")";
    s += "PRECISE float " + v(static_cast<int>(k)) + " = " + x + "; ";
  }
  return s + "return CT0(" + v(static_cast<int>(e.steps.size()) - 1) + ");";
}

Tensor fused_elementwise(const char* op, const FusedExpr& e, const std::string& glsl, const std::vector<Tensor>& inputs,
                         DType out) {
  const std::string name = std::string("gltensor::") + op;
  if (inputs.empty() || static_cast<int>(inputs.size()) > kFusedMaxInputs ||
      static_cast<int>(inputs.size()) != e.inputs)
    throw ValueError(name + ": " + std::to_string(inputs.size()) + " inputs for an expression of " +
                     std::to_string(e.inputs) + " (at most " + std::to_string(kFusedMaxInputs) + ")");
  if (!is_floating(out)) throw DTypeError(name + ": the output dtype " + dtype_name(out) + " is not floating");
  Shape shape = inputs[0].shape();
  for (const Tensor& t : inputs) {
    check_defined(op, t);
    if (!is_floating(t.dtype()))
      throw DTypeError(name + ": input " + t.repr() + " is not floating (fused expressions compute in float)");
    check_same_device(op, {&inputs[0], &t});
    shape = broadcast_shapes(op, shape, t.shape());
  }
  while (static_cast<int>(shape.size()) < e.min_rank) shape.insert(shape.begin(), 1);
  Enter guard(dev_of(inputs[0]), op);
  Tensor r = alloc(dev_of(inputs[0]), shape, out, op);
  Elementwise el;
  el.op = op, el.kernel = ElementwiseKernel::fused, el.fn = glsl;
  launch_elementwise(el, r, inputs);
  return r;
}

}  // namespace gltensor::detail
