// Training-step profile: times steps of the Fashion-MNIST demo's models (synthetic batch of 128)
// and prints the dispatches and barriers (glMemoryBarrier) per step and the GPU profile per op and
// per kernel (Device::set_profiling).
// Also the host's time to issue the steps (before the final fence wait: where it is about the
// whole time, the step is bound by the host's work, not the GPU's), and with --replay the steps
// as the demo's --replay runs them: forward and backward captured once (Recording) and replayed,
// the optimizer's step run as usual (its bias corrections change per step), the dropout's masks
// drawn at an offset the device advances (nn::Dropout::device_offset).
//   gltensor_train_profile [--model cnn|mlp] [--steps N] [--batch B] [--replay]
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "gltensor/gltensor.hpp"
#include "models.hpp"

using namespace gltensor;

int main(int argc, char** argv) {
  CLI::App app{"gltensor training-step profile"};
  std::string model = "cnn";
  int steps = 20, batch = 128;
  app.add_option("--model", model, "mlp or cnn")->check(CLI::IsMember({"mlp", "cnn"}));
  app.add_option("--steps", steps, "timed steps")->check(CLI::Range(1, 100000));
  app.add_option("--batch", batch, "batch size")->check(CLI::Range(1, 65536));
  bool replay = false;
  app.add_flag("--replay", replay, "also time the step captured once and replayed");
  CLI11_PARSE(app, argc, argv);
  Device dev = Device::open();
  Generator gen(1);
  auto m = demo::make_model(model, dev, gen, replay);
  auto params = m->parameters();
  nn::Adam opt(params, 1e-3);
  Tensor x = randn(dev, {batch, 1, 28, 28}, gen);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(batch));
  for (int i = 0; i < batch; ++i) labels[i] = i % 10;
  Tensor y = Tensor::from_host(dev, std::span<const std::int32_t>(labels), {batch});
  auto step = [&] {
    opt.zero_grad();
    Tensor loss = cross_entropy(m->forward(x), y);
    backward(loss);
    opt.step();
  };
  step();  // compiles every kernel, tunes
  dev.synchronize();
  const auto d0 = dev.dispatch_count(), b0 = dev.barrier_count();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) step();
  const double issued = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  dev.synchronize();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double n = steps;
  std::printf("%s on %s: %.3f ms per step (batch %d), %.0f img/s, %.2f s per 60000-image epoch\n", model.c_str(),
              dev.adapter().renderer.c_str(), 1e3 * s / steps, batch, batch * steps / s, 60000.0 / batch * s / steps);
  std::printf("per step: %.1f dispatches, %.1f barriers\n", static_cast<double>(dev.dispatch_count() - d0) / n,
              static_cast<double>(dev.barrier_count() - b0) / n);
  std::printf("host: %.3f ms per step to issue (%.0f%% of the step)\n", 1e3 * issued / steps, 100 * issued / s);
  if (replay) {
    Recording rec = Recording::capture(dev, [&] {
      opt.zero_grad();
      backward(cross_entropy(m->forward(x), y));
    });
    opt.step();
    dev.synchronize();
    const auto rd0 = dev.dispatch_count();
    const auto r0 = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) {
      rec.replay();
      opt.step();
    }
    const double ri = std::chrono::duration<double>(std::chrono::steady_clock::now() - r0).count();
    dev.synchronize();
    const double rs = std::chrono::duration<double>(std::chrono::steady_clock::now() - r0).count();
    std::printf(
        "replayed: %.3f ms per step (batch %d), %.2f s per 60000-image epoch (%zu dispatches recorded, %.1f per step "
        "in "
        "all; host %.3f ms per step to issue)\n",
        1e3 * rs / steps, batch, 60000.0 / batch * rs / steps, rec.dispatches(),
        static_cast<double>(dev.dispatch_count() - rd0) / n, 1e3 * ri / steps);
  }
  if (dev.caps().timer_query) {
    dev.set_profiling(true);
    for (int i = 0; i < std::max(1, steps / 4); ++i) step();
    std::printf("profile of %d steps:\n%s", std::max(1, steps / 4), dev.profile().table().c_str());
  }
}
