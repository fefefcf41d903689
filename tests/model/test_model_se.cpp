// The model planner's fuse_se (src/model/fuse_se.cpp) and the one-dispatch squeeze-and-excitation
// kernel (glsl/nn/squeeze_excite.comp, src/nn/squeeze_excite.cpp): GlobalAveragePool -> 1x1 Conv
// (+ activation) -> 1x1 Conv (+ activation) -> Mul, as PP-OCR's MobileNetV3 / PP-LCNet SE blocks
// write it, against a float64 reference and against the same model planned without the pass
// (Settings::fuse_elementwise off, which turns fuse_se off with it): batches, 1 to 200 channels,
// one-element, odd and wide planes, planes past the one-dispatch limit (the nodes' ops), other
// activations, Convs without bias, Mul's operands either way round, NaN/Inf in x, a loop limit the
// kernel's plan refuses; and the forms the pass must leave alone.
#include <cmath>

#include "model/planner.hpp"
#include "nn/squeeze_excite.hpp"
#include "onnx_builder.hpp"
#include "planned_run.hpp"
#include "runtime/settings.hpp"
#include "test_util.hpp"

using namespace gltensor;
using namespace glt_test;
using B = OnnxBuilder;

namespace {

// An activation node after a Conv and its float64 form.
struct Act {
  std::string op;  ///< "" none, "Relu", "HardSigmoid", "HardSwish", "Sigmoid", "Clip"
  double operator()(double v) const {
    if (op == "Relu") return std::max(v, 0.0);
    if (op == "HardSigmoid") return std::clamp(0.2 * v + 0.5, 0.0, 1.0);
    if (op == "HardSwish") return v * std::clamp(v + 3, 0.0, 6.0) / 6;
    if (op == "Sigmoid") return 1 / (1 + std::exp(-v));
    if (op == "Clip") return std::clamp(v, -0.5, 0.5);
    return v;
  }
};

// The block's choices; the defaults are PP-OCR cls's first SE block ([1, 8, 12, 96], Cr 2).
struct Form {
  std::int64_t N = 1, C = 8, Cr = 2, H = 12, W = 96;
  Act act1{"Relu"}, act2{"HardSigmoid"};
  bool bias1 = true, bias2 = true;
  bool scale_first = false;  ///< Mul(s, x) instead of Mul(x, s)
  bool specials = false;     ///< NaN / Inf / signed zeros in x
};

struct Built {
  std::string path;
  std::vector<float> x, w1, b1, w2, b2;
};

// The activation node `act` from `in` to `out` (or the Conv writes `out` itself).
void activation(B& b, const Act& act, const std::string& in, const std::string& out) {
  auto& n = b.node(act.op, {in}, {out});
  if (act.op == "HardSigmoid") B::attr_f(n, "alpha", 0.2f), B::attr_f(n, "beta", 0.5f);
  if (act.op == "Clip") B::attr_f(n, "min", -0.5f), B::attr_f(n, "max", 0.5f);
}

Built build(const Form& f, std::mt19937_64& rng, const std::string& name) {
  B b(9);  // PP-OCR's opset (Clip's bounds as attributes)
  Built r;
  r.x = uniform(rng, static_cast<std::size_t>(f.N * f.C * f.H * f.W), -2, 2);
  if (f.specials) sprinkle_specials(r.x);
  r.w1 = uniform(rng, static_cast<std::size_t>(f.Cr * f.C));
  r.b1 = f.bias1 ? uniform(rng, static_cast<std::size_t>(f.Cr)) : std::vector<float>(f.Cr, 0.0f);
  r.w2 = uniform(rng, static_cast<std::size_t>(f.C * f.Cr));
  r.b2 = f.bias2 ? uniform(rng, static_cast<std::size_t>(f.C)) : std::vector<float>(f.C, 0.0f);
  b.input("x", {f.N, f.C, f.H, f.W});
  b.init("w1", {f.Cr, f.C, 1, 1}, r.w1).init("w2", {f.C, f.Cr, 1, 1}, r.w2);
  if (f.bias1) b.init("b1", {f.Cr}, r.b1);
  if (f.bias2) b.init("b2", {f.C}, r.b2);
  b.node("GlobalAveragePool", {"x"}, {"p"});
  auto conv = [&](const std::string& in, const std::string& w, const std::string& bias, bool has_bias, const Act& act,
                  const std::string& out) {
    const std::string c = act.op.empty() ? out : out + "_conv";
    std::vector<std::string> ins{in, w};
    if (has_bias) ins.push_back(bias);
    B::attr_ints(b.node("Conv", ins, {c}), "kernel_shape", {1, 1});
    if (!act.op.empty()) activation(b, act, c, out);
  };
  conv("p", "w1", "b1", f.bias1, f.act1, "h");
  conv("h", "w2", "b2", f.bias2, f.act2, "s");
  if (f.scale_first)
    b.node("Mul", {"s", "x"}, {"y"});
  else
    b.node("Mul", {"x", "s"}, {"y"});
  b.output("y", {f.N, f.C, f.H, f.W});
  r.path = b.save(name);
  return r;
}

// y = x * act2(W2 act1(W1 mean(x) + b1) + b2) in float64.
std::vector<double> reference(const Form& f, const Built& m) {
  const std::int64_t hw = f.H * f.W;
  std::vector<double> y(m.x.size());
  for (std::int64_t n = 0; n < f.N; ++n) {
    std::vector<double> mean(f.C), h(f.Cr), s(f.C);
    for (std::int64_t c = 0; c < f.C; ++c) {
      for (std::int64_t i = 0; i < hw; ++i) mean[c] += m.x[(n * f.C + c) * hw + i];
      mean[c] /= static_cast<double>(hw);
    }
    for (std::int64_t j = 0; j < f.Cr; ++j) {
      double acc = m.b1[j];
      for (std::int64_t c = 0; c < f.C; ++c) acc += double(m.w1[j * f.C + c]) * mean[c];
      h[j] = f.act1(acc);
    }
    for (std::int64_t c = 0; c < f.C; ++c) {
      double acc = m.b2[c];
      for (std::int64_t j = 0; j < f.Cr; ++j) acc += double(m.w2[c * f.Cr + j]) * h[j];
      s[c] = f.act2(acc);
    }
    for (std::int64_t c = 0; c < f.C; ++c)
      for (std::int64_t i = 0; i < hw; ++i) {
        const std::size_t e = static_cast<std::size_t>((n * f.C + c) * hw + i);
        y[e] = m.x[e] * s[c];
      }
  }
  return y;
}

PlannedRun run(const Form& f, const Built& m, bool fuse) {
  return run_planned(m.path, {{"x", Tensor::from_host(device(), m.x, {f.N, f.C, f.H, f.W})}}, "y",
                     &detail::Settings::fuse_elementwise, fuse);
}

// Fused: the plan names one block; a run is `dispatches` dispatches (1: the kernel; more where a
// dispatch limit splits its grid), or with 0 the nodes' ops (more than one) where the planes do not
// fit the kernel's plan; the outputs match the float64 reference and the unfused plan's.
void expect_fused(const Form& f, const std::string& name, int dispatches) {
  GLT_RNG(rng);
  SCOPED_TRACE(name + " [" + std::to_string(f.N) + ", " + std::to_string(f.C) + ", " + std::to_string(f.H) + ", " +
               std::to_string(f.W) + "], Cr " + std::to_string(f.Cr));
  const Built m = build(f, rng, name);
  const PlannedRun a = run(f, m, true), b = run(f, m, false);
  EXPECT_NE(a.plan.find("1 squeeze-excitation blocks"), std::string::npos) << a.plan;
  EXPECT_EQ(b.plan.find("squeeze-excitation"), std::string::npos) << b.plan;
  if (dispatches > 0)
    EXPECT_EQ(a.dispatches, static_cast<std::uint64_t>(dispatches)) << a.plan;
  else
    EXPECT_GT(a.dispatches, 1u) << a.plan;
  const std::vector<double> ref = reference(f, m);
  EXPECT_TRUE(close(a.y, ref, 2e-5, 2e-5));
  EXPECT_TRUE(close(a.y, to_double(b.y), 2e-5, 2e-5));
}

}  // namespace

