// NumPy .npy files <-> gltensor tensors, through xtensor's xnpy (Debian libxtensor-dev).
// Read: float32, float64 (-> float32), int32, int64 (-> int32, values must fit), uint8, bool.
// Write: floating tensors as float32, int32 as int32, uint8 and bool as such (C order).
#pragma once
#include <string>
#include <vector>

#include "gltensor/gltensor.hpp"

namespace gltensor::npy {

/// Throws std::runtime_error naming the file for unreadable files and unsupported dtypes.
Tensor read(const Device& dev, const std::string& path);
/// The float32 values of a .npy file (any numeric dtype) and its shape.
std::vector<float> read_floats(const std::string& path, Shape& shape);
void write(const std::string& path, const Tensor& t);
void write_floats(const std::string& path, const std::vector<float>& v, const Shape& shape);

}  // namespace gltensor::npy
