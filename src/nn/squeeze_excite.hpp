// Squeeze-and-excitation in one dispatch (internal; Hu et al. 2018, "Squeeze-and-Excitation
// Networks"): for each image of x [N, C, H, W]
//   y = x * act2(W2 act1(W1 mean_{H,W}(x) + b1) + b2)      (the scale per channel)
// run as glsl/nn/squeeze_excite.comp: one workgroup per image takes the channel means, both dense
// layers and the scale, m, h and s in shared memory. The model planner's fuse_se
// (src/model/fuse_se.cpp) makes these from GlobalAveragePool -> 1x1 Conv -> 1x1 Conv -> Mul, the
// SE blocks of MobileNetV3 and PP-LCNet (PP-OCR's classifier, detector and recognizer), where the
// planes are small: the four dispatches (and three barriers) of the unfused ops in one.
#pragma once
#include <cstdint>
#include <string>

#include "gltensor/linalg.hpp"
#include "gltensor/tensor.hpp"
#include "runtime/variant.hpp"

namespace gltensor::detail {

/// The one-dispatch form's limits: channels C and Cr (its shared arrays), elements of x per
/// image (one workgroup reads an image twice and writes it: past this the unfused ops' grids
/// spread it over the GPU).
constexpr std::int64_t kSqueezeExciteMaxChannels = 1024;
constexpr std::int64_t kSqueezeExciteMaxElements = std::int64_t{1} << 16;
/// Invocations of its workgroup at most (fewer where the device allows fewer).
constexpr std::int64_t kSqueezeExciteMaxLocal = 1024;

struct SqueezeExcitePlan {
  bool ok = false;
  std::string why;         ///< why not, where !ok ("C 2048 > 1024 (shared memory)")
  std::int64_t local = 0;  ///< invocations of the workgroup (a power of two)
  bool quads = false;      ///< QUADS: x and y as vec4s (H W % 4 == 0)
  /// Invocations per row (a power of two dividing local) of the three row sums: the channel
  /// means (rows C of H W, or H W / 4 quads), W1's rows (Cr of C), W2's rows (C of Cr).
  std::uint32_t lanes[3] = {1, 1, 1};
  std::uint64_t loop_iterations = 0;
};

/// The plan for C channels, Cr reduced channels and planes of hw elements (quads: read as
/// vec4s, hw % 4 == 0), `max_local` invocations at most (the largest power of two within it and
/// kSqueezeExciteMaxLocal), within `loop_budget` iterations per invocation
/// (DeviceImpl::loop_budget). Refuses C or Cr of 0 or past kSqueezeExciteMaxChannels, C hw past
/// kSqueezeExciteMaxElements, and loops past the budget.
SqueezeExcitePlan plan_squeeze_excite(std::int64_t C, std::int64_t Cr, std::int64_t hw, bool quads,
                                      std::int64_t max_local, std::uint64_t loop_budget);
/// The plan squeeze_excite makes for x [N, C, H, W] and Cr on x's device.
SqueezeExcitePlan plan_squeeze_excite(const Tensor& x, std::int64_t Cr);

/// squeeze_excite.comp's Variant: QUADS; f32 operands, kSqueezeExciteMaxChannels (MAX_C).
struct SqueezeExciteVariant {
  static constexpr const char* kFile = "squeeze_excite.comp";
  bool quads = false;
  Defines defines() const;
  static std::vector<SqueezeExciteVariant> space() { return {SqueezeExciteVariant{}, SqueezeExciteVariant{true}}; }
};

/// y [N, C, H, W] f32 from x [N, C, H, W] f32, w1 [Cr, C] or [Cr, C, 1, 1], b1 [Cr], w2 [C, Cr]
/// or [C, Cr, 1, 1], b2 [C] (all f32; any strides: copied where not contiguous), act1 and act2
/// activations without affine (Epilogue::scale, shift): one dispatch. Throws DTypeError /
/// ShapeError naming `op` and the shapes, ValueError for an affine epilogue, LimitError where
/// plan_squeeze_excite refuses the sizes (its reason).
Tensor squeeze_excite(const char* op, const Tensor& x, const Tensor& w1, const Tensor& b1, const Epilogue& act1,
                      const Tensor& w2, const Tensor& b2, const Epilogue& act2);

}  // namespace gltensor::detail
