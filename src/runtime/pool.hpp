// The SSBO pool: buffers in size classes, reused (internal).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "gltensor/device.hpp"
#include "runtime/gl.hpp"

namespace gltensor::detail {

struct DeviceImpl;

/// SSBOs in size classes (powers of two and 1.5x powers of two, at least 256 bytes), reused.
class Pool {
 public:
  struct Block {
    GLuint buffer = 0;
    std::size_t capacity = 0;
    std::uint64_t busy_until = 0;  // last batch that used it; GPU access ends with that batch's fence
    /// A host-visible buffer's persistent, coherent mapping (acquire_host), else null.
    unsigned char* host = nullptr;
  };
  explicit Pool(DeviceImpl& dev) : dev_(dev) {}
  /// A buffer of at least `bytes`; throws OutOfMemory past the limit or on GL_OUT_OF_MEMORY. Enters
  /// the device (guard.hpp) for its GL calls: callable before an op's first Launch.
  /// With host_write, only a buffer that no unfinished batch uses is reused: the host will write
  /// it with a copy, which drivers do not order against in-flight shader access (seen on
  /// NVIDIA), so such a buffer must be idle; nor one that a capture in progress used (its
  /// replays would overwrite the upload: capture.hpp).
  Block acquire(std::size_t bytes, const char* op, bool host_write = false);
  /// A host-visible buffer of at least `bytes`: immutable storage in host memory, persistently
  /// and coherently mapped (Block::host), that kernels bind as any SSBO and the host reads and
  /// writes in place (host_staging.hpp). Only a buffer no unfinished batch (nor a capture in
  /// progress) uses is reused. Returns an empty Block (buffer 0) where the context has no buffer
  /// storage or GLTENSOR_HOST_IO=copy; throws OutOfMemory past the limit.
  Block acquire_host(std::size_t bytes, const char* op);
  /// Returns a buffer for reuse. Makes no GL call (safe from any destructor).
  void release(Block b);
  /// Takes the free buffer `buffer` out of the free lists (a Recording keeps it); false if it
  /// is not free.
  bool take(GLuint buffer, Block& out);
  void trim();
  PoolStats stats() const;
  void set_limit(std::size_t bytes) { limit_ = bytes; }
  static std::size_t size_class(std::size_t bytes);

 private:
  // The free lists' key: the size class, with bit 0 set for host-visible buffers (classes are
  // multiples of 256), so that acquire() never returns one.
  static constexpr std::size_t kHostKey = 1;
  bool reuse(std::size_t key, bool idle_only, Block& out);
  void check_limit(std::size_t cls, std::size_t bytes, const char* op);
  void count_new(std::size_t cls);
  DeviceImpl& dev_;
  std::map<std::size_t, std::vector<Block>> free_;
  std::size_t limit_ = 0;
  PoolStats st_;
};

}  // namespace gltensor::detail
