// Activations shared by the unary ops (unary.comp: op_<name>) and the fused epilogues of the
// matmul kernels (matmul.glsl: ACT(x)), so that both compute the same function. PyTorch / ONNX
// semantics; NaN propagates.
float act_relu(float x) { return (x > 0.0 || is_nan(x)) ? x : 0.0; }
float act_gelu(float x) { return 0.5 * x * (1.0 + erf_f(x * 0.7071067811865476)); }
float act_gelu_tanh(float x) { return 0.5 * x * (1.0 + tanh_f(0.7978845608028654 * (x + 0.044715 * x * x * x))); }
float act_sigmoid(float x) { return 1.0 / (1.0 + exp(-x)); }
float act_tanh(float x) { return tanh_f(x); }
float act_silu(float x) { return x / (1.0 + exp(-x)); }
float act_leaky_relu(float x, float slope) { return x > 0.0 ? x : x * slope; }
// ONNX HardSigmoid: clamp(alpha x + beta, 0, 1) (torch.nn.Hardsigmoid: alpha 1/6, beta 1/2).
float act_hardsigmoid(float x, float alpha, float beta) { return is_nan(x) ? x : clamp(alpha * x + beta, 0.0, 1.0); }
float act_hardswish(float x) { return x * clamp(x + 3.0, 0.0, 6.0) / 6.0; }
float act_clip(float x, float lo, float hi) { return is_nan(x) ? x : min(max(x, lo), hi); }
// ONNX Log (unary.comp's op_log): log(0) = -inf, log(x < 0) = NaN, log(inf) = inf.
float act_log(float x) {
  if (is_nan(x) || x < 0.0) return F_NAN;
  if (x == 0.0) return -F_INF;
  if (is_inf(x)) return x;
  return log(x);
}
float act_square(float x) { return x * x; }
// The activation of gltensor::Activation's code (0 none, 1 relu, 2 gelu, 3 gelu_tanh, 4 sigmoid,
// 5 tanh, 6 silu, 7 leaky_relu(p0), 8 hardsigmoid(p0, p1), 9 hardswish, 10 clip(p0, p1), 11 log,
// 12 square), for
// kernels that take it as a uniform (fused_mlp.comp's layers, squeeze_excite.comp).
float act_by_code(uint code, float x, float p0, float p1) {
  switch (code) {
    case 1u:
      return act_relu(x);
    case 2u:
      return act_gelu(x);
    case 3u:
      return act_gelu_tanh(x);
    case 4u:
      return act_sigmoid(x);
    case 5u:
      return act_tanh(x);
    case 6u:
      return act_silu(x);
    case 7u:
      return act_leaky_relu(x, p0);
    case 8u:
      return act_hardsigmoid(x, p0, p1);
    case 9u:
      return act_hardswish(x);
    case 10u:
      return act_clip(x, p0, p1);
    case 11u:
      return act_log(x);
    case 12u:
      return act_square(x);
    default:
      return x;
  }
}
