// A device-to-host copy in flight (internal): the bytes are copied into a staging buffer of
// their own, followed by a fence, so that the host can poll and map later without stalling.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>

#include "runtime/gl.hpp"

namespace gltensor::detail {

struct DeviceImpl;
struct Storage;

/// Bytes [offset, offset + bytes) of `src` -> host after every dispatch recorded so far that writes
/// it (a public read: to_host), waiting for them, into `dest()`: called once, after the copy is
/// queued and before any wait (the caller allocates and zeroes its result while the GPU works),
/// returning where the `bytes` go. Where it was written in the batch being recorded and the device
/// has the mapped read buffer (host_staging.hpp), the copy goes behind the batch's dispatches and
/// the batch's fence behind the copy: one barrier (Queue::barrier_for_copy), one fence, one wait,
/// one submission, then out of the mapping; a host-visible buffer is copied in place after its
/// writers' batch; both host copies split over helper threads from kParallelCopyMin
/// (host_copy.hpp). Else the batch is ended (its barrier the same one), then Storage::download,
/// then a wait for the writers' batch. (A copy in 8 pieces, each with a fence and taken out while
/// the GPU copied the next, was slower on the H200: 129 against 102 us for 904 KB,
/// gltensor_transfer_lab's k+8 pieces, bench/RESULTS.md.)
using HostDest = std::function<void*()>;
/// Reads of at least this many bytes through the mapped read buffer go in Settings::read_pieces
/// pieces (GLTENSOR_READ_PIECES).
constexpr std::size_t kPieceReadMin = std::size_t{1} << 20;

/// Where the last read_to_host's time went, in us (a benchmark's probe, bench/io_bench.cpp; set
/// on one thread, not for concurrent reads): `dest` from the call to the caller's allocation's
/// end (the copy queued, the destination allocated and zeroed), `wait` for the GPU, `copy` the
/// host copy out (in pieces: the copies, the waits between them counted in `wait`); `path` 1 the
/// mapped read buffer, 2 the same in pieces, 3 a host-visible buffer in place, 4 Storage::download.
struct ReadTrace {
  double dest = 0, wait = 0, copy = 0;
  int path = 0;
};
/// Records every later read_to_host's phases into *t (null: none, the default).
void set_read_trace(ReadTrace* t);
void read_to_host(DeviceImpl& dev, Storage& src, std::size_t offset, std::size_t bytes, const HostDest& dest);

class Readback {
 public:
  /// Records the copy of bytes [offset, offset + bytes) of `src` after every recorded dispatch.
  Readback(DeviceImpl& dev, Storage& src, std::size_t offset, std::size_t bytes);
  /// GL objects are deleted only inside an entry into the device (its context current on its
  /// thread); otherwise their deletion waits for the device's next entry or its destruction
  /// (DeviceImpl::defer_delete): never in another context, never leaked.
  ~Readback();
  Readback(const Readback&) = delete;
  Readback& operator=(const Readback&) = delete;
  /// True once the copy has finished (non-blocking).
  bool ready();
  /// Waits for the copy and copies the bytes to dst.
  void get(void* dst);
  std::size_t bytes() const { return bytes_; }
  DeviceImpl* device() const { return dev_.get(); }

 private:
  std::shared_ptr<DeviceImpl> dev_;
  GLuint staging_ = 0;
  GLsync fence_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace gltensor::detail
