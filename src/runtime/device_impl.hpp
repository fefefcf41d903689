// Device internals: the EGL context, the SSBO pool, the dispatch scheduler and the program cache.
#pragma once
#include <array>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "runtime/tuner.hpp"
#include "runtime/egl_platform.hpp"
#include "runtime/gl.hpp"
#include "gltensor/device.hpp"
#include "gltensor/errors.hpp"

namespace gltensor::detail {

/// FNV-1a hash (on-disk cache keys).
std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 1469598103934665603ull);
/// The on-disk cache folder (program binaries, tuning): GLTENSOR_CACHE_DIR ("off" or empty:
/// none), else $XDG_CACHE_HOME/gltensor, else ~/.cache/gltensor.
std::filesystem::path cache_dir();

struct DeviceImpl;

/// SSBOs in size classes (powers of two and 1.5x powers of two, at least 256 bytes), reused.
class Pool {
 public:
  struct Block {
    GLuint buffer = 0;
    std::size_t capacity = 0;
    std::uint64_t busy_until = 0;  // last batch that used it; GPU access ends with that batch's fence
  };
  explicit Pool(DeviceImpl& dev) : dev_(dev) {}
  /// A buffer of at least `bytes`; throws OutOfMemory past the limit or on GL_OUT_OF_MEMORY.
  /// With host_write, only a buffer that no unfinished batch uses is reused: the host will write
  /// it with glBufferSubData, which drivers do not order against in-flight shader access
  /// (seen on NVIDIA), so such a buffer must be idle.
  Block acquire(std::size_t bytes, const char* op, bool host_write = false);
  /// Returns a buffer for reuse. Makes no GL call (safe from any destructor).
  void release(Block b);
  void trim();
  void destroy_all();
  PoolStats stats() const;
  void set_limit(std::size_t bytes) { limit_ = bytes; }
  static std::size_t size_class(std::size_t bytes);

 private:
  DeviceImpl& dev_;
  std::map<std::size_t, std::vector<Block>> free_;
  std::size_t limit_ = 0;
  PoolStats st_;
};

/// Refcounted SSBO storage. write_batch is the batch of the last dispatch that wrote it.
struct Storage {
  std::shared_ptr<DeviceImpl> dev;
  Pool::Block block;
  std::size_t nbytes = 0;
  std::uint64_t write_batch = 0;
  std::uint64_t use_batch = 0;  // last batch with any GPU access (read or write)
  ~Storage();
  GLuint buffer() const { return block.buffer; }
};

/// A linked compute program with its uniform locations.
struct Program {
  GLuint id = 0;
  std::uint32_t local_size[3] = {1, 1, 1};
  std::unordered_map<std::string, GLint> uniforms;
  GLint loc(const std::string& name) const {
    auto it = uniforms.find(name);
    return it == uniforms.end() ? -1 : it->second;
  }
  /// Location by string-literal address (no string hashing on hot paths).
  GLint loc(const char* literal) const {
    auto it = loc_by_ptr.find(literal);
    if (it != loc_by_ptr.end()) return it->second;
    return loc_by_ptr[literal] = loc(std::string(literal));
  }
  /// Sets uniform values only when they differ from the last values set (driver calls cost).
  void set_uints(const char* name, const GLuint* v, GLsizei n) const;
  void set_uint(const char* name, GLuint v) const { set_uints(name, &v, 1); }
  void set_int(const char* name, GLint v) const;
  void set_float(const char* name, float v) const;

  mutable std::unordered_map<const char*, GLint> loc_by_ptr;
  mutable std::unordered_map<GLint, std::vector<std::uint32_t>> last;
};

class ProgramCache {
 public:
  explicit ProgramCache(DeviceImpl& dev) : dev_(dev) {}
  /// Program for `kernel` (a glsl/ file name) with `defines` prepended and the local size.
  /// Compiles on first use, or loads a matching on-disk program binary.
  const Program& get(const std::string& kernel, const std::string& defines, std::uint32_t lx, std::uint32_t ly = 1,
                     std::uint32_t lz = 1);
  /// As get(), found by a short caller-made key; `header` builds the defines only on a miss.
  template <typename HeaderFn>
  const Program& get_keyed(const std::string& key, const char* kernel, HeaderFn&& header, std::uint32_t lx,
                           std::uint32_t ly = 1, std::uint32_t lz = 1) {
    auto it = keyed_.find(key);
    if (it != keyed_.end()) return *it->second;
    const Program& p = get(kernel, header(), lx, ly, lz);
    keyed_.emplace(key, &p);
    return p;
  }
  void destroy_all();
  std::size_t size() const { return programs_.size(); }
  std::size_t binary_cache_hits() const { return binary_hits_; }

