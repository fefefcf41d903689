// The library's glMemoryBarrier, glCopyBufferSubData and glDispatchCompute calls, logged while
// glt_test::gl_log is set: the definitions here interpose on libGLESv2's (the executable's
// symbols come first in the lookup of libgltensor's imports) and go on to them (dlsym
// RTLD_NEXT). Barriers and copies can then be checked in their order, which no value can show on
// llvmpipe (it runs copies in order). Include it in one source file of a test program only (it
// defines the functions).
#pragma once
#include <dlfcn.h>

#include <string>
#include <vector>

#include "runtime/gl.hpp"

namespace glt_test {

struct GlCall {
  char what;  // 'b': glMemoryBarrier (bits), 'c': glCopyBufferSubData, 'd': glDispatchCompute
  GLbitfield bits;
};
inline std::vector<GlCall>* gl_log = nullptr;

template <typename Fn>
Fn next_gl(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

/// The calls as a string of their letters ("bdc...").
inline std::string gl_order(const std::vector<GlCall>& log) {
  std::string s;
  for (const GlCall& e : log) s += e.what;
  return s;
}

/// Whether every copy follows a barrier with GL_BUFFER_UPDATE_BARRIER_BIT issued after the last
/// dispatch before it (a copy of what a shader may have written), where some dispatch precedes it.
inline bool copies_see_dispatch_writes(const std::vector<GlCall>& log) {
  bool covered = true;
  for (const GlCall& e : log) {
    if (e.what == 'd') covered = false;
    if (e.what == 'b' && (e.bits & GL_BUFFER_UPDATE_BARRIER_BIT)) covered = true;
    if (e.what == 'c' && !covered) return false;
  }
  return true;
}

}  // namespace glt_test

extern "C" {
GL_APICALL void GL_APIENTRY glMemoryBarrier(GLbitfield barriers) {
  static const auto real = glt_test::next_gl<void (*)(GLbitfield)>("glMemoryBarrier");
  if (glt_test::gl_log) glt_test::gl_log->push_back({'b', barriers});
  real(barriers);
}
GL_APICALL void GL_APIENTRY glCopyBufferSubData(GLenum read_target, GLenum write_target, GLintptr read_offset,
                                                GLintptr write_offset, GLsizeiptr size) {
  static const auto real =
      glt_test::next_gl<void (*)(GLenum, GLenum, GLintptr, GLintptr, GLsizeiptr)>("glCopyBufferSubData");
  if (glt_test::gl_log) glt_test::gl_log->push_back({'c', 0});
  real(read_target, write_target, read_offset, write_offset, size);
}
GL_APICALL void GL_APIENTRY glDispatchCompute(GLuint x, GLuint y, GLuint z) {
  static const auto real = glt_test::next_gl<void (*)(GLuint, GLuint, GLuint)>("glDispatchCompute");
  if (glt_test::gl_log) glt_test::gl_log->push_back({'d', 0});
  real(x, y, z);
}
}
