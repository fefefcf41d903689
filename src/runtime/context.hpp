// A thread's current GL context, through EGL or GLX (internal).
//
// gltensor's own contexts are EGL contexts. An application's may be EGL (OpenGL ES or desktop
// OpenGL) or GLX (desktop OpenGL under X11); libGLX is loaded on first use, so that machines
// without X11 libraries still work.
#pragma once
#include <string>

#include "runtime/gl.hpp"

namespace gltensor::detail {

/// The functions of libGLX.so.0 that gltensor needs (null where the library is missing).
struct GlxApi {
  void* (*get_current_context)() = nullptr;
  void* (*get_current_display)() = nullptr;
  unsigned long (*get_current_drawable)() = nullptr;
  unsigned long (*get_current_read_drawable)() = nullptr;
  int (*make_context_current)(void* display, unsigned long draw, unsigned long read, void* context) = nullptr;
  bool ok = false;
};
const GlxApi& glx_api();

/// A context as made current on a thread: EGL (display, surfaces, context, bound client API) or
/// GLX (display, drawables, context). Both empty: no context current.
struct ContextBinding {
  EGLDisplay display = EGL_NO_DISPLAY;
  EGLSurface draw = EGL_NO_SURFACE, read = EGL_NO_SURFACE;
  EGLContext context = EGL_NO_CONTEXT;
  EGLenum api = EGL_OPENGL_ES_API;
  void* glx_display = nullptr;
  unsigned long glx_draw = 0, glx_read = 0;
  void* glx_context = nullptr;

  /// The calling thread's current context (EGL first; GLX only where libGLX is already loaded
  /// or `probe_glx`).
  static ContextBinding current(bool probe_glx = false);
  bool empty() const { return context == EGL_NO_CONTEXT && glx_context == nullptr; }
  bool is_glx() const { return glx_context != nullptr; }
  /// Whether this context is the calling thread's current one.
  bool is_current() const;
  /// Makes it current again (or releases the thread's EGL context where empty()). Restores the
  /// EGL client API bound before (eglBindAPI is per thread). False on failure.
  bool make_current() const;
  /// Releases the thread's GLX context (gltensor's EGL contexts cannot be made current over
  /// it through libglvnd).
  static void release_glx();
};

}  // namespace gltensor::detail
