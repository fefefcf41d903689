// Host transfers through persistently mapped staging buffers (internal).
//
// Where the context has immutable buffer storage (desktop GL 4.4+, or OpenGL ES with
// GL_EXT_buffer_storage), uploads are written by the host straight into a persistently mapped,
// coherent ring and copied from there into the pool buffer, and reads are copied into a
// persistently mapped, coherent buffer that the host reads after the copy's fence: no buffer is
// created, filled, mapped or unmapped per transfer (ARB_buffer_storage's "persistent mapping";
// the GL 4.6 spec, 6.2 "Creating and Modifying Buffer Object Data Stores", and 6.3.1 on coherent
// mappings: a client write is seen by the commands issued after it; a server write is seen by the
// client once a fence after it has signaled). GLTENSOR_STAGING=copy keeps the buffers of
// storage.cpp instead (a buffer made per upload, a map per read).
#pragma once
#include <cstddef>

#include "runtime/gl.hpp"

namespace gltensor::detail {

struct DeviceImpl;

/// Copies `bytes` of host data into `dst` at byte 0 through the upload ring. Returns false
/// (nothing done) where the device has no persistent mapping, staging is set to copy, or the
/// upload is larger than half the ring.
bool ring_upload(DeviceImpl& dev, const void* data, std::size_t bytes, GLuint dst);

/// Copies bytes [offset, offset + bytes) of `src` to the host through the mapped read buffer,
/// waiting for the copy (and every command before it). Returns false (nothing done) where the
/// device has no persistent mapping, staging is set to copy, or the read is too large to keep.
bool mapped_download(DeviceImpl& dev, GLuint src, std::size_t offset, std::size_t bytes, void* dst);

/// The first half of mapped_download without its fence and wait: queues the copy of bytes
/// [offset, offset + bytes) of `src` into the mapped read buffer. The caller then ends the work
/// with a fence of its own (the queue's batch fence: one fence for the dispatches and the copy),
/// waits for it and calls mapped_read_end. Returns false (nothing queued) where mapped_download
/// would.
bool mapped_read_begin(DeviceImpl& dev, GLuint src, std::size_t offset, std::size_t bytes);
/// After a fence issued after mapped_read_begin's copy has signaled: its `bytes` to dst.
void mapped_read_end(DeviceImpl& dev, std::size_t bytes, void* dst);

/// A read's copy in pieces, each but the last followed by a fence of its own (read_to_host): the
/// host takes a piece out of the mapping while the GPU copies the next ones. On the H200 a
/// 904 KB read's copy took ~29 us and the memcpy out of the freshly written mapping ~63 us, one
/// after the other (gltensor_transfer_lab, bench/RESULTS.md 2026-11-28). Fences not waited for
/// are deleted with it.
struct ReadPieces {
  static constexpr std::size_t kPiece = std::size_t{128} << 10;  // reads past 2 pieces are split
  static constexpr int kMax = 8;
  GLsync fence[kMax] = {};
  std::size_t end[kMax] = {};  // piece i: bytes [end[i - 1], end[i]) (fences for the first n)
  int n = 0;
  ReadPieces() = default;
  ReadPieces(const ReadPieces&) = delete;
  ReadPieces& operator=(const ReadPieces&) = delete;
  ~ReadPieces();
};
/// mapped_read_begin, the copy in pieces where `bytes` > 2 ReadPieces::kPiece (at most kMax, equal
/// and 256-byte aligned): pieces->n fences, one after each piece but the last.
bool mapped_read_begin(DeviceImpl& dev, GLuint src, std::size_t offset, std::size_t bytes, ReadPieces& pieces);
/// The mapped read buffer's bytes (valid once the fences after mapped_read_begin's copies have
/// signaled, until the next read).
const unsigned char* mapped_read_data(DeviceImpl& dev);

/// A buffer of `bytes` with immutable storage in host memory holding `init` (bytes long, or
/// null), persistently and coherently mapped for the host's reads and writes: small
/// device-written state the host polls (the error flags), and the host-visible buffers of
/// Pool::acquire_host (a model's inputs read and outputs written by kernels in place). Returns
/// the mapping, or null (no buffer made) where the device has no persistent mapping or staging
/// is set to copy. Throws DeviceError naming `op` if the driver refuses.
void* make_host_visible(DeviceImpl& dev, GLuint& buffer, std::size_t bytes, const void* init, const char* op = "check");

}  // namespace gltensor::detail
