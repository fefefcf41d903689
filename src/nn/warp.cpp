// Perspective warps of images into normalized planes (include/gltensor/image.hpp): one dispatch
// of glsl/nn/warp.comp, one invocation per output pixel; the warps' homographies go up as a
// small float32 table.
#include <cmath>
#include <string>
#include <vector>

#include "gltensor/errors.hpp"
#include "gltensor/image.hpp"
#include "gltensor/ops.hpp"
#include "nn/warp_variant.hpp"
#include "runtime/launch.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {
using namespace detail;

Defines WarpVariant::defines() const {
  Defines d;
  d.value("CHANNELS", channels).flag("REVERSE", reverse).flag("CROP", crop).flag("BYTES", crop && image == DType::u8);
  d.operand(0, DType::f32, CT::f32, true).operand(1, image, CT::f32, false).operand(2, DType::f32, CT::f32, false);
  return d;
}

std::vector<WarpVariant> WarpVariant::space() {
  std::vector<WarpVariant> out;
  for (DType dt : {DType::u8, DType::f32})
    for (int c = 1; c <= 4; ++c)
      for (int f = 0; f < 4; ++f)
        out.push_back(WarpVariant{.channels = c, .reverse = (f & 1) != 0, .crop = (f & 2) != 0, .image = dt});
  return out;
}

namespace {

constexpr const char* kOp = "gltensor::warp_perspective";

// Uniforms of warp.comp.
struct WarpParams {
  std::int64_t count, out_h, out_w, h, w;
  const ImageNormalize& norm;
  void set(Uniforms& u) const {
    u.u32("u_count", count);
    u.u32("u_OH", out_h);
    u.u32("u_OW", out_w);
    u.u32("u_H", h);
    u.u32("u_W", w);
    u.f32("u_scale", norm.scale);
    float mean[4], stdv[4];
    for (int c = 0; c < 4; ++c) mean[c] = static_cast<float>(norm.mean[c]), stdv[c] = static_cast<float>(norm.stdv[c]);
    u.f32s("u_mean", mean);
    u.f32s("u_std", stdv);
    u.f32("u_pad", norm.pad);
  }
};

// The checks shared by warp_perspective and crop_resize (n pictures).
void check_common(const char* op, const Tensor& image, std::size_t n_pictures, std::int64_t out_h, std::int64_t out_w,
                  const ImageNormalize& n) {
  if (image.dim() != 3 || image.size(2) < 1 || image.size(2) > 4)
    throw ShapeError(std::string(op) + ": image " + to_string(image.shape()) +
                     " must be [H, W, C] with C from 1 to 4 channels");
  if (image.dtype() != DType::u8 && image.dtype() != DType::f32)
    throw DTypeError(std::string(op) + ": image must be uint8 or float32, got " + dtype_name(image.dtype()));
  if (out_h < 0 || out_w < 0)
    throw ShapeError(std::string(op) + ": output size " + std::to_string(out_h) + " x " + std::to_string(out_w) +
                     " must not be negative");
  const auto pixels =
      static_cast<std::uint64_t>(n_pictures) * static_cast<std::uint64_t>(out_h) * static_cast<std::uint64_t>(out_w);
  if (pixels > 0xFFFFFFFFull || out_h > 0xFFFFFFFFll || out_w > 0xFFFFFFFFll)
    throw LimitError(std::string(op) + ": " + std::to_string(n_pictures) + " pictures of " + std::to_string(out_h) +
                     " x " + std::to_string(out_w) + " exceed 2^32 - 1 output pixels");
  if (pixels > 0 && image.numel() == 0)
    throw ShapeError(std::string(op) + ": image " + to_string(image.shape()) + " is empty, with " +
                     std::to_string(pixels) + " output pixels to sample");
  const int C = static_cast<int>(image.size(2));
  bool finite = std::isfinite(n.scale) && std::isfinite(n.pad);
  for (int c = 0; c < C; ++c) {
    finite = finite && std::isfinite(n.mean[c]) && std::isfinite(n.stdv[c]);
    if (n.stdv[c] == 0) throw ValueError(std::string(op) + ": stdv[" + std::to_string(c) + "] is 0 (it divides)");
  }
  if (!finite) throw ValueError(std::string(op) + ": scale, mean, stdv and pad must be finite");
}

void check_map(const char* op, std::size_t k, const std::array<double, 9>& m, std::int64_t width) {
  if (width < -1)
    throw ValueError(std::string(op) + ": picture " + std::to_string(k) + "'s width " + std::to_string(width) +
                     " must be -1 (all columns) or at least 0");
  for (double v : m)
    if (!std::isfinite(v))
      throw ValueError(std::string(op) + ": picture " + std::to_string(k) + "'s homography has a non-finite entry");
}

// One dispatch of warp.comp over a table of `stride` floats per picture.
Tensor launch_warp(const char* op, const Tensor& image_in, const std::vector<float>& table, std::int64_t n,
                   std::int64_t out_h, std::int64_t out_w, const ImageNormalize& normalize, bool crop) {
  DeviceImpl& dev = dev_of(image_in);
  Enter guard(dev, op);
  const std::int64_t C = image_in.size(2);
  Tensor out = alloc(dev, {n, C, out_h, out_w}, DType::f32, op);
  if (out.numel() == 0) return out;
  // The kernel indexes a dense HWC image from element 0.
  Tensor image = image_in.is_contiguous() ? image_in : image_in.contiguous();
  if (image.offset() != 0) image = image.clone();
  const Tensor t = Tensor::from_host(image_in.device(), table, {static_cast<std::int64_t>(table.size())});
  WarpVariant v{
      .channels = static_cast<int>(C), .reverse = normalize.reverse_channels, .crop = crop, .image = image.dtype()};
  Launch launch(dev, op);
  launch.program(v.kFile, v.defines(), {64}).write(out).read(image).read(t);
  launch.params(WarpParams{out.numel() / C, out_h, out_w, image.size(0), image.size(1), normalize}).loop_iterations(0);
  launch.invocations(static_cast<std::uint64_t>(out.numel() / C));
  return out;
}

}  // namespace

