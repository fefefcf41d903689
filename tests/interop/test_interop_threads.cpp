// Graphics apps, two threads: a render thread with the application's context and a compute
// thread with a gltensor device in its share group (OpenOptions::share_context), handing
// frames over with fences as gltensor/interop.hpp documents: render into texture A, fence F1;
// acquire(F1), from_texture(A), tensor ops, to_texture(B), F2 = release(); glWaitSync(F2), read B.
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "gltensor/interop.hpp"
#include "interop/gl_app.hpp"
#include "test_util.hpp"

using namespace gltensor;
using glt_app::AppContext;

namespace {

// A one-slot hand-over of fences between the threads.
class Channel {
 public:
  void send(GLsync f) {
    std::lock_guard<std::mutex> l(m_);
    q_.push_back(f);
    cv_.notify_one();
  }
  GLsync receive() {
    std::unique_lock<std::mutex> l(m_);
    cv_.wait(l, [&] { return !q_.empty(); });
    GLsync f = q_.front();
    q_.pop_front();
    return f;
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<GLsync> q_;
};

class Threads : public ::testing::TestWithParam<bool> {};  // desktop OpenGL?

TEST_P(Threads, RenderThreadAndComputeThreadShareTexturesThroughFences) {
  const int w = 32, h = 16, frames = 6;
  AppContext app(GetParam());
  GLuint tex[2], fbo[2];
  glGenTextures(2, tex);
  glGenFramebuffers(2, fbo);
  for (int i = 0; i < 2; ++i) {
    glBindTexture(GL_TEXTURE_2D, tex[i]);
    glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, w, h);
  }
  glBindTexture(GL_TEXTURE_2D, 0);
  glFlush();
  Channel to_compute, to_render;
  std::string compute_error;
  std::thread compute([&] {
    try {
      OpenOptions o;
      o.share_context = app.egl.context;
      o.share_display = app.egl.display;
      Device dev = Device::open(o);  // on this thread: its context shares the application's objects
      EXPECT_EQ(dev.caps().desktop, GetParam());
      for (int f = 0; f < frames; ++f) {
        GLsync ready = to_compute.receive();
        interop::acquire(dev, ready);  // the render thread deletes `ready` after our F2
        Tensor x = interop::from_texture(dev, {tex[0], GL_RGBA8, w, h, 0});
        Tensor y = 1.0 - x.narrow(1, 0, 3);  // invert RGB; alpha filled with 1 by to_texture
        interop::to_texture(y, {tex[1], GL_RGBA8, w, h, 0});
        to_render.send(interop::release(dev));
      }
    } catch (const std::exception& e) {
      compute_error = e.what();
      to_render.send(nullptr);
    }
  });
  for (int f = 0; f < frames && compute_error.empty(); ++f) {
    // "Render" frame f into A: a colour per frame, the top half of the picture another.
    const float r = static_cast<float>(f) / frames, g = 0.25f, b = 1.0f - r;
    glBindFramebuffer(GL_FRAMEBUFFER, fbo[0]);
    glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, tex[0], 0);
    glViewport(0, 0, w, h);
    glClearColor(r, g, b, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    glEnable(GL_SCISSOR_TEST);
    glScissor(0, h / 2, w, h / 2);  // GL's upper half: texel rows h/2 .. h-1
    glClearColor(0.0f, 1.0f, 0.0f, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    glDisable(GL_SCISSOR_TEST);
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    GLsync ready = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
    glFlush();  // another context waits on it
    to_compute.send(ready);
    GLsync done = to_render.receive();
    if (!done) break;
    glWaitSync(done, 0, GL_TIMEOUT_IGNORED);
    glDeleteSync(done);
    glDeleteSync(ready);
    // Read B (bound again after the wait: GL's rule for objects changed in another context).
    glBindFramebuffer(GL_READ_FRAMEBUFFER, fbo[1]);
    glFramebufferTexture2D(GL_READ_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, tex[1], 0);
    std::vector<std::uint8_t> px(static_cast<std::size_t>(w * h * 4));
    glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
    glBindFramebuffer(GL_READ_FRAMEBUFFER, 0);
    const auto inv = [](float v) { return 255 - static_cast<int>(std::lround(v * 255.0f)); };
    for (int y = 0; y < h; y += h - 1) {  // bottom and top rows
      const std::uint8_t* p = px.data() + static_cast<std::size_t>(y * w * 4);
      const bool top = y >= h / 2;
      const std::vector<int> want =
          top ? std::vector<int>{255, 0, 255, 255} : std::vector<int>{inv(r), inv(g), inv(b), 255};
      EXPECT_NEAR(p[0], want[0], 1) << "frame " << f << " row " << y;
      EXPECT_NEAR(p[1], want[1], 1) << "frame " << f << " row " << y;
      EXPECT_NEAR(p[2], want[2], 1) << "frame " << f << " row " << y;
      EXPECT_EQ(p[3], want[3]) << "frame " << f << " row " << y;
    }
  }
  compute.join();
  EXPECT_EQ(compute_error, "");
  EXPECT_TRUE(app.current());
  glDeleteFramebuffers(2, fbo);
  glDeleteTextures(2, tex);
  EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR));
}

TEST(Threads, SharingNeedsBothHandles) {
  OpenOptions o;
  o.share_context = reinterpret_cast<void*>(1);
  EXPECT_THROW(Device::open(o), ValueError);
}

INSTANTIATE_TEST_SUITE_P(Contexts, Threads, ::testing::Values(false, true),
                         [](const auto& info) { return std::string(info.param ? "gl" : "gles"); });

}  // namespace