// PP-OCR cls's blocks ([1, 8, 12, 96] Cr 2 ... [1, 200, 2, 96] Cr 50), a batch, one channel, a
// one-element plane, odd planes and channel counts past one round of the workgroup's rows.
TEST(ModelSqueezeExcite, FusedMatchesReferenceAndUnfused) {
  const Form cls;
  auto with = [&](std::int64_t N, std::int64_t C, std::int64_t Cr, std::int64_t H, std::int64_t W) {
    Form f = cls;
    f.N = N, f.C = C, f.Cr = Cr, f.H = H, f.W = W;
    return f;
  };
  expect_fused(cls, "se_cls", 1);
  expect_fused(with(1, 200, 50, 2, 96), "se_cls_wide", 1);
  expect_fused(with(3, 40, 10, 3, 7), "se_batch", 1);
  expect_fused(with(1, 1, 1, 5, 3), "se_one_channel", 1);
  expect_fused(with(2, 33, 300, 1, 1), "se_one_pixel", 1);
  expect_fused(with(1, 1024, 9, 1, 2), "se_max_channels", 1);
  expect_fused(with(1, 7, 3, 97, 13), "se_odd", 1);
  {  // more images than one dispatch's workgroups (the kernel's WORKGROUP_ID_1D; groups_1d's 2 x 3
     // grid in two dispatches of a row each, its 6th workgroup past the images)
    ScopedDispatchLimit limit(2);
    expect_fused(with(5, 8, 2, 3, 4), "se_split", 2);
  }
}

