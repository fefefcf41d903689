// One stage of a frame filter (frame_stage.hpp, glsl/interop/frame_filter.comp).
#include "interop/frame_stage.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "interop/interop_state.hpp"
#include "ops/activation.hpp"
#include "runtime/launch.hpp"
#include "runtime/variant.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor::detail {

void push_affine(std::vector<FrameStep>& steps, std::vector<double> s, std::vector<double> b) {
  if (!steps.empty() && steps.back().affine) {  // (x s0 + b0) s + b = x (s0 s) + (b0 s + b)
    const FrameStep& prev = steps.back();
    for (std::size_t c = 0; c < s.size(); ++c) {
      b[c] += double(prev.b[c]) * s[c];
      s[c] *= double(prev.s[c]);
    }
    steps.pop_back();
  }
  bool identity = true;
  for (std::size_t c = 0; c < s.size(); ++c) identity = identity && s[c] == 1.0 && b[c] == 0.0;
  if (identity) return;
  FrameStep st;
  st.affine = true;
  for (std::size_t c = 0; c < s.size(); ++c) {
    st.s.push_back(static_cast<float>(s[c]));
    st.b.push_back(static_cast<float>(b[c]));
  }
  steps.push_back(std::move(st));
}

std::int64_t mid_words(std::int64_t H, std::int64_t W, std::int64_t C, bool f16) {
  return H * W * (f16 ? (C + 1) / 2 : C);
}

std::int64_t conv_out_size(std::int64_t in, std::int64_t pad0, std::int64_t pad1, std::int64_t dil, std::int64_t k,
                           std::int64_t stride) {
  const std::int64_t span = in + pad0 + pad1 - dil * (k - 1) - 1;
  return span < 0 ? 0 : span / stride + 1;
}

namespace {

// The statements of a list of steps (frame_filter.comp's PRE_STEPS / POST_STEPS): on `v`, channel
// `ch`, parameters in <prefix>_s / <prefix>_b at step * C + ch.
std::string steps_glsl(const std::vector<FrameStep>& steps, const char* prefix, const char* C) {
  std::string g;
  const auto param = [&](char sb, std::size_t i, bool channel) {  // e.g. u_post_s[1 * CO + ch]
    g.append(prefix).append(sb == 's' ? "_s[" : "_b[").append(std::to_string(i)).append(" * ").append(C);
    g.append(channel ? " + ch]" : "]");
  };
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].affine) {
      g.append("v = v * ");
      param('s', i, true);
      g.append(" + ");
      param('b', i, true);
      g.append("; ");
    } else {
      g.append("{ float x = v; float u_act_p0 = ");
      param('s', i, false);
      g.append(", u_act_p1 = ");
      param('b', i, false);
      g.append("; v = ").append(activation_glsl(steps[i].act.act)).append("; } ");
    }
  }
  return g;
}

// Per-channel parameter arrays of a list of steps over C channels (at least one element).
void step_arrays(const std::vector<FrameStep>& steps, std::int64_t C, std::vector<float>& s, std::vector<float>& b) {
  s.assign(static_cast<std::size_t>(std::max<std::int64_t>(1, C * static_cast<std::int64_t>(steps.size()))), 0.0f);
  b = s;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const std::size_t at = i * static_cast<std::size_t>(C);
    if (steps[i].affine) {
      std::copy(steps[i].s.begin(), steps[i].s.end(), s.begin() + static_cast<std::ptrdiff_t>(at));
      std::copy(steps[i].b.begin(), steps[i].b.end(), b.begin() + static_cast<std::ptrdiff_t>(at));
    } else {
      s[at] = steps[i].act.p0, b[at] = steps[i].act.p1;
    }
  }
}

}  // namespace

Defines FrameStageVariant::defines() const {
  Defines d;
  d.value("CI", ci).value("CO", co).value("KH", kh).value("KW", kw);
  if (tex_unit >= 0) d.flag("IN_TEXTURE").value("TEX_UNIT", tex_unit).flag("IN_LEVEL0", level0);
  if (tex_unit < 0) d.flag("MID_IN_F16", mid_in_f16);
  if (img_unit >= 0) d.flag("OUT_IMAGE").value("IMG_UNIT", img_unit).ident("IMG_FORMAT", img_format);
  if (img_unit < 0) d.flag("MID_OUT_F16", mid_out_f16);
  if (wq > 0)
    d.value("WQ", wq).value("UBO_BINDING", ubo_binding).flag("WQ16", wdtype == DType::f16);
  else if (wn > 0)
    d.value("WN", wn);
  if (wq == 0) d.operand(0, wdtype, CT::f32, false);
  d.flag("HAS_BIAS", bias);
  if (bias && bq > 0) d.value("BIAS_UBO_BINDING", ubo_binding - 1).value("BQ", bq).flag("BQ16", bdtype == DType::f16);
  if (bias && bq == 0) d.operand(1, bdtype, CT::f32, false);
  if (tex_unit < 0) d.operand(2, DType::i32, CT::i32, false);
  if (img_unit < 0) d.operand(3, DType::i32, CT::i32, true);
  d.ident("PRE_STEPS", pre).ident("POST_STEPS", post).value("PRE_N", pre_n).value("POST_N", post_n);
  return d;
}

