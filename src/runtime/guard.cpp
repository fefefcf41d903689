// Entry into a device for one public call (guard.hpp).
#include "runtime/guard.hpp"

#include <string>

namespace gltensor::detail {

Enter::Enter(DeviceImpl& dev, const char* op) : dev_(dev) {
  if (std::this_thread::get_id() != dev.thread)
    throw ThreadError(std::string("gltensor::") + op +
                      ": the device is used from a thread other than the one that opened it");
  if (dev.enter_depth++ > 0) return;
  if (dev.adopted) {
    if (!dev.app.is_current()) {
      --dev.enter_depth;
      throw DeviceError(std::string("gltensor::") + op + ": the adopted " + (dev.app.is_glx() ? "GLX" : "EGL") +
                        " context is not current on this thread");
    }
    dev.gl.begin(dev.restore_state, /*forget=*/true);
  } else {
    if (eglGetCurrentContext() != dev.egl.context) {
      dev.outer = ContextBinding::current(/*probe_glx=*/true);
      if (dev.outer.is_glx()) ContextBinding::release_glx();
      if (!make_current(dev.egl)) {
        dev.outer.make_current();
        --dev.enter_depth;
        throw DeviceError(std::string("gltensor::") + op + ": eglMakeCurrent of the device's context failed");
      }
      dev.switched = !dev.outer.empty();
    }
    dev.gl.begin(false, false);
  }
  dev.run_deferred();
}

void Enter::leave() noexcept {
  dev_.gl.end();
  if (dev_.switched) {
    dev_.switched = false;
    dev_.outer.make_current();
  }
}

Enter::~Enter() {
  if (--dev_.enter_depth > 0) return;
  leave();
}

}  // namespace gltensor::detail
