// Weight-only quantization: quantize / dequantize (glsl/ops/quant.comp) and the quantized linear
// op (glsl/ops/qlinear.comp: GEMV for decode, GEMM for prefill, K split within the loop limit),
// with its autograd node (gradients to x and bias; the weight is frozen). Layout and sources in
// include/gltensor/quant.hpp.
#include "gltensor/quant.hpp"

#include <algorithm>

#include "gltensor/autograd.hpp"
#include "gltensor/linalg.hpp"
#include "gltensor/ops.hpp"
#include "gltensor/reduce.hpp"
#include "ops/quant_plan.hpp"
#include "ops/quant_variants.hpp"
#include "runtime/codegen.hpp"
#include "runtime/launch.hpp"
#include "runtime/settings.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {
using namespace detail;

namespace {

// Uniforms of quant.comp.
struct QuantParams {
  std::int64_t N, K, Kb;
  void set(Uniforms& u) const {
    u.u32("u_N", N);
    u.u32("u_K", K);
    u.u32("u_Kb", Kb);
  }
};

// Uniforms of qlinear.comp for one launch over K blocks [b0, b1).
struct QLinearParams {
  std::int64_t M, N, K, Kb, b0, b1;
  bool accumulate;
  void set(Uniforms& u) const {
    u.u32("u_M", M);
    u.u32("u_N", N);
    u.u32("u_K", K);
    u.u32("u_Kb", Kb);
    u.u32("u_b0", b0);
    u.u32("u_b1", b1);
    u.u32("u_accumulate", accumulate ? 1 : 0);
  }
};

std::string shape_of(const QuantizedWeight& w) {
  return std::string(quant_format_name(w.format)) + " weight [" + std::to_string(w.out_features) + ", " +
         std::to_string(w.in_features) + "]";
}

void check_weight(const char* op, const QuantizedWeight& w) {
  const std::int64_t Kb = w.padded_in() / 32;
  const Shape data = w.format == QuantFormat::int4 ? Shape{w.out_features, Kb * 16} : Shape{w.out_features, Kb * 32};
  const Shape scales = w.format == QuantFormat::int4 ? Shape{w.out_features, Kb} : Shape{w.out_features};
  if (!w.data.defined() || !w.scales.defined() || w.data.dtype() != DType::u8 || w.scales.dtype() != DType::f16 ||
      w.data.shape() != data || w.scales.shape() != scales ||
      (w.data.numel() > 0 && (!w.data.is_contiguous() || w.data.offset() != 0)) ||
      (w.scales.numel() > 0 && (!w.scales.is_contiguous() || w.scales.offset() != 0)))
    throw ValueError(std::string("gltensor::") + op + ": the " + shape_of(w) + " needs contiguous uint8 data " +
                     to_string(data) + " and float16 scales " + to_string(scales) + ", got " +
                     (w.data.defined() ? w.data.repr() : "none") + " and " +
                     (w.scales.defined() ? w.scales.repr() : "none"));
}

// y (f32 [M, N], contiguous) = x (f32 [M, K], contiguous) @ dequant(W)^T + bias.
Tensor qlinear_launch(DeviceImpl& dev, const Tensor& x, const QuantizedWeight& w, const Tensor& bias) {
  const char* op = "quantized_linear";
  const std::int64_t M = x.size(0), N = w.out_features, K = w.in_features, Kb = w.padded_in() / 32;
  Tensor y = alloc(dev, {M, N}, DType::f32, op);
  if (M == 0 || N == 0) return y;
  if (K == 0) {  // an empty sum: the bias, or zeros
    y.fill_(0.0);
    return bias.defined() ? add(y, bias) : y;
  }
  const QLinearPlan p = plan_qlinear(M, K, dev.adapter().software, dev.loop_budget(), settings().qlinear_kernel,
                                     settings().qlinear_gemv, N);
  if (qlinear_loops(p, 1) > dev.loop_budget())
    throw LimitError("gltensor::quantized_linear: x [" + std::to_string(M) + ", " + std::to_string(K) + "] with the " +
                     shape_of(w) + " needs " + std::to_string(qlinear_loops(p, 1)) +
                     " loop iterations per invocation for one block of 32 columns; the device allows " +
                     std::to_string(dev.loop_budget()));
  QLinearVariant v;
  v.format = w.format, v.gemv = p.gemv, v.serial = p.serial, v.x_vec4 = p.gemv && K % 4 == 0;
  v.bias = bias.defined(), v.mt = p.mt, v.rows = p.rows, v.tpr = p.tpr, v.words = p.words, v.unroll = p.unroll;
  v.mantissa = p.mantissa && w.format == QuantFormat::int4;
  v.pairs = p.pairs && w.format == QuantFormat::int4;
  for (std::int64_t b0 = 0; b0 < Kb; b0 += p.blocks_per_launch) {
    const std::int64_t b1 = std::min(Kb, b0 + p.blocks_per_launch);
    Launch launch(dev, op);
    launch.program(v.kFile, v.defines(), {p.local}).write(y).read(x).read(w.data).read(w.scales);
    if (bias.defined()) launch.read(bias);
    launch.params(QLinearParams{M, N, K, Kb, b0, b1, b0 > 0});
    launch.loop_iterations(qlinear_loops(p, b1 - b0));
    const std::int64_t features = (N + p.rows - 1) / p.rows;  // per group (GEMV) or invocation (SERIAL)
    const std::int64_t groups = p.local / p.tpr;              // GEMV: groups per workgroup
    if (p.serial)
      launch.groups(static_cast<std::uint64_t>((features + p.local - 1) / p.local),
                    static_cast<std::uint64_t>((M + p.mt - 1) / p.mt));
    else if (p.gemv)
      launch.groups(static_cast<std::uint64_t>((features + groups - 1) / groups),
                    static_cast<std::uint64_t>((M + p.mt - 1) / p.mt));
    else
      launch.groups(static_cast<std::uint64_t>((N + 63) / 64), static_cast<std::uint64_t>((M + 63) / 64));
  }
  return y;
}

}  // namespace