// Planes past the one-dispatch limit (C H W > kSqueezeExciteMaxElements), or channels past its
// shared arrays: the node runs the unfused ops (pool, two convs with their activations, mul).
TEST(ModelSqueezeExcite, LargePlanesRunTheNodesOps) {
  Form f;
  f.C = 16, f.Cr = 4, f.H = 64, f.W = 72;
  ASSERT_GT(f.C * f.H * f.W, detail::kSqueezeExciteMaxElements);
  expect_fused(f, "se_large", 0);
  Form g;
  g.C = 1025, g.Cr = 3, g.H = 1, g.W = 1;
  expect_fused(g, "se_many_channels", 0);
  // the device's loop limit below the kernel's loops: the plan refuses, the nodes' ops run
  Form h;
  h.C = 64, h.Cr = 16, h.H = 8, h.W = 8;
  const Tensor hx = zeros(device(), {h.N, h.C, h.H, h.W});
  const detail::SqueezeExcitePlan p = detail::plan_squeeze_excite(hx, h.Cr);
  ASSERT_TRUE(p.ok);
  ScopedLoopLimit limit(p.loop_iterations - 1);
  EXPECT_FALSE(detail::plan_squeeze_excite(hx, h.Cr).ok);
  expect_fused(h, "se_loop_limit", 0);
}

// Other activations (both sides), no bias on either Conv, Mul(s, x), NaN / Inf in x.
TEST(ModelSqueezeExcite, ActivationsBiasesOperandOrderAndSpecials) {
  Form f;
  f.act1 = {"HardSwish"}, f.act2 = {"Sigmoid"};
  expect_fused(f, "se_acts", 1);
  Form g;
  g.act1 = {""}, g.act2 = {"Clip"}, g.bias1 = false, g.bias2 = false;
  expect_fused(g, "se_no_bias", 1);
  Form h;
  // (3 images: one image's NaN / Inf stays in it, the others' scales finite)
  h.act2 = {""}, h.scale_first = true, h.specials = true, h.N = 3, h.C = 24, h.Cr = 6, h.H = 6, h.W = 10;
  expect_fused(h, "se_scale_first_specials", 1);
}

