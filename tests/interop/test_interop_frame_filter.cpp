// Graphics apps: frame filter chains (interop::FrameFilter) against a float64 reference: one or
// two conv2d stages with elementwise steps before, between and after them (relu, clamp, leaky
// relu, sigmoid, mul / add by scalars and per-channel vectors), f32 and f16 intermediates,
// random frames of odd sizes, a 1 x 1 frame, grids split past the dispatch limit, NaN / Inf in
// the weights; one dispatch per conv2d, the application's GL state left as it was, typed errors.
#include <cmath>
#include <functional>
#include <random>

#include "gltensor/interop.hpp"
#include "interop/gl_app.hpp"
#include "runtime/device_impl.hpp"
#include "test_util.hpp"

using namespace gltensor;
using glt_app::AppContext;
using Mids = interop::FrameFilter::Intermediates;

namespace {

// A picture [C][H][W] in float64, with each value's magnitude bound (for the f16 tolerance).
struct Plane {
  int C = 0, H = 0, W = 0;
  std::vector<double> v, mag;
  std::size_t idx(int c, int y, int x) const { return static_cast<std::size_t>((c * H + y) * W + x); }
  double& at(int c, int y, int x) { return v[idx(c, y, x)]; }
  double& mag_at(int c, int y, int x) { return mag[idx(c, y, x)]; }
  double at(int c, int y, int x) const { return v[idx(c, y, x)]; }
  double mag_at(int c, int y, int x) const { return mag[idx(c, y, x)]; }
  Plane(int c, int h, int w)
      : C(c), H(h), W(w), v(static_cast<std::size_t>(c * h * w)), mag(static_cast<std::size_t>(c * h * w)) {}
};

// The reference of one step: elementwise ops as the filter's public API names them.
struct Op {
  enum Kind { conv, relu, clamp, leaky, sigmoid, mul, add } kind;
  std::vector<float> w, b;  // conv: weight [CO, CI, K, K], bias [CO]; mul / add: one or C values
  int co = 0, ci = 0, k = 0, pad = 0, stride = 1;
  double p0 = 0, p1 = 0;
};

double elementwise(const Op& op, int c, double x) {
  const auto par = [&](const std::vector<float>& v) {
    return double(v.size() == 1 ? v[0] : v[static_cast<std::size_t>(c)]);
  };
  switch (op.kind) {
    case Op::relu:
      return x > 0 || std::isnan(x) ? x : 0.0;
    case Op::clamp:
      return std::isnan(x) ? x : std::min(std::max(x, op.p0), op.p1);
    case Op::leaky:
      return x > 0 ? x : x * op.p0;
    case Op::sigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case Op::mul:
      return x * par(op.w);
    case Op::add:
      return x + par(op.b);
    case Op::conv:
      break;
  }
  return x;
}

Plane conv_ref(const Plane& in, const Op& op) {
  const int OH = (in.H + 2 * op.pad - op.k) / op.stride + 1, OW = (in.W + 2 * op.pad - op.k) / op.stride + 1;
  Plane out(op.co, OH, OW);
  const Plane& src = in;
  for (int o = 0; o < op.co; ++o)
    for (int y = 0; y < OH; ++y)
      for (int x = 0; x < OW; ++x) {
        double s = op.b.empty() ? 0.0 : op.b[static_cast<std::size_t>(o)], m = std::abs(s);
        for (int c = 0; c < op.ci; ++c)
          for (int ky = 0; ky < op.k; ++ky)
            for (int kx = 0; kx < op.k; ++kx) {
              const int iy = y * op.stride - op.pad + ky, ix = x * op.stride - op.pad + kx;
              if (iy < 0 || iy >= in.H || ix < 0 || ix >= in.W) continue;
              const double w = op.w[static_cast<std::size_t>(((o * op.ci + c) * op.k + ky) * op.k + kx)];
              s += w * src.at(c, iy, ix);
              m += std::abs(w) * src.mag_at(c, iy, ix);
            }
        out.at(o, y, x) = s, out.mag_at(o, y, x) = m;
      }
  return out;
}

// The chain on a picture (f16 intermediates: values past a conv2d that another conv2d reads are
// rounded to 11 bits, which the magnitude bound carries as a relative error).
Plane chain_ref(Plane p, const std::vector<Op>& ops, bool f16) {
  std::size_t convs = 0, seen = 0;
  for (const Op& op : ops) convs += op.kind == Op::conv;
  for (const Op& op : ops) {
    if (op.kind == Op::conv) {
      if (f16 && seen > 0)
        for (double& m : p.mag) m *= 1.0 + 1.0 / 1024;
      p = conv_ref(p, op);
      ++seen;
      continue;
    }
    for (int c = 0; c < p.C; ++c)
      for (int y = 0; y < p.H; ++y)
        for (int x = 0; x < p.W; ++x) {
          const double before = p.at(c, y, x);
          p.at(c, y, x) = elementwise(op, c, before);
          const double g = op.kind == Op::mul ? std::abs(elementwise(op, c, 1.0)) : 1.0;
          p.mag_at(c, y, x) = std::max(p.mag_at(c, y, x) * g, std::abs(p.at(c, y, x)));
        }
  }
  (void)convs;
  return p;
}

void build(interop::FrameFilter& f, const Device& dev, const std::vector<Op>& ops) {
  for (const Op& op : ops) switch (op.kind) {
      case Op::conv:
        f.conv2d(Tensor::from_host(dev, op.w, {op.co, op.ci, op.k, op.k}),
                 op.b.empty() ? Tensor() : Tensor::from_host(dev, op.b, {op.co}), [&] {
                   Conv2dOptions o = Conv2dOptions::pad(op.pad);
                   o.stride = {op.stride, op.stride};
                   return o;
                 }());
        break;
      case Op::relu:
        f.relu();
        break;
      case Op::clamp:
        f.clamp(op.p0, op.p1);
        break;
      case Op::leaky:
        f.activation(Epilogue::leaky_relu(op.p0));
        break;
      case Op::sigmoid:
        f.activation(Activation::sigmoid);
        break;
      case Op::mul:
        if (op.w.size() == 1)
          f.mul(op.w[0]);
        else
          f.mul(op.w);
        break;
      case Op::add:
        if (op.b.size() == 1)
          f.add(op.b[0]);
        else
          f.add(op.b);
        break;
    }
}

struct Case {
  const char* name;
  GLenum in_format, out_format;
  int W, H;
  std::uint32_t dispatch_limit;  // 0: the device's
  bool nan_inf_weights;
  std::function<std::vector<Op>(std::mt19937_64&)> ops;
};

std::vector<float> rand_vec(std::mt19937_64& rng, std::size_t n, float scale) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}
Op conv(std::mt19937_64& rng, int ci, int co, int k, int pad, int stride = 1, bool bias = true) {
  Op op{Op::conv, rand_vec(rng, static_cast<std::size_t>(co * ci * k * k), 0.5f),
        bias ? rand_vec(rng, static_cast<std::size_t>(co), 0.2f) : std::vector<float>{}};
  op.co = co, op.ci = ci, op.k = k, op.pad = pad, op.stride = stride;
  return op;
}
Op act(Op::Kind k, double p0 = 0, double p1 = 0) {
  Op op{k, {}, {}};
  op.p0 = p0, op.p1 = p1;
  return op;
}
Op mul(std::vector<float> s) { return Op{Op::mul, std::move(s), {}}; }
Op add(std::vector<float> b) { return Op{Op::add, {}, std::move(b)}; }

