// The recurrent layers' time loop (src/nn/rnn.cpp, rnn_seq.cpp; the model runtime's LSTM, GRU
// and RNN) against a float64 CPU reference written from the ONNX operator specification: the
// sequence kernel (one dispatch per chunk of steps, glsl/nn/rnn_seq.comp) and the per-step path
// (GLTENSOR_RNN=steps), with every attribute, sequence lengths of 1 and past the loop limit's
// chunk (lowered), per-row sequence_lens, initial states and NaN inputs.
#include <chrono>
#include <cmath>
#include <cstdio>

#include "nn/rnn.hpp"
#include "nn/rnn_plan.hpp"
#include "runtime/cuda_memory.hpp"
#include "test_util.hpp"

using namespace gltensor;
using namespace glt_test;
using gltensor::detail::RnnActivation;
using gltensor::detail::RnnCell;
using gltensor::detail::RnnSpec;

namespace {

struct Case {
  RnnCell cell = RnnCell::lstm;
  int D = 1;
  bool reverse0 = false;
  std::int64_t T = 5, B = 3, I = 4, H = 7;
  bool clip = false, seq = false, init = false, peep = false, input_forget = false, lbr = false, layout1 = false;
  float rscale = 1.5f;              ///< R uniform in +-rscale / sqrt(H)
  std::vector<RnnActivation> acts;  // empty: the cell's defaults
};

int gates(RnnCell c) { return c == RnnCell::lstm ? 4 : c == RnnCell::gru ? 3 : 1; }

double act(const RnnActivation& a, double x) {
  const std::string& n = a.name;
  if (n == "Sigmoid") return 1 / (1 + std::exp(-x));
  if (n == "Tanh") return std::tanh(x);
  if (n == "Relu") return std::max(x, 0.0);
  if (n == "HardSigmoid") return std::clamp(a.alpha * x + a.beta, 0.0, 1.0);
  if (n == "ScaledTanh") return a.alpha * std::tanh(a.beta * x);
  if (n == "LeakyRelu") return x >= 0 ? x : a.alpha * x;
  if (n == "Softsign") return x / (1 + std::fabs(x));
  if (n == "Affine") return a.alpha * x + a.beta;
  ADD_FAILURE() << "no reference for " << n;
  return 0;
}

struct Io {
  std::vector<float> x, w, r, b, h0, c0, p;  // x [T, B, I], states [D, B, H] (layout 0)
  std::vector<std::int32_t> lens;
};

struct Ref {
  std::vector<double> y, yh, yc;  // y [T, D, B, H], states [D, B, H]
};

// ONNX LSTM / GRU / RNN (layout 0), one direction, batch row and step at a time.
Ref reference(const Case& c, const Io& io, const std::vector<RnnActivation>& acts) {
  const std::int64_t T = c.T, B = c.B, I = c.I, H = c.H, D = c.D, G = gates(c.cell), GH = G * H;
  const std::size_t per = c.cell == RnnCell::lstm ? 3 : c.cell == RnnCell::gru ? 2 : 1;
  Ref o{std::vector<double>(T * D * B * H, 0.0), std::vector<double>(D * B * H), std::vector<double>(D * B * H)};
  auto clip = [&](double v) { return c.clip ? std::clamp(v, -0.9, 0.9) : v; };
  for (std::int64_t d = 0; d < D; ++d) {
    const RnnActivation* a = &acts[d * per];
    const bool rev = d == 1 || c.reverse0;
    for (std::int64_t b = 0; b < B; ++b) {
      std::vector<double> h(H, 0.0), cs(H, 0.0);
      if (c.init)
        for (std::int64_t j = 0; j < H; ++j) {
          h[j] = io.h0[(d * B + b) * H + j];
          if (c.cell == RnnCell::lstm) cs[j] = io.c0[(d * B + b) * H + j];
        }
      const std::int64_t len = c.seq ? io.lens[b] : T;
      for (std::int64_t s = 0; s < T; ++s) {
        const std::int64_t t = rev ? T - 1 - s : s;
        if (t >= len) continue;  // Y stays 0, the state stays
        // x W^T + Wb and h R^T + Rb per gate row
        std::vector<double> xw(GH), hr(GH);
        for (std::int64_t g = 0; g < GH; ++g) {
          double sx = 0, sh = 0;
          for (std::int64_t i = 0; i < I; ++i) sx += double(io.x[(t * B + b) * I + i]) * io.w[(d * GH + g) * I + i];
          for (std::int64_t m = 0; m < H; ++m) sh += h[m] * io.r[(d * GH + g) * H + m];
          xw[g] = sx + io.b[d * 2 * GH + g];
          hr[g] = sh + io.b[d * 2 * GH + GH + g];
        }
        std::vector<double> hn(H);
        for (std::int64_t j = 0; j < H; ++j) {
          if (c.cell == RnnCell::lstm) {
            const double pi = c.peep ? io.p[d * 3 * H + j] : 0, po = c.peep ? io.p[d * 3 * H + H + j] : 0,
                         pf = c.peep ? io.p[d * 3 * H + 2 * H + j] : 0;
            const double ig = act(a[0], clip(xw[j] + hr[j] + pi * cs[j]));
            const double fg = c.input_forget ? 1 - ig : act(a[0], clip(xw[2 * H + j] + hr[2 * H + j] + pf * cs[j]));
            const double ct = act(a[1], clip(xw[3 * H + j] + hr[3 * H + j]));
            cs[j] = fg * cs[j] + ig * ct;
            const double og = act(a[0], clip(xw[H + j] + hr[H + j] + po * cs[j]));
            hn[j] = og * act(a[2], cs[j]);
          } else if (c.cell == RnnCell::gru) {
            const double z = act(a[0], clip(xw[j] + hr[j]));
            const double r = act(a[0], clip(xw[H + j] + hr[H + j]));
            double nin;
            if (c.lbr) {
              nin = xw[2 * H + j] + r * hr[2 * H + j];
            } else {
              double sh = io.b[d * 2 * GH + GH + 2 * H + j];
              for (std::int64_t m = 0; m < H; ++m) {
                const double rm = act(a[0], clip(xw[H + m] + hr[H + m]));
                sh += rm * h[m] * io.r[(d * GH + 2 * H + j) * H + m];
              }
              nin = xw[2 * H + j] + sh;
            }
            const double n = act(a[1], clip(nin));
            hn[j] = (1 - z) * n + z * h[j];
          } else {
            hn[j] = act(a[0], clip(xw[j] + hr[j]));
          }
        }
        h = hn;
        for (std::int64_t j = 0; j < H; ++j) o.y[((t * D + d) * B + b) * H + j] = h[j];
      }
      for (std::int64_t j = 0; j < H; ++j) {
        o.yh[(d * B + b) * H + j] = h[j];
        o.yc[(d * B + b) * H + j] = cs[j];
      }
    }
  }
  return o;
}

// [A, B, C] -> [B, A, C] of a host array.
template <typename V>
V swap01(const V& v, std::int64_t A, std::int64_t B, std::int64_t C) {
  V o(v.size());
  for (std::int64_t a = 0; a < A; ++a)
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t c = 0; c < C; ++c) o[(b * A + a) * C + c] = v[(a * B + b) * C + c];
  return o;
}

