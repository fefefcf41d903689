// interop: texture <-> tensor transfers on the GPU (gltensor/interop.hpp, glsl/interop/texture.comp).
#include <cstdio>
#include <string>

#include "gltensor/interop.hpp"
#include "interop/frame_stage.hpp"
#include "interop/interop_state.hpp"
#include "interop/texture_format.hpp"
#include "runtime/codegen.hpp"
#include "runtime/launch.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor::detail {

namespace {
constexpr TextureFormat kFormats[] = {
    {GL_RGBA8, "GL_RGBA8", 4, "rgba8"},
    {GL_RGBA16F, "GL_RGBA16F", 4, "rgba16f"},
    {GL_RGBA32F, "GL_RGBA32F", 4, "rgba32f"},
    {GL_R32F, "GL_R32F", 1, "r32f"},
    {GL_R8, "GL_R8", 1, nullptr},
    {GL_RG8, "GL_RG8", 2, nullptr},
    {GL_R16F, "GL_R16F", 1, nullptr},
    {GL_RG16F, "GL_RG16F", 2, nullptr},
    {GL_RG32F, "GL_RG32F", 2, nullptr},
};

}  // namespace

std::string hex(GLenum e) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%04x", e);
  return b;
}

const TextureFormat& format_of(const char* op, GLenum internal, bool write) {
  for (const TextureFormat& f : kFormats)
    if (f.internal == internal) {
      if (write && !f.image)
        throw DTypeError(std::string("gltensor::") + op + ": " + f.name +
                         " textures cannot be written (image formats: GL_RGBA8, GL_RGBA16F, GL_RGBA32F, GL_R32F)");
      return f;
    }
  throw DTypeError(std::string("gltensor::") + op + ": texture internal format " + hex(internal) +
                   " is not supported (" +
                   (write ? "GL_RGBA8, GL_RGBA16F, GL_RGBA32F, GL_R32F"
                          : "GL_RGBA8, GL_RGBA16F, GL_RGBA32F, GL_R32F, GL_R8, GL_RG8, GL_R16F, GL_RG16F, GL_RG32F") +
                   ")");
}

namespace {
[[noreturn]] void throw_mutable(const char* op, const std::string& what) {
  throw ValueError(std::string("gltensor::") + op + ": " + what +
                   " is mutable (glTexImage2D): OpenGL ES binds only immutable textures (glTexStorage2D) to image "
                   "units");
}

}  // namespace

void check_texture(const char* op, DeviceImpl& d, const interop::Texture& tex, const TextureFormat& f, bool write) {
  auto& st = d.extension<detail::InteropState>();
  const std::string what = "texture " + std::to_string(tex.texture) + " level " + std::to_string(tex.level);
  if (tex.width <= 0 || tex.height <= 0 || tex.level < 0)
    throw ValueError(std::string("gltensor::") + op + ": " + what + ": width " + std::to_string(tex.width) +
                     ", height " + std::to_string(tex.height) + " (must be positive), level >= 0");
  const auto key =
      std::make_tuple(tex.texture, tex.level, static_cast<GLenum>(tex.internal_format), tex.width, tex.height);
  const auto known = st.checked.find(key);
  if (known != st.checked.end()) {
    if (write && !known->second && !d.caps().desktop) throw_mutable(op, what);
    return;
  }
  if (tex.texture == 0 || !glIsTexture(tex.texture))
    throw ValueError(std::string("gltensor::") + op + ": " + std::to_string(tex.texture) +
                     " is not a texture of the device's context (or its share group)");
  d.gl().bind_texture_2d(InteropState::texture_unit(d), tex.texture);
  GLint w = 0, h = 0, internal = 0, immutable = 0, levels = 0;
  glGetTexLevelParameteriv(GL_TEXTURE_2D, tex.level, GL_TEXTURE_WIDTH, &w);
  glGetTexLevelParameteriv(GL_TEXTURE_2D, tex.level, GL_TEXTURE_HEIGHT, &h);
  glGetTexLevelParameteriv(GL_TEXTURE_2D, tex.level, GL_TEXTURE_INTERNAL_FORMAT, &internal);
  glGetTexParameteriv(GL_TEXTURE_2D, GL_TEXTURE_IMMUTABLE_FORMAT, &immutable);
  glGetTexParameteriv(GL_TEXTURE_2D, GL_TEXTURE_IMMUTABLE_LEVELS, &levels);
  if (w == 0 || h == 0 || (immutable && tex.level >= levels))
    throw ValueError(std::string("gltensor::") + op + ": " + what + " has no image (not specified)");
  // Unsized RGBA with GL_UNSIGNED_BYTE (glTexImage2D(GL_RGBA, ...)) is RGBA8.
  const bool same = static_cast<GLenum>(internal) == f.internal || (internal == GL_RGBA && f.internal == GL_RGBA8);
  if (!same)
    throw DTypeError(std::string("gltensor::") + op + ": " + what + " has internal format " +
                     hex(static_cast<GLenum>(internal)) + ", not " + f.name + " as described");
  if (w != tex.width || h != tex.height)
    throw ShapeError(std::string("gltensor::") + op + ": " + what + " is " + std::to_string(w) + " x " +
                     std::to_string(h) + ", not " + std::to_string(tex.width) + " x " + std::to_string(tex.height) +
                     " as described");
  st.checked[key] = immutable != 0;
  if (write && !immutable && !d.caps().desktop) throw_mutable(op, what);
}

}  // namespace gltensor::detail

