// warp_perspective (include/gltensor/image.hpp, glsl/nn/warp.comp) against a float64 CPU
// reference of the same definition: random homographies (rotations, scales, perspective, points
// outside the image: clamped to the edges), odd and 1-pixel image and output sizes, 1 to 4
// channels, uint8 and float32 images, views, padding columns, channel reversal and
// normalization; NaN / infinity in float images; more pixels than one dispatch holds; errors.
// Tolerance: the kernel maps points in float32 (the reference in float64), so a sample may sit
// up to ~1e-4 pixel away on these sizes: with neighbouring values at most 255 apart, 0.05 in
// image units (before normalization), far below what a wrong weight, neighbour or channel gives.
// crop_resize against its float64 reference: the bicubic crop then bilinear resize, with OpenCV's
// 8-bit arithmetic for byte images (positions to 1/32 pixel, weights to 1/2048, bytes rounded):
// on maps that float32 computes exactly (quarter turns, 1/32-pixel shifts), every output within 2
// levels (a float32 weight may round a value the other way at a tie) and 99% exactly equal;
// float images on any homography within kImageAtol.
// (The pipeline's match with OpenCV's warpPerspective + resize is checked in test_ocr_models.)
#include <cmath>
#include <limits>

#include "gltensor/image.hpp"
#include "test_util.hpp"

using namespace gltensor;
using namespace glt_test;

