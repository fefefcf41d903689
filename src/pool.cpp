// SSBO pool: size classes, reuse, limit, statistics.
#include <bit>
#include <string>

#include "device_impl.hpp"

namespace gltensor::detail {

std::size_t Pool::size_class(std::size_t bytes) {
  if (bytes <= 256) return 256;
  const std::size_t p = std::bit_floor(bytes);
  if (bytes == p) return p;
  if (bytes <= p + p / 2) return p + p / 2;
  return p * 2;
}

Pool::Block Pool::acquire(std::size_t bytes, const char* op) {
  const std::size_t cls = size_class(bytes);
  auto it = free_.find(cls);
  if (it != free_.end() && !it->second.empty()) {
    Block b{it->second.back(), cls};
    it->second.pop_back();
    ++st_.hits;
    --st_.cached_buffers;
    ++st_.live_buffers;
    st_.bytes_in_use += cls;
    return b;
  }
  if (limit_ != 0 && st_.bytes_allocated + cls > limit_) {
    trim();
    if (st_.bytes_allocated + cls > limit_)
      throw OutOfMemory(std::string("gltensor::") + op + ": allocating " + std::to_string(bytes) +
                        " bytes (size class " + std::to_string(cls) + ") would exceed the memory limit of " +
                        std::to_string(limit_) + " bytes (" + std::to_string(st_.bytes_in_use) + " in use)");
  }
  while (glGetError() != GL_NO_ERROR) {
  }
  GLuint buf = 0;
  glGenBuffers(1, &buf);
  glBindBuffer(GL_SHADER_STORAGE_BUFFER, buf);
  glBufferData(GL_SHADER_STORAGE_BUFFER, static_cast<GLsizeiptr>(cls), nullptr, GL_DYNAMIC_COPY);
  glBindBuffer(GL_SHADER_STORAGE_BUFFER, 0);
  if (glGetError() == GL_OUT_OF_MEMORY) {
    glDeleteBuffers(1, &buf);
    trim();
    throw OutOfMemory(std::string("gltensor::") + op + ": GL_OUT_OF_MEMORY allocating " + std::to_string(cls) +
                      " bytes");
  }
  ++st_.misses;
  ++st_.live_buffers;
  st_.bytes_in_use += cls;
  st_.bytes_allocated += cls;
  if (st_.bytes_allocated > st_.peak_bytes) st_.peak_bytes = st_.bytes_allocated;
  return Block{buf, cls};
}

void Pool::release(Block b) {
  if (b.buffer == 0) return;
  free_[b.capacity].push_back(b.buffer);
  --st_.live_buffers;
  ++st_.cached_buffers;
  st_.bytes_in_use -= b.capacity;
  // The buffer may still be read by recorded dispatches; reuse is safe because the scheduler
  // puts a barrier before any dispatch that writes a buffer read since the last barrier.
}

void Pool::trim() {
  for (auto& [cls, bufs] : free_) {
    if (!bufs.empty()) glDeleteBuffers(static_cast<GLsizei>(bufs.size()), bufs.data());
    st_.bytes_allocated -= cls * bufs.size();
    st_.cached_buffers -= bufs.size();
    for (GLuint b : bufs) {
      dev_.written_since_barrier.erase(b);
      dev_.read_since_barrier.erase(b);
    }
  }
  free_.clear();
}

void Pool::destroy_all() { trim(); }

PoolStats Pool::stats() const {
  PoolStats s = st_;
  s.memory_limit = limit_;
  return s;
}

Storage::~Storage() {
  if (dev) dev->pool.release(block);
}

}  // namespace gltensor::detail
