// Device-side error flags (error_flags.hpp).
#include "runtime/error_flags.hpp"

#include <algorithm>
#include <cstring>

#include "runtime/capture.hpp"

namespace gltensor::detail {

std::uint32_t ErrorFlags::loop_binding(const Capabilities& caps) {
  return static_cast<std::uint32_t>(std::clamp(caps.max_ssbo_bindings - 1, 0, 15));
}

Storage& ErrorFlags::storage(DeviceImpl& dev) {
  if (!flag_) {
    flag_ = std::make_unique<Storage>();  // no dev: freed with the device, not the pool
    glGenBuffers(1, &flag_->block.buffer);
    const std::vector<GLuint> zeros(1 + (dev.check_loops() ? kLoopSlots : 0), 0);
    flag_->block.capacity = zeros.size() * 4;
    dev.gl().bind_buffer(GlState::kCopyWrite, flag_->block.buffer);
    glBufferData(GL_COPY_WRITE_BUFFER, static_cast<GLsizeiptr>(zeros.size() * 4), zeros.data(), GL_DYNAMIC_COPY);
  }
  return *flag_;
}

std::uint32_t ErrorFlags::loop_slot(DeviceImpl& dev, const char* op, const std::string& kernel,
                                    std::uint64_t declared) {
  storage(dev);
  if (next_slot_ > kLoopSlots) {  // every slot taken: check them all, then start again
    dev.queue().wait_all();
    next_slot_ = 1;
    check(dev);
  }
  loops_.push_back({dev.queue().batch(), next_slot_, op, kernel, declared});
  return next_slot_++;
}

void ErrorFlags::expect(DeviceImpl& dev, const char* op, std::uint32_t bit) {
  pending_.push_back({dev.queue().batch(), op, bit});
  if (Capture* c = dev.queue().capture()) c->expect(op, bit);
}

void ErrorFlags::check(DeviceImpl& dev) {
  if ((pending_.empty() && loops_.empty()) || !flag_) return;
  bool done = false, later = false;
  for (const auto& p : pending_) (p.batch <= dev.queue().completed() ? done : later) = true;
  std::uint32_t loop_words = 0;  // the slots of completed launches (slots grow with batches)
  for (const auto& l : loops_)
    if (l.batch <= dev.queue().completed()) loop_words = std::max(loop_words, l.slot);
  if (!done && loop_words == 0) return;
  const GLuint buf = flag_->buffer();
  dev.queue().barrier_for_host(buf);
  std::vector<GLuint> words(1 + loop_words, 0);
  map_read(dev, buf, words.size() * 4, words.data(), "check");
  const GLuint v = done ? words[0] : 0;
  if (v == 0) {
    if (done && !later) pending_.clear();
    if (loop_words > 0) check_loops(dev, words);
    return;
  }
  if (later) dev.queue().wait_all();  // every pending op is complete now
  const GLuint zero = 0;
  dev.gl().bind_buffer(GlState::kCopyWrite, buf);
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

void ErrorFlags::check_loops(DeviceImpl& dev, const std::vector<std::uint32_t>& words) {
  const std::uint64_t completed = dev.queue().completed();
  const auto bad = std::find_if(loops_.begin(), loops_.end(),
                                [&](const PendingLoop& l) { return l.batch <= completed && words[l.slot] != 0; });
  std::string message;
  if (bad != loops_.end()) {
    message = "gltensor::" + bad->op + ": kernel " + bad->kernel + " ran " + std::to_string(words[bad->slot]) +
              " loop iterations in one invocation, more than the " + std::to_string(bad->declared) +
              " its launch declared (GLTENSOR_CHECK_LOOPS; internal error: an underestimated loop_iterations lets "
              "llvmpipe end the kernel's loops early, silently)";
    const std::vector<GLuint> zeros(words.size() - 1, 0);
    dev.gl().bind_buffer(GlState::kCopyWrite, flag_->buffer());
    glBufferSubData(GL_COPY_WRITE_BUFFER, 4, static_cast<GLsizeiptr>(zeros.size() * 4), zeros.data());
  }
  std::erase_if(loops_, [&](const PendingLoop& l) { return l.batch <= completed; });
  if (!message.empty()) throw LimitError(message);
}

void ErrorFlags::free_gl() {
  if (flag_) glDeleteBuffers(1, &flag_->block.buffer);
  flag_.reset();
}

void check_device_errors(DeviceImpl& dev) {
  if (ErrorFlags* f = dev.find_extension<ErrorFlags>()) f->check(dev);
}

}  // namespace gltensor::detail
