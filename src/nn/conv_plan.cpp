// plan_conv2d, plan_pieces and the GEMM form (conv_plan.hpp).
#include "nn/conv_plan.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>

#include "gltensor/errors.hpp"
#include "ops/activation.hpp"
#include "runtime/glsl_text.hpp"
#include "runtime/int_math.hpp"

namespace gltensor::detail {

std::vector<ConvPiece> plan_pieces(const ConvGeometry& g, std::int64_t max_positions) {
  const std::int64_t P = g.OH * g.OW, m = std::max<std::int64_t>(max_positions, 1);
  std::vector<ConvPiece> pieces;
  if (g.N * P <= m) return {ConvPiece{0, g.N, 0, g.OH, 0, g.OW}};
  if (P <= m) {
    const std::int64_t per = m / P;
    for (std::int64_t n = 0; n < g.N; n += per) pieces.push_back({n, std::min(per, g.N - n), 0, g.OH, 0, g.OW});
  } else if (g.OW <= m) {
    const std::int64_t rows = m / g.OW;
    for (std::int64_t n = 0; n < g.N; ++n)
      for (std::int64_t r = 0; r < g.OH; r += rows) pieces.push_back({n, 1, r, std::min(rows, g.OH - r), 0, g.OW});
  } else {
    for (std::int64_t n = 0; n < g.N; ++n)
      for (std::int64_t r = 0; r < g.OH; ++r)
        for (std::int64_t c = 0; c < g.OW; c += m) pieces.push_back({n, 1, r, 1, c, std::min(m, g.OW - c)});
  }
  return pieces;
}

std::int64_t max_positions(std::int64_t ssbo_limit, std::int64_t col_rows, std::int64_t O) {
  return ssbo_limit / (4 * std::max<std::int64_t>({col_rows, O, 1}));
}

std::vector<ConvPiece> plan_col2im_pieces(const ConvGeometry& g, std::int64_t ssbo_limit) {
  const std::int64_t row_bytes = 4 * std::max<std::int64_t>(g.C * g.KH * g.KW, 1);
  return plan_pieces(g, ssbo_limit / row_bytes);
}

ConvGemmForm plan_conv_gemm(const ConvGeometry& g, std::int64_t groups, bool x_f32_contiguous, bool grad,
                            bool batched) {
  if (groups > 1) return ConvGemmForm::grouped;
  const Conv2dOptions& o = g.o;
  const bool one_by_one = g.KH == 1 && g.KW == 1 && o.stride[0] == 1 && o.stride[1] == 1 &&
                          o.padding == std::array<std::int64_t, 4>{0, 0, 0, 0} && x_f32_contiguous;
  if (one_by_one && g.N == 1) return ConvGemmForm::pointwise;
  // Several images: the weight gradient needs the columns matrix (saved_columns), so only without.
  if (one_by_one && !grad && batched) return ConvGemmForm::pointwise_batched;
  return ConvGemmForm::im2col;
}

std::int64_t plan_conv_winograd(const Conv2dProblem& p, const ConvDevice& dev, const Settings& settings) {
  const ConvGeometry& g = p.g;
  const Conv2dOptions& o = g.o;
  if (settings.conv_winograd == 0 || settings.conv != ConvSetting::choose || !p.f32 || p.grad || o.groups != 1 ||
      g.KH != 3 || g.KW != 3 || o.stride[0] != 1 || o.stride[1] != 1 || o.dilation[0] != 1 || o.dilation[1] != 1 ||
      g.N * g.OH * g.OW * g.C == 0 || p.O == 0)
    return 0;
  std::int64_t m = settings.conv_winograd;
  if (m < 0) {
    if (dev.software || g.C < kWinogradMinC || p.O < kWinogradMinO || g.N * g.OH * g.OW < kWinogradMinPositions)
      return 0;
    m = 4;
  }
  // Each transformed operand (and the GEMMs' product) one buffer within the SSBO limit.
  const std::int64_t T = (m + 2) * (m + 2), P = g.N * ((g.OH + m - 1) / m) * ((g.OW + m - 1) / m);
  const std::int64_t most = T * 4 * std::max({g.C * P, p.O * g.C, p.O * P});
  return most <= dev.ssbo_limit ? m : 0;
}

std::int64_t WinogradFusedBlock::shared_floats(std::int64_t m) const {
  const std::int64_t T = (m + 2) * (m + 2);
  return std::max(T * c * (o + p), T * o * p);
}

std::uint64_t WinogradFusedBlock::loops(std::int64_t m, std::int64_t C) const {
  const auto a = static_cast<std::uint64_t>(m + 2), T = a * a, mm = static_cast<std::uint64_t>(m);
  const auto L = static_cast<std::uint64_t>(T) * static_cast<std::uint64_t>(threads_per_t());
  const auto per = [&](std::int64_t items) { return (static_cast<std::uint64_t>(items) + L - 1) / L; };
  const auto uo = static_cast<std::uint64_t>(ro), up = static_cast<std::uint64_t>(rp);
  // Per chunk: the input tiles (zeroed, loaded, both products, stored), U's loads, the sums; then
  // M's stores and the output tiles (loads, both products, stores).
  const std::uint64_t tile = 3 * T + 2 * a * a * a + 2 * a * a + 6 * a;
  const std::uint64_t chunk = per(c * p) * (tile + 1) + per(T * static_cast<std::uint64_t>(c * o)) +
                              static_cast<std::uint64_t>(c) * (uo + up + uo * up + 1) + 1;
  const std::uint64_t out = uo * up + uo + per(o * p) * (T + mm * a * a + mm * a + mm * mm * a + mm + mm * mm + 1);
  const auto chunks = static_cast<std::uint64_t>((std::max<std::int64_t>(C, 1) + c - 1) / c);
  return uo * up + chunks * chunk + out + (split > 1 ? uo * up * (static_cast<std::uint64_t>(split) + 2) : 0);
}

WinogradFusedBlock plan_winograd_fused(std::int64_t m, std::int64_t C, std::int64_t O, std::int64_t P, bool quant,
                                       const ConvDevice& dev, std::int64_t max_shared_bytes, const Settings& settings) {
  if (settings.conv_winograd_fused == 0 || m <= 0 || C <= 0 || O <= 0 || P <= 0) return {};
  if (settings.conv_winograd_fused < 0 &&
      (dev.software || quant || m != 4 || P > kWinogradFusedMaxTiles || C * O > kWinogradFusedMaxCO))
    return {};
  WinogradFusedBlock b = kWinogradFusedBlock;
  const bool set = settings.conv_winograd_block_o > 0 || settings.conv_winograd_block_p > 0;
  if (settings.conv_winograd_block_o > 0) b.o = settings.conv_winograd_block_o;
  if (settings.conv_winograd_block_p > 0) b.p = settings.conv_winograd_block_p;
  if (settings.conv_winograd_block_c > 0) b.c = settings.conv_winograd_block_c;
  if (settings.conv_winograd_block_f >= 0) b.prefetch = settings.conv_winograd_block_f == 1;
  const std::int64_t T = (m + 2) * (m + 2);
  const auto groups = [&] { return ((O + b.o - 1) / b.o) * ((P + b.p - 1) / b.p); };
  // The default's tiles, then its channels, halved (down to 4) until the blocking fits the device.
  for (;;) {
    b.ro = std::min<std::int64_t>(4, b.o), b.rp = std::min<std::int64_t>(4, b.p);
    if (T * b.threads_per_t() <= dev.max_local && b.shared_floats(m) * 4 <= max_shared_bytes &&
        (dev.loop_limit == 0 || b.loops(m, C) <= dev.loop_limit))
      break;
    if (set || (b.p <= 4 && b.o <= 4)) return {};
    (b.p > 4 ? b.p : b.o) /= 2;
  }
  // Channels split over workgroups: the setting's, else 2 where each part has 2 chunks or more
  // (fewer chunks than parts: not).
  const std::int64_t chunks = (C + b.c - 1) / b.c;
  b.split = settings.conv_winograd_split > 0 ? settings.conv_winograd_split : chunks >= 4 ? 2 : 1;
  if (b.split > chunks || groups() > kWinogradFusedMaxSlots) b.split = 1;
  return b;
}

Conv2dPlan plan_conv2d(const Conv2dProblem& p, const ConvDevice& dev, const Settings& settings) {
  Conv2dPlan plan;
  const ConvGeometry& g = p.g;
  const std::int64_t G = g.o.groups, Og = p.O / G, K = g.C * g.KH * g.KW;
  ConvDirectProblem dp;
  dp.C = g.C, dp.Og = Og, dp.KH = g.KH, dp.KW = g.KW, dp.OH = g.OH, dp.OW = g.OW;
  dp.stride_w = g.o.stride[1], dp.dilation_w = g.o.dilation[1];
  dp.stride_h = g.o.stride[0], dp.dilation_h = g.o.dilation[0];
  dp.x_rows_contiguous = p.x_rows_contiguous;
  dp.groups = G;
  dp.ubo_floats = p.f32 && !p.grad ? dev.ubo_limit / 4 : 0;
  dp.max_local = dev.max_local;
  plan.direct = plan_conv_direct(dp, DeviceTraits{dev.software, dev.loop_limit}, settings);
  // Small filters (image filters, depthwise convs) run directly: im2col + GEMM would write and
  // read a columns matrix K times the image, which for large images also exceeds the device's
  // SSBO limit (then the direct kernel runs whatever K is, if its loop fits the device's limit).
  const std::int64_t cols_bytes = K * g.N * g.OH * g.OW * 4;
  const ConvSetting force = settings.conv;
  // GPUs, few output channels per group of large filters (not 1 x 1: their GEMM reads the image in
  // place), no gradient: the lanes layout's tiles form (an implicit GEMM; the im2col GEMM's 64-row
  // tiles would be mostly idle over Og <= 32 rows, and its columns matrix is K times the image).
  const bool tiles = !dev.software && plan.direct.tiles && Og <= kConvTilesMaxOg && g.KH * g.KW > 1 && !p.grad;
  const bool direct = force != ConvSetting::im2col &&
                      (force == ConvSetting::direct || K <= 32 || cols_bytes > dev.ssbo_limit ||
                       plan.direct.layout == ConvDirectPlan::Layout::ubo || tiles) &&
                      (dev.loop_limit == 0 || plan.direct.loop_iterations <= dev.loop_limit);
  // The im2col path in pieces where its columns would exceed the device's max SSBO block.
  const std::vector<ConvPiece> pieces = plan_pieces(g, max_positions(dev.ssbo_limit, G * K, p.O));
  plan.gemm_form = plan_conv_gemm(g, G, p.x_f32_contiguous, p.grad, settings.conv_pointwise_batched);
  plan.winograd_m = plan_conv_winograd(p, dev, settings);
  if (plan.winograd_m > 0) {
    plan.path = Conv2dPlan::Path::winograd;
  } else if (direct) {
    plan.path = Conv2dPlan::Path::direct;
  } else if (Og == 1 && g.C == 1 && !p.grad) {
    plan.path = Conv2dPlan::Path::depthwise;
  } else if (pieces.size() == 1) {
    plan.path = Conv2dPlan::Path::gemm;
  } else {
    plan.path = Conv2dPlan::Path::gemm_pieces;
    plan.pieces = pieces;
  }
  // The direct and the pieces' paths save no columns: the weight gradient makes them again from
  // x, per piece of one group's columns where they exceed the SSBO limit.
  if (p.need_w && p.f32 && G == 1) plan.wgrad = plan_conv_wgrad(g, p.O, dev.software, dev.loop_limit);
  if (p.need_w && plan.wgrad.direct) {
    plan.weight_grad = Conv2dPlan::WeightGrad::direct;
  } else if (p.need_w) {
    if (plan.path == Conv2dPlan::Path::gemm) {
      plan.weight_grad = Conv2dPlan::WeightGrad::saved_columns;
    } else {
      plan.weight_grad = Conv2dPlan::WeightGrad::im2col;
      plan.weight_pieces = plan_pieces(g, max_positions(dev.ssbo_limit, K, Og));
    }
  }
  return plan;
}

ConvInputGradPlan plan_conv_input_grad(const ConvGeometry& g, std::int64_t O, bool f32, bool gy_rows_contiguous,
                                       const ConvDevice& dev, const Settings& settings) {
  ConvInputGradPlan plan;
  const Conv2dOptions& o = g.o;
  const std::int64_t eh = o.dilation[0] * (g.KH - 1), ew = o.dilation[1] * (g.KW - 1);
  if (settings.conv == ConvSetting::im2col || !f32 || o.groups != 1 || o.stride[0] != 1 || o.stride[1] != 1 ||
      o.padding[0] > eh || o.padding[2] > eh || o.padding[1] > ew || o.padding[3] > ew || O <= 0)
    return plan;
  // gx[n, c, h, w] = sum over (o, kh, kw) of gy[n, o, h + pt - kh * dh, w + pl - kw * dw] W[o, c, kh, kw]:
  // with kh' = KH - 1 - kh, a convolution of gy padded by eh - pt above (eh - pb below).
  ConvGeometry t{g.N, O, g.OH, g.OW, g.KH, g.KW, g.H, g.W, o};
  t.o.padding = {eh - o.padding[0], ew - o.padding[1], eh - o.padding[2], ew - o.padding[3]};
  ConvDirectProblem dp;
  dp.C = O, dp.Og = g.C, dp.KH = g.KH, dp.KW = g.KW, dp.OH = g.H, dp.OW = g.W;
  dp.dilation_w = o.dilation[1], dp.dilation_h = o.dilation[0];
  dp.x_rows_contiguous = gy_rows_contiguous;
  // Not the ubo layout: it would need the flipped filters copied (flip's index tensor from the
  // host breaks a Recording's replays); the others read them flipped through negated strides.
  dp.ubo_floats = 0;
  dp.max_local = dev.max_local;
  // The tiles form's blocking measured best for the CNN's second layer (64 -> 32 channels over 14 x
  // 14 planes, batch 128, H100: 0.714 ms per step against 0.735 with the forward's OPI 4, 128 tiles
  // a workgroup, KS 4): 16 channels per invocation, a workgroup per plane's tiles, 2 slices.
  dp.tiles_opi = 16;
  dp.tiles_per_group = std::min(kConvTilesPerGroup, g.H * ((g.W + kConvTilesPx - 1) / kConvTilesPx));
  dp.tiles_ks = 2;
  const ConvDirectPlan kernel = plan_conv_direct(dp, DeviceTraits{dev.software, dev.loop_limit}, settings);
  const bool fits = dev.loop_limit == 0 || kernel.loop_iterations <= dev.loop_limit;
  const bool tiles = !dev.software && kernel.tiles && g.C <= kConvTilesMaxOg && g.KH * g.KW > 1;
  if (!fits || !(tiles || settings.conv == ConvSetting::direct)) return plan;
  plan.direct = true;
  plan.g = t;
  plan.kernel = kernel;
  return plan;
}

std::uint64_t conv_wgrad_loops(std::int64_t C, std::int64_t KH, std::int64_t KW, std::uint64_t iters,
                               std::int64_t opi) {
  const auto taps = static_cast<std::uint64_t>(C * KH * KW), sums = static_cast<std::uint64_t>(opi) * (taps + 1);
  // Per position: the channel, row and tap loops of the loads, the channels' loop and each one's
  // taps. Once: the sums' reset and their store to shared memory, the tree's levels of (1 + sums),
  // the stores' loop (sums <= 4 x 33 over 64 invocations: at most 3 trips).
  const std::uint64_t per =
      1 + static_cast<std::uint64_t>(C + C * KH) + taps + static_cast<std::uint64_t>(opi) * (1 + taps);
  const std::uint64_t tree = 6;  // log2(kConvWgradLocal)
  return iters * per + 2 * sums + tree * (1 + sums) + 3;
}

ConvWgradPlan plan_conv_wgrad(const ConvGeometry& g, std::int64_t O, bool software, std::uint64_t loop_limit) {
  ConvWgradPlan plan;
  const std::int64_t taps = g.C * g.KH * g.KW, P = g.N * g.OH * g.OW, L = kConvWgradLocal;
  if (g.o.groups != 1 || taps > kConvWgradMaxTaps || P <= 0 || O <= 0 || P > UINT32_MAX) return plan;
  // Channels per invocation: each position's taps loaded once for them; the shared sums
  // (opi * (taps + 1) per invocation) within GLES 3.1's 16 KiB; fewer where one position's loops
  // would not fit the device's limit.
  // GPUs start at 2: conv1 of the CNN (1 -> 32 channels, batch 128) on the H100 took 40.1 us per call
  // against 46.7 with 4 (bench/RESULTS.md, 2026-11-27, cnn31); software rasterizers at 4.
  for (std::int64_t opi = software ? 4 : 2; opi >= 1; opi /= 2) {
    if (O % opi != 0 || opi * (taps + 1) * L * 4 > 16384) continue;
    const std::uint64_t fixed = conv_wgrad_loops(g.C, g.KH, g.KW, 0, opi),
                        per = conv_wgrad_loops(g.C, g.KH, g.KW, 1, opi) - fixed;
    if (loop_limit != 0 && fixed + per > loop_limit) continue;
    // Chunks per group of channels: about kConvWgradGroups workgroups in all (software: 16 at most).
    std::int64_t chunks = std::clamp<std::int64_t>(ceil_div(kConvWgradGroups, O / opi), 1, ceil_div(P, L));
    if (software) chunks = std::min<std::int64_t>(chunks, 16);
    std::int64_t chunk = ceil_div(ceil_div(P, chunks), L) * L;
    // Shorter chunks where one invocation would loop past the device's limit.
    if (loop_limit != 0 && fixed + per * static_cast<std::uint64_t>(chunk / L) > loop_limit)
      chunk = static_cast<std::int64_t>((loop_limit - fixed) / per) * L;
    plan.direct = true;
    plan.opi = opi;
    plan.chunk = chunk;
    plan.chunks = ceil_div(P, chunk);
    plan.loop_iterations = conv_wgrad_loops(g.C, g.KH, g.KW, static_cast<std::uint64_t>(chunk / L), opi);
    return plan;
  }
  return plan;  // not even one position fits: the im2col GEMM
}

Defines ConvWgradVariant::defines() const {
  Defines d;
  d.value("WG_C", c).value("WG_KH", kh).value("WG_KW", kw).value("WG_LOCAL", kConvWgradLocal).value("OPI", opi);
  d.operand(0, DType::f32, CT::f32, true).operand(1, gy, CT::f32, false).operand(2, x, CT::f32, false);
  return d;
}

std::vector<ConvWgradVariant> ConvWgradVariant::space() {
  std::vector<ConvWgradVariant> out;
  for (auto [c, kh, kw] :
       std::vector<std::array<std::int64_t, 3>>{{1, 3, 3}, {3, 3, 3}, {2, 1, 5}, {32, 1, 1}, {1, 5, 5}})
    for (std::int64_t opi : {1, 2, 4})
      if (opi * (c * kh * kw + 1) * kConvWgradLocal * 4 <= 16384)
        out.push_back({c, kh, kw, opi, DType::f32, DType::f32});
  return out;
}

namespace {
// The ubo layout's lists written out: X(pre0) .. X(pre n-1).
std::string list0(int n) { return glsl_macro_list(n, ""); }
std::string list1(int n) { return glsl_macro_list(n, "a, "); }
std::string list2(int n) { return glsl_macro_list(n, "a, b, "); }
// ACT(x)'s body from the code act + 256 * affine.
std::string act_body(int code) { return epilogue_glsl(static_cast<Activation>(code & 255), code >= 256); }
}  // namespace

Defines ConvDirectVariant::defines() const {
  Defines d;
  // RESIDUAL's operand after the bias (f32 outputs only: OUT16 adds none)
  auto residual_operand = [&](Defines& dd) {
    if (residual) dd.flag("RESIDUAL").operand(bias ? 4 : 3, DType::f32, CT::f32, false);
  };
  if (plan.layout == ConvDirectPlan::Layout::ubo) {
    // Positions, channels, taps and the row segment written out (conv_direct.comp, W_UBO).
    const int px = static_cast<int>(plan.px), opi = static_cast<int>(plan.opi);
    d.flag("W_UBO").value("PX", plan.px).value("OPI", plan.opi).value("KH", kh).value("KW", kw);
    d.value("SW", sw).value("DW", dw).value("SEGLEN", plan.seglen).value("WQ", plan.wq).value("UBO_BINDING", 0);
    d.macro("OPIS(X)", list0, opi).macro("OPIS_I(X, a)", list1, opi).macro("PXS_I(X, a)", list1, px);
    d.macro("PXS_IJ(X, a, b)", list2, px).macro("KWS(X)", list0, static_cast<int>(kw));
    d.macro("SEGS(X)", list0, static_cast<int>(plan.seglen));
    if (act != Activation::none || affine) d.macro("ACT(x)", act_body, static_cast<int>(act) + (affine ? 256 : 0));
    if (shuffle > 0) d.value("SHUFFLE", shuffle);
    d.flag("X_CONTIG", plan.x_rows_contiguous).flag("HAS_BIAS", bias);
    if (x_quads) {
      const int nq = static_cast<int>((shift + plan.seglen + 3) / 4);
      d.flag("X_QUADS").value("SHIFT", shift).value("NQ", nq).macro("QUADS(X)", list0, nq);
    }
    d.operand(0, out, CT::f32, true).operand(1, x, CT::f32, false);
    if (x_quads) d.quads("X", 1, x);
    if (bias) d.operand(3, b, CT::f32, false);
    residual_operand(d);
    return d;
  }
  d.value("PX", plan.px).value("CG", cg).value("KH", kh).value("KW", kw).value("OPI", plan.opi);
  if (plan.dwq) {
    // The quads form (depthwise: plan_conv_direct): rows per invocation, strides, dilations, quads.
    d.flag("DWQ").value("PY", plan.py).value("SH", sh).value("SW", sw).value("DH", dh).value("DW", dw);
    d.flag("X_CONTIG", plan.x_rows_contiguous).flag("HAS_BIAS", bias);
    if (x_quads) d.flag("X_QUADS").value("SHIFT", shift).value("NQ", (shift + 3 * sw + (kw - 1) * dw + 1 + 3) / 4);
    d.flag("Y_QUADS", y_quads);
    if (act != Activation::none || affine) d.macro("ACT(x)", act_body, static_cast<int>(act) + (affine ? 256 : 0));
    d.operand(0, out, CT::f32, true).operand(1, x, CT::f32, false).operand(2, w, CT::f32, false);
    if (x_quads) d.quads("X", 1, x);
    if (bias) d.operand(3, b, CT::f32, false);
    residual_operand(d);
    return d;
  }
  if (plan.tiles) {
    // Tiles (a form of the lanes layout): the chunk of staged channels, the row segment.
    d.flag("TILES").value("CH", plan.ch).value("SW", sw).value("DW", dw).value("SEGLEN", plan.seglen);
    d.flag("PREFETCH", plan.prefetch).value("KS", plan.ks);
    d.flag("X_CONTIG", plan.x_rows_contiguous).flag("HAS_BIAS", bias);
    if (act != Activation::none || affine) d.macro("ACT(x)", act_body, static_cast<int>(act) + (affine ? 256 : 0));
    d.operand(0, out, CT::f32, true).operand(1, x, CT::f32, false).operand(2, w, CT::f32, false);
    if (bias) d.operand(3, b, CT::f32, false);
    residual_operand(d);
    return d;
  }
  const bool lanes = plan.layout == ConvDirectPlan::Layout::lanes;
  d.flag("LANES", lanes).flag("W_SHARED", lanes && plan.shared_weights);
  if (plan.rowseg) d.flag("ROWSEG").value("DW", dw).value("SEGLEN", plan.seglen);
  d.flag("X_CONTIG", plan.x_rows_contiguous).flag("HAS_BIAS", bias).flag("OUT16", itemsize(out) == 2);
  if (lanes && shuffle > 0) d.value("SHUFFLE", shuffle);
  if (act != Activation::none || affine) d.macro("ACT(x)", act_body, static_cast<int>(act) + (affine ? 256 : 0));
  d.operand(0, out, CT::f32, true).operand(1, x, CT::f32, false).operand(2, w, CT::f32, false);
  if (bias) d.operand(3, b, CT::f32, false);
  residual_operand(d);
  return d;
}

std::vector<ConvDirectVariant> ConvDirectVariant::space() {
  std::vector<ConvDirectVariant> out;
  for (bool lanes : {false, true})
    for (bool shared : {false, true})
      for (bool rowseg : {false, true})
        for (bool contig : {false, true})
          for (bool bias : {false, true}) {
            if ((shared && !lanes) || (rowseg && lanes)) continue;
            ConvDirectVariant v;
            v.plan.layout = lanes ? ConvDirectPlan::Layout::lanes : ConvDirectPlan::Layout::rows;
            v.plan.shared_weights = shared, v.plan.rowseg = rowseg, v.plan.x_rows_contiguous = contig;
            v.plan.opi = 3, v.plan.px = lanes ? 4 : 16, v.cg = 3, v.kh = v.kw = 3, v.bias = bias;
            if (rowseg) v.dw = 2, v.plan.seglen = v.plan.px + (v.kw - 1) * v.dw;
            out.push_back(v);
            if (!bias) continue;
            v.act = Activation::hardswish, v.affine = rowseg;  // the epilogue in the kernel
            out.push_back(v);
            v.residual = true;  // a residual Add after it
            out.push_back(v);
            v.residual = false;
            if (!lanes) continue;
            v.shuffle = 2, v.kh = v.kw = 1;  // a transposed conv's shuffle
            out.push_back(v);
          }
  for (DType dt : {DType::f16, DType::bf16}) {
    ConvDirectVariant v;
    v.out = v.x = v.w = v.b = dt, v.bias = true, v.plan.opi = 8, v.plan.px = 4, v.cg = 1, v.kh = 5, v.kw = 1;
    out.push_back(v);
  }
  for (Activation act : {Activation::none, Activation::relu, Activation::hardswish})
    for (bool bias : {false, true}) {
      ConvDirectVariant v;  // ubo: a 3 x 3 filter, stride 2 along rows, 2 chunks of 4 channels
      v.plan.layout = ConvDirectPlan::Layout::ubo, v.plan.opi = 2, v.plan.px = 8, v.plan.chunk = 4;
      v.kh = v.kw = 3, v.sw = 2, v.plan.seglen = 7 * 2 + 2 + 1, v.plan.wq = (4 * 27 + 6) / 4;
      v.plan.rowseg = true, v.plan.x_rows_contiguous = bias, v.act = act, v.bias = bias;
      v.affine = act == Activation::hardswish && bias;
      out.push_back(v);
      v.residual = act == Activation::relu;  // a residual Add after the epilogue, with and without bias
      if (v.residual) out.push_back(v);
      v.residual = false;
      v.x_quads = true, v.shift = 3, v.shuffle = bias ? 2 : 0;  // rows of quads, a transposed conv's shuffle
      out.push_back(v);
    }
  for (bool contig : {false, true})
    for (bool bias : {false, true}) {
      ConvDirectVariant v;  // tiles: 8 channels per invocation, 4 positions, chunks of 2 of 4 channels
      v.plan.layout = ConvDirectPlan::Layout::lanes, v.plan.tiles = true, v.plan.opi = 8, v.plan.px = 4;
      v.plan.ch = 2, v.cg = 4, v.kh = v.kw = 3, v.plan.seglen = 6, v.plan.x_rows_contiguous = contig, v.bias = bias;
      v.plan.prefetch = contig, v.plan.ks = contig ? 2 : 1;
      out.push_back(v);
      if (!bias) continue;
      v.act = Activation::hardswish, v.affine = true, v.sw = 2, v.dw = 2, v.plan.seglen = 11;  // the epilogue
      out.push_back(v);
      v.residual = true;  // a residual Add after it
      out.push_back(v);
      v.residual = false;
      v.out = v.x = v.w = v.b = DType::f16;
      out.push_back(v);
    }
  for (bool quads : {false, true}) {
    ConvDirectVariant v;  // quads: a 3 x 3 depthwise filter, strides 2, 2 rows per invocation
    v.plan.layout = ConvDirectPlan::Layout::lanes, v.plan.dwq = true, v.plan.py = 2, v.kh = v.kw = 3;
    v.sh = v.sw = 2, v.plan.x_rows_contiguous = quads, v.x_quads = quads, v.shift = 3, v.y_quads = quads;
    v.bias = quads;
    if (quads) v.dh = 2, v.dw = 2, v.act = Activation::hardswish, v.affine = true;  // dilations, the epilogue
    out.push_back(v);
    v.residual = true;  // a residual Add after it (quads stored and not)
    out.push_back(v);
    v.residual = false;
    v.out = v.x = v.w = v.b = DType::f16, v.y_quads = false;
    out.push_back(v);
  }
  ConvDirectVariant ints;  // an integer image: f32 results
  ints.x = DType::u8;
  out.push_back(ints);
  return out;
}

std::uint32_t ConvWinogradVariant::local() const {
  return stage == Stage::fused ? static_cast<std::uint32_t>((m + 2) * (m + 2) * fb.threads_per_t()) : kLocal;
}

Defines ConvWinogradVariant::defines() const {
  Defines d;
  d.value("WG_M", m);
  const bool x8in = x == DType::u8 || x == DType::i8;
  // The input stage's x: its dtype, quantization and quad loads (operand 1).
  const auto x_defines = [&] {
    d.flag("X8", x8in).flag("XQIN", xqin).flag("X_I8", (x8in ? x : x8) == DType::i8);
    if (x_quads) {
      d.flag("X_QUADS").value("X_SHIFT", x_shift);
      x8in ? d.operand(1, x, CT::i32, false) : d.operand_vec4(1, DType::f32, CT::f32, false);
    } else {
      d.operand(1, x, x8in ? CT::i32 : CT::f32, false);
    }
  };
  // The output stage's epilogue and y (operand 0).
  const auto y_defines = [&] {
    d.flag("HAS_BIAS", bias).flag("YQ", yq).flag("YDQ", yq && ydq).flag("Y_I8", yq && y8 == DType::i8);
    if (!yq && (act != Activation::none || affine))
      d.macro("ACT(x)", act_body, static_cast<int>(act) + (affine ? 256 : 0));
    const bool vec4 = y_vec4 && m == 4 && (!yq || ydq);
    d.flag("Y_VEC4", vec4);
    if (vec4)
      d.operand_vec4(0, DType::f32, CT::f32, true);
    else
      d.operand(0, yq && !ydq ? y8 : DType::f32, yq && !ydq ? CT::i32 : CT::f32, true);
  };
  if (stage == Stage::fused) {
    d.flag("WG_FUSED").value("FB_O", fb.o).value("FB_P", fb.p).value("FB_C", fb.c);
    d.value("FR_O", fb.ro).value("FR_P", fb.rp).flag("FB_PREFETCH", fb.prefetch);
    y_defines();
    x_defines();
    d.operand(2, DType::f32, CT::f32, false);
    if (bias) d.operand(3, DType::f32, CT::f32, false);
    // the workspace and the counters after the operands
    if (fb.split > 1)
      d.value("FB_SPLIT", fb.split).value("WS_BINDING", bias ? 4 : 3).value("CNT_BINDING", bias ? 5 : 4);
    return d;
  }
  if (stage == Stage::weight) {
    d.flag("WG_WEIGHT");
    d.operand(0, DType::f32, CT::f32, true).operand(1, DType::f32, CT::f32, false);
  } else if (stage == Stage::input) {
    d.flag("WG_INPUT");
    d.operand(0, DType::f32, CT::f32, true);
    x_defines();
  } else {
    d.flag("WG_OUTPUT");
    y_defines();
    d.operand(1, DType::f32, CT::f32, false);
    if (bias) d.operand(2, DType::f32, CT::f32, false);
  }
  return d;
}

std::vector<ConvWinogradVariant> ConvWinogradVariant::space() {
  std::vector<ConvWinogradVariant> out;
  for (std::int64_t m : {2, 4}) {
    out.push_back({Stage::weight, m});
    out.push_back({Stage::input, m});
    out.push_back({Stage::output, m});
    out.push_back({Stage::output, m, Activation::relu, false, true});
    out.push_back({Stage::output, m, Activation::clip, true, true});
  }
  for (bool quads : {false, true}) {
    ConvWinogradVariant v{Stage::input, 4};
    v.x_quads = quads, v.x_shift = quads ? 3 : 0;  // padding 1
    if (quads) out.push_back(v);                   // f32
    for (DType x : {DType::u8, DType::i8}) v.x = x, out.push_back(v);
    v.x = DType::f32, v.xqin = true;
    for (DType x8 : {DType::u8, DType::i8}) v.x8 = x8, out.push_back(v);
  }
  for (int shift : {0, 1, 2}) {  // the other paddings' lanes
    ConvWinogradVariant v{Stage::input, 4};
    v.x_quads = true, v.x_shift = shift;
    out.push_back(v);
  }
  ConvWinogradVariant y{Stage::output, 4};
  y.yq = true, y.bias = true;
  for (DType y8 : {DType::u8, DType::i8})
    for (bool ydq : {false, true}) y.y8 = y8, y.ydq = ydq, out.push_back(y);
  y.y_vec4 = true, y.ydq = true;
  for (DType y8 : {DType::u8, DType::i8}) y.y8 = y8, out.push_back(y);
  for (Activation act : {Activation::none, Activation::relu}) {
    ConvWinogradVariant f{Stage::output, 4, act, false, true};
    f.y_vec4 = true;
    out.push_back(f);
  }
  // fused: F(2x2) and F(4x4) at the default blocking and a small one, f32 (quads, vec4 stores, the
  // epilogue) and the QDQ forms (8-bit x, the fused input QuantizeLinear, 8-bit or dequantized y)
  for (std::int64_t m : {2, 4}) {
    ConvWinogradVariant f{Stage::fused, m, Activation::relu, false, true};
    f.fb = kWinogradFusedBlock;
    out.push_back(f);
    f.fb = {8, 4, 4, 4, 4, false, 1}, f.bias = false, f.act = Activation::clip, f.affine = true;
    out.push_back(f);
  }
  ConvWinogradVariant f{Stage::fused, 4, Activation::relu, false, true};
  f.fb = kWinogradFusedBlock, f.x_quads = true, f.x_shift = 3, f.y_vec4 = true;
  out.push_back(f);
  f.fb.split = 2;  // channels split over 2 workgroups
  out.push_back(f);
  f.fb.split = 1;
  f.act = Activation::none, f.yq = true;
  for (DType x : {DType::u8, DType::i8}) f.x = x, f.y8 = x, f.ydq = x == DType::i8, out.push_back(f);
  f.x = DType::f32, f.xqin = true, f.ydq = true;
  out.push_back(f);
  return out;
}

Defines ConvVariant::defines() const {
  Defines d;
  if (rows_t) {
    d.flag("ROWS_T").operand(0, DType::f32, CT::f32, true);
  } else if (im2col) {
    d.flag("IM2COL").flag("QUADS", quads);
    quads ? d.operand_vec4(0, DType::f32, CT::f32, true) : d.operand(0, DType::f32, CT::f32, true);
  } else {
    d.operand(0, DType::f32, CT::f32, true);
  }
  d.operand(1, in, CT::f32, false);
  return d;
}

std::vector<ConvVariant> ConvVariant::space() {
  std::vector<ConvVariant> out;
  for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::u8}) {
    out.push_back({true, false, dt});
    out.push_back({true, true, dt});
    out.push_back({false, false, dt});
  }
  ConvVariant rows;
  rows.im2col = false, rows.rows_t = true;
  out.push_back(rows);
  return out;
}

}  // namespace gltensor::detail
