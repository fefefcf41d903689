// Reads gzipped IDX files (the MNIST / Fashion-MNIST format: big-endian magic 0x00000803 for
// uint8 images [n, rows, cols], 0x00000801 for uint8 labels [n]).
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace demo {

struct Images {
  std::int64_t n = 0, rows = 0, cols = 0;
  std::vector<std::uint8_t> pixels;  // n * rows * cols
};

/// Throws std::runtime_error naming the file for a missing, truncated or malformed file.
Images read_idx_images(const std::string& path);
std::vector<std::uint8_t> read_idx_labels(const std::string& path);

}  // namespace demo
