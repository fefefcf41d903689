// gltensor::Model on small ONNX graphs built here: planning (constant folding, host shape
// subgraphs, BatchNormalization and Mul/Add folding, fused epilogues, HardSwish and Mul+Add
// chains, liveness) checked through plan_summary(), dispatch counts and peak_bytes(), outputs
// against float64 references, and the ModelError cases at load and at run.
#include <cmath>

#include "onnx_builder.hpp"
#include "test_util.hpp"

using namespace gltensor;
using namespace glt_test;
using B = OnnxBuilder;

namespace {

// Direct convolution [1, C, H, W] * [O, C, K, K], symmetric padding p, stride 1.
std::vector<double> ref_conv(const std::vector<float>& x, std::int64_t C, std::int64_t H, std::int64_t W,
                             const std::vector<float>& w, std::int64_t O, std::int64_t K, std::int64_t p,
                             const std::vector<float>& b) {
  const std::int64_t OH = H + 2 * p - K + 1, OW = W + 2 * p - K + 1;
  std::vector<double> y;
  for (std::int64_t o = 0; o < O; ++o)
    for (std::int64_t oh = 0; oh < OH; ++oh)
      for (std::int64_t ow = 0; ow < OW; ++ow) {
        double s = b[o];
        for (std::int64_t c = 0; c < C; ++c)
          for (std::int64_t kh = 0; kh < K; ++kh)
            for (std::int64_t kw = 0; kw < K; ++kw) {
              const std::int64_t h = oh - p + kh, ww = ow - p + kw;
              if (h >= 0 && h < H && ww >= 0 && ww < W)
                s += double(x[(c * H + h) * W + ww]) * w[((o * C + c) * K + kh) * K + kw];
            }
        y.push_back(s);
      }
  return y;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ModelError& e) {
    return e.what();
  }
  return "(no ModelError)";
}

}  // namespace

TEST(Model, ConvBatchNormReluFoldsIntoOneNode) {
  GLT_RNG(rng);
  const std::int64_t C = 3, O = 4, H = 8, W = 7;
  auto xv = uniform(rng, C * H * W), wv = uniform(rng, O * C * 9), bv = uniform(rng, O);
  auto sc = uniform(rng, O, 0.5, 2), bb = uniform(rng, O), mu = uniform(rng, O), var = uniform(rng, O, 0.1, 2);
  B m(13);
  m.input("x", {1, C, H, W}).output("y");
  m.init("w", {O, C, 3, 3}, wv).init("b", {O}, bv).init("s", {O}, sc).init("bb", {O}, bb).init("mu", {O}, mu);
  m.init("var", {O}, var);
  auto& conv = m.node("Conv", {"x", "w", "b"}, {"c"});
  B::attr_ints(conv, "pads", {1, 1, 1, 1});
  auto& bn = m.node("BatchNormalization", {"c", "s", "bb", "mu", "var"}, {"n"});
  B::attr_f(bn, "epsilon", 1e-3f);
  m.node("Relu", {"n"}, {"y"});
  Model model = Model::load(device(), m.save("conv_bn_relu"));
  EXPECT_EQ(model.plan_summary().rfind("1 nodes to run", 0), 0u) << model.plan_summary();
  EXPECT_NE(model.plan_summary().find("1 BatchNormalization"), std::string::npos) << model.plan_summary();
  EXPECT_NE(model.plan_summary().find("1 fused epilogues"), std::string::npos) << model.plan_summary();
  auto y = model.run({{"x", Tensor::from_host(device(), xv, {1, C, H, W})}}).at("y");
  auto ref = ref_conv(xv, C, H, W, wv, O, 3, 1, bv);
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const std::size_t o = i / (H * W);
    const double r = (ref[i] - mu[o]) / std::sqrt(double(var[o]) + 1e-3) * sc[o] + bb[o];
    ref[i] = r > 0 ? r : 0;
  }
  EXPECT_TRUE(close(y.to_vector(), ref, 1e-4, 1e-5));
}