// Forms fuse_se leaves alone: the pooled value also a graph output, a Mul by another tensor, a
// padded Conv (its output grows past 1x1), a Conv of two groups, a Mul that an elementwise chain
// continues (x + x * s: fuse_elementwise's kernel takes the scale with the Add).
TEST(ModelSqueezeExcite, OtherFormsAreLeftAlone) {
  GLT_RNG(rng);
  const std::int64_t C = 8, Cr = 4, H = 3, W = 5;
  auto plan_of = [&](const std::string& name, int form) {
    B b(13);
    b.input("x", {1, C, H, W}).input("z", {1, C, H, W});
    const std::int64_t C1 = form == 3 ? C / 2 : C;
    b.init("w1", {Cr, C1, 1, 1}, uniform(rng, static_cast<std::size_t>(Cr * C1)));
    b.init("w2", {C, Cr, 1, 1}, uniform(rng, static_cast<std::size_t>(C * Cr)));
    b.node("GlobalAveragePool", {"x"}, {"p"});
    auto& c1 = b.node("Conv", {"p", "w1"}, {"h"});
    if (form == 2) B::attr_ints(c1, "pads", {1, 1, 1, 1});
    if (form == 3) B::attr_i(c1, "group", 2);
    b.node("Relu", {"h"}, {"hr"});
    b.node("Conv", {"hr", "w2"}, {"s0"});
    b.node("HardSigmoid", {"s0"}, {"s"});
    b.node("Mul", {form == 1 ? "z" : "x", "s"}, {form == 4 ? "m" : "y"});
    if (form == 4) b.node("Add", {"m", "x"}, {"y"});
    b.output_any("y");
    if (form == 0) b.output_any("p");
    Model model = Model::load(device(), b.save(name));
    return model.plan_summary();
  };
  for (int form = 0; form < 5; ++form) {
    const std::string plan = plan_of("se_left_alone_" + std::to_string(form), form);
    EXPECT_EQ(plan.find("squeeze-excitation"), std::string::npos) << form << ": " << plan;
  }
}

