// cnn34's pack tool: f32 matmul [M, K] x [K, N] (row-major operands) for each "M,N,K" argument,
// 20 calls untimed, then 3 x 100 calls back to back, one fence wait each (Device::synchronize);
// prints the best of the 3 per-call means in microseconds. Built against the branch's headers:
//   g++ -O2 -std=c++20 -Iinclude scripts/packs/cnn34/mm_shapes.cpp -Lbuild -lgltensor -o mm_shapes
#include <chrono>
#include <cstdio>
#include <string>

#include "gltensor/gltensor.hpp"

using namespace gltensor;

int main(int argc, char** argv) {
  Device dev = Device::open();
  Generator gen(3);
  for (int i = 1; i < argc; ++i) {
    long M = 0, N = 0, K = 0;
    if (std::sscanf(argv[i], "%ld,%ld,%ld", &M, &N, &K) != 3) return 2;
    Tensor a = randn(dev, {M, K}, gen), b = randn(dev, {K, N}, gen);
    Tensor c;
    for (int r = 0; r < 20; ++r) c = matmul(a, b);
    dev.synchronize();
    double best = 1e30;
    for (int round = 0; round < 3; ++round) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int r = 0; r < 100; ++r) c = matmul(a, b);
      dev.synchronize();
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 100);
    }
    std::printf("matmul %ld x %ld x %ld: %.1f us (%.2f TFLOP/s)\n", M, N, K, best * 1e6,
                2.0 * M * N * K / best * 1e-12);
  }
}
