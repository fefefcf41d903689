// A captured sequence of dispatches (capture.hpp).
#include "runtime/capture.hpp"

#include <algorithm>
#include <map>
#include <string>

#include "gltensor/errors.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/storage.hpp"

namespace gltensor::detail {

Capture::~Capture() {
  for (const auto& b : owned) dev->pool().release(b);
}

void Capture::hold(Storage& s, bool write) {
  auto [it, fresh] = held_index_.try_emplace(&s, held.size());
  // A storage at the address of a dead one is another storage.
  if (!fresh && !held[it->second].device_owned && held[it->second].weak.expired()) {
    it->second = held.size();
    fresh = true;
  }
  if (fresh) {
    Held h;
    h.weak = s.weak_from_this();
    h.device_owned = h.weak.expired();  // not owned by a shared_ptr: the device's own buffer
    h.raw = &s;
    h.buffer = s.buffer();
    held.push_back(std::move(h));
    touched_.insert(s.buffer());
  }
  held[it->second].written = held[it->second].written || write;
}

void Capture::keep_buffers() {
  std::unordered_set<GLuint> alive;
  for (auto& h : held) {
    if (h.device_owned) {
      alive.insert(h.buffer);
      continue;
    }
    h.storage = h.weak.lock();
    h.weak.reset();
    h.raw = h.storage.get();
    if (h.raw) alive.insert(h.buffer);
  }
  for (const GLuint b : touched_) {
    if (alive.count(b)) continue;
    Pool::Block block;
    if (!dev->pool().take(b, block))
      throw CaptureError(
          "gltensor::Recording::capture: a tensor allocated during the capture and alive after it, but "
          "used by no captured dispatch, has a buffer that the recording uses for a tensor that died "
          "during it (an allocation that escapes the capture); make it before the capture, or use it in it");
    owned.push_back(block);
  }
  held.erase(std::remove_if(held.begin(), held.end(), [](const Held& h) { return !h.raw; }), held.end());
  held_index_.clear();
}

void Capture::replayed(std::uint64_t batch) const {
  for (const auto& h : held) {
    h.raw->use_batch = batch;
    if (h.written) h.raw->write_batch = batch;
  }
  for (auto& b : const_cast<std::vector<Pool::Block>&>(owned)) b.busy_until = batch;
}

bool Capture::writes(GLuint buffer) const {
  for (const auto& [b, w] : buffers)
    if (b == buffer) return w;
  return false;
}

bool Capture::move_storage(Storage& s, Pool::Block to) {
  auto h = std::find_if(held.begin(), held.end(), [&](const Held& x) { return x.raw == &s; });
  if (h == held.end()) return false;
  const GLuint from = s.buffer();
  // The captured dispatches' writes ran in the batch being recorded, and a later dispatch's
  // barrier may have cleared the hazard sets' record of this one (barrier_for_host would miss it).
  dev->queue().barrier_for_copy();
  copy_buffer(*dev, from, 0, to.buffer, 0, s.nbytes);
  const auto rename = [&](GLuint& b) {
    if (b == from) b = to.buffer;
  };
  for (auto& u : ssbos) rename(u.buffer);
  for (auto& u : blocks) rename(u.buffer);
  for (auto& [b, w] : buffers) rename(b);
  for (auto* v : {&tail_written, &tail_read})
    for (GLuint& b : *v) rename(b);
  rename(h->buffer);
  touched_.erase(from);
  touched_.insert(to.buffer);
  Pool::Block old = s.block;
  old.busy_until = dev->queue().batch();
  s.block = to;
  s.use_batch = s.write_batch = dev->queue().batch();  // the copy's batch
  dev->pool().release(old);
  return true;
}

void Capture::dispatch(GLbitfield barrier, const Program& p, std::uint32_t gx, std::uint32_t gy, std::uint32_t gz,
                       std::span<const BufferUse> uses, std::span<const BlockUse> block_uses,
                       std::span<const TextureUse> texture_uses) {
  Step s;
  s.program = &p;
  s.groups[0] = gx;
  s.groups[1] = gy;
  s.groups[2] = gz;
  s.barrier = barrier;
  s.ssbo_begin = static_cast<std::uint32_t>(ssbos.size());
  for (const auto& u : uses) {
    ssbos.push_back({u.storage->buffer(), u.write});
    hold(*u.storage, u.write);
  }
  s.ssbo_end = static_cast<std::uint32_t>(ssbos.size());
  s.block_begin = static_cast<std::uint32_t>(blocks.size());
  for (const auto& b : block_uses) {
    blocks.push_back({b.binding, b.storage->buffer(), b.offset, b.size});
    hold(*b.storage, false);
  }
  s.block_end = static_cast<std::uint32_t>(blocks.size());
  s.texture_begin = static_cast<std::uint32_t>(textures.size());
  textures.insert(textures.end(), texture_uses.begin(), texture_uses.end());
  s.texture_end = static_cast<std::uint32_t>(textures.size());
  // Every uniform the program holds now (reduced to the changes at finish()).
  s.uniform_begin = static_cast<std::uint32_t>(uniforms.size());
  for (const auto& [loc, v] : p.last) uniforms.push_back({loc, v});
  s.uniform_end = static_cast<std::uint32_t>(uniforms.size());
  steps.push_back(s);
  ++dispatches;
  if (barrier) ++barriers;
}

void Capture::flush() {
  steps.push_back(Step{});
  ++barriers;
}

void Capture::host_read(const char* op) const {
  throw CaptureError(std::string("gltensor::") + op +
                     ": reads a buffer back to the host while a Recording is being captured (a replay "
                     "cannot repeat a read-back; ops whose output shape depends on data cannot be captured)");
}

void Capture::host_write(Storage& s, const char* op) {
  if (touched(s.buffer()))
    throw CaptureError(std::string("gltensor::") + op +
                       ": writes host data into a buffer that a captured dispatch uses, while a Recording is "
                       "being captured (a replay would not repeat the upload: copy_ into the captured tensor "
                       "between replays instead)");
  // Uploaded bytes the replays must find: the buffer must not go back to the pool when its tensor
  // dies during the capture (a later allocation would reuse it, and a replay would read what that
  // one wrote there: flip's index table once did).
  // Once per storage (repeated uploads into one tensor kept one entry each before).
  if (uploaded_.count(&s) != 0) return;
  if (std::shared_ptr<Storage> owner = s.weak_from_this().lock()) uploaded_.emplace(&s, std::move(owner));
}

void Capture::finish() {
  keep_buffers();
  // Uniforms: a program's first dispatch sets every value it had (another call may change them
  // between replays); later dispatches of the program only what differs from its previous one.
  std::map<const Program*, std::map<GLint, UniformValue>> state;
  std::vector<Uniform> kept;
  for (auto& s : steps) {
    s.all_begin = s.uniform_begin;  // the full list stays in all_uniforms
    s.all_end = s.uniform_end;
    if (!s.program) continue;
    auto [it, first] = state.try_emplace(s.program);
    const auto begin = static_cast<std::uint32_t>(kept.size());
    for (std::uint32_t i = s.uniform_begin; i < s.uniform_end; ++i) {
      auto& u = uniforms[i];
      auto [v, fresh] = it->second.try_emplace(u.location, u.value);
      if (!first && !fresh && v->second == u.value) continue;
      v->second = u.value;
      kept.push_back(u);
    }
    s.uniform_begin = begin;
    s.uniform_end = static_cast<std::uint32_t>(kept.size());
  }
  all_uniforms = std::move(uniforms);
  uniforms = std::move(kept);
  // Resources touched, and those touched after the last barrier covering them (as Queue::barrier
  // clears its sets).
  auto add = [](std::vector<std::pair<GLuint, bool>>& v, GLuint name, bool w) {
    auto it = std::find_if(v.begin(), v.end(), [&](const auto& e) { return e.first == name; });
    if (it == v.end())
      v.emplace_back(name, w);
    else
      it->second = it->second || w;
  };
  auto insert = [](std::vector<GLuint>& v, GLuint name) {
    if (std::find(v.begin(), v.end(), name) == v.end()) v.push_back(name);
  };
  for (const auto& s : steps) {
    const GLbitfield bits = s.program ? s.barrier : GL_ALL_BARRIER_BITS;
    if (bits & GL_SHADER_STORAGE_BARRIER_BIT) {
      tail_written.clear();
      tail_read.clear();
    }
    if ((bits & Queue::kTextureBits) == Queue::kTextureBits) {
      tail_images.clear();
      tail_sampled.clear();
    }
    if (!s.program) continue;
    for (std::uint32_t i = s.ssbo_begin; i < s.ssbo_end; ++i) {
      add(buffers, ssbos[i].buffer, ssbos[i].write);
      insert(ssbos[i].write ? tail_written : tail_read, ssbos[i].buffer);
    }
    for (std::uint32_t i = s.block_begin; i < s.block_end; ++i) {
      add(buffers, blocks[i].buffer, false);
      insert(tail_read, blocks[i].buffer);
    }
    for (std::uint32_t i = s.texture_begin; i < s.texture_end; ++i) {
      const TextureUse& t = textures[i];
      add(all_textures, t.texture, t.image);
      insert(t.image ? tail_images : tail_sampled, t.texture);
    }
  }
}

}  // namespace gltensor::detail
