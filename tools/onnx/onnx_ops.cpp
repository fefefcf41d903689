#include "onnx_ops.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace onnx_test {
using namespace gltensor;
using Ts = std::vector<Tensor>;

Attrs::Attrs(const onnx::NodeProto& n) {
  for (const auto& a : n.attribute()) m_[a.name()] = &a;
}
std::int64_t Attrs::i(const std::string& k, std::int64_t def) const { return has(k) ? m_.at(k)->i() : def; }
float Attrs::f(const std::string& k, float def) const { return has(k) ? m_.at(k)->f() : def; }
std::string Attrs::s(const std::string& k, const std::string& def) const { return has(k) ? m_.at(k)->s() : def; }
std::vector<std::int64_t> Attrs::ints(const std::string& k, std::vector<std::int64_t> def) const {
  if (!has(k)) return def;
  return {m_.at(k)->ints().begin(), m_.at(k)->ints().end()};
}
const onnx::TensorProto* Attrs::t(const std::string& k) const { return has(k) ? &m_.at(k)->t() : nullptr; }

namespace {

std::vector<std::int64_t> host_ints(const Tensor& t) {
  auto v = t.to_int_vector();
  return {v.begin(), v.end()};
}
const Tensor& in(const Ts& x, std::size_t i) {
  static const Tensor none;
  return i < x.size() ? x[i] : none;
}
bool present(const Ts& x, std::size_t i) { return i < x.size() && x[i].defined(); }

OpFn unary(Tensor (*f)(const Tensor&)) {
  return [f](const Ts& x, const OpContext&) { return Ts{f(x[0])}; };
}
OpFn binary(Tensor (*f)(const Tensor&, const Tensor&)) {
  return [f](const Ts& x, const OpContext&) { return Ts{f(x[0], x[1])}; };
}
OpFn float_only(OpFn f) {
  return [f](const Ts& x, const OpContext& c) {
    for (const auto& t : x)
      if (t.defined() && !is_floating(t.dtype())) throw Unsupported("integer inputs");
    return f(x, c);
  };
}
// Results keep the input dtype (ONNX ops are type-preserving where torch promotes).
// float scores with integer targets
OpFn float_only2(OpFn f) {
  return [f](const Ts& x, const OpContext& c) {
    if (!is_floating(x[0].dtype())) throw Unsupported("integer inputs");
    return f(x, c);
  };
}
Tensor as(const Tensor& r, DType d) { return r.dtype() == d ? r : r.to(d); }

Tensor variadic(const Ts& x, Tensor (*f)(const Tensor&, const Tensor&)) {
  Tensor r = x[0];
  for (std::size_t i = 1; i < x.size(); ++i) r = f(r, x[i]);
  return r;
}

Dims axes_of(const Ts& x, const OpContext& c, std::size_t input) {
  if (c.attrs.has("axes")) return c.attrs.ints("axes");
  if (present(x, input)) return host_ints(x[input]);
  return {};
}

OpFn reduce_op(const std::string& kind) {
  return [kind](const Ts& x, const OpContext& c) {
    Dims axes = axes_of(x, c, 1);
    const bool keep = c.attrs.i("keepdims", 1) != 0;
    if (axes.empty() && c.attrs.i("noop_with_empty_axes", 0)) return Ts{x[0]};
    const Tensor& t = x[0];
    if (axes.empty())
      for (std::int64_t d = 0; d < t.dim(); ++d) axes.push_back(d);
    Tensor r;
    if (kind == "sum")
      r = as(sum(t, axes, keep), t.dtype());
    else if (kind == "mean")
      r = mean(t, axes, keep);
    else if (kind == "max")
      r = amax(t, axes, keep);
    else if (kind == "min")
      r = amin(t, axes, keep);
    else if (kind == "prod")
      r = as(prod(t, axes, keep), t.dtype());
    else if (kind == "l1")
      r = as(norm(t, 1, axes, keep), t.dtype());
    else if (kind == "l2")
      r = as(norm(t, 2, axes, keep), t.dtype());
    else if (kind == "logsumexp")
      r = logsumexp(t, axes, keep);
    else if (kind == "logsum")
      r = log(sum(t, axes, keep));
    else if (kind == "sumsquare")
      r = as(sum(mul(t, t), axes, keep), t.dtype());
    if (!is_floating(t.dtype()) && (kind == "mean" || kind == "logsumexp" || kind == "logsum"))
      throw Unsupported("integer input");
    return Ts{r};
  };
}

OpFn arg_op(bool is_max) {
  return [is_max](const Ts& x, const OpContext& c) {
    std::int64_t axis = c.attrs.i("axis", 0);
    if (axis < 0) axis += x[0].dim();
    const bool keep = c.attrs.i("keepdims", 1) != 0;
    if (c.attrs.i("select_last_index", 0)) {  // the last maximum = the first one of the flipped dim
      Tensor f = flip(x[0], {axis});
      Tensor i = is_max ? argmax(f, axis, keep) : argmin(f, axis, keep);
      return Ts{sub(static_cast<double>(x[0].size(axis) - 1), i)};
    }
    return Ts{is_max ? argmax(x[0], axis, keep) : argmin(x[0], axis, keep)};
  };
}

OpFn softmax_op(bool log) {
  return [log](const Ts& x, const OpContext& c) {
    const Tensor& t = x[0];
    if (c.opset >= 13) {
      const std::int64_t axis = c.attrs.i("axis", -1);
      return Ts{log ? log_softmax(t, axis) : softmax(t, axis)};
    }
    std::int64_t axis = c.attrs.i("axis", 1);
    if (axis < 0) axis += t.dim();
    std::int64_t a = 1;
    for (std::int64_t d = 0; d < axis; ++d) a *= t.size(d);
    Tensor f = t.reshape({a, -1});
    return Ts{(log ? log_softmax(f, 1) : softmax(f, 1)).reshape(t.shape())};
  };
}

Conv2dOptions conv_options(const OpContext& c, std::int64_t kdims) {
  if (kdims != 2) throw Unsupported("only 2-D convolutions");
  if (c.attrs.s("auto_pad", "NOTSET") != "NOTSET") throw Unsupported("auto_pad " + c.attrs.s("auto_pad", ""));
  Conv2dOptions o;
  auto s = c.attrs.ints("strides", {1, 1}), d = c.attrs.ints("dilations", {1, 1}),
       p = c.attrs.ints("pads", {0, 0, 0, 0});
  o.stride = {s[0], s[1]};
  o.dilation = {d[0], d[1]};
  o.padding = {p[0], p[1], p[2], p[3]};  // ONNX: x1_begin, x2_begin, x1_end, x2_end
  o.groups = c.attrs.i("group", 1);
  return o;
}

Pool2dOptions pool_options(const Tensor& x, const OpContext& c) {
  if (x.dim() != 4) throw Unsupported("only 2-D pooling");
  if (c.attrs.s("auto_pad", "NOTSET") != "NOTSET") throw Unsupported("auto_pad " + c.attrs.s("auto_pad", ""));
  if (c.attrs.i("storage_order", 0) != 0) throw Unsupported("storage_order");
  auto k = c.attrs.ints("kernel_shape"), s = c.attrs.ints("strides", {1, 1}), d = c.attrs.ints("dilations", {1, 1});
  auto p = c.attrs.ints("pads", {0, 0, 0, 0});
  if (p[0] != p[2] || p[1] != p[3]) throw Unsupported("asymmetric pooling pads");
  Pool2dOptions o;
  o.kernel = {k[0], k[1]};
  o.stride = {s[0], s[1]};
  o.dilation = {d[0], d[1]};
  o.padding = {p[0], p[1]};
  o.ceil_mode = c.attrs.i("ceil_mode", 0) != 0;
  o.count_include_pad = c.attrs.i("count_include_pad", 0) != 0;
  return o;
}

DType onnx_dtype(std::int64_t t) {
  switch (t) {
    case onnx::TensorProto::FLOAT:
      return DType::f32;
    case onnx::TensorProto::FLOAT16:
      return DType::f16;
    case onnx::TensorProto::BFLOAT16:
      return DType::bf16;
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::INT64:
      return DType::i32;
    case onnx::TensorProto::UINT8:
      return DType::u8;
    case onnx::TensorProto::BOOL:
      return DType::bool_;
    default:
      throw Unsupported("cast to " + onnx_type_name(static_cast<int>(t)));
  }
}

// ONNX NegativeLogLikelihoodLoss on log-probabilities [N, C, d...] and targets [N, d...], with
// optional class weights, ignore_index and reduction none/sum/mean (mean divides by the summed
// weights of the non-ignored targets).
Tensor nll_onnx(const Tensor& logp, const Tensor& target, const Tensor& weight, const OpContext& c) {
  const std::int64_t C = logp.size(1);
  std::vector<std::int64_t> perm{0};
  for (std::int64_t d = 2; d < logp.dim(); ++d) perm.push_back(d);
  perm.push_back(1);
  Tensor lp = logp.permute(perm).reshape({-1, C});
  Tensor t = target.reshape({-1});
  Tensor valid = ones(t.device(), t.shape(), DType::bool_);
  if (c.attrs.has("ignore_index")) valid = ne(t, static_cast<double>(c.attrs.i("ignore_index", 0)));
  Tensor safe_t = where(valid, t, 0.0).to(DType::i32);
  Tensor w = weight.defined() ? index_select(weight, 0, safe_t) : ones(t.device(), t.shape());
  w = where(valid, w, 0.0);
  Tensor loss = neg(mul(gather(lp, 1, safe_t.unsqueeze(1)).squeeze(1), w));
  const std::string red = c.attrs.s("reduction", "mean");
  if (red == "none") return loss.reshape(target.shape());
  if (red == "sum") return sum(loss);
  return div(sum(loss), sum(w));
}

}  // namespace

