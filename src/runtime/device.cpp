// Device: opening, adopting, capabilities, logging, thread and context entry.
#include "gltensor/device.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime/device_impl.hpp"
#include "runtime/error_flags.hpp"
#include "runtime/guard.hpp"
#include "runtime/profiler.hpp"
#include "runtime/settings.hpp"

namespace gltensor {
namespace detail {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

const char* gl_str(GLenum e) {
  const GLubyte* s = glGetString(e);
  return s ? reinterpret_cast<const char*>(s) : "";
}

bool looks_software(const std::string& renderer) {
  const std::string r = lower(renderer);
  return r.find("llvmpipe") != std::string::npos || r.find("softpipe") != std::string::npos ||
         r.find("swiftshader") != std::string::npos || r.find("software") != std::string::npos;
}

void GL_APIENTRY debug_callback(GLenum source, GLenum type, GLuint, GLenum severity, GLsizei, const GLchar* message,
                                const void* user) {
  auto* dev = static_cast<DeviceImpl*>(const_cast<void*>(user));
  LogLevel level = LogLevel::debug;
  if (severity == GL_DEBUG_SEVERITY_HIGH || type == GL_DEBUG_TYPE_ERROR)
    level = LogLevel::error;
  else if (severity == GL_DEBUG_SEVERITY_MEDIUM)
    level = LogLevel::warning;
  else if (severity == GL_DEBUG_SEVERITY_LOW)
    level = LogLevel::info;
  dev->log(level, std::string("GL: ") + message);
  // API errors are raised at the next check; shader compiler messages become ShaderError.
  if (type == GL_DEBUG_TYPE_ERROR && source == GL_DEBUG_SOURCE_API && dev->pending_gl_error.empty())
    dev->pending_gl_error = message;
}

AdapterInfo describe(const EglCandidate& c, int index) {
  AdapterInfo a;
  a.index = index;
  a.platform = c.platform;
  a.node = c.node;
  a.vendor = gl_str(GL_VENDOR);
  a.renderer = gl_str(GL_RENDERER);
  a.version = gl_str(GL_VERSION);
  a.software = c.software || looks_software(a.renderer);
  return a;
}

#ifdef NDEBUG
constexpr bool kDebugBuild = false;
#else
constexpr bool kDebugBuild = true;
#endif

}  // namespace

DeviceImpl::DeviceImpl() : thread(std::this_thread::get_id()) {
  logger = [](LogLevel level, const std::string& msg) {
    if (level == LogLevel::warning || level == LogLevel::error) std::fprintf(stderr, "gltensor: %s\n", msg.c_str());
  };
}

DeviceImpl::~DeviceImpl() {
  // Tensors keep the device alive, so nothing uses it any more. Free GL objects only if our
  // context can be made current on this thread; otherwise the driver frees them with it.
  bool current = false;
  if (adopted)
    current = eglGetCurrentContext() == egl.context && egl.context != EGL_NO_CONTEXT;
  else if (egl.context != EGL_NO_CONTEXT)
    current = make_current(egl);
  if (current) {
    if (Profiler* p = find_extension<Profiler>(); p && p->on() && settings().profile)
      std::fprintf(stderr, "gltensor profile (%s):\n%s", adapter.renderer.c_str(), p->report(*this).table().c_str());
    queue.destroy();
    pool.trim();
    programs.destroy_all();
    for (auto& [type, ext] : extensions_) ext->free_gl();
  }
  if (!adopted) destroy_egl_context(egl);
}

void DeviceImpl::log(LogLevel level, const std::string& msg) const {
  if (logger) logger(level, msg);
}

void DeviceImpl::init_capabilities() {
  Capabilities& c = caps;
  c.version = gl_str(GL_VERSION);
  c.renderer = gl_str(GL_RENDERER);
  c.vendor = gl_str(GL_VENDOR);
  c.glsl_version = gl_str(GL_SHADING_LANGUAGE_VERSION);
  glGetIntegerv(GL_MAJOR_VERSION, &c.gl_major);
  glGetIntegerv(GL_MINOR_VERSION, &c.gl_minor);
  if (c.gl_major < 3 || (c.gl_major == 3 && c.gl_minor < 1))
    throw DeviceError("gltensor::Device: context is OpenGL ES " + std::to_string(c.gl_major) + "." +
                      std::to_string(c.gl_minor) + ", compute shaders need 3.1 (" + c.renderer + ")");
  GLint64 ssbo = 0;
  glGetInteger64v(GL_MAX_SHADER_STORAGE_BLOCK_SIZE, &ssbo);
  c.max_ssbo_block_size = ssbo;
  glGetIntegerv(GL_MAX_COMPUTE_SHADER_STORAGE_BLOCKS, &c.max_ssbo_bindings);
  for (GLuint i = 0; i < 3; ++i) {
    glGetIntegeri_v(GL_MAX_COMPUTE_WORK_GROUP_SIZE, i, &c.max_workgroup_size[i]);
    glGetIntegeri_v(GL_MAX_COMPUTE_WORK_GROUP_COUNT, i, &c.max_workgroup_count[i]);
  }
  glGetIntegerv(GL_MAX_COMPUTE_WORK_GROUP_INVOCATIONS, &c.max_workgroup_invocations);
  glGetIntegerv(GL_MAX_COMPUTE_SHARED_MEMORY_SIZE, &c.max_shared_memory);
  GLint n = 0;
  glGetIntegerv(GL_NUM_EXTENSIONS, &n);
  for (GLint i = 0; i < n; ++i)
    c.extensions.emplace_back(reinterpret_cast<const char*>(glGetStringi(GL_EXTENSIONS, i)));
  c.subgroup = c.has_extension("GL_KHR_shader_subgroup");
  if (c.subgroup) {
    GLint v = 0;
    glGetIntegerv(GL_SUBGROUP_SIZE_KHR, &v);
    c.subgroup_size = v;
    glGetIntegerv(GL_SUBGROUP_SUPPORTED_FEATURES_KHR, &v);
    c.subgroup_features = static_cast<std::uint32_t>(v);
    glGetIntegerv(GL_SUBGROUP_SUPPORTED_STAGES_KHR, &v);
    c.subgroup_stages = static_cast<std::uint32_t>(v);
  }
  c.fp16_arithmetic =
      c.has_extension("GL_NV_gpu_shader5") || c.has_extension("GL_EXT_shader_explicit_arithmetic_types_float16");
  c.timer_query = c.has_extension("GL_EXT_disjoint_timer_query");
  // Mesa's gallivm (llvmpipe, softpipe's JIT) gives every shader invocation one loop counter for
  // all its loops (LP_MAX_TGSI_LOOP_ITERATIONS) and leaves the loops silently past it.
  if (looks_software(c.renderer) && lower(c.renderer).find("llvmpipe") != std::string::npos)
    c.max_loop_iterations = 65535;
  GLint formats = 0;
  glGetIntegerv(GL_NUM_PROGRAM_BINARY_FORMATS, &formats);
  c.program_binary = formats > 0;
  c.debug_output = c.has_extension("GL_KHR_debug") || (c.gl_major == 3 && c.gl_minor >= 2);
  while (glGetError() != GL_NO_ERROR) {
  }
  if (c.debug_output) {
    using Fn = void(GL_APIENTRY*)(GLDEBUGPROC, const void*);
    auto fn = reinterpret_cast<Fn>(eglGetProcAddress("glDebugMessageCallback"));
    if (!fn) fn = reinterpret_cast<Fn>(eglGetProcAddress("glDebugMessageCallbackKHR"));
    if (fn && !adopted) {
      fn(debug_callback, this);
      glEnable(GL_DEBUG_OUTPUT);
      if (kDebugBuild) glEnable(GL_DEBUG_OUTPUT_SYNCHRONOUS);
      while (glGetError() != GL_NO_ERROR) {
      }
    }
  }
}

void DeviceImpl::check_gl(const char* op) {
  GLenum e = glGetError();
  std::string debug_msg;
  std::swap(debug_msg, pending_gl_error);
  if (e == GL_OUT_OF_MEMORY)
    throw OutOfMemory(std::string("gltensor::") + op + ": the driver returned GL_OUT_OF_MEMORY");
  if (e != GL_NO_ERROR || (kDebugBuild && !debug_msg.empty())) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%04x", e);
    throw DeviceError(std::string("gltensor::") + op + ": GL error " + buf +
                      (debug_msg.empty() ? "" : " (" + debug_msg + ")"));
  }
}

