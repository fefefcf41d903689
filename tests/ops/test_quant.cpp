// Weight-only quantization (gltensor/quant.hpp): the packed layout decoded on the host against the
// f32 weights, dequantize bit for bit, quantized_linear (GEMV and GEMM, split K, grids past one
// dispatch, NaN/Inf in x, 0 rows) against float64 products of the decoded weights, gradients
// against finite differences, safetensors round trips and errors.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <map>

#include "grad_check.hpp"
#include "ops/quant_plan.hpp"
#include "quant_ref.hpp"
#include "test_util.hpp"

using namespace gltensor;
using namespace glt_test;

namespace {

const QuantFormat kFormats[] = {QuantFormat::int8, QuantFormat::int4};
// Runs body() with quantized_linear's kernel chosen by shape and device, then with each forced.
template <typename Body>
void for_each_kernel(Body&& body,
                     std::initializer_list<const char*> kernels = {"", "gemv", "words", "words-m", "serial", "gemm"}) {
  for (const char* kernel : kernels) {
    SCOPED_TRACE(std::string("kernel '") + kernel + "'");
    ScopedSettings set;
    const bool mantissa = std::string(kernel) == "words-m";  // the words GEMV, int4 through the mantissa
    set->qlinear_kernel = detail::parse_qlinear_kernel(mantissa ? "words" : kernel);
    if (mantissa) set->qlinear_gemv = detail::parse_qlinear_gemv("4x2x64m");
    body();
  }
}

// Random weights with a few exact zeros (a zero row or block gets d = 0).
std::vector<float> weights(std::mt19937_64& rng, std::int64_t N, std::int64_t K) {
  auto w = uniform(rng, static_cast<std::size_t>(N * K), -2, 2);
  if (N > 2)
    for (std::int64_t k = 0; k < K; ++k) w[static_cast<std::size_t>(2 * K + k)] = 0.0f;  // row 2 all zero
  return w;
}

// Checks the quantized values and scales of w against its f32 values, per the documented rules.
::testing::AssertionResult layout_ok(const QuantizedWeight& q, const std::vector<float>& w) {
  const std::int64_t N = q.out_features, K = q.in_features, Kp = q.padded_in(), Kb = Kp / 32;
  const HostQuant h = decode(q);
  const bool q4 = q.format == QuantFormat::int4;
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t b = 0; b < (q4 ? Kb : 1); ++b) {
      const std::int64_t k0 = q4 ? b * 32 : 0, k1 = q4 ? std::min(K, k0 + 32) : K;
      double amax = 0, m = 0;
      for (std::int64_t k = k0; k < k1; ++k) {
        const double v = w[static_cast<std::size_t>(n * K + k)];
        if (std::fabs(v) > amax) amax = std::fabs(v), m = v;
      }
      const double d = h.scales[static_cast<std::size_t>(q4 ? n * Kb + b : n)];
      const double want = q4 ? m / -8.0 : amax / 127.0;  // before f16 rounding
      // f16's rounding: 2^-11 of the value where it is normal, half of 2^-24 (the subnormals' step)
      // below 2^-14 (a row of small weights: GLTENSOR_TEST_SEED=14248877845016218358 in
      // GridPastOneDispatch, scale 327 x 2^-24 for 1.9513e-05)
      if (std::fabs(d - want) > std::max(std::ldexp(std::fabs(want), -10), std::ldexp(1.0, -25)))
        return ::testing::AssertionFailure() << "row " << n << " block " << b << ": scale " << d << ", want " << want;
      for (std::int64_t k = k0; k < (q4 ? k0 + 32 : Kp); ++k) {
        const int qv = h.q[static_cast<std::size_t>(n * Kp + k)];
        if (k >= K) {
          if (qv != 0) return ::testing::AssertionFailure() << "pad [" << n << ", " << k << "] holds " << qv;
          continue;
        }
        const double v = w[static_cast<std::size_t>(n * K + k)];
        if (qv < (q4 ? -8 : -127) || qv > (q4 ? 7 : 127))
          return ::testing::AssertionFailure() << "[" << n << ", " << k << "] q " << qv << " out of range";
        const double err = d == 0 ? std::fabs(v) : std::fabs(qv * d - v);
        // Nearest, except int4's values of the other sign than m beyond 7.5 |d|: clamped to 7.
        const bool clamped = q4 && qv == 7 && v / d >= 7.5 - 1e-3;
        if (!clamped && err > 0.5 * std::fabs(d) * (1 + 1e-3) + 1e-30)
          return ::testing::AssertionFailure()
                 << "[" << n << ", " << k << "] w " << v << " -> q " << qv << " * d " << d;
        if (q4 && v == m && d != 0 && qv != -8)
          return ::testing::AssertionFailure()
                 << "[" << n << ", " << k << "] the block's largest value maps to " << qv << ", not -8";
      }
    }
  return ::testing::AssertionSuccess();
}

}  // namespace