TEST(Model, AffineHardSwishAndMulAddChains) {
  GLT_RNG(rng);
  const std::int64_t C = 2, O = 3, H = 5, W = 6;
  auto xv = uniform(rng, C * H * W, -3, 3), wv = uniform(rng, O * C), bv = uniform(rng, O);
  B m(11);
  m.input("x", {1, C, H, W}).output("y");
  m.init("w", {O, C, 1, 1}, wv).init("b", {O}, bv);
  m.init("s", {1}, {1.5f}).init("t", {1}, {-0.25f}).init("three", {}, {3}).init("zero", {}, {0}).init("six", {}, {6});
  m.init("s2", {1}, {0.75f}).init("t2", {1}, {0.5f});
  m.node("Conv", {"x", "w", "b"}, {"c"});
  m.node("Mul", {"c", "s"}, {"m"});
  m.node("Add", {"m", "t"}, {"a"});
  m.node("Add", {"a", "three"}, {"a3"});
  m.node("Clip", {"a3", "zero", "six"}, {"cl"});
  m.node("Mul", {"a", "cl"}, {"hm"});
  m.node("Div", {"hm", "six"}, {"hs"});
  m.node("Mul", {"hs", "s2"}, {"m2"});
  m.node("Add", {"m2", "t2"}, {"y"});
  Model model = Model::load(device(), m.save("affine_hardswish"));
  const std::string plan = model.plan_summary();
  EXPECT_EQ(plan.rfind("2 nodes to run", 0), 0u) << plan;
  EXPECT_NE(plan.find("2 Mul/Add folded"), std::string::npos) << plan;
  EXPECT_NE(plan.find("1 HardSwish"), std::string::npos) << plan;
  EXPECT_NE(plan.find("1 Mul+Add chains"), std::string::npos) << plan;
  auto y = model.run({{"x", Tensor::from_host(device(), xv, {1, C, H, W})}}).at("y");
  auto ref = ref_conv(xv, C, H, W, wv, O, 1, 0, bv);
  for (auto& r : ref) {
    const double a = r * 1.5 - 0.25;
    r = a * std::clamp(a + 3, 0.0, 6.0) / 6 * 0.75 + 0.5;
  }
  EXPECT_TRUE(close(y.to_vector(), ref, 1e-4, 1e-5));
}

TEST(Model, ShapeSubgraphsRunOnTheHost) {
  GLT_RNG(rng);
  // y = Relu(Reshape(x, [Shape(x)[0], 2, 3])) with a dynamic batch dim.
  B m(13);
  m.input("x", {-1, 6}).output("y");
  m.init_i64("zero", {1}, {0}).init_i64("rest", {2}, {2, 3});
  m.node("Shape", {"x"}, {"s"});
  auto& g = m.node("Gather", {"s", "zero"}, {"n"});
  B::attr_i(g, "axis", 0);
  auto& c = m.node("Concat", {"n", "rest"}, {"shape"});
  B::attr_i(c, "axis", 0);
  m.node("Reshape", {"x", "shape"}, {"r"});
  m.node("Relu", {"r"}, {"y"});
  Model model = Model::load(device(), m.save("shape_subgraph"));
  ASSERT_EQ(model.inputs().size(), 1u);
  EXPECT_EQ(model.inputs()[0].shape, (Shape{-1, 6}));
  EXPECT_EQ(model.inputs()[0].dim_names[0], "d0");
  for (std::int64_t n : {1, 2, 5}) {
    auto xv = uniform(rng, n * 6);
    Tensor x = Tensor::from_host(device(), xv, {n, 6});
    const auto d0 = device().dispatch_count();
    auto y = model.run({{"x", x}}).at("y");
    EXPECT_EQ(device().dispatch_count() - d0, 1u) << "only Relu reaches the GPU";
    EXPECT_EQ(y.shape(), (Shape{n, 2, 3}));
    std::vector<double> ref;
    for (float v : xv) ref.push_back(v > 0 ? v : 0);
    EXPECT_TRUE(close(y.to_vector(), ref, 0, 0));
  }
}

TEST(Model, ConstantSubgraphsFoldAtLoad) {
  GLT_RNG(rng);
  // y = x + (Constant(2) * c + Range(0, 4, 1) cast to float)
  B m(13);
  m.input("x", {4}).output("y");
  m.init("c", {4}, {1, 2, 3, 4});
  m.init_i64("r0", {}, {0}).init_i64("r1", {}, {4}).init_i64("r2", {}, {1});
  auto& k = m.node("Constant", {}, {"two"});
  auto* a = k.add_attribute();
  a->set_name("value_float");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(2.0f);
  m.node("Mul", {"two", "c"}, {"tc"});
  m.node("Range", {"r0", "r1", "r2"}, {"ri"});
  auto& cast = m.node("Cast", {"ri"}, {"rf"});
  B::attr_i(cast, "to", onnx::TensorProto::FLOAT);
  m.node("Add", {"tc", "rf"}, {"k"});
  m.node("Add", {"x", "k"}, {"y"});
  Model model = Model::load(device(), m.save("constant_fold"));
  EXPECT_EQ(model.plan_summary().rfind("1 nodes to run", 0), 0u) << model.plan_summary();
  EXPECT_NE(model.plan_summary().find("5 nodes folded"), std::string::npos) << model.plan_summary();
  auto xv = uniform(rng, 4);
  auto y = model.run({{"x", Tensor::from_host(device(), xv, {4})}}).at("y");
  std::vector<double> ref;
  for (int i = 0; i < 4; ++i) ref.push_back(xv[i] + 2.0 * (i + 1) + i);
  EXPECT_TRUE(close(y.to_vector(), ref, 1e-6, 0));
}