class Chains : public ::testing::TestWithParam<std::tuple<Case, Mids>> {};

TEST_P(Chains, MatchFloat64Reference) {
  const Case& c = std::get<0>(GetParam());
  const Mids mids = std::get<1>(GetParam());
  GLT_RNG(rng);
  AppContext app(false);
  Device dev = Device::adopt_current();
  if (c.dispatch_limit) dev.set_dispatch_limit(c.dispatch_limit);
  std::vector<Op> ops = c.ops(rng);
  if (c.nan_inf_weights) {
    for (Op& op : ops)
      if (op.kind == Op::conv) {
        op.w[0] = std::nanf("");
        op.w[op.w.size() / 2] = INFINITY;
        break;
      }
  }
  const bool in8 = c.in_format == GL_RGBA8;
  std::vector<float> texels(static_cast<std::size_t>(c.W * c.H * 4));
  for (float& v : texels)
    v = in8 ? static_cast<float>(rng() & 255) / 255.0f : std::uniform_real_distribution<float>(-2, 2)(rng);
  GLuint tex[2];
  glGenTextures(2, tex);
  glBindTexture(GL_TEXTURE_2D, tex[0]);
  glTexStorage2D(GL_TEXTURE_2D, 1, c.in_format, c.W, c.H);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
  if (in8) {
    std::vector<std::uint8_t> b(texels.size());
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::uint8_t>(std::lround(texels[i] * 255.0f));
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, c.W, c.H, GL_RGBA, GL_UNSIGNED_BYTE, b.data());
  } else {
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, c.W, c.H, GL_RGBA, GL_FLOAT, texels.data());
  }
  const int cin = ops[0].kind == Op::conv ? ops[0].ci : [&] {
    for (const Op& op : ops)
      if (op.kind == Op::conv) return op.ci;
    return 0;
  }();
  Plane in(cin, c.H, c.W);
  for (int ch = 0; ch < cin; ++ch)
    for (int y = 0; y < c.H; ++y)
      for (int x = 0; x < c.W; ++x) {
        // Texel row 0 is the picture's bottom row (the default origin).
        in.at(ch, y, x) = texels[static_cast<std::size_t>(((c.H - 1 - y) * c.W + x) * 4 + ch)];
        in.mag_at(ch, y, x) = std::abs(in.at(ch, y, x));
      }
  interop::FrameFilter f(dev, mids);
  build(f, dev, ops);
  const bool f16 = f.f16_intermediates();
  EXPECT_EQ(f16, mids == Mids::f16 || (mids == Mids::automatic && dev.caps().fp16_arithmetic));
  const Plane want = chain_ref(in, ops, f16);
  glBindTexture(GL_TEXTURE_2D, tex[1]);
  glTexStorage2D(GL_TEXTURE_2D, 1, c.out_format, want.W, want.H);
  glBindTexture(GL_TEXTURE_2D, 0);
  interop::TextureTransfer in_opt;
  in_opt.channels = cin;
  const auto dispatches0 = dev.impl()->queue().dispatches();
  f.run({tex[0], c.in_format, c.W, c.H, 0}, {tex[1], c.out_format, want.W, want.H, 0}, in_opt);
  if (!c.dispatch_limit) {
    EXPECT_EQ(dev.impl()->queue().dispatches() - dispatches0, f.dispatches());
  }
  std::size_t convs = 0;
  for (const Op& op : ops) convs += op.kind == Op::conv;
  EXPECT_EQ(f.dispatches(), convs);
  const std::vector<float> got =
      interop::from_texture(dev, {tex[1], c.out_format, want.W, want.H, 0}).to_vector();  // [1, 4, H, W]
  const bool out8 = c.out_format == GL_RGBA8;
  int checked = 0, nonfinite = 0;
  for (int oc = 0; oc < 4; ++oc)
    for (int y = 0; y < want.H; ++y)
      for (int x = 0; x < want.W; ++x) {
        const double w = oc < want.C ? want.at(oc, y, x) : (oc == 3 ? 1.0 : 0.0);
        const double mag = oc < want.C ? want.mag_at(oc, y, x) : 0.0;
        const float g = got[static_cast<std::size_t>((oc * want.H + y) * want.W + x)];
        const std::string where = std::string(c.name) + " channel " + std::to_string(oc) + " at (" + std::to_string(x) +
                                  ", " + std::to_string(y) + ")";
        ++checked;
        if (out8) {
          if (std::isnan(w)) continue;  // RGBA8 stores NaN as anything
          ASSERT_NEAR(g, std::min(std::max(w, 0.0), 1.0), 1.0 / 255 + 1e-5 + (f16 ? mag / 1024 : 0.0)) << where;
        } else if (!std::isfinite(w) || !std::isfinite(mag)) {
          ++nonfinite;
          if (std::isnan(w)) {
            EXPECT_TRUE(std::isnan(g)) << where << ": got " << g;
          } else if (std::isinf(w)) {
            EXPECT_EQ(g, static_cast<float>(w)) << where;
          }
        } else {
          const double texel = c.out_format == GL_RGBA16F ? 1.0 / 1024 : 1e-5;  // the output's rounding
          ASSERT_NEAR(g, w, texel * (1 + std::abs(w)) + 1e-5 * mag + (f16 ? mag / 1024 : 0.0)) << where;
        }
      }
  EXPECT_GT(checked, 0);
  if (c.nan_inf_weights && !out8) {
    EXPECT_GT(nonfinite, 0);
  }
  glDeleteTextures(2, tex);
  EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR));
}

