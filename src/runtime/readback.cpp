// Device-to-host copies in flight (readback.hpp).
#include "runtime/readback.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "runtime/capture.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/guard.hpp"
#include "runtime/host_copy.hpp"
#include "runtime/host_staging.hpp"
#include "runtime/settings.hpp"
#include "runtime/storage.hpp"

namespace gltensor::detail {

namespace {

using Clock = std::chrono::steady_clock;
thread_local ReadTrace* g_trace = nullptr;  // (per thread: a benchmark traces its own reads only)

double us(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); }

// The fences of a read in pieces, deleted on every path (an exception in a wait included).
struct PieceFences {
  std::vector<GLsync> f;
  ~PieceFences() {
    for (GLsync s : f)
      if (s) glDeleteSync(s);
  }
};

}  // namespace

void set_read_trace(ReadTrace* t) { g_trace = t; }

void read_to_host(DeviceImpl& dev, Storage& src, std::size_t offset, std::size_t bytes, const HostDest& dest) {
  Queue& q = dev.queue();
  const bool par = bytes >= kParallelCopyMin;
  ReadTrace* const tr = g_trace;
  Clock::time_point t0{}, t1{}, t2{};
  if (tr) t0 = Clock::now();
  if (bytes > 0 && !src.block.host && src.write_batch >= q.batch()) {
    if (const Capture* c = q.capture()) c->host_read("to_host");
    // The batch end's barrier before the copy, whether or not the queue's hazard sets still hold
    // the write (they forget it at the next dispatch barrier, which has no
    // GL_BUFFER_UPDATE_BARRIER_BIT: review15); the batch end after the copy then adds none.
    q.barrier_for_copy();
    const std::size_t pieces =
        bytes < kPieceReadMin ? 1 : std::min(static_cast<std::size_t>(settings().read_pieces), bytes / kPieceBytes);
    if (mapped_read_reserve(dev, bytes)) {
      PieceFences fences;
      std::vector<std::size_t> ends;
      if (pieces > 1) {  // each piece behind a fence of its own
        const std::size_t piece = (bytes / pieces + 255) / 256 * 256;
        fences.f.reserve(pieces);
        for (std::size_t at = 0; at < bytes; at += piece) {
          const std::size_t k = std::min(piece, bytes - at);
          mapped_read_copy(dev, src.buffer(), offset + at, at, k);
          fences.f.push_back(glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0));
          ends.push_back(at + k);
        }
      } else {
        mapped_read_copy(dev, src.buffer(), offset, 0, bytes);
      }
      q.flush(false);  // its fence follows the copy
      if (par) prime_copy_helpers();
      void* dst = dest();  // (the caller's allocation while the GPU works)
      if (tr) t1 = Clock::now();
      if (src.write_batch >= q.batch()) q.wait_fence_now("to_host");  // no batch to end
      const unsigned char* from = mapped_read_data(dev);
      if (!fences.f.empty()) {
        std::size_t at = 0;
        double waited = 0;
        for (std::size_t i = 0; i < fences.f.size(); ++i) {
          const Clock::time_point w0 = tr ? Clock::now() : Clock::time_point{};
          const GLenum r = client_wait(fences.f[i]);
          if (tr) waited += us(w0, Clock::now());
          glDeleteSync(fences.f[i]);
          fences.f[i] = nullptr;
          if (r == GL_WAIT_FAILED) throw DeviceError("gltensor::to_host: glClientWaitSync failed (context lost?)");
          parallel_copy(static_cast<unsigned char*>(dst) + at, from + at, ends[i] - at);
          at = ends[i];
        }
        q.wait_batch(src.write_batch);  // (signaled: it follows the last piece)
        if (tr) {
          t2 = Clock::now();
          *tr = ReadTrace{us(t0, t1), waited, us(t1, t2) - waited, 2};
        }
        return;
      }
      q.wait_batch(src.write_batch);
      if (tr) t2 = Clock::now();
      if (par)
        parallel_copy(dst, from, bytes);
      else
        mapped_read_end(dev, bytes, dst);
      if (tr) *tr = ReadTrace{us(t0, t1), us(t1, t2), us(t2, Clock::now()), 1};
      return;
    }
  }
  if (bytes > 0 && src.block.host) {  // host-visible: copied in place (Storage::download's wait)
    if (const Capture* c = q.capture()) c->host_read("to_host");
    if (par) prime_copy_helpers();
    void* dst = dest();
    if (tr) t1 = Clock::now();
    q.wait_batch(src.write_batch);
    if (tr) t2 = Clock::now();
    if (par)
      parallel_copy(dst, src.block.host + offset, bytes);
    else
      std::memcpy(dst, src.block.host + offset, bytes);
    if (tr) *tr = ReadTrace{us(t0, t1), us(t1, t2), us(t2, Clock::now()), 3};
    return;
  }
  void* dst = dest();
  if (tr) t1 = Clock::now();
  if (src.write_batch >= q.batch()) q.flush(false);
  src.download(offset, bytes, dst);
  q.wait_batch(src.write_batch);
  if (tr) *tr = ReadTrace{us(t0, t1), 0, us(t1, Clock::now()), 4};
}

Readback::Readback(DeviceImpl& dev, Storage& src, std::size_t offset, std::size_t bytes)
    : dev_(dev.shared_from_this()), bytes_(bytes) {
  if (const Capture* c = dev.queue().capture()) c->host_read("to_host_async");
  if (bytes > 0) {
    dev.queue().flush();  // the copy must follow every recorded dispatch, with their writes visible
    dev.queue().barrier_for_host(src.buffer());
    staging_ = Staging(dev, bytes, nullptr, true).take();
    copy_buffer(dev, src.buffer(), offset, staging_, 0, bytes);
    src.use_batch = dev.queue().batch();
  }
  transfers_ = dev.queue().transfers();
  fence_ = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
  glFlush();
}

Readback::~Readback() {
  if (!dev_ || (!staging_ && !fence_)) return;
  // Only in the device's context, which may not be current here (another thread, or the
  // application's context on a Device::open device): then at the device's next entry.
  const bool here = dev_->context_current_here();
  if (here) {
    if (fence_) glDeleteSync(fence_);
    if (staging_) delete_buffer(*dev_, staging_);
  } else {
    dev_->defer_delete(staging_, fence_);
  }
}

bool Readback::ready() {
  if (!fence_) return true;
  GLint status = 0;
  glGetSynciv(fence_, GL_SYNC_STATUS, 1, nullptr, &status);
  return status == GL_SIGNALED;
}

void Readback::get(void* dst) {
  if (fence_) {
    const GLenum r = client_wait(fence_);
    glDeleteSync(fence_);
    if (r == GL_WAIT_FAILED) throw DeviceError("gltensor::AsyncRead::get: glClientWaitSync failed (context lost?)");
    fence_ = nullptr;
    dev_->queue().transfers_done(transfers_);  // its copy and every transfer before it are done
  }
  if (bytes_) map_read(*dev_, staging_, bytes_, dst, "AsyncRead::get");
}

}  // namespace gltensor::detail
