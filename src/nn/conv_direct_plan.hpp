// How conv2d's direct kernel (glsl/nn/conv_direct.comp) runs on a device (internal): the layout
// of positions over invocations, the register blocking, where the weights live and the loop
// length of one invocation. A pure function of the problem, the device's traits and the settings,
// unit-tested without a GPU (tests/ops/test_plans.cpp).
#pragma once
#include <cstdint>

#include "ops/matmul_plan.hpp"  // DeviceTraits
#include "runtime/settings.hpp"

namespace gltensor::detail {

struct ConvDirectProblem {
  std::int64_t C = 0;   ///< input channels per group
  std::int64_t Og = 0;  ///< output channels per group
  std::int64_t KH = 0, KW = 0, OH = 0, OW = 0;
  std::int64_t stride_w = 1, dilation_w = 1;
  std::int64_t stride_h = 1, dilation_h = 1;  ///< the quads form's rows
  bool x_rows_contiguous = false;             ///< x's column stride is 1 and its row stride W
  std::int64_t groups = 1;
  /// Floats of weights a uniform block can hold for the ubo layout (the device's max uniform
  /// block; 0: the layout does not apply, e.g. weights or output not f32, or a gradient recorded).
  std::int64_t ubo_floats = 0;
  /// The output's channels stored shuffled into S x S blocks (conv_transpose2d_blocks): not in
  /// the lanes layout's tiles form.
  bool shuffle = false;
  /// Invocations a workgroup may have (the tiles form's slices: kConvTilesPerGroup x KS).
  std::int64_t max_local = 1024;
  /// The tiles form's blocking where > 0 (plan_conv_input_grad's, measured for its problem):
  /// OPI (a multiple of 4 dividing Og), tiles a workgroup, KS (where C divides and the staged
  /// filters and partial sums fit 16 KiB); else kConvTilesOpi, kConvTilesPerGroup, KS by threads.
  std::int64_t tiles_opi = 0, tiles_per_group = 0, tiles_ks = 0;
};

struct ConvDirectPlan {
  /// rows: one invocation computes PX consecutive positions of a row (each weight loaded once
  /// for PX positions, a row segment shared by the KW taps; best on software rasterizers, whose
  /// lanes gather every load). lanes: one invocation computes PX positions LOCAL_X apart, so that
  /// adjacent invocations read adjacent addresses (coalesced on GPUs), the workgroup's weights
  /// staged once in shared memory. ubo: rows with the weights in a uniform block and the channel
  /// loop run (software rasterizers: any filter whose OPI filters fit a block).
  enum class Layout { rows, lanes, ubo };
  Layout layout = Layout::rows;
  std::int64_t opi = 1;         ///< output channels per invocation (divides Og)
  std::int64_t px = 8;          ///< positions per invocation
  bool rowseg = false;          ///< rows: stride 1 along rows, one segment of SEGLEN inputs
  std::int64_t seglen = 0;      ///< rows + rowseg: px + (KW - 1) * dilation_w
  bool shared_weights = false;  ///< lanes: the workgroup's OPI filters staged in shared memory
  /// lanes, filters past kConvDirectSharedWeights floats (GPUs; TILES): PX consecutive positions
  /// of a row per invocation for OPI (a multiple of 4) channels, the row segment of SEGLEN inputs
  /// in registers, the filters staged in shared memory `ch` input channels at a time (ch divides C).
  bool tiles = false;
  std::int64_t ch = 0;
  std::int64_t ks = 1;    ///< tiles: slices of the input channels per tile (KS), summed in shared memory
  bool prefetch = false;  ///< tiles: the next channel's row segments loaded during this one's FMAs
  /// lanes, depthwise (one input and one output channel per group; GPUs; DWQ): an invocation per
  /// quad of 4 outputs of a row for `py` consecutive rows, no shared memory (any stride and
  /// dilation); groups_x workgroups of local_x invocations cover one image's O planes of
  /// ceil(OH / py) x ceil(OW / 4) such items, one image per workgroup z.
  bool dwq = false;
  std::int64_t py = 1;
  std::uint32_t local_x = 256;     ///< invocations per workgroup
  std::uint64_t groups_x = 0;      ///< workgroups along the positions of one plane
  bool x_rows_contiguous = false;  ///< X_CONTIG: x's row and column strides compile-time W and 1
  /// ubo: output channels per dispatch (a multiple of opi; the last dispatch's may be fewer), and
  /// the uniform block's size in vec4s (WQ): conv_ubo_block_vec4s of the chunk's filters, so that
  /// layers of other widths share programs.
  std::int64_t chunk = 0, wq = 0;
  std::uint64_t loop_iterations = 0;  ///< worst case of one invocation, every loop counted
};

/// Weights (floats) the lanes layout stages in shared memory at most (8 KiB of the 16 KiB every
/// GLES 3.1 device has); larger filters are read from the SSBO.
inline constexpr std::int64_t kConvDirectSharedWeights = 2048;

/// The lanes layout's tiles form: kConvTilesOpi output channels (up to; a multiple of 4 dividing
/// Og) for kConvTilesPx consecutive positions of a row per invocation, kConvTilesPerGroup tiles a
/// workgroup; its slices of the input channels (KS: 1, 2 or 4) grow until one image's invocations
/// reach kConvTilesThreads, where the partial sums (floats: (KS - 1) * kConvTilesPerGroup * PX *
/// OPI) stay within kConvTilesPartials (12 KiB of shared memory, reused after the staged filters).
/// Measured on the H100 over PP-OCR det's 3x3 96 -> 24 convolutions (bench/RESULTS.md, det3).
inline constexpr std::int64_t kConvTilesOpi = 4, kConvTilesPx = 2, kConvTilesPerGroup = 128;
inline constexpr std::int64_t kConvTilesThreads = 65536, kConvTilesPartials = 3072;
/// The partial sums' floats a hinted KS may take (16 KiB: GLES 3.1's least shared memory; the
/// staged filters reuse the same array).
inline constexpr std::int64_t kConvTilesHintPartials = 4096;

/// The lanes layout's quads form (DWQ; depthwise filters on GPUs, every size, stride and
/// dilation): at most kConvDwqPy output rows per invocation (fewer where ceil(OH / py) * py would
/// pass OH by more than OH / 8), kConvDwqLocal invocations a workgroup. Measured on the H100 over
/// PP-OCRv4 rec's depthwise convolutions at [16, 3, 48, 832] (bench/RESULTS.md, recdw): 0.4-0.75x
/// the GPU time of the plane and positions forms it replaced, 0.3x cuDNN's on the 5 x 5 ones; PY 2
/// to 4 within 10% of each other, PY 1 up to 1.3x slower; 64 or 256 invocations no faster.
inline constexpr std::int64_t kConvDwqPy = 4, kConvDwqLocal = 128;

/// The ubo layout's uniform block in vec4s for `floats` floats of filters: the SSBO pool's size
/// classes (powers of two and 1.5x powers of two, at least 16 vec4s: 256 bytes), at most the
/// device's block (ubo_floats / 4), so that the block's size, a compile-time array size, takes a
/// few values (one program per class, not per layer width) and a weight's storage (a buffer of
/// the same class) holds a block of its filters.
std::int64_t conv_ubo_block_vec4s(std::int64_t floats, std::int64_t ubo_floats);

/// Output channels per invocation of the lanes layout's tiles form (a multiple of 4 dividing Og;
/// 0: the form does not apply) for a group of Og output channels.
std::int64_t conv_tiles_opi(std::int64_t Og);

/// The plan. Layout: on software rasterizers ubo where it applies (ubo_floats > 0 and OPI filters
/// fit the block; depthwise filters too: 1.4-2.1x the rows layout's speed), else rows; lanes on GPUs
/// (Settings::conv_direct overrides where the layout applies). OPI: all of a group's output
/// channels up to 8, else the largest divisor of Og up to 8 (ubo: whose filters fit the block).
/// PX: rows 16 (4 where OPI > 4; 16 measured best against 4, 8 and 32 on llvmpipe for the
/// interop bench's 3 x 3 frame filter); lanes 4 (2 where OPI > 4; the tiles form, filters past
/// kConvDirectSharedWeights with Og a multiple of 4 and no shuffle: kConvTilesPx; the quads form,
/// depthwise filters (C = Og = 1, no shuffle): 4 columns of up to kConvDwqPy rows); ubo 16 where
/// the last tile of a row wastes at most OW / 8 positions, else 8 (on llvmpipe 32 ran a 3x3 filter
/// of 96 -> 24 channels over 160 x 160 in about 0.55x the CPU time of 8, 64 and OPI 4 or 12 were
/// slower; 16 runs PP-OCRv4 det 640 and rec 48 x 1088 in the CPU time of 32 (0.90-1.05x) and
/// LLVM compiles its programs in about a quarter of the CPU (0.73 -> 0.19 CPU-s a program; the
/// detector's cold run 13.6 -> 7.7 CPU-s), bench/RESULTS.md 2026-11-28 suite17).
ConvDirectPlan plan_conv_direct(const ConvDirectProblem& p, const DeviceTraits& dev, const Settings& settings);

}  // namespace gltensor::detail
