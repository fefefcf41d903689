// SSBO pool: size classes, reuse, limit, statistics.
#include "runtime/pool.hpp"

#include <algorithm>
#include <bit>
#include <string>

#include "runtime/capture.hpp"
#include "runtime/cuda_memory.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/guard.hpp"
#include "runtime/host_staging.hpp"
#include "runtime/settings.hpp"
#include "runtime/storage.hpp"

namespace gltensor::detail {

std::size_t Pool::size_class(std::size_t bytes) {
  bytes = std::max(bytes, settings().pool_min_class);  // GLTENSOR_POOL_MIN_CLASS (a diagnostic)
  if (bytes <= 256) return 256;
  const std::size_t p = std::bit_floor(bytes);
  if (bytes == p) return p;
  if (bytes <= p + p / 2) return p + p / 2;
  return p * 2;
}

bool Pool::reuse(std::size_t key, bool idle_only, Block& out) {
  auto it = free_.find(key);
  if (it == free_.end() || it->second.empty()) return false;
  auto& list = it->second;
  std::size_t pick = list.size() - 1;
  if (idle_only) {
    const Capture* cap = dev_.queue().capture();
    auto usable = [&](const Block& b) {
      return b.busy_until <= dev_.queue().completed() && !(cap && cap->touched(b.buffer));
    };
    if (list[pick].busy_until > dev_.queue().completed()) dev_.queue().poll();
    while (pick != static_cast<std::size_t>(-1) && !usable(list[pick])) --pick;
  }
  if (pick == static_cast<std::size_t>(-1)) return false;
  out = list[pick];
  out.busy_until = 0;
  list.erase(list.begin() + static_cast<std::ptrdiff_t>(pick));
  ++st_.hits;
  --st_.cached_buffers;
  ++st_.live_buffers;
  st_.bytes_in_use += out.capacity;
  return true;
}

void Pool::check_limit(std::size_t cls, std::size_t bytes, const char* op) {
  if (limit_ == 0 || st_.bytes_allocated + cls <= limit_) return;
  trim();
  if (st_.bytes_allocated + cls > limit_)
    throw OutOfMemory(std::string("gltensor::") + op + ": allocating " + std::to_string(bytes) + " bytes (size class " +
                      std::to_string(cls) + ") would exceed the memory limit of " + std::to_string(limit_) +
                      " bytes (" + std::to_string(st_.bytes_in_use) + " in use)");
}

void Pool::count_new(std::size_t cls) {
  ++st_.misses;
  ++st_.live_buffers;
  st_.bytes_in_use += cls;
  st_.bytes_allocated += cls;
  if (st_.bytes_allocated > st_.peak_bytes) st_.peak_bytes = st_.bytes_allocated;
}

Pool::Block Pool::acquire(std::size_t bytes, const char* op, bool host_write) {
  // An entry of its own (nothing where the caller is inside one): a new buffer is made, and a
  // fence may be polled, in the device's context, with the application's bindings saved, even
  // where an op allocates before its first Launch.
  Enter entry(dev_, op);
  const std::size_t cls = size_class(bytes);
  if (Block b; reuse(cls, host_write, b)) return b;
  check_limit(cls, bytes, op);
  // Out of memory: glGetError on our own context (its errors are ours); an adopted context's
  // error flags belong to the application, so there the buffer's size tells (a failed
  // glBufferData leaves it 0 on the drivers seen; the GL leaves it undefined).
  if (!dev_.adopted())
    while (glGetError() != GL_NO_ERROR) {
    }
  GLuint buf = 0;
  glGenBuffers(1, &buf);
  dev_.gl().bind_buffer(GlState::kSsbo, buf);  // created as an SSBO (drivers may place it by first use)
  // Large buffers on CUDA's memory where the device can (cuda_memory.hpp: NVIDIA's own stream slower).
  if (cls >= kCudaMemoryMin && settings().cuda_memory && !dev_.adopted() &&
      dev_.extension<CudaMemory>().make(dev_, buf, cls)) {
    count_new(cls);
    return Block{buf, cls, 0};
  }
  glBufferData(GL_SHADER_STORAGE_BUFFER, static_cast<GLsizeiptr>(cls), nullptr, GL_DYNAMIC_COPY);
  bool oom = false;
  if (dev_.adopted()) {
    GLint64 size = 0;
    glGetBufferParameteri64v(GL_SHADER_STORAGE_BUFFER, GL_BUFFER_SIZE, &size);
    oom = size != static_cast<GLint64>(cls);
  } else {
    oom = glGetError() == GL_OUT_OF_MEMORY;
  }
  if (oom) {
    delete_buffer(dev_, buf);
    trim();
    throw OutOfMemory(std::string("gltensor::") + op + ": GL_OUT_OF_MEMORY allocating " + std::to_string(cls) +
                      " bytes");
  }
  count_new(cls);
  return Block{buf, cls, 0};
}

Pool::Block Pool::acquire_host(std::size_t bytes, const char* op) {
  if (!settings().direct_host_io) return Block{};
  Enter entry(dev_, op);  // as acquire: a fence polled and a buffer made in the device's context
  const std::size_t cls = size_class(bytes);
  // The host writes these in place: only an idle one is reused.
  if (Block b; reuse(cls | kHostKey, true, b)) return b;
  check_limit(cls, bytes, op);
  Block b{0, cls, 0};
  b.host = static_cast<unsigned char*>(make_host_visible(dev_, b.buffer, cls, nullptr, op));
  if (!b.host) return Block{};
  count_new(cls);
  return b;
}

void Pool::release(Block b) {
  if (b.buffer == 0) return;
  free_[b.capacity | (b.host ? kHostKey : 0)].push_back(b);
  --st_.live_buffers;
  ++st_.cached_buffers;
  st_.bytes_in_use -= b.capacity;
  // The buffer may still be read by recorded dispatches; reuse is safe because the scheduler
  // puts a barrier before any dispatch that writes a buffer read since the last barrier.
}

bool Pool::take(GLuint buffer, Block& out) {
  for (auto& [cls, blocks] : free_)
    for (auto it = blocks.begin(); it != blocks.end(); ++it)
      if (it->buffer == buffer) {
        out = *it;
        blocks.erase(it);
        --st_.cached_buffers;
        ++st_.live_buffers;
        st_.bytes_in_use += out.capacity;
        return true;
      }
  return false;
}

void Pool::trim() {
  // A capture in progress keeps the buffers it used (capture.hpp).
  const Capture* cap = dev_.queue().capture();
  for (auto& [cls, blocks] : free_) {
    std::vector<Block> kept;
    for (const Block& b : blocks) {
      if (cap && cap->touched(b.buffer)) {
        kept.push_back(b);
        continue;
      }
      delete_buffer(dev_, b.buffer);  // names may be reused by new buffers (a mapped one is unmapped)
      st_.bytes_allocated -= b.capacity;
      --st_.cached_buffers;
    }
    blocks = std::move(kept);
  }
  std::erase_if(free_, [](const auto& e) { return e.second.empty(); });
}

PoolStats Pool::stats() const {
  PoolStats s = st_;
  s.memory_limit = limit_;
  return s;
}

}  // namespace gltensor::detail
