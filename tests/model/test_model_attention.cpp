// The model planner's fuse_attention (src/model/fuse_attention.cpp): attention written out in
// ONNX nodes (Mul by a scale, Transpose of k, MatMul, Softmax, MatMul, as paddle2onnx exports
// PP-OCRv4's SVTR blocks) against a float64 reference and against the same model planned without
// the pass (Settings::fuse_attention off); the SVTR blocks' shapes, one key, one-wide heads,
// long sequences, a 0-size batch, NaN/Inf, the scale on either side or absent, opset 9 and 13
// Softmax axes, broadcast batch dims (the nodes' fallback); and forms the pass must leave alone.
#include <cmath>

#include "model/planner.hpp"
#include "onnx_builder.hpp"
#include "planned_run.hpp"
#include "test_util.hpp"

using namespace gltensor;
using namespace glt_test;
using B = OnnxBuilder;

namespace {

struct Form {
  Shape q{1, 8, 40, 15}, k{1, 8, 40, 15}, v{1, 8, 40, 15};
  int opset = 9;
  std::int64_t axis = 3;  ///< Softmax's; -99: no attribute
  int scale_side = 1;     ///< Mul(q, c): 1, Mul(c, q): 0, no Mul: -1
  float scale = 0.258f;
  std::vector<std::int64_t> perm{0, 1, 3, 2};
  bool scores_out = false;  ///< the Softmax's input also a graph output
};

struct Built {
  std::string path;
  std::vector<float> q, k, v;
};

std::int64_t count(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

Built build(const Form& f, std::mt19937_64& rng, const std::string& name) {
  B b(f.opset);
  Built r;
  r.q = uniform(rng, static_cast<std::size_t>(count(f.q)), -2, 2);
  r.k = uniform(rng, static_cast<std::size_t>(count(f.k)), -2, 2);
  r.v = uniform(rng, static_cast<std::size_t>(count(f.v)));
  if (r.q.size() > 40) sprinkle_specials(r.q);
  b.input("q", f.q).input("k", f.k).input("v", f.v).init("c", {}, {f.scale});
  std::string qs = "q";
  if (f.scale_side >= 0) {
    b.node("Mul", f.scale_side == 1 ? std::vector<std::string>{"q", "c"} : std::vector<std::string>{"c", "q"}, {"qs"});
    qs = "qs";
  }
  B::attr_ints(b.node("Transpose", {"k"}, {"kt"}), "perm", f.perm);
  b.node("MatMul", {qs, "kt"}, {"s"});
  auto& sm = b.node("Softmax", {"s"}, {"p"});
  if (f.axis != -99) B::attr_i(sm, "axis", f.axis);
  b.node("MatMul", {"p", "v"}, {"y"});
  b.output_any("y");
  if (f.scores_out) b.output_any("s");
  r.path = b.save(name);
  return r;
}

// softmax(q k^T * scale) v in float64, q, k, v [B, H, T, E] alike in B and H or broadcast from 1.
std::vector<double> reference(const Form& f, const Built& m) {
  const std::int64_t Bn = std::max(f.q[0], f.k[0]), H = std::max(f.q[1], f.k[1]), L = f.q[2], S = f.k[2], E = f.q[3],
                     Ev = f.v[3];
  const double c = f.scale_side >= 0 ? static_cast<double>(f.scale) : 1.0;
  auto at = [](const std::vector<float>& t, const Shape& s, std::int64_t b, std::int64_t h, std::int64_t i,
               std::int64_t j) {
    return static_cast<double>(
        t[static_cast<std::size_t>((((s[0] == 1 ? 0 : b) * s[1] + (s[1] == 1 ? 0 : h)) * s[2] + i) * s[3] + j)]);
  };
  std::vector<double> y;
  for (std::int64_t b = 0; b < Bn; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < L; ++i) {
        std::vector<double> p(static_cast<std::size_t>(S));
        double mx = -INFINITY, sum = 0;
        for (std::int64_t j = 0; j < S; ++j) {
          double d = 0;
          for (std::int64_t e = 0; e < E; ++e) d += at(m.q, f.q, b, h, i, e) * c * at(m.k, f.k, b, h, j, e);
          p[static_cast<std::size_t>(j)] = d;
          mx = std::isnan(d) ? d : std::max(mx, d);
        }
        for (auto& x : p) sum += (x = std::exp(x - mx));
        for (std::int64_t e = 0; e < Ev; ++e) {
          double acc = 0;
          for (std::int64_t j = 0; j < S; ++j) acc += p[static_cast<std::size_t>(j)] / sum * at(m.v, f.v, b, h, j, e);
          y.push_back(acc);
        }
      }
  return y;
}

using Outcome = PlannedRun;

Outcome run(const Form& f, const Built& m, bool fuse) {
  return run_planned(m.path,
                     {{"q", Tensor::from_host(device(), m.q, f.q)},
                      {"k", Tensor::from_host(device(), m.k, f.k)},
                      {"v", Tensor::from_host(device(), m.v, f.v)}},
                     "y", &detail::Settings::fuse_attention, fuse);
}

// Fused: the plan names one attention pattern, a run takes fewer dispatches than the unfused
// plan's, the outputs match the float64 reference and the unfused plan's (tol).
void expect_fused(const Form& f, const std::string& name, double tol) {
  GLT_RNG(rng);
  SCOPED_TRACE(name + " q " + to_string(f.q) + " k " + to_string(f.k) + " v " + to_string(f.v));
  const Built m = build(f, rng, name);
  const Outcome a = run(f, m, true), b = run(f, m, false);
  EXPECT_NE(a.plan.find("1 attention patterns"), std::string::npos) << a.plan;
  EXPECT_EQ(b.plan.find("attention"), std::string::npos) << b.plan;
  if (!a.y.empty()) {
    EXPECT_LT(a.dispatches, b.dispatches) << a.plan;
  }
  EXPECT_TRUE(close(a.y, reference(f, m), tol, tol));
  EXPECT_TRUE(close(a.y, to_double(b.y), tol, tol));
}

}  // namespace

// The SVTR blocks' heads (8 x 15 over 40 and 168 tokens, 6 lines), one key, one-wide heads,
// value widths other than the keys', a sequence of 300, a 0-size batch.
TEST(ModelAttention, FusedMatchesReferenceAndUnfused) {
  expect_fused(Form{}, "att_svtr", 2e-5);
  expect_fused(Form{.q = {6, 8, 168, 15}, .k = {6, 8, 168, 15}, .v = {6, 8, 168, 15}}, "att_svtr6", 2e-5);
  expect_fused(Form{.q = {2, 3, 5, 4}, .k = {2, 3, 1, 4}, .v = {2, 3, 1, 7}}, "att_onekey", 2e-5);
  expect_fused(Form{.q = {1, 2, 7, 1}, .k = {1, 2, 9, 1}, .v = {1, 2, 9, 3}}, "att_e1", 2e-5);
  expect_fused(Form{.q = {1, 1, 300, 16}, .k = {1, 1, 300, 16}, .v = {1, 1, 300, 16}}, "att_long", 2e-5);
  // (opset 9 and 13: the opset 9 Softmax mapping takes 0-element inputs too, fused or not)
  expect_fused(Form{.q = {0, 2, 5, 4}, .k = {0, 2, 5, 4}, .v = {0, 2, 5, 4}, .opset = 13, .axis = -1}, "att_empty", 0);
  expect_fused(Form{.q = {0, 2, 5, 4}, .k = {0, 2, 5, 4}, .v = {0, 2, 5, 4}}, "att_empty9", 0);
}

// The scale on the left, no scale at all, opset 13's default axis (-1) and axis -1 at opset 9.
TEST(ModelAttention, ScaleSidesAndSoftmaxAxes) {
  expect_fused(Form{.scale_side = 0}, "att_left", 2e-5);
  expect_fused(Form{.scale_side = -1}, "att_noscale", 2e-5);
  expect_fused(Form{.opset = 13, .axis = -99}, "att_opset13", 2e-5);
  expect_fused(Form{.axis = -1}, "att_axis_m1", 2e-5);
}

// k and v broadcast over the batch ([1, H, ...] against q's [2, H, ...]): the fused node runs
// the nodes' matmuls (their broadcasting), the same values.
TEST(ModelAttention, BroadcastBatchRunsAsTheNodes) {
  expect_fused(Form{.q = {2, 3, 6, 5}, .k = {1, 3, 6, 5}, .v = {1, 3, 6, 5}}, "att_bcast", 2e-5);
}

// q of rank 5 against a 4-D k: the scores are 5-D, so a Softmax axis of 3 (counted from the
// front) is not their last axis: the fused node must compute what the nodes do (opset 13: the
// softmax over dim 3; opset 9: over dims 3 and 4 coerced to one); axis -1 is the last axis at
// any rank. Against the unfused plan's values.
TEST(ModelAttention, ScoresOfRankFiveKeepTheSoftmaxAxis) {
  GLT_RNG(rng);
  int n = 0;
  for (const Form& f : {Form{.q = {2, 1, 2, 5, 4}, .k = {1, 2, 6, 4}, .v = {1, 2, 6, 3}, .opset = 13, .axis = 3},
                        Form{.q = {2, 1, 2, 5, 4}, .k = {1, 2, 6, 4}, .v = {1, 2, 6, 3}, .opset = 9, .axis = 3},
                        Form{.q = {2, 1, 2, 5, 4}, .k = {1, 2, 6, 4}, .v = {1, 2, 6, 3}, .opset = 13, .axis = -1}}) {
    SCOPED_TRACE("form " + std::to_string(n));
    const Built m = build(f, rng, "att_rank5_" + std::to_string(n++));
    const Outcome a = run(f, m, true), b = run(f, m, false);
    ASSERT_EQ(a.y.size(), 2u * 2 * 5 * 3);
    EXPECT_TRUE(close(a.y, to_double(b.y), 2e-6, 2e-6));
  }
}

// Not attention over the last axis, or an intermediate read elsewhere: planned as they are.
TEST(ModelAttention, OtherFormsLeftAlone) {
  GLT_RNG(rng);
  const Form forms[] = {
      Form{.axis = 2},                                  // softmax over the queries
      Form{.opset = 9, .axis = -99},                    // opset 9's default axis 1: over (H, T, S) flattened
      Form{.k = {1, 15, 8, 40}, .perm = {0, 2, 1, 3}},  // not k^T
      Form{.scale = -0.5f},                             // a negative scale (left to the nodes)
      Form{.scores_out = true},                         // the scores read by the graph too
  };
  int n = 0;
  for (const Form& f : forms) {
    SCOPED_TRACE("form " + std::to_string(n));
    const Built m = build(f, rng, "att_other" + std::to_string(n++));
    const Outcome a = run(f, m, true), b = run(f, m, false);
    EXPECT_EQ(a.plan.find("attention"), std::string::npos) << a.plan;
    EXPECT_EQ(a.dispatches, b.dispatches);
    EXPECT_TRUE(close(a.y, to_double(b.y), 0, 0));
  }
}

// The fused pattern through attention.comp's key split merged by the chunks' last workgroup
// (GLTENSOR_ATTENTION_SPLIT=1: 3 chunks of 32 or 64 keys; GPUs split such few row blocks by
// default), plain and replayed: a replay reuses the recorded dispatch and so its arrival counters,
// which each dispatch must leave at zero; fresh inputs each run against the float64 reference.
TEST(ModelAttention, ReplayedKeySplitMergedInTheDispatch) {
  GLT_RNG(rng);
  ScopedEnv lanes("GLTENSOR_ATTENTION_LANES", "0");
  ScopedEnv block("GLTENSOR_ATTENTION_BLOCK", "0");
  ScopedEnv split("GLTENSOR_ATTENTION_SPLIT", "1");
  const Form f{.q = {1, 2, 37, 16}, .k = {1, 2, 150, 16}, .v = {1, 2, 150, 16}};
  for (bool replay : {false, true}) {
    SCOPED_TRACE(replay ? "replayed" : "plain");
    Built m = build(f, rng, "att_split_replay");
    ModelOptions o;
    o.replay = replay;
    Model model = Model::load(device(), m.path, o);
    for (int run = 0; run < 4; ++run) {  // replayed: run 0 plain, 1 captured, 2 and 3 replays
      m.q = uniform(rng, m.q.size(), -2, 2), m.k = uniform(rng, m.k.size(), -2, 2), m.v = uniform(rng, m.v.size());
      const Tensor y = model
                           .run({{"q", Tensor::from_host(device(), m.q, f.q)},
                                 {"k", Tensor::from_host(device(), m.k, f.k)},
                                 {"v", Tensor::from_host(device(), m.v, f.v)}})
                           .at("y");
      EXPECT_TRUE(close(y.to_vector(), reference(f, m), 2e-5, 2e-5)) << "run " << run;
    }
  }
}
