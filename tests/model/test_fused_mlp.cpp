// The model planner's fuse_mlp (src/model/fuse_mlp.cpp) and the fully fused MLP kernel
// (glsl/nn/fused_mlp.comp, src/nn/fused_mlp.cpp): random chains of MatMul / Gemm layers (odd
// widths, every fused activation, with and without bias, Gemm's transB, alpha and beta) against a
// float64 reference and against the same model planned without the pass (GLTENSOR_FUSED_MLP=0);
// rows 0, 1, odd counts past one workgroup and many workgroups; NaN/Inf; widths at the shared
// memory limit and past it; chains whose middle output is a graph output or read elsewhere (not
// fused: the same values as without the pass, bit for bit); chains past the loop limit; f16
// weights; the plan without a GPU.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "gltensor/gltensor.hpp"
#include "nn/fused_mlp.hpp"
#include "onnx_builder.hpp"
#include "tensor/tensor_impl.hpp"
#include "test_util.hpp"
#include "three_gemm.hpp"

using namespace gltensor;
using namespace glt_test;
using B = OnnxBuilder;

namespace {

// Model files of this process (ctest runs test_fused_mlp and its check_loops run side by side).
std::string own(const std::string& name) { return name + "_" + std::to_string(::getpid()); }

struct LayerSpec {
  std::int64_t K = 0, N = 0;
  bool gemm = false, trans_b = false, bias = true;
  std::string act;  // "", Relu, Sigmoid, Tanh, LeakyRelu, Clip, HardSigmoid, HardSwish
  double alpha = 1, beta = 1;
  int bias_rank = 1;  // Gemm's C: 0 = one value [], 2 = [1, N]
};

double ref_act(const std::string& a, double x) {
  if (std::isnan(x)) return x;
  if (a == "Relu") return x > 0 ? x : 0;
  if (a == "Sigmoid") return 1 / (1 + std::exp(-x));
  if (a == "Tanh") return std::tanh(x);
  if (a == "LeakyRelu") return x > 0 ? x : 0.1 * x;
  if (a == "Clip") return std::min(std::max(x, -0.5), 0.75);
  if (a == "HardSigmoid") return std::min(std::max(0.3 * x + 0.4, 0.0), 1.0);
  if (a == "HardSwish") return x * std::min(std::max(x + 3, 0.0), 6.0) / 6;
  return x;
}

// A chain of layers as an ONNX model with random weights, and its float64 reference. Input x
// [1, rows, K_0] ([rows, K_0] where a layer is a Gemm), output y; `tap` >= 0: layer tap's output
// is also graph output "t" (tap_read: read by a Neg whose output is "t" instead).
struct Chain {
  std::vector<LayerSpec> layers;
  std::vector<std::vector<float>> w, b;
  std::string path;
  bool two_d = false;
  int tap = -1;

  Chain(std::mt19937_64& rng, std::vector<LayerSpec> ls, int tap_layer = -1, bool tap_read = false)
      : layers(std::move(ls)), tap(tap_layer) {
    B m(13);
    for (const auto& l : layers) two_d = two_d || l.gemm;
    const std::int64_t K0 = layers[0].K, NL = layers.back().N;
    m.input("x", two_d ? Shape{-1, K0} : Shape{1, -1, K0}).output("y", two_d ? Shape{-1, NL} : Shape{1, -1, NL});
    std::string in = "x";
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const LayerSpec& l = layers[i];
      const std::string s = std::to_string(i);
      const float r = 1.5f / std::sqrt(static_cast<float>(std::max<std::int64_t>(l.K, 1)));
      w.push_back(uniform(rng, static_cast<std::size_t>(l.K * l.N), -r, r));
      b.push_back(l.bias ? uniform(rng, static_cast<std::size_t>(l.N)) : std::vector<float>(l.N, 0.0f));
      if (l.bias_rank == 0) b.back().assign(static_cast<std::size_t>(l.N), b.back()[0]);
      m.init("w" + s, l.trans_b ? Shape{l.N, l.K} : Shape{l.K, l.N}, l.trans_b ? transposed(w.back(), l) : w.back());
      if (l.bias)
        m.init("b" + s,
               l.bias_rank == 0   ? Shape{}
               : l.bias_rank == 2 ? Shape{1, l.N}
                                  : Shape{l.N},
               l.bias_rank == 0 ? std::vector<float>{b.back()[0]} : b.back());
      const bool last = i + 1 == layers.size();
      const std::string out = last ? "y" : "h" + s;
      const std::string pre = l.act.empty() ? out : "p" + s;
      if (l.gemm) {
        std::vector<std::string> ins{in, "w" + s};
        if (l.bias) ins.push_back("b" + s);
        auto& n = m.node("Gemm", ins, {pre});
        if (l.trans_b) B::attr_i(n, "transB", 1);
        if (l.alpha != 1) B::attr_f(n, "alpha", static_cast<float>(l.alpha));
        if (l.beta != 1) B::attr_f(n, "beta", static_cast<float>(l.beta));
      } else if (l.bias) {
        m.node("MatMul", {in, "w" + s}, {"m" + s});
        m.node("Add", {"m" + s, "b" + s}, {pre});
      } else {
        m.node("MatMul", {in, "w" + s}, {pre});
      }
      if (l.act == "LeakyRelu") {
        B::attr_f(m.node("LeakyRelu", {pre}, {out}), "alpha", 0.1f);
      } else if (l.act == "Clip") {
        m.init("lo" + s, {}, {-0.5f}).init("hi" + s, {}, {0.75f});
        m.node("Clip", {pre, "lo" + s, "hi" + s}, {out});
      } else if (l.act == "HardSigmoid") {
        auto& n = m.node("HardSigmoid", {pre}, {out});
        B::attr_f(n, "alpha", 0.3f), B::attr_f(n, "beta", 0.4f);
      } else if (!l.act.empty()) {
        m.node(l.act, {pre}, {out});
      }
      if (static_cast<int>(i) == tap) {
        if (tap_read)
          m.node("Neg", {out}, {"t"});
        else
          m.node("Identity", {out}, {"t"});
        m.output("t", two_d ? Shape{-1, l.N} : Shape{1, -1, l.N});
      }
      in = out;
    }
    path = m.save(own("fused_mlp_chain"));
  }

