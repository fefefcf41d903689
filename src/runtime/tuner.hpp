// Kernel variants chosen by measurement on first use, per device, cached on disk.
#pragma once
#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include "runtime/device_impl.hpp"

namespace gltensor::detail {

/// Picks among variants of an op whose speed depends on the device in ways its capabilities do
/// not tell (e.g. how many workgroups fill its waves). On the first use of a key, each variant
/// runs once (compiling its program) and then 3 times between glFinish calls, timed on the host;
/// the fastest is kept for the device's lifetime and appended to
/// <cache dir>/tuning-<device hash>.txt (GLTENSOR_CACHE_DIR, as the program binaries), which
/// later processes read. GLTENSOR_TUNE=0 turns measuring off (variant 0), =1 turns it on for
/// software rasterizers too (off by default there: their speed is not the GPU's).
class Tuner : public DeviceExtension {
 public:
  /// Runs the op (`op(v)` performs it with variant v; every variant computes the same result)
  /// with the chosen variant for `key` among `n`, measuring first where the key is new. The
  /// chosen variant runs last, so the op's output is always the chosen variant's.
  void run(DeviceImpl& dev, const std::string& key, int n, const std::function<void(int)>& op);
  /// Keys measured by this device so far (not read from disk).
  std::size_t measured() const { return measured_; }

 private:
  void load(DeviceImpl& dev);
  std::map<std::string, int> choices_;
  std::filesystem::path file_;
  bool loaded_ = false;
  std::size_t measured_ = 0;
};

}  // namespace gltensor::detail
