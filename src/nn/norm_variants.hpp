// The Variants (runtime/variant.hpp) of the normalization kernels (internal): norm.comp
// (layer_norm), rms_norm.comp (rms_norm / add_rms_norm, forward and backward) and
// batch_norm.comp (statistics, normalization and the backward). Operands are described by the
// dtypes of the tensors the op binds; absent optional operands are not declared.
#pragma once
#include <cstdint>
#include <vector>

#include "gltensor/dtype.hpp"
#include "runtime/variant.hpp"

namespace gltensor::detail {

/// norm.comp: y = (x - mean) * rstd [* w] [+ b] per row.
struct NormVariant {
  static constexpr const char* kFile = "norm.comp";
  bool has_w = false, has_b = false;  ///< HAS_W, HAS_B
  std::int64_t ns = 0;                ///< ROW_REGS: the row in registers, NS elements per invocation; 0 = loops
  bool subgroup = false;              ///< SUBGROUP (ROW_REGS): the sums through subgroup arithmetic
  DType y = DType::f32, x = DType::f32, w = DType::f32, b = DType::f32;
  Defines defines() const;
  static std::vector<NormVariant> space();
};

/// rms_norm.comp's stages (a flag each): RMS_FWD_PARTIAL, RMS_FWD, RMS_BWD_PARTIAL, RMS_BWD,
/// RMS_DW.
struct RmsNormVariant {
  static constexpr const char* kFile = "rms_norm.comp";
  const char* stage = "RMS_FWD";
  bool has_w = false;     ///< HAS_W (RMS_FWD, RMS_BWD_PARTIAL, RMS_BWD)
  bool has_res = false;   ///< HAS_RES (forward): x + residual, written to v
  bool has_rstd = false;  ///< HAS_RSTD (RMS_FWD): the rows' 1 / rms written
  bool partials = false;  ///< PARTIALS (RMS_FWD, RMS_BWD): the rows' partial sums read
  /// y (forward) or dv (RMS_BWD); x (forward) or gy (backward); v (RMS_BWD*, RMS_DW); w; res
  /// and v_out (HAS_RES).
  DType out = DType::f32, in = DType::f32, v = DType::f32, w = DType::f32, res = DType::f32, v_out = DType::f32;
  Defines defines() const;
  static std::vector<RmsNormVariant> space();
};

/// batch_norm.comp's stages (a flag each): BN_STATS / BN_STATS_MERGE (statistics, FINAL the last
/// level), BN_NORM, BN_GRAD_SUMS / BN_SUM_MERGE, BN_DX.
struct BatchNormVariant {
  static constexpr const char* kFile = "batch_norm.comp";
  const char* stage = "BN_STATS";
  bool final = false;                   ///< FINAL (statistics): mean, invstd, running stats
  bool has_rm = false, has_rv = false;  ///< HAS_RM, HAS_RV (FINAL)
  bool rows = false;                    ///< ROWS (BN_NORM, BN_DX): the elementwise grid's form
  bool eval = false;                    ///< EVAL: running statistics
  bool has_w = false, has_b = false;    ///< HAS_W (BN_NORM, BN_DX), HAS_B (BN_NORM)
  bool relu = false;                    ///< RELU (BN_NORM): y = relu(y)
  /// RELU_MASK (BN_GRAD_SUMS, BN_DX): gy where the forward's output (dtype y) is > 0, else 0
  bool relu_mask = false;
  /// MERGE_PARTIALS (BN_NORM, ROWS, training): mean and invstd merged in the kernel from
  /// BN_STATS' partials, written with the running statistics (HAS_RM, HAS_RV) by one workgroup
  bool merge_partials = false;
  /// SUM_PARTIALS (BN_DX, ROWS, training): the sums added up in the kernel from BN_GRAD_SUMS'
  /// partials, written [2][C] by one workgroup
  bool sum_partials = false;
  /// POOL (BN_NORM and BN_DX with ROWS: the window grid; BN_GRAD_SUMS over the windows): the
  /// following max pooling over windows that tile the planes fused (BN_NORM writes the pooled y and
  /// the argmax, i32; the backward reads the pooled gy at the argmax in place of RELU_MASK's y)
  bool pool = false;
  /// in: the level's input (x, gy or partial sums); x: the input (BN_NORM, BN_GRAD_SUMS, BN_DX;
  /// BN_STATS_MERGE's FINAL shift); y: BN_NORM's output, BN_DX's dx; a, v: mean / invstd or the
  /// running statistics; w, b, rm, rv.
  DType in = DType::f32, x = DType::f32, y = DType::f32, a = DType::f32, v = DType::f32, w = DType::f32, b = DType::f32,
        rm = DType::f32, rv = DType::f32;
  Defines defines() const;
  static std::vector<BatchNormVariant> space();
};

}  // namespace gltensor::detail
