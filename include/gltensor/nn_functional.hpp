// Neural-network ops (torch.nn.functional semantics), NCHW layout, float32 compute.
//
// conv2d follows the im2col formulation (Chellapilla et al., "High performance convolutional
// neural networks for document processing", 2006): columns of input patches are multiplied by
// the flattened filters with the tiled matmul kernel; the input gradient is the col2im of the
// column gradient. Padding is given ONNX-style (top, left, bottom, right) so it may be
// asymmetric. Output size: floor((H + pt + pb - dilation * (K - 1) - 1) / stride) + 1.
// batch_norm follows Ioffe & Szegedy (2015), layer_norm Ba et al. (2016), group_norm Wu & He
// (2018), rms_norm Zhang & Sennrich (2019). All differentiate through autograd. Fused transformer
// kernels (add_rms_norm, rope, swiglu/geglu) are in transformer.hpp.
// Errors: ShapeError naming the shapes (channels not divisible by groups, kernel larger than the
// padded input, weight of the wrong rank), ValueError for non-positive strides or eps.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "gltensor/linalg.hpp"
#include "gltensor/random.hpp"
#include "gltensor/tensor.hpp"

namespace gltensor {

struct Conv2dOptions {
  std::array<std::int64_t, 2> stride{1, 1};
  std::array<std::int64_t, 4> padding{0, 0, 0, 0};  ///< top, left, bottom, right
  std::array<std::int64_t, 2> dilation{1, 1};
  std::int64_t groups = 1;
  /// Symmetric padding p on all sides.
  static Conv2dOptions pad(std::int64_t p, std::int64_t stride = 1) {
    Conv2dOptions o;
    o.padding = {p, p, p, p};
    o.stride = {stride, stride};
    return o;
  }
};

/// x [N, C, H, W], weight [O, C / groups, KH, KW], bias [O] or undefined -> [N, O, OH, OW].
/// Precision: 3x3, stride-1, undilated f32 convolutions of one group without gradient run on GPUs
/// (from 32 input and 64 output channels over 56 x 56 output positions; anywhere with
/// GLTENSOR_CONV_WINOGRAD=2|4) through Winograd's F(4x4,3x3): each output within about 2e-5 of
/// sum |w| |x| of the exact sum (the direct sum's rounding is smaller), and a NaN or infinity of x
/// may make the other outputs of its 4x4 tile NaN.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), const Conv2dOptions& opt = {});
/// conv2d followed by an activation (its epilogue, see Epilogue in linalg.hpp): the kernel
/// activations run inside the matmul kernel (without gradients), the others after it. Grouped
/// convolutions run as one batched matmul ([groups, O/groups, K] @ [groups, K, N*OH*OW]);
/// depthwise ones (one input and one output channel per group, no gradients) as KH * KW
/// multiply-adds of shifted strided views of the padded input.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dOptions& opt,
              const Epilogue& epilogue);
/// x [N, Cin, H, W], weight [Cin, Cout / groups, KH, KW] -> [N, Cout, OH, OW] with
/// OH = (H - 1) * stride - pt - pb + dilation * (KH - 1) + output_padding + 1 (torch's
/// conv_transpose2d; ONNX ConvTranspose). Forward only; the output float32. ValueError for
/// output_padding < 0 or >= max(stride, dilation) on an axis (PyTorch's rule), naming x, weight;
/// ShapeError for x or weight not 4-D, channels that do not match the groups, a bias not [Cout], or
/// an empty output.
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
                        const Conv2dOptions& opt = {}, std::array<std::int64_t, 2> output_padding = {0, 0});

/// 1-D convolution (torch.nn.functional.conv1d; ONNX Conv on [N, C, L]): x [N, C, L], weight
/// [O, C / groups, K], bias [O] or undefined -> [N, O, OL]; padding {begin, end}. Runs as conv2d
/// on [N, C, 1, L] (same errors, naming conv2d).
struct Conv1dOptions {
  std::int64_t stride = 1;
  std::array<std::int64_t, 2> padding{0, 0};  ///< begin, end
  std::int64_t dilation = 1;
  std::int64_t groups = 1;
};
Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), const Conv1dOptions& opt = {},
              const Epilogue& epilogue = {});
