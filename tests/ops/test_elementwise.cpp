// Elementwise ops against float64 host references: random inputs, NaN/Inf, broadcasting, 0-size,
// size-1, odd sizes, non-contiguous views, every dtype, in-place and out= forms, errors.
//
// Tolerances (|got - ref| <= atol + rtol |ref|), float32 compute:
//   exact ops (neg, abs, add, mul, comparisons, floor, ...): 0
//   arithmetic rounding (div, sqrt, reciprocal):             rtol 1e-6
//   transcendental (exp, log, sin, erf, tanh, pow, ...):     rtol 1e-5..4e-5, atol 1e-6 (per row)
//   f16 / bf16 storage: results must equal the f32 result rounded to the dtype (round to even).
#include <sys/resource.h>

#include <cstring>
#include <functional>

#include "ops/unary_reference.hpp"
#include "tensor/tensor_impl.hpp"
#include "test_util.hpp"

using namespace glt_test;
using namespace gltensor;

namespace {

using glt_test::unary_cases;
using glt_test::UnaryCase;

class UnaryOps : public ::testing::TestWithParam<UnaryCase> {};

TEST_P(UnaryOps, MatchesFloat64Reference) {
  const auto& c = GetParam();
  GLT_RNG(rng);
  for (std::size_t n : {std::size_t{1}, std::size_t{0}, std::size_t{1031}}) {
    auto x = uniform(rng, n, c.lo, c.hi);
    if (n > 100) sprinkle_specials(x);
    std::vector<double> ref;
    for (float v : x) ref.push_back(c.ref(v));
    auto got = c.op(Tensor::from_host(device(), x, {static_cast<std::int64_t>(n)})).to_vector();
    EXPECT_TRUE(close(got, ref, c.rtol, c.atol)) << c.name << " n=" << n;
  }
  // Non-contiguous input: a transposed, sliced view.
  auto base = uniform(rng, 12 * 17, c.lo, c.hi);
  Tensor t = Tensor::from_host(device(), base, {12, 17}).t().slice(1, 1, 12, 2);
  std::vector<double> ref;
  for (float v : gather_view(base, t)) ref.push_back(c.ref(v));
  EXPECT_TRUE(close(c.op(t).to_vector(), ref, c.rtol, c.atol)) << c.name << " (non-contiguous)";
  // f16 storage: result equals the f32 result rounded to f16 (within one f16 ulp for
  // transcendental ops, whose f32 result may sit on the other side of a rounding boundary).
  auto xh = uniform(rng, 257, c.lo, c.hi);
  Tensor th = Tensor::from_host(device(), xh, {257}, DType::f16);
  Tensor rh = c.op(th);
  EXPECT_EQ(rh.dtype(), DType::f16);
  std::vector<double> refh;
  for (float v : xh) refh.push_back(c.ref(f16_to_f32(f32_to_f16(v))));
  EXPECT_TRUE(close(rh.to_vector(), refh, std::max(c.rtol, 1e-3), std::max(c.atol, 1e-4))) << c.name << " (f16)";
}

INSTANTIATE_TEST_SUITE_P(All, UnaryOps, ::testing::ValuesIn(unary_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

// Every row of the op table (include/gltensor/ops.hpp) has a float64 reference case above.
TEST(UnaryOps, EveryTableRowIsTested) {
  std::vector<std::string> names;
  for (const auto& c : unary_cases()) names.emplace_back(c.name);
#define GLT_CHECK_ROW(name, rule, grad, ...)                           \
  EXPECT_NE(std::find(names.begin(), names.end(), #name), names.end()) \
      << #name << " has no reference case in tests/ops/unary_reference.hpp";
  GLTENSOR_UNARY_OPS(GLT_CHECK_ROW)
#undef GLT_CHECK_ROW
}

TEST(UnaryOps, PredicatesReturnBool) {
  std::vector<float> x = {1.0f, NAN, INFINITY, -INFINITY, 0.0f, -2.5f};
  Tensor t = Tensor::from_host(device(), x, {6});
  EXPECT_EQ(isnan(t).dtype(), DType::bool_);
  EXPECT_EQ(isnan(t).to_int_vector(), (std::vector<int>{0, 1, 0, 0, 0, 0}));
  EXPECT_EQ(isinf(t).to_int_vector(), (std::vector<int>{0, 0, 1, 1, 0, 0}));
  EXPECT_EQ(isfinite(t).to_int_vector(), (std::vector<int>{1, 0, 0, 0, 1, 1}));
  EXPECT_EQ(logical_not(t).to_int_vector(), (std::vector<int>{0, 0, 0, 0, 1, 0}));
}

TEST(UnaryOps, IntegerDtypes) {
  GLT_RNG(rng);
  auto v = uniform_int(rng, 999, -1000, 1000);
  Tensor t = Tensor::from_host(device(), std::span<const std::int32_t>(v), {999});
  auto check = [&](const Tensor& r, DType dt, auto f) {
    EXPECT_EQ(r.dtype(), dt);
    auto got = r.to_vector();
    for (std::size_t i = 0; i < v.size(); ++i) ASSERT_EQ(got[i], static_cast<float>(f(double(v[i])))) << i;
  };
  check(neg(t), DType::i32, [](double x) { return -x; });
  check(abs(t), DType::i32, [](double x) { return std::fabs(x); });
  check(relu(t), DType::i32, [](double x) { return x > 0 ? x : 0; });
  check(clamp(t, -7, 9), DType::i32, [](double x) { return std::clamp(x, -7.0, 9.0); });
  check(sign(t), DType::i32, sgn);
  // float ops promote integer inputs to float32
  Tensor e = sqrt(abs(t));
  EXPECT_EQ(e.dtype(), DType::f32);
  std::vector<double> ref;
  for (int x : v) ref.push_back(std::sqrt(std::fabs(double(x))));
  EXPECT_TRUE(close(e.to_vector(), ref, 1e-6, 0));
}

// ---- binary ----

struct BinaryCase {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> op;
  std::function<double(double, double)> ref;
  float lo, hi;
  double rtol, atol;
  bool bool_result = false;
};

double py_mod(double a, double b) {
  if (b == 0 || std::isinf(a) || std::isnan(a) || std::isnan(b)) return NAN;
  double r = std::fmod(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

std::vector<BinaryCase> binary_cases() {
  return {
      {"add", [](auto& a, auto& b) { return add(a, b); }, [](double a, double b) { return double(float(a + b)); }, -5,
       5, 0, 0},
      {"add_alpha", [](auto& a, auto& b) { return add(a, b, 2.5); }, [](double a, double b) { return a + 2.5 * b; }, -5,
       5, 1e-6, 1e-6},
      {"sub", [](auto& a, auto& b) { return sub(a, b); }, [](double a, double b) { return double(float(a - b)); }, -5,
       5, 0, 0},
      {"mul", [](auto& a, auto& b) { return mul(a, b); }, [](double a, double b) { return double(float(a * b)); }, -5,
       5, 0, 0},
      {"div", [](auto& a, auto& b) { return div(a, b); }, [](double a, double b) { return a / b; }, 0.5f, 5, 1e-6, 0},
      {"pow", [](auto& a, auto& b) { return pow(a, b); }, [](double a, double b) { return std::pow(a, b); }, 0.1f, 4,
       4e-5, 1e-6},
      {"maximum", [](auto& a, auto& b) { return maximum(a, b); },
       [](double a, double b) { return (std::isnan(a) || std::isnan(b)) ? NAN : std::max(a, b); }, -5, 5, 0, 0},
      {"minimum", [](auto& a, auto& b) { return minimum(a, b); },
       [](double a, double b) { return (std::isnan(a) || std::isnan(b)) ? NAN : std::min(a, b); }, -5, 5, 0, 0},
      {"fmax", [](auto& a, auto& b) { return fmax(a, b); }, [](double a, double b) { return std::fmax(a, b); }, -5, 5,
       0, 0},
      {"fmin", [](auto& a, auto& b) { return fmin(a, b); }, [](double a, double b) { return std::fmin(a, b); }, -5, 5,
       0, 0},
      {"fmod", [](auto& a, auto& b) { return fmod(a, b); }, [](double a, double b) { return std::fmod(a, b); }, 0.5f, 9,
       1e-5, 2e-6},
      {"remainder", [](auto& a, auto& b) { return remainder(a, b); }, py_mod, 0.5f, 9, 1e-5, 2e-6},
      {"atan2", [](auto& a, auto& b) { return atan2(a, b); }, [](double a, double b) { return std::atan2(a, b); }, -5,
       5, 2e-5, 1e-6},
      {"eq", [](auto& a, auto& b) { return eq(a, b); }, [](double a, double b) { return double(a == b); }, -2, 2, 0, 0,
       true},
      {"ne", [](auto& a, auto& b) { return ne(a, b); }, [](double a, double b) { return double(a != b); }, -2, 2, 0, 0,
       true},
      {"lt", [](auto& a, auto& b) { return lt(a, b); }, [](double a, double b) { return double(a < b); }, -2, 2, 0, 0,
       true},
      {"le", [](auto& a, auto& b) { return le(a, b); }, [](double a, double b) { return double(a <= b); }, -2, 2, 0, 0,
       true},
      {"gt", [](auto& a, auto& b) { return gt(a, b); }, [](double a, double b) { return double(a > b); }, -2, 2, 0, 0,
       true},
      {"ge", [](auto& a, auto& b) { return ge(a, b); }, [](double a, double b) { return double(a >= b); }, -2, 2, 0, 0,
       true},
      {"logical_and", [](auto& a, auto& b) { return logical_and(a, b); },
       [](double a, double b) { return double(a != 0 && b != 0); }, -1, 1, 0, 0, true},
      {"logical_or", [](auto& a, auto& b) { return logical_or(a, b); },
       [](double a, double b) { return double(a != 0 || b != 0); }, -1, 1, 0, 0, true},
      {"logical_xor", [](auto& a, auto& b) { return logical_xor(a, b); },
       [](double a, double b) { return double((a != 0) != (b != 0)); }, -1, 1, 0, 0, true},
  };
}

class BinaryOps : public ::testing::TestWithParam<BinaryCase> {};

TEST_P(BinaryOps, BroadcastingAndEdgeShapes) {
  const auto& c = GetParam();
  GLT_RNG(rng);
  // {6, 4} and {1028}: same-shape contiguous operands of 4n elements (quads: the VEC4 path, and
  // for f32 add/sub/mul/div whole-quad arithmetic).
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{5, 7}, {5, 7}}, {{5, 7}, {7}},    {{3, 1, 4}, {1, 5, 1}}, {{}, {4}},
      {{0, 3}, {3}},    {{1}, {1}},       {{1031}, {1}},          {{2, 3, 4, 5}, {3, 1, 5}},
      {{6, 1}, {0}},    {{6, 4}, {6, 4}}, {{1028}, {1028}}};
  for (const auto& [sa, sb] : shapes) {
    auto a = uniform(rng, numel_of(sa), c.lo, c.hi), b = uniform(rng, numel_of(sb), c.lo, c.hi);
    if (c.bool_result) {  // small integers so that equality happens
      for (auto& x : a) x = std::round(x);
      for (auto& x : b) x = std::round(x);
    }
    if (a.size() > 20) sprinkle_specials(a);
    Tensor ta = Tensor::from_host(device(), a, sa), tb = Tensor::from_host(device(), b, sb);
    Tensor r = c.op(ta, tb);
    const Shape out = detail::broadcast_shapes("test", sa, sb);
    ASSERT_EQ(r.shape(), out) << c.name;
    EXPECT_EQ(r.dtype(), c.bool_result ? DType::bool_ : DType::f32);
    std::vector<double> ref(numel_of(out));
    for (std::int64_t i = 0; i < numel_of(out); ++i)
      ref[i] = c.ref(a[bcast_index(out, sa, i)], b[bcast_index(out, sb, i)]);
    EXPECT_TRUE(close(r.to_vector(), ref, c.rtol, c.atol)) << c.name << " " << to_string(sa) << " vs " << to_string(sb);
  }
  // Non-contiguous operands: transposed and strided views.
  auto a = uniform(rng, 9 * 8, c.lo, c.hi), b = uniform(rng, 8 * 20, c.lo, c.hi);
  Tensor va = Tensor::from_host(device(), a, {9, 8}).t();                  // [8, 9]
  Tensor vb = Tensor::from_host(device(), b, {8, 20}).slice(1, 2, 20, 2);  // [8, 9]
  auto ga = gather_view(a, va), gb = gather_view(b, vb);
  std::vector<double> ref(ga.size());
  for (std::size_t i = 0; i < ga.size(); ++i) ref[i] = c.ref(ga[i], gb[i]);
  EXPECT_TRUE(close(c.op(va, vb).to_vector(), ref, c.rtol, c.atol)) << c.name << " (non-contiguous)";
}

INSTANTIATE_TEST_SUITE_P(All, BinaryOps, ::testing::ValuesIn(binary_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(BinaryOps, PowSpecialValues) {
  const float inf = INFINITY;
  std::vector<float> a = {-2, -2, -8, 0, 0, 0, 2, NAN, NAN, 1, -inf, -inf, inf, 0.5f, 2, -1};
  std::vector<float> b = {3, 0.5f, 1.0f / 3, 2, -1, 0, -inf, 0, 1, NAN, 3, -2, -1, inf, inf, inf};
  Tensor r = pow(Tensor::from_host(device(), a, {16}), Tensor::from_host(device(), b, {16}));
  std::vector<double> ref;
  for (int i = 0; i < 16; ++i) ref.push_back(std::pow(double(a[i]), double(b[i])));
  EXPECT_TRUE(close(r.to_vector(), ref, 1e-6, 0));
}

// C's fmod is exact (its result is always representable), also for quotients far beyond 2^24
// where a - b * trunc(a / b) in float32 loses every bit; remainder follows PyTorch (the fmod
// result, plus b when the signs differ). std::fmod in double is exact for float inputs.
TEST(BinaryOps, FmodRemainderExactForLargeQuotients) {
  GLT_RNG(rng);
  const float inf = INFINITY, nan = NAN, den = 1e-40f, mn = 1.17549435e-38f;  // denormal, smallest normal
  std::vector<float> a = {1e8f, -1e8f,  7,    -7,          3.4e38f, -3.4e38f, 1e-30f, den, 5 * den, 1,
                          mn,   3e-39f, 0.0f, -0.0f,       inf,     -inf,     nan,    5,   5,       -5,
                          5,    5,      7,    16777217.0f, 1e30f,   1e30f,    3e-45f, 2,   -2,      1e-45f};
  std::vector<float> b = {3, 3, 0.1f, 0.1f,  3,   -7e-3f, 3e-38f, den, 2 * den, den,    den, -1e-39f, 3, 3, 3,
                          3, 3, 0.0f, -0.0f, inf, -inf,   nan,    7,   3,       1e-30f, -7,  1e-45f,  3, 3, 1e-45f};
  // Random finite floats over the whole exponent range (random bit patterns), denormals included.
  std::uniform_int_distribution<std::uint32_t> bits(0, 0x7f7fffffu);
  for (int i = 0; i < 2000; ++i) {
    std::uint32_t x = bits(rng) | (i & 1 ? 0x80000000u : 0u), y = bits(rng) | (i & 2 ? 0x80000000u : 0u);
    if (i % 5 == 0) y = (y & 0x807fffffu) | (std::min(x >> 23 & 0xffu, 30u) << 23);  // small b: long quotients
    float fx, fy;
    std::memcpy(&fx, &x, 4);
    std::memcpy(&fy, &y, 4);
    a.push_back(fx);
    b.push_back(fy);
  }
  const auto n = static_cast<std::int64_t>(a.size());
  Tensor ta = Tensor::from_host(device(), a, {n}), tb = Tensor::from_host(device(), b, {n});
  auto gf = fmod(ta, tb).to_vector(), gr = remainder(ta, tb).to_vector();
  int bad = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double x = a[i], y = b[i];
    const double rf = (y == 0 || std::isinf(x) || std::isnan(x) || std::isnan(y)) ? NAN : std::fmod(x, y);
    const double rr = py_mod(x, y);
    const bool ok_f =
        std::isnan(rf) ? std::isnan(gf[i]) : (gf[i] == float(rf) && std::signbit(gf[i]) == std::signbit(rf));
    // remainder's r + b is a float add: a device may flush denormals there (GLSL ES allows it),
    // so where one takes part the result may be off by less than the smallest normal float.
    const double tiny = std::numeric_limits<float>::min();
    const bool denormal_add = rr != rf && (std::fabs(rf) < tiny || std::fabs(y) < tiny || std::fabs(rr) < tiny);
    const bool ok_r =
        std::isnan(rr) ? std::isnan(gr[i]) : gr[i] == float(rr) || (denormal_add && std::fabs(gr[i] - rr) < tiny);
    if ((!ok_f || !ok_r) && bad++ < 8)
      ADD_FAILURE() << "a=" << a[i] << " b=" << b[i] << ": fmod " << gf[i] << " (want " << rf << "), remainder "
                    << gr[i] << " (want " << rr << ")";
  }
  EXPECT_EQ(bad, 0);
  // The scalar forms and the examples.
  EXPECT_EQ(fmod(Tensor::from_host(device(), std::vector<float>{1e8f}, {1}), 3.0).to_vector()[0], 1.0f);
  EXPECT_EQ(remainder(Tensor::from_host(device(), std::vector<float>{-1e8f}, {1}), 3.0).to_vector()[0], 2.0f);
  EXPECT_EQ(fmod(7.0, Tensor::from_host(device(), std::vector<float>{0.1f}, {1})).to_vector()[0],
            float(std::fmod(7.0, double(0.1f))));
}

TEST(BinaryOps, ScalarForms) {
  GLT_RNG(rng);
  auto a = uniform(rng, 333, -3, 3);
  Tensor t = Tensor::from_host(device(), a, {3, 111});
  auto check = [&](const Tensor& r, auto f) {
    std::vector<double> ref;
    for (float x : a) ref.push_back(f(double(x)));
    EXPECT_TRUE(close(r.to_vector(), ref, 1e-6, 1e-7));
  };
  check(t + 2.5, [](double x) { return x + 2.5; });
  check(2.5 - t, [](double x) { return 2.5 - x; });
  check(t * -3.0, [](double x) { return -3 * x; });
  check(1.0 / t, [](double x) { return 1 / x; });
  check(pow(t, 2.0), [](double x) { return x * x; });
  check(pow(2.0, t), [](double x) { return std::pow(2.0, x); });
  check(maximum(t, 0.5), [](double x) { return std::max(x, 0.5); });
  check(gt(t, 0.0), [](double x) { return double(x > 0); });
  EXPECT_EQ(gt(t, 0.0).dtype(), DType::bool_);
  // dtype of tensor-scalar ops (torch.result_type)
  Tensor i = arange(device(), 0, 10, 1, DType::i32);
  EXPECT_EQ((i + 2).dtype(), DType::i32);
  EXPECT_EQ((i + 2.5).dtype(), DType::f32);
  EXPECT_EQ((i / 2).dtype(), DType::f32);
  EXPECT_EQ((i / 4).to_vector()[3], 0.75f);
  EXPECT_EQ((Tensor::from_host(device(), a, {333}, DType::f16) * 2).dtype(), DType::f16);
  // Scalars outside int32 (Inf, NaN, 1e10) next to float tensors.
  std::vector<float> sp = {1, INFINITY, -INFINITY, NAN};
  Tensor s = Tensor::from_host(device(), sp, {4});
  EXPECT_EQ(eq(s, INFINITY).to_vector(), (std::vector<float>{0, 1, 0, 0}));
  EXPECT_EQ(lt(s, -INFINITY).to_vector(), (std::vector<float>{0, 0, 0, 0}));
  EXPECT_EQ(ne(s, NAN).to_vector(), (std::vector<float>{1, 1, 1, 1}));
  EXPECT_EQ((s * 0.0 + 1e10).to_vector()[0], 1e10f);
}

TEST(BinaryOps, IntegerArithmeticIsExact) {
  GLT_RNG(rng);
  auto a = uniform_int(rng, 1000, -100000, 100000), b = uniform_int(rng, 1000, -300, 300);
  for (auto& x : b) x = x == 0 ? 7 : x;
  Tensor ta = Tensor::from_host(device(), std::span<const std::int32_t>(a), {1000});
  Tensor tb = Tensor::from_host(device(), std::span<const std::int32_t>(b), {1000});
  auto chk = [&](const Tensor& r, auto f) {
    ASSERT_EQ(r.dtype(), DType::i32);
    auto got = r.to_int_vector();
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(got[i], f(a[i], b[i])) << i << ": " << a[i] << ", " << b[i];
  };
  chk(ta + tb, [](int x, int y) { return x + y; });
  chk(ta - tb, [](int x, int y) { return x - y; });
  chk(ta * tb, [](int x, int y) { return x * y; });
  chk(maximum(ta, tb), [](int x, int y) { return std::max(x, y); });
  chk(fmod(ta, tb), [](int x, int y) { return x % y; });
  chk(remainder(ta, tb), [](int x, int y) {
    int r = x % y;
    return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
  });
  chk(bitwise_xor(ta, tb), [](int x, int y) { return x ^ y; });
  chk(bitwise_and(ta, tb), [](int x, int y) { return x & y; });
}

// Integer fmod / remainder by zero raise (torch: "ZeroDivisionError"): a scalar 0 at the call, a
// zero in a divisor tensor at the next read (flagged on the GPU), naming the op. Integer pow
// with a negative scalar exponent raises (torch); tensor exponents follow torch's integer pow.
TEST(BinaryOps, IntegerDivisionByZeroAndNegativePowers) {
  auto it = [](std::vector<std::int32_t> v) {
    const auto n = static_cast<std::int64_t>(v.size());
    return Tensor::from_host(device(), std::span<const std::int32_t>(v), {n});
  };
  Tensor a = it({7, -7, 0, 5, -2147483647 - 1}), b0 = it({2, 0, 3, -1, 5}), b = it({2, -3, 3, -1, -1});
  auto expect_zero_division = [](const std::function<Tensor()>& f, const char* op) {
    try {
      f().to_int_vector();
      ADD_FAILURE() << op << ": no error";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("gltensor::") + op), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("division by zero"), std::string::npos) << e.what();
    }
  };
  expect_zero_division([&] { return fmod(a, b0); }, "fmod");
  expect_zero_division([&] { return remainder(a, b0); }, "remainder");
  expect_zero_division([&] { return remainder(5.0, b0); }, "remainder");
  expect_zero_division([&] { return fmod(a.to(DType::u8), b0.to(DType::u8)); }, "fmod");
  expect_zero_division([&] { return fmod(a, 0.0); }, "fmod");
  expect_zero_division([&] { return remainder(a, 0.0); }, "remainder");
  Tensor a2 = a.clone();
  EXPECT_THROW(fmod_(a2, 0.0), ValueError);
  // The device stays usable; nonzero divisors (INT_MIN % -1 included) are exact.
  EXPECT_EQ(fmod(a, b).to_int_vector(), (std::vector<int>{1, -1, 0, 0, 0}));
  EXPECT_EQ(remainder(a, b).to_int_vector(), (std::vector<int>{1, -1, 0, 0, 0}));
  // An out-of-range index is still an IndexError, not a division by zero.
  EXPECT_THROW(index_select(a, 0, it({9})).to_int_vector(), IndexError);
  // Floats divide by zero into NaN, no error.
  EXPECT_TRUE(std::isnan(fmod(a.to(DType::f32), 0.0).to_vector()[0]));
  // pow: negative scalar exponents on integers raise; tensor exponents: 1^n = 1, (-1)^n = +-1, else 0.
  EXPECT_THROW(pow(a, -1.0), ValueError);
  EXPECT_THROW(pow_(a2, -2.0), ValueError);
  EXPECT_EQ(pow(a, -1.5).dtype(), DType::f32);  // a non-integral exponent promotes to float
  Tensor base = it({2, 1, -1, -1, 0, 3, -2, 5}), ex = it({-1, -3, -3, -2, -1, 2, 3, 0});
  EXPECT_EQ(pow(base, ex).to_int_vector(), (std::vector<int>{0, 1, -1, 1, 0, 9, -8, 1}));
  EXPECT_EQ(pow(base, 2.0).to_int_vector(), (std::vector<int>{4, 1, 1, 1, 0, 9, 4, 25}));
}

TEST(BinaryOps, MixedDtypesPromote) {
  GLT_RNG(rng);
  auto a = uniform(rng, 100, -4, 4);
  auto bi = uniform_int(rng, 100, -4, 4);
  Tensor h = Tensor::from_host(device(), a, {100}, DType::f16);
  Tensor bf = Tensor::from_host(device(), a, {100}, DType::bf16);
  Tensor i = Tensor::from_host(device(), std::span<const std::int32_t>(bi), {100});
  EXPECT_EQ((h + i).dtype(), DType::f16);
  EXPECT_EQ((h + bf).dtype(), DType::f32);
  EXPECT_EQ((i + eq(i, i)).dtype(), DType::i32);
  auto r = (h + bf).to_vector();
  for (int k = 0; k < 100; ++k) ASSERT_EQ(r[k], f16_to_f32(f32_to_f16(a[k])) + bf16_to_f32(f32_to_bf16(a[k])));
  auto hr = (h * h).to_vector();  // f16 * f16 rounds once from the exact f32 product
  for (int k = 0; k < 100; ++k) {
    const float x = f16_to_f32(f32_to_f16(a[k]));
    ASSERT_EQ(hr[k], f16_to_f32(f32_to_f16(x * x))) << k;
  }
  auto br = (bf + 1.0).to_vector();
  for (int k = 0; k < 100; ++k) ASSERT_EQ(br[k], bf16_to_f32(f32_to_bf16(bf16_to_f32(f32_to_bf16(a[k])) + 1.0f))) << k;
}

TEST(BinaryOps, InPlaceAndOutForms) {
  GLT_RNG(rng);
  auto a = uniform(rng, 48), b = uniform(rng, 8);
  Tensor ta = Tensor::from_host(device(), a, {6, 8}), tb = Tensor::from_host(device(), b, {8});
  Tensor keep = ta;
  add_(ta, tb);
  EXPECT_TRUE(keep.shares_storage(ta));
  std::vector<double> ref(48);
  for (int i = 0; i < 48; ++i) ref[i] = double(float(a[i] + b[i % 8]));
  EXPECT_TRUE(close(keep.to_vector(), ref, 0, 0));
  // out= into a strided view of a bigger tensor.
  Tensor big = zeros(device(), {6, 16});
  Tensor view = big.slice(1, 0, 16, 2);
  mul_out(view, ta, tb);
  auto got = big.to_vector();
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 16; ++j) {
      const double want = j % 2 ? 0.0 : double(float(ref[i * 8 + j / 2] * b[j / 2]));
      ASSERT_EQ(got[i * 16 + j], want) << i << "," << j;
    }
  // in-place with an overlapping, differently indexed input: a += a^T
  auto m = uniform(rng, 25);
  Tensor tm = Tensor::from_host(device(), m, {5, 5});
  add_(tm, tm.t());
  auto gm = tm.to_vector();
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 5; ++j) ASSERT_EQ(gm[i * 5 + j], m[i * 5 + j] + m[j * 5 + i]);
  // operators
  Tensor x = Tensor::from_host(device(), a, {48});
  x *= 2.0;
  x -= 1.0;
  for (int i = 0; i < 48; ++i) ref[i] = double(float(float(a[i] * 2.0f) - 1.0f));
  EXPECT_TRUE(close(x.to_vector(), ref, 0, 0));
}

TEST(BinaryOps, ErrorsNameOpShapesAndDtypes) {
  Tensor a = ones(device(), {2, 3}), b = ones(device(), {4});
  try {
    add(a, b);
    FAIL();
  } catch (const ShapeError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("gltensor::add"), std::string::npos) << m;
    EXPECT_NE(m.find("[2, 3]"), std::string::npos) << m;
    EXPECT_NE(m.find("[4]"), std::string::npos) << m;
  }
  Tensor i = zeros(device(), {2, 3}, DType::i32);
  EXPECT_THROW(div_(i, a), DTypeError);
  EXPECT_THROW(add_(i, 0.5), DTypeError);
  Tensor col = ones(device(), {2, 1});
  EXPECT_THROW(add_(col, a), ShapeError);  // in-place result would need a bigger shape
  Tensor wrong = zeros(device(), {3, 2});
  EXPECT_THROW(add_out(wrong, a, a), ShapeError);
  Tensor expanded = zeros(device(), {1, 3}).expand({2, 3});
  EXPECT_THROW(add_out(expanded, a, a), ValueError);
  EXPECT_THROW(bitwise_and(a, a), DTypeError);
  EXPECT_THROW(add(Tensor(), a), ValueError);
  Device other = Device::open();
  EXPECT_THROW(add(a, ones(other, {2, 3})), ValueError);
  EXPECT_THROW(gelu(a, "fast"), ValueError);
  // still usable
  EXPECT_EQ((a + a).to_vector(), std::vector<float>(6, 2.0f));
}

// ---- ternary ----

TEST(TernaryOps, WhereLerpAddcmulClamp) {
  GLT_RNG(rng);
  auto c = uniform(rng, 12), a = uniform(rng, 4), b = uniform(rng, 12 * 4);
  Tensor tc = gt(Tensor::from_host(device(), c, {12, 1}), 0.0);
  Tensor ta = Tensor::from_host(device(), a, {4}), tb = Tensor::from_host(device(), b, {12, 4});
  auto w = where(tc, ta, tb).to_vector();
  auto l = lerp(ta, tb, 0.25).to_vector();
  auto m = addcmul(tb, ta, tb, 0.5).to_vector();
  auto cl = clamp(tb, ta * -0.5, abs(ta) + 0.5).to_vector();
  for (int i = 0; i < 12; ++i)
    for (int j = 0; j < 4; ++j) {
      const int k = i * 4 + j;
      ASSERT_EQ(w[k], c[i] > 0 ? a[j] : b[k]);
      ASSERT_NEAR(l[k], a[j] + 0.25 * (b[k] - a[j]), 1e-6);
      ASSERT_NEAR(m[k], b[k] + 0.5 * a[j] * b[k], 1e-6);
      ASSERT_EQ(cl[k], std::clamp(b[k], -0.5f * a[j], std::fabs(a[j]) + 0.5f));
    }
}

// addcdiv (float64 reference, broadcast, value scale, a zero divisor's Inf), and clamp / where on
// int32 tensors (their int forms of op_clamp_t / op_where): bounds crossing (lo > hi gives hi,
// as torch's clamp), values past both bounds, a broadcast condition. Found by the sabotage audit
// (issue 22): addcdiv and the int clamp had no test, a kernel computing c / b or ignoring hi passed.
TEST(TernaryOps, AddcdivAndIntClampWhere) {
  GLT_RNG(rng);
  auto a = uniform(rng, 6 * 5), b = uniform(rng, 5), c = uniform(rng, 6 * 5);
  for (float& v : c) v = v < 0 ? v - 0.25f : v + 0.25f;  // |c| >= 0.25
  c[7] = 0.0f;                                           // b[2] / 0: +-Inf
  Tensor ta = Tensor::from_host(device(), a, {6, 5}), tb = Tensor::from_host(device(), b, {5}),
         tc = Tensor::from_host(device(), c, {6, 5});
  std::vector<double> ref(a.size());
  for (std::size_t k = 0; k < a.size(); ++k) {
    const double q = c[k] == 0.0f ? std::copysign(HUGE_VAL, double(b[k % 5])) : double(b[k % 5]) / c[k];
    ref[k] = a[k] + -0.75 * q;
  }
  EXPECT_TRUE(close(addcdiv(ta, tb, tc, -0.75).to_vector(), ref, 1e-6, 1e-6)) << "addcdiv";

  std::uniform_int_distribution<int> d(-50, 50);
  const std::int64_t n = 37;
  std::vector<std::int32_t> x(n), lo(n), hi(n), cond(n);
  for (std::int64_t i = 0; i < n; ++i) {
    x[i] = d(rng), lo[i] = d(rng), hi[i] = d(rng), cond[i] = i % 3 == 0 ? 0 : d(rng);
  }
  lo[3] = 10, hi[3] = -10;  // crossed bounds
  x[4] = 1000, lo[4] = -5, hi[4] = 5;
  x[5] = -1000, lo[5] = -5, hi[5] = 5;
  auto up = [&](const std::vector<std::int32_t>& v) {
    return Tensor::from_host(device(), std::span<const std::int32_t>(v), {n});
  };
  Tensor cl = clamp(up(x), up(lo), up(hi)), w = where(up(cond), up(x), up(lo));
  ASSERT_EQ(cl.dtype(), DType::i32);
  ASSERT_EQ(w.dtype(), DType::i32);
  const std::vector<std::int32_t> gc = cl.to_int_vector(), gw = w.to_int_vector();
  for (std::int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(gc[i], std::min(std::max(x[i], lo[i]), hi[i]))
        << "clamp " << x[i] << " to [" << lo[i] << ", " << hi[i] << "]";
    EXPECT_EQ(gw[i], cond[i] != 0 ? x[i] : lo[i]) << "where at " << i;
  }
}

// ---- fill, copy, cast ----

TEST(Creation, FullZerosOnesArange) {
  for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::i32, DType::u8, DType::i8, DType::bool_}) {
    SCOPED_TRACE(dtype_name(dt));
    for (std::int64_t n : {0, 1, 3, 5, 1027}) {
      Tensor f = full(device(), {n}, 3.0, dt);
      EXPECT_EQ(f.dtype(), dt);
      EXPECT_EQ(f.to_vector(), std::vector<float>(n, dt == DType::bool_ ? 1.0f : 3.0f));
      EXPECT_EQ(zeros(device(), {n}, dt).to_vector(), std::vector<float>(n, 0.0f));
      EXPECT_EQ(ones(device(), {n, 1}, dt).to_vector(), std::vector<float>(n, 1.0f));
    }
  }
  EXPECT_EQ(arange(device(), 5).to_vector(), (std::vector<float>{0, 1, 2, 3, 4}));
  EXPECT_EQ(arange(device(), 1, -2, -0.5).to_vector(), (std::vector<float>{1, 0.5f, 0, -0.5f, -1, -1.5f}));
  EXPECT_EQ(arange(device(), 3, 3).numel(), 0);
  EXPECT_EQ(arange(device(), 0, 7, 3, DType::i32).to_int_vector(), (std::vector<int>{0, 3, 6}));
  EXPECT_THROW(arange(device(), 0, 1, 0), ValueError);
  EXPECT_THROW(Tensor::from_host(device(), std::vector<float>(5), {2, 3}), ShapeError);
}

