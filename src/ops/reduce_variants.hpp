// The Variants (runtime/variant.hpp) of the reduction kernels (internal): reduce.comp (any
// reduction over strided dims, one or two stages), reduce_rows.comp (sums and norms of
// contiguous rows), softmax.comp and scan.comp (cumsum).
#pragma once
#include <cstdint>
#include <vector>

#include "gltensor/dtype.hpp"
#include "runtime/variant.hpp"

namespace gltensor::detail {

/// reduce.comp's RED functions, by the op's index (reduce.cpp's Red).
inline constexpr const char* kReduceFunctions[] = {"red_sum",    "red_prod",   "red_max", "red_min",
                                                   "red_argmax", "red_argmin", "red_var", "red_logsumexp",
                                                   "red_l1",     "red_l2",     "red_all", "red_any"};

struct ReduceVariant {
  static constexpr const char* kFile = "reduce.comp";
  const char* red = "red_sum";        ///< RED
  int kd = 1, rd = 1;                 ///< KD, RD: kept and reduced dims (collapsed)
  const char* stage = "stage_whole";  ///< STAGE: stage_whole, stage_partial, stage_combine
  DType out = DType::f32, in = DType::f32;
  Defines defines() const;
  static std::vector<ReduceVariant> space();
};

struct ReduceRowsVariant {
  static constexpr const char* kFile = "reduce_rows.comp";
  const char* term = "term_x";     ///< TERM: term_x, term_abs, term_square
  const char* post = "post_none";  ///< POST: post_none, post_mean, post_sqrt
  bool subgroup = false;           ///< SUBGROUP (subgroup arithmetic)
  bool quads = false;              ///< QUADS: the input read as uvec4
  bool segments = false;           ///< SEGMENTS: rows of strided segments (sums over dims 0, 2, 3)
  DType out = DType::f32, in = DType::f32;
  Defines defines() const;
  static std::vector<ReduceRowsVariant> space();
};

struct SoftmaxVariant {
  static constexpr const char* kFile = "softmax.comp";
  std::int64_t kd = 1;     ///< KD: the row index's dims
  bool log = false;        ///< LOG: log_softmax
  bool row_quads = false;  ///< ROW_QUADS: the row in registers, NQ quads per invocation (f32)
  std::int64_t nq = 0;
  bool row_regs = false;  ///< ROW_REGS: the row in registers, NS scalars per invocation (any layout)
  std::int64_t ns = 0;
  bool subgroup = false;  ///< SUBGROUP (ROW_QUADS and ROW_REGS only)
  DType out = DType::f32, in = DType::f32;
  Defines defines() const;
  static std::vector<SoftmaxVariant> space();
};

/// scan.comp: prefix sums along rows, short rows one per invocation (ROW_SCAN), longer ones in
/// blocks of E * LOCAL_X (BLOCK_SUMS, then BLOCK_SCAN with the preceding blocks' sums as CARRY).
struct ScanVariant {
  static constexpr const char* kFile = "scan.comp";
  const char* mode = "ROW_SCAN";  ///< ROW_SCAN, BLOCK_SUMS or BLOCK_SCAN (a flag)
  int kd = 1;                     ///< KD: the row index's dims
  std::int64_t e = 4;             ///< E: elements per invocation (blocked modes)
  bool carry = false;             ///< CARRY (BLOCK_SCAN): operand 2 holds the scanned block sums
  DType out = DType::f32, in = DType::f32, carries = DType::f32;
  Defines defines() const;
  static std::vector<ScanVariant> space();
};

}  // namespace gltensor::detail
