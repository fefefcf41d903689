// readback_probe.cpp: where issue 21's to_vector waits, with host timestamps (loose14). The
// three-Gemm model end to end as the bench's e2e loop (Tensor::from_host, Model::run, read back),
// the read-back taken apart as read_to_host does it (runtime/readback.cpp: Queue::barrier_for_copy,
// the copy into the mapped read buffer, the batch end's fence, the wait, the memcpy) with a
// timestamp after each step and the moment the fence is first seen signaled (polled 1 us apart),
// in variants that drop or move one step (timing only: "no barrier" may read stale values):
//   lib       as read_to_host (one barrier, copy, fence);
//   nocopy    barrier and fence, no copy (the kernel and the fence alone);
//   nobarrier copy and fence without the barrier;
//   early     a glFlush at the end of Model::run's phase (the dispatch submitted before to_vector);
//   plain     y.to_vector() itself (the library's path, one timestamp).
// Build from the repo root with a Release build in build/:
//   c++ -std=c++20 -O2 -Iinclude -Isrc -Ibuild/generated scripts/packs/loose14/readback_probe.cpp
//       -Lbuild -lgltensor -lEGL -lGLESv2 -o /tmp/readback_probe
//   LD_LIBRARY_PATH=build /tmp/readback_probe /tmp/three_gemm.onnx [runs]
// (the model: gltensor_model_bench --save-model /tmp/three_gemm.onnx).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "gltensor/gltensor.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/guard.hpp"
#include "runtime/host_staging.hpp"
#include "runtime/storage.hpp"
#include "tensor/tensor_impl.hpp"

using namespace gltensor;
using Clock = std::chrono::steady_clock;

namespace {

double us(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 500;
  Device dev = Device::open();
  detail::DeviceImpl& impl = *dev.impl();
  for (bool replay : {false, true}) {
    ModelOptions o;
    o.replay = replay;
    Model model = Model::load(dev, argv[1], o);
    const ValueInfo& vi = model.inputs().at(0);
    std::int64_t n = 1;
    for (auto d : vi.shape) n *= d;
    std::vector<float> host(static_cast<std::size_t>(n), 0.5f), dst;
    for (const char* variant : {"lib", "nocopy", "nobarrier", "early", "plain"}) {
      const std::string v = variant;
      // phases: from_host, run, barrier, copy, flush, submit (first poll), signaled, wait_batch, memcpy
      double ph[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0}, polls = 0;
      for (int i = -20; i < runs; ++i) {
        const auto t0 = Clock::now();
        Tensor x = Tensor::from_host(dev, host, vi.shape);
        const auto t1 = Clock::now();
        auto out = model.run({{vi.name, x}});
        if (v == "early") {
          detail::Enter e(impl, "probe");
          glFlush();
        }
        const auto t2 = Clock::now();
        Clock::time_point t[7];
        int np = 0;
        for (auto& [name, y] : out) {
          if (v == "plain") {
            dst = y.to_vector();
            t[0] = t[1] = t[2] = t[3] = t[4] = t[5] = t[6] = Clock::now();
            continue;
          }
          detail::Enter e(impl, "probe");
          detail::Storage& s = *y.impl()->storage;
          detail::Queue& q = impl.queue();
          const std::size_t bytes = static_cast<std::size_t>(y.numel()) * 4;
          dst.resize(static_cast<std::size_t>(y.numel()));
          if (v != "nobarrier") q.barrier_for_copy();
          t[0] = Clock::now();
          if (v != "nocopy") detail::mapped_read_begin(impl, s.buffer(), 0, bytes);
          t[1] = Clock::now();
          q.flush(false);
          GLsync f = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
          t[2] = Clock::now();
          GLenum r = glClientWaitSync(f, GL_SYNC_FLUSH_COMMANDS_BIT, 0);
          t[3] = Clock::now();
          while (r == GL_TIMEOUT_EXPIRED) {
            const auto until = Clock::now() + std::chrono::microseconds(1);
            while (Clock::now() < until) {
            }
            r = glClientWaitSync(f, 0, 0);
            ++np;
          }
          t[4] = Clock::now();
          glDeleteSync(f);
          q.wait_batch(s.write_batch);
          t[5] = Clock::now();
          if (v != "nocopy") detail::mapped_read_end(impl, bytes, dst.data());
          t[6] = Clock::now();
        }
        if (i < 0) continue;
        ph[0] += us(t0, t1), ph[1] += us(t1, t2), ph[2] += us(t2, t[0]), ph[3] += us(t[0], t[1]);
        ph[4] += us(t[1], t[2]), ph[5] += us(t[2], t[3]), ph[6] += us(t[3], t[4]), ph[7] += us(t[4], t[5]);
        ph[8] += us(t[5], t[6]);
        polls += np;
      }
      double total = 0;
      for (double& p : ph) total += (p /= runs);
      std::printf(
          "%s %-9s e2e %6.2f us | from_host %5.2f run %5.2f | barrier %5.2f copy %5.2f flush+fence %5.2f submit "
          "%5.2f until signaled %6.2f (%.1f polls) wait_batch %5.2f memcpy %5.2f\n",
          replay ? "replayed" : "plain   ", variant, total, ph[0], ph[1], ph[2], ph[3], ph[4], ph[5], ph[6],
          polls / runs, ph[7], ph[8]);
    }
  }
  return 0;
}
