#include "data.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace chargpt {
namespace fs = std::filesystem;

Corpus load_corpus(const std::string& dir) {
  const std::string missing = " (Debian package fortunes; bash .ci/install-deps installs it)";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw std::runtime_error(dir + ": folder not found" + missing);
  Corpus c;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.find('.') == std::string::npos && fs::is_regular_file(e.path(), ec)) c.files.push_back(name);
  }
  if (ec) throw std::runtime_error(dir + ": " + ec.message());
  std::sort(c.files.begin(), c.files.end());
  std::vector<std::uint8_t> all;
  for (const std::string& f : c.files) {
    std::ifstream in(dir + "/" + f, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + dir + "/" + f);
    all.insert(all.end(), std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (c.files.empty() || all.empty()) throw std::runtime_error(dir + ": no fortune cookie files" + missing);
  const auto n = static_cast<std::size_t>(static_cast<double>(all.size()) * 0.9);
  c.train.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n));
  c.val.assign(all.begin() + static_cast<std::ptrdiff_t>(n), all.end());
  return c;
}

Batch random_batch(const gltensor::Device& dev, const std::vector<std::uint8_t>& data, std::int64_t B, std::int64_t T,
                   std::mt19937_64& rng) {
  const auto n = static_cast<std::int64_t>(data.size());
  if (n < T + 2)
    throw std::runtime_error("a split of " + std::to_string(n) + " bytes is too short for windows of " +
                             std::to_string(T + 1));
  std::uniform_int_distribution<std::int64_t> start(0, n - T - 2);
  std::vector<std::int32_t> x(static_cast<std::size_t>(B * T)), y(x.size());
  for (std::int64_t b = 0; b < B; ++b) {
    const std::int64_t s = start(rng);
    for (std::int64_t t = 0; t < T; ++t) {
      x[b * T + t] = data[s + t];
      y[b * T + t] = data[s + t + 1];
    }
  }
  return {gltensor::Tensor::from_host(dev, std::span<const std::int32_t>(x), {B, T}),
          gltensor::Tensor::from_host(dev, std::span<const std::int32_t>(y), {B, T})};
}

}  // namespace chargpt
