// The Variant (runtime/variant.hpp) of the matmul kernels (internal): one file per kernel,
// glsl/ops/matmul_vec4.comp, matmul_f16x2.comp (f16 math only), matmul_tile64.comp, matmul_tile128.comp and
// matmul_reg.comp, sharing glsl/ops/matmul.glsl (uniforms, the epilogue's activation, f16 math, split-K and batch
// offsets). The GEMV kernel (gemv.comp, few rows of A on GPUs) has its own Variant below.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gltensor/dtype.hpp"
#include "gltensor/linalg.hpp"
#include "ops/matmul_plan.hpp"
#include "runtime/variant.hpp"

namespace gltensor::detail {

struct MatmulVariant {
  MatmulPlan::Kernel kernel = MatmulPlan::Kernel::tile64;  ///< vec4, f16x2, tile64, tile128 or reg (not gemv)
  int bd = 1;                                              ///< BD: collapsed batch dims
  Activation act = Activation::none;                       ///< ACT(x): the epilogue's activation
  bool affine = false;      ///< ACT(x) then * u_act_scale + u_act_shift (Epilogue::scale, shift)
  bool addend = false;      ///< ADDEND: beta * D added
  bool no_batch = false;    ///< NO_BATCH: one batch entry
  bool split_cols = false;  ///< SPLIT_COLS (vec4, f16x2, warp, reg): [N / split, M, split] output
  bool split_k = false;     ///< SPLIT_K: partial products per K range
  /// F16_MATH / F16_BLOCK (not reg): f16 products over blocks of f16_block values of K; 0 = f32.
  std::int64_t f16_block = 0;
  /// The device's f16 extension text (DeviceImpl::f16_extension_glsl) where f16_block > 0, or
  /// with GLTENSOR_PRECISION=f16-ext-only (the f32 kernels with the extension enabled).
  std::string f16_ext;
  /// vec4 and f16x2: A_KMAJOR / B_KMAJOR (quads along K); vec4: SLICE_K (2 x 128 invocations), UNROLL_K;
  /// f16x2: A_F16 / B_F16 (an f16 operand's words copied to shared memory as they are).
  bool a_kmajor = false, b_kmajor = false, slice_k = false, unroll_k = false;
  /// reg: RA rows x 4 CB columns per invocation; A_Q / B_Q the operands' quad loads (0 none).
  int ra = 1, cb = 1, a_q = 0, b_q = 0;
  /// reg: KSL, K slices per block (MatmulPlan::reg_slices; the workgroup's local_y); 1 = none.
  int ksl = 1;
  /// reg: ROWSUM, the sums of A's rows over K to the operand after the others (a linear layer's
  /// bias gradient with its weight gradient).
  bool rowsum = false;
  /// reg: MASK_A, A's elements taken where an f32 operand laid out as A (after the others) is > 0.
  bool mask = false;
  /// reg: RESIDUAL, an f32 operand laid out as C (after the others) added after the epilogue (the
  /// model's Conv -> Add on the 1x1 GEMM path).
  bool residual = false;
  /// warp (A_KMAJOR / B_KMAJOR as vec4's): BM, BN, BK, TN, WARP_TILE, EDGE, K_LOOP (MatmulPlan's warp_*).
  int bm = 128, bn = 128, bk = 16, tn = 8;
  bool warp_lanes = true, edge = false, k_loop = false;
  bool shk = false;  ///< warp: A_SHK / B_SHK where a_kmajor / b_kmajor (MatmulPlan::warp_shk)
  DType out = DType::f32, a = DType::f32, b = DType::f32, d = DType::f32;

  const char* file() const;
  Defines defines() const;
  /// Every kernel's fields in combinations the op launches (a covering set).
  static std::vector<MatmulVariant> space();
};

/// gemv.comp: RM rows x NF output features per workgroup, its invocations splitting K.
struct GemvVariant {
  static constexpr const char* kFile = "gemv.comp";
  int bd = 1;                                              ///< BD: collapsed batch dims
  Activation act = Activation::none;                       ///< ACT(x)
  bool affine = false;                                     ///< ACT(x) then * u_act_scale + u_act_shift
  std::int64_t rm = 1, nf = 4;                             ///< RM, NF
  int a_q = 0, b_q = 0;                                    ///< A_Q (1: A read as quads along K), B_Q (2: B likewise)
  bool addend = false, no_batch = false, split_k = false;  ///< ADDEND, NO_BATCH, SPLIT_K
  DType out = DType::f32, a = DType::f32, b = DType::f32, d = DType::f32;
  Defines defines() const;
  static std::vector<GemvVariant> space();
};

/// matmul_sum.comp: split-K's partial products summed, then the epilogue (alpha, ADDEND, ACT), written
/// as [batch..., M, N] or, with TRANSPOSE, as [N, M].
struct MatmulSumVariant {
  static constexpr const char* kFile = "matmul_sum.comp";
  Activation act = Activation::none;       ///< ACT(x)
  bool affine = false;                     ///< ACT(x) then * u_act_scale + u_act_shift
  bool addend = false, transpose = false;  ///< ADDEND, TRANSPOSE
  DType out = DType::f32, d = DType::f32;  ///< the result's and the addend's dtypes
  Defines defines() const;
  static std::vector<MatmulSumVariant> space();
};

}  // namespace gltensor::detail
