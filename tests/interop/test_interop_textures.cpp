// interop textures: from_texture and to_texture against host references for every format,
// both layouts, both origins, channel subsets, scale/bias, f16 tensors, mipmap levels, mutable
// textures; exact round trips; the origin convention checked through glReadPixels; errors.
#include <cmath>
#include <cstring>
#include <functional>

#include "gltensor/interop.hpp"
#include "interop/gl_app.hpp"
#include "runtime/device_impl.hpp"
#include "test_util.hpp"

using namespace gltensor;
using glt_app::AppContext;

namespace {

struct Fmt {
  GLenum internal, format, type;
  int channels;
  bool writable;
};
const Fmt kRGBA8{GL_RGBA8, GL_RGBA, GL_UNSIGNED_BYTE, 4, true};
const Fmt kRGBA16F{GL_RGBA16F, GL_RGBA, GL_HALF_FLOAT, 4, true};
const Fmt kRGBA32F{GL_RGBA32F, GL_RGBA, GL_FLOAT, 4, true};
const Fmt kR32F{GL_R32F, GL_RED, GL_FLOAT, 1, true};
const Fmt kR8{GL_R8, GL_RED, GL_UNSIGNED_BYTE, 1, false};
const Fmt kRG8{GL_RG8, GL_RG, GL_UNSIGNED_BYTE, 2, false};
const Fmt kR16F{GL_R16F, GL_RED, GL_HALF_FLOAT, 1, false};
const Fmt kRG16F{GL_RG16F, GL_RG, GL_HALF_FLOAT, 2, false};
const Fmt kRG32F{GL_RG32F, GL_RG, GL_FLOAT, 2, false};

// Texel values as the GL returns them (floats) for each format, and their upload bytes: rows in
// memory order, texel row 0 first.
struct Image {
  int w, h, ch;
  std::vector<float> texels;  // [texel row][x][c], as read back by texelFetch
  std::vector<std::uint8_t> bytes;
};

Image make_image(std::mt19937_64& rng, const Fmt& f, int w, int h) {
  Image im{w, h, f.channels, {}, {}};
  const std::size_t n = static_cast<std::size_t>(w * h * f.channels);
  im.texels.resize(n);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> real(-4.0f, 4.0f);
  for (std::size_t i = 0; i < n; ++i) {
    if (f.type == GL_UNSIGNED_BYTE) {
      const auto b = static_cast<std::uint8_t>(byte(rng));
      im.bytes.push_back(b);
      im.texels[i] = static_cast<float>(b) / 255.0f;
    } else if (f.type == GL_HALF_FLOAT) {
      const std::uint16_t hbits = f32_to_f16(real(rng));
      im.bytes.push_back(static_cast<std::uint8_t>(hbits & 0xff));
      im.bytes.push_back(static_cast<std::uint8_t>(hbits >> 8));
      im.texels[i] = f16_to_f32(hbits);
    } else {
      const float v = real(rng);
      im.texels[i] = v;
      const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
      im.bytes.insert(im.bytes.end(), p, p + 4);
    }
  }
  return im;
}

class Textures : public ::testing::TestWithParam<bool> {  // desktop OpenGL?
 protected:
  void SetUp() override {
    app_ = std::make_unique<AppContext>(GetParam());
    glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    dev_ = Device::adopt_current();
  }
  void TearDown() override {
    dev_ = Device();
    glDeleteTextures(static_cast<GLsizei>(textures_.size()), textures_.data());
    EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR));
    app_.reset();
  }
  // An immutable texture (glTexStorage2D) with `levels` levels; level 0 filled from `im`.
  GLuint texture(const Fmt& f, int w, int h, const Image* im = nullptr, int levels = 1, bool immutable = true) {
    GLuint t = 0;
    glGenTextures(1, &t);
    glBindTexture(GL_TEXTURE_2D, t);
    if (immutable)
      glTexStorage2D(GL_TEXTURE_2D, levels, f.internal, w, h);
    else
      glTexImage2D(GL_TEXTURE_2D, 0, static_cast<GLint>(f.internal), w, h, 0, f.format, f.type, nullptr);
    if (im) glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, w, h, f.format, f.type, im->bytes.data());
    glBindTexture(GL_TEXTURE_2D, 0);
    textures_.push_back(t);
    return t;
  }
  std::unique_ptr<AppContext> app_;
  Device dev_;
  std::vector<GLuint> textures_;
};

