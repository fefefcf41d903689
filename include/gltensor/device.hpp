// Device: a headless EGL + OpenGL ES 3.1+ context that runs gltensor's compute shaders.
//
// A Device is a cheap, copyable handle; tensors keep their device alive. It must be used from the
// thread that opened it (use from another thread throws ThreadError). Work is recorded without
// waiting: dispatches are batched, each batch ends with a fence (glFenceSync), and reading a
// tensor back waits only for the fence of the batch that last wrote it (never glFinish).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gltensor {

namespace detail {
struct DeviceImpl;
}

/// One EGL adapter as found by Device::list().
struct AdapterInfo {
  int index = 0;          ///< position in Device::list(), usable in OpenOptions::index
  std::string platform;   ///< "device" (EGL_EXT_platform_device), "gbm" or "surfaceless"
  std::string node;       ///< DRM render node (e.g. /dev/dri/renderD128) when known
  std::string vendor;     ///< GL_VENDOR
  std::string renderer;   ///< GL_RENDERER
  std::string version;    ///< GL_VERSION (includes the driver's version)
  bool software = false;  ///< a CPU rasterizer (llvmpipe, softpipe, SwiftShader)
};

/// Capabilities, read once when the device opens.
struct Capabilities {
  int gl_major = 0, gl_minor = 0;
  std::string version, renderer, vendor, glsl_version;
  std::int64_t max_ssbo_block_size = 0;    ///< bytes; a tensor's storage may not be larger
  int max_ssbo_bindings = 0;               ///< GL_MAX_COMPUTE_SHADER_STORAGE_BLOCKS
  int max_workgroup_size[3] = {0, 0, 0};   ///< GL_MAX_COMPUTE_WORK_GROUP_SIZE
  int max_workgroup_count[3] = {0, 0, 0};  ///< GL_MAX_COMPUTE_WORK_GROUP_COUNT
  int max_workgroup_invocations = 0;
  int max_shared_memory = 0;  ///< bytes of shared memory per workgroup
  bool subgroup = false;      ///< GL_KHR_shader_subgroup
  int subgroup_size = 0;
  std::uint32_t subgroup_features = 0;  ///< GL_SUBGROUP_SUPPORTED_FEATURES_KHR bits
  std::uint32_t subgroup_stages = 0;    ///< GL_SUBGROUP_SUPPORTED_STAGES_KHR bits
  bool desktop = false;                 ///< desktop OpenGL (4.3+, core or compatibility profile), not OpenGL ES
  int max_texture_units = 0;            ///< GL_MAX_COMBINED_TEXTURE_IMAGE_UNITS
  int max_image_units = 0;              ///< GL_MAX_IMAGE_UNITS
  int max_uniform_bindings = 0;         ///< GL_MAX_UNIFORM_BUFFER_BINDINGS
  int max_uniform_block_size = 0;       ///< GL_MAX_UNIFORM_BLOCK_SIZE (bytes)
  int uniform_offset_alignment = 0;     ///< GL_UNIFORM_BUFFER_OFFSET_ALIGNMENT (bytes)
  bool fp16_arithmetic = false;         ///< NV_gpu_shader5 or EXT_shader_explicit_arithmetic_types_float16
  bool timer_query = false;             ///< timestamp queries: desktop OpenGL 3.3+ or ARB_timer_query (core entry
                                        ///< points), OpenGL ES with EXT_disjoint_timer_query
  /// Loop iterations one shader invocation may run, all its loops together, before the driver
  /// silently leaves them (Mesa's llvmpipe: 65535); 0 = no known limit. Kernels split longer
  /// work across invocations, workgroups or passes.
  std::uint64_t max_loop_iterations = 0;
  bool program_binary = false;  ///< OES_get_program_binary with at least one format
  bool debug_output = false;    ///< KHR_debug (messages go to the logger)
  std::vector<std::string> extensions;
  bool has_extension(const std::string& name) const;
};

