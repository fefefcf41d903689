// Random numbers on the GPU: counter-based Philox4x32-10 (Salmon et al., SC 2011). A Generator is
// a (seed, offset) pair; each call draws from counters at the current offset and advances it, so
// a seed reproduces the same stream on every device and driver.
#pragma once
#include <cstdint>

#include "gltensor/tensor.hpp"

namespace gltensor {

class Generator {
 public:
  explicit Generator(std::uint64_t seed = 0) : seed_(seed) {}
  void manual_seed(std::uint64_t seed) {
    seed_ = seed;
    offset_ = 0;
  }
  std::uint64_t seed() const { return seed_; }
  std::uint64_t offset() const { return offset_; }
  /// The offset for the next draw (each draw uses its own offset word, so draws never overlap).
  std::uint64_t next_offset() { return offset_++; }

 private:
  std::uint64_t seed_ = 0, offset_ = 0;
};

/// Uniform in [low, high).
Tensor rand(const Device& dev, const Shape& shape, Generator& gen, double low = 0.0, double high = 1.0,
            DType dtype = DType::f32);
/// Normal(mean, std).
Tensor randn(const Device& dev, const Shape& shape, Generator& gen, double mean = 0.0, double std = 1.0,
             DType dtype = DType::f32);
/// 1 with probability p, else 0 (dtype of the result: f32 unless given).
Tensor bernoulli(const Device& dev, const Shape& shape, double p, Generator& gen, DType dtype = DType::f32);
/// Inverted dropout: zeroes each element with probability p and scales the rest by 1 / (1 - p).
/// Identity when p == 0. ValueError unless 0 <= p < 1. Any shape and dtype (an integer x gives
/// f32). Differentiable for floating x: the backward draws the same mask again from the same
/// counters (grad * mask / (1 - p); no mask tensor is kept).
Tensor dropout(const Tensor& x, double p, Generator& gen);
/// The same with the draw's offset also advanced on the device: `offset`'s value v (an int32
/// tensor of one element on x's device, read as unsigned when the kernel runs) is added to the
/// high 32 bits of the generator's next offset o (the draw at o + v * 2^32). A dropout captured in
/// a Recording then draws a new mask per replay where the tensor's value changes between replays
/// (nn::Dropout's device_offset advances its own), and never the mask of a draw of another
/// (o, v): eager draws (a new o) and replays (a new v) of one generator do not repeat a mask. The
/// backward uses the v its forward read (kept in a one-element tensor), whatever offset holds
/// when it runs. DTypeError unless offset
/// is int32, ShapeError unless it has one element, ValueError for another device and as above.
Tensor dropout(const Tensor& x, double p, Generator& gen, const Tensor& offset);

}  // namespace gltensor