Tensor warp_perspective(const Tensor& image, std::span<const ImageWarp> warps, std::int64_t out_h, std::int64_t out_w,
                        const ImageNormalize& normalize) {
  check_common(kOp, image, warps.size(), out_h, out_w, normalize);
  std::vector<float> table;
  for (std::size_t k = 0; k < warps.size(); ++k) {
    check_map(kOp, k, warps[k].m, warps[k].width);
    for (double v : warps[k].m) table.push_back(static_cast<float>(v));
    table.push_back(static_cast<float>(warps[k].width < 0 ? out_w : std::min(warps[k].width, out_w)));
  }
  return launch_warp(kOp, image, table, static_cast<std::int64_t>(warps.size()), out_h, out_w, normalize, false);
}

Tensor crop_resize(const Tensor& image, std::span<const ImageCrop> crops, std::int64_t out_h, std::int64_t out_w,
                   const ImageNormalize& normalize) {
  constexpr const char* op = "gltensor::crop_resize";
  check_common(op, image, crops.size(), out_h, out_w, normalize);
  std::vector<float> table;
  for (std::size_t k = 0; k < crops.size(); ++k) {
    const ImageCrop& c = crops[k];
    check_map(op, k, c.m, c.width);
    if (c.crop_w < 1 || c.crop_h < 1)
      throw ValueError(std::string(op) + ": picture " + std::to_string(k) + "'s crop " + std::to_string(c.crop_w) +
                       " x " + std::to_string(c.crop_h) + " must be at least 1 x 1");
    const std::int64_t width = c.width < 0 ? out_w : std::min(c.width, out_w);
    for (double v : c.m) table.push_back(static_cast<float>(v));
    // cv::resize's map from the output's width x out_h columns and rows to the crop's.
    const double sx = width > 0 ? static_cast<double>(c.crop_w) / width : 1.0;
    const double sy = out_h > 0 ? static_cast<double>(c.crop_h) / out_h : 1.0;
    for (double v : {static_cast<double>(width), static_cast<double>(c.crop_w), static_cast<double>(c.crop_h), sx,
                     0.5 * sx - 0.5, sy, 0.5 * sy - 0.5})
      table.push_back(static_cast<float>(v));
  }
  return launch_warp(op, image, table, static_cast<std::int64_t>(crops.size()), out_h, out_w, normalize, true);
}

ImageWarp resize_warp(std::int64_t in_h, std::int64_t in_w, std::int64_t out_h, std::int64_t out_w) {
  if (in_h < 1 || in_w < 1 || out_h < 1 || out_w < 1)
    throw ValueError("gltensor::resize_warp: sizes " + std::to_string(in_h) + " x " + std::to_string(in_w) + " -> " +
                     std::to_string(out_h) + " x " + std::to_string(out_w) + " must be at least 1");
  const double sx = static_cast<double>(in_w) / out_w, sy = static_cast<double>(in_h) / out_h;
  return ImageWarp{.m = {sx, 0, 0.5 * sx - 0.5, 0, sy, 0.5 * sy - 0.5, 0, 0, 1}, .width = -1};
}

ImageWarp compose(const ImageWarp& a, const ImageWarp& b) {
  ImageWarp r;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      double s = 0;
      for (int k = 0; k < 3; ++k) s += b.m[i * 3 + k] * a.m[k * 3 + j];
      r.m[i * 3 + j] = s;
    }
  r.width = a.width;
  return r;
}

}  // namespace gltensor
