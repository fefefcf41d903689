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

void ErrorFlags::expect(DeviceImpl& dev, const char* op, std::uint32_t bit) {
  pending_.push_back({dev.queue.batch(), op, bit});
}

void ErrorFlags::check(DeviceImpl& dev) {
  if (pending_.empty() || !flag_) return;
  bool done = false, later = false;
  for (const auto& p : pending_) (p.batch <= dev.queue.completed() ? done : later) = true;
  if (!done) return;
  const GLuint buf = flag_->buffer();
  dev.queue.barrier_for_host(buf);
  GLuint v = 0;
  map_read(dev, buf, 4, &v, "check");
  if (v == 0) {
    if (!later) pending_.clear();
    return;
  }
  if (later) dev.queue.wait_all();  // every pending op is complete now
  const GLuint zero = 0;
  dev.gl.bind_buffer(GlState::kCopyWrite, buf);
  glBufferSubData(GL_COPY_WRITE_BUFFER, 0, 4, &zero);
  // The flag says which kind of error, not which op: name the first op that may have set it.
  const auto first_op = [&](std::uint32_t bit) {
    for (const auto& p : pending_)
      if (p.bit & bit) return p.op;
    return std::string("?");
  };
  const std::string index_op = first_op(kIndex), zero_op = first_op(kZeroDivision), cache_op = first_op(kCacheFull);
  pending_.clear();
  if (v & kIndex)
    throw IndexError("gltensor::" + index_op +
                     ": an index was out of range for the indexed dim (detected on the GPU; "
                     "the affected elements were left unwritten)");
  if (v & kCacheFull)
    throw LimitError("gltensor::" + cache_op +
                     ": a sequence's length passed the KV cache's max_len (detected on the GPU; the positions past "
                     "max_len were left unwritten)");
  throw ValueError("gltensor::" + zero_op +
                   ": integer division by zero (detected on the GPU; the affected elements are 0)");
}

void ErrorFlags::free_gl() {
  if (flag_) glDeleteBuffers(1, &flag_->block.buffer);
  flag_.reset();
}

void check_device_errors(DeviceImpl& dev) {
  if (ErrorFlags* f = dev.find_extension<ErrorFlags>()) f->check(dev);
}

}  // namespace gltensor::detail
