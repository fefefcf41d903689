// The recurrent layers' time loop: see rnn_plan.hpp.
#include "nn/rnn_plan.hpp"

#include <algorithm>

namespace gltensor::detail {

std::int64_t rnn_seq_shared_bytes(int phases) { return (phases == 2 ? 4 : 3) * kRnnSeqMaxHidden * 4; }

std::uint64_t rnn_seq_loops(std::int64_t steps, std::int64_t groups, std::int64_t inner, int phases) {
  const auto g = static_cast<std::uint64_t>(groups);
  const std::uint64_t per_phase = g * (static_cast<std::uint64_t>(inner) + 2) + 2;
  return 2 * (g + 1) + 1 + static_cast<std::uint64_t>(steps) * (1 + static_cast<std::uint64_t>(phases) * per_phase);
}

bool rnn_fused_steps(const RnnSeqProblem& p, const RnnSeqDevice& dev) {
  if (p.phases != 1 || p.B > kRnnFusedMaxBatch) return false;
  return !dev.software || dev.setting == RnnSetting::steps;
}

std::uint64_t rnn_seq_regs_loops(std::int64_t steps, std::int64_t h, std::int64_t parts, std::int64_t reg_cols) {
  const auto m = static_cast<std::uint64_t>(h / parts), ks = static_cast<std::uint64_t>(parts);
  const auto rr = static_cast<std::uint64_t>(reg_cols);
  return rr + 2 + static_cast<std::uint64_t>(steps) * (m + ks + 7);
}

RnnSeqPlan plan_rnn_sequence(const RnnSeqProblem& p, const RnnSeqDevice& dev) {
  RnnSeqPlan plan;
  if (dev.setting == RnnSetting::steps || p.T <= 0 || p.H <= 0 || p.H > kRnnSeqMaxHidden) return plan;
  if (rnn_seq_shared_bytes(p.phases) > dev.max_shared_memory || dev.max_local < 32) return plan;
  std::int64_t ks = 1;
  while (p.H / ks > kRnnSeqRegsMaxColumns) ks *= 2;
  const std::int64_t threads = (p.G * p.H * ks + 31) / 32 * 32;
  const bool regs_default = !dev.software && dev.setting == RnnSetting::choose && p.H <= kRnnSeqRegsDefaultHidden;
  if (p.H <= kRnnSeqRegsMaxHidden && p.H % ks == 0 && p.phases == 1 && threads <= dev.max_local &&
      (regs_default || dev.setting == RnnSetting::units)) {
    const std::int64_t rr = threads > 512 ? std::min<std::int64_t>(p.H / ks, 32) : p.H / ks;
    const std::uint64_t fixed = rnn_seq_regs_loops(0, p.H, ks, rr),
                        per_step = rnn_seq_regs_loops(1, p.H, ks, rr) - fixed;
    if (dev.loop_budget >= fixed + per_step) {
      plan.sequence = plan.regs = true;
      plan.local = static_cast<std::uint32_t>(threads);
      plan.parts = ks, plan.reg_cols = rr;
      plan.groups = 1;
      plan.chunk = static_cast<std::int64_t>(
          std::min<std::uint64_t>((dev.loop_budget - fixed) / per_step, static_cast<std::uint64_t>(p.T)));
      plan.dispatches = (p.T + plan.chunk - 1) / plan.chunk;
      return plan;
    }
  }
  if (dev.software && dev.setting == RnnSetting::choose && p.G * p.H * p.H * p.D * p.B > kRnnSeqSoftwareMacs)
    return plan;
  if (!dev.software && dev.setting == RnnSetting::choose && p.G * p.H * p.H > kRnnSeqGpuMacs) return plan;
  const bool quads =
      p.H % 4 == 0 && (dev.setting == RnnSetting::quads || (dev.setting == RnnSetting::choose && dev.software));
  const std::int64_t inner = quads ? p.H / 4 : p.H;
  // One group of units per invocation, in whole groups of 32 invocations, as far as the device
  // allows.
  const std::int64_t local = std::min<std::int64_t>((inner + 31) / 32 * 32, dev.max_local / 32 * 32);
  const std::int64_t groups = (inner + local - 1) / local;
  const std::uint64_t fixed = rnn_seq_loops(0, groups, inner, p.phases);
  const std::uint64_t per_step = rnn_seq_loops(1, groups, inner, p.phases) - fixed;
  if (dev.loop_budget < fixed + per_step) return plan;
  const std::uint64_t fit = (dev.loop_budget - fixed) / per_step;
  plan.sequence = true;
  plan.quads = quads;
  plan.local = static_cast<std::uint32_t>(local);
  plan.groups = groups;
  plan.chunk = static_cast<std::int64_t>(std::min<std::uint64_t>(fit, static_cast<std::uint64_t>(p.T)));
  plan.dispatches = (p.T + plan.chunk - 1) / plan.chunk;
  return plan;
}

}  // namespace gltensor::detail
