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
  d.value("CHANNELS", channels).flag("REVERSE", reverse);
  d.operand(0, DType::f32, CT::f32, true).operand(1, image, CT::f32, false).operand(2, DType::f32, CT::f32, false);
  return d;
}

std::vector<WarpVariant> WarpVariant::space() {
  std::vector<WarpVariant> out;
  for (DType dt : {DType::u8, DType::f32})
    for (int c = 1; c <= 4; ++c)
      for (bool r : {false, true}) out.push_back(WarpVariant{.channels = c, .reverse = r, .image = dt});
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

void check_args(const Tensor& image, std::span<const ImageWarp> warps, std::int64_t out_h, std::int64_t out_w,
                const ImageNormalize& n) {
  if (image.dim() != 3 || image.size(2) < 1 || image.size(2) > 4)
    throw ShapeError(std::string(kOp) + ": image " + to_string(image.shape()) +
                     " must be [H, W, C] with C from 1 to 4 channels");
  if (image.dtype() != DType::u8 && image.dtype() != DType::f32)
    throw DTypeError(std::string(kOp) + ": image must be uint8 or float32, got " + dtype_name(image.dtype()));
  if (out_h < 0 || out_w < 0)
    throw ShapeError(std::string(kOp) + ": output size " + std::to_string(out_h) + " x " + std::to_string(out_w) +
                     " must not be negative");
  const auto pixels =
      static_cast<std::uint64_t>(warps.size()) * static_cast<std::uint64_t>(out_h) * static_cast<std::uint64_t>(out_w);
  if (pixels > 0xFFFFFFFFull || out_h > 0xFFFFFFFFll || out_w > 0xFFFFFFFFll)
    throw LimitError(std::string(kOp) + ": " + std::to_string(warps.size()) + " pictures of " + std::to_string(out_h) +
                     " x " + std::to_string(out_w) + " exceed 2^32 - 1 output pixels");
  if (pixels > 0 && image.numel() == 0)
    throw ShapeError(std::string(kOp) + ": image " + to_string(image.shape()) + " is empty, with " +
                     std::to_string(pixels) + " output pixels to sample");
  for (std::size_t k = 0; k < warps.size(); ++k) {
    if (warps[k].width < -1)
      throw ValueError(std::string(kOp) + ": warp " + std::to_string(k) + "'s width " + std::to_string(warps[k].width) +
                       " must be -1 (all columns) or at least 0");
    for (double v : warps[k].m)
      if (!std::isfinite(v))
        throw ValueError(std::string(kOp) + ": warp " + std::to_string(k) + "'s homography has a non-finite entry");
  }
  const int C = static_cast<int>(image.size(2));
  bool finite = std::isfinite(n.scale) && std::isfinite(n.pad);
  for (int c = 0; c < C; ++c) {
    finite = finite && std::isfinite(n.mean[c]) && std::isfinite(n.stdv[c]);
    if (n.stdv[c] == 0) throw ValueError(std::string(kOp) + ": stdv[" + std::to_string(c) + "] is 0 (it divides)");
  }
  if (!finite) throw ValueError(std::string(kOp) + ": scale, mean, stdv and pad must be finite");
}

}  // namespace

Tensor warp_perspective(const Tensor& image_in, std::span<const ImageWarp> warps, std::int64_t out_h,
                        std::int64_t out_w, const ImageNormalize& normalize) {
  check_args(image_in, warps, out_h, out_w, normalize);
  DeviceImpl& dev = dev_of(image_in);
  Enter guard(dev, kOp);
  const std::int64_t C = image_in.size(2);
  const auto n = static_cast<std::int64_t>(warps.size());
  Tensor out = alloc(dev, {n, C, out_h, out_w}, DType::f32, kOp);
  if (out.numel() == 0) return out;
  // The kernel indexes a dense HWC image from element 0.
  Tensor image = image_in.is_contiguous() ? image_in : image_in.contiguous();
  if (image.offset() != 0) image = image.clone();
  std::vector<float> table(static_cast<std::size_t>(n) * 10);
  for (std::size_t k = 0; k < warps.size(); ++k) {
    for (int j = 0; j < 9; ++j) table[k * 10 + j] = static_cast<float>(warps[k].m[j]);
    table[k * 10 + 9] = static_cast<float>(warps[k].width < 0 ? out_w : std::min(warps[k].width, out_w));
  }
  const Tensor t = Tensor::from_host(image_in.device(), table, {n, 10});
  WarpVariant v{.channels = static_cast<int>(C), .reverse = normalize.reverse_channels, .image = image.dtype()};
  Launch launch(dev, kOp);
  launch.program(v.kFile, v.defines(), {64}).write(out).read(image).read(t);
  launch.params(WarpParams{out.numel() / C, out_h, out_w, image.size(0), image.size(1), normalize}).loop_iterations(0);
  launch.invocations(static_cast<std::uint64_t>(out.numel() / C));
  return out;
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
