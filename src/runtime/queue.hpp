// The queue: dispatch recording, hazard barriers, fence-based batches (internal).
//
// Dispatches are recorded without waiting. A glMemoryBarrier is issued only before a dispatch
// that touches a resource written since the last barrier covering it (or writes one read since
// it): buffers (SSBOs, uniform blocks) and texture levels (sampled, or written through image
// units); every `auto_flush` dispatches (and at flush()) the batch ends with a barrier and a
// fence. Reads wait on the fence of the batch that last wrote the buffer. Every barrier gltensor
// issues goes through the queue (barrier_external for the interop hand-offs, barrier_unlaunched
// for the loop-limit probe); ctest `layers` finds glMemoryBarrier nowhere else.
#pragma once
#include <algorithm>
#include <cstdint>
#include <deque>
#include <span>
#include <utility>
#include <vector>

#include "runtime/gl.hpp"

namespace gltensor::detail {

struct Capture;
struct DeviceImpl;
struct Program;
struct Storage;

/// One SSBO used by a dispatch, bound at the binding point of its position.
struct BufferUse {
  Storage* storage;
  bool write;
};

/// A buffer range a dispatch reads as a uniform block, bound at `binding`.
struct BlockUse {
  GLuint binding;
  Storage* storage;
  GLintptr offset;
  GLsizeiptr size;
};

/// A GL_TEXTURE_2D texture a dispatch samples (texture unit + sampler) or writes through an
/// image unit (level, access, format).
struct TextureUse {
  GLuint unit;
  GLuint texture;
  bool image;
  GLuint sampler;  // sampled
  GLint level;     // image
  GLenum access, format;
};

/// A buffer that a replay binds in place of a captured one (Queue::replay): a captured input read
/// from another storage of the same layout, without a copy into the captured one.
struct Rebind {
  GLuint from;
  Storage* to;
};

/// Waits until `fence` is signaled: a spin of up to 100 us, then blocking waits. Returns
/// GL_ALREADY_SIGNALED, GL_CONDITION_SATISFIED or GL_WAIT_FAILED.
GLenum client_wait(GLsync fence);

class Queue {
 public:
  /// The barrier bits that cover buffer (SSBO, uniform block) and texture hazards.
  static constexpr GLbitfield kBufferBits = GL_SHADER_STORAGE_BARRIER_BIT | GL_UNIFORM_BARRIER_BIT;
  static constexpr GLbitfield kTextureBits = GL_TEXTURE_FETCH_BARRIER_BIT | GL_SHADER_IMAGE_ACCESS_BARRIER_BIT;

