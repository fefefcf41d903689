// Device: list, open (index, name, env), capabilities, thread checks, adopt_current.
#include <thread>

#include "runtime/device_impl.hpp"
#include "runtime/egl_platform.hpp"
#include "test_util.hpp"

using namespace glt_test;
using namespace gltensor;

TEST(Device, ListsAtLeastOneAdapter) {
  auto list = Device::list();
  ASSERT_FALSE(list.empty());
  for (std::size_t i = 0; i < list.size(); ++i) {
    EXPECT_EQ(list[i].index, static_cast<int>(i));
    EXPECT_FALSE(list[i].renderer.empty());
    EXPECT_NE(list[i].version.find("OpenGL ES"), std::string::npos);
  }
}

TEST(Device, CapabilitiesAreRead) {
  const auto& c = device().caps();
  EXPECT_TRUE(c.gl_major > 3 || (c.gl_major == 3 && c.gl_minor >= 1));
  EXPECT_GE(c.max_ssbo_block_size, 1 << 24);  // GLES 3.1 minimum is 2^27; llvmpipe gives 128 MiB
  EXPECT_GE(c.max_ssbo_bindings, 4);
  EXPECT_GE(c.max_workgroup_count[0], 65535);
  EXPECT_GE(c.max_workgroup_invocations, 128);
  EXPECT_GE(c.max_shared_memory, 16384);
  EXPECT_FALSE(c.extensions.empty());
  EXPECT_EQ(c.subgroup, c.has_extension("GL_KHR_shader_subgroup"));
}

TEST(Device, OpenByIndexAndByName) {
  auto list = Device::list();
  OpenOptions o;
  o.index = 0;
  Device d = Device::open(o);
  EXPECT_EQ(d.adapter().renderer, list[0].renderer);
  OpenOptions n;
  n.name = list[0].renderer.substr(0, 4);
  EXPECT_NO_THROW(Device::open(n));
}

TEST(Device, BadSelectionThrowsDeviceError) {
  OpenOptions o;
  o.index = 99;
  EXPECT_THROW(Device::open(o), DeviceError);
  OpenOptions n;
  n.name = "no-such-renderer-xyz";
  try {
    Device::open(n);
    FAIL() << "expected DeviceError";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-renderer-xyz"), std::string::npos) << e.what();
  }
}

// GLTENSOR_DEVICE is read once into the settings (Settings::from_env), which Device::open uses.
TEST(Device, EnvironmentSelectsDevice) {
  ::setenv("GLTENSOR_DEVICE", "no-such-renderer-xyz", 1);
  EXPECT_EQ(gltensor::detail::Settings::from_env().device, "no-such-renderer-xyz");
  ::unsetenv("GLTENSOR_DEVICE");
  ScopedSettings settings;
  settings->device = "no-such-renderer-xyz";
  EXPECT_THROW(Device::open(), DeviceError);
  settings->device = "0";
  EXPECT_NO_THROW(Device::open());
}

TEST(Device, UseFromAnotherThreadIsThreadError) {
  Device dev = Device::open();
  Tensor t = ones(dev, {4});
  bool threw_thread = false, threw_thread2 = false;
  std::thread th([&] {
    try {
      add(t, t);
    } catch (const ThreadError&) {
      threw_thread = true;
    }
    try {
      dev.synchronize();
    } catch (const ThreadError&) {
      threw_thread2 = true;
    }
  });
  th.join();
  EXPECT_TRUE(threw_thread);
  EXPECT_TRUE(threw_thread2);
  // Still usable from its own thread.
  EXPECT_EQ(add(t, t).to_vector(), std::vector<float>(4, 2.0f));
}

namespace {
GLuint make_user_program() {
  const char* src =
      "#version 310 es\nlayout(local_size_x=1) in;\nlayout(std430, binding=0) buffer B { uint d[]; };\n"
      "void main() { d[0] = 7u; }\n";
  GLuint sh = glCreateShader(GL_COMPUTE_SHADER);
  glShaderSource(sh, 1, &src, nullptr);
  glCompileShader(sh);
  GLuint p = glCreateProgram();
  glAttachShader(p, sh);
  glLinkProgram(p);
  glDeleteShader(sh);
  return p;
}
}  // namespace

