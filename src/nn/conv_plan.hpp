// How conv2d runs (internal): the forward's path (the direct kernel, depthwise taps, a GEMM over
// the im2col columns, whole or in pieces of the output positions that fit the device's max SSBO
// block) and form of the GEMM (pointwise, im2col, grouped), and the backward's (the weight
// gradient from the forward's saved columns, from columns made again, or per piece; the input
// gradient's col2im pieces). Pure functions of the geometry, the device's traits and the
// settings, unit-tested without a GPU (tests/ops/test_plans.cpp).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "gltensor/nn_functional.hpp"
#include "nn/conv_direct_plan.hpp"
#include "runtime/settings.hpp"
#include "runtime/variant.hpp"

namespace gltensor::detail {

/// A convolution's geometry: batch N, input channels C (per group), input H x W, kernel KH x
/// KW, output OH x OW, options (stride, padding, dilation, groups).
struct ConvGeometry {
  std::int64_t N, C, H, W, KH, KW, OH, OW;
  Conv2dOptions o;
};

/// Output positions of a piece of a convolution: images [n0, n0 + nn), output rows [oh0, oh0 +
/// noh) and columns [ow0, ow0 + now).
struct ConvPiece {
  std::int64_t n0, nn, oh0, noh, ow0, now;
};

/// Pieces of at most `max_positions` output positions each (at least 1): all of g's output
/// where it fits, else whole images, else rows of one image, else parts of one row. Ops split
/// their columns matrices (one row or column per output position) this way to keep each under
/// the device's max SSBO block.
std::vector<ConvPiece> plan_pieces(const ConvGeometry& g, std::int64_t max_positions);

/// Output positions per piece of a columns matrix with `col_rows` rows (and a GEMM result of `O`
/// rows) under `ssbo_limit` bytes, 4-byte floats.
std::int64_t max_positions(std::int64_t ssbo_limit, std::int64_t col_rows, std::int64_t O);

/// col2im(a @ b)'s pieces (the input gradient, conv_transpose2d): each piece's product [positions,
/// C*KH*KW] under `ssbo_limit` bytes.
std::vector<ConvPiece> plan_col2im_pieces(const ConvGeometry& g, std::int64_t ssbo_limit);

/// The GEMM form of one im2col convolution: pointwise (a 1x1, stride-1, unpadded convolution of
/// one contiguous f32 image, whose [C, H*W] view is the columns matrix), pointwise_batched (the
/// same of several images without gradient: one batched matmul of the weights against each
/// image's [C, H*W] view, writing [N, O, H*W]; no columns matrix, no reordering of the output;
/// Settings::conv_pointwise_batched), im2col (im2col then one matmul) or grouped (one im2col
/// over every group's channels, then a batched matmul).
enum class ConvGemmForm { pointwise, pointwise_batched, im2col, grouped };
ConvGemmForm plan_conv_gemm(const ConvGeometry& g, std::int64_t groups, bool x_f32_contiguous, bool grad = false,
                            bool batched = true);

struct Conv2dProblem {
  ConvGeometry g{};
  std::int64_t O = 0;              ///< output channels (all groups)
  bool x_f32_contiguous = false;   ///< x is f32 and contiguous
  bool x_rows_contiguous = false;  ///< x's column stride is 1 and its row stride W
  bool grad = false;               ///< a gradient is recorded (some input requires grad)
  bool need_w = false;             ///< the weight requires grad
  bool f32 = false;                ///< x, the weight and the bias (if any) are f32
};

struct ConvDevice {
  bool software = false;          ///< a CPU rasterizer (llvmpipe)
  std::uint64_t loop_limit = 0;   ///< DeviceImpl::loop_limit() (0: none)
  std::int64_t ssbo_limit = 0;    ///< DeviceImpl::ssbo_limit()
  std::int64_t ubo_limit = 0;     ///< the max uniform block (bytes; 0: none), for the direct kernel's ubo layout
  std::int64_t max_local = 1024;  ///< invocations a workgroup may have (min of the x size and the invocations)
};

/// The direct weight gradient (glsl/nn/conv_wgrad.comp): one group, at most kConvWgradMaxTaps taps
/// (C * KH * KW); workgroups of kConvWgradLocal invocations, one per (chunk of `chunk` output
/// positions, group of `opi` output channels: 4 (GPUs: 2), 2 or 1, as many as divide O and keep the shared
/// sums within 16 KiB), about kConvWgradGroups of them on GPUs (16 chunks at most on software
/// rasterizers), each invocation's loop within the device's limit; `direct` false where none of
/// this applies (the im2col GEMM then).
struct ConvWgradPlan {
  bool direct = false;
  std::int64_t chunk = 0;   ///< positions per workgroup (a multiple of the local size)
  std::int64_t chunks = 0;  ///< workgroups per group of channels
  std::int64_t opi = 1;     ///< output channels per invocation
  std::uint64_t loop_iterations = 0;
};
inline constexpr std::int64_t kConvWgradMaxTaps = 32, kConvWgradLocal = 64, kConvWgradGroups = 1024;
/// Loop iterations of one invocation over `iters` positions (every loop counted).
std::uint64_t conv_wgrad_loops(std::int64_t C, std::int64_t KH, std::int64_t KW, std::uint64_t iters,
                               std::int64_t opi = 1);
ConvWgradPlan plan_conv_wgrad(const ConvGeometry& g, std::int64_t O, bool software, std::uint64_t loop_limit);

struct Conv2dPlan {
  /// direct: glsl/nn/conv_direct.comp (small filters: C/groups * KH * KW <= 32, the ubo layout
  /// on software rasterizers, the lanes layout's tiles form on GPUs (kConvTilesMaxOg), or where
  /// the columns exceed the SSBO limit, if its loop fits the device). depthwise: one input and output
  /// channel per group without a gradient, a sum over the taps of shifted views times the tap's
  /// weights. gemm: im2col + GEMM (gemm_form). gemm_pieces: the same per piece of the output
  /// positions, each into its slice, where the columns exceed the device's max SSBO block.
  /// winograd: glsl/nn/conv_winograd.comp's transforms around batched GEMMs (plan_conv_winograd).
  enum class Path { direct, depthwise, gemm, gemm_pieces, winograd };
  Path path = Path::gemm;
  std::int64_t winograd_m = 0;                    ///< winograd: the output tile's size M of F(M x M, 3 x 3), 2 or 4
  ConvDirectPlan direct;                          ///< the direct kernel's plan (its loop length decides `direct`)
  ConvGemmForm gemm_form = ConvGemmForm::im2col;  ///< gemm (gemm_pieces: per piece, planned per call)
  std::vector<ConvPiece> pieces;                  ///< gemm_pieces

