// Device-side error flags (internal): kernels that find bad input (an index out of range)
// cannot throw; they set a flag in a small buffer, and the host raises the error at the next
// read or synchronize after the kernel's batch has completed.
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
  /// The flag buffer (one uint, 0 = no error), bound by kernels that check their input.
  Storage& storage(DeviceImpl& dev);
  /// Records that `op`, recorded in the current batch, may set the flag.
  void expect(DeviceImpl& dev, const char* op);
  /// Throws IndexError naming the op if a completed checking kernel set the flag (then clears
  /// it). Makes no GL call while nothing is pending.
  void check(DeviceImpl& dev);
  void free_gl() override;

 private:
  std::unique_ptr<Storage> flag_;
  std::vector<std::pair<std::uint64_t, std::string>> pending_;  // (batch, op) not yet checked
};

/// ErrorFlags::check if the device has the extension (nothing to do otherwise).
void check_device_errors(DeviceImpl& dev);

}  // namespace gltensor::detail
