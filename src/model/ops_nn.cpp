// Neural-network ONNX ops: Conv, ConvTranspose (1-D and 2-D, auto_pad, groups, output_padding,
// output_shape), pooling, normalizations, Gemm/MatMul (with the planner's fused bias and
// epilogue), Softmax family, PRelu, Resize/Upsample, DepthToSpace/SpaceToDepth, Dropout, losses.
#include <cmath>
#include <limits>
#include <numeric>

#include "gltensor/indexing.hpp"
#include "gltensor/linalg.hpp"
#include "gltensor/nn_functional.hpp"
#include "gltensor/ops.hpp"
#include "gltensor/reduce.hpp"
#include "model/ops.hpp"
#include "nn/conv_plan.hpp"
#include "nn/pool_plan.hpp"
#include "ops/softmax.hpp"

namespace gltensor::model {

namespace {

using I64s = std::vector<std::int64_t>;

}  // namespace
I64s forward_pads(Args& a, const Shape& in, const I64s& k, const I64s& s, const I64s& d) {
  const std::size_t r = in.size();
  const std::string mode = a.attrs.s("auto_pad", "NOTSET");
  I64s pads = a.attrs.ints("pads", I64s(2 * r, 0));
  if (pads.size() != 2 * r)
    a.fail("pads has " + std::to_string(pads.size()) + " values for " + std::to_string(r) + " spatial dims");
  if (mode == "VALID") return I64s(2 * r, 0);
  if (mode == "SAME_UPPER" || mode == "SAME_LOWER") {
    for (std::size_t i = 0; i < r; ++i) {
      const std::int64_t out = (in[i] + s[i] - 1) / s[i];
      const std::int64_t total = std::max<std::int64_t>(0, (out - 1) * s[i] + (k[i] - 1) * d[i] + 1 - in[i]);
      const std::int64_t small = total / 2, big = total - small;
      pads[i] = mode == "SAME_UPPER" ? small : big;
      pads[i + r] = mode == "SAME_UPPER" ? big : small;
    }
  }
  return pads;
}

namespace {

void check_auto_pad(const CheckCtx& c) {
  const std::string p = c.attrs().s("auto_pad", "NOTSET");
  if (p != "NOTSET" && p != "SAME_UPPER" && p != "SAME_LOWER" && p != "VALID")
    c.fail_attr("auto_pad", "expected NOTSET, SAME_UPPER, SAME_LOWER or VALID");
}

// Spatial rank from the weight (a constant), kernel_shape or the input's declared rank; 0 if unknown.
std::int64_t spatial_rank(const CheckCtx& c, std::size_t weight_input) {
  if (const HostTensor* w = c.constant(weight_input)) return static_cast<std::int64_t>(w->shape.size()) - 2;
  if (c.attrs().has("kernel_shape")) return static_cast<std::int64_t>(c.attrs().ints("kernel_shape").size());
  return 0;
}

void check_spatial(const CheckCtx& c, std::int64_t rank, const char* what) {
  if (rank != 0 && rank != 1 && rank != 2)
    c.fail(std::to_string(rank) + "-D " + what + " is not supported (1-D and 2-D only)");
}

I64s ones(std::size_t r) { return I64s(r, 1); }

Tensor as_dtype(const Tensor& t, DType d) { return t.dtype() == d ? t : t.to(d); }

Ts run_conv(Args& a) {
  const Tensor& x = a.t(0);
  const Tensor& w = a.t(1);
  const std::int64_t r = x.dim() - 2;
  if (r != 1 && r != 2) a.fail(std::to_string(r) + "-D convolutions are not supported (1-D and 2-D only)");
  const Shape in(x.shape().begin() + 2, x.shape().end());
  const I64s k(w.shape().begin() + 2, w.shape().end());
  const I64s s = a.attrs.ints("strides", ones(r)), d = a.attrs.ints("dilations", ones(r));
  const I64s p = forward_pads(a, in, k, s, d);
  const std::int64_t groups = a.attrs.i("group", 1);
  if (r == 1) {
    Conv1dOptions o;
    o.stride = s[0];
    o.dilation = d[0];
    o.padding = {p[0], p[1]};
    o.groups = groups;
    const Tensor y = conv1d(x, w, a.opt(2), o, a.node.epilogue);
    return Ts{a.present(3) ? add(y, a.t(3)) : y};
  }
  Conv2dOptions o;
  o.stride = {s[0], s[1]};
  o.dilation = {d[0], d[1]};
  o.padding = {p[0], p[1], p[2], p[3]};
  o.groups = groups;
  const Tensor b = a.opt(2);
  // input 3: fuse_residual's residual (added in the direct kernel's stores where it fits, else after
  // the conv: Winograd's output transform does not take it)
  const Tensor res = a.present(3) ? a.t(3) : Tensor();
  // Winograd (nn/conv_plan.hpp) of a constant weight: its filters' transform made at the node's
  // first run and kept in the node's cache, not made again per run.
  NodeCache* cache = a.cache();
  if (const std::int64_t m = cache && a.g.values[static_cast<std::size_t>(a.node.inputs[1])].constant
                                 ? detail::conv2d_winograd_m(x, w, b, o)
                                 : 0;
      m > 0) {
    std::vector<std::int64_t> key{-1, m};  // -1: the Winograd filters (the key of no other entry)
    const std::vector<Tensor>* u = cache->find(key);
    if (!u) u = &cache->put(std::move(key), {detail::winograd_filters(w, m)});
    const Tensor y = detail::conv2d_winograd(x, (*u)[0], b, o, a.node.epilogue, m);
    return Ts{res.defined() ? add(y, res) : y};
  }
  if (res.defined()) return Ts{detail::conv2d_add(x, w, b, o, a.node.epilogue, res)};
  return Ts{conv2d(x, w, b, o, a.node.epilogue)};
}

Ts run_conv_transpose(Args& a) {
  const Tensor& x = a.t(0);
  const Tensor& w = a.t(1);
  const std::int64_t r = x.dim() - 2;
  if (r != 1 && r != 2) a.fail(std::to_string(r) + "-D convolutions are not supported (1-D and 2-D only)");
  const std::size_t ur = static_cast<std::size_t>(r);
  const I64s k(w.shape().begin() + 2, w.shape().end());
  const I64s s = a.attrs.ints("strides", ones(ur)), d = a.attrs.ints("dilations", ones(ur));
  I64s op = a.attrs.ints("output_padding", I64s(ur, 0));
  I64s p = a.attrs.ints("pads", I64s(2 * ur, 0));
  const std::string mode = a.attrs.s("auto_pad", "NOTSET");
  const bool has_out = a.attrs.has("output_shape");
  if (has_out || mode == "SAME_UPPER" || mode == "SAME_LOWER") {
    I64s out = a.attrs.ints("output_shape");
    if (out.size() > ur) out.erase(out.begin(), out.end() - r);  // with N and C
    for (std::size_t i = 0; i < ur; ++i) {
      const std::int64_t in = x.size(static_cast<std::int64_t>(i) + 2);
      const std::int64_t want = has_out ? out.at(i) : in * s[i];
      const std::int64_t total = s[i] * (in - 1) + op[i] + (k[i] - 1) * d[i] + 1 - want;
      if (total < 0) {  // the output is larger than the full transposed conv: extra output padding
        op[i] -= total;
        p[i] = p[i + ur] = 0;
        continue;
      }
      const std::int64_t half = total / 2;
      // ONNX: SAME_UPPER puts the larger half at the end.
      p[i] = mode == "SAME_UPPER" ? half : total - half;
      p[i + ur] = total - p[i];
    }
  } else if (mode == "VALID") {
    p.assign(2 * ur, 0);
  }
  Tensor y;
  if (r == 1) {
    // As conv_transpose1d, without its output_padding < max(stride, dilation) check (output_shape
    // reaches its size with larger output padding).
    Conv2dOptions o;
    o.stride = {1, s[0]};
    o.dilation = {1, d[0]};
    o.padding = {0, p[0], 0, p[1]};
    o.groups = a.attrs.i("group", 1);
    y = detail::conv_transpose2d_epilogue(x.unsqueeze(2), w.unsqueeze(2), a.opt(2), o, {0, op[0]}, Epilogue())
            .squeeze(2);
  } else {
    Conv2dOptions o;
    o.stride = {s[0], s[1]};
    o.dilation = {d[0], d[1]};
    o.padding = {p[0], p[1], p[2], p[3]};
    o.groups = a.attrs.i("group", 1);
    return Ts{detail::conv_transpose2d_epilogue(x, w, a.opt(2), o, {op[0], op[1]}, a.node.epilogue)};
  }
  return Ts{apply_epilogue(y, a.node.epilogue)};
}

Tensor pool(Args& a, bool is_max) {
  const Tensor& x = a.t(0);
  const std::int64_t r = x.dim() - 2;
  if (r != 1 && r != 2) a.fail(std::to_string(r) + "-D pooling is not supported (1-D and 2-D only)");
  const std::size_t ur = static_cast<std::size_t>(r);
  const I64s k = a.attrs.ints("kernel_shape");
  if (k.size() != ur)
    a.fail("kernel_shape has " + std::to_string(k.size()) + " dims for a " + std::to_string(r) + "-D input");
  const I64s s = a.attrs.ints("strides", ones(ur)), d = a.attrs.ints("dilations", ones(ur));
  const Shape in(x.shape().begin() + 2, x.shape().end());
  I64s p = forward_pads(a, in, k, s, d);
  const bool ceil_mode = a.attrs.i("ceil_mode", 0) != 0;
  const bool include_pad = a.attrs.i("count_include_pad", 0) != 0;
  // ONNX's output shape (PyTorch's): floor (or ceil) of a possibly negative quotient, ceil_mode's
  // last window starting inside the input or its begin padding; no window is an error.
  I64s out(ur);
  for (std::size_t i = 0; i < ur; ++i) {
    if (k[i] < 1 || s[i] < 1 || d[i] < 1) a.fail("kernel_shape, strides and dilations must be >= 1");
    out[i] = detail::window_out_size(in[i], k[i], s[i], p[i], p[i + ur], d[i], ceil_mode);
  }
  for (std::size_t i = 0; i < ur; ++i)
    if (out[i] <= 0)
      a.fail("input " + to_string(x.shape()) + " is too small for kernel_shape " + to_string(Shape(k)) + " (strides " +
             to_string(Shape(s)) + ", pads " + to_string(Shape(p)) + ", dilations " + to_string(Shape(d)) +
             (ceil_mode ? ", ceil_mode" : "") + "): the output size would be " + to_string(Shape(out)));
  bool explicit_pad = false;
  for (std::size_t i = 0; i < ur; ++i) explicit_pad = explicit_pad || p[i] != p[i + ur] || 2 * p[i] > k[i];
  Tensor xin = r == 1 ? x.unsqueeze(2) : x;
  I64s k2 = r == 1 ? I64s{1, k[0]} : k, s2 = r == 1 ? I64s{1, s[0]} : s, d2 = r == 1 ? I64s{1, d[0]} : d;
  I64s pb = r == 1 ? I64s{0, p[0]} : I64s{p[0], p[1]}, pe = r == 1 ? I64s{0, p[1]} : I64s{p[2], p[3]};
  if (!is_max && (d2[0] != 1 || d2[1] != 1)) {
    // AveragePool-19 dilations: a depthwise convolution with 1 / (kh kw) weights over the padded
    // input; without count_include_pad, rescaled by the number of taps inside the input.
    const std::int64_t C = xin.size(1);
    Conv2dOptions co;
    co.stride = {s2[0], s2[1]};
    co.dilation = {d2[0], d2[1]};
    co.padding = {pb[0], pb[1], pe[0], pe[1]};
    co.groups = C;
    const double taps = static_cast<double>(k2[0] * k2[1]);
    Tensor y = conv2d(xin, full(x.device(), {C, 1, k2[0], k2[1]}, 1.0 / taps, xin.dtype()), Tensor(), co);
    if (!include_pad) {
      co.groups = 1;
      Tensor cnt = conv2d(gltensor::ones(x.device(), {1, 1, xin.size(2), xin.size(3)}, xin.dtype()),
                          gltensor::ones(x.device(), {1, 1, k2[0], k2[1]}, xin.dtype()), Tensor(), co);
      y = as_dtype(div(mul(y, taps), cnt), x.dtype());
    }
    return r == 1 ? y.squeeze(2) : y;
  }
  Pool2dOptions o;
  o.kernel = {k2[0], k2[1]};
  o.stride = {s2[0], s2[1]};
  o.dilation = {d2[0], d2[1]};
  o.ceil_mode = ceil_mode;
  o.count_include_pad = include_pad;
  Tensor y;
  if (!explicit_pad) {
    o.padding = {pb[0], pb[1]};
    y = is_max ? max_pool2d(xin, o) : avg_pool2d(xin, o);
  } else {
    // Asymmetric (auto_pad) or large pads: pad explicitly, then pool without padding.
    const I64s pads{pb[1], pe[1], pb[0], pe[0]};
    o.padding = {0, 0};
    if (is_max) {
      y = max_pool2d(pad(xin, pads, PadMode::constant, -std::numeric_limits<double>::infinity()), o);
    } else {
      o.count_include_pad = true;
      y = avg_pool2d(pad(xin, pads), o);
      if (!include_pad) {
        Tensor mask = pad(ones(x.device(), {1, 1, xin.size(2), xin.size(3)}), pads);
        y = div(y, avg_pool2d(mask, o));
      }
    }
    // ceil_mode over the padded input may keep a last window that starts in the end padding:
    // ONNX drops it.
    const std::int64_t oh = r == 1 ? 1 : out[0], ow = out[ur - 1];
    if (y.size(2) > oh) y = y.slice(2, 0, oh);
    if (y.size(3) > ow) y = y.slice(3, 0, ow);
  }
  return r == 1 ? y.squeeze(2) : y;
}

void check_pool(const CheckCtx& c) {
  c.need_float(0);
  check_auto_pad(c);
  if (!c.attrs().has("kernel_shape")) c.fail("attribute kernel_shape is required");
  check_spatial(c, static_cast<std::int64_t>(c.attrs().ints("kernel_shape").size()), "pooling");
  if (c.attrs().i("storage_order", 0) != 0) c.fail_attr("storage_order", "only row-major (0) is supported");
  if (c.n.outputs.size() > 1 && c.n.outputs[1] >= 0) c.fail("the Indices output of MaxPool is not supported");
}

Ts softmax_like(Args& a, int kind) {  // 0 softmax, 1 log_softmax, 2 hardmax
  const Tensor& t = a.t(0);
  // A model's output written where the host reads it (Args::host_output; f32 and f16 at most 4 bytes).
  const bool host_out = a.host_output(0, t.numel() * 4);
  auto apply = [kind, host_out](const Tensor& x, std::int64_t axis) {
    if (kind == 0 || kind == 1) return detail::softmax_out(x, axis, kind == 1, host_out);
    // hardmax: one-hot of the first maximum along axis
    const std::int64_t n = x.size(axis);
    Tensor idx = argmax(x, axis, true);
    Tensor pos = arange(x.device(), static_cast<double>(n), DType::i32);
    Shape ps(static_cast<std::size_t>(x.dim()), 1);
    ps[static_cast<std::size_t>(axis)] = n;
    return eq(idx, pos.view(ps)).to(x.dtype());
  };
  const std::int64_t axis = norm_axis(a, a.attrs.i("axis", a.opset >= 13 ? -1 : 1), t.dim());
  // No element, no row to normalize: an empty output (as ONNX Runtime; hardmax's argmax over an
  // empty axis would throw).
  if (t.numel() == 0) return Ts{Tensor::empty(t.device(), t.shape(), t.dtype())};
  if (a.opset >= 13) return Ts{apply(t, axis)};
  // Before opset 13: coerced to 2-D at the axis, [d0 * .. * d(axis-1), d(axis) * .. * d(n-1)].
  std::int64_t rows = 1;
  for (std::int64_t d = 0; d < axis; ++d) rows *= t.size(d);
  return Ts{apply(t.reshape({rows, t.numel() / rows}), 1).reshape(t.shape())};
}

// ONNX NegativeLogLikelihoodLoss on log-probabilities [N, C, d...] and targets [N, d...], with
// optional class weights, ignore_index and reduction none/sum/mean.
Tensor nll_onnx(Args& a, const Tensor& logp, const Tensor& target, const Tensor& weight) {
  const std::int64_t C = logp.size(1);
  std::vector<std::int64_t> perm{0};
  for (std::int64_t d = 2; d < logp.dim(); ++d) perm.push_back(d);
  perm.push_back(1);
  Tensor lp = logp.permute(perm).reshape({-1, C});
  Tensor t = target.reshape({-1});
  Tensor valid = gltensor::ones(t.device(), t.shape(), DType::bool_);
  if (a.attrs.has("ignore_index")) valid = ne(t, static_cast<double>(a.attrs.i("ignore_index", 0)));
  Tensor safe_t = where(valid, t, 0.0).to(DType::i32);
  Tensor w = weight.defined() ? index_select(weight, 0, safe_t) : gltensor::ones(t.device(), t.shape());
  w = where(valid, w, 0.0);
  Tensor loss = neg(mul(gather(lp, 1, safe_t.unsqueeze(1)).squeeze(1), w));
  const std::string red = a.attrs.s("reduction", "mean");
  if (red == "none") return loss.reshape(target.shape());
  if (red == "sum") return sum(loss);
  return div(sum(loss), sum(w));
}

void check_reduction(const CheckCtx& c) {
  c.need_float(0);
  const std::string r = c.attrs().s("reduction", "mean");
  if (r != "none" && r != "sum" && r != "mean") c.fail_attr("reduction", "expected none, sum or mean");
}

ResizeOptions::Coord coord_of(const std::string& s) {
  using C = ResizeOptions::Coord;
  if (s == "half_pixel") return C::half_pixel;
  if (s == "pytorch_half_pixel") return C::pytorch_half_pixel;
  if (s == "align_corners") return C::align_corners;
  if (s == "asymmetric") return C::asymmetric;
  if (s == "half_pixel_symmetric") return C::half_pixel_symmetric;
  if (s == "tf_crop_and_resize") return C::tf_crop_and_resize;
  return C::tf_half_pixel_for_nn;
}

ResizeOptions::Nearest nearest_of(const std::string& s) {
  using N = ResizeOptions::Nearest;
  if (s == "round_prefer_floor") return N::round_prefer_floor;
  if (s == "round_prefer_ceil") return N::round_prefer_ceil;
  if (s == "floor") return N::floor;
  return N::ceil;
}

void check_resize(const CheckCtx& c) {
  const std::string mode = c.attrs().s("mode", "nearest");
  const std::string kp = c.attrs().s("keep_aspect_ratio_policy", "stretch");
  if (kp != "stretch" && kp != "not_larger" && kp != "not_smaller")
    c.fail_attr("keep_aspect_ratio_policy", "expected stretch, not_larger or not_smaller");
  if (c.opset() < 18)
    for (const char* a : {"antialias", "axes", "keep_aspect_ratio_policy"})
      if (c.attrs().has(a)) c.fail_attr(a, "an attribute only from opset 18");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    c.fail_attr("mode", "expected nearest, linear or cubic");
  if (mode != "nearest") c.need_float(0);
  const std::string ct = c.attrs().s("coordinate_transformation_mode", "half_pixel");
  if (ct != "half_pixel" && ct != "pytorch_half_pixel" && ct != "align_corners" && ct != "asymmetric" &&
      ct != "tf_half_pixel_for_nn" && ct != "half_pixel_symmetric" && ct != "tf_crop_and_resize")
    c.fail_attr("coordinate_transformation_mode", "not supported");
  if (ct == "half_pixel_symmetric" && c.opset() < 19)
    c.fail_attr("coordinate_transformation_mode", "half_pixel_symmetric needs opset 19");
  const std::string nm = c.attrs().s("nearest_mode", "round_prefer_floor");
  if (nm != "round_prefer_floor" && nm != "round_prefer_ceil" && nm != "floor" && nm != "ceil")
    c.fail_attr("nearest_mode", "not supported");
}

Ts run_resize(Args& a) {
  const Tensor& x = a.t(0);
  ResizeOptions o;
  const std::string mode = a.attrs.s("mode", "nearest");
  o.mode = mode == "linear"  ? ResizeOptions::Mode::linear
           : mode == "cubic" ? ResizeOptions::Mode::cubic
                             : ResizeOptions::Mode::nearest;
  o.cubic_coeff_a = a.attrs.f("cubic_coeff_a", -0.75);
  o.antialias = a.attrs.i("antialias", 0) != 0;  // Resize-18 (no effect on nearest)
  o.exclude_outside = a.attrs.i("exclude_outside", 0) != 0;
  std::size_t scales_in = 2, sizes_in = 3;
  if (a.opset < 11) {  // Resize-10: (X, scales), asymmetric
    scales_in = 1;
    sizes_in = 99;
    o.coord = ResizeOptions::Coord::asymmetric;
    o.nearest = ResizeOptions::Nearest::simple;
  } else {
    o.coord = coord_of(a.attrs.s("coordinate_transformation_mode", "half_pixel"));
    o.nearest = nearest_of(a.attrs.s("nearest_mode", "round_prefer_floor"));
  }
  // Resize-18: scales and sizes may name only `axes` (the other dims keep their size), and sizes
  // may keep the aspect ratio: one scale for every axis, the smallest (not_larger) or largest
  // (not_smaller) of sizes / input sizes, and sizes rounded half up from it.
  const std::int64_t r = x.dim();
  I64s axes = a.attrs.ints("axes");
  if (axes.empty()) {
    axes.resize(static_cast<std::size_t>(r));
    std::iota(axes.begin(), axes.end(), 0);
  }
  for (auto& ax : axes) ax = norm_axis(a, ax, r);
  // tf_crop_and_resize: the region of interest (input 1), [starts, ends] of the axes.
  std::vector<double> region(2 * static_cast<std::size_t>(r), 0.0);
  for (std::int64_t d = 0; d < r; ++d) region[static_cast<std::size_t>(d + r)] = 1.0;
  if (o.coord == ResizeOptions::Coord::tf_crop_and_resize) {
    if (!a.present(1) || a.h(1).numel() != 2 * static_cast<std::int64_t>(axes.size()))
      a.fail("tf_crop_and_resize needs a roi of " + std::to_string(2 * axes.size()) + " values");
    const std::vector<double>& roi = a.h(1).v;
    for (std::size_t i = 0; i < axes.size(); ++i) {
      region[static_cast<std::size_t>(axes[i])] = roi[i];
      region[static_cast<std::size_t>(axes[i] + r)] = roi[i + axes.size()];
    }
    o.roi = region;
    o.extrapolation_value = a.attrs.f("extrapolation_value", 0.0);
  }
  Shape size = x.shape();
  if (a.present(sizes_in) && a.h(sizes_in).numel() > 0) {
    const I64s want = a.ints(sizes_in);
    if (want.size() != axes.size())
      a.fail(std::to_string(want.size()) + " sizes for " + std::to_string(axes.size()) + " axes");
    const std::string policy = a.attrs.s("keep_aspect_ratio_policy", "stretch");
    if (policy == "stretch") {
      for (std::size_t i = 0; i < axes.size(); ++i) size[static_cast<std::size_t>(axes[i])] = want[i];
    } else {
      double scale = policy == "not_larger" ? std::numeric_limits<double>::infinity() : 0.0;
      for (std::size_t i = 0; i < axes.size(); ++i) {
        const double s = static_cast<double>(want[i]) / static_cast<double>(x.size(axes[i]));
        scale = policy == "not_larger" ? std::min(scale, s) : std::max(scale, s);
      }
      o.scales.assign(static_cast<std::size_t>(r), 1.0);
      for (auto ax : axes) {
        o.scales[static_cast<std::size_t>(ax)] = scale;
        size[static_cast<std::size_t>(ax)] =
            static_cast<std::int64_t>(std::floor(scale * static_cast<double>(x.size(ax)) + 0.5));
      }
    }
  } else if (a.present(scales_in) && a.h(scales_in).numel() > 0) {
    const std::vector<double> sc = a.h(scales_in).v;
    if (sc.size() != axes.size())
      a.fail(std::to_string(sc.size()) + " scales for an input of rank " + std::to_string(x.dim()) +
             (axes.size() == static_cast<std::size_t>(r) ? "" : " and " + std::to_string(axes.size()) + " axes"));
    o.scales.assign(static_cast<std::size_t>(r), 1.0);
    for (std::size_t i = 0; i < axes.size(); ++i) o.scales[static_cast<std::size_t>(axes[i])] = sc[i];
    // floor(in * scale), also for tf_crop_and_resize (ONNX's reference and ONNX Runtime; the spec's
    // text multiplies by the roi's extent)
    for (std::size_t d = 0; d < size.size(); ++d)
      size[d] = static_cast<std::int64_t>(
          std::floor(static_cast<double>(x.size(static_cast<std::int64_t>(d))) * o.scales[d]));
  } else {
    a.fail("Resize needs scales or sizes");
  }
  if (static_cast<std::int64_t>(size.size()) != x.dim())
    a.fail("sizes " + to_string(size) + " do not match the input rank " + std::to_string(x.dim()));
  // Where the references disagree: ONNX's reference divides by in * scale - 1, ONNX Runtime by
  // the output size - 1 (antialiased align_corners, tf_crop_and_resize).
  const bool crop = o.coord == ResizeOptions::Coord::tf_crop_and_resize;
  if (((o.antialias && o.mode != ResizeOptions::Mode::nearest && o.coord == ResizeOptions::Coord::align_corners) ||
       crop) &&
      !o.scales.empty())
    for (std::int64_t d = 0; d < r; ++d) {
      const double len = static_cast<double>(x.size(d)) * o.scales[static_cast<std::size_t>(d)];
      if (len != static_cast<double>(size[static_cast<std::size_t>(d)]))  // in * scale not an integer
        a.fail(std::string(crop ? "tf_crop_and_resize" : "antialiased align_corners resizing") +
               " with scales whose in * scale is not an integer is ambiguous (ONNX's reference divides by in * "
               "scale - 1, ONNX Runtime by the output size - 1)");
    }
  return Ts{resize(x, size, o)};
}

// GroupNormalization: statistics per (instance, group of channels); scale and bias per group
// (version 18, shape [num_groups]) or per channel (version 21, shape [C]).
Ts run_group_norm(Args& a, int version) {
  const Tensor& x = a.t(0);
  if (x.dim() < 2) a.fail("GroupNormalization expects [N, C, ...], got " + to_string(x.shape()));
  const std::int64_t C = x.size(1), G = a.attrs.i("num_groups", 0);
  if (G <= 0 || C % G != 0)
    a.fail("num_groups " + std::to_string(G) + " does not divide " + std::to_string(C) + " channels");
  Tensor scale = a.t(1), bias = a.t(2);
  const std::int64_t want = version >= 21 ? C : G;
  for (const Tensor* t : {&scale, &bias})
    if (t->numel() != want)
      a.fail("GroupNormalization-" + std::to_string(version) + " expects scale and bias of " + std::to_string(want) +
             (version >= 21 ? " (channels)" : " (num_groups)") + " values, got " + to_string(t->shape()));
  if (want != C) {  // per group -> per channel
    std::vector<std::int32_t> idx(static_cast<std::size_t>(C));
    for (std::int64_t c = 0; c < C; ++c) idx[static_cast<std::size_t>(c)] = static_cast<std::int32_t>(c / (C / G));
    Tensor it = Tensor::from_host(a.dev, std::span<const std::int32_t>(idx), {C});
    scale = index_select(scale.reshape({G}), 0, it);
    bias = index_select(bias.reshape({G}), 0, it);
  }
  return Ts{group_norm(x, G, scale.reshape({C}), bias.reshape({C}), a.attrs.f("epsilon", 1e-5))};
}

// Col2Im: input [N, C * prod(block_shape), L] -> [N, C, *image_shape], each column's block
// added into the (padded) image at its sliding position: a scatter-add with host-computed
// positions, then the padding cropped.
Ts run_col2im(Args& a) {
  const Tensor& x = a.t(0);
  const I64s img = a.ints(1), blk = a.ints(2);
  const std::size_t r = img.size();
  if (r == 0 || blk.size() != r)
    a.fail("image_shape " + to_string(img) + " and block_shape " + to_string(blk) + " differ in length");
  const I64s dil = a.attrs.ints("dilations", ones(r)), st = a.attrs.ints("strides", ones(r));
  const I64s pads = a.attrs.ints("pads", I64s(2 * r, 0));
  if (dil.size() != r || st.size() != r || pads.size() != 2 * r)
    a.fail("dilations, strides or pads do not match image_shape");
  if (x.dim() != 3) a.fail("Col2Im expects [N, C * prod(block_shape), L], got " + to_string(x.shape()));
  std::int64_t K = 1, L = 1, P = 1;
  I64s padded(r), blocks(r);
  for (std::size_t d = 0; d < r; ++d) {
    K *= blk[d];
    padded[d] = img[d] + pads[d] + pads[d + r];
    blocks[d] = (padded[d] - (dil[d] * (blk[d] - 1) + 1)) / st[d] + 1;
    if (blocks[d] <= 0) a.fail("block_shape " + to_string(blk) + " does not fit image_shape " + to_string(img));
    L *= blocks[d];
    P *= padded[d];
  }
  const std::int64_t N = x.size(0), CK = x.size(1);
  if (CK % K != 0 || x.size(2) != L)
    a.fail("input " + to_string(x.shape()) + " does not match block_shape " + to_string(blk) + " with " +
           std::to_string(L) + " blocks");
  const std::int64_t C = CK / K;
  // Position in the padded image of element (c * K + k, l).
  std::vector<std::int32_t> pos(static_cast<std::size_t>(CK * L));
  I64s kk(r), ll(r);
  for (std::int64_t k = 0; k < K; ++k) {
    for (std::int64_t rem = k, d = static_cast<std::int64_t>(r); d-- > 0;) {
      kk[d] = rem % blk[d];
      rem /= blk[d];
    }
    for (std::int64_t l = 0; l < L; ++l) {
      for (std::int64_t rem = l, d = static_cast<std::int64_t>(r); d-- > 0;) {
        ll[d] = rem % blocks[d];
        rem /= blocks[d];
      }
      std::int64_t off = 0;
      for (std::size_t d = 0; d < r; ++d) off = off * padded[d] + ll[d] * st[d] + kk[d] * dil[d];
      for (std::int64_t c = 0; c < C; ++c)
        pos[static_cast<std::size_t>((c * K + k) * L + l)] = static_cast<std::int32_t>(c * P + off);
    }
  }
  Tensor idx =
      Tensor::from_host(a.dev, std::span<const std::int32_t>(pos), {1, CK * L}).expand({N, CK * L}).contiguous();
  Tensor out = scatter_add(zeros(a.dev, {N, C * P}), 1, idx, x.reshape({N, CK * L}).to(DType::f32));
  Shape ps{N, C};
  ps.insert(ps.end(), padded.begin(), padded.end());
  Tensor y = out.reshape(ps);
  for (std::size_t d = 0; d < r; ++d) {
    const std::int64_t dim = static_cast<std::int64_t>(d) + 2;
    y = y.slice(dim, pads[d], pads[d] + img[d]);
  }
  y = y.contiguous();
  return Ts{y.dtype() == x.dtype() ? y : y.to(x.dtype())};
}

// AffineGrid: theta [N, 2, 3] (or [N, 3, 4]) and size [N, C, H, W] (or [N, C, D, H, W]) ->
// grid [N, H, W, 2] (or [N, D, H, W, 3]): theta times the normalized coordinates (x, y[, z], 1)
// of each output position, in [-1, 1] (pixel centers, or corners with align_corners).
Ts run_affine_grid(Args& a) {
  const Tensor& theta = a.t(0);
  const I64s size = a.ints(1);
  const bool corners = a.attrs.i("align_corners", 0) != 0;
  const std::size_t sd = size.size() - 2;
  if ((size.size() != 4 && size.size() != 5) || theta.dim() != 3 || theta.size(1) != static_cast<std::int64_t>(sd) ||
      theta.size(2) != static_cast<std::int64_t>(sd) + 1)
    a.fail("AffineGrid of theta " + to_string(theta.shape()) + " and size " + to_string(size));
  auto coord = [corners](std::int64_t i, std::int64_t n) {
    if (corners) return -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(n - 1);  // n > 1
    return (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(n) - 1.0;
  };
  const I64s spatial(size.begin() + 2, size.end());  // [D,] H, W
  for (auto s : spatial)                             // linspace(-1, 1, 1): -1 in ONNX's reference, +1 in ONNX Runtime
    if (corners && s == 1)
      a.fail("AffineGrid with align_corners=1 and a size-1 dim " + to_string(size) + " is ambiguous");
  std::int64_t M = 1;
  for (auto s : spatial) M *= s;
  std::vector<float> base;  // [M, sd + 1]: x (last dim) first, then y[, z], then 1
  for (std::int64_t m = 0; m < M; ++m) {
    I64s idx(sd);
    for (std::int64_t rem = m, d = static_cast<std::int64_t>(sd); d-- > 0;) {
      idx[static_cast<std::size_t>(d)] = rem % spatial[static_cast<std::size_t>(d)];
      rem /= spatial[static_cast<std::size_t>(d)];
    }
    for (std::size_t k = sd; k-- > 0;) base.push_back(static_cast<float>(coord(idx[k], spatial[k])));
    base.push_back(1.0f);
  }
  const std::int64_t N = size[0], S = static_cast<std::int64_t>(sd);
  Tensor b = Tensor::from_host(a.dev, base, {1, M, S + 1}).expand({N, M, S + 1});
  Tensor th = theta.to(DType::f32);
  if (th.size(0) != N) a.fail("theta " + to_string(theta.shape()) + " and size " + to_string(size) + " differ in N");
  Tensor g = matmul(b.contiguous(), th.transpose(1, 2).contiguous());  // [N, M, S]
  Shape out{N};
  out.insert(out.end(), spatial.begin(), spatial.end());
  out.push_back(S);
  g = g.reshape(out);
  return Ts{g.dtype() == theta.dtype() ? g : g.to(theta.dtype())};
}

}  // namespace

namespace {

// DFT (17: axis attribute; 20: axis input, default -2): input [..., n, 1 | 2] (real or complex,
// the signal along axis, which is not the last dim) -> [..., m, 2]; the signal zero-padded or
// cut to dft_length; onesided keeps the first m = n / 2 + 1 frequencies (real input only);
// inverse scales by 1 / n. One matmul of the signals' rows (real or re, im pairs) with the DFT
// matrix (dft_rows: host-computed once per node and sizes).
Ts run_dft(Args& a) {
  const Tensor& x = a.t(0);
  const std::int64_t r = x.dim();
  if (r < 2 || (x.size(-1) != 1 && x.size(-1) != 2)) a.fail("DFT expects [..., 1 | 2], got " + to_string(x.shape()));
  std::int64_t axis = a.opset < 20 ? a.attrs.i("axis", 1) : (a.present(2) ? a.ints(2).at(0) : -2);
  axis = norm_axis(a, axis, r);
  if (axis == r - 1) a.fail("the DFT axis cannot be the last (real / imaginary) dim");
  const bool inverse = a.attrs.i("inverse", 0) != 0, onesided = a.attrs.i("onesided", 0) != 0;
  const bool complex_in = x.size(-1) == 2;
  const std::int64_t n0 = x.size(axis);
  const std::int64_t n = a.present(1) && a.h(1).numel() ? a.ints(1).at(0) : n0;
  if (n <= 0) a.fail("dft_length " + std::to_string(n) + " must be positive");
  const std::int64_t m = onesided ? n / 2 + 1 : n, ch = complex_in ? 2 : 1;
  // Move the signal to the second-to-last dim: [..., n0, 1|2] -> rows [B, n0 * ch] (re, im
  // pairs), cut to n samples as a view (zero-padding to n: the DFT matrix has n0 rows).
  Tensor xt = x.to(DType::f32).transpose(axis, r - 2).contiguous();  // [..., n0, ch]
  Shape lead(xt.shape().begin(), xt.shape().end() - 2);
  std::int64_t B = 1;
  for (auto s : lead) B *= s;
  Tensor rows = xt.reshape({B, n0 * ch});
  if (n < n0) rows = rows.narrow(1, 0, n * ch);
  Shape os = lead;
  os.push_back(m);
  os.push_back(2);
  Tensor y = dft_rows(a, rows, ch, n, m, inverse).reshape(os);  // [..., m, 2]
  if (axis != r - 2) y = y.transpose(axis, r - 2).contiguous();
  return Ts{y.dtype() == x.dtype() ? y : y.to(x.dtype())};
}

// GridSample (16; 20 renames bilinear/bicubic to linear/cubic) on 2-D spatial inputs, as ONNX's
// reference and PyTorch: X [N, C, H, W] sampled at grid [N, Ho, Wo, 2] ((x, y) in [-1, 1]);
// for nearest and linear, coordinates outside the border ([-0.5, size - 0.5], or [0, size - 1]
// with align_corners) are clamped (border) or reflected (reflection) first; then each tap is
// padded (zeros: 0 outside, border: clamped, reflection: reflected). Every tap is a gather of X
// flattened to [N, C, H * W].
Tensor gs_reflect(const Tensor& v, double lo, double hi) {
  const double range = hi - lo;
  auto fold = [&](const Tensor& dx, double from, double sign) {  // from + sign * r, or the other end
    Tensor n = floor(div(dx, range));
    Tensor r = sub(dx, mul(n, range));
    Tensor even = eq(remainder(n, 2.0), 0.0);
    return where(even, add(mul(r, sign), from), add(mul(r, -sign), from == lo ? hi : lo));
  };
  Tensor below = fold(sub(lo, v), lo, 1.0), above = fold(sub(v, hi), hi, -1.0);
  return where(lt(v, lo), below, where(gt(v, hi), above, v));
}

Ts run_grid_sample(Args& a) {
  const Tensor& x = a.t(0);
  const Tensor& grid = a.t(1);
  if (x.dim() != 4 || grid.dim() != 4 || grid.size(3) != 2 || grid.size(0) != x.size(0))
    a.fail("GridSample of " + to_string(x.shape()) + " at grid " + to_string(grid.shape()) +
           " (2-D spatial inputs only: X [N, C, H, W], grid [N, Ho, Wo, 2])");
  const std::string mode = a.attrs.s("mode", "bilinear"), padding = a.attrs.s("padding_mode", "zeros");
  const bool corners = a.attrs.i("align_corners", 0) != 0, cubic = mode == "bicubic" || mode == "cubic";
  const std::int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3), Ho = grid.size(1), Wo = grid.size(2);
  const std::int64_t M = Ho * Wo;
  Tensor g = grid.to(DType::f32);
  auto coord = [&](std::int64_t k, std::int64_t len) {  // denormalized, then clamped / reflected
    Tensor n = g.slice(3, k, k + 1).contiguous().reshape({N, M});
    const double L = static_cast<double>(len);
    Tensor v = corners ? mul(add(n, 1.0), (L - 1) / 2) : div(sub(mul(add(n, 1.0), L), 1.0), 2.0);
    if (mode == "nearest") v = round(v);  // half to even (std::nearbyint)
    const double lo = corners ? 0.0 : -0.5, hi = corners ? L - 1 : L - 0.5;
    if (cubic)
      return v;  // only its taps are padded (PyTorch, ONNX Runtime; ONNX's reference clamps
                 // the coordinate too for border, which changes the cubic weights)
    if (padding == "border") v = where(logical_or(lt(v, lo), gt(v, hi)), clamp(v, 0.0, L - 1), v);
    if (padding == "reflection") v = gs_reflect(v, lo, hi);
    return v;
  };
  const Tensor xs = coord(0, W), ys = coord(1, H);
  const Tensor xf = x.reshape({N, C, H * W});
  // One tap at integer positions (ix, iy) [N, M], weighted by w [N, M].
  auto tap = [&](const Tensor& ix, const Tensor& iy, const Tensor& w) {
    Tensor px = ix, py = iy, wt = w;
    auto pad_index = [&](const Tensor& i, std::int64_t len) {
      const double L = static_cast<double>(len);
      if (padding == "border") return clamp(i, 0.0, L - 1);
      if (padding == "reflection")
        return clamp(trunc(gs_reflect(i, corners ? 0.0 : -0.5, corners ? L - 1 : L - 0.5)), 0.0, L - 1);
      return clamp(i, 0.0, L - 1);  // zeros: masked below
    };
    if (padding == "zeros") {
      Tensor inside = logical_and(logical_and(ge(ix, 0.0), lt(ix, static_cast<double>(W))),
                                  logical_and(ge(iy, 0.0), lt(iy, static_cast<double>(H))));
      wt = where(inside, w, 0.0);
    }
    px = pad_index(ix, W);
    py = pad_index(iy, H);
    Tensor lin = add(mul(py, static_cast<double>(W)), px).to(DType::i32).reshape({N, 1, M}).expand({N, C, M});
    return mul(gather(xf, 2, lin.contiguous()), wt.reshape({N, 1, M}));
  };
  Tensor y;
  auto acc = [&](const Tensor& t) { y = y.defined() ? add(y, t) : t; };
  if (mode == "nearest") {
    acc(tap(xs, ys, gltensor::ones(a.dev, {N, M})));
  } else if (mode == "bilinear" || mode == "linear") {
    Tensor x0 = floor(xs), y0 = floor(ys);
    Tensor fx = sub(xs, x0), fy = sub(ys, y0);
    Tensor gx = sub(1.0, fx), gy = sub(1.0, fy);
    acc(tap(x0, y0, mul(gx, gy)));
    acc(tap(add(x0, 1.0), y0, mul(fx, gy)));
    acc(tap(x0, add(y0, 1.0), mul(gx, fy)));
    acc(tap(add(x0, 1.0), add(y0, 1.0), mul(fx, fy)));
  } else {                               // bicubic / cubic: Keys' kernel with A = -0.75 on taps -1..2
    auto coeffs = [](const Tensor& t) {  // t in [0, 1): weights of taps -1, 0, 1, 2
      const double A = -0.75;
      auto far = [A](const Tensor& d) {  // 1 < d < 2
        return sub(mul(add(mul(sub(mul(d, A), 5 * A), d), 8 * A), d), 4 * A);
      };
      auto near = [A](const Tensor& d) {  // d <= 1
        return add(mul(mul(sub(mul(d, A + 2), A + 3), d), d), 1.0);
      };
      return std::vector<Tensor>{far(add(t, 1.0)), near(t), near(sub(1.0, t)), far(sub(2.0, t))};
    };
    Tensor x0 = floor(xs), y0 = floor(ys);
    auto cx = coeffs(sub(xs, x0)), cy = coeffs(sub(ys, y0));
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 4; ++i)
        acc(tap(add(x0, static_cast<double>(i - 1)), add(y0, static_cast<double>(j - 1)), mul(cx[i], cy[j])));
  }
  y = y.reshape({N, C, Ho, Wo});
  return Ts{y.dtype() == x.dtype() ? y : y.to(x.dtype())};
}

}  // namespace

