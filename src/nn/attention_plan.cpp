// The fused attention kernel's tiling and loop length (attention_plan.hpp).
#include "nn/attention_plan.hpp"

namespace gltensor::detail {

std::int64_t attention_shared_bytes(const AttentionTiles& t) {
  const std::int64_t bkv = 32 * t.kq;
  return 4 * (t.bq * 64 + 2 * bkv * 64 + (t.kq == 1 ? bkv * t.bq : 0) + (t.subgroup ? 0 : 2 * t.bq * 8));
}

AttentionTiles plan_attention_tiles(const AttentionDevice& dev, const Settings& settings) {
  const bool bq32 = settings.attention_bq == 32, keys32 = settings.attention_keys == 32;
  const int sg = dev.subgroup_size;
  for (const std::int64_t bq : {64, 32}) {
    if (bq == 64 && bq32) continue;
    const bool subgroup = dev.shuffle && sg >= 8 && sg % 8 == 0 && (2 * bq) % sg == 0;
    for (const int kq : {2, 1}) {
      if (kq == 2 && (!subgroup || keys32 || bq != 64)) continue;
      const AttentionTiles t{bq, kq, subgroup};
      if (attention_shared_bytes(t) <= dev.max_shared_memory) return t;
    }
  }
  return {0, 1, false};
}

std::uint64_t attention_loops(const AttentionTiles& t, std::int64_t S, std::size_t bd) {
  const std::uint64_t bkv = 32u * static_cast<std::uint64_t>(t.kq), local = 2u * static_cast<std::uint64_t>(t.bq);
  const std::uint64_t nld = bkv * 64 / 4 / local, nlq = static_cast<std::uint64_t>(t.bq) * 64 / 4 / local;
  const std::uint64_t per_tile = 1 + 10 * nld + 4 * static_cast<std::uint64_t>(t.kq) + 16 + 24 + bkv;
  const std::uint64_t tiles = (static_cast<std::uint64_t>(S) + bkv - 1) / bkv;
  return tiles * per_tile + 10 * nlq + bd + 32;
}

}  // namespace gltensor::detail
