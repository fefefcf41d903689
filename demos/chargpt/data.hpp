// The chargpt corpus: the fortune cookie files of Debian's `fortunes` package, as bytes, and
// random training windows of it.
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gltensor/gltensor.hpp"

namespace chargpt {

inline const std::string kFortunesDir = "/usr/share/games/fortunes";

/// Every regular file of `dir` whose name has no '.' (the cookie files, not their .dat indices or
/// .u8 links), sorted by name (bytewise, as `ls` in the C locale), concatenated; the first 90%
/// (int(n * 0.9) bytes, as the PyTorch reference) for training, the rest for validation.
struct Corpus {
  std::vector<std::string> files;
  std::vector<std::uint8_t> train, val;
};
/// Throws std::runtime_error naming the folder and the Debian package when it is missing or holds
/// no cookie file.
Corpus load_corpus(const std::string& dir);

/// B windows of T + 1 bytes at uniform random offsets in [0, size - T - 1): x = bytes [0, T),
/// y = bytes [1, T + 1), uploaded as int32 [B, T] each. Throws std::runtime_error if the split is
/// shorter than T + 2 bytes.
struct Batch {
  gltensor::Tensor x, y;
};
Batch random_batch(const gltensor::Device& dev, const std::vector<std::uint8_t>& data, std::int64_t B, std::int64_t T,
                   std::mt19937_64& rng);

}  // namespace chargpt
