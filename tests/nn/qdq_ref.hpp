// Helpers of the integer-kernel tests (tests/nn): 8-bit tensors from integers, random 8-bit
// values, ONNX QuantizeLinear in float64, and the requantized forms a QDQ convolution is tested in.
#pragma once
#include <algorithm>
#include <cmath>
#include <random>
#include <span>
#include <vector>

#include "grad_check.hpp"
#include "nn/quant_int.hpp"
#include "test_util.hpp"

namespace glt_test {

/// Integer values as a tensor of dtype d and shape s.
inline gltensor::Tensor ints(const std::vector<std::int32_t>& v, const gltensor::Shape& s, gltensor::DType d) {
  return gltensor::Tensor::from_host(device(), std::span<const std::int32_t>(v), s, d);
}

/// n random values over d's range (uint8 or int8).
inline std::vector<std::int32_t> q8_values(std::mt19937_64& rng, std::size_t n, gltensor::DType d) {
  return d == gltensor::DType::u8 ? uniform_int(rng, n, 0, 255) : uniform_int(rng, n, -128, 127);
}

/// The operands of an 8-bit convolution test: x [N, C, H, W] and w [O, C / groups, KH, KW] (xshape,
/// wshape) of dtypes xd and wd, random; x's zero point `zx` (random where `random_zx`), an undefined
/// tensor where !has_zx (0); `zw_count` zero points of w (1 or O; 0: undefined, 0), random. With
/// `extremes` every difference at its largest magnitude: x at its maximum, w at its minimum, the
/// zero points (those defined) at the other ends. As tensors and as float64 differences (xs, ws:
/// ref_conv's operands, whose sums are then exact).
struct QConvOperands {
  std::vector<std::int32_t> xv, wv, zwv;
  int zx = 0;
  gltensor::Tensor x, w, zxt, zw;
  HostT xs, ws;
};
inline QConvOperands qconv_operands(std::mt19937_64& rng, const gltensor::Shape& xshape, const gltensor::Shape& wshape,
                                    gltensor::DType xd, gltensor::DType wd, bool has_zx, bool random_zx, int zx,
                                    std::size_t zw_count, bool extremes) {
  const auto count = [](const gltensor::Shape& s) {
    std::size_t n = 1;
    for (auto d : s) n *= static_cast<std::size_t>(d);
    return n;
  };
  const auto lo = [](gltensor::DType d) { return d == gltensor::DType::u8 ? 0 : -128; };
  const auto hi = [](gltensor::DType d) { return d == gltensor::DType::u8 ? 255 : 127; };
  QConvOperands o;
  o.xv = q8_values(rng, count(xshape), xd);
  o.wv = q8_values(rng, count(wshape), wd);
  o.zx = !has_zx ? 0 : random_zx ? q8_values(rng, 1, xd)[0] : zx;
  o.zwv = zw_count ? q8_values(rng, zw_count, wd) : std::vector<std::int32_t>{0};
  if (extremes) {
    std::fill(o.xv.begin(), o.xv.end(), hi(xd));
    std::fill(o.wv.begin(), o.wv.end(), lo(wd));
    if (has_zx) o.zx = lo(xd);
    if (zw_count) std::fill(o.zwv.begin(), o.zwv.end(), hi(wd));
  }
  o.x = ints(o.xv, xshape, xd), o.w = ints(o.wv, wshape, wd);
  if (has_zx) o.zxt = ints({o.zx}, {1}, xd);
  if (zw_count) o.zw = ints(o.zwv, {static_cast<std::int64_t>(zw_count)}, wd);
  o.xs = {{o.xv.begin(), o.xv.end()}, xshape}, o.ws = {{o.wv.begin(), o.wv.end()}, wshape};
  for (auto& v : o.xs.v) v -= o.zx;
  const std::size_t taps = o.wv.size() / static_cast<std::size_t>(wshape[0]);
  for (std::size_t i = 0; i < o.ws.v.size(); ++i) o.ws.v[i] -= o.zwv[o.zwv.size() > 1 ? i / taps : 0];
  return o;
}

/// A QDQ convolution test's dequantization (IntDequant per output channel): x's scale sa, w's
/// scales (one per output channel where `per_channel`, else one) and a bias per channel, random;
/// `ref(sums, i)`: output i's float64 value from its exact sum (outputs [N, O, plane]).
struct QConvDequant {
  float sa = 1;
  std::vector<float> sb, bias;
  gltensor::detail::IntDequant dq;
  std::size_t O = 1, plane = 1;
  double ref(const std::vector<double>& sums, std::size_t i) const {
    const std::size_t oc = (i / plane) % O;
    return sums[i] * static_cast<double>(sa * sb[sb.size() > 1 ? oc : 0]) + bias[oc];
  }
};
inline QConvDequant qconv_dequant(std::mt19937_64& rng, float sa, std::int64_t O, bool per_channel, std::size_t plane) {
  QConvDequant d;
  d.sa = sa, d.O = static_cast<std::size_t>(O), d.plane = plane;
  d.sb = uniform(rng, per_channel ? d.O : 1, 0.002f, 0.02f);
  d.bias = uniform(rng, d.O, -1.f, 1.f);
  d.dq = {gltensor::full(device(), {1}, sa),
          gltensor::Tensor::from_host(device(), d.sb, {static_cast<std::int64_t>(d.sb.size())}),
          gltensor::Tensor::from_host(device(), d.bias, {O}), true};
  return d;
}

/// ONNX QuantizeLinear of one float64 value (round half to even, saturation, NaN -> zero point).
inline int quant_ref_f64(double v, double s, int z, int lo, int hi) {
  if (std::isnan(v / s)) return z;
  return static_cast<int>(std::clamp(std::nearbyint(v / s) + z, static_cast<double>(lo), static_cast<double>(hi)));
}

/// A requantized form of a QDQ convolution's output: uint8 (zero point 7) or int8 (-5), y_scale
/// 1/40, after none / Relu / Clip(-1.5, 2.25).
struct RequantForm {
  gltensor::DType out;
  gltensor::Epilogue act;
  int zy;
  float ys = 1.0f / 40;
  gltensor::detail::IntRequant requant() const {
    return {gltensor::full(device(), {1}, ys), ints({zy}, {1}, out), act, out};
  }
  /// The activation of a float64 value.
  double activate(double v) const {
    if (act.act == gltensor::Activation::relu) return std::max(v, 0.0);
    if (act.act == gltensor::Activation::clip) return std::clamp(v, -1.5, 2.25);
    return v;
  }
  /// QuantizeLinear of the activated float64 value.
  int quantize(double v) const {
    const gltensor::detail::QRange r = gltensor::detail::QRange::of(out);
    return quant_ref_f64(activate(v), ys, zy, r.lo, r.hi);
  }
  std::string name() const { return std::string(gltensor::dtype_name(out)) + " " + act.name(); }
};

/// Both output types after every activation (`every`), else uint8 after Relu.
inline std::vector<RequantForm> requant_forms(bool every) {
  using gltensor::Activation;
  using gltensor::DType;
  using gltensor::Epilogue;
  std::vector<RequantForm> forms;
  for (DType out : {DType::u8, DType::i8})
    for (const Epilogue& act : {Epilogue(), Epilogue(Activation::relu), Epilogue::clip(-1.5, 2.25)})
      if (every || (out == DType::u8 && act.act == Activation::relu))
        forms.push_back({out, act, out == DType::u8 ? 7 : -5});
  return forms;
}

/// The block-f32 integer matmul (imatmul.comp) at its smallest register tile, for the tests that
/// sweep its flags on software rasterizers: 4 x 4 outputs per invocation on 64 x 64 tiles (RB = CB
/// = 1; as GLTENSOR_MATMUL_KERNEL=gpu GLTENSOR_IMATMUL_TILE=64 GLTENSOR_IMATMUL_SWIZZLE=0 give it), A's
/// tile unswizzled and K in one slice as llvmpipe's plan (64 x 64 or 64 x 128 of 8 x 8, RB = CB = 2)
/// keeps them; the int32 totals in memory as that plan keeps them (`totals`: the caller's form
/// instead; 8 x 4 under K tiles of 8). The same operand types, zero points, row words, K blocks, splits and epilogues
/// (imatmul.comp is generic in RB and CB) at under half the compile a program on llvmpipe
/// (bench/RESULTS.md, suite14 and suite15); the callers keep llvmpipe's 8 x 8 in one case each.
inline void imatmul_smallest_tile(gltensor::detail::Settings& s,
                                  gltensor::detail::IMatmulSetting totals = gltensor::detail::IMatmulSetting::mem) {
  const gltensor::detail::Settings defaults;
  s.matmul_kernel = gltensor::detail::MatmulKernelSetting::gpu;
  s.imatmul = totals;
  // K tiles of 8 (GLTENSOR_IMATMUL_BK=8) need every invocation to stage an A and a B word per tile:
  // 8 x 4 per invocation (128 invocations; 4 x 4's 256 would take K tiles of 16)
  s.imatmul_tile = 64, s.imatmul_rb = s.imatmul_bk == 8 ? 2 : defaults.imatmul_rb;
  s.imatmul_blocks = defaults.imatmul_blocks;
  s.imatmul_slices = defaults.imatmul_slices, s.imatmul_swizzle = 0;
  // the implicit GEMM where the plan would take it: GLTENSOR_MATMUL_KERNEL=gpu would open the GPUs' warp path
  if (s.iconv_gemm == gltensor::detail::IConvGemmSetting::choose)
    s.iconv_gemm = gltensor::detail::IConvGemmSetting::implicit;
}

/// imatmul_smallest_tile for a scope, on software rasterizers only (GPUs keep their plans).
class ScopedSmallestTile {
 public:
  ScopedSmallestTile() {
    if (device().adapter().software) imatmul_smallest_tile(gltensor::detail::settings());
  }

 private:
  ScopedSettings s_;
};

/// f() at the integer matmul's tiles the device's plan gives (llvmpipe: 8 x 8 per invocation), the
/// form of the totals in scope kept: the one case of llvmpipe's plan under ScopedSmallestTile.
template <typename F>
void imatmul_at_plan(F f) {
  ScopedSettings s;
  const gltensor::detail::Settings defaults;
  s->matmul_kernel = defaults.matmul_kernel, s->imatmul_tile = defaults.imatmul_tile;
  s->imatmul_rb = defaults.imatmul_rb, s->imatmul_swizzle = defaults.imatmul_swizzle;
  f();
}

}  // namespace glt_test