TEST(Quant, LayoutAndExactDequantize) {
  GLT_RNG(rng);
  for (QuantFormat f : kFormats)
    for (auto [N, K] : std::vector<std::pair<std::int64_t, std::int64_t>>{
             {1, 1}, {3, 5}, {7, 33}, {16, 64}, {5, 100}, {4, 31}, {2, 200}, {0, 8}, {3, 0}}) {
      SCOPED_TRACE(std::string(quant_format_name(f)) + " [" + std::to_string(N) + ", " + std::to_string(K) + "]");
      const auto w = weights(rng, N, K);
      const QuantizedWeight q = quantize(Tensor::from_host(device(), w, {N, K}), f);
      EXPECT_EQ(q.padded_in(), (K + 31) / 32 * 32);
      EXPECT_TRUE(layout_ok(q, w));
      // dequantize: q * d exactly.
      const HostQuant h = decode(q);
      const auto got = dequantize(q).to_vector();
      ASSERT_EQ(got.size(), h.w.size());
      for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], static_cast<float>(h.w[i])) << "element " << i;
    }
}

// The pad columns past K come from no load past w's end (quant.comp's w_at clamps its column to
// K - 1 and replaces the value by 0 with a select): w [N, K] is the leading rows of a wider
// storage whose row N (just past w's end, the last row's pad columns would read it) is NaN, and
// each row's last column holds its largest magnitude (a clamped load kept past K repeats it into
// the pads). K ending mid-word and mid-block; the pads must hold 0 and the scales be the rows'.
// Sabotage: the select dropped (pads take the next row's or the NaN), or the clamp one short.
TEST(Quant, PadColumnsPastTheEnd) {
  GLT_RNG(rng);
  for (QuantFormat f : kFormats)
    for (std::int64_t K : {1, 3, 5, 31, 33, 45, 63}) {
      const std::int64_t N = 3;
      SCOPED_TRACE(std::string(quant_format_name(f)) + " K " + std::to_string(K));
      auto wide = uniform(rng, static_cast<std::size_t>((N + 1) * K), -2, 2);
      for (std::int64_t k = 0; k < K; ++k) wide[static_cast<std::size_t>(N * K + k)] = NAN;
      for (std::int64_t n = 0; n < N; ++n) wide[static_cast<std::size_t>(n * K + K - 1)] = n % 2 ? 3.0f : -3.0f;
      const std::vector<float> w(wide.begin(), wide.begin() + N * K);
      const Tensor wt = Tensor::from_host(device(), wide, {N + 1, K}).narrow(0, 0, N);
      const QuantizedWeight q = quantize(wt, f);
      EXPECT_TRUE(layout_ok(q, w));
      const HostQuant h = decode(q);
      const auto got = dequantize(q).to_vector();
      ASSERT_EQ(got.size(), h.w.size());
      for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], static_cast<float>(h.w[i])) << "element " << i;
    }
}

