// Persistently mapped staging buffers for host transfers (host_staging.hpp).
#include "runtime/host_staging.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "runtime/device_impl.hpp"
#include "runtime/host_copy.hpp"
#include "runtime/int_math.hpp"
#include "runtime/settings.hpp"
#include "runtime/storage.hpp"

#ifndef GL_MAP_PERSISTENT_BIT
#define GL_MAP_PERSISTENT_BIT 0x0040
#define GL_MAP_COHERENT_BIT 0x0080
#define GL_CLIENT_STORAGE_BIT 0x0200
#endif

namespace gltensor::detail {

namespace {

using BufferStorageFn = void(GL_APIENTRYP)(GLenum target, GLsizeiptr size, const void* data, GLbitfield flags);

// The upload ring (two halves: the host fills one while the GPU may still copy from the other)
// and the read buffer, made on first use. A half is reused only after the fence set when the
// host left it has signaled, so a ring write never overtakes a pending copy from it.
struct MappedStaging : DeviceExtension {
  static constexpr std::size_t kHalf = std::size_t{4} << 20;  // uploads up to this go through the ring
  // Reads up to kReadMax go through the read buffer, grown to the largest of them and kept (host
  // memory): a short-lived staging buffer per read (Storage::download's path past it) costs its
  // allocation each time, on the H100 ~8.7 ms for a 12.8 MB output against ~0.5 ms for 3.2 MB
  // through this buffer (scripts/packs/torchcmp, 2026-11-28).
  static constexpr std::size_t kReadMax = std::size_t{64} << 20;
  static constexpr std::size_t kAlign = 256;
  bool probed = false;
  BufferStorageFn storage = nullptr;  // null: no persistent mapping on this context
  GLuint ring = 0;
  unsigned char* ring_ptr = nullptr;
  std::size_t head = 0;
  int half = 0;
  GLsync left[2] = {nullptr, nullptr};  // fence set when the host left each half
  GLuint read = 0;
  const unsigned char* read_ptr = nullptr;
  std::size_t read_capacity = 0;