  static std::vector<float> transposed(const std::vector<float>& w, const LayerSpec& l) {
    std::vector<float> t(w.size());
    for (std::int64_t k = 0; k < l.K; ++k)
      for (std::int64_t j = 0; j < l.N; ++j) t[j * l.K + k] = w[k * l.N + j];
    return t;
  }

  Shape x_shape(std::int64_t rows) const { return two_d ? Shape{rows, layers[0].K} : Shape{1, rows, layers[0].K}; }

  // y's float64 reference (every layer's output rounded to float32, as the unfused graph's are).
  std::vector<double> ref(const std::vector<float>& x, std::int64_t rows) const {
    std::vector<double> a(x.begin(), x.end());
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const LayerSpec& l = layers[i];
      std::vector<double> o(static_cast<std::size_t>(rows * l.N));
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t j = 0; j < l.N; ++j) {
          double s = 0;
          for (std::int64_t k = 0; k < l.K; ++k) s += a[r * l.K + k] * w[i][k * l.N + j];
          o[r * l.N + j] = ref_act(l.act, l.alpha * s + l.beta * b[i][j]);
        }
      a = std::move(o);
    }
    return a;
  }
};

struct Ran {
  std::map<std::string, std::vector<float>> out;
  std::string plan;
  std::uint64_t dispatches = 0;
};

// The model's outputs with fuse_mlp on or off (GLTENSOR_FUSED_MLP's settings), its plan and
// the dispatches of its run.
Ran run(const std::string& path, const std::vector<float>& x, const Shape& shape, bool fused,
        detail::FusedMlpChoice choice = {}, bool f16_weights = false) {
  ScopedSettings s;
  s->fused_mlp = fused ? 1 : 0;
  s->fused_mlp_rows = choice.rows;
  s->fused_mlp_split = choice.split;
  ModelOptions o;
  o.f16_weights = f16_weights;
  Model m = Model::load(device(), path, o);
  Ran r;
  r.plan = m.plan_summary();
  RunStats st;
  auto outs = m.run({{"x", Tensor::from_host(device(), x, shape)}}, &st);
  r.dispatches = st.dispatches;
  for (auto& [name, t] : outs) r.out[name] = t.to_vector();
  return r;
}

std::string fused_text(int layers, int kernels) {
  return std::to_string(layers) + " MatMul/Gemm layers fused into " + std::to_string(kernels) + " MLP kernels";
}

detail::FusedMlp mlp_of(const std::vector<std::int64_t>& widths) {
  detail::FusedMlp m;
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) m.add(widths[i], widths[i + 1]);
  return m;
}

}  // namespace

// The model: one dispatch instead of three, the reference's values, for row counts of 0,
// 1, within one workgroup, odd past one, and many workgroups.
TEST(FusedMlp, ThreeGemmModelIsOneDispatch) {
  GLT_RNG(rng);
  const ThreeGemm g(rng, own("fused_mlp_three_gemm"));
  for (std::int64_t rows : {34, 1, 3, 17, 0, 1001}) {
    SCOPED_TRACE("rows " + std::to_string(rows));
    const auto x = uniform(rng, static_cast<std::size_t>(rows * ThreeGemm::W));
    const Shape shape{1, rows, ThreeGemm::W};
    const Ran f = run(g.path, x, shape, true), u = run(g.path, x, shape, false);
    EXPECT_NE(f.plan.find(fused_text(3, 1)), std::string::npos) << f.plan;
    EXPECT_EQ(u.plan.find("MLP kernels"), std::string::npos) << u.plan;
    if (rows > 0) {
      EXPECT_EQ(f.dispatches, 1u);
      EXPECT_EQ(u.dispatches, 3u);
    }
    EXPECT_TRUE(close(f.out.at("y"), g.ref(x, rows), 1e-4, 1e-4));
    EXPECT_TRUE(close(f.out.at("y"), to_double(u.out.at("y")), 1e-4, 1e-5)) << "fused against unfused";
  }
}

// A grid past the dispatch's workgroup limit is split over several dispatches (WORKGROUP_ID_1D
// counts across them; workgroups past the end exit): 981 rows of 16 per workgroup, 62 workgroups
// as a 3 x 21 grid, at most 3 x 3 per dispatch.
TEST(FusedMlp, GridSplitOverDispatches) {
  GLT_RNG(rng);
  const ThreeGemm g(rng, own("fused_mlp_three_gemm"));
  const std::int64_t rows = 981;
  const auto x = uniform(rng, static_cast<std::size_t>(rows * ThreeGemm::W));
  std::optional<ScopedDispatchLimit> dispatch_limit{std::in_place, 3};
  const Ran f = run(g.path, x, {1, rows, ThreeGemm::W}, true, {16, 0});
  dispatch_limit.reset();
  EXPECT_EQ(f.dispatches, 7u);  // 21 / 3
  EXPECT_TRUE(close(f.out.at("y"), g.ref(x, rows), 1e-4, 1e-4));
}

