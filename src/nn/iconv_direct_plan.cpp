// plan_iconv_direct and IConvDirectVariant (iconv_direct_plan.hpp).
#include "nn/iconv_direct_plan.hpp"

#include <algorithm>

namespace gltensor::detail {

namespace {
// The largest divisor of n that is at most `most` (1 if none).
std::int64_t divisor_up_to(std::int64_t n, std::int64_t most) {
  for (std::int64_t d = std::min(n, most); d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}
}  // namespace

IConvDirectPlan plan_iconv_direct(const IConvDirectProblem& p, const IConvDirectLimits& dev, const Settings& settings) {
  IConvDirectPlan plan;
  const std::int64_t taps = p.KH * p.KW;
  if (settings.conv == ConvSetting::im2col || !p.narrow_zero_points || taps < 1 || taps > kIConvBlock || p.CG < 1 ||
      p.Og < 1 || dev.ssbo_bindings < kIConvOperands + 1)
    return plan;
  plan.opi = divisor_up_to(p.Og, 8);
  if (settings.iconv_groups > 0 && p.positions > 0) {
    const std::int64_t along = (p.positions + plan.local_x * plan.px - 1) / (plan.local_x * plan.px);
    while (plan.opi > 1 && along * (p.Og / plan.opi) * p.planes < settings.iconv_groups)
      plan.opi = divisor_up_to(p.Og, plan.opi - 1);
  }
  plan.cb = divisor_up_to(p.CG, kIConvBlock / taps);
  const std::int64_t opi = plan.opi, px = plan.px, blocks = p.CG / plan.cb;
  plan.rowseg = p.stride_w == 1 && p.OW % px == 0;
  plan.seglen = plan.rowseg ? px + (p.KW - 1) * p.dilation_w : 0;
  // Every loop counted: the positions' setup, the totals' zeroing; per block its own trip, the
  // weights' staging, the sums' zeroing, CB channels of KH rows (rowseg: SEGLEN loads) of KW taps (PX loads, OPI
  // channels of PX FMAs), the totals' update; the epilogue (OPI channels of PX positions).
  const std::int64_t stage = (opi * plan.cb * taps + plan.local_x - 1) / plan.local_x;
  const std::int64_t per_block =
      1 + stage + 2 * opi * px + plan.cb * (1 + p.KH * (1 + plan.seglen + p.KW * (1 + px + opi * (1 + px))));
  plan.loop_iterations = static_cast<std::uint64_t>(px + opi * px + blocks * per_block + opi * (1 + px));
  const bool wide =
      settings.conv != ConvSetting::direct && p.CG * taps > (dev.software ? kIConvDirectTaps : kIConvDirectTapsGpu);
  plan.direct = !wide && (dev.loop_limit == 0 || plan.loop_iterations <= dev.loop_limit);
  return plan;
}

Defines IConvDirectVariant::defines() const {
  Defines d;
  if (rowseg) d.flag("ROWSEG").value("DW", dw).value("SEGLEN", seglen);
  d.value("OPI", opi).value("PX", px).value("CB", cb).value("KH", kh).value("KW", kw).flag("HAS_BIAS", bias);
  const bool q8 = quant && !dq_out;  // 8-bit y
  d.operand(0, q8 ? y : DType::f32, q8 ? CT::i32 : CT::f32, true)
      .operand(1, x, CT::i32, false)
      .operand(2, w, CT::i32, false);
  d.operand(3, zx, CT::i32, false).flag("ZW_NONE", zw_none);
  if (!zw_none) d.operand(4, zw, CT::i32, false);
  for (int i = 5; i < 8; ++i) d.operand(i, DType::f32, CT::f32, false);
  if (quant) {
    d.flag("QUANT").value("QMIN", y == DType::i8 ? -128 : 0).value("QMAX", y == DType::i8 ? 127 : 255);
    d.flag("DQ_OUT", dq_out);
    d.operand(8, DType::f32, CT::f32, false).operand(9, zy, CT::i32, false);
  }
  return d;
}

std::vector<IConvDirectVariant> IConvDirectVariant::space() {
  std::vector<IConvDirectVariant> out;
  for (DType x : {DType::u8, DType::i8})
    for (DType w : {DType::u8, DType::i8})
      for (bool bias : {false, true}) {
        IConvDirectVariant v;
        v.x = v.zx = x, v.w = v.zw = w, v.bias = bias, v.opi = 3, v.cb = 2, v.kh = v.kw = 3;
        out.push_back(v);                                           // dequantizing epilogue
        v.quant = true, v.y = v.zy = bias ? DType::i8 : DType::u8;  // requantizing epilogue
        out.push_back(v);
        v.dq_out = true;  // requantized, then dequantized
        out.push_back(v);
      }
  IConvDirectVariant v;  // absent zero points: int32 zeros
  v.zx = v.zw = DType::i32, v.opi = 8, v.cb = 28, v.kh = v.kw = 3, v.px = 16;
  out.push_back(v);
  v.rowseg = true, v.dw = 2, v.seglen = v.px + (v.kw - 1) * v.dw;  // a filter row's inputs once
  out.push_back(v);
  v.zw_none = true, v.quant = true;  // no weight zero point (fuse_qdq drops all-zero ones), requantizing
  out.push_back(v);
  return out;
}

}  // namespace gltensor::detail