// The tensor element of channel c at picture row y, column x, as from_texture lays it out.
float expected(const Image& im, const interop::TextureTransfer& o, int c, int y, int x) {
  const int ty = o.origin == interop::Origin::bottom_left ? im.h - 1 - y : y;
  const float t = im.texels[static_cast<std::size_t>((ty * im.w + x) * im.ch + c)];
  return t * o.scale[static_cast<std::size_t>(c)] + o.bias[static_cast<std::size_t>(c)];
}

std::vector<double> reference(const Image& im, const interop::TextureTransfer& o, int C) {
  std::vector<double> ref;
  const bool nchw = o.layout == interop::Layout::nchw;
  if (nchw) {
    for (int c = 0; c < C; ++c)
      for (int y = 0; y < im.h; ++y)
        for (int x = 0; x < im.w; ++x) ref.push_back(expected(im, o, c, y, x));
  } else {
    for (int y = 0; y < im.h; ++y)
      for (int x = 0; x < im.w; ++x)
        for (int c = 0; c < C; ++c) ref.push_back(expected(im, o, c, y, x));
  }
  return ref;
}

TEST_P(Textures, FromTextureMatchesTheTexelsInEveryFormatAndLayout) {
  GLT_RNG(rng);
  for (const Fmt* f : {&kRGBA8, &kRGBA16F, &kRGBA32F, &kR32F, &kR8, &kRG8, &kR16F, &kRG16F, &kRG32F}) {
    const int w = 19, h = 7;  // odd sizes: partial workgroups
    const Image im = make_image(rng, *f, w, h);
    const GLuint t = texture(*f, w, h, &im);
    for (auto layout : {interop::Layout::nchw, interop::Layout::nhwc})
      for (auto origin : {interop::Origin::bottom_left, interop::Origin::top_left}) {
        interop::TextureTransfer o;
        o.layout = layout;
        o.origin = origin;
        o.scale = {2.0f, -1.0f, 0.5f, 1.0f};
        o.bias = {0.25f, 1.0f, 0.0f, -3.0f};
        SCOPED_TRACE("format " + std::to_string(f->internal) + (layout == interop::Layout::nchw ? " nchw" : " nhwc") +
                     (origin == interop::Origin::bottom_left ? " bottom_left" : " top_left"));
        Tensor x = interop::from_texture(dev_, {t, f->internal, w, h, 0}, o);
        EXPECT_EQ(x.shape(),
                  layout == interop::Layout::nchw ? (Shape{1, f->channels, h, w}) : (Shape{1, h, w, f->channels}));
        // Normalized bytes: the GL's c / 255 may differ from the host's by an ulp (llvmpipe: up to
        // 6e-8), which scale and bias carry into results near 0.
        const double atol = f->type == GL_UNSIGNED_BYTE ? 3e-7 : 0;
        EXPECT_TRUE(glt_test::close(x.to_vector(), reference(im, o, f->channels), 1e-6, atol));
      }
  }
}

TEST_P(Textures, FromTextureChannelSubsetAndHalfTensor) {
  GLT_RNG(rng);
  const Image im = make_image(rng, kRGBA32F, 8, 6);
  const GLuint t = texture(kRGBA32F, 8, 6, &im);
  interop::TextureTransfer o;
  o.channels = 3;  // RGB of RGBA
  o.dtype = DType::f16;
  Tensor x = interop::from_texture(dev_, {t, GL_RGBA32F, 8, 6, 0}, o);
  EXPECT_EQ(x.dtype(), DType::f16);
  EXPECT_EQ(x.shape(), (Shape{1, 3, 6, 8}));
  auto ref = reference(im, o, 3);
  for (auto& r : ref) r = f16_to_f32(f32_to_f16(static_cast<float>(r)));
  EXPECT_TRUE(glt_test::close(x.to_vector(), ref, 0, 0));
  o.channels = 5;
  EXPECT_THROW(interop::from_texture(dev_, {t, GL_RGBA32F, 8, 6, 0}, o), ValueError);
}