  /// Backward, weight gradient: from the columns the forward kept (gemm without pieces), from
  /// columns made again by im2col of x (in weight_pieces where they exceed the SSBO limit), or
  /// (direct: small filters of one group, plan_conv_wgrad) from gy and x without columns, the
  /// bias gradient with it.
  enum class WeightGrad { none, saved_columns, im2col, direct };
  WeightGrad weight_grad = WeightGrad::none;
  std::vector<ConvPiece> weight_pieces;  ///< im2col: pieces of one group's columns
  ConvWgradPlan wgrad;                   ///< direct
};

/// The input gradient of a stride-1 convolution of one group: the convolution of gy [N, O, OH,
/// OW] with the filters flipped along KH and KW and transposed to [C, O, KH, KW] (padding d * (K -
/// 1) - p on each side, the same dilation), in the direct kernel, instead of col2im over the GEMM
/// gy @ W (whose product, C*KH*KW columns per position, is written and read once more). `direct`
/// where every input is f32, the padding is at most d * (K - 1) on each side and the transposed
/// convolution's loop fits the device, and then on GPUs where it runs in the lanes layout's tiles
/// form with at most kConvTilesMaxOg output channels (C), not 1 x 1, or wherever Settings::conv
/// forces direct (Settings::conv = im2col: never). Never the ubo layout (the filters are read
/// flipped through negated strides, which a uniform block's copy cannot be).
struct ConvInputGradPlan {
  bool direct = false;
  ConvGeometry g{};       ///< the transposed convolution: input gy, output [N, C, H, W]
  ConvDirectPlan kernel;  ///< its direct kernel's plan
};
ConvInputGradPlan plan_conv_input_grad(const ConvGeometry& g, std::int64_t O, bool f32, bool gy_rows_contiguous,
                                       const ConvDevice& dev, const Settings& settings);

/// Output channels per group up to which GPUs run large filters (no gradient) in the direct
/// kernel's tiles form rather than im2col + GEMM.
inline constexpr std::int64_t kConvTilesMaxOg = 32;

/// Winograd F(M x M, 3 x 3) (Lavin & Gray 2015; glsl/nn/conv_winograd.comp): the input tiles'
/// transform V [T, C, P] (T = (M + 2)^2, P = N * ceil(OH / M) * ceil(OW / M) tiles), the
/// filters' U [T, O, C], T batched GEMMs U_t @ V_t and the output transform with bias and
/// epilogue. M (2 or 4) for a 3x3, stride-1, undilated convolution of one group, f32, without
/// gradient, whose transformed operands each fit the device's max SSBO block; else 0.
/// Settings::conv_winograd 2 or 4 forces that M wherever this applies, 0 never; -1 (choose): 4 on
/// GPUs for C >= kWinogradMinC input and O >= kWinogradMinO output channels over at least
/// kWinogradMinPositions output positions (N * OH * OW: the wide and narrow CNNs' 3x3 layers at 56x56
/// and 112x112, bench/RESULTS.md, 2026-11-28, wino35; smaller outputs, few tiles for the batched
/// GEMMs, were not measured and keep their path), never on software rasterizers (the direct
/// kernel's ubo layout; fewer programs). Settings::conv (direct / im2col) forces its path instead.
inline constexpr std::int64_t kWinogradMinC = 32, kWinogradMinO = 64, kWinogradMinPositions = 56 * 56;
std::int64_t plan_conv_winograd(const Conv2dProblem& p, const ConvDevice& dev, const Settings& settings);

/// The fused Winograd stage's blocking (glsl/nn/conv_winograd.comp, WG_FUSED): a workgroup per
/// block of `o` output channels x `p` tiles, x's channels by chunks of `c`, `ro` x `rp` sums per
/// invocation for one of the T transformed elements; `prefetch` (FB_PREFETCH): the next chunk's
/// loads issued before this chunk's sums; `split` (FB_SPLIT, > 1): that many workgroups per block
/// over parts of the input channels, the last to finish adding the others' sums (a workspace and
/// runtime/counters.hpp's arrival counters). o == 0: not fused (three dispatches).
struct WinogradFusedBlock {
  std::int64_t o = 0, p = 0, c = 0, ro = 0, rp = 0;
  bool prefetch = false;
  std::int64_t split = 1;
  std::int64_t threads_per_t() const { return ro > 0 && rp > 0 ? (o / ro) * (p / rp) : 0; }
  /// Floats of its shared memory for F(m x m): max(T c (o + p), T o p).
  std::int64_t shared_floats(std::int64_t m) const;
  /// The longest loop count of one invocation over C channels (every loop counted).
  std::uint64_t loops(std::int64_t m, std::int64_t C) const;
};
/// The default blocking on GPUs: 16 output channels x 16 tiles, chunks of 8 channels, 4 x 4 sums
/// per invocation (576 invocations and 36 KiB of shared memory for F(4x4)), prefetched (measured
/// on the H200: bench/RESULTS.md, 2026-11-28, cnn38).
inline constexpr WinogradFusedBlock kWinogradFusedBlock{16, 16, 8, 4, 4, true, 1};
/// The fused stage on GPUs (Settings::conv_winograd_fused -1) for f32 F(4x4) convs of at most
/// kWinogradFusedMaxTiles tiles and C * O <= kWinogradFusedMaxCO: the narrow CNN's first two layers
/// at 56 x 56 (32 -> 64, 64 -> 64 channels over 196 tiles), whose batched GEMMs have too few tiles
/// to fill the GPU; not at 112 x 112 (784 tiles) nor 64 -> 128 channels (the wide CNN's first layer
/// at 56: its net 247.5 us of GPU time fused against 231.4 in three stages, the H200).
inline constexpr std::int64_t kWinogradFusedMaxTiles = 256, kWinogradFusedMaxCO = 64 * 64;
/// The slots (blocks) a split dispatch may count in: runtime/counters.hpp's words.
inline constexpr std::int64_t kWinogradFusedMaxSlots = 16384;
/// Whether F(m x m, 3 x 3) of C -> O channels over P tiles (`quant`: the QDQ conv) runs fused (one
/// dispatch) and with which blocking: Settings::conv_winograd_fused 0 never; 1 forced, -1 (choose)
/// on GPUs for f32 F(4x4) within kWinogradFusedMaxTiles and kWinogradFusedMaxCO; the blocking
/// Settings::conv_winograd_block_o/p/c/f's where set (then not fused unless it fits), else
/// kWinogradFusedBlock with its tiles, then its channels, halved until it fits the device (its
/// invocations, shared memory and loop limit); its input channels split over
/// Settings::conv_winograd_split workgroups per block, or (0) over 2 where that leaves each part
/// 2 chunks or more (the narrow CNN's layers at 56: 84.0 against 89.2 us per run unsplit, the
/// H200), 1 where the chunks are fewer than the parts. `o == 0` in the result: not fused.
WinogradFusedBlock plan_winograd_fused(std::int64_t m, std::int64_t C, std::int64_t O, std::int64_t P, bool quant,
                                       const ConvDevice& dev, std::int64_t max_shared_bytes, const Settings& settings);

/// The M that conv2d's plan takes for these operands where it is the Winograd path (a 4-D f32 x
/// and 3x3 w of one group, bias f32 or undefined, no gradient, plan_conv_winograd); else 0 (another
/// path, or arguments that conv2d itself rejects: it throws there).
std::int64_t conv2d_winograd_m(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dOptions& o);
/// The filters' transform U [T, O, C] (T = (m + 2)^2, f32) of w [O, C, 3, 3] (f32, any strides)
/// for F(m x m, 3 x 3): the model runtime keeps it per Conv node (constant weights) and passes it
/// to conv2d_winograd, so that its runs skip the transform.
Tensor winograd_filters(const Tensor& w, std::int64_t m);
/// conv2d(x, w, bias, o, epi) through F(m x m, 3 x 3) with u = winograd_filters(w, m), where
/// conv2d_winograd_m(x, w, bias, o) == m (else a ValueError naming conv2d, m and u's shape).
Tensor conv2d_winograd(const Tensor& x, const Tensor& u, const Tensor& bias, const Conv2dOptions& o,
                       const Epilogue& epi, std::int64_t m);

/// The QDQ pattern's conv (the model runtime's QConv: DequantizeLinear of x and of the filters,
/// the float Conv with bias, the activation's bounds, QuantizeLinear, and DequantizeLinear where
/// `dequantize`) through Winograd: x 8-bit dequantized as the input transform reads it (or f32 x
/// quantized and dequantized there: quantize_x, the net's input QuantizeLinear), the output
/// quantized in the output transform.
struct WinogradQuant {
  DType x = DType::u8;      ///< x's dtype: u8 / i8, or f32 with quantize_x
  bool quantize_x = false;  ///< f32 x through QuantizeLinear to x8 and DequantizeLinear as read
  DType x8 = DType::u8;     ///< quantize_x: x's 8-bit type
  float x_scale = 1;
  std::int32_t x_zero = 0;
  DType y8 = DType::u8;     ///< the output's 8-bit type
  bool dequantize = false;  ///< float32 output: the 8-bit value dequantized (DequantizeLinear after it)
  float y_scale = 1;
  std::int32_t y_zero = 0;
  float lo = -3.4e38f, hi = 3.4e38f;  ///< the activation's bounds before QuantizeLinear (requant_bounds)
};
/// The M of F(M x M, 3 x 3) for the QDQ conv of x [N, C, H, W] (any dtype) with w [O, C, 3, 3]
/// (plan_conv_winograd of the f32 conv without gradient on x's device), where it is 4 and, for an
/// 8-bit output (not `dequantize`), OW % 4 == 0 (whole words of a tile row); else 0.
std::int64_t qconv_winograd_m(const Tensor& x, const Shape& w, const Conv2dOptions& o, bool dequantize);
/// The QDQ conv through F(m x m, 3 x 3) with u = winograd_filters of the dequantized filters, bias
/// f32 [O] or undefined: [N, O, OH, OW] of q.y8 (f32 with q.dequantize). Where qconv_winograd_m
/// gave m (else a ValueError naming conv2d).
Tensor conv2d_winograd_quant(const Tensor& x, const Tensor& u, const Tensor& bias, const Conv2dOptions& o,
                             std::int64_t m, const WinogradQuant& q);

/// The plan. Settings::conv forces the forward's path (direct or im2col, where each applies).
Conv2dPlan plan_conv2d(const Conv2dProblem& p, const ConvDevice& dev, const Settings& settings);

/// conv_transpose2d (no gradient) whose kernel is its stride (square, no padding, dilation or
/// output padding; f32) as the direct kernel's ubo layout (software rasterizers) or lanes layout
/// (GPUs; one group) runs it: a 1x1 convolution to Cout * S * S channels shuffled into S x S blocks, one
/// dispatch (per chunk of channels: ubo), `epi` in the kernel (nn/conv.cpp). Undefined where
/// neither layout applies (the rows layout forced, filters past the uniform block, another
/// geometry or dtype).
Tensor conv_transpose2d_blocks(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dOptions& o,
                               std::array<std::int64_t, 2> op_pad, const Epilogue& epi = {});
/// gy [N, O, OH, OW] -> [N*OH*OW, O] (contiguous): the GEMMs' rows of a conv's output gradient.
/// f32 gy with contiguous planes: conv.comp's ROWS_T (a tiled transpose per image, measured on the
/// H100: bench/RESULTS.md, 2026-11-28, cnn33); else the permuted view's copy.
Tensor gy_rows(const Tensor& gy);
/// conv_transpose2d's and conv_transpose1d's output padding (PyTorch's rule; not the model
/// runtime's ConvTranspose, whose output_shape reaches its size with larger ones): each value >= 0
/// and < max(stride, dilation) of its dim (op_pad, stride and dilation of one size: 2, or 1 for the
/// 1-D op), else a ValueError naming op, the values (one: a number, else a list) and x's and w's
/// shapes.
void check_output_padding(const char* op, std::span<const std::int64_t> op_pad, std::span<const std::int64_t> stride,
                          std::span<const std::int64_t> dilation, const Tensor& x, const Tensor& w);
/// conv_transpose2d (nn_functional.hpp) with an epilogue: in the kernel where
/// conv_transpose2d_blocks applies, else the ops after it (the model runtime's ConvTranspose).
/// Its errors name `op`: "conv_transpose1d" for the 1-D form on [N, C, 1, L] (the shapes in them
/// its own 3-D ones).
Tensor conv_transpose2d_epilogue(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dOptions& o,
                                 std::array<std::int64_t, 2> op_pad, const Epilogue& epi,
                                 const char* op = "conv_transpose2d");
/// conv2d (nn_functional.hpp) with its epilogue, plus `residual` (undefined: none): the residual
/// added after the epilogue in the direct kernel's stores where the direct path runs without a
/// gradient, x is f32 and residual is f32, contiguous at offset 0 and of the output's shape (the
/// model runtime's Conv -> Add of a residual block: one dispatch; RESIDUAL); else add(conv2d(...),
/// residual) after it (broadcasting as add does). conv2d's errors.
Tensor conv2d_add(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dOptions& o, const Epilogue& epi,
                  const Tensor& residual);

/// The floats of a buffer that a conv2d weight of shape `w` [O, C / groups, KH, KW] (f32) is
/// best stored at the start of: the device's whole uniform block (16384 on llvmpipe; where that
/// is at most 64 KiB) where conv2d runs these filters in the direct kernel's ubo layout without a
/// gradient (software rasterizers, or GLTENSOR_CONV_DIRECT=ubo; whatever the input's size, stride,
/// padding and dilation: the layout depends on the filters, the groups, the device and Settings
/// only) and they are smaller, so that conv2d binds a whole block of them and every layer shares
/// the programs of one block size (conv_direct_ubo); else 0 (store the weight as it is). The model
/// runtime uploads its Conv initializers into such buffers (HostTensor::upload's min_numel).
std::int64_t conv_ubo_weight_floats(DeviceImpl& dev, const Shape& w, std::int64_t groups);

/// The Variant (runtime/variant.hpp) of glsl/nn/conv_direct.comp: the direct plan's layout and
/// blocking, the filter's size, the operands' dtypes.
struct ConvDirectVariant {
  static constexpr const char* kFile = "conv_direct.comp";
  ConvDirectPlan plan;                          ///< PX, OPI, LANES, W_SHARED, W_UBO (WQ), ROWSEG (SEGLEN), X_CONTIG
  std::int64_t cg = 1, kh = 1, kw = 1, dw = 1;  ///< CG (not ubo), KH, KW; DW (ROWSEG: the dilation along rows)
  std::int64_t sw = 1;                          ///< SW (ubo: the stride along rows)
  std::int64_t sh = 1, dh = 1;                  ///< SH, DH (the quads form: stride and dilation along columns)
  Activation act = Activation::none;            ///< ACT(x): the epilogue's activation (f32 outputs)
  bool affine = false;                          ///< ACT(x) then * u_act_scale + u_act_shift (Epilogue's)
  /// ubo: X_QUADS (x contiguous with rows of whole quads, its offset a multiple of 4), SHIFT (the
  /// segment's first column modulo 4: -padding_left mod 4).
  bool x_quads = false;
  std::int64_t shift = 0;
  /// DWQ (the lanes layout's quads form): Y_QUADS, the f32 output stored as quads (OW % 4 == 0).
  bool y_quads = false;
  /// ubo and lanes: SHUFFLE S (> 0): the output's channels (o, si, sj) stored as o's S x S blocks
  /// of pixels (conv_transpose2d with kernel = stride = S as a 1x1 convolution).
  std::int64_t shuffle = 0;
  bool bias = false;  ///< HAS_BIAS (operand 3)
  /// RESIDUAL: operand 4 (3 without bias), f32, added to each f32 output after ACT (conv2d_add).
  bool residual = false;
  DType out = DType::f32, x = DType::f32, w = DType::f32, b = DType::f32;
  Defines defines() const;
  static std::vector<ConvDirectVariant> space();
};

/// The Variant of glsl/nn/conv_wgrad.comp: the filter's channels and size (TAPS = c * kh * kw), the
/// operands' dtypes.
struct ConvWgradVariant {
  static constexpr const char* kFile = "conv_wgrad.comp";
  std::int64_t c = 1, kh = 1, kw = 1, opi = 1;  ///< WG_C, WG_KH, WG_KW; OPI: output channels per invocation
  DType gy = DType::f32, x = DType::f32;
  Defines defines() const;
  static std::vector<ConvWgradVariant> space();
};

/// The Variant of glsl/nn/conv_winograd.comp: the stage (WG_WEIGHT, WG_INPUT, WG_OUTPUT), the tile
/// size WG_M, the output stage's epilogue and bias. Every operand f32.
struct ConvWinogradVariant {
  static constexpr const char* kFile = "conv_winograd.comp";
  static constexpr std::uint32_t kLocal = 64;  ///< invocations per workgroup (not fused)
  /// fused (WG_FUSED): the input transform, the T GEMMs and the output transform in one dispatch
  /// (plan_winograd_fused's blocking `fb`); the input stage's x fields and the output stage's
  /// epilogue and y fields apply to it.
  enum class Stage { weight, input, output, fused };
  Stage stage = Stage::input;
  std::int64_t m = 4;                 ///< WG_M
  Activation act = Activation::none;  ///< ACT(x) (output)
  bool affine = false;                ///< ACT(x) then * u_act_scale + u_act_shift (output)
  bool bias = false;                  ///< HAS_BIAS (output; operand 2)
  /// The QDQ pattern (conv2d_winograd_quant): input, x 8-bit (x: u8 / i8, X8) or f32 through
  /// QuantizeLinear to x8 and back (xqin, XQIN); output, YQ (yq: QuantizeLinear to y8 after the
  /// activation's bounds) and YDQ (ydq: DequantizeLinear after it, f32 stores).
  DType x = DType::f32;
  bool xqin = false;
  DType x8 = DType::u8;
  bool yq = false, ydq = false;
  DType y8 = DType::u8;
  /// X_QUADS (input): x's rows read as whole quads, three per tile row (128-bit loads, or one word
  /// of four 8-bit values), the tile's columns lanes X_SHIFT + [0, ALPHA) of them (x_shift = -left
  /// padding mod 4); WG_M 4 (its tiles start every 4 columns), where W % 4 == 0 and x's strides
  /// and offset are multiples of 4 with unit columns.
  bool x_quads = false;
  int x_shift = 0;
  /// Y_VEC4 (output, f32 stores): each tile row's 4 outputs one 128-bit store (WG_M 4, OW % 4 == 0).
  bool y_vec4 = false;
  WinogradFusedBlock fb{};  ///< fused: FB_O, FB_P, FB_C, FR_O, FR_P
  Defines defines() const;
  /// Invocations per workgroup: kLocal, or the fused stage's T * fb.threads_per_t().
  std::uint32_t local() const;
  static std::vector<ConvWinogradVariant> space();
};

/// The Variant of glsl/nn/conv.comp: im2col (IM2COL; QUADS: four positions a store) or col2im.
struct ConvVariant {
  static constexpr const char* kFile = "conv.comp";
  bool im2col = true, quads = false;
  DType in = DType::f32;  ///< the image (im2col) or the columns (col2im)
  bool rows_t = false;    ///< ROWS_T: gy [N, O, OH, OW] -> [N*OH*OW, O] (im2col false)
  Defines defines() const;
  static std::vector<ConvVariant> space();
};

}  // namespace gltensor::detail
