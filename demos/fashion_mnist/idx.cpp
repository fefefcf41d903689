#include "idx.hpp"

#include <zlib.h>

#include <filesystem>

namespace demo {
namespace {

struct GzFile {
  gzFile f;
  std::string path;
  explicit GzFile(const std::string& p) : f(gzopen(p.c_str(), "rb")), path(p) {
    if (!std::filesystem::exists(p))
      throw std::runtime_error(
          p + ": file not found (install the Debian package dataset-fashion-mnist, or pass --data DIR)");
    if (!f) throw std::runtime_error(p + ": cannot open");
  }
  ~GzFile() {
    if (f) gzclose(f);
  }
  void read(void* dst, std::size_t n) {
    const int got = gzread(f, dst, static_cast<unsigned>(n));
    if (got < 0 || static_cast<std::size_t>(got) != n)
      throw std::runtime_error(path + ": truncated or not a gzip file (wanted " + std::to_string(n) + " bytes, got " +
                               std::to_string(got < 0 ? 0 : got) + ")");
  }
  std::uint32_t be32() {
    unsigned char b[4];
    read(b, 4);
    return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) | b[3];
  }
};

}  // namespace

Images read_idx_images(const std::string& path) {
  GzFile f(path);
  const std::uint32_t magic = f.be32();
  if (magic != 0x00000803u)
    throw std::runtime_error(path + ": not an IDX image file (magic " + std::to_string(magic) + ")");
  Images im;
  im.n = f.be32();
  im.rows = f.be32();
  im.cols = f.be32();
  if (im.n <= 0 || im.rows <= 0 || im.cols <= 0 || im.rows * im.cols > 1 << 20)
    throw std::runtime_error(path + ": implausible dimensions");
  im.pixels.resize(static_cast<std::size_t>(im.n * im.rows * im.cols));
  f.read(im.pixels.data(), im.pixels.size());
  return im;
}

std::vector<std::uint8_t> read_idx_labels(const std::string& path) {
  GzFile f(path);
  const std::uint32_t magic = f.be32();
  if (magic != 0x00000801u)
    throw std::runtime_error(path + ": not an IDX label file (magic " + std::to_string(magic) + ")");
  std::vector<std::uint8_t> labels(f.be32());
  f.read(labels.data(), labels.size());
  for (auto l : labels)
    if (l > 9) throw std::runtime_error(path + ": label " + std::to_string(l) + " out of range 0..9");
  return labels;
}

}  // namespace demo