namespace {

constexpr double kImageAtol = 0.05;  // in image units (0..255 for bytes), before normalization

struct Case {
  std::int64_t H, W, C, OH, OW;
  std::vector<ImageWarp> warps;
  ImageNormalize norm;
};

// a * (1 - t) + b * t, and exactly a where t = 0 (warp.comp's lerp).
double lerp(double a, double b, double t) { return t == 0 ? a : a * (1 - t) + b * t; }

// out[n, c, y, x] in float64, as warp.comp defines it.
std::vector<double> reference(const std::vector<double>& img, const Case& k) {
  const std::int64_t N = static_cast<std::int64_t>(k.warps.size());
  std::vector<double> out(static_cast<std::size_t>(N * k.C * k.OH * k.OW));
  auto px = [&](std::int64_t y, std::int64_t x, std::int64_t c) {
    y = std::clamp<std::int64_t>(y, 0, k.H - 1), x = std::clamp<std::int64_t>(x, 0, k.W - 1);
    return img[static_cast<std::size_t>((y * k.W + x) * k.C + c)];
  };
  for (std::int64_t n = 0; n < N; ++n) {
    const auto& m = k.warps[n].m;
    const std::int64_t width = k.warps[n].width < 0 ? k.OW : k.warps[n].width;
    for (std::int64_t y = 0; y < k.OH; ++y)
      for (std::int64_t x = 0; x < k.OW; ++x) {
        const double w = m[6] * x + m[7] * y + m[8];
        const double u = std::clamp((m[0] * x + m[1] * y + m[2]) / w, -1.0, static_cast<double>(k.W));
        const double v = std::clamp((m[3] * x + m[4] * y + m[5]) / w, -1.0, static_cast<double>(k.H));
        const double u0 = std::floor(u), v0 = std::floor(v), au = u - u0, av = v - v0;
        const auto iu = static_cast<std::int64_t>(u0), iv = static_cast<std::int64_t>(v0);
        for (std::int64_t c = 0; c < k.C; ++c) {
          const std::int64_t s = k.norm.reverse_channels ? k.C - 1 - c : c;
          const double val =
              lerp(lerp(px(iv, iu, s), px(iv, iu + 1, s), au), lerp(px(iv + 1, iu, s), px(iv + 1, iu + 1, s), au), av);
          out[static_cast<std::size_t>(((n * k.C + c) * k.OH + y) * k.OW + x)] =
              x < width ? (val * k.norm.scale - k.norm.mean[c]) / k.norm.stdv[c] : k.norm.pad;
        }
      }
  }
  return out;
}

// The output tolerance: kImageAtol through the normalization (the smallest std).
double out_atol(const Case& k) {
  double s = INFINITY;
  for (std::int64_t c = 0; c < k.C; ++c) s = std::min(s, std::fabs(k.norm.stdv[c]));
  return kImageAtol * std::fabs(k.norm.scale) / s + 1e-6;
}

// A random homography mapping the output roughly over (and past) the image: rotation, scale,
// shift and a little perspective.
ImageWarp random_warp(std::mt19937_64& rng, const Case& k) {
  std::uniform_real_distribution<double> U(-1, 1);
  const double a = U(rng) * M_PI, s = std::exp(U(rng)) * static_cast<double>(std::max(k.H, k.W)) /
                                      static_cast<double>(std::max<std::int64_t>({k.OH, k.OW, 1}));
  ImageWarp w;
  w.m = {s * std::cos(a),
         -s * std::sin(a),
         k.W * (0.5 + 0.6 * U(rng)),
         s * std::sin(a),
         s * std::cos(a),
         k.H * (0.5 + 0.6 * U(rng)),
         1e-3 * U(rng) / std::max<std::int64_t>(k.OW, 1),
         1e-3 * U(rng) / std::max<std::int64_t>(k.OH, 1),
         1};
  const std::int64_t choice = std::uniform_int_distribution<std::int64_t>(0, 3)(rng);
  w.width = choice == 0 ? -1 : choice == 1 ? std::uniform_int_distribution<std::int64_t>(0, k.OW)(rng) : k.OW + 3;
  return w;
}

void check_case(const Case& k, const Tensor& image, const std::vector<double>& values) {
  const Tensor out = warp_perspective(image, k.warps, k.OH, k.OW, k.norm);
  ASSERT_EQ(out.shape(), (Shape{static_cast<std::int64_t>(k.warps.size()), k.C, k.OH, k.OW}));
  ASSERT_EQ(out.dtype(), DType::f32);
  EXPECT_TRUE(close(out.to_vector(), reference(values, k), 1e-5, out_atol(k)));
}

// Keys' cubic weights (a = -0.75) of the taps at -1, 0, 1, 2 (OpenCV's interpolateCubic).
std::array<double, 4> cubic(double t) {
  const double A = -0.75;
  const double c0 = ((A * (t + 1) - 5 * A) * (t + 1) + 8 * A) * (t + 1) - 4 * A;
  const double c1 = ((A + 2) * t - (A + 3)) * t * t + 1;
  const double c2 = ((A + 2) * (1 - t) - (A + 3)) * (1 - t) * (1 - t) + 1;
  return {c0, c1, c2, 1 - c0 - c1 - c2};
}

struct CropCase {
  std::int64_t H, W, C, OH, OW;
  std::vector<ImageCrop> crops;
  ImageNormalize norm;
  bool bytes;
};

std::vector<double> crop_reference(const std::vector<double>& img, const CropCase& k) {
  const auto N = static_cast<std::int64_t>(k.crops.size());
  std::vector<double> out(static_cast<std::size_t>(N * k.C * k.OH * k.OW));
  auto px = [&](std::int64_t y, std::int64_t x, std::int64_t c) {
    y = std::clamp<std::int64_t>(y, 0, k.H - 1), x = std::clamp<std::int64_t>(x, 0, k.W - 1);
    return img[static_cast<std::size_t>((y * k.W + x) * k.C + c)];
  };
  auto byte = [&](double v) { return k.bytes ? std::clamp(std::floor(v + 0.5), 0.0, 255.0) : v; };
  for (std::int64_t n = 0; n < N; ++n) {
    const ImageCrop& cr = k.crops[n];
    const auto& m = cr.m;
    const std::int64_t width = cr.width < 0 ? k.OW : std::min(cr.width, k.OW);
    // Crop pixel (i, j), channel c: the bicubic sample.
    auto crop_px = [&](std::int64_t i, std::int64_t j, std::int64_t c) {
      const double w = m[6] * i + m[7] * j + m[8];
      double u = (m[0] * i + m[1] * j + m[2]) / w, v = (m[3] * i + m[4] * j + m[5]) / w;
      if (k.bytes) u = std::floor(u * 32 + 0.5) / 32, v = std::floor(v * 32 + 0.5) / 32;
      const double u0 = std::floor(u), v0 = std::floor(v);
      const auto wx = cubic(u - u0), wy = cubic(v - v0);
      double s = 0;
      for (int b = 0; b < 4; ++b)
        for (int a = 0; a < 4; ++a)
          s += wx[a] * wy[b] * px(static_cast<std::int64_t>(v0) - 1 + b, static_cast<std::int64_t>(u0) - 1 + a, c);
      return byte(s);
    };
    const double sx = width > 0 ? static_cast<double>(cr.crop_w) / width : 1,
                 sy = static_cast<double>(cr.crop_h) / k.OH;
    for (std::int64_t y = 0; y < k.OH; ++y)
      for (std::int64_t x = 0; x < k.OW; ++x) {
        const double cx = (x + 0.5) * sx - 0.5, cy = (y + 0.5) * sy - 0.5;
        const double x0 = std::floor(cx), y0 = std::floor(cy);
        double au = cx - x0, av = cy - y0;
        if (k.bytes) au = std::floor(au * 2048 + 0.5) / 2048, av = std::floor(av * 2048 + 0.5) / 2048;
        auto cl = [](double v, std::int64_t n) {
          return std::clamp<std::int64_t>(static_cast<std::int64_t>(v), 0, n - 1);
        };
        const std::int64_t xa = cl(x0, cr.crop_w), xb = cl(x0 + 1, cr.crop_w), ya = cl(y0, cr.crop_h),
                           yb = cl(y0 + 1, cr.crop_h);
        for (std::int64_t c = 0; c < k.C; ++c) {
          const std::int64_t s = k.norm.reverse_channels ? k.C - 1 - c : c;
          const double val = byte(lerp(lerp(crop_px(xa, ya, s), crop_px(xb, ya, s), au),
                                       lerp(crop_px(xa, yb, s), crop_px(xb, yb, s), au), av));
          out[static_cast<std::size_t>(((n * k.C + c) * k.OH + y) * k.OW + x)] =
              x < width ? (val * k.norm.scale - k.norm.mean[c]) / k.norm.stdv[c] : k.norm.pad;
        }
      }
  }
  return out;
}

}  // namespace

