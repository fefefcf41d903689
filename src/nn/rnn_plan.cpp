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

std::uint64_t rnn_seq_regs_loops(std::int64_t steps, std::int64_t h, std::int64_t g, std::int64_t parts,
                                 std::int64_t reg_cols) {
  const auto m = static_cast<std::uint64_t>(h / parts), ks = static_cast<std::uint64_t>(parts);
  const auto gg = static_cast<std::uint64_t>(g), rr = static_cast<std::uint64_t>(reg_cols);
  return gg * (rr + 2) + 2 + static_cast<std::uint64_t>(steps) * (8 + m * (gg + 2) + 2 * ks);
}

namespace {

// The register kernel's parts, chunk width and register columns for p on dev, or parts = 0 where it does not run.
RnnSeqPlan plan_regs(const RnnSeqProblem& p, const RnnSeqDevice& dev) {
  RnnSeqPlan plan;
  plan.parts = 0;
  const bool regs_default = !dev.software && dev.setting == RnnSetting::choose && p.H <= kRnnSeqRegsDefaultHidden;
  const bool choose = dev.setting == RnnSetting::choose || dev.setting == RnnSetting::units;
  // GRID past one workgroup's registers: on GPUs, for few workgroups in all
  std::int64_t ng = 1;
  if (dev.multiprocessors > 0 && choose && p.H > kRnnSeqRegsDefaultHidden)
    for (ng = (p.H + kRnnSeqGridUnits - 1) / kRnnSeqGridUnits; p.H % ng != 0;) ++ng;
  if (dev.force_grid > 0) ng = dev.force_grid;
  if (ng > 1 && (p.D * p.B * ng > dev.multiprocessors || dev.ssbo_bindings < 12 || p.H % ng != 0 ||
                 p.D * p.B * ng > kRnnSeqGridMaxGroups || p.H > kRnnSeqGridMaxHidden || p.phases != 1 || !choose))
    return plan;
  if (ng == 1 && (p.H > kRnnSeqRegsMaxHidden || p.phases != 1 || !(regs_default || dev.setting == RnnSetting::units)))
    return plan;
  const std::int64_t uw = p.H / ng;  // units per workgroup
  std::int64_t ks = 1;
  while (p.G * p.H / ks > kRnnSeqRegsMaxFloats && ks < p.H) ks *= 2;
  while (p.H % ks != 0) ks /= 2;
  while (ks > 1 && (uw * ks + 31) / 32 * 32 > dev.max_local) ks /= 2;
  if (dev.force_parts > 0) ks = dev.force_parts;
  if (ks & (ks - 1) || p.H % ks != 0) return plan;
  const std::int64_t threads = (uw * ks + 31) / 32 * 32, m = p.H / ks;
  if (threads > dev.max_local) return plan;
  const std::int64_t w = m % 4 == 0 ? 4 : 1;
  plan.subgroup = ks > 1 && dev.shuffle_lanes >= ks;
  // two h buffers, and without shuffles a vec4 of partial sums per invocation
  if (2 * p.H * 4 + (plan.subgroup ? 0 : threads * 16) > dev.max_shared_memory) return plan;
  const std::int64_t floats = threads > 512 ? kRnnSeqRegsFloats1024 : kRnnSeqRegsMaxFloats;  // per invocation
  std::int64_t rr = std::min(m, floats / p.G) / w * w;
  if (dev.force_cols >= 0) rr = std::min(m, dev.force_cols) / w * w;
  plan.parts = ks, plan.width = w, plan.reg_cols = rr, plan.grid = ng;
  plan.local = static_cast<std::uint32_t>(threads);
  return plan;
}

}  // namespace

RnnSeqPlan plan_rnn_sequence(const RnnSeqProblem& p, const RnnSeqDevice& dev) {
  RnnSeqPlan plan;
  if (dev.setting == RnnSetting::steps || p.T <= 0 || p.H <= 0 || p.H > kRnnSeqMaxHidden) return plan;
  if (rnn_seq_shared_bytes(p.phases) > dev.max_shared_memory || dev.max_local < 32) return plan;
  const RnnSeqPlan regs = plan_regs(p, dev);
  if (regs.parts > 0) {
    const std::uint64_t fixed = rnn_seq_regs_loops(0, p.H, p.G, regs.parts, regs.reg_cols),
                        per_step = rnn_seq_regs_loops(1, p.H, p.G, regs.parts, regs.reg_cols) - fixed;
    if (dev.loop_budget >= fixed + per_step) {
      plan = regs;
      plan.sequence = plan.regs = true;
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
