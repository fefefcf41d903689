// Graphics apps: the matrix of context situations. Each kind of device (Device::open,
// Device::adopt_current, OpenOptions::share_context) is called with its own context current,
// another context current, no context current, and from another thread, across upload, an op
// (conv2d), readback, from_texture, to_texture and conv2d_texture. Where the call is allowed its results match a
// float64 reference; where it is not (an adopted context that is not current: DeviceError;
// another thread: ThreadError) it changes nothing. Either way the caller's current context
// (display, surfaces, context) and every binding of the caller's context are as they were, and
// no GL error is left pending there. One documented exception: a thread with no context current
// is left with the device's own context current (Device::open and share_context devices), so
// that consecutive calls switch nothing.
#include <functional>
#include <random>
#include <thread>

#include "gltensor/interop.hpp"
#include "interop/gl_app.hpp"
#include "runtime/context.hpp"
#include "runtime/device_impl.hpp"
#include "test_util.hpp"

using namespace gltensor;
using glt_app::AppContext;
using glt_app::AppState;

namespace {

enum class Kind { open, adopt, share };
enum class Caller { own, other, none, thread };

const char* name(Kind k) { return k == Kind::open ? "open" : k == Kind::adopt ? "adopt" : "share"; }
const char* name(Caller c) {
  return c == Caller::own ? "own" : c == Caller::other ? "other" : c == Caller::none ? "none" : "thread";
}

// The calling thread's current EGL binding.
struct Current {
  EGLDisplay display;
  EGLSurface draw, read;
  EGLContext context;
  static Current get() {
    return {eglGetCurrentDisplay(), eglGetCurrentSurface(EGL_DRAW), eglGetCurrentSurface(EGL_READ),
            eglGetCurrentContext()};
  }
  bool operator==(const Current&) const = default;
};

constexpr int kW = 8, kH = 8;

// An 8 x 8 RGBA8 immutable texture in the current context; `texels` (row 0 first) or none.
GLuint make_texture(const std::vector<std::uint8_t>* texels) {
  GLint active = 0, bound = 0;
  glGetIntegerv(GL_ACTIVE_TEXTURE, &active);
  glActiveTexture(GL_TEXTURE0);
  glGetIntegerv(GL_TEXTURE_BINDING_2D, &bound);
  GLuint t = 0;
  glGenTextures(1, &t);
  glBindTexture(GL_TEXTURE_2D, t);
  glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, kW, kH);
  if (texels) {
    GLint align = 4;
    glGetIntegerv(GL_UNPACK_ALIGNMENT, &align);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, kW, kH, GL_RGBA, GL_UNSIGNED_BYTE, texels->data());
    glPixelStorei(GL_UNPACK_ALIGNMENT, align);
  }
  glBindTexture(GL_TEXTURE_2D, static_cast<GLuint>(bound));
  glActiveTexture(static_cast<GLenum>(active));
  glFinish();
  return t;
}

struct Inputs {
  std::vector<float> x, w;           // [1, 1, 8, 8], [1, 1, 3, 3]
  std::vector<std::uint8_t> texels;  // 8 x 8 RGBA8
};

// float64 reference of sigmoid(conv2d(x, w, padding 1) + 1), [1, 1, 8, 8].
std::vector<double> reference(const Inputs& in) {
  std::vector<double> y(kW * kH);
  for (int i = 0; i < kH; ++i)
    for (int j = 0; j < kW; ++j) {
      double s = 0;
      for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
          const int r = i + a - 1, c = j + b - 1;
          if (r >= 0 && r < kH && c >= 0 && c < kW) s += double(in.x[r * kW + c]) * in.w[a * 3 + b];
        }
      y[i * kW + j] = 1.0 / (1.0 + std::exp(-(s + 1.0)));
    }
  return y;
}

// The steps of the matrix, each a public call (or two) on `dev`.
struct Steps {
  const Device& dev;
  const Inputs& in;
  GLuint src, dst;
  Tensor x, w, y;

