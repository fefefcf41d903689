// A thread's current GL context (context.hpp).
#include "runtime/context.hpp"

#include <dlfcn.h>

#include <atomic>

namespace gltensor::detail {

namespace {
std::atomic<bool> g_glx_loaded{false};
}

const GlxApi& glx_api() {
  static const GlxApi api = [] {
    GlxApi a;
    void* h = dlopen("libGLX.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!h) return a;
    a.get_current_context = reinterpret_cast<void* (*)()>(dlsym(h, "glXGetCurrentContext"));
    a.get_current_display = reinterpret_cast<void* (*)()>(dlsym(h, "glXGetCurrentDisplay"));
    a.get_current_drawable = reinterpret_cast<unsigned long (*)()>(dlsym(h, "glXGetCurrentDrawable"));
    a.get_current_read_drawable = reinterpret_cast<unsigned long (*)()>(dlsym(h, "glXGetCurrentReadDrawable"));
    a.make_context_current =
        reinterpret_cast<int (*)(void*, unsigned long, unsigned long, void*)>(dlsym(h, "glXMakeContextCurrent"));
    a.ok = a.get_current_context && a.get_current_display && a.get_current_drawable && a.get_current_read_drawable &&
           a.make_context_current;
    return a;
  }();
  g_glx_loaded = true;
  return api;
}

ContextBinding ContextBinding::current(bool probe_glx) {
  ContextBinding b;
  b.api = eglQueryAPI();
  b.context = eglGetCurrentContext();
  if (b.context != EGL_NO_CONTEXT) {
    b.display = eglGetCurrentDisplay();
    b.draw = eglGetCurrentSurface(EGL_DRAW);
    b.read = eglGetCurrentSurface(EGL_READ);
    return b;
  }
  if (probe_glx || g_glx_loaded) {
    const GlxApi& g = glx_api();
    if (g.ok && (b.glx_context = g.get_current_context()) != nullptr) {
      b.glx_display = g.get_current_display();
      b.glx_draw = g.get_current_drawable();
      b.glx_read = g.get_current_read_drawable();
    }
  }
  return b;
}

bool ContextBinding::is_current() const {
  if (is_glx()) return glx_api().get_current_context() == glx_context;
  return context != EGL_NO_CONTEXT && eglGetCurrentContext() == context;
}

bool ContextBinding::make_current() const {
  bool ok = true;
  if (is_glx()) {
    const EGLDisplay d = eglGetCurrentDisplay();
    if (d != EGL_NO_DISPLAY) eglMakeCurrent(d, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    ok = glx_api().make_context_current(glx_display, glx_draw, glx_read, glx_context) != 0;
  } else if (context != EGL_NO_CONTEXT) {
    ok = eglMakeCurrent(display, draw, read, context) == EGL_TRUE;
  } else if (const EGLDisplay d = eglGetCurrentDisplay(); d != EGL_NO_DISPLAY) {
    ok = eglMakeCurrent(d, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT) == EGL_TRUE;
  }
  if (eglQueryAPI() != api) eglBindAPI(api);
  return ok;
}

void ContextBinding::release_glx() {
  if (!g_glx_loaded) return;
  const GlxApi& g = glx_api();
  if (g.ok && g.get_current_context() != nullptr) g.make_context_current(g.get_current_display(), 0, 0, nullptr);
}

}  // namespace gltensor::detail
