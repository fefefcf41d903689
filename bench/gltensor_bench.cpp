// gltensor benchmarks (Google Benchmark). Each case runs its body once untimed (shader compiles
// take 10-300 ms on some drivers and would otherwise land in the first timed batch), then each
// iteration records the op and waits for it (Device::synchronize), so times include one fence
// wait; rates are reported as GFLOP/s or GB/s
// (bytes read + written once). Run through bench/run_gpu.sh to get ratios against PyTorch/CUDA
// measured in the same run (bench/compare.py). Cases size themselves to the device (bench_size.hpp):
// where a tensor would exceed the max SSBO block, or on a software renderer the work would take
// too long, they run at a smaller size, named in their label and the counter "size".
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <vector>

#include "bench_device.hpp"
#include "bench_size.hpp"
#include "gltensor/gltensor.hpp"

using namespace gltensor;

namespace {

using gltensor::bench::dev;
using gltensor::bench::fit_size;
using gltensor::bench::gen;
using gltensor::bench::kSoftwareBytes;
using gltensor::bench::kSoftwareFlops;

// Memory-bound cases run kReps ops back to back per fence wait, so that the host's wait and
// flush (tens of microseconds) do not dominate sub-millisecond kernels; PyTorch's reference times
// each call with CUDA events, which exclude such host gaps.
constexpr int kReps = 10;

// Each case starts from an empty pool: freed buffers of earlier cases are released.
void fresh() {
  dev().synchronize();
  dev().trim();
}

void set_rate(benchmark::State& st, double work, const char* unit) {
  st.counters[unit] = benchmark::Counter(work * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void matmul_case(benchmark::State& st, DType dt) {
  fresh();
  const std::int64_t n = fit_size(
      st, "n", st.range(0), [&](std::int64_t m) { return m * m * static_cast<std::int64_t>(itemsize(dt)); },
      [](std::int64_t m) { return 2.0 * m * m * m; }, kSoftwareFlops);
  Tensor a = randn(dev(), {n, n}, gen(), 0, 1, dt), b = randn(dev(), {n, n}, gen(), 0, 1, dt);
  Tensor c = matmul(a, b);
  dev().synchronize();
  for (auto _ : st) {
    c = matmul(a, b);
    dev().synchronize();
  }
  set_rate(st, 2.0 * n * n * n, "GFLOP/s");
}

// The small matmuls of the Fashion-MNIST demo's training step (batch 128): M, N, K and the form
// (0: a [M, K] @ b [K, N]; 1: linear's x [M, K] @ w [N, K]^T; 2: a weight gradient's
// a [K, M]^T @ b [K, N]), kReps per fence wait. GLTENSOR_MATMUL_SPLIT forces split-K slices.
void BM_matmul_small(benchmark::State& st) {
  fresh();
  const std::int64_t M = st.range(0), N = st.range(1), K = st.range(2), form = st.range(3);
  Tensor a = form == 2 ? randn(dev(), {K, M}, gen()) : randn(dev(), {M, K}, gen());
  Tensor b = form == 1 ? randn(dev(), {N, K}, gen()) : randn(dev(), {K, N}, gen());
  auto once = [&] {
    return form == 1 ? matmul(a, b.transpose(0, 1)) : form == 2 ? matmul(a.transpose(0, 1), b) : matmul(a, b);
  };
  Tensor c = once();
  dev().synchronize();
  double enqueue = 0;  // host time of the calls before the fence wait: where it nears the total, the host bounds
  for (auto _ : st) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < kReps; ++r) c = once();
    enqueue += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    dev().synchronize();
  }
  set_rate(st, kReps * 2.0 * M * N * K, "GFLOP/s");
  st.counters["host_us_per_call"] = enqueue / (kReps * static_cast<double>(st.iterations()));
}

// Decoding's linear layers: x [rows, in] @ w [out, in]^T in f32 (the GEMV kernel on GPUs), kReps
// per fence wait; GB/s of the weight read (compare with gltensor_quant_bench's int8/int4 rows).
void BM_linear_gemv(benchmark::State& st) {
  fresh();
  const std::int64_t rows = st.range(0), in = st.range(1);
  const std::int64_t out = fit_size(
      st, "out", st.range(2), [&](std::int64_t o) { return 4 * o * in; },
      [&](std::int64_t o) { return kReps * 4.0 * o * in; }, kSoftwareBytes);
  Tensor x = randn(dev(), {rows, in}, gen()), w = randn(dev(), {out, in}, gen()), b = randn(dev(), {out}, gen());
  Tensor y = linear(x, w, b);
  dev().synchronize();
  for (auto _ : st) {
    for (int r = 0; r < kReps; ++r) y = linear(x, w, b);
    dev().synchronize();
  }
  set_rate(st, kReps * 4.0 * in * out, "GB/s");
}

// Precision::f16_allowed for a case's duration (docs/precision.md); the case is skipped where the
// device keeps f32 math (no fp16 arithmetic), so that f32 and f16 rows of one run compare.
class F16Math {
 public:
  explicit F16Math(benchmark::State& st) {
    dev().set_precision(Precision::f16_allowed);
    if (dev().precision_in_effect() != Precision::f16_allowed) st.SkipWithError("no fp16 arithmetic on this device");
  }
  ~F16Math() { dev().set_precision(Precision::f32); }
  bool on() const { return dev().precision_in_effect() == Precision::f16_allowed; }
};

// matmul with f16 products and block partial sums (f32 or f16 operands): only with
// GLTENSOR_PRECISION=f16-matmul (else f16_allowed keeps matmul's f32 math: docs/precision.md), as
// BM_conv2d_f16math; GLTENSOR_F16_MATMUL=f16x2 / f16x4 picks the kernel form.
void BM_matmul_f16math(benchmark::State& st, DType dt) {
  F16Math mode(st);
  if (!mode.on()) return;
  matmul_case(st, dt);
}

// f32 math whatever GLTENSOR_PRECISION says (f16-matmul opens the device with f16_allowed).
void BM_matmul(benchmark::State& st, DType dt) {
  dev().set_precision(Precision::f32);
  matmul_case(st, dt);
}

void BM_elementwise(benchmark::State& st, int which) {
  fresh();
  const std::int64_t n = fit_size(
      st, "n", std::int64_t{1} << st.range(0), [](std::int64_t m) { return 4 * m; },
      [](std::int64_t m) { return kReps * 12.0 * m; }, kSoftwareBytes);
  Tensor x = randn(dev(), {n}, gen()), y = randn(dev(), {n}, gen());
  Tensor z = empty_like(x);
  auto once = [&] {
    if (which == 0)
      add_out(z, x, y);
    else if (which == 1)
      mul_out(z, x, y);
    else
      z = gelu(x);
  };
  once();  // warm-up (compiles)
  dev().synchronize();
  for (auto _ : st) {
    for (int r = 0; r < kReps; ++r) once();
    dev().synchronize();
  }
  set_rate(st, kReps * (which == 2 ? 8.0 : 12.0) * n, "GB/s");
}

// add / mul on f16 tensors: f32 math (one rounding on store) or, with f16 math, the f16vec2 form
// (docs/precision.md); 6 bytes per element.
void BM_elementwise_f16(benchmark::State& st, int which, bool f16math) {
  fresh();
  const std::int64_t n = fit_size(
      st, "n", std::int64_t{1} << st.range(0), [](std::int64_t m) { return 4 * m; },  // randn's f32 first
      [](std::int64_t m) { return kReps * 6.0 * m; }, kSoftwareBytes);
  Tensor x = randn(dev(), {n}, gen()).to(DType::f16), y = randn(dev(), {n}, gen()).to(DType::f16);
  Tensor z = empty_like(x);
  std::optional<F16Math> mode;
  if (f16math) {
    mode.emplace(st);
    if (!mode->on()) return;
  } else {
    dev().set_precision(Precision::f32);
  }
  auto once = [&] { which == 0 ? add_out(z, x, y) : mul_out(z, x, y); };
  once();  // warm-up (compiles)
  dev().synchronize();
  for (auto _ : st) {
    for (int r = 0; r < kReps; ++r) once();
    dev().synchronize();
  }
  set_rate(st, kReps * 6.0 * n, "GB/s");
}

void BM_sum(benchmark::State& st) {
  fresh();
  const std::int64_t n = fit_size(
      st, "n", std::int64_t{1} << st.range(0), [](std::int64_t m) { return 4 * m; },
      [](std::int64_t m) { return kReps * 4.0 * m; }, kSoftwareBytes);
  Tensor x = randn(dev(), {n}, gen());
  sum(x);
  dev().synchronize();
  for (auto _ : st) {
    for (int r = 0; r < kReps; ++r) Tensor s = sum(x);
    dev().synchronize();
  }
  set_rate(st, kReps * 4.0 * n, "GB/s");
}

void BM_rows(benchmark::State& st, int which) {
  fresh();
  const std::int64_t c = st.range(1);
  const std::int64_t r = fit_size(
      st, "rows", st.range(0), [&](std::int64_t m) { return 4 * m * c; },
      [&](std::int64_t m) { return kReps * 8.0 * m * c; }, kSoftwareBytes);
  Tensor x = randn(dev(), {r, c}, gen());
  Tensor w = ones(dev(), {c}), b = zeros(dev(), {c});
  // 0 softmax, 1 layer_norm (rows read and written), 2 argmax, 3 amax (rows read).
  auto op = [&] {
    return which == 0   ? softmax(x, -1)
           : which == 1 ? layer_norm(x, 1, w, b)
           : which == 2 ? argmax(x, -1)
                        : amax(x, {-1});
  };
  op();
  dev().synchronize();
  for (auto _ : st) {
    for (int k = 0; k < kReps; ++k) Tensor y = op();
    dev().synchronize();
  }
  set_rate(st, kReps * (which >= 2 ? 4.0 : 8.0) * r * c, "GB/s");
}

// batch_norm in training mode on the Fashion-MNIST CNN's first BatchNorm2d shape: the forward
// (statistics, running-stat update, normalize: x read twice, y written) or forward and backward
// (gy and x read twice more, dx written; weight and bias gradients).
void BM_batch_norm(benchmark::State& st, int backward_too) {
  fresh();
  const std::int64_t batch = fit_size(
      st, "batch", 128, [](std::int64_t b) { return 4 * b * 32 * 28 * 28; },
      [&](std::int64_t b) { return kReps * (backward_too ? 32.0 : 12.0) * b * 32 * 28 * 28; }, kSoftwareBytes);
  const Shape s = {batch, 32, 28, 28};
  Tensor x = randn(dev(), s, gen()), gy = randn(dev(), s, gen());
  Tensor w = ones(dev(), {32}), b = zeros(dev(), {32}), rm = zeros(dev(), {32}), rv = ones(dev(), {32});
  if (backward_too) requires_grad_(x), requires_grad_(w), requires_grad_(b);
  auto step = [&] {
    Tensor y = batch_norm(x, rm, rv, w, b, true);
    if (!backward_too) return;
    backward(y, gy);
    zero_grad(x), zero_grad(w), zero_grad(b);  // no accumulation: each step's gradients are new tensors
  };
  step();
  dev().synchronize();
  for (auto _ : st) {
    for (int k = 0; k < kReps; ++k) step();
    dev().synchronize();
  }
  set_rate(st, kReps * (backward_too ? 32.0 : 12.0) * numel_of(s), "GB/s");
}

// The fused transformer kernels (transformer.hpp) at bandwidth-bound sizes: rms_norm on rows of
// 4096 (x read, y written; backward: gy and x read twice, dx and dweight written), rope on attention's
// [8, 16, 1024, 128] (x read, y written; backward the same for gy), swiglu on [16384, 2 x 4096]
// (gate_up read, out written; backward: gy and gate_up read, d gate_up written). GB/s counts each
// of those bytes once.
void BM_transformer(benchmark::State& st, int which, int backward_too) {
  fresh();
  Shape s = which == 0 ? Shape{16384, 4096} : which == 1 ? Shape{8, 16, 1024, 128} : Shape{16384, 8192};
  const double per_element = which == 0   ? (backward_too ? 28 : 8)
                             : which == 1 ? (backward_too ? 16 : 8)
                                          : (backward_too ? 16 : 6);
  const std::int64_t rest = numel_of(s) / s[0];
  s[0] = fit_size(
      st, "leading dim", s[0], [&](std::int64_t m) { return 4 * m * rest; },
      [&](std::int64_t m) { return kReps * per_element * m * rest; }, kSoftwareBytes);
  Tensor x = randn(dev(), s, gen()), w = ones(dev(), {s.back()});
  Shape ys = s;
  if (which == 2) ys.back() /= 2;
  Tensor gy = randn(dev(), ys, gen());
  if (backward_too) requires_grad_(x), requires_grad_(w);
  auto step = [&] {
    Tensor y = which == 0 ? rms_norm(x, 1, w) : which == 1 ? rope(x) : swiglu(x);
    if (!backward_too) return;
    backward(y, gy);
    zero_grad(x), zero_grad(w);
  };
  step();
  dev().synchronize();
  for (auto _ : st) {
    for (int k = 0; k < kReps; ++k) step();
    dev().synchronize();
  }
  set_rate(st, kReps * per_element * static_cast<double>(numel_of(s)), "GB/s");
}

void BM_conv2d(benchmark::State& st) {
  fresh();
  const std::int64_t batch = fit_size(
      st, "batch", 32, [](std::int64_t b) { return 4 * b * 56 * 56 * 64 * 9; },  // im2col columns
      [](std::int64_t b) { return 2.0 * b * 64 * 56 * 56 * 64 * 9; }, kSoftwareFlops);
  Tensor x = randn(dev(), {batch, 64, 56, 56}, gen()), w = randn(dev(), {64, 64, 3, 3}, gen(), 0, 0.05);
  Tensor bias = zeros(dev(), {64});
  conv2d(x, w, bias, Conv2dOptions::pad(1));
  dev().synchronize();
  for (auto _ : st) {
    Tensor y = conv2d(x, w, bias, Conv2dOptions::pad(1));
    dev().synchronize();
  }
  set_rate(st, 2.0 * batch * 64 * 56 * 56 * 64 * 9, "GFLOP/s");
}

// A conv forward GEMM of few 64 x 64 tiles over a long K (issue 21, big14): x [N, 256, HW, HW] under
// [64, 256, 3, 3] filters, padding 1: w [64, 2304] @ cols [2304, N HW^2] in 16 tiles of 64 x 64 at
// N HW^2 = 1024 (8 at 512, 4 at 256: FC1's count), where the GPUs' plan splits K into 16, 32 or 36
// chunks summed with the bias (kSplitShortMaxTiles, the CNN's FC1 rule) rather than running the
// K-sliced REG kernel. 10 convolutions a synchronization; args: N, HW.
void BM_conv2d_few_tiles(benchmark::State& st) {
  fresh();
  const std::int64_t n = st.range(0), hw = st.range(1);
  Tensor x = randn(dev(), {n, 256, hw, hw}, gen()), w = randn(dev(), {64, 256, 3, 3}, gen(), 0, 0.02);
  Tensor bias = randn(dev(), {64}, gen());
  conv2d(x, w, bias, Conv2dOptions::pad(1));
  dev().synchronize();
  for (auto _ : st) {
    for (int k = 0; k < kReps; ++k) Tensor y = conv2d(x, w, bias, Conv2dOptions::pad(1));
    dev().synchronize();
  }
  set_rate(st, kReps * 2.0 * n * hw * hw * 64 * 2304, "GFLOP/s");
}

void BM_conv2d_f16math(benchmark::State& st) {
  F16Math mode(st);
  if (!mode.on()) return;
  BM_conv2d(st);
}

void BM_sdpa(benchmark::State& st) {
  fresh();
  const std::int64_t S = 1024, D = 64;
  const std::int64_t heads = fit_size(  // B x H = 8 x 16, fewer batches, then fewer heads
      st, "heads", 8 * 16, [&](std::int64_t n) { return 4 * n * S * D; },
      [&](std::int64_t n) { return 2.0 * 2 * n * S * S * D / 2; }, kSoftwareFlops);
  const std::int64_t H = std::min<std::int64_t>(16, heads), B = heads / H;
  Tensor q = randn(dev(), {B, H, S, D}, gen()), k = randn(dev(), {B, H, S, D}, gen()),
         v = randn(dev(), {B, H, S, D}, gen());
  scaled_dot_product_attention(q, k, v, Tensor(), true);  // warm-up (compiles)
  dev().synchronize();
  for (auto _ : st) {
    Tensor o = scaled_dot_product_attention(q, k, v, Tensor(), true);
    dev().synchronize();
  }
  set_rate(st, 2.0 * 2 * B * H * S * S * D / 2, "GFLOP/s");
}

// Causal attention at 8x16x1024xD (bench/torch_attention.py's shape), sized to the device: B x H =
// 8 x 16, fewer batches, then fewer heads; `gemms` causal S x S x D products per head. q, k, v
// require gradients (the flash path keeps its logsumexp).
struct AttentionCase {
  std::int64_t B, H, S, D;
  Tensor q, k, v;
};
AttentionCase attention_case(benchmark::State& st, double gemms) {
  const std::int64_t S = 1024, D = st.range(0);
  const std::int64_t heads = fit_size(
      st, "heads", 8 * 16, [&](std::int64_t n) { return 4 * n * S * D; },
      [&](std::int64_t n) { return gemms * 2 * n * S * S * D / 2; }, kSoftwareFlops);
  const std::int64_t H = std::min<std::int64_t>(16, heads), B = heads / H;
  AttentionCase c{B,
                  H,
                  S,
                  D,
                  randn(dev(), {B, H, S, D}, gen()),
                  randn(dev(), {B, H, S, D}, gen()),
                  randn(dev(), {B, H, S, D}, gen())};
  for (Tensor* t : {&c.q, &c.k, &c.v}) requires_grad_(*t);
  return c;
}

// Training attention (issue 23's goal: forward + backward at 8x16x1024x128 causal >= 0.7x
// PyTorch's SDPA, bench/torch_attention.py): q, k, v require gradients, so the forward keeps its
// logsumexp and backward runs the fused dK/dV and dQ kernels. Arg: the head dim.
void BM_sdpa_train(benchmark::State& st) {
  fresh();
  auto [B, H, S, D, q, k, v] = attention_case(st, 7.0);
  Tensor gy = randn(dev(), {B, H, S, D}, gen());
  auto step = [&] {
    backward(scaled_dot_product_attention(q, k, v, Tensor(), true), gy);
    for (Tensor* t : {&q, &k, &v}) zero_grad(*t);
    dev().synchronize();
  };
  step();  // warm-up (compiles)
  for (auto _ : st) step();
  // forward 2 GEMMs, backward 5 (recomputed S, dP, dV, dK, dQ), half of each under the mask
  set_rate(st, 7.0 * 2 * B * H * S * S * D / 2, "GFLOP/s");
}

// The flash forward alone at 8x16x1024xD causal, recording (q, k, v require gradients: the
// logsumexp is kept, the masks and head dims of training go the flash path): the register-tiled
// kernel, or the one-row kernel under GLTENSOR_ATTENTION=rows (bench/torch_attention.py --fwd:
// PyTorch's forward). Arg: the head dim.
void BM_sdpa_fwd(benchmark::State& st) {
  fresh();
  auto [B, H, S, D, q, k, v] = attention_case(st, 2.0);
  auto step = [&] {
    Tensor o = scaled_dot_product_attention(q, k, v, Tensor(), true);
    dev().synchronize();
  };
  step();  // warm-up (compiles)
  for (auto _ : st) step();
  set_rate(st, 2.0 * 2 * B * H * S * S * D / 2, "GFLOP/s");
}

void BM_tiny_op_chain(benchmark::State& st) {
  fresh();
  Tensor t = randn(dev(), {64}, gen());
  const int ops = 10000;
  add_(t, 1.0);
  dev().synchronize();
  for (auto _ : st) {
    for (int i = 0; i < ops; ++i) add_(t, 1.0);
    dev().synchronize();
  }
  st.counters["ops_per_iteration"] = ops;  // compare.py divides the iteration time by this
}

// One optimizer step (glsl/nn/optim.comp: up to 6 parameters per dispatch) over a model's worth
// of parameters, the gradients fixed: range(0) 0 = SGD with momentum, 1 = Adam; range(1) 0 = 24
// tensors (12 weights of 2^20 elements, 12 biases of 1024), 1 = 48 tensors of 4096 elements (a
// small network: the dispatches' cost). Bytes: each element's parameter, gradient and states read,
// parameter and states written (SGD 20 B, Adam 28 B). Software renderers: 1/64 of the sizes.
void BM_optimizer_step(benchmark::State& st) {
  fresh();
  const bool adam = st.range(0) == 1, small = st.range(1) == 1;
  const std::int64_t scale = dev().adapter().software ? 64 : 1;
  std::vector<std::int64_t> sizes;
  for (int i = 0; i < (small ? 48 : 12); ++i) {
    if (small) {
      sizes.push_back(4096);
    } else {
      sizes.push_back((std::int64_t{1} << 20) / scale);
      sizes.push_back(1024);
    }
  }
  std::vector<Tensor> params;
  for (std::int64_t n : sizes) {
    params.push_back(randn(dev(), {n}, gen()));
    requires_grad_(params.back());
  }
  Tensor loss = zeros(dev(), {});
  for (Tensor& p : params) loss = add(loss, sum(mul(p, randn(dev(), {p.numel()}, gen()))));
  backward(loss);  // the gradients, kept over the steps (no zero_grad)
  std::vector<Tensor*> ptrs;
  for (Tensor& p : params) ptrs.push_back(&p);
  std::unique_ptr<nn::Optimizer> opt;
  if (adam) {
    opt = std::make_unique<nn::Adam>(ptrs, 1e-6);
  } else {
    nn::SGDOptions o;
    o.momentum = 0.9;
    opt = std::make_unique<nn::SGD>(ptrs, 1e-6, o);
  }
  opt->step();  // warm-up (programs compiled)
  dev().synchronize();
  std::int64_t total = 0;
  for (std::int64_t n : sizes) total += n;
  for (auto _ : st) {
    for (int r = 0; r < kReps; ++r) opt->step();
    dev().synchronize();
  }
  set_rate(st, static_cast<double>(total) * (adam ? 28 : 20) * kReps, "GB/s");
  st.counters["steps_per_iteration"] = kReps;
}

void BM_fashion_mnist_step(benchmark::State& st) {
  fresh();
  nn::Sequential net;
  Generator g(1);
  net.add(std::make_shared<nn::Linear>(dev(), 784, 256, g, true, Activation::relu))
      .add(std::make_shared<nn::Linear>(dev(), 256, 128, g, true, Activation::relu))
      .add(std::make_shared<nn::Linear>(dev(), 128, 10, g));
  nn::Adam opt(net.parameters(), 1e-3);
  Tensor x = randn(dev(), {128, 784}, g);
  std::vector<std::int32_t> yl(128);
  for (int i = 0; i < 128; ++i) yl[i] = i % 10;
  Tensor y = Tensor::from_host(dev(), std::span<const std::int32_t>(yl), {128});
  auto step = [&] {
    opt.zero_grad();
    Tensor loss = cross_entropy(net(x), y);
    backward(loss);
    opt.step();
    dev().synchronize();
  };
  step();  // warm-up
  for (auto _ : st) step();
  st.counters["images/s"] = benchmark::Counter(128, benchmark::Counter::kIsIterationInvariantRate);
}

// The matmul cases' square sizes (n x n x n), in ms of real time.
void square_sizes(benchmark::internal::Benchmark* b) {
  for (int n : {1024, 2048, 4096, 8192}) b->Arg(n);
  b->UseRealTime()->Unit(benchmark::kMillisecond);
}

}  // namespace