using R = std::mt19937_64;
// clang-format off
const Case kCases[] = {
    {"rgb8_two_convs", GL_RGBA8, GL_RGBA8, 37, 21, 0, false, [](R& r) {
       return std::vector<Op>{conv(r, 3, 5, 3, 1), act(Op::relu), mul(rand_vec(r, 5, 2.0f)), add({0.125f}),
                              conv(r, 5, 3, 3, 1), act(Op::clamp, 0.0, 1.0)}; }},
    {"f32_pre_ops_stride", GL_RGBA32F, GL_RGBA32F, 29, 19, 0, false, [](R& r) {
       return std::vector<Op>{mul({0.5f}), add(rand_vec(r, 4, 1.0f)), act(Op::relu), conv(r, 4, 4, 3, 1, 2),
                              act(Op::sigmoid), mul({2.0f}), add({-1.0f})}; }},
    {"one_texel_wide_middle", GL_RGBA32F, GL_RGBA32F, 1, 1, 0, false, [](R& r) {
       return std::vector<Op>{conv(r, 4, 8, 3, 1), act(Op::leaky, 0.1), conv(r, 8, 4, 3, 1, 1, false)}; }},
    {"three_convs_odd", GL_RGBA32F, GL_RGBA16F, 17, 23, 0, false, [](R& r) {
       return std::vector<Op>{conv(r, 3, 2, 1, 0), act(Op::clamp, -0.25, 0.25), conv(r, 2, 3, 5, 2),
                              conv(r, 3, 4, 3, 1), add(rand_vec(r, 4, 0.5f))}; }},
    {"grid_past_dispatch_limit", GL_RGBA32F, GL_RGBA32F, 70, 45, 2, false, [](R& r) {
       return std::vector<Op>{conv(r, 4, 6, 3, 1), act(Op::relu), conv(r, 6, 4, 3, 1)}; }},
    {"nan_inf_weights", GL_RGBA32F, GL_RGBA32F, 13, 11, 0, true, [](R& r) {
       return std::vector<Op>{conv(r, 4, 3, 3, 1), act(Op::relu), conv(r, 3, 4, 3, 1)}; }},
};
// clang-format on