TEST(Model, LivenessKeepsPeakFarBelowTheSum) {
  // 16 Adds on [256, 256] float32 (256 KiB each): at most an input and an output alive at once.
  const std::int64_t n = 256;
  B m(13);
  m.input("x", {n, n}).output("v16");
  std::vector<float> one(static_cast<std::size_t>(n * n), 1.0f);
  m.init("one", {n, n}, one);
  std::string prev = "x";
  for (int i = 1; i <= 16; ++i) {
    const std::string out = std::string("v").append(std::to_string(i));
    m.node("Add", {prev, "one"}, {out});
    prev = out;
  }
  Model model = Model::load(device(), m.save("liveness"));
  auto y = model.run({{"x", zeros(device(), {n, n})}}).at("v16");
  EXPECT_EQ(y.to_vector()[123], 16.0f);
  const std::size_t t = static_cast<std::size_t>(n * n * 4);
  EXPECT_EQ(model.total_intermediate_bytes(), 16 * t);
  EXPECT_LE(model.peak_bytes(), 2 * t);
  EXPECT_GE(model.peak_bytes(), t);
  EXPECT_EQ(model.weight_bytes(), t);
}

TEST(Model, F16WeightsHalveWeightBytes) {
  GLT_RNG(rng);
  const std::int64_t C = 4, O = 8, H = 6, W = 6;
  auto xv = uniform(rng, C * H * W), wv = uniform(rng, O * C * 9), bv = uniform(rng, O);
  B m(13);
  m.input("x", {1, C, H, W}).output("y").init("w", {O, C, 3, 3}, wv).init("b", {O}, bv);
  auto& conv = m.node("Conv", {"x", "w", "b"}, {"y"});
  B::attr_s(conv, "auto_pad", "SAME_UPPER");
  const std::string path = m.save("f16_weights");
  ModelOptions o;
  o.f16_weights = true;
  Model f32 = Model::load(device(), path), f16 = Model::load(device(), path, o);
  EXPECT_EQ(f16.weight_bytes() * 2, f32.weight_bytes());
  Tensor x = Tensor::from_host(device(), xv, {1, C, H, W});
  auto ref = ref_conv(xv, C, H, W, wv, O, 3, 1, bv);  // SAME_UPPER with a 3x3 kernel: pad 1
  EXPECT_TRUE(close(f32.run({{"x", x}}).at("y").to_vector(), ref, 1e-4, 1e-5));
  EXPECT_TRUE(close(f16.run({{"x", x}}).at("y").to_vector(), ref, 1e-2, 1e-2));
}

