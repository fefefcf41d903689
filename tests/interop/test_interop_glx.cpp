// Graphics apps on X11: a GLX desktop OpenGL 4.3+ core context (a GLFW window) adopted, every op
// family leaving its state (every binding) and pending error as found; a headless Device::open
// device used while the GLX context is current (libglvnd lets one window system's context be
// current per thread: gltensor releases the GLX one for its calls and makes it current again).
// Needs an X display: ctest runs it under Xvfb (test_interop_glx_xvfb); without one it skips.
#include <GLFW/glfw3.h>

#include <cstdio>
#include <cstdlib>

#include "gltensor/interop.hpp"
#include "interop/gl_app.hpp"
#include "interop/op_families.hpp"

using namespace gltensor;

namespace {

class Glx : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::getenv("DISPLAY")) GTEST_SKIP() << "no X display (ctest runs this under xvfb-run)";
    glfwSetErrorCallback([](int code, const char* what) { std::fprintf(stderr, "GLFW error %d: %s\n", code, what); });
    ASSERT_TRUE(glfwInit());
    glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);
    glfwWindowHint(GLFW_CLIENT_API, GLFW_OPENGL_API);
    glfwWindowHint(GLFW_CONTEXT_CREATION_API, GLFW_NATIVE_CONTEXT_API);  // GLX
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 4);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
    window_ = glfwCreateWindow(64, 64, "gltensor glx test", nullptr, nullptr);
    if (!window_) GTEST_SKIP() << "no GLX OpenGL 4.3 core context on this display";
    glfwMakeContextCurrent(window_);
    ASSERT_EQ(eglGetCurrentContext(), EGL_NO_CONTEXT);
  }
  void TearDown() override {
    if (window_) glfwDestroyWindow(window_);
    glfwTerminate();
  }
  bool glx_current() const { return glfwGetCurrentContext() == window_; }
  GLFWwindow* window_ = nullptr;
  const glt_app::ContextKind kind_{true, true};
};

TEST_F(Glx, AdoptedGlxContextKeepsItsStateAndError) {
  glt_app::AppState state(kind_);
  const glt_app::Snapshot before = glt_app::snapshot(kind_);
  Device dev = Device::adopt_current();
  EXPECT_TRUE(dev.caps().desktop);
  EXPECT_NE(dev.adapter().platform.find("GLX"), std::string::npos) << dev.adapter().platform;
  for (const auto& fam : glt_families::families()) {
    SCOPED_TRACE(fam.name);
    glEnable(0xDEAD);
    fam.run(dev);
    EXPECT_TRUE(glx_current());
    EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_INVALID_ENUM));
    EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR));
    EXPECT_EQ(glt_app::diff(before, glt_app::snapshot(kind_)), "");
  }
  // The application's texture through interop.
  const interop::Texture tex{state.interop_texture, GL_RGBA8, 8, 8, 0};
  interop::to_texture(full(dev, {1, 4, 8, 8}, 0.5), tex);
  EXPECT_NEAR(sum(interop::from_texture(dev, tex)).item(), 256 * 128 / 255.0, 1e-3);  // 0.5 stored as 128
  EXPECT_EQ(glt_app::diff(before, glt_app::snapshot(kind_)), "");
  dev = Device();
  EXPECT_TRUE(glx_current());
  EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR));
}

TEST_F(Glx, HeadlessDeviceBesideTheGlxContext) {
  Device dev = Device::open();
  EXPECT_TRUE(glx_current()) << "Device::open";
  EXPECT_EQ(sum(ones(dev, {100}) * 2.0).item(), 200.0f);
  EXPECT_TRUE(glx_current()) << "a call";
  {
    interop::StateScope scope(dev);
    EXPECT_EQ(sum(ones(dev, {10})).item(), 10.0f);
  }
  EXPECT_TRUE(glx_current()) << "a scope";
  dev = Device();
  EXPECT_TRUE(glx_current()) << "destruction";
}

}  // namespace
