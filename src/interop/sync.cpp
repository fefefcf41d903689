// interop: state scopes and the acquire/release hand-off (gltensor/interop.hpp).
#include <string>

#include "gltensor/interop.hpp"
#include "interop/interop_state.hpp"
#include "runtime/guard.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor::interop {

using detail::DeviceImpl;
using detail::Enter;

static_assert(kTextureReadBarrierBits ==
                  (GL_TEXTURE_FETCH_BARRIER_BIT | GL_SHADER_IMAGE_ACCESS_BARRIER_BIT | GL_FRAMEBUFFER_BARRIER_BIT),
              "interop.hpp's kTextureReadBarrierBits");
static_assert(std::is_same_v<GLname, GLuint> && std::is_same_v<GLenumValue, GLenum> &&
                  std::is_same_v<GLbits, GLbitfield> && std::is_same_v<GLsyncHandle, GLsync>,
              "interop.hpp's GL types must be the Khronos headers' types");

namespace {
DeviceImpl& device_of(const Device& dev, const char* op) {
  if (!dev.valid()) throw ValueError(std::string("gltensor::") + op + ": invalid Device handle");
  return *dev.impl();
}
}  // namespace

StateScope::StateScope(const Device& dev) : dev_(device_of(dev, "interop::StateScope").shared_from_this()) {
  enter_ = std::make_unique<Enter>(*dev_, "interop::StateScope");
}

StateScope::~StateScope() = default;

void StateScope::invalidate() { dev_->gl().invalidate(); }

void acquire(const Device& dev, GLsyncHandle fence) {
  DeviceImpl& d = device_of(dev, "interop::acquire");
  Enter guard(d, "interop::acquire");
  if (fence) glWaitSync(fence, 0, GL_TIMEOUT_IGNORED);
  d.queue().barrier_external(GL_SHADER_STORAGE_BARRIER_BIT | GL_TEXTURE_FETCH_BARRIER_BIT |
                             GL_SHADER_IMAGE_ACCESS_BARRIER_BIT);
  // Objects changed in another context are seen where they are bound again: gltensor's units are
  // emptied (a driver may skip binding the texture that is already bound) and every other
  // binding is made again.
  detail::InteropState::detach_units(d);
  d.gl().invalidate();
}

GLsyncHandle release(const Device& dev, GLbits barriers, bool fence) {
  DeviceImpl& d = device_of(dev, "interop::release");
  Enter guard(d, "interop::release");
  // One glMemoryBarrier: the application's bits, widened by the queue with those of gltensor's
  // own pending hazards (its next store into a texture it wrote needs no barrier of its own).
  // Without a fence the application uses the objects in this context, where GL orders the
  // commands: nothing else. With one, the fence follows every command recorded so far (fences
  // signal in order), and is flushed so that another context can wait on it.
  d.queue().barrier_external(barriers);
  if (!fence) return nullptr;
  GLsync f = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
  glFlush();
  return f;
}

GLsyncHandle release(const Tensor& t, GLbits barriers) {
  detail::check_defined("interop::release", t);
  // Fences signal in order: one made now follows the tensor's last writer.
  return release(t.device(), barriers, true);
}

}  // namespace gltensor::interop