TEST(Model, UnsupportedThingsAreModelErrorsAtLoad) {
  {
    B m(13);
    m.input("x", {2}).output("y");
    m.node("FancyOp", {"x"}, {"y"}, "my_node");
    const std::string path = m.save("bad_op");
    const std::string e = error_of([&] { Model::load(device(), path); });
    EXPECT_NE(e.find(path), std::string::npos) << e;
    EXPECT_NE(e.find("node 0 'my_node' (FancyOp)"), std::string::npos) << e;
    EXPECT_NE(e.find("op FancyOp is not supported"), std::string::npos) << e;
    try {
      Model::load(device(), path);
    } catch (const ModelError& err) {
      EXPECT_EQ(err.reason(), "op FancyOp is not supported");
    }
  }
  {
    B m(13);
    m.input("x", {1, 1, 4, 4}).output("y").init("w", {1, 1, 3, 3}, std::vector<float>(9, 1));
    auto& conv = m.node("Conv", {"x", "w"}, {"y"}, "c0");
    B::attr_s(conv, "auto_pad", "SOMETIMES");
    const std::string e = error_of([&] { Model::load(device(), m.save("bad_attr_value")); });
    EXPECT_NE(e.find("node 0 'c0' (Conv): attribute auto_pad=SOMETIMES"), std::string::npos) << e;
  }
  {
    B m(13);
    m.input("x", {2}).output("y");
    auto& r = m.node("Relu", {"x"}, {"y"}, "r0");
    B::attr_i(r, "bogus", 1);
    const std::string e = error_of([&] { Model::load(device(), m.save("bad_attr")); });
    EXPECT_NE(e.find("(Relu): attribute bogus=1: not supported"), std::string::npos) << e;
  }
  {
    B m(13);
    m.input("x", {1, 1, 4, 4, 4}).output("y").init("w", {1, 1, 3, 3, 3}, std::vector<float>(27, 1));
    m.node("Conv", {"x", "w"}, {"y"}, "c3");
    const std::string e = error_of([&] { Model::load(device(), m.save("conv3d")); });
    EXPECT_NE(e.find("3-D convolution is not supported"), std::string::npos) << e;
  }
  {
    B m(18);
    m.input("x", {2}).output("y");
    m.node("Relu", {"x"}, {"y"});
    const std::string e = error_of([&] { Model::load(device(), m.save("opset18")); });
    EXPECT_NE(e.find("opset 18 is not supported"), std::string::npos) << e;
  }
  {
    B m(13);
    m.input("x", {2}, onnx::TensorProto::DOUBLE).output("y", {}, onnx::TensorProto::DOUBLE);
    m.node("Relu", {"x"}, {"y"});
    const std::string e = error_of([&] { Model::load(device(), m.save("double")); });
    EXPECT_NE(e.find("graph input 'x': dtype double"), std::string::npos) << e;
  }
  {
    B m(13);
    m.input("x", {2}).output("y");
    auto& c = m.node("Cast", {"x"}, {"y"}, "cast");
    B::attr_i(c, "to", onnx::TensorProto::DOUBLE);
    const std::string e = error_of([&] { Model::load(device(), m.save("cast_double")); });
    EXPECT_NE(e.find("attribute to=11: cast to double is not supported"), std::string::npos) << e;
  }
  EXPECT_NE(error_of([] { Model::load(device(), "/nonexistent/model.onnx"); }).find("cannot open"), std::string::npos);
  {
    const auto p = std::filesystem::temp_directory_path() / "gltensor-model-tests" / "garbage.onnx";
    std::ofstream(p) << "not a model";
    EXPECT_NE(error_of([&] { Model::load(device(), p.string()); }).find("not an ONNX model"), std::string::npos);
  }
  EXPECT_EQ(add(ones(device(), {2}), 1.0).to_vector()[0], 2.0f);  // the device is still usable
}

TEST(Model, MismatchedInputsAreModelErrorsAtRun) {
  B m(13);
  m.input("x", {-1, 3}).output("y");
  m.node("Relu", {"x"}, {"y"});
  Model model = Model::load(device(), m.save("run_errors"));
  Tensor good = ones(device(), {2, 3});
  EXPECT_NE(error_of([&] { model.run({}); }).find("input 'x' [-1, 3] is missing"), std::string::npos);
  EXPECT_NE(error_of([&] {
              model.run({{"x", good}, {"z", good}});
            }).find("input 'z' is not a graph input"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              model.run({{"x", ones(device(), {2, 4})}});
            }).find("input 'x' has shape [2, 4], expected [-1, 3]"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              model.run({{"x", ones(device(), {3})}});
            }).find("has shape [3], expected [-1, 3]"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              model.run({{"x", ones(device(), {2, 3}, DType::i32)}});
            }).find("input 'x' has dtype int32, expected float32"),
            std::string::npos);
  EXPECT_EQ(model.run({{"x", good}}).at("y").shape(), (Shape{2, 3}));
  ModelOptions o;
  o.input_shapes["x"] = {4, 4};
  EXPECT_NE(error_of([&] { Model::load(device(), m.save("run_errors"), o); }).find("contradicts the fixed dim 1"),
            std::string::npos);
  o.input_shapes = {{"nope", {1}}};
  EXPECT_NE(
      error_of([&] { Model::load(device(), m.save("run_errors"), o); }).find("'nope', which is not a graph input"),
      std::string::npos);
  o.input_shapes = {{"x", {4, 3}}};
  Model fixed = Model::load(device(), m.save("run_errors"), o);
  // Shapes known only at run time that an op cannot take: a ModelError naming the node.
  {
    B mm(13);
    mm.input("a", {-1, -1}).output("y").init("w", {4, 2}, std::vector<float>(8, 1));
    mm.node("MatMul", {"a", "w"}, {"y"}, "mm0");
    Model bad = Model::load(device(), mm.save("run_shape_error"));
    const std::string e = error_of([&] { bad.run({{"a", ones(device(), {2, 3})}}); });
    EXPECT_NE(e.find("node 0 'mm0' (MatMul): gltensor::"), std::string::npos) << e;
    EXPECT_EQ(bad.run({{"a", ones(device(), {2, 4})}}).at("y").to_vector()[0], 4.0f);
  }
  EXPECT_EQ(fixed.inputs()[0].shape, (Shape{4, 3}));
  EXPECT_NE(error_of([&] { fixed.run({{"x", good}}); }).find("expected [4, 3]"), std::string::npos);
}
