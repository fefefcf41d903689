// The log-mel front end in one dispatch (internal): for each frame f of each signal b of x [B, L]
// (frames of n values every `step`, F = 1 + (L - n) / step of them)
//   X[k]       = sum_j x[b, f step + j] w[j] e^{-2 pi i j k / n}        (k < m, the STFT's bins)
//   y[b, f, c] = act(sum_k |X[k]|^2 M[k, c] + bias[c])                  (c < N, the mel bins)
// that is ONNX's STFT (a real signal, a window w), its power spectrum and a MatMul by a constant
// (MelWeightMatrix's), its bias and activation (Add(eps) and Log): torchaudio's / Kaldi's log-mel
// features. Run as glsl/nn/stft_mel.comp: one workgroup per `frames` frames of a signal holds
// the windowed frames folded by the real DFT's symmetry, (x[j] + x[n - j], x[j] - x[n - j]) for
// j <= n / 2, and the twiddles e^{-2 pi i t / n} (made on the host in float64) in shared memory;
// each bin's sums are split over `slices` invocations, then added, each invocation's twiddles the
// products of `twiddles` of them in registers and one read per that many (or each read from the
// table); the power spectrum stays in shared memory for the mel product, `mel_lanes` invocations
// per mel column each holding its `mel_regs` weights of the column in registers, loaded before the
// DFT (every bin, zeros included: NaNs and overflowed powers reach the columns as the matmul's;
// an infinite sample may give NaN where the matmul gives an infinity: the fold adds x[j] and
// x[n - j], and the twiddle products can round to 0 where the matrix holds a tiny cosine).
// The model planner's fuse_stft_mel (src/model/planner.cpp) makes these from fuse_stft_power's two
// matmuls (the frames times the DFT matrix with a square epilogue, then the mel MatMul over the
// (re, im) columns): the two dispatches (about 14 us of GPU latency each on the H200) in one.
#pragma once
#include <cstdint>
#include <string>

#include "gltensor/linalg.hpp"
#include "gltensor/tensor.hpp"
#include "runtime/variant.hpp"

namespace gltensor::detail {

/// Frames per workgroup at most (registers: two sums per frame).
constexpr std::int64_t kStftMelMaxFrames = 8;
/// Mel weights per invocation at most (registers).
constexpr std::int64_t kStftMelMaxMelRegs = 64;
/// The frame length at most (the twiddles' shared array and the loop bounds are compile-time).
constexpr std::int64_t kStftMelMaxLength = 4096;

/// The device traits the plan reads.
struct StftMelDevice {
  std::int64_t max_local = 1024;      ///< invocations of a workgroup at most
  std::int64_t shared_bytes = 16384;  ///< shared memory of a workgroup
  std::uint64_t loop_budget = ~0ull;  ///< loop iterations per invocation (DeviceImpl::loop_budget)
  bool software = false;              ///< a software rasterizer (llvmpipe)
};
/// Choices forced by Settings (GLTENSOR_STFT_MEL=FxSxL), 0 for the plan's.
struct StftMelChoice {
  std::int64_t frames = 0, slices = 0, local = 0;
  std::int64_t twiddles = 0;  ///< twiddles in registers (2, 4, ...); 1: none (the table form)
};

struct StftMelPlan {
  bool ok = false;
  std::string why;             ///< why not, where !ok
  std::int64_t local = 0;      ///< invocations of the workgroup (a power of two)
  std::int64_t frames = 1;     ///< frames per workgroup
  std::int64_t slices = 1;     ///< invocations per bin (a power of two dividing local), each summing every slices-th j
  std::int64_t twiddles = 8;   ///< TWQ: twiddles in registers per invocation (0: each read from the table)
  std::int64_t mel_lanes = 1;  ///< ML: invocations per mel column (a power of two, N ML <= local)
  std::int64_t mel_regs =
      1;  ///< MQ: mel weights per invocation, ceil(m / mel_lanes) (0: past kStftMelMaxMelRegs, read in the loop)
  std::int64_t shared_bytes = 0;
  std::uint64_t loop_iterations = 0;
};

/// The plan for frames of n values, m bins (m <= n) and N mel bins on device `d`: on GPUs one
/// frame per workgroup of up to 1024 invocations, the bins' sums split into the slices that give
/// each bin an invocation (4 for m = 201), 8 twiddles in registers; on software rasterizers 256
/// invocations and 4 frames (fewer workgroups, each a thread); the mel lanes the most (up to 32)
/// that give each column theirs, their weights in registers up to kStftMelMaxMelRegs a lane (else
/// read in the product's loop). Refuses (why) n past kStftMelMaxLength, m past n, N past the
/// invocations, shared memory past the device's at 32 invocations, and loops past the budget; a forced choice is taken
/// as it is (refused where it does not fit).
StftMelPlan plan_stft_mel(std::int64_t n, std::int64_t m, std::int64_t N, const StftMelDevice& d,
                          const StftMelChoice& choice);
/// The traits of x's device.
StftMelDevice stft_mel_device(const Tensor& x);

/// stft_mel.comp's Variant: the frame length n and bins m (compile-time), frames per workgroup,
/// slices, twiddles in registers (0: the table form), mel lanes and weights per lane; f32 operands.
struct StftMelVariant {
  static constexpr const char* kFile = "stft_mel.comp";
  std::int64_t n = 400, m = 201, frames = 1, slices = 4, twiddles = 8, mel_lanes = 16, mel_regs = 13;
  Defines defines() const;
  static std::vector<StftMelVariant> space() {
    return {StftMelVariant{}, StftMelVariant{31, 16, 3, 1, 0, 32, 1}, StftMelVariant{48, 48, 4, 32, 2, 1, 48},
            StftMelVariant{1, 1, 8, 2, 32, 4, 1}, StftMelVariant{400, 201, 2, 4, 0, 1, 0}};
  }
};

/// y [B, F, N] f32 from the signal x [B, L] f32 (any strides: copied where not contiguous),
/// frames of n = window.numel() values every `step` (F = 1 + (L - n) / step), twiddles [n, 2]
/// (cos, -sin of 2 pi t / n), M [m, N], bias [N], and an activation epilogue without affine
/// (Epilogue::scale, shift); one dispatch. `host_out`: y in a host-visible buffer (alloc_host).
/// Throws DTypeError / ShapeError naming `op`, ValueError for an affine epilogue or a step < 1,
/// LimitError where plan_stft_mel refuses (its reason) or y is past the device's max SSBO block.
Tensor stft_mel(const char* op, const Tensor& x, std::int64_t step, const Tensor& window, const Tensor& twiddles,
                const Tensor& M, const Tensor& bias, const Epilogue& epilogue, const StftMelChoice& choice,
                bool host_out);

}  // namespace gltensor::detail
