// The model planner's fuse_layernorm (src/model/fuse_layernorm.cpp): LayerNorm written out in
// ONNX nodes (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add, as paddle2onnx exports
// PP-OCRv4's SVTR blocks) against a float64 reference and against the same model planned without
// the pass (Settings::fuse_layernorm off); rows of one, odd and long widths, 0 rows, NaN/Inf,
// large offsets (the variance taken about the mean), opset 18's axes input, no beta; the forms the
// pass must leave alone; and the fused node's model output in host-visible memory up to
// Settings::host_output_bytes (Args::host_output), plain and replayed.
#include <cmath>

#include "model/planner.hpp"
#include "onnx_builder.hpp"
#include "planned_run.hpp"
#include "runtime/settings.hpp"
#include "tensor/tensor_impl.hpp"
#include "test_util.hpp"

using namespace gltensor;
using namespace glt_test;
using B = OnnxBuilder;

namespace {

// The pattern's choices; the defaults are the SVTR blocks' form.
struct Form {
  Shape shape{3, 120};
  int opset = 9;
  bool beta = true;
  float exponent = 2;
  std::vector<std::int64_t> axes{-1};
  std::int64_t gamma_size = 0;   ///< 0: the last dim
  bool mean_is_output = false;   ///< the first ReduceMean's value also a graph output
  float offset = 0, spread = 2;  ///< inputs uniform in offset +- spread
  std::size_t eps_rank = 0;      ///< eps's dims (all 1): past x's rank they broadcast y to theirs
};

struct Built {
  std::string path;
  std::vector<float> x, gamma, beta;
  float eps = 1e-6f;
};

Built build(const Form& f, std::mt19937_64& rng, const std::string& name) {
  B b(f.opset);
  Built r;
  std::int64_t n = 1;
  for (auto d : f.shape) n *= d;
  const std::int64_t L = f.shape.empty() ? 1 : f.shape.back();
  const std::int64_t G = f.gamma_size ? f.gamma_size : L;
  r.x = uniform(rng, static_cast<std::size_t>(n), f.offset - f.spread, f.offset + f.spread);
  if (n > 40) sprinkle_specials(r.x);
  r.gamma = uniform(rng, static_cast<std::size_t>(G), 0.5f, 1.5f);
  r.beta = uniform(rng, static_cast<std::size_t>(G));
  b.input("x", f.shape);
  b.init("gamma", {G}, r.gamma).init("beta", {G}, r.beta).init("two", {}, {f.exponent});
  b.init("eps", std::vector<std::int64_t>(f.eps_rank, 1), {r.eps});
  auto mean = [&](const std::string& in, const std::string& out) {
    if (f.opset >= 18) {
      b.init_i64(out + "_axes", {static_cast<std::int64_t>(f.axes.size())}, f.axes);
      b.node("ReduceMean", {in, out + "_axes"}, {out});
    } else {
      B::attr_ints(b.node("ReduceMean", {in}, {out}), "axes", f.axes);
    }
  };
  mean("x", "mu");
  b.node("Sub", {"x", "mu"}, {"d"});
  b.node("Pow", {"d", "two"}, {"d2"});
  mean("d2", "var");
  b.node("Add", {"var", "eps"}, {"ve"});
  b.node("Sqrt", {"ve"}, {"sd"});
  b.node("Div", {"d", "sd"}, {"xn"});
  b.node("Mul", {"xn", "gamma"}, {f.beta ? "xg" : "y"});
  if (f.beta) b.node("Add", {"beta", "xg"}, {"y"});
  Shape ys = f.shape;
  if (!ys.empty()) ys.back() = std::max(L, G);
  b.output("y", ys);
  if (f.mean_is_output) {
    Shape ms = f.shape;
    ms.back() = 1;
    b.output("mu", ms);
  }
  r.path = b.save(name);
  return r;
}

// The float64 layer norm over the last dim (the biased variance about the mean, as the nodes say).
std::vector<double> reference(const Form& f, const Built& m) {
  const std::size_t L = static_cast<std::size_t>(f.shape.back());
  std::vector<double> y(m.x.size());
  for (std::size_t r = 0; r < m.x.size() / L; ++r) {
    double mu = 0, var = 0;
    for (std::size_t i = 0; i < L; ++i) mu += m.x[r * L + i];
    mu /= static_cast<double>(L);
    for (std::size_t i = 0; i < L; ++i) var += (m.x[r * L + i] - mu) * (m.x[r * L + i] - mu);
    var /= static_cast<double>(L);
    for (std::size_t i = 0; i < L; ++i)
      y[r * L + i] = (m.x[r * L + i] - mu) / std::sqrt(var + m.eps) * m.gamma[i] + (f.beta ? m.beta[i] : 0.0);
  }
  return y;
}

using Outcome = PlannedRun;

Outcome run(const Form& f, const Built& m, bool fuse) {
  return run_planned(m.path, {{"x", Tensor::from_host(device(), m.x, f.shape)}}, "y", &detail::Settings::fuse_layernorm,
                     fuse);
}

// Fused: the plan names one LayerNorm pattern, a run is one dispatch, the outputs match the
// float64 reference (tol) and the unfused plan's (tol).
void expect_fused(const Form& f, const std::string& name, double tol) {
  GLT_RNG(rng);
  SCOPED_TRACE(name + " " + to_string(f.shape));
  const Built m = build(f, rng, name);
  const Outcome a = run(f, m, true), b = run(f, m, false);
  EXPECT_NE(a.plan.find("1 LayerNorm patterns"), std::string::npos) << a.plan;
  EXPECT_EQ(b.plan.find("LayerNorm"), std::string::npos) << b.plan;
  const std::int64_t rows = f.shape.back() ? static_cast<std::int64_t>(m.x.size()) / f.shape.back() : 0;
  if (rows > 0) {
    EXPECT_EQ(a.dispatches, 1u) << a.plan;
  }
  EXPECT_LT(a.dispatches, std::max<std::uint64_t>(b.dispatches, 1)) << a.plan;
  const std::vector<double> ref = reference(f, m);
  EXPECT_TRUE(close(a.y, ref, tol, tol));
  EXPECT_TRUE(close(a.y, to_double(b.y), tol, tol));
}

}  // namespace

