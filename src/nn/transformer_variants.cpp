// The transformer kernels' Variants (transformer_variants.hpp): defines and variant spaces.
#include "nn/transformer_variants.hpp"

#include <string>

namespace gltensor::detail {

Defines RopeVariant::defines() const {
  Defines d;
  d.flag("INTERLEAVED", interleaved).flag("HAS_POS", has_pos).flag("POS_BATCH", pos_batch).flag("STRIDED", strided);
  d.operand(0, x, CT::f32, true).operand(1, x, CT::f32, false);
  if (strided) d.value("KD", kd);
  if (has_pos) d.operand(2, pos, CT::i32, false);
  return d;
}

std::vector<RopeVariant> RopeVariant::space() {
  std::vector<RopeVariant> out;
  for (DType dt : {DType::f32, DType::f16, DType::bf16})
    for (int f = 0; f < 16; ++f) {
      RopeVariant v;
      v.interleaved = f & 1, v.has_pos = f & 2, v.pos_batch = f & 4, v.strided = f & 8, v.x = dt;
      if (v.pos_batch && !v.has_pos) continue;
      out.push_back(v);
      if (v.strided) {
        v.kd = 3;
        out.push_back(v);
      }
    }
  return out;
}

namespace {
// glu.comp's ACT and DACT functions, by GluActivation (silu, gelu, gelu_tanh).
struct GluFunctions {
  const char *act, *dact;
};
constexpr GluFunctions kGluFunctions[] = {
    {"act_silu", "dact_silu"}, {"act_gelu", "dact_gelu"}, {"act_gelu_tanh", "dact_gelu_tanh"}};
}  // namespace

Defines GluVariant::defines() const {
  Defines d;
  const GluFunctions& f = kGluFunctions[static_cast<int>(act)];
  d.ident("ACT", f.act).ident("DACT", f.dact).flag("FUSED", fused);
  if (backward) {
    d.flag("BACKWARD").operand(0, out, CT::f32, true).operand(2, gy, CT::f32, false).operand(3, gate, CT::f32, false);
    if (!fused) d.operand(1, dup, CT::f32, true).operand(4, up, CT::f32, false);
  } else {
    d.operand(0, out, CT::f32, true).operand(1, gate, CT::f32, false);
    if (!fused) d.operand(2, up, CT::f32, false);
  }
  return d;
}

std::vector<GluVariant> GluVariant::space() {
  std::vector<GluVariant> out;
  for (GluActivation act : {GluActivation::silu, GluActivation::gelu, GluActivation::gelu_tanh})
    for (DType dt : {DType::f32, DType::f16, DType::bf16})
      for (int f = 0; f < 4; ++f) {
        GluVariant v;
        v.act = act, v.fused = f & 1, v.backward = f & 2, v.out = v.gate = v.up = v.gy = v.dup = dt;
        out.push_back(v);
      }
  return out;
}

Defines KvCacheVariant::defines() const {
  Defines d;
  d.ident("MODE", mode);
  const std::string m = mode;
  if (m == "kv_append") {
    d.operand(0, k_cache, CT::f32, true).operand(1, v_cache, CT::f32, true).operand(2, k, CT::f32, false);
    d.operand(3, v, CT::f32, false).operand(4, DType::i32, CT::i32, false);
  } else if (m == "kv_advance") {
    d.operand(0, DType::i32, CT::i32, true);
  } else {  // kv_positions
    d.operand(0, DType::i32, CT::i32, true).operand(1, DType::i32, CT::i32, false);
  }
  return d;
}

std::vector<KvCacheVariant> KvCacheVariant::space() {
  std::vector<KvCacheVariant> out;
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    KvCacheVariant v;
    v.k_cache = v.v_cache = v.k = v.v = dt;
    out.push_back(v);
    v.k = v.v = DType::f32;  // f32 rows into a 16-bit cache
    out.push_back(v);
  }
  for (const char* mode : {"kv_advance", "kv_positions"}) {
    KvCacheVariant v;
    v.mode = mode;
    out.push_back(v);
  }
  return out;
}

Defines KvAttentionVariant::defines() const {
  Defines d;
  d.ident("MODE", mode);
  if (std::string(mode) == "kv_partial") {
    d.value("CHUNK", chunk).value("EMAX", emax).flag("SINGLE", single);
    d.operand(0, out, CT::f32, true).operand(1, q, CT::f32, false).operand(2, k_cache, CT::f32, false);
    d.operand(3, v_cache, CT::f32, false).operand(4, DType::i32, CT::i32, false);
  } else {  // kv_combine
    d.operand(0, out, CT::f32, true).operand(1, DType::f32, CT::f32, false);
  }
  return d;
}

std::vector<KvAttentionVariant> KvAttentionVariant::space() {
  std::vector<KvAttentionVariant> out;
  for (DType dt : {DType::f32, DType::f16, DType::bf16})
    for (std::int64_t emax : {1, 64, 256})
      for (bool single : {false, true}) {
        KvAttentionVariant v;
        v.chunk = 256, v.emax = emax, v.single = single, v.q = v.k_cache = v.v_cache = dt;
        v.out = single ? dt : DType::f32;
        out.push_back(v);
      }
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    KvAttentionVariant v;
    v.mode = "kv_combine", v.out = dt;
    out.push_back(v);
  }
  return out;
}

Defines SampleVariant::defines() const {
  Defines d;
  d.flag("GREEDY", greedy).flag("TOP_K", top_k).flag("TOP_P", top_p).flag("HAS_COUNTER", has_counter);
  d.operand(0, DType::i32, CT::i32, true).operand(1, logits, CT::f32, false);
  if (has_counter) d.operand(2, DType::i32, CT::i32, false);
  return d;
}

std::vector<SampleVariant> SampleVariant::space() {
  std::vector<SampleVariant> out;
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    SampleVariant g;
    g.greedy = true, g.logits = dt;
    out.push_back(g);
    for (int f = 0; f < 8; ++f) {
      SampleVariant v;
      v.top_k = f & 1, v.top_p = f & 2, v.has_counter = f & 4, v.logits = dt;
      out.push_back(v);
    }
  }
  return out;
}

}  // namespace gltensor::detail