/// SSBO pool statistics. Buffers are kept in size classes and reused.
struct PoolStats {
  std::size_t bytes_allocated = 0;  ///< bytes held in GL buffers (in use + cached)
  std::size_t bytes_in_use = 0;     ///< bytes of buffers owned by live storages
  std::size_t peak_bytes = 0;       ///< high-water mark of bytes_allocated
  std::size_t live_buffers = 0;     ///< buffers owned by live storages
  std::size_t cached_buffers = 0;   ///< free buffers kept for reuse
  std::size_t hits = 0;             ///< requests served from the cache
  std::size_t misses = 0;           ///< requests that created a GL buffer
  std::size_t memory_limit = 0;     ///< 0 = none
};

/// One row of a GPU profile: a kernel (its glsl file), an op (the public op that launched it) or
/// a ProfileScope; gpu_ms is the GPU time of its dispatches (timer queries), share its part of
/// the total.
struct ProfileRow {
  std::string name;
  std::uint64_t calls = 0;
  double gpu_ms = 0;
  double share = 0;
};

/// The GPU profile since profiling was turned on (or reset), each list heaviest first.
struct ProfileReport {
  std::vector<ProfileRow> by_scope;  ///< innermost ProfileScope (the op's name outside any)
  std::vector<ProfileRow> by_op;
  std::vector<ProfileRow> by_kernel;
  double total_ms = 0;
  std::uint64_t disjoint_events = 0;  ///< GL_GPU_DISJOINT_EXT seen: timings of that time dropped
  /// A printable table per op and per kernel (calls, GPU ms, share), and per scope if any.
  std::string table() const;
};

enum class LogLevel { debug, info, warning, error };
using Logger = std::function<void(LogLevel, const std::string&)>;

/// Client API of a context Device::open makes.
enum class GlApi {
  choose,  ///< GLTENSOR_API ("gl" or "gles") if set, else OpenGL ES
  gles,    ///< OpenGL ES 3.2, else 3.1
  gl,      ///< desktop OpenGL 4.6, 4.5, 4.4 or 4.3, core profile (EGL_OPENGL_API)
};

/// Arithmetic precision of the device's kernels (issue 15; docs/precision.md), after TFLite's GPU
/// delegate option "precision loss allowed".
///
/// - f32 (the default): every floating op computes in f32 and accumulates in f32, whatever the
///   tensors' dtypes (f16/bf16 tensors are widened on load and rounded once on store).
/// - f16_allowed: where the device has fp16 arithmetic (Capabilities::fp16_arithmetic), matmul
///   (and what runs on it: gemm, linear, conv2d's im2col path, attention's composite path) takes
///   its operands as f16 (f32 operands rounded to f16), forms products and partial sums in f16
///   vectors (f16vec4 FMAs) over blocks of Precision::kF16BlockK values of K, and adds each
///   block's partial sum into an f32 accumulator; the result keeps its dtype. Binary and unary
///   elementwise ops whose operands and result are all f16 tensors (contiguous) compute in f16
///   vectors (f16vec2) for the ops that have an f16 form (docs/precision.md lists them).
///   Expected error (docs/precision.md has the measured table): matmul about
///   1e-3 * sqrt(K) * sum_k |a_ik| |b_kj| / sqrt(K) in the worst case, typically a relative
///   error ~1e-3 of the result's scale; values past f16's range (|x| > 65504, including block
///   partial sums) become +-Inf and values below 6e-8 flush to 0. Elementwise f16 ops round
///   each intermediate to f16 (one more rounding than the f32 path for composite formulas).
///   On a device without fp16 arithmetic (Mesa llvmpipe) the mode is accepted and every op keeps
///   f32 math: Device::precision_in_effect() reports f32 there.
///   Status (2026-11-24): the f16 kernels are off on every device, so f16_allowed keeps f32 math
///   everywhere and precision_in_effect() reports f32: on the H100 they gave NaN in some matmul
///   outputs, large errors with f16 operands and a wrong relu, and ran at 0.6x f32's speed
///   (docs/precision.md). GLTENSOR_PRECISION=f16-force runs them, for debugging only.
enum class Precision {
  f32,          ///< f32 math and f32 accumulation (default)
  f16_allowed,  ///< f16 products and block partial sums where the device has fp16 arithmetic
};

