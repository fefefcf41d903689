// interop: frame filters from texture to texture in one dispatch (gltensor/interop.hpp,
// glsl/interop/conv_texture.comp).
#include <string>

#include "gltensor/interop.hpp"
#include "interop/interop_state.hpp"
#include "interop/texture_format.hpp"
#include "ops/activation.hpp"
#include "runtime/codegen.hpp"
#include "runtime/launch.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor::interop {

namespace {

struct ConvTextureParams {
  const Texture &in, &out;
  const Conv2dOptions& o;
  const Epilogue& epi;
  const TextureTransfer &in_opt, &out_opt;
  int kh, kw;
  void set(detail::Uniforms& u) const {
    u.i32("u_in_W", in.width), u.i32("u_in_H", in.height), u.i32("u_in_level", in.level);
    u.i32("u_in_flip", in_opt.origin == Origin::bottom_left ? 1 : 0);
    u.i32("u_out_W", out.width), u.i32("u_out_H", out.height);
    u.i32("u_out_flip", out_opt.origin == Origin::bottom_left ? 1 : 0);
    u.i32("u_stride_y", o.stride[0]), u.i32("u_stride_x", o.stride[1]);
    u.i32("u_dil_y", o.dilation[0]), u.i32("u_dil_x", o.dilation[1]);
    u.i32("u_pad_top", o.padding[0]), u.i32("u_pad_left", o.padding[1]);
    u.f32s("u_in_scale", in_opt.scale), u.f32s("u_in_bias", in_opt.bias);
    u.f32s("u_out_scale", out_opt.scale), u.f32s("u_out_bias", out_opt.bias);
    u.f32("u_act_p0", epi.p0), u.f32("u_act_p1", epi.p1);
  }
};

}  // namespace

