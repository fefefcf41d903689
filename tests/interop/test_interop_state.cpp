// Graphics apps: every public op family leaves the application's GL state as it found it (every
// binding, tests/interop/gl_app.hpp), its pending GL error pending and its context current, and
// raises no GL error of its own: in an adopted OpenGL ES and desktop OpenGL context (each call
// restoring, or a StateScope around the calls), and with a Device::open device used while the
// application's context is current. The profiler too (its timer queries).
#include "gltensor/interop.hpp"
#include "interop/gl_app.hpp"
#include "interop/op_families.hpp"

using namespace gltensor;
using glt_app::AppContext;
using glt_app::AppState;

namespace {

enum class Mode { adopt, adopt_scope, open_beside };
struct Variant {
  const char* name;
  bool desktop;
  Mode mode;
};

void run_family(const glt_families::Family& fam, Device& dev, Mode mode) {
  if (mode == Mode::adopt_scope) {
    interop::StateScope scope(dev);
    fam.run(dev);
  } else {
    fam.run(dev);
  }
}

// The interop calls on the application's own buffer and texture.
glt_families::Family interop_family(const AppState& st) {
  return {"interop", [&st](Device& d) {
            Tensor w = interop::wrap_buffer(d, st.interop_buffer, 16, {4, 8}, DType::f32);
            w.copy_(arange(d, 32).view({4, 8}));
            EXPECT_EQ(sum(w).item(), 496.0f);
            EXPECT_EQ(interop::buffer_of(w).buffer, st.interop_buffer);
            const interop::Texture tex{st.interop_texture, GL_RGBA8, 8, 8, 0};
            interop::to_texture(full(d, {1, 4, 8, 8}, 1.0), tex);
            EXPECT_EQ(sum(interop::from_texture(d, tex)).item(), 256.0f);
            interop::acquire(d);
            GLsync f = interop::release(w);
            glDeleteSync(f);
            interop::release(d, interop::kAllBarrierBits, false);
            { interop::StateScope inner(d); }
          }};
}

// The profiler's timer queries (the core entry points on desktop OpenGL, the EXT's on OpenGL ES) and its disjoint
// check (only where the context has GL_GPU_DISJOINT_EXT: elsewhere the enum would raise GL_INVALID_ENUM).
glt_families::Family profiler_family() {
  return {"profiler", [](Device& d) {
            if (!d.caps().timer_query) {
              EXPECT_FALSE(d.caps().desktop) << "desktop OpenGL has core timer queries";
              return;
            }
            d.set_profiling(true);
            Tensor a = ones(d, {16, 24});
            (void)matmul(a, ones(d, {24, 8}));
            const ProfileReport r = d.profile();
            EXPECT_GT(r.total_ms, 0.0) << r.table();
            d.reset_profile();
            d.set_profiling(false);
          }};
}

class ApplicationState : public ::testing::TestWithParam<Variant> {};

TEST_P(ApplicationState, EveryOpFamilyLeavesItAsFound) {
  const Variant v = GetParam();
  AppContext app(v.desktop);
  AppState state(app);
  const glt_app::Snapshot before = glt_app::snapshot(app);
  glEnable(0xDEAD);  // the application's pending error: GL_INVALID_ENUM
  Device dev;
  if (v.mode == Mode::open_beside) {
    OpenOptions o;
    o.api = v.desktop ? GlApi::gl : GlApi::gles;
    dev = Device::open(o);
  } else {
    dev = Device::adopt_current();
  }
  EXPECT_TRUE(app.current()) << "opening / adopting left another context current";
  EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_INVALID_ENUM)) << "the application's error was read";
  EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR));
  EXPECT_EQ(glt_app::diff(before, glt_app::snapshot(app)), "") << "opening / adopting";
  auto families = glt_families::families();
  if (v.mode != Mode::open_beside) families.push_back(interop_family(state));  // objects of the context
  families.push_back(profiler_family());
  for (const auto& fam : families) {
    SCOPED_TRACE(fam.name);
    glEnable(0xDEAD);
    run_family(fam, dev, v.mode);
    EXPECT_TRUE(app.current());
    EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_INVALID_ENUM)) << "the application's error did not survive";
    EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR));
    EXPECT_EQ(glt_app::diff(before, glt_app::snapshot(app)), "");
    run_family(fam, dev, v.mode);  // programs cached now; no error pending
    EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR)) << "gltensor raised a GL error in the context";
    EXPECT_EQ(glt_app::diff(before, glt_app::snapshot(app)), "");
  }
  dev = Device();  // destruction too
  EXPECT_TRUE(app.current());
  EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR));
  EXPECT_EQ(glt_app::diff(before, glt_app::snapshot(app)), "") << "destroying the device";
}

INSTANTIATE_TEST_SUITE_P(Contexts, ApplicationState,
                         ::testing::Values(Variant{"gles_adopted", false, Mode::adopt},
                                           Variant{"gles_adopted_scope", false, Mode::adopt_scope},
                                           Variant{"gl_adopted", true, Mode::adopt},
                                           Variant{"gl_adopted_scope", true, Mode::adopt_scope},
                                           Variant{"gles_open_beside_gles_app", false, Mode::open_beside},
                                           Variant{"gl_open_beside_gl_app", true, Mode::open_beside}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