const char* quant_format_name(QuantFormat f) { return f == QuantFormat::int4 ? "int4" : "int8"; }

QuantFormat quant_format_from_name(const std::string& name) {
  if (name == "int8") return QuantFormat::int8;
  if (name == "int4") return QuantFormat::int4;
  throw ValueError("gltensor: unknown quantization format '" + name + "' (int8, int4)");
}

std::int64_t QuantizedWeight::nbytes() const {
  return (data.defined() ? data.numel() : 0) + 2 * (scales.defined() ? scales.numel() : 0);
}

QuantizedWeight quantize(const Tensor& weight, QuantFormat format) {
  const char* op = "quantize";
  check_defined(op, weight, "weight");
  if (weight.dim() != 2)
    throw ShapeError("gltensor::quantize: expects a weight [out, in], got " + to_string(weight.shape()));
  if (!is_floating(weight.dtype()))
    throw DTypeError(std::string("gltensor::quantize: the weight must be a float tensor, got ") +
                     dtype_name(weight.dtype()));
  DeviceImpl& dev = dev_of(weight);
  Enter guard(dev, op);
  QuantizedWeight q;
  q.format = format;
  q.out_features = weight.size(0);
  q.in_features = weight.size(1);
  const std::int64_t N = q.out_features, K = q.in_features, Kb = q.padded_in() / 32;
  const bool q4 = format == QuantFormat::int4;
  q.data = alloc(dev, {N, q4 ? Kb * 16 : Kb * 32}, DType::u8, op);
  q.scales = alloc(dev, q4 ? Shape{N, Kb} : Shape{N}, DType::f16, op);
  if (N == 0 || Kb == 0) {
    if (N > 0) q.scales.fill_(0.0);
    return q;
  }
  Tensor w;
  {
    NoGradGuard ng;
    w = detach(weight).contiguous();
    if (w.offset() != 0) w = w.clone();
  }
  const QuantVariant v{format, true, w.dtype()};
  Launch launch(dev, op);
  launch.program(v.kFile, v.defines(), {64}).write(q.data).write(q.scales).read(w).params(QuantParams{N, K, Kb});
  if (q4) {
    launch.loop_iterations(60).invocations(static_cast<std::uint64_t>(N * Kb));
  } else {
    const auto per = [](std::int64_t n) { return static_cast<std::uint64_t>((n + 63) / 64); };
    launch.loop_iterations(per(K) + 7 + per(Kb * 8) * 5).groups_1d(static_cast<std::uint64_t>(N));
  }
  return q;
}

Tensor dequantize(const QuantizedWeight& w) {
  const char* op = "dequantize";
  check_weight(op, w);
  DeviceImpl& dev = dev_of(w.data);
  Enter guard(dev, op);
  const std::int64_t N = w.out_features, K = w.in_features;
  Tensor out = alloc(dev, {N, K}, DType::f32, op);
  if (N * K == 0) return out;
  const QuantVariant v{w.format, false, DType::f32};
  Launch launch(dev, op);
  launch.program(v.kFile, v.defines(), {64}).write(out).read(w.data).read(w.scales);
  launch.params(QuantParams{N, K, w.padded_in() / 32})
      .loop_iterations(0)
      .invocations(static_cast<std::uint64_t>(N * K));
  return out;
}

