// Recurrent layers as ONNX defines them (LSTM, GRU, RNN), for the model runtime (internal):
// X @ W^T of every step in one matmul, then per step one batched matmul h @ R^T over the
// directions and one gate kernel (glsl/nn/rnn.comp; GRU without linear_before_reset: two matmuls
// and two gate stages). No read-back: the whole sequence is queued on the GPU.
#pragma once
#include <string>
#include <vector>

#include "gltensor/tensor.hpp"

namespace gltensor::detail {

enum class RnnCell { lstm, gru, rnn };

/// One activation of a direction, as ONNX names it (Sigmoid, Tanh, Relu, Affine, LeakyRelu,
/// ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus; any case).
struct RnnActivation {
  std::string name;
  double alpha = 0, beta = 0;
};

struct RnnSpec {
  RnnCell cell = RnnCell::lstm;
  int directions = 1;
  bool reverse0 = false;  ///< direction 0 runs backwards ("reverse")
  /// Per direction: LSTM f, g, h; GRU f, g; RNN f (direction 0's first, then direction 1's).
  std::vector<RnnActivation> acts;
  bool has_clip = false;
  double clip = 0;
  bool input_forget = false;         ///< LSTM
  bool linear_before_reset = false;  ///< GRU
  bool layout1 = false;              ///< X [B, T, I], Y [B, T, D, H], states [B, D, H]
};

struct RnnOutputs {
  Tensor y, y_h, y_c;
};

/// True if `name` is an activation the gate kernel has (case-insensitive).
bool rnn_activation_known(const std::string& name);
/// The default alpha and beta of an activation (ONNX Runtime's: LeakyRelu 0.01, HardSigmoid 0.2
/// and 0.5, Elu 1, ThresholdedRelu 1, Affine 1 and 0, ScaledTanh 1 and 1) and how many of them it
/// takes from activation_alpha / activation_beta.
void rnn_activation_defaults(const std::string& name, double& alpha, double& beta, bool& uses_alpha, bool& uses_beta);

/// x [T, B, I] (layout1: [B, T, I]), w [D, G H, I], r [D, G H, H], optional b [D, 2 G H],
/// seq_lens [B] (int32), h0 / c0 [D, B, H] (layout1: [B, D, H]), p [D, 3 H]. Float tensors of
/// any float dtype; outputs are float32.
RnnOutputs rnn_forward(const RnnSpec& spec, const Tensor& x, const Tensor& w, const Tensor& r, const Tensor& b,
                       const Tensor& seq_lens, const Tensor& h0, const Tensor& c0, const Tensor& p);

}  // namespace gltensor::detail
