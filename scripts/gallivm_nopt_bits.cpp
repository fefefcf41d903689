// The output bytes of a few kernels and ONNX models on fixed inputs, written to one file: run
// twice, with and without Mesa's GALLIVM_PERF=nopt (llvmpipe: no LLVM optimisation passes, LLVM's
// -O0 code generator), and the two files compared: scripts/gallivm_nopt_bits.sh builds and runs it
// (tests/CMakeLists.txt gives some ctest entries nopt; bench/RESULTS.md, 2026-11-27: identical).
// Usage: nopt_bits OUT [MODEL.onnx N,C,H,W]... (each model's only input is "x", random values)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include "gltensor/gltensor.hpp"

using namespace gltensor;

namespace {

std::vector<float> normal(std::size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

void dump(FILE* f, const char* name, const Tensor& t) {
  const auto v = t.to_vector();
  std::fprintf(f, "%s %zu\n", name, v.size());
  std::fwrite(v.data(), sizeof(float), v.size(), f);
  std::fputc('\n', f);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc % 2 != 0) {
    std::fprintf(stderr, "usage: %s OUT [MODEL.onnx N,C,H,W]...\n", argv[0]);
    return 2;
  }
  Device dev = Device::open();
  FILE* f = std::fopen(argv[1], "wb");
  if (!f) return 1;
  // Rows from a GEMV's few to several 64-row tiles with edges.
  for (std::int64_t rows : {7, 64, 200, 513}) {
    const Tensor a = Tensor::from_host(dev, normal(rows * 300, 1), {rows, 300});
    const Tensor b = Tensor::from_host(dev, normal(300 * 97, 2), {300, 97});
    dump(f, "matmul", matmul(a, b));
    dump(f, "softmax", softmax(a, 1));
    dump(f, "gelu", gelu(a));
    dump(f, "layer_norm", layer_norm(a, 1));
  }
  const Tensor x = Tensor::from_host(dev, normal(2 * 8 * 33 * 29, 3), {2, 8, 33, 29});
  const Tensor w = Tensor::from_host(dev, normal(16 * 8 * 9, 4), {16, 8, 3, 3});
  dump(f, "conv2d", conv2d(x, w));
  const Tensor q = Tensor::from_host(dev, normal(2 * 4 * 70 * 32, 5), {2, 4, 70, 32});
  const Tensor k = Tensor::from_host(dev, normal(2 * 4 * 90 * 32, 6), {2, 4, 90, 32});
  const Tensor v = Tensor::from_host(dev, normal(2 * 4 * 90 * 32, 7), {2, 4, 90, 32});
  dump(f, "scaled_dot_product_attention", scaled_dot_product_attention(q, k, v, AttentionOptions{}));
  for (int i = 2; i + 1 < argc; i += 2) {
    Shape shape;
    std::size_t n = 1;
    for (char* p = std::strtok(argv[i + 1], ","); p; p = std::strtok(nullptr, ",")) {
      shape.push_back(std::atoll(p));
      n *= static_cast<std::size_t>(shape.back());
    }
    const Model m = Model::load(dev, argv[i]);
    auto in = normal(n, 8);
    for (auto& e : in) e *= 0.5f;
    dump(f, argv[i], m.run({{"x", Tensor::from_host(dev, in, shape)}}).begin()->second);
  }
  return std::fclose(f) == 0 ? 0 : 1;
}
