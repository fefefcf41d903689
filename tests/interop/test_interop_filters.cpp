// Graphics apps: frame filters from texture to texture in one dispatch (interop::conv2d_texture)
// against a float64 reference: formats in and out, origins, channel counts, stride, dilation,
// asymmetric padding, activations, scale / bias on both sides, f16 weights, no bias, NaN texels,
// the typed errors, and the loop limit; each place the kernel reads weights from (a uniform block
// for f32, shared memory for small f16 ones, the SSBO for large f16 ones).
#include <cmath>
#include <random>

#include "gltensor/interop.hpp"
#include "interop/gl_app.hpp"
#include "test_util.hpp"

using namespace gltensor;
using glt_app::AppContext;

namespace {

struct Case {
  const char* name;
  GLenum in_format, out_format;
  int W, H, cin, cout, kh, kw;
  Conv2dOptions opt;
  Epilogue epi;
  bool bias;
  DType wdtype;
  interop::Origin in_origin, out_origin;
  bool scale;  // non-trivial scale / bias on both sides
};

Conv2dOptions options(std::array<std::int64_t, 2> stride, std::array<std::int64_t, 4> pad,
                      std::array<std::int64_t, 2> dil) {
  Conv2dOptions o;
  o.stride = stride, o.padding = pad, o.dilation = dil;
  return o;
}

double act(const Epilogue& e, double x) {
  switch (e.act) {
    case Activation::none:
      return x;
    case Activation::relu:
      return x > 0 || std::isnan(x) ? x : 0.0;
    case Activation::clip:
      return std::isnan(x) ? x : std::min(std::max(x, double(e.p0)), double(e.p1));
    case Activation::sigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    default:
      ADD_FAILURE() << "no reference for this activation";
      return x;
  }
}

class Filters : public ::testing::TestWithParam<Case> {};

TEST_P(Filters, MatchFloat64Reference) {
  const Case& c = GetParam();
  GLT_RNG(rng);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  AppContext app(false);
  Device dev = Device::adopt_current();
  // Input texels (row 0 = texel row 0), 4 channels.
  const bool in8 = c.in_format == GL_RGBA8;
  std::vector<float> texels(static_cast<std::size_t>(c.W * c.H * 4));
  for (float& v : texels) v = in8 ? static_cast<float>(rng() & 255) / 255.0f : u(rng) * 2.0f;
  if (!in8 && texels.size() > 5) texels[5] = std::nanf("");  // texel 1, channel 1
  GLuint tin = 0, tout = 0;
  glGenTextures(1, &tin);
  glBindTexture(GL_TEXTURE_2D, tin);
  glTexStorage2D(GL_TEXTURE_2D, 1, c.in_format, c.W, c.H);
  if (in8) {
    std::vector<std::uint8_t> b(texels.size());
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::uint8_t>(std::lround(texels[i] * 255.0f));
    glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, c.W, c.H, GL_RGBA, GL_UNSIGNED_BYTE, b.data());
  } else {
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, c.W, c.H, GL_RGBA, GL_FLOAT, texels.data());
  }
  const Conv2dOptions& o = c.opt;
  const int OH =
      static_cast<int>((c.H + o.padding[0] + o.padding[2] - o.dilation[0] * (c.kh - 1) - 1) / o.stride[0] + 1);
  const int OW =
      static_cast<int>((c.W + o.padding[1] + o.padding[3] - o.dilation[1] * (c.kw - 1) - 1) / o.stride[1] + 1);
  glGenTextures(1, &tout);
  glBindTexture(GL_TEXTURE_2D, tout);
  glTexStorage2D(GL_TEXTURE_2D, 1, c.out_format, OW, OH);
  glBindTexture(GL_TEXTURE_2D, 0);
  std::vector<float> wv(static_cast<std::size_t>(c.cout * c.cin * c.kh * c.kw)), bv(static_cast<std::size_t>(c.cout));
  for (float& v : wv) v = u(rng) * 0.5f;
  for (float& v : bv) v = u(rng) * 0.2f;
  Tensor w = Tensor::from_host(dev, wv, {c.cout, c.cin, c.kh, c.kw}).to(c.wdtype);
  Tensor b = c.bias ? Tensor::from_host(dev, bv, {c.cout}).to(c.wdtype) : Tensor();
  if (c.wdtype == DType::f16) {  // the reference uses the weights as stored
    wv = w.to(DType::f32).to_vector();
    if (c.bias) bv = b.to(DType::f32).to_vector();
  }
  interop::TextureTransfer in_opt, out_opt;
  in_opt.origin = c.in_origin, out_opt.origin = c.out_origin, in_opt.channels = c.cin;
  if (c.scale) {
    in_opt.scale = {0.5f, 2.0f, -1.0f, 1.5f}, in_opt.bias = {0.1f, -0.2f, 0.3f, 0.0f};
    out_opt.scale = {0.25f, 0.5f, 2.0f, 1.0f}, out_opt.bias = {0.5f, 0.25f, 0.0f, 0.1f};
  }
  interop::conv2d_texture({tin, c.in_format, c.W, c.H, 0}, {tout, c.out_format, OW, OH, 0}, w, b, o, c.epi, in_opt,
                          out_opt);
  interop::TextureTransfer read;
  read.origin = c.out_origin;
  const std::vector<float> got = interop::from_texture(dev, {tout, c.out_format, OW, OH, 0}, read).to_vector();
  const int out_ch = c.out_format == GL_R32F ? 1 : 4;
  ASSERT_EQ(got.size(), static_cast<std::size_t>(out_ch * OH * OW));
  const auto in_at = [&](int ch, int y, int x) -> double {  // picture coordinates
    if (y < 0 || y >= c.H || x < 0 || x >= c.W) return 0.0;
    const int ty = c.in_origin == interop::Origin::bottom_left ? c.H - 1 - y : y;
    return double(texels[static_cast<std::size_t>((ty * c.W + x) * 4 + ch)]) * in_opt.scale[ch] + in_opt.bias[ch];
  };
  const bool out8 = c.out_format == GL_RGBA8;
  int checked = 0;
  for (int oc = 0; oc < out_ch; ++oc)
    for (int y = 0; y < OH; ++y)
      for (int x = 0; x < OW; ++x) {
        double want;
        if (oc < c.cout) {
          double s = c.bias ? bv[static_cast<std::size_t>(oc)] : 0.0;
          for (int ic = 0; ic < c.cin; ++ic)
            for (int ky = 0; ky < c.kh; ++ky)
              for (int kx = 0; kx < c.kw; ++kx) {
                const int iy = static_cast<int>(y * o.stride[0] - o.padding[0] + ky * o.dilation[0]);
                const int ix = static_cast<int>(x * o.stride[1] - o.padding[1] + kx * o.dilation[1]);
                if (iy < 0 || iy >= c.H || ix < 0 || ix >= c.W) continue;  // zero padding
                s += wv[static_cast<std::size_t>(((oc * c.cin + ic) * c.kh + ky) * c.kw + kx)] * in_at(ic, iy, ix);
              }
          want = act(c.epi, s) * out_opt.scale[oc] + out_opt.bias[oc];
        } else {
          want = oc == 3 ? 1.0 : 0.0;
        }
        const float g = got[static_cast<std::size_t>((oc * OH + y) * OW + x)];
        const std::string where = std::string(c.name) + " channel " + std::to_string(oc) + " at (" + std::to_string(x) +
                                  ", " + std::to_string(y) + ")";
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(g) || out8) << where << ": got " << g;  // RGBA8 stores NaN as 0 or anything
        } else if (out8) {
          ASSERT_NEAR(g, std::min(std::max(want, 0.0), 1.0), 1.0 / 255 + 1e-6) << where;
        } else {
          const double tol = c.out_format == GL_RGBA16F ? 1e-3 : 1e-4;  // f16 texels: 11 bits
          ASSERT_NEAR(g, want, tol * (1 + std::abs(want))) << where;
        }
        ++checked;
      }
  EXPECT_GT(checked, 0);
  glDeleteTextures(1, &tin);
  glDeleteTextures(1, &tout);
  EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR));
}

