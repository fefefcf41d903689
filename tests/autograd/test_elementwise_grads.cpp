// Gradients of every elementwise op in the tables of include/gltensor/ops.hpp (and of the
// parametric unary ops), against central finite differences of the float64 references in
// tests/ops/unary_reference.hpp (tolerance in grad_check.hpp); rows marked no_grad raise at
// backward, naming the op.
#include "grad_check.hpp"
#include "ops/unary_reference.hpp"

using namespace glt_test;
using namespace gltensor;

namespace {

// Rows of GLTENSOR_UNARY_OPS by gradient column.
std::vector<std::string> unary_rows(bool with_grad) {
  std::vector<std::string> names;
#define GLT_ROW_grad(name) \
  if (with_grad) names.emplace_back(#name);
#define GLT_ROW_no_grad(name) \
  if (!with_grad) names.emplace_back(#name);
#define GLT_ROW(name, rule, grad, ...) GLT_ROW_##grad(name)
  GLTENSOR_UNARY_OPS(GLT_ROW)
#undef GLT_ROW
#undef GLT_ROW_grad
#undef GLT_ROW_no_grad
  return names;
}

}  // namespace

// Every differentiable unary op (table rows with `grad`, and the parametric ops), on random
// inputs in its domain.
TEST(ElementwiseGrads, UnaryOpsMatchFiniteDifferences) {
  GLT_RNG(rng);
  const auto rows = unary_rows(true);
  std::vector<std::string> parametric_rows;
#define GLT_PARAMETRIC_ROW(name) parametric_rows.emplace_back(#name);
  GLTENSOR_PARAMETRIC_UNARY_OPS(GLT_PARAMETRIC_ROW)
#undef GLT_PARAMETRIC_ROW
  std::size_t checked = 0;
  for (const UnaryCase& c : unary_cases()) {
    const bool in_table = std::find(rows.begin(), rows.end(), c.name) != rows.end();
    const bool parametric = std::find(parametric_rows.begin(), parametric_rows.end(), c.name) != parametric_rows.end();
    if (!in_table && !parametric) continue;
    const float lo = c.glo != c.ghi ? c.glo : c.lo, hi = c.glo != c.ghi ? c.ghi : c.hi;
    // Inputs near a jump of the reference (round's half-integers, floor's integers, sign's 0,
    // shrink's +-lambda) are drawn again: a finite difference across a jump is no derivative. A
    // jump: the change over v +- 1e-3 differs from the mean of the changes over the same width
    // beside it by more than 0.1 (smooth functions: by O(1e-9 f''')).
    const auto near_jump = [&](double v) {
      const double d = 1e-3, across = c.ref(v + d) - c.ref(v - d);
      const double beside = (c.ref(v - d) - c.ref(v - 3 * d) + c.ref(v + 3 * d) - c.ref(v + d)) / 2;
      return std::fabs(across - beside) > 0.1;
    };
    EXPECT_TRUE(grad_check(
        rng, {{7, 5}}, [&](const std::vector<Tensor>& x) { return c.op(x[0]); },
        [&](const std::vector<HostT>& x) {
          std::vector<double> y;
          for (double v : x[0].v) y.push_back(c.ref(v));
          return y;
        },
        lo, hi, false, near_jump))
        << c.name;
    ++checked;
  }
  EXPECT_GE(checked, rows.size()) << "every differentiable row has a reference case";
}

// Rows marked no_grad (none today) record a node whose backward names the op.
TEST(ElementwiseGrads, NoGradRowsRaiseAtBackward) {
  for (const std::string& name : unary_rows(false)) {
    for (const UnaryCase& c : unary_cases()) {
      if (name != c.name) continue;
      Tensor x = ones(device(), {3});
      requires_grad_(x);
      Tensor y = sum(c.op(x));
      try {
        backward(y);
        FAIL() << name << ": expected ValueError";
      } catch (const ValueError& e) {
        EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
      }
    }
  }
}

namespace {
struct BinaryRef {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> op;
  std::function<double(double, double)> ref;
  float lo, hi;              // both operands
  bool mixed_signs = false;  // a mapped to [-3, 3], b to [0.3, 3] (fmod, remainder)
};
std::vector<BinaryRef> binary_refs() {
  return {
      {"add", [](auto& a, auto& b) { return add(a, b); }, [](double a, double b) { return a + b; }, -2, 2},
      {"sub", [](auto& a, auto& b) { return sub(a, b); }, [](double a, double b) { return a - b; }, -2, 2},
      {"mul", [](auto& a, auto& b) { return mul(a, b); }, [](double a, double b) { return a * b; }, -2, 2},
      {"div", [](auto& a, auto& b) { return div(a, b); }, [](double a, double b) { return a / b; }, 0.5f, 2},
      {"pow", [](auto& a, auto& b) { return pow(a, b); }, [](double a, double b) { return std::pow(a, b); }, 0.5f, 2},
      {"maximum", [](auto& a, auto& b) { return maximum(a, b); }, [](double a, double b) { return std::max(a, b); }, -2,
       2},
      {"minimum", [](auto& a, auto& b) { return minimum(a, b); }, [](double a, double b) { return std::min(a, b); }, -2,
       2},
      {"fmax", [](auto& a, auto& b) { return fmax(a, b); }, [](double a, double b) { return std::fmax(a, b); }, -2, 2},
      {"fmin", [](auto& a, auto& b) { return fmin(a, b); }, [](double a, double b) { return std::fmin(a, b); }, -2, 2},
      {"fmod", [](auto& a, auto& b) { return fmod(a, b); }, [](double a, double b) { return std::fmod(a, b); }, 0, 1,
       true},
      {"remainder", [](auto& a, auto& b) { return remainder(a, b); },
       [](double a, double b) { return a - std::floor(a / b) * b; }, 0, 1, true},
      {"atan2", [](auto& a, auto& b) { return atan2(a, b); }, [](double a, double b) { return std::atan2(a, b); }, 0.2f,
       2},
  };
}
std::vector<std::string> binary_rows(bool with_grad) {
  std::vector<std::string> names;
#define GLT_ROW_grad(name) \
  if (with_grad) names.emplace_back(#name);
#define GLT_ROW_no_grad(name) \
  if (!with_grad) names.emplace_back(#name);
#define GLT_ROW(name, rule, grad, ...) GLT_ROW_##grad(name)
  GLTENSOR_BINARY_OPS(GLT_ROW)
#undef GLT_ROW
#undef GLT_ROW_grad
#undef GLT_ROW_no_grad
  return names;
}
}  // namespace

// Every differentiable binary op: both operands, broadcasting ([3, 4] with [4]), and the scalar
// forms (tensor op scalar, scalar op tensor).
TEST(ElementwiseGrads, BinaryOpsMatchFiniteDifferences) {
  GLT_RNG(rng);
  const auto refs = binary_refs();
  for (const std::string& name : binary_rows(true)) {
    const auto it = std::find_if(refs.begin(), refs.end(), [&](const BinaryRef& r) { return name == r.name; });
    ASSERT_NE(it, refs.end()) << name << " has no reference here";
    const BinaryRef& c = *it;
    // mixed_signs: inputs in [0, 1] mapped to a in [-3, 3], b in [0.3, 3] on both sides.
    auto ga = [&](const Tensor& t) { return c.mixed_signs ? sub(mul(t, 6.0), 3.0) : t; };
    auto gb = [&](const Tensor& t) { return c.mixed_signs ? add(mul(t, 2.7), 0.3) : t; };
    auto ha = [&](double v) { return c.mixed_signs ? 6 * v - 3 : v; };
    auto hb = [&](double v) { return c.mixed_signs ? 2.7 * v + 0.3 : v; };
    EXPECT_TRUE(grad_check(
        rng, {{3, 4}, {4}}, [&](const std::vector<Tensor>& x) { return c.op(ga(x[0]), gb(x[1])); },
        [&](const std::vector<HostT>& x) {
          std::vector<double> y;
          for (std::size_t i = 0; i < 12; ++i) y.push_back(c.ref(ha(x[0][i]), hb(x[1][i % 4])));
          return y;
        },
        c.lo, c.hi))
        << name;
    const double s = hb(0.5 * (c.lo + c.hi) + 0.123);
    EXPECT_TRUE(grad_check(
        rng, {{5}},
        [&](const std::vector<Tensor>& x) {
          return c.op(ga(x[0]), full(device(), {}, s));  // tensor op 0-dim tensor
        },
        [&](const std::vector<HostT>& x) {
          std::vector<double> y;
          for (double v : x[0].v) y.push_back(c.ref(ha(v), s));
          return y;
        },
        c.lo, c.hi))
        << name << " with a 0-dim operand";
  }
  // The scalar overloads record their own nodes.
  auto check_scalar = [&](const char* name, std::function<Tensor(const Tensor&)> f, std::function<double(double)> ref,
                          float lo, float hi) {
    EXPECT_TRUE(grad_check(
        rng, {{6}}, [&](const std::vector<Tensor>& x) { return f(x[0]); },
        [&](const std::vector<HostT>& x) {
          std::vector<double> y;
          for (double v : x[0].v) y.push_back(ref(v));
          return y;
        },
        lo, hi))
        << name;
  };
  check_scalar(
      "pow(x, 2.5)", [](const Tensor& x) { return pow(x, 2.5); }, [](double x) { return std::pow(x, 2.5); }, 0.5f, 2);
  check_scalar(
      "pow(2.5, x)", [](const Tensor& x) { return pow(2.5, x); }, [](double x) { return std::pow(2.5, x); }, -1, 1);
  check_scalar(
      "div(3, x)", [](const Tensor& x) { return div(3.0, x); }, [](double x) { return 3 / x; }, 0.5f, 2);
  check_scalar(
      "sub(3, x)", [](const Tensor& x) { return sub(3.0, x); }, [](double x) { return 3 - x; }, -1, 1);
  check_scalar(
      "atan2(x, 0.7)", [](const Tensor& x) { return atan2(x, 0.7); }, [](double x) { return std::atan2(x, 0.7); }, -1,
      1);
  check_scalar(
      "fmod(7, x)", [](const Tensor& x) { return fmod(7.0, x); }, [](double x) { return std::fmod(7.0, x); }, 1.1f,
      1.9f);
  check_scalar(
      "maximum(x, 0.1)", [](const Tensor& x) { return maximum(x, 0.1); }, [](double x) { return std::max(x, 0.1); }, -1,
      1);
  check_scalar(
      "add(x, y, alpha 2.5)", [](const Tensor& x) { return add(x, x, 2.5); }, [](double x) { return 3.5 * x; }, -1, 1);
}

// maximum/minimum split a tie's gradient evenly (PyTorch); fmax/fmin give it to the first operand.
TEST(ElementwiseGrads, TiesAndNaNChoices) {
  Tensor a = Tensor::from_host(device(), std::vector<float>{1, 2, 3}, {3});
  Tensor b = Tensor::from_host(device(), std::vector<float>{1, 5, NAN}, {3});
  requires_grad_(a);
  requires_grad_(b);
  backward(sum(maximum(a, b)));
  EXPECT_EQ(grad(a).to_vector()[0], 0.5f);
  EXPECT_EQ(grad(b).to_vector()[0], 0.5f);
  zero_grad(a);
  zero_grad(b);
  backward(sum(fmax(a, b)));
  EXPECT_EQ(grad(a).to_vector(), (std::vector<float>{1, 0, 1}));
  EXPECT_EQ(grad(b).to_vector(), (std::vector<float>{0, 1, 0}));
}

// Comparison, logical and bitwise rows (no_grad) return non-float results that record nothing.
TEST(ElementwiseGrads, NoGradBinaryRowsRecordNothing) {
  Tensor a = ones(device(), {3});
  requires_grad_(a);
  EXPECT_FALSE(requires_grad(lt(a, 2.0)));
  EXPECT_FALSE(requires_grad(eq(a, a)));
  EXPECT_FALSE(binary_rows(false).empty());
}

// relu's gradient (one dispatch, binary.comp's op_relu_backward): exactly g where x > 0 and 0
// elsewhere (x = +0, -0, negative, NaN, -Inf: 0; +Inf: g), g with NaN and Inf passed through,
// against the float64 select, for odd sizes and a 2-D shape.
TEST(ElementwiseGrads, ReluGradientSelectsExactly) {
  GLT_RNG(rng);
  for (const Shape& shape : {Shape{1}, Shape{7}, Shape{1031}, Shape{33, 17}}) {
    const std::int64_t n = numel_of(shape);
    auto hx = uniform(rng, static_cast<std::size_t>(n), -2, 2), hg = uniform(rng, static_cast<std::size_t>(n), -3, 3);
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    // The smallest normal floats, not denormals: GL lets a GPU flush denormals to zero (NVIDIA
    // does), so a denormal x > 0 may read as 0 there.
    const float tiny = std::numeric_limits<float>::min();
    const float xs[] = {0.0f, -0.0f, nan, inf, -inf, tiny, -tiny};
    for (std::size_t i = 0; i < 7 && i < hx.size(); ++i) hx[i] = xs[i];
    if (n > 20) hg[10] = nan, hg[11] = inf, hx[10] = 1, hx[11] = 1;
    Tensor x = Tensor::from_host(device(), hx, shape), g = Tensor::from_host(device(), hg, shape);
    requires_grad_(x);
    Tensor y = relu(x);
    backward(y, g);
    std::vector<double> ref(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) ref[i] = hx[i] > 0 ? double(hg[i]) : 0.0;
    EXPECT_TRUE(close(grad(x).to_vector(), ref, 0, 0)) << to_string(shape);
  }
}
