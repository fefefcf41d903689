// The two Fashion-MNIST models of the dataset's benchmark table.
#pragma once
#include <memory>
#include <string>

#include "gltensor/gltensor.hpp"

namespace demo {

/// "mlp": 784-256-128-10 with ReLU. "cnn": conv 1->32 (3x3, pad 1) + BN + ReLU + max-pool 2,
/// conv 32->64 (3x3, pad 1) + BN + ReLU + max-pool 2, FC 3136->128 + ReLU, dropout 0.25, FC 128->10.
/// Input [N, 1, 28, 28]; the mlp flattens it.
std::shared_ptr<gltensor::nn::Sequential> make_model(const std::string& name, const gltensor::Device& dev,
                                                     gltensor::Generator& gen);

}  // namespace demo
