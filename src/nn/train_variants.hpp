// The Variants (runtime/variant.hpp) of the training kernels (internal): cross_entropy.comp
// (the row log-sum-exp forward and the fused backward) and optim.comp (the optimizers' steps).
#pragma once
#include <vector>

#include "gltensor/dtype.hpp"
#include "runtime/variant.hpp"

namespace gltensor::detail {

/// cross_entropy.comp: FORWARD (lse per row, MEAN: and the row mean), else the backward (d logits
/// from logits, lse, targets and class weights).
struct CrossEntropyVariant {
  static constexpr const char* kFile = "cross_entropy.comp";
  /// forward: the rows' log-sum-exp (and, with mean, their means); loss: the whole forward in one
  /// dispatch, per-sample terms or (reduce) their sum in one workgroup, divided by the rows kept
  /// (divide: the mean); count: the backward divides the upstream gradient by the rows kept.
  bool forward = false, mean = false, loss = false, reduce = false, divide = false, count = false;
  /// Backward: d logits, logits, lse, class weights; forward and loss: logits (x).
  DType out = DType::f32, x = DType::f32, lse = DType::f32, w = DType::f32;
  Defines defines() const;
  static std::vector<CrossEntropyVariant> space();
};

/// optim.comp: OPT by name (opt_sgd with MOMENTUM / NESTEROV, opt_adam with DECOUPLED weight
/// decay) over `tensors` parameter tensors per dispatch (their parameters and gradients, then the
/// flat states: two for Adam, one for SGD with momentum), all f32.
struct OptimVariant {
  static constexpr const char* kFile = "optim.comp";
  /// The most tensors one dispatch takes (optim.cpp plans fewer where the device binds fewer).
  static constexpr int kMaxTensors = 6;
  const char* opt = "opt_sgd";
  bool momentum = false, nesterov = false, decoupled = false;
  int tensors = 1;
  /// The flat state buffers the update reads and writes (0, 1 or 2).
  int states() const;
  Defines defines() const;
  static std::vector<OptimVariant> space();
};

}  // namespace gltensor::detail