// arange is generated on the device. Float values against the float64 value start + i * step
// rounded to the dtype (PyTorch's CPU arange): within 1 ulp, exact where the float64 value is an
// integer below 2^24 (index tensors). Integer dtypes follow torch: start and step truncated to
// integers, the length ceil((end - start) / step) from the given values, exact.
TEST(Creation, ArangeValuesAgainstFloat64) {
  struct C {
    double start, end, step;
  };
  for (const C& c : std::vector<C>{{0, 5, 1},
                                   {1, -2, -0.5},
                                   {0.1, 1000.3, 0.1},
                                   {-3.7, 5e4, 1.3},
                                   {1e6, -1e6, -0.37},
                                   {-1e7, 7e6, 1},             // i past 2^24, every value exact
                                   {0, 2.86e7, 1.7},           // i past 2^24, non-integer step
                                   {16777215, 16777300, 1},    // values past 2^24 (rounding ties)
                                   {5, 5, 1},                  // empty
                                   {5, 0, 1},                  // empty (numpy; torch raises)
                                   {0, 1, 0.3},                // 4 elements: the VEC4 path
                                   {-1e-30, 1e-30, 3e-31}}) {  // tiny values
    SCOPED_TRACE(std::to_string(c.start) + ", " + std::to_string(c.end) + ", " + std::to_string(c.step));
    const double len = std::ceil((c.end - c.start) / c.step);
    const std::int64_t n = len > 0 ? static_cast<std::int64_t>(len) : 0;
    Tensor t = arange(device(), c.start, c.end, c.step);
    ASSERT_EQ(t.shape(), (Shape{n}));
    ASSERT_EQ(t.dtype(), DType::f32);
    auto got = t.to_vector();
    std::int64_t bad = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const double v = c.start + static_cast<double>(i) * c.step;
      const float want = static_cast<float>(v);
      const bool exact = c.start == std::round(c.start) && c.step == std::round(c.step) && std::fabs(v) < 16777216.0;
      const float ulp = std::nextafter(std::fabs(want), INFINITY) - std::fabs(want);
      const bool ok = exact ? got[i] == want : std::fabs(double(got[i]) - double(want)) <= ulp;
      if (!ok && bad++ < 5) ADD_FAILURE() << "[" << i << "] got " << got[i] << ", want " << want;
    }
    EXPECT_EQ(bad, 0);
    // f16 / bf16: the f32 value rounded to the dtype.
    if (n > 0 && n < 100000)
      for (DType dt : {DType::f16, DType::bf16}) {
        auto h = arange(device(), c.start, c.end, c.step, dt);
        ASSERT_EQ(h.dtype(), dt);
        EXPECT_EQ(h.to_vector(), t.to(dt).to_vector()) << dtype_name(dt);
      }
  }
  // Integer dtypes (torch): truncated start and step, wrapping past the dtype's range.
  EXPECT_EQ(arange(device(), 0, 7, 3, DType::i32).to_int_vector(), (std::vector<int>{0, 3, 6}));
  EXPECT_EQ(arange(device(), 5, -10, -3, DType::i32).to_int_vector(), (std::vector<int>{5, 2, -1, -4, -7}));
  EXPECT_EQ(arange(device(), 0.5, 5, 1.5, DType::i32).to_int_vector(), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(arange(device(), 250, 260, 2, DType::u8).to_int_vector(), (std::vector<int>{250, 252, 254, 0, 2}));
  auto big = arange(device(), -2147483648.0, 2147483647.0, 65536 * 3 + 1, DType::i32).to_int_vector();
  ASSERT_EQ(big.size(), 21846u);
  for (std::size_t i = 0; i < big.size(); ++i)
    ASSERT_EQ(big[i], -2147483648LL + static_cast<std::int64_t>(i) * (65536 * 3 + 1)) << i;
  auto many = arange(device(), 3, 3 + 70001 * 7, 7, DType::i32).to_int_vector();
  ASSERT_EQ(many.size(), 70001u);
  for (std::size_t i = 0; i < many.size(); ++i) ASSERT_EQ(many[i], 3 + 7 * static_cast<int>(i)) << i;
  EXPECT_THROW(arange(device(), 0, 5, 0.5, DType::i32), ValueError);  // step truncates to 0 (torch)
  EXPECT_THROW(arange(device(), 0, 5, 1, DType::bool_), DTypeError);
  EXPECT_THROW(arange(device(), 0, 1, 0), ValueError);
  EXPECT_THROW(arange(device(), 0, NAN, 1), ValueError);
}

