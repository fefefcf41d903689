// Per-device interop state (internal): gltensor's samplers, the texture descriptions already
// checked, and the textures gltensor wrote with image stores since its last barrier.
#pragma once
#include <cstdint>
#include <map>
#include <tuple>
#include <unordered_set>

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
  /// Textures written by image stores, and read by texture fetches, since gltensor's last barrier
  /// covering them (a read after a write, or a write after either, needs one).
  std::unordered_set<GLuint> images_written, textures_read;
  /// Issues glMemoryBarrier(TEXTURE_FETCH | SHADER_IMAGE_ACCESS) where `texture` is in the sets
  /// (`write`: also when only read), then forgets them.
  void barrier_before(GLuint texture, bool write);
  void forget_textures() {
    images_written.clear();
    textures_read.clear();
  }
  void free_gl() override;

 private:
  GLuint samplers_[2] = {0, 0};
};

}  // namespace gltensor::detail
