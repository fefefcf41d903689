// Entry into a device for one public call (guard.hpp).
#include "runtime/guard.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/device_impl.hpp"
#include "runtime/egl_platform.hpp"

namespace gltensor::detail {

Enter::Enter(DeviceImpl& dev, const char* op) : dev_(dev) {
  if (std::this_thread::get_id() != dev.thread)
    throw ThreadError(std::string("gltensor::") + op +
                      ": the device is used from a thread other than the one that opened it");
  if (dev.enter_depth++ > 0) return;
  if (dev.adopted) {
    if (eglGetCurrentContext() != dev.egl.context) {
      --dev.enter_depth;
      throw DeviceError(std::string("gltensor::") + op + ": the adopted EGL context is not current on this thread");
    }
    auto s = std::make_unique<DeviceImpl::SavedState>();
    glGetIntegerv(GL_CURRENT_PROGRAM, &s->program);
    glGetIntegerv(GL_SHADER_STORAGE_BUFFER_BINDING, &s->ssbo);
    glGetIntegerv(GL_COPY_READ_BUFFER_BINDING, &s->copy_read);
    glGetIntegerv(GL_COPY_WRITE_BUFFER_BINDING, &s->copy_write);
    const int n = std::min(dev.caps.max_ssbo_bindings > 0 ? dev.caps.max_ssbo_bindings : 8, 16);
    s->indexed.resize(n);
    for (int i = 0; i < n; ++i) {
      glGetIntegeri_v(GL_SHADER_STORAGE_BUFFER_BINDING, i, &s->indexed[i].buffer);
      glGetInteger64i_v(GL_SHADER_STORAGE_BUFFER_START, i, &s->indexed[i].start);
      glGetInteger64i_v(GL_SHADER_STORAGE_BUFFER_SIZE, i, &s->indexed[i].size);
    }
    dev.saved = std::move(s);
    dev.queue.invalidate_bindings();  // the application may have changed them
  } else if (eglGetCurrentContext() != dev.egl.context) {
    if (!make_current(dev.egl)) {
      --dev.enter_depth;
      throw DeviceError(std::string("gltensor::") + op + ": eglMakeCurrent failed");
    }
  }
}

Enter::~Enter() {
  if (--dev_.enter_depth > 0 || !dev_.saved) return;
  auto& s = *dev_.saved;
  glUseProgram(s.program);
  for (std::size_t i = 0; i < s.indexed.size(); ++i) {
    const auto& b = s.indexed[i];
    if (b.buffer != 0 && b.size > 0)
      glBindBufferRange(GL_SHADER_STORAGE_BUFFER, i, b.buffer, b.start, b.size);
    else
      glBindBufferBase(GL_SHADER_STORAGE_BUFFER, i, b.buffer);
  }
  glBindBuffer(GL_SHADER_STORAGE_BUFFER, s.ssbo);
  glBindBuffer(GL_COPY_READ_BUFFER, s.copy_read);
  glBindBuffer(GL_COPY_WRITE_BUFFER, s.copy_write);
  dev_.saved.reset();
}

}  // namespace gltensor::detail