// The size limit is checked before anything is allocated (no host copy of the values).
TEST(Creation, HugeArangeIsLimitErrorWithoutHostAllocation) {
  auto peak_kib = [] {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
  };
  const long before = peak_kib();
  // One element past the device's max SSBO block (llvmpipe: 128 MiB; the H100: 2 GiB), then far past.
  const double first = static_cast<double>(device().caps().max_ssbo_block_size / 4 + 1);
  for (double end : {first, 3e9, 1e12, 1e300}) {
    try {
      arange(device(), 0, end);
      ADD_FAILURE() << "arange(0, " << end << ") did not throw";
    } catch (const LimitError& e) {
      EXPECT_NE(std::string(e.what()).find("gltensor::arange"), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "arange(0, " << end << ") threw " << e.what() << " instead of LimitError";
    }
  }
  EXPECT_THROW(arange(device(), 0, 1e12, 1, DType::i32), LimitError);
  EXPECT_LT(peak_kib() - before, 64 * 1024) << "KiB of peak resident memory added by the huge aranges";
  EXPECT_EQ(arange(device(), 4).to_vector(), (std::vector<float>{0, 1, 2, 3}));  // the device is still usable
}

TEST(Creation, CastBetweenAllDtypes) {
  GLT_RNG(rng);
  auto v = uniform(rng, 1001, 0, 200);
  v[0] = 0.0f;
  v[1] = 0.75f;
  v[2] = 199.5f;
  const DType all[] = {DType::f32, DType::f16, DType::bf16, DType::i32, DType::u8, DType::i8, DType::bool_};
  auto host_cast = [](float x, DType to) -> float {
    switch (to) {
      case DType::f32:
        return x;
      case DType::f16:
        return f16_to_f32(f32_to_f16(x));
      case DType::bf16:
        return bf16_to_f32(f32_to_bf16(x));
      case DType::i32:
        return static_cast<float>(static_cast<std::int32_t>(x));
      case DType::u8:
        return static_cast<float>(static_cast<std::uint8_t>(static_cast<std::int32_t>(x)));
      case DType::i8:  // two's complement wrap, as the u8 cast
        return static_cast<float>(static_cast<std::int8_t>(static_cast<std::int32_t>(x)));
      case DType::bool_:
        return x != 0 ? 1.0f : 0.0f;
    }
    return x;
  };
  for (DType from : all)
    for (DType to : all) {
      SCOPED_TRACE(std::string(dtype_name(from)) + " -> " + dtype_name(to));
      Tensor src = Tensor::from_host(device(), v, {1001}, from);
      auto sv = src.to_vector();
      auto got = src.to(to).to_vector();
      for (std::size_t i = 0; i < v.size(); ++i) ASSERT_EQ(got[i], host_cast(sv[i], to)) << i << " value " << sv[i];
      // also through a non-contiguous source
      auto got2 = src.slice(0, 1, 1001, 3).to(to).to_vector();
      for (std::size_t i = 0; i < got2.size(); ++i) ASSERT_EQ(got2[i], host_cast(sv[1 + 3 * i], to));
    }
  // f32 -> f16 rounding, overflow and NaN
  std::vector<float> sp = {65504.0f, 65520.0f, 1e-8f, -2.98e-8f, NAN, -INFINITY, 1.0009765625f + 4.8e-4f};
  auto h = Tensor::from_host(device(), sp, {7}).to(DType::f16).to_vector();
  for (int i = 0; i < 7; ++i) {
    const float want = f16_to_f32(f32_to_f16(sp[i]));
    if (std::isnan(want))
      EXPECT_TRUE(std::isnan(h[i]));
    else
      EXPECT_EQ(h[i], want) << sp[i];
  }
  EXPECT_EQ(h[1], INFINITY);
  EXPECT_EQ(h[0], 65504.0f);
}

TEST(Creation, CopyIntoStridedSubWordViews) {
  GLT_RNG(rng);
  for (DType dt : {DType::f16, DType::bf16, DType::u8, DType::i8, DType::bool_}) {
    SCOPED_TRACE(dtype_name(dt));
    const int n = 1003;
    auto src = uniform(rng, n, 0, 100);
    for (auto& x : src) x = std::floor(x);
    Tensor dst = full(device(), {n, 3}, 5.0, dt);
    Tensor col = dst.select(1, 1);  // stride 3: neighbours share 32-bit words
    col.copy_(Tensor::from_host(device(), src, {n}));
    auto got = dst.to_vector();
    for (int i = 0; i < n; ++i) {
      const float fill = dt == DType::bool_ ? 1.0f : 5.0f;
      const float want = dt == DType::bool_ ? (src[i] != 0 ? 1.0f : 0.0f) : src[i];
      ASSERT_EQ(got[i * 3 + 0], fill) << i;
      ASSERT_EQ(got[i * 3 + 1], want) << i;
      ASSERT_EQ(got[i * 3 + 2], fill) << i;
    }
    // contiguous slice starting at an odd element: partial first and last words
    Tensor mid = dst.view({3 * n}).slice(0, 1, 3 * n - 2);
    mid.fill_(0);
    auto z = dst.view({3 * n}).to_vector();
    for (int i = 0; i < 3 * n; ++i)
      ASSERT_EQ(z[i], (i == 0 || i >= 3 * n - 2) ? (i == 0 ? (dt == DType::bool_ ? 1.0f : 5.0f) : got[i]) : 0.0f) << i;
  }
}

}  // namespace

