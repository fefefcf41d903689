// The model planner's fuse_elementwise (src/model/planner.cpp) and its generated kernels
// (glsl/ops/fused_elementwise.comp): random graphs of elementwise ONNX nodes (broadcast inputs,
// per-channel and scalar constants, shared inputs, intermediates that are graph outputs or read
// twice) against a float64 reference of the graph, and bit for bit against the same model planned
// without the pass (Settings::fuse_elementwise off: every node its own dispatch); NaN/Inf
// inputs, 0-size and rank-0 inputs, grids split over several dispatches, float16 graphs, the
// input limit per kernel, and the plan's counts and dispatches.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "model/planner.hpp"
#include "onnx_builder.hpp"
#include "ops/fused_elementwise.hpp"
#include "test_util.hpp"

using namespace gltensor;
using namespace glt_test;
using B = OnnxBuilder;

namespace {

const int F32 = onnx::TensorProto::FLOAT, F16 = onnx::TensorProto::FLOAT16;
constexpr double inf = std::numeric_limits<double>::infinity();

// One value of a test graph: its shape and float64 data (row-major).
struct Val {
  Shape shape;
  std::vector<double> v;
};

Shape bshape(const Shape& a, const Shape& b) {
  Shape r(std::max(a.size(), b.size()), 1);
  for (std::size_t i = 0; i < r.size(); ++i) {
    const std::int64_t x = i + a.size() >= r.size() ? a[i + a.size() - r.size()] : 1;
    const std::int64_t y = i + b.size() >= r.size() ? b[i + b.size() - r.size()] : 1;
    r[i] = x == 1 ? y : x;
  }
  return r;
}

std::int64_t numel(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

// prefix + n (not "x" + std::to_string(n): GCC 12's false -Wrestrict at -O2).
std::string numbered(const char* prefix, int n) {
  std::string s = prefix;
  s += std::to_string(n);
  return s;
}

double rnd16(double x) { return f16_to_f32(f32_to_f16(static_cast<float>(x))); }

// A graph of elementwise nodes built with its float64 reference: every node's value is computed
// as the node is added (ONNX semantics; with f16, every node's output rounded to f16 as the
// graph's float16 values are).
class RefGraph {
 public:
  explicit RefGraph(int elem, int opset = 14) : b(opset), opset(opset), elem_(elem) {}
  B b;
  const int opset;

  std::string input(const std::string& name, const Shape& s, std::vector<float> data) {
    b.input(name, s, elem_);
    vals_[name] = {s, round(std::vector<double>(data.begin(), data.end()))};
    feeds_[name] = std::move(data);
    return name;
  }
  std::string constant(const std::string& name, const Shape& s, const std::vector<float>& data) {
    b.init_typed(name, s, data, elem_);
    vals_[name] = {s, round(std::vector<double>(data.begin(), data.end()))};
    return name;
  }
  /// op(x, extra...) computing f(x) elementwise (extra: Clip's bounds).
  std::string unary(const std::string& op, const std::string& x, const std::function<double(double)>& f,
                    std::vector<std::string> extra = {}) {
    const std::string y = fresh();
    extra.insert(extra.begin(), x);
    last_ = &b.node(op, extra, {y});
    const Val& a = vals_.at(x);
    Val r{a.shape, {}};
    for (double e : a.v) r.v.push_back(f(e));
    r.v = round(r.v);
    vals_[y] = r;
    return y;
  }
  std::string binary(const std::string& op, const std::string& x, const std::string& z) {
    const std::string y = fresh();
    last_ = &b.node(op, {x, z}, {y});
    const Val &a = vals_.at(x), &c = vals_.at(z);
    Val r{bshape(a.shape, c.shape), {}};
    for (std::int64_t i = 0; i < numel(r.shape); ++i) {
      const double p = a.v[bcast_index(r.shape, a.shape, i)], q = c.v[bcast_index(r.shape, c.shape, i)];
      r.v.push_back(op == "Add" ? p + q : op == "Sub" ? p - q : op == "Mul" ? p * q : p / q);
    }
    r.v = round(r.v);
    vals_[y] = r;
    return y;
  }
  onnx::NodeProto& last() { return *last_; }
  void output(const std::string& name) {
    b.output(name, vals_.at(name).shape, elem_);
    outputs_.push_back(name);
  }
  const Val& val(const std::string& name) const { return vals_.at(name); }
  const std::vector<std::string>& outputs() const { return outputs_; }
  std::map<std::string, Tensor> feeds() const {
    std::map<std::string, Tensor> m;
    for (const auto& [name, data] : feeds_)
      m[name] = Tensor::from_host(device(), data, vals_.at(name).shape, elem_ == F16 ? DType::f16 : DType::f32);
    return m;
  }

 private:
  std::vector<double> round(std::vector<double> v) const {
    for (auto& x : v) x = elem_ == F16 ? rnd16(x) : static_cast<double>(static_cast<float>(x));
    return v;
  }
  std::string fresh() { return numbered("t", n_++); }
  int elem_;
  int n_ = 0;
  std::map<std::string, Val> vals_;
  std::map<std::string, std::vector<float>> feeds_;
  std::vector<std::string> outputs_;
  onnx::NodeProto* last_ = nullptr;
};

double ref_sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double clipn(double x, double lo, double hi) { return std::isnan(x) ? x : std::min(std::max(x, lo), hi); }
double ref_hardswish(double x) { return x * clipn(x + 3, 0, 6) / 6; }

// Outputs of a model planned with and without fuse_elementwise, and its plan summary.
struct Runs {
  std::map<std::string, std::vector<float>> fused, unfused;
  std::string plan;
  std::uint64_t fused_dispatches = 0, unfused_dispatches = 0;
};

Runs run_both(const RefGraph& g, const std::string& name, const ModelOptions& options = {}) {
  Runs r;
  const std::string path = g.b.save(name);
  for (bool fuse : {true, false}) {
    Model m = [&] {  // with the pass or without
      ScopedSettings pass;
      pass->fuse_elementwise = fuse;
      return Model::load(device(), path, options);
    }();
    const auto feeds = g.feeds();
    m.run(feeds);  // kernels compiled
    device().synchronize();
    const std::uint64_t d0 = device().dispatch_count();
    auto out = m.run(feeds);
    device().synchronize();
    (fuse ? r.fused_dispatches : r.unfused_dispatches) = device().dispatch_count() - d0;
    for (const auto& [k, t] : out) (fuse ? r.fused : r.unfused)[k] = t.to(DType::f32).to_vector();
    if (fuse) r.plan = m.plan_summary();
  }
  return r;
}

// Equal up to an FMA contraction: the unfused kernels' a * b + c may be contracted into one FMA
// by the driver (NVIDIA does; the fused kernel's steps are `precise`): one rounding less, on
// values of order 1 here. NaN matches NaN, infinities match exactly.
::testing::AssertionResult same_up_to_fma(const std::vector<float>& a, const std::vector<float>& b) {
  return close(a, to_double(b), 1e-6, 1e-6);
}

// Checks every output against the reference and the unfused model's (same_up_to_fma).
void check(const RefGraph& g, const Runs& r, double tol) {
  for (const std::string& o : g.outputs()) {
    SCOPED_TRACE("output " + o + "; plan: " + r.plan);
    EXPECT_TRUE(close(r.fused.at(o), g.val(o).v, tol, tol));
    EXPECT_TRUE(same_up_to_fma(r.fused.at(o), r.unfused.at(o)));
  }
}

// Runs g both ways: the plan says `fused` ("N elementwise nodes fused into K kernels"), a run
// takes `dispatches`, the outputs pass check().
Runs expect_fused(const RefGraph& g, const std::string& name, const std::string& fused, std::uint64_t dispatches,
                  double tol) {
  Runs r = run_both(g, name);
  EXPECT_NE(r.plan.find(fused), std::string::npos) << r.plan;
  EXPECT_EQ(r.fused_dispatches, dispatches) << r.plan;
  check(g, r, tol);
  return r;
}

}  // namespace

// y = Relu(x * Sigmoid(x) + r) * s - b with a per-channel scale s, a scalar b, and x * Sigmoid(x)
// also a graph output: the SiLU part is one kernel (its output is read twice), the rest another;
// the same with float16 weights.
TEST(ModelFusion, ChainsFuseAroundGraphOutputs) {
  GLT_RNG(rng);
  const Shape S{2, 3, 5, 7};
  RefGraph g(F32);
  const auto x = g.input("x", S, uniform(rng, numel(S), -4, 4));
  const auto res = g.input("r", S, uniform(rng, numel(S)));
  const auto s = g.constant("s", {3, 1, 1}, uniform(rng, 3, 0.5, 2));
  const auto b = g.constant("b", {}, {0.1f});  // not a float16 value
  const auto sg = g.unary("Sigmoid", x, ref_sigmoid);
  const auto silu = g.binary("Mul", x, sg);
  g.output(silu);
  const auto a = g.binary("Add", silu, res);
  const auto rl = g.unary("Relu", a, [](double v) { return v > 0 || std::isnan(v) ? v : 0; });
  const auto m = g.binary("Mul", rl, s);
  const auto y = g.binary("Sub", m, b);
  g.output(y);
  const Runs r = expect_fused(g, "fusion_chain", "6 elementwise nodes fused into 2 kernels", 2, 1e-6);
  EXPECT_EQ(r.plan.rfind("2 nodes to run", 0), 0u) << r.plan;
  EXPECT_EQ(r.unfused_dispatches, 6u);
  // With float16 weights, the literal 0.1 is what the unfused Sub reads: the f16 constant.
  ModelOptions o;
  o.f16_weights = true;
  const Runs h = run_both(g, "fusion_chain", o);
  EXPECT_TRUE(same_up_to_fma(h.fused.at(y), h.unfused.at(y)));
  EXPECT_FALSE(same_up_to_fma(h.fused.at(y), r.fused.at(y)));
}

// Random trees and DAGs of every fusable op over inputs and constants of broadcasting shapes,
// with NaN and infinities among the inputs; some intermediates are graph outputs or read twice.
TEST(ModelFusion, RandomGraphsMatchReferenceAndUnfusedBits) {
  GLT_RNG(rng);
  for (int trial = 0; trial < 12; ++trial) {
    SCOPED_TRACE(numbered("trial ", trial));
    const Shape S{2, 3, 1 + static_cast<std::int64_t>(rng() % 6), 1 + static_cast<std::int64_t>(rng() % 33)};
    RefGraph g(F32, trial % 3 == 0 ? 9 : 14);  // opset 9: Clip's bounds as attributes
    std::vector<std::string> pool;
    auto x0 = uniform(rng, numel(S), -3, 3);
    if (trial % 2) sprinkle_specials(x0);
    pool.push_back(g.input("x", S, x0));
    pool.push_back(g.input("y", {S[3]}, uniform(rng, S[3], -2, 2)));
    pool.push_back(g.input("z", {S[0], 1, S[2], 1}, uniform(rng, S[0] * S[2], -2, 2)));
    pool.push_back(g.constant("c", {3, 1, 1}, uniform(rng, 3, 0.5, 2)));
    pool.push_back(g.constant("k", {}, uniform(rng, 1, 0.5, 2)));
    pool.push_back(g.constant("k1", {1}, uniform(rng, 1, -2, 2)));
    std::string cur = pool[0];
    const int nodes = 4 + static_cast<int>(rng() % 9);
    for (int i = 0; i < nodes; ++i) {
      const int pick = static_cast<int>(rng() % 15);
      const std::string other = pool[rng() % pool.size()];
      switch (pick) {
        case 0:
          cur = g.binary("Add", cur, other);
          break;
        case 1:
          cur = g.binary("Sub", other, cur);
          break;
        case 2:
          cur = g.binary("Mul", cur, other);
          break;
        case 3:  // divisors away from 0: the scales and constants
          cur = g.binary("Div", cur, pool[3 + rng() % 2]);
          break;
        case 4:
          cur = g.unary("Relu", cur, [](double v) { return v > 0 || std::isnan(v) ? v : 0; });
          break;
        case 5:
          cur = g.unary("Sigmoid", cur, ref_sigmoid);
          break;
        case 6:
          cur = g.unary("Tanh", cur, [](double v) { return std::tanh(v); });
          break;
        case 7:
          cur = g.unary("HardSwish", cur, ref_hardswish);
          break;
        case 8: {
          cur = g.unary("LeakyRelu", cur, [](double v) { return v > 0 ? v : v * double(0.1f); });
          B::attr_f(g.last(), "alpha", 0.1f);
          break;
        }
        case 9: {
          cur = g.unary("HardSigmoid", cur, [](double v) {
            const double m = double(float(v * double(0.3f))), s = double(float(m + double(0.4f)));
            return clipn(s, 0, 1);
          });
          B::attr_f(g.last(), "alpha", 0.3f);
          B::attr_f(g.last(), "beta", 0.4f);
          break;
        }
        case 10: {
          if (g.opset < 11) {
            cur = g.unary("Clip", cur, [](double v) { return clipn(v, -1.5, inf); });
            B::attr_f(g.last(), "min", -1.5f);
          } else if (i % 2) {
            const std::string lo = g.constant(numbered("lo", i), {}, {-0.5f});
            const std::string hi = g.constant(numbered("hi", i), {}, {2.0f});
            cur = g.unary("Clip", cur, [](double v) { return clipn(v, -0.5, 2); }, {lo, hi});
          } else {  // max only
            const std::string hi = g.constant(numbered("hi", i), {}, {1.0f});
            cur = g.unary("Clip", cur, [](double v) { return clipn(v, -inf, 1); }, {"", hi});
          }
          break;
        }
        case 11:
          cur = g.unary("Neg", cur, [](double v) { return -v; });
          break;
        case 12:
          cur = g.unary("Abs", cur, [](double v) { return std::fabs(v); });
          break;
        case 13:
          cur = g.unary("Exp", g.unary("Tanh", cur, [](double v) { return std::tanh(v); }),
                        [](double v) { return std::exp(v); });
          break;
        default:
          cur = g.unary("Erf", cur, [](double v) { return std::erf(v); });
          break;
      }
      if (rng() % 5 == 0) pool.push_back(cur);  // read again later: a second consumer
      if (rng() % 7 == 0) g.output(cur);
    }
    g.output(cur);
    const Runs r = run_both(g, numbered("fusion_random_", trial));
    EXPECT_LE(r.fused_dispatches, r.unfused_dispatches) << r.plan;
    check(g, r, 2e-5);
  }
}

// Conv -> HardSwish -> Mul/Add by constants (PP-OCRv4's blocks) and Conv -> Relu -> Add of a
// residual: the convolutions give their epilogues back to the chains after them, the results keep
// their bits.
using Outputs = std::map<std::string, std::vector<float>>;

// The model at `path` loaded with fusion (out[1]) and without (out[0]: Settings::fuse_elementwise off),
// run on `inputs`; returns the fused plan's summary.
std::string run_fused_and_unfused(const std::string& path, const std::map<std::string, Tensor>& inputs,
                                  Outputs out[2]) {
  std::string plan;
  for (bool fuse : {true, false}) {
    Model model = [&] {  // with the pass or without
      ScopedSettings pass;
      pass->fuse_elementwise = fuse;
      return Model::load(device(), path);
    }();
    if (fuse) plan = model.plan_summary();
    for (const auto& [k, t] : model.run(inputs)) out[fuse][k] = t.to_vector();
  }
  return plan;
}

TEST(ModelFusion, ConvEpiloguesJoinTheChainAfterThem) {
  GLT_RNG(rng);
  const std::int64_t C = 3, O = 4, H = 6, W = 9;
  const auto xv = uniform(rng, C * H * W, -2, 2), wv = uniform(rng, O * C * 9), bv = uniform(rng, O);
  const auto rv = uniform(rng, O * H * W);
  B m(14);
  m.input("x", {1, C, H, W}).input("r", {1, O, H, W}).output("y1", {1, O, H, W}).output("y2", {1, O, H, W});
  m.init("w", {O, C, 3, 3}, wv).init("b", {O}, bv).init("s", {}, {0.75f}).init("t", {}, {-0.5f});
  B::attr_ints(m.node("Conv", {"x", "w", "b"}, {"c1"}), "pads", {1, 1, 1, 1});
  m.node("HardSwish", {"c1"}, {"h"});
  m.node("Mul", {"h", "s"}, {"hm"});
  m.node("Add", {"hm", "t"}, {"y1"});
  B::attr_ints(m.node("Conv", {"x", "w", "b"}, {"c2"}), "pads", {1, 1, 1, 1});
  m.node("Relu", {"c2"}, {"rl"});
  m.node("Sub", {"rl", "r"}, {"y2"});  // (an Add would join the Conv as its residual: fuse_residual)
  Outputs out[2];
  const std::string plan = run_fused_and_unfused(
      m.save("fusion_conv_epilogues"),
      {{"x", Tensor::from_host(device(), xv, {1, C, H, W})}, {"r", Tensor::from_host(device(), rv, {1, O, H, W})}},
      out);
  // y1: HardSwish and the scalar Mul + Add in the first Conv's epilogue (fuse_conv_affine); y2: the
  // Relu given back to the chain with the Sub.
  EXPECT_EQ(plan.rfind("3 nodes to run", 0), 0u) << plan;
  EXPECT_NE(plan.find("1 fused epilogues"), std::string::npos) << plan;
  EXPECT_NE(plan.find("2 scalar Mul/Add into conv epilogues"), std::string::npos) << plan;
  EXPECT_NE(plan.find("2 elementwise nodes fused into 1 kernels"), std::string::npos) << plan;
  std::vector<double> y1, y2;
  for (std::int64_t o = 0; o < O; ++o)
    for (std::int64_t i = 0; i < H; ++i)
      for (std::int64_t j = 0; j < W; ++j) {
        double acc = bv[o];
        for (std::int64_t c = 0; c < C; ++c)
          for (std::int64_t a = 0; a < 3; ++a)
            for (std::int64_t b = 0; b < 3; ++b) {
              const std::int64_t ii = i + a - 1, jj = j + b - 1;
              if (ii >= 0 && ii < H && jj >= 0 && jj < W)
                acc += double(xv[(c * H + ii) * W + jj]) * wv[((o * C + c) * 3 + a) * 3 + b];
            }
        y1.push_back(ref_hardswish(acc) * 0.75 - 0.5);
        y2.push_back(std::max(acc, 0.0) - rv[(o * H + i) * W + j]);
      }
  EXPECT_TRUE(close(out[1]["y1"], y1, 1e-5, 1e-5));
  EXPECT_TRUE(close(out[1]["y2"], y2, 1e-5, 1e-5));
  EXPECT_TRUE(same_up_to_fma(out[1]["y1"], out[0]["y1"]));
  EXPECT_TRUE(same_up_to_fma(out[1]["y2"], out[0]["y2"]));
}

TEST(ModelFusion, ConvAffineKeepsTheBroadcastRank) {
  // fuse_conv_affine takes one-element Mul / Add constants into the Conv's epilogue, but not one
  // of higher rank than the output: Mul(conv [1, O, H, W], c [1, 1, 1, 1, 1]) is [1, 1, O, H, W]
  // (ONNX broadcasting), which the epilogue would lose. A 2-D and a 1-D convolution (output ranks
  // 4 and 3), each then Mul by a rank-5 (rank-4) one-element constant and Add of a scalar; the
  // same shapes and values as the unfused model, against float64.
  GLT_RNG(rng);
  const std::int64_t C = 3, O = 4, H = 5, W = 6;
  const auto xv = uniform(rng, C * H * W), wv = uniform(rng, O * C), bv = uniform(rng, O);
  B m(13);
  m.input("x", {1, C, H, W}).input("x1", {1, C, W}).output_any("y").output_any("y1");
  m.init("w", {O, C, 1, 1}, wv).init("w1", {O, C, 1}, wv).init("b", {O}, bv);
  m.init("s5", {1, 1, 1, 1, 1}, {1.5f}).init("s4", {1, 1, 1, 1}, {-2.0f}).init("t", {}, {0.25f});
  m.node("Conv", {"x", "w", "b"}, {"c"});
  m.node("Mul", {"c", "s5"}, {"cm"});
  m.node("Add", {"cm", "t"}, {"y"});
  m.node("Conv", {"x1", "w1", "b"}, {"c1"});
  m.node("Mul", {"s4", "c1"}, {"cm1"});
  m.node("Add", {"cm1", "t"}, {"y1"});
  const std::string path = m.save("fusion_conv_affine_rank");
  const std::vector<float> x1v(xv.begin(), xv.begin() + C * W);
  const std::map<std::string, Tensor> in{{"x", Tensor::from_host(device(), xv, {1, C, H, W})},
                                         {"x1", Tensor::from_host(device(), x1v, {1, C, W})}};
  std::vector<double> y, y1;
  for (std::int64_t o = 0; o < O; ++o) {
    for (std::int64_t p = 0; p < H * W; ++p) {
      double v = bv[o];
      for (std::int64_t c = 0; c < C; ++c) v += double(xv[c * H * W + p]) * wv[o * C + c];
      y.push_back(v * 1.5 + 0.25);
    }
    for (std::int64_t p = 0; p < W; ++p) {
      double v = bv[o];
      for (std::int64_t c = 0; c < C; ++c) v += double(x1v[c * W + p]) * wv[o * C + c];
      y1.push_back(v * -2.0 + 0.25);
    }
  }
  for (bool fuse : {true, false}) {
    SCOPED_TRACE(fuse ? "fused" : "unfused");
    Model model = [&] {  // with the pass or without
      ScopedSettings pass;
      pass->fuse_elementwise = fuse;
      return Model::load(device(), path);
    }();
    const auto out = model.run(in);
    EXPECT_EQ(out.at("y").shape(), (Shape{1, 1, O, H, W})) << model.plan_summary();
    EXPECT_EQ(out.at("y1").shape(), (Shape{1, 1, O, W})) << model.plan_summary();
    EXPECT_TRUE(close(out.at("y").to_vector(), y, 1e-5, 1e-5));
    EXPECT_TRUE(close(out.at("y1").to_vector(), y1, 1e-5, 1e-5));
  }
}

TEST(ModelFusion, ConvTransposeFoldsBiasBatchNormAndEpilogue) {
  // DBNet's head: ConvTranspose (kernel = stride 2) -> Add of a per-channel constant ->
  // BatchNormalization -> Relu, and ConvTranspose -> Add of one value -> Sigmoid: the Add and the
  // BatchNormalization folded into the ConvTranspose's weight and bias (output channels along the
  // weight's dim 1), the activation its epilogue; one dispatch each in the lanes layout (GPUs'),
  // the ubo layout's (llvmpipe's) with a copy of the weight; both layouts forced on any device.
  // Against float64, and the unfused model's values.
  GLT_RNG(rng);
  const std::int64_t C = 3, O = 4, H = 5, W = 7;
  const auto xv = uniform(rng, C * H * W, -2, 2), wv = uniform(rng, C * O * 4), w2v = uniform(rng, C * 4);
  const auto bv = uniform(rng, O), sc = uniform(rng, O, 0.5, 1.5), sh = uniform(rng, O), mu = uniform(rng, O),
             var = uniform(rng, O, 0.5, 2);
  B m(11);
  m.input("x", {1, C, H, W}).output("y1", {1, O, 2 * H, 2 * W}).output("y2", {1, 1, 2 * H, 2 * W});
  m.init("w", {C, O, 2, 2}, wv).init("w2", {C, 1, 2, 2}, w2v).init("b", {1, O, 1, 1}, bv).init("c", {1}, {0.25f});
  m.init("sc", {O}, sc).init("sh", {O}, sh).init("mu", {O}, mu).init("var", {O}, var);
  B::attr_ints(m.node("ConvTranspose", {"x", "w"}, {"t1"}), "strides", {2, 2});
  m.node("Add", {"t1", "b"}, {"a1"});
  m.node("BatchNormalization", {"a1", "sc", "sh", "mu", "var"}, {"n1"});
  m.node("Relu", {"n1"}, {"y1"});
  B::attr_ints(m.node("ConvTranspose", {"x", "w2"}, {"t2"}), "strides", {2, 2});
  m.node("Add", {"t2", "c"}, {"a2"});
  m.node("Sigmoid", {"a2"}, {"y2"});
  const std::string path = m.save("fusion_conv_transpose");
  const Tensor x = Tensor::from_host(device(), xv, {1, C, H, W});
  std::vector<double> y1, y2;
  for (std::int64_t o = 0; o < O; ++o)
    for (std::int64_t i = 0; i < 2 * H; ++i)
      for (std::int64_t j = 0; j < 2 * W; ++j) {
        double t = bv[o], u = 0.25;
        for (std::int64_t c = 0; c < C; ++c) {
          const double xx = xv[(c * H + i / 2) * W + j / 2];
          t += xx * wv[((c * O + o) * 2 + i % 2) * 2 + j % 2];
          if (o == 0) u += xx * w2v[(c * 2 + i % 2) * 2 + j % 2];
        }
        const double n = (t - mu[o]) / std::sqrt(var[o] + 1e-5) * sc[o] + sh[o];
        y1.push_back(std::max(n, 0.0));
        if (o == 0) y2.push_back(1 / (1 + std::exp(-u)));
      }
  // Both layouts of the shuffled kernel on any device (GLTENSOR_CONV_DIRECT), each epilogue in it.
  for (const char* layout : {"ubo", "lanes"}) {
    SCOPED_TRACE(layout);
    ScopedSettings s;
    s->conv_direct = detail::parse_conv_direct(layout);
    Outputs out[2];
    const std::string plan = run_fused_and_unfused(path, {{"x", x}}, out);
    EXPECT_EQ(plan.rfind("2 nodes to run", 0), 0u) << plan;
    EXPECT_NE(plan.find("1 BatchNormalization and 2 Mul/Add folded into weights"), std::string::npos) << plan;
    EXPECT_NE(plan.find("2 fused epilogues"), std::string::npos) << plan;
    EXPECT_TRUE(close(out[1]["y1"], y1, 1e-5, 1e-5));
    EXPECT_TRUE(close(out[1]["y2"], y2, 1e-5, 1e-5));
    EXPECT_TRUE(close(out[0]["y1"], y1, 1e-5, 1e-5));
    EXPECT_TRUE(close(out[0]["y2"], y2, 1e-5, 1e-5));
    if (std::string(layout) == "lanes") {  // one dispatch per ConvTranspose, its bias, BN and activation in it
      Model model = Model::load(device(), path);
      model.run({{"x", x}});
      device().synchronize();
      const std::uint64_t d0 = device().dispatch_count();
      model.run({{"x", x}});
      EXPECT_EQ(device().dispatch_count() - d0, 2u);
    }
  }
}

// Float16 graphs: every fused step rounds to f16 as the unfused node's f16 output does (the
// unfused bits exactly), within f16's precision of the float64 reference.
TEST(ModelFusion, Float16GraphsRoundEachStep) {
  GLT_RNG(rng);
  const Shape S{3, 4, 9};
  RefGraph g(F16);
  const auto x = g.input("x", S, uniform(rng, numel(S), -3, 3));
  const auto w = g.input("w", {9}, uniform(rng, 9, -2, 2));
  const auto c = g.constant("c", {4, 1}, uniform(rng, 4, 0.5, 2));
  const auto k = g.constant("k", {}, {0.3f});
  auto t = g.binary("Mul", x, c);
  t = g.binary("Add", t, w);
  t = g.unary("HardSwish", t, ref_hardswish);
  t = g.binary("Div", t, k);
  t = g.unary("Sigmoid", t, ref_sigmoid);
  t = g.binary("Mul", t, x);
  g.output(t);
  expect_fused(g, "fusion_f16", "6 elementwise nodes fused into 1 kernels", 1, 2e-3);
}

// Edge shapes: 0-size inputs (nothing to run, the right shape), a rank-0 input with a [1]
// constant (the output is [1], as ONNX broadcasting makes it), a 1-element tensor, and an output
// whose grid is split over several dispatches (odd size, and one that takes the quad path).
TEST(ModelFusion, EdgeShapesAndSplitGrids) {
  GLT_RNG(rng);
  auto build = [&](const Shape& s, const std::string& name) {
    RefGraph g(F32);
    const auto x = g.input("x", s, uniform(rng, numel(s), -2, 2));
    const auto k = g.constant("k", {1}, {1.5f});
    auto t = g.binary("Mul", x, k);
    t = g.unary("Tanh", t, [](double v) { return std::tanh(v); });
    t = g.binary("Add", t, x);
    g.output(t);
    const Runs r = run_both(g, name);
    EXPECT_EQ(r.fused.at(t).size(), static_cast<std::size_t>(numel(g.val(t).shape)));
    check(g, r, 1e-6);
    return r;
  };
  build({0, 3}, "fusion_empty");
  build({}, "fusion_rank0");
  build({1}, "fusion_one");
  {
    RefGraph g(F32);
    const auto x = g.input("x", {}, {0.5f});
    const auto k = g.constant("k", {1}, {2.0f});
    const auto t = g.unary("Relu", g.binary("Mul", x, k), [](double v) { return v > 0 ? v : 0; });
    g.output(t);
    Model m = Model::load(device(), g.b.save("fusion_rank"));
    const Tensor y = m.run(g.feeds()).at(t);
    EXPECT_EQ(y.shape(), Shape({1}));
    EXPECT_EQ(y.to_vector(), std::vector<float>({1.0f}));
  }
  std::optional<ScopedDispatchLimit> dispatch_limit{std::in_place,
                                                    3};  // at most 3 x 3 workgroups of 256 invocations per dispatch
  RefGraph g(F32);
  const Shape S{3, 5, 7, 97};  // 10185 elements: 5 dispatches
  const auto x = g.input("x", S, uniform(rng, numel(S), -2, 2));
  const auto y = g.input("y", {97}, uniform(rng, 97, -2, 2));
  auto t = g.binary("Sub", x, y);
  t = g.unary("Relu", t, [](double v) { return v > 0 ? v : 0; });
  t = g.binary("Mul", t, y);
  g.output(t);
  RefGraph q(F32);
  const Shape Q{2, 4, 3, 2304};  // a multiple of 4: quads, 55296 / 4 invocations: 6 dispatches
  const auto qx = q.input("x", Q, uniform(rng, numel(Q), -2, 2));
  const auto qt = q.unary("Sigmoid", q.binary("Add", qx, qx), ref_sigmoid);
  q.output(qt);
  const Runs r = run_both(g, "fusion_split"), rq = run_both(q, "fusion_split_quads");
  dispatch_limit.reset();
  EXPECT_EQ(r.fused_dispatches, 5u);
  EXPECT_EQ(rq.fused_dispatches, 6u);
  check(g, r, 1e-6);
  check(q, rq, 1e-6);
}

// More distinct inputs than one kernel takes (6): the chain is cut into kernels of at most 6.
TEST(ModelFusion, KernelsTakeAtMostSixInputs) {
  GLT_RNG(rng);
  RefGraph g(F32);
  std::string t = g.input("x0", {5, 6}, uniform(rng, 30));
  for (int i = 1; i < 9; ++i) {
    t = g.binary(i % 2 ? "Add" : "Mul", t, g.input(numbered("x", i), {6}, uniform(rng, 6)));
    t = g.unary("Relu", t, [](double v) { return v > 0 ? v : 0; });
  }
  g.output(t);
  expect_fused(g, "fusion_inputs", "16 elementwise nodes fused into 2 kernels", 2, 1e-6);
}

// The generated GLSL: one statement per step, literals as exact bits, malformed expressions
// refused; inputs beyond the limit and integer inputs are errors naming the op.
TEST(ModelFusion, RenderedExpressionAndErrors) {
  using namespace gltensor::detail;
  FusedExpr e;
  e.inputs = 1;
  const int x = e.add({FusedOp::input, 0});
  const int k = e.add({FusedOp::constant, -1, -1, -1, -0.0f});
  e.add({FusedOp::clip, e.add({FusedOp::sub, x, k}), -1, -1, -1.0f, 6.0f, true});
  EXPECT_EQ(render_fused_glsl(e),
            "PRECISE float v0 = load1(off[1]); PRECISE float v1 = uintBitsToFloat(0x80000000u); "
            "PRECISE float v2 = v0 - v1; PRECISE float v3 = f_round_f16(act_clip(v2, uintBitsToFloat(0xbf800000u), "
            "uintBitsToFloat(0x40c00000u))); return CT0(v3);");
  FusedExpr bad = e;
  bad.steps[2].b = 3;
  EXPECT_THROW_MSG(render_fused_glsl(bad), ValueError, "is not a step before");
  bad = e;
  bad.steps[0].a = 1;
  EXPECT_THROW_MSG(render_fused_glsl(bad), ValueError, "input 1 out of range");
  const Tensor a = Tensor::from_host(device(), std::vector<float>{1, 2}, {2});
  const std::string glsl = render_fused_glsl(e);
  EXPECT_THROW_MSG(fused_elementwise("FusedElementwise", e, glsl, std::vector<Tensor>(7, a), DType::f32), ValueError,
                   "7 inputs for an expression of 1 (at most 6)");
  const Tensor i = Tensor::from_host(device(), std::vector<std::int32_t>{1, 2}, {2});
  EXPECT_THROW_MSG(fused_elementwise("FusedElementwise", e, glsl, {i}, DType::f32), DTypeError, "is not floating");
  const Tensor c = Tensor::from_host(device(), std::vector<float>{1, 2, 3}, {3});
  e.inputs = 2;
  EXPECT_THROW_MSG(fused_elementwise("FusedElementwise", e, glsl, {a, c}, DType::f32), ShapeError, "");
  EXPECT_EQ(fused_elementwise("FusedElementwise", e, glsl, {a, a}, DType::f16).to(DType::f32).to_vector(),
            std::vector<float>({1, 2}));
}
