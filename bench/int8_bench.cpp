// Quantized kernels against their float32 forms, measured in the same run (bench/RESULTS.md,
// "Quantized"): what the model runtime runs for a QDQ MatMul (gltensor.QMatMul: the uint8 x int8
// integer matmul, then the int32 sums scaled to float32) and a QDQ Conv (gltensor.QConv: the
// integer convolution, then the scale) against matmul / conv2d on float32 tensors of the same
// shapes. Weight memory: int8 is a quarter of float32. Each iteration records the op and waits for
// it (Device::synchronize).
#include <benchmark/benchmark.h>

#include "bench_device.hpp"
#include "gltensor/gltensor.hpp"
#include "nn/quant_int.hpp"

using namespace gltensor;
using detail::QAxis;

namespace {

using gltensor::bench::dev;
using gltensor::bench::gen;

void fresh() {
  dev().synchronize();
  dev().trim();
}

Tensor q8(const Shape& s, DType d) {
  const double lo = d == DType::u8 ? 0 : -127, hi = d == DType::u8 ? 255 : 127;
  return floor(rand(dev(), s, gen(), lo, hi)).to(d);
}

template <typename F>
void run(benchmark::State& st, F&& f, double flops) {
  Tensor r = f();
  dev().synchronize();
  for (auto _ : st) {
    r = f();
    dev().synchronize();
  }
  st.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// [n, n] @ [n, n]: 0 = float32 matmul, 1 = uint8 x int8 integer matmul + scale to float32.
void BM_qdq_matmul(benchmark::State& st, int quant) {
  fresh();
  const std::int64_t n = st.range(0);
  if (quant) {
    Tensor a = q8({n, n}, DType::u8), b = q8({n, n}, DType::i8);
    Tensor za = full(dev(), {1}, 128, DType::u8), scale = full(dev(), {1}, 1e-4);
    run(
        st,
        [&] { return detail::dequantize_linear(detail::matmul_integer(a, b, za, Tensor()), scale, Tensor(), QAxis{}); },
        2.0 * n * n * n);
  } else {
    Tensor a = randn(dev(), {n, n}, gen()), b = randn(dev(), {n, n}, gen());
    run(
        st, [&] { return matmul(a, b); }, 2.0 * n * n * n);
  }
}

// 3x3 convolution, C -> C channels, [1, C, H, H], padding 1.
void BM_qdq_conv(benchmark::State& st, int quant) {
  fresh();
  const std::int64_t C = st.range(0), H = st.range(1);
  const double flops = 2.0 * C * C * 9 * H * H;
  if (quant) {
    Tensor x = q8({1, C, H, H}, DType::u8), w = q8({C, C, 3, 3}, DType::i8);
    Tensor zx = full(dev(), {1}, 128, DType::u8), scale = full(dev(), {1}, 1e-4);
    detail::IntConvOptions o;
    o.padding = {1, 1, 1, 1};
    run(
        st,
        [&] {
          return detail::dequantize_linear(detail::conv_integer(x, w, zx, Tensor(), o), scale, Tensor(), QAxis{});
        },
        flops);
  } else {
    Tensor x = randn(dev(), {1, C, H, H}, gen()), w = randn(dev(), {C, C, 3, 3}, gen());
    Conv2dOptions o;
    o.padding = {1, 1, 1, 1};
    run(
        st, [&] { return conv2d(x, w, Tensor(), o); }, flops);
  }
}

}  // namespace

BENCHMARK_CAPTURE(BM_qdq_matmul, f32, 0)->Arg(256)->Arg(1024)->Arg(4096)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_qdq_matmul, int8, 1)->Arg(256)->Arg(1024)->Arg(4096)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_qdq_conv, f32, 0)->Args({64, 56})->Args({256, 56})->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_qdq_conv, int8, 1)->Args({64, 56})->Args({256, 56})->UseRealTime()->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