  /// A dispatch's operand as the hazard rules see it: a buffer or texture name, and whether the
  /// dispatch writes it (an SSBO written, a texture bound to an image unit).
  struct Operand {
    GLuint name;
    bool write;
  };
  explicit Queue(DeviceImpl& dev) : dev_(dev) {}
  /// Records a dispatch of `p` (uniforms already set). uses[i] is bound at binding i. Only the
  /// launch layer (launch.hpp) calls this.
  void dispatch(const Program& p, std::uint32_t gx, std::uint32_t gy, std::uint32_t gz, std::span<const BufferUse> uses,
                std::span<const BlockUse> blocks = {}, std::span<const TextureUse> textures = {});
  /// A barrier another context's or the application's access needs (interop's acquire and
  /// release): glMemoryBarrier(bits | the bits of gltensor's own pending hazards), so that the
  /// one barrier also covers what gltensor's next dispatches would have needed a barrier for (a
  /// frame filter's next image store into the texture it wrote: one barrier per frame, as an
  /// application's own compute shader has); every resource it covers is clean again.
  void barrier_external(GLbitfield bits) { barrier(bits | pending_bits()); }
  /// The bits that would make every written resource clean (0 if none was written since its
  /// last barrier).
  GLbitfield pending_bits() const {
    return (written_since_barrier_.v.empty() ? 0 : kBufferBits) | (images_written_.v.empty() ? 0 : kTextureBits);
  }
  /// A barrier after GL work done outside the launch layer on objects of its own (the device's
  /// loop-limit probe: its dispatch's write, then a map): glMemoryBarrier(bits), counted.
  void barrier_unlaunched(GLbitfield bits) { barrier(bits); }
  /// A barrier before host-side access (upload, copy, map) to a buffer a shader touched.
  void barrier_for_host(GLuint buffer);
  /// Before a copy from (glCopyBufferSubData) or a map of a buffer that a dispatch recorded since
  /// the last batch end may have written, whether or not the hazard sets still hold that write
  /// (a dispatch's barrier clears them, and it has no GL_BUFFER_UPDATE_BARRIER_BIT, which the
  /// OpenGL ES 3.1 table of glMemoryBarrier names for buffer commands and mapped reads after
  /// shader writes): the batch end's barrier, GL_ALL_BARRIER_BITS, unless one was issued after
  /// the last dispatch. flush() issues none of its own while no dispatch follows it, so a
  /// read-back's copy and its batch end cost one barrier (read_to_host).
  void barrier_for_copy() {
    if (dispatches_ != full_barrier_at_) barrier(GL_ALL_BARRIER_BITS);
  }
  /// Ends the current batch with a barrier (GL_ALL_BARRIER_BITS; none where one already followed
  /// the last dispatch) and a fence and submits it (glFlush); does not wait. With no dispatch
  /// recorded it ends no batch, but submits the transfers noted since the last fence.
  /// submit = false leaves the submission to the caller's next wait (glClientWaitSync with
  /// GL_SYNC_FLUSH_COMMANDS_BIT), so that work it queues behind the batch (a read-back's copy)
  /// goes to the GPU in the same submission.
  void flush(bool submit = true);
  /// Waits until batch `id` has finished (flushing it first if it is being recorded).
  void wait_batch(std::uint64_t id);
  /// Retires submitted batches whose fences have signaled, without waiting.
  void poll();
  /// Waits for every recorded dispatch and every transfer noted since the last fence
  /// (note_transfer), with a fence of its own after them where no batch end follows them.
  void wait_all();
  /// A GL command that writes a buffer outside a dispatch (an upload's glBufferSubData, a
  /// glCopyBufferSubData: uploads through the ring or a staging buffer, a capture's input copy,
  /// a read-back's copy). A batch's fence follows it only if the batch ends after it: flush()
  /// with no dispatch recorded ends none, so that an upload with no dispatch after it would stay
  /// unsubmitted and unwaited (review38's R11). flush() submits it (glFlush) and wait_all() waits
  /// for it; a batch end's fence clears it, and so does a fence made after it that has signaled (wait_fence_now: a
  /// read-back's copy waited for), so that synchronize() after a read-back makes no round trip of its own.
  void note_transfer() {
    transfer_pending_ = true;
    ++transfers_;
  }
  /// Whether a transfer was noted since the last fence the queue made (a batch end, wait_all's) or waited for.
  bool transfer_pending() const { return transfer_pending_; }
  /// Transfers noted so far: a fence made now follows them all (fences signal in order).
  std::uint64_t transfers() const { return transfers_; }
  /// A fence made when transfers() was `n` has signaled: the note is cleared unless a transfer was noted since.
  void transfers_done(std::uint64_t n) {
    if (n == transfers_) transfer_pending_ = false;
  }
  /// A fence made now and waited for (the host's copy of a read-back after its glCopyBufferSubData); clears the
  /// transfer note (transfers_done). Throws DeviceError naming `op` where the wait fails.
  void wait_fence_now(const char* op);
  /// Forgets a deleted buffer name (names are reused by new buffers).
  void forget_buffer(GLuint buffer);
  /// Deletes the fences (device destruction, context current).
  void destroy();

  std::uint64_t batch() const { return batch_; }          ///< id of the batch being recorded
  std::uint64_t completed() const { return completed_; }  ///< every batch <= this has finished
  /// Submitted batches not known to be finished, and the newest submitted batch (0 if none).
  std::size_t pending_batches() const { return fences_.size(); }
  std::uint64_t last_submitted() const { return fences_.empty() ? completed_ : fences_.back().first; }
  std::uint64_t dispatches() const { return dispatches_; }
  std::uint64_t barriers() const { return barriers_; }
  GLbitfield last_barrier_bits() const { return last_bits_; }  ///< the bits of the last barrier (0 if none)
  void set_auto_flush(std::size_t n) { auto_flush_ = n; }

