// Elementwise ONNX ops: unary math, activations, binary arithmetic and comparisons, Clip, Where,
// Cast. Binary arithmetic, comparisons, Where, Cast and a few unary ops also run on the host for
// shape subgraphs and constant folding.
#include <cmath>
#include <limits>

#include "gltensor/linalg.hpp"
#include "gltensor/ops.hpp"
#include "model/ops.hpp"

namespace gltensor::model {

namespace {

Tensor as(const Tensor& r, DType d) { return r.dtype() == d ? r : r.to(d); }

std::vector<int> same_as(const CheckCtx& c, std::size_t i) { return {c.elem(i)}; }
std::vector<int> of(int e) { return {e}; }

HostTensor host_map1(const HostTensor& x, int out_elem, const std::function<double(double)>& f) {
  HostTensor r{out_elem, x.shape, {}};
  r.v.resize(x.v.size());
  for (std::size_t i = 0; i < x.v.size(); ++i) r.v[i] = f(x.v[i]);
  host_round(r);
  return r;
}

// Generic N-ary broadcast on the host (Where, variadic Max/Min/Sum).
HostTensor host_fold(Args& a, int out_elem, const std::function<double(double, double)>& f) {
  HostTensor r = a.h(0);
  for (std::size_t i = 1; i < a.size(); ++i)
    if (a.present(i)) r = host_map2(a, r, a.h(i), out_elem, f);
  r.elem = out_elem;
  host_round(r);
  return r;
}

void unary(Registry& m, const std::string& op, Tensor (*f)(const Tensor&), bool float_only,
           std::function<double(double)> host = nullptr) {
  OpDef d;
  if (float_only) d.check = [](const CheckCtx& c) { c.need_float(0); };
  d.run = [f](Args& a) { return Ts{f(a.t(0))}; };
  if (host) d.host = [host](Args& a) { return Hs{host_map1(a.h(0), a.elem(0), host)}; };
  m[op] = std::move(d);
}

void activation(Registry& m, const std::string& op, std::vector<std::string> attrs,
                std::function<Epilogue(const Attrs&)> epi) {
  OpDef d;
  d.attrs = std::move(attrs);
  d.check = [](const CheckCtx& c) { c.need_float(0); };
  d.run = [epi](Args& a) { return Ts{apply_epilogue(a.t(0), epi(a.attrs))}; };
  m[op] = std::move(d);
}

using BinFn = Tensor (*)(const Tensor&, const Tensor&);

// Opsets < 7: broadcast=1 with axis places B's dims at A's dims axis, axis + 1, ...
Tensor legacy_b(Args& a) {
  Tensor b = a.t(1);
  if (a.opset < 7 && a.attrs.i("broadcast", 0) && a.attrs.has("axis")) {
    const std::int64_t rank = static_cast<std::int64_t>(a.shape(0).size());
    const std::int64_t axis = norm_axis(a, a.attrs.i("axis", 0), rank);
    Shape s = b.shape();
    while (static_cast<std::int64_t>(s.size()) + axis < rank) s.push_back(1);
    b = b.reshape(s);
  }
  return b;
}

void check_legacy_broadcast(const CheckCtx& c) {
  if (c.opset() >= 7 && (c.attrs().has("broadcast") || c.attrs().has("axis")))
    c.fail_attr(c.attrs().has("axis") ? "axis" : "broadcast", "an attribute only before opset 7");
}

void binary(Registry& m, const std::string& op, BinFn f, int out_elem, std::function<double(double, double)> host,
            bool float_only = false) {
  OpDef d;
  d.attrs = {"broadcast", "axis"};
  d.check = [float_only](const CheckCtx& c) {
    check_legacy_broadcast(c);
    if (float_only) c.need_float(0);
  };
  d.types = [out_elem](const CheckCtx& c) { return out_elem == kUndefined ? same_as(c, 0) : of(out_elem); };
  d.run = [f, out_elem](Args& a) {
    Tensor r = f(a.t(0), legacy_b(a));
    if (out_elem == kUndefined) r = as(r, a.dtype(0));  // ONNX ops keep their input type
    return Ts{r};
  };
  if (host)
    d.host = [host, out_elem](Args& a) {
      HostTensor b = a.h(1);
      if (a.opset < 7 && a.attrs.i("broadcast", 0) && a.attrs.has("axis")) {  // legacy axis broadcast
        const std::int64_t rank = static_cast<std::int64_t>(a.shape(0).size());
        const std::int64_t axis = norm_axis(a, a.attrs.i("axis", 0), rank);
        while (static_cast<std::int64_t>(b.shape.size()) + axis < rank) b.shape.push_back(1);
      }
      return Hs{host_map2(a, a.h(0), b, out_elem == kUndefined ? a.elem(0) : out_elem, host)};
    };
  m[op] = std::move(d);
}

void variadic(Registry& m, const std::string& op, BinFn f, std::function<double(double, double)> host, bool mean) {
  OpDef d;
  d.run = [f, mean](Args& a) {
    Tensor r = a.t(0);
    for (std::size_t i = 1; i < a.size(); ++i) r = f(r, a.t(i));
    if (mean) r = div(r, static_cast<double>(a.size()));
    return Ts{as(r, a.dtype(0))};
  };
  if (!mean) d.host = [host](Args& a) { return Hs{host_fold(a, a.elem(0), host)}; };
  m[op] = std::move(d);
}

double py_mod(double x, double y) {
  if (y == 0) return 0;
  double r = std::fmod(x, y);
  if (r != 0 && ((r < 0) != (y < 0))) r += y;
  return r;
}

double clip_bound(Args& a, std::size_t i, double def) {
  if (!a.present(i)) return def;
  const HostTensor& h = a.h(i);
  if (h.numel() != 1) a.fail("Clip bound input " + std::to_string(i) + " must have one element");
  return h.v[0];
}

}  // namespace

void register_elementwise_ops(Registry& m) {
  m["Identity"] = OpDef{{}, nullptr, nullptr, [](Args& a) { return Ts{a.t(0)}; }, [](Args& a) { return Hs{a.h(0)}; }};
  unary(m, "Abs", abs, false, [](double x) { return std::fabs(x); });
  unary(m, "Neg", neg, false, [](double x) { return -x; });
  unary(m, "Sign", sign, false, [](double x) { return double((x > 0) - (x < 0)); });
  unary(m, "Exp", exp, true);
  unary(m, "Log", log, true);
  unary(m, "Sqrt", sqrt, true, [](double x) { return std::sqrt(x); });
  unary(m, "Reciprocal", reciprocal, true, [](double x) { return 1.0 / x; });
  unary(m, "Sin", sin, true);
  unary(m, "Cos", cos, true);
  unary(m, "Tan", tan, true);
  unary(m, "Asin", asin, true);
  unary(m, "Acos", acos, true);
  unary(m, "Atan", atan, true);
  unary(m, "Asinh", asinh, true);
  unary(m, "Acosh", acosh, true);
  unary(m, "Atanh", atanh, true);
  m["Shrink"] = OpDef{{"bias", "lambd"},
                      [](const CheckCtx& c) { c.need_float(0); },
                      nullptr,
                      [](Args& a) { return Ts{shrink(a.t(0), a.attrs.f("lambd", 0.5), a.attrs.f("bias", 0.0))}; }};
  unary(m, "Sinh", sinh, true);
  unary(m, "Cosh", cosh, true);
  unary(m, "Tanh", tanh, true);
  unary(m, "Erf", erf, true);
  unary(m, "Sigmoid", sigmoid, true);
  unary(m, "Relu", relu, false, [](double x) { return x > 0 ? x : 0.0; });
  unary(m, "Floor", floor, true, [](double x) { return std::floor(x); });
  unary(m, "Ceil", ceil, true, [](double x) { return std::ceil(x); });
  unary(m, "Round", round, true, [](double x) { return std::nearbyint(x); });
  unary(m, "Softsign", softsign, true);
  unary(m, "Mish", mish, true);
  unary(m, "HardSwish", hardswish, true);
  unary(m, "IsNaN", isnan, false);
  m["IsNaN"].types = [](const CheckCtx&) { return of(kBool); };
  unary(m, "Not", logical_not, false, [](double x) { return double(x == 0); });
  m["Softplus"] = OpDef{
      {}, [](const CheckCtx& c) { c.need_float(0); }, nullptr, [](Args& a) { return Ts{softplus(a.t(0), 1.0, 1e30)}; }};
  m["IsInf"] = OpDef{{"detect_negative", "detect_positive"},
                     nullptr,
                     [](const CheckCtx&) { return of(kBool); },
                     [](Args& a) {
                       const bool n = a.attrs.i("detect_negative", 1) != 0, p = a.attrs.i("detect_positive", 1) != 0;
                       Tensor r = isinf(a.t(0));
                       if (!n) r = logical_and(r, gt(a.t(0), 0.0));
                       if (!p) r = logical_and(r, lt(a.t(0), 0.0));
                       return Ts{r};
                     }};
  activation(m, "LeakyRelu", {"alpha"}, [](const Attrs& t) { return Epilogue::leaky_relu(t.f("alpha", 0.01)); });
  activation(m, "HardSigmoid", {"alpha", "beta"},
             [](const Attrs& t) { return Epilogue::hardsigmoid(t.f("alpha", 0.2), t.f("beta", 0.5)); });
  m["Elu"] = OpDef{{"alpha"},
                   [](const CheckCtx& c) { c.need_float(0); },
                   nullptr,
                   [](Args& a) { return Ts{elu(a.t(0), a.attrs.f("alpha", 1.0))}; }};
  m["Celu"] = OpDef{{"alpha"},
                    [](const CheckCtx& c) { c.need_float(0); },
                    nullptr,
                    [](Args& a) { return Ts{celu(a.t(0), a.attrs.f("alpha", 1.0))}; }};
  m["Selu"] = OpDef{{"alpha", "gamma"},
                    [](const CheckCtx& c) { c.need_float(0); },
                    nullptr,
                    [](Args& a) {
                      const double al = a.attrs.f("alpha", 1.67326319217681884765625),
                                   ga = a.attrs.f("gamma", 1.05070102214813232421875);
                      const Tensor& x = a.t(0);
                      return Ts{mul(where(gt(x, 0.0), x, mul(expm1(x), al)), ga)};
                    }};
  m["ThresholdedRelu"] = OpDef{{"alpha"},
                               [](const CheckCtx& c) { c.need_float(0); },
                               nullptr,
                               [](Args& a) { return Ts{where(gt(a.t(0), a.attrs.f("alpha", 1.0)), a.t(0), 0.0)}; }};
  m["Gelu"] = OpDef{{"approximate"},
                    [](const CheckCtx& c) {
                      c.need_float(0);
                      const std::string s = c.attrs().s("approximate", "none");
                      if (s != "none" && s != "tanh") c.fail_attr("approximate", "expected none or tanh");
                    },
                    nullptr,
                    [](Args& a) { return Ts{gelu(a.t(0), a.attrs.s("approximate", "none"))}; }};
  m["Clip"] = OpDef{{"min", "max"},
                    [](const CheckCtx& c) {
                      if (c.opset() >= 11 && (c.attrs().has("min") || c.attrs().has("max")))
                        c.fail_attr(c.attrs().has("min") ? "min" : "max", "an attribute only before opset 11");
                    },
                    nullptr,
                    [](Args& a) {
                      const Tensor& x = a.t(0);
                      const double inf = std::numeric_limits<double>::infinity();
                      double lo = -inf, hi = inf;
                      if (a.opset < 11) {
                        lo = a.attrs.f("min", -inf);
                        hi = a.attrs.f("max", inf);
                      } else if ((a.present(1) && !a.on_host(1)) || (a.present(2) && !a.on_host(2))) {
                        Tensor r = x;  // bounds computed on the GPU
                        if (a.present(1)) r = as(maximum(r, a.t(1)), x.dtype());
                        if (a.present(2)) r = as(minimum(r, a.t(2)), x.dtype());
                        return Ts{r};
                      } else {
                        lo = clip_bound(a, 1, -inf);
                        hi = clip_bound(a, 2, inf);
                      }
                      if (!is_floating(x.dtype())) {  // integer bounds: the dtype's range
                        const bool i8 = x.dtype() == DType::i8, u8 = x.dtype() == DType::u8;
                        lo = std::max(lo, i8 ? -128.0 : u8 ? 0.0 : double(INT32_MIN));
                        hi = std::min(hi, i8 ? 127.0 : u8 ? 255.0 : double(INT32_MAX));
                      }
                      if (lo > hi) return Ts{full_like(x, hi)};  // ONNX: min > max gives max
                      if (is_floating(x.dtype())) return Ts{apply_epilogue(x, Epilogue::clip(lo, hi))};
                      return Ts{clamp(x, lo, hi)};
                    }};
  // ---- binary ----
  binary(m, "Add", add, kUndefined, [](double x, double y) { return x + y; });
  binary(m, "Sub", sub, kUndefined, [](double x, double y) { return x - y; });
  binary(m, "Mul", mul, kUndefined, [](double x, double y) { return x * y; });
  m["Div"] = OpDef{{},
                   nullptr,
                   nullptr,
                   [](Args& a) {
                     if (is_floating(a.dtype(0))) return Ts{as(div(a.t(0), a.t(1)), a.dtype(0))};
                     return Ts{trunc(div(a.t(0), a.t(1))).to(a.dtype(0))};  // integer division truncates
                   },
                   [](Args& a) {
                     const bool integer = !elem_is_float(a.elem(0));
                     return Hs{host_map2(a, a.h(0), a.h(1), a.elem(0), [integer](double x, double y) {
                       return integer ? (y == 0 ? 0.0 : std::trunc(x / y)) : x / y;
                     })};
                   }};
  m["Pow"] =
      OpDef{{},
            [](const CheckCtx& c) { c.need_float(0); },
            nullptr,
            [](Args& a) {
              const Tensor& x = a.t(0);
              if (a.on_host(1) && a.h(1).numel() == 1) {
                const double e = a.h(1).v[0];
                if (e == 2.0) return Ts{mul(x, x)};
                if (e == 1.0) return Ts{x};
                if (e == 0.5) return Ts{sqrt(x)};
                return Ts{as(pow(x, e), x.dtype())};
              }
              return Ts{as(pow(x, a.t(1).to(DType::f32)), x.dtype())};
            },
            [](Args& a) {
              return Hs{host_map2(a, a.h(0), a.h(1), a.elem(0), [](double x, double y) { return std::pow(x, y); })};
            }};
  m["Mod"] = OpDef{{"fmod"},
                   [](const CheckCtx& c) {
                     if (!c.attrs().i("fmod", 0) && elem_is_float(c.elem(0)))
                       c.fail_attr("fmod", "fmod=0 (integer modulus) on float inputs is not supported");
                   },
                   nullptr,
                   [](Args& a) {
                     if (a.attrs.i("fmod", 0)) return Ts{fmod(a.t(0), a.t(1))};
                     return Ts{remainder(a.t(0), a.t(1))};
                   },
                   [](Args& a) {
                     const bool f = a.attrs.i("fmod", 0) != 0;
                     return Hs{host_map2(a, a.h(0), a.h(1), a.elem(0),
                                         [f](double x, double y) { return f ? std::fmod(x, y) : py_mod(x, y); })};
                   }};
  variadic(
      m, "Max", maximum, [](double x, double y) { return std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y); },
      false);
  variadic(
      m, "Min", minimum, [](double x, double y) { return std::isnan(x) || std::isnan(y) ? NAN : std::min(x, y); },
      false);
  variadic(
      m, "Sum", add, [](double x, double y) { return x + y; }, false);
  variadic(m, "Mean", add, nullptr, true);
  binary(m, "Equal", eq, kBool, [](double x, double y) { return double(x == y); });
  binary(m, "Less", lt, kBool, [](double x, double y) { return double(x < y); });
  binary(m, "LessOrEqual", le, kBool, [](double x, double y) { return double(x <= y); });
  binary(m, "Greater", gt, kBool, [](double x, double y) { return double(x > y); });
  binary(m, "GreaterOrEqual", ge, kBool, [](double x, double y) { return double(x >= y); });
  binary(m, "And", logical_and, kBool, [](double x, double y) { return double(x != 0 && y != 0); });
  binary(m, "Or", logical_or, kBool, [](double x, double y) { return double(x != 0 || y != 0); });
  binary(m, "Xor", logical_xor, kBool, [](double x, double y) { return double((x != 0) != (y != 0)); });
  m["Where"] = OpDef{{},
                     nullptr,
                     [](const CheckCtx& c) { return same_as(c, 1); },
                     [](Args& a) { return Ts{as(where(a.t(0), a.t(1), a.t(2)), a.dtype(1))}; },
                     [](Args& a) {
                       // where(c, x, y) = c * x + (1 - c) * y is wrong for Inf/NaN: pick per element.
                       HostTensor cx = host_map2(a, a.h(0), a.h(1), kFloat, [](double c, double) { return c; });
                       HostTensor sx = host_map2(a, a.h(0), a.h(1), a.elem(1), [](double, double x) { return x; });
                       HostTensor r = host_map2(a, sx, a.h(2), a.elem(1), [](double x, double) { return x; });
                       HostTensor ry = host_map2(a, sx, a.h(2), a.elem(1), [](double, double y) { return y; });
                       HostTensor rc = host_map2(a, cx, a.h(2), kFloat, [](double c, double) { return c; });
                       for (std::size_t i = 0; i < r.v.size(); ++i)
                         if (rc.v[i] == 0) r.v[i] = ry.v[i];
                       return Hs{r};
                     }};
  m["Cast"] = OpDef{{"to", "saturate"},
                    [](const CheckCtx& c) {
                      if (c.attrs().get("to") && c.attrs().get("to")->type != Attr::kInt)
                        c.fail_attr("to", "a string type name (opset < 6) is not supported");
                      const int to = static_cast<int>(c.attrs().i("to", 0));
                      if (!elem_supported(to)) c.fail_attr("to", "cast to " + elem_name(to) + " is not supported");
                    },
                    [](const CheckCtx& c) { return of(static_cast<int>(c.attrs().i("to", 1))); },
                    [](Args& a) { return Ts{a.t(0).to(elem_dtype(static_cast<int>(a.attrs.i("to", 1))))}; },
                    [](Args& a) {
                      HostTensor r = a.h(0);
                      r.elem = static_cast<int>(a.attrs.i("to", 1));
                      host_round(r);
                      return Hs{r};
                    }};
  // BitwiseAnd/Or/Xor/Not (opset 18): integer inputs (uint8, int32 and int64 carried as int32:
  // the low 32 bits of the result are exact).
  auto check_bitwise = [](const CheckCtx& c) {
    for (std::size_t i = 0; i < c.in_elems.size(); ++i)
      if (c.elem(i) != kUndefined && (elem_is_float(c.elem(i)) || c.elem(i) == kBool))
        c.fail(elem_name(c.elem(i)) + " inputs are not supported (integers only)");
  };
  auto host_bits = [](std::int64_t (*f)(std::int64_t, std::int64_t)) {
    return [f](double x, double y) {
      return static_cast<double>(f(static_cast<std::int64_t>(x), static_cast<std::int64_t>(y)));
    };
  };
  binary(m, "BitwiseAnd", bitwise_and, kUndefined,
         host_bits([](std::int64_t x, std::int64_t y) -> std::int64_t { return x & y; }));
  binary(m, "BitwiseOr", bitwise_or, kUndefined,
         host_bits([](std::int64_t x, std::int64_t y) -> std::int64_t { return x | y; }));
  binary(m, "BitwiseXor", bitwise_xor, kUndefined,
         host_bits([](std::int64_t x, std::int64_t y) -> std::int64_t { return x ^ y; }));
  for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"}) {
    m[op].attrs.clear();
    m[op].check = check_bitwise;
  }
  m["BitwiseNot"] = OpDef{{},
                          check_bitwise,
                          nullptr,
                          [](Args& a) {
                            const Tensor& x = a.t(0);  // ~x = x ^ all ones (255 for uint8)
                            return Ts{as(bitwise_xor(x, x.dtype() == DType::u8 ? 255.0 : -1.0), x.dtype())};
                          },
                          [](Args& a) {
                            const bool u8 = a.elem(0) == kUint8;
                            return Hs{host_map1(a.h(0), a.elem(0), [u8](double x) {
                              const std::int64_t v = ~static_cast<std::int64_t>(x);
                              return static_cast<double>(u8 ? (v & 255) : v);
                            })};
                          }};
  for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "Mish"}) m[op].versions = {18};
  // BitShift (11) on uint8, the only unsigned type gltensor carries (uint16/32/64 are refused
  // at load by dtype): in int32, x * 2^s masked to 8 bits (LEFT) or floor(x / 2^s) (RIGHT), the
  // shift s clamped to 8 (every bit shifted out, as numpy's shifts of uint8 give).
  m["BitShift"] = OpDef{{"direction"},
                        [](const CheckCtx& c) {
                          const std::string d = c.attrs().s("direction", "");
                          if (d != "LEFT" && d != "RIGHT") c.fail_attr("direction", "expected LEFT or RIGHT");
                          for (std::size_t i = 0; i < 2; ++i)
                            if (c.elem(i) != kUndefined && c.elem(i) != kUint8)
                              c.fail(elem_name(c.elem(i)) + " inputs are not supported (uint8 only)");
                        },
                        nullptr,
                        [](Args& a) {
                          const Tensor x = a.t(0).to(DType::i32), s = minimum(a.t(1).to(DType::i32), 8.0);
                          const Tensor p = pow(full_like(s, 2.0), s);
                          const Tensor y =
                              a.attrs.s("direction", "") == "LEFT" ? bitwise_and(mul(x, p), 255.0) : floor(div(x, p));
                          return Ts{y.to(DType::u8)};
                        }};
  m["CastLike"] = OpDef{{"saturate"},
                        nullptr,
                        [](const CheckCtx& c) { return same_as(c, 1); },
                        [](Args& a) { return Ts{a.t(0).to(a.dtype(1))}; },
                        [](Args& a) {
                          HostTensor r = a.h(0);
                          r.elem = a.elem(1);
                          host_round(r);
                          return Hs{r};
                        }};
  // Versions 19-21 that only add dtypes (float8, int4, string for Equal), refused by dtype;
  // Cast's saturate applies to float8 only.
  for (const char* op : {"Identity", "Cast", "CastLike"}) m[op].versions = {19, 21};
  m["Equal"].versions = {19};
  for (const char* op : {"IsInf", "IsNaN", "Gelu"}) m[op].versions = {20};
}

}  // namespace gltensor::model
