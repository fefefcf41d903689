// Device: opening, adopting, capabilities, logging, thread and context entry.
#include "gltensor/device.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>

#include "runtime/device_impl.hpp"
#include "runtime/error_flags.hpp"
#include "runtime/glsl_text.hpp"
#include "runtime/guard.hpp"
#include "runtime/profiler.hpp"
#include "runtime/settings.hpp"
#include "runtime/storage.hpp"
#include "runtime/timer_query.hpp"

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
  if (type == GL_DEBUG_TYPE_ERROR && source == GL_DEBUG_SOURCE_API) dev->note_gl_error(message);
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

DeviceImpl::DeviceImpl() : thread_(std::this_thread::get_id()), check_loops_(settings().check_loops) {
  logger_ = [](LogLevel level, const std::string& msg) {
    if (level == LogLevel::warning || level == LogLevel::error) std::fprintf(stderr, "gltensor: %s\n", msg.c_str());
  };
}

DeviceImpl::~DeviceImpl() {
  // Tensors keep the device alive, so nothing uses it any more. GL objects are deleted in the
  // device's context only: current here, or made current for the purpose (the thread's context
  // before is made current again). Where that fails (the context is current on another thread),
  // say what is left to the context.
  const ContextBinding before = ContextBinding::current(/*probe_glx=*/true);
  bool current = false, switched = false;
  if (adopted_) {
    current = app_.is_current();
    if (!current) {
      ContextBinding target = app_;
      target.draw = target.read = EGL_NO_SURFACE;  // surfaceless first, then the adopted surfaces
      target.api = before.api;
      if (before.is_glx() && !target.is_glx()) ContextBinding::release_glx();
      current = switched = target.make_current() || (app_.draw != EGL_NO_SURFACE && app_.make_current());
    }
  } else if (egl_.context != EGL_NO_CONTEXT) {
    current = eglGetCurrentContext() == egl_.context;
    if (!current) {
      if (before.is_glx()) ContextBinding::release_glx();
      current = switched = make_current(egl_);
    }
  }
  const PoolStats st = pool_.stats();
  if (current) {
    free_gl_objects();
  } else if (st.bytes_allocated > 0 || programs_.size() > 0) {
    log(LogLevel::warning,
        "a Device was destroyed where its context could not be made current (it is current on another "
        "thread?): " +
            std::to_string(st.cached_buffers) + " buffers (" + std::to_string(st.bytes_allocated) + " bytes) and " +
            std::to_string(programs_.size()) + " programs are left to the context, which frees them when destroyed" +
            (adopted_ || !owns_context_ ? " (with its share group)" : ""));
  }
  if (!adopted_) destroy_egl_context(egl_);  // releases it first where it is current here
  if (switched) before.make_current();
}

void DeviceImpl::free_gl_objects() {
  if (Profiler* p = find_extension<Profiler>(); p && p->on() && settings().profile)
    std::fprintf(stderr, "gltensor profile (%s):\n%s", adapter_.renderer.c_str(), p->report(*this).table().c_str());
  run_deferred();
  queue_.destroy();
  pool_.trim();
  programs_.destroy_all();
  for (auto& [type, ext] : extensions_) ext->free_gl();
}

void DeviceImpl::defer_delete(GLuint buffer, GLsync fence) {
  std::lock_guard<std::mutex> lock(deferred_mutex_);
  if (buffer) deferred_buffers_.push_back(buffer);
  if (fence) deferred_fences_.push_back(fence);
}

std::size_t DeviceImpl::deferred_count() {
  std::lock_guard<std::mutex> lock(deferred_mutex_);
  return deferred_buffers_.size() + deferred_fences_.size();
}

void DeviceImpl::run_deferred() {
  std::vector<GLuint> buffers;
  std::vector<GLsync> fences;
  {
    std::lock_guard<std::mutex> lock(deferred_mutex_);
    if (deferred_buffers_.empty() && deferred_fences_.empty()) return;
    buffers.swap(deferred_buffers_);
    fences.swap(deferred_fences_);
  }
  for (GLsync f : fences) glDeleteSync(f);
  for (GLuint b : buffers) delete_buffer(*this, b);
}