std::uint32_t DeviceImpl::max_groups(int axis) const {
  std::uint32_t m = static_cast<std::uint32_t>(std::max(1, caps.max_workgroup_count[axis]));
  if (dispatch_limit != 0) m = std::min(m, dispatch_limit);
  return m;
}

std::uint64_t DeviceImpl::loop_limit() const {
  if (loop_limit_override != 0)
    return caps.max_loop_iterations ? std::min(loop_limit_override, caps.max_loop_iterations) : loop_limit_override;
  return caps.max_loop_iterations;
}

bool DeviceImpl::subgroup_features(std::uint32_t need) const {
  need |= GL_SUBGROUP_FEATURE_BASIC_BIT_KHR;
  if (!caps.subgroup || (caps.subgroup_features & need) != need || !(caps.subgroup_stages & GL_COMPUTE_SHADER_BIT))
    return false;
  return settings().subgroups;
}

bool DeviceImpl::subgroup_arithmetic() const { return subgroup_features(GL_SUBGROUP_FEATURE_ARITHMETIC_BIT_KHR); }

}  // namespace detail

// ---- public API -------------------------------------------------------------------------------

using detail::DeviceImpl;
using detail::Enter;

bool Capabilities::has_extension(const std::string& name) const {
  return std::find(extensions.begin(), extensions.end(), name) != extensions.end();
}