TEST(Quant, FromHalfAndStridedWeights) {
  GLT_RNG(rng);
  const auto w = uniform(rng, 6 * 40);
  Tensor base = Tensor::from_host(device(), w, {40, 6});
  const Tensor wt = base.t();  // [6, 40], a transposed view
  std::vector<float> wt_host(240);
  for (int n = 0; n < 6; ++n)
    for (int k = 0; k < 40; ++k) wt_host[static_cast<std::size_t>(n * 40 + k)] = w[static_cast<std::size_t>(k * 6 + n)];
  for (QuantFormat f : kFormats) {
    EXPECT_TRUE(layout_ok(quantize(wt, f), wt_host));
    const Tensor h = wt.to(DType::f16);
    EXPECT_TRUE(layout_ok(quantize(h, f), h.to_vector()));
  }
}

TEST(Quant, LinearAgainstFloat64) {
  GLT_RNG(rng);
  for_each_kernel([&] {
    for (QuantFormat f : kFormats)
      for (auto [M, N, K] : std::vector<std::array<std::int64_t, 3>>{{1, 1, 1},
                                                                     {1, 7, 33},
                                                                     {2, 65, 64},
                                                                     {3, 33, 100},
                                                                     {5, 17, 31},
                                                                     {8, 40, 96},
                                                                     {9, 70, 33},
                                                                     {70, 65, 130},
                                                                     {130, 3, 64},
                                                                     {0, 5, 32}})
        for (bool with_bias : {false, true}) {
          SCOPED_TRACE(std::string(quant_format_name(f)) + " M " + std::to_string(M) + " N " + std::to_string(N) +
                       " K " + std::to_string(K) + (with_bias ? " bias" : ""));
          const auto w = weights(rng, N, K);
          const QuantizedWeight q = quantize(Tensor::from_host(device(), w, {N, K}), f);
          const auto x = uniform(rng, static_cast<std::size_t>(M * K));
          const auto b = with_bias ? uniform(rng, static_cast<std::size_t>(N)) : std::vector<float>{};
          const Tensor y = quantized_linear(Tensor::from_host(device(), x, {M, K}), q,
                                            with_bias ? Tensor::from_host(device(), b, {N}) : Tensor());
          ASSERT_EQ(y.shape(), (Shape{M, N}));
          ASSERT_EQ(y.dtype(), DType::f32);
          const HostQuant h = decode(q);
          EXPECT_TRUE(close(y.to_vector(), linear_ref(to_double(x), h.w, to_double(b), M, N, K), 1e-5,
                            2e-6 * static_cast<double>(K) + 1e-6));
        }
  });
}

TEST(Quant, LinearNanInfAndBatchDims) {
  GLT_RNG(rng);
  for_each_kernel([&] {
    for (QuantFormat f : kFormats)
      for (std::int64_t M : {1, 3, 12})    // GEMV (MT 1 and 4) and GEMM
        for (std::int64_t K : {45, 36}) {  // scalar and vec4 loads of x, both with pad columns
          SCOPED_TRACE(std::string(quant_format_name(f)) + " M " + std::to_string(M) + " K " + std::to_string(K));
          const std::int64_t N = 9;
          const auto w = weights(rng, N, K);
          const QuantizedWeight q = quantize(Tensor::from_host(device(), w, {N, K}), f);
          auto x = uniform(rng, static_cast<std::size_t>(M * K));
          sprinkle_specials(x);
          // Specials near the start of odd rows (even rows past 0 stay finite): a kernel reading past
          // K (into the next row, against the zero pad weights) would turn its row's outputs to NaN.
          for (std::int64_t m = 1; m < M; ++m)
            if (m % 2) x[static_cast<std::size_t>(m * K + 3)] = m % 4 == 1 ? INFINITY : NAN;
          // Row 2's last element infinite: a load clamped to it and kept past K meets the zero pad
          // weights (NaN, not the row's infinities). x the leading rows of a storage whose next
          // row is NaN: the last row's pad columns are past x's end, where the kernels' clamped
          // loads read nothing (qlinear.comp's x_quad and the GEMM's staging: sabotage, either
          // select of x_quad dropped, or the GEMM's select past K, fails here).
          if (M > 2) x[static_cast<std::size_t>(3 * K - 1)] = -INFINITY;
          std::vector<float> xw = x;
          xw.resize(static_cast<std::size_t>((M + 1) * K), NAN);
          const Tensor y = quantized_linear(Tensor::from_host(device(), xw, {1, M + 1, K}).narrow(1, 0, M), q);
          ASSERT_EQ(y.shape(), (Shape{1, M, N}));
          EXPECT_TRUE(close(y.to_vector(), linear_ref(to_double(x), decode(q).w, {}, M, N, K), 1e-5, 1e-4));
        }
  });
}