/// K values per f16 partial sum in matmul's f16 math before it is added to the f32 accumulator.
inline constexpr int kF16BlockK = 32;

struct OpenOptions {
  /// Adapter index in Device::list(); -1 = choose: the env GLTENSOR_DEVICE (an index or a
  /// substring of the renderer name) if set, else the first hardware adapter, else software.
  int index = -1;
  /// Substring of the renderer name (case-insensitive); empty = any.
  std::string name;
  /// Memory limit of the SSBO pool in bytes; 0 = none. Exceeding it throws OutOfMemory.
  std::size_t memory_limit = 0;
  /// Client API of the new context.
  GlApi api = GlApi::choose;
  /// An application's EGLContext (and its EGLDisplay) to share objects with: the new context is
  /// made on that display, in the same share group, with the same client API (and config where
  /// the display needs one), so that the application's buffers, textures and fences can be used
  /// by the device (gltensor/interop.hpp), typically on a compute thread beside the render thread.
  /// index, name and api are then ignored. Both null: a headless context of its own.
  void* share_context = nullptr;
  void* share_display = nullptr;
  /// Precision of the device's kernels; unset = GLTENSOR_PRECISION (f16 = f16_allowed), else f32.
  std::optional<Precision> precision;
};

struct AdoptOptions {
  /// Precision of the device's kernels; unset = GLTENSOR_PRECISION (f16 = f16_allowed), else f32.
  std::optional<Precision> precision;
  /// true: each public call (or each interop::StateScope) puts back every GL binding it changed
  /// (reading each one's value with one glGet the first time it changes it). false: the
  /// application promises to bind what its own GL calls use (as engines that bind per draw do):
  /// gltensor then reads and restores nothing, leaving its own program and buffer, texture,
  /// sampler and image unit bindings in place, and binds again what it needs at each call.
  bool restore_state = true;
};

class AsyncRead;

class Device {
 public:
  /// Every EGL adapter: EGL_EXT_platform_device devices, then GBM render nodes not already
  /// listed, then EGL_MESA_platform_surfaceless when no software device was found.
  static std::vector<AdapterInfo> list();
  /// Opens a new headless context (OpenGL ES 3.2, else 3.1; or desktop OpenGL 4.3+ core, see
  /// OpenOptions::api), or one sharing objects with an application's (OpenOptions::share_*).
  /// Throws DeviceError if none can be made.
  static Device open(const OpenOptions& options = {});
  /// Uses the caller's current context (graphics apps): EGL (OpenGL ES 3.1+ or desktop OpenGL
  /// 4.3+) or GLX (desktop OpenGL 4.3+). The bindings gltensor changes (program; generic and
  /// indexed shader storage, copy and pixel buffer bindings; the active texture unit and one
  /// texture unit's 2-D texture and sampler; one image unit) are put back as AdoptOptions says.
  /// The context must stay alive while the Device or any tensor on it is used, and be current
  /// on this thread at each call (DeviceError otherwise). Throws DeviceError when no context is
  /// current or it lacks compute shaders.
  static Device adopt_current(const AdoptOptions& options = {});

  Device() = default;  ///< an empty handle; valid() is false
  bool valid() const { return impl_ != nullptr; }
  const Capabilities& caps() const;
  const AdapterInfo& adapter() const;
  bool adopted() const;

  /// Ends the current batch with a fence and submits it (glFlush); does not wait. Uploads and
  /// buffer copies issued with no dispatch after them are submitted too.
  void flush();
  /// Waits until every recorded dispatch and every transfer gltensor issued has finished:
  /// uploads (Tensor::from_host and the like, whether written by glBufferSubData or copied from
  /// the upload ring or a staging buffer with glCopyBufferSubData) and buffer copies, also where
  /// no dispatch follows them. Afterwards the device holds no pending work of gltensor's: another
  /// API or context may read the buffers (interop) without a fence of its own, and a host timer
  /// read after it covers the GPU's part of an upload. Throws the errors kernels raised (e.g.
  /// IndexError, LimitError), and DeviceError if the wait fails (context lost).
  void synchronize();
  /// Dispatches per batch before an automatic flush (default 64).
  void set_auto_flush(std::size_t dispatches);

