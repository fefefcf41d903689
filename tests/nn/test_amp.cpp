// Mixed precision: Autocast's op lists (dtypes in and out, values against float64 on the
// f16-rounded operands, gradients reaching float32 master weights) and GradScaler (scaling,
// exact unscaling, inf/NaN steps skipped, backoff and growth, tied gradients, errors), and a small
// training run in f16 against the same run in f32.
#include "gltensor/autocast.hpp"
#include "test_util.hpp"

using namespace glt_test;
using namespace gltensor;

namespace {
float r16(float x) { return f16_to_f32(f32_to_f16(x)); }
std::vector<float> r16(std::vector<float> v) {
  for (auto& x : v) x = r16(x);
  return v;
}
// x [M, K] @ w [N, K]^T + b in float64.
std::vector<double> ref_linear(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& b,
                               int M, int K, int N) {
  std::vector<double> y(static_cast<std::size_t>(M * N));
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double acc = b[n];
      for (int k = 0; k < K; ++k) acc += double(x[m * K + k]) * w[n * K + k];
      y[m * N + n] = acc;
    }
  return y;
}
}  // namespace

TEST(Autocast, LowPrecisionListComputesOnF16Copies) {
  GLT_RNG(rng);
  const int M = 7, K = 33, N = 5;
  auto xv = uniform(rng, M * K), wv = uniform(rng, N * K), bv = uniform(rng, N);
  Tensor x = Tensor::from_host(device(), xv, {M, K}), w = Tensor::from_host(device(), wv, {N, K}),
         b = Tensor::from_host(device(), bv, {N});
  EXPECT_FALSE(autocast_enabled());
  EXPECT_EQ(linear(x, w, b).dtype(), DType::f32);
  {
    Autocast ac;
    EXPECT_TRUE(autocast_enabled());
    const Tensor y = linear(x, w, b);
    EXPECT_EQ(y.dtype(), DType::f16);
    // float64 on the f16-rounded operands; the f16 result adds one rounding.
    EXPECT_TRUE(close(y.to_vector(), ref_linear(r16(xv), r16(wv), r16(bv), M, K, N), 2e-3, 1e-3));
    EXPECT_EQ(matmul(x, w.t()).dtype(), DType::f16);
    EXPECT_EQ(gemm(x, w, Tensor(), 1.0, 0.0, false, true).dtype(), DType::f16);
    Tensor img = Tensor::from_host(device(), uniform(rng, 2 * 3 * 6 * 6), {2, 3, 6, 6});
    Tensor k = Tensor::from_host(device(), uniform(rng, 4 * 3 * 3 * 3), {4, 3, 3, 3});
    EXPECT_EQ(conv2d(img, k).dtype(), DType::f16);
    // elementwise ops follow their inputs: f16 stays f16, f16 with f32 promotes to f32
    EXPECT_EQ(relu(y).dtype(), DType::f16);
    EXPECT_EQ(add(y, zeros(device(), {M, N})).dtype(), DType::f32);
    {
      Autocast off(false);
      EXPECT_FALSE(autocast_enabled());
      EXPECT_EQ(linear(x, w, b).dtype(), DType::f32);
    }
    EXPECT_TRUE(autocast_enabled());
  }
  EXPECT_FALSE(autocast_enabled());
  {
    Autocast ac(true, DType::bf16);
    EXPECT_EQ(linear(x, w, b).dtype(), DType::bf16);
  }
  EXPECT_THROW(Autocast(true, DType::i32), ValueError);
}