const std::map<std::string, OpFn>& op_table() {
  static const std::map<std::string, OpFn> table = [] {
    std::map<std::string, OpFn> m;
    // ---- elementwise ----
    m["Identity"] = [](const Ts& x, const OpContext&) { return Ts{x[0]}; };
    m["Abs"] = unary(abs);
    m["Neg"] = unary(neg);
    m["Sign"] = unary(sign);
    m["Exp"] = float_only(unary(exp));
    m["Log"] = float_only(unary(log));
    m["Sqrt"] = float_only(unary(sqrt));
    m["Reciprocal"] = float_only(unary(reciprocal));
    m["Sin"] = float_only(unary(sin));
    m["Cos"] = float_only(unary(cos));
    m["Tan"] = float_only(unary(tan));
    m["Asin"] = float_only(unary(asin));
    m["Acos"] = float_only(unary(acos));
    m["Atan"] = float_only(unary(atan));
    m["Sinh"] = float_only(unary(sinh));
    m["Cosh"] = float_only(unary(cosh));
    m["Tanh"] = float_only(unary(tanh));
    m["Erf"] = float_only(unary(erf));
    m["Sigmoid"] = float_only(unary(sigmoid));
    m["Relu"] = unary(relu);
    m["Floor"] = float_only(unary(floor));
    m["Ceil"] = float_only(unary(ceil));
    m["Round"] = float_only(unary(round));
    m["Softsign"] = float_only(unary(softsign));
    m["Softplus"] = float_only([](const Ts& x, const OpContext&) { return Ts{softplus(x[0], 1.0, 1e30)}; });
    m["Mish"] = float_only(unary(mish));
    m["HardSwish"] = float_only(unary(hardswish));
    m["IsNaN"] = unary(isnan);
    m["IsInf"] = [](const Ts& x, const OpContext& c) {
      const bool neg_ = c.attrs.i("detect_negative", 1) != 0, pos = c.attrs.i("detect_positive", 1) != 0;
      Tensor r = isinf(x[0]);
      if (!neg_) r = logical_and(r, gt(x[0], 0.0));
      if (!pos) r = logical_and(r, lt(x[0], 0.0));
      return Ts{r};
    };
    m["Not"] = unary(logical_not);
    m["LeakyRelu"] =
        float_only([](const Ts& x, const OpContext& c) { return Ts{leaky_relu(x[0], c.attrs.f("alpha", 0.01f))}; });
    m["Elu"] = float_only([](const Ts& x, const OpContext& c) { return Ts{elu(x[0], c.attrs.f("alpha", 1.0f))}; });
    m["Celu"] = float_only([](const Ts& x, const OpContext& c) { return Ts{celu(x[0], c.attrs.f("alpha", 1.0f))}; });
    m["Selu"] = float_only([](const Ts& x, const OpContext& c) {
      const double a = c.attrs.f("alpha", 1.67326319217681884765625f),
                   g = c.attrs.f("gamma", 1.05070102214813232421875f);
      return Ts{mul(where(gt(x[0], 0.0), x[0], mul(expm1(x[0]), a)), g)};
    });
    m["HardSigmoid"] = float_only([](const Ts& x, const OpContext& c) {
      return Ts{clamp(add(mul(x[0], double(c.attrs.f("alpha", 0.2f))), double(c.attrs.f("beta", 0.5f))), 0.0, 1.0)};
    });
    m["ThresholdedRelu"] = float_only([](const Ts& x, const OpContext& c) {
      return Ts{where(gt(x[0], double(c.attrs.f("alpha", 1.0f))), x[0], 0.0)};
    });
    m["Gelu"] =
        float_only([](const Ts& x, const OpContext& c) { return Ts{gelu(x[0], c.attrs.s("approximate", "none"))}; });
    m["Clip"] = [](const Ts& x, const OpContext& c) {
      Tensor r = x[0];
      if (c.opset < 11) {
        r = clamp(r, c.attrs.f("min", -3.4e38f), c.attrs.f("max", 3.4e38f));
        return Ts{r};
      }
      if (present(x, 1)) r = as(maximum(r, x[1]), x[0].dtype());
      if (present(x, 2)) r = as(minimum(r, x[2]), x[0].dtype());
      return Ts{r};
    };
    // ---- binary ----
    m["Add"] = binary(add);
    m["Sub"] = binary(sub);
    m["Mul"] = binary(mul);
    m["Div"] = [](const Ts& x, const OpContext&) {
      if (is_floating(x[0].dtype())) return Ts{div(x[0], x[1])};
      return Ts{trunc(div(x[0], x[1])).to(x[0].dtype())};  // integer division truncates
    };
    m["Pow"] = [](const Ts& x, const OpContext&) {
      if (!is_floating(x[0].dtype())) throw Unsupported("integer base");
      return Ts{as(pow(x[0], x[1].to(DType::f32)), x[0].dtype())};
    };
    m["Mod"] = [](const Ts& x, const OpContext& c) {
      if (c.attrs.i("fmod", 0)) return Ts{fmod(x[0], x[1])};
      if (is_floating(x[0].dtype())) throw Unsupported("Mod with fmod=0 on floats");
      return Ts{remainder(x[0], x[1])};
    };
    m["Max"] = [](const Ts& x, const OpContext&) { return Ts{variadic(x, maximum)}; };
    m["Min"] = [](const Ts& x, const OpContext&) { return Ts{variadic(x, minimum)}; };
    m["Sum"] = [](const Ts& x, const OpContext&) { return Ts{variadic(x, add)}; };
    m["Mean"] = [](const Ts& x, const OpContext&) { return Ts{div(variadic(x, add), static_cast<double>(x.size()))}; };
    m["Equal"] = binary(eq);
    m["Less"] = binary(lt);
    m["LessOrEqual"] = binary(le);
    m["Greater"] = binary(gt);
    m["GreaterOrEqual"] = binary(ge);
    m["And"] = binary(logical_and);
    m["Or"] = binary(logical_or);
    m["Xor"] = binary(logical_xor);
    m["Where"] = [](const Ts& x, const OpContext&) { return Ts{where(x[0], x[1], x[2])}; };
    // ---- reductions, softmax ----
    m["ReduceSum"] = reduce_op("sum");
    m["ReduceMean"] = reduce_op("mean");
    m["ReduceMax"] = reduce_op("max");
    m["ReduceMin"] = reduce_op("min");
    m["ReduceProd"] = reduce_op("prod");
    m["ReduceL1"] = reduce_op("l1");
    m["ReduceL2"] = reduce_op("l2");
    m["ReduceLogSumExp"] = reduce_op("logsumexp");
    m["ReduceLogSum"] = reduce_op("logsum");
    m["ReduceSumSquare"] = reduce_op("sumsquare");
    m["ArgMax"] = arg_op(true);
    m["ArgMin"] = arg_op(false);
    m["Softmax"] = softmax_op(false);
    m["LogSoftmax"] = softmax_op(true);
    m["CumSum"] = [](const Ts& x, const OpContext& c) {
      if (c.attrs.i("exclusive", 0) || c.attrs.i("reverse", 0)) throw Unsupported("exclusive/reverse CumSum");
      return Ts{as(cumsum(x[0], host_ints(x[1])[0]), x[0].dtype())};
    };
    // ---- linear algebra, NN ----
    m["MatMul"] = [](const Ts& x, const OpContext&) {
      if (!is_floating(x[0].dtype())) throw Unsupported("integer MatMul");
      return Ts{matmul(x[0], x[1])};
    };
    m["Gemm"] = [](const Ts& x, const OpContext& c) {
      return Ts{gemm(x[0], x[1], in(x, 2), c.attrs.f("alpha", 1.0f), c.attrs.f("beta", 1.0f),
                     c.attrs.i("transA", 0) != 0, c.attrs.i("transB", 0) != 0)};
    };
    m["Conv"] = [](const Ts& x, const OpContext& c) {
      if (x[0].dim() != 4) throw Unsupported("only 2-D convolutions");
      return Ts{conv2d(x[0], x[1], in(x, 2), conv_options(c, x[1].dim() - 2))};
    };
    m["ConvTranspose"] = [](const Ts& x, const OpContext& c) {
      if (x[0].dim() != 4) throw Unsupported("only 2-D convolutions");
      if (c.attrs.has("output_shape")) throw Unsupported("output_shape");
      auto op = c.attrs.ints("output_padding", {0, 0});
      return Ts{conv_transpose2d(x[0], x[1], in(x, 2), conv_options(c, 2), {op[0], op[1]})};
    };
    m["MaxPool"] = [](const Ts& x, const OpContext& c) {
      if (c.n_outputs > 1) throw Unsupported("MaxPool indices output");
      return Ts{max_pool2d(x[0], pool_options(x[0], c))};
    };
    m["AveragePool"] = [](const Ts& x, const OpContext& c) { return Ts{avg_pool2d(x[0], pool_options(x[0], c))}; };
    m["GlobalAveragePool"] = [](const Ts& x, const OpContext&) {
      Dims d;
      for (std::int64_t i = 2; i < x[0].dim(); ++i) d.push_back(i);
      return Ts{mean(x[0], d, true)};
    };
    m["GlobalMaxPool"] = [](const Ts& x, const OpContext&) {
      Dims d;
      for (std::int64_t i = 2; i < x[0].dim(); ++i) d.push_back(i);
      return Ts{amax(x[0], d, true)};
    };
    m["BatchNormalization"] = [](const Ts& x, const OpContext& c) {
      if (c.attrs.i("training_mode", 0) || c.n_outputs > 1) throw Unsupported("training-mode BatchNormalization");
      return Ts{batch_norm(x[0], x[3], x[4], x[1], x[2], false, 0.1, c.attrs.f("epsilon", 1e-5f))};
    };
    m["InstanceNormalization"] = [](const Ts& x, const OpContext& c) {
      return Ts{group_norm(x[0], x[0].size(1), x[1], x[2], c.attrs.f("epsilon", 1e-5f))};
    };
    m["LayerNormalization"] = [](const Ts& x, const OpContext& c) {
      std::int64_t axis = c.attrs.i("axis", -1);
      if (axis < 0) axis += x[0].dim();
      const double eps = c.attrs.f("epsilon", 1e-5f);
      Ts out{layer_norm(x[0], x[0].dim() - axis, x[1], in(x, 2), eps)};
      if (c.n_outputs > 1) {  // Mean and InvStdDev, reduced dims kept
        Dims d;
        for (std::int64_t i = axis; i < x[0].dim(); ++i) d.push_back(i);
        out.push_back(mean(x[0], d, true));
        out.push_back(rsqrt(add(var(x[0], d, 0.0, true), eps)));
      }
      return out;
    };
    m["Dropout"] = [](const Ts& x, const OpContext& c) {
      if (present(x, 2) && host_ints(x[2])[0] != 0) throw Unsupported("training-mode Dropout");
      Ts r{x[0]};
      if (c.n_outputs > 1) r.push_back(ones(x[0].device(), x[0].shape(), DType::bool_));
      return r;
    };
    // ---- shape and data movement ----
    m["Reshape"] = [](const Ts& x, const OpContext& c) {
      auto s = host_ints(x[1]);
      const bool allowzero = c.attrs.i("allowzero", 0) != 0;
      for (std::size_t i = 0; i < s.size(); ++i)
        if (s[i] == 0 && !allowzero) s[i] = x[0].size(static_cast<std::int64_t>(i));
      return Ts{x[0].reshape(s)};
    };
    m["Flatten"] = [](const Ts& x, const OpContext& c) {
      std::int64_t axis = c.attrs.i("axis", 1);
      if (axis < 0) axis += x[0].dim();
      std::int64_t a = 1;
      for (std::int64_t d = 0; d < axis; ++d) a *= x[0].size(d);
      return Ts{x[0].reshape({a, x[0].numel() / std::max<std::int64_t>(a, 1)})};
    };
    m["Transpose"] = [](const Ts& x, const OpContext& c) {
      std::vector<std::int64_t> def(static_cast<std::size_t>(x[0].dim()));
      std::iota(def.rbegin(), def.rend(), 0);
      return Ts{x[0].permute(c.attrs.ints("perm", def)).contiguous()};
    };
    m["Squeeze"] = [](const Ts& x, const OpContext& c) {
      Dims axes = axes_of(x, c, 1);
      if (axes.empty()) return Ts{x[0].squeeze()};
      for (auto& a : axes) a = a < 0 ? a + x[0].dim() : a;
      std::sort(axes.rbegin(), axes.rend());
      Tensor r = x[0];
      for (auto a : axes) r = r.squeeze(a);
      return Ts{r};
    };
    m["Unsqueeze"] = [](const Ts& x, const OpContext& c) {
      Dims axes = axes_of(x, c, 1);
      const std::int64_t rank = x[0].dim() + static_cast<std::int64_t>(axes.size());
      for (auto& a : axes) a = a < 0 ? a + rank : a;
      std::sort(axes.begin(), axes.end());
      Tensor r = x[0];
      for (auto a : axes) r = r.unsqueeze(a);
      return Ts{r};
    };
    m["Concat"] = [](const Ts& x, const OpContext& c) { return Ts{concat(x, c.attrs.i("axis", 0))}; };
    m["Split"] = [](const Ts& x, const OpContext& c) {
      const std::int64_t axis = c.attrs.i("axis", 0);
      std::vector<std::int64_t> sizes = c.attrs.ints("split");
      if (present(x, 1)) sizes = host_ints(x[1]);
      std::vector<Tensor> parts;
      if (!sizes.empty()) {
        parts = split(x[0], sizes, axis);
      } else {
        const std::int64_t n = c.attrs.i("num_outputs", static_cast<std::int64_t>(c.n_outputs));
        const std::int64_t len = x[0].size(axis);
        parts = split(x[0], (len + n - 1) / n, axis);
      }
      Ts out;
      for (auto& p : parts) out.push_back(p.contiguous());
      return out;
    };
    m["Slice"] = [](const Ts& x, const OpContext& c) {
      if (c.opset < 10) throw Unsupported("Slice before opset 10");
      auto starts = host_ints(x[1]), ends = host_ints(x[2]);
      std::vector<std::int64_t> axes(starts.size()), steps(starts.size(), 1);
      std::iota(axes.begin(), axes.end(), 0);
      if (present(x, 3)) axes = host_ints(x[3]);
      if (present(x, 4)) steps = host_ints(x[4]);
      Tensor r = x[0];
      for (std::size_t i = 0; i < starts.size(); ++i) {
        if (steps[i] <= 0) throw Unsupported("non-positive Slice steps");
        const std::int64_t a = axes[i] < 0 ? axes[i] + r.dim() : axes[i];
        const std::int64_t n = r.size(a);
        std::int64_t s = starts[i] < 0 ? starts[i] + n : starts[i], e = ends[i] < 0 ? ends[i] + n : ends[i];
        s = std::clamp<std::int64_t>(s, 0, n);
        e = std::clamp<std::int64_t>(e, 0, n);
        r = r.slice(a, s, std::max(s, e), steps[i]);
      }
      return Ts{r.contiguous()};
    };
    m["Gather"] = [](const Ts& x, const OpContext& c) {
      std::int64_t axis = c.attrs.i("axis", 0);
      if (axis < 0) axis += x[0].dim();
      Shape shape(x[0].shape().begin(), x[0].shape().begin() + axis);
      shape.insert(shape.end(), x[1].shape().begin(), x[1].shape().end());
      shape.insert(shape.end(), x[0].shape().begin() + axis + 1, x[0].shape().end());
      return Ts{index_select(x[0], axis, x[1].reshape({-1})).reshape(shape)};
    };
    m["GatherElements"] = [](const Ts& x, const OpContext& c) { return Ts{gather(x[0], c.attrs.i("axis", 0), x[1])}; };
    m["ScatterElements"] = [](const Ts& x, const OpContext& c) {
      const std::string red = c.attrs.s("reduction", "none");
      if (red == "none") return Ts{scatter(x[0], c.attrs.i("axis", 0), x[1], x[2])};
      if (red == "add") return Ts{scatter_add(x[0], c.attrs.i("axis", 0), x[1], x[2])};
      throw Unsupported("ScatterElements reduction " + red);
    };
    m["Tile"] = [](const Ts& x, const OpContext&) { return Ts{tile(x[0], host_ints(x[1]))}; };
    m["Expand"] = [](const Ts& x, const OpContext&) {
      auto s = host_ints(x[1]);
      const std::size_t n = std::max(s.size(), static_cast<std::size_t>(x[0].dim()));
      Shape out(n);
      for (std::size_t i = 0; i < n; ++i) {
        const std::int64_t a = i < n - s.size() ? 1 : s[i - (n - s.size())];
        const std::int64_t b = i < n - x[0].dim() ? 1 : x[0].shape()[i - (n - x[0].dim())];
        out[i] = a == 1 ? b : a;
      }
      return Ts{x[0].expand(out).contiguous()};
    };
    m["Pad"] = [](const Ts& x, const OpContext& c) {
      if (c.opset < 11) throw Unsupported("Pad before opset 11");
      if (present(x, 3)) throw Unsupported("Pad axes input");
      const std::string mode = c.attrs.s("mode", "constant");
      auto p = host_ints(x[1]);
      const std::int64_t r = x[0].dim();
      std::vector<std::int64_t> pads;
      for (std::int64_t d = r - 1; d >= 0; --d) {
        pads.push_back(p[d]);
        pads.push_back(p[d + r]);
      }
      const double v = present(x, 2) ? x[2].to_vector()[0] : 0.0;
      const PadMode pm = mode == "reflect" ? PadMode::reflect : mode == "edge" ? PadMode::replicate : PadMode::constant;
      if (mode != "constant" && mode != "reflect" && mode != "edge") throw Unsupported("Pad mode " + mode);
      return Ts{pad(x[0], pads, pm, v)};
    };
    m["Trilu"] = [](const Ts& x, const OpContext& c) {
      const std::int64_t k = present(x, 1) ? host_ints(x[1])[0] : 0;
      return Ts{c.attrs.i("upper", 1) ? triu(x[0], k) : tril(x[0], k)};
    };
    m["TopK"] = [](const Ts& x, const OpContext& c) {
      std::int64_t axis = c.attrs.i("axis", -1);
      if (axis < 0) axis += x[0].dim();
      if (axis != x[0].dim() - 1) throw Unsupported("TopK on a dim other than the last");
      if (c.attrs.i("sorted", 1) == 0) throw Unsupported("unsorted TopK");
      auto r = topk(x[0], host_ints(x[1])[0], c.attrs.i("largest", 1) != 0);
      return Ts{r.values, r.indices};
    };
    m["Cast"] = [](const Ts& x, const OpContext& c) { return Ts{x[0].to(onnx_dtype(c.attrs.i("to", 1)))}; };
    m["NegativeLogLikelihoodLoss"] =
        float_only2([](const Ts& x, const OpContext& c) { return Ts{nll_onnx(x[0], x[1], in(x, 2), c)}; });
    m["SoftmaxCrossEntropyLoss"] = float_only2([](const Ts& x, const OpContext& c) {
      Tensor lp = log_softmax(x[0], 1);
      Ts out{nll_onnx(lp, x[1], in(x, 2), c)};
      if (c.n_outputs > 1) out.push_back(lp);
      return out;
    });
    m["CastLike"] = [](const Ts& x, const OpContext&) { return Ts{x[0].to(x[1].dtype())}; };
    m["Hardmax"] = [](const Ts& x, const OpContext& c) {
      if (c.opset < 13) throw Unsupported("Hardmax before opset 13");
      std::int64_t axis = c.attrs.i("axis", -1);
      if (axis < 0) axis += x[0].dim();
      Tensor oh = one_hot(argmax(x[0], axis, true), x[0].size(axis)).to(x[0].dtype()).squeeze(axis);  // C last
      std::vector<std::int64_t> perm;
      for (std::int64_t d = 0; d < x[0].dim() - 1; ++d) {
        if (d == axis) perm.push_back(x[0].dim() - 1);
        perm.push_back(d);
      }
      if (axis == x[0].dim() - 1) perm.push_back(x[0].dim() - 1);
      return Ts{oh.permute(perm).contiguous()};
    };
    m["Shape"] = [](const Ts& x, const OpContext& c) {
      const std::int64_t r = x[0].dim();
      std::int64_t b = c.attrs.i("start", 0), e = c.attrs.i("end", r);
      b = std::clamp<std::int64_t>(b < 0 ? b + r : b, 0, r);
      e = std::clamp<std::int64_t>(e < 0 ? e + r : e, 0, r);
      std::vector<std::int32_t> s(x[0].shape().begin() + b, x[0].shape().begin() + std::max(b, e));
      return Ts{
          Tensor::from_host(x[0].device(), std::span<const std::int32_t>(s), {static_cast<std::int64_t>(s.size())})};
    };
    m["Size"] = [](const Ts& x, const OpContext&) {
      return Ts{full(x[0].device(), {}, static_cast<double>(x[0].numel()), DType::i32)};
    };
    m["Range"] = [](const Ts& x, const OpContext&) {
      const auto s = x[0].to_vector()[0], l = x[1].to_vector()[0], d = x[2].to_vector()[0];
      return Ts{arange(x[0].device(), s, l, d, x[0].dtype())};
    };
    m["ConstantOfShape"] = [](const Ts& x, const OpContext& c) {
      const auto s = host_ints(x[0]);
      if (const onnx::TensorProto* v = c.attrs.t("value")) {
        Tensor t = from_proto(x[0].device(), *v);
        return Ts{full(x[0].device(), s, t.to_vector()[0], t.dtype())};
      }
      return Ts{zeros(x[0].device(), s)};
    };
    m["Constant"] = [](const Ts&, const OpContext& c) {
      if (const onnx::TensorProto* v = c.attrs.t("value")) return Ts{from_proto(c.dev, *v)};
      if (c.attrs.has("value_float")) return Ts{full(c.dev, {}, c.attrs.f("value_float", 0))};
      if (c.attrs.has("value_int"))
        return Ts{full(c.dev, {}, static_cast<double>(c.attrs.i("value_int", 0)), DType::i32)};
      if (c.attrs.has("value_ints")) {
        auto v = c.attrs.ints("value_ints");
        std::vector<std::int32_t> w(v.begin(), v.end());
        return Ts{Tensor::from_host(c.dev, std::span<const std::int32_t>(w), {static_cast<std::int64_t>(w.size())})};
      }
      throw Unsupported("Constant with a sparse, string or float-list value");
    };
    return m;
  }();
  return table;
}

}  // namespace onnx_test