// Under a loop limit of 9 (cnn28: relu() threw LimitError there; the quad form's loops are 14)
// the elementwise entry points run one element per invocation (4 to 8 loop trips) rather than
// throw: unary (relu contiguous and strided, neg, sigmoid, f16 relu through whole output words),
// binary (add, a scalar mul, gt to bool), ternary (where), fill_, copy_ to f16, arange, and
// relu's gradient, each against float64; past even that form's trips (add at 5): LimitError.
// Sabotage: the one-element fallback removed from launch_elementwise (relu throws LimitError).
TEST(Elementwise, EntryPointsSplitUnderALoopLimitOfNine) {
  GLT_RNG(rng);
  const auto xv = uniform(rng, 7 * 12, -2, 2), yv = uniform(rng, 7 * 12, -2, 2);
  const Tensor x = Tensor::from_host(device(), xv, {7, 12}), y = Tensor::from_host(device(), yv, {7, 12});
  auto map = [&](const std::vector<float>& a, auto f) {
    std::vector<double> r;
    for (float v : a) r.push_back(f(double(v)));
    return r;
  };
  std::vector<float> xt;  // x transposed, [12, 7]
  for (int j = 0; j < 12; ++j)
    for (int i = 0; i < 7; ++i) xt.push_back(xv[i * 12 + j]);
  auto relu_ref = [](double v) { return v > 0 ? v : 0.0; };
  ScopedLoopLimit limit(9);
  EXPECT_TRUE(close(relu(x).to_vector(), map(xv, relu_ref), 0, 0)) << "relu";
  EXPECT_TRUE(close(relu(x.transpose(0, 1)).contiguous().to_vector(), map(xt, relu_ref), 0, 0)) << "strided relu";
  EXPECT_TRUE(close(neg(x).to_vector(), map(xv, [](double v) { return -v; }), 0, 0)) << "neg";
  EXPECT_TRUE(close(sigmoid(x).to_vector(), map(xv, [](double v) { return 1 / (1 + std::exp(-v)); }), 1e-6, 1e-6));
  EXPECT_TRUE(close(relu(x.to(DType::f16)).to(DType::f32).to_vector(),
                    map(x.to(DType::f16).to(DType::f32).to_vector(), relu_ref), 0, 0))
      << "f16 relu";
  std::vector<double> sum, prod, greater, chosen;
  for (std::size_t i = 0; i < xv.size(); ++i) {
    sum.push_back(double(xv[i]) + yv[i]);
    prod.push_back(double(xv[i]) * 3);
    greater.push_back(xv[i] > yv[i] ? 1 : 0);
    chosen.push_back(xv[i] > yv[i] ? xv[i] : yv[i]);
  }
  EXPECT_TRUE(close(add(x, y).to_vector(), sum, 1e-7, 0)) << "add";
  EXPECT_TRUE(close(mul(x, 3.0).to_vector(), prod, 1e-7, 0)) << "mul by a scalar";
  const Tensor g = gt(x, y);
  EXPECT_EQ(g.dtype(), DType::bool_);
  EXPECT_TRUE(close(g.to(DType::f32).to_vector(), greater, 0, 0)) << "gt";
  EXPECT_TRUE(close(where(g, x, y).to_vector(), chosen, 0, 0)) << "where";
  Tensor f = Tensor::empty(device(), {5, 3});
  f.fill_(2.5);
  EXPECT_TRUE(close(f.to_vector(), std::vector<double>(15, 2.5), 0, 0)) << "fill_";
  Tensor h = Tensor::empty(device(), {7, 12}, DType::f16);
  h.copy_(x);
  EXPECT_TRUE(close(h.to(DType::f32).to_vector(),
                    map(x.to(DType::f16).to(DType::f32).to_vector(), [](double v) { return v; }), 0, 0))
      << "copy_ to f16";
  EXPECT_TRUE(close(
      arange(device(), 0.5, 20.5, 0.25).to_vector(),
      [] {
        std::vector<double> r;
        for (int i = 0; i < 80; ++i) r.push_back(0.5 + 0.25 * i);
        return r;
      }(),
      0, 0))
      << "arange";
  Tensor xg = x.clone();
  requires_grad_(xg);
  backward(relu(xg), y);
  std::vector<double> dx;
  for (std::size_t i = 0; i < xv.size(); ++i) dx.push_back(xv[i] > 0 ? yv[i] : 0.0);
  EXPECT_TRUE(close(grad(xg).to_vector(), dx, 0, 0)) << "relu's gradient";
  device().set_loop_limit(5);  // an add's 6 trips (3 operands' offsets): a typed error
  EXPECT_THROW((void)add(x, y), LimitError);
}

