// The Variant (runtime/variant.hpp) of glsl/nn/warp.comp (internal; warp_perspective in
// include/gltensor/image.hpp).
#pragma once
#include <vector>

#include "gltensor/dtype.hpp"
#include "runtime/variant.hpp"

namespace gltensor::detail {

/// warp.comp: CHANNELS (1..4), REVERSE (output channel c reads image channel CHANNELS - 1 - c),
/// CROP (crop_resize's bicubic crop then bilinear resize; with a uint8 image BYTES, OpenCV's 8-bit
/// arithmetic); the image's dtype (uint8 or float32).
struct WarpVariant {
  static constexpr const char* kFile = "warp.comp";
  int channels = 3;
  bool reverse = false, crop = false;
  DType image = DType::u8;
  Defines defines() const;
  static std::vector<WarpVariant> space();
};

}  // namespace gltensor::detail
