// Device internals (internal): the context and its capabilities, and the parts that work on it
// (pool, queue, program cache). Services built on top (tuning, device-side error flags, the
// profiler) attach to a device as extensions instead of living in it.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <typeindex>
#include <unordered_map>
#include <vector>

#include "gltensor/device.hpp"
#include "gltensor/errors.hpp"
#include "runtime/context.hpp"
#include "runtime/egl_platform.hpp"
#include "runtime/gl.hpp"
#include "runtime/gl_state.hpp"
#include "runtime/pool.hpp"
#include "runtime/program_cache.hpp"
#include "runtime/queue.hpp"

namespace gltensor::detail {

class Profiler;

/// A service attached to a device (DeviceImpl::extension<T>()). free_gl() runs at device
/// destruction while the device's context is current (delete GL objects there).
struct DeviceExtension {
  virtual ~DeviceExtension() = default;
  virtual void free_gl() {}
};

/// The precision a device opens with where its options leave it unset (GLTENSOR_PRECISION).
Precision default_precision();

// The device's state is private: the layers above use the parts below (each with its own
// interface) and the narrow reads and setters here; Device (the public handle: open, adopt, the
// test overrides) and Enter (entry bookkeeping) are the runtime classes that set the rest.
struct DeviceImpl : std::enable_shared_from_this<DeviceImpl> {
  // ---- the parts: GL state cache, buffers, programs, dispatch queue ----
  GlState& gl() { return gl_; }
  Pool& pool() { return pool_; }
  ProgramCache& programs() { return programs_; }
  Queue& queue() { return queue_; }
  const Queue& queue() const { return queue_; }

  // ---- what the device is ----
  const Capabilities& caps() const { return caps_; }
  const AdapterInfo& adapter() const { return adapter_; }
  /// gltensor's own context (Device::open); for adopted EGL contexts display + context.
  const EglContext& egl() const { return egl_; }
  /// Whether the device runs in an application's context (Device::adopt).
  bool adopted() const { return adopted_; }
  /// The precision asked for (Device::set_precision; f16_math() says what is in effect).
  Precision precision() const { return precision_; }
  /// Whether this thread may make GL calls on the device now: its thread, inside an entry or
  /// with its context current (destructors that delete GL objects; else defer_delete).
  bool context_current_here() const;
  /// GL_PROGRAM_BINARY_FORMATS (the program cache's on-disk binaries).
  const std::vector<GLint>& binary_formats() const { return binary_formats_; }
  /// Forgets a KHR_debug error that a call expected (a rejected program binary).
  void clear_pending_gl_error() { pending_gl_error_.clear(); }
  /// Sets up a device on gltensor's own context `ctx`, current (Device::open): capabilities, the
  /// pool's limit, the precision asked for.
  void open_own(const EglContext& ctx, const AdapterInfo& adapter, std::size_t memory_limit, Precision precision);
  /// A GL error reported through KHR_debug, raised at the next check_gl (the first one kept).
  void note_gl_error(const char* message);
  /// The Profiler extension while it is on (launches check it), or null.
  Profiler* profiler() const { return profiler_; }
  void set_profiler(Profiler* p) { profiler_ = p; }

  /// GL objects whose owner was destroyed where the device's context was not current (another
  /// thread, or another context current): deleted at the next entry (or with the device).
  void defer_delete(GLuint buffer, GLsync fence);
  /// Deletes the deferred objects (context current).
  void run_deferred();
  /// Objects waiting for deletion (tests).
  std::size_t deferred_count();

  DeviceImpl();
  ~DeviceImpl();
  void init_capabilities();
  /// The loop iterations one invocation may run on a software renderer, measured by a probe
  /// kernel (0: no limit found; its barrier through `queue`); see init_capabilities.
  static std::uint64_t probe_loop_limit(Queue& queue, const Capabilities& c, bool adopted_context);
  void log(LogLevel level, const std::string& msg) const;
  /// Throws DeviceError / OutOfMemory for a pending GL error (or KHR_debug error in debug builds).
  void check_gl(const char* op);

