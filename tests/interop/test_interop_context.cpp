// Graphics apps: contexts and lifetimes. Device::open, calls and destruction keep the caller's
// context current; an AsyncRead dropped where the device's context is not current deletes
// nothing in the current context and nothing leaks; a device dropped while its context is not
// current frees its pool (or says why it cannot); the per-call glGet cost of each state policy;
// with restore_state = false the application may change any binding between calls.
#include <thread>

#include "gltensor/interop.hpp"
#include "interop/gl_app.hpp"
#include "runtime/device_impl.hpp"
#include "test_util.hpp"

using namespace gltensor;
using glt_app::AppContext;

namespace {

std::vector<float> ramp(int n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(i);
  return v;
}

TEST(Contexts, ListOpenCallsAndDestructionKeepTheCallersContext) {
  AppContext app(false);
  auto list = Device::list();
  EXPECT_FALSE(list.empty());
  EXPECT_TRUE(app.current()) << "Device::list";
  {
    Device dev = Device::open();
    EXPECT_TRUE(app.current()) << "Device::open";
    Tensor a = Tensor::from_host(dev, ramp(100), {100});
    EXPECT_TRUE(app.current()) << "from_host";
    EXPECT_EQ((a + a).to_vector()[99], 198.0f);
    EXPECT_TRUE(app.current()) << "add, to_vector";
    interop::StateScope scope(dev);  // one switch for the scope
    EXPECT_FALSE(app.current());
    EXPECT_EQ(sum(a).item(), 4950.0f);
  }
  EXPECT_TRUE(app.current()) << "scope end, destruction";
  EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR));
}

TEST(Contexts, WithoutACallersContextTheDevicesStaysCurrent) {
  std::thread([] {
    Device dev = Device::open();
    EXPECT_EQ(eglGetCurrentContext(), dev.impl()->egl().context);  // consecutive calls switch nothing
    EXPECT_EQ(sum(ones(dev, {10})).item(), 10.0f);
    EXPECT_EQ(eglGetCurrentContext(), dev.impl()->egl().context);
    dev = Device();
    EXPECT_EQ(eglGetCurrentContext(), EGL_NO_CONTEXT);
  }).join();
}

TEST(Contexts, AsyncReadDroppedInAnotherContextDeletesNothingThereAndLater) {
  Device dev = Device::open();
  Tensor a = Tensor::from_host(dev, ramp(64), {64});
  std::optional<AsyncRead> r(a.to_host_async());
  {
    AppContext app(false);  // the application's context is current now, with buffers 1..n
    std::vector<GLuint> bufs(16);
    glGenBuffers(16, bufs.data());
    for (GLuint b : bufs) glBindBuffer(GL_COPY_WRITE_BUFFER, b);
    r.reset();  // not the device's context: deferred
    for (GLuint b : bufs) EXPECT_TRUE(glIsBuffer(b)) << "buffer " << b << " of the application was deleted";
    EXPECT_EQ(dev.impl()->deferred_count(), 2u);  // its staging buffer and fence
    EXPECT_EQ(sum(a).item(), 2016.0f);            // the next call deletes it, in its own context
    EXPECT_EQ(dev.impl()->deferred_count(), 0u);
    for (GLuint b : bufs) EXPECT_TRUE(glIsBuffer(b));
    EXPECT_TRUE(app.current());
    glDeleteBuffers(16, bufs.data());
  }
  // Dropped on another thread: deferred too, deleted at the next call.
  std::optional<AsyncRead> r2(a.to_host_async());
  std::thread([&] { r2.reset(); }).join();
  EXPECT_GE(dev.impl()->deferred_count(), 1u);
  dev.synchronize();
  EXPECT_EQ(dev.impl()->deferred_count(), 0u);
}

