// Graphics apps: an op's GL calls all happen inside an entry into the device (runtime/guard.hpp),
// including a buffer the pool makes before the op's first Launch. The regression of issue 21's
// ubo conv layout on llvmpipe: conv2d's ubo path allocated its output (a pool miss: glGenBuffers,
// glBindBuffer(GL_SHADER_STORAGE_BUFFER), glBufferData) before entering the device, so with an
// adopted context the application's generic SSBO binding changed unsaved, and with a device
// opened beside the application's context the buffer was made in the application's context (a
// name the device's context knew as another buffer: a grouped conv gave 16 where 10 is right).
// Checked: a bare allocation outside any op, and the forced ubo layout (plain, grouped and
// conv_transpose2d with kernel = stride) against the float64 reference, each on a fresh device
// (pool misses) and again (hits), with the application's state, error and current context
// unchanged; and that a binding made outside an entry throws.
#include "gltensor/interop.hpp"
#include "interop/gl_app.hpp"
#include "nn/conv_ref.hpp"
#include "runtime/guard.hpp"
#include "tensor/tensor_impl.hpp"
#include "test_util.hpp"

using namespace gltensor;
using glt_app::AppContext;
using glt_app::AppState;

namespace {

enum class Mode { adopt, open_beside };
struct Variant {
  const char* name;
  bool desktop;
  Mode mode;
};

// The application (its context current, every binding set, a snapshot of them) and the device
// beside or inside it.
struct Scene {
  AppContext app;
  AppState state;
  glt_app::Snapshot before;
  Device dev;
  explicit Scene(const Variant& v) : app(v.desktop), state(app), before(glt_app::snapshot(app)) {
    if (v.mode == Mode::adopt) {
      dev = Device::adopt_current();
    } else {
      OpenOptions o;
      o.api = v.desktop ? GlApi::gl : GlApi::gles;
      dev = Device::open(o);
    }
  }
};

// `step` on the device, then the application's context is current, its pending error
// (GL_INVALID_ENUM, set before) still pending, no other error raised, every binding as before.
void expect_untouched(const AppContext& app, const glt_app::Snapshot& before, const std::string& where,
                      const std::function<void()>& step) {
  SCOPED_TRACE(where);
  glEnable(0xDEAD);
  step();
  EXPECT_TRUE(app.current()) << "another context left current";
  EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_INVALID_ENUM)) << "the application's error did not survive";
  EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR)) << "gltensor raised a GL error in the context";
  EXPECT_EQ(glt_app::diff(before, glt_app::snapshot(app)), "");
}

std::vector<float> uniform(std::mt19937_64& rng, std::int64_t n) {
  return glt_test::uniform(rng, static_cast<std::size_t>(n));
}

void expect_near(const std::vector<float>& got, const std::vector<double>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-4 * (1.0 + std::abs(want[i]))) << what << ", element " << i;
}

class Entry : public ::testing::TestWithParam<Variant> {};

TEST_P(Entry, AllocationOutsideAnOpKeepsTheApplicationsContext) {
  // The pool's GL calls inside an entry of their own: a bare internal allocation (as an op makes
  // before its first Launch) changes nothing of the application's, and the buffer is the
  // device's (filled and read back right).
  Scene sc(GetParam());
  const auto& [app, state, before, dev] = sc;
  ASSERT_TRUE(app.current());
  for (int pass = 0; pass < 2; ++pass) {  // a pool miss, then a hit
    Tensor t;
    expect_untouched(app, before, "alloc, pass " + std::to_string(pass),
                     [&] { t = detail::alloc(*dev.impl(), {1000}, DType::f32, "test"); });
    expect_untouched(app, before, "fill and read, pass " + std::to_string(pass), [&] {
      t.fill_(3.0);
      EXPECT_EQ(t.to_vector(), std::vector<float>(1000, 3.0f));
    });
  }
}