using Path = gltensor::detail::RnnSetting;

// Runs the case on the GPU (the path the plan chooses, or the one GLTENSOR_RNN would force) and
// compares Y, Y_h and Y_c with the reference. Returns the dispatches of the call.
std::uint64_t check(std::mt19937_64& rng, const Case& c, Path path = Path::choose, bool nan_row = false) {
  SCOPED_TRACE("cell " + std::to_string(static_cast<int>(c.cell)) + " D " + std::to_string(c.D) + " T " +
               std::to_string(c.T) + " B " + std::to_string(c.B) + " H " + std::to_string(c.H) + " path " +
               std::to_string(static_cast<int>(path)));
  const std::int64_t T = c.T, B = c.B, I = c.I, H = c.H, D = c.D, G = gates(c.cell), GH = G * H;
  const float s = c.rscale / std::sqrt(static_cast<float>(H));
  Io io;
  io.x = uniform(rng, T * B * I, -2, 2);
  if (nan_row) io.x[((T / 2) * B + B - 1) * I] = std::nanf("");  // the last row from T / 2 on
  io.w = uniform(rng, D * GH * I);
  io.r = uniform(rng, D * GH * H, -s, s);
  io.b = uniform(rng, D * 2 * GH, -0.5f, 0.5f);
  io.h0 = uniform(rng, D * B * H);
  io.c0 = uniform(rng, D * B * H);
  io.p = uniform(rng, D * 3 * H);
  io.lens = uniform_int(rng, B, 1, static_cast<int>(T));
  if (B > 1) io.lens[0] = static_cast<std::int32_t>(T), io.lens[1] = 1;
  RnnSpec spec;
  spec.cell = c.cell, spec.directions = D, spec.reverse0 = c.reverse0, spec.has_clip = c.clip, spec.clip = 0.9;
  spec.input_forget = c.input_forget, spec.linear_before_reset = c.lbr, spec.layout1 = c.layout1;
  spec.acts = c.acts;
  if (spec.acts.empty())
    for (int d = 0; d < D; ++d) {
      if (c.cell == RnnCell::lstm)
        spec.acts.insert(spec.acts.end(), {{"Sigmoid", 0, 0}, {"Tanh", 0, 0}, {"Tanh", 0, 0}});
      else if (c.cell == RnnCell::gru)
        spec.acts.insert(spec.acts.end(), {{"Sigmoid", 0, 0}, {"Tanh", 0, 0}});
      else
        spec.acts.push_back({"Tanh", 0, 0});
    }
  const Ref ref = reference(c, io, spec.acts);
  if (nan_row) {  // the reference's last row is NaN from then on, the others finite
    for (std::int64_t d = 0; d < D; ++d)
      for (std::int64_t b = 0; b < B; ++b)
        EXPECT_EQ(std::isnan(ref.yh[(d * B + b) * H]), b == B - 1) << "direction " << d << " row " << b;
  }

  Device& dev = device();
  auto up = [&](const std::vector<float>& v, const Shape& sh) { return Tensor::from_host(dev, v, sh); };
  const Tensor x = c.layout1 ? up(swap01(io.x, T, B, I), {B, T, I}) : up(io.x, {T, B, I});
  auto state = [&](const std::vector<float>& v) {
    return c.layout1 ? up(swap01(v, D, B, H), {B, D, H}) : up(v, {D, B, H});
  };
  const bool lstm = c.cell == RnnCell::lstm;
  const Tensor lens = c.seq ? Tensor::from_host(dev, io.lens, {B}) : Tensor();
  ScopedSettings set;
  set->rnn = path;
  const auto d0 = dev.dispatch_count();
  const auto o =
      gltensor::detail::rnn_forward(spec, x, up(io.w, {D, GH, I}), up(io.r, {D, GH, H}), up(io.b, {D, 2 * GH}), lens,
                                    c.init ? state(io.h0) : Tensor(), c.init && lstm ? state(io.c0) : Tensor(),
                                    c.peep && lstm ? up(io.p, {D, 3 * H}) : Tensor());
  const auto dispatches = dev.dispatch_count() - d0;
  std::vector<float> y = o.y.to_vector(), yh = o.y_h.to_vector();
  if (c.layout1) {  // Y [B, T, D, H] -> [T, D, B, H]; states [B, D, H] -> [D, B, H]
    y = swap01(y, B, T * D, H);
    yh = swap01(yh, B, D, H);
  }
  const double rtol = 2e-4, atol = 2e-5 * std::sqrt(static_cast<double>(T));
  EXPECT_TRUE(close(y, ref.y, rtol, atol)) << "Y";
  EXPECT_TRUE(close(yh, ref.yh, rtol, atol)) << "Y_h";
  if (lstm) {
    std::vector<float> yc = o.y_c.to_vector();
    if (c.layout1) yc = swap01(yc, B, D, H);
    EXPECT_TRUE(close(yc, ref.yc, rtol, atol)) << "Y_c";
  }
  return dispatches;
}

}  // namespace

