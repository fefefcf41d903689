// Epilogues of matmul/linear/conv2d: the kernel-fused activations, and the ONNX activations the
// kernel does not have yet (clip, hardsigmoid, hardswish, leaky_relu) as elementwise ops after it.
#include <cmath>

#include "gltensor/errors.hpp"
#include "gltensor/linalg.hpp"
#include "gltensor/ops.hpp"

namespace gltensor {

using K = Epilogue::Kind;

Epilogue::Epilogue(Activation a) {
  switch (a) {
    case Activation::none:
      kind = K::none;
      break;
    case Activation::relu:
      kind = K::relu;
      break;
    case Activation::gelu:
      kind = K::gelu;
      break;
    case Activation::gelu_tanh:
      kind = K::gelu_tanh;
      break;
    case Activation::sigmoid:
      kind = K::sigmoid;
      break;
    case Activation::tanh:
      kind = K::tanh;
      break;
    case Activation::silu:
      kind = K::silu;
      break;
  }
}

Activation Epilogue::kernel_activation() const {
  switch (kind) {
    case K::relu:
      return Activation::relu;
    case K::gelu:
      return Activation::gelu;
    case K::gelu_tanh:
      return Activation::gelu_tanh;
    case K::sigmoid:
      return Activation::sigmoid;
    case K::tanh:
      return Activation::tanh;
    case K::silu:
      return Activation::silu;
    case K::clip:  // clip(0, +inf) is relu
      return p0 == 0 && std::isinf(p1) && p1 > 0 ? Activation::relu : Activation::none;
    default:
      return Activation::none;
  }
}

std::string Epilogue::name() const {
  auto num = [](double v) {
    std::string s = std::to_string(v);
    while (s.size() > 1 && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  };
  switch (kind) {
    case K::none:
      return "none";
    case K::relu:
      return "relu";
    case K::gelu:
      return "gelu";
    case K::gelu_tanh:
      return "gelu_tanh";
    case K::sigmoid:
      return "sigmoid";
    case K::tanh:
      return "tanh";
    case K::silu:
      return "silu";
    case K::clip:
      return "clip(" + num(p0) + ", " + num(p1) + ")";
    case K::hardsigmoid:
      return "hardsigmoid(" + num(p0) + ", " + num(p1) + ")";
    case K::hardswish:
      return "hardswish";
    case K::leaky_relu:
      return "leaky_relu(" + num(p0) + ")";
  }
  return "?";
}

namespace {
void check_epilogue(const char* op, const Epilogue& e) {
  if (e.kind == K::clip && e.p0 > e.p1)
    throw ValueError(std::string("gltensor::") + op + ": clip epilogue with min " + std::to_string(e.p0) + " > max " +
                     std::to_string(e.p1));
}
}  // namespace

Tensor apply_epilogue(const Tensor& x, const Epilogue& e) {
  check_epilogue("apply_epilogue", e);
  if (e.kind != K::none && x.defined() && !is_floating(x.dtype()))
    throw DTypeError(std::string("gltensor::apply_epilogue: ") + e.name() + " needs a floating tensor, got " +
                     dtype_name(x.dtype()));
  switch (e.kind) {
    case K::none:
      return x;
    case K::relu:
      return relu(x);
    case K::gelu:
      return gelu(x);
    case K::gelu_tanh:
      return gelu(x, "tanh");
    case K::sigmoid:
      return sigmoid(x);
    case K::tanh:
      return tanh(x);
    case K::silu:
      return silu(x);
    case K::clip:
      if (std::isinf(e.p0) && e.p0 < 0) return std::isinf(e.p1) ? x : clamp_max(x, e.p1);
      if (std::isinf(e.p1) && e.p1 > 0) return clamp_min(x, e.p0);
      return clamp(x, e.p0, e.p1);
    case K::hardsigmoid:
      // clamp(a x + b, 0, 1) = torch.hardsigmoid(6 a x + 6 b - 3)
      if (std::fabs(e.p0 - 1.0 / 6.0) < 1e-7 && e.p1 == 0.5) return hardsigmoid(x);
      if (e.p1 == 0.5) return hardsigmoid(mul(x, 6.0 * e.p0));
      return clamp(add(mul(x, e.p0), e.p1), 0.0, 1.0);
    case K::hardswish:
      return hardswish(x);
    case K::leaky_relu:
      return leaky_relu(x, e.p0);
  }
  return x;
}

Tensor matmul_fused(const Tensor& a, const Tensor& b, const Tensor& addend, double alpha, double beta,
                    const Epilogue& e) {
  check_epilogue("matmul_fused", e);
  const Activation k = e.kernel_activation();
  if (k != Activation::none || e.kind == K::none) return matmul_fused(a, b, addend, alpha, beta, k);
  if (e.kind == K::hardsigmoid && e.p1 == 0.5) {
    // clamp(a y + 0.5, 0, 1) = torch.hardsigmoid(6 a y): the scale goes into alpha and beta.
    const double s = 6.0 * e.p0;
    return hardsigmoid(matmul_fused(a, b, addend, alpha * s, beta * s, Activation::none));
  }
  return apply_epilogue(matmul_fused(a, b, addend, alpha, beta, Activation::none), e);
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const Epilogue& e) {
  check_epilogue("linear", e);
  const Activation k = e.kernel_activation();
  if (k != Activation::none || e.kind == K::none) return linear(x, weight, bias, k);
  return apply_epilogue(linear(x, weight, bias, Activation::none), e);
}

}  // namespace gltensor
