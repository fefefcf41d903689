// A captured sequence of dispatches (internal; the public face is gltensor::Recording).
//
// While a capture is active on a device (Queue::capture()), the queue hands it every dispatch it
// issues: the program, the grid, the SSBO / uniform-block / texture bindings, the program's
// uniform values at that moment and the barrier bits the queue decided before it, and every
// batch end (flush: a full barrier and a fence). Host access that a replay could not repeat is
// refused with a CaptureError: reading a buffer back (to_host, an asynchronous read), and
// writing from the host into a buffer that a captured dispatch already touched (an upload into
// a fresh buffer is a constant of the recording and allowed; the pool gives uploads no buffer
// the capture touched). The capture keeps such a storage alive from the upload on, so that no
// later allocation of the capture reuses its buffer: the replays read the uploaded bytes (an op's
// host-built index table), or what captured dispatches left there (a state that they advance,
// nn::Dropout's device offset). Queue::replay re-issues the steps.
//
// Buffers: the pool reuses the buffer of a storage that dies during the capture for later
// allocations of the capture, as it would without one (a replay repeats the same order of
// writes and reads, so the reuse holds). At the end the capture keeps the storages still
// alive (inputs, outputs, weights) and takes the buffers of those that died out of the pool's
// free lists, so that nothing else gets them while the recording exists. A buffer that a
// storage allocated during the capture, untouched by it and still alive, shares with a dead
// captured one cannot be replayed over: CaptureError (an allocation that escapes).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "gltensor/recording.hpp"
#include "runtime/gl.hpp"
#include "runtime/pool.hpp"
#include "runtime/program_cache.hpp"
#include "runtime/queue.hpp"

namespace gltensor::detail {

struct DeviceImpl;
struct Storage;

struct Capture {
  /// One dispatch, or a batch end (flush). Bindings are ranges of the capture's flat arrays.
  struct Step {
    const Program* program = nullptr;  // null: a batch end
    std::uint32_t groups[3] = {0, 0, 0};
    GLbitfield barrier = 0;  // the barrier the queue issued before the dispatch
    std::uint32_t ssbo_begin = 0, ssbo_end = 0;
    std::uint32_t block_begin = 0, block_end = 0;
    std::uint32_t texture_begin = 0, texture_end = 0;
    std::uint32_t uniform_begin = 0, uniform_end = 0;
    // Every uniform value the program held at this dispatch (all_uniforms): an interleaved
    // replay (Queue::replay_together) sets them all, since another recording's dispatches of
    // the same program may have changed them in between.
    std::uint32_t all_begin = 0, all_end = 0;
  };
  struct Ssbo {
    GLuint buffer;
    bool write;
  };
  struct Block {
    GLuint binding, buffer;
    GLintptr offset;
    GLsizeiptr size;
  };
  struct Uniform {
    GLint location;
    UniformValue value;
  };
  /// A storage a captured dispatch used, and whether one writes it. While capturing only a
  /// weak reference; finish() keeps those still alive (storage, raw) and moves the buffers of
  /// the others into `owned`.
  struct Held {
    std::weak_ptr<Storage> weak;
    std::shared_ptr<Storage> storage;
    Storage* raw = nullptr;  // null once dead; a device-owned buffer (error flags) has no weak
    GLuint buffer = 0;
    bool device_owned = false;
    bool written = false;
  };
  /// A device-side error check made by a captured op (ErrorFlags::expect), made again per replay.
  struct Expect {
    std::string op;
    std::uint32_t bit;
  };
  /// Host-side work of a captured op that its replays repeat (KVCache's count of the longest
  /// sequence: its max_len check and its advance): `run` before each replay's dispatches, in
  /// capture order. A `run` that throws stops the replay before any dispatch; the steps run
  /// before it are undone (`undo`, where set, in reverse order), so the host state is as before.
  struct HostStep {
    std::function<void()> run, undo;
  };

