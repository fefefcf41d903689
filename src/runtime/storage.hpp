// Storage: a refcounted pool buffer with its GPU access history, and host transfers (internal).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "runtime/pool.hpp"

namespace gltensor::detail {

struct DeviceImpl;

/// Refcounted SSBO storage. write_batch is the batch of the last dispatch that wrote it,
/// use_batch the last batch with any GPU access. Shared (std::shared_ptr) where a tensor owns it,
/// so that a Recording can keep the storages its dispatches use alive.
struct Storage : std::enable_shared_from_this<Storage> {
  std::shared_ptr<DeviceImpl> dev;  // null for buffers the device owns itself (freed with it)
  Pool::Block block;
  bool external = false;  // an application's buffer (interop::wrap_buffer): never freed or pooled
  std::size_t nbytes = 0;
  std::uint64_t write_batch = 0;
  std::uint64_t use_batch = 0;
  ~Storage();
  GLuint buffer() const { return block.buffer; }

  /// Host -> buffer at byte 0 (through the upload ring, in pieces from 1 MiB on GPUs, or a
  /// short-lived staging buffer, see storage.cpp; by glBufferSubData from `data` where
  /// upload_direct says so: software rasterizers; a host-visible block, Pool::acquire_host, is written in place after
  /// the batches that use it have finished). A pool buffer must be idle: no dispatch of a batch that has not finished
  /// used it (from_bytes' buffer, Pool::acquire with host_write), so no barrier is issued for it (the per-buffer
  /// barrier check it had was never reached: an assertion run through the test suite on llvmpipe and the H100,
  /// bench/RESULTS.md, 2026-11-28, loose17).
  void upload(const void* data, std::size_t bytes);
  /// Buffer bytes [offset, offset + bytes) -> host; waits for the copy (and for every command
  /// before it: the caller flushes the queue first). A host-visible block is read in place
  /// after its last writer's batch.
  void download(std::size_t offset, std::size_t bytes, void* dst);
};

/// A short-lived GL buffer for host transfers: host writes or maps go to it, never to pool
/// buffers (some drivers move a buffer the host maps or writes to host memory for good).
class Staging {
 public:
  Staging(DeviceImpl& dev, std::size_t bytes, const void* data, bool for_read);
  ~Staging();
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  GLuint buffer() const { return buffer_; }
  /// Releases ownership (the caller deletes the buffer).
  GLuint take();

 private:
  DeviceImpl& dev_;
  GLuint buffer_ = 0;
};

/// Whether an upload of `bytes` goes to its pool buffer by glBufferSubData from the caller's
/// memory rather than through the upload ring or a staging buffer (Settings::upload_direct_bytes,
/// GLTENSOR_UPLOAD_DIRECT: by default on software rasterizers, where the driver's write is one
/// memcpy and the ring's two).
bool upload_direct(const DeviceImpl& dev, std::size_t bytes);
/// glCopyBufferSubData through the copy bindings (GlState: put back on adopted contexts).
void copy_buffer(DeviceImpl& dev, GLuint src, std::size_t src_off, GLuint dst, std::size_t dst_off, std::size_t bytes);
/// Maps `buffer` for reading, copies `bytes` to dst, unmaps. Throws DeviceError on failure.
void map_read(DeviceImpl& dev, GLuint buffer, std::size_t bytes, void* dst, const char* op);
/// Waits for `fence` (a short spin, then blocking) and deletes it. Throws DeviceError if the
/// wait fails.
void wait_fence(GLsync fence);
/// Deletes a buffer gltensor made (and forgets its name in the queue and binding cache).
void delete_buffer(DeviceImpl& dev, GLuint buffer);

}  // namespace gltensor::detail