  void free_gl() override {
    for (GLsync& f : left)
      if (f) glDeleteSync(f), f = nullptr;
    if (ring) glDeleteBuffers(1, &ring);  // deleting a mapped buffer unmaps it
    if (read) glDeleteBuffers(1, &read);
    ring = read = 0;
    ring_ptr = nullptr;
    read_ptr = nullptr;
    read_capacity = 0;
  }
};

MappedStaging* staging_of(DeviceImpl& dev) {
  if (!settings().persistent_staging) return nullptr;
  MappedStaging& s = dev.extension<MappedStaging>();
  if (!s.probed) {
    s.probed = true;
    const Capabilities& c = dev.caps();
    const bool desktop44 = c.desktop && (c.gl_major > 4 || (c.gl_major == 4 && c.gl_minor >= 4));
    if (desktop44)
      s.storage = reinterpret_cast<BufferStorageFn>(eglGetProcAddress("glBufferStorage"));
    else if (c.has_extension("GL_EXT_buffer_storage"))
      s.storage = reinterpret_cast<BufferStorageFn>(eglGetProcAddress("glBufferStorageEXT"));
  }
  return s.storage ? &s : nullptr;
}

// An immutable, persistently and coherently mapped buffer of `bytes` (access: GL_MAP_READ_BIT or
// GL_MAP_WRITE_BIT). Returns the mapping; throws DeviceError if the driver refuses.
void* make_mapped(DeviceImpl& dev, MappedStaging& s, GLuint& buffer, std::size_t bytes, GLbitfield access,
                  const char* op, const void* init = nullptr) {
  glGenBuffers(1, &buffer);
  dev.gl().bind_buffer(GlState::kCopyRead, buffer);
  const GLbitfield flags = access | GL_MAP_PERSISTENT_BIT | GL_MAP_COHERENT_BIT | GL_CLIENT_STORAGE_BIT;
  s.storage(GL_COPY_READ_BUFFER, static_cast<GLsizeiptr>(bytes), init, flags);
  void* p = glMapBufferRange(GL_COPY_READ_BUFFER, 0, static_cast<GLsizeiptr>(bytes), flags & ~GL_CLIENT_STORAGE_BIT);
  if (!p) {
    delete_buffer(dev, buffer);
    buffer = 0;
    throw DeviceError(std::string("gltensor::") + op + ": a persistently mapped staging buffer of " +
                      std::to_string(bytes) + " bytes could not be made (glBufferStorage / glMapBufferRange failed)");
  }
  return p;
}

}  // namespace

void* make_host_visible(DeviceImpl& dev, GLuint& buffer, std::size_t bytes, const void* init, const char* op) {
  MappedStaging* s = staging_of(dev);
  if (!s) return nullptr;
  return make_mapped(dev, *s, buffer, bytes, GL_MAP_READ_BIT | GL_MAP_WRITE_BIT, op, init);
}

std::size_t upload_pieces(std::size_t bytes) {
  const std::size_t by_ring = ceil_div(bytes, MappedStaging::kHalf);  // no piece past a half
  if (bytes < kPieceUploadMin) return by_ring;
  const auto most = static_cast<std::size_t>(std::max(1, settings().upload_pieces));
  return std::max(by_ring, std::clamp<std::size_t>(bytes / kPieceUploadBytes, 1, most));
}

namespace {

// Reserves `bytes` (at most a half) of the ring: in the current half if they fit, else in the
// other half once the copies from it have run. Returns the ring offset.
std::size_t ring_reserve(MappedStaging& s, std::size_t bytes) {
  const std::size_t need = ceil_div(bytes, MappedStaging::kAlign) * MappedStaging::kAlign;
  if (s.head + need > static_cast<std::size_t>(s.half + 1) * MappedStaging::kHalf) {
    // Leave this half (a fence after its copies) and enter the other once its copies are done.
    s.left[s.half] = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
    s.half ^= 1;
    s.head = static_cast<std::size_t>(s.half) * MappedStaging::kHalf;
    if (GLsync f = s.left[s.half]) {
      s.left[s.half] = nullptr;
      wait_fence(f);
    }
  }
  const std::size_t at = s.head;
  s.head += need;
  return at;
}

// The host's write of an upload (or a piece of it) into the ring, as GLTENSOR_UPLOAD_COPY says.
void ring_write(unsigned char* to, const unsigned char* from, std::size_t bytes) {
  const UploadCopySetting how = settings().upload_copy;
  const bool stream = how == UploadCopySetting::stream || how == UploadCopySetting::threads_stream;
  const bool threads = how == UploadCopySetting::threads || how == UploadCopySetting::threads_stream;
  if (bytes < kParallelCopyMin)
    std::memcpy(to, from, bytes);
  else if (threads)
    parallel_copy(to, from, bytes, stream);
  else if (stream)
    stream_copy(to, from, bytes);
  else
    std::memcpy(to, from, bytes);
}

}  // namespace

bool ring_upload(DeviceImpl& dev, const void* data, std::size_t bytes, GLuint dst) {
  const std::size_t pieces = upload_pieces(bytes);
  MappedStaging* s = staging_of(dev);
  if (!s) return false;
  if (!s->ring)
    s->ring_ptr = static_cast<unsigned char*>(
        make_mapped(dev, *s, s->ring, 2 * MappedStaging::kHalf, GL_MAP_WRITE_BIT, "upload"));
  const auto* from = static_cast<const unsigned char*>(data);
  if (pieces == 1) {
    const std::size_t at = ring_reserve(*s, bytes);
    ring_write(s->ring_ptr + at, from, bytes);
    copy_buffer(dev, s->ring, at, dst, 0, bytes);
    return true;
  }
  // In pieces: each piece's copy is submitted once the piece is written, so that the GPU copies
  // it while the host writes the next (and a piece's half is refilled only after its copies ran).
  const std::size_t piece =
      std::min(MappedStaging::kHalf, ceil_div(bytes / pieces, MappedStaging::kAlign) * MappedStaging::kAlign);
  for (std::size_t done = 0; done < bytes; done += piece) {
    const std::size_t k = std::min(piece, bytes - done);
    const std::size_t at = ring_reserve(*s, k);
    ring_write(s->ring_ptr + at, from + done, k);
    copy_buffer(dev, s->ring, at, dst, done, k);
    glFlush();
  }
  return true;
}

bool mapped_read_reserve(DeviceImpl& dev, std::size_t bytes) {
  if (bytes > MappedStaging::kReadMax) return false;
  MappedStaging* s = staging_of(dev);
  if (!s) return false;
  if (bytes > s->read_capacity) {  // immutable storage: a larger read needs a new buffer
    if (s->read) delete_buffer(dev, s->read);
    s->read = 0;
    s->read_ptr = nullptr;
    const std::size_t cap =
        std::min(MappedStaging::kReadMax, std::max({bytes, 2 * s->read_capacity, std::size_t{64} * 1024}));
    s->read_capacity = 0;
    s->read_ptr = static_cast<const unsigned char*>(make_mapped(dev, *s, s->read, cap, GL_MAP_READ_BIT, "to_host"));
    s->read_capacity = cap;
  }
  return true;
}

void mapped_read_copy(DeviceImpl& dev, GLuint src, std::size_t offset, std::size_t at, std::size_t bytes) {
  copy_buffer(dev, src, offset, dev.extension<MappedStaging>().read, at, bytes);
}

bool mapped_read_begin(DeviceImpl& dev, GLuint src, std::size_t offset, std::size_t bytes) {
  if (!mapped_read_reserve(dev, bytes)) return false;
  mapped_read_copy(dev, src, offset, 0, bytes);
  return true;
}

const unsigned char* mapped_read_data(DeviceImpl& dev) { return dev.extension<MappedStaging>().read_ptr; }

void mapped_read_end(DeviceImpl& dev, std::size_t bytes, void* dst) {
  std::memcpy(dst, dev.extension<MappedStaging>().read_ptr, bytes);
}

bool mapped_download(DeviceImpl& dev, GLuint src, std::size_t offset, std::size_t bytes, void* dst) {
  if (!mapped_read_begin(dev, src, offset, bytes)) return false;
  dev.queue().wait_fence_now("to_host");
  mapped_read_end(dev, bytes, dst);
  return true;
}

}  // namespace gltensor::detail