void DeviceImpl::open_own(const EglContext& ctx, const AdapterInfo& adapter, std::size_t memory_limit,
                          Precision precision) {
  egl_ = ctx;
  adapter_ = adapter;
  init_capabilities();
  pool_.set_limit(memory_limit);
  precision_ = precision;
}

void DeviceImpl::note_gl_error(const char* message) {
  if (pending_gl_error_.empty()) pending_gl_error_ = message;
}

bool DeviceImpl::context_current_here() const {
  return std::this_thread::get_id() == thread_ &&
         (enter_depth_ > 0 || (adopted_ ? app_.is_current() : eglGetCurrentContext() == egl_.context));
}

void DeviceImpl::log(LogLevel level, const std::string& msg) const {
  if (logger_) logger_(level, msg);
}

void DeviceImpl::init_capabilities() {
  Capabilities& c = caps_;
  c.version = gl_str(GL_VERSION);
  c.renderer = gl_str(GL_RENDERER);
  c.vendor = gl_str(GL_VENDOR);
  c.glsl_version = gl_str(GL_SHADING_LANGUAGE_VERSION);
  glGetIntegerv(GL_MAJOR_VERSION, &c.gl_major);
  glGetIntegerv(GL_MINOR_VERSION, &c.gl_minor);
  c.desktop = c.version.rfind("OpenGL ES", 0) != 0;
  const int need_minor = c.desktop ? 3 : 1, need_major = c.desktop ? 4 : 3;
  if (c.gl_major < need_major || (c.gl_major == need_major && c.gl_minor < need_minor))
    throw DeviceError(std::string("gltensor::Device: the context is ") + (c.desktop ? "OpenGL " : "OpenGL ES ") +
                      std::to_string(c.gl_major) + "." + std::to_string(c.gl_minor) + "; compute shaders need " +
                      (c.desktop ? "OpenGL 4.3" : "OpenGL ES 3.1") + " (" + c.renderer + ", " + c.version + ")");
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
  glGetIntegerv(GL_MAX_COMBINED_TEXTURE_IMAGE_UNITS, &c.max_texture_units);
  glGetIntegerv(GL_MAX_IMAGE_UNITS, &c.max_image_units);
  glGetIntegerv(GL_MAX_UNIFORM_BUFFER_BINDINGS, &c.max_uniform_bindings);
  glGetIntegerv(GL_MAX_UNIFORM_BLOCK_SIZE, &c.max_uniform_block_size);
  glGetIntegerv(GL_UNIFORM_BUFFER_OFFSET_ALIGNMENT, &c.uniform_offset_alignment);
  gl_.init(c.max_ssbo_bindings, c.max_texture_units, c.max_image_units, c.max_uniform_bindings);
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
  c.timer_query = has_timer_queries(c);  // (timer_query.hpp: core on desktop OpenGL 3.3+, the EXT on OpenGL ES)
  // Mesa's gallivm (llvmpipe, softpipe's JIT) up to Mesa 22 gives every shader invocation one
  // loop counter for all its loops (LP_MAX_TGSI_LOOP_ITERATIONS) and leaves the loops silently
  // past it; Mesa 25 has no such limit. Software renderers are probed once per renderer/version
  // (the answer kept in the cache folder); GPU drivers have no such limit.
  if (looks_software(c.renderer)) c.max_loop_iterations = probe_loop_limit(queue_, c, adopted_);  // loop_probe.cpp
  GLint formats = 0;
  glGetIntegerv(GL_NUM_PROGRAM_BINARY_FORMATS, &formats);
  c.program_binary = formats > 0;
  binary_formats_.assign(static_cast<std::size_t>(std::max(formats, 0)), 0);
  if (formats > 0) glGetIntegerv(GL_PROGRAM_BINARY_FORMATS, binary_formats_.data());
  c.debug_output = c.has_extension("GL_KHR_debug") || c.desktop || (c.gl_major == 3 && c.gl_minor >= 2);
  // Every query above is valid for the context's version and extensions, so an adopted
  // context's error flags (the application's) are neither read nor changed.
  if (!adopted_)
    while (glGetError() != GL_NO_ERROR) {
    }
  if (c.debug_output) {
    using Fn = void(GL_APIENTRY*)(GLDEBUGPROC, const void*);
    auto fn = reinterpret_cast<Fn>(eglGetProcAddress("glDebugMessageCallback"));
    if (!fn) fn = reinterpret_cast<Fn>(eglGetProcAddress("glDebugMessageCallbackKHR"));
    if (fn && !adopted_) {
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
  std::swap(debug_msg, pending_gl_error_);
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
  std::uint32_t m = static_cast<std::uint32_t>(std::max(1, caps_.max_workgroup_count[axis]));
  if (dispatch_limit_ != 0) m = std::min(m, dispatch_limit_);
  return m;
}

std::uint64_t DeviceImpl::loop_limit() const {
  if (loop_limit_override_ != 0)
    return caps_.max_loop_iterations ? std::min(loop_limit_override_, caps_.max_loop_iterations) : loop_limit_override_;
  return caps_.max_loop_iterations;
}

std::uint64_t DeviceImpl::loop_budget() const {
  const std::uint64_t l = loop_limit();
  return l == 0 ? std::numeric_limits<std::uint64_t>::max() : l;
}

std::int64_t DeviceImpl::ssbo_limit() const {
  if (ssbo_limit_override_ > 0) return std::min(ssbo_limit_override_, caps_.max_ssbo_block_size);
  return caps_.max_ssbo_block_size;
}

bool DeviceImpl::subgroup_features(std::uint32_t need) const {
  need |= GL_SUBGROUP_FEATURE_BASIC_BIT_KHR;
  if (!caps_.subgroup || (caps_.subgroup_features & need) != need || !(caps_.subgroup_stages & GL_COMPUTE_SHADER_BIT))
    return false;
  return settings().subgroups;
}

Precision default_precision() {
  using P = PrecisionSetting;
  const P p = settings().precision;
  return p == P::f16 || p == P::f16_matmul || p == P::f16_force || p == P::f16_emulate ? Precision::f16_allowed
                                                                                       : Precision::f32;
}

// The f16 kernels run where the device has fp16 arithmetic (Capabilities::fp16_arithmetic) and
// the precision allows them. GLTENSOR_PRECISION=f16-force also runs them elsewhere (their GLSL
// then fails to compile: to dump it for an offline compiler); f16-emulate runs the same kernel
// forms (their indexing, packing, block flushes) on any device with f32 types standing in for
// the f16 ones (f16_extension_glsl): a check of everything but the f16 rounding, on llvmpipe.
// (They were off on every device from 2026-11-24 to 2026-11-26: docs/precision.md has the
// NVIDIA defects found and fixed.)
bool DeviceImpl::fp16_arithmetic() const {
  using P = PrecisionSetting;
  const P p = settings().precision;
  return caps_.fp16_arithmetic || p == P::f16_force || p == P::f16_emulate;
}

bool DeviceImpl::fp16_matmul() const {
  using P = PrecisionSetting;
  const P p = settings().precision;
  return fp16_arithmetic() && (p == P::f16_matmul || p == P::f16_force || p == P::f16_emulate);
}

bool DeviceImpl::f16_math() const { return precision_ == Precision::f16_allowed && fp16_arithmetic(); }

std::string DeviceImpl::f16_extension_glsl() const {
  if (settings().precision == PrecisionSetting::f16_emulate)
    return "#define float16_t float\n#define f16vec2 vec2\n#define f16vec4 vec4\n"
           "#define packFloat2x16 packHalf2x16\n#define unpackFloat2x16 unpackHalf2x16\n";
  // NV_gpu_shader5 where present (NVIDIA's GL and GLES drivers), else the EXT types extension;
  // GLTENSOR_F16_EXT names one (diagnostics: which one gives NVIDIA's compiler packed f16 FMAs).
  using F = F16ExtSetting;
  const F forced = settings().f16_ext;
  if (forced == F::amd) return "#extension GL_AMD_gpu_shader_half_float : require\n";
  const bool ext = forced == F::ext || (forced == F::choose && !caps_.has_extension("GL_NV_gpu_shader5") &&
                                        caps_.has_extension("GL_EXT_shader_explicit_arithmetic_types_float16"));
  return ext ? kF16TypesExtensionGlsl : "#extension GL_NV_gpu_shader5 : require\n";
}

bool DeviceImpl::subgroup_arithmetic() const { return subgroup_features(GL_SUBGROUP_FEATURE_ARITHMETIC_BIT_KHR); }
bool DeviceImpl::subgroup_shuffle() const { return subgroup_features(GL_SUBGROUP_FEATURE_SHUFFLE_BIT_KHR); }

}  // namespace detail

// ---- public API -------------------------------------------------------------------------------

using detail::DeviceImpl;
using detail::Enter;

bool Capabilities::has_extension(const std::string& name) const {
  return std::find(extensions.begin(), extensions.end(), name) != extensions.end();
}

namespace {

// The caller's current context, made current again when a scope ends (Device::list, open).
class KeepCallerContext {
 public:
  KeepCallerContext() : before_(detail::ContextBinding::current(/*probe_glx=*/true)) {
    if (before_.is_glx()) detail::ContextBinding::release_glx();  // libglvnd: one window system per thread
  }
  ~KeepCallerContext() {
    if (!before_.empty()) before_.make_current();
  }
  KeepCallerContext(const KeepCallerContext&) = delete;
  KeepCallerContext& operator=(const KeepCallerContext&) = delete;

 private:
  detail::ContextBinding before_;
};

EGLenum egl_api(GlApi api) {
  if (api == GlApi::choose) {
    const std::string& env = detail::settings().api;
    if (env == "gl") return EGL_OPENGL_API;
    if (!env.empty() && env != "gles")
      throw ValueError("gltensor::Device::open: GLTENSOR_API must be gl or gles, not '" + env + "'");
    return EGL_OPENGL_ES_API;
  }
  return api == GlApi::gl ? EGL_OPENGL_API : EGL_OPENGL_ES_API;
}

Device open_shared(const OpenOptions& options) {
  if (!options.share_context || !options.share_display)
    throw ValueError("gltensor::Device::open: share_context and share_display go together");
  KeepCallerContext keep;
  detail::EglContext ctx;
  std::string why;
  if (!detail::create_shared_context(static_cast<EGLDisplay>(options.share_display),
                                     static_cast<EGLContext>(options.share_context), detail::kDebugBuild, ctx, why))
    throw DeviceError("gltensor::Device::open: no context sharing with the application's: " + why);
  auto impl = std::make_shared<DeviceImpl>();
  detail::EglCandidate c;
  c.platform = "shared";
  impl->open_own(ctx, detail::describe(c, -1), options.memory_limit,
                 options.precision.value_or(detail::default_precision()));
  return Device(impl);
}

}  // namespace

std::vector<AdapterInfo> Device::list() {
  std::vector<AdapterInfo> out;
  KeepCallerContext keep;
  int index = 0;
  for (const auto& c : detail::enumerate_egl_candidates()) {
    detail::EglContext ctx;
    std::string why;
    if (!detail::create_egl_context(c, false, EGL_OPENGL_ES_API, ctx, why)) continue;
    out.push_back(detail::describe(c, index++));
    detail::destroy_egl_context(ctx);
  }
  return out;
}

Device Device::open(const OpenOptions& options) {
  if (options.share_context || options.share_display) return open_shared(options);
  const EGLenum api = egl_api(options.api);
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
  // The caller's context is current again when open returns; where it had none, the device's
  // stays current (the first call then switches nothing).
  const detail::ContextBinding caller = detail::ContextBinding::current(/*probe_glx=*/true);
  if (caller.is_glx()) detail::ContextBinding::release_glx();
  struct Restore {
    const detail::ContextBinding& caller;
    ~Restore() {
      if (!caller.empty()) caller.make_current();
    }
  } restore{caller};
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
    if (!detail::create_egl_context(c, detail::kDebugBuild || detail::settings().gl_debug, api, ctx, why)) {
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
    if (api == EGL_OPENGL_API) what += " (desktop OpenGL 4.3+ core)";
    throw DeviceError(what + (failures.empty() ? "" : "; failures:" + failures));
  }
  // Prefer the first hardware adapter; else the first one.
  auto pick = std::find_if(usable.begin(), usable.end(), [](const Opened& o) { return !o.info.software; });
  if (pick == usable.end()) pick = usable.begin();
  for (auto it = usable.begin(); it != usable.end(); ++it)
    if (it != pick) detail::destroy_egl_context(it->ctx);
  if (!detail::make_current(pick->ctx)) {
    detail::destroy_egl_context(pick->ctx);
    throw DeviceError("gltensor::Device::open: eglMakeCurrent failed");
  }
  auto impl = std::make_shared<DeviceImpl>();
  impl->open_own(pick->ctx, pick->info, options.memory_limit, options.precision.value_or(detail::default_precision()));
  if (detail::settings().profile && impl->caps().timer_query) impl->extension<detail::Profiler>().set_on(*impl, true);
  return Device(impl);
}

Device Device::adopt_current(const AdoptOptions& options) {
  const detail::ContextBinding app = detail::ContextBinding::current(/*probe_glx=*/true);
  if (app.empty())
    throw DeviceError("gltensor::Device::adopt_current: no EGL or GLX context is current on this thread");
  auto impl = std::make_shared<DeviceImpl>();
  impl->adopted_ = true;
  impl->app_ = app;
  impl->restore_state_ = options.restore_state;
  impl->precision_ = options.precision.value_or(detail::default_precision());
  impl->egl_.display = app.display;
  impl->egl_.context = app.context;
  detail::EglCandidate c;
  c.platform = app.is_glx() ? "adopted GLX" : "adopted EGL";
  impl->adapter_ = detail::describe(c, -1);
  impl->init_capabilities();
  return Device(impl);
}

const Capabilities& Device::caps() const { return impl_->caps_; }
const AdapterInfo& Device::adapter() const { return impl_->adapter_; }
bool Device::adopted() const { return impl_->adopted_; }

void Device::flush() {
  Enter e(*impl_, "Device::flush");
  impl_->queue_.flush();
}

void Device::synchronize() {
  Enter e(*impl_, "Device::synchronize");
  impl_->queue_.wait_all();
  detail::check_device_errors(*impl_);
}

void Device::set_auto_flush(std::size_t dispatches) {
  if (dispatches == 0) throw ValueError("gltensor::Device::set_auto_flush: dispatches must be >= 1");
  impl_->queue_.set_auto_flush(dispatches);
}

PoolStats Device::pool_stats() const { return impl_->pool_.stats(); }

void Device::trim() {
  Enter e(*impl_, "Device::trim");
  impl_->pool_.trim();
}

void Device::set_memory_limit(std::size_t bytes) { impl_->pool_.set_limit(bytes); }

void Device::set_dispatch_limit(std::uint32_t max_workgroups) { impl_->dispatch_limit_ = max_workgroups; }

void Device::set_loop_limit(std::uint64_t iterations) { impl_->loop_limit_override_ = iterations; }

void Device::set_ssbo_limit(std::int64_t bytes) {
  if (bytes < 0) throw ValueError("gltensor::Device::set_ssbo_limit: bytes must be >= 0, got " + std::to_string(bytes));
  impl_->ssbo_limit_override_ = bytes;
}

void Device::set_precision(Precision precision) { impl_->precision_ = precision; }
Precision Device::precision() const { return impl_->precision_; }
Precision Device::precision_in_effect() const { return impl_->f16_math() ? Precision::f16_allowed : Precision::f32; }

void Device::set_logger(Logger logger) { impl_->logger_ = std::move(logger); }

std::uint64_t Device::dispatch_count() const { return impl_->queue_.dispatches(); }
std::uint64_t Device::barrier_count() const { return impl_->queue_.barriers(); }

}  // namespace gltensor