// Random chains: 2 to 10 layers (past 8: two fused nodes), odd widths, every activation, MatMul
// and Gemm (transB, alpha, beta, without bias), against the reference and the unfused plan.
TEST(FusedMlp, RandomChainsMatchReferenceAndUnfused) {
  GLT_RNG(rng);
  const std::vector<std::string> acts = {"",          "Relu", "Sigmoid",     "Tanh",
                                         "LeakyRelu", "Clip", "HardSigmoid", "HardSwish"};
  const std::vector<std::int64_t> widths = {1, 3, 4, 7, 13, 32, 33, 65};
  for (int trial = 0; trial < 12; ++trial) {
    const int L = trial == 0 ? 10 : trial == 1 ? 8 : 2 + static_cast<int>(rng() % 5);
    const bool gemm = trial % 3 == 2;
    std::vector<LayerSpec> ls;
    std::int64_t K = widths[rng() % widths.size()];
    for (int l = 0; l < L; ++l) {
      LayerSpec s;
      s.K = K, s.N = widths[rng() % widths.size()];
      s.gemm = gemm && (l % 2 == 0 || trial % 2);
      s.trans_b = s.gemm && rng() % 2;
      s.bias = rng() % 4 != 0;
      s.act = acts[rng() % acts.size()];
      if (s.gemm && rng() % 2) s.alpha = 0.5, s.beta = 2;
      ls.push_back(s);
      K = s.N;
    }
    const Chain c(rng, ls);
    const std::int64_t rows = 1 + static_cast<std::int64_t>(rng() % 70);
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + std::to_string(L) + " layers, rows " + std::to_string(rows));
    const auto x = uniform(rng, static_cast<std::size_t>(rows * ls[0].K));
    const Ran f = run(c.path, x, c.x_shape(rows), true), u = run(c.path, x, c.x_shape(rows), false);
    EXPECT_NE(f.plan.find(fused_text(L, L > 8 ? 2 : 1)), std::string::npos) << f.plan;
    EXPECT_EQ(f.dispatches, L > 8 ? 2u : 1u);
    EXPECT_TRUE(close(f.out.at("y"), c.ref(x, rows), 2e-4, 2e-4));
    EXPECT_TRUE(close(f.out.at("y"), to_double(u.out.at("y")), 2e-4, 2e-5)) << "fused against unfused";
  }
}

// Gemm's C as one value ([]) or a row ([1, N]) broadcast over the rows, with beta.
TEST(FusedMlp, GemmBiasShapes) {
  GLT_RNG(rng);
  LayerSpec a{7, 10, true, false, true, "Relu"}, b{10, 6, true, true, true, ""};
  a.bias_rank = 0, a.beta = 1.5, b.bias_rank = 2, b.alpha = 0.75;
  const Chain c(rng, {a, b});
  const std::int64_t rows = 13;
  const auto x = uniform(rng, static_cast<std::size_t>(rows * 7));
  const Ran f = run(c.path, x, c.x_shape(rows), true), u = run(c.path, x, c.x_shape(rows), false);
  EXPECT_NE(f.plan.find(fused_text(2, 1)), std::string::npos) << f.plan;
  EXPECT_TRUE(close(f.out.at("y"), c.ref(x, rows), 1e-4, 1e-4));
  EXPECT_TRUE(close(f.out.at("y"), to_double(u.out.at("y")), 1e-4, 1e-5));
}

// Every row block and K split of the kernel (GLTENSOR_FUSED_MLP=RxS) gives the reference's values.
TEST(FusedMlp, RowsAndSplitSettings) {
  GLT_RNG(rng);
  const Chain c(rng, {{24, 20, false, false, true, "Relu"}, {20, 9, false, false, true, "Tanh"}});
  const std::int64_t rows = 131;
  const auto x = uniform(rng, static_cast<std::size_t>(rows * 24));
  for (detail::FusedMlpChoice ch :
       std::vector<detail::FusedMlpChoice>{{4, 1}, {16, 0}, {64, 1}, {4, 4}, {8, 3}, {4, 8}}) {
    SCOPED_TRACE("GLTENSOR_FUSED_MLP=" + std::to_string(ch.rows) + "x" + std::to_string(ch.split));
    const Ran f = run(c.path, x, c.x_shape(rows), true, ch);
    EXPECT_NE(f.plan.find(fused_text(2, 1)), std::string::npos) << f.plan;
    EXPECT_TRUE(close(f.out.at("y"), c.ref(x, rows), 1e-4, 1e-4));
  }
}

// The last row block's missing rows (fused_mlp.comp stages x's rows clamped to the block's last
// row, their values replaced by 0: no load past x's end): row counts 1 past a block, 2 and 3
// short of one, a block and one, at 4, 8 and 64 rows per block, against float64. Sabotage: the
// clamp one row short (the last row takes the row before it).
TEST(FusedMlp, LastBlockRowsPastTheEnd) {
  GLT_RNG(rng);
  const Chain c(rng, {{13, 7, false, false, true, "Relu"}, {7, 5, false, false, true, ""}});
  for (std::int64_t rows : {1, 2, 5, 6, 67}) {
    const auto x = uniform(rng, static_cast<std::size_t>(rows * 13));
    for (std::int64_t bm : {4, 8, 64}) {
      SCOPED_TRACE("rows " + std::to_string(rows) + ", GLTENSOR_FUSED_MLP=" + std::to_string(bm));
      const Ran f = run(c.path, x, c.x_shape(rows), true, {bm, 1});
      EXPECT_NE(f.plan.find(fused_text(2, 1)), std::string::npos) << f.plan;
      EXPECT_TRUE(close(f.out.at("y"), c.ref(x, rows), 1e-4, 1e-4));
    }
  }
}