TEST(CropResize, ByteImagesOnExactMapsAsOpenCv) {
  GLT_RNG(rng);
  auto& dev = device();
  const std::int64_t sizes[][2] = {{1, 1}, {23, 41}, {9, 2}, {40, 33}};
  for (int t = 0; t < 12; ++t) {
    CropCase k{.H = sizes[t % 4][0],
               .W = sizes[t % 4][1],
               .C = 1 + t % 4,
               .OH = t % 3 ? 48 : 1,
               .OW = 67,
               .crops = {},
               .norm = {},
               .bytes = true};
    k.norm = {.scale = 1.0 / 255,
              .mean = {0.5, 0.5, 0.5, 0.5},
              .stdv = {0.5, 0.5, 0.5, 0.5},
              .reverse_channels = t % 2 == 0,
              .pad = 0};
    std::uniform_int_distribution<int> shift(-64, 40 * 32), size(1, 90), turn(0, 3);
    for (int i = 0; i < 4; ++i) {
      // A quarter turn and a shift by a multiple of 1/32 pixel: float32 maps points exactly.
      const double c[4][4] = {{1, 0, 0, 1}, {0, -1, 1, 0}, {-1, 0, 0, -1}, {0, 1, -1, 0}};
      const auto& r = c[turn(rng)];
      ImageCrop cr{.m = {r[0], r[1], shift(rng) / 32.0, r[2], r[3], shift(rng) / 32.0, 0, 0, 1},
                   .crop_w = i == 0 ? 1 : size(rng),
                   .crop_h = i == 0 ? 1 : size(rng) / 2 + 1,
                   .width = -1};
      cr.width = i == 1 ? 0 : i == 2 ? k.OW + 5 : std::uniform_int_distribution<std::int64_t>(1, k.OW)(rng);
      k.crops.push_back(cr);
    }
    SCOPED_TRACE("case " + std::to_string(t));
    const auto bytes = uniform_int(rng, static_cast<std::size_t>(k.H * k.W * k.C), 0, 255);
    const std::vector<std::uint8_t> u8(bytes.begin(), bytes.end());
    const auto got = crop_resize(Tensor::from_host(dev, u8, {k.H, k.W, k.C}), k.crops, k.OH, k.OW, k.norm);
    ASSERT_EQ(got.shape(), (Shape{4, k.C, k.OH, k.OW}));
    const auto ref = crop_reference(std::vector<double>(bytes.begin(), bytes.end()), k);
    const double level = 1.0 / 255 / 0.5;
    EXPECT_TRUE(close(got.to_vector(), ref, 0, 2 * level + 1e-5));
    const auto g = got.to_vector();
    std::size_t exact = 0;
    for (std::size_t i = 0; i < g.size(); ++i) exact += std::fabs(g[i] - ref[i]) < 1e-3 * level;
    EXPECT_GE(exact, g.size() * 99 / 100) << "of " << g.size() << " outputs";
  }
}