Tensor quantized_linear(const Tensor& x_in, const QuantizedWeight& w, const Tensor& bias_in) {
  const char* op = "quantized_linear";
  check_defined(op, x_in, "x");
  check_weight(op, w);
  if (bias_in.defined())
    check_same_device(op, {&x_in, &w.data, &bias_in});
  else
    check_same_device(op, {&x_in, &w.data});
  if (x_in.dim() < 1 || x_in.size(-1) != w.in_features)
    throw ShapeError("gltensor::quantized_linear: x " + to_string(x_in.shape()) + " must end in in_features " +
                     std::to_string(w.in_features) + " of the " + shape_of(w));
  if (!is_floating(x_in.dtype()) || (bias_in.defined() && !is_floating(bias_in.dtype())))
    throw DTypeError(std::string("gltensor::quantized_linear: x and bias must be float tensors, got ") +
                     dtype_name(x_in.dtype()) +
                     (bias_in.defined() ? std::string(" and ") + dtype_name(bias_in.dtype()) : ""));
  if (bias_in.defined() && bias_in.shape() != Shape{w.out_features})
    throw ShapeError("gltensor::quantized_linear: bias " + to_string(bias_in.shape()) + " must be [" +
                     std::to_string(w.out_features) + "] for the " + shape_of(w));
  DeviceImpl& dev = dev_of(x_in);
  Enter guard(dev, op);
  const std::int64_t K = w.in_features, M = K ? x_in.numel() / K : 0;
  Shape out_shape(x_in.shape().begin(), x_in.shape().end() - 1);
  out_shape.push_back(w.out_features);
  Tensor y;
  {
    NoGradGuard ng;
    // The kernel reads f32 rows from element 0.
    Tensor x = detach(x_in).to(DType::f32).contiguous();
    if (x.offset() != 0) x = x.clone();
    Tensor bias = bias_in.defined() ? detach(bias_in).to(DType::f32).contiguous() : Tensor();
    if (bias.defined() && bias.offset() != 0) bias = bias.clone();
    y = qlinear_launch(dev, x.view({M, K}), w, bias).view(out_shape);
  }
  if (autograd::any_requires_grad({&x_in, &bias_in})) {
    const Shape x_shape = x_in.shape();
    const bool has_bias = bias_in.defined();
    autograd::record(
        y, has_bias ? std::vector<Tensor>{x_in, bias_in} : std::vector<Tensor>{x_in},
        [w, x_shape, has_bias](const Tensor& gy) {
          const Tensor g2 = gy.reshape({-1, w.out_features});
          std::vector<Tensor> g{matmul(g2, dequantize(w)).view(x_shape)};
          if (has_bias) g.push_back(sum(g2, {0}));
          return g;
        },
        op);
  }
  return y;
}

void to_state(const QuantizedWeight& w, const std::string& name, std::map<std::string, Tensor>& tensors,
              std::map<std::string, std::string>& metadata) {
  check_weight("to_state", w);
  tensors[name + ".qdata"] = w.data;
  tensors[name + ".qscales"] = w.scales;
  metadata[name + ".quant"] = quant_format_name(w.format);
  metadata[name + ".in_features"] = std::to_string(w.in_features);
}

bool has_quantized(const std::string& name, const std::map<std::string, std::string>& metadata) {
  return metadata.count(name + ".quant") > 0;
}

QuantizedWeight from_state(const std::string& name, const std::map<std::string, Tensor>& tensors,
                           const std::map<std::string, std::string>& metadata) {
  const std::string where = "gltensor::from_state: quantized weight '" + name + "': ";
  const auto meta = [&](const std::string& key) {
    auto it = metadata.find(name + "." + key);
    if (it == metadata.end()) throw ValueError(where + "no metadata \"" + name + "." + key + "\"");
    return it->second;
  };
  const auto tensor = [&](const std::string& key) {
    auto it = tensors.find(name + "." + key);
    if (it == tensors.end()) throw ValueError(where + "no tensor \"" + name + "." + key + "\"");
    return it->second;
  };
  QuantizedWeight w;
  w.format = quant_format_from_name(meta("quant"));
  const std::string k = meta("in_features");
  try {
    std::size_t used = 0;
    w.in_features = std::stoll(k, &used);
    if (used != k.size() || w.in_features < 0) throw ValueError("");
  } catch (const std::exception&) {
    throw ValueError(where + "in_features \"" + k + "\" is not a non-negative integer");
  }
  w.data = tensor("qdata");
  w.scales = tensor("qscales");
  w.out_features = w.data.dim() == 2 ? w.data.size(0) : -1;
  try {
    check_weight("from_state", w);
  } catch (const ValueError& e) {
    throw ValueError(where + e.what());
  }
  return w;
}

}  // namespace gltensor
