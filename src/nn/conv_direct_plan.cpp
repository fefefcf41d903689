// plan_conv_direct (conv_direct_plan.hpp).
#include "nn/conv_direct_plan.hpp"

#include <algorithm>

namespace gltensor::detail {

ConvDirectPlan plan_conv_direct(const ConvDirectProblem& p, const DeviceTraits& dev, const Settings& settings) {
  ConvDirectPlan plan;
  const ConvDirectSetting force = settings.conv_direct;
  const bool lanes = force == ConvDirectSetting::lanes || (force != ConvDirectSetting::rows && !dev.software);
  plan.x_rows_contiguous = p.x_rows_contiguous;
  plan.layout = lanes ? ConvDirectPlan::Layout::lanes : ConvDirectPlan::Layout::rows;
  for (std::int64_t d = std::min<std::int64_t>(p.Og, 8); d > 1; --d)
    if (p.Og % d == 0) {
      plan.opi = d;
      break;
    }
  const std::int64_t opi = plan.opi, taps = p.C * p.KH * p.KW;
  const auto positions = static_cast<std::uint64_t>(std::max<std::int64_t>(p.OH * p.OW, 0));
  if (lanes) {
    plan.px = opi <= 4 ? 4 : 2;
    plan.shared_weights = opi * taps <= kConvDirectSharedWeights;
    const auto per_group = static_cast<std::uint64_t>(plan.local_x) * static_cast<std::uint64_t>(plan.px);
    plan.groups_x = (positions + per_group - 1) / per_group;
    // Staging (shared weights), then per position: bias, C channels of KH rows of KW taps of
    // OPI channels, OPI stores.
    const std::int64_t stage = plan.shared_weights ? (opi * taps + plan.local_x - 1) / plan.local_x : 0;
    plan.loop_iterations =
        static_cast<std::uint64_t>(stage + plan.px * (1 + opi + p.C * (1 + p.KH * (1 + p.KW * (1 + opi))) + opi));
  } else {
    plan.px = opi <= 4 ? 16 : 4;
    plan.rowseg = p.stride_w == 1;
    plan.seglen = plan.px + (p.KW - 1) * p.dilation_w;
    const std::int64_t tiles = (p.OW + plan.px - 1) / plan.px;
    plan.groups_x =
        (static_cast<std::uint64_t>(std::max<std::int64_t>(p.OH * tiles, 0)) + plan.local_x - 1) / plan.local_x;
    plan.loop_iterations = static_cast<std::uint64_t>(
        opi * (1 + plan.px) + opi * plan.px + p.C * p.KH * (1 + plan.seglen + p.KW * (1 + opi + plan.px * (1 + opi))));
  }
  return plan;
}

}  // namespace gltensor::detail
