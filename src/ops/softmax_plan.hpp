// How softmax / log_softmax runs (internal): softmax.comp's form (the row in registers as quads,
// or strided loads), its workgroup size and loop length, or the split path through logsumexp
// where the kernel's loop would pass the device's loop limit. A pure function of the row layout
// and the device's traits, unit-tested without a GPU (tests/ops/test_plans.cpp).
#pragma once
#include <cstdint>

namespace gltensor::detail {

struct SoftmaxProblem {
  std::int64_t L = 1;          ///< row length (the softmax dim)
  std::int64_t kept_dims = 1;  ///< dims of the row index (softmax.comp's KD, at least 1)
  bool quad_rows = false;      ///< input and output f32, rows contiguous, rows and offsets on 4-element boundaries
  bool subgroup_arithmetic = false;  ///< DeviceImpl::subgroup_arithmetic()
  std::uint64_t loop_limit = 0;      ///< DeviceImpl::loop_limit() (0: none)
};

struct SoftmaxPlan {
  /// kernel: softmax.comp, one workgroup per row. logsumexp: rows too long for the kernel's loop
  /// on this device, in f32 through logsumexp's split reduction, exp and a subtraction.
  enum class Path { kernel, logsumexp };
  Path path = Path::kernel;
  std::uint32_t local = 256;          ///< invocations per workgroup: 256 for rows >= 256, else 64
  bool row_quads = false;             ///< ROW_QUADS: the row in registers, NQ quads per invocation
  std::int64_t nq = 0;                ///< ROW_QUADS: quads per invocation (<= 8)
  bool row_regs = false;              ///< ROW_REGS: the row in registers, NS scalars per invocation
  std::int64_t ns = 0;                ///< ROW_REGS: elements per invocation (<= kSoftmaxMaxNs)
  bool subgroup = false;              ///< SUBGROUP: the tree's reductions through subgroup arithmetic
  std::uint64_t loop_iterations = 0;  ///< worst case of one invocation, every loop counted
};

/// ROW_REGS' most elements per invocation: rows of up to 32 x 256 = 8192 in registers.
constexpr std::int64_t kSoftmaxMaxNs = 32;

/// softmax.comp's loops: the row's kept dims, two passes over the row in strides of the
/// workgroup (or NQ quads per invocation, three times), the tree.
std::uint64_t softmax_loops(std::int64_t kept_dims, std::int64_t L, std::uint32_t local);
/// ROW_REGS' loops: the row's kept dims, three of NS trips (each with its exit test), the tree.
std::uint64_t softmax_regs_loops(std::int64_t kept_dims, std::int64_t ns);

SoftmaxPlan plan_softmax(const SoftmaxProblem& p);

}  // namespace gltensor::detail
