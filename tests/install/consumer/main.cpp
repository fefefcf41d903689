// Uses an installed gltensor: prints "consumer ok: 30" when a device computes sum(x * x) of 1..4.
#include <gltensor/gltensor.hpp>
#include <gltensor/interop.hpp>

#include <cstdio>
#include <vector>

int main() {
  using namespace gltensor;
  Device dev = Device::open();
  Tensor x = Tensor::from_host(dev, std::vector<float>{1, 2, 3, 4}, {4});
  const float s = sum(x * x).item();
  interop::BufferRange r = interop::buffer_of(x);
  std::printf("consumer %s: %g (buffer %u)\n", s == 30.0f && r.size == 16 ? "ok" : "WRONG", s, r.buffer);
  return s == 30.0f ? 0 : 1;
}
