// Per-device interop state (interop_state.hpp).
#include "interop/interop_state.hpp"

namespace gltensor::detail {

GLuint InteropState::sampler(bool mipmaps) {
  GLuint& s = samplers_[mipmaps ? 1 : 0];
  if (s == 0) {
    glGenSamplers(1, &s);
    glSamplerParameteri(s, GL_TEXTURE_MIN_FILTER, mipmaps ? GL_NEAREST_MIPMAP_NEAREST : GL_NEAREST);
    glSamplerParameteri(s, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    glSamplerParameteri(s, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glSamplerParameteri(s, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  }
  return s;
}

void InteropState::detach_units(DeviceImpl& d) {
  d.gl().bind_texture_2d(texture_unit(d), 0);
  d.gl().bind_image(image_unit(d), 0, 0, GL_READ_ONLY, GL_RGBA8);
}

void InteropState::free_gl() {
  for (GLuint& s : samplers_)
    if (s) {
      glDeleteSamplers(1, &s);
      s = 0;
    }
}

}  // namespace gltensor::detail