using O = interop::Origin;
constexpr DType f32 = DType::f32, f16 = DType::f16;
// clang-format off
INSTANTIATE_TEST_SUITE_P(Interop, Filters, ::testing::Values(
    //   name                        in          out         W   H  CI CO KH  KW  options                                   epilogue                   bias weights origin in      origin out      scale
    Case{"rgb8_3x3",                 GL_RGBA8,   GL_RGBA8,   37, 21, 3, 3, 3,  3, Conv2dOptions::pad(1),                    {},                        true, f32, O::bottom_left, O::bottom_left, false},
    Case{"f32_stride_dil_asym",      GL_RGBA32F, GL_RGBA32F, 29, 19, 4, 4, 3,  5, options({2, 1}, {2, 0, 1, 3}, {1, 2}),   Activation::relu,          true, f32, O::top_left,    O::bottom_left, true},
    Case{"f32_to_r32f_1ch",          GL_RGBA32F, GL_R32F,    17, 16, 2, 1, 1,  1, {},                                       Epilogue::clip(-0.5, 0.5), false, f32, O::bottom_left, O::top_left,   false},
    Case{"f16_weights_sigmoid",      GL_RGBA8,   GL_RGBA16F, 16, 16, 3, 2, 5,  5, Conv2dOptions::pad(2, 2),                 Activation::sigmoid,       true, f16, O::top_left,    O::top_left,    true},
    Case{"big_kernel_ubo",           GL_RGBA32F, GL_RGBA32F, 30, 27, 4, 4, 25, 25, Conv2dOptions::pad(12),                  {},                        true, f32, O::bottom_left, O::top_left,    true},
    Case{"big_kernel_f16_from_ssbo", GL_RGBA32F, GL_RGBA32F, 30, 27, 4, 4, 25, 25, Conv2dOptions::pad(12),                  {},                        true, f16, O::bottom_left, O::top_left,    true},
    Case{"one_texel",                GL_RGBA32F, GL_RGBA32F, 1,  1,  1, 4, 3,  3, Conv2dOptions::pad(1),                    {},                        true, f32, O::bottom_left, O::bottom_left, false}),
    [](const auto& info) { return std::string(info.param.name); });