// NaN and infinities in x propagate as through the unfused layers (rows without them: the
// reference).
TEST(FusedMlp, NanInfPropagate) {
  GLT_RNG(rng);
  const ThreeGemm g(rng, own("fused_mlp_three_gemm"));
  const std::int64_t rows = 21;
  auto x = uniform(rng, static_cast<std::size_t>(rows * ThreeGemm::W));
  x[3] = NAN, x[ThreeGemm::W * 5 + 7] = INFINITY, x[ThreeGemm::W * 9] = -INFINITY;
  x[ThreeGemm::W * 20 + 95] = NAN;
  const Shape shape{1, rows, ThreeGemm::W};
  const Ran f = run(g.path, x, shape, true), u = run(g.path, x, shape, false);
  const auto& y = f.out.at("y");
  EXPECT_TRUE(close(y, to_double(u.out.at("y")), 1e-4, 1e-5));
  const auto ref = g.ref(x, rows);
  for (std::int64_t r : {0, 5, 9, 20}) EXPECT_TRUE(std::isnan(y[r * ThreeGemm::W])) << "row " << r;
  for (std::int64_t r : {1, 2, 4, 6, 19}) {
    const std::vector<float> got(y.begin() + r * ThreeGemm::W, y.begin() + (r + 1) * ThreeGemm::W);
    EXPECT_TRUE(close(got, std::vector<double>(ref.begin() + r * ThreeGemm::W, ref.begin() + (r + 1) * ThreeGemm::W),
                      1e-4, 1e-4))
        << "row " << r;
  }
}

// Widths at the shared-memory limit fuse; one past it stays unfused, with the values of the plan
// without the pass bit for bit.
TEST(FusedMlp, WidthLimit) {
  GLT_RNG(rng);
  const std::int64_t limit = detail::fused_mlp_max_width(detail::fused_mlp_device(device()), {});
  ASSERT_GE(limit, 4);
  for (std::int64_t width : {limit, limit + 1}) {
    SCOPED_TRACE("width " + std::to_string(width) + " (limit " + std::to_string(limit) + ")");
    const Chain c(rng, {{5, width, false, false, true, "Relu"}, {width, 3, false, false, true, ""}});
    const std::int64_t rows = 19;
    const auto x = uniform(rng, static_cast<std::size_t>(rows * 5));
    const Ran f = run(c.path, x, c.x_shape(rows), true), u = run(c.path, x, c.x_shape(rows), false);
    EXPECT_TRUE(close(f.out.at("y"), c.ref(x, rows), 1e-4, 1e-4));
    if (width <= limit) {
      EXPECT_NE(f.plan.find(fused_text(2, 1)), std::string::npos) << f.plan;
    } else {
      EXPECT_EQ(f.plan.find("MLP kernels"), std::string::npos) << f.plan;
      EXPECT_TRUE(close(f.out.at("y"), to_double(u.out.at("y")), 0, 0));
    }
  }
}

// A middle output that is a graph output, or read by another node, ends the chain there: the
// rest fuses only where two layers remain on one side; the values are the unfused plan's where
// nothing fused.
TEST(FusedMlp, MiddleOutputReadElsewhereIsNotFused) {
  GLT_RNG(rng);
  const std::vector<LayerSpec> two = {{16, 12, false, false, true, "Relu"}, {12, 8, false, false, true, ""}};
  const std::vector<LayerSpec> three = {two[0], two[1], {8, 5, false, false, true, "Sigmoid"}};
  const std::int64_t rows = 23;
  const auto x = uniform(rng, static_cast<std::size_t>(rows * 16));
  for (bool read : {false, true}) {
    SCOPED_TRACE(read ? "read by a Neg" : "a graph output");
    const Chain c2(rng, two, 0, read);
    const Ran f = run(c2.path, x, c2.x_shape(rows), true), u = run(c2.path, x, c2.x_shape(rows), false);
    EXPECT_EQ(f.plan.find("MLP kernels"), std::string::npos) << f.plan;
    for (const char* o : {"y", "t"}) EXPECT_TRUE(close(f.out.at(o), to_double(u.out.at(o)), 0, 0)) << o;
    EXPECT_TRUE(close(f.out.at("y"), c2.ref(x, rows), 1e-4, 1e-4));
    // tapped after layer 0 of three: layers 1 and 2 fuse, layer 0 stays
    const Chain c3(rng, three, 0, read);
    const Ran f3 = run(c3.path, x, c3.x_shape(rows), true), u3 = run(c3.path, x, c3.x_shape(rows), false);
    EXPECT_NE(f3.plan.find(fused_text(2, 1)), std::string::npos) << f3.plan;
    EXPECT_TRUE(close(f3.out.at("t"), to_double(u3.out.at("t")), 0, 0));
    EXPECT_TRUE(close(f3.out.at("y"), c3.ref(x, rows), 1e-4, 1e-4));
  }
}