// The kernel's errors name the op and the shapes.
TEST(ModelSqueezeExcite, KernelErrors) {
  const Tensor x = zeros(device(), {1, 8, 2, 2}), w1 = zeros(device(), {2, 8, 1, 1}), b1 = zeros(device(), {2});
  const Tensor w2 = zeros(device(), {8, 2, 1, 1}), b2 = zeros(device(), {8});
  EXPECT_NO_THROW(detail::squeeze_excite("se", x, w1, b1, Activation::relu, w2, b2, Epilogue::hardsigmoid()));
  try {
    detail::squeeze_excite("se", x, w1, b1, Activation::relu, zeros(device(), {8, 3, 1, 1}), b2, Activation::none);
    FAIL() << "no error";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("gltensor::se: x [1, 8, 2, 2]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("w2 [8, 3, 1, 1]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(detail::squeeze_excite("se", x.to(DType::f16), w1, b1, Activation::relu, w2, b2, Activation::none),
               DTypeError);
  Epilogue affine = Activation::relu;
  affine.scale = 2;
  EXPECT_THROW(detail::squeeze_excite("se", x, w1, b1, affine, w2, b2, Activation::none), ValueError);
  try {
    detail::squeeze_excite("se", zeros(device(), {1, 8, 128, 128}), w1, b1, Activation::relu, w2, b2, Activation::none);
    FAIL() << "no error";
  } catch (const LimitError& e) {
    EXPECT_NE(std::string(e.what()).find("C H W 131072 > 65536"), std::string::npos) << e.what();
  }
}

// ---- fuse_residual: Conv -> Add(., r) with r added in the conv's kernel ----

namespace {

// A Conv (k x k, stride s, padding k / 2, `groups`) with an optional Relu, then Add with r of
// `rshape` (the conv's output shape: in the kernel; else broadcast by an add after).
struct ResForm {
  std::int64_t N = 1, C = 8, O = 8, H = 6, W = 96, k = 1, stride = 1, groups = 1;
  bool relu = false, bias = true, r_first = false;
  Shape rshape;  ///< empty: the conv's output shape
};

// in_kernel: 1 the residual in the conv's kernel (one dispatch fewer than unfused), 0 an add after
// (as many), -1 not checked (a forced layout may take another path: the values only).
void expect_residual(const ResForm& f, const std::string& name, int in_kernel) {
  GLT_RNG(rng);
  const std::int64_t pad = f.k / 2, OH = (f.H + 2 * pad - f.k) / f.stride + 1,
                     OW = (f.W + 2 * pad - f.k) / f.stride + 1;
  const std::int64_t Cg = f.C / f.groups, Og = f.O / f.groups;
  const Shape out{f.N, f.O, OH, OW};
  const Shape rs = f.rshape.empty() ? out : f.rshape;
  SCOPED_TRACE(name + " out " + to_string(out) + " r " + to_string(rs));
  const auto xv = uniform(rng, static_cast<std::size_t>(f.N * f.C * f.H * f.W), -2, 2);
  const auto wv = uniform(rng, static_cast<std::size_t>(f.O * Cg * f.k * f.k));
  const auto bv = uniform(rng, static_cast<std::size_t>(f.O));
  std::int64_t rn = 1;
  for (auto d : rs) rn *= d;
  auto rv = uniform(rng, static_cast<std::size_t>(rn), -3, 3);
  if (rn > 40) sprinkle_specials(rv);
  B b(13);
  b.input("x", {f.N, f.C, f.H, f.W}).input("r", rs);
  b.init("w", {f.O, Cg, f.k, f.k}, wv);
  std::vector<std::string> ins{"x", "w"};
  if (f.bias) b.init("b", {f.O}, bv), ins.push_back("b");
  auto& conv = b.node("Conv", ins, {f.relu ? "c0" : "c"});
  B::attr_ints(conv, "pads", {pad, pad, pad, pad});
  B::attr_ints(conv, "strides", {f.stride, f.stride});
  B::attr_i(conv, "group", f.groups);
  if (f.relu) b.node("Relu", {"c0"}, {"c"});
  if (f.r_first)
    b.node("Add", {"r", "c"}, {"y"});
  else
    b.node("Add", {"c", "r"}, {"y"});
  Shape ys = out;
  for (std::size_t d = 0; d < 4; ++d) ys[d] = std::max(out[d], rs[d]);
  b.output("y", ys);
  const std::string path = b.save(name);
  const std::map<std::string, Tensor> feeds{{"x", Tensor::from_host(device(), xv, {f.N, f.C, f.H, f.W})},
                                            {"r", Tensor::from_host(device(), rv, rs)}};
  const PlannedRun a = run_planned(path, feeds, "y", &detail::Settings::fuse_elementwise, true);
  const PlannedRun u = run_planned(path, feeds, "y", &detail::Settings::fuse_elementwise, false);
  EXPECT_NE(a.plan.find("1 residual Add into convs"), std::string::npos) << a.plan;
  EXPECT_EQ(u.plan.find("residual"), std::string::npos) << u.plan;
  if (in_kernel == 1) {
    EXPECT_EQ(a.dispatches + 1, u.dispatches) << a.plan;
  } else if (in_kernel == 0) {
    EXPECT_EQ(a.dispatches, u.dispatches) << a.plan;
  }
  // float64: conv (+ relu) broadcast against r
  std::vector<double> conv_ref(static_cast<std::size_t>(f.N * f.O * OH * OW));
  for (std::int64_t n = 0; n < f.N; ++n)
    for (std::int64_t o = 0; o < f.O; ++o)
      for (std::int64_t i = 0; i < OH; ++i)
        for (std::int64_t j = 0; j < OW; ++j) {
          double acc = f.bias ? bv[o] : 0.0;
          const std::int64_t g = o / Og;
          for (std::int64_t c = 0; c < Cg; ++c)
            for (std::int64_t p = 0; p < f.k; ++p)
              for (std::int64_t q = 0; q < f.k; ++q) {
                const std::int64_t ii = i * f.stride + p - pad, jj = j * f.stride + q - pad;
                if (ii >= 0 && ii < f.H && jj >= 0 && jj < f.W)
                  acc += double(xv[((n * f.C + g * Cg + c) * f.H + ii) * f.W + jj]) *
                         wv[((o * Cg + c) * f.k + p) * f.k + q];
              }
          conv_ref[((n * f.O + o) * OH + i) * OW + j] = f.relu ? std::max(acc, 0.0) : acc;
        }
  std::vector<double> ref;
  for (std::int64_t n = 0; n < ys[0]; ++n)
    for (std::int64_t o = 0; o < ys[1]; ++o)
      for (std::int64_t i = 0; i < ys[2]; ++i)
        for (std::int64_t j = 0; j < ys[3]; ++j) {
          auto at = [&](const Shape& s, std::int64_t a0, std::int64_t a1, std::int64_t a2, std::int64_t a3) {
            return (((s[0] > 1 ? a0 : 0) * s[1] + (s[1] > 1 ? a1 : 0)) * s[2] + (s[2] > 1 ? a2 : 0)) * s[3] +
                   (s[3] > 1 ? a3 : 0);
          };
          ref.push_back(conv_ref[static_cast<std::size_t>(at(out, n, o, i, j))] +
                        rv[static_cast<std::size_t>(at(rs, n, o, i, j))]);
        }
  EXPECT_TRUE(close(a.y, ref, 1e-5, 1e-5));
  EXPECT_TRUE(close(a.y, to_double(u.y), 1e-5, 1e-5));
}

}  // namespace

// PP-OCR cls's residual blocks (a 1x1 projection, no activation, then Add of the block's input;
// 8 and 88 input channels: the direct path, and on GPUs the GEMM with an add after for 88),
// Add(r, conv), a Relu before the Add, no bias (the residual's operand index), 3x3 and depthwise
// convs, stride 2, batches, NaN / Inf in r.
TEST(ModelResidualAdd, InTheConvKernel) {
  expect_residual({}, "res_cls", 1);
  ResForm a;
  a.r_first = true, a.relu = true, a.bias = false, a.C = 3, a.O = 7, a.H = 5, a.W = 9, a.k = 3;  // K 27: direct
  expect_residual(a, "res_relu_no_bias", 1);
  ResForm d;
  d.C = d.O = d.groups = 16, d.k = 3, d.stride = 2, d.H = 12, d.W = 20, d.N = 2;
  expect_residual(d, "res_depthwise", 1);
  ResForm p;  // cls's 88 -> 16 projection: GPUs' 1x1 GEMM path (an add after), else direct
  p.C = 88, p.O = 16, p.H = 3, p.W = 96;
  expect_residual(p, "res_cls_wide", -1);
  ResForm o;
  o.C = 3, o.O = 40, o.H = 7, o.W = 13, o.relu = true;
  expect_residual(o, "res_odd", 1);
}

// The GEMM path forced (GLTENSOR_CONV=im2col: the GPUs' path for cls's 1x1 projections past 32
// input channels): the residual in the REG matmul kernel's stores (RESIDUAL, one dispatch fewer
// than unfused) for one image, a 1x1 projection (the image is the columns) and a 3x3 conv (im2col's
// columns), through the split columns or one image's plain product (15 positions; and the GPUs'
// K-sliced REG plans), NaN / Inf in r; two images with 1x1 (the batched pointwise product, no residual operand:
// an add after) and a residual broadcast per channel (after) give the same values. Sabotage: the
// kernel's residual load dropped (fails: the values), res_gemm left false with the kernel's add
// (fails: r added twice).
TEST(ModelResidualAdd, InTheGemmKernel) {
  ScopedSettings s;
  s->conv = detail::ConvSetting::im2col;
  ResForm p;  // cls's 88 -> 16 projection
  p.C = 88, p.O = 16, p.H = 3, p.W = 96;
  expect_residual(p, "res_gemm_cls_wide", 1);
  ResForm k;
  k.C = 8, k.O = 12, k.H = 7, k.W = 12, k.k = 3;
  expect_residual(k, "res_gemm_3x3", 1);
  ResForm r;
  r.C = 40, r.O = 16, r.H = 3, r.W = 8, r.r_first = true, r.bias = false;
  expect_residual(r, "res_gemm_no_bias", 1);
  ResForm q;  // 15 positions: no split-columns form (not a multiple of 4), one image's plain product
  q.C = 40, q.O = 16, q.H = 3, q.W = 5;
  expect_residual(q, "res_gemm_odd_positions", 1);
  ResForm n;
  n.C = 40, n.O = 16, n.H = 3, n.W = 8, n.N = 2;
  expect_residual(n, "res_gemm_batch", -1);
  ResForm c;
  c.C = 40, c.O = 16, c.H = 3, c.W = 8, c.rshape = {1, 16, 1, 1};
  expect_residual(c, "res_gemm_per_channel", 0);
}

// r of another shape than the conv's output (broadcast per channel, or a batch that widens the
// output): the Add after the conv, as the nodes.
TEST(ModelResidualAdd, BroadcastResidualAddsAfter) {
  ResForm a;
  a.rshape = {1, 8, 1, 1};
  expect_residual(a, "res_per_channel", 0);
  ResForm b;
  b.C = 4, b.O = 4, b.H = 3, b.W = 5, b.rshape = {2, 4, 3, 5};
  expect_residual(b, "res_widens", 0);
}

// The direct kernel's GPU layout (lanes; llvmpipe runs the ubo layout by default), forced: the
// residual in its stores (the stores GPUs run for cls's residual convs), the values. (Not rows, a
// software rasterizer's layout past the ubo's: its programs cost this suite's cold run seconds.)
TEST(ModelResidualAdd, ForcedLayoutsOfTheDirectKernel) {
  for (detail::ConvDirectSetting layout : {detail::ConvDirectSetting::lanes}) {
    ScopedSettings s;
    s->conv_direct = layout;
    expect_residual({}, "res_layout_cls", -1);
    ResForm p;
    p.C = 88, p.O = 16, p.H = 3, p.W = 96;
    expect_residual(p, "res_layout_cls_wide", -1);
    ResForm d;
    d.C = d.O = d.groups = 16, d.k = 3, d.stride = 2, d.H = 12, d.W = 20, d.N = 2, d.relu = true;
    expect_residual(d, "res_layout_depthwise", -1);
    ResForm a;
    a.r_first = true, a.bias = false, a.C = 3, a.O = 7, a.H = 5, a.W = 9, a.k = 3;
    expect_residual(a, "res_layout_no_bias", -1);
  }
}

// A residual Add fused into a Conv node whose conv runs Winograd (forced here: GPUs choose it for
// 3x3 stride-1 convs from 32 input and 64 output channels): the output transform does not take
// the residual, so the model path adds it after (as many dispatches as unfused), with the
// activation before the Add; a per-channel residual broadcast likewise.
TEST(ModelResidualAdd, AfterAWinogradConv) {
  ScopedSettings s;
  s->conv_winograd = 2;
  ResForm a;
  a.C = 5, a.O = 6, a.H = 9, a.W = 11, a.k = 3, a.relu = true;
  expect_residual(a, "res_winograd", 0);
  ResForm b;
  b.C = 3, b.O = 4, b.H = 7, b.W = 6, b.k = 3, b.N = 2, b.r_first = true, b.rshape = {1, 4, 1, 1};
  expect_residual(b, "res_winograd_per_channel", 0);
}
