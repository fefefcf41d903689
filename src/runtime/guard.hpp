// Entry into a device for one public call (internal).
#pragma once
#include "runtime/device_impl.hpp"

namespace gltensor::detail {

/// RAII entry into the device for one public call. The outermost entry
///  - checks the thread;
///  - adopted context: checks that it is current; the binding cache is forgotten (the
///    application may have changed anything since) and, with AdoptOptions::restore_state, every
///    binding gltensor changes is saved when first changed and put back on exit (GlState);
///  - own context (Device::open): makes it current if another (or none) is, and on exit makes
///    the thread's previous context current again (a thread that had none keeps the device's,
///    so that consecutive calls switch nothing);
///  - deletes GL objects whose deletion was deferred (DeviceImpl::defer_delete).
/// Nested entries (an op calling ops, calls inside an interop::StateScope) cost nothing.
class Enter {
 public:
  Enter(DeviceImpl& dev, const char* op);
  ~Enter();
  Enter(const Enter&) = delete;
  Enter& operator=(const Enter&) = delete;

 private:
  void leave() noexcept;
  DeviceImpl& dev_;
};

}  // namespace gltensor::detail
