// Entry into a device for one public call (guard.hpp).
#include "runtime/guard.hpp"

#include <string>

namespace gltensor::detail {

Enter::Enter(DeviceImpl& dev, const char* op) : dev_(dev) {
  if (std::this_thread::get_id() != dev.thread_)
    throw ThreadError(std::string("gltensor::") + op +
                      ": the device is used from a thread other than the one that opened it");
  if (dev.enter_depth_++ > 0) return;
  if (dev.adopted_) {
    if (!dev.app_.is_current()) {
      --dev.enter_depth_;
      throw DeviceError(std::string("gltensor::") + op + ": the adopted " + (dev.app_.is_glx() ? "GLX" : "EGL") +
                        " context is not current on this thread");
    }
    dev.gl_.begin(dev.restore_state_, /*forget=*/true);
  } else {
    if (eglGetCurrentContext() != dev.egl_.context) {
      dev.outer_ = ContextBinding::current(/*probe_glx=*/true);
      if (dev.outer_.is_glx()) ContextBinding::release_glx();
      if (!make_current(dev.egl_)) {
        dev.outer_.make_current();
        --dev.enter_depth_;
        throw DeviceError(std::string("gltensor::") + op + ": eglMakeCurrent of the device's context failed");
      }
      dev.switched_ = !dev.outer_.empty();
    }
    dev.gl_.begin(false, false);
  }
  dev.run_deferred();
}

void Enter::leave() noexcept {
  dev_.gl_.end();
  if (dev_.switched_) {
    dev_.switched_ = false;
    dev_.outer_.make_current();
  }
}

Enter::~Enter() {
  if (--dev_.enter_depth_ > 0) return;
  leave();
}

}  // namespace gltensor::detail