/// x [N, Cin, L], weight [Cin, Cout / groups, K] -> [N, Cout, OL], OL = (L - 1) * stride - pb - pe +
/// dilation * (K - 1) + output_padding + 1 (torch's conv_transpose1d). Forward only; runs as
/// conv_transpose2d on [N, Cin, 1, L]. Errors name this op: ShapeError for x or weight not 3-D,
/// channels that do not match the groups, an empty output or a bias not [Cout] (with the 3-D
/// shapes); ValueError for output_padding < 0 or >= max(stride, dilation) (PyTorch's rule),
/// naming x and weight, and for a stride or dilation <= 0, padding < 0 or groups <= 0.
Tensor conv_transpose1d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
                        const Conv1dOptions& opt = {}, std::int64_t output_padding = 0);

struct Pool2dOptions {
  std::array<std::int64_t, 2> kernel{2, 2};
  std::array<std::int64_t, 2> stride{0, 0};  ///< 0 = kernel size
  /// symmetric (top/bottom, left/right); <= ((kernel - 1) * dilation + 1) / 2 (PyTorch's rule)
  std::array<std::int64_t, 2> padding{0, 0};
  std::array<std::int64_t, 2> dilation{1, 1};  ///< max pooling only
  bool ceil_mode = false;
  bool count_include_pad = true;  ///< avg pooling only
};

/// [N, C, H, W] -> [N, C, OH, OW] (torch's max_pool2d / avg_pool2d). Any dtype: float dtypes give
/// their own, integer ones f32. Differentiable (x's gradient). NaN wins the max (the gradient goes to
/// the first of equal values and to the last NaN of a window, as torch's `val > maxval ||
/// isnan(val)`). OH = floor((H + 2 pad - dil (k - 1) - 1 [+ stride - 1 with ceil_mode]) / stride) + 1
/// (rounding toward minus infinity), with ceil_mode one less where the last window would start in the
/// end padding (PyTorch's formula); OW alike. Errors: ShapeError for x not 4-D or an input too small
/// for one window (OH or OW <= 0, e.g. 1 x 1 with a 2 x 2 kernel), naming the op, x's shape and the
/// options; ValueError for kernel, stride or dilation < 1, padding < 0 or > ((kernel - 1) * dilation + 1) / 2
/// (PyTorch's "at most half of effective kernel size": every window holds an input element).
Tensor max_pool2d(const Tensor& x, const Pool2dOptions& opt);
Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& opt);
/// 1-D pooling (torch max_pool1d/avg_pool1d): x [N, C, L] -> [N, C, OL]; options as
/// Pool2dOptions for one dim (kernel, stride (0 = kernel), symmetric padding, dilation, ceil_mode,
/// count_include_pad). Runs as 2-D pooling on [N, C, 1, L] (dtypes and gradient as the 2-D op's);
/// ShapeError for x not 3-D; the 2-D op's errors, naming the 1-D op with that 4-D shape.
struct Pool1dOptions {
  std::int64_t kernel = 2;
  std::int64_t stride = 0;
  std::int64_t padding = 0;
  std::int64_t dilation = 1;  ///< max pooling only (avg_pool1d ignores it, as avg_pool2d)
  bool ceil_mode = false;
  bool count_include_pad = true;
};
Tensor max_pool1d(const Tensor& x, const Pool1dOptions& opt);
Tensor avg_pool1d(const Tensor& x, const Pool1dOptions& opt);
/// Averages over adaptive windows to exactly [OH, OW] (torch.nn.AdaptiveAvgPool2d).
Tensor adaptive_avg_pool2d(const Tensor& x, std::array<std::int64_t, 2> output_size);
/// Mean over H and W, keeping them as size 1: [N, C, 1, 1].
Tensor global_avg_pool2d(const Tensor& x);

