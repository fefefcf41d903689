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

/// Uploads of at least kPieceUploadMin bytes may go through the ring in pieces of at least
/// kPieceUploadBytes (upload_pieces).
constexpr std::size_t kPieceUploadMin = std::size_t{1} << 20;
constexpr std::size_t kPieceUploadBytes = std::size_t{256} << 10;

/// The pieces an upload of `bytes` is written and copied in: as many as keep each within half
/// the ring (4 MiB), and from kPieceUploadMin up to Settings::upload_pieces
/// (GLTENSOR_UPLOAD_PIECES, default 1) pieces of at least kPieceUploadBytes if that is more.
std::size_t upload_pieces(std::size_t bytes);

/// Copies `bytes` of host data into `dst` at byte 0 through the upload ring: written by the host
/// (Settings::upload_copy: memcpy, streaming stores, helper threads) and copied by the GPU
/// (glCopyBufferSubData), in upload_pieces pieces, each copy submitted (glFlush) once its piece is
/// written, so that the GPU's copy of a piece overlaps the host's write of the next; past a half
/// of the ring, through both halves in turn. Returns false (nothing done) where the device has no
/// persistent mapping or staging is set to copy.
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
/// mapped_read_begin in parts: makes the read buffer hold at least `bytes` (false, nothing done,
/// where mapped_read_begin would return false), then queues copies of parts of `src` into it
/// (bytes [offset, offset + bytes) of src to the read buffer's byte `at`).
bool mapped_read_reserve(DeviceImpl& dev, std::size_t bytes);
void mapped_read_copy(DeviceImpl& dev, GLuint src, std::size_t offset, std::size_t at, std::size_t bytes);
/// After a fence issued after mapped_read_begin's copy has signaled: its `bytes` to dst.
void mapped_read_end(DeviceImpl& dev, std::size_t bytes, void* dst);

/// The mapped read buffer's bytes (valid once a fence after mapped_read_begin's copy has
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
