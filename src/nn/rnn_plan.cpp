// The recurrent layers' time loop: see rnn_plan.hpp.
#include "nn/rnn_plan.hpp"

#include <algorithm>

namespace gltensor::detail {

std::int64_t rnn_seq_shared_bytes(int phases) { return (phases == 2 ? 4 : 2) * kRnnSeqMaxHidden * 4; }

std::uint64_t rnn_seq_loops(std::int64_t steps, std::int64_t units, std::int64_t H, int phases) {
  const auto u = static_cast<std::uint64_t>(units);
  return 2 * u + static_cast<std::uint64_t>(steps) * (1 + static_cast<std::uint64_t>(phases) * u * (H + 1));
}

RnnSeqPlan plan_rnn_sequence(const RnnSeqProblem& p, const RnnSeqDevice& dev) {
  RnnSeqPlan plan;
  if (dev.force_steps || p.T <= 0 || p.H <= 0 || p.H > kRnnSeqMaxHidden) return plan;
  if (rnn_seq_shared_bytes(p.phases) > dev.max_shared_memory || dev.max_local < 32) return plan;
  // One invocation per hidden unit, in whole groups of 32, as far as the device allows.
  const std::int64_t want = (p.H + 31) / 32 * 32;
  const std::int64_t local = std::min<std::int64_t>(want, dev.max_local / 32 * 32);
  const std::int64_t units = (p.H + local - 1) / local;
  const std::uint64_t fixed = 2 * static_cast<std::uint64_t>(units);
  const std::uint64_t per_step = rnn_seq_loops(1, units, p.H, p.phases) - fixed;
  if (dev.loop_budget < fixed + per_step) return plan;
  const std::uint64_t fit = (dev.loop_budget - fixed) / per_step;
  plan.sequence = true;
  plan.local = static_cast<std::uint32_t>(local);
  plan.units = units;
  plan.chunk = static_cast<std::int64_t>(std::min<std::uint64_t>(fit, static_cast<std::uint64_t>(p.T)));
  plan.dispatches = (p.T + plan.chunk - 1) / plan.chunk;
  return plan;
}

}  // namespace gltensor::detail
