// Headless EGL: adapter enumeration and GLES context creation (internal).
#pragma once
#include <string>
#include <vector>

#include "runtime/gl.hpp"

struct gbm_device;

namespace gltensor::detail {

/// A way to reach one adapter, before its display is initialized.
struct EglCandidate {
  std::string platform;  // "device", "gbm", "surfaceless"
  EGLenum platform_enum = 0;
  void* native = nullptr;  // EGLDeviceEXT for "device"
  std::string node;        // render node path
  bool software = false;   // known to be a software rasterizer before context creation
};

/// An initialized display with a current-able context.
struct EglContext {
  EGLDisplay display = EGL_NO_DISPLAY;
  EGLContext context = EGL_NO_CONTEXT;
  int gbm_fd = -1;
  gbm_device* gbm = nullptr;
};

std::vector<EglCandidate> enumerate_egl_candidates();
/// Initializes the display and creates a context of `api` (EGL_OPENGL_ES_API: OpenGL ES 3.2,
/// else 3.1; EGL_OPENGL_API: desktop OpenGL 4.6 ... 4.3 core profile), made current on the
/// calling thread. The thread's bound client API is left as it was. On failure returns false
/// and sets why.
bool create_egl_context(const EglCandidate& c, bool debug, EGLenum api, EglContext& out, std::string& why);
/// A context on an application's display that shares objects with `share` (its client API
/// and, where the display needs configs, its config), made current. False with why on failure.
bool create_shared_context(EGLDisplay display, EGLContext share, bool debug, EglContext& out, std::string& why);
void destroy_egl_context(EglContext& ctx);
bool make_current(const EglContext& ctx);

}  // namespace gltensor::detail