  void upload() {
    x = Tensor::from_host(dev, in.x, {1, 1, kH, kW});
    w = Tensor::from_host(dev, in.w, {1, 1, 3, 3});
  }
  void op() { y = sigmoid(conv2d(x, w, Tensor(), Conv2dOptions::pad(1)) + 1.0); }
  void readback(const std::string& where) {
    const std::vector<float> got = y.to_vector();
    const std::vector<double> want = reference(in);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5) << where << " element " << i;
  }
  void from_texture(const std::string& where) {
    interop::TextureTransfer o;
    o.origin = interop::Origin::top_left;
    const std::vector<float> got = interop::from_texture(dev, {src, GL_RGBA8, kW, kH, 0}, o).to_vector();
    ASSERT_EQ(got.size(), static_cast<std::size_t>(4 * kW * kH));
    for (int c = 0; c < 4; ++c)
      for (int p = 0; p < kW * kH; ++p)
        ASSERT_NEAR(got[static_cast<std::size_t>(c * kW * kH + p)],
                    in.texels[static_cast<std::size_t>(p * 4 + c)] / 255.0, 1e-6)
            << where << " channel " << c << " texel " << p;
  }
  // to_texture, then the texture read back through from_texture (checked above on its own).
  void to_texture(const std::string& where) {
    interop::TextureTransfer o;
    o.origin = interop::Origin::top_left;
    interop::to_texture(y, {dst, GL_RGBA8, kW, kH, 0}, o);
    interop::release(dev, interop::kAllBarrierBits, false);
    const std::vector<float> got = interop::from_texture(dev, {dst, GL_RGBA8, kW, kH, 0}, o).to_vector();
    const std::vector<double> want = reference(in);
    for (int p = 0; p < kW * kH; ++p) {
      // GL leaves float -> unorm8 rounding to the implementation (NVIDIA's image stores may round
      // down): within one step.
      ASSERT_NEAR(got[static_cast<std::size_t>(p)], want[static_cast<std::size_t>(p)], 1.0 / 255 + 1e-6)
          << where << " red, texel " << p;
      ASSERT_EQ(got[static_cast<std::size_t>(kW * kH + p)], 0.0f) << where << " green, texel " << p;
      ASSERT_EQ(got[static_cast<std::size_t>(3 * kW * kH + p)], 1.0f) << where << " alpha, texel " << p;
    }
  }
  // A frame filter from src to dst in one dispatch (its weights and bias read as uniform blocks:
  // bindings the application's state has too), then dst read back as above.
  void filter(const std::string& where) {
    interop::TextureTransfer o;
    o.origin = interop::Origin::top_left;
    interop::conv2d_texture({src, GL_RGBA8, kW, kH, 0}, {dst, GL_RGBA8, kW, kH, 0}, full(dev, {1, 4, 3, 3}, 1.0 / 36),
                            full(dev, {1}, 0.1), Conv2dOptions::pad(1), {}, o, o);
    interop::release(dev, interop::kAllBarrierBits, false);
    const std::vector<float> got = interop::from_texture(dev, {dst, GL_RGBA8, kW, kH, 0}, o).to_vector();
    for (int i = 0; i < kH; ++i)
      for (int j = 0; j < kW; ++j) {
        double s = 0;
        for (int a = -1; a <= 1; ++a)
          for (int b = -1; b <= 1; ++b)
            if (i + a >= 0 && i + a < kH && j + b >= 0 && j + b < kW)
              for (int c = 0; c < 4; ++c)
                s += in.texels[static_cast<std::size_t>(((i + a) * kW + j + b) * 4 + c)] / 255.0;
        ASSERT_NEAR(got[static_cast<std::size_t>(i * kW + j)], std::min(s / 36 + 0.1, 1.0), 1.0 / 255 + 1e-6)
            << where << " texel " << i << "," << j;
      }
  }
  // Every step by name, for the loops below.
  std::vector<std::pair<std::string, std::function<void(const std::string&)>>> all() {
    return {{"upload", [this](const std::string&) { upload(); }},
            {"op", [this](const std::string&) { op(); }},
            {"readback", [this](const std::string& w) { readback(w); }},
            {"from_texture", [this](const std::string& w) { from_texture(w); }},
            {"to_texture", [this](const std::string& w) { to_texture(w); }},
            {"conv2d_texture", [this](const std::string& w) { filter(w); }}};
  }
};

class Matrix : public ::testing::TestWithParam<std::tuple<Kind, Caller, bool>> {};

