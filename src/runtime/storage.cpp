// Storage lifetime and host transfers (storage.hpp).
#include "runtime/storage.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include "runtime/capture.hpp"
#include "runtime/cuda_memory.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/host_staging.hpp"
#include "runtime/settings.hpp"

namespace gltensor::detail {

Storage::~Storage() {
  if (!dev || external) return;
  block.busy_until = std::max(use_batch, write_batch);
  dev->pool().release(block);
}

Staging::Staging(DeviceImpl& dev, std::size_t bytes, const void* data, bool for_read) : dev_(dev) {
  glGenBuffers(1, &buffer_);
  dev.gl().bind_buffer(GlState::kCopyRead, buffer_);
  glBufferData(GL_COPY_READ_BUFFER, static_cast<GLsizeiptr>(bytes), data, for_read ? GL_STREAM_READ : GL_STREAM_DRAW);
}

Staging::~Staging() {
  if (buffer_) delete_buffer(dev_, buffer_);  // freed by the driver once pending copies have run
}

GLuint Staging::take() {
  const GLuint b = buffer_;
  buffer_ = 0;
  return b;
}

void copy_buffer(DeviceImpl& dev, GLuint src, std::size_t src_off, GLuint dst, std::size_t dst_off, std::size_t bytes) {
  dev.gl().bind_buffer(GlState::kCopyRead, src);
  dev.gl().bind_buffer(GlState::kCopyWrite, dst);
  glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, static_cast<GLintptr>(src_off),
                      static_cast<GLintptr>(dst_off), static_cast<GLsizeiptr>(bytes));
  dev.queue().note_transfer();  // synchronize() waits for it even with no dispatch after it
}

void map_read(DeviceImpl& dev, GLuint buffer, std::size_t bytes, void* dst, const char* op) {
  dev.gl().bind_buffer(GlState::kCopyRead, buffer);
  void* p = glMapBufferRange(GL_COPY_READ_BUFFER, 0, static_cast<GLsizeiptr>(bytes), GL_MAP_READ_BIT);
  if (!p) throw DeviceError(std::string("gltensor::") + op + ": glMapBufferRange failed");
  std::memcpy(dst, p, bytes);
  glUnmapBuffer(GL_COPY_READ_BUFFER);
}

namespace {

// The read staging buffer, kept between reads: a read waits for its copy and maps before it
// returns, so the next read finds it idle. Reads above kKeepBytes get a short-lived buffer.
struct ReadStaging : DeviceExtension {
  static constexpr std::size_t kKeepBytes = std::size_t{4} << 20;
  GLuint buffer = 0;
  std::size_t capacity = 0;
  void free_gl() override {
    if (buffer) glDeleteBuffers(1, &buffer);
    buffer = 0;
    capacity = 0;
  }
};

}  // namespace

void wait_fence(GLsync fence) {
  const GLenum r = client_wait(fence);
  glDeleteSync(fence);
  if (r == GL_WAIT_FAILED) throw DeviceError("gltensor::to_host: glClientWaitSync failed (context lost?)");
}

void delete_buffer(DeviceImpl& dev, GLuint buffer) {
  glDeleteBuffers(1, &buffer);
  if (CudaMemory* cuda = dev.find_extension<CudaMemory>()) cuda->forget(buffer);  // its memory object
  dev.queue().forget_buffer(buffer);  // also the binding cache: GL unbound it in this context
}

// Host transfers go through staging buffers (short-lived for uploads and large reads, one kept
// per device for reads up to kKeepBytes): a pool buffer that the host writes
// with glBufferSubData or maps is moved to host memory by some drivers (NVIDIA says so in its
// debug output), and kernels that later reuse it would then run over PCIe. Software rasterizers
// have no such memory to leave: there an upload is written by glBufferSubData, one memcpy into
// the buffer, where the ring or a staging buffer costs a second (upload_direct).
bool upload_direct(const DeviceImpl& dev, std::size_t bytes) {
  const Settings& s = settings();
  if (s.upload_direct_bytes >= 0)
    return s.upload_direct_bytes > 0 && bytes >= static_cast<std::size_t>(s.upload_direct_bytes);
  return dev.adapter().software && s.persistent_staging;
}

void Storage::upload(const void* data, std::size_t bytes) {
  if (bytes == 0) return;
  if (Capture* c = dev->queue().capture()) c->host_write(*this, "upload");
  if (block.host) {  // host-visible: written in place once no recorded dispatch uses it
    dev->queue().wait_batch(std::max(use_batch, write_batch));
    std::memcpy(block.host, data, bytes);
    return;
  }
  // No barrier: the buffer is idle (the header's precondition), so no dispatch since the last
  // barrier used it and there is no hazard to order.
  if (upload_direct(*dev, bytes)) {  // from the caller's memory by the driver's own path
    dev->gl().bind_buffer(GlState::kCopyWrite, buffer());
    glBufferSubData(GL_COPY_WRITE_BUFFER, 0, static_cast<GLsizeiptr>(bytes), data);
    dev->queue().note_transfer();
    return;
  }
  if (ring_upload(*dev, data, bytes, buffer())) return;
  Staging s(*dev, bytes, data, false);
  copy_buffer(*dev, s.buffer(), 0, buffer(), 0, bytes);
}

void Storage::download(std::size_t offset, std::size_t bytes, void* dst) {
  if (bytes == 0) return;
  if (const Capture* c = dev->queue().capture()) c->host_read("to_host");
  if (block.host) {  // host-visible: read in place once its writers' batch (ended by a full barrier) is done
    dev->queue().wait_batch(write_batch);
    std::memcpy(dst, block.host + offset, bytes);
    return;
  }
  dev->queue().barrier_for_host(buffer());
  // One round trip: the copy follows the writers (the barrier), and its fence's wait is the
  // only one; the map then finds the copy done.
  if (mapped_download(*dev, buffer(), offset, bytes, dst)) return;
  ReadStaging& keep = dev->extension<ReadStaging>();
  std::optional<Staging> once;
  GLuint staging = keep.buffer;
  if (bytes > ReadStaging::kKeepBytes) {
    once.emplace(*dev, bytes, nullptr, true);
    staging = once->buffer();
  } else if (bytes > keep.capacity) {
    if (!keep.buffer) glGenBuffers(1, &keep.buffer);
    keep.capacity = std::max(bytes, std::size_t{4096});
    dev->gl().bind_buffer(GlState::kCopyRead, keep.buffer);
    glBufferData(GL_COPY_READ_BUFFER, static_cast<GLsizeiptr>(keep.capacity), nullptr, GL_STREAM_READ);
    staging = keep.buffer;
  }
  copy_buffer(*dev, buffer(), offset, staging, 0, bytes);
  dev->queue().wait_fence_now("to_host");
  map_read(*dev, staging, bytes, dst, "to_host");
}

}  // namespace gltensor::detail