void conv2d_texture(const Texture& in, const Texture& out, const Tensor& weight, const Tensor& bias,
                    const Conv2dOptions& o, const Epilogue& epi, const TextureTransfer& in_opt,
                    const TextureTransfer& out_opt) {
  const char* op = "interop::conv2d_texture";
  detail::check_defined(op, weight, "weight");
  detail::DeviceImpl& d = detail::dev_of(weight);
  detail::Launch launch(d, op);
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
  const std::int64_t oh = (in.height + o.padding[0] + o.padding[2] - o.dilation[0] * (kh - 1) - 1) / o.stride[0] + 1,
                     ow = (in.width + o.padding[1] + o.padding[3] - o.dilation[1] * (kw - 1) - 1) / o.stride[1] + 1;
  if (oh != out.height || ow != out.width)
    throw ShapeError(what + "a " + std::to_string(in.width) + " x " + std::to_string(in.height) + " input and weight " +
                     to_string(weight.shape()) + " give " + std::to_string(ow) + " x " + std::to_string(oh) +
                     " (W x H), the output texture is " + std::to_string(out.width) + " x " +
                     std::to_string(out.height));
  detail::check_epilogue(op, epi);
  if (&detail::dev_of(weight) != (bias.defined() ? &detail::dev_of(bias) : &d))
    throw DeviceError(what + "weight and bias are on different devices");
  detail::check_texture(op, d, in, fin, false);
  detail::check_texture(op, d, out, fout, true);
  const Tensor w = weight.contiguous();
  auto& st = d.extension<detail::InteropState>();
  const GLuint tunit = detail::InteropState::texture_unit(d), iunit = detail::InteropState::image_unit(d);
  const std::string act = detail::activation_glsl(epi.act);
  // Where the kernel reads the weights (conv_texture.comp): f32 weights as a uniform block where
  // the tensor's range can be bound as one (offset aligned, vec4s inside the buffer, block size),
  // else staged in shared memory where they fit (a quarter of the device's shared memory).
  const std::int64_t wn = w.numel(), wq = (wn + 3) / 4;
  const std::size_t w_off = static_cast<std::size_t>(w.offset()) * 4, w_range = static_cast<std::size_t>(wq) * 16;
  const bool ubo = w.dtype() == DType::f32 && d.caps.max_uniform_bindings > 0 &&
                   static_cast<std::int64_t>(w_range) <= d.caps.max_uniform_block_size &&
                   w_off % static_cast<std::size_t>(std::max(d.caps.uniform_offset_alignment, 1)) == 0 &&
                   w_off + w_range <= w.impl()->storage->block.capacity;
  const bool staged = !ubo && wn * 4 <= std::max<std::int64_t>(d.caps.max_shared_memory / 4, 4096);
  const auto affine = [](const TextureTransfer& t) {
    return t.scale != std::array<float, 4>{1, 1, 1, 1} || t.bias != std::array<float, 4>{0, 0, 0, 0};
  };
  const bool in_affine = affine(in_opt), out_affine = affine(out_opt);
  const GLuint ubo_binding = static_cast<GLuint>(std::max(d.caps.max_uniform_bindings, 1) - 1);
  // The bias likewise (a vec4 from its offset), with the weights, on the binding before theirs.
  const std::size_t b_off = bias.defined() ? static_cast<std::size_t>(bias.offset()) * 4 : 0;
  const bool bias_ubo = ubo && bias.defined() && bias.dtype() == DType::f32 && d.caps.max_uniform_bindings > 1 &&
                        b_off % static_cast<std::size_t>(std::max(d.caps.uniform_offset_alignment, 1)) == 0 &&
                        b_off + 16 <= bias.impl()->storage->block.capacity;
  const bool level0 = in.level == 0;
  // Everything the header below depends on.
  std::string key = "conv_tex|";
  for (std::int64_t v : std::initializer_list<std::int64_t>{
           static_cast<std::int64_t>(w.dtype()),
           bias.defined() ? static_cast<std::int64_t>(bias.dtype()) : std::int64_t{-1}, ci, co, kh, kw,
           static_cast<std::int64_t>(tunit), static_cast<std::int64_t>(iunit),
           ubo ? static_cast<std::int64_t>(ubo_binding) : std::int64_t{-1}, ubo ? wq : 0, staged ? wn : 0,
           in_affine ? 1 : 0, out_affine ? 1 : 0, bias_ubo ? 1 : 0, level0 ? 1 : 0}) {
    key += std::to_string(v);
    key += '|';
  }
  key += fout.image;
  key += '|';
  key += detail::activation_name(epi.act);
  launch.program_keyed(
      key, "conv_texture.comp",
      [&] {
        std::string h = "#define TEX_UNIT " + std::to_string(tunit) + "\n#define IMG_UNIT " + std::to_string(iunit) +
                        "\n#define IMG_FORMAT " + fout.image + "\n#define CI " + std::to_string(ci) + "\n#define CO " +
                        std::to_string(co) + "\n#define KH " + std::to_string(kh) + "\n#define KW " +
                        std::to_string(kw) + "\n";
        if (!act.empty()) h += "#define ACT(x) " + act + "\n";
        if (in_affine) h += "#define IN_AFFINE 1\n";
        if (level0) h += "#define IN_LEVEL0 1\n";
        if (bias_ubo) h += "#define BIAS_UBO_BINDING " + std::to_string(ubo_binding - 1) + "\n";
        if (out_affine) h += "#define OUT_AFFINE 1\n";
        if (ubo)
          h += "#define WQ " + std::to_string(wq) + "\n#define UBO_BINDING " + std::to_string(ubo_binding) + "\n";
        else if (staged)
          h += "#define WN " + std::to_string(wn) + "\n";
        h += detail::operand_glsl(0, w.dtype(), detail::CT::f32, false);
        if (bias.defined()) {
          h += "#define HAS_BIAS 1\n";
          h += detail::operand_glsl(1, bias.dtype(), detail::CT::f32, false);
        }
        return h;
      },
      {16, 16});
  launch.read(w);
  if (bias.defined()) launch.read(bias);
  launch.params(ConvTextureParams{in, out, o, epi, in_opt, out_opt, static_cast<int>(kh), static_cast<int>(kw)})
      .loop_iterations((staged ? static_cast<std::uint64_t>(wn / 256 + 1) : 0) + static_cast<std::uint64_t>(kh) +
                       static_cast<std::uint64_t>(kh * kw) * static_cast<std::uint64_t>(1 + ci * (1 + co)));
  launch.texture(tunit, in.texture, st.sampler(in.level > 0));
  launch.image(iunit, out.texture, out.level, GL_WRITE_ONLY, fout.internal);
  if (ubo) launch.uniform_block(ubo_binding, w, static_cast<GLintptr>(w_off), static_cast<GLsizeiptr>(w_range));
  if (bias_ubo) launch.uniform_block(ubo_binding - 1, bias, static_cast<GLintptr>(b_off), 16);
  launch.groups(static_cast<std::uint64_t>((ow + 15) / 16), static_cast<std::uint64_t>((oh + 15) / 16));
}

}  // namespace gltensor::interop
