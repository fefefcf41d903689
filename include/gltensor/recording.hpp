// Recording: capture the dispatches of a sequence of ops once, replay them many times.
//
// After CUDA graphs' stream capture and replay (cudaStreamBeginCapture / cudaGraphLaunch;
// PyTorch's torch.cuda.graph and CUDAGraph::replay). Recording::capture runs `work` once, as it
// would run anyway, and records every compute dispatch it issues on the device: the program, the
// grid, the SSBO, uniform-block and texture bindings, the uniform values set and the barriers
// the queue decided. replay() issues exactly those GL calls again: no planning, no allocation, no
// shader headers, no shape checks. The per-replay CPU cost is the GL calls of the dispatches and
// does not depend on what the ops did to plan them.
//
//   Tensor x = gltensor::zeros({1, 96}, dev);         // an input: allocated before the capture
//   Tensor y;                                         // an output: made inside it
//   auto rec = gltensor::Recording::capture(dev, [&] { y = gltensor::relu(gltensor::matmul(x, w)); });
//   for (...) {
//     x.copy_(next);       // new input contents, in the captured tensor (or any op writing it)
//     rec.replay();        // y holds the result for these contents
//   }
//
// Rules (as CUDA graphs'):
// - Inputs are the tensors the work reads that existed before the capture; the caller changes
//   their contents between replays (copy_, an op's out= form, an upload with copy_from_host).
//   Rebinding a Tensor variable to a new tensor does not change what a replay reads. Values that
//   change per replay (a position, a length) must be read by kernels from a tensor, not passed
//   as a host scalar or host data (a host scalar becomes a uniform value fixed at capture; data
//   uploaded inside it, e.g. from_host, the contents its buffer keeps for the replays).
// - Outputs are the tensors made inside the capture; each replay overwrites them.
// - The recording keeps every buffer a captured dispatch touched alive (inputs the caller has
//   released included). Buffers of tensors that die during the capture are reused by later
//   allocations of the capture as without one (a replay repeats the same order of writes and
//   reads), so its footprint is about one run's peak, not the sum of its intermediates.
// - Things a replay cannot repeat are refused with CaptureError while capturing: reading a tensor
//   back to the host (to_host, to_host_async, item; every op whose output shape depends on data
//   reads back), writing host data into a buffer that a captured dispatch already used, a
//   capture inside a capture, a replay inside a capture, and a tensor allocated inside the
//   capture, used by none of its dispatches and alive after it whose buffer the pool had given
//   to one of the capture's dead intermediates (an allocation that escapes: the replays would
//   overwrite it). The device stays usable after the error; the partial recording is dropped.
// - Work that tunes itself on first use (Tuner) should run once before the capture (warm-up),
//   as with CUDA graphs; the capture records whatever the work dispatched.
// - Device-side error checks of captured ops (an index out of range) are checked after each
//   replay as after the op. Replays are not attributed per op by the profiler.
// - A Recording holds its device; it is replayed on the device's thread (ThreadError otherwise).
//   Textures a captured interop kernel used must outlive the recording (they are the
//   application's).
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <utility>

#include "gltensor/device.hpp"

namespace gltensor {

namespace detail {
struct Capture;
struct RecordingAccess;
}  // namespace detail

class Recording {
 public:
  /// An empty recording (replay() does nothing).
  Recording() = default;
  /// Runs `work` on `dev` and records its dispatches. Throws CaptureError (see above), and
  /// whatever `work` throws (the capture is dropped).
  static Recording capture(const Device& dev, const std::function<void()>& work);
  /// Issues the recorded dispatches again (after whatever the device already has recorded).
  void replay() const;
  /// Replays each of `recordings` (all of one device; empty ones are skipped) with the result of
  /// replaying them one after another in that order, but interleaved where they are
  /// independent: each one's dispatches stay in order, and dispatches of different recordings
  /// share the intervals between memory barriers, so that the GPU runs them side by side (two
  /// batches of a model's inputs at different shapes). Independent: no buffer that one of them
  /// writes is read or written by another (weights they all only read may be shared); otherwise,
  /// or with GLTENSOR_FULL_BARRIERS, they replay one after another. The same recording twice is
  /// not independent. Throws ValueError for a null pointer among them or recordings of different
  /// devices (before any is replayed), LimitError where a recording's host steps refuse (KVCache's
  /// max_len: nothing replayed, every host step undone), CaptureError
  /// inside a capture, ThreadError off the device's thread.
  static void replay_together(std::span<const Recording* const> recordings);

  bool empty() const { return dispatches() == 0; }
  /// Dispatches, and barriers (batch ends included) recorded.
  std::size_t dispatches() const;
  std::size_t barriers() const;
  /// Buffers the recording keeps alive, and their bytes.
  std::size_t buffers() const;
  std::size_t bytes() const;

 private:
  friend struct detail::RecordingAccess;  // the model runtime's rebound replays (capture.hpp)
  explicit Recording(std::shared_ptr<detail::Capture> c) : c_(std::move(c)) {}
  std::shared_ptr<detail::Capture> c_;
};

}  // namespace gltensor
