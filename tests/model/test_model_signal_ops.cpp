// ONNX ops of audio front ends and detectors (issue #22) through gltensor::Model: STFT, the
// window functions, MelWeightMatrix, GatherND, OneHot, ReverseSequence and BitShift against
// float64 (or exact integer) CPU references written here from the ONNX spec, with fresh random
// inputs (the seed is printed on failure), edge shapes (size 0 and 1, odd sizes, one frame,
// out-of-range indices) and the ModelErrors of values the mappings do not support. Each op is
// a composition of existing kernels (gathers, elementwise ops, matmul), so the suite adds few
// programs.
#include <cmath>
#include <limits>

#include "gltensor/recording.hpp"
#include "onnx_builder.hpp"
#include "runtime/capture.hpp"
#include "test_util.hpp"

using namespace gltensor;
using namespace glt_test;
using B = OnnxBuilder;

namespace {

constexpr int kF32 = onnx::TensorProto::FLOAT, kF16 = onnx::TensorProto::FLOAT16, kI64 = onnx::TensorProto::INT64,
              kI32 = onnx::TensorProto::INT32, kU8 = onnx::TensorProto::UINT8;

Tensor ints(const std::vector<std::int32_t>& v, const Shape& s) {
  return Tensor::from_host(device(), std::span<const std::int32_t>(v), s);
}
Tensor floats(const std::vector<float>& v, const Shape& s) { return Tensor::from_host(device(), v, s); }
Tensor scalar_i(std::int32_t v) { return ints({v}, {}); }

// ---- float64 references ----

// w[i] for the symmetric (N = n - 1) or periodic (N = n) window.
double ref_window(const std::string& op, std::int64_t i, std::int64_t n, bool periodic) {
  const double N = static_cast<double>(periodic ? n : n - 1), x = static_cast<double>(i);
  if (op == "HannWindow") return std::pow(std::sin(M_PI * x / N), 2);
  if (op == "HammingWindow") return 25.0 / 46.0 - 21.0 / 46.0 * std::cos(2 * M_PI * x / N);
  return 0.42 - 0.5 * std::cos(2 * M_PI * x / N) + 0.08 * std::cos(4 * M_PI * x / N);
}

// ONNX's MelWeightMatrix, [dft / 2 + 1, bins].
std::vector<double> ref_mel(std::int64_t bins, std::int64_t dft, double rate, double lo, double hi) {
  const std::int64_t spec = dft / 2 + 1;
  const double mlo = 2595 * std::log10(1 + lo / 700), mhi = 2595 * std::log10(1 + hi / 700);
  std::vector<std::int64_t> pt;
  for (std::int64_t i = 0; i < bins + 2; ++i) {
    const double mel = mlo + static_cast<double>(i) * (mhi - mlo) / static_cast<double>(bins + 2);
    pt.push_back(static_cast<std::int64_t>(std::floor((dft + 1) * (700 * (std::pow(10, mel / 2595) - 1)) / rate)));
  }
  std::vector<double> w(static_cast<std::size_t>(spec * bins), 0.0);
  for (std::int64_t b = 0; b < bins; ++b) {
    const std::int64_t l = pt[b], c = pt[b + 1], h = pt[b + 2];
    for (std::int64_t j = 0; j < spec; ++j) {
      double v = 0;
      if (j == c)
        v = 1;
      else if (j >= l && j < c)
        v = static_cast<double>(j - l) / static_cast<double>(c - l);
      else if (j > c && j < h)
        v = static_cast<double>(h - j) / static_cast<double>(h - c);
      w[static_cast<std::size_t>(j * bins + b)] = v;
    }
  }
  return w;
}

// STFT of x [Bn, L, ch] -> [Bn, F, m, 2] straight from the definition.
std::vector<double> ref_stft(const std::vector<float>& x, std::int64_t Bn, std::int64_t L, std::int64_t ch,
                             std::int64_t step, const std::vector<float>& w, std::int64_t n, bool onesided) {
  const std::int64_t F = 1 + (L - n) / step, m = onesided ? n / 2 + 1 : n;
  // e^(-2 pi i q / n) for q = j * k mod n (the cos and sin of every j, k: 18% of the binary's CPU).
  std::vector<double> cs(static_cast<std::size_t>(n)), sn(static_cast<std::size_t>(n));
  for (std::int64_t q = 0; q < n; ++q) {
    const double t = -2 * M_PI * static_cast<double>(q) / static_cast<double>(n);
    cs[static_cast<std::size_t>(q)] = std::cos(t);
    sn[static_cast<std::size_t>(q)] = std::sin(t);
  }
  std::vector<double> y;
  for (std::int64_t b = 0; b < Bn; ++b)
    for (std::int64_t f = 0; f < F; ++f)
      for (std::int64_t k = 0; k < m; ++k) {
        double re = 0, im = 0;
        for (std::int64_t j = 0; j < n; ++j) {
          const std::size_t at = static_cast<std::size_t>((b * L + f * step + j) * ch);
          const double wj = w.empty() ? 1.0 : w[j], xr = x[at] * wj, xi = ch == 2 ? x[at + 1] * wj : 0.0;
          const auto q = static_cast<std::size_t>(j * k % n);
          re += xr * cs[q] - xi * sn[q];
          im += xr * sn[q] + xi * cs[q];
        }
        y.push_back(re);
        y.push_back(im);
      }
  return y;
}

}  // namespace