BENCHMARK_CAPTURE(BM_matmul, f32, DType::f32)->Arg(256)->Apply(square_sizes);
BENCHMARK_CAPTURE(BM_matmul, f16, DType::f16)->Apply(square_sizes);
BENCHMARK_CAPTURE(BM_matmul_f16math, f32, DType::f32)->Apply(square_sizes);
BENCHMARK_CAPTURE(BM_matmul_f16math, f16, DType::f16)->Apply(square_sizes);
BENCHMARK(BM_matmul_small)
    ->Args({128, 256, 784, 1})
    ->Args({128, 128, 256, 1})
    ->Args({128, 10, 128, 1})
    ->Args({128, 256, 128, 0})
    ->Args({256, 784, 128, 2})
    ->Args({128, 256, 128, 2})
    ->Args({128, 128, 3136, 1})
    ->Args({128, 3136, 128, 2})
    ->Args({128, 3136, 128, 0})
    ->Args({64, 25088, 288, 0})
    ->Args({64, 288, 25088, 1})
    ->Args({288, 25088, 64, 2})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_linear_gemv)
    ->Args({1, 384, 1024})
    ->Args({1, 1024, 384})
    ->Args({1, 4096, 4096})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_elementwise, add, 0)->Arg(26)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_elementwise, mul, 1)->Arg(26)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_elementwise, gelu, 2)->Arg(26)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_elementwise_f16, add, 0, false)->Arg(26)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_elementwise_f16, add_f16math, 0, true)->Arg(26)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_elementwise_f16, mul, 1, false)->Arg(26)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_elementwise_f16, mul_f16math, 1, true)->Arg(26)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_sum)->Arg(26)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_rows, softmax, 0)
    ->Args({16384, 4096})
    ->Args({1008, 6625})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_rows, layer_norm, 1)->Args({16384, 4096})->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_rows, argmax, 2)
    ->Args({16384, 4096})
    ->Args({1008, 6625})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_rows, amax, 3)
    ->Args({16384, 4096})
    ->Args({1008, 6625})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_batch_norm, train_forward, 0)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_batch_norm, train_forward_backward, 1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_transformer, rms_norm, 0, 0)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_transformer, rms_norm_backward, 0, 1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_transformer, rope, 1, 0)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_transformer, rope_backward, 1, 1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_transformer, swiglu, 2, 0)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_transformer, swiglu_backward, 2, 1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_conv2d)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_conv2d_f16math)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_conv2d_few_tiles)
    ->Args({1, 32})
    ->Args({4, 16})
    ->Args({2, 16})
    ->Args({1, 16})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_sdpa)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_sdpa_train)->Arg(64)->Arg(128)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_sdpa_fwd)->Arg(64)->Arg(128)->Arg(256)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_tiny_op_chain)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fashion_mnist_step)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_optimizer_step)->ArgsProduct({{0, 1}, {0, 1}})->UseRealTime()->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
