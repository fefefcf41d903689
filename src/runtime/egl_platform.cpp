#include "runtime/egl_platform.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>
#include <span>
#include <vector>

namespace gltensor::detail {
namespace {

bool has_word(const char* list, const char* word) {
  if (!list) return false;
  const size_t n = std::strlen(word);
  for (const char* p = list; (p = std::strstr(p, word)) != nullptr; p += n) {
    const bool start = p == list || p[-1] == ' ';
    const bool end = p[n] == '\0' || p[n] == ' ';
    if (start && end) return true;
  }
  return false;
}

// EGL displays are process-wide: the same handle is returned to every user of a device, and
// eglTerminate would pull it from under the application and other Devices. Displays are
// therefore initialized once and left initialized for the life of the process (as the EGL
// spec allows); contexts are destroyed with their Device.
bool init_display(EGLDisplay d) {
  EGLint major = 0, minor = 0;
  return eglInitialize(d, &major, &minor) == EGL_TRUE;
}

// libgbm is loaded on demand: machines without it (or without render nodes) still work through
// the device and surfaceless platforms.
struct GbmApi {
  gbm_device* (*create)(int) = nullptr;
  void (*destroy)(gbm_device*) = nullptr;
  bool ok = false;
};
const GbmApi& gbm_api() {
  static const GbmApi api = [] {
    GbmApi a;
    void* h = dlopen("libgbm.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return a;
    a.create = reinterpret_cast<gbm_device* (*)(int)>(dlsym(h, "gbm_create_device"));
    a.destroy = reinterpret_cast<void (*)(gbm_device*)>(dlsym(h, "gbm_device_destroy"));
    a.ok = a.create && a.destroy;
    return a;
  }();
  return api;
}

// A context of `api` on an initialized display (not made current). `config`: EGL_NO_CONFIG_KHR
// to choose one (none where the display allows configless contexts). The thread's bound API is
// restored.
bool create_context_on(EGLDisplay display, EGLContext share, EGLConfig config, EGLenum api, bool debug, EGLContext& out,
                       std::string& why) {
  const EGLenum prev_api = eglQueryAPI();
  const bool gl = api == EGL_OPENGL_API;
  if (!eglBindAPI(api)) {
    why = gl ? "eglBindAPI(EGL_OPENGL_API) failed" : "eglBindAPI(EGL_OPENGL_ES_API) failed";
    return false;
  }
  const char* dext = eglQueryString(display, EGL_EXTENSIONS);
  if (config == EGL_NO_CONFIG_KHR && !has_word(dext, "EGL_KHR_no_config_context") &&
      !has_word(dext, "EGL_MESA_configless_context")) {
    const EGLint attrs[] = {EGL_RENDERABLE_TYPE, gl ? EGL_OPENGL_BIT : EGL_OPENGL_ES3_BIT, EGL_NONE};
    EGLint n = 0;
    if (!eglChooseConfig(display, attrs, &config, 1, &n) || n < 1) {
      why = gl ? "no EGL config with EGL_OPENGL_BIT" : "no EGL config with EGL_OPENGL_ES3_BIT";
      eglBindAPI(prev_api);
      return false;
    }
  }
  struct Version {
    int major, minor;
  };
  static constexpr Version kGles[] = {{3, 2}, {3, 1}};
  static constexpr Version kGl[] = {{4, 6}, {4, 5}, {4, 4}, {4, 3}};
  out = EGL_NO_CONTEXT;
  for (const Version& v : gl ? std::span<const Version>(kGl) : std::span<const Version>(kGles)) {
    std::vector<EGLint> attrs = {EGL_CONTEXT_MAJOR_VERSION, v.major, EGL_CONTEXT_MINOR_VERSION, v.minor};
    if (gl) attrs.insert(attrs.end(), {EGL_CONTEXT_OPENGL_PROFILE_MASK, EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT});
    if (debug) attrs.insert(attrs.end(), {EGL_CONTEXT_OPENGL_DEBUG, EGL_TRUE});
    attrs.push_back(EGL_NONE);
    out = eglCreateContext(display, config, share, attrs.data());
    if (out != EGL_NO_CONTEXT) break;
  }
  eglBindAPI(prev_api);
  if (out == EGL_NO_CONTEXT) {
    why = gl ? "eglCreateContext for OpenGL 4.3 core failed" : "eglCreateContext for OpenGL ES 3.1 failed";
    return false;
  }
  return true;
}

}  // namespace

std::vector<EglCandidate> enumerate_egl_candidates() {
  std::vector<EglCandidate> out;
  const char* client = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);
  std::set<std::string> nodes;
  bool have_software = false;