  explicit Capture(std::shared_ptr<DeviceImpl> d) : dev(std::move(d)) {}
  /// Gives the buffers it took back to the pool (no GL call).
  ~Capture();
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;

  // ---- called by the queue and the host transfer paths while capturing ----
  void dispatch(GLbitfield barrier, const Program& p, std::uint32_t gx, std::uint32_t gy, std::uint32_t gz,
                std::span<const BufferUse> uses, std::span<const BlockUse> blocks,
                std::span<const TextureUse> textures);
  void flush();
  /// Throws CaptureError: `op` reads a buffer back to the host.
  [[noreturn]] void host_read(const char* op) const;
  /// Throws CaptureError if a captured dispatch touched `s`'s buffer (the host writes it); else
  /// keeps `s` alive from now on (see above).
  void host_write(Storage& s, const char* op);
  /// Whether a captured dispatch used `buffer` (the pool keeps it from uploads and trim()).
  bool touched(GLuint buffer) const { return touched_.count(buffer) != 0; }
  void expect(const char* op, std::uint32_t bit) { expects.push_back({op, bit}); }
  /// Storages host_write keeps alive (each once, however many uploads it had).
  std::size_t uploads() const { return uploaded_.size(); }
  /// Ends the capture: the buffers kept (see above; throws CaptureError for an escaping
  /// allocation), uniforms reduced to what changes between a program's dispatches, and the
  /// hazard state the queue has after the last step.
  void finish();
  /// After a replay: the batch that used its buffers (pool and fence bookkeeping).
  void replayed(std::uint64_t batch) const;
  /// Whether a step writes `buffer`.
  bool writes(GLuint buffer) const;
  /// After finish(): moves the held storage `s` into the buffer of `to` (at least s's size, e.g.
  /// a host-visible block of Pool::acquire_host): its bytes are copied there, every step binds
  /// `to` where it bound s's buffer (also where a storage that died during the capture had that
  /// buffer before s), and s's old block goes back to the pool. False (nothing done) if s is not
  /// held by the capture.
  bool move_storage(Storage& s, Pool::Block to);

  std::shared_ptr<DeviceImpl> dev;
  std::vector<Step> steps;
  std::vector<Ssbo> ssbos;
  std::vector<Block> blocks;
  std::vector<TextureUse> textures;
  std::vector<Uniform> uniforms, all_uniforms;
  std::vector<Held> held;
  std::vector<Pool::Block> owned;  // buffers of storages that died during the capture
  std::vector<Expect> expects;
  std::vector<HostStep> host_steps;
  std::size_t dispatches = 0, barriers = 0;
  /// Buffers (with write flags) and textures (with image-store flags) any step touches: the
  /// hazards of a replay with the work before it.
  std::vector<std::pair<GLuint, bool>> buffers, all_textures;
  /// What the steps after the last barrier covering them touch: the queue's hazard sets after a
  /// replay.
  std::vector<GLuint> tail_written, tail_read, tail_images, tail_sampled;

 private:
  void hold(Storage& s, bool write);
  void keep_buffers();
  std::unordered_map<const Storage*, std::size_t> held_index_;
  /// Uploaded into during the capture (host_write), once each however many uploads.
  std::unordered_map<const Storage*, std::shared_ptr<Storage>> uploaded_;
  std::unordered_set<GLuint> touched_;
};

/// The capture behind a Recording, and its replay with rebound inputs (the model runtime's
/// replays: an input read where the caller's tensor lies, without a copy).
struct RecordingAccess {
  static Capture* capture(const Recording& r) { return r.c_.get(); }
  /// Recording::replay, binding each rebind's storage in place of its `from` buffer.
  static void replay(const Recording& r, std::span<const Rebind> rebinds);
  /// Recording::replay_together, rebinds[i] for rs[i] (empty: none for any).
  static void replay_together(std::span<const Recording* const> rs, std::span<const std::vector<Rebind>> rebinds);
};

}  // namespace gltensor::detail