/// Normalizes over every dim but 1 (channels): x [N, C, ...] (rank >= 2, any float dtype; 16-bit
/// inputs compute in f32 and return their dtype, integer ones return f32), weight / bias /
/// running_mean / running_var [C] or undefined (affine=false). Training: batch mean and biased
/// variance per channel (Welford partials per workgroup chunk merged by Chan et al.'s formula, so
/// large offsets keep their digits), and running_mean / running_var (if defined) are updated in
/// place: r = (1 - momentum) r + momentum * batch (unbiased variance). Eval: running statistics.
/// One autograd node: dx = weight * invstd / n * (n gy - sum(gy) - xhat sum(gy xhat)) in training
/// (eval: gy * weight * invstd), dweight = sum(gy xhat), dbias = sum(gy), n = N * (spatial size).
/// act = Activation::relu applies ReLU to the output in the same kernel (y = relu(bn(x)); the
/// node masks the gradient by y > 0 first): nn::Sequential runs BatchNorm2d + ReLU so.
/// Errors: ShapeError for rank < 2 or parameters not [C]; ValueError for eps <= 0, eval without
/// running statistics, training with at most 1 value per channel, act other than none or relu.
Tensor batch_norm(const Tensor& x, Tensor running_mean, Tensor running_var, const Tensor& weight, const Tensor& bias,
                  bool training, double momentum = 0.1, double eps = 1e-5, Activation act = Activation::none);
/// max_pool2d(batch_norm(x, ..., act), pool) as one op: x [N, C, H, W] (any float dtype, as
/// batch_norm), weight / bias / running_mean / running_var [C] or undefined, momentum, eps and act
/// (none or relu) as batch_norm's. Where x is f32, the windows tile each plane (stride = kernel (or
/// 0), padding 0, dilation 1, H and W multiples of the kernel; ceil_mode then changes nothing) and
/// a window's loops fit the device's loop limit, one kernel normalizes and pools (y itself is never
/// written; glsl/nn/batch_norm.comp's POOL, src/nn/batch_norm.cpp) and the backward's kernels read
/// the pooled gradient at each window's argmax (no pooling dispatches, no gradient of x's size but
/// dx): the same values and running statistics as the two ops (the same arithmetic; the first of
/// equal values takes the gradient, as max_pool2d and torch; of several NaN in a window the last,
/// as max_pool2d and torch; with relu a window whose max is not > 0, NaN
/// included, passes no gradient), the gradients to rounding (the sums over a channel's windows, not
/// its elements). Otherwise it runs the two ops. Returns [N, C, OH, OW] of batch_norm's dtype.
/// Errors: batch_norm's and max_pool2d's (ShapeError for x not [N, C, H, W] or smaller than a
/// window, ValueError for the pooling's options, checked first), all named
/// gltensor::batch_norm_max_pool2d.
/// nn::Sequential runs BatchNorm2d + ReLU + MaxPool2d so.
Tensor batch_norm_max_pool2d(const Tensor& x, Tensor running_mean, Tensor running_var, const Tensor& weight,
                             const Tensor& bias, bool training, double momentum, double eps, Activation act,
                             const Pool2dOptions& pool);
/// Normalizes over the last `normalized_dims` dims; weight/bias (may be undefined) have their shape.
Tensor layer_norm(const Tensor& x, std::int64_t normalized_dims, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);
/// x * rsqrt(mean(x^2 over the last `normalized_dims` dims) + eps) [* weight] (torch's
/// F.rms_norm; weight has those dims' shape). One fused dispatch (glsl/nn/rms_norm.comp): a
/// workgroup per row sums x^2 in f32 and writes the row; rows longer than the device's loop limit
/// allows one workgroup (llvmpipe: about 8M elements) take a second dispatch of per-chunk partial
/// sums first. One autograd node: dx = rstd w gy - x rstd^3 mean(gy w x) (same dispatches),
/// dweight = sum over rows of gy x rstd (per-block partials, then a reduction). Any dtype (16-bit
/// storage computes in f32; integers give f32); the result is x's float dtype promoted with the
/// weight's. add_rms_norm (transformer.hpp) fuses a residual add in front.
/// Errors: ValueError for normalized_dims outside [1, rank] or eps <= 0; ShapeError for a weight
/// of another shape; DTypeError for an integer weight.
Tensor rms_norm(const Tensor& x, std::int64_t normalized_dims, const Tensor& weight = Tensor(), double eps = 1e-6);
/// x [N, C, ...] normalized over C / groups channels at a time; weight/bias [C].
Tensor group_norm(const Tensor& x, std::int64_t groups, const Tensor& weight = Tensor(), const Tensor& bias = Tensor(),
                  double eps = 1e-5);

