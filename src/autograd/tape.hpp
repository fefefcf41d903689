// The tape's node and per-tensor metadata (internal): recorded by autograd.cpp, walked by the
// backward pass in the ops layer (src/ops/backward.cpp).
#pragma once

#include <memory>
#include <vector>

#include "gltensor/autograd.hpp"

namespace gltensor::detail {

struct AutogradMeta;

struct Node {
  const char* name = "";
  std::vector<std::shared_ptr<AutogradMeta>> inputs;  // null where no grad flows
  std::vector<Shape> input_shapes;
  autograd::BackwardFn fn;
};

struct AutogradMeta {
  bool requires_grad = false;
  Tensor grad;                    // leaves
  std::shared_ptr<Node> grad_fn;  // non-leaves
};

}  // namespace gltensor::detail
