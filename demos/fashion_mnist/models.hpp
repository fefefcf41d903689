// The two Fashion-MNIST models of the dataset's benchmark table.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "gltensor/gltensor.hpp"

namespace demo {

/// "mlp": 784-256-128-10 with ReLU. "cnn": conv 1->32 (3x3, pad 1) + BN + ReLU + max-pool 2,
/// conv 32->64 (3x3, pad 1) + BN + ReLU + max-pool 2, FC 3136->128 + ReLU, dropout 0.25, FC 128->10.
/// Input [N, 1, 28, 28]; the mlp flattens it. replay: the dropout's masks drawn at an offset the
/// device advances (nn::Dropout::device_offset), for training steps replayed from a Recording.
std::shared_ptr<gltensor::nn::Sequential> make_model(const std::string& name, const gltensor::Device& dev,
                                                     gltensor::Generator& gen, bool replay = false);

/// Bytes of the largest buffer that one image of shape chw ([C, H, W]) needs in the model's
/// forward pass: a layer's float32 output, or a convolution's im2col columns (C*KH*KW x OH*OW per
/// image: gltensor's conv2d lowers to im2col + matmul). Knows Conv2d, MaxPool2d, Flatten and Linear;
/// other layers keep their input's shape.
std::int64_t forward_bytes_per_image(const gltensor::nn::Sequential& model, std::array<std::int64_t, 3> chw);

/// Images per forward pass such that no buffer of the pass exceeds the device's max SSBO block
/// size (Capabilities::max_ssbo_block_size), at most `cap`; at least 1.
std::int64_t images_per_pass(const gltensor::nn::Sequential& model, std::array<std::int64_t, 3> chw,
                             const gltensor::Device& dev, std::int64_t cap);

}  // namespace demo
