// Device-side error flags (internal): kernels that find bad input (an index out of range, an
// integer division by zero) cannot throw; they OR a bit into a flag word in a small buffer, and
// the host raises the error at the next read or synchronize after the kernel's batch has
// completed. With GLTENSOR_CHECK_LOOPS the buffer also holds one word per launch (a slot) that
// the launch's invocations raise to their loop count where it passes the declared
// loop_iterations (LOOP() in glsl/common/common.glsl), checked the same way.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/device_impl.hpp"
#include "runtime/storage.hpp"

namespace gltensor::detail {

class ErrorFlags : public DeviceExtension {
 public:
  /// Flag bits (the kernels write these numbers): index.comp, binary.comp (ERR_FLAG),
  /// kv_cache.comp (a KV cache appended past its max_len), rnn_seq_regs.comp's GRID form (its
  /// workgroups waited for each other past the poll's bound: they did not all run at once).
  static constexpr std::uint32_t kIndex = 1, kZeroDivision = 2, kCacheFull = 4, kStall = 8;
  /// Loop-check slots after the flag word (GLTENSOR_CHECK_LOOPS): launches take them in turn;
  /// when they run out, the device waits and checks them all before reusing them.
  static constexpr std::uint32_t kLoopSlots = 4095;
  /// The binding of the loop-check buffer (CHECK_LOOPS_BINDING): the last of the 16 operand
  /// bindings a launch has, or the device's last where it has fewer.
  static std::uint32_t loop_binding(const Capabilities& caps);
  /// The flag buffer (one uint, 0 = no error; then kLoopSlots words where the device checks
  /// loops), bound by kernels that check their input.
  Storage& storage(DeviceImpl& dev);
  /// Records that `op`, recorded in the current batch, may set flag bit `bit`.
  void expect(DeviceImpl& dev, const char* op, std::uint32_t bit);
  /// The loop-check slot of a dispatch of `kernel` by `op` that declared `declared` iterations,
  /// recorded in the current batch (GLTENSOR_CHECK_LOOPS; launch.cpp).
  std::uint32_t loop_slot(DeviceImpl& dev, const char* op, const std::string& kernel, std::uint64_t declared);
  /// If a completed checking kernel set the flag, clears it and throws, naming the first pending
  /// op that may have set the bit: IndexError (kIndex, reported first), LimitError (kCacheFull),
  /// LimitError (kStall), ValueError (kZeroDivision); then, if a completed launch ran more loop iterations than it
  /// declared, LimitError naming its op, kernel and both counts. Makes no GL call while nothing
  /// is pending.
  void check(DeviceImpl& dev);
  void free_gl() override;

 private:
  struct Pending {
    std::uint64_t batch;
    std::string op;
    std::uint32_t bit;
  };
  struct PendingLoop {
    std::uint64_t batch;
    std::uint32_t slot;
    std::string op, kernel;
    std::uint64_t declared;
  };
  void check_loops(DeviceImpl& dev, const std::vector<std::uint32_t>& words);
  /// Reads `n` words from the flag buffer (the completed batches' writes).
  void read_words(DeviceImpl& dev, std::uint32_t* dst, std::size_t n);
  /// Writes `n` words at word `first` of the flag buffer (commands issued later see them).
  void write_words(DeviceImpl& dev, std::size_t first, const std::uint32_t* src, std::size_t n);
  std::unique_ptr<Storage> flag_;
  // The flag buffer's persistent, coherent mapping (host_staging.hpp), or null where the device
  // has none: then the buffer is mapped per check and written with glBufferSubData.
  std::uint32_t* mapped_ = nullptr;
  std::vector<Pending> pending_;  // not yet checked
  std::vector<PendingLoop> loops_;
  std::uint32_t next_slot_ = 1;
};

/// ErrorFlags::check if the device has the extension (nothing to do otherwise).
void check_device_errors(DeviceImpl& dev);

}  // namespace gltensor::detail
