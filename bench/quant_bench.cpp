// Decode GEMV with quantized weights (issue 24): y = x @ W^T for one row of x, W stored as f32
// (gltensor's linear), int8 or int4 (quantized_linear's GEMV), timed against a plain copy
// (Tensor::clone of 64 MiB: read + write) measured in the same run as the memory bandwidth bound.
// Rates count the bytes each op must move once: the weight (f32: 4 per element; int8: 1 + 2 / K;
// int4: 0.5 + 2 / 32), x and y. Each timing is the median of 7 trials of `reps` back-to-back ops
// ended by one Device::synchronize (the first run of each op, with its kernel compile, untimed).
//
//   gltensor_quant_bench [--reps N] [--shapes 384x1024,1024x384,4096x4096] [--copies C] [--chain 1]   (out x in)
// --copies: C distinct weights of each shape, used in turn (a working set past the L2 cache).
// --chain 1: each op reads the previous op's output (x -> W -> W^T-shaped -> ...: a decode
// step's dependent products, each waiting for the last), timed per product.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "gltensor/gltensor.hpp"

using namespace gltensor;

namespace {

double median_seconds(Device& dev, int reps, const std::function<void()>& op) {
  op();
  dev.synchronize();
  std::vector<double> t;
  for (int trial = 0; trial < 7; ++trial) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) op();
    dev.synchronize();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 20, copies = 1;
  bool chain = false;
  std::string shapes = "384x1024,1024x384,4096x4096";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--reps"))
      reps = std::max(1, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--shapes"))
      shapes = argv[i + 1];
    else if (!std::strcmp(argv[i], "--copies"))
      copies = std::max(1, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--chain"))
      chain = std::atoi(argv[i + 1]) != 0;
  }
  Device dev = Device::open();
  Generator gen(1);
  std::printf("device: %s (%s)\n", dev.caps().renderer.c_str(), dev.caps().version.c_str());
  const std::int64_t copy_floats = std::min<std::int64_t>(16 << 20, dev.caps().max_ssbo_block_size / 4);
  Tensor src = randn(dev, {copy_floats}, gen);
  Tensor dst;
  const double copy_s = median_seconds(dev, reps, [&] { dst = src.clone(); });
  const double bound = 2.0 * 4.0 * static_cast<double>(copy_floats) / copy_s;
  std::printf("copy (clone of %lld MiB): %.3f ms, %.1f GB/s (the bound)\n\n",
              static_cast<long long>(copy_floats * 4 >> 20), copy_s * 1e3, bound * 1e-9);
  std::printf("| W (out x in) | weights | time (us) | GB/s | of the copy's bandwidth | vs f32 linear |\n");
  std::printf("|---|---|---:|---:|---:|---:|\n");
  std::stringstream ss(shapes);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto x_pos = item.find('x');
    const std::int64_t N = std::stoll(item.substr(0, x_pos)), K = std::stoll(item.substr(x_pos + 1));
    // `copies` distinct weights used in turn: a working set past the GPU's L2 cache, as a
    // model's layers are (one weight read back to back would be served partly from L2).
    std::vector<Tensor> ws;
    for (int c = 0; c < copies; ++c) ws.push_back(randn(dev, {N, K}, gen, 0, 0.02));
    // --chain: the products alternate between W [N, K] and V [K, N], each reading the last's y.
    const Tensor v = randn(dev, {K, N}, gen, 0, 0.02);
    Tensor x = randn(dev, {1, K}, gen);
    Tensor y;
    const double io = 4.0 * static_cast<double>(K + N);
    std::size_t turn = 0;
    const double f32_s =
        chain
            ? median_seconds(dev, reps, [&] { y = linear(linear(y.defined() ? y : x, ws[turn++ % ws.size()]), v); }) / 2
            : median_seconds(dev, reps, [&] { y = linear(x, ws[turn++ % ws.size()]); });
    const auto row = [&](const char* what, double s, double weight_bytes) {
      const double rate = (weight_bytes + io) / s;
      std::printf("| %lldx%lld | %s | %.1f | %.1f | %.2f | %.2fx |\n", static_cast<long long>(N),
                  static_cast<long long>(K), what, s * 1e6, rate * 1e-9, rate / bound, f32_s / s);
    };
    row("f32 (linear)", f32_s, 4.0 * static_cast<double>(N * K));
    for (QuantFormat f : {QuantFormat::int8, QuantFormat::int4}) {
      std::vector<QuantizedWeight> qs;
      for (const Tensor& w : ws) qs.push_back(quantize(w, f));
      const QuantizedWeight qv = quantize(v, f);
      y = Tensor();
      const double s =
          chain
              ? median_seconds(
                    dev, reps,
                    [&] { y = quantized_linear(quantized_linear(y.defined() ? y : x, qs[turn++ % qs.size()]), qv); }) /
                    2
              : median_seconds(dev, reps, [&] { y = quantized_linear(x, qs[turn++ % qs.size()]); });
      row(quant_format_name(f), s, static_cast<double>(qs[0].nbytes()));
    }
    std::fflush(stdout);
  }
  return 0;
}