TEST_P(Matrix, CallsKeepTheCallersContextAndGiveRightResults) {
  const auto [kind, caller, desktop] = GetParam();
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Inputs in;
  for (int i = 0; i < kW * kH; ++i) in.x.push_back(u(rng));
  for (int i = 0; i < 9; ++i) in.w.push_back(u(rng));
  for (int i = 0; i < kW * kH * 4; ++i) in.texels.push_back(static_cast<std::uint8_t>(rng() & 255));

  AppContext app(desktop);
  Device dev;
  if (kind == Kind::adopt) {
    dev = Device::adopt_current();
  } else if (kind == Kind::share) {
    OpenOptions o;
    o.share_context = app.egl.context;
    o.share_display = app.egl.display;
    dev = Device::open(o);
  } else {
    dev = Device::open();
  }
  ASSERT_TRUE(app.current()) << "opening the device changed the current context";
  // The textures: in the application's share group, or (a headless device shares nothing) in
  // the device's own context.
  GLuint src = 0, dst = 0;
  if (kind == Kind::open) {
    ASSERT_TRUE(detail::make_current(dev.impl()->egl()));
  }
  src = make_texture(&in.texels);
  dst = make_texture(nullptr);
  app.make_current();
  AppState app_state(app);  // the application's bindings everywhere
  std::unique_ptr<AppContext> other;
  std::unique_ptr<AppState> other_state;
  if (caller == Caller::other) {
    other = std::make_unique<AppContext>(desktop);  // current now
    other_state = std::make_unique<AppState>(*other);
  }

  Steps steps{dev, in, src, dst, {}, {}, {}};
  const bool allowed =
      caller != Caller::thread && !(kind == Kind::adopt && (caller == Caller::other || caller == Caller::none));
  if (!allowed) {
    // Tensors made where calls are allowed, for the calls that must fail.
    app.make_current();
    steps.upload();
    steps.op();
  }
  // The caller's situation.
  const glt_app::ContextKind* ctx = nullptr;  // the caller's context, whose bindings must stay
  if (caller == Caller::own) {
    if (kind == Kind::adopt) {
      app.make_current();
      ctx = &app;
    } else {
      ASSERT_TRUE(detail::make_current(dev.impl()->egl()));  // gltensor's own context: its bindings are its own
    }
  } else if (caller == Caller::other) {
    other->make_current();
    ctx = other.get();
  } else {
    eglMakeCurrent(app.egl.display, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
  }

  const auto run_steps = [&] {
    for (auto& [step, fn] : steps.all()) {
      const std::string where =
          std::string(name(kind)) + " device, " + name(caller) + " context, " + (desktop ? "GL" : "GLES") + ", " + step;
      const Current before = Current::get();
      glt_app::Snapshot s0;
      if (ctx) s0 = glt_app::snapshot(*ctx);
      if (caller == Caller::thread) {
        EXPECT_THROW(fn(where), ThreadError) << where;
      } else if (!allowed) {
        EXPECT_THROW(fn(where), DeviceError) << where;
      } else {
        fn(where);
        if (::testing::Test::HasFatalFailure()) return;
      }
      const Current after = Current::get();
      if (allowed && caller == Caller::none) {
        EXPECT_EQ(after.context, dev.impl()->egl().context) << where << ": the device's context stays current";
        eglMakeCurrent(app.egl.display, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
      } else {
        EXPECT_TRUE(after == before) << where << ": the current context changed";
      }
      if (ctx) {
        EXPECT_EQ(glt_app::diff(s0, glt_app::snapshot(*ctx)), "") << where << ": bindings changed";
        EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR)) << where;
      }
    }
  };
  if (caller == Caller::thread) {
    std::thread(run_steps).join();
  } else {
    run_steps();
  }

  // The device still works, where it may be used, and the application's state is as it was.
  app.make_current();
  if (kind != Kind::open) {
    const glt_app::Snapshot s0 = glt_app::snapshot(app);
    steps.upload();
    steps.op();
    steps.readback("afterwards");
    EXPECT_EQ(glt_app::diff(s0, glt_app::snapshot(app)), "") << "afterwards";
    if (kind == Kind::share) dev.synchronize();
    glDeleteTextures(1, &src);
    glDeleteTextures(1, &dst);
  } else {
    steps.upload();
    steps.op();
    steps.readback("afterwards");
    ASSERT_TRUE(app.current());
  }
  EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR));
}

INSTANTIATE_TEST_SUITE_P(Contexts, Matrix,
                         ::testing::Combine(::testing::Values(Kind::open, Kind::adopt, Kind::share),
                                            ::testing::Values(Caller::own, Caller::other, Caller::none, Caller::thread),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(name(std::get<0>(info.param))) + "_" + name(std::get<1>(info.param)) +
                                  "_" + (std::get<2>(info.param) ? "gl" : "gles");
                         });

}  // namespace