  /// Workgroups a dispatch may have along `axis` (the device's limit, or the test limit).
  std::uint32_t max_groups(int axis) const;
  /// Loop iterations one invocation may run (all loops together): Capabilities'
  /// max_loop_iterations or the test override; 0 = unlimited.
  std::uint64_t loop_limit() const;
  /// loop_limit() for planners that compare against it: UINT64_MAX where there is no limit (0),
  /// so that "fits the limit" is a plain <= (GPUs report none: an op that compares with 0 refuses
  /// every launch there).
  std::uint64_t loop_budget() const;
  /// Bytes one buffer (a tensor's storage, an op's workspace) may have: Capabilities'
  /// max_ssbo_block_size or the lower test override (Device::set_ssbo_limit). Ops whose
  /// intermediates could be larger split their work to fit it.
  std::int64_t ssbo_limit() const;
  /// Whether kernels may use the KHR_shader_subgroup features `need` (GL_SUBGROUP_FEATURE_*_BIT_KHR
  /// bits; basic is always required) in compute shaders (and Settings::subgroups allows it).
  bool subgroup_features(std::uint32_t need) const;
  bool subgroup_arithmetic() const;
  bool subgroup_shuffle() const;
  /// Whether kernels may add to float32 buffer words atomically in hardware (atomic_float_glsl).
  bool float_atomic_add() const { return caps_.has_extension("GL_NV_shader_atomic_float"); }
  /// Whether kernels may use f16 arithmetic: Capabilities::fp16_arithmetic, or
  /// Settings::precision = "f16-force" or "f16-emulate" (diagnostics).
  bool fp16_arithmetic() const;
  /// Whether kernels use f16 math (Precision::f16_allowed asked for and the device has fp16
  /// arithmetic, or Settings::precision = "f16-force" / "f16-emulate").
  bool f16_math() const;
  /// Whether matmul (and what runs on it: im2col conv, linear, gemm) uses f16 math too: only with
  /// Settings::precision = "f16-matmul", "f16-force" or "f16-emulate". On the H100 its f16vec4
  /// FMAs ran at 0.61x f32's speed (no tensor cores in GL), so f16_allowed keeps f32 math there
  /// (docs/precision.md).
  bool fp16_matmul() const;
  /// The #extension line that enables float16_t / f16vecN in kernels on this device.
  std::string f16_extension_glsl() const;
  /// Whether kernels check their loop lengths (Settings::check_loops when the device opened):
  /// every program is compiled with CHECK_LOOPS and every launch takes a loop-check slot.
  bool check_loops() const { return check_loops_; }

  friend class gltensor::Device;  // opens, adopts, sets the options and test overrides
  friend class Enter;             // the entry bookkeeping

  /// The extension of type T, created on first use.
  template <typename T>
  T& extension() {
    auto& p = extensions_[std::type_index(typeid(T))];
    if (!p) p = std::make_unique<T>();
    return static_cast<T&>(*p);
  }
  template <typename T>
  T* find_extension() {
    auto it = extensions_.find(std::type_index(typeid(T)));
    return it == extensions_.end() ? nullptr : static_cast<T*>(it->second.get());
  }

 private:
  void free_gl_objects();
  EglContext egl_;
  bool adopted_ = false;
  ContextBinding app_;         // adopted: the application's context as adopted
  bool restore_state_ = true;  // adopted: AdoptOptions::restore_state
  bool owns_context_ = true;   // Device::open: destroy egl_.context with the device
  AdapterInfo adapter_;
  Capabilities caps_;
  std::vector<GLint> binary_formats_;
  std::thread::id thread_;
  Logger logger_;
  GlState gl_;  // every binding gltensor changes (before pool, queue: they bind through it)
  Pool pool_{*this};
  ProgramCache programs_{*this};
  Queue queue_{*this};
  std::string pending_gl_error_;           // from KHR_debug, raised at the next check_gl
  std::uint32_t dispatch_limit_ = 0;       // test override of the workgroup count limit (0 = device's)
  std::uint64_t loop_limit_override_ = 0;  // test override of the loop iteration limit (0 = device's)
  std::int64_t ssbo_limit_override_ = 0;   // test override of the max SSBO block size (0 = device's)
  Precision precision_ = Precision::f32;   // asked for (Device::set_precision)
  Profiler* profiler_ = nullptr;
  // ---- entry bookkeeping (Enter) ----
  int enter_depth_ = 0;
  bool switched_ = false;  // Enter made the device's context current over `outer_`
  ContextBinding outer_;   // the thread's context before that, made current again on exit
  const bool check_loops_;
  std::unordered_map<std::type_index, std::unique_ptr<DeviceExtension>> extensions_;
  std::mutex deferred_mutex_;
  std::vector<GLuint> deferred_buffers_;
  std::vector<GLsync> deferred_fences_;
};

}  // namespace gltensor::detail