TEST_P(Textures, ToTextureRoundTripsExactly) {
  GLT_RNG(rng);
  for (const Fmt* f : {&kRGBA8, &kRGBA16F, &kRGBA32F, &kR32F}) {
    for (auto layout : {interop::Layout::nchw, interop::Layout::nhwc})
      for (auto origin : {interop::Origin::bottom_left, interop::Origin::top_left}) {
        const int w = 21, h = 9;
        interop::TextureTransfer o;
        o.layout = layout;
        o.origin = origin;
        const Shape shape = layout == interop::Layout::nchw ? Shape{1, f->channels, h, w} : Shape{1, h, w, f->channels};
        // Values that the format holds exactly: k / 255 for RGBA8, halves for RGBA16F.
        std::vector<float> v(static_cast<std::size_t>(numel_of(shape)));
        std::uniform_int_distribution<int> byte(0, 255);
        for (auto& e : v) {
          const float r = static_cast<float>(byte(rng));
          e = f->internal == GL_RGBA8 ? r / 255.0f : f16_to_f32(f32_to_f16((r - 128.0f) / 7.0f));
        }
        const GLuint t = texture(*f, w, h);
        Tensor x = Tensor::from_host(dev_, v, shape);
        interop::to_texture(x, {t, f->internal, w, h, 0}, o);
        Tensor back = interop::from_texture(dev_, {t, f->internal, w, h, 0}, o);
        EXPECT_TRUE(glt_test::close(back.to_vector(), glt_test::to_double(v), 1e-6, 0))
            << "format " << f->internal << " layout " << static_cast<int>(layout) << " origin "
            << static_cast<int>(origin);
      }
  }
}

TEST_P(Textures, OriginConventionAgainstReadPixels) {
  // A 2 x 4 RGBA8 picture whose top row (tensor row 0) is red and bottom rows blue: with the
  // default origin, the texture's texel row 0 (glReadPixels' first row: the bottom) is blue.
  const int w = 2, h = 4;
  std::vector<float> v(static_cast<std::size_t>(3 * h * w), 0.0f);
  for (int x = 0; x < w; ++x) v[static_cast<std::size_t>(x)] = 1.0f;  // channel 0, row 0
  for (int y = 1; y < h; ++y)
    for (int x = 0; x < w; ++x) v[static_cast<std::size_t>(2 * h * w + y * w + x)] = 1.0f;  // channel 2
  const GLuint t = texture(kRGBA8, w, h);
  interop::to_texture(Tensor::from_host(dev_, v, {3, h, w}), {t, GL_RGBA8, w, h, 0});
  interop::release(dev_, GL_FRAMEBUFFER_BARRIER_BIT | GL_PIXEL_BUFFER_BARRIER_BIT, false);
  GLuint fbo = 0;
  glGenFramebuffers(1, &fbo);
  glBindFramebuffer(GL_READ_FRAMEBUFFER, fbo);
  glFramebufferTexture2D(GL_READ_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, t, 0);
  std::vector<std::uint8_t> px(static_cast<std::size_t>(w * h * 4));
  glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
  glBindFramebuffer(GL_READ_FRAMEBUFFER, 0);
  glDeleteFramebuffers(1, &fbo);
  // Row 0 of glReadPixels = texel row 0 = the picture's bottom: blue, alpha 1 (filled).
  EXPECT_EQ(std::vector<int>(px.begin(), px.begin() + 4), (std::vector<int>{0, 0, 255, 255}));
  // The last row = the picture's top: red.
  const std::size_t top = static_cast<std::size_t>((h - 1) * w * 4);
  EXPECT_EQ(std::vector<int>(px.begin() + static_cast<std::ptrdiff_t>(top),
                             px.begin() + static_cast<std::ptrdiff_t>(top + 4)),
            (std::vector<int>{255, 0, 0, 255}));
}

TEST_P(Textures, ToTextureClampsRoundsAndAcceptsViews) {
  // RGBA8 stores clamp to [0, 1] and round to nearest; a permuted (NHWC viewed as NCHW) tensor.
  const int w = 3, h = 2;
  std::vector<float> nhwc;
  for (int i = 0; i < h * w; ++i) {
    nhwc.push_back(-0.5f);
    nhwc.push_back(2.0f);
    nhwc.push_back(100.4f / 255.0f);
    nhwc.push_back(0.5f);
  }
  Tensor x = Tensor::from_host(dev_, nhwc, {1, h, w, 4}).permute({0, 3, 1, 2});  // NCHW view
  ASSERT_FALSE(x.is_contiguous());
  const GLuint t = texture(kRGBA8, w, h);
  interop::TextureTransfer o;
  o.scale = {1, 1, 1, 0.5f};
  o.bias = {0, 0, 0, 0.3f};  // 0.55 * 255 = 140.25: no tie (GL leaves the rounding of ties to the driver)
  interop::to_texture(x, {t, GL_RGBA8, w, h, 0}, o);
  auto back = interop::from_texture(dev_, {t, GL_RGBA8, w, h, 0}, {interop::Layout::nhwc}).to_vector();
  EXPECT_FLOAT_EQ(back[0], 0.0f);
  EXPECT_FLOAT_EQ(back[1], 1.0f);
  EXPECT_FLOAT_EQ(back[2], 100.0f / 255.0f);
  EXPECT_FLOAT_EQ(back[3], 140.0f / 255.0f);  // 0.5 * 0.5 + 0.3
}