// Past the loop limit the chain is cut to the prefix that fits (or not fused), with the same
// values; the kernel's declared loop count holds (ctest's check_loops run).
TEST(FusedMlp, LoopLimitCutsTheChain) {
  GLT_RNG(rng);
  const std::vector<LayerSpec> ls = {
      {40, 40, false, false, true, "Relu"}, {40, 40, false, false, true, "Relu"}, {40, 40, false, false, true, ""}};
  const Chain c(rng, ls);
  const detail::FusedMlpDevice d = detail::fused_mlp_device(device());
  const auto two = detail::plan_fused_mlp(mlp_of({40, 40, 40}), d, {});
  const auto three = detail::plan_fused_mlp(mlp_of({40, 40, 40, 40}), d, {});
  ASSERT_TRUE(two.ok && three.ok) << two.why << three.why;
  const std::int64_t rows = 37;
  const auto x = uniform(rng, static_cast<std::size_t>(rows * 40));
  for (std::uint64_t limit : {three.loop_iterations, two.loop_iterations, two.loop_iterations - 1}) {
    SCOPED_TRACE("loop limit " + std::to_string(limit));
    ScopedLoopLimit lim(limit);
    const Ran f = run(c.path, x, c.x_shape(rows), true);
    const int fused = limit >= three.loop_iterations ? 3 : limit >= two.loop_iterations ? 2 : 0;
    if (fused)
      EXPECT_NE(f.plan.find(fused_text(fused, 1)), std::string::npos) << f.plan;
    else
      EXPECT_EQ(f.plan.find("MLP kernels"), std::string::npos) << f.plan;
    EXPECT_TRUE(close(f.out.at("y"), c.ref(x, rows), 1e-4, 1e-4));
  }
}

// ModelOptions::f16_weights: the packed parameters are float16 on the GPU, as the unfused
// layers' weights are.
TEST(FusedMlp, F16Weights) {
  GLT_RNG(rng);
  const ThreeGemm g(rng, own("fused_mlp_three_gemm"));
  const std::int64_t rows = 34;
  const auto x = uniform(rng, static_cast<std::size_t>(rows * ThreeGemm::W));
  const Shape shape{1, rows, ThreeGemm::W};
  const Ran f = run(g.path, x, shape, true, {}, true), u = run(g.path, x, shape, false, {}, true);
  EXPECT_NE(f.plan.find(fused_text(3, 1)), std::string::npos) << f.plan;
  EXPECT_TRUE(close(f.out.at("y"), to_double(u.out.at("y")), 1e-4, 1e-5));
  EXPECT_TRUE(close(f.out.at("y"), g.ref(x, rows), 2e-2, 2e-2));  // weights rounded to f16
}

namespace {

// A random chain for detail::fused_mlp itself: packed parameters, each layer's activation (as
// ref_act names it) and scales.
struct Packed {
  detail::FusedMlp mlp;
  std::vector<std::string> acts;
  std::vector<float> params;

  Packed(std::mt19937_64& rng, const std::vector<std::int64_t>& widths) {
    const std::vector<std::pair<std::string, Epilogue>> kinds = {{"", Activation::none},
                                                                 {"Relu", Activation::relu},
                                                                 {"Sigmoid", Activation::sigmoid},
                                                                 {"Tanh", Activation::tanh},
                                                                 {"LeakyRelu", Epilogue::leaky_relu(0.1)},
                                                                 {"Clip", Epilogue::clip(-0.5, 0.75)},
                                                                 {"HardSigmoid", Epilogue::hardsigmoid(0.3, 0.4)},
                                                                 {"HardSwish", Epilogue::hardswish()}};
    for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
      detail::MlpLayer& l = mlp.add(widths[i], widths[i + 1]);
      const auto& kind = kinds[rng() % kinds.size()];
      l.act = kind.second;
      if (rng() % 2) l.alpha = 0.75, l.beta = 1.5;
      acts.push_back(kind.first);
      const float r = 1.5f / std::sqrt(static_cast<float>(widths[i]));
      const auto w = uniform(rng, static_cast<std::size_t>(l.K * l.N), -r, r), b = uniform(rng, l.N);
      params.insert(params.end(), w.begin(), w.end());
      params.insert(params.end(), b.begin(), b.end());
    }
  }

  // y's float64 reference for x [rows, K_0] (every layer's output rounded to float32).
  std::vector<double> ref(const std::vector<float>& x, std::int64_t rows) const {
    std::vector<double> a(x.begin(), x.end());
    for (std::size_t i = 0; i < mlp.layers.size(); ++i) {
      const detail::MlpLayer& l = mlp.layers[i];
      std::vector<double> o(static_cast<std::size_t>(rows * l.N));
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t j = 0; j < l.N; ++j) {
          double s = 0;
          for (std::int64_t k = 0; k < l.K; ++k) s += a[r * l.K + k] * params[l.w_offset + k * l.N + j];
          o[r * l.N + j] = static_cast<float>(ref_act(acts[i], l.alpha * s + l.beta * params[l.b_offset + j]));
        }
      a = std::move(o);
    }
    return a;
  }

  std::vector<float> run(const std::vector<float>& x, std::int64_t rows, detail::FusedMlpChoice choice,
                         DType params_dtype = DType::f32) const {
    const Tensor p = Tensor::from_host(device(), params, {mlp.numel()});
    return detail::fused_mlp("FusedMlp", Tensor::from_host(device(), x, {rows, mlp.layers[0].K}),
                             params_dtype == DType::f32 ? p : p.to(params_dtype), mlp, choice)
        .to_vector();
  }
};

