// Dispatch recording, hazard barriers, fence-based batches (queue.hpp).
#include "runtime/queue.hpp"

#include <chrono>
#include <unordered_map>

#include "runtime/capture.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/settings.hpp"
#include "runtime/storage.hpp"

namespace gltensor::detail {

GLenum client_wait(GLsync fence) {
  // A short spin first: small work finishes within microseconds of the flush, and a blocking
  // wait can sleep well past it (measured on NVIDIA: a read-back's round trip went from about
  // 35 to 20 us); then blocking waits.
  // Between the spin's polls the host waits kPollGap without calling the driver: polls back to
  // back (60-80 a read-back) slowed the host work around them on NVIDIA (the H100, e2e3's window
  // 3, 3 rounds: the three-Gemm model end to end 51.6-53.1 -> 46.4-50.6 us, from_host's and
  // Model::run's host time 4.5-5.8 -> 3.1-5.0 us; RESULTS.md).
  constexpr auto kPollGap = std::chrono::microseconds(2);
  const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(100);
  GLenum r = glClientWaitSync(fence, GL_SYNC_FLUSH_COMMANDS_BIT, 0);
  while (r == GL_TIMEOUT_EXPIRED && std::chrono::steady_clock::now() < spin_until) {
    const auto until = std::chrono::steady_clock::now() + kPollGap;
    while (std::chrono::steady_clock::now() < until) {
    }
    r = glClientWaitSync(fence, 0, 0);
  }
  while (r == GL_TIMEOUT_EXPIRED) r = glClientWaitSync(fence, GL_SYNC_FLUSH_COMMANDS_BIT, 1000000000ull);
  return r;
}

void Queue::barrier(GLbitfield bits) {
  if (bits == 0) return;
  glMemoryBarrier(bits);
  ++barriers_;
  if (bits & GL_SHADER_STORAGE_BARRIER_BIT) {
    written_since_barrier_.clear();
    read_since_barrier_.clear();
  }
  if ((bits & kTextureBits) == kTextureBits) {
    images_written_.clear();
    textures_read_.clear();
  }
}

void Queue::dispatch(const Program& p, std::uint32_t gx, std::uint32_t gy, std::uint32_t gz,
                     std::span<const BufferUse> uses, std::span<const BlockUse> blocks,
                     std::span<const TextureUse> textures) {
  if (gx == 0 || gy == 0 || gz == 0) return;
  GLbitfield bits = settings().full_barriers && dispatches_ > 0 ? kBufferBits | kTextureBits : 0;
  for (const auto& u : uses) {
    const GLuint b = u.storage->buffer();
    if (written_since_barrier_.count(b) || (u.write && read_since_barrier_.count(b))) bits |= kBufferBits;
  }
  for (const auto& u : blocks)
    if (written_since_barrier_.count(u.storage->buffer())) bits |= kBufferBits;
  for (const auto& t : textures)
    if (images_written_.count(t.texture) || (t.image && textures_read_.count(t.texture))) bits |= kTextureBits;
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
  for (const auto& u : blocks) {
    read_since_barrier_.insert(u.storage->buffer());
    u.storage->use_batch = batch_;
  }
  for (const auto& t : textures) (t.image ? images_written_ : textures_read_).insert(t.texture);
  for (const auto& u : uses) {
    const GLuint b = u.storage->buffer();
    u.storage->use_batch = batch_;
    if (u.write) {
      written_since_barrier_.insert(b);
      u.storage->write_batch = batch_;
    } else {
      read_since_barrier_.insert(b);
    }
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
  // Hazards with the work before the replay (the captured barriers cover those within it).
  GLbitfield bits = 0;
  for (const auto& [captured, w] : c.buffers) {
    const GLuint b = name(captured);
    if (written_since_barrier_.count(b) || (w && read_since_barrier_.count(b))) bits |= kBufferBits;
  }
  for (const auto& [t, image] : c.all_textures)
    if (images_written_.count(t) || (image && textures_read_.count(t))) bits |= kTextureBits;
  barrier(bits);
  for (const auto& s : c.steps) {
    if (!s.program) {  // a batch end of the capture: its barrier and a fence
      flush();
      continue;
    }
    barrier(s.barrier);
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
  // The barrier bits step `s` of capture i needs after what was issued since the last barrier.
  const auto needs = [&](std::size_t i, const Capture::Step& s) {
    const Capture& c = *cs[i];
    GLbitfield bits = 0;
    for (std::uint32_t k = s.ssbo_begin; k < s.ssbo_end; ++k) {
      const GLuint b = rebound(rebinds_of(i), c.ssbos[k].buffer);
      if (written_since_barrier_.count(b) || (c.ssbos[k].write && read_since_barrier_.count(b))) bits |= kBufferBits;
    }
    for (std::uint32_t k = s.block_begin; k < s.block_end; ++k)
      if (written_since_barrier_.count(rebound(rebinds_of(i), c.blocks[k].buffer))) bits |= kBufferBits;
    for (std::uint32_t k = s.texture_begin; k < s.texture_end; ++k) {
      const TextureUse& t = c.textures[k];
      if (images_written_.count(t.texture) || (t.image && textures_read_.count(t.texture))) bits |= kTextureBits;
    }
    return bits;
  };
  const auto issue = [&](std::size_t i, const Capture::Step& s) {
    const Capture& c = *cs[i];
    const Program& p = *s.program;
    dev_.gl().use_program(p.id);
    for (std::uint32_t k = s.ssbo_begin; k < s.ssbo_end; ++k) {
      const GLuint b = rebound(rebinds_of(i), c.ssbos[k].buffer);
      dev_.gl().bind_ssbo(k - s.ssbo_begin, b);
      (c.ssbos[k].write ? written_since_barrier_ : read_since_barrier_).insert(b);
    }
    for (std::uint32_t k = s.block_begin; k < s.block_end; ++k) {
      const auto& u = c.blocks[k];
      const GLuint b = rebound(rebinds_of(i), u.buffer);
      dev_.gl().bind_ubo(u.binding, b, u.offset, u.size);
      read_since_barrier_.insert(b);
    }
    for (std::uint32_t k = s.texture_begin; k < s.texture_end; ++k) {
      const TextureUse& t = c.textures[k];
      if (t.image) {
        dev_.gl().bind_image(t.unit, t.texture, t.level, t.access, t.format);
        images_written_.insert(t.texture);
      } else {
        dev_.gl().bind_texture_2d(t.unit, t.texture);
        dev_.gl().bind_sampler(t.unit, t.sampler);
        textures_read_.insert(t.texture);
      }
    }
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
  if (batch_dispatches_ == 0) return;
  // Retire finished batches now and then: work that never allocates or reads back (a frame
  // filter run every frame) would otherwise keep every batch's fence.
  if (fences_.size() >= kRetireAfter) poll();
  if (capture_) capture_->flush();
  // Make this batch's shader writes visible to whatever follows: later dispatches, copies and
  // mapped reads of the host.
  barrier(GL_ALL_BARRIER_BITS);
  GLsync fence = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
  if (submit) glFlush();
  fences_.emplace_back(batch_, fence);
  ++batch_;
  batch_dispatches_ = 0;
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
