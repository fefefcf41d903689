// The Variants (runtime/variant.hpp) of the data-movement kernels (internal): sort.comp
// (sort/argsort/topk), index.comp (gather and the scatters) and random.comp (the distributions).
#pragma once
#include <cstdint>
#include <vector>

#include "gltensor/dtype.hpp"
#include "runtime/variant.hpp"

namespace gltensor::detail {

/// sort.comp: segments sorted in shared memory (SEGMENT_SORT), or a merge pass of sorted runs.
struct SortVariant {
  static constexpr const char* kFile = "sort.comp";
  bool segments = true;     ///< SEGMENT_SORT, else a merge pass
  std::int64_t e = 4;       ///< E: pairs per invocation (segment sort)
  int rd = 1;               ///< RD: the rows' dims (segment sort)
  bool descending = false;  ///< DESCENDING: keys inverted (segment sort)
  bool final = false;       ///< FINAL: only the indices written (the last pass)
  DType in = DType::f32;    ///< the input's dtype (segment sort; KEY_FLOAT for floating dtypes)
  Defines defines() const;
  static std::vector<SortVariant> space();
};

/// index.comp's modes: gather, scatter (a copy), scatter_add, and scatter with a reduction
/// (SCATTER_RED(a, b): product, max, min).
enum class IndexMode { gather, scatter, scatter_add, scatter_prod, scatter_max, scatter_min };

struct IndexVariant {
  static constexpr const char* kFile = "index.comp";
  IndexMode mode = IndexMode::gather;
  int ndim = 1;                             ///< NDIM: dims of the iteration space
  std::int64_t dim = 0;                     ///< DIM: the indexed dim
  bool wrap_negative = true;                ///< else NONNEG_INDEX: class indices in [0, size) only
  DType out = DType::f32, in = DType::f32;  ///< OUT_INT for int32 outputs
  /// ATOMIC_FLOAT (scatter_add into float32, where DeviceImpl::float_atomic_add() allows it):
  /// the hardware's float atomicAdd instead of a compare-and-swap loop.
  bool atomic_float = false;
  Defines defines() const;
  static std::vector<IndexVariant> space();
};

/// random.comp: DIST by name (dist_uniform, dist_normal, dist_bernoulli, dist_dropout; dropout
/// reads its input as operand 1).
struct RandomVariant {
  static constexpr const char* kFile = "random.comp";
  const char* dist = "dist_uniform";
  DType out = DType::f32;
  bool input = false;  ///< operand 1 (dropout's input)
  DType in = DType::f32;
  bool device_offset = false;  ///< OFFSET_BUF: operand 2 (int32 [1]) added to the offset's high word (input only)
  bool save_offset = false;    ///< SAVE_OFFSET: operand 3 (int32 [1]) gets operand 2's value (device_offset only)
  Defines defines() const;
  static std::vector<RandomVariant> space();
};

}  // namespace gltensor::detail