// m's y in `form` against float64 and the loop form; at 34 rows also with NaN and infinities
// among x's values and with f16 parameters (both as the loop form).
void expect_as_loop_form(std::mt19937_64& rng, const Packed& m, std::vector<float> x, std::int64_t rows,
                         const detail::FusedMlpChoice& form, const detail::FusedMlpChoice& loop) {
  const auto y = m.run(x, rows, form);
  EXPECT_TRUE(close(y, m.ref(x, rows), 1e-4, 1e-4));
  EXPECT_TRUE(close(y, to_double(m.run(x, rows, loop)), 1e-5, 1e-6)) << "against the loop form";
  if (rows != 34) return;
  sprinkle_specials(x);
  EXPECT_TRUE(close(m.run(x, rows, form), to_double(m.run(x, rows, loop)), 1e-5, 1e-6)) << "NaN / Inf";
  x = uniform(rng, x.size());
  EXPECT_TRUE(close(m.run(x, rows, form, DType::f16), to_double(m.run(x, rows, loop, DType::f16)), 1e-5, 1e-6))
      << "f16 parameters";
}

}  // namespace

// x read in place (fused_mlp's u_x_off, u_x_f, u_x_rs, u_x_gs) where its rows are groups of evenly
// strided rows, copied first otherwise, against float64 from the host's values at the view's
// strides: (a) rows of a wider storage at an offset (one level), (b) overlapping rows [B, F, K]
// with a row stride under K and a group stride other than F times it (two levels: an STFT's frames
// of B signals), (c) a stride-0 expanded batch, (d) a permuted [A, B, C, K] view (three levels:
// copied); rows not a multiple of the workgroup's (13, 6 x 7, ...), loop and prefetch forms.
// Sabotage: the group stride dropped in x_row (CAUGHT by (b); also by SignalOps.LogMelFused*).
TEST(FusedMlp, StridedRowsReadInPlace) {
  GLT_RNG(rng);
  const Packed m(rng, {9, 13, 5});
  const std::int64_t K = 9;
  const std::vector<float> store = uniform(rng, 4000);
  const Tensor st = Tensor::from_host(device(), store, {4000});
  const Tensor p = Tensor::from_host(device(), m.params, {m.mlp.numel()});
  struct Case {
    const char* what;
    Shape shape, strides;
    std::int64_t offset;
  };
  for (const Case& c :
       {Case{"offset rows", {13, K}, {K, 1}, 2 * K + 3}, Case{"frames", {6, 7, K}, {500, 4, 1}, 11},
        Case{"expanded", {3, 5, K}, {0, K, 1}, 7}, Case{"permuted", {2, 3, 4, K}, {4 * K, 8 * K, K, 1}, 1},
        Case{"one row", {1, 1, K}, {0, 0, 1}, 100}}) {
    SCOPED_TRACE(c.what);
    const Tensor x = detail::make_view(st, c.shape, c.strides, c.offset);
    std::int64_t rows = 1;
    for (std::size_t d = 0; d + 1 < c.shape.size(); ++d) rows *= c.shape[d];
    std::vector<float> xs;  // x's rows from the host's values
    for (std::int64_t r = 0; r < rows; ++r) {
      std::int64_t at = c.offset, rem = r;
      for (std::int64_t d = static_cast<std::int64_t>(c.shape.size()) - 2; d >= 0; --d) {
        at += rem % c.shape[d] * c.strides[d];
        rem /= c.shape[d];
      }
      for (std::int64_t k = 0; k < K; ++k) xs.push_back(store[static_cast<std::size_t>(at + k)]);
    }
    for (int pf : {0, 1}) {
      const auto y = detail::fused_mlp("FusedMlp", x, p, m.mlp, {4, 2, pf}).to_vector();
      EXPECT_TRUE(close(y, m.ref(xs, rows), 1e-4, 1e-4)) << "prefetch " << pf;
    }
  }
}

// The prefetch form (fused_mlp.comp's PF: each invocation's weights of a layer in registers, the
// next layer's loaded during this one's sums) against float64 and against the loop form (PF 0),
// on every device (GLTENSOR_FUSED_MLP's choice 1 makes the plan take it on software renderers):
// odd widths from 1 to 96, 4 to 64 rows per workgroup, 1 to 8 slices of K (slices of unequal
// length, 5 of 96), every fused activation, alpha and beta, rows 1, odd, past one workgroup and
// the three-Gemm model's 34; NaN and infinities; f16 parameters. Sabotage tried (each fails
// here): the slices' sums from slice 1, layer l's weights fetched again for layer l + 1, fetch's
// slice index without the row quads (k0 = t / N * KS), the last sum item's bias dropped, the
// slices' partial sums stored without their row quad, x's last row of a block staged as 0.
TEST(FusedMlp, PrefetchFormMatchesFloat64AndLoopForm) {
  GLT_RNG(rng);
  struct Case {
    std::vector<std::int64_t> widths;
    std::int64_t bm, split, pf;
  };
  const std::vector<Case> cases = {{{96, 96, 96, 96}, 4, 8, 12}, {{13, 33, 7}, 8, 3, 11}, {{7, 1, 65, 5}, 4, 4, 17},
                                   {{24, 20, 9}, 16, 2, 12},     {{3, 4, 3}, 64, 1, 4},   {{96, 40, 96, 2}, 4, 5, 20},
                                   {{96, 96, 5}, 4, 1, 96}};
  const detail::FusedMlpDevice dev = detail::fused_mlp_device(device());
  for (const Case& c : cases) {
    const Packed m(rng, c.widths);
    for (std::int64_t rows : {1, 5, 34, 67}) {
      SCOPED_TRACE("widths " + std::to_string(c.widths[0]) + ".." + std::to_string(c.widths.back()) + ", " +
                   std::to_string(c.bm) + "x" + std::to_string(c.split) + ", rows " + std::to_string(rows));
      const detail::FusedMlpChoice pf{c.bm, c.split, 1}, loop{c.bm, c.split, 0};
      const auto plan = detail::plan_fused_mlp(m.mlp, dev, pf, rows);
      ASSERT_TRUE(plan.ok) << plan.why;
      EXPECT_EQ(plan.pf, c.pf);
      EXPECT_EQ(detail::plan_fused_mlp(m.mlp, dev, loop, rows).pf, 0);
      expect_as_loop_form(rng, m, uniform(rng, static_cast<std::size_t>(rows * c.widths[0])), rows, pf, loop);
    }
  }
}

