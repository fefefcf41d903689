// Graphics apps, two threads: a render thread with the application's context and a compute
// thread with a gltensor device in its share group (OpenOptions::share_context), handing
// frames over with fences as gltensor/interop.hpp documents: render into texture A, fence F1;
// acquire(F1), from_texture(A), tensor ops, to_texture(B), F2 = release(); glWaitSync(F2), read B.
#include <array>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <random>
#include <thread>

#include "gltensor/interop.hpp"
#include "interop/gl_app.hpp"
#include "test_util.hpp"

using namespace gltensor;
using glt_app::AppContext;

namespace {

// A hand-over queue between the threads (fences, or frames with their fences).
template <typename T>
class Channel {
 public:
  void send(T v) {
    std::lock_guard<std::mutex> l(m_);
    q_.push_back(v);
    cv_.notify_one();
  }
  T receive() {
    std::unique_lock<std::mutex> l(m_);
    cv_.wait(l, [&] { return !q_.empty(); });
    T v = q_.front();
    q_.pop_front();
    return v;
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<T> q_;
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
  Channel<GLsync> to_compute, to_render;
  std::string compute_error;
  std::vector<float> seen(frames, -1.0f);  // red of the bottom-left texel of A, as the compute thread read it
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
        seen[static_cast<std::size_t>(f)] = x.narrow(2, h - 1, 1).narrow(3, 0, 1).narrow(1, 0, 1).item();
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
  for (int f = 0; f < frames; ++f)
    EXPECT_NEAR(seen[static_cast<std::size_t>(f)], static_cast<float>(f) / frames, 1.0 / 255)
        << "frame " << f << ": the compute thread read another frame's texture";
  EXPECT_TRUE(app.current());
  glDeleteFramebuffers(2, fbo);
  glDeleteTextures(2, tex);
  EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR));
}

// The same pattern under load: two texture pairs, the render thread rendering frame f into
// A[f % 2] while the compute thread still works on frame f - 1 (A[(f - 1) % 2] -> B[(f - 1) % 2]),
// random frame contents (a background colour and a random rectangle of another), every texel of
// every frame checked on both threads.
struct Frame {
  std::uint8_t bg[3], fg[3];
  int x0, y0, x1, y1;  // the rectangle, texel rows y0 .. y1 - 1 (GL's row 0 at the bottom)
  std::array<int, 3> texel(int x, int y) const {
    const bool in = x >= x0 && x < x1 && y >= y0 && y < y1;
    const std::uint8_t* c = in ? fg : bg;
    return {c[0], c[1], c[2]};
  }
};

struct Job {
  int frame;
  GLsync fence;
};

