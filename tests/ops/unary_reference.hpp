// Float64 references of the unary ops (test_elementwise, test_elementwise_grads): every row of
// GLTENSOR_UNARY_OPS and every parametric unary op, with the input domain and tolerances.
#pragma once
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "gltensor/gltensor.hpp"

namespace glt_test {

using gltensor::Tensor;

struct UnaryCase {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> ref;
  float lo, hi;
  double rtol, atol;
  /// Domain of the gradient check (lo, hi when both 0): away from where the derivative blows up.
  float glo = 0, ghi = 0;
};

inline double sgn(double x) { return std::isnan(x) ? x : (x > 0) - (x < 0); }
inline double sigm(double x) { return 1.0 / (1.0 + std::exp(-x)); }
inline double softplus_ref(double x) { return x > 20 ? x : std::log1p(std::exp(x)); }

inline std::vector<UnaryCase> unary_cases() {
  const double T = 2e-5, A = 1e-6;
  return {
      {"neg", [](auto& x) { return neg(x); }, [](double x) { return -x; }, -5, 5, 0, 0},
      {"abs", [](auto& x) { return abs(x); }, [](double x) { return std::fabs(x); }, -5, 5, 0, 0},
      {"sign", [](auto& x) { return sign(x); }, sgn, -5, 5, 0, 0},
      {"square", [](auto& x) { return square(x); }, [](double x) { return x * x; }, -5, 5, 1e-7, 0},
      {"exp", [](auto& x) { return exp(x); }, [](double x) { return std::exp(x); }, -10, 10, T, 0},
      {"exp2", [](auto& x) { return exp2(x); }, [](double x) { return std::exp2(x); }, -10, 10, T, 0},
      {"log", [](auto& x) { return log(x); }, [](double x) { return std::log(x); }, 0.01f, 100, T, A, 0.1f, 100},
      {"log2", [](auto& x) { return log2(x); }, [](double x) { return std::log2(x); }, 0.01f, 100, T, A, 0.1f, 100},
      {"log10", [](auto& x) { return log10(x); }, [](double x) { return std::log10(x); }, 0.01f, 100, T, A, 0.1f, 100},
      {"log1p", [](auto& x) { return log1p(x); }, [](double x) { return std::log1p(x); }, -0.9f, 5, T, 1e-7},
      {"expm1", [](auto& x) { return expm1(x); }, [](double x) { return std::expm1(x); }, -3, 3, T, 1e-7},
      {"sqrt", [](auto& x) { return sqrt(x); }, [](double x) { return std::sqrt(x); }, 0, 100, 1e-6, 0, 0.1f, 100},
      {"rsqrt", [](auto& x) { return rsqrt(x); }, [](double x) { return 1 / std::sqrt(x); }, 0.01f, 100, T, 0, 0.1f,
       100},
      {"reciprocal", [](auto& x) { return reciprocal(x); }, [](double x) { return 1 / x; }, 0.1f, 10, 1e-6, 0},
      {"sin", [](auto& x) { return sin(x); }, [](double x) { return std::sin(x); }, -6, 6, T, 2e-6},
      {"cos", [](auto& x) { return cos(x); }, [](double x) { return std::cos(x); }, -6, 6, T, 2e-6},
      {"tan", [](auto& x) { return tan(x); }, [](double x) { return std::tan(x); }, -1.4f, 1.4f, 4e-5, 2e-6},
      {"asin", [](auto& x) { return asin(x); }, [](double x) { return std::asin(x); }, -1, 1, T, A, -0.9f, 0.9f},
      {"acos", [](auto& x) { return acos(x); }, [](double x) { return std::acos(x); }, -1, 1, T, A, -0.9f, 0.9f},
      {"atan", [](auto& x) { return atan(x); }, [](double x) { return std::atan(x); }, -10, 10, T, A},
      {"asinh", [](auto& x) { return asinh(x); }, [](double x) { return std::asinh(x); }, -50, 50, T, A},
      {"acosh", [](auto& x) { return acosh(x); }, [](double x) { return std::acosh(x); }, 1, 50, T, A, 1.1f, 50},
      {"atanh", [](auto& x) { return atanh(x); }, [](double x) { return std::atanh(x); }, -1, 1, 4e-5, A, -0.9f, 0.9f},
      {"sinh", [](auto& x) { return sinh(x); }, [](double x) { return std::sinh(x); }, -5, 5, T, A},
      {"cosh", [](auto& x) { return cosh(x); }, [](double x) { return std::cosh(x); }, -5, 5, T, A},
      {"tanh", [](auto& x) { return tanh(x); }, [](double x) { return std::tanh(x); }, -5, 5, T, A},
      {"erf", [](auto& x) { return erf(x); }, [](double x) { return std::erf(x); }, -3, 3, T, A},
      {"erfc", [](auto& x) { return erfc(x); }, [](double x) { return std::erfc(x); }, -3, 3, T, A},
      {"sigmoid", [](auto& x) { return sigmoid(x); }, sigm, -10, 10, T, A},
      {"logsigmoid", [](auto& x) { return logsigmoid(x); },
       [](double x) { return x < 0 ? x - std::log1p(std::exp(x)) : -std::log1p(std::exp(-x)); }, -10, 10, T, A},
      {"relu", [](auto& x) { return relu(x); }, [](double x) { return std::isnan(x) ? x
                                                                      : x > 0       ? x
                                                                                    : 0; }, -5, 5, 0,
       0},
      {"relu6", [](auto& x) { return relu6(x); }, [](double x) { return std::isnan(x) ? x : std::clamp(x, 0.0, 6.0); },
       -8, 8, 0, 0},
      {"selu", [](auto& x) { return selu(x); },
       [](double x) { return 1.0507009873554805 * (x > 0 ? x : 1.6732632423543772 * std::expm1(x)); }, -5, 5, T, A},
      {"silu", [](auto& x) { return silu(x); }, [](double x) { return x / (1 + std::exp(-x)); }, -10, 10, T, A},
      {"mish", [](auto& x) { return mish(x); }, [](double x) { return x * std::tanh(softplus_ref(x)); }, -10, 10, T, A},
      {"hardswish", [](auto& x) { return hardswish(x); }, [](double x) { return x * std::clamp(x + 3, 0.0, 6.0) / 6; },
       -5, 5, 1e-6, 1e-7},
      {"hardsigmoid", [](auto& x) { return hardsigmoid(x); },
       [](double x) { return std::isnan(x) ? x : std::clamp(x + 3, 0.0, 6.0) / 6; }, -5, 5, 1e-6, 1e-7},
      {"softsign", [](auto& x) { return softsign(x); }, [](double x) { return x / (1 + std::fabs(x)); }, -5, 5, 1e-6,
       0},
      {"floor", [](auto& x) { return floor(x); }, [](double x) { return std::floor(x); }, -5, 5, 0, 0},
      {"ceil", [](auto& x) { return ceil(x); }, [](double x) { return std::ceil(x); }, -5, 5, 0, 0},
      {"round", [](auto& x) { return round(x); }, [](double x) { return std::nearbyint(x); }, -5, 5, 0, 0},
      {"trunc", [](auto& x) { return trunc(x); }, [](double x) { return std::trunc(x); }, -5, 5, 0, 0},
      {"frac", [](auto& x) { return frac(x); }, [](double x) { return x - std::trunc(x); }, -5, 5, 0, 1e-7},
      {"gelu", [](auto& x) { return gelu(x); }, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); },
       -5, 5, T, A},
      {"gelu_tanh", [](auto& x) { return gelu(x, "tanh"); },
       [](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }, -5, 5, T,
       A},
      {"leaky_relu", [](auto& x) { return leaky_relu(x, 0.2); }, [](double x) { return x > 0 ? x : 0.2 * x; }, -5, 5,
       1e-7, 0},
      {"elu", [](auto& x) { return elu(x, 1.5); }, [](double x) { return x > 0 ? x : 1.5 * std::expm1(x); }, -5, 5, T,
       A},
      {"celu", [](auto& x) { return celu(x, 2.0); },
       [](double x) { return std::max(0.0, x) + std::min(0.0, 2.0 * std::expm1(x / 2.0)); }, -5, 5, T, A},
      {"softplus", [](auto& x) { return softplus(x, 2.0, 10.0); },
       [](double x) { return 2 * x > 10 ? x : std::log1p(std::exp(2 * x)) / 2; }, -8, 8, T, A},
      {"hardtanh", [](auto& x) { return hardtanh(x, -2, 3); },
       [](double x) { return std::isnan(x) ? x : std::clamp(x, -2.0, 3.0); }, -5, 5, 0, 0},
      {"clamp", [](auto& x) { return clamp(x, -1.5, 0.5); },
       [](double x) { return std::isnan(x) ? x : std::clamp(x, -1.5, 0.5); }, -5, 5, 0, 0},
      {"clamp_min", [](auto& x) { return clamp_min(x, 0.25); },
       [](double x) { return std::isnan(x) ? x : std::max(x, 0.25); }, -5, 5, 0, 0},
      {"clamp_max", [](auto& x) { return clamp_max(x, 0.25); },
       [](double x) { return std::isnan(x) ? x : std::min(x, 0.25); }, -5, 5, 0, 0},
      {"shrink", [](auto& x) { return shrink(x, 1.5, 0.25); },
       [](double x) { return x < -1.5  ? x + 0.25
                             : x > 1.5 ? x - 0.25
                                       : 0.0; }, -5, 5, 1e-7, 0},
  };
}

}  // namespace glt_test
