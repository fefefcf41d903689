// Timer queries' entry points (timer_query.hpp).
#include "runtime/timer_query.hpp"

#ifndef GL_GPU_DISJOINT_EXT
#define GL_GPU_DISJOINT_EXT 0x8FBB
#endif

namespace gltensor::detail {

bool TimerQueries::read_disjoint() const {
  if (!disjoint) return false;
  GLint v = 0;
  glGetIntegerv(GL_GPU_DISJOINT_EXT, &v);
  return v != 0;
}

bool has_timer_queries(const Capabilities& c) {
  const bool core = c.desktop && (c.gl_major > 3 || (c.gl_major == 3 && c.gl_minor >= 3));
  return core || c.has_extension("GL_ARB_timer_query") || c.has_extension("GL_EXT_disjoint_timer_query");
}

TimerQueries timer_queries(const Capabilities& c) {
  TimerQueries t;
  if (!c.timer_query) return t;
  const bool ext = !c.desktop;  // OpenGL ES: EXT_disjoint_timer_query's names (has_timer_queries: listed)
  t.counter = reinterpret_cast<TimerQueries::Counter>(eglGetProcAddress(ext ? "glQueryCounterEXT" : "glQueryCounter"));
  t.get_u64 = reinterpret_cast<TimerQueries::GetU64>(
      eglGetProcAddress(ext ? "glGetQueryObjectui64vEXT" : "glGetQueryObjectui64v"));
  t.disjoint = c.has_extension("GL_EXT_disjoint_timer_query");
  if (!t) t = {};
  return t;
}

}  // namespace gltensor::detail
