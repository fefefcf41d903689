// Device-side error flags (error_flags.hpp).
#include "runtime/error_flags.hpp"

#include <cstring>

namespace gltensor::detail {

Storage& ErrorFlags::storage(DeviceImpl& dev) {
  if (!flag_) {
    flag_ = std::make_unique<Storage>();  // no dev: freed with the device, not the pool
    glGenBuffers(1, &flag_->block.buffer);
    flag_->block.capacity = 4;
    const GLuint zero = 0;
    dev.gl.bind_buffer(GlState::kCopyWrite, flag_->block.buffer);
    glBufferData(GL_COPY_WRITE_BUFFER, 4, &zero, GL_DYNAMIC_COPY);
  }
  return *flag_;
}

void ErrorFlags::expect(DeviceImpl& dev, const char* op) { pending_.emplace_back(dev.queue.batch(), op); }

void ErrorFlags::check(DeviceImpl& dev) {
  if (pending_.empty() || !flag_) return;
  std::string failed;
  bool later = false;
  for (const auto& [b, op] : pending_) {
    if (b <= dev.queue.completed())
      failed = failed.empty() ? op : failed;
    else
      later = true;
  }
  if (failed.empty()) return;
  const GLuint buf = flag_->buffer();
  dev.queue.barrier_for_host(buf);
  GLuint v = 0;
  map_read(dev, buf, 4, &v, "check");
  if (!later) pending_.clear();
  if (v != 0) {
    if (later) dev.queue.wait_all();
    const GLuint zero = 0;
    dev.gl.bind_buffer(GlState::kCopyWrite, buf);
    glBufferSubData(GL_COPY_WRITE_BUFFER, 0, 4, &zero);
    pending_.clear();
    throw IndexError("gltensor::" + failed +
                     ": an index was out of range for the indexed dim (detected on the GPU; "
                     "the affected elements were left unwritten)");
  }
}

void ErrorFlags::free_gl() {
  if (flag_) glDeleteBuffers(1, &flag_->block.buffer);
  flag_.reset();
}

void check_device_errors(DeviceImpl& dev) {
  if (ErrorFlags* f = dev.find_extension<ErrorFlags>()) f->check(dev);
}

}  // namespace gltensor::detail