std::vector<AdapterInfo> Device::list() {
  std::vector<AdapterInfo> out;
  const EGLContext prev_ctx = eglGetCurrentContext();
  const EGLDisplay prev_dpy = eglGetCurrentDisplay();
  const EGLSurface prev_draw = eglGetCurrentSurface(EGL_DRAW), prev_read = eglGetCurrentSurface(EGL_READ);
  int index = 0;
  for (const auto& c : detail::enumerate_egl_candidates()) {
    detail::EglContext ctx;
    std::string why;
    if (!detail::create_egl_context(c, false, ctx, why)) continue;
    out.push_back(detail::describe(c, index++));
    detail::destroy_egl_context(ctx);
  }
  if (prev_ctx != EGL_NO_CONTEXT) eglMakeCurrent(prev_dpy, prev_draw, prev_read, prev_ctx);
  return out;
}

Device Device::open(const OpenOptions& options) {
  auto candidates = detail::enumerate_egl_candidates();
  if (candidates.empty())
    throw DeviceError(
        "gltensor::Device::open: no EGL platform found (need EGL_EXT_platform_device, "
        "GBM or EGL_MESA_platform_surfaceless; install libegl-mesa0 and libgl1-mesa-dri)");
  int want_index = options.index;
  std::string want_name = detail::lower(options.name);
  if (want_index < 0 && want_name.empty()) {
    if (const std::string& env = detail::settings().device; !env.empty()) {
      char* end = nullptr;
      long v = std::strtol(env.c_str(), &end, 10);
      if (end && *end == '\0')
        want_index = static_cast<int>(v);
      else
        want_name = detail::lower(env);
    }
  }
  std::string failures;
  struct Opened {
    detail::EglContext ctx;
    AdapterInfo info;
  };
  std::vector<Opened> usable;
  int index = 0;
  for (const auto& c : candidates) {
    detail::EglContext ctx;
    std::string why;
    if (!detail::create_egl_context(c, detail::kDebugBuild, ctx, why)) {
      failures += "\n  " + c.platform + (c.node.empty() ? "" : " " + c.node) + ": " + why;
      continue;
    }
    AdapterInfo info = detail::describe(c, index++);
    bool match = true;
    if (want_index >= 0) match = info.index == want_index;
    if (!want_name.empty()) match = match && detail::lower(info.renderer).find(want_name) != std::string::npos;
    if (!match) {
      detail::destroy_egl_context(ctx);
      continue;
    }
    usable.push_back({ctx, info});
    if (want_index >= 0 || !want_name.empty() || !info.software) break;  // first hardware wins
  }
  if (usable.empty()) {
    std::string what = "gltensor::Device::open: no matching EGL device";
    if (want_index >= 0) what += " (index " + std::to_string(want_index) + ")";
    if (!want_name.empty()) what += " (name containing '" + want_name + "')";
    throw DeviceError(what + (failures.empty() ? "" : "; failures:" + failures));
  }
  // Prefer the first hardware adapter; else the first one.
  auto pick = std::find_if(usable.begin(), usable.end(), [](const Opened& o) { return !o.info.software; });
  if (pick == usable.end()) pick = usable.begin();
  for (auto it = usable.begin(); it != usable.end(); ++it)
    if (it != pick) detail::destroy_egl_context(it->ctx);
  auto impl = std::make_shared<DeviceImpl>();
  impl->egl = pick->ctx;
  impl->adapter = pick->info;
  if (!detail::make_current(impl->egl)) throw DeviceError("gltensor::Device::open: eglMakeCurrent failed");
  impl->init_capabilities();
  impl->pool.set_limit(options.memory_limit);
  if (detail::settings().profile && impl->caps.timer_query) impl->extension<detail::Profiler>().set_on(*impl, true);
  return Device(impl);
}

