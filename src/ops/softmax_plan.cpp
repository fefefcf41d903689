// plan_softmax (softmax_plan.hpp).
#include "ops/softmax_plan.hpp"

namespace gltensor::detail {

std::uint64_t softmax_loops(std::int64_t kept_dims, std::int64_t L, std::uint32_t local) {
  return static_cast<std::uint64_t>(kept_dims) + 2 * static_cast<std::uint64_t>((L + local - 1) / local) + 24;
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
  plan.subgroup = plan.row_quads && p.subgroup_arithmetic;
  plan.loop_iterations = softmax_loops(p.kept_dims, p.L, plan.local);
  return plan;
}

}  // namespace gltensor::detail