  /// The capture in progress (gltensor::Recording::capture; capture.hpp), or null: it sees every
  /// dispatch and batch end.
  Capture* capture() const { return capture_; }
  void set_capture(Capture* c) { capture_ = c; }
  /// Re-issues a capture's dispatches with their bindings, uniforms and barriers (a barrier first
  /// where they touch what earlier work left unbarriered); the hazard state and the storages'
  /// batches afterwards are as if they had been dispatched again. Each `rebinds` entry's storage
  /// is bound wherever its `from` buffer was (the caller checks that no step writes `from`).
  void replay(const Capture& c, std::span<const Rebind> rebinds = {});
  /// Replays several captures as replay() would one after another (rebinds[i] for cs[i], or
  /// none where rebinds is empty), but interleaved where they are independent (no buffer that
  /// one writes is touched by another, and no full barriers forced by Settings): each capture's
  /// steps stay in order, and dispatches of different captures share the interval between two
  /// barriers, each barrier decided by the hazards of the step it precedes (as dispatch() does)
  /// rather than taken from the capture, so that the GPU can run them side by side. Otherwise
  /// one replay() after another.
  void replay_together(std::span<const Capture* const> cs, std::span<const std::vector<Rebind>> rebinds = {});

 private:
  void barrier(GLbitfield bits);
  /// The hazard rules, one place for dispatch(), replay() and replay_together() (live operands
  /// or captured ones, each a range of Operand; uniform blocks a range of buffer names, read):
  /// the barrier bits the operands need after what was issued since the last barrier covering
  /// it (an SSBO or uniform block written since, an SSBO it writes read since; a texture written
  /// through an image unit since, one it writes through an image unit sampled since).
  template <class Ssbos, class Blocks, class Textures>
  GLbitfield hazards(const Ssbos& ssbos, const Blocks& blocks, const Textures& textures) const;
  /// Records the operands of a dispatch just issued in the hazard sets.
  template <class Ssbos, class Blocks, class Textures>
  void note(const Ssbos& ssbos, const Blocks& blocks, const Textures& textures);
  static constexpr std::size_t kRetireAfter = 16;  // submitted batches before flush() polls
  DeviceImpl& dev_;
  std::uint64_t batch_ = 1;
  std::size_t batch_dispatches_ = 0, auto_flush_ = 64;
  std::deque<std::pair<std::uint64_t, GLsync>> fences_;  // submitted batches, oldest first
  std::uint64_t completed_ = 0;
  // Buffers touched since the last barrier: a flat set (a batch ends with a barrier after at most
  // auto_flush_ dispatches, so it stays short; clearing keeps its capacity: no allocation per
  // dispatch, as a node-based set had).
  struct BufferSet {
    std::vector<GLuint> v;
    bool count(GLuint b) const { return std::find(v.begin(), v.end(), b) != v.end(); }
    void insert(GLuint b) {
      if (!count(b)) v.push_back(b);
    }
    void erase(GLuint b) { v.erase(std::remove(v.begin(), v.end(), b), v.end()); }
    void clear() { v.clear(); }
  };
  BufferSet written_since_barrier_, read_since_barrier_;
  // Texture names written through image units / sampled since the last barrier covering them.
  BufferSet images_written_, textures_read_;
  std::uint64_t dispatches_ = 0, barriers_ = 0;
  std::uint64_t full_barrier_at_ = 0;  // dispatches_ at the last GL_ALL_BARRIER_BITS barrier
  GLbitfield last_bits_ = 0;
  bool transfer_pending_ = false;  // note_transfer() since the last fence the queue made or waited for
  std::uint64_t transfers_ = 0;    // note_transfer() calls
  Capture* capture_ = nullptr;
};

}  // namespace gltensor::detail