// The prefetch form's slices that start past a layer's K read nothing (7fb724f): 4 slices of the
// last layer's K 1, slices 2 and 3 start at k 2 and 3 (their trip K - k0 underflowed). The
// activations' buffer holds x's columns past K there (the last layer reads the buffer x was staged
// in, of which the middle layer wrote column 0 alone), with +inf at column 2 of every row: a slice
// that read it multiplied it by its zeroed weight, NaN. The first layer's Clip makes the rows
// finite again, so the float64 reference is finite. Before this test only the H100's uninitialized
// shared memory showed the bug (llvmpipe's stale values were finite: test_fused_mlp passed with
// it). Sabotage: 7fb724f's trip `i < min(K, k0 + KS) - k0` restored: caught here (review18).
TEST(FusedMlp, PrefetchSlicesPastKReadNothing) {
  GLT_RNG(rng);
  const detail::FusedMlpDevice dev = detail::fused_mlp_device(device());
  Packed m(rng, {8, 4, 1, 3});
  m.mlp.layers[0].act = Epilogue::clip(-0.5, 0.75);
  m.acts[0] = "Clip";
  for (std::size_t l : {1u, 2u}) m.mlp.layers[l].act = Activation::none, m.acts[l] = "";
  const detail::FusedMlpChoice pf{4, 4, 1};
  for (std::int64_t rows : {1, 5, 34}) {
    SCOPED_TRACE("rows " + std::to_string(rows));
    const auto plan = detail::plan_fused_mlp(m.mlp, dev, pf, rows);
    ASSERT_TRUE(plan.ok) << plan.why;
    EXPECT_EQ(plan.split, 4);
    EXPECT_EQ(plan.pf, 2);
    auto x = uniform(rng, static_cast<std::size_t>(rows * 8));
    for (std::int64_t r = 0; r < rows; ++r) x[static_cast<std::size_t>(r * 8 + 2)] = INFINITY;
    const auto want = m.ref(x, rows);
    for (double v : want) ASSERT_TRUE(std::isfinite(v)) << "the reference is finite";
    EXPECT_TRUE(close(m.run(x, rows, pf), want, 1e-4, 1e-4));
  }
}

// A fused chain that starts with a Gemm refuses a 3-D input as the Gemm does (ModelError).
TEST(FusedMlp, GemmInputMustBe2D) {
  GLT_RNG(rng);
  const Chain c(rng, {{6, 5, true, false, true, "Relu"}, {5, 4, true, true, true, ""}});
  ScopedSettings s;
  s->fused_mlp = 1;
  Model m = Model::load(device(), c.path, ModelOptions{});
  ASSERT_NE(m.plan_summary().find(fused_text(2, 1)), std::string::npos) << m.plan_summary();
  const auto x = uniform(rng, 12);
  EXPECT_THROW(m.run({{"x", Tensor::from_host(device(), x, {1, 2, 6})}}), ModelError);
  EXPECT_NO_THROW(m.run({{"x", Tensor::from_host(device(), x, {2, 6})}}));
}

