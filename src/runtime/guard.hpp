// Entry into a device for one public call (internal).
#pragma once
#include <vector>

#include "runtime/device_impl.hpp"

namespace gltensor::detail {

// The GL state an adopted context gets back: what gltensor's calls change (program, generic and
// indexed SSBO bindings, copy buffer bindings).
struct DeviceImpl::SavedState {
  GLint program = 0, ssbo = 0, copy_read = 0, copy_write = 0;
  struct Indexed {
    GLint buffer = 0;
    GLint64 start = 0, size = 0;
  };
  std::vector<Indexed> indexed;
};

/// RAII entry into the device for one public call: checks the thread, makes the context
/// current, and for adopted contexts saves the GL state gltensor changes and restores it on
/// exit. Nested entries (an op calling ops) cost nothing.
class Enter {
 public:
  Enter(DeviceImpl& dev, const char* op);
  ~Enter();
  Enter(const Enter&) = delete;
  Enter& operator=(const Enter&) = delete;

 private:
  DeviceImpl& dev_;
};

}  // namespace gltensor::detail
