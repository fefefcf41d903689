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
