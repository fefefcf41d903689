// Pool bytes a model's load holds (loose13): for each .onnx argument, the default device's pool
// statistics before Model::load (after Device::trim) and after its weight_bytes() (the uploads).
// g++ -std=c++20 -O1 -I include scripts/packs/loose13/pool_after_load.cpp -o /tmp/pool_after_load -L build
//   -lgltensor -Wl,-rpath,$PWD/build
// /tmp/pool_after_load .cache/models/ocr/ch_PP-OCRv4_rec_infer.onnx .cache/models/ocr/ch_PP-OCRv4_det_infer.onnx
#include <cstdio>

#include "gltensor/gltensor.hpp"
using namespace gltensor;
int main(int argc, char** argv) {
  Device dev = Device::open();
  for (int i = 1; i < argc; ++i) {
    dev.trim();
    PoolStats a = dev.pool_stats();
    Model m = Model::load(dev, argv[i]);
    std::size_t wb = m.weight_bytes();
    PoolStats b = dev.pool_stats();
    std::printf("%s: weight_bytes %zu; pool after load: allocated +%zu, in use +%zu, live buffers +%zu, cached +%zu\n",
                argv[i], wb, b.bytes_allocated - a.bytes_allocated, b.bytes_in_use - a.bytes_in_use,
                b.live_buffers - a.live_buffers, b.cached_buffers - a.cached_buffers);
  }
}