// Every window, periodic and symmetric, sizes 0, 1, 2, odd and even; float16 output; the size
// as a graph input (run on the device) and as an initializer (folded at load).
TEST(SignalOps, WindowsAgainstFloat64) {
  for (const std::string op : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    for (int periodic : {0, 1})
      for (std::int64_t n : {0, 1, 2, 7, 16}) {
        SCOPED_TRACE(op + " periodic=" + std::to_string(periodic) + " size=" + std::to_string(n));
        B m(17);
        m.input("size", {}, kI64).output("y", {n}).output("h", {n}, kF16);
        B::attr_i(m.node(op, {"size"}, {"y"}), "periodic", periodic);
        m.init_i64("n", {}, {n});
        auto& h = m.node(op, {"n"}, {"h"});
        B::attr_i(h, "periodic", periodic);
        B::attr_i(h, "output_datatype", kF16);
        Model model = Model::load(device(), m.save("window"));
        auto ys = model.run({{"size", scalar_i(static_cast<std::int32_t>(n))}});
        std::vector<double> ref;
        for (std::int64_t i = 0; i < n; ++i) ref.push_back(ref_window(op, i, n, periodic != 0));
        ASSERT_EQ(ys.at("y").shape(), (Shape{n}));
        EXPECT_TRUE(close(ys.at("y").to_vector(), ref, 1e-6, 1e-7));  // size 1 symmetric: 0 / 0, NaN
        ASSERT_EQ(ys.at("h").dtype(), DType::f16);
        EXPECT_TRUE(close(ys.at("h").to_vector(), ref, 1e-3, 1e-4));
      }
}

TEST(SignalOps, MelWeightMatrixAgainstFloat64) {
  struct Case {
    std::int64_t bins, dft;
    double rate, lo, hi;
  };
  for (const Case c : {Case{8, 16, 8192, 0, 4096}, Case{1, 8, 16000, 0, 8000}, Case{40, 512, 16000, 20, 8000},
                       Case{13, 401, 22050, 100, 11025}, Case{64, 16, 8000, 0, 4000}}) {
    SCOPED_TRACE("bins " + std::to_string(c.bins) + " dft " + std::to_string(c.dft));
    B m(17);
    m.input("bins", {}, kI32)
        .input("dft", {}, kI64)
        .input("rate", {}, kI32)
        .input("lo", {}, kF32)
        .input("hi", {}, kF32);
    m.output("y");
    m.node("MelWeightMatrix", {"bins", "dft", "rate", "lo", "hi"}, {"y"});
    Model model = Model::load(device(), m.save("mel"));
    auto ys = model.run({{"bins", scalar_i(static_cast<std::int32_t>(c.bins))},
                         {"dft", scalar_i(static_cast<std::int32_t>(c.dft))},
                         {"rate", scalar_i(static_cast<std::int32_t>(c.rate))},
                         {"lo", floats({static_cast<float>(c.lo)}, {})},
                         {"hi", floats({static_cast<float>(c.hi)}, {})}});
    ASSERT_EQ(ys.at("y").shape(), (Shape{c.dft / 2 + 1, c.bins}));
    EXPECT_TRUE(close(ys.at("y").to_vector(), ref_mel(c.bins, c.dft, c.rate, c.lo, c.hi), 1e-6, 1e-7));
  }
  // An upper edge past the sample rate maps outside the DFT bins: refused, naming the node.
  B m(17);
  m.init_i64("bins", {}, {4}).init_i64("dft", {}, {16}).init_i64("rate", {}, {8000});
  m.init("lo", {}, {0.0f}).init("hi", {}, {16000.0f});
  m.output("y");
  m.node("MelWeightMatrix", {"bins", "dft", "rate", "lo", "hi"}, {"y"}, "mel_far");
  EXPECT_THROW_MSG(Model::load(device(), m.save("mel_far")), ModelError,
                   "'mel_far' (MelWeightMatrix): lower_edge_hertz 0");
  // Edges given as run inputs that put points before the first bin (lo 0, hi -100: the points
  // 0, -1, -1, ..., decreasing; once written at row -1) or make them NaN or infinite: refused,
  // never written outside the matrix (review17). (An upper edge below the lower one with every
  // point inside runs, as ONNX's reference does.)
  B r(17);
  r.init_i64("bins", {}, {4}).init_i64("dft", {}, {16}).init_i64("rate", {}, {8000});
  r.input("lo", {}, kF32).input("hi", {}, kF32);
  r.output("y");
  r.node("MelWeightMatrix", {"bins", "dft", "rate", "lo", "hi"}, {"y"}, "mel_edges");
  Model edges = Model::load(device(), r.save("mel_edges"));
  for (const auto& [lo, hi] :
       std::vector<std::pair<float, float>>{{0.0f, -100.0f}, {NAN, 4000.0f}, {0.0f, NAN}, {0.0f, INFINITY}}) {
    SCOPED_TRACE("lo " + std::to_string(lo) + " hi " + std::to_string(hi));
    EXPECT_THROW_MSG(edges.run({{"lo", floats({lo}, {})}, {"hi", floats({hi}, {})}}), ModelError,
                     "'mel_edges' (MelWeightMatrix): lower_edge_hertz");
  }
  // a valid pair on the same model still runs
  auto ok = edges.run({{"lo", floats({0.0f}, {})}, {"hi", floats({4000.0f}, {})}});
  EXPECT_TRUE(close(ok.at("y").to_vector(), ref_mel(4, 16, 8000, 0, 4000), 1e-6, 1e-7));
}

// Real and complex signals, odd lengths and frame sizes, with and without window and
// frame_length, onesided or not, one frame (n = L), n = 1, an empty batch, and an audio-sized
// front end (25 ms frames every 10 ms at 16 kHz).
TEST(SignalOps, StftAgainstFloat64) {
  GLT_RNG(rng);
  struct Case {
    std::int64_t Bn, L, ch, step, n;
    bool window, frame_length, onesided;
  };
  for (const Case c : {Case{2, 37, 1, 3, 8, true, true, true}, Case{2, 37, 1, 3, 8, true, false, false},
                       Case{1, 20, 2, 4, 5, false, true, false}, Case{3, 21, 2, 2, 7, true, false, true},
                       Case{1, 9, 1, 5, 9, false, false, true}, Case{2, 6, 1, 1, 1, true, true, false},
                       Case{0, 16, 1, 4, 8, true, true, true}, Case{1, 4000, 1, 160, 400, true, true, true}}) {
    SCOPED_TRACE("B " + std::to_string(c.Bn) + " L " + std::to_string(c.L) + " ch " + std::to_string(c.ch) + " step " +
                 std::to_string(c.step) + " n " + std::to_string(c.n));
    B m(17);
    m.input("x", {c.Bn, c.L, c.ch}).input("step", {}, kI64).output("y");
    std::vector<std::string> in{"x", "step"};
    if (c.window) m.input("w", {c.n});
    in.push_back(c.window ? "w" : "");
    if (c.frame_length) {
      m.init_i64("fl", {}, {c.n});
      in.push_back("fl");
    }
    B::attr_i(m.node("STFT", in, {"y"}), "onesided", c.onesided);
    Model model = Model::load(device(), m.save("stft"));
    const std::vector<float> x = uniform(rng, static_cast<std::size_t>(c.Bn * c.L * c.ch));
    const std::vector<float> w = c.window ? uniform(rng, static_cast<std::size_t>(c.n), 0, 1) : std::vector<float>{};
    std::map<std::string, Tensor> feeds{{"x", floats(x, {c.Bn, c.L, c.ch})},
                                        {"step", scalar_i(static_cast<std::int32_t>(c.step))}};
    if (c.window) feeds.emplace("w", floats(w, {c.n}));
    const Tensor y = model.run(feeds).at("y");
    const std::int64_t F = 1 + (c.L - c.n) / c.step, mm = c.onesided ? c.n / 2 + 1 : c.n;
    ASSERT_EQ(y.shape(), (Shape{c.Bn, F, mm, 2}));
    // f32 sums of n products of at most 1: absolute error ~ sqrt(n) * 2^-24 * n.
    EXPECT_TRUE(close(y.to_vector(), ref_stft(x, c.Bn, c.L, c.ch, c.step, w, c.n, c.onesided), 1e-4,
                      1e-5 * static_cast<double>(c.n)));
  }
}

// The log-mel front end as exporters write it: STFT(x, step, w, n) -> power (Mul(spec, spec) ->
// ReduceSum over the (re, im) axis, or ReduceSumSquare) -> MatMul by MelWeightMatrix(bins, n, rate,
// lo, hi) -> Add(1e-6) -> Log; x of shape `xs`, w HannWindow(n) or a graph input (gpu_window).
// The saved model's path.
std::string save_logmel(const std::string& name, const std::vector<std::int64_t>& xs, std::int64_t step, std::int64_t n,
                        std::int64_t bins, double rate, double lo, double hi, bool sum_square, bool gpu_window,
                        bool symmetric = false) {
  B m(17);
  m.input("x", xs);
  m.output("y");
  m.init_i64("step", {}, {step}).init_i64("n", {}, {n}).init_i64("last", {1}, {-1});
  m.init_i64("bins", {}, {bins}).init_i64("rate", {}, {static_cast<std::int64_t>(rate)});
  m.init("lo", {}, {static_cast<float>(lo)}).init("hi", {}, {static_cast<float>(hi)});
  m.init("eps", {}, {1e-6f});
  if (gpu_window)
    m.input("w", {n});
  else
    B::attr_i(m.node("HannWindow", {"n"}, {"w"}), "periodic", symmetric ? 0 : 1);
  m.node("STFT", {"x", "step", "w", "n"}, {"spec"});
  if (sum_square) {
    auto& r = m.node("ReduceSumSquare", {"spec"}, {"pow"});
    B::attr_ints(r, "axes", {-1});
    B::attr_i(r, "keepdims", 0);
  } else {
    m.node("Mul", {"spec", "spec"}, {"sq"});
    B::attr_i(m.node("ReduceSum", {"sq", "last"}, {"pow"}), "keepdims", 0);
  }
  m.node("MelWeightMatrix", {"bins", "n", "rate", "lo", "hi"}, {"mel"});
  m.node("MatMul", {"pow", "mel"}, {"mm"});
  m.node("Add", {"mm", "eps"}, {"me"});
  m.node("Log", {"me"}, {"y"});
  return m.save(name);
}

// The float64 log-mel reference of save_logmel's graph: log(sum_k |X_k|^2 mel[k, j] + eps) for
// each frame (ref_stft's, onesided) and mel bin j; [Bn * F, bins] row-major.
std::vector<double> ref_logmel(const std::vector<float>& x, std::int64_t Bn, std::int64_t L, std::int64_t step,
                               const std::vector<float>& w, std::int64_t n, std::int64_t bins, double rate, double lo,
                               double hi) {
  const std::int64_t F = 1 + (L - n) / step, mm = n / 2 + 1;
  const std::vector<double> spec = ref_stft(x, Bn, L, 1, step, w, n, true), mel = ref_mel(bins, n, rate, lo, hi);
  std::vector<double> ref;
  for (std::int64_t r = 0; r < Bn * F; ++r)
    for (std::int64_t j = 0; j < bins; ++j) {
      double acc = 0;
      for (std::int64_t k = 0; k < mm; ++k) {
        const double re = spec[static_cast<std::size_t>((r * mm + k) * 2)],
                     im = spec[static_cast<std::size_t>((r * mm + k) * 2 + 1)];
        acc += (re * re + im * im) * mel[static_cast<std::size_t>(k * bins + j)];
      }
      ref.push_back(std::log(acc + static_cast<double>(1e-6f)));
    }
  return ref;
}

// The log-mel front end (issue #21): STFT -> power (Mul(spec, spec) -> ReduceSum over the (re, im)
// axis, or ReduceSumSquare) -> MatMul by MelWeightMatrix -> Add(eps) -> Log, planned by
// fuse_stft_power with the Add and Log in the mel MatMul's epilogue. A signal of a known shape
// [., ., 1] with a constant window: its frames (a view) times the DFT matrix (a constant) with the
// square in that matmul's epilogue, then the mel MatMul over the (re, im) columns against the mel
// rows twice, which fuse_stft_mel makes one gltensor.StftMel node: 1 dispatch of nn/stft_mel.hpp's
// kernel (its plan's frames, slices and invocations, and forced ones: frames that do not divide
// the frame count, one invocation a round of bins, several rounds); with Settings::stft_mel off
// fuse_stft_power's 2 dispatches (fuse_mlp leaves the two by default: slower fused on the H200),
// 1 where fuse_mlp is asked to chain them (Settings::fused_mlp 1, 4 rows a workgroup; the fused
// kernel reads the frames of each signal in place). A signal of another shape, or a window on the
// GPU (a graph input, multiplied into the matrix each run: a dispatch more): the STFT with the
// square in its matmul's epilogue: 2 dispatches. The unfused graph (Settings::fuse_elementwise
// off) runs 6 (ReduceSumSquare as a square and a sum too). Each plan against the float64
// reference and the fused ones against the unfused: odd frame lengths, steps and bin counts,
// batches, one frame, frames of 2, the audio-sized case (1 s at 16 kHz, 25 ms every 10 ms, 40 bins).
TEST(SignalOps, LogMelFusedAgainstFloat64) {
  GLT_RNG(rng);
  struct Case {
    std::int64_t Bn, L, step, n, bins;
    double rate, lo, hi;
    bool sum_square, gpu_window, dynamic, symmetric;  // symmetric: HannWindow periodic=0 (w[j] = w[n - 1 - j])
  };
  for (const Case& c : {Case{1, 16000, 160, 400, 40, 16000, 20, 8000, false, false, false, false},
                        Case{2, 1001, 7, 25, 5, 8000, 50, 3900, false, false, false, true},
                        Case{3, 333, 11, 64, 9, 16000, 0, 8000, true, false, false, false},
                        Case{1, 31, 3, 31, 3, 8000, 100, 4000, false, false, false, false},
                        Case{1, 40, 40, 40, 1, 8000, 0, 4000, false, false, false, false},
                        Case{3, 4000, 97, 201, 23, 16000, 10, 7900, true, false, false, true},
                        Case{2, 9, 2, 2, 2, 8000, 0, 4000, false, false, false, false},
                        Case{2, 517, 13, 48, 7, 16000, 30, 7000, false, true, false, false},
                        Case{2, 517, 13, 48, 7, 16000, 30, 7000, true, false, true, false}}) {
    SCOPED_TRACE("B " + std::to_string(c.Bn) + " L " + std::to_string(c.L) + " step " + std::to_string(c.step) + " n " +
                 std::to_string(c.n) + " bins " + std::to_string(c.bins) +
                 (c.sum_square ? " ReduceSumSquare" : " Mul+ReduceSum") + (c.gpu_window ? " GPU window" : "") +
                 (c.dynamic ? " signal [B, -1, -1]" : "") + (c.symmetric ? " symmetric window" : ""));
    const std::string path = save_logmel(
        "logmel", c.dynamic ? std::vector<std::int64_t>{c.Bn, -1, -1} : std::vector<std::int64_t>{c.Bn, c.L, 1}, c.step,
        c.n, c.bins, c.rate, c.lo, c.hi, c.sum_square, c.gpu_window, c.symmetric);
    const std::vector<float> x = uniform(rng, static_cast<std::size_t>(c.Bn * c.L));
    std::vector<float> w;
    for (std::int64_t i = 0; i < c.n; ++i)
      w.push_back(c.gpu_window ? uniform(rng, 1, 0, 1)[0]
                               : static_cast<float>(ref_window("HannWindow", i, c.n, !c.symmetric)));
    std::map<std::string, Tensor> feeds{{"x", floats(x, {c.Bn, c.L, 1})}};
    if (c.gpu_window) feeds.emplace("w", floats(w, {c.n}));
    const std::int64_t F = 1 + (c.L - c.n) / c.step;
    const std::vector<double> ref = ref_logmel(x, c.Bn, c.L, c.step, w, c.n, c.bins, c.rate, c.lo, c.hi);
    const bool frames = !c.gpu_window && !c.dynamic;  // the frames times the DFT matrix
    // unfused, fused (one kernel), fuse_mlp's chain, the two matmuls, and the one kernel forced to
    // 3 frames, 2 slices, 64 invocations and the twiddles' table form (the frames' tail), to 2
    // frames, 32 slices, 64 invocations (2 bins a round), to 4 twiddles in registers, and to 32
    // invocations (refused past 32 mel bins: the two matmuls run)
    constexpr int kPlans = 8;
    const char* names[kPlans] = {"unfused",  "fused",   "fuse_mlp on", "the two matmuls",
                                 "3x2x64x1", "2x32x64", "1x4x256x4",   "1x1x32"};
    const std::int64_t forced[kPlans][4] = {{0, 0, 0, 0},  {0, 0, 0, 0},   {0, 0, 0, 0},   {0, 0, 0, 0},
                                            {3, 2, 64, 1}, {2, 32, 64, 0}, {1, 4, 256, 4}, {1, 1, 32, 0}};
    std::vector<float> got[kPlans];
    for (int plan = 0; plan < kPlans; ++plan) {
      SCOPED_TRACE(names[plan]);
      Model model = [&] {
        ScopedSettings pass;
        pass->fuse_elementwise = plan > 0;
        pass->stft_mel = plan != 2 && plan != 3 ? 1 : 0;  // (1: on llvmpipe too, -1 is GPUs only)
        pass->fused_mlp = plan == 2 ? 1 : -1;             // (-1, the default: not over the frames, on GPUs too)
        if (plan == 2) pass->fused_mlp_rows = 4;          // (4 rows a workgroup: the 402 wide layer in 32 KiB)
        return Model::load(device(), path);
      }();
      const std::string summary = model.plan_summary();
      if (plan > 0) {
        EXPECT_NE(summary.find("1 STFT power spectra into their mel MatMul"), std::string::npos) << summary;
      }
      const bool one_kernel = frames && plan != 0 && plan != 2 && plan != 3;
      EXPECT_EQ(summary.find("1 STFT power spectra and mel MatMuls in one kernel") != std::string::npos, one_kernel)
          << summary;
      if (plan == 2 && frames) {
        EXPECT_NE(summary.find("2 MatMul/Gemm layers fused into 1 MLP"), std::string::npos) << summary;
      }
      // (the forced settings hold for the runs too: the kernel's plan reads them)
      ScopedSettings run;
      run->stft_mel_frames = forced[plan][0], run->stft_mel_slices = forced[plan][1];
      run->stft_mel_local = forced[plan][2], run->stft_mel_twiddles = forced[plan][3];
      model.run(feeds);  // kernels compiled, the DFT matrix built
      device().synchronize();
      const std::uint64_t d0 = device().dispatch_count();
      const Tensor y = model.run(feeds).at("y");
      device().synchronize();
      const std::uint64_t dispatches = device().dispatch_count() - d0;
      const bool refused = plan == 7 && c.bins > 32;  // (the planner's node, the two matmuls' dispatches)
      const unsigned want = plan == 0 ? 6u : (one_kernel && !refused) || (plan == 2 && frames) ? 1u : 2u;
      EXPECT_EQ(dispatches, want + (c.gpu_window ? 1u : 0u));
      ASSERT_EQ(y.shape(), (Shape{c.Bn, F, c.bins}));
      got[plan] = y.to_vector();
      // f32 STFT sums (relative error ~ 1e-6 of the power's larger terms), then log: 1e-3.
      EXPECT_TRUE(close(got[plan], ref, 1e-3, 1e-3));
    }
    const std::vector<double> unfused(got[0].begin(), got[0].end());
    for (int plan = 1; plan < kPlans; ++plan) {  // the fused plans and the unfused agree
      SCOPED_TRACE(names[plan]);
      EXPECT_TRUE(close(got[plan], unfused, 1e-3, 1e-3));
    }
  }
}

// The one kernel past one dispatch's workgroups: two signals of 32801 frames of 2 samples (step 1),
// one frame a workgroup of 32 invocations, so 65602 workgroups (> 65535: WORKGROUP_ID_1D's second
// dimension) and the signal index g / u_groups crossing the first dimension's end; against the
// float64 reference.
TEST(SignalOps, LogMelPastOneDispatchOfWorkgroups) {
  GLT_RNG(rng);
  const std::int64_t Bn = 2, n = 2, L = 32802, step = 1, bins = 2, F = 1 + (L - n) / step;
  const std::string path = save_logmel("logmel_groups", {Bn, L, 1}, step, n, bins, 8000, 0, 4000, false, false);
  const std::vector<float> x = uniform(rng, static_cast<std::size_t>(Bn * L));
  std::vector<float> w;
  for (std::int64_t i = 0; i < n; ++i) w.push_back(static_cast<float>(ref_window("HannWindow", i, n, true)));
  Model model = [&] {
    ScopedSettings pass;
    pass->stft_mel = 1;  // (on llvmpipe too)
    return Model::load(device(), path);
  }();
  ASSERT_NE(model.plan_summary().find("1 STFT power spectra and mel MatMuls in one kernel"), std::string::npos)
      << model.plan_summary();
  ScopedSettings run;
  run->stft_mel_frames = 1, run->stft_mel_slices = 1, run->stft_mel_local = 32;
  const std::uint64_t d0 = device().dispatch_count();
  const Tensor y = model.run({{"x", floats(x, {Bn, L, 1})}}).at("y");
  EXPECT_EQ(device().dispatch_count() - d0, 1u);
  ASSERT_EQ(y.shape(), (Shape{Bn, F, bins}));
  EXPECT_TRUE(close(y.to_vector(), ref_logmel(x, Bn, L, step, w, n, bins, 8000, 0, 4000), 1e-3, 1e-3));
}

// Non-finite values through the log-mel front end (review37): a NaN in the signal makes every
// output of the frames that read it NaN, and a tone of amplitude 1e18 overflows the power at its
// bins (|X|^2 ~ 1e40), so that every mel column that weighs those bins by zero is NaN (Inf * 0)
// and those that weigh them are Inf, in the unfused plan as in ONNX's definition; the one kernel
// (its plan's form, the twiddles' table form, the weights read in the product's loop) and the two
// matmuls give the unfused plan's NaN and Inf pattern, and its finite values.
TEST(SignalOps, LogMelNonFiniteAsUnfused) {
  GLT_RNG(rng);
  const std::int64_t L = 2000, step = 160, n = 400, bins = 40, F = 1 + (L - n) / step;
  const std::string path = save_logmel("logmel_nonfinite", {1, L, 1}, step, n, bins, 16000, 20, 8000, false, false);
  std::vector<float> nan_signal = uniform(rng, static_cast<std::size_t>(L)), tone(static_cast<std::size_t>(L));
  nan_signal[500] = std::numeric_limits<float>::quiet_NaN();  // (frames 1, 2 and 3 read it)
  for (std::int64_t i = 0; i < L; ++i)
    tone[static_cast<std::size_t>(i)] =
        static_cast<float>(1e18 * std::cos(2 * M_PI * 50.0 * static_cast<double>(i) / static_cast<double>(n)));
  for (const auto* signal : {&nan_signal, &tone}) {
    SCOPED_TRACE(signal == &tone ? "a tone of amplitude 1e18" : "a NaN at sample 500");
    std::map<std::string, Tensor> feeds{{"x", floats(*signal, {1, L, 1})}};
    std::vector<float> want;
    int nans = 0, infs = 0;
    for (const char* form : {"unfused", "0", "1", "1x4x256x1", "1x1x64"}) {
      SCOPED_TRACE(form);
      const std::string f = form;
      ScopedSettings pass;
      pass->fuse_elementwise = f != "unfused";
      pass->stft_mel = f == "unfused" || f == "0" ? 0 : 1;
      if (f == "1x4x256x1") pass->stft_mel_frames = 1, pass->stft_mel_slices = 4, pass->stft_mel_local = 256;
      if (f == "1x4x256x1") pass->stft_mel_twiddles = 1;
      if (f == "1x1x64") pass->stft_mel_frames = 1, pass->stft_mel_slices = 1, pass->stft_mel_local = 64;
      Model model = Model::load(device(), path);
      EXPECT_EQ(model.plan_summary().find("in one kernel") != std::string::npos, pass->stft_mel == 1);
      const std::vector<float> y = model.run(feeds).at("y").to_vector();
      ASSERT_EQ(y.size(), static_cast<std::size_t>(F * bins));
      if (want.empty()) {
        want = y;
        for (float v : y) nans += std::isnan(v) ? 1 : 0, infs += std::isinf(v) ? 1 : 0;
        if (signal == &tone) {
          EXPECT_GT(nans, 0);  // (columns that weigh the tone's bins by zero)
          EXPECT_GT(infs, 0);
        } else {
          EXPECT_EQ(nans, 3 * bins);  // (frames 1, 2 and 3, every column)
        }
        continue;
      }
      int differ = 0;
      for (std::size_t i = 0; i < y.size(); ++i) {
        const float a = y[i], b = want[i];
        const bool same = std::isnan(b)   ? std::isnan(a)
                          : std::isinf(b) ? a == b
                                          : std::isfinite(a) && std::fabs(a - b) <= 1e-3 + 1e-3 * std::fabs(b);
        differ += same ? 0 : 1;
        if (!same && differ <= 3) ADD_FAILURE() << "y[" << i << "] " << a << ", unfused " << b;
      }
      EXPECT_EQ(differ, 0) << nans << " NaN and " << infs << " Inf of the unfused plan's " << y.size();
    }
  }
}

// The DFT matrices are built once per node and sizes (issue #21): a later run of the same sizes
// uploads nothing (a capture of it records no host write), nor does a run of a longer signal
// with the same frames (STFT's matrix depends on the frame length only); the values stay those
// of the float64 reference. STFT with a constant Hann window (HannWindow folded at load, its
// values in the matrix) and DFT of a real signal.
TEST(SignalOps, StftAndDftRunsUploadNothing) {
  GLT_RNG(rng);
  const std::int64_t n = 64, step = 16;
  B m(17);
  m.input("x", {1, -1, 1}).input("s", {3, 24, 1}).output("y").output("d");
  m.init_i64("step", {}, {step}).init_i64("n", {}, {n});
  m.node("HannWindow", {"n"}, {"w"});
  m.node("STFT", {"x", "step", "w"}, {"y"});
  m.node("DFT", {"s"}, {"d"});
  Model model = Model::load(device(), m.save("stft_cached"));
  std::vector<float> w;
  for (std::int64_t i = 0; i < n; ++i) w.push_back(static_cast<float>(ref_window("HannWindow", i, n, true)));
  const std::vector<float> s = uniform(rng, 72);
  const Tensor st = floats(s, {3, 24, 1});
  int run = 0;
  for (const std::int64_t L : {200, 200, 1000}) {
    SCOPED_TRACE("run " + std::to_string(run) + " L " + std::to_string(L));
    const std::vector<float> x = uniform(rng, static_cast<std::size_t>(L));
    const Tensor xt = floats(x, {1, L, 1});
    std::map<std::string, Tensor> out;
    const Recording rec = Recording::capture(device(), [&] { out = model.run({{"x", xt}, {"s", st}}); });
    // The first run builds and uploads the two matrices; the later ones nothing.
    const std::size_t uploads = detail::RecordingAccess::capture(rec)->uploads();
    if (run++ == 0)
      EXPECT_EQ(uploads, 2u);
    else
      EXPECT_EQ(uploads, 0u);
    const std::int64_t F = 1 + (L - n) / step;
    ASSERT_EQ(out.at("y").shape(), (Shape{1, F, n / 2 + 1, 2}));
    EXPECT_TRUE(close(out.at("y").to_vector(), ref_stft(x, 1, L, 1, step, w, n, true), 1e-4, 1e-5 * n));
    std::vector<double> dref;  // DFT over axis 1 of [3, 24, 1]: the STFT of one whole frame
    for (std::int64_t b = 0; b < 3; ++b) {
      const std::vector<float> row(s.begin() + b * 24, s.begin() + (b + 1) * 24);
      for (double v : ref_stft(row, 1, 24, 1, 1, {}, 24, false)) dref.push_back(v);
    }
    EXPECT_TRUE(close(out.at("d").to_vector(), dref, 1e-4, 1e-4));
  }
}

// The cache's key (review19): one node run at other sizes gets its own matrix, checked against
// float64 each time: a DFT of a dynamic length (24, 30, then 24 again: kept, no upload; then
// four more lengths, which drop the least recently used: 24 is built again), an STFT
// whose frame_length is a run input (8, 12, 8), and an STFT whose host-computed window changes
// values at one size (a Hann window times the signal's length / 100, from Shape on the host: a
// new matrix for the new values, the first one still kept).
TEST(SignalOps, DftMatricesKeyedBySizeAndWindow) {
  GLT_RNG(rng);
  auto uploads = [](const Recording& r) { return detail::RecordingAccess::capture(r)->uploads(); };
  {
    B m(17);
    m.input("s", {3, -1, 1}).output("d");
    m.node("DFT", {"s"}, {"d"});
    Model model = Model::load(device(), m.save("dft_sizes"));
    // 24 and 30 built, 24 kept; then 8, 10, 12, 14 built (30 and then 24 dropped: 4 sizes a node,
    // the least recently used first), 24 built again, 12 kept.
    const std::vector<std::int64_t> lengths{24, 30, 24, 8, 10, 12, 14, 24, 12};
    const std::vector<std::size_t> built{1, 1, 0, 1, 1, 1, 1, 1, 0};
    for (std::size_t run = 0; run < lengths.size(); ++run) {
      const std::int64_t n = lengths[run];
      SCOPED_TRACE("run " + std::to_string(run) + ", DFT length " + std::to_string(n));
      const std::vector<float> s = uniform(rng, static_cast<std::size_t>(3 * n));
      std::map<std::string, Tensor> out;
      const Tensor st = floats(s, {3, n, 1});  // (uploaded before the capture)
      const Recording rec = Recording::capture(device(), [&] { out = model.run({{"s", st}}); });
      EXPECT_EQ(uploads(rec), built[run]);
      std::vector<double> ref;
      for (std::int64_t b = 0; b < 3; ++b) {
        const std::vector<float> row(s.begin() + b * n, s.begin() + (b + 1) * n);
        for (double v : ref_stft(row, 1, n, 1, 1, {}, n, false)) ref.push_back(v);
      }
      EXPECT_TRUE(close(out.at("d").to_vector(), ref, 1e-4, 1e-4));
    }
  }
  {
    B m(17);
    m.input("x", {1, 40, 1}).input("fl", {}, kI64).output("y").init_i64("step", {}, {4});
    m.node("STFT", {"x", "step", "", "fl"}, {"y"});
    Model model = Model::load(device(), m.save("stft_lengths"));
    const std::vector<float> x = uniform(rng, 40);
    for (const std::int32_t n : {8, 12, 8}) {
      SCOPED_TRACE("frame_length " + std::to_string(n));
      const Tensor y = model.run({{"x", floats(x, {1, 40, 1})}, {"fl", scalar_i(n)}}).at("y");
      EXPECT_TRUE(close(y.to_vector(), ref_stft(x, 1, 40, 1, 4, {}, n, true), 1e-4, 1e-4));
    }
  }
  B m(17);
  m.input("x", {1, -1, 1}).output("y").init_i64("step", {}, {8}).init_i64("n", {}, {16});
  m.init("hundredth", {}, {0.01f});
  m.node("HannWindow", {"n"}, {"hann"});
  auto& shape = m.node("Shape", {"x"}, {"len"});  // [L]
  B::attr_i(shape, "start", 1);
  B::attr_i(shape, "end", 2);
  B::attr_i(m.node("Cast", {"len"}, {"lenf"}), "to", kF32);
  m.node("Mul", {"hann", "hundredth"}, {"h1"});
  m.node("Mul", {"h1", "lenf"}, {"w"});
  m.node("STFT", {"x", "step", "w"}, {"y"});
  Model model = Model::load(device(), m.save("stft_window_values"));
  int run = 0;
  for (const std::int64_t L : {100, 200, 100}) {
    SCOPED_TRACE("L " + std::to_string(L));
    const std::vector<float> x = uniform(rng, static_cast<std::size_t>(L));
    std::map<std::string, Tensor> out;
    const Tensor xt = floats(x, {1, L, 1});
    const Recording rec = Recording::capture(device(), [&] { out = model.run({{"x", xt}}); });
    // a new matrix for each new window (its values on the host, folded in), the first one kept
    EXPECT_EQ(uploads(rec), run++ < 2 ? 1u : 0u);
    std::vector<float> w;
    for (std::int64_t i = 0; i < 16; ++i)
      w.push_back(static_cast<float>(ref_window("HannWindow", i, 16, true) * 0.01f * static_cast<double>(L)));
    EXPECT_TRUE(close(out.at("y").to_vector(), ref_stft(x, 1, L, 1, 8, w, 16, true), 1e-4, 1e-4));
  }
}

// STFT's frames are a view of the signal, not a workspace (issue #22): under a lowered max SSBO
// block, a complex signal whose F * n * 2 frame values would pass it (the gather before) runs
// when its output fits, and a DFT matrix past it is built and multiplied in blocks of columns
// (a window given at run time, on the GPU, scaling each block); then a long complex signal at
// llvmpipe's 128 MiB (the H100's limit lowered to it): 1,099,985 frames of 16 samples, 141 MB
// of frames, 79 MB of output, checked on every 9973rd frame and the last.
TEST(SignalOps, StftFramesAreNotAWorkspace) {
  GLT_RNG(rng);
  struct Case {
    std::int64_t L, ch, step, n, limit;
  };
  for (const Case c : {Case{4096, 2, 2, 64, 600 << 10}, Case{16000, 1, 160, 400, 256 << 10}}) {
    SCOPED_TRACE("L " + std::to_string(c.L) + " ch " + std::to_string(c.ch) + " n " + std::to_string(c.n));
    B m(17);
    m.input("x", {1, c.L, c.ch}).input("w", {c.n}).output("y").init_i64("step", {}, {c.step});
    m.node("STFT", {"x", "step", "w"}, {"y"});
    Model model = Model::load(device(), m.save("stft_limit"));
    const std::vector<float> x = uniform(rng, static_cast<std::size_t>(c.L * c.ch));
    const std::vector<float> w = uniform(rng, static_cast<std::size_t>(c.n), 0, 1);
    const Tensor xt = floats(x, {1, c.L, c.ch}), wt = floats(w, {c.n});
    ScopedSsboLimit limit(c.limit);
    const Tensor y = model.run({{"x", xt}, {"w", wt}}).at("y");
    EXPECT_TRUE(close(y.to_vector(), ref_stft(x, 1, c.L, c.ch, c.step, w, c.n, true), 1e-4, 1e-5 * c.n));
  }
  const std::int64_t L = 1100000, n = 16, F = L - n + 1, mm = n / 2 + 1;
  B m(17);
  m.input("x", {1, L, 2}).output("y").init_i64("step", {}, {1}).init_i64("fl", {}, {n});
  m.node("STFT", {"x", "step", "", "fl"}, {"y"});
  Model model = Model::load(device(), m.save("stft_long"));
  const std::vector<float> x = uniform(rng, static_cast<std::size_t>(2 * L));
  ScopedSsboLimit limit(std::int64_t{128} << 20);
  const std::vector<float> y = model.run({{"x", floats(x, {1, L, 2})}}).at("y").to_vector();
  ASSERT_EQ(y.size(), static_cast<std::size_t>(F * mm * 2));
  for (std::int64_t f = 0; f < F; f = f + 9973 < F || f == F - 1 ? f + 9973 : F - 1) {
    SCOPED_TRACE("frame " + std::to_string(f));
    const std::vector<float> frame(x.begin() + 2 * f, x.begin() + 2 * (f + n));
    const std::vector<double> ref = ref_stft(frame, 1, n, 2, 1, {}, n, true);
    const std::vector<float> got(y.begin() + f * mm * 2, y.begin() + (f + 1) * mm * 2);
    ASSERT_TRUE(close(got, ref, 1e-4, 1e-4));
  }
}

TEST(SignalOps, StftRefusals) {
  B m(17);
  m.input("x", {1, 16, 1}).input("w", {8}).input("fl", {}, kI64).output("y");
  m.init_i64("step", {}, {2});
  m.node("STFT", {"x", "step", "w", "fl"}, {"y"}, "spec");
  Model model = Model::load(device(), m.save("stft_bad"));
  const Tensor x = zeros(device(), {1, 16, 1}), w = ones(device(), {8});
  EXPECT_THROW_MSG(model.run({{"x", x}, {"w", w}, {"fl", scalar_i(6)}}), ModelError,
                   "'spec' (STFT): frame_length 6 differs from the window's length 8");
  B m2(17);
  m2.input("x", {1, 4, 1}).output("y").init_i64("step", {}, {1}).init_i64("fl", {}, {8});
  m2.node("STFT", {"x", "step", "", "fl"}, {"y"}, "long");
  EXPECT_THROW_MSG(Model::load(device(), m2.save("stft_long")).run({{"x", zeros(device(), {1, 4, 1})}}), ModelError,
                   "'long' (STFT): frame_length 8 must be in [1, 4]");
  B m3(17);
  m3.input("x", {1, 4, 1}).output("y").init_i64("step", {}, {1});
  B::attr_i(m3.node("STFT", {"x", "step"}, {"y"}, "two"), "onesided", 2);
  EXPECT_THROW_MSG(Model::load(device(), m3.save("stft_onesided")), ModelError,
                   "'two' (STFT): attribute onesided=2: expected 0 or 1");
  // A DFT matrix past 2^25 elements fails naming the node, before any allocation (review17):
  // one frame of a whole 8200-sample signal (no window, no frame_length: [8200, 4101]). 39001
  // overlapping frames of 1000 samples (step 1) are no workspace: their output, 156 MB, is past
  // a 128 MiB SSBO block (the H100's lowered to llvmpipe's), refused naming the node.
  B m6(17);
  m6.input("x", {1, 8200, 1}).output("y").init_i64("step", {}, {1});
  m6.node("STFT", {"x", "step"}, {"y"}, "whole");
  EXPECT_THROW_MSG(Model::load(device(), m6.save("stft_whole")).run({{"x", zeros(device(), {1, 8200, 1})}}), ModelError,
                   "'whole' (STFT): a DFT of length 8200 (4101 frequencies) needs [8200, 4101]");
  B m7(17);
  m7.input("x", {1, 40000, 1}).input("w", {1000}).output("y").init_i64("step", {}, {1});
  m7.node("STFT", {"x", "step", "w"}, {"y"}, "dense");
  {
    ScopedSsboLimit limit(std::int64_t{128} << 20);
    EXPECT_THROW_MSG(Model::load(device(), m7.save("stft_dense"))
                         .run({{"x", zeros(device(), {1, 40000, 1})}, {"w", ones(device(), {1000})}}),
                     ModelError,
                     "'dense' (STFT): the output [1, 39001, 501, 2] of float32 is past the device's max SSBO block "
                     "of 134217728 bytes");
  }
  B m5(17);
  m5.init_i64("n", {}, {std::int64_t{1} << 40}).output("y");
  m5.node("HannWindow", {"n"}, {"y"}, "huge");
  EXPECT_THROW_MSG(Model::load(device(), m5.save("hann_huge")), ModelError,
                   "'huge' (HannWindow): size 1099511627776 must be in [0, 33554432]");
  B m4(17);
  m4.init_i64("n", {}, {4}).output("y");
  B::attr_i(m4.node("HannWindow", {"n"}, {"y"}, "hann64"), "output_datatype", onnx::TensorProto::DOUBLE);
  EXPECT_THROW_MSG(Model::load(device(), m4.save("hann_double")), ModelError,
                   "'hann64' (HannWindow): attribute output_datatype=11: double is not supported");
}

// GatherND with batch_dims 0, 1 and 2, index rows addressing single elements or slices,
// negative indices, integer data and an empty index set.
TEST(IndexOps, GatherNDAgainstReference) {
  GLT_RNG(rng);
  struct Case {
    Shape data, idx;
    std::int64_t b;
    bool int_data;
  };
  for (const Case& c :
       {Case{{3, 4, 5}, {2, 2}, 0, false}, Case{{3, 4, 5}, {2, 3, 3}, 0, true}, Case{{7}, {5, 1}, 0, false},
        Case{{2, 3, 4}, {2, 5, 1}, 1, false}, Case{{2, 3, 4, 5}, {2, 3, 2, 2}, 2, true}, Case{{3, 4}, {0, 2}, 0, false},
        Case{{2, 3, 4}, {2, 2}, 1, false}}) {
    SCOPED_TRACE("data " + to_string(c.data) + " indices " + to_string(c.idx) + " batch_dims " + std::to_string(c.b));
    const std::int64_t k = c.idx.back(), r = static_cast<std::int64_t>(c.data.size());
    B m(13);
    m.input("x", c.data, c.int_data ? kI32 : kF32).input("i", c.idx, kI64).output("y", {}, c.int_data ? kI32 : kF32);
    B::attr_i(m.node("GatherND", {"x", "i"}, {"y"}), "batch_dims", c.b);
    Model model = Model::load(device(), m.save("gathernd"));
    const std::int64_t nx = numel_of(c.data), ni = numel_of(c.idx);
    std::vector<float> x = uniform(rng, static_cast<std::size_t>(nx), -100, 100);
    if (c.int_data)
      for (auto& v : x) v = std::round(v);
    std::vector<std::int32_t> idx(static_cast<std::size_t>(ni));
    for (std::int64_t p = 0; p < ni; ++p) {  // component d of a row indexes dim b + d, from either end
      const std::int64_t dim = c.data[static_cast<std::size_t>(c.b + p % k)];
      idx[static_cast<std::size_t>(p)] = uniform_int(rng, 1, static_cast<int>(-dim), static_cast<int>(dim - 1))[0];
    }
    const Tensor xt = c.int_data ? floats(x, c.data).to(DType::i32) : floats(x, c.data);
    const Tensor y = model.run({{"x", xt}, {"i", ints(idx, c.idx)}}).at("y");
    // Reference: output [idx[:-1], data[b + k:]]; batch prefix p, then the row's element offset.
    std::int64_t nb = 1, rest = 1, u = 1;
    for (std::int64_t d = 0; d < c.b; ++d) nb *= c.data[d];
    for (std::int64_t d = c.b + k; d < r; ++d) rest *= c.data[d];
    for (std::size_t d = static_cast<std::size_t>(c.b); d + 1 < c.idx.size(); ++d) u *= c.idx[d];
    std::vector<double> ref;
    for (std::int64_t bi = 0; bi < nb; ++bi)
      for (std::int64_t ui = 0; ui < u; ++ui) {
        std::int64_t off = bi;
        for (std::int64_t d = 0; d < k; ++d) {
          const std::int64_t dim = c.data[static_cast<std::size_t>(c.b + d)];
          std::int64_t v = idx[static_cast<std::size_t>((bi * u + ui) * k + d)];
          off = off * dim + (v < 0 ? v + dim : v);
        }
        for (std::int64_t e = 0; e < rest; ++e) ref.push_back(x[static_cast<std::size_t>(off * rest + e)]);
      }
    Shape out(c.idx.begin(), c.idx.end() - 1);
    out.insert(out.end(), c.data.begin() + c.b + k, c.data.end());
    ASSERT_EQ(y.shape(), out);
    EXPECT_TRUE(close(y.to_vector(), ref, 0, 0));
  }
}

// An index component outside its dim (after the negative wrap) is an IndexError at the read,
// never another row's value: [0, 4] into [3, 4] would be row 1's element 0 in offsets alone
// (GatherND, and ScatterND, whose row offsets are the same).
TEST(IndexOps, NDIndicesOutOfRangeAreAnError) {
  for (const std::vector<std::int32_t>& bad : {std::vector<std::int32_t>{0, 4}, {-4, 0}, {3, 0}}) {
    B m(13);
    m.input("x", {3, 4}).input("i", {2, 2}, kI64).output("y");
    m.node("GatherND", {"x", "i"}, {"y"});
    Model model = Model::load(device(), m.save("gathernd_oob"));
    const std::vector<std::int32_t> idx{1, 1, bad[0], bad[1]};
    EXPECT_THROW_MSG(model.run({{"x", zeros(device(), {3, 4})}, {"i", ints(idx, {2, 2})}}).at("y").to_vector(),
                     IndexError, "out of range");
    for (const char* reduction : {"none", "add"}) {  // ScatterND's rows: the same offsets
      B s(18);
      s.input("x", {3, 4}).input("i", {2, 2}, kI64).input("u", {2}).output("y");
      B::attr_s(s.node("ScatterND", {"x", "i", "u"}, {"y"}), "reduction", reduction);
      Model sm = Model::load(device(), s.save("scatternd_oob"));
      EXPECT_THROW_MSG(sm.run({{"x", zeros(device(), {3, 4})}, {"i", ints(idx, {2, 2})}, {"u", ones(device(), {2})}})
                           .at("y")
                           .to_vector(),
                       IndexError, "out of range");
    }
  }
}

// Int64 indices past int32's range (the GPU carries int64 as int32): a typed error naming the
// node, never another row (issue #21). GatherND's indices as a small initializer (uploaded by the
// node) and as a large one (uploaded at load); INT64_MAX (the "to the end" sentinel, carried as
// INT32_MAX) is out of range, an IndexError; OneHot's int64 index likewise, and its float indices
// past int32 (2^32 + 512 would wrap to 512 in a cast), infinite or NaN give a row of off values,
// as any index outside [-depth, depth - 1].
TEST(IndexOps, IndicesPastInt32AreNamedErrors) {
  const std::int64_t big = (std::int64_t{1} << 32) + 1;
  {
    B m(13);
    m.input("x", {3, 4}).output("y").init_i64("i", {1, 2}, {0, big});
    m.node("GatherND", {"x", "i"}, {"y"}, "gnd");
    EXPECT_THROW_MSG(Model::load(device(), m.save("gathernd_i64")).run({{"x", zeros(device(), {3, 4})}}), LimitError,
                     "'gnd' (GatherND): input 1: int64 value 4294967297 does not fit the int32");
  }
  {
    std::vector<std::int64_t> iv(18, 1);
    iv[7] = -big;
    B m(13);
    m.input("x", {3, 4}).output("y").init_i64("i", {9, 2}, iv);
    m.node("GatherND", {"x", "i"}, {"y"}, "gnd_big");
    EXPECT_THROW_MSG(Model::load(device(), m.save("gathernd_i64_big")), LimitError,
                     "'gnd_big' (GatherND): initializer 'i': int64 value -4294967297 does not fit the int32");
  }
  {
    B m(13);
    m.input("x", {3, 4}).output("y").init_i64("i", {1, 2}, {1, std::numeric_limits<std::int64_t>::max()});
    m.node("GatherND", {"x", "i"}, {"y"});
    EXPECT_THROW_MSG(
        Model::load(device(), m.save("gathernd_max")).run({{"x", zeros(device(), {3, 4})}}).at("y").to_vector(),
        IndexError, "out of range");
  }
  {
    B m(11);
    m.input("v", {2}).output("y").init_i64("i", {2}, {1, big + 2}).init_i64("depth", {}, {4});
    m.node("OneHot", {"i", "depth", "v"}, {"y"}, "oh");
    EXPECT_THROW_MSG(Model::load(device(), m.save("onehot_i64")).run({{"v", floats({0, 1}, {2})}}), LimitError,
                     "'oh' (OneHot): input 0: int64 value 4294967299 does not fit the int32");
  }
  B m(11);
  m.input("i", {9}).input("v", {2}).output("y").init_i64("depth", {}, {600});
  m.node("OneHot", {"i", "depth", "v"}, {"y"});
  Model model = Model::load(device(), m.save("onehot_far"));
  // (NaN: a row of off values, as ONNX Runtime gives; a cast of NaN is 0 on NVIDIA's GL)
  const std::vector<float> iv{4294967808.0f, -4294967808.0f, 3e38f, -3e38f, INFINITY, -INFINITY, NAN, 512.0f, -88.0f};
  const std::vector<float> y = model.run({{"i", floats(iv, {9})}, {"v", floats({0, 1}, {2})}}).at("y").to_vector();
  ASSERT_EQ(y.size(), 9u * 600u);
  std::vector<double> ref(9 * 600, 0.0);
  ref[7 * 600 + 512] = 1, ref[8 * 600 + 512] = 1;  // 512, and -88 + 600
  EXPECT_TRUE(close(y, ref, 0, 0));
}

// OneHot over every axis position, negative indices, indices outside [-depth, depth - 1] (a row of
// off values), float indices (truncated), integer values, depth 1 and an empty index set.
TEST(IndexOps, OneHotAgainstReference) {
  GLT_RNG(rng);
  struct Case {
    Shape is;
    std::int64_t depth, axis;
    bool float_idx, int_values;
    int opset = 11;  // OneHot-9: negative indices are out of range (a row of off values)
  };
  for (const Case& c :
       {Case{{2, 3}, 5, -1, false, false}, Case{{2, 3}, 5, 0, false, true}, Case{{2, 3}, 5, 1, true, false},
        Case{{4}, 3, -2, false, false}, Case{{3, 1, 2}, 1, 2, false, true}, Case{{0}, 4, -1, false, false},
        Case{{7, 5}, 11, -3, true, true}, Case{{3, 4}, 5, 1, false, false, 9}}) {
    SCOPED_TRACE("indices " + to_string(c.is) + " depth " + std::to_string(c.depth) + " axis " +
                 std::to_string(c.axis));
    B m(c.opset);
    const int ve = c.int_values ? kI64 : kF32;
    m.input("i", c.is, c.float_idx ? kF32 : kI64).input("v", {2}, ve).output("y", {}, ve);
    m.init_i64("depth", {}, {c.depth});
    B::attr_i(m.node("OneHot", {"i", "depth", "v"}, {"y"}), "axis", c.axis);
    Model model = Model::load(device(), m.save("onehot"));
    const std::int64_t ni = numel_of(c.is), D = c.depth;
    std::vector<float> iv =
        uniform(rng, static_cast<std::size_t>(ni), static_cast<float>(-D - 2), static_cast<float>(D + 2));
    for (auto& v : iv) v = c.float_idx ? v : std::trunc(v);
    std::vector<float> vals = uniform(rng, 2, -10, 10);
    if (c.int_values) vals = {std::round(vals[0]), std::round(vals[1]) + 20};
    const Tensor it = c.float_idx ? floats(iv, c.is) : floats(iv, c.is).to(DType::i32);
    const Tensor vt = c.int_values ? floats(vals, {2}).to(DType::i32) : floats(vals, {2});
    const Tensor y = model.run({{"i", it}, {"v", vt}}).at("y");
    const std::int64_t r = static_cast<std::int64_t>(c.is.size()) + 1, ax = c.axis < 0 ? c.axis + r : c.axis;
    Shape out = c.is;
    out.insert(out.begin() + ax, D);
    ASSERT_EQ(y.shape(), out);
    std::int64_t outer = 1, inner = 1;
    for (std::int64_t d = 0; d < ax; ++d) outer *= c.is[d];
    for (std::int64_t d = ax; d < r - 1; ++d) inner *= c.is[d];
    std::vector<double> ref;
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t j = 0; j < D; ++j)
        for (std::int64_t q = 0; q < inner; ++q) {
          std::int64_t v = static_cast<std::int64_t>(std::trunc(iv[static_cast<std::size_t>(o * inner + q)]));
          if (v < 0 && c.opset >= 11) v += D;
          ref.push_back(v == j ? vals[1] : vals[0]);
        }
    EXPECT_TRUE(close(y.to_vector(), ref, 0, 0));
  }
}

