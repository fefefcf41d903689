// Timer queries' entry points (internal), one place for the profiler and the wait trace: the core ones on desktop
// OpenGL (glQueryCounter, glGetQueryObjectui64v: OpenGL 3.3, ARB_timer_query; NVIDIA's desktop 4.6 context lists
// no EXT_disjoint_timer_query), EXT_disjoint_timer_query's on OpenGL ES (glQueryCounterEXT,
// glGetQueryObjectui64vEXT). GL_GPU_DISJOINT_EXT is read only where that extension is listed (elsewhere the enum
// would raise GL_INVALID_ENUM in the context, an adopted one's included).
#pragma once
#include "gltensor/device.hpp"
#include "runtime/gl.hpp"

namespace gltensor::detail {

struct TimerQueries {
  using Counter = void(GL_APIENTRYP)(GLuint, GLenum);
  using GetU64 = void(GL_APIENTRYP)(GLuint, GLenum, GLuint64*);
  Counter counter = nullptr;  ///< glQueryCounter(EXT)(query, GL_TIMESTAMP)
  GetU64 get_u64 = nullptr;   ///< glGetQueryObjectui64v(EXT)
  bool disjoint = false;      ///< GL_GPU_DISJOINT_EXT exists (EXT_disjoint_timer_query)
  explicit operator bool() const { return counter && get_u64; }
  /// Whether the GPU was disjoint since the last read (the read clears the flag); false where the context has no
  /// such flag.
  bool read_disjoint() const;
};

/// Whether a context of these version and extensions has timestamp queries (Capabilities::timer_query).
bool has_timer_queries(const Capabilities& c);
/// The entry points for a device of these capabilities (the device's context current); empty where
/// !c.timer_query or the driver returns none.
TimerQueries timer_queries(const Capabilities& c);

}  // namespace gltensor::detail