  if (has_word(client, "EGL_EXT_device_enumeration") && has_word(client, "EGL_EXT_platform_device")) {
    auto query_devices = reinterpret_cast<PFNEGLQUERYDEVICESEXTPROC>(eglGetProcAddress("eglQueryDevicesEXT"));
    auto query_string = reinterpret_cast<PFNEGLQUERYDEVICESTRINGEXTPROC>(eglGetProcAddress("eglQueryDeviceStringEXT"));
    EGLDeviceEXT devices[32];
    EGLint n = 0;
    if (query_devices && query_devices(32, devices, &n)) {
      for (EGLint i = 0; i < n; ++i) {
        EglCandidate c;
        c.platform = "device";
        c.platform_enum = EGL_PLATFORM_DEVICE_EXT;
        c.native = devices[i];
        const char* ext = query_string ? query_string(devices[i], EGL_EXTENSIONS) : nullptr;
        c.software = has_word(ext, "EGL_MESA_device_software");
        if (has_word(ext, "EGL_EXT_device_drm_render_node")) {
          const char* node = query_string(devices[i], EGL_DRM_RENDER_NODE_FILE_EXT);
          if (node) c.node = node;
        }
        if (!c.node.empty()) nodes.insert(c.node);
        have_software = have_software || c.software;
        out.push_back(c);
      }
    }
  }
  if ((has_word(client, "EGL_KHR_platform_gbm") || has_word(client, "EGL_MESA_platform_gbm")) && gbm_api().ok) {
    std::error_code ec;
    std::vector<std::string> found;
    for (const auto& e : std::filesystem::directory_iterator("/dev/dri", ec)) {
      const std::string p = e.path().string();
      if (p.find("renderD") != std::string::npos && !nodes.count(p)) found.push_back(p);
    }
    std::sort(found.begin(), found.end());
    for (const auto& p : found) {
      EglCandidate c;
      c.platform = "gbm";
      c.platform_enum = EGL_PLATFORM_GBM_KHR;
      c.node = p;
      out.push_back(c);
    }
  }
  if (!have_software && has_word(client, "EGL_MESA_platform_surfaceless")) {
    EglCandidate c;
    c.platform = "surfaceless";
    c.platform_enum = EGL_PLATFORM_SURFACELESS_MESA;
    out.push_back(c);
  }
  return out;
}

bool create_egl_context(const EglCandidate& c, bool debug, EGLenum api, EglContext& out, std::string& why) {
  auto get_display = reinterpret_cast<PFNEGLGETPLATFORMDISPLAYEXTPROC>(eglGetProcAddress("eglGetPlatformDisplayEXT"));
  if (!get_display) {
    why = "eglGetPlatformDisplayEXT is missing";
    return false;
  }
  EglContext ctx;
  void* native = c.native;
  if (c.platform == "gbm") {
    ctx.gbm_fd = ::open(c.node.c_str(), O_RDWR | O_CLOEXEC);
    if (ctx.gbm_fd < 0) {
      why = "cannot open " + c.node + ": " + std::strerror(errno);
      return false;
    }
    ctx.gbm = gbm_api().create(ctx.gbm_fd);
    if (!ctx.gbm) {
      ::close(ctx.gbm_fd);
      why = "gbm_create_device failed on " + c.node;
      return false;
    }
    native = ctx.gbm;
  } else if (c.platform == "surfaceless") {
    native = EGL_DEFAULT_DISPLAY;
  }
  ctx.display = get_display(c.platform_enum, native, nullptr);
  if (ctx.display == EGL_NO_DISPLAY || !init_display(ctx.display)) {
    why = "eglInitialize failed on platform " + c.platform + " (EGL error 0x" + [] {
      char b[16];
      std::snprintf(b, sizeof b, "%x", eglGetError());
      return std::string(b);
    }() + ")";
    if (ctx.display != EGL_NO_DISPLAY) ctx.display = EGL_NO_DISPLAY;
    destroy_egl_context(ctx);
    return false;
  }
  if (!create_context_on(ctx.display, EGL_NO_CONTEXT, EGL_NO_CONFIG_KHR, api, debug, ctx.context, why)) {
    destroy_egl_context(ctx);
    return false;
  }
  if (!make_current(ctx)) {
    why = "eglMakeCurrent without surface failed (EGL_KHR_surfaceless_context missing?)";
    destroy_egl_context(ctx);
    return false;
  }
  out = ctx;
  return true;
}

bool create_shared_context(EGLDisplay display, EGLContext share, bool debug, EglContext& out, std::string& why) {
  EGLint type = 0, config_id = 0;
  if (!eglQueryContext(display, share, EGL_CONTEXT_CLIENT_TYPE, &type) ||
      !eglQueryContext(display, share, EGL_CONFIG_ID, &config_id)) {
    why = "eglQueryContext failed on the context to share with (not a context of that display?)";
    return false;
  }
  EGLConfig config = EGL_NO_CONFIG_KHR;
  if (config_id != 0) {  // the shared context's config, where it has one
    const EGLint attrs[] = {EGL_CONFIG_ID, config_id, EGL_NONE};
    EGLint n = 0;
    if (!eglChooseConfig(display, attrs, &config, 1, &n) || n < 1) config = EGL_NO_CONFIG_KHR;
  }
  EglContext ctx;
  ctx.display = display;
  if (!create_context_on(display, share, config, static_cast<EGLenum>(type), debug, ctx.context, why)) return false;
  if (!make_current(ctx)) {
    why = "eglMakeCurrent without surface failed (EGL_KHR_surfaceless_context missing?)";
    eglDestroyContext(display, ctx.context);
    return false;
  }
  out = ctx;
  return true;
}

bool make_current(const EglContext& ctx) {
  return eglMakeCurrent(ctx.display, EGL_NO_SURFACE, EGL_NO_SURFACE, ctx.context) == EGL_TRUE;
}

void destroy_egl_context(EglContext& ctx) {
  if (ctx.display != EGL_NO_DISPLAY) {
    if (ctx.context != EGL_NO_CONTEXT) {
      if (eglGetCurrentContext() == ctx.context)
        eglMakeCurrent(ctx.display, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
      eglDestroyContext(ctx.display, ctx.context);
    }
  }
  if (ctx.gbm) gbm_api().destroy(ctx.gbm);
  if (ctx.gbm_fd >= 0) ::close(ctx.gbm_fd);
  ctx = EglContext{};
}

}  // namespace gltensor::detail