// Every path: the plan's choice, the per-step path, and the sequence kernel with one unit per
// invocation and with quads (hidden sizes that are multiples of 4; others run one unit each).
TEST(Rnn, SequenceKernelMatchesReference) {
  GLT_RNG(rng);
  for (Path path : {Path::choose, Path::steps, Path::units, Path::quads})
    for (std::int64_t H : {36, 37}) {
      Case lstm;  // bidirectional, every input, clip
      lstm.D = 2, lstm.T = 6, lstm.B = 3, lstm.H = H, lstm.clip = lstm.seq = lstm.init = lstm.peep = true;
      check(rng, lstm, path);
      lstm.input_forget = true, lstm.reverse0 = true, lstm.D = 1, lstm.clip = false;
      lstm.acts = {{"HardSigmoid", 0.3, 0.4}, {"ScaledTanh", 1.2, 0.7}, {"Softsign", 0, 0}};
      check(rng, lstm, path);
      for (bool lbr : {false, true}) {
        Case gru;
        gru.cell = RnnCell::gru, gru.D = 2, gru.T = 5, gru.B = 4, gru.H = H - 4, gru.lbr = lbr;
        gru.seq = gru.init = gru.clip = true;
        check(rng, gru, path);
      }
      Case rnn;  // reverse, layout 1 (batch first), LeakyRelu
      rnn.cell = RnnCell::rnn, rnn.reverse0 = true, rnn.layout1 = true, rnn.T = 4, rnn.B = 2, rnn.H = H - 24;
      rnn.seq = rnn.init = true;
      rnn.acts = {{"LeakyRelu", 0.2, 0}};
      check(rng, rnn, path);
    }
}

