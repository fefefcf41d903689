// The GL bindings gltensor changes (gl_state.hpp).
#include "runtime/gl_state.hpp"

#include <algorithm>
#include <string>

#include "gltensor/errors.hpp"

namespace gltensor::detail {

namespace {
constexpr GLenum kGenericQuery[] = {GL_SHADER_STORAGE_BUFFER_BINDING, GL_COPY_READ_BUFFER_BINDING,
                                    GL_COPY_WRITE_BUFFER_BINDING,     GL_PIXEL_PACK_BUFFER_BINDING,
                                    GL_PIXEL_UNPACK_BUFFER_BINDING,   GL_UNIFORM_BUFFER_BINDING};
constexpr GLenum kGenericTarget[] = {GL_SHADER_STORAGE_BUFFER, GL_COPY_READ_BUFFER,    GL_COPY_WRITE_BUFFER,
                                     GL_PIXEL_PACK_BUFFER,     GL_PIXEL_UNPACK_BUFFER, GL_UNIFORM_BUFFER};
}  // namespace

void GlState::restore_range(GLenum target, GLuint index, const Range& r) {
  if (r.buffer != 0 && r.size > 0)
    glBindBufferRange(target, index, static_cast<GLuint>(r.buffer), r.start, r.size);
  else
    glBindBufferBase(target, index, static_cast<GLuint>(r.buffer));  // a whole buffer, or none
}

GLenum GlState::gl_target(Target t) { return kGenericTarget[t]; }

void GlState::init(int ssbo_bindings, int texture_units, int image_units, int uniform_bindings) {
  const auto n = [](int v) { return static_cast<std::size_t>(std::max(v, 1)); };
  ssbo_.assign(n(ssbo_bindings), kUnknown);
  texture_2d_.assign(n(texture_units), kUnknown);
  sampler_.assign(n(texture_units), kUnknown);
  image_.assign(n(image_units), kUnknown);
  saved_ssbo_.assign(ssbo_.size(), {});
  saved_texture_2d_.assign(texture_2d_.size(), 0);
  saved_sampler_.assign(sampler_.size(), 0);
  saved_image_.assign(image_.size(), {});
  ubo_.assign(n(uniform_bindings), {});
  saved_ubo_.assign(ubo_.size(), {});
  const std::size_t sizes[kKinds] = {
      1, kTargets, ssbo_.size(), 1, texture_2d_.size(), sampler_.size(), image_.size(), ubo_.size()};
  for (int k = 0; k < kKinds; ++k) saved_flags_[k].assign(sizes[k], 0);
}

void GlState::invalidate() {
  program_ = active_texture_ = kUnknown;
  std::fill(std::begin(generic_), std::end(generic_), kUnknown);
  std::fill(ssbo_.begin(), ssbo_.end(), kUnknown);
  std::fill(texture_2d_.begin(), texture_2d_.end(), kUnknown);
  std::fill(sampler_.begin(), sampler_.end(), kUnknown);
  std::fill(image_.begin(), image_.end(), kUnknown);
  std::fill(ubo_.begin(), ubo_.end(), UboRange{});
}

void GlState::begin(bool save, bool forget) {
  if (forget) invalidate();
  save_ = save;
  entered_ = true;
}

void GlState::require_entry(const char* what) const {
  if (!entered_)
    throw DeviceError(std::string("gltensor internal error: ") + what +
                      " outside an entry into the device (runtime/guard.hpp): it would go to whatever context is "
                      "current, unsaved");
}

bool GlState::mark(std::vector<std::uint8_t>& flags, Kind kind, std::uint32_t index) {
  if (!save_ || flags[index]) return false;
  flags[index] = 1;
  saved_.push_back({kind, index});
  return true;
}

void GlState::use_program(GLuint program) {
  require_entry("glUseProgram");
  if (program_ == program) return;
  if (mark(saved_flags_[kProgram], kProgram, 0)) {
    glGetIntegerv(GL_CURRENT_PROGRAM, &saved_program_);
    ++saved_reads_;
  }
  glUseProgram(program);
  program_ = program;
}

void GlState::bind_buffer(Target t, GLuint buffer) {
  require_entry("glBindBuffer");
  if (generic_[t] == buffer) return;
  if (mark(saved_flags_[kGeneric], kGeneric, t)) {
    glGetIntegerv(kGenericQuery[t], &saved_generic_[t]);
    ++saved_reads_;
  }
  glBindBuffer(kGenericTarget[t], buffer);
  generic_[t] = buffer;
}

void GlState::bind_ssbo(GLuint index, GLuint buffer) {
  require_entry("glBindBufferBase");
  if (index < ssbo_.size() && ssbo_[index] == buffer) return;
  if (mark(saved_flags_[kGeneric], kGeneric, kSsbo)) {  // glBindBufferBase sets it too
    glGetIntegerv(GL_SHADER_STORAGE_BUFFER_BINDING, &saved_generic_[kSsbo]);
    ++saved_reads_;
  }
  if (index < ssbo_.size() && mark(saved_flags_[kIndexedSsbo], kIndexedSsbo, index)) {
    Range& r = saved_ssbo_[index];
    glGetIntegeri_v(GL_SHADER_STORAGE_BUFFER_BINDING, index, &r.buffer);
    r.start = r.size = 0;
    ++saved_reads_;
    if (r.buffer != 0) {  // a range binding keeps its range (size 0: the whole buffer)
      glGetInteger64i_v(GL_SHADER_STORAGE_BUFFER_START, index, &r.start);
      glGetInteger64i_v(GL_SHADER_STORAGE_BUFFER_SIZE, index, &r.size);
      saved_reads_ += 2;
    }
  }
  glBindBufferBase(GL_SHADER_STORAGE_BUFFER, index, buffer);
  if (index < ssbo_.size()) ssbo_[index] = buffer;
  generic_[kSsbo] = buffer;
}

void GlState::bind_ubo(GLuint index, GLuint buffer, GLintptr offset, GLsizeiptr size) {
  require_entry("glBindBufferRange");
  UboRange& c = ubo_[index];
  if (c.buffer == buffer && c.offset == offset && c.size == size) return;
  if (mark(saved_flags_[kGeneric], kGeneric, kUniform)) {  // glBindBufferRange sets it too
    glGetIntegerv(GL_UNIFORM_BUFFER_BINDING, &saved_generic_[kUniform]);
    ++saved_reads_;
  }
  if (mark(saved_flags_[kIndexedUbo], kIndexedUbo, index)) {
    Range& r = saved_ubo_[index];
    glGetIntegeri_v(GL_UNIFORM_BUFFER_BINDING, index, &r.buffer);
    r.start = r.size = 0;
    ++saved_reads_;
    if (r.buffer != 0) {
      glGetInteger64i_v(GL_UNIFORM_BUFFER_START, index, &r.start);
      glGetInteger64i_v(GL_UNIFORM_BUFFER_SIZE, index, &r.size);
      saved_reads_ += 2;
    }
  }
  glBindBufferRange(GL_UNIFORM_BUFFER, index, buffer, offset, size);
  c = {buffer, offset, size};
  generic_[kUniform] = buffer;
}

void GlState::save_active_texture() {
  if (mark(saved_flags_[kActiveTexture], kActiveTexture, 0)) {
    glGetIntegerv(GL_ACTIVE_TEXTURE, &saved_active_texture_);
    ++saved_reads_;
  }
}

void GlState::set_active_texture(GLuint unit) {
  if (active_texture_ == unit) return;
  save_active_texture();
  glActiveTexture(GL_TEXTURE0 + unit);
  active_texture_ = unit;
}

void GlState::bind_texture_2d(GLuint unit, GLuint texture) {
  require_entry("glBindTexture");
  if (texture_2d_[unit] == texture) return;
  set_active_texture(unit);
  if (mark(saved_flags_[kTexture2d], kTexture2d, unit)) {
    glGetIntegerv(GL_TEXTURE_BINDING_2D, &saved_texture_2d_[unit]);
    ++saved_reads_;
  }
  glBindTexture(GL_TEXTURE_2D, texture);
  texture_2d_[unit] = texture;
}

void GlState::bind_sampler(GLuint unit, GLuint sampler) {
  require_entry("glBindSampler");
  if (sampler_[unit] == sampler) return;
  if (mark(saved_flags_[kSampler], kSampler, unit)) {
    // GL_SAMPLER_BINDING is per active unit.
    set_active_texture(unit);
    glGetIntegerv(GL_SAMPLER_BINDING, &saved_sampler_[unit]);
    ++saved_reads_;
  }
  glBindSampler(unit, sampler);
  sampler_[unit] = sampler;
}

void GlState::bind_image(GLuint unit, GLuint texture, GLint level, GLenum access, GLenum format) {
  require_entry("glBindImageTexture");
  if (mark(saved_flags_[kImage], kImage, unit)) {
    Image& s = saved_image_[unit];
    glGetIntegeri_v(GL_IMAGE_BINDING_NAME, unit, &s.texture);
    glGetIntegeri_v(GL_IMAGE_BINDING_LEVEL, unit, &s.level);
    glGetIntegeri_v(GL_IMAGE_BINDING_LAYERED, unit, &s.layered);
    glGetIntegeri_v(GL_IMAGE_BINDING_LAYER, unit, &s.layer);
    glGetIntegeri_v(GL_IMAGE_BINDING_ACCESS, unit, &s.access);
    glGetIntegeri_v(GL_IMAGE_BINDING_FORMAT, unit, &s.format);
    saved_reads_ += 6;
  }
  glBindImageTexture(unit, texture, level, GL_FALSE, 0, access, format);
  image_[unit] = texture;
}

void GlState::forget_buffer(GLuint buffer) {
  for (auto& g : generic_)
    if (g == buffer) g = 0;
  for (auto& b : ssbo_)
    if (b == buffer) b = 0;
  for (auto& u : ubo_)
    if (u.buffer == buffer) u = {};
}

void GlState::forget_program(GLuint program) {
  if (program_ == program) program_ = kUnknown;
}

void GlState::end() {
  entered_ = false;
  save_ = false;
  if (saved_.empty()) return;
  // Buffers and programs first; texture and sampler bindings need their unit active, so the
  // active unit goes back last.
  bool textures = false;
  for (const Slot& s : saved_) {
    switch (s.kind) {
      case kProgram:
        glUseProgram(static_cast<GLuint>(saved_program_));
        program_ = static_cast<GLuint>(saved_program_);
        break;
      case kIndexedSsbo: {
        restore_range(GL_SHADER_STORAGE_BUFFER, s.index, saved_ssbo_[s.index]);
        ssbo_[s.index] = kUnknown;  // a range, or the generic binding changed below
        generic_[kSsbo] = kUnknown;
        break;
      }
      case kIndexedUbo: {
        restore_range(GL_UNIFORM_BUFFER, s.index, saved_ubo_[s.index]);
        ubo_[s.index] = {};
        generic_[kUniform] = kUnknown;
        break;
      }
      case kImage: {
        const Image& m = saved_image_[s.index];
        glBindImageTexture(s.index, static_cast<GLuint>(m.texture), m.level, m.layered ? GL_TRUE : GL_FALSE, m.layer,
                           static_cast<GLenum>(m.access), static_cast<GLenum>(m.format));
        image_[s.index] = kUnknown;
        break;
      }
      case kSampler:
        glBindSampler(s.index, static_cast<GLuint>(saved_sampler_[s.index]));
        sampler_[s.index] = static_cast<GLuint>(saved_sampler_[s.index]);
        break;
      case kTexture2d:
        textures = true;
        break;
      default:
        break;
    }
  }
  // Generic bindings after the indexed ones (glBindBufferBase changed the generic SSBO binding).
  for (const Slot& s : saved_)
    if (s.kind == kGeneric) {
      glBindBuffer(kGenericTarget[s.index], static_cast<GLuint>(saved_generic_[s.index]));
      generic_[s.index] = static_cast<GLuint>(saved_generic_[s.index]);
    }
  if (textures)
    for (const Slot& s : saved_)
      if (s.kind == kTexture2d) {
        glActiveTexture(GL_TEXTURE0 + s.index);
        glBindTexture(GL_TEXTURE_2D, static_cast<GLuint>(saved_texture_2d_[s.index]));
        texture_2d_[s.index] = static_cast<GLuint>(saved_texture_2d_[s.index]);
        active_texture_ = s.index;
      }
  if (saved_flags_[kActiveTexture][0]) {
    glActiveTexture(static_cast<GLenum>(saved_active_texture_));
    active_texture_ = static_cast<GLuint>(saved_active_texture_) - GL_TEXTURE0;
  }
  for (const Slot& s : saved_) saved_flags_[s.kind][s.index] = 0;
  saved_.clear();
}

}  // namespace gltensor::detail