Defines TextureVariant::defines() const {
  Defines d;
  if (from_texture)
    d.flag("FROM_TEXTURE").value("TEX_UNIT", unit);
  else
    d.value("IMG_UNIT", unit).ident("IMG_FORMAT", img_format);
  d.value("CH", channels).operand(0, dtype, CT::f32, from_texture);
  return d;
}

std::vector<TextureVariant> TextureVariant::space() {
  std::vector<TextureVariant> out;
  for (bool from : {true, false})
    for (std::int64_t ch = 1; ch <= 4; ++ch)
      for (DType dt : {DType::f32, DType::f16}) {
        TextureVariant v;
        v.from_texture = from, v.unit = from ? 15 : 7, v.channels = ch, v.dtype = dt;
        v.img_format = ch == 1 ? "r32f" : dt == DType::f16 ? "rgba16f" : "rgba8";
        out.push_back(v);
      }
  return out;
}

std::vector<FrameStageVariant> FrameStageVariant::space() {
  std::vector<FrameStageVariant> out;
  FrameStageVariant base;
  base.ci = 3, base.co = 5, base.kh = base.kw = 3, base.tex_unit = 15, base.img_unit = 7, base.ubo_binding = 23;
  // Inputs and outputs: texture -> image, texture -> f32 / f16 intermediate, intermediate -> image,
  // intermediate -> intermediate; a level above 0.
  for (int io = 0; io < 6; ++io) {
    FrameStageVariant v = base;
    if (io == 1 || io == 2) v.img_unit = -1, v.mid_out_f16 = io == 2;
    if (io == 3 || io == 4) v.tex_unit = -1, v.mid_in_f16 = io == 4, v.co = 4;
    if (io == 5) v.tex_unit = -1, v.img_unit = -1, v.mid_in_f16 = true;
    v.level0 = io != 0;
    out.push_back(v);
  }
  // Weights and bias: uniform blocks of f32 or f16, staged in shared memory, read from the SSBO.
  for (DType dt : {DType::f32, DType::f16})
    for (int place = 0; place < 3; ++place)
      for (int b = 0; b < 3; ++b) {
        FrameStageVariant v = base;
        v.co = 4, v.wdtype = v.bdtype = dt, v.bias = b > 0;
        if (place == 0) v.wq = dt == DType::f16 ? 14 : 27, v.bq = b == 2 ? 1 : 0;
        if (place == 1) v.wn = 108;
        out.push_back(v);
      }
  // Fused steps before and after: affine and activations with parameters.
  FrameStageVariant v = base;
  v.pre = "v = v * u_pre_s[0 * CI + ch] + u_pre_b[0 * CI + ch]; ";
  v.post =
      "{ float x = v; float u_act_p0 = u_post_s[0 * CO], u_act_p1 = u_post_b[0 * CO]; v = act_clip(x, u_act_p0, "
      "u_act_p1); } v = v * u_post_s[1 * CO + ch] + u_post_b[1 * CO + ch]; ";
  v.pre_n = 3, v.post_n = 10;
  out.push_back(v);
  return out;
}

namespace {

struct FrameStageParams {
  const FrameEnd &in, &out;
  const Conv2dOptions& o;
  const std::vector<float>&pre_s, &pre_b, &post_s, &post_b;
  void set(Uniforms& u) const {
    u.i32("u_in_W", in.W), u.i32("u_in_H", in.H), u.i32("u_in_level", in.tex ? in.tex->level : 0);
    u.i32("u_in_flip", in.flip ? 1 : 0);
    u.i32("u_out_W", out.W), u.i32("u_out_H", out.H), u.i32("u_out_flip", out.flip ? 1 : 0);
    u.i32("u_stride_y", o.stride[0]), u.i32("u_stride_x", o.stride[1]);
    u.i32("u_dil_y", o.dilation[0]), u.i32("u_dil_x", o.dilation[1]);
    u.i32("u_pad_top", o.padding[0]), u.i32("u_pad_left", o.padding[1]);
    u.f32s("u_pre_s", pre_s), u.f32s("u_pre_b", pre_b), u.f32s("u_post_s", post_s), u.f32s("u_post_b", post_b);
  }
};

// Whether bytes [off, off + size) of `t`'s storage can be bound as a uniform block of its
// f32 or f16 elements (8 f16 per vec4: block_bytes).
bool ubo_range_ok(const DeviceImpl& d, const Tensor& t, std::size_t off, std::size_t size) {
  return (t.dtype() == DType::f32 || t.dtype() == DType::f16) &&
         static_cast<std::int64_t>(size) <= d.caps().max_uniform_block_size &&
         off % static_cast<std::size_t>(std::max(d.caps().uniform_offset_alignment, 1)) == 0 &&
         off + size <= t.impl()->storage->block.capacity;
}

// Bytes of n elements of `dtype` in whole vec4s, and the vec4 count.
std::int64_t block_vec4s(std::int64_t n, DType dtype) { return dtype == DType::f16 ? (n + 7) / 8 : (n + 3) / 4; }

}  // namespace