TEST(Rnn, SequenceKernelEdgeShapes) {
  GLT_RNG(rng);
  for (Path path : {Path::units, Path::quads})
    for (RnnCell cell : {RnnCell::lstm, RnnCell::gru, RnnCell::rnn}) {
      Case c;
      c.cell = cell, c.T = 1, c.B = 1, c.H = 1, c.I = 1, c.init = true;  // one step, one unit
      check(rng, c, path);
      c.T = 3, c.B = 2, c.H = 100, c.D = 2, c.seq = true;  // more units than invocations on small workgroups
      check(rng, c, path);
      c.H = detail::kRnnSeqMaxHidden, c.D = 1, c.B = 1, c.T = 2;  // the largest hidden size it takes
      check(rng, c, path);
    }
  Case big;  // past the sequence kernel's hidden sizes: the per-step path
  big.T = 2, big.B = 1, big.H = detail::kRnnSeqMaxHidden + 1, big.init = true;
  check(rng, big, Path::units);
}

TEST(Rnn, SequenceKernelPropagatesNaN) {
  GLT_RNG(rng);
  for (RnnCell cell : {RnnCell::lstm, RnnCell::gru}) {
    Case c;  // the last batch row gets NaN from T / 2 on; the others stay finite
    c.cell = cell, c.T = 6, c.B = 3, c.H = 8, c.init = true, c.D = 2;
    // steps: the fused kernel on llvmpipe (each workgroup reads only its own row's h)
    for (Path path : {Path::units, Path::quads, Path::steps}) check(rng, c, path, true);
  }
}

TEST(Rnn, SequenceKernelSplitsAtTheLoopLimit) {
  GLT_RNG(rng);
  for (RnnCell cell : {RnnCell::lstm, RnnCell::gru, RnnCell::rnn})
    for (bool lbr : {false, true})
      for (Path path : {Path::units, Path::quads}) {
        if (lbr && cell != RnnCell::gru) continue;
        Case c;
        c.cell = cell, c.lbr = lbr, c.D = 2, c.B = 3, c.H = 8, c.I = 3, c.seq = c.init = c.peep = true;
        const int phases = cell == RnnCell::gru && !lbr ? 2 : 1;
        // A limit that holds 4 steps per dispatch: 11 steps take 3 dispatches, 3 steps one.
        // (units, one barrier a step: R in registers, rnn_seq_regs.comp)
        const bool regs = path == Path::units && phases == 1;
        const std::int64_t G = cell == RnnCell::lstm ? 4 : cell == RnnCell::gru ? 3 : 1;
        ScopedLoopLimit limit(regs ? detail::rnn_seq_regs_loops(4, c.H, G, 1, c.H)
                                   : detail::rnn_seq_loops(4, 1, path == Path::quads ? c.H / 4 : c.H, phases));
        c.T = 11;
        const auto n11 = check(rng, c, path);
        c.T = 3;
        const auto n3 = check(rng, c, path);
        EXPECT_EQ(n11 - n3, 2u) << "11 steps in 3 dispatches, 3 steps in one";
        c.T = 1;
        check(rng, c, path);
        // no initial state: only the first dispatch starts from zeros (the register kernel's u_zero)
        c.init = false, c.T = 11;
        check(rng, c, path);
        c.init = true;
      }
  {  // a limit below one step's loops: the per-step path, still right
    ScopedLoopLimit limit(detail::rnn_seq_loops(1, 1, 37, 1) - 1);
    Case c;
    c.T = 3, c.H = 37, c.init = true;
    const auto n3 = check(rng, c);
    c.T = 1;
    // GPUs: the fused kernel, 1 dispatch per step; software rasterizers: the matmul and rnn.comp
    const std::uint64_t per_step = device().adapter().software ? 2 : 1;
    EXPECT_EQ(n3 - check(rng, c), 2 * per_step) << per_step << " dispatch(es) per step";
  }
}