TEST(Quant, LinearSplitK) {
  GLT_RNG(rng);
  for (const char* kernel : {"gemv", "words", "serial", "gemm"})
    for (QuantFormat f : kFormats)
      for (auto [M, K] : std::vector<std::array<std::int64_t, 2>>{{1, 4100}, {4, 4100}, {20, 200}}) {
        SCOPED_TRACE(std::string(kernel) + " " + quant_format_name(f) + " M " + std::to_string(M) + " K " +
                     std::to_string(K));
        ScopedSettings set;
        set->qlinear_kernel = detail::parse_qlinear_kernel(kernel);
        // A loop limit that leaves one block per invocation (GEMV: 64 blocks per launch) or two.
        const std::int64_t N = 5;
        const detail::QLinearPlan p =
            detail::plan_qlinear(M, K, true, 1u << 30, set->qlinear_kernel, set->qlinear_gemv, N);
        if (p.gemv && !p.serial && K <= 64 * 32) continue;  // the GEMV splits past 64 blocks
        const std::uint64_t limit = detail::qlinear_loops(p, p.gemv && !p.serial ? 1 : 2);
        ASSERT_LT(detail::plan_qlinear(M, K, true, limit, set->qlinear_kernel, set->qlinear_gemv, N).blocks_per_launch,
                  (K + 31) / 32);  // split
        const auto w = weights(rng, N, K);
        const QuantizedWeight q = quantize(Tensor::from_host(device(), w, {N, K}), f);
        const auto x = uniform(rng, static_cast<std::size_t>(M * K));
        const auto b = uniform(rng, static_cast<std::size_t>(N));
        Tensor y;
        {
          ScopedLoopLimit lim(limit);
          y = quantized_linear(Tensor::from_host(device(), x, {M, K}), q, Tensor::from_host(device(), b, {N}));
        }
        EXPECT_TRUE(close(y.to_vector(), linear_ref(to_double(x), decode(q).w, to_double(b), M, N, K), 1e-5, 1e-3));
      }
}

// Grids past a dispatch's workgroup count, lowered to 5 per axis (ScopedDispatchLimit, as on a device of that
// limit: Launch's split does not depend on it): the GEMV's 8 groups of 2 features per workgroup (one block per row)
// over N = 16 x 5 + 17 rows, 7 workgroups, as a 4 x 2 grid in one dispatch; int8's quantization, N workgroups, as
// 5 x 20 over 4 dispatches (u_group_base). suite18: at the real limit (65535 on llvmpipe, N = 16 x 65535 + 17) the
// same programs took about 9 CPU-s of llvmpipe, one dispatch each, and on GPUs (2^31 - 1) the grid never split.
TEST(Quant, GridPastOneDispatch) {
  GLT_RNG(rng);
  constexpr std::uint32_t kLimit = 5;
  const std::int64_t N = 16 * kLimit + 17, K = 3;
  const auto w = uniform(rng, static_cast<std::size_t>(N * K));
  const auto x = uniform(rng, static_cast<std::size_t>(K));
  ScopedDispatchLimit limit(kLimit);
  for (QuantFormat f : kFormats) {
    SCOPED_TRACE(quant_format_name(f));
    const QuantizedWeight q = quantize(Tensor::from_host(device(), w, {N, K}), f);
    EXPECT_TRUE(layout_ok(q, w));
    const auto ref = linear_ref(to_double(x), decode(q).w, {}, 1, N, K);
    for_each_kernel(  // the GEMV, whose grid passes the limit, and the default (the GEMM's stays below)
        [&] {
          EXPECT_TRUE(close(quantized_linear(Tensor::from_host(device(), x, {1, K}), q).to_vector(), ref, 1e-5, 1e-4));
        },
        {"", "gemv", "words"});
  }
}

