// Positive control for loose17's temporary assertion: an upload into a buffer that a dispatch of
// the open batch wrote must reach Storage::upload's barrier (and so abort with the assertion lib).
#include <cstdio>
#include <vector>

#include "gltensor/gltensor.hpp"
#include "runtime/guard.hpp"
#include "runtime/storage.hpp"
#include "tensor/tensor_impl.hpp"
using namespace gltensor;
int main() {
  Device dev = Device::open();
  Tensor x = Tensor::from_host(dev, std::vector<float>(64, 1.0f), {64});
  Tensor y = x * 3.0;  // written in the open batch
  std::vector<float> h(64, 2.0f);
  {
    detail::Enter entry(*dev.impl(), "control");
    y.impl()->storage->upload(h.data(), h.size() * 4);
  }
  std::printf("control: upload returned, y[0] = %g\n", static_cast<double>(y.to_vector()[0]));
  return 0;
}