// The per-step path's fused kernel (glsl/nn/rnn_step.comp: the recurrent GEMV and the cell in one
// dispatch a step, every direction together; LSTM, GRU with linear_before_reset, RNN up to batch
// kRnnFusedMaxBatch; GPUs' per-step path, on llvmpipe only with GLTENSOR_RNN=steps): odd hidden sizes (slices of 4
// units with idle invocations), one step and one unit, hidden sizes past the sequence kernel's (several slices per
// row), both directions, reverse, layout 1, sequence_lens, initial states, peepholes, clip; one dispatch per step. Past
// the batch bound and for GRU without linear_before_reset: the batched matmul and rnn.comp.
TEST(Rnn, FusedStepKernelMatchesReference) {
  GLT_RNG(rng);
  Case lstm;  // bidirectional, every input, clip, odd hidden
  lstm.D = 2, lstm.T = 6, lstm.B = 3, lstm.H = 37, lstm.clip = lstm.seq = lstm.init = lstm.peep = true;
  const auto n6 = check(rng, lstm, Path::steps);
  lstm.T = 2;
  EXPECT_EQ(n6 - check(rng, lstm, Path::steps), 4u) << "1 dispatch per step for both directions";
  lstm.T = 1;
  check(rng, lstm, Path::steps);
  lstm.input_forget = true, lstm.reverse0 = true, lstm.D = 1, lstm.clip = false, lstm.layout1 = true, lstm.T = 5;
  lstm.acts = {{"HardSigmoid", 0.3, 0.4}, {"ScaledTanh", 1.2, 0.7}, {"Softsign", 0, 0}};
  check(rng, lstm, Path::steps);
  Case one;  // one step, one unit, one row
  one.T = 1, one.B = 1, one.H = 1, one.I = 1, one.init = true;
  check(rng, one, Path::steps);
  Case big;  // past the sequence kernel's hidden sizes: several slices per row
  big.D = 2, big.T = 3, big.B = 2, big.H = detail::kRnnSeqMaxHidden + 45, big.seq = big.init = big.peep = true;
  check(rng, big, Path::steps);
  // More workgroups (2 x 2 x 151) than one dispatch takes: the grid split (WORKGROUP_ID_1D). The
  // split rounds up to 3 x 202 workgroups; the 2 past the last exit at the kernel's bounds check
  // (without it they read and write past the tensors, into the pool's slack: not seen here).
  {
    ScopedDispatchLimit limit(3);
    check(rng, big, Path::steps);
  }
  Case gru;
  gru.cell = RnnCell::gru, gru.lbr = true, gru.D = 2, gru.T = 5, gru.B = 4, gru.H = 33, gru.seq = gru.init = true;
  gru.clip = true;
  check(rng, gru, Path::steps);
  Case rnn;
  rnn.cell = RnnCell::rnn, rnn.reverse0 = true, rnn.layout1 = true, rnn.T = 4, rnn.B = 2, rnn.H = 13, rnn.seq = true;
  rnn.init = true, rnn.acts = {{"LeakyRelu", 0.2, 0}};
  check(rng, rnn, Path::steps);
  // each direction its own activations (act_f(d, ...), lstm_cell(d, ...)), on both the fused kernel
  // and the sequence kernel with R in registers (units)
  for (Path path : {Path::steps, Path::units}) {
    Case two;
    two.D = 2, two.T = 4, two.B = 2, two.H = 9, two.init = two.seq = two.peep = true;
    two.acts = {{"Sigmoid", 0, 0},         {"Tanh", 0, 0},           {"Tanh", 0, 0},
                {"HardSigmoid", 0.3, 0.4}, {"ScaledTanh", 1.2, 0.7}, {"Softsign", 0, 0}};
    check(rng, two, path);
    Case gru2;
    gru2.cell = RnnCell::gru, gru2.lbr = true, gru2.D = 2, gru2.T = 4, gru2.B = 2, gru2.H = 11, gru2.init = true;
    gru2.acts = {{"Sigmoid", 0, 0}, {"Tanh", 0, 0}, {"HardSigmoid", 0.3, 0.4}, {"Softsign", 0, 0}};
    check(rng, gru2, path);
    Case rnn2;
    rnn2.cell = RnnCell::rnn, rnn2.D = 2, rnn2.T = 4, rnn2.B = 1, rnn2.H = 6, rnn2.init = true;
    rnn2.acts = {{"Tanh", 0, 0}, {"LeakyRelu", 0.2, 0}};
    check(rng, rnn2, path);
  }
  Case wide = lstm;  // past the fused kernel's batch: matmul and rnn.comp, 2 dispatches a step
  wide.acts.clear();
  wide.input_forget = wide.reverse0 = wide.layout1 = false, wide.D = 2, wide.B = detail::kRnnFusedMaxBatch + 1;
  wide.T = 4, wide.seq = wide.init = true;
  const auto w4 = check(rng, wide, Path::steps);
  wide.T = 2;
  EXPECT_EQ(w4 - check(rng, wide, Path::steps), 4u) << "2 dispatches per step";
}