// clang-format on

// Two immutable w x h textures of `format` (bound to nothing afterwards).
void immutable_textures(GLuint (&t)[2], GLenum format, int w, int h) {
  glGenTextures(2, t);
  for (GLuint x : t) {
    glBindTexture(GL_TEXTURE_2D, x);
    glTexStorage2D(GL_TEXTURE_2D, 1, format, w, h);
  }
  glBindTexture(GL_TEXTURE_2D, 0);
}

// One process, filters that differ only in what the program is built for (kernel size, where the
// weights are read, scale / bias): each gets its own program (a shared one would give the first
// one's results).
TEST(FiltersPrograms, EachVariantItsOwnProgram) {
  AppContext app(false);
  Device dev = Device::adopt_current();
  GLuint t[2];
  immutable_textures(t, GL_RGBA32F, 9, 9);
  std::vector<float> ones_px(9 * 9 * 4, 1.0f);
  glBindTexture(GL_TEXTURE_2D, t[0]);
  glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, 9, 9, GL_RGBA, GL_FLOAT, ones_px.data());
  glBindTexture(GL_TEXTURE_2D, 0);
  const interop::Texture a{t[0], GL_RGBA32F, 9, 9, 0}, b{t[1], GL_RGBA32F, 9, 9, 0};
  const auto centre = [&] {  // red of the centre texel of b
    return interop::from_texture(dev, b).narrow(1, 0, 1).narrow(2, 4, 1).narrow(3, 4, 1).item();
  };
  // All-ones input, all-ones weights [1, 4, k, k]: the centre sums 4 k^2 ones.
  interop::conv2d_texture(a, b, ones(dev, {1, 4, 3, 3}), Tensor(), Conv2dOptions::pad(1));
  EXPECT_EQ(centre(), 36.0f);
  interop::conv2d_texture(a, b, ones(dev, {1, 4, 5, 5}), Tensor(), Conv2dOptions::pad(2));
  EXPECT_EQ(centre(), 100.0f);
  interop::conv2d_texture(a, b, ones(dev, {1, 4, 5, 5}, DType::f16), Tensor(), Conv2dOptions::pad(2));
  EXPECT_EQ(centre(), 100.0f);
  interop::TextureTransfer scaled;
  scaled.scale = {2, 2, 2, 2};
  interop::conv2d_texture(a, b, ones(dev, {1, 4, 5, 5}), Tensor(), Conv2dOptions::pad(2), {}, scaled);
  EXPECT_EQ(centre(), 200.0f);
  interop::conv2d_texture(a, b, ones(dev, {1, 4, 5, 5}), Tensor(), Conv2dOptions::pad(2), {}, {}, scaled);
  EXPECT_EQ(centre(), 200.0f);
  interop::conv2d_texture(a, b, ones(dev, {1, 4, 3, 3}), Tensor(), Conv2dOptions::pad(1));
  EXPECT_EQ(centre(), 36.0f);
  glDeleteTextures(2, t);
  EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR));
}