TEST_P(Threads, StressRacingThreadsEveryFrameChecked) {
  const int w = 24, h = 17, frames = 1000;
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::vector<Frame> script(frames);
  for (Frame& fr : script) {
    for (int c = 0; c < 3; ++c) {
      fr.bg[c] = static_cast<std::uint8_t>(rng() & 255);
      fr.fg[c] = static_cast<std::uint8_t>(rng() & 255);
    }
    fr.x0 = static_cast<int>(rng() % w), fr.y0 = static_cast<int>(rng() % h);
    fr.x1 = fr.x0 + 1 + static_cast<int>(rng() % (w - fr.x0)),
    fr.y1 = fr.y0 + 1 + static_cast<int>(rng() % (h - fr.y0));
  }
  AppContext app(GetParam());
  GLuint a[2], b[2], fbo;
  glGenTextures(2, a);
  glGenTextures(2, b);
  glGenFramebuffers(1, &fbo);
  for (int i = 0; i < 2; ++i)
    for (GLuint t : {a[i], b[i]}) {
      glBindTexture(GL_TEXTURE_2D, t);
      glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, w, h);
    }
  glBindTexture(GL_TEXTURE_2D, 0);
  glFlush();
  Channel<Job> to_compute, to_render;
  std::string compute_error;
  int compute_bad = 0;  // frames whose input the compute thread read wrong
  std::string first_compute_bad;
  std::thread compute([&] {
    try {
      OpenOptions o;
      o.share_context = app.egl.context;
      o.share_display = app.egl.display;
      Device dev = Device::open(o);
      for (int f = 0; f < frames; ++f) {
        const Job job = to_compute.receive();
        interop::acquire(dev, job.fence);
        const int s = job.frame % 2;
        interop::TextureTransfer t;
        t.layout = interop::Layout::nhwc;
        t.origin = interop::Origin::top_left;  // texel row 0 = tensor row 0
        Tensor x = interop::from_texture(dev, {a[s], GL_RGBA8, w, h, 0}, t);
        Tensor y = 1.0 - x.narrow(3, 0, 3);
        interop::to_texture(y, {b[s], GL_RGBA8, w, h, 0}, t);
        to_render.send({job.frame, interop::release(dev)});
        if (job.frame % 97 == 0) {  // and now and then the input as the compute thread saw it
          const std::vector<float> v = x.to_vector();
          const Frame& fr = script[static_cast<std::size_t>(job.frame)];
          for (int yy = 0; yy < h; ++yy)
            for (int xx = 0; xx < w; ++xx)
              for (int c = 0; c < 3; ++c)
                if (std::lround(v[static_cast<std::size_t>((yy * w + xx) * 4 + c)] * 255.0f) != fr.texel(xx, yy)[c]) {
                  if (compute_bad++ == 0)
                    first_compute_bad = "frame " + std::to_string(job.frame) + " texel " + std::to_string(xx) + "," +
                                        std::to_string(yy);
                  yy = h, xx = w, c = 3;
                }
        }
      }
    } catch (const std::exception& e) {
      compute_error = e.what();
      to_render.send({-1, nullptr});
    }
  });
  int bad_frames = 0;
  std::string first_bad;
  std::vector<std::uint8_t> px(static_cast<std::size_t>(w * h * 4));
  const auto check = [&](const Job& done) {
    glWaitSync(done.fence, 0, GL_TIMEOUT_IGNORED);
    glDeleteSync(done.fence);
    glBindFramebuffer(GL_READ_FRAMEBUFFER, fbo);
    glFramebufferTexture2D(GL_READ_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, b[done.frame % 2], 0);
    glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
    glFramebufferTexture2D(GL_READ_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, 0, 0);
    glBindFramebuffer(GL_READ_FRAMEBUFFER, 0);
    const Frame& fr = script[static_cast<std::size_t>(done.frame)];
    for (int yy = 0; yy < h; ++yy)
      for (int xx = 0; xx < w; ++xx) {
        const std::uint8_t* p = px.data() + static_cast<std::size_t>((yy * w + xx) * 4);
        const auto want = fr.texel(xx, yy);
        // GL leaves float -> unorm8 rounding to the implementation: within one step.
        if (std::abs(p[0] - (255 - want[0])) > 1 || std::abs(p[1] - (255 - want[1])) > 1 ||
            std::abs(p[2] - (255 - want[2])) > 1 || p[3] != 255) {
          if (bad_frames++ == 0)
            first_bad = "frame " + std::to_string(done.frame) + " texel " + std::to_string(xx) + "," +
                        std::to_string(yy) + ": " + std::to_string(p[0]) + " " + std::to_string(p[1]) + " " +
                        std::to_string(p[2]) + " " + std::to_string(p[3]) + ", want " + std::to_string(255 - want[0]) +
                        " " + std::to_string(255 - want[1]) + " " + std::to_string(255 - want[2]) + " 255";
          return;
        }
      }
  };
  std::vector<GLsync> ready(2, nullptr);
  for (int f = 0; f < frames; ++f) {
    const int s = f % 2;
    // Frame f - 2 (the last user of slot s) was checked in the iteration before.
    if (ready[static_cast<std::size_t>(s)]) glDeleteSync(ready[static_cast<std::size_t>(s)]);
    const Frame& fr = script[static_cast<std::size_t>(f)];
    glBindFramebuffer(GL_FRAMEBUFFER, fbo);
    glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, a[s], 0);
    glViewport(0, 0, w, h);
    glClearColor(fr.bg[0] / 255.0f, fr.bg[1] / 255.0f, fr.bg[2] / 255.0f, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    glEnable(GL_SCISSOR_TEST);
    glScissor(fr.x0, fr.y0, fr.x1 - fr.x0, fr.y1 - fr.y0);
    glClearColor(fr.fg[0] / 255.0f, fr.fg[1] / 255.0f, fr.fg[2] / 255.0f, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    glDisable(GL_SCISSOR_TEST);
    glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, 0, 0);
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    ready[static_cast<std::size_t>(s)] = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
    glFlush();
    to_compute.send({f, ready[static_cast<std::size_t>(s)]});
    if (f >= 1) {  // frame f - 1, computed while frame f was rendered
      const Job done = to_render.receive();
      if (done.frame < 0) break;
      ASSERT_EQ(done.frame, f - 1);
      check(done);
    }
  }
  if (compute_error.empty()) {
    const Job done = to_render.receive();
    if (done.frame >= 0) check(done);
  }
  compute.join();
  for (GLsync r : ready)
    if (r) glDeleteSync(r);
  EXPECT_EQ(compute_error, "");
  EXPECT_EQ(bad_frames, 0) << "frames whose result was wrong; the first: " << first_bad;
  EXPECT_EQ(compute_bad, 0) << "frames the compute thread read wrong; the first: " << first_compute_bad;
  glDeleteFramebuffers(1, &fbo);
  glDeleteTextures(2, a);
  glDeleteTextures(2, b);
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
