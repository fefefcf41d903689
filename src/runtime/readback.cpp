// Device-to-host copies in flight (readback.hpp).
#include "runtime/readback.hpp"

#include <cstring>

#include "runtime/capture.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/guard.hpp"
#include "runtime/host_copy.hpp"
#include "runtime/host_staging.hpp"
#include "runtime/storage.hpp"

namespace gltensor::detail {

void read_to_host(DeviceImpl& dev, Storage& src, std::size_t offset, std::size_t bytes, const HostDest& dest) {
  Queue& q = dev.queue();
  const bool par = bytes >= kParallelCopyMin;
  if (bytes > 0 && !src.block.host && src.write_batch >= q.batch()) {
    if (const Capture* c = q.capture()) c->host_read("to_host");
    // The batch end's barrier before the copy, whether or not the queue's hazard sets still hold
    // the write (they forget it at the next dispatch barrier, which has no
    // GL_BUFFER_UPDATE_BARRIER_BIT: review15); the batch end after the copy then adds none.
    q.barrier_for_copy();
    if (mapped_read_begin(dev, src.buffer(), offset, bytes)) {
      q.flush(false);  // its fence follows the copy
      if (par) prime_copy_helpers();
      void* dst = dest();  // (the caller's allocation while the GPU works)
      if (src.write_batch >= q.batch()) wait_fence(glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0));  // no batch to end
      q.wait_batch(src.write_batch);
      if (par)
        parallel_copy(dst, mapped_read_data(dev), bytes);
      else
        mapped_read_end(dev, bytes, dst);
      return;
    }
  }
  if (bytes > 0 && src.block.host) {  // host-visible: copied in place (Storage::download's wait)
    if (const Capture* c = q.capture()) c->host_read("to_host");
    if (par) prime_copy_helpers();
    void* dst = dest();
    q.wait_batch(src.write_batch);
    if (par)
      parallel_copy(dst, src.block.host + offset, bytes);
    else
      std::memcpy(dst, src.block.host + offset, bytes);
    return;
  }
  void* dst = dest();
  if (src.write_batch >= q.batch()) q.flush(false);
  src.download(offset, bytes, dst);
  q.wait_batch(src.write_batch);
}

Readback::Readback(DeviceImpl& dev, Storage& src, std::size_t offset, std::size_t bytes)
    : dev_(dev.shared_from_this()), bytes_(bytes) {
  if (const Capture* c = dev.queue().capture()) c->host_read("to_host_async");
  if (bytes > 0) {
    dev.queue().flush();  // the copy must follow every recorded dispatch, with their writes visible
    dev.queue().barrier_for_host(src.buffer());
    staging_ = Staging(dev, bytes, nullptr, true).take();
    copy_buffer(dev, src.buffer(), offset, staging_, 0, bytes);
    src.use_batch = dev.queue().batch();
  }
  fence_ = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
  glFlush();
}

Readback::~Readback() {
  if (!dev_ || (!staging_ && !fence_)) return;
  // Only in the device's context, which may not be current here (another thread, or the
  // application's context on a Device::open device): then at the device's next entry.
  const bool here = dev_->context_current_here();
  if (here) {
    if (fence_) glDeleteSync(fence_);
    if (staging_) delete_buffer(*dev_, staging_);
  } else {
    dev_->defer_delete(staging_, fence_);
  }
}

bool Readback::ready() {
  if (!fence_) return true;
  GLint status = 0;
  glGetSynciv(fence_, GL_SYNC_STATUS, 1, nullptr, &status);
  return status == GL_SIGNALED;
}

void Readback::get(void* dst) {
  if (fence_) {
    const GLenum r = client_wait(fence_);
    glDeleteSync(fence_);
    if (r == GL_WAIT_FAILED) throw DeviceError("gltensor::AsyncRead::get: glClientWaitSync failed (context lost?)");
    fence_ = nullptr;
  }
  if (bytes_) map_read(*dev_, staging_, bytes_, dst, "AsyncRead::get");
}

}  // namespace gltensor::detail