// loose12's one-element fallback where the output is a contiguous sub-word dtype and the input a
// strided view (a transpose, 7 x 13: words straddle rows): OUT_WORDS' word of elements (2 or 4
// elements, each with the strided operand's offsets: 18 or 36 trips) passes a loop limit of 9,
// one element per invocation (8 trips) does not; those elements are then stored one at a time into
// words that neighbouring invocations share. f16, bf16, u8, i8 and bool outputs of fresh random
// integers (exact in each dtype) against the host's transpose.
// Sabotage: OUT_WORDS kept under one_element in plan_elementwise (LimitError from the copies).
TEST(Elementwise, SubWordOutputsOfStridedInputsUnderALoopLimitOfNine) {
  GLT_RNG(rng);
  const std::int64_t R = 7, C = 13;
  auto src = uniform(rng, static_cast<std::size_t>(R * C), 0, 100);
  for (auto& v : src) v = std::floor(v);
  src[3] = 0;  // a false for bool
  const Tensor x = Tensor::from_host(device(), src, {R, C});
  for (DType dt : {DType::f16, DType::bf16, DType::u8, DType::i8, DType::bool_}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor dst = Tensor::empty(device(), {C, R}, dt);
    {
      ScopedLoopLimit limit(9);
      dst.copy_(x.transpose(0, 1));
    }
    const std::vector<float> got = dst.to_vector();
    for (std::int64_t j = 0; j < C; ++j)
      for (std::int64_t i = 0; i < R; ++i) {
        const float v = src[static_cast<std::size_t>(i * C + j)];
        ASSERT_EQ(got[static_cast<std::size_t>(j * R + i)], dt == DType::bool_ ? (v != 0 ? 1.0f : 0.0f) : v)
            << "row " << j << " column " << i;
      }
  }
}