// The words GEMV's shapes (GLTENSOR_QLINEAR_GEMV): rows per group that do not divide N, trips
// whose last words pass the row's end (unroll), groups smaller and larger than 64 invocations.
// Software rasterizers run each shape and problem in one of the two formats, alternating (each
// shape in both, at two problems each; every problem in both, at five shapes each; int4 at every
// problem of the shapes of its own words, m and p): LLVM compiles a
// program per shape, format and problem (MT, TPR and X_VEC4 follow M and K), and every flag and flag
// pair of the other half runs in the other tests of the pass (scripts/program_flags.py; suite41b,
// bench/RESULTS.md). GPUs run all of them.
TEST(Quant, WordsGemvShapes) {
  GLT_RNG(rng);
  const bool software = device().adapter().software;
  int shape_i = 0;
  for (const char* shape :
       {"4x2x64", "8x1x64", "3x3x8", "8x4x128", "16x2x256", "1x8x32", "4x2x64m", "8x1x32m", "4x2x64p", "3x1x8p"}) {
    ++shape_i;
    const char last = std::string(shape).back();
    const bool int4_words = last == 'm' || last == 'p';  // int4's MANTISSA / PAIRS words: every problem
    int format_i = 0;
    for (QuantFormat f : kFormats) {
      ++format_i;
      int problem_i = 0;
      for (auto [M, N, K] :
           std::vector<std::array<std::int64_t, 3>>{{1, 19, 100}, {3, 9, 1000}, {1, 37, 31}, {2, 5, 64}}) {
        ++problem_i;
        if (software && !(int4_words && f == QuantFormat::int4) && (shape_i + format_i + problem_i) % 2 == 0) continue;
        SCOPED_TRACE(std::string(shape) + " " + quant_format_name(f) + " M " + std::to_string(M) + " N " +
                     std::to_string(N) + " K " + std::to_string(K));
        ScopedSettings set;
        set->qlinear_kernel = detail::QlinearKernelSetting::words;
        set->qlinear_gemv = detail::parse_qlinear_gemv(shape);
        const auto w = weights(rng, N, K);
        const QuantizedWeight q = quantize(Tensor::from_host(device(), w, {N, K}), f);
        const auto x = uniform(rng, static_cast<std::size_t>(M * K));
        const auto b = uniform(rng, static_cast<std::size_t>(N));
        const Tensor y =
            quantized_linear(Tensor::from_host(device(), x, {M, K}), q, Tensor::from_host(device(), b, {N}));
        EXPECT_TRUE(close(y.to_vector(), linear_ref(to_double(x), decode(q).w, to_double(b), M, N, K), 1e-5,
                          2e-6 * static_cast<double>(K) + 1e-6));
      }
    }
  }
}

TEST(Quant, Gradients) {
  GLT_RNG(rng);
  for_each_kernel([&] {
    for (QuantFormat f : kFormats)
      for (std::int64_t M : {2, 11}) {
        SCOPED_TRACE(std::string(quant_format_name(f)) + " M " + std::to_string(M));
        const std::int64_t N = 6, K = 37;
        const QuantizedWeight q = quantize(Tensor::from_host(device(), weights(rng, N, K), {N, K}), f);
        const std::vector<double> wd = decode(q).w;
        EXPECT_TRUE(grad_check(
            rng, {{M, K}, {N}}, [&](const std::vector<Tensor>& in) { return quantized_linear(in[0], q, in[1]); },
            [&](const std::vector<HostT>& in) { return linear_ref(in[0].v, wd, in[1].v, M, N, K); }));
      }
  });
}

