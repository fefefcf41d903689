// Device-side error flags (internal): kernels that find bad input (an index out of range, an
// integer division by zero) cannot throw; they OR a bit into a flag word in a small buffer, and
// the host raises the error at the next read or synchronize after the kernel's batch has
// completed.
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
  /// kv_cache.comp (a KV cache appended past its max_len).
  static constexpr std::uint32_t kIndex = 1, kZeroDivision = 2, kCacheFull = 4;
  /// The flag buffer (one uint, 0 = no error), bound by kernels that check their input.
  Storage& storage(DeviceImpl& dev);
  /// Records that `op`, recorded in the current batch, may set flag bit `bit`.
  void expect(DeviceImpl& dev, const char* op, std::uint32_t bit);
  /// If a completed checking kernel set the flag, clears it and throws, naming the first pending
  /// op that may have set the bit: IndexError (kIndex, reported first), LimitError (kCacheFull),
  /// ValueError (kZeroDivision). Makes no GL call while nothing is pending.
  void check(DeviceImpl& dev);
  void free_gl() override;

 private:
  struct Pending {
    std::uint64_t batch;
    std::string op;
    std::uint32_t bit;
  };
  std::unique_ptr<Storage> flag_;
  std::vector<Pending> pending_;  // not yet checked
};

/// ErrorFlags::check if the device has the extension (nothing to do otherwise).
void check_device_errors(DeviceImpl& dev);

}  // namespace gltensor::detail
