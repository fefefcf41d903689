// Per-device interop state (internal): gltensor's samplers, the texture descriptions already
// checked, and the units gltensor uses. (Hazards between texture accesses are the Queue's.)
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>

#include "runtime/device_impl.hpp"

namespace gltensor::detail {

class InteropState : public DeviceExtension {
 public:
  /// A sampler with NEAREST filtering and clamped coordinates; `mipmaps`: NEAREST_MIPMAP_NEAREST
  /// minification (levels above the base).
  GLuint sampler(bool mipmaps);
  /// (texture, level, internal format, width, height) descriptions found true, and whether the
  /// texture is immutable.
  std::map<std::tuple<GLuint, int, GLenum, int, int>, bool> checked;
  /// Texture unit and image unit gltensor uses: the last ones (least likely to matter to an
  /// application that does not restore its own state).
  static GLuint texture_unit(const DeviceImpl& d) {
    return static_cast<GLuint>(std::max(d.caps().max_texture_units, 1) - 1);
  }
  static GLuint image_unit(const DeviceImpl& d) {
    return static_cast<GLuint>(std::max(d.caps().max_image_units, 1) - 1);
  }
  /// Binds 0 to gltensor's texture and image units, so that the next from_texture / to_texture
  /// binds its texture again for real. GL's rule for objects changed in another context (ES 3.2
  /// 5.3.3) is "bind it again after the wait"; NVIDIA's driver skips a glBindImageTexture of the
  /// texture already bound, and then keeps writing the storage the texture had before another
  /// context attached it to a framebuffer (to_texture's stores lost from the second frame on,
  /// tests/interop/test_interop_threads.cpp). Called by acquire().
  static void detach_units(DeviceImpl& d);
  void free_gl() override;

 private:
  GLuint samplers_[2] = {0, 0};
};

}  // namespace gltensor::detail