// The SVTR blocks' form ([rows, 120], opset 9) and rank 1, 3 and 4 inputs, odd and one-row
// widths, a width past one workgroup's 256 invocations, and 0 rows.
TEST(ModelLayerNorm, FusedMatchesReferenceAndUnfused) {
  for (const Shape& s :
       {Shape{3, 120}, Shape{1008, 120}, Shape{7}, Shape{2, 5, 7}, Shape{1, 3, 1, 33}, Shape{2, 1025}, Shape{0, 8}})
    expect_fused(Form{.shape = s}, "ln_shapes", 2e-5);
}

// Inputs about 1000 with spread 1: the variance about the mean (E[x^2] - E[x]^2 in float32 would
// lose every digit).
TEST(ModelLayerNorm, LargeOffsetsKeepTheirDigits) {
  expect_fused(Form{.shape = {4, 96}, .offset = 1000, .spread = 1}, "ln_offset", 1e-3);
}

// opset 18's ReduceMean takes its axes as an input; and the form without beta (Mul last).
TEST(ModelLayerNorm, AxesInputAndNoBeta) {
  expect_fused(Form{.shape = {6, 40}, .opset = 18}, "ln_opset18", 2e-5);
  expect_fused(Form{.shape = {6, 40}, .beta = false}, "ln_nobeta", 2e-5);
}

// Forms that are not a layer norm over the last axis, or whose intermediates are read elsewhere:
// planned as they are (no LayerNorm in the plan), and the same values as without the pass.
TEST(ModelLayerNorm, OtherFormsLeftAlone) {
  GLT_RNG(rng);
  const Form forms[] = {
      Form{.exponent = 3},           // not a variance
      Form{.axes = {1}},             // the last axis by number (the rank is unknown when planning)
      Form{.axes = {0, 1}},          // two axes
      Form{.gamma_size = 1},         // one-element gamma: broadcast, not per feature
      Form{.mean_is_output = true},  // the mean read by the graph too
      Form{.eps_rank = 3},           // eps [1, 1, 1]: y [1, 3, 120], not x's rank
  };
  int k = 0;
  for (const Form& f : forms) {
    SCOPED_TRACE("form " + std::to_string(k));
    const Built m = build(f, rng, "ln_other" + std::to_string(k++));
    const Outcome a = run(f, m, true), b = run(f, m, false);
    EXPECT_EQ(a.plan.find("LayerNorm"), std::string::npos) << a.plan;
    EXPECT_EQ(a.dispatches, b.dispatches);
    EXPECT_TRUE(close(a.y, to_double(b.y), 0, 0));
  }
}

