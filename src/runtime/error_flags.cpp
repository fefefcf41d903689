// Device-side error flags (error_flags.hpp).
#include "runtime/error_flags.hpp"

#include <algorithm>
#include <cstring>

#include "runtime/capture.hpp"
#include "runtime/host_staging.hpp"

namespace gltensor::detail {

std::uint32_t ErrorFlags::loop_binding(const Capabilities& caps) {
  return static_cast<std::uint32_t>(std::clamp(caps.max_ssbo_bindings - 1, 0, 15));
}

Storage& ErrorFlags::storage(DeviceImpl& dev) {
  if (!flag_) {
    flag_ = std::make_unique<Storage>();  // no dev: freed with the device, not the pool
    const std::vector<GLuint> zeros(1 + (dev.check_loops() ? kLoopSlots : 0), 0);
    flag_->block.capacity = zeros.size() * 4;
    // Host-visible where the device can map persistently: kernels write it only on an error,
    // and the host reads it without a map per check (a pool-type buffer that the host maps is
    // moved to host memory by NVIDIA's driver anyway, with a performance warning).
    mapped_ = static_cast<std::uint32_t*>(make_host_visible(dev, flag_->block.buffer, zeros.size() * 4, zeros.data()));
    if (!mapped_) {
      glGenBuffers(1, &flag_->block.buffer);
      dev.gl().bind_buffer(GlState::kCopyWrite, flag_->block.buffer);
      glBufferData(GL_COPY_WRITE_BUFFER, static_cast<GLsizeiptr>(zeros.size() * 4), zeros.data(), GL_DYNAMIC_COPY);
    }
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
  read_words(dev, words.data(), words.size());
  const GLuint v = done ? words[0] : 0;
  if (v == 0) {
    if (done && !later) pending_.clear();
    if (loop_words > 0) check_loops(dev, words);
    return;
  }
  if (later) dev.queue().wait_all();  // every pending op is complete now
  const std::uint32_t zero = 0;
  write_words(dev, 0, &zero, 1);
  // The flag says which kind of error, not which op: name the first op that may have set it.
  const auto first_op = [&](std::uint32_t bit) {
    for (const auto& p : pending_)
      if (p.bit & bit) return p.op;
    return std::string("?");
  };
  const std::string index_op = first_op(kIndex), zero_op = first_op(kZeroDivision), cache_op = first_op(kCacheFull),
                    stall_op = first_op(kStall);
  pending_.clear();
  if (v & kIndex)
    throw IndexError("gltensor::" + index_op +
                     ": an index was out of range for the indexed dim (detected on the GPU; "
                     "the affected elements were left unwritten)");
  if (v & kCacheFull)
    throw LimitError("gltensor::" + cache_op +
                     ": a sequence's length passed the KV cache's max_len (detected on the GPU; the positions past "
                     "max_len were left unwritten)");
  if (v & kStall)
    throw LimitError(
        "gltensor::" + stall_op +
        ": the workgroups of a kernel that waits for its other workgroups did not all run at once (detected "
        "on the GPU; the outputs are wrong: GLTENSOR_RNN_REGS=0,128,1 or GLTENSOR_RNN=steps avoid it)");
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
    const std::vector<std::uint32_t> zeros(words.size() - 1, 0);
    write_words(dev, 1, zeros.data(), zeros.size());
  }
  std::erase_if(loops_, [&](const PendingLoop& l) { return l.batch <= completed; });
  if (!message.empty()) throw LimitError(message);
}

void ErrorFlags::read_words(DeviceImpl& dev, std::uint32_t* dst, std::size_t n) {
  if (mapped_) {
    std::memcpy(dst, mapped_, n * 4);  // coherent: the completed batches' fences have signaled
  } else {
    map_read(dev, flag_->buffer(), n * 4, dst, "check");
  }
}

void ErrorFlags::write_words(DeviceImpl& dev, std::size_t first, const std::uint32_t* src, std::size_t n) {
  if (mapped_) {
    std::memcpy(mapped_ + first, src, n * 4);  // coherent: seen by the commands issued after it
  } else {
    dev.gl().bind_buffer(GlState::kCopyWrite, flag_->buffer());
    glBufferSubData(GL_COPY_WRITE_BUFFER, static_cast<GLintptr>(first * 4), static_cast<GLsizeiptr>(n * 4), src);
  }
}

void ErrorFlags::free_gl() {
  if (flag_) glDeleteBuffers(1, &flag_->block.buffer);  // deleting a mapped buffer unmaps it
  flag_.reset();
  mapped_ = nullptr;
}

void check_device_errors(DeviceImpl& dev) {
  if (ErrorFlags* f = dev.find_extension<ErrorFlags>()) f->check(dev);
}

}  // namespace gltensor::detail