// The sequence kernel with R in registers (glsl/nn/rnn_seq_regs.comp; GLTENSOR_RNN=units, GPUs' default up
// to hidden 128): KS invocations per hidden unit, each with the unit's gate rows over H / KS columns. LSTM
// and GRU hidden 128: 4 parts of 32 columns in quads, all in registers; RNN hidden 96: one part; LSTM
// hidden 64: 2 parts of 32; GRU hidden 100: 4 parts of 25 scalar columns; hidden 37: one part, 32 of 37
// scalar columns in registers, 5 from memory; and forced forms (GLTENSOR_RNN_REGS): every column from
// memory in quads, 16 parts of 4 (1024 invocations); the parts summed by subgroup shuffles (GPUs) and
// through shared memory (GLTENSOR_SUBGROUPS=0; llvmpipe has no subgroups); without initial state.
TEST(Rnn, RegistersKernelPartsAndColumnsFromMemory) {
  GLT_RNG(rng);
  for (bool subgroups : {true, false}) {
    ScopedSettings set;
    set->subgroups = subgroups;
    Case lstm;
    lstm.D = 2, lstm.T = 5, lstm.B = 2, lstm.H = 128, lstm.seq = lstm.init = lstm.peep = lstm.clip = true;
    check(rng, lstm, Path::units);
    Case gru;
    gru.cell = RnnCell::gru, gru.lbr = true, gru.T = 4, gru.B = 1, gru.H = 128, gru.init = true;
    check(rng, gru, Path::units);
    gru.H = 100, gru.D = 2, gru.seq = true;
    check(rng, gru, Path::units);
    Case rnn;
    rnn.cell = RnnCell::rnn, rnn.D = 2, rnn.T = 3, rnn.B = 1, rnn.H = 96, rnn.layout1 = rnn.init = true;
    check(rng, rnn, Path::units);
    Case small;
    small.T = 2, small.B = 1, small.H = 64, small.init = true;
    check(rng, small, Path::units);
    {  // every column from memory (2 parts of 32, quads); 16 parts of 4, all in registers (1024 invocations)
      ScopedSettings forced;
      for (const auto& [ks, rr] : {std::pair{2, 0}, std::pair{16, 4}}) {
        forced->rnn_regs_parts = ks, forced->rnn_regs_cols = rr;
        small.peep = small.seq = true, small.B = 3, small.D = 2, small.T = 4;
        check(rng, small, Path::units);
      }
    }
    Case odd;  // hidden 37 and 7 (one part, scalar columns), both directions, reverse activations
    odd.D = 2, odd.T = 4, odd.B = 2, odd.H = 37, odd.init = odd.seq = true;
    odd.acts = {{"HardSigmoid", 0.3, 0.4}, {"ScaledTanh", 1.2, 0.7}, {"Softsign", 0, 0},
                {"Sigmoid", 0, 0},         {"Tanh", 0, 0},           {"Relu", 0, 0}};
    check(rng, odd, Path::units);
    odd.H = 7, odd.input_forget = true;
    check(rng, odd, Path::units);
    odd.init = false;  // no initial state: the kernel starts from zeros (u_zero), the state buffers unfilled
    check(rng, odd, Path::units);
    lstm.init = false;
    check(rng, lstm, Path::units);
  }
}

