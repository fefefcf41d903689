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
/// Invocations of its workgroup.
constexpr std::int64_t kSqueezeExciteLocal = 256;

struct SqueezeExcitePlan {
  bool ok = false;
  std::string why;  ///< why not, where !ok ("C 2048 > 1024 (shared memory)")
  /// Invocations per row (a power of two dividing kSqueezeExciteLocal) of the three row sums:
  /// the channel means (rows C of H W), W1's rows (Cr of C), W2's rows (C of Cr).
  std::uint32_t lanes[3] = {1, 1, 1};
  std::uint64_t loop_iterations = 0;
};

/// The plan for C channels, Cr reduced channels and planes of hw elements, within `loop_budget`
/// iterations per invocation (DeviceImpl::loop_budget). Refuses C or Cr of 0 or past
/// kSqueezeExciteMaxChannels, C hw past kSqueezeExciteMaxElements, and loops past the budget.
SqueezeExcitePlan plan_squeeze_excite(std::int64_t C, std::int64_t Cr, std::int64_t hw, std::uint64_t loop_budget);

/// squeeze_excite.comp's Variant (one program: f32 operands, kSqueezeExciteMaxChannels).
struct SqueezeExciteVariant {
  static constexpr const char* kFile = "squeeze_excite.comp";
  Defines defines() const;
  static std::vector<SqueezeExciteVariant> space() { return {SqueezeExciteVariant{}}; }
};

/// y [N, C, H, W] f32 from x [N, C, H, W] f32, w1 [Cr, C] or [Cr, C, 1, 1], b1 [Cr], w2 [C, Cr]
/// or [C, Cr, 1, 1], b2 [C] (all f32; any strides: copied where not contiguous), act1 and act2
/// activations without affine (Epilogue::scale, shift): one dispatch. Throws DTypeError /
/// ShapeError naming `op` and the shapes, ValueError for an affine epilogue, LimitError where
/// plan_squeeze_excite refuses the sizes (its reason).
Tensor squeeze_excite(const char* op, const Tensor& x, const Tensor& w1, const Tensor& b1, const Epilogue& act1,
                      const Tensor& w2, const Tensor& b2, const Epilogue& act2);

}  // namespace gltensor::detail
