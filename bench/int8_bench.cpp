// Quantized kernels against their float32 forms, measured in the same run (bench/RESULTS.md,
// "Quantized"): what the model runtime runs for a QDQ MatMul (gltensor.QMatMul: the uint8 x int8
// integer matmul with its sums scaled to float32, detail::matmul_dequant) and a QDQ Conv
// (gltensor.QConv: the integer convolution, scaled per output channel, detail::conv_dequant)
// against matmul / conv2d on float32 tensors of the same shapes. Weight memory: int8 is a
// quarter of float32.
//   gltensor_int8_bench [--rounds N] [--min-ms T] [--large]
// Shapes fit the device: GPUs matmul 256^3 .. 4096^3 and 3x3 convs of 64 / 256 channels at 56x56;
// software rasterizers (llvmpipe) smaller ones (--large: the GPU's list there too). Each case
// times f32 and int8 alternately for N rounds (each round: back-to-back ops for at least T ms,
// then Device::synchronize) and keeps each one's best round; "int8 / f32 speed" is f32's time
// over int8's (above 1: int8 faster). The "int32 kernel" column runs the same int8 op with int32
// zero points, which take the integer-arithmetic kernel (quant_int.comp's IMATMUL) and the
// dequantization as separate ops instead of the f32-block kernel with its epilogue (imatmul.comp). Prints a Markdown
// table.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>

#include "gltensor/gltensor.hpp"
#include "int8_rounds.hpp"
#include "nn/quant_int.hpp"

using namespace gltensor;

namespace {

using int8_bench::q8;
using int8_bench::round_seconds;

struct Case {
  std::string name;
  double flops;
  std::function<Tensor()> f32, int8, int32k;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"QDQ MatMul / Conv: the int8 kernels against float32, same run"};
  int rounds = 5;
  double min_ms = 200;
  bool large = false;
  app.add_option("--rounds", rounds, "alternating rounds of f32 and int8 per case")->check(CLI::PositiveNumber);
  app.add_option("--min-ms", min_ms, "milliseconds of back-to-back ops per round")->check(CLI::PositiveNumber);
  app.add_flag("--large", large, "the GPU's shapes on a software rasterizer too");
  CLI11_PARSE(app, argc, argv);
  Device dev = Device::open();
  Generator g(1);
  const bool small = dev.adapter().software && !large;
  std::printf("device: %s (%s)%s\n", dev.caps().renderer.c_str(), dev.caps().version.c_str(),
              small ? ", software rasterizer: small shapes" : "");
  std::vector<Case> cases;
  const Tensor scale = full(dev, {1}, 1e-4);
  for (std::int64_t n :
       small ? std::vector<std::int64_t>{128, 256, 512} : std::vector<std::int64_t>{256, 1024, 2048, 4096}) {
    Tensor a = randn(dev, {n, n}, g), b = randn(dev, {n, n}, g);
    Tensor qa = q8(dev, g, {n, n}, DType::u8), qb = q8(dev, g, {n, n}, DType::i8);
    const auto op = [=](Tensor za) {
      return [=] { return detail::matmul_dequant(qa, qb, za, Tensor(), {scale, scale, Tensor(), false}); };
    };
    cases.push_back({"matmul " + std::to_string(n) + "^3", 2.0 * n * n * n, [=] { return matmul(a, b); },
                     op(full(dev, {1}, 128, DType::u8)), op(full(dev, {1}, 128, DType::i32))});
  }
  using CH = std::pair<std::int64_t, std::int64_t>;
  for (auto [C, H] : small ? std::vector<CH>{{32, 28}, {64, 28}} : std::vector<CH>{{64, 56}, {256, 56}, {512, 28}}) {
    Tensor x = randn(dev, {1, C, H, H}, g), w = randn(dev, {C, C, 3, 3}, g);
    Tensor qx = q8(dev, g, {1, C, H, H}, DType::u8), qw = q8(dev, g, {C, C, 3, 3}, DType::i8);
    Conv2dOptions o;
    o.padding = {1, 1, 1, 1};
    detail::IntConvOptions io;
    io.padding = {1, 1, 1, 1};
    const auto op = [=](Tensor zx) {
      return [=] { return detail::conv_dequant(qx, qw, zx, Tensor(), io, {scale, scale, Tensor(), true}); };
    };
    cases.push_back({"conv 3x3, " + std::to_string(C) + " -> " + std::to_string(C) + " ch, " + std::to_string(H) + "x" +
                         std::to_string(H),
                     2.0 * C * C * 9 * H * H, [=] { return conv2d(x, w, Tensor(), o); },
                     op(full(dev, {1}, 128, DType::u8)), op(full(dev, {1}, 128, DType::i32))});
  }
  std::printf(
      "\n| case | float32 ms | int8 ms | float32 GFLOP/s | int8 GFLOP/s | int8 / f32 speed | int32 kernel ms | "
      "int32 kernel / f32 speed |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& c : cases) {
    c.f32();
    c.int8();  // compile, tune
    c.int32k();
    dev.synchronize();
    double tf = 1e30, ti = 1e30, tk = 1e30;
    for (int r = 0; r < rounds; ++r) {
      tf = std::min(tf, round_seconds(dev, min_ms, c.f32));
      ti = std::min(ti, round_seconds(dev, min_ms, c.int8));
      tk = std::min(tk, round_seconds(dev, min_ms, c.int32k));
    }
    std::printf("| %s | %.3f | %.3f | %.0f | %.0f | %.2fx | %.3f | %.2fx |\n", c.name.c_str(), tf * 1e3, ti * 1e3,
                c.flops / tf * 1e-9, c.flops / ti * 1e-9, tf / ti, tk * 1e3, tf / tk);
    std::fflush(stdout);
    dev.trim();
  }
  return 0;
}
