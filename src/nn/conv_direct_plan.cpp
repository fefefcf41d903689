// plan_conv_direct (conv_direct_plan.hpp).
#include "nn/conv_direct_plan.hpp"

#include <algorithm>
#include <bit>

namespace gltensor::detail {

namespace {
// Input channels per staged chunk of the tiles form: the largest divisor of C whose filters
// (per_channel floats each) fit kConvDirectSharedWeights (0: none).
std::int64_t tiles_chunk(std::int64_t C, std::int64_t per_channel) {
  for (std::int64_t d = std::min(C, kConvDirectSharedWeights / std::max<std::int64_t>(per_channel, 1)); d > 0; --d)
    if (C % d == 0) return d;
  return 0;
}
// The quads form's rows per invocation: kConvDwqPy, fewer where the last item's rows would pass
// OH by more than OH / 8.
std::int64_t dwq_py(const ConvDirectProblem& p) {
  const std::int64_t oh = std::max<std::int64_t>(p.OH, 1);
  std::int64_t py = std::min(kConvDwqPy, oh);
  while (py > 1 && (oh + py - 1) / py * py - oh > oh / 8) --py;
  return py;
}
}  // namespace

std::int64_t conv_ubo_block_vec4s(std::int64_t floats, std::int64_t ubo_floats) {
  // The SSBO pool's size classes (runtime/pool.hpp), in vec4s: 16, 24, 32, 48, 64, 96, ...
  const auto need = static_cast<std::uint64_t>(std::max<std::int64_t>((floats + 3) / 4, 16));
  const std::uint64_t p = std::bit_floor(need);
  const std::uint64_t cls = need == p ? p : need <= p + p / 2 ? p + p / 2 : 2 * p;
  return std::min(static_cast<std::int64_t>(cls), ubo_floats / 4);
}

std::int64_t conv_tiles_opi(std::int64_t Og) {
  for (std::int64_t d = std::min(Og, kConvTilesOpi) / 4 * 4; d >= 4; d -= 4)
    if (Og % d == 0) return d;
  return 0;
}

ConvDirectPlan plan_conv_direct(const ConvDirectProblem& p, const DeviceTraits& dev, const Settings& settings) {
  ConvDirectPlan plan;
  const ConvDirectSetting force = settings.conv_direct;
  const std::int64_t taps = p.C * p.KH * p.KW;
  // ubo: OPI a divisor of Og whose filters (and the block's alignment slack) fit the block.
  std::int64_t ubo_opi = 0;
  if (p.ubo_floats > 0 && taps > 0)  // (no channels: nothing to bind)
    for (std::int64_t d = std::min<std::int64_t>(p.Og, 8); d > 0 && ubo_opi == 0; --d)
      if (p.Og % d == 0 && d * taps + 3 <= p.ubo_floats) ubo_opi = d;
  const bool ubo =
      ubo_opi > 0 && (force == ConvDirectSetting::ubo || (force == ConvDirectSetting::choose && dev.software));
  const bool lanes = !ubo && (force == ConvDirectSetting::lanes || (force != ConvDirectSetting::rows && !dev.software));
  plan.x_rows_contiguous = p.x_rows_contiguous;
  plan.layout = ubo     ? ConvDirectPlan::Layout::ubo
                : lanes ? ConvDirectPlan::Layout::lanes
                        : ConvDirectPlan::Layout::rows;
  for (std::int64_t d = std::min<std::int64_t>(p.Og, 8); d > 1; --d)
    if (p.Og % d == 0) {
      plan.opi = d;
      break;
    }
  const std::int64_t opi = plan.opi;
  const auto positions = static_cast<std::uint64_t>(std::max<std::int64_t>(p.OH * p.OW, 0));
  if (ubo) {
    // Output channels per dispatch: as many of OPI's multiples as the block holds, spread evenly
    // over the dispatches that all of them need.
    plan.opi = ubo_opi;
    // PX: 16 or 8 positions (multiples of 4: the segment's quads start at the same shift in every
    // tile), 16 where its partial last tile wastes at most an eighth of a row.
    plan.px = (p.OW + 15) / 16 * 16 - p.OW <= p.OW / 8 ? 16 : 8;
    plan.local_x = 16;
    const std::int64_t O = p.Og * p.groups, fit = (p.ubo_floats - 3) / taps / ubo_opi * ubo_opi;
    const std::int64_t dispatches = (O + fit - 1) / fit;
    plan.chunk = ((O + dispatches - 1) / dispatches + ubo_opi - 1) / ubo_opi * ubo_opi;
    plan.wq = conv_ubo_block_vec4s(plan.chunk * taps, p.ubo_floats);
    plan.rowseg = true;
    plan.seglen = (plan.px - 1) * p.stride_w + (p.KW - 1) * p.dilation_w + 1;
    const std::int64_t tiles = (p.OW + plan.px - 1) / plan.px;
    plan.groups_x =
        (static_cast<std::uint64_t>(std::max<std::int64_t>(p.OH * tiles, 0)) + plan.local_x - 1) / plan.local_x;
    // The channel loop and its kernel rows (the taps, channels and positions are written out).
    plan.loop_iterations = static_cast<std::uint64_t>(p.C * (p.KH + 1) + 1);
  } else if (lanes && !p.shuffle && kConvTilesPerGroup <= p.max_local && opi * taps > kConvDirectSharedWeights &&
             conv_tiles_opi(p.Og) > 0 && tiles_chunk(p.C, p.KH * p.KW * conv_tiles_opi(p.Og)) > 0) {
    // Tiles: PX consecutive positions of a row, OPI channels, the filters staged by chunks of
    // input channels.
    plan.tiles = true;
    plan.opi = p.tiles_opi > 0 && p.tiles_opi % 4 == 0 && p.Og % p.tiles_opi == 0 &&
                       tiles_chunk(p.C, p.KH * p.KW * p.tiles_opi) > 0
                   ? p.tiles_opi
                   : conv_tiles_opi(p.Og);
    plan.ks = 1;
    plan.px = kConvTilesPx;
    plan.prefetch = true;
    plan.seglen = (plan.px - 1) * p.stride_w + (p.KW - 1) * p.dilation_w + 1;
    const std::int64_t tiles = p.OH > 0 && p.OW > 0 ? p.OH * ((p.OW + plan.px - 1) / plan.px) : 0;
    const std::int64_t oq = plan.opi / 4, per_channel = p.KH * p.KW * plan.opi;
    const std::int64_t tx =
        p.tiles_per_group > 0 && p.tiles_per_group <= p.max_local ? p.tiles_per_group : kConvTilesPerGroup;
    // KS: slices of the input channels per tile until one image's invocations reach
    // kConvTilesThreads, where C divides and the staged filters and partial sums fit.
    const std::int64_t threads = tiles * p.groups * (p.Og / plan.opi);
    const std::int64_t ks_hint = p.tiles_ks;
    if (ks_hint > 0 && p.C % ks_hint == 0 && tx * ks_hint <= p.max_local &&
        tiles_chunk(p.C / ks_hint, per_channel * ks_hint) > 0 &&
        (ks_hint - 1) * tx * plan.px * plan.opi <= kConvTilesHintPartials) {
      plan.ks = ks_hint;
    } else {
      for (std::int64_t ks : {2, 4}) {
        const bool fits = p.C % ks == 0 && tx * ks <= p.max_local && tiles_chunk(p.C / ks, per_channel * ks) > 0 &&
                          (ks - 1) * tx * plan.px * plan.opi <= kConvTilesPartials;
        if (fits && threads * plan.ks < kConvTilesThreads) plan.ks = ks;
      }
    }
    plan.local_x = static_cast<std::uint32_t>(tx * plan.ks);
    plan.ch = tiles_chunk(p.C / plan.ks, per_channel * plan.ks);
    plan.groups_x = static_cast<std::uint64_t>((tiles + tx - 1) / tx);
    // Bias, the segment's columns, the first channel's segments (PREFETCH); per chunk: staging, then
    // per channel the KH segments and KH x KW taps of OQ vec4s of PX positions; the partial sums (KS
    // > 1); the stores.
    const std::int64_t stage = (plan.ks * plan.ch * per_channel + plan.local_x - 1) / plan.local_x;
    const std::int64_t segs = p.KH * (1 + plan.seglen);
    const std::int64_t per_chunk = stage + plan.ch * (1 + segs + p.KH * (1 + p.KW * (1 + oq * (1 + plan.px))));
    const std::int64_t partials = plan.ks > 1 ? plan.ks * plan.px * oq + plan.ks : 0;
    plan.loop_iterations =
        static_cast<std::uint64_t>(oq * (1 + plan.px) + plan.seglen + segs + p.C / plan.ks / plan.ch * (1 + per_chunk) +
                                   partials + plan.px * (1 + oq * 5));
  } else if (lanes && !p.shuffle && p.C == 1 && p.Og == 1) {
    // Quads: depthwise, PY rows x 4 columns of outputs per invocation, the rows read into registers.
    plan.dwq = true;
    plan.opi = 1;
    plan.py = dwq_py(p);
    plan.local_x = static_cast<std::uint32_t>(kConvDwqLocal);
    const std::int64_t items = p.OH > 0 && p.OW > 0 ? (p.OH + plan.py - 1) / plan.py * ((p.OW + 3) / 4) : 0;
    plan.groups_x = static_cast<std::uint64_t>((items * p.groups + plan.local_x - 1) / plan.local_x);
    // Weights, sums; per input row (RR): NQ quads and QCOLS columns (at most QCOLS + 2 quads), PY
    // rows of KW taps of 4 products; PY rows of stores.
    const std::int64_t rr = (plan.py - 1) * p.stride_h + (p.KH - 1) * p.dilation_h + 1;
    const std::int64_t qcols = 3 * p.stride_w + (p.KW - 1) * p.dilation_w + 1;
    plan.loop_iterations = static_cast<std::uint64_t>(
        p.KH * (1 + p.KW) + 4 * plan.py + rr * (1 + 2 * qcols + 2 + plan.py * (1 + p.KW * 5)) + plan.py * 5);
  } else if (lanes) {
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