// Both layouts, lengths 0, 1, T and in between (and past T: clamped), trailing dims.
TEST(IndexOps, ReverseSequenceAgainstReference) {
  GLT_RNG(rng);
  for (int time_axis : {0, 1}) {
    SCOPED_TRACE("time_axis " + std::to_string(time_axis));
    const std::int64_t T = 7, Bn = 6, E = 3;
    const Shape xs = time_axis == 0 ? Shape{T, Bn, E} : Shape{Bn, T, E};
    B m(10);
    m.input("x", xs).input("len", {Bn}, kI64).output("y");
    auto& n = m.node("ReverseSequence", {"x", "len"}, {"y"});
    B::attr_i(n, "time_axis", time_axis);
    B::attr_i(n, "batch_axis", 1 - time_axis);
    Model model = Model::load(device(), m.save("revseq"));
    const std::vector<float> x = uniform(rng, static_cast<std::size_t>(T * Bn * E));
    std::vector<std::int32_t> len = uniform_int(rng, Bn, 0, T);
    len[0] = 0, len[1] = 1, len[2] = static_cast<std::int32_t>(T);
    const Tensor y = model.run({{"x", floats(x, xs)}, {"len", ints(len, {Bn})}}).at("y");
    std::vector<double> ref(x.size());
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t b = 0; b < Bn; ++b) {
        const std::int64_t src = t < len[b] ? len[b] - 1 - t : t;
        auto at = [&](std::int64_t tt) { return time_axis == 0 ? (tt * Bn + b) * E : (b * T + tt) * E; };
        for (std::int64_t e = 0; e < E; ++e) ref[at(t) + e] = x[at(src) + e];
      }
    EXPECT_TRUE(close(y.to_vector(), ref, 0, 0));
  }
  B m(10);
  m.input("x", {2, 2}).input("len", {2}, kI64).output("y");
  B::attr_i(m.node("ReverseSequence", {"x", "len"}, {"y"}, "rs"), "time_axis", 2);
  EXPECT_THROW_MSG(Model::load(device(), m.save("revseq_bad")), ModelError,
                   "'rs' (ReverseSequence): attribute time_axis=2: with batch_axis=1");
}