namespace gltensor::interop {

using detail::DeviceImpl;

namespace {
using detail::check_texture;
using detail::format_of;
using detail::InteropState;
using detail::TextureFormat;
GLuint texture_unit(const DeviceImpl& d) { return InteropState::texture_unit(d); }
GLuint image_unit(const DeviceImpl& d) { return InteropState::image_unit(d); }

// Uniforms of texture.comp.
struct TextureParams {
  const Texture& tex;
  const TextureTransfer& opt;
  int channels;
  std::int64_t off;
  std::uint32_t stride[3];  // channel, row, column (elements)
  void set(detail::Uniforms& u) const {
    u.i32("u_W", tex.width), u.i32("u_H", tex.height), u.i32("u_C", channels), u.i32("u_level", tex.level);
    u.i32("u_flip", opt.origin == Origin::bottom_left ? 1 : 0);
    u.u32("u_off", off);
    u.u32s("u_stride", std::span<const std::uint32_t>(stride, 3));
    u.f32s("u_scale", opt.scale);
    u.f32s("u_bias", opt.bias);
  }
};

void check_channels(const char* op, int channels, const TextureFormat& f) {
  if (channels < 1 || channels > f.channels)
    throw ValueError(std::string("gltensor::") + op + ": " + std::to_string(channels) + " channels for a " + f.name +
                     " texture (1.." + std::to_string(f.channels) + ")");
}

}  // namespace

Tensor from_texture(const Device& dev, const Texture& tex, const TextureTransfer& opt) {
  const char* op = "interop::from_texture";
  if (!dev.valid()) throw ValueError("gltensor::interop::from_texture: invalid Device handle");
  if (opt.dtype != DType::f32 && opt.dtype != DType::f16)
    throw DTypeError(std::string("gltensor::interop::from_texture: dtype ") + dtype_name(opt.dtype) +
                     " (float32 or float16)");
  DeviceImpl& d = *dev.impl();
  detail::Launch launch(d, op);
  const TextureFormat& f = format_of(op, tex.internal_format, false);
  const int C = opt.channels == 0 ? f.channels : opt.channels;
  check_channels(op, C, f);
  check_texture(op, d, tex, f, false);
  const std::int64_t H = tex.height, W = tex.width;
  const bool nchw = opt.layout == Layout::nchw;
  Tensor out = detail::alloc(d, nchw ? Shape{1, C, H, W} : Shape{1, H, W, C}, opt.dtype, op);
  auto& st = d.extension<detail::InteropState>();
  const GLuint unit = texture_unit(d);
  const std::uint32_t s_c = static_cast<std::uint32_t>(nchw ? H * W : 1);
  const std::uint32_t s_y = static_cast<std::uint32_t>(nchw ? W : W * C),
                      s_x = static_cast<std::uint32_t>(nchw ? 1 : C);
  const detail::TextureVariant v{true, static_cast<std::int64_t>(unit), "", C, opt.dtype};
  launch.program(v.kFile, v.defines(), {16, 16});
  launch.write(out).params(TextureParams{tex, opt, C, 0, {s_c, s_y, s_x}}).loop_iterations(4);
  launch.texture(unit, tex.texture, st.sampler(tex.level > 0));
  launch.groups(static_cast<std::uint64_t>((W + 15) / 16), static_cast<std::uint64_t>((H + 15) / 16));
  return out;
}

void to_texture(const Tensor& t, const Texture& tex, const TextureTransfer& opt) {
  const char* op = "interop::to_texture";
  detail::check_defined(op, t);
  DeviceImpl& d = detail::dev_of(t);
  detail::Launch launch(d, op);
  const TextureFormat& f = format_of(op, tex.internal_format, true);
  const bool nchw = opt.layout == Layout::nchw;
  if (!(t.dim() == 3 || (t.dim() == 4 && t.size(0) == 1)))
    throw ShapeError("gltensor::interop::to_texture: expects " +
                     std::string(nchw ? "[1, C, H, W] or [C, H, W]" : "[1, H, W, C] or [H, W, C]") + ", got " +
                     to_string(t.shape()));
  const std::int64_t lead = t.dim() - 3;
  const int cd = static_cast<int>(lead + (nchw ? 0 : 2)), yd = static_cast<int>(lead + (nchw ? 1 : 0)),
            xd = static_cast<int>(lead + (nchw ? 2 : 1));
  const std::int64_t C = t.size(cd), H = t.size(yd), W = t.size(xd);
  if (opt.channels != 0 && opt.channels != C)
    throw ShapeError("gltensor::interop::to_texture: the tensor " + to_string(t.shape()) + " has " + std::to_string(C) +
                     " channels, TextureTransfer::channels says " + std::to_string(opt.channels));
  check_channels(op, static_cast<int>(C), f);
  if (H != tex.height || W != tex.width)
    throw ShapeError("gltensor::interop::to_texture: the tensor " + to_string(t.shape()) + " is " + std::to_string(W) +
                     " x " + std::to_string(H) + " (W x H), the texture level " + std::to_string(tex.width) + " x " +
                     std::to_string(tex.height));
  check_texture(op, d, tex, f, true);
  const Shape& s = t.strides();
  const GLuint unit = image_unit(d);
  const detail::TextureVariant v{false, static_cast<std::int64_t>(unit), f.image, C, t.dtype()};
  launch.program(v.kFile, v.defines(), {16, 16});
  launch.read(t)
      .params(TextureParams{
          tex,
          opt,
          static_cast<int>(C),
          t.offset(),
          {static_cast<std::uint32_t>(s[cd]), static_cast<std::uint32_t>(s[yd]), static_cast<std::uint32_t>(s[xd])}})
      .loop_iterations(4);
  launch.image(unit, tex.texture, tex.level, GL_WRITE_ONLY, f.internal);
  launch.groups(static_cast<std::uint64_t>((W + 15) / 16), static_cast<std::uint64_t>((H + 15) / 16));
}

}  // namespace gltensor::interop