TEST(CropResize, FloatImagesAnyHomography) {
  GLT_RNG(rng);
  auto& dev = device();
  Case w{.H = 31, .W = 45, .C = 3, .OH = 48, .OW = 120, .warps = {}, .norm = {}};
  CropCase k{.H = w.H, .W = w.W, .C = w.C, .OH = w.OH, .OW = w.OW, .crops = {}, .norm = {}, .bytes = false};
  for (int i = 0; i < 5; ++i) {
    const ImageWarp r = random_warp(rng, w);
    k.crops.push_back({.m = r.m,
                       .crop_w = std::uniform_int_distribution<std::int64_t>(1, 200)(rng),
                       .crop_h = std::uniform_int_distribution<std::int64_t>(1, 70)(rng),
                       .width = r.width});
  }
  k.norm.pad = -1.5;
  const auto v = uniform(rng, static_cast<std::size_t>(k.H * k.W * k.C), -100, 100);
  const auto got = crop_resize(Tensor::from_host(dev, v, {k.H, k.W, k.C}), k.crops, k.OH, k.OW, k.norm).to_vector();
  EXPECT_TRUE(close(got, crop_reference(to_double(v), k), 1e-5, kImageAtol));
  EXPECT_THROW_MSG(crop_resize(Tensor::from_host(dev, v, {k.H, k.W, k.C}),
                               std::vector{ImageCrop{.m = {}, .crop_w = 0, .crop_h = 3, .width = -1}}, 2, 2),
                   ValueError, "at least 1 x 1");
}

TEST(WarpPerspective, RandomWarpsOfByteImages) {
  GLT_RNG(rng);
  auto& dev = device();
  const std::int64_t sizes[][2] = {{1, 1}, {1, 7}, {9, 1}, {17, 31}, {64, 48}, {5, 3}};
  const std::int64_t outs[][2] = {{1, 1}, {48, 37}, {3, 1}, {1, 9}, {33, 65}, {0, 4}};
  for (int t = 0; t < 24; ++t) {
    Case k;
    k.H = sizes[t % 6][0], k.W = sizes[t % 6][1], k.C = 1 + t % 4;
    k.OH = outs[(t / 2) % 6][0], k.OW = outs[(t / 2) % 6][1];
    const int n = 1 + t % 3;
    for (int i = 0; i < n; ++i) k.warps.push_back(random_warp(rng, k));
    std::uniform_real_distribution<double> U(0.1, 1);
    k.norm.scale = t % 2 ? 1.0 / 255 : 1.0;
    for (int c = 0; c < 4; ++c) k.norm.mean[c] = U(rng), k.norm.stdv[c] = (t % 5 == 0 ? -1 : 1) * U(rng);
    k.norm.reverse_channels = t % 3 == 1;
    k.norm.pad = t % 4 == 0 ? 0.0 : -2.5;
    SCOPED_TRACE("case " + std::to_string(t) + ": image " + std::to_string(k.H) + "x" + std::to_string(k.W) + "x" +
                 std::to_string(k.C) + " -> " + std::to_string(n) + " x " + std::to_string(k.OH) + "x" +
                 std::to_string(k.OW));
    const auto bytes = uniform_int(rng, static_cast<std::size_t>(k.H * k.W * k.C), 0, 255);
    const std::vector<std::uint8_t> u8(bytes.begin(), bytes.end());
    check_case(k, Tensor::from_host(dev, u8, {k.H, k.W, k.C}), std::vector<double>(bytes.begin(), bytes.end()));
  }
}

