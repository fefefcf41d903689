// Texture formats gltensor reads and writes, and the check of an application's texture
// description (internal; shared by the texture transfers and the texture filters).
#pragma once
#include <string>

#include "gltensor/interop.hpp"
#include "runtime/device_impl.hpp"

namespace gltensor::detail {

struct TextureFormat {
  GLenum internal;
  const char* name;
  int channels;
  const char* image;  // image format qualifier; null: read only
};

/// "0x8058".
std::string hex(GLenum e);
/// The format of `internal`; DTypeError naming `op` for one gltensor does not read (or, with
/// `write`, write through an image unit).
const TextureFormat& format_of(const char* op, GLenum internal, bool write);
/// Checks the description against the texture the first time it is seen (binds it to gltensor's
/// texture unit): ValueError (not a texture, no image, mutable texture written on OpenGL ES),
/// DTypeError (another internal format), ShapeError (another size). GL offers no query of a
/// texture's target before GL 4.5: a texture that is not a GL_TEXTURE_2D one raises
/// GL_INVALID_OPERATION at the bind.
void check_texture(const char* op, DeviceImpl& d, const interop::Texture& tex, const TextureFormat& f, bool write);

}  // namespace gltensor::detail