TEST(Autocast, Float32ListUpcasts) {
  GLT_RNG(rng);
  const int R = 4, C = 11;
  auto v = uniform(rng, R * C, -4, 4);
  Tensor h = Tensor::from_host(device(), v, {R, C}).to(DType::f16);
  Autocast ac;
  EXPECT_EQ(softmax(h, 1).dtype(), DType::f32);
  EXPECT_EQ(log_softmax(h, 1).dtype(), DType::f32);
  EXPECT_EQ(layer_norm(h, 1).dtype(), DType::f32);
  EXPECT_EQ(rms_norm(h, 1).dtype(), DType::f32);
  Tensor t = Tensor::from_host(device(), std::vector<std::int32_t>{1, 0, 10, 3}, {R}, DType::i32);
  const Tensor loss = cross_entropy(h, t);
  EXPECT_EQ(loss.dtype(), DType::f32);
  // float64 cross entropy on the f16 logits
  const auto hv = r16(v);
  const int cls[] = {1, 0, 10, 3};
  double ref = 0;
  for (int r = 0; r < R; ++r) {
    double mx = -1e300, s = 0;
    for (int c = 0; c < C; ++c) mx = std::max(mx, double(hv[r * C + c]));
    for (int c = 0; c < C; ++c) s += std::exp(hv[r * C + c] - mx);
    ref += std::log(s) + mx - hv[r * C + cls[r]];
  }
  EXPECT_NEAR(loss.item(), ref / R, 1e-5 * std::max(1.0, std::fabs(ref / R)));
  EXPECT_EQ(mse_loss(h, h).dtype(), DType::f32);
}

// The forward in f16 under autocast, the float32 master weight's gradient in float32, equal to the
// float64 gradient of the f16-rounded computation (the f16 upstream gradient rounds once).
TEST(Autocast, GradientsReachFloat32MasterWeights) {
  GLT_RNG(rng);
  const int M = 6, K = 9, N = 4;
  auto xv = uniform(rng, M * K), wv = uniform(rng, N * K), bv = uniform(rng, N);
  Tensor x = Tensor::from_host(device(), xv, {M, K}), w = Tensor::from_host(device(), wv, {N, K}),
         b = Tensor::from_host(device(), bv, {N});
  requires_grad_(w);
  requires_grad_(b);
  {
    Autocast ac;
    backward(sum(linear(x, w, b)));  // d/dw sum = sum over rows of x
  }
  ASSERT_EQ(grad(w).dtype(), DType::f32);
  ASSERT_EQ(grad(b).dtype(), DType::f32);
  const auto x16 = r16(xv);
  std::vector<double> gw(static_cast<std::size_t>(N * K)), gb(N, M);
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k)
      for (int m = 0; m < M; ++m) gw[n * K + k] += x16[m * K + k];
  EXPECT_TRUE(close(grad(w).to_vector(), gw, 2e-3, 1e-3));
  EXPECT_TRUE(close(grad(b).to_vector(), gb, 0, 0));
}

TEST(GradScaler, ScalesUnscalesExactlyAndSkipsInfSteps) {
  GLT_RNG(rng);
  const int n = 19;
  auto p0 = uniform(rng, n), gv = uniform(rng, n);
  Tensor p = Tensor::from_host(device(), p0, {n});
  requires_grad_(p);
  nn::SGD opt({&p}, 0.5);
  nn::GradScalerOptions o;
  o.init_scale = 1024;
  o.growth_interval = 2;
  nn::GradScaler scaler(o);
  Tensor g = Tensor::from_host(device(), gv, {n});
  // a clean step: the gradient arrives scaled, is unscaled exactly (a power of two), p -= lr g
  backward(scaler.scale(sum(mul(p, g))));
  {
    std::vector<double> scaled(gv.begin(), gv.end());
    for (auto& e : scaled) e *= 1024;
    EXPECT_TRUE(close(grad(p).to_vector(), scaled, 0, 0));  // scaled until unscale_
  }
  scaler.unscale_(opt);
  EXPECT_TRUE(close(grad(p).to_vector(), std::vector<double>(gv.begin(), gv.end()), 0, 0));
  EXPECT_THROW(scaler.unscale_(opt), ValueError);
  EXPECT_TRUE(scaler.step(opt));
  scaler.update();
  std::vector<double> ref(n);
  for (int i = 0; i < n; ++i) ref[i] = double(p0[i]) - 0.5 * gv[i];
  EXPECT_TRUE(close(p.to_vector(), ref, 1e-6, 1e-7));
  EXPECT_EQ(scaler.get_scale(), 1024);
  // a second clean step: growth_interval 2 reached, the scale doubles
  opt.zero_grad();
  backward(scaler.scale(sum(mul(p, g))));
  EXPECT_TRUE(scaler.step(opt));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 2048);
  // an inf gradient (and a NaN one): the step is skipped, p unchanged, the scale halves
  const std::vector<float> before = p.to_vector();
  for (float bad : {INFINITY, NAN}) {
    opt.zero_grad();
    auto gb = gv;
    gb[n / 2] = bad;
    backward(scaler.scale(sum(mul(p, Tensor::from_host(device(), gb, {n})))));
    EXPECT_FALSE(scaler.step(opt));
    scaler.update();
    EXPECT_EQ(p.to_vector(), before);
  }
  EXPECT_EQ(scaler.get_scale(), 512);
  EXPECT_EQ(scaler.skipped_steps(), 2);
  // a float16 loss is scaled in float32 (65536 * loss would overflow f16's 65504)
  EXPECT_EQ(scaler.scale(full(device(), {}, 2.0).to(DType::f16)).dtype(), DType::f32);
}