// The register kernel's GRID form on GPUs (NG workgroups per direction and batch row, h exchanged
// through memory each step; never on software rasterizers: its workgroups wait for each other): LSTM
// hidden 256, both directions (8 workgroups of 32 units each), with and without initial state; GRU
// hidden 256; LSTM hidden 128 forced into 4 workgroups (GLTENSOR_RNN_REGS=0,16,4).
TEST(Rnn, RegistersKernelGrid) {
  const int sms = gltensor::detail::cuda_multiprocessors(*device().impl());
  if (device().adapter().software || sms < 16)
    GTEST_SKIP() << "a GPU of 16 multiprocessors or more that CUDA reports (" << sms << ")";
  GLT_RNG(rng);
  Case lstm;
  lstm.D = 2, lstm.T = 9, lstm.B = 1, lstm.H = 256, lstm.seq = lstm.peep = lstm.clip = true;
  EXPECT_EQ(check(rng, lstm, Path::choose), 3u) << "X W^T, the counters' fill, the whole sequence";
  lstm.init = true, lstm.seq = false;
  check(rng, lstm, Path::choose);
  Case gru;
  gru.cell = RnnCell::gru, gru.lbr = true, gru.T = 6, gru.B = 2, gru.H = 256, gru.init = true;
  check(rng, gru, Path::choose);
  ScopedSettings set;
  set->rnn_regs_grid = 4, set->rnn_regs_cols = 16;
  Case mid;
  mid.T = 12, mid.B = 2, mid.D = 2, mid.H = 128, mid.seq = true;
  EXPECT_EQ(check(rng, mid, Path::choose), 3u);
  mid.init = true, mid.T = 300;
  check(rng, mid, Path::choose);
}

// The GRID form's stall path, run on purpose (GLTENSOR_RNN_GRID_STALL: the last workgroup of direction 0 and batch
// row 0 never counts itself, so that the others' polls give up after their bound): the call ends (no hang) as the
// typed LimitError at the read, the flag cleared; the device is usable afterwards: the same case without the setting,
// and a GRID case of other shapes, match the reference.
TEST(Rnn, RegistersKernelGridStall) {
  const int sms = gltensor::detail::cuda_multiprocessors(*device().impl());
  if (device().adapter().software || sms < 16)
    GTEST_SKIP() << "a GPU of 16 multiprocessors or more that CUDA reports (" << sms << ")";
  GLT_RNG(rng);
  Case lstm;
  lstm.D = 2, lstm.T = 6, lstm.B = 1, lstm.H = 256, lstm.init = true;
  {
    ScopedSettings set;
    set->rnn_grid_stall = true;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      check(rng, lstm, Path::choose);
      ADD_FAILURE() << "no LimitError: the stall was not reported";
    } catch (const LimitError& e) {
      EXPECT_NE(std::string(e.what()).find("did not all run at once"), std::string::npos) << e.what();
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("the stalled call ended as LimitError after %.3f s\n", s);
    EXPECT_LT(s, 60.0);
  }
  check(rng, lstm, Path::choose);  // the device is usable, the flag was cleared
  Case gru;
  gru.cell = RnnCell::gru, gru.lbr = true, gru.T = 5, gru.B = 2, gru.H = 256, gru.seq = true;
  check(rng, gru, Path::choose);
}

// Past the device's own loop limit (llvmpipe: 65535 iterations per invocation), where a kernel
// that ran more loop iterations than it declared would be cut short silently: 2000 steps of
// hidden 128 take 2 dispatches with quads, 4 with one unit per invocation (one on GPUs); GRU
// without linear_before_reset (two GEMVs and barriers a step) 3 and 8. A contracting R
// (0.5 / sqrt(H)) keeps float32 within reach of the float64 reference over the steps.
TEST(Rnn, SequenceKernelPastTheDevicesLoopLimit) {
  GLT_RNG(rng);
  for (RnnCell cell : {RnnCell::rnn, RnnCell::gru})
    for (Path path : {Path::units, Path::quads}) {
      Case c;
      c.cell = cell, c.T = 2000, c.B = 1, c.H = 128, c.I = 8, c.init = true, c.rscale = 0.5f;
      check(rng, c, path);
    }
}
