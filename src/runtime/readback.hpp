// A device-to-host copy in flight (internal): the bytes are copied into a staging buffer of
// their own, followed by a fence, so that the host can poll and map later without stalling.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "runtime/gl.hpp"

namespace gltensor::detail {

struct DeviceImpl;
struct Storage;

/// Bytes [offset, offset + bytes) of `src` -> host after every dispatch recorded so far that writes
/// it (a public read: to_vector, to_bytes, to_host), waiting for them, into `dest()`: called once,
/// after the copy is queued and before any wait (to_vector allocates and zeroes its result while
/// the GPU works; to_host returns the caller's memory), returning where the `bytes` go. Where it
/// was written in the batch being recorded and the device has the mapped read buffer
/// (host_staging.hpp), the copy goes behind the batch's dispatches and the batch's fence behind the
/// copy: one barrier (Queue::barrier_for_copy), one submission, then out of the mapping; from 1
/// MiB the copy goes in pieces of at least kPieceBytes, each behind a fence of its own, and each
/// piece is copied out once its fence has signaled while the GPU copies the next (on the H200 a
/// 6.1 MB read 0.21-0.23 ms in 4-8 pieces against 0.37 in one; 904 KB in 8 pieces of 113 KB was
/// slower, small35: pieces now at least 256 KiB). A host-visible buffer is copied in place after
/// its writers' batch; the host copies split over helper threads from kParallelCopyMin
/// (host_copy.hpp). Else the batch is ended (its barrier the same one), then Storage::download,
/// then a wait for the writers' batch.
using HostDest = std::function<void*()>;
/// A read of at least kPieceReadMin through the mapped read buffer goes in
/// min(Settings::read_pieces, bytes / kPieceBytes) pieces (GLTENSOR_READ_PIECES, default 8). On the
/// H200 (io37, window 3) 1 MB in 4 pieces took 89 us against 97 in one, 614 KB in 2 pieces 79
/// against 72: below 1 MiB one copy.
constexpr std::size_t kPieceReadMin = std::size_t{1} << 20;
constexpr std::size_t kPieceBytes = std::size_t{256} << 10;

/// Where the last read_to_host's time went, in us (a benchmark's probe, bench/io_bench.cpp; per
/// thread: reads on other threads are not recorded): `dest` from the call to the caller's allocation's
/// end (the copy queued, the destination allocated and zeroed), `wait` for the GPU, `copy` the
/// host copy out (in pieces: the copies, the waits between them counted in `wait`); `path` 1 the
/// mapped read buffer, 2 the same in pieces, 3 a host-visible buffer in place, 4 Storage::download.
struct ReadTrace {
  double dest = 0, wait = 0, copy = 0;
  int path = 0;
};
/// Records every later read_to_host's phases on this thread into *t (null: none, the default).
void set_read_trace(ReadTrace* t);
void read_to_host(DeviceImpl& dev, Storage& src, std::size_t offset, std::size_t bytes, const HostDest& dest);

/// A run's host waits and the GPU's times (a benchmark's probe, bench/io_bench.cpp --trace; per
/// thread): client_wait's calls, polls after the first, blocking waits and time; the host clock at
/// the first wait (the submission: its first poll flushes) and at the last wait's return; and in
/// GL_TIMESTAMP ns, the GPU's clock at the first replayed step of a run (`start`, a timer query),
/// at the last batch end's fence (`end`, a timer query) and sampled at the last wait's return
/// (`wake`). The caller sets `want_start` before each run; the library makes the two queries at
/// their first use (left for the process's end: a probe).
struct WaitTrace {
  int waits = 0, polls = 0, blocked = 0;
  double wait_us = 0;
  std::chrono::steady_clock::time_point first_wait{}, host_wake{};
  std::int64_t gpu_start = 0, gpu_end = 0, gpu_wake = 0;
  bool want_start = false, started = false;
  GLuint queries[2] = {0, 0};
  void(GL_APIENTRYP counter)(GLuint, GLenum) = nullptr;  // the device's (timer_query.hpp), set with the queries
  void(GL_APIENTRYP get_u64)(GLuint, GLenum, GLuint64*) = nullptr;
};
/// Records every later client_wait and replay on this thread into *t (null: none, the default).
void set_wait_trace(WaitTrace* t);

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
  std::uint64_t transfers_ = 0;  // the queue's transfers() when fence_ was made (Queue::transfers_done)
};

}  // namespace gltensor::detail