Device Device::adopt_current() {
  EGLContext ctx = eglGetCurrentContext();
  if (ctx == EGL_NO_CONTEXT)
    throw DeviceError("gltensor::Device::adopt_current: no EGL context is current on this thread");
  const char* version = detail::gl_str(GL_VERSION);
  if (std::strstr(version, "OpenGL ES") == nullptr)
    throw DeviceError(std::string("gltensor::Device::adopt_current: the current context is not OpenGL ES (") + version +
                      ")");
  auto impl = std::make_shared<DeviceImpl>();
  impl->adopted = true;
  impl->egl.display = eglGetCurrentDisplay();
  impl->egl.context = ctx;
  detail::EglCandidate c;
  c.platform = "adopted";
  impl->adapter = detail::describe(c, -1);
  impl->init_capabilities();
  return Device(impl);
}

const Capabilities& Device::caps() const { return impl_->caps; }
const AdapterInfo& Device::adapter() const { return impl_->adapter; }
bool Device::adopted() const { return impl_->adopted; }

void Device::flush() {
  Enter e(*impl_, "Device::flush");
  impl_->queue.flush();
}

void Device::synchronize() {
  Enter e(*impl_, "Device::synchronize");
  impl_->queue.wait_all();
  detail::check_device_errors(*impl_);
}

void Device::set_auto_flush(std::size_t dispatches) {
  if (dispatches == 0) throw ValueError("gltensor::Device::set_auto_flush: dispatches must be >= 1");
  impl_->queue.set_auto_flush(dispatches);
}

PoolStats Device::pool_stats() const { return impl_->pool.stats(); }

void Device::trim() {
  Enter e(*impl_, "Device::trim");
  impl_->pool.trim();
}

void Device::set_memory_limit(std::size_t bytes) { impl_->pool.set_limit(bytes); }

void Device::set_dispatch_limit(std::uint32_t max_workgroups) { impl_->dispatch_limit = max_workgroups; }

void Device::set_loop_limit(std::uint64_t iterations) { impl_->loop_limit_override = iterations; }

void Device::set_logger(Logger logger) { impl_->logger = std::move(logger); }

std::uint64_t Device::dispatch_count() const { return impl_->queue.dispatches(); }
std::uint64_t Device::barrier_count() const { return impl_->queue.barriers(); }

}  // namespace gltensor
