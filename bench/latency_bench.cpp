// Latency floor of a device through gltensor (issue 21: the three-Gemm model end to end in 50 us):
// a fence round trip with nothing pending, one and several dependent tiny dispatches waited for, a
// read-back, an upload + dispatch + read-back, and the CPU cost of a tiny op. Ten independent
// dispatches (no barrier between them) against ten dependent ones give the barriers' share.
// GLTENSOR_STAGING=copy|persistent selects the host transfers' staging (README). Times in us per
// iteration (mean of 2000 after 50 warm-up iterations). A read-back of a finished tensor alone and with a
// synchronize() after it give what the read leaves for synchronize (nothing: its fence clears the transfer note).
//   gltensor_latency_bench
#include <chrono>
#include <cstdio>
#include <vector>

#include "gltensor/gltensor.hpp"

using namespace gltensor;
using Clock = std::chrono::steady_clock;

template <typename F>
double us_per(int n, F f) {
  for (int i = 0; i < 50; ++i) f();
  const auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) f();
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / n;
}

int main() {
  Device dev = Device::open();
  std::printf("device: %s\n", dev.adapter().renderer.c_str());
  Generator g(1);
  Tensor a = rand(dev, {64}, g), b = rand(dev, {64}, g);
  std::vector<float> host(34 * 96, 0.5f);
  const int n = 2000;
  std::printf("synchronize, nothing pending:            %8.2f us\n", us_per(n, [&] { dev.synchronize(); }));
  std::printf("1 add [64] + synchronize:                %8.2f us\n", us_per(n, [&] {
                Tensor c = add(a, b);
                dev.synchronize();
              }));
  std::printf("3 chained adds [64] + synchronize:       %8.2f us\n", us_per(n, [&] {
                Tensor c = add(add(add(a, b), b), b);
                dev.synchronize();
              }));
  std::printf("10 chained adds [64] + synchronize:      %8.2f us\n", us_per(n, [&] {
                Tensor c = a;
                for (int i = 0; i < 10; ++i) c = add(c, b);
                dev.synchronize();
              }));
  std::printf("10 independent adds [64] + synchronize: %8.2f us\n", us_per(n, [&] {
                std::vector<Tensor> c;
                for (int i = 0; i < 10; ++i) c.push_back(add(a, b));
                dev.synchronize();
              }));
  std::printf("1 add [64] + to_vector:                  %8.2f us\n", us_per(n, [&] { (void)add(a, b).to_vector(); }));
  // A read-back of a finished tensor waits for a fence after its copy; a synchronize() right after it has nothing
  // left to wait for (before rt40 it made one more fence round trip).
  Tensor done = add(a, b);
  dev.synchronize();
  std::printf("to_vector [64], finished:                %8.2f us\n", us_per(n, [&] { (void)done.to_vector(); }));
  std::printf("to_vector [64], finished + synchronize:  %8.2f us\n", us_per(n, [&] {
                (void)done.to_vector();
                dev.synchronize();
              }));
  std::printf("upload [34x96] + add + to_vector:        %8.2f us\n", us_per(n, [&] {
                Tensor x = Tensor::from_host(dev, host, {34, 96});
                (void)add(x, x).to_vector();
              }));
  std::printf("1000 adds [64], no sync (per add, CPU):  %8.2f us\n", us_per(20, [&] {
                                                                       Tensor c = a;
                                                                       for (int i = 0; i < 1000; ++i) c = add(c, b);
                                                                     }) / 1000);
  dev.synchronize();
  return 0;
}