TEST(Device, AdoptCurrentRestoresBindings) {
  auto cands = detail::enumerate_egl_candidates();
  ASSERT_FALSE(cands.empty());
  detail::EglContext ctx;
  std::string why;
  ASSERT_TRUE(detail::create_egl_context(cands[0], false, EGL_OPENGL_ES_API, ctx, why)) << why;
  ASSERT_TRUE(detail::make_current(ctx));
  // The "application" state.
  GLuint bufs[2];
  glGenBuffers(2, bufs);
  glBindBuffer(GL_SHADER_STORAGE_BUFFER, bufs[0]);
  glBufferData(GL_SHADER_STORAGE_BUFFER, 64, nullptr, GL_DYNAMIC_DRAW);
  glBindBuffer(GL_SHADER_STORAGE_BUFFER, bufs[1]);
  glBufferData(GL_SHADER_STORAGE_BUFFER, 256, nullptr, GL_DYNAMIC_DRAW);
  glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, bufs[0]);
  glBindBufferRange(GL_SHADER_STORAGE_BUFFER, 2, bufs[1], 0, 128);
  glBindBuffer(GL_SHADER_STORAGE_BUFFER, bufs[1]);
  glBindBuffer(GL_COPY_READ_BUFFER, bufs[0]);
  const GLuint prog = make_user_program();
  glUseProgram(prog);
  {
    Device dev = Device::adopt_current();
    EXPECT_TRUE(dev.adopted());
    GLT_RNG(rng);
    auto a = uniform(rng, 300), b = uniform(rng, 300);
    Tensor ta = Tensor::from_host(dev, a, {300}), tb = Tensor::from_host(dev, b, {300});
    auto got = (ta * tb + ta).to_vector();
    std::vector<double> ref(300);
    for (int i = 0; i < 300; ++i) ref[i] = double(a[i]) * b[i] + a[i];
    EXPECT_TRUE(close(got, ref, 1e-6, 1e-6));
  }
  GLint v = 0;
  glGetIntegerv(GL_CURRENT_PROGRAM, &v);
  EXPECT_EQ(static_cast<GLuint>(v), prog);
  glGetIntegerv(GL_SHADER_STORAGE_BUFFER_BINDING, &v);
  EXPECT_EQ(static_cast<GLuint>(v), bufs[1]);
  glGetIntegeri_v(GL_SHADER_STORAGE_BUFFER_BINDING, 0, &v);
  EXPECT_EQ(static_cast<GLuint>(v), bufs[0]);
  glGetIntegeri_v(GL_SHADER_STORAGE_BUFFER_BINDING, 1, &v);
  EXPECT_EQ(v, 0);
  glGetIntegeri_v(GL_SHADER_STORAGE_BUFFER_BINDING, 2, &v);
  EXPECT_EQ(static_cast<GLuint>(v), bufs[1]);
  GLint64 size = 0;
  glGetInteger64i_v(GL_SHADER_STORAGE_BUFFER_SIZE, 2, &size);
  EXPECT_EQ(size, 128);
  glGetIntegerv(GL_COPY_READ_BUFFER_BINDING, &v);
  EXPECT_EQ(static_cast<GLuint>(v), bufs[0]);
  // The application's own program still works with its own binding.
  glDispatchCompute(1, 1, 1);
  glMemoryBarrier(GL_ALL_BARRIER_BITS);
  glBindBuffer(GL_COPY_READ_BUFFER, bufs[0]);
  auto* p = static_cast<const std::uint32_t*>(glMapBufferRange(GL_COPY_READ_BUFFER, 0, 4, GL_MAP_READ_BIT));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p[0], 7u);
  glUnmapBuffer(GL_COPY_READ_BUFFER);
  glDeleteProgram(prog);
  glDeleteBuffers(2, bufs);
  detail::destroy_egl_context(ctx);
}

TEST(Device, AdoptWithoutCurrentContextThrows) {
  std::thread th([] { EXPECT_THROW(Device::adopt_current(), DeviceError); });
  th.join();
}
