// Quantized ONNX ops (src/nn/quant_int.hpp for the kernels): QuantizeLinear and DequantizeLinear
// (per-tensor, per-axis, blocked; uint8, int8, and uint4 / int4 carried widened to 8 bits),
// DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv (integer sums in
// int32, then requantization), and the com.microsoft QLinear ops that ONNX Runtime's quantization
// tool writes (QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu, QLinearAveragePool,
// QLinearGlobalAveragePool, QLinearConcat): inputs dequantized, the float op's mapping, the
// result quantized, as ONNX Runtime's reference implementations compute them (in float32).
#include <algorithm>

#include "gltensor/ops.hpp"
#include "model/ops.hpp"
#include "nn/conv_plan.hpp"
#include "nn/quant_int.hpp"

namespace gltensor::model {

namespace {

using detail::QAxis;
using detail::QRange;
using I64s = std::vector<std::int64_t>;

bool is_q8_elem(int e) { return e == kUint8 || e == kInt8 || e == kUint4 || e == kInt4; }

QRange range_of(int elem) {
  switch (elem) {
    case kInt8:
      return {-128, 127};
    case kUint4:
      return QRange::uint4();
    case kInt4:
      return QRange::int4();
    default:
      return {0, 255};
  }
}

void need_q8(const CheckCtx& c, std::size_t i, bool int32_ok = false) {
  const int e = c.elem(i);
  if (e != kUndefined && !is_q8_elem(e) && !(int32_ok && e == kInt32))
    c.fail("input " + std::to_string(i) + " has dtype " + elem_name(e) + ", expected uint8 or int8" +
           (int32_ok ? " or int32" : "") + (c.opset() >= 21 ? " (or int4 / uint4)" : ""));
}

Tensor flat1(const Tensor& t) { return t.dim() == 0 ? t.reshape({1}) : t; }

Ts run_quantize(Args& a) {
  int out = a.wants_output(0) ? a.g.values[a.node.outputs[0]].elem : kUint8;
  const Tensor y = detail::quantize_linear(a.t(0), flat1(a.t(1)), a.present(2) ? flat1(a.t(2)) : Tensor(),
                                           QAxis{a.attrs.i("axis", 1), a.attrs.i("block_size", 0)}, elem_dtype(out),
                                           range_of(out), "QuantizeLinear");
  return Ts{y};
}

Ts run_dequantize(Args& a) {
  Tensor y = detail::dequantize_linear(a.t(0), flat1(a.t(1)), a.present(2) ? flat1(a.t(2)) : Tensor(),
                                       QAxis{a.attrs.i("axis", 1), a.attrs.i("block_size", 0)}, "DequantizeLinear");
  const DType d = a.dtype(1);
  return Ts{d == DType::f32 ? y : y.to(d)};
}

// x_scale * w_scale / y_scale in float32 (ONNX Runtime's multiplier), one value or per channel.
Tensor multiplier(Args& a, std::size_t xs, std::size_t ws, std::size_t ys) {
  return div(mul(flat1(a.t(xs)), flat1(a.t(ws))), flat1(a.t(ys)));
}

I64s ints_or(const Args& a, const char* k, std::size_t r, std::int64_t v) { return a.attrs.ints(k, I64s(r, v)); }

// ConvInteger / QLinearConv's int32 sums of (x - zx) * (w - zw): 1-D and 2-D.
// The integer convolution of inputs xi, zxi, wi, zwi: int32 sums, or with `dq` float32 sums
// dequantized per output channel (detail::conv_dequant).
Tensor int_conv(Args& a, std::size_t xi, std::size_t zxi, std::size_t wi, std::size_t zwi,
                const detail::IntDequant* dq = nullptr, const detail::IntRequant* rq = nullptr) {
  Tensor x = a.t(xi), w = a.t(wi);
  const std::int64_t r = x.dim() - 2;
  if ((r != 1 && r != 2) || w.dim() != x.dim())
    a.fail("x " + to_string(x.shape()) + " and w " + to_string(w.shape()) +
           ": only 1-D and 2-D convolutions are supported");
  const Shape in(x.shape().begin() + 2, x.shape().end());
  const I64s k(w.shape().begin() + 2, w.shape().end());
  const I64s s = ints_or(a, "strides", r, 1), d = ints_or(a, "dilations", r, 1);
  const I64s p = forward_pads(a, in, k, s, d);
  detail::IntConvOptions o;
  o.groups = a.attrs.i("group", 1);
  // quantize_input (fuse_qdq): x is the float input of the QuantizeLinear fused into the QConv
  if (const std::int64_t q = a.node.attrs.i("quantize_input", 0))
    o.quantize_x = true, o.x_type = elem_dtype(static_cast<int>(q));
  if (r == 1) {
    x = x.unsqueeze(2);
    w = w.unsqueeze(2);
    o.stride = {1, s[0]};
    o.dilation = {1, d[0]};
    o.padding = {0, p[0], 0, p[1]};
  } else {
    o.stride = {s[0], s[1]};
    o.dilation = {d[0], d[1]};
    o.padding = {p[0], p[1], p[2], p[3]};
  }
  const Tensor zw = a.present(zwi) ? flat1(a.t(zwi)) : Tensor();
  Tensor y = rq   ? detail::conv_requant(x, w, a.opt(zxi), zw, o, *dq, *rq, "Conv")
             : dq ? detail::conv_dequant(x, w, a.opt(zxi), zw, o, *dq, "Conv")
                  : detail::conv_integer(x, w, a.opt(zxi), zw, o, "ConvInteger");
  return r == 1 ? y.squeeze(2) : y;
}

// The QDQ conv (QConv with y_scale, inputs 7, 8) through Winograd (nn/conv_plan.hpp's
// conv2d_winograd_quant) where qconv_winograd_m takes it: a 2-D 3x3, stride-1, undilated conv of one
// group whose weight, scales, zero points and bias are constants (one scale and zero point each
// for x and y). The filters dequantized and transformed at the node's first run, kept in its
// cache. Undefined where it does not apply (the integer paths then).
Tensor qconv_winograd(Args& a, const detail::IntRequant& rq) {
  const auto constant = [&](std::size_t i) {
    return i < a.node.inputs.size() && a.node.inputs[i] >= 0 &&
           a.g.values[static_cast<std::size_t>(a.node.inputs[i])].constant != nullptr;
  };
  NodeCache* cache = a.cache();
  const Activation act = rq.act.act;  // requant_bounds: none, relu and clip only (as requant_fits)
  if (rq.act.affine() || (act != Activation::none && act != Activation::relu && act != Activation::clip))
    return Tensor();
  if (!cache || a.size() < 8 || a.attrs.i("group", 1) != 1 || !constant(1) || !constant(3) || !constant(4) ||
      !constant(7) || (a.present(2) && !constant(2)) || (a.present(5) && !constant(5)) ||
      (a.present(6) && !constant(6)) || (a.present(8) && !constant(8)))
    return Tensor();
  const Tensor& x = a.t(0);
  const Shape ws = a.shape(3);
  if (x.dim() != 4 || ws.size() != 4 || a.h(1).numel() != 1 || a.h(7).numel() != 1 ||
      (a.present(2) && a.h(2).numel() != 1) || (a.present(8) && a.h(8).numel() != 1))
    return Tensor();
  const I64s s = ints_or(a, "strides", 2, 1), d = ints_or(a, "dilations", 2, 1);
  if (s != I64s{1, 1} || d != I64s{1, 1}) return Tensor();
  const I64s p = forward_pads(a, {x.size(2), x.size(3)}, {ws[2], ws[3]}, s, d);
  Conv2dOptions o;
  o.padding = {p[0], p[1], p[2], p[3]};
  const std::int64_t m = detail::qconv_winograd_m(x, ws, o, rq.dequantize);
  if (m == 0) return Tensor();
  detail::WinogradQuant q;
  const std::int64_t qin = a.node.attrs.i("quantize_input", 0);
  q.x = qin ? DType::f32 : x.dtype();
  q.quantize_x = qin != 0;
  q.x8 = qin ? elem_dtype(static_cast<int>(qin)) : x.dtype();
  if (q.x != x.dtype() || (q.x8 != DType::u8 && q.x8 != DType::i8)) return Tensor();
  q.x_scale = static_cast<float>(a.h(1).v[0]);
  q.x_zero = a.present(2) ? static_cast<std::int32_t>(a.h(2).v[0]) : 0;
  q.y8 = rq.out, q.dequantize = rq.dequantize;
  q.y_scale = static_cast<float>(a.h(7).v[0]);
  q.y_zero = a.present(8) ? static_cast<std::int32_t>(a.h(8).v[0]) : 0;
  const auto [lo, hi] = detail::requant_bounds(rq);
  q.lo = lo, q.hi = hi;
  std::vector<std::int64_t> key{-2, m};  // -2: the dequantized filters' Winograd transform
  const std::vector<Tensor>* u = cache->find(key);
  if (!u) {
    const Tensor wf =
        detail::dequantize_linear(a.t(3), flat1(a.t(4)), a.present(5) ? flat1(a.t(5)) : Tensor(), QAxis{0, 0}, "Conv");
    u = &cache->put(std::move(key), {detail::winograd_filters(wf.to(DType::f32), m)});
  }
  Tensor bias = a.opt(6);
  if (bias.defined()) bias = bias.to(DType::f32);
  return detail::conv2d_winograd_quant(x, (*u)[0], bias, o, m, q);
}

void check_conv(const CheckCtx& c, std::size_t wi) {
  const std::string p = c.attrs().s("auto_pad", "NOTSET");
  if (p != "NOTSET" && p != "SAME_UPPER" && p != "SAME_LOWER" && p != "VALID")
    c.fail_attr("auto_pad", "expected NOTSET, SAME_UPPER, SAME_LOWER or VALID");
  if (const HostTensor* w = c.constant(wi); w && w->shape.size() != 3 && w->shape.size() != 4)
    c.fail(std::to_string(w->shape.size() - 2) + "-D convolution is not supported (1-D and 2-D only)");
}

// A com.microsoft QLinear op as its float op: `qin` lists (x, scale, zero point) input triples,
// the float op's inputs in that order; ys / yz the output's scale and zero point.
Ts qlinear_as_float(Args& a, const std::string& float_op, const std::vector<std::array<std::size_t, 3>>& qin,
                    std::size_t ys, std::size_t yz) {
  std::vector<RtValue> vals(qin.size());
  std::vector<RtValue*> ptrs;
  for (std::size_t i = 0; i < qin.size(); ++i) {
    const auto [x, s, z] = qin[i];
    vals[i].gpu = detail::dequantize_linear(a.t(x), flat1(a.t(s)), a.present(z) ? flat1(a.t(z)) : Tensor(), QAxis{},
                                            a.node.op_type.c_str());
    ptrs.push_back(&vals[i]);
  }
  Args fa(a.dev, a.g, a.node, ptrs, DType::f32);
  const Tensor y = registry().at(float_op).run(fa).at(0);
  const int out = a.g.values[a.node.outputs[0]].elem;
  return Ts{detail::quantize_linear(y, flat1(a.t(ys)), a.present(yz) ? flat1(a.t(yz)) : Tensor(), QAxis{},
                                    elem_dtype(out), range_of(out), a.node.op_type.c_str())};
}

// Registers a com.microsoft QLinear op whose output has input `like`'s type.
void qlinear(Registry& m, const std::string& op, const std::string& float_op, std::vector<std::string> attrs,
             std::vector<std::array<std::size_t, 3>> qin, std::size_t ys, std::size_t yz, std::size_t like) {
  m[op] = OpDef{std::move(attrs),
                [qin, like](const CheckCtx& c) {
                  for (const auto& t : qin) need_q8(c, t[0]);
                  if (c.attrs().i("channels_last", 0)) c.fail_attr("channels_last", "only channels_last=0 (NCHW)");
                  (void)like;
                },
                [like](const CheckCtx& c) { return std::vector<int>{c.elem(like)}; },
                [float_op, qin, ys, yz](Args& a) { return qlinear_as_float(a, float_op, qin, ys, yz); }};
}

}  // namespace

bool microsoft_op(const std::string& op) {
  static const char* ops[] = {"QLinearAdd",       "QLinearMul",         "QLinearSigmoid",
                              "QLinearLeakyRelu", "QLinearAveragePool", "QLinearGlobalAveragePool",
                              "QLinearConcat",    "QuantizeLinear",     "DequantizeLinear"};
  return std::find(std::begin(ops), std::end(ops), op) != std::end(ops);
}

void register_quant_ops(Registry& m) {
  m["QuantizeLinear"] = OpDef{{"axis", "block_size", "output_dtype", "saturate"},
                              [](const CheckCtx& c) {
                                c.need_float(0);
                                const int od = static_cast<int>(c.attrs().i("output_dtype", 0));
                                if (od && !is_q8_elem(od))
                                  c.fail_attr("output_dtype", "only uint8, int8, uint4 and int4 outputs");
                                if (c.has_input(2) && od && c.elem(2) != kUndefined && c.elem(2) != od)
                                  c.fail_attr("output_dtype", "differs from y_zero_point's type");
                                need_q8(c, 2);
                              },
                              [](const CheckCtx& c) {
                                const int od = static_cast<int>(c.attrs().i("output_dtype", 0));
                                return std::vector<int>{c.has_input(2) ? c.elem(2) : od ? od : kUint8};
                              },
                              run_quantize};
  m["QuantizeLinear"].versions = {19, 21};
  m["DequantizeLinear"] = OpDef{{"axis", "block_size"},
                                [](const CheckCtx& c) {
                                  need_q8(c, 0, true);
                                  c.need_float(1);
                                },
                                [](const CheckCtx& c) { return std::vector<int>{c.elem(1)}; },
                                run_dequantize};
  m["DequantizeLinear"].versions = {19, 21};
  m["DynamicQuantizeLinear"] =
      OpDef{{},
            [](const CheckCtx& c) { c.need_float(0); },
            [](const CheckCtx&) {
              return std::vector<int>{kUint8, kFloat, kUint8};
            },
            [](Args& a) {
              const Tensor x = a.t(0).dtype() == DType::f32 ? a.t(0) : a.t(0).to(DType::f32);
              auto [scale, zp] = detail::dynamic_quant_params(x);
              Tensor y = detail::quantize_linear(x, scale, zp, QAxis{}, DType::u8, QRange{}, "DynamicQuantizeLinear");
              return Ts{y, scale.reshape({}), zp.to(DType::u8).reshape({})};
            }};
  m["MatMulInteger"] =
      OpDef{{},
            [](const CheckCtx& c) {
              need_q8(c, 0);
              need_q8(c, 1);
            },
            [](const CheckCtx&) { return std::vector<int>{kInt32}; },
            [](Args& a) { return Ts{detail::matmul_integer(a.t(0), a.t(1), a.opt(2), a.opt(3), "MatMulInteger")}; }};
  const std::vector<std::string> conv_attrs{"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"};
  m["ConvInteger"] = OpDef{conv_attrs,
                           [](const CheckCtx& c) {
                             need_q8(c, 0);
                             need_q8(c, 1);
                             check_conv(c, 1);
                           },
                           [](const CheckCtx&) { return std::vector<int>{kInt32}; },
                           [](Args& a) { return Ts{int_conv(a, 0, 2, 1, 3)}; }};
  // QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp): b_scale per column (N).
  m["QLinearMatMul"] =
      OpDef{{},
            [](const CheckCtx& c) {
              need_q8(c, 0);
              need_q8(c, 3);
            },
            [](const CheckCtx& c) { return std::vector<int>{c.elem(7)}; },
            [](Args& a) {
              const Tensor acc = detail::matmul_integer(a.t(0), a.t(3), a.opt(2), a.opt(5), "QLinearMatMul");
              const Tensor mult = multiplier(a, 1, 4, 6);
              return Ts{detail::requantize(acc, mult, a.opt(7), Tensor(), QAxis{-1, 0}, a.dtype(7), "QLinearMatMul")};
            }};
  // QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B): w_scale per output channel.
  m["QLinearConv"] = OpDef{conv_attrs,
                           [](const CheckCtx& c) {
                             need_q8(c, 0);
                             need_q8(c, 3);
                             check_conv(c, 3);
                           },
                           [](const CheckCtx& c) { return std::vector<int>{c.elem(7)}; },
                           [](Args& a) {
                             const Tensor acc = int_conv(a, 0, 2, 3, 5);
                             const Tensor mult = multiplier(a, 1, 4, 6);
                             return Ts{detail::requantize(acc, mult, a.opt(7), a.present(8) ? flat1(a.t(8)) : Tensor(),
                                                          QAxis{1, 0}, a.dtype(7), "QLinearConv")};
                           }};
  // The planner's QDQ forms (fuse_qdq): (x_q, x_scale, x_zp, w_q, w_scale, w_zp[, bias]) ->
  // float32 int32-sum * (x_scale * w_scale) (+ bias), and DequantizeLinear of a weight kept 8-bit.
  auto float_out = [](const CheckCtx&) { return std::vector<int>{kFloat}; };
  // Both in the integer matmul's epilogue (detail::IntDequant) where it applies. QConv with
  // (y_scale, y_zero_point) as inputs 7, 8: the activation of Node::epilogue and QuantizeLinear
  // after it, 8-bit output (the direct integer convolution's one dispatch where it applies); with
  // the attribute dequantize_output (the 8-bit type), float32: the DequantizeLinear after that;
  // with the attribute quantize_input (the 8-bit type), input 0 is the float input of a
  // QuantizeLinear with x_scale and x_zero_point, quantized in the conv's load where it applies.
  m["gltensor.QConv"] =
      OpDef{conv_attrs, nullptr,
            [](const CheckCtx& c) {
              if (c.n.inputs.size() < 8 || c.attrs().i("dequantize_output", 0)) return std::vector<int>{kFloat};
              return std::vector<int>{c.has_input(8) ? c.elem(8) : kUint8};
            },
            [](Args& a) {
              const detail::IntDequant dq{flat1(a.t(1)), flat1(a.t(4)), a.present(6) ? flat1(a.t(6)) : Tensor(), true};
              if (a.size() < 8) return Ts{int_conv(a, 0, 2, 3, 5, &dq)};
              // dequantize_output (fuse_qdq): float32 output, the 8-bit type in the attribute
              const std::int64_t dq_out = a.node.attrs.i("dequantize_output", 0);
              const int q8 = dq_out ? static_cast<int>(dq_out) : a.g.values[a.node.outputs[0]].elem;
              const detail::IntRequant rq{flat1(a.t(7)),   a.present(8) ? flat1(a.t(8)) : Tensor(),
                                          a.node.epilogue, elem_dtype(q8),
                                          dq_out != 0,     true};  // f32 sums: the QDQ pattern
              Tensor y = qconv_winograd(a, rq);
              if (!y.defined()) y = int_conv(a, 0, 2, 3, 5, &dq, &rq);
              // as DequantizeLinear: y_scale's dtype (float16 scales with ModelOptions::f16_weights)
              return Ts{dq_out && a.dtype(7) != DType::f32 ? y.to(a.dtype(7)) : y};
            }};
  m["gltensor.QMatMul"] = OpDef{{}, nullptr, float_out, [](Args& a) {
                                  const detail::IntDequant dq{flat1(a.t(1)), flat1(a.t(4)), Tensor(), false};
                                  return Ts{detail::matmul_dequant(a.t(0), a.t(3), a.opt(2), a.opt(5), dq, "MatMul")};
                                }};
  m["gltensor.DequantizeWeight"] = m["DequantizeLinear"];
  m["gltensor.DequantizeWeight"].keep = true;
  m["gltensor.DequantizeWeight"].versions = {};
  // com.microsoft (ONNX Runtime's contrib ops), as their float ops.
  qlinear(m, "QLinearAdd", "Add", {}, {{0, 1, 2}, {3, 4, 5}}, 6, 7, 0);
  qlinear(m, "QLinearMul", "Mul", {}, {{0, 1, 2}, {3, 4, 5}}, 6, 7, 0);
  qlinear(m, "QLinearSigmoid", "Sigmoid", {}, {{0, 1, 2}}, 3, 4, 0);
  qlinear(m, "QLinearLeakyRelu", "LeakyRelu", {"alpha"}, {{0, 1, 2}}, 3, 4, 0);
  qlinear(m, "QLinearGlobalAveragePool", "GlobalAveragePool", {"channels_last"}, {{0, 1, 2}}, 3, 4, 0);
  qlinear(m, "QLinearAveragePool", "AveragePool",
          {"auto_pad", "ceil_mode", "channels_last", "count_include_pad", "kernel_shape", "pads", "strides"},
          {{0, 1, 2}}, 3, 4, 0);
  // QLinearConcat(y_scale, y_zp, x0, x0_scale, x0_zp, x1, ...): any number of inputs.
  m["QLinearConcat"] = OpDef{{"axis"},
                             [](const CheckCtx& c) {
                               if (c.n.inputs.size() < 5 || (c.n.inputs.size() - 2) % 3 != 0)
                                 c.fail("expects y_scale, y_zero_point and triples (x, scale, zero point)");
                               for (std::size_t i = 2; i < c.n.inputs.size(); i += 3) need_q8(c, i);
                             },
                             [](const CheckCtx& c) { return std::vector<int>{c.elem(2)}; },
                             [](Args& a) {
                               std::vector<std::array<std::size_t, 3>> qin;
                               for (std::size_t i = 2; i + 2 < a.size(); i += 3) qin.push_back({i, i + 1, i + 2});
                               return qlinear_as_float(a, "Concat", qin, 0, 1);
                             }};
}

}  // namespace gltensor::model