/// ONNX PRelu: x < 0 ? slope * x : x, with slope broadcast to x NumPy-style (for torch's per-
/// channel weight [C] on [N, C, H, W], pass weight.view({C, 1, 1})). NaN stays NaN. Floating
/// dtypes; ShapeError when slope does not broadcast to x's shape.
Tensor prelu(const Tensor& x, const Tensor& slope);

/// ONNX Resize (opsets 10-17) for modes nearest and linear (N-linear: linear along every
/// resized dim, i.e. bilinear on [N, C, H, W]) and the coordinate transformations
///   half_pixel:           x_in = (x_out + 0.5) / scale - 0.5
///   pytorch_half_pixel:   as half_pixel, 0 where the output length is 1
///   align_corners:        x_in = x_out * (in - 1) / (out - 1)
///   asymmetric:           x_in = x_out / scale
///   tf_half_pixel_for_nn: x_in = (x_out + 0.5) / scale
/// where scale = scales[d] when given, else out / in. Nearest rounds x_in by nearest_mode
/// (round_prefer_floor, round_prefer_ceil, floor, ceil; `simple` = Resize-10's floor when
/// upsampling, ceil when downsampling) and clamps it to [0, in - 1]; linear clamps the two
/// neighbours. torch: interpolate(mode="nearest") = asymmetric + floor, mode="bilinear" with
/// align_corners=False = pytorch_half_pixel + linear. Runs as index_select per resized dim
/// (linear: two selects and a lerp, with indices and weights computed on the host); integer
/// nearest upsampling that repeats each element runs as one broadcast copy.
/// x: any rank, floating for linear; size: the output shape (same rank; ShapeError otherwise,
/// ValueError for sizes < 1 or scales of the wrong length).
struct ResizeOptions {
  /// cubic: Keys' cubic convolution (coefficient cubic_coeff_a) on 4 taps.
  enum class Mode { nearest, linear, cubic };
  /// half_pixel_symmetric (Resize-19): half_pixel shifted so that the input and output centers
  /// meet when the output size was rounded from in * scale.
  /// tf_crop_and_resize: the region roi (normalized, per dim) resampled; outputs whose source
  /// coordinate falls outside the input take extrapolation_value.
  enum class Coord {
    half_pixel,
    pytorch_half_pixel,
    align_corners,
    asymmetric,
    tf_half_pixel_for_nn,
    half_pixel_symmetric,
    tf_crop_and_resize
  };
  enum class Nearest { round_prefer_floor, round_prefer_ceil, floor, ceil, simple };
  Mode mode = Mode::nearest;
  Coord coord = Coord::half_pixel;
  Nearest nearest = Nearest::round_prefer_floor;
  /// Per-dim scales (empty: out / in).
  std::vector<double> scales;
  double cubic_coeff_a = -0.75;
  /// tf_crop_and_resize: [start_0, ..., start_(r-1), end_0, ..., end_(r-1)] (empty: the whole
  /// input), and the value of outputs sampled outside the input.
  std::vector<double> roi;
  double extrapolation_value = 0.0;
  /// Linear and cubic modes (ONNX Resize-18 antialias): the filter (triangle or cubic) stretched
  /// by 1 / scale where a dim shrinks, so that every input element contributes (Pillow's and ONNX
  /// Runtime's filters). exclude_outside: taps outside the input get no weight and the others are
  /// renormalized (else they take the edge values).
  bool antialias = false;
  bool exclude_outside = false;
};
Tensor resize(const Tensor& x, const Shape& size, const ResizeOptions& opt = {});

enum class Reduction { none, mean, sum };
/// Fused log_softmax + negative log likelihood: logits [N, C], target int [N] in [0, C)
/// (IndexError at the next read otherwise), label_smoothing as in torch. Samples whose target
/// is ignore_index (torch's default -100) add 0 to the loss and its gradient and are left out
/// of the mean's denominator (the mean is NaN if every sample is ignored). For large
/// vocabularies the forward runs as row reductions only (log-sum-exp, the target's logit, the
/// row mean for label smoothing: [N] buffers), and the backward is one dispatch writing
/// d logits = (softmax - target distribution) * the per-sample gradient: the gradient is the
/// only [N, C] buffer either pass allocates for contiguous logits (a strided view is copied
/// first; glsl/nn/cross_entropy.comp).
Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction reduction = Reduction::mean,
                     double label_smoothing = 0.0, std::int64_t ignore_index = -100);
