// Epilogue activations (activation.hpp).
#include "ops/activation.hpp"

#include <cstdio>

#include "gltensor/errors.hpp"
#include "gltensor/ops.hpp"

namespace gltensor {

Epilogue::Epilogue(Activation a) : act(a) {
  switch (a) {
    case Activation::leaky_relu:
      p0 = 0.01f;
      break;
    case Activation::hardsigmoid:
      p0 = 1.0f / 6.0f;
      p1 = 0.5f;
      break;
    case Activation::clip:
      p0 = 0;
      p1 = 6;
      break;
    default:
      break;
  }
}

std::string Epilogue::name() const {
  char buf[96];
  if (act == Activation::leaky_relu)
    std::snprintf(buf, sizeof buf, "leaky_relu(%g)", p0);
  else if (act == Activation::hardsigmoid || act == Activation::clip)
    std::snprintf(buf, sizeof buf, "%s(%g, %g)", detail::activation_name(act), p0, p1);
  else
    std::snprintf(buf, sizeof buf, "%s", detail::activation_name(act));
  std::string s = buf;
  if (affine()) {
    std::snprintf(buf, sizeof buf, "*%g+%g", scale, shift);
    s += buf;
  }
  return s;
}

Tensor apply_epilogue(const Tensor& z, const Epilogue& e) {
  detail::check_epilogue("apply_epilogue", e);
  if (!e.none() && z.defined() && !is_floating(z.dtype()))
    throw DTypeError(std::string("gltensor::apply_epilogue: ") + e.name() + " needs a floating tensor, got " +
                     dtype_name(z.dtype()));
  if (e.affine()) {
    Epilogue act = e;
    act.scale = 1, act.shift = 0;
    return add(mul(apply_epilogue(z, act), double(e.scale)), double(e.shift));
  }
  switch (e.act) {
    case Activation::none:
      return z;
    case Activation::relu:
      return relu(z);
    case Activation::gelu:
      return gelu(z);
    case Activation::gelu_tanh:
      return gelu(z, "tanh");
    case Activation::sigmoid:
      return sigmoid(z);
    case Activation::tanh:
      return tanh(z);
    case Activation::silu:
      return silu(z);
    case Activation::leaky_relu:
      return leaky_relu(z, e.p0);
    case Activation::hardsigmoid:
      return clamp(add(mul(z, double(e.p0)), double(e.p1)), 0.0, 1.0);
    case Activation::hardswish:
      return hardswish(z);
    case Activation::clip:
      return clamp(z, e.p0, e.p1);
    case Activation::log:
      return log(z);
    case Activation::square:
      return mul(z, z);
  }
  return z;
}

namespace detail {

void check_epilogue(const char* op, const Epilogue& e) {
  if (e.act == Activation::clip && e.p0 > e.p1)
    throw ValueError(std::string("gltensor::") + op + ": clip min " + std::to_string(e.p0) + " > max " +
                     std::to_string(e.p1));
}

std::string epilogue_glsl(Activation act, bool affine) {
  if (!affine) return activation_glsl(act);
  const std::string a = act == Activation::none ? "(x)" : activation_glsl(act);
  return "(" + a + " * u_act_scale + u_act_shift)";
}

void check_epilogue_act_only(const char* op, const Epilogue& e) {
  if (e.affine())
    throw ValueError(std::string("gltensor::") + op + ": the epilogue's scale and shift (" + e.name() +
                     ") are not supported here");
}

std::string activation_glsl(Activation act) {
  switch (act) {
    case Activation::none:
      return "";
    case Activation::relu:
      return "act_relu(x)";
    case Activation::gelu:
      return "act_gelu(x)";
    case Activation::gelu_tanh:
      return "act_gelu_tanh(x)";
    case Activation::sigmoid:
      return "act_sigmoid(x)";
    case Activation::tanh:
      return "act_tanh(x)";
    case Activation::silu:
      return "act_silu(x)";
    case Activation::leaky_relu:
      return "act_leaky_relu(x, u_act_p0)";
    case Activation::hardsigmoid:
      return "act_hardsigmoid(x, u_act_p0, u_act_p1)";
    case Activation::hardswish:
      return "act_hardswish(x)";
    case Activation::clip:
      return "act_clip(x, u_act_p0, u_act_p1)";
    case Activation::log:
      return "act_log(x)";
    case Activation::square:
      return "act_square(x)";
  }
  return "";
}

const char* activation_name(Activation act) {
  switch (act) {
    case Activation::none:
      return "none";
    case Activation::relu:
      return "relu";
    case Activation::gelu:
      return "gelu";
    case Activation::gelu_tanh:
      return "gelu_tanh";
    case Activation::sigmoid:
      return "sigmoid";
    case Activation::tanh:
      return "tanh";
    case Activation::silu:
      return "silu";
    case Activation::leaky_relu:
      return "leaky_relu";
    case Activation::hardsigmoid:
      return "hardsigmoid";
    case Activation::hardswish:
      return "hardswish";
    case Activation::clip:
      return "clip";
    case Activation::log:
      return "log";
    case Activation::square:
      return "square";
  }
  return "?";
}

}  // namespace detail
}  // namespace gltensor