TEST(GradScaler, TiedGradientsUnscaledOnceAndErrors) {
  Tensor p = Tensor::from_host(device(), std::vector<float>{1, 2, 3}, {3});
  requires_grad_(p);
  nn::SGD opt({&p, &p}, 0.1);  // the same parameter twice: one gradient
  nn::GradScalerOptions o;
  o.init_scale = 8;
  nn::GradScaler scaler(o);
  backward(scaler.scale(sum(p)));
  scaler.unscale_(opt);
  EXPECT_EQ(grad(p).to_vector(), (std::vector<float>{1, 1, 1}));
  for (auto bad : std::vector<nn::GradScalerOptions>{{0, 2, 0.5, 10, true},
                                                     {INFINITY, 2, 0.5, 10, true},
                                                     {1, 1, 0.5, 10, true},
                                                     {1, 2, 1, 10, true},
                                                     {1, 2, 0.5, 0, true}})
    EXPECT_THROW(nn::GradScaler{bad}, ValueError);
  // disabled: scale() is the loss, step() the optimizer's
  nn::GradScalerOptions off;
  off.enabled = false;
  nn::GradScaler s2(off);
  Tensor l = sum(p);
  EXPECT_EQ(s2.scale(l).impl(), l.impl());
}

// A 2-layer MLP on a fixed regression task: 60 steps of Adam in f16 under Autocast with a
// GradScaler reach the loss of the same steps in f32 within 10% (and both learn).
TEST(Autocast, TrainingInF16MatchesF32) {
  GLT_RNG(rng);
  const int B = 64, I = 16, H = 32;
  auto xv = uniform(rng, B * I), w1v = uniform(rng, H * I, -0.3f, 0.3f), w2v = uniform(rng, H, -0.3f, 0.3f);
  std::vector<float> yv(B);
  for (int b = 0; b < B; ++b) {
    double s = 0;
    for (int i = 0; i < I; ++i) s += std::sin(3.0 * xv[b * I + i]) * (i % 3 - 1);
    yv[b] = static_cast<float>(s / 4);
  }
  Tensor x = Tensor::from_host(device(), xv, {B, I}), y = Tensor::from_host(device(), yv, {B, 1});
  auto train = [&](bool f16) {
    Tensor w1 = Tensor::from_host(device(), w1v, {H, I}), w2 = Tensor::from_host(device(), w2v, {1, H});
    requires_grad_(w1);
    requires_grad_(w2);
    nn::Adam opt(std::vector<Tensor*>{&w1, &w2}, 1e-2);
    nn::GradScalerOptions o;
    o.enabled = f16;
    nn::GradScaler scaler(o);
    float first = 0, last = 0;
    for (int s = 0; s < 60; ++s) {
      opt.zero_grad();
      Tensor loss;
      {
        Autocast ac(f16);
        loss = mse_loss(linear(relu(linear(x, w1)), w2), y);
      }
      EXPECT_EQ(loss.dtype(), DType::f32);
      backward(scaler.scale(loss));
      scaler.step(opt);
      scaler.update();
      (s == 0 ? first : last) = loss.item();
    }
    EXPECT_EQ(w1.dtype(), DType::f32);
    return std::make_pair(first, last);
  };
  const auto [f0, f1] = train(false);
  const auto [h0, h1] = train(true);
  std::printf("mse: f32 %.5f -> %.5f, f16 %.5f -> %.5f\n", f0, f1, h0, h1);
  EXPECT_LT(f1, 0.5 * f0);
  EXPECT_LT(h1, 0.5 * h0);
  EXPECT_NEAR(h1, f1, 0.1 * f1 + 1e-4);
}