/// log_probs [N, C], target int [N] in [0, C) (IndexError at the next read otherwise);
/// ignore_index as in cross_entropy.
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, Reduction reduction = Reduction::mean,
                std::int64_t ignore_index = -100);
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::mean);

/// softmax(q k^T * scale + mask) v (Vaswani et al. 2017), torch's F.scaled_dot_product_attention.
/// q [..., L, E], k [..., S, E], v [..., S, Ev] -> [..., L, Ev] (batch dims broadcast; float
/// dtypes, any views; the result has the promoted dtype, arithmetic in f32).
/// - attn_mask (optional, broadcastable to [..., L, S]): bool keeps where true (key padding: a
///   [B, 1, 1, S] bool mask); a float mask is added to the scaled scores (-inf masks, NaN gives
///   NaN rows). A float mask that requires grad takes the composite path (its gradient flows).
/// - is_causal: key j is seen by query i iff j <= i (top-left aligned, torch's tril(L, S), also
///   for L != S); with attn_mask both apply.
/// - scale: 0 means 1 / sqrt(E).
/// - dropout_p: dropout on the attention weights (zeroed with probability p, the rest scaled
///   by 1 / (1 - p)), drawn by `generator` (required when p > 0) from a counter-based Philox
///   stream keyed by (batch, row, key), so that the backward regenerates the same mask.
/// - enable_gqa: k and v may have Hkv heads (dim -3) dividing q's Hq heads; query head h reads
///   key/value head h / (Hq / Hkv), and their gradients sum over each group's query heads (the
///   fused backward computes them per query head, [..., Hq, S, E + Ev] floats, then sums).
/// A row whose keys are all masked gives NaN (0 / 0, as torch's math path); in the fused
/// backward such a row adds nothing to dK and dV and gets dQ = 0 (the composite path gives NaN).
/// Fused kernels (FlashAttention-2, Dao 2023, arXiv 2307.08691): the forward keeps the row
/// log-sum-exp, the backward recomputes the probabilities tile by tile (dK/dV per key block, dQ
/// per query block, no atomics); head dims E, Ev <= 256. Where the device has 32 KiB of shared
/// memory, glsl/nn/attention_tiled.comp: blocks of 64 query rows x 64 keys per workgroup, each
/// invocation a 4x4 register tile of the scores and 4 rows of the accumulators; else (and under
/// GLTENSOR_ATTENTION=rows) glsl/nn/attention_flash.comp, one row per invocation, tiles chosen by
/// the device's shared memory; keys (and the backward's query rows) too many for one
/// invocation's loops on the device (llvmpipe: 65535 iterations) are split into chunks computed by
/// separate workgroups and combined by their row maxima and sums (Flash-Decoding, Dao et al.
/// 2023). Without mask, dropout, GQA or gradients and with E, Ev <= 64 an older register-tiled
/// kernel (glsl/nn/attention.comp) computes it. Otherwise (head dims past 256, a mask requiring
/// grad, a device without the shared memory or the 7 storage-buffer bindings the kernels need,
/// one tile's loops past the device's limit, backward chunk outputs past its largest buffer,
/// GLTENSOR_ATTENTION=composite) matmul -> mask -> softmax -> dropout -> matmul with the
/// [..., L, S] scores materialized (differentiable; blocks of query rows past the device's
/// largest buffer). Errors: ShapeError for shapes that do not fit or broadcast (GQA: Hq not a
/// multiple of Hkv), DTypeError for an integer q/k/v or a mask neither bool nor float,
/// ValueError for dropout_p outside [0, 1) or p > 0 without a generator.
struct AttentionOptions {
  Tensor attn_mask;
  double dropout_p = 0.0;
  bool is_causal = false;
  double scale = 0.0;
  bool enable_gqa = false;
  Generator* generator = nullptr;
};
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& opt);
/// The same without dropout or GQA.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& attn_mask = Tensor(), bool is_causal = false, double scale = 0.0);

}  // namespace gltensor
