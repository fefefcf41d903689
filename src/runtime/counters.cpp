// Workgroup arrival counters (counters.hpp).
#include "runtime/counters.hpp"

#include <vector>

namespace gltensor::detail {

Storage& WorkgroupCounters::storage(DeviceImpl& dev) {
  if (!buf_) {
    buf_ = std::make_unique<Storage>();  // no dev: freed with the device, not the pool
    const std::vector<GLuint> zeros(kWords, 0);
    buf_->block.capacity = zeros.size() * 4;
    buf_->nbytes = zeros.size() * 4;
    glGenBuffers(1, &buf_->block.buffer);
    dev.gl().bind_buffer(GlState::kCopyWrite, buf_->block.buffer);
    glBufferData(GL_COPY_WRITE_BUFFER, static_cast<GLsizeiptr>(zeros.size() * 4), zeros.data(), GL_DYNAMIC_COPY);
  }
  return *buf_;
}

void WorkgroupCounters::free_gl() {
  if (buf_) glDeleteBuffers(1, &buf_->block.buffer);
  buf_.reset();
}

}  // namespace gltensor::detail