void register_nn_ops(Registry& m) {
  const std::vector<std::string> conv_attrs{"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"};
  m["Conv"] = OpDef{conv_attrs,
                    [](const CheckCtx& c) {
                      c.need_float(0);
                      check_auto_pad(c);
                      check_spatial(c, spatial_rank(c, 1), "convolution");
                    },
                    nullptr, run_conv};
  m["ConvTranspose"] =
      OpDef{{"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides"},
            [](const CheckCtx& c) {
              c.need_float(0);
              check_auto_pad(c);
              check_spatial(c, spatial_rank(c, 1), "convolution");
            },
            nullptr,
            run_conv_transpose};
  m["MaxPool"] = OpDef{{"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"},
                       check_pool,
                       nullptr,
                       [](Args& a) { return Ts{pool(a, true)}; }};
  m["AveragePool"] =
      OpDef{{"auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads", "strides"},
            [](const CheckCtx& c) {
              check_pool(c);
              for (auto d : c.attrs().ints("dilations"))  // AveragePool-19
                if (d != 1 && c.attrs().i("ceil_mode", 0))
                  c.fail_attr("dilations", "dilated average pooling with ceil_mode=1 is not supported");
            },
            nullptr,
            [](Args& a) { return Ts{pool(a, false)}; }};
  m["AveragePool"].versions = {19};
  auto global = [](bool is_max) {
    return [is_max](Args& a) {
      const Tensor& x = a.t(0);
      Dims d;
      for (std::int64_t i = 2; i < x.dim(); ++i) d.push_back(i);
      return Ts{is_max ? amax(x, d, true) : mean(x, d, true)};
    };
  };
  m["GlobalAveragePool"] = OpDef{{}, [](const CheckCtx& c) { c.need_float(0); }, nullptr, global(false)};
  m["GlobalMaxPool"] = OpDef{{}, [](const CheckCtx& c) { c.need_float(0); }, nullptr, global(true)};
  m["BatchNormalization"] =
      OpDef{{"epsilon", "momentum", "spatial", "training_mode", "is_test"},
            [](const CheckCtx& c) {
              c.need_float(0);
              if (c.opset() < 7 && c.attrs().i("is_test", 0) == 0 && c.n.outputs.size() > 1)
                c.fail_attr("is_test", "training mode is not supported");
              if (c.attrs().i("training_mode", 0)) c.fail_attr("training_mode", "training mode is not supported");
              if (c.attrs().i("spatial", 1) != 1) c.fail_attr("spatial", "only spatial=1 is supported");
              for (std::size_t i = 1; i < c.n.outputs.size(); ++i)
                if (c.n.outputs[i] >= 0) c.fail("training-mode outputs (running mean/var) are not supported");
            },
            nullptr,
            [](Args& a) {
              return Ts{batch_norm(a.t(0), a.t(3), a.t(4), a.t(1), a.t(2), false, 0.1, a.attrs.f("epsilon", 1e-5))};
            }};
  m["InstanceNormalization"] = OpDef{{"epsilon"},
                                     [](const CheckCtx& c) { c.need_float(0); },
                                     nullptr,
                                     [](Args& a) {
                                       const Tensor& x = a.t(0);
                                       return Ts{group_norm(x, x.size(1), a.t(1), a.t(2), a.attrs.f("epsilon", 1e-5))};
                                     }};
  m["LayerNormalization"] = OpDef{{"axis", "epsilon", "stash_type"},
                                  [](const CheckCtx& c) {
                                    c.need_float(0);
                                    if (c.attrs().i("stash_type", 1) != 1)
                                      c.fail_attr("stash_type", "only float statistics (1)");
                                  },
                                  [](const CheckCtx& c) {
                                    return std::vector<int>{c.elem(0), kFloat, kFloat};
                                  },
                                  [](Args& a) {
                                    const Tensor& x = a.t(0);
                                    const std::int64_t axis = norm_axis(a, a.attrs.i("axis", -1), x.dim());
                                    const double eps = a.attrs.f("epsilon", 1e-5);
                                    Ts out{layer_norm(x, x.dim() - axis, a.t(1), a.opt(2), eps)};
                                    if (a.n_outputs() > 1) {  // Mean and InvStdDev, reduced dims kept
                                      Dims d;
                                      for (std::int64_t i = axis; i < x.dim(); ++i) d.push_back(i);
                                      out.push_back(mean(x, d, true));
                                      out.push_back(rsqrt(add(var(x, d, 0.0, true), eps)));
                                    }
                                    return out;
                                  }};
  m["Dropout"] = OpDef{{"ratio", "seed", "is_test"},
                       [](const CheckCtx& c) {
                         const HostTensor* tm = c.constant(2);
                         if (c.has_input(2) && (!tm || (tm->numel() && tm->v[0] != 0)))
                           c.fail("training-mode Dropout is not supported");
                       },
                       [](const CheckCtx& c) {
                         return std::vector<int>{c.elem(0), kBool};
                       },
                       [](Args& a) {
                         Ts r{a.t(0)};
                         if (a.wants_output(1)) r.push_back(gltensor::ones(a.dev, a.shape(0), DType::bool_));
                         return r;
                       }};
  m["Gemm"] =
      OpDef{{"alpha", "beta", "transA", "transB", "broadcast"},
            [](const CheckCtx& c) { c.need_float(0); },
            nullptr,
            [](Args& a) {
              const Tensor& x = a.t(0);
              const Tensor& w = a.t(1);
              if (x.dim() != 2 || w.dim() != 2)
                a.fail("Gemm expects 2-D A and B, got " + to_string(x.shape()) + " and " + to_string(w.shape()));
              return Ts{matmul_fused(a.attrs.i("transA", 0) ? x.t() : x, a.attrs.i("transB", 0) ? w.t() : w, a.opt(2),
                                     a.attrs.f("alpha", 1.0), a.attrs.f("beta", 1.0), a.node.epilogue)};
            }};
  m["MatMul"] = OpDef{{},
                      [](const CheckCtx& c) { c.need_float(0); },
                      nullptr,
                      [](Args& a) {
                        const Tensor& x = a.t(0);
                        const Tensor& w = a.t(1);
                        if (a.present(2) || a.node.epilogue.act != Activation::none) {
                          if (x.dim() >= 2 && w.dim() >= 2)
                            return Ts{matmul_fused(x, w, a.opt(2), 1.0, 1.0, a.node.epilogue)};
                          Tensor r = matmul(x, w);
                          if (a.present(2)) r = add(r, a.t(2));
                          return Ts{apply_epilogue(r, a.node.epilogue)};
                        }
                        return Ts{matmul(x, w)};
                      }};
  m["Softmax"] =
      OpDef{{"axis"}, [](const CheckCtx& c) { c.need_float(0); }, nullptr, [](Args& a) { return softmax_like(a, 0); }};
  m["LogSoftmax"] =
      OpDef{{"axis"}, [](const CheckCtx& c) { c.need_float(0); }, nullptr, [](Args& a) { return softmax_like(a, 1); }};
  m["Hardmax"] =
      OpDef{{"axis"}, [](const CheckCtx& c) { c.need_float(0); }, nullptr, [](Args& a) { return softmax_like(a, 2); }};
  m["LRN"] = OpDef{{"alpha", "beta", "bias", "size"},
                   [](const CheckCtx& c) { c.need_float(0); },
                   nullptr,
                   [](Args& a) {
                     // x / (bias + alpha / size * sum of x^2 over a window of `size` channels)^beta
                     const Tensor& x = a.t(0);
                     const std::int64_t size = a.attrs.i("size", 1), N = x.size(0), C = x.size(1);
                     const double alpha = a.attrs.f("alpha", 1e-4), beta = a.attrs.f("beta", 0.75),
                                  bias = a.attrs.f("bias", 1.0);
                     Tensor sq = mul(x, x).reshape({N, 1, C, -1});
                     const std::int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
                     Pool2dOptions o;
                     o.kernel = {size, 1};
                     o.stride = {1, 1};
                     Tensor s = mul(avg_pool2d(pad(sq, {0, 0, lo, hi}), o), static_cast<double>(size));
                     Tensor den = pow(add(mul(s, alpha / static_cast<double>(size)), bias), beta);
                     return Ts{div(x, den.reshape(x.shape()))};
                   }};
  m["MeanVarianceNormalization"] = OpDef{{"axes"},
                                         [](const CheckCtx& c) { c.need_float(0); },
                                         nullptr,
                                         [](Args& a) {
                                           const Tensor& x = a.t(0);
                                           Dims axes = a.attrs.ints("axes", {0, 2, 3});
                                           for (auto& ax : axes) ax = norm_axis(a, ax, x.dim());
                                           Tensor mu = mean(x, axes, true);
                                           Tensor sd = sqrt(var(x, axes, 0.0, true));
                                           return Ts{div(sub(x, mu), add(sd, 1e-9))};
                                         }};
  m["PRelu"] = OpDef{{},
                     [](const CheckCtx& c) { c.need_float(0); },
                     nullptr,
                     [](Args& a) {
                       const Tensor& x = a.t(0);
                       Tensor s = a.t(1);
                       // PRelu-6: a slope [C] is per channel (dim 1); from opset 7 it broadcasts NumPy-style.
                       if (a.opset < 7 && s.dim() == 1 && x.dim() > 2 && s.size(0) == x.size(1)) {
                         Shape v(static_cast<std::size_t>(x.dim() - 1), 1);
                         v[0] = s.size(0);
                         s = s.view(v);
                       }
                       return Ts{prelu(x, s)};
                     }};
  m["Resize"] = OpDef{{"antialias", "axes", "coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside",
                       "extrapolation_value", "keep_aspect_ratio_policy", "mode", "nearest_mode"},
                      check_resize,
                      nullptr,
                      run_resize};
  m["Resize"].versions = {18, 19};  // 19: half_pixel_symmetric
  m["GroupNormalization"] = OpDef{{"epsilon", "num_groups", "stash_type"},
                                  [](const CheckCtx& c) {
                                    c.need_float(0);
                                    if (!c.attrs().has("num_groups")) c.fail("attribute num_groups is required");
                                    if (c.attrs().i("stash_type", 1) != 1)
                                      c.fail_attr("stash_type", "only float statistics (1)");
                                    if (c.version() < 21 && c.attrs().has("stash_type"))
                                      c.fail_attr("stash_type", "an attribute only from opset 21");
                                  },
                                  nullptr,
                                  [](Args& a) { return run_group_norm(a, op_version("GroupNormalization", a.opset)); }};
  m["GroupNormalization"].versions = {18, 21};
  m["Col2Im"] =
      OpDef{{"dilations", "pads", "strides"}, [](const CheckCtx& c) { c.need_float(0); }, nullptr, run_col2im};
  m["Col2Im"].versions = {18};
  m["AffineGrid"] = OpDef{{"align_corners"}, [](const CheckCtx& c) { c.need_float(0); }, nullptr, run_affine_grid};
  m["AffineGrid"].versions = {20};
  m["GridSample"] =
      OpDef{{"align_corners", "mode", "padding_mode"},
            [](const CheckCtx& c) {
              c.need_float(0);
              const std::string mode = c.attrs().s("mode", "bilinear");
              if (mode != "bilinear" && mode != "linear" && mode != "nearest" && mode != "bicubic" && mode != "cubic")
                c.fail_attr("mode", "expected bilinear (linear), nearest or bicubic (cubic)");
              const std::string p = c.attrs().s("padding_mode", "zeros");
              if (p != "zeros" && p != "border" && p != "reflection")
                c.fail_attr("padding_mode", "expected zeros, border or reflection");
            },
            nullptr,
            run_grid_sample};
  m["GridSample"].versions = {20};  // 20: N-d (2-D spatial here) and the modes renamed
  m["DFT"] = OpDef{{"axis", "inverse", "onesided"},
                   [](const CheckCtx& c) {
                     c.need_float(0);
                     if (c.opset() >= 20 && c.attrs().has("axis"))
                       c.fail_attr("axis", "an attribute only before opset 20 (an input since)");
                     if (c.attrs().i("onesided", 0) && c.attrs().i("inverse", 0))
                       c.fail_attr("onesided", "onesided inverse DFT is not supported");
                   },
                   nullptr,
                   run_dft};
  m["DFT"].versions = {20};
  m["Upsample"] = OpDef{{"mode", "scales"},
                        [](const CheckCtx& c) {
                          const std::string mode = c.attrs().s("mode", "nearest");
                          if (mode != "nearest" && mode != "linear" && mode != "bilinear")
                            c.fail_attr("mode", "only nearest and linear are supported");
                        },
                        nullptr,
                        [](Args& a) {
                          const Tensor& x = a.t(0);
                          ResizeOptions o;
                          const std::string mode = a.attrs.s("mode", "nearest");
                          o.mode = mode == "nearest" ? ResizeOptions::Mode::nearest : ResizeOptions::Mode::linear;
                          o.coord = ResizeOptions::Coord::asymmetric;
                          o.nearest = ResizeOptions::Nearest::simple;
                          o.scales = a.present(1) ? a.h(1).v : a.attrs.floats("scales");
                          if (static_cast<std::int64_t>(o.scales.size()) != x.dim())
                            a.fail("scales do not match the input rank");
                          Shape size = x.shape();
                          for (std::size_t d = 0; d < size.size(); ++d)
                            size[d] = static_cast<std::int64_t>(std::floor(size[d] * o.scales[d]));
                          return Ts{resize(x, size, o)};
                        }};
  m["DepthToSpace"] = OpDef{{"blocksize", "mode"},
                            [](const CheckCtx& c) {
                              const std::string mode = c.attrs().s("mode", "DCR");
                              if (mode != "DCR" && mode != "CRD") c.fail_attr("mode", "expected DCR or CRD");
                            },
                            nullptr,
                            [](Args& a) {
                              const Tensor& x = a.t(0);
                              if (x.dim() != 4) a.fail("DepthToSpace expects [N, C, H, W]");
                              const std::int64_t b = a.attrs.i("blocksize", 1), N = x.size(0), C = x.size(1),
                                                 H = x.size(2), W = x.size(3);
                              Tensor t = a.attrs.s("mode", "DCR") == "DCR"
                                             ? x.reshape({N, b, b, C / (b * b), H, W}).permute({0, 3, 4, 1, 5, 2})
                                             : x.reshape({N, C / (b * b), b, b, H, W}).permute({0, 1, 4, 2, 5, 3});
                              return Ts{t.contiguous().view({N, C / (b * b), H * b, W * b})};
                            }};
  m["SpaceToDepth"] = OpDef{{"blocksize"}, nullptr, nullptr, [](Args& a) {
                              const Tensor& x = a.t(0);
                              if (x.dim() != 4) a.fail("SpaceToDepth expects [N, C, H, W]");
                              const std::int64_t b = a.attrs.i("blocksize", 1), N = x.size(0), C = x.size(1),
                                                 H = x.size(2), W = x.size(3);
                              Tensor t = x.reshape({N, C, H / b, b, W / b, b}).permute({0, 3, 5, 1, 2, 4});
                              return Ts{t.contiguous().view({N, C * b * b, H / b, W / b})};
                            }};
  m["NegativeLogLikelihoodLoss"] = OpDef{{"ignore_index", "reduction"}, check_reduction, nullptr, [](Args& a) {
                                           return Ts{nll_onnx(a, a.t(0), a.t(1), a.opt(2))};
                                         }};
  m["SoftmaxCrossEntropyLoss"] = OpDef{{"ignore_index", "reduction"}, check_reduction, nullptr, [](Args& a) {
                                         Tensor lp = log_softmax(a.t(0), 1);
                                         Ts out{nll_onnx(a, lp, a.t(1), a.opt(2))};
                                         if (a.wants_output(1)) out.push_back(lp);
                                         return out;
                                       }};
}

}  // namespace gltensor::model