INSTANTIATE_TEST_SUITE_P(
    Interop, Chains,
    ::testing::Combine(::testing::ValuesIn(kCases), ::testing::Values(Mids::f32, Mids::f16, Mids::automatic)),
    [](const auto& info) {
      const Mids m = std::get<1>(info.param);
      return std::string(std::get<0>(info.param).name) + (m == Mids::f32 ? "_f32" : m == Mids::f16 ? "_f16" : "_auto");
    });

// The application's GL state (every binding) is as it was after a run, with an adopted context.
TEST(FrameFilterState, AdoptedContextLeftAsFound) {
  for (bool desktop : {false, true}) {
    AppContext app(desktop);
    Device dev = Device::adopt_current();
    GLuint out = 0;
    glGenTextures(1, &out);
    glBindTexture(GL_TEXTURE_2D, out);
    glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, 8, 8);
    glBindTexture(GL_TEXTURE_2D, 0);
    glt_app::AppState state(app);  // every binding of the application's
    const glt_app::Snapshot before = glt_app::snapshot(app);
    interop::FrameFilter f(dev);
    f.conv2d(ones(dev, {4, 4, 3, 3}), full(dev, {4}, 0.5), Conv2dOptions::pad(1)).relu().mul(0.01);
    f.conv2d(ones(dev, {3, 4, 1, 1}), Tensor()).clamp(0, 1);
    f.run({state.interop_texture, GL_RGBA8, 8, 8, 0}, {out, GL_RGBA8, 8, 8, 0});
    EXPECT_EQ(glt_app::diff(before, glt_app::snapshot(app)), "") << (desktop ? "GL" : "GLES");
    glDeleteTextures(1, &out);
  }
}

