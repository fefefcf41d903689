// interop: conv2d from texture to texture in one dispatch (gltensor/interop.hpp; the stage kernel
// is frame_stage's).
#include <string>

#include "gltensor/interop.hpp"
#include "interop/frame_stage.hpp"
#include "ops/activation.hpp"
#include "runtime/guard.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor::interop {

namespace {

// A transfer's per-channel scale and bias over its first C channels.
std::vector<double> affine_of(const TextureTransfer& t, std::int64_t C) {
  return std::vector<double>(t.scale.begin(), t.scale.begin() + C);
}
std::vector<double> bias_of(const TextureTransfer& t, std::int64_t C) {
  return std::vector<double>(t.bias.begin(), t.bias.begin() + C);
}

}  // namespace

void conv2d_texture(const Texture& in, const Texture& out, const Tensor& weight, const Tensor& bias,
                    const Conv2dOptions& o, const Epilogue& epi, const TextureTransfer& in_opt,
                    const TextureTransfer& out_opt) {
  const char* op = "interop::conv2d_texture";
  detail::check_defined(op, weight, "weight");
  detail::DeviceImpl& d = detail::dev_of(weight);
  detail::Enter guard(d, op);
  const auto& fin = detail::format_of(op, in.internal_format, false);
  const auto& fout = detail::format_of(op, out.internal_format, true);
  const std::string what = std::string("gltensor::") + op + ": ";
  if (!is_floating(weight.dtype()) || (bias.defined() && !is_floating(bias.dtype())))
    throw DTypeError(what + "weight " + dtype_name(weight.dtype()) +
                     (bias.defined() ? std::string(", bias ") + dtype_name(bias.dtype()) : std::string()) +
                     " (floating dtypes)");
  if (weight.dim() != 4)
    throw ShapeError(what + "weight " + to_string(weight.shape()) + " is not [C_out, C_in, KH, KW]");
  if (o.groups != 1) throw ValueError(what + "groups " + std::to_string(o.groups) + " (only 1)");
  const std::int64_t co = weight.size(0), ci = weight.size(1), kh = weight.size(2), kw = weight.size(3);
  const int cin = in_opt.channels == 0 ? fin.channels : in_opt.channels;
  if (in_opt.channels < 0 || cin > fin.channels)
    throw ValueError(what + std::to_string(in_opt.channels) + " input channels for a " + fin.name + " texture (1.." +
                     std::to_string(fin.channels) + ")");
  if (ci != cin || co < 1 || co > fout.channels || kh < 1 || kw < 1)
    throw ShapeError(what + "weight " + to_string(weight.shape()) + " for a " + std::to_string(cin) + "-channel " +
                     fin.name + " input and a " + fout.name + " output (C_in = " + std::to_string(cin) +
                     ", 1 <= C_out <= " + std::to_string(fout.channels) + ", KH, KW >= 1)");
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != co))
    throw ShapeError(what + "bias " + to_string(bias.shape()) + " for weight " + to_string(weight.shape()) +
                     " (expects [" + std::to_string(co) + "])");
  for (int i = 0; i < 2; ++i)
    if (o.stride[i] < 1 || o.dilation[i] < 1) throw ValueError(what + "stride and dilation must be >= 1");
  for (std::int64_t p : o.padding)
    if (p < 0) throw ValueError(what + "padding must be >= 0");
  if (in.width <= 0 || in.height <= 0)
    throw ValueError(what + "input texture " + std::to_string(in.texture) + " is " + std::to_string(in.width) + " x " +
                     std::to_string(in.height));
  const std::int64_t oh = detail::conv_out_size(in.height, o.padding[0], o.padding[2], o.dilation[0], kh, o.stride[0]),
                     ow = detail::conv_out_size(in.width, o.padding[1], o.padding[3], o.dilation[1], kw, o.stride[1]);
  if (oh <= 0 || ow <= 0)
    throw ShapeError(what + "input texture " + std::to_string(in.width) + " x " + std::to_string(in.height) +
                     " (W x H) is too small for weight " + to_string(weight.shape()) + " (stride " +
                     to_string({o.stride[0], o.stride[1]}) + ", padding " +
                     to_string(Shape(o.padding.begin(), o.padding.end())) + ", dilation " +
                     to_string({o.dilation[0], o.dilation[1]}) + "): the output size would be " + std::to_string(ow) +
                     " x " + std::to_string(oh) + " (W x H)");
  if (oh != out.height || ow != out.width)
    throw ShapeError(what + "a " + std::to_string(in.width) + " x " + std::to_string(in.height) + " input and weight " +
                     to_string(weight.shape()) + " give " + std::to_string(ow) + " x " + std::to_string(oh) +
                     " (W x H), the output texture is " + std::to_string(out.width) + " x " +
                     std::to_string(out.height));
  detail::check_epilogue(op, epi);
  detail::check_epilogue_act_only(op, epi);
  if (&detail::dev_of(weight) != (bias.defined() ? &detail::dev_of(bias) : &d))
    throw DeviceError(what + "weight and bias are on different devices");
  detail::check_texture(op, d, in, fin, false);
  detail::check_texture(op, d, out, fout, true);
  std::vector<detail::FrameStep> pre, post;
  detail::push_affine(pre, affine_of(in_opt, cin), bias_of(in_opt, cin));
  if (epi.act != Activation::none) post.push_back(detail::FrameStep{false, epi, {}, {}});
  detail::push_affine(post, affine_of(out_opt, co), bias_of(out_opt, co));
  const detail::FrameEnd src{&in, &fin, in_opt.origin == Origin::bottom_left, nullptr, false, in.height, in.width, cin},
      dst{&out, &fout, out_opt.origin == Origin::bottom_left, nullptr, false, oh, ow, co};
  detail::run_frame_stage(d, op, weight, bias, o, pre, post, src, dst);
}

}  // namespace gltensor::interop
