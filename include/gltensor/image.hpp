// Image pre-processing on the GPU: perspective warps (crops, resizes, rotations) of an 8-bit or
// float image with bilinear sampling, normalized into a model's [N, C, H, W] input in one
// dispatch (glsl/nn/warp.comp), so that a pipeline uploads the picture once, as bytes, and cuts
// every model input from it on the GPU.
//
// Geometry follows OpenCV's conventions (pixel centres at integer coordinates):
//  - warpPerspective(src, dst, M, size, INTER_LINEAR, BORDER_REPLICATE): the warp's homography is
//    M's inverse (output pixel -> image point);
//  - resize(src, dst, size, 0, 0, INTER_LINEAR): resize_warp (the half-pixel rule, as
//    torch.nn.functional.interpolate(mode="bilinear", align_corners=False) and ONNX Resize's
//    half_pixel; no antialiasing when shrinking).
// Normalization follows PaddleOCR's NormalizeImage / torchvision's Normalize:
// (value * scale - mean[c]) / std[c].
#pragma once
#include <array>
#include <cstdint>
#include <span>

#include "gltensor/tensor.hpp"

namespace gltensor {

/// One output picture of warp_perspective: the row-major 3x3 homography m taking output pixel
/// (x, y, 1) to image point (u, v, w) -> (u / w, v / w), in pixels of the image; columns x >=
/// width are padding (-1: every column is sampled).
struct ImageWarp {
  std::array<double, 9> m{1, 0, 0, 0, 1, 0, 0, 0, 1};
  std::int64_t width = -1;
};

struct ImageNormalize {
  double scale = 1.0;                      ///< e.g. 1 / 255 for bytes to [0, 1]
  std::array<double, 4> mean{0, 0, 0, 0};  ///< per output channel
  std::array<double, 4> stdv{1, 1, 1, 1};  ///< per output channel, nonzero
  bool reverse_channels = false;           ///< output channel c reads image channel C - 1 - c (RGB -> BGR)
  double pad = 0;                          ///< the value of padding columns (after normalization)
};

/// Warps of an image [H, W, C] (HWC, uint8 or float32, C from 1 to 4, any strides) into float32
/// [N, C, out_h, out_w], N = warps.size(): out[n, c, y, x] = (bilinear(image, channel c',
/// warps[n].m applied to (x, y)) * scale - mean[c]) / stdv[c] for x < warps[n].width, else pad;
/// c' = C - 1 - c with reverse_channels, else c. Bilinear sampling clamps the four neighbours'
/// indices to the image (points outside take the nearest edge pixels' values). A float image's
/// NaN or infinity reaches the outputs that weigh it (a pixel centre reads its pixel alone;
/// between centres an infinity may come out as NaN: GPU compilers reorder a * (1 - t) + b * t).
/// The homography is applied in float32 (about 1e-4 pixel on a 1000-pixel image).
/// Errors: ShapeError for an image not of rank 3, C outside 1..4, an empty image with output
/// pixels to sample, or out_h / out_w < 0; DTypeError for other dtypes; ValueError for a width
/// below -1, a stdv of 0 or a non-finite homography entry or normalization value; LimitError for
/// N * out_h * out_w past 2^32 - 1 pixels.
Tensor warp_perspective(const Tensor& image, std::span<const ImageWarp> warps, std::int64_t out_h, std::int64_t out_w,
                        const ImageNormalize& normalize = {});

/// One output picture of crop_resize: a crop of crop_w x crop_h pixels whose pixel (i, j) lies at
/// image point m(i, j) (as ImageWarp's m), resized to `width` columns (-1: out_w; at most out_w)
/// of out_h rows at the picture's left; columns from width on are padding.
struct ImageCrop {
  std::array<double, 9> m{1, 0, 0, 0, 1, 0, 0, 0, 1};
  std::int64_t crop_w = 1, crop_h = 1;
  std::int64_t width = -1;
};

/// OpenCV's two steps of a text line's model input in one dispatch (PaddleOCR's
/// get_rotate_crop_image then resize_norm_img): each crop as cv::warpPerspective(image, crop, M,
/// (crop_w, crop_h), INTER_CUBIC, BORDER_REPLICATE) makes it (M = m's inverse; Keys' bicubic,
/// a = -0.75, indices clamped), then cv::resize(crop, (width, out_h), INTER_LINEAR) (crop
/// indices clamped), normalized and padded as warp_perspective's. The crop is not stored: each
/// output pixel samples its 4 crop pixels' 16 image pixels. With a uint8 image the arithmetic
/// is OpenCV's 8-bit one (sample positions rounded to 1/32 pixel, resize weights to 1/2048, the
/// crop's and the resize's values rounded to bytes): within a level or two of OpenCV's bytes
/// (its fixed-point weights and ties aside); a float32 image is sampled without rounding.
/// Returns float32 [N, C, out_h, out_w]. Errors: those of warp_perspective, and ValueError for a
/// crop smaller than 1 x 1.
Tensor crop_resize(const Tensor& image, std::span<const ImageCrop> crops, std::int64_t out_h, std::int64_t out_w,
                   const ImageNormalize& normalize = {});

/// The homography of cv::resize (INTER_LINEAR) from in_h x in_w to out_h x out_w: image point
/// ((x + 0.5) * in_w / out_w - 0.5, (y + 0.5) * in_h / out_h - 0.5). ValueError for sizes < 1.
ImageWarp resize_warp(std::int64_t in_h, std::int64_t in_w, std::int64_t out_h, std::int64_t out_w);

/// a then b: the homography of b applied after a's (b.m * a.m; the width is a's).
ImageWarp compose(const ImageWarp& a, const ImageWarp& b);

}  // namespace gltensor
