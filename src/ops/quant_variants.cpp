// Weight-only quantization's Variants (quant_variants.hpp): defines and variant spaces.
#include "ops/quant_variants.hpp"

#include "ops/quant_plan.hpp"

namespace gltensor::detail {

namespace {
const char* format_flag(QuantFormat f) { return f == QuantFormat::int4 ? "Q4" : "Q8"; }
constexpr QuantFormat kFormats[] = {QuantFormat::int8, QuantFormat::int4};
}  // namespace

Defines QuantVariant::defines() const {
  Defines d;
  // quant.comp tests QUANTIZE (else dequantize) and Q4 (else int8)
  d.flag("QUANTIZE", quantize).flag("Q4", format == QuantFormat::int4);
  if (quantize)
    d.operand(1, DType::f16, CT::f32, true).operand(2, w, CT::f32, false);
  else
    d.operand(0, DType::f32, CT::f32, true);
  return d;
}

std::vector<QuantVariant> QuantVariant::space() {
  std::vector<QuantVariant> out;
  for (QuantFormat f : kFormats) {
    for (DType w : {DType::f32, DType::f16, DType::bf16}) out.push_back({f, true, w});
    out.push_back({f, false, DType::f32});
  }
  return out;
}

Defines QLinearVariant::defines() const {
  Defines d;
  d.flag(format_flag(format)).flag("GEMV", gemv).flag("SERIAL", serial).flag("X_VEC4", x_vec4).flag("HAS_BIAS", bias);
  d.flag("WORDS", words).flag("MANTISSA", mantissa).flag("PAIRS", pairs);
  if (gemv)
    d.uvalue("MT", static_cast<std::uint64_t>(mt))
        .uvalue("ROWS", static_cast<std::uint64_t>(rows))
        .uvalue("TPR", static_cast<std::uint64_t>(tpr));
  if (words) d.uvalue("UNROLL", static_cast<std::uint64_t>(unroll));
  return d;
}

std::vector<QLinearVariant> QLinearVariant::space() {
  std::vector<QLinearVariant> out;
  for (QuantFormat f : kFormats)
    for (bool bias : {false, true}) {
      QLinearVariant gemm;
      gemm.format = f, gemm.gemv = false, gemm.bias = bias;
      out.push_back(gemm);
      for (std::int64_t mt : {1, 2, 4})
        for (bool serial : {false, true})
          for (bool x_vec4 : {false, true}) {
            QLinearVariant v;
            v.format = f, v.serial = serial, v.x_vec4 = x_vec4, v.bias = bias, v.mt = mt;
            v.rows = serial ? 1 : kQLinearRows;
            v.tpr = serial ? 8 : 64;
            out.push_back(v);
          }
      for (std::int64_t mt : {1, 2, 4})  // the words GEMV at its default shape
        for (bool x_vec4 : {false, true})
          for (int form : {0, 1, 2}) {  // exact, MANTISSA, PAIRS (the last two int4 only)
            if (form > 0 && f != QuantFormat::int4) continue;
            QLinearVariant v;
            v.format = f, v.words = true, v.x_vec4 = x_vec4, v.bias = bias, v.mt = mt;
            v.mantissa = form == 1, v.pairs = form == 2;
            v.rows = kQLinearWordRows, v.unroll = kQLinearWordUnroll, v.tpr = 64;
            out.push_back(v);
          }
    }
  return out;
}

}  // namespace gltensor::detail
