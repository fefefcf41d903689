// The Variants (runtime/variant.hpp) of weight-only quantization's kernels (internal):
// quant.comp (quantize on the GPU, dequantize) and qlinear.comp (the quantized linear op's GEMV,
// serial GEMV and GEMM; src/ops/quant_plan.hpp chooses).
#pragma once
#include <cstdint>
#include <vector>

#include "gltensor/dtype.hpp"
#include "gltensor/quant.hpp"
#include "runtime/variant.hpp"

namespace gltensor::detail {

struct QuantVariant {
  static constexpr const char* kFile = "quant.comp";
  QuantFormat format = QuantFormat::int8;  ///< Q8 / Q4
  bool quantize = true;                    ///< QUANTIZE (w -> data and f16 scales), else DEQUANTIZE (-> f32)
  DType w = DType::f32;                    ///< QUANTIZE: the weight's dtype
  Defines defines() const;
  static std::vector<QuantVariant> space();
};

struct QLinearVariant {
  static constexpr const char* kFile = "qlinear.comp";
  QuantFormat format = QuantFormat::int8;   ///< Q8 / Q4
  bool gemv = true;                         ///< GEMV, else the GEMM
  bool serial = false;                      ///< SERIAL (GEMV on software rasterizers)
  bool words = false;                       ///< WORDS (GEMV): an invocation per word, not per block
  bool x_vec4 = false;                      ///< X_VEC4 (GEMV): x read as vec4s (K % 4 == 0)
  bool bias = false;                        ///< HAS_BIAS
  std::int64_t mt = 1, rows = 4, tpr = 64;  ///< MT, ROWS, TPR (GEMV; the GEMM ignores them)
  std::int64_t unroll = 1;                  ///< UNROLL (WORDS): words per invocation per trip
  bool mantissa = false;                    ///< MANTISSA (Q4 WORDS): nibbles through the mantissa
  bool pairs = false;                       ///< PAIRS (Q4 WORDS): two adjacent words per unit
  Defines defines() const;
  static std::vector<QLinearVariant> space();
};

}  // namespace gltensor::detail