void run_frame_stage(DeviceImpl& d, const char* op, const Tensor& weight, const Tensor& bias, const Conv2dOptions& o,
                     const std::vector<FrameStep>& pre, const std::vector<FrameStep>& post, const FrameEnd& in,
                     const FrameEnd& out) {
  Launch launch(d, op);
  const Tensor w = weight.contiguous();
  FrameStageVariant v;
  v.co = w.size(0), v.ci = w.size(1), v.kh = w.size(2), v.kw = w.size(3);
  // Where the kernel reads the weights: f32 weights as a uniform block where the tensor's range
  // can be bound as one, else staged in shared memory where they fit (a quarter of the device's
  // shared memory), else from the SSBO.
  const std::int64_t wn = w.numel();
  const std::size_t w_off = static_cast<std::size_t>(w.offset()) * itemsize(w.dtype()),
                    w_range = static_cast<std::size_t>(block_vec4s(wn, w.dtype())) * 16;
  const bool ubo = d.caps().max_uniform_bindings > 1 && ubo_range_ok(d, w, w_off, w_range);
  v.ubo_binding = std::max(d.caps().max_uniform_bindings, 2) - 1;
  if (ubo)
    v.wq = block_vec4s(wn, w.dtype());
  else if (wn * 4 <= std::max<std::int64_t>(d.caps().max_shared_memory / 4, 4096))
    v.wn = wn;
  v.wdtype = w.dtype();
  v.bias = bias.defined();
  v.bdtype = v.bias ? bias.dtype() : DType::f32;
  const std::size_t b_off = v.bias ? static_cast<std::size_t>(bias.offset()) * itemsize(v.bdtype) : 0,
                    b_range = static_cast<std::size_t>(block_vec4s(v.co, v.bdtype)) * 16;
  if (v.bias && ubo && ubo_range_ok(d, bias, b_off, b_range)) v.bq = block_vec4s(v.co, v.bdtype);
  if (in.tex) {
    v.tex_unit = InteropState::texture_unit(d), v.level0 = in.tex->level == 0;
  } else {
    v.mid_in_f16 = in.mid_f16;
  }
  if (out.tex) {
    v.img_unit = InteropState::image_unit(d), v.img_format = out.format->image;
  } else {
    v.mid_out_f16 = out.mid_f16;
  }
  v.pre = steps_glsl(pre, "u_pre", "CI"), v.post = steps_glsl(post, "u_post", "CO");
  v.pre_n = std::max<std::int64_t>(1, v.ci * static_cast<std::int64_t>(pre.size()));
  v.post_n = std::max<std::int64_t>(1, v.co * static_cast<std::int64_t>(post.size()));
  std::vector<float> pre_s, pre_b, post_s, post_b;
  step_arrays(pre, v.ci, pre_s, pre_b);
  step_arrays(post, v.co, post_s, post_b);
  launch.program(v.kFile, v.defines(), {16, 16});
  // SSBO bindings by position: 0 weight, 1 bias, 2 the input intermediate, 3 the output one;
  // slots a variant does not read hold the weight (bound, never declared).
  launch.read(w).read(v.bias ? bias : w);
  if (out.mid) {
    launch.read(in.mid ? *in.mid : w).write(*out.mid);
  } else if (in.mid) {
    launch.read(*in.mid);
  }
  const auto u = [](std::int64_t x) { return static_cast<std::uint64_t>(x); };
  launch.params(FrameStageParams{in, out, o, pre_s, pre_b, post_s, post_b})
      .loop_iterations(u(v.wn / 256 + 1) + u(3 * v.co) + u(v.kh) +
                       u(v.kh * v.kw) * u(1 + v.ci * (2 + static_cast<std::int64_t>(pre.size())) + v.co * (1 + v.ci)));
  auto& st = d.extension<InteropState>();
  if (in.tex) launch.texture(static_cast<GLuint>(v.tex_unit), in.tex->texture, st.sampler(in.tex->level > 0));
  if (out.tex)
    launch.image(static_cast<GLuint>(v.img_unit), out.tex->texture, out.tex->level, GL_WRITE_ONLY,
                 out.format->internal);
  if (ubo)
    launch.uniform_block(static_cast<GLuint>(v.ubo_binding), w, static_cast<GLintptr>(w_off),
                         static_cast<GLsizeiptr>(w_range));
  if (v.bq > 0)
    launch.uniform_block(static_cast<GLuint>(v.ubo_binding - 1), bias, static_cast<GLintptr>(b_off),
                         static_cast<GLsizeiptr>(b_range));
  launch.groups(u((out.W + 15) / 16), u((out.H + 15) / 16));
}

}  // namespace gltensor::detail
