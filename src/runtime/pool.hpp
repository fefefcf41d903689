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
  };
  explicit Pool(DeviceImpl& dev) : dev_(dev) {}
  /// A buffer of at least `bytes`; throws OutOfMemory past the limit or on GL_OUT_OF_MEMORY. Enters
  /// the device (guard.hpp) for its GL calls: callable before an op's first Launch.
  /// With host_write, only a buffer that no unfinished batch uses is reused: the host will write
  /// it with a copy, which drivers do not order against in-flight shader access (seen on
  /// NVIDIA), so such a buffer must be idle; nor one that a capture in progress used (its
  /// replays would overwrite the upload: capture.hpp).
  Block acquire(std::size_t bytes, const char* op, bool host_write = false);
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
  DeviceImpl& dev_;
  std::map<std::size_t, std::vector<Block>> free_;
  std::size_t limit_ = 0;
  PoolStats st_;
};

}  // namespace gltensor::detail
