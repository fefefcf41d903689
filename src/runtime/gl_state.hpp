// The GL bindings gltensor changes, in one place (internal).
//
// Every binding gltensor makes (program, generic and indexed buffer bindings, the active texture
// unit, a texture, sampler or image unit) goes through GlState, which
//  - skips a bind that is already in place (a cache of the context's bindings; "unknown" after
//    invalidate(), e.g. at each call into an adopted context, whose application may have changed
//    anything), and
//  - while saving (a call into an adopted context under RestorePolicy::exact), reads the
//    application's value of a binding the first time gltensor changes it (one glGet, three for
//    an indexed buffer range) and puts exactly those bindings back at end().
// So a call costs a glGet only for what it changes, and restores only what it changed; nothing
// else of the application's state is read or written.
//
// Every bind must come between begin() and end() (an Enter, runtime/guard.hpp): outside one the
// GL call goes to whatever context is current (an application's, with its binding neither saved
// nor put back) and the cache no longer describes the device's context. A bind outside an entry
// throws DeviceError (an internal error: the caller must enter the device first).
#pragma once
#include <cstdint>
#include <vector>

#include "runtime/gl.hpp"

namespace gltensor::detail {

class GlState {
 public:
  /// Generic (non-indexed) buffer binding points gltensor uses.
  enum Target : int { kSsbo, kCopyRead, kCopyWrite, kPixelPack, kPixelUnpack, kUniform, kTargets };

  /// Sizes of the indexed binding tables (from the device's limits).
  void init(int ssbo_bindings, int texture_units, int image_units, int uniform_bindings);

  /// Starts an outermost entry (binds are allowed until end()). `save`: remember the
  /// application's value of each binding before changing it (restored by end()). `forget`: the
  /// cache no longer holds.
  void begin(bool save, bool forget);
  /// Ends it: puts back every saved binding (in the order that the texture bindings need).
  void end();
  /// The cache no longer holds (the context's bindings are unknown).
  void invalidate();

  void use_program(GLuint program);
  void bind_buffer(Target target, GLuint buffer);
  /// glBindBufferBase(GL_SHADER_STORAGE_BUFFER, index, buffer) (also sets the generic binding).
  void bind_ssbo(GLuint index, GLuint buffer);
  /// glBindBufferRange(GL_UNIFORM_BUFFER, index, buffer, offset, size) (also sets the generic
  /// binding); cached by (buffer, offset, size).
  void bind_ubo(GLuint index, GLuint buffer, GLintptr offset, GLsizeiptr size);
  /// Binds a GL_TEXTURE_2D texture to `unit` (through glActiveTexture).
  void bind_texture_2d(GLuint unit, GLuint texture);
  void bind_sampler(GLuint unit, GLuint sampler);
  void bind_image(GLuint unit, GLuint texture, GLint level, GLenum access, GLenum format);
  /// gltensor deleted `buffer`: GL reset the current context's bindings of it to 0.
  void forget_buffer(GLuint buffer);
  /// gltensor deleted `program` (GL keeps a current program until it is replaced).
  void forget_program(GLuint program);

  static GLenum gl_target(Target t);
  std::uint64_t saved_reads() const { return saved_reads_; }  ///< glGet calls made to save (tests)

 private:
  static constexpr GLuint kUnknown = 0xffffffffu;
  enum Kind : std::uint8_t {
    kProgram,
    kGeneric,
    kIndexedSsbo,
    kActiveTexture,
    kTexture2d,
    kSampler,
    kImage,
    kIndexedUbo,
    kKinds
  };
  struct Slot {
    Kind kind;
    std::uint32_t index;
  };
  struct Range {
    GLint buffer = 0;
    GLint64 start = 0, size = 0;
  };
  struct Image {
    GLint texture = 0, level = 0, layered = 0, layer = 0, access = 0, format = 0;
  };
  bool saving() const { return save_; }
  /// Throws DeviceError unless inside begin() ... end() (`what`: the GL call).
  void require_entry(const char* what) const;
  /// Puts back an indexed buffer binding as saved (a range, a whole buffer or none).
  static void restore_range(GLenum target, GLuint index, const Range& r);
  bool mark(std::vector<std::uint8_t>& flags, Kind kind, std::uint32_t index);
  void save_active_texture();
  void set_active_texture(GLuint unit);

  bool entered_ = false;  // between begin() and end()
  bool save_ = false;
  std::uint64_t saved_reads_ = 0;
  std::vector<Slot> saved_;  // in the order they were saved

  // Cache: what the context has bound (kUnknown = not known).
  GLuint program_ = kUnknown, active_texture_ = kUnknown;
  GLuint generic_[kTargets] = {kUnknown, kUnknown, kUnknown, kUnknown, kUnknown, kUnknown};
  std::vector<GLuint> ssbo_, texture_2d_, sampler_, image_;
  struct UboRange {
    GLuint buffer = kUnknown;
    GLintptr offset = 0;
    GLsizeiptr size = 0;
  };
  std::vector<UboRange> ubo_;

  // The application's values, while saving.
  std::vector<std::uint8_t> saved_flags_[kKinds];
  GLint saved_program_ = 0, saved_active_texture_ = 0;
  GLint saved_generic_[kTargets] = {};
  std::vector<Range> saved_ssbo_, saved_ubo_;
  std::vector<GLint> saved_texture_2d_, saved_sampler_;
  std::vector<Image> saved_image_;
};

}  // namespace gltensor::detail
