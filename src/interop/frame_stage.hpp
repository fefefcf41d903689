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

/// Dispatches one stage: weight [CO, CI, KH, KW] (any float dtype; read as a uniform block where
/// f32, aligned and small enough), bias [CO] or undefined, `pre` steps on the input (zero padding
/// untouched), `post` steps on the conv's output. Shapes are the caller's to check; LimitError
/// for loops past the device's limit.
void run_frame_stage(DeviceImpl& d, const char* op, const Tensor& weight, const Tensor& bias, const Conv2dOptions& o,
                     const std::vector<FrameStep>& pre, const std::vector<FrameStep>& post, const FrameEnd& in,
                     const FrameEnd& out);

}  // namespace gltensor::detail
