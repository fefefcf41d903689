// Linear quantization for the model runtime (internal): ONNX QuantizeLinear and DequantizeLinear
// (per-tensor, per-axis and blocked parameters), DynamicQuantizeLinear's parameters, the integer
// matmul and convolution of MatMulInteger / ConvInteger (exact int32 sums of zero-point-shifted
// 8-bit values) and requantization of int32 sums to 8 bits (QLinearMatMul, QLinearConv), on the
// GPU (glsl/nn/quant_int.comp; the integer matmul on f32 FMAs in exact blocks: glsl/nn/imatmul.comp).
// Quantized values are u8 or i8 tensors; int4 and uint4 (ONNX opset 21)
// are carried widened to i8 / u8 with their range [-8, 7] / [0, 15]. Rounding is round half to
// even, then saturation, as ONNX's QuantizeLinear specifies (NaN quantizes to the zero point).
// Errors: ShapeError for parameters whose shapes fit none of the forms, DTypeError for inputs
// that are not 8-bit, LimitError where a single filter tap count exceeds the loop limit.
#pragma once
#include <array>
#include <cstdint>

#include "gltensor/linalg.hpp"
#include "gltensor/tensor.hpp"

namespace gltensor::detail {

/// The integer range of a quantized type.
struct QRange {
  int lo = 0, hi = 255;
  static QRange of(DType d) { return d == DType::i8 ? QRange{-128, 127} : QRange{0, 255}; }
  static QRange int4() { return {-8, 7}; }
  static QRange uint4() { return {0, 15}; }
};

/// Where the parameters of x's elements come from: per tensor (scale of one element), per axis
/// (scale [x.size(axis)]) or blocked (block > 0: scale shaped like x with ceil(size / block) along
/// axis). The zero point has the scale's shape, or one element, or is undefined (0).
struct QAxis {
  std::int64_t axis = 1;
  std::int64_t block = 0;
};

/// y = saturate(round_half_even(x / scale) + zp) as `out` (u8 or i8) in `range`. x float.
Tensor quantize_linear(const Tensor& x, const Tensor& scale, const Tensor& zp, QAxis ax, DType out, QRange range,
                       const char* op = "quantize_linear");
/// y = (x - zp) * scale, float32. x u8, i8 or i32.
Tensor dequantize_linear(const Tensor& x, const Tensor& scale, const Tensor& zp, QAxis ax,
                         const char* op = "dequantize_linear");
/// y = saturate(round_half_even((acc + bias[c]) * multiplier) + zp) as `out`, for int32 sums acc;
/// c is the index along ax.axis, multiplier is per tensor or per axis (float32), zp one value,
/// bias (int32, optional) one value per index along the axis.
Tensor requantize(const Tensor& acc, const Tensor& multiplier, const Tensor& zp, const Tensor& bias, QAxis ax,
                  DType out, const char* op);
/// DynamicQuantizeLinear's uint8 scale (float32 [1]) and zero point (int32 [1]) of x (float).
std::array<Tensor, 2> dynamic_quant_params(const Tensor& x);

/// (a - za) @ (b - zb) with int32 sums: a [..., M, K], b [..., K, N] (u8 or i8, NumPy matmul
/// broadcasting of the batch dims); za one value or one per row of a (M), zb one value or one
/// per column of b (N); zero points of any integer dtype, undefined for 0. int32 result.
Tensor matmul_integer(const Tensor& a, const Tensor& b, const Tensor& za, const Tensor& zb,
                      const char* op = "matmul_integer");

/// The dequantizing epilogue of the integer matmul (the model runtime's QDQ MatMul / Conv):
/// y = float(sum) * (scale_a * scale_b[i]) (+ bias[i]) as float32, i the row of the product
/// (per_row: the conv's output channel) or its column; scale_a one value, scale_b one value or
/// one per row / column, bias (optional, float) one per row / column. As DequantizeLinear of the
/// int32 sums with the f32 multiplier scale_a * scale_b, then Add of the bias (the add may round
/// once instead of twice where the GPU's compiler fuses it into an FMA).
struct IntDequant {
  Tensor scale_a, scale_b, bias;
  bool per_row = false;
};
/// matmul_integer followed by `dq`, float32 [..., M, N]: in the block-f32 kernel's epilogue where
/// it covers K in one launch (no int32 sums in memory), else as separate ops.
Tensor matmul_dequant(const Tensor& a, const Tensor& b, const Tensor& za, const Tensor& zb, const IntDequant& dq,
                      const char* op = "matmul_integer");

struct IntConvOptions {
  std::array<std::int64_t, 2> stride{1, 1}, dilation{1, 1};
  std::array<std::int64_t, 4> padding{0, 0, 0, 0};  ///< top, left, bottom, right
  std::int64_t groups = 1;
  /// conv_dequant / conv_requant: x is a float tensor, quantized to `x_type` (u8 / i8) with x's
  /// scale (IntDequant::scale_a) and zx as QuantizeLinear does (the QDQ model's input
  /// QuantizeLinear): in the implicit GEMM's load where it applies (float32 x, one 8-bit zero
  /// point of x_type), else by quantize_linear first.
  bool quantize_x = false;
  DType x_type = DType::u8;
};
/// 2-D convolution of (x - zx) with (w - zw) with int32 sums: x [N, C, H, W], w [O, C / groups,
/// KH, KW] (u8 or i8), zx one value, zw one value or one per output channel. int32 [N, O, OH, OW]:
/// the implicit GEMM where the zero points are 8-bit of their operands' types (exact f32 blocks),
/// else im2col + the int32 matmul, or one output per invocation (grouped, columns past the SSBO
/// limit).
Tensor conv_integer(const Tensor& x, const Tensor& w, const Tensor& zx, const Tensor& zw, const IntConvOptions& o,
                    const char* op = "conv_integer");
/// conv_integer followed by `dq` per output channel (per_row is ignored: scale_b and bias are
/// one value or one per output channel O), float32 [N, O, OH, OW]: the direct integer
/// convolution where iconv_direct_plan applies, else the implicit GEMM (Settings::iconv_gemm
/// im2col: im2col + the integer matmul).
Tensor conv_dequant(const Tensor& x, const Tensor& w, const Tensor& zx, const Tensor& zw, const IntConvOptions& o,
                    const IntDequant& dq, const char* op = "conv_integer");

/// The requantizing epilogue of a QDQ convolution (Conv -> optional Relu / Clip -> QuantizeLinear
/// per tensor): y = QuantizeLinear(act(conv_dequant(...)), scale, zero_point) as `out`; with
/// `dequantize` (a DequantizeLinear of the same parameters after it) float32
/// y = float(q - zero_point) * scale of that 8-bit q, as dequantize_linear computes it.
struct IntRequant {
  Tensor scale, zero_point;  ///< one value each (float; u8 / i8 of `out`, or undefined: 0)
  Epilogue act;              ///< none, relu or clip
  DType out = DType::u8;     ///< u8 or i8 (the quantized range, also with `dequantize`)
  bool dequantize = false;   ///< float32 output: the 8-bit value dequantized with (scale, zero_point)
  /// The QDQ pattern (DequantizeLinear -> Conv -> QuantizeLinear, whose float graph sums in f32):
  /// conv_requant may sum in f32, rounded where a partial sum passes 2^24 (the f32 warp kernel
  /// on 8-bit operands, glsl/nn/imatmul_warp.comp, where the f32 matmul plan of the same product
  /// takes the warp kernel, one group, C KH KW and OH OW multiples of 4, Settings::iconv_gemm
  /// choose); false: exact int32 sums (QLinearConv, ConvInteger).
  bool f32_sums = false;
  /// With f32_sums, a lab form (gltensor_iconv_forms_bench): the warp path's operands converted to
  /// float32 differences first (the filter by dequantize_linear, the columns by im2col), so that
  /// its GEMM reads them as the f32 conv's does (4x the columns' bytes, no conversion in the loads).
  bool f32_columns = false;
};
/// `rq`'s activation as the bounds of act_clip (the QUANT epilogues' u_lo, u_hi in
/// glsl/nn/imatmul.comp and iconv_direct.comp: none, relu and clip are one program): none
/// (-inf, inf), relu (0, inf), clip its own.
std::array<float, 2> requant_bounds(const IntRequant& rq);
/// conv_dequant followed by `rq`, 8-bit [N, O, OH, OW] (float32 with rq.dequantize): with rq.f32_sums
/// im2col's 8-bit columns and one dispatch of the f32 warp kernel on them where that applies (sums
/// in f32), else one dispatch of the direct integer convolution (glsl/nn/iconv_direct.comp) where iconv_direct_plan
/// applies (bit-identical to the separate ops), else one of the implicit GEMM (imatmul.comp's IMPLICIT and QUANT: the
/// 8-bit image read in place, any groups) where OH * OW % 4 == 0 (any with rq.dequantize) and K fits one launch, or
/// (Settings::iconv_gemm im2col) im2col and the integer matmul with the same requantizing epilogue where groups = 1 and
/// OH * OW % 4 == 0 (any with rq.dequantize) (Settings::qconv_requant), else conv_dequant, apply_epilogue and
/// quantize_linear (and dequantize_linear). Errors: conv_dequant's, ShapeError for a scale or zero point that is not
/// one value, DTypeError for an output that is not 8-bit.
Tensor conv_requant(const Tensor& x, const Tensor& w, const Tensor& zx, const Tensor& zw, const IntConvOptions& o,
                    const IntDequant& dq, const IntRequant& rq, const char* op = "conv_integer");

}  // namespace gltensor::detail