// Every uint8 value shifted by 0..8 and past 8 (all bits out), both directions, broadcast shifts.
TEST(IndexOps, BitShiftUint8Exact) {
  GLT_RNG(rng);
  for (const std::string dir : {"LEFT", "RIGHT"}) {
    SCOPED_TRACE(dir);
    B m(11);
    m.input("x", {256}, kU8).input("s", {256}, kU8).input("s1", {1}, kU8).output("y", {}, kU8).output("z", {}, kU8);
    B::attr_s(m.node("BitShift", {"x", "s"}, {"y"}), "direction", dir);
    B::attr_s(m.node("BitShift", {"x", "s1"}, {"z"}), "direction", dir);
    Model model = Model::load(device(), m.save("bitshift"));
    std::vector<std::uint8_t> x(256), s(256);
    for (int i = 0; i < 256; ++i) x[i] = static_cast<std::uint8_t>(i);
    const auto r = uniform_int(rng, 256, 0, 12);
    for (int i = 0; i < 256; ++i) s[i] = static_cast<std::uint8_t>(i < 10 ? i : i == 10 ? 255 : r[i]);
    const std::uint8_t s1 = static_cast<std::uint8_t>(uniform_int(rng, 1, 0, 7)[0]);
    auto u8 = [](const std::vector<std::uint8_t>& v, Shape sh) {
      return Tensor::from_host(device(), std::span<const std::uint8_t>(v), sh);
    };
    auto ys = model.run({{"x", u8(x, {256})}, {"s", u8(s, {256})}, {"s1", u8({s1}, {1})}});
    auto shift = [&](int v, int by) {
      if (by >= 8) return 0;
      return dir == "LEFT" ? (v << by) & 255 : v >> by;
    };
    std::vector<double> ry, rz;
    for (int i = 0; i < 256; ++i) ry.push_back(shift(x[i], s[i])), rz.push_back(shift(x[i], s1));
    ASSERT_EQ(ys.at("y").dtype(), DType::u8);
    EXPECT_TRUE(close(ys.at("y").to_vector(), ry, 0, 0));
    EXPECT_TRUE(close(ys.at("z").to_vector(), rz, 0, 0));
  }
  B m(11);
  m.input("x", {2}, kI32).input("s", {2}, kI32).output("y", {}, kI32);
  B::attr_s(m.node("BitShift", {"x", "s"}, {"y"}, "bs"), "direction", "UP");
  EXPECT_THROW_MSG(Model::load(device(), m.save("bitshift_bad")), ModelError,
                   "'bs' (BitShift): attribute direction=UP: expected LEFT or RIGHT");
  B m2(11);
  m2.input("x", {2}, kI32).input("s", {2}, kI32).output("y", {}, kI32);
  B::attr_s(m2.node("BitShift", {"x", "s"}, {"y"}, "bs32"), "direction", "LEFT");
  EXPECT_THROW_MSG(Model::load(device(), m2.save("bitshift_i32")), ModelError,
                   "'bs32' (BitShift): int32 inputs are not supported (uint8 only)");
}