TEST(WarpPerspective, ResizesRotationsAndOnePixelCrops) {
  GLT_RNG(rng);
  auto& dev = device();
  Case k{.H = 23, .W = 41, .C = 3, .OH = 48, .OW = 67, .warps = {}, .norm = {}};
  k.warps.push_back(resize_warp(k.H, k.W, k.OH, k.OW));  // upscale
  k.warps.push_back(resize_warp(k.H, k.W, 7, 13));       // downscale into the corner, rest sampled past
  // A 1-pixel crop at (5, 9) stretched over the output; the image turned by 180 degrees.
  k.warps.push_back(ImageWarp{.m = {0, 0, 5, 0, 0, 9, 0, 0, 1}, .width = -1});
  k.warps.push_back(compose(ImageWarp{.m = {-1, 0, k.W - 1.0, 0, -1, k.H - 1.0, 0, 0, 1}, .width = 30}, ImageWarp{}));
  k.norm = {.scale = 1.0 / 255,
            .mean = {0.485, 0.456, 0.406, 0},
            .stdv = {0.229, 0.224, 0.225, 1},
            .reverse_channels = true,
            .pad = 0};
  const auto bytes = uniform_int(rng, static_cast<std::size_t>(k.H * k.W * k.C), 0, 255);
  const std::vector<std::uint8_t> u8(bytes.begin(), bytes.end());
  const Tensor img = Tensor::from_host(dev, u8, {k.H, k.W, k.C});
  check_case(k, img, std::vector<double>(bytes.begin(), bytes.end()));
  // Identity sizes read the pixels exactly: (v / 255 - mean) / std of the channel reversed.
  const auto same = warp_perspective(img, std::vector{resize_warp(k.H, k.W, k.H, k.W)}, k.H, k.W, k.norm).to_vector();
  for (std::int64_t c = 0; c < 3; ++c)
    for (std::int64_t p = 0; p < k.H * k.W; ++p) {
      const double want = (bytes[static_cast<std::size_t>(p * 3 + 2 - c)] / 255.0 - k.norm.mean[c]) / k.norm.stdv[c];
      ASSERT_NEAR(same[static_cast<std::size_t>(c * k.H * k.W + p)], want, 1e-5) << "channel " << c << " pixel " << p;
    }
}

TEST(WarpPerspective, FloatImagesViewsAndSpecials) {
  GLT_RNG(rng);
  auto& dev = device();
  // A view: the image is every other column of a wider tensor.
  Case k{.H = 13, .W = 11, .C = 2, .OH = 19, .OW = 15, .warps = {}, .norm = {}};
  for (int i = 0; i < 3; ++i) k.warps.push_back(random_warp(rng, k));
  const auto wide = uniform(rng, static_cast<std::size_t>(k.H * k.W * 2 * k.C), -100, 100);
  const Tensor base = Tensor::from_host(dev, wide, {k.H, 2 * k.W, k.C});
  const Tensor view = base.slice(1, 1, 2 * k.W, 2);
  std::vector<double> vals;
  for (std::int64_t y = 0; y < k.H; ++y)
    for (std::int64_t x = 0; x < k.W; ++x)
      for (std::int64_t c = 0; c < k.C; ++c)
        vals.push_back(wide[static_cast<std::size_t>((y * 2 * k.W + 2 * x + 1) * k.C + c)]);
  check_case(k, view, vals);
  // NaN and infinities: integer shifts read pixels alone, specials included (a neighbour's NaN or
  // infinity of weight 0 stays out).
  Case s{.H = 6, .W = 7, .C = 1, .OH = 6, .OW = 7, .warps = {}, .norm = {}};
  s.warps.push_back(ImageWarp{});
  s.warps.push_back(ImageWarp{.m = {1, 0, -2, 0, 1, 1, 0, 0, 1}, .width = -1});
  auto v = uniform(rng, 42, -5, 5);
  sprinkle_specials(v);
  check_case(s, Tensor::from_host(dev, v, {6, 7, 1}), to_double(v));
}

