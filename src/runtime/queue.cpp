// Dispatch recording, hazard barriers, fence-based batches (queue.hpp).
#include "runtime/queue.hpp"

#include <chrono>
#include <ranges>
#include <unordered_map>

#include "runtime/capture.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/readback.hpp"
#include "runtime/settings.hpp"
#include "runtime/storage.hpp"
#include "runtime/timer_query.hpp"

namespace gltensor::detail {

namespace {

thread_local WaitTrace* g_wait_trace = nullptr;

#ifndef GL_TIMESTAMP_EXT
#define GL_TIMESTAMP_EXT 0x8E28
#endif
// A trace's timer query `i` (0: a run's start, 1: the last batch end) made now, where the device has them (the
// entry points kept in the trace at its first query, for client_wait).
void trace_counter(const DeviceImpl& dev, WaitTrace& t, int i) {
  if (!t.queries[0]) {
    const TimerQueries tq = timer_queries(dev.caps());
    if (!tq) return;
    t.counter = tq.counter;
    t.get_u64 = tq.get_u64;
    glGenQueries(2, t.queries);
  }
  t.counter(t.queries[i], GL_TIMESTAMP_EXT);
}

}  // namespace

void set_wait_trace(WaitTrace* t) { g_wait_trace = t; }

GLenum client_wait(GLsync fence) {
  // A short spin first: small work finishes within microseconds of the flush, and a blocking
  // wait can sleep well past it (measured on NVIDIA: a read-back's round trip went from about
  // 35 to 20 us); then blocking waits.
  // Between the spin's polls the host waits kPollGap without calling the driver: polls back to
  // back (60-80 a read-back) slowed the host work around them on NVIDIA (the H100, e2e3's window
  // 3, 3 rounds: the three-Gemm model end to end 51.6-53.1 -> 46.4-50.6 us, from_host's and
  // Model::run's host time 4.5-5.8 -> 3.1-5.0 us; RESULTS.md).
  WaitTrace* const tr = g_wait_trace;
  const auto t0 = std::chrono::steady_clock::now();
  if (tr && tr->waits++ == 0) tr->first_wait = t0;
  constexpr auto kPollGap = std::chrono::microseconds(2);
  const auto spin_until = t0 + std::chrono::microseconds(100);
  GLenum r = glClientWaitSync(fence, GL_SYNC_FLUSH_COMMANDS_BIT, 0);
  int polls = 0, blocked = 0;
  while (r == GL_TIMEOUT_EXPIRED && std::chrono::steady_clock::now() < spin_until) {
    const auto until = std::chrono::steady_clock::now() + kPollGap;
    while (std::chrono::steady_clock::now() < until) {
    }
    r = glClientWaitSync(fence, 0, 0);
    ++polls;
  }
  while (r == GL_TIMEOUT_EXPIRED) {
    r = glClientWaitSync(fence, GL_SYNC_FLUSH_COMMANDS_BIT, 1000000000ull);
    ++blocked;
  }
  if (tr) {
    tr->host_wake = std::chrono::steady_clock::now();
    tr->polls += polls;
    tr->blocked += blocked;
    tr->wait_us += std::chrono::duration<double, std::micro>(tr->host_wake - t0).count();
    if (tr->queries[0] && r != GL_WAIT_FAILED) {
      GLint64 now = 0;
      glGetInteger64v(GL_TIMESTAMP_EXT, &now);
      tr->gpu_wake = now;
      GLuint64 v = 0;
      tr->get_u64(tr->queries[1], GL_QUERY_RESULT, &v);
      tr->gpu_end = static_cast<std::int64_t>(v);
      if (tr->started) {
        tr->get_u64(tr->queries[0], GL_QUERY_RESULT, &v);
        tr->gpu_start = static_cast<std::int64_t>(v);
      }
    }
  }
  return r;
}

void Queue::barrier(GLbitfield bits) {
  if (bits == 0) return;
  glMemoryBarrier(bits);
  ++barriers_;
  last_bits_ = bits;
  if (bits == GL_ALL_BARRIER_BITS) full_barrier_at_ = dispatches_;
  if (bits & GL_SHADER_STORAGE_BARRIER_BIT) {
    written_since_barrier_.clear();
    read_since_barrier_.clear();
  }
  if ((bits & kTextureBits) == kTextureBits) {
    images_written_.clear();
    textures_read_.clear();
  }
}

template <class Ssbos, class Blocks, class Textures>
GLbitfield Queue::hazards(const Ssbos& ssbos, const Blocks& blocks, const Textures& textures) const {
  GLbitfield bits = 0;
  for (const Operand u : ssbos)
    if (written_since_barrier_.count(u.name) || (u.write && read_since_barrier_.count(u.name))) bits |= kBufferBits;
  for (const GLuint b : blocks)
    if (written_since_barrier_.count(b)) bits |= kBufferBits;
  for (const Operand t : textures)
    if (images_written_.count(t.name) || (t.write && textures_read_.count(t.name))) bits |= kTextureBits;
  return bits;
}

template <class Ssbos, class Blocks, class Textures>
void Queue::note(const Ssbos& ssbos, const Blocks& blocks, const Textures& textures) {
  for (const GLuint b : blocks) read_since_barrier_.insert(b);
  for (const Operand t : textures) (t.write ? images_written_ : textures_read_).insert(t.name);
  for (const Operand u : ssbos) (u.write ? written_since_barrier_ : read_since_barrier_).insert(u.name);
}

namespace {

// The common views of a live dispatch's operands (Queue::hazards, Queue::note).
auto ssbo_view(std::span<const BufferUse> uses) {
  return uses | std::views::transform([](const BufferUse& u) { return Queue::Operand{u.storage->buffer(), u.write}; });
}
auto block_view(std::span<const BlockUse> blocks) {
  return blocks | std::views::transform([](const BlockUse& u) { return u.storage->buffer(); });
}
auto texture_view(std::span<const TextureUse> textures) {
  return textures | std::views::transform([](const TextureUse& t) { return Queue::Operand{t.texture, t.image}; });
}

}  // namespace

void Queue::dispatch(const Program& p, std::uint32_t gx, std::uint32_t gy, std::uint32_t gz,
                     std::span<const BufferUse> uses, std::span<const BlockUse> blocks,
                     std::span<const TextureUse> textures) {
  if (gx == 0 || gy == 0 || gz == 0) return;
  const auto ssbos = ssbo_view(uses);
  const auto block_buffers = block_view(blocks);
  const auto texs = texture_view(textures);
  GLbitfield bits = settings().full_barriers && dispatches_ > 0 ? kBufferBits | kTextureBits : 0;
  bits |= hazards(ssbos, block_buffers, texs);
  barrier(bits);
  if (capture_) capture_->dispatch(bits, p, gx, gy, gz, uses, blocks, textures);
  dev_.gl().use_program(p.id);
  for (std::size_t i = 0; i < uses.size(); ++i) dev_.gl().bind_ssbo(static_cast<GLuint>(i), uses[i].storage->buffer());
  for (const auto& u : blocks) dev_.gl().bind_ubo(u.binding, u.storage->buffer(), u.offset, u.size);
  for (const auto& t : textures) {
    if (t.image) {
      dev_.gl().bind_image(t.unit, t.texture, t.level, t.access, t.format);
    } else {
      dev_.gl().bind_texture_2d(t.unit, t.texture);
      dev_.gl().bind_sampler(t.unit, t.sampler);
    }
  }
  glDispatchCompute(gx, gy, gz);
  ++dispatches_;
  note(ssbos, block_buffers, texs);
  for (const auto& u : blocks) u.storage->use_batch = batch_;
  for (const auto& u : uses) {
    u.storage->use_batch = batch_;
    if (u.write) u.storage->write_batch = batch_;
  }
#ifndef NDEBUG
  if (!dev_.adopted()) dev_.check_gl("dispatch");  // an adopted context's error flags are the application's
#endif
  if (++batch_dispatches_ >= auto_flush_) flush();
}

namespace {

GLuint rebound(std::span<const Rebind> rebinds, GLuint b) {
  for (const Rebind& r : rebinds)
    if (r.from == b) return r.to->buffer();
  return b;
}

// Whether no buffer that one capture writes is touched by another (its buffers as rebound).
bool independent(std::span<const Capture* const> cs, std::span<const std::vector<Rebind>> rebinds) {
  struct Use {
    GLuint buffer;
    std::size_t capture;
    bool write;
  };
  std::vector<Use> uses;
  for (std::size_t i = 0; i < cs.size(); ++i) {
    const std::span<const Rebind> rb = rebinds.empty() ? std::span<const Rebind>{} : rebinds[i];
    for (const auto& [b, w] : cs[i]->buffers) uses.push_back({rebound(rb, b), i, w});
  }
  std::sort(uses.begin(), uses.end(), [](const Use& a, const Use& b) { return a.buffer < b.buffer; });
  for (std::size_t a = 0; a < uses.size();) {
    std::size_t e = a;
    bool written = false, shared = false;
    for (; e < uses.size() && uses[e].buffer == uses[a].buffer; ++e) {
      written = written || uses[e].write;
      shared = shared || uses[e].capture != uses[a].capture;
    }
    if (written && shared) return false;
    a = e;
  }
  // Textures: one written through an image unit by any capture, used by another.
  for (std::size_t i = 0; i < cs.size(); ++i)
    for (const auto& [t, image] : cs[i]->all_textures)
      for (std::size_t j = 0; j < cs.size(); ++j)
        if (j != i)
          for (const auto& [u, image2] : cs[j]->all_textures)
            if (u == t && (image || image2)) return false;
  return true;
}

}  // namespace

void Queue::replay(const Capture& c, std::span<const Rebind> rebinds) {
  const auto name = [&](GLuint b) { return rebound(rebinds, b); };
  // Hazards with the work before the replay (the captured barriers cover those within it): every
  // buffer a step touches as an SSBO of its access (a uniform block's as one read), every texture.
  const auto operand = [](const std::pair<GLuint, bool>& u) { return Operand{u.first, u.second}; };
  barrier(hazards(c.buffers | std::views::transform([&](const std::pair<GLuint, bool>& u) {
                    return Operand{name(u.first), u.second};
                  }),
                  std::span<const GLuint>{}, c.all_textures | std::views::transform(operand)));
  if (WaitTrace* tr = g_wait_trace; tr && tr->want_start) {
    trace_counter(dev_, *tr, 0);
    tr->want_start = false;
    tr->started = tr->queries[0] != 0;
  }
  bool first = true;
  for (const auto& s : c.steps) {
    if (!s.program) {  // a batch end of the capture: its barrier and a fence
      flush();
      continue;
    }
    // The first dispatch's captured barrier was for work before the capture (a model's copy of
    // its inputs): the hazards with the work before this replay are the barrier above. Issued
    // anyway, it cost a replayed model run a barrier between from_host's copy and its kernel.
    if (!first || settings().full_barriers) barrier(s.barrier);
    first = false;
    const Program& p = *s.program;
    dev_.gl().use_program(p.id);
    for (std::uint32_t i = s.ssbo_begin; i < s.ssbo_end; ++i)
      dev_.gl().bind_ssbo(i - s.ssbo_begin, name(c.ssbos[i].buffer));
    for (std::uint32_t i = s.block_begin; i < s.block_end; ++i) {
      const auto& u = c.blocks[i];
      dev_.gl().bind_ubo(u.binding, name(u.buffer), u.offset, u.size);
    }
    for (std::uint32_t i = s.texture_begin; i < s.texture_end; ++i) {
      const TextureUse& t = c.textures[i];
      if (t.image) {
        dev_.gl().bind_image(t.unit, t.texture, t.level, t.access, t.format);
      } else {
        dev_.gl().bind_texture_2d(t.unit, t.texture);
        dev_.gl().bind_sampler(t.unit, t.sampler);
      }
    }
    for (std::uint32_t i = s.uniform_begin; i < s.uniform_end; ++i)
      p.set_value(c.uniforms[i].location, c.uniforms[i].value);
    glDispatchCompute(s.groups[0], s.groups[1], s.groups[2]);
    ++dispatches_;
    ++batch_dispatches_;
  }
  for (GLuint b : c.tail_written) written_since_barrier_.insert(name(b));
  for (GLuint b : c.tail_read) read_since_barrier_.insert(name(b));
  for (GLuint t : c.tail_images) images_written_.insert(t);
  for (GLuint t : c.tail_sampled) textures_read_.insert(t);
  c.replayed(batch_);
  for (const Rebind& r : rebinds) r.to->use_batch = batch_;
#ifndef NDEBUG
  if (!dev_.adopted()) dev_.check_gl("replay");
#endif
  if (batch_dispatches_ >= auto_flush_) flush();
}

void Queue::replay_together(std::span<const Capture* const> cs, std::span<const std::vector<Rebind>> rebinds) {
  const auto rebinds_of = [&](std::size_t i) {
    return rebinds.empty() ? std::span<const Rebind>{} : std::span<const Rebind>(rebinds[i]);
  };
  if (cs.size() < 2 || settings().full_barriers || !independent(cs, rebinds)) {
    for (std::size_t i = 0; i < cs.size(); ++i) replay(*cs[i], rebinds_of(i));
    return;
  }
  std::vector<std::size_t> next(cs.size(), 0);
  std::unordered_map<const Program*, std::size_t> owners;  // the capture of a program's last dispatch
  // Step `s` of capture i's operands as the hazard rules see them (its buffers as rebound).
  const auto ssbos_of = [&](std::size_t i, const Capture::Step& s) {
    return std::views::iota(s.ssbo_begin, s.ssbo_end) | std::views::transform([&, i](std::uint32_t k) {
             return Operand{rebound(rebinds_of(i), cs[i]->ssbos[k].buffer), cs[i]->ssbos[k].write};
           });
  };
  const auto blocks_of = [&](std::size_t i, const Capture::Step& s) {
    return std::views::iota(s.block_begin, s.block_end) |
           std::views::transform([&, i](std::uint32_t k) { return rebound(rebinds_of(i), cs[i]->blocks[k].buffer); });
  };
  const auto textures_of = [&](std::size_t i, const Capture::Step& s) {
    return std::views::iota(s.texture_begin, s.texture_end) | std::views::transform([&, i](std::uint32_t k) {
             return Operand{cs[i]->textures[k].texture, cs[i]->textures[k].image};
           });
  };
  // The barrier bits step `s` of capture i needs after what was issued since the last barrier.
  const auto needs = [&](std::size_t i, const Capture::Step& s) {
    return hazards(ssbos_of(i, s), blocks_of(i, s), textures_of(i, s));
  };
  const auto issue = [&](std::size_t i, const Capture::Step& s) {
    const Capture& c = *cs[i];
    const Program& p = *s.program;
    dev_.gl().use_program(p.id);
    for (std::uint32_t k = s.ssbo_begin; k < s.ssbo_end; ++k)
      dev_.gl().bind_ssbo(k - s.ssbo_begin, rebound(rebinds_of(i), c.ssbos[k].buffer));
    for (std::uint32_t k = s.block_begin; k < s.block_end; ++k) {
      const auto& u = c.blocks[k];
      dev_.gl().bind_ubo(u.binding, rebound(rebinds_of(i), u.buffer), u.offset, u.size);
    }
    for (std::uint32_t k = s.texture_begin; k < s.texture_end; ++k) {
      const TextureUse& t = c.textures[k];
      if (t.image) {
        dev_.gl().bind_image(t.unit, t.texture, t.level, t.access, t.format);
      } else {
        dev_.gl().bind_texture_2d(t.unit, t.texture);
        dev_.gl().bind_sampler(t.unit, t.sampler);
      }
    }
    note(ssbos_of(i, s), blocks_of(i, s), textures_of(i, s));
    // The capture's reduced uniforms assume the program's values are those of its previous
    // dispatch in that capture: where another capture's dispatch of the program came between,
    // every value the program held at capture (unchanged values make no GL call).
    auto [owner, fresh] = owners.try_emplace(&p, i);
    const bool own = fresh || owner->second == i;
    owner->second = i;
    const auto& us = own ? c.uniforms : c.all_uniforms;
    for (std::uint32_t k = own ? s.uniform_begin : s.all_begin, e = own ? s.uniform_end : s.all_end; k < e; ++k)
      p.set_value(us[k].location, us[k].value);
    glDispatchCompute(s.groups[0], s.groups[1], s.groups[2]);
    ++dispatches_;
    // A batch ends every auto_flush_ dispatches, as the captures' own batch ends (skipped) did.
    if (++batch_dispatches_ >= auto_flush_) flush();
  };
  // Each capture in turn issues its steps up to the first that needs a barrier; when none can go
  // on, one barrier for what the next steps need.
  for (;;) {
    bool issued = false, left = false;
    GLbitfield wanted = 0;
    for (std::size_t i = 0; i < cs.size(); ++i) {
      const auto& steps = cs[i]->steps;
      for (; next[i] < steps.size(); ++next[i]) {
        const Capture::Step& s = steps[next[i]];
        if (!s.program) continue;
        const GLbitfield bits = needs(i, s);
        if (bits) {
          wanted |= bits;
          break;
        }
        issue(i, s);
        issued = true;
      }
      left = left || next[i] < steps.size();
    }
    if (!left) break;
    if (!issued) barrier(wanted);
  }
  for (std::size_t i = 0; i < cs.size(); ++i) {
    cs[i]->replayed(batch_);
    for (const Rebind& r : rebinds_of(i)) r.to->use_batch = batch_;
  }
#ifndef NDEBUG
  if (!dev_.adopted()) dev_.check_gl("replay_together");
#endif
}

void Queue::barrier_for_host(GLuint buffer) {
  if (written_since_barrier_.count(buffer) || read_since_barrier_.count(buffer)) barrier(GL_ALL_BARRIER_BITS);
}

void Queue::flush(bool submit) {
  if (batch_dispatches_ == 0) {
    if (transfer_pending_ && submit) glFlush();  // an upload with no dispatch after it: sent, not fenced
    return;
  }
  // Retire finished batches now and then: work that never allocates or reads back (a frame
  // filter run every frame) would otherwise keep every batch's fence.
  if (fences_.size() >= kRetireAfter) poll();
  if (capture_) capture_->flush();
  // Make this batch's shader writes visible to whatever follows: later dispatches, copies and
  // mapped reads of the host (already so where a full barrier followed the last dispatch: a
  // read-back's barrier_for_copy before its copy).
  if (dispatches_ != full_barrier_at_) barrier(GL_ALL_BARRIER_BITS);
  if (g_wait_trace) trace_counter(dev_, *g_wait_trace, 1);
  GLsync fence = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
  if (submit) glFlush();
  fences_.emplace_back(batch_, fence);
  ++batch_;
  batch_dispatches_ = 0;
  transfer_pending_ = false;  // the fence follows them
}

void Queue::wait_batch(std::uint64_t id) {
  if (id <= completed_) return;
  if (id >= batch_) flush();
  while (!fences_.empty() && fences_.front().first <= id) {
    auto [fid, fence] = fences_.front();
    if (client_wait(fence) == GL_WAIT_FAILED) {
      dev_.check_gl("wait");
      throw DeviceError("gltensor::wait: glClientWaitSync failed (context lost?)");
    }
    glDeleteSync(fence);
    fences_.pop_front();
    completed_ = fid;
  }
}

void Queue::wait_all() {
  flush();
  if (!fences_.empty()) wait_batch(fences_.back().first);
  if (transfer_pending_) {
    // Transfers after the last batch end (an upload, a copy, with no dispatch after it): a fence
    // of their own (fences signal in order: it also follows everything before them).
    GLsync fence = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
    const GLenum r = client_wait(fence);
    glDeleteSync(fence);
    if (r == GL_WAIT_FAILED) {
      dev_.check_gl("wait");
      throw DeviceError("gltensor::wait: glClientWaitSync failed (context lost?)");
    }
    transfer_pending_ = false;
  }
}

void Queue::wait_fence_now(const char* op) {
  const std::uint64_t n = transfers_;
  GLsync fence = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
  const GLenum r = client_wait(fence);
  glDeleteSync(fence);
  if (r == GL_WAIT_FAILED)
    throw DeviceError(std::string("gltensor::") + op + ": glClientWaitSync failed (context lost?)");
  transfers_done(n);
}

void Queue::poll() {
  while (!fences_.empty()) {
    GLint status = 0;
    glGetSynciv(fences_.front().second, GL_SYNC_STATUS, 1, nullptr, &status);
    if (status != GL_SIGNALED) break;
    glDeleteSync(fences_.front().second);
    completed_ = fences_.front().first;
    fences_.pop_front();
  }
}

void Queue::forget_buffer(GLuint buffer) {
  written_since_barrier_.erase(buffer);
  read_since_barrier_.erase(buffer);
  dev_.gl().forget_buffer(buffer);
}

void Queue::destroy() {
  for (auto& f : fences_) glDeleteSync(f.second);
  fences_.clear();
}

}  // namespace gltensor::detail
