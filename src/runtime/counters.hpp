// Workgroup arrival counters (internal): a device-owned buffer of zeroed uint words for kernels
// whose workgroups count their arrivals with atomicAdd so that the last one to arrive finishes
// the work of a group of them in the same dispatch (attention.comp's COMBINE: the key chunks'
// partial results merged by the chunks' last workgroup, no combine dispatch). A kernel that
// counts must leave every word it used at zero again (the last workgroup resets it), so that
// the next dispatch, a replay's included, finds zeros: the buffer is zeroed only when it is made.
// Launches bind it as written (Launch::bind(storage, true)): the Queue then orders two counting
// dispatches, which share the words.
#pragma once
#include <cstdint>
#include <memory>

#include "runtime/device_impl.hpp"
#include "runtime/storage.hpp"

namespace gltensor::detail {

class WorkgroupCounters : public DeviceExtension {
 public:
  /// The words a dispatch may count in (slots 0 .. kWords - 1); more: the caller plans without.
  static constexpr std::uint32_t kWords = 16384;
  /// The buffer of kWords zeroed words, made on first use (freed with the device).
  Storage& storage(DeviceImpl& dev);
  void free_gl() override;

 private:
  std::unique_ptr<Storage> buf_;
};

}  // namespace gltensor::detail