TEST(WarpPerspective, MorePixelsThanOneDispatch) {
  // 3 x 1100 x 1300 pixels: past 65535 workgroups of 64 invocations (the launch splits the grid).
  GLT_RNG(rng);
  auto& dev = device();
  Case k{.H = 37, .W = 29, .C = 3, .OH = 1100, .OW = 1300, .warps = {}, .norm = {}};
  for (int i = 0; i < 3; ++i) k.warps.push_back(random_warp(rng, k));
  const auto bytes = uniform_int(rng, static_cast<std::size_t>(k.H * k.W * k.C), 0, 255);
  const std::vector<std::uint8_t> u8(bytes.begin(), bytes.end());
  check_case(k, Tensor::from_host(dev, u8, {k.H, k.W, k.C}), std::vector<double>(bytes.begin(), bytes.end()));
}

TEST(WarpPerspective, Helpers) {
  const ImageWarp r = resize_warp(10, 20, 5, 40);  // x: 20 / 40, y: 10 / 5
  EXPECT_DOUBLE_EQ(r.m[0], 0.5);
  EXPECT_DOUBLE_EQ(r.m[2], -0.25);
  EXPECT_DOUBLE_EQ(r.m[4], 2.0);
  EXPECT_DOUBLE_EQ(r.m[5], 0.5);
  const ImageWarp shift{.m = {1, 0, 3, 0, 1, -2, 0, 0, 1}, .width = 7};
  const ImageWarp c = compose(shift, r);  // shift first: r * shift
  EXPECT_DOUBLE_EQ(c.m[2], 0.5 * 3 - 0.25);
  EXPECT_DOUBLE_EQ(c.m[5], 2.0 * -2 + 0.5);
  EXPECT_EQ(c.width, 7);
  EXPECT_THROW_MSG(resize_warp(0, 1, 1, 1), ValueError, "at least 1");
}

TEST(WarpPerspective, BadInputThrows) {
  auto& dev = device();
  const Tensor img = zeros(dev, {4, 5, 3}, DType::u8);
  const std::vector<ImageWarp> one(1);
  EXPECT_THROW_MSG(warp_perspective(zeros(dev, {4, 5}, DType::u8), one, 2, 2), ShapeError, "[H, W, C]");
  EXPECT_THROW_MSG(warp_perspective(zeros(dev, {4, 5, 5}, DType::u8), one, 2, 2), ShapeError, "1 to 4");
  EXPECT_THROW_MSG(warp_perspective(zeros(dev, {4, 5, 3}, DType::i32), one, 2, 2), DTypeError, "int32");
  EXPECT_THROW_MSG(warp_perspective(img, one, -1, 2), ShapeError, "negative");
  EXPECT_THROW_MSG(warp_perspective(zeros(dev, {0, 5, 3}, DType::u8), one, 2, 2), ShapeError, "empty");
  EXPECT_THROW_MSG(warp_perspective(img, std::vector{ImageWarp{.m = {}, .width = -2}}, 2, 2), ValueError, "width -2");
  ImageWarp nan;
  nan.m[4] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW_MSG(warp_perspective(img, std::vector{nan}, 2, 2), ValueError, "non-finite");
  ImageNormalize zero;
  zero.stdv[1] = 0;
  EXPECT_THROW_MSG(warp_perspective(img, one, 2, 2, zero), ValueError, "stdv[1]");
  EXPECT_THROW_MSG(warp_perspective(img, std::vector<ImageWarp>(70000), 256, 256), LimitError, "2^32");
  // Nothing to sample: an empty result, even from an empty image.
  EXPECT_EQ(warp_perspective(zeros(dev, {0, 5, 3}, DType::u8), {}, 2, 2).shape(), (Shape{0, 3, 2, 2}));
  // The device stays usable.
  EXPECT_EQ(warp_perspective(img, one, 1, 1).to_vector(), std::vector<float>(3, 0.0f));
}