TEST_P(Entry, UboConvLayoutKeepsTheApplicationsContext) {
  // The direct conv's ubo layout (forced: GPUs too), whose output is allocated before its
  // Launch: plain (two chunks of output channels where the block is 64 KiB), grouped, and
  // conv_transpose2d with kernel = stride (the 1x1 ubo conv shuffled into blocks).
  GLT_RNG(rng);
  glt_test::ScopedSettings s;
  s->conv_direct = detail::ConvDirectSetting::ubo;
  Scene sc(GetParam());
  const auto& [app, state, before, dev] = sc;
  ASSERT_TRUE(app.current());
  struct Case {
    std::int64_t N, C, O, H, W, K, groups;
  };
  for (int pass = 0; pass < 2; ++pass)
    for (const Case& c : std::vector<Case>{{1, 3, 3, 5, 5, 3, 3}, {2, 6, 9, 7, 13, 3, 3}, {1, 100, 20, 6, 9, 3, 1}}) {
      const Shape xs{c.N, c.C, c.H, c.W}, ws{c.O, c.C / c.groups, c.K, c.K};
      const auto xv = uniform(rng, numel_of(xs)), wv = uniform(rng, numel_of(ws)), bv = uniform(rng, c.O);
      Conv2dOptions o = Conv2dOptions::pad(c.K / 2);
      o.groups = c.groups;
      const std::vector<double> hb(bv.begin(), bv.end());
      Shape os;
      const auto want = glt_test::ref_conv({{xv.begin(), xv.end()}, xs}, {{wv.begin(), wv.end()}, ws}, &hb, o, os);
      expect_untouched(app, before, "conv2d groups " + std::to_string(c.groups) + ", pass " + std::to_string(pass),
                       [&] {
                         Tensor y = conv2d(Tensor::from_host(dev, xv, xs), Tensor::from_host(dev, wv, ws),
                                           Tensor::from_host(dev, bv, {c.O}), o);
                         EXPECT_EQ(y.shape(), os);
                         expect_near(y.to_vector(), want, "conv2d");
                       });
    }
  // conv_transpose2d, kernel = stride = 2, groups 2: y[n, g*Og+o, 2i+a, 2j+b] = sum_c x[n, g*Cg+c, i, j]
  // * w[g*Cg+c, o, a, b] (+ bias).
  const std::int64_t N = 1, C = 4, Og = 3, H = 3, W = 5, S = 2, G = 2, Cg = C / G;
  const auto xv = uniform(rng, N * C * H * W), wv = uniform(rng, C * Og * S * S);
  std::vector<double> want(static_cast<std::size_t>(N * G * Og * H * S * W * S));
  for (std::int64_t g = 0; g < G; ++g)
    for (std::int64_t o = 0; o < Og; ++o)
      for (std::int64_t i = 0; i < H * S; ++i)
        for (std::int64_t j = 0; j < W * S; ++j) {
          double acc = 0;
          for (std::int64_t c = 0; c < Cg; ++c)
            acc += double(xv[static_cast<std::size_t>(((g * Cg + c) * H + i / S) * W + j / S)]) *
                   wv[static_cast<std::size_t>((((g * Cg + c) * Og + o) * S + i % S) * S + j % S)];
          want[static_cast<std::size_t>(((g * Og + o) * H * S + i) * W * S + j)] = acc;
        }
  for (int pass = 0; pass < 2; ++pass)
    expect_untouched(app, before, "conv_transpose2d, pass " + std::to_string(pass), [&] {
      Conv2dOptions o;
      o.stride = {S, S};
      o.groups = G;
      Tensor y = conv_transpose2d(Tensor::from_host(dev, xv, {N, C, H, W}), Tensor::from_host(dev, wv, {C, Og, S, S}),
                                  Tensor(), o);
      EXPECT_EQ(y.shape(), (Shape{N, G * Og, H * S, W * S}));
      expect_near(y.to_vector(), want, "conv_transpose2d");
    });
}

INSTANTIATE_TEST_SUITE_P(Contexts, Entry,
                         ::testing::Values(Variant{"gles_adopted", false, Mode::adopt},
                                           Variant{"gl_adopted", true, Mode::adopt},
                                           Variant{"gles_open_beside_gles_app", false, Mode::open_beside},
                                           Variant{"gl_open_beside_gl_app", true, Mode::open_beside}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(EntryGuard, BindingOutsideAnEntryThrows) {
  // GlState refuses a binding outside an entry (an op that forgot to enter fails loudly, on any
  // context); inside one (nested too) it binds.
  Device dev = Device::open();
  detail::DeviceImpl& d = *dev.impl();
  EXPECT_THROW(d.gl().bind_buffer(detail::GlState::kSsbo, 0), DeviceError);
  EXPECT_THROW(d.gl().bind_ubo(0, 0, 0, 0), DeviceError);
  EXPECT_THROW(d.gl().use_program(0), DeviceError);
  {
    detail::Enter outer(d, "test");
    detail::Enter inner(d, "test");
    EXPECT_NO_THROW(d.gl().bind_buffer(detail::GlState::kSsbo, 0));
  }
  EXPECT_THROW(d.gl().bind_ssbo(0, 0), DeviceError);
}

}  // namespace
