// The Variants (runtime/variant.hpp) of the model runtime's integer kernels (internal):
// quant_int.comp (QuantizeLinear / DequantizeLinear / requantization, DynamicQuantizeLinear's
// parameters, the integer im2col, the int32 matmul and the direct integer convolution) and
// imatmul.comp (the integer matmul on f32 FMAs in exact blocks, with its dequantizing epilogue).
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "gltensor/dtype.hpp"
#include "runtime/variant.hpp"

namespace gltensor::detail {

struct QuantIntVariant {
  static constexpr const char* kFile = "quant_int.comp";
  enum class Kind { quantize, requant, dequantize, dqparams, icol, imatmul, iconv };
  Kind kind = Kind::quantize;
  std::int64_t qmin = 0, qmax = 0;  ///< QMIN, QMAX (quantize, requant, dequantize)
  bool bias = false;                ///< HAS_BIAS (requant)
  bool accum = false;               ///< ACCUM (imatmul, iconv: a later K / channel range)
  /// Operand dtypes in binding order: elementwise y, x, (scale f32), zero point, (bias i32);
  /// icol cols, x, zx; imatmul c, a, b, za, zb; iconv y, x, w, zx, zw (dqparams: fixed).
  std::array<DType, 5> dt{DType::i32, DType::f32, DType::f32, DType::i32, DType::i32};
  Defines defines() const;
  static std::vector<QuantIntVariant> space();
};

struct IMatmulVariant {
  static constexpr const char* kFile = "imatmul.comp";
  std::int64_t bn = 64;         ///< BN: the tile's columns (32, 64 or 128; 32: 4 x 4)
  int blocks = 1;               ///< RB = CB: 4 x 4 blocks per invocation along each dim (1, 2; 2 where bn is 128)
  std::int64_t iblock_k = 256;  ///< IBLOCK_K: values of K per exact f32 sum
  std::int64_t bk = 16;         ///< BK: values of K per shared-memory tile (16, or 8 where BM BK / 4 >= invocations)
  bool a_words = true, b_words = true;                 ///< A_WORDS, B_WORDS: operands read four bytes per word
  bool za_none = false, zb_none = false;               ///< ZA_NONE, ZB_NONE: no zero point (0)
  bool accum = false;                                  ///< ACCUM (split K: a later range)
  bool dequant = false, dq_row = false, bias = false;  ///< DEQUANT epilogue, DQ_ROW, HAS_BIAS
  DType a = DType::u8, b = DType::i8, za = DType::u8, zb = DType::i8;  ///< A_I8 / B_I8 from a, b
  /// Where the blocks' int32 totals live: TOTALS_REGS (registers), TOTALS_MEM (the output's
  /// elements, or operand 10 with DEQUANT), TOTALS_SHARED (shared memory), none (the launch's K
  /// range is one block).
  enum class Totals { regs, mem, shared, none };
  Totals totals = Totals::regs;
  /// QUANT (with dequant): the requantizing epilogue, 8-bit c of dtype `y` (QMIN / QMAX from it),
  /// its activation before it (act_clip's bounds in uniforms: none, relu and clip are one
  /// program), operands 8 = ys (float32), 9 = zy (dtype zy).
  bool quant = false;
  DType y = DType::u8, zy = DType::u8;
  /// DQ_OUT (with quant): the 8-bit value dequantized with (ys, zy), float32 c (`y` still gives
  /// QMIN / QMAX).
  bool dq_out = false;
  /// IMPLICIT: the implicit-GEMM convolution, b the 8-bit image read in place through a
  /// kh x kw filter's taps (IKH, IKW).
  bool implicit = false;
  std::int64_t kh = 1, kw = 1;
  bool rowquad = false;  ///< ROWQUAD (implicit, stride 1 along rows, OW % 4 == 0): row words
  /// QIN (implicit, dequant): b is the float32 image, quantized to `b` (u8 / i8) as it is read
  /// with x's scale (operand 5) and one zero point (operand 4); not with rowquad.
  bool qin = false;
  int rb = 0;              ///< RB where it differs from `blocks` (2 with blocks 1: 8 x 4 per invocation)
  int slices = 1;          ///< NSL: K slices per workgroup (2: each NT invocations, totals in registers)
  bool a_swizzle = false;  ///< A_SWIZZLE: A's shared tile swizzled (conflict-free stores; GPUs' 4 x 4)
  bool k_pairs = false;    ///< K_PAIRS: two K tiles per loop trip (constant buffer index), loops unrolled
  Defines defines() const;
  static std::vector<IMatmulVariant> space();
};

/// icol.comp: im2col of 8-bit images, kWords words (4 columns each) of one row per invocation
/// (the kernel's ICOL_WORDS), the filter's kh x kw compile-time (IKH, IKW); x's dtype (cols the
/// same), zx's.
struct IColVariant {
  static constexpr const char* kFile = "icol.comp";
  static constexpr std::int64_t kWords = 2;
  std::int64_t kh = 3, kw = 3;
  DType x = DType::u8, zx = DType::u8;
  bool f32_out = false;  ///< F32_OUT (lab): float32 x - zx columns
  Defines defines() const;
  static std::vector<IColVariant> space();
};

/// imatmul_warp.comp: the QDQ convolution's requantizing GEMM on the f32 warp kernel
/// (glsl/ops/matmul_warp.comp) with 8-bit operands (f32 sums: IntRequant::f32_sums). The warp
/// fields are the f32 matmul plan's (MatmulPlan's tile_m, warp_bk, warp_tn, warp_lanes, warp_edge,
/// warp_k_loop, warp_shk) for the same M, N, K; A read along K (A_KMAJOR), B row-major.
struct IWarpVariant {
  static constexpr const char* kFile = "imatmul_warp.comp";
  int bm = 128, bk = 16, tn = 8;
  bool lanes = true, edge = false, k_loop = false, shk = true;
  DType a = DType::i8, b = DType::u8, za = DType::i8, zb = DType::u8;  ///< A_I8 / B_I8 from a, b
  bool za_none = false, zb_none = false, bias = true;                  ///< ZA_NONE, ZB_NONE, HAS_BIAS
  DType y = DType::u8, zy = DType::u8;  ///< the requantized type (QMIN, QMAX) and y's zero point
  bool dq_out = false;                  ///< DQ_OUT: float32 c = float(q - zy) * ys
  bool a_f32 = false, b_f32 = false;    ///< A_F32 / B_F32 (lab): float32 differences, matmul's quad loads
  /// IW_SPLIT: K in chunks, float32 partial sums (no epilogue: y, zy, bias and dq_out unread); IW_SUM: the
  /// chunks' sums added and requantized (the tiling and the operands' types unread).
  bool split = false, sum = false;
  Defines defines() const;
  static std::vector<IWarpVariant> space();
};

}  // namespace gltensor::detail