 private:
  GLuint compile(const std::string& name, const std::string& source);
  GLuint load_binary(const std::string& path, std::uint64_t hash);
  void store_binary(const std::string& path, std::uint64_t hash, GLuint program);
  DeviceImpl& dev_;
  std::unordered_map<std::string, Program> programs_;
  std::unordered_map<std::string, const Program*> keyed_;
  std::size_t binary_hits_ = 0;
};

/// One SSBO used by a dispatch: bound at binding point `binding`.
struct BufferUse {
  Storage* storage;
  bool write;
};

struct DeviceImpl : std::enable_shared_from_this<DeviceImpl> {
  EglContext egl;
  bool adopted = false;
  AdapterInfo adapter;
  Capabilities caps;
  std::thread::id thread;
  Logger logger;
  Pool pool{*this};
  ProgramCache programs{*this};
  Tuner tuner;

  // ---- scheduler state ----
  std::uint64_t batch = 1;  // id of the batch being recorded
  std::size_t batch_dispatches = 0;
  std::size_t auto_flush = 64;
  std::deque<std::pair<std::uint64_t, GLsync>> fences;  // submitted batches, oldest first
  std::uint64_t completed_batch = 0;                    // every batch <= this has finished
  std::unordered_set<GLuint> written_since_barrier, read_since_barrier;
  std::uint32_t dispatch_limit = 0;
  GLuint bound_program = 0;  // what this context has bound, to skip redundant binds
  std::array<GLuint, 16> bound_ssbo{};
  void invalidate_bindings() {
    bound_program = 0;
    bound_ssbo.fill(0);
  }
  std::uint64_t dispatches = 0, barriers = 0;
  std::string pending_gl_error;  // from KHR_debug, raised at the next check

  // ---- device-side index checks (index.comp writes 1 into the flag for a bad index) ----
  std::unique_ptr<Storage> index_flag;                              // one uint, created on first use
  std::vector<std::pair<std::uint64_t, std::string>> index_checks;  // (batch, op) not yet checked
  Storage& index_flag_storage();
  /// Throws IndexError if an index op whose batch has completed flagged a bad index.
  void check_index_errors();

  // ---- entry bookkeeping (thread check, context, state restore for adopted contexts) ----
  int enter_depth = 0;
  struct SavedState;
  std::unique_ptr<SavedState> saved;

  DeviceImpl();
  ~DeviceImpl();
  void init_capabilities();
  void log(LogLevel level, const std::string& msg) const;

  /// Records a dispatch of the current program `p` (uniforms already set with
  /// glProgramUniform*). uses[i] is bound at binding i. Inserts a barrier only when a buffer
  /// touched here was written (or, for a write, read) since the last barrier.
  void dispatch(const Program& p, std::uint32_t gx, std::uint32_t gy, std::uint32_t gz,
                std::span<const BufferUse> uses);
  /// Dispatches `invocations` threads as a 1-D grid: one row of workgroups, or several rows of
  /// max_groups_x() (a 2-D grid, flattened by GLOBAL_ID_1D in the shader); the uniform u_base
  /// receives the first invocation index of each dispatch (0 unless the grid needs several).
  void dispatch_1d(const Program& p, std::uint64_t invocations, std::span<const BufferUse> uses);
  /// Workgroups a dispatch may have along `axis` (the device's limit, or the test limit).
  std::uint32_t max_groups(int axis) const;
  std::uint32_t max_groups_x() const;
  /// Whether kernels may use the KHR_shader_subgroup features `need` (GL_SUBGROUP_FEATURE_*_BIT_KHR
  /// bits; basic is always required) in compute shaders; GLTENSOR_SUBGROUPS=0 forces the
  /// shared-memory fallbacks (read on every call, so tests can run both).
  bool subgroup_features(std::uint32_t need) const;
  /// subgroup_features(arithmetic).
  bool subgroup_arithmetic() const;
  /// A barrier before host-side access (upload, copy, map) to a buffer written by a shader.
  void barrier_for_host(GLuint buffer);
  void flush();
  void wait_batch(std::uint64_t batch_id);
  /// Retires submitted batches whose fences have signaled, without waiting.
  void poll_fences();
  /// Waits for every recorded dispatch (synchronize() without the index check).
  void synchronize_fences_only();
  void synchronize();
  void check_gl(const char* op);
};

/// RAII entry into the device for one public call: checks the thread, makes the context
/// current, and for adopted contexts saves and restores GL bindings.
class Enter {
 public:
  Enter(DeviceImpl& dev, const char* op);
  ~Enter();
  Enter(const Enter&) = delete;
  Enter& operator=(const Enter&) = delete;

 private:
  DeviceImpl& dev_;
};

}  // namespace gltensor::detail