// [3, 1] against a gamma and beta of 4: the nodes broadcast to [3, 4] (x - mean is 0: every row
// is beta); the fused node does as they do (layer_norm takes only gamma of x's width).
TEST(ModelLayerNorm, NarrowInputsBroadcastAsTheNodes) {
  GLT_RNG(rng);
  const Form f{.shape = {3, 1}, .gamma_size = 4};
  const Built m = build(f, rng, "ln_narrow");
  const Outcome a = run(f, m, true), b = run(f, m, false);
  EXPECT_NE(a.plan.find("1 LayerNorm patterns"), std::string::npos) << a.plan;
  std::vector<double> rows;
  for (int r = 0; r < 3; ++r) rows.insert(rows.end(), m.beta.begin(), m.beta.end());
  EXPECT_TRUE(close(a.y, rows, 0, 0));
  EXPECT_TRUE(close(b.y, rows, 0, 0));
}

// The fused LayerNorm's model output (layer_norm_out's host_out): in a host-visible buffer where it
// is at most Settings::host_output_bytes (as set: 256 KiB by default; and 1 MiB) and the device has
// such buffers (direct host I/O on), else device memory; plain runs and replays (outputs_to_host);
// [64, 1025] (262 400 bytes: just past 256 KiB, torchcmp's case), the SVTR blocks' [1008, 120], a
// small one and one past 1 MiB; fresh inputs each run with NaN / Inf in the first row, checked against the float64
// reference, and a plain run's outputs kept and checked again after the later runs. Sabotage:
// host_out false in the LayerNorm op (fails: not host-visible).
TEST(ModelLayerNorm, ModelOutputsInHostMemoryUpToTheLimit) {
  GLT_RNG(rng);
  Device& dev = device();
  const bool direct = detail::alloc_host(*dev.impl(), {1}, DType::f32, "test").defined();
  for (const std::size_t limit : {detail::settings().host_output_bytes, std::size_t{1} << 20})
    for (const Shape& shape : {Shape{64, 1025}, Shape{1008, 120}, Shape{3, 37}, Shape{1100, 240}})
      for (bool replay : {false, true}) {
        ScopedSettings s;
        s->host_output_bytes = limit;
        SCOPED_TRACE(to_string(shape) + (replay ? " replayed" : " plain") + ", limit " + std::to_string(limit));
        const Form f{.shape = shape};
        Built m = build(f, rng, "ln_host");
        ModelOptions o;
        o.replay = replay;
        Model model = Model::load(dev, m.path, o);
        EXPECT_NE(model.plan_summary().find("1 LayerNorm patterns"), std::string::npos) << model.plan_summary();
        const bool host = direct && m.x.size() * 4 <= limit;
        std::vector<Tensor> kept;
        std::vector<std::vector<double>> want;
        for (int run = 0; run < 4; ++run) {  // replayed: run 0 plain, 1 captured, 2 and 3 replays
          m.x = uniform(rng, m.x.size(), -2, 2);
          sprinkle_specials(m.x);
          const Tensor y = model.run({{"x", Tensor::from_host(dev, m.x, shape)}}).at("y");
          want.push_back(reference(f, m));
          EXPECT_TRUE(close(y.to_vector(), want.back(), 2e-5, 2e-5)) << "run " << run;
          EXPECT_EQ(y.impl()->storage->block.host != nullptr, host) << "run " << run;
          kept.push_back(y);
        }
        // (a replay returns the recording's outputs, which the next replay overwrites: plain only)
        for (std::size_t i = 0; !replay && i < kept.size(); ++i)
          EXPECT_TRUE(close(kept[i].to_vector(), want[i], 2e-5, 2e-5)) << "kept output of run " << i;
      }
}