// The queue orders texture accesses by their hazards, as it does buffers: an image store then a
// fetch of the same texture (or a fetch then a store) gets a barrier; fetches after fetches, and
// accesses to other textures, get none.
TEST_P(Textures, TextureHazardsGetBarriersAndOnlyThey) {
  const int w = 4, h = 4;
  GLuint a = texture(kRGBA32F, w, h), b = texture(kRGBA32F, w, h);
  auto& q = dev_.impl()->queue();
  Tensor x = full(dev_, {1, 4, h, w}, 0.25);
  dev_.synchronize();  // a clean batch: no buffer hazard from here
  const auto barriers = [&](const std::function<void()>& f) {
    const auto b0 = q.barriers();
    f();
    return q.barriers() - b0;
  };
  interop::to_texture(x, {a, GL_RGBA32F, w, h, 0});
  Tensor ya, yb;
  EXPECT_EQ(barriers([&] { ya = interop::from_texture(dev_, {a, GL_RGBA32F, w, h, 0}); }), 1u) << "store, then fetch";
  EXPECT_EQ(barriers([&] { yb = interop::from_texture(dev_, {a, GL_RGBA32F, w, h, 0}); }), 0u) << "fetch, fetch";
  EXPECT_EQ(barriers([&] { interop::to_texture(x, {b, GL_RGBA32F, w, h, 0}); }), 0u) << "another texture";
  EXPECT_EQ(barriers([&] { interop::to_texture(x, {a, GL_RGBA32F, w, h, 0}); }), 1u) << "fetch, then store";
  EXPECT_EQ(ya.to_vector(), std::vector<float>(static_cast<std::size_t>(4 * w * h), 0.25f));
  EXPECT_EQ(yb.to_vector(), ya.to_vector());
}

// release() is the frame's one barrier: its glMemoryBarrier (the application's bits, GL's
// convention) also covers gltensor's next store into the texture it wrote, so that the next
// frame's dispatch needs none (a store after a store without release gets one).
TEST_P(Textures, ReleaseCoversTheNextFramesStore) {
  const int w = 4, h = 3;
  GLuint a = texture(kRGBA32F, w, h);
  auto& q = dev_.impl()->queue();
  Tensor x = full(dev_, {1, 4, h, w}, 0.25), y = full(dev_, {1, 4, h, w}, 0.5);
  dev_.synchronize();
  const auto barriers = [&](const std::function<void()>& f) {
    const auto b0 = q.barriers();
    f();
    return q.barriers() - b0;
  };
  const interop::Texture t{a, GL_RGBA32F, w, h, 0};
  interop::to_texture(x, t);
  EXPECT_EQ(barriers([&] { interop::to_texture(y, t); }), 1u) << "store, store";
  // Sampled next: the bits name only the application's fetch; the queue adds its own.
  EXPECT_EQ(barriers([&] { interop::release(dev_, GL_TEXTURE_FETCH_BARRIER_BIT, false); }), 1u);
  EXPECT_EQ(barriers([&] { interop::to_texture(y, t); }), 0u) << "store, release, store";
  EXPECT_EQ(barriers([&] { interop::release(dev_, interop::kTextureReadBarrierBits, false); }), 1u);
  EXPECT_EQ(barriers([&] { interop::to_texture(x, t); }), 0u) << "store, release, store";
  // With a fence for another context: still one barrier (and one fence, flushed).
  interop::to_texture(y, t);
  GLsync fence = nullptr;
  EXPECT_EQ(barriers([&] { fence = interop::release(dev_, interop::kTextureReadBarrierBits); }), 1u);
  ASSERT_NE(fence, nullptr);
  glDeleteSync(fence);
  EXPECT_EQ(barriers([&] { interop::to_texture(x, t); }), 0u) << "store, release with a fence, store";
  EXPECT_EQ(interop::from_texture(dev_, t).to_vector(), std::vector<float>(static_cast<std::size_t>(4 * w * h), 0.25f));
}