TEST(Quant, SafetensorsRoundTrip) {
  GLT_RNG(rng);
  const std::string path = ::testing::TempDir() + "quant_roundtrip.safetensors";
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> meta;
  std::vector<QuantizedWeight> qs;
  for (QuantFormat f : kFormats) {
    qs.push_back(quantize(Tensor::from_host(device(), weights(rng, 7, 50), {7, 50}), f));
    to_state(qs.back(), std::string("layer.") + quant_format_name(f), tensors, meta);
  }
  nn::save_safetensors(path, tensors, meta);
  const auto loaded = nn::load_safetensors(path, device());
  const auto lmeta = nn::load_safetensors_metadata(path);
  EXPECT_EQ(lmeta, meta);
  EXPECT_EQ(loaded.at("layer.int4.qdata").dtype(), DType::u8);
  EXPECT_EQ(loaded.at("layer.int4.qscales").dtype(), DType::f16);
  const auto x = Tensor::from_host(device(), uniform(rng, 3 * 50), {3, 50});
  for (const QuantizedWeight& q : qs) {
    const std::string name = std::string("layer.") + quant_format_name(q.format);
    ASSERT_TRUE(has_quantized(name, lmeta));
    const QuantizedWeight r = from_state(name, loaded, lmeta);
    EXPECT_EQ(r.format, q.format);
    EXPECT_EQ(r.out_features, 7);
    EXPECT_EQ(r.in_features, 50);
    EXPECT_EQ(r.data.to_bytes(), q.data.to_bytes());
    EXPECT_EQ(r.scales.to_bytes(), q.scales.to_bytes());
    EXPECT_EQ(quantized_linear(x, r).to_vector(), quantized_linear(x, q).to_vector());
  }
  EXPECT_FALSE(has_quantized("other", lmeta));
  EXPECT_THROW(from_state("other", loaded, lmeta), ValueError);
  auto bad = lmeta;
  bad["layer.int4.in_features"] = "70";  // Kp 96: data would be [7, 48]
  EXPECT_THROW(from_state("layer.int4", loaded, bad), ValueError);
  bad["layer.int4.quant"] = "int3";
  EXPECT_THROW(from_state("layer.int4", loaded, bad), ValueError);
  std::remove(path.c_str());
}

TEST(Quant, Errors) {
  const Tensor w = Tensor::from_host(device(), std::vector<float>(12, 0.5f), {3, 4});
  EXPECT_THROW(quantize(w.view({12}), QuantFormat::int8), ShapeError);
  EXPECT_THROW(quantize(w.to(DType::i32), QuantFormat::int4), DTypeError);
  const QuantizedWeight q = quantize(w, QuantFormat::int4);
  const Tensor x = Tensor::from_host(device(), std::vector<float>(10, 1.0f), {2, 5});
  try {
    quantized_linear(x, q);
    FAIL() << "no error";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 5]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("int4 weight [3, 4]"), std::string::npos) << e.what();
  }
  const Tensor x4 = Tensor::from_host(device(), std::vector<float>(8, 1.0f), {2, 4});
  EXPECT_THROW(quantized_linear(x4.to(DType::i32), q), DTypeError);
  EXPECT_THROW(quantized_linear(x4, q, Tensor::from_host(device(), std::vector<float>(4, 0.0f), {4})), ShapeError);
  QuantizedWeight broken = q;
  broken.scales = broken.scales.to(DType::f32);
  EXPECT_THROW(quantized_linear(x4, broken), ValueError);
  // The device stays usable.
  EXPECT_EQ(quantized_linear(x4, q).to_vector(), std::vector<float>(6, 2.0f));
}
