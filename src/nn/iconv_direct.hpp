// The direct integer convolution of the model runtime's QDQ Conv (internal; glsl/nn/iconv_direct.comp,
// planned by iconv_direct_plan.hpp): one dispatch from 8-bit x and w to float32 (dequantized) or
// 8-bit (requantized) output, bit-identical to im2col + the integer matmul + the separate ops.
#pragma once
#include "nn/iconv_direct_plan.hpp"
#include "nn/quant_int.hpp"

namespace gltensor::detail {

/// y [N, O, OH, OW] of x [N, C, H, W] and w [O, C / groups, KH, KW] (dense, 8-bit), zx one value
/// and zw one or O values (their operands' dtypes, or int32 zeros; undefined: 0, ZW_NONE), the geometry of `o` (OH, OW
/// given), `dq` per output channel and, with `rq`, its requantization (act none, relu or clip).
Tensor iconv_direct(const Tensor& x, const Tensor& w, const Tensor& zx, const Tensor& zw, const IntConvOptions& o,
                    std::int64_t OH, std::int64_t OW, const IntDequant& dq, const IntRequant* rq,
                    const IConvDirectPlan& plan, const char* op);

}  // namespace gltensor::detail