// The plan without a GPU: layer counts, widths against shared memory, rows per workgroup, the
// loop count.
TEST(FusedMlpPlan, LimitsAndLoopCount) {
  detail::FusedMlpDevice d;  // 32 KiB, no loop limit, a GPU: at load 16 rows per workgroup
  const detail::FusedMlpChoice any;
  EXPECT_EQ(detail::fused_mlp_max_width(d, any), 32768 / (2 * 16 * 4));
  EXPECT_EQ(detail::fused_mlp_max_width(d, {4, 0}), 32768 / (2 * 4 * 4));
  EXPECT_EQ(detail::fused_mlp_max_width(d, {16, 4}), 32768 / (6 * 16 * 4) / 4 * 4);
  EXPECT_FALSE(detail::plan_fused_mlp(mlp_of({8, 8}), d, any).ok);  // one layer
  EXPECT_TRUE(detail::plan_fused_mlp(mlp_of({8, 8, 8}), d, any).ok);
  EXPECT_TRUE(detail::plan_fused_mlp(mlp_of({8, 8, 8, 8, 8, 8, 8, 8, 8}), d, any).ok);      // 8 layers
  EXPECT_FALSE(detail::plan_fused_mlp(mlp_of({8, 8, 8, 8, 8, 8, 8, 8, 8, 8}), d, any).ok);  // 9
  EXPECT_TRUE(detail::plan_fused_mlp(mlp_of({8, 256, 8}), d, any).ok);
  const auto wide = detail::plan_fused_mlp(mlp_of({8, 257, 8}), d, any);
  EXPECT_FALSE(wide.ok);
  EXPECT_NE(wide.why.find("shared memory"), std::string::npos) << wide.why;
  EXPECT_TRUE(detail::plan_fused_mlp(mlp_of({8, 257, 8}), d, {4, 0}).ok);
  EXPECT_FALSE(detail::plan_fused_mlp(mlp_of({8, 8, 8}), d, {6, 0}).ok);  // rows not a multiple of 4
  // rows for M: about 64 workgroups, 4 at least, 16 at most
  EXPECT_EQ(detail::plan_fused_mlp(mlp_of({96, 96, 96}), d, any, 34).rows, 4);
  EXPECT_EQ(detail::plan_fused_mlp(mlp_of({96, 96, 96}), d, any, 300).rows, 8);
  EXPECT_EQ(detail::plan_fused_mlp(mlp_of({96, 96, 96}), d, any, 100000).rows, 16);
  EXPECT_EQ(detail::plan_fused_mlp(mlp_of({96, 96, 96}), d, {8, 0}, 34).rows, 8);
  // 96 -> 96 -> 96, 16 rows, 384 invocations (4 x 96 items): load ceil(1536 / 384) + 1, layers
  // 2 + 1, each 1 * 97 + 1
  const auto p = detail::plan_fused_mlp(mlp_of({96, 96, 96}), d, any);
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(p.rows, 16);
  EXPECT_EQ(p.local, 384);
  EXPECT_EQ(p.loop_iterations, 5u + 3u + 2u * 98u);
  // 8 rows, split 4: 768 invocations; load 1 + 1, each layer 1 * 25 + 1 and the sums 1 * 5 + 1
  const auto s4 = detail::plan_fused_mlp(mlp_of({96, 96, 96}), d, {8, 4});
  ASSERT_TRUE(s4.ok) << s4.why;
  EXPECT_EQ(s4.local, 768);
  EXPECT_EQ(s4.loop_iterations, 2u + 3u + 2u * (26u + 6u));
  // at run on GPUs, K in slices: 4 of 24 k for 34 rows in the prefetch form (4 rows per
  // workgroup: 384 invocations; the loop form: 8 of 12 k, 768 invocations), 2 for 16 rows per
  // workgroup (1024 invocations at most), none under 16 k, none on software
  const auto m34 = detail::plan_fused_mlp(mlp_of({96, 96, 96}), d, any, 34);
  EXPECT_EQ(m34.rows, 4);
  EXPECT_EQ(m34.split, 4);
  EXPECT_EQ(m34.local, 384);
  const auto loop34 = detail::plan_fused_mlp(mlp_of({96, 96, 96}), d, {0, 0, 0}, 34);
  EXPECT_EQ(loop34.split, 8);
  EXPECT_EQ(loop34.local, 768);
  EXPECT_EQ(detail::plan_fused_mlp(mlp_of({96, 96, 96}), d, any, 100000).split, 2);
  EXPECT_EQ(detail::plan_fused_mlp(mlp_of({96, 96, 96}), d, {0, 1}, 34).split, 1);
  EXPECT_EQ(detail::plan_fused_mlp(mlp_of({12, 12, 12}), d, any, 34).split, 1);
  // the prefetch form at run on GPUs where every layer's items fit and kFusedMlpMaxPf (96) k per slice at most
  EXPECT_EQ(m34.pf, 24);
  EXPECT_EQ(p.pf, 0);  // at load
  EXPECT_EQ(detail::plan_fused_mlp(mlp_of({96, 96, 96}), d, {0, 0, 0}, 34).pf, 0);
  // 16 rows, 2 slices: 768 invocations of 48 k, past the registers; 4 rows, one slice: 96 k, not 97
  EXPECT_EQ(detail::plan_fused_mlp(mlp_of({96, 96, 96}), d, any, 100000).pf, 0);
  EXPECT_EQ(detail::plan_fused_mlp(mlp_of({96, 96, 96}), d, {4, 1}, 34).pf, 96);
  EXPECT_EQ(detail::plan_fused_mlp(mlp_of({96, 97, 96}), d, {4, 1}, 34).pf, 0);
  EXPECT_EQ(detail::plan_fused_mlp(mlp_of({96, 96, 96}), d, {0, 4}, 34).pf, 24);
  // capped by the device's workgroup size; 64 on software renderers
  d.max_local = 256;
  EXPECT_EQ(detail::plan_fused_mlp(mlp_of({96, 96, 96}), d, {8, 4}).local, 256);
  d.software = true;
  EXPECT_EQ(detail::plan_fused_mlp(mlp_of({96, 96, 96}), d, {8, 4}).local, 64);
  EXPECT_EQ(detail::plan_fused_mlp(mlp_of({96, 96, 96}), d, any, 34).split, 1);
  EXPECT_EQ(detail::plan_fused_mlp(mlp_of({96, 96, 96}), d, any, 34).pf, 0);
  // asked for: the invocations one per item (40 x 4: 192), not past the device's (96 x 8 > 256)
  const auto forced = detail::plan_fused_mlp(mlp_of({40, 40, 40}), d, {4, 4, 1}, 34);
  EXPECT_EQ(forced.pf, 10);
  EXPECT_EQ(forced.local, 192);
  EXPECT_EQ(detail::plan_fused_mlp(mlp_of({96, 96, 96}), d, {4, 8, 1}, 34).pf, 0);
  d.software = false;
  d.loop_budget = p.loop_iterations - 1;
  EXPECT_NE(detail::plan_fused_mlp(mlp_of({96, 96, 96}), d, any).why.find("loop iterations"), std::string::npos);
}