TEST(FiltersErrors, TypedErrorsNameTheOpAndShapes) {
  AppContext app(false);
  Device dev = Device::adopt_current();
  GLuint t[2];
  immutable_textures(t, GL_RGBA8, 8, 8);
  const interop::Texture a{t[0], GL_RGBA8, 8, 8, 0}, b{t[1], GL_RGBA8, 8, 8, 0};
  Tensor w = ones(dev, {3, 4, 3, 3});
  // Without padding the 8 x 8 input gives 6 x 6, not the 8 x 8 output.
  EXPECT_THROW_MSG(interop::conv2d_texture(a, b, w), ShapeError, "6 x 6");
  EXPECT_THROW_MSG(interop::conv2d_texture(a, b, ones(dev, {5, 4, 3, 3}), Tensor(), Conv2dOptions::pad(1)), ShapeError,
                   "[5, 4, 3, 3]");
  EXPECT_THROW_MSG(interop::conv2d_texture(a, b, w, ones(dev, {4}), Conv2dOptions::pad(1)), ShapeError, "bias");
  // An input too small for one window: the op, the input, the weight, the options and the size.
  EXPECT_THROW_MSG(
      interop::conv2d_texture(a, b, ones(dev, {3, 4, 9, 9})), ShapeError,
      "gltensor::interop::conv2d_texture: input texture 8 x 8 (W x H) is too small for weight [3, 4, 9, 9] (stride "
      "[1, 1], padding [0, 0, 0, 0], dilation [1, 1]): the output size would be 0 x 0 (W x H)");
  Conv2dOptions dil;
  dil.dilation = {1, 4};  // 9 columns wide
  EXPECT_THROW_MSG(interop::conv2d_texture(a, b, w, Tensor(), dil), ShapeError,
                   "8 x 8 (W x H) is too small for weight [3, 4, 3, 3] (stride [1, 1], padding [0, 0, 0, 0], dilation "
                   "[1, 4]): the output size would be 0 x 6 (W x H)");
  Conv2dOptions g = Conv2dOptions::pad(1);
  g.groups = 2;
  EXPECT_THROW_MSG(interop::conv2d_texture(a, b, ones(dev, {4, 2, 3, 3}), Tensor(), g), ValueError, "groups");
  EXPECT_THROW_MSG(interop::conv2d_texture(a, {t[1], GL_R8, 8, 8, 0}, w, Tensor(), Conv2dOptions::pad(1)), DTypeError,
                   "GL_R8");
  EXPECT_THROW_MSG(interop::conv2d_texture(a, b, ones(dev, {3, 4, 3, 3}, DType::i32), Tensor(), Conv2dOptions::pad(1)),
                   DTypeError, "int32");
  // A kernel whose loops exceed the (lowered) loop limit.
  dev.set_loop_limit(50);
  EXPECT_THROW_MSG(interop::conv2d_texture(a, b, w, Tensor(), Conv2dOptions::pad(1)), LimitError, "conv2d_texture");
  dev.set_loop_limit(0);
  interop::conv2d_texture(a, b, w, Tensor(), Conv2dOptions::pad(1));  // the device is still usable
  EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR));
  glDeleteTextures(2, t);
}

}  // namespace