// f16 weights and bias are their values widened to f32: the same results, bit for bit, as f32
// weights holding the f16-rounded values.
TEST(FrameFilterF16, F16WeightsComputeAsTheirF32Values) {
  GLT_RNG(rng);
  AppContext app(false);
  Device dev = Device::adopt_current();
  const int W = 19, H = 13;
  GLuint t[3];
  glGenTextures(3, t);
  for (GLuint x : t) {
    glBindTexture(GL_TEXTURE_2D, x);
    glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA32F, W, H);
  }
  const std::vector<float> px = rand_vec(rng, static_cast<std::size_t>(W * H * 4), 2.0f);
  glBindTexture(GL_TEXTURE_2D, t[0]);
  glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, W, H, GL_RGBA, GL_FLOAT, px.data());
  glBindTexture(GL_TEXTURE_2D, 0);
  Tensor w16 = Tensor::from_host(dev, rand_vec(rng, 4 * 4 * 9, 0.5f), {4, 4, 3, 3}).to(DType::f16),
         b16 = Tensor::from_host(dev, rand_vec(rng, 4, 0.5f), {4}).to(DType::f16);
  interop::FrameFilter half(dev, Mids::f32), single(dev, Mids::f32);
  half.conv2d(w16, b16, Conv2dOptions::pad(1)).relu().conv2d(w16, b16, Conv2dOptions::pad(1));
  single.conv2d(w16.to(DType::f32), b16.to(DType::f32), Conv2dOptions::pad(1))
      .relu()
      .conv2d(w16.to(DType::f32), b16.to(DType::f32), Conv2dOptions::pad(1));
  half.run({t[0], GL_RGBA32F, W, H, 0}, {t[1], GL_RGBA32F, W, H, 0});
  single.run({t[0], GL_RGBA32F, W, H, 0}, {t[2], GL_RGBA32F, W, H, 0});
  const auto a = interop::from_texture(dev, {t[1], GL_RGBA32F, W, H, 0}).to_vector(),
             b = interop::from_texture(dev, {t[2], GL_RGBA32F, W, H, 0}).to_vector();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << "element " << i;
  glDeleteTextures(3, t);
}

TEST(FrameFilterErrors, TypedErrorsNameTheProblem) {
  AppContext app(false);
  Device dev = Device::adopt_current();
  GLuint t[2];
  glGenTextures(2, t);
  for (GLuint x : t) {
    glBindTexture(GL_TEXTURE_2D, x);
    glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, 8, 8);
  }
  glBindTexture(GL_TEXTURE_2D, 0);
  const interop::Texture a{t[0], GL_RGBA8, 8, 8, 0}, b{t[1], GL_RGBA8, 8, 8, 0};
  interop::FrameFilter empty(dev);
  EXPECT_THROW_MSG(empty.run(a, b), ValueError, "no conv2d");
  interop::FrameFilter f(dev);
  f.conv2d(ones(dev, {6, 4, 3, 3}), Tensor(), Conv2dOptions::pad(1));
  EXPECT_THROW_MSG(f.conv2d(ones(dev, {3, 5, 3, 3})), ShapeError, "gives 6");
  EXPECT_THROW_MSG(f.mul(std::vector<float>{1, 2, 3}), ShapeError, "6 output channels");
  EXPECT_THROW_MSG(f.conv2d(ones(dev, {3, 6, 3, 3}, DType::i32)), DTypeError, "int32");
  EXPECT_THROW_MSG(f.conv2d(ones(dev, {3, 6, 3}), Tensor()), ShapeError, "[C_out, C_in, KH, KW]");
  EXPECT_THROW_MSG(f.conv2d(ones(dev, {3, 6, 3, 3}), ones(dev, {4})), ShapeError, "bias");
  EXPECT_THROW_MSG(f.clamp(1, 0), ValueError, "clip");
  EXPECT_THROW_MSG(f.run(a, b), ShapeError, "6 channels");  // 6 channels into RGBA8
  f.conv2d(ones(dev, {3, 6, 3, 3}));                        // 8 x 8 -> 6 x 6 (no padding)
  EXPECT_THROW_MSG(f.run(a, b), ShapeError, "6 x 6");
  interop::FrameFilter pre(dev);
  pre.add(std::vector<float>{1, 2});
  EXPECT_THROW_MSG(pre.conv2d(ones(dev, {4, 4, 1, 1})), ShapeError, "before a conv2d of 4 input channels");
  interop::FrameFilter g(dev);
  g.conv2d(ones(dev, {4, 4, 3, 3}), Tensor(), Conv2dOptions::pad(1))
      .conv2d(ones(dev, {4, 4, 3, 3}), Tensor(), Conv2dOptions::pad(1));
  EXPECT_THROW_MSG(g.run(a, {t[1], GL_R8, 8, 8, 0}), DTypeError, "GL_R8");
  dev.set_loop_limit(50);
  EXPECT_THROW_MSG(g.run(a, b), LimitError, "FrameFilter");
  dev.set_loop_limit(0);
  EXPECT_NO_THROW(g.run(a, b));  // the device is still usable
  EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR));
  glDeleteTextures(2, t);
}

}  // namespace
