// One stage of a frame filter (internal; glsl/interop/frame_filter.comp): conv2d with fused
// elementwise steps, from a texture or an intermediate to an intermediate or a texture, one
// dispatch. Shared by interop::conv2d_texture (one stage) and interop::FrameFilter (chains).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gltensor/interop.hpp"
#include "interop/texture_format.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/variant.hpp"

namespace gltensor::detail {

/// A fused elementwise step: affine (v * s[ch] + b[ch], one value per channel) or an activation.
struct FrameStep {
  bool affine = false;
  Epilogue act;
  std::vector<float> s, b;
};

/// Appends an affine step, folded into a preceding affine step (products and sums in double,
/// rounded once); identity steps are dropped.
void push_affine(std::vector<FrameStep>& steps, std::vector<double> s, std::vector<double> b);

/// Where a stage reads or writes: a texture level (`tex`, with its format and whether picture rows
/// are flipped) or an intermediate [H, W, C] (`mid`, 32-bit words: f32, or f16 pairs).
struct FrameEnd {
  const interop::Texture* tex = nullptr;
  const TextureFormat* format = nullptr;
  bool flip = false;
  const Tensor* mid = nullptr;
  bool mid_f16 = false;
  std::int64_t H = 0, W = 0, C = 0;
};

/// 32-bit words of an intermediate [H, W, C] (f16: C rounded up to even).
std::int64_t mid_words(std::int64_t H, std::int64_t W, std::int64_t C, bool f16);

/// conv2d's output size along one axis (floor division; may be <= 0).
std::int64_t conv_out_size(std::int64_t in, std::int64_t pad0, std::int64_t pad1, std::int64_t dil, std::int64_t k,
                           std::int64_t stride);

/// glsl/interop/frame_filter.comp's compile-time choices (the Variant contract, variant.hpp).
struct FrameStageVariant {
  static constexpr const char* kFile = "frame_filter.comp";
  std::int64_t ci = 1, co = 1, kh = 1, kw = 1;
  std::int64_t tex_unit = -1, img_unit = -1;  // >= 0: the input is a texture / the output an image
  const char* img_format = "rgba8";
  bool level0 = true, mid_in_f16 = false, mid_out_f16 = false;
  std::int64_t wq = 0, ubo_binding = 0, wn = 0;  // weights: uniform block of wq vec4s, else wn staged
  DType wdtype = DType::f32, bdtype = DType::f32;
  bool bias = false;
  std::int64_t bq = 0;    // bias: a uniform block of bq vec4s at ubo_binding - 1
  std::string pre, post;  // PRE_STEPS / POST_STEPS statements
  std::int64_t pre_n = 1, post_n = 1;

  Defines defines() const;
  /// Every kind of input and output, weight and bias placement and dtype, and fused steps
  /// (tests/ops/test_kernel_variants.cpp compiles each offline).
  static std::vector<FrameStageVariant> space();
};

/// glsl/interop/texture.comp's compile-time choices: from_texture (a sampled texture into a
/// tensor) or to_texture (a tensor into an image).
struct TextureVariant {
  static constexpr const char* kFile = "texture.comp";
  bool from_texture = true;          ///< FROM_TEXTURE (TEX_UNIT), else IMG_UNIT / IMG_FORMAT
  std::int64_t unit = 0;             ///< the texture or image unit
  const char* img_format = "rgba8";  ///< to_texture: the image's format qualifier
  std::int64_t channels = 4;         ///< CH
  DType dtype = DType::f32;          ///< the tensor's dtype (operand 0)
  Defines defines() const;
  static std::vector<TextureVariant> space();
};

/// Dispatches one stage: weight [CO, CI, KH, KW] (any float dtype; read as a uniform block where
/// f32, aligned and small enough), bias [CO] or undefined, `pre` steps on the input (zero padding
/// untouched), `post` steps on the conv's output. Shapes are the caller's to check; LimitError
/// for loops past the device's limit.
void run_frame_stage(DeviceImpl& d, const char* op, const Tensor& weight, const Tensor& bias, const Conv2dOptions& o,
                     const std::vector<FrameStep>& pre, const std::vector<FrameStep>& post, const FrameEnd& in,
                     const FrameEnd& out);

}  // namespace gltensor::detail
