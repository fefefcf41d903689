// e2e_calls.cpp: the GL calls of issue 21's end-to-end path (Tensor::from_host, Model::run,
// to_vector) per run and per phase, under scripts/packs/e2e3/gl_count.c (LD_PRELOAD). Build, from
// the repo root with a Release build in build/:
//   c++ -std=c++20 -O2 -Iinclude -Isrc scripts/packs/e2e3/e2e_calls.cpp -Lbuild -lgltensor -ldl -o /tmp/e2e_calls
//   cc -O2 -shared -fPIC -o /tmp/libgl_count.so scripts/packs/e2e3/gl_count.c -ldl
//   LD_PRELOAD=/tmp/libgl_count.so LD_LIBRARY_PATH=build /tmp/e2e_calls /tmp/three_gemm.onnx [runs]
// (the model: gltensor_model_bench --save-model /tmp/three_gemm.onnx).
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "gltensor/gltensor.hpp"

using namespace gltensor;

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 100;
  using Dump = void (*)(const char*, int);
  using Total = unsigned long long (*)();
  const auto dump = reinterpret_cast<Dump>(dlsym(RTLD_DEFAULT, "e2e3_gl_dump"));
  const auto total = reinterpret_cast<Total>(dlsym(RTLD_DEFAULT, "e2e3_gl_total"));
  if (!dump || !total) {
    std::fprintf(stderr, "run under LD_PRELOAD=libgl_count.so\n");
    return 2;
  }
  Device dev = Device::open();
  for (bool replay : {false, true}) {
    ModelOptions o;
    o.replay = replay;
    Model model = Model::load(dev, argv[1], o);
    std::map<std::string, std::vector<float>> host;
    for (const auto& vi : model.inputs()) {
      std::int64_t n = 1;
      for (auto d : vi.shape) n *= d;
      host[vi.name].assign(static_cast<std::size_t>(n), 0.5f);
    }
    const auto e2e = [&](unsigned long long* phase) {
      const unsigned long long c0 = total();
      std::map<std::string, Tensor> in;
      for (const auto& vi : model.inputs()) in[vi.name] = Tensor::from_host(dev, host[vi.name], vi.shape);
      const unsigned long long c1 = total();
      auto out = model.run(in);
      const unsigned long long c2 = total();
      for (auto& [name, y] : out) (void)y.to_vector();
      const unsigned long long c3 = total();
      if (phase) phase[0] += c1 - c0, phase[1] += c2 - c1, phase[2] += c3 - c2;
    };
    for (int i = 0; i < 5; ++i) e2e(nullptr);  // warm-up (and the capture, replayed)
    dump("warm-up", 1);
    unsigned long long phase[3] = {0, 0, 0};
    for (int i = 0; i < runs; ++i) e2e(phase);
    dump(replay ? "e2e, replayed" : "e2e, plain", runs);
    std::printf("  per phase: from_host %.2f, Model::run %.2f, to_vector %.2f\n", double(phase[0]) / runs,
                double(phase[1]) / runs, double(phase[2]) / runs);
  }
  return 0;
}
