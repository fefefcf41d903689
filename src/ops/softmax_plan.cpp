// plan_softmax (softmax_plan.hpp).
#include "ops/softmax_plan.hpp"

namespace gltensor::detail {

std::uint64_t softmax_loops(std::int64_t kept_dims, std::int64_t L, std::uint32_t local) {
  return static_cast<std::uint64_t>(kept_dims) + 2 * static_cast<std::uint64_t>((L + local - 1) / local) + 24;
}

std::uint64_t softmax_regs_loops(std::int64_t kept_dims, std::int64_t ns) {
  return static_cast<std::uint64_t>(kept_dims) + 3 * static_cast<std::uint64_t>(ns + 1) + 24;
}

SoftmaxPlan plan_softmax(const SoftmaxProblem& p) {
  SoftmaxPlan plan;
  // Rows longer than one workgroup may loop over (counted at 256 invocations): the split path.
  if (p.loop_limit != 0 && softmax_loops(p.kept_dims, p.L, 256) > p.loop_limit) {
    plan.path = SoftmaxPlan::Path::logsumexp;
    return plan;
  }
  plan.local = p.L >= 256 ? 256 : 64;
  // Row in registers: at most 8 quads per invocation.
  plan.nq = (p.L + 4 * plan.local - 1) / (4 * plan.local);
  plan.row_quads = p.L % 4 == 0 && plan.nq <= 8 && p.quad_rows;
  plan.loop_iterations = softmax_loops(p.kept_dims, p.L, plan.local);
  if (!plan.row_quads) {
    // Any other row of up to kSoftmaxMaxNs per invocation: in registers as scalars (one read of
    // the row, not two), where its loops fit the device's limit.
    plan.nq = 0;
    const std::int64_t ns = (p.L + plan.local - 1) / plan.local;
    const std::uint64_t loops = softmax_regs_loops(p.kept_dims, ns);
    if (ns <= kSoftmaxMaxNs && (p.loop_limit == 0 || loops <= p.loop_limit)) {
      plan.row_regs = true, plan.ns = ns;
      plan.loop_iterations = loops;
    }
  }
  plan.subgroup = (plan.row_quads || plan.row_regs) && p.subgroup_arithmetic;
  return plan;
}

}  // namespace gltensor::detail