  PoolStats pool_stats() const;
  /// Frees every cached (unused) buffer.
  void trim();
  void set_memory_limit(std::size_t bytes);

  /// Lowers the number of workgroups per grid dimension below the device limit (0 = device
  /// limit). 1-D grids with more workgroups become 2-D grids (rows of this many workgroups), and
  /// grids with more rows than this several dispatches, transparently; lowering it is meant for
  /// tests.
  void set_dispatch_limit(std::uint32_t max_workgroups);

  /// Lowers the loop iterations a kernel invocation may run (0 = the device's limit,
  /// Capabilities::max_loop_iterations), so that ops take the paths that split long loops across
  /// invocations or passes; meant for tests.
  void set_loop_limit(std::uint64_t iterations);

  /// Lowers the max SSBO block size (bytes) that allocations are checked against and that ops
  /// plan their workspaces with (0 = the device's, Capabilities::max_ssbo_block_size, which
  /// keeps reporting the device's value), so that ops take the paths that split large
  /// intermediates (im2col columns, split-K partials, attention scores) on small shapes; meant
  /// for tests.
  void set_ssbo_limit(std::int64_t bytes);

  /// The precision ops run in from now on (see Precision). Accepted on every device; where the
  /// device has no fp16 arithmetic, f16_allowed keeps f32 math (precision_in_effect() says so).
  void set_precision(Precision precision);
  /// The precision asked for (OpenOptions, set_precision or GLTENSOR_PRECISION).
  Precision precision() const;
  /// The precision kernels actually use: f16_allowed only where it was asked for and the device
  /// has fp16 arithmetic (Capabilities::fp16_arithmetic), else f32.
  Precision precision_in_effect() const;

  /// GPU profiler: with `on`, every dispatch is timed by two timestamp queries (GL_TIMESTAMP: the
  /// core glQueryCounter on desktop OpenGL, EXT_disjoint_timer_query's on OpenGL ES; where the
  /// context has GL_GPU_DISJOINT_EXT, timings of a disjoint interval are dropped and counted) and
  /// wrapped in a KHR_debug group named after its op (apitrace and RenderDoc show them); costs a
  /// little speed. GLTENSOR_PROFILE=1 turns it on when a device
  /// opens and prints the table to stderr when it closes. Throws DeviceError without timer
  /// queries. It begins no query (GL_TIMESTAMP counters only), so an adopted context's own
  /// GL_TIME_ELAPSED query may stay active around gltensor's calls; but reading GL_GPU_DISJOINT_EXT
  /// clears that context-wide flag, so an application that reads it too sees only the disjoint
  /// events after gltensor's last read.
  void set_profiling(bool on);
  /// Waits for the pending timings and returns the profile so far.
  ProfileReport profile();
  void reset_profile();

  /// Receives KHR_debug messages and gltensor's own notices. Default: warnings and errors
  /// to stderr.
  void set_logger(Logger logger);

  /// Number of compute dispatches recorded since the device opened.
  std::uint64_t dispatch_count() const;
  /// Number of glMemoryBarrier calls issued since the device opened.
  std::uint64_t barrier_count() const;

  const std::shared_ptr<detail::DeviceImpl>& impl() const { return impl_; }
  explicit Device(std::shared_ptr<detail::DeviceImpl> impl) : impl_(std::move(impl)) {}
  bool operator==(const Device& o) const { return impl_ == o.impl_; }

 private:
  std::shared_ptr<detail::DeviceImpl> impl_;
};

/// While alive, dispatches on `dev` are attributed to `name` in ProfileReport::by_scope (scopes
/// nest; the innermost wins). Cheap when profiling is off.
class ProfileScope {
 public:
  ProfileScope(const Device& dev, std::string name);
  ~ProfileScope();
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  std::shared_ptr<detail::DeviceImpl> dev_;
  bool active_ = false;
};

}  // namespace gltensor