TEST_P(Textures, MipLevelsAndMutableTextures) {
  GLT_RNG(rng);
  // Level 1 of an immutable two-level texture.
  const GLuint t = texture(kRGBA32F, 8, 4, nullptr, 2);
  const Image im = make_image(rng, kRGBA32F, 4, 2);
  glBindTexture(GL_TEXTURE_2D, t);
  glTexSubImage2D(GL_TEXTURE_2D, 1, 0, 0, 4, 2, GL_RGBA, GL_FLOAT, im.bytes.data());
  glBindTexture(GL_TEXTURE_2D, 0);
  interop::TextureTransfer o;
  EXPECT_TRUE(
      glt_test::close(interop::from_texture(dev_, {t, GL_RGBA32F, 4, 2, 1}, o).to_vector(), reference(im, o, 4), 0, 0));
  EXPECT_THROW(interop::from_texture(dev_, {t, GL_RGBA32F, 4, 2, 2}, o), ValueError);  // no level 2
  // A mutable texture with the default (mipmapped) filter and one level: incomplete for a
  // sampler of its own, complete with gltensor's.
  const Image im0 = make_image(rng, kRGBA8, 5, 3);
  const GLuint m = texture(kRGBA8, 5, 3, &im0, 1, /*immutable=*/false);
  EXPECT_TRUE(glt_test::close(interop::from_texture(dev_, {m, GL_RGBA8, 5, 3, 0}, o).to_vector(), reference(im0, o, 4),
                              1e-6, 3e-7));
  Tensor x = zeros(dev_, {1, 4, 3, 5});
  if (dev_.caps().desktop)
    EXPECT_NO_THROW(interop::to_texture(x, {m, GL_RGBA8, 5, 3, 0}));
  else
    EXPECT_THROW(interop::to_texture(x, {m, GL_RGBA8, 5, 3, 0}), ValueError);  // image units need immutable
}

TEST_P(Textures, ErrorsNameTheProblem) {
  const GLuint t = texture(kRGBA8, 4, 4);
  const GLuint r8 = texture(kR8, 4, 4);
  EXPECT_THROW(interop::from_texture(dev_, {t, 0x1234, 4, 4, 0}), DTypeError);          // unknown format
  EXPECT_THROW(interop::from_texture(dev_, {t, GL_RGBA32F, 4, 4, 0}), DTypeError);      // not its format
  EXPECT_THROW(interop::from_texture(dev_, {t, GL_RGBA8, 5, 4, 0}), ShapeError);        // not its size
  EXPECT_THROW(interop::from_texture(dev_, {t + 500, GL_RGBA8, 4, 4, 0}), ValueError);  // not a texture
  EXPECT_THROW(interop::from_texture(dev_, {t, GL_RGBA8, 0, 4, 0}), ValueError);
  interop::TextureTransfer o;
  o.dtype = DType::i32;
  EXPECT_THROW(interop::from_texture(dev_, {t, GL_RGBA8, 4, 4, 0}, o), DTypeError);
  EXPECT_THROW(interop::to_texture(zeros(dev_, {1, 1, 4, 4}), {r8, GL_R8, 4, 4, 0}), DTypeError);    // read only
  EXPECT_THROW(interop::to_texture(zeros(dev_, {1, 5, 4, 4}), {t, GL_RGBA8, 4, 4, 0}), ValueError);  // 5 > 4
  EXPECT_THROW(interop::to_texture(zeros(dev_, {1, 3, 4, 5}), {t, GL_RGBA8, 4, 4, 0}), ShapeError);
  EXPECT_THROW(interop::to_texture(zeros(dev_, {2, 3, 4, 4}), {t, GL_RGBA8, 4, 4, 0}), ShapeError);
  try {
    interop::from_texture(dev_, {t, GL_RGBA8, 4, 8, 0});
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("4 x 4"), std::string::npos) << e.what();
  }
}

TEST_P(Textures, TextureRewrittenEveryFrame) {
  // to_texture then from_texture of the same texture, several frames: gltensor's own barriers
  // order its image stores and texture fetches.
  const GLuint t = texture(kRGBA32F, 16, 16);
  Tensor x = zeros(dev_, {1, 4, 16, 16});
  for (int frame = 1; frame <= 4; ++frame) {
    interop::to_texture(x + static_cast<double>(frame), {t, GL_RGBA32F, 16, 16, 0});
    x = interop::from_texture(dev_, {t, GL_RGBA32F, 16, 16, 0});
  }
  EXPECT_EQ(sum(x).item(), 10.0f * 4 * 256);  // 1 + 2 + 3 + 4 per element
}

INSTANTIATE_TEST_SUITE_P(Contexts, Textures, ::testing::Values(false, true),
                         [](const auto& info) { return std::string(info.param ? "gl" : "gles"); });

}  // namespace
