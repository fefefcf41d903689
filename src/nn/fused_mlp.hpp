// The fully fused MLP (internal; Müller et al. 2021, "Real-time Neural Radiance Caching for Path
// Tracing", section 4, tiny-cuda-nn's FullyFusedMLP): a chain of dense layers
//   h_{l+1} = act_l(alpha_l * h_l @ W_l + beta_l * b_l)
// run as one dispatch (glsl/nn/fused_mlp.comp): one workgroup per block of rows runs every layer
// for its rows, the activations in shared memory, workgroup barriers between layers. The model
// planner's fuse_mlp (src/model/fuse_mlp.cpp) makes these from MatMul/Gemm chains.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gltensor/linalg.hpp"
#include "gltensor/tensor.hpp"
#include "runtime/variant.hpp"

namespace gltensor::detail {

/// Layers one fused node takes at most (the kernel's uniform arrays).
constexpr int kFusedMlpMaxLayers = 8;

/// One dense layer: W [K, N] row-major at element w_offset of the packed parameters, b [N] at
/// b_offset (zeros where the layer has none).
struct MlpLayer {
  std::int64_t K = 0, N = 0, w_offset = 0, b_offset = 0;
  Epilogue act;
  double alpha = 1, beta = 1;
};

/// A chain of layers over packed parameters (W_0, b_0, W_1, b_1, ... in that order).
struct FusedMlp {
  std::vector<MlpLayer> layers;
  /// The first layer was an ONNX Gemm: its input must be 2-D (MatMul folds leading dims into rows).
  bool gemm_input = false;
  /// Appends a layer of K x N at the end of the packed parameters; returns it.
  MlpLayer& add(std::int64_t K, std::int64_t N);
  /// Elements of the packed parameters.
  std::int64_t numel() const;
};

/// What the plan needs of a device (Capabilities, DeviceImpl::loop_budget).
struct FusedMlpDevice {
  int max_shared_memory = 32768;
  std::uint64_t loop_budget = UINT64_MAX;
  bool software = false;
  int max_local = 1024;  ///< invocations a workgroup may have (its x size)
};

/// GLTENSOR_FUSED_MLP's choices (0: the plan's).
struct FusedMlpChoice {
  std::int64_t rows = 0;   ///< rows per workgroup (BM)
  std::int64_t split = 0;  ///< slices of K per layer (SPLIT)
  /// The prefetch form (PF, fused_mlp.comp): -1 the plan's (GPUs at run, where it fits), 0 never,
  /// 1 wherever it fits (software renderers too).
  int prefetch = -1;
};

struct FusedMlpPlan {
  bool ok = false;
  std::string why;        ///< why not, where !ok ("width 300 > 256 (shared memory ...)")
  std::int64_t rows = 0;  ///< rows per workgroup (BM, a multiple of 4)
  std::int64_t split = 1;
  std::int64_t local = 0;  ///< invocations per workgroup
  std::int64_t wmax = 0;   ///< the widest layer input or output (WMAX)
  /// > 0: the prefetch form, each invocation's weights of a layer in pf registers (PF)
  std::int64_t pf = 0;
  std::uint64_t loop_iterations = 0;
};

/// The plan for `M` rows (M < 0: at load, for any M: the largest row block). Rows per workgroup:
/// the setting's, else a multiple of 4 that gives about 64 workgroups, at most 16; SPLIT: the
/// setting's, else on GPUs at run (M >= 0) 4 or 2 where the prefetch form takes them with 8 k or more per slice, else
/// the most of 8, 4, 2 that leaves 8 k or more per slice, one invocation per item and the slices' sums within the
/// shared memory, else 1; invocations: on GPUs one per item of
/// the widest layer (rows / 4 x N x SPLIT, a multiple of 64 up to max_local), 64 on software renderers. The prefetch
/// form (pf = the most k per slice of any layer) where every layer's items fit the invocations, pf <= kFusedMlpMaxPf
/// and (pf + 48) x invocations <= kFusedMlpPfRegisters: on GPUs at run unless choice.prefetch is 0, anywhere where it
/// is 1 (the invocations then one per item of the widest layer on software renderers too). Refuses fewer than 2 or more
/// than kFusedMlpMaxLayers layers, widths whose shared buffers (two of rows x width floats, SPLIT more where SPLIT > 1)
/// pass the device's shared memory, and loops past its loop budget.
FusedMlpPlan plan_fused_mlp(const FusedMlp& mlp, const FusedMlpDevice& dev, const FusedMlpChoice& choice,
                            std::int64_t M = -1);
/// The widest width plan_fused_mlp takes at load for this device and choice (shared memory).
std::int64_t fused_mlp_max_width(const FusedMlpDevice& dev, const FusedMlpChoice& choice);
FusedMlpDevice fused_mlp_device(const Device& dev);

/// The most weights per invocation and layer the prefetch form holds in registers, and the
/// registers a workgroup of it may take (pf + 48 an invocation: an SM's 64 Ki 32-bit registers).
constexpr std::int64_t kFusedMlpMaxPf = 96;
constexpr std::int64_t kFusedMlpPfRegisters = 65536;

/// fused_mlp.comp's Variant: BM rows per workgroup, WMAX, SPLIT, PF (0: the loop form), the packed
/// parameters' dtype.
struct FusedMlpVariant {
  static constexpr const char* kFile = "fused_mlp.comp";
  std::int64_t rows = 8, wmax = 4, split = 1, pf = 0;
  DType y = DType::f32, x = DType::f32, params = DType::f32;
  Defines defines() const;
  static std::vector<FusedMlpVariant> space();
};

/// y [..., N_last] from x [..., K_0] (f32; 2-D where mlp.gemm_input) and the packed parameters
/// (1-D, f32 or f16, mlp.numel() elements): one dispatch. host_out: y in a host-visible buffer
/// (alloc_host: the kernel writes host memory, the host reads it in place; a model's small output)
/// where the device has them, else in device memory as without it. Throws ShapeError / DTypeError
/// naming `op` and the shapes, LimitError where the plan refuses the device.
Tensor fused_mlp(const char* op, const Tensor& x, const Tensor& params, const FusedMlp& mlp,
                 const FusedMlpChoice& choice, bool host_out = false);

}  // namespace gltensor::detail