TEST(Contexts, AdoptedDeviceDroppedWhileItsContextIsNotCurrentFreesItsPool) {
  AppContext app(false);
  std::vector<GLuint> names;
  {
    Device dev = Device::adopt_current();
    {
      Tensor a = ones(dev, {1 << 20}), b = a * 2.0;
      names = {interop::buffer_of(a).buffer, interop::buffer_of(b).buffer};
      dev.synchronize();
    }
    EXPECT_GT(dev.pool_stats().bytes_allocated, 4u << 20);
    for (GLuint n : names) EXPECT_TRUE(glIsBuffer(n));
    eglMakeCurrent(app.egl.display, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    // dropped here, with no context current: gltensor makes the adopted one current to free
  }
  EXPECT_EQ(eglGetCurrentContext(), EGL_NO_CONTEXT) << "the thread's context (none) was not restored";
  app.make_current();
  for (GLuint n : names) EXPECT_FALSE(glIsBuffer(n)) << "pool buffer " << n << " leaked";
}

TEST(Contexts, DeviceDroppedWhereItsContextCannotBeMadeCurrentSaysWhy) {
  // The device's context stays current on its thread (no other context there); dropping the
  // last handle on another thread cannot make it current: a warning names what is left.
  std::vector<std::string> warnings;
  Device dev = Device::open();
  dev.set_logger([&](LogLevel l, const std::string& m) {
    if (l == LogLevel::warning) warnings.push_back(m);
  });
  { Tensor a = ones(dev, {1000}); }
  std::thread([d = std::move(dev)]() mutable { d = Device(); }).join();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("could not be made current"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("buffers"), std::string::npos) << warnings[0];
}

TEST(Contexts, DeviceDroppedOnAnotherThreadFreesWhereItCan) {
  // The caller's context was current on the device's thread, so the device's context was
  // released after each call: another thread can make it current and free the pool.
  AppContext app(false);
  std::vector<std::string> warnings;
  Device dev = Device::open();
  dev.set_logger([&](LogLevel l, const std::string& m) {
    if (l == LogLevel::warning) warnings.push_back(m);
  });
  EXPECT_EQ(sum(ones(dev, {1000})).item(), 1000.0f);
  EXPECT_TRUE(app.current());
  std::thread([d = std::move(dev)]() mutable {
    d = Device();
    EXPECT_EQ(eglGetCurrentContext(), EGL_NO_CONTEXT);
  }).join();
  EXPECT_TRUE(warnings.empty()) << warnings[0];
  EXPECT_TRUE(app.current());
}

TEST(Contexts, GlGetsPerCallByPolicy) {
  AppContext app(false);
  Tensor x;
  {
    Device dev = Device::adopt_current();
    auto& gl = dev.impl()->gl();
    Tensor a = ones(dev, {256}), b = ones(dev, {256});
    (void)(a + b);  // programs compiled
    const auto reads0 = gl.saved_reads();
    for (int i = 0; i < 10; ++i) (void)(a + b);
    const auto per_call = (gl.saved_reads() - reads0) / 10;
    EXPECT_GT(per_call, 0u);
    EXPECT_LE(per_call, 6u) << "program, generic SSBO, 3 indexed SSBOs (+ ranges only where bound)";
    const auto reads1 = gl.saved_reads();
    {
      interop::StateScope scope(dev);
      for (int i = 0; i < 10; ++i) (void)(a + b);
    }
    EXPECT_LE(gl.saved_reads() - reads1, per_call) << "a scope reads each binding once";
  }
  {
    AdoptOptions o;
    o.restore_state = false;
    Device dev = Device::adopt_current(o);
    Tensor a = ones(dev, {256});
    for (int i = 0; i < 10; ++i) (void)(a + a).to_vector();
    EXPECT_EQ(dev.impl()->gl().saved_reads(), 0u);
  }
}

TEST(Contexts, WithoutRestoreTheApplicationMayChangeBindingsBetweenCalls) {
  AppContext app(false);
  AdoptOptions o;
  o.restore_state = false;
  Device dev = Device::adopt_current(o);
  glt_app::AppState other(app);  // binds its objects everywhere
  Tensor a = Tensor::from_host(dev, ramp(300), {300}), b = ones(dev, {300});
  for (int i = 0; i < 3; ++i) {
    Tensor c = a * b + 1.0;
    glt_app::AppState again(app);  // the application rebinds everything between calls
    EXPECT_EQ(c.to_vector()[299], 300.0f);
    EXPECT_EQ(sum(a * b).item(), 44850.0f);
  }
  EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR));
}

TEST(Contexts, AdoptedContextNotCurrentIsDeviceError) {
  AppContext app(false);
  Device dev = Device::adopt_current();
  Tensor a = ones(dev, {4});
  AppContext other(false);  // current now
  EXPECT_THROW((void)(a + a), DeviceError);
  app.make_current();
  EXPECT_EQ((a + a).to_vector()[0], 2.0f);
}

}  // namespace
