// The fused attention kernel's tiling and loop length (attention_plan.hpp).
#include "nn/attention_plan.hpp"

#include <algorithm>
#include <array>

#include "runtime/int_math.hpp"

namespace gltensor::detail {

std::int64_t attention_shared_bytes(const AttentionTiles& t) {
  const std::int64_t bkv = 32 * t.kq;
  return 4 * (t.bq * 64 + 2 * bkv * 64 + (t.kq == 1 ? bkv * t.bq : 0) + (t.subgroup ? 0 : 2 * t.bq * 8));
}

AttentionTiles plan_attention_tiles(const AttentionDevice& dev, const Settings& settings) {
  const bool bq32 = settings.attention_bq == 32 || settings.attention_bq == 16, keys32 = settings.attention_keys == 32;
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

int attention_head_quads(std::int64_t E, std::int64_t Ev) {
  const std::int64_t q = (std::max(E, Ev) + 3) / 4;
  return q <= 4 ? 4 : q <= 8 ? 8 : 16;
}

AttentionTiles narrow_attention_tiles(AttentionTiles t, const AttentionDevice& dev, const Settings& settings,
                                      std::int64_t E, std::int64_t Ev) {
  if (t.bq == 0) return t;
  t.dql = attention_head_quads(E, Ev);
  const std::int64_t cap = settings.attention_bq > 0 ? std::min<std::int64_t>(settings.attention_bq, t.bq) : t.bq;
  if (!t.subgroup) {
    if (cap == 16 && t.kq * t.dql <= 8) t.bq = 16;
    return t;
  }
  for (const std::int64_t bq : {64, 32, 16}) {
    const bool fits = bq <= cap && (2 * bq) % dev.subgroup_size == 0 && 32 * t.kq * t.dql / (2 * bq) <= 8;
    if (!fits) continue;
    t.bq = bq;
    break;
  }
  return t;
}

std::uint64_t attention_loops(const AttentionTiles& t, std::int64_t S, std::size_t bd, std::int64_t combine,
                              std::int64_t /*Ev*/) {
  const std::uint64_t bkv = 32u * static_cast<std::uint64_t>(t.kq), local = 2u * static_cast<std::uint64_t>(t.bq);
  const std::uint64_t dql = static_cast<std::uint64_t>(t.dql);
  const std::uint64_t nld = bkv * dql / local, nlq = static_cast<std::uint64_t>(t.bq) * dql / local;
  // Each loop counts its trips and its exit test. Per tile: the tile loop, the K/V stores, the
  // next loads (4 lanes each of K and V without quad loads), the score init, 16 head-dim quads,
  // the row max and sum exchanges (shared memory: 4 writes and 8 reads each), the BKV-key
  // products. Before: the batch dims, the Q loads and stores, the output init, the first K/V
  // loads, the tile loop's exit.
  const std::uint64_t per_tile =
      1 + (nld + 1) + (nld + 1 + 10 * nld) + (4 * static_cast<std::uint64_t>(t.kq) + 1) + (dql + 1) + 28 + (bkv + 1);
  const std::uint64_t tiles = (static_cast<std::uint64_t>(S) + bkv - 1) / bkv;
  // COMBINE: the row's two passes over the chunks, then 8 quads per invocation: their init, the
  // chunks around the 8 quads, the stores.
  const auto nc = static_cast<std::uint64_t>(combine);
  const std::uint64_t merge = combine > 0 ? 2 * (nc + 1) + 9 + (nc + 1) + nc * 9 + 9 : 0;
  return tiles * per_tile + (bd + 1) + (nlq + 1 + 5 * nlq) + (nlq + 1) + 9 + (nld + 1 + 10 * nld) + 1 + 16 + merge;
}

std::int64_t lanes_shared_bytes(const LaneTiles& t) {
  const std::int64_t kv = 2 * std::int64_t{t.lanes} * t.keys * t.dq, combine = std::int64_t{t.local} * t.dq;
  return 16 * std::max(kv, combine) + 8 * std::int64_t{t.local};
}

std::uint64_t attention_lanes_loops(const LaneTiles& t, const LaneProblem& p) {
  const auto W = static_cast<std::uint64_t>(t.local), G = static_cast<std::uint64_t>(t.lanes),
             kpl = static_cast<std::uint64_t>(t.keys), dq = static_cast<std::uint64_t>(t.dq);
  const std::uint64_t tk = G * kpl, nl = tk * dq / W, rows = W / G;
  const std::uint64_t ev = static_cast<std::uint64_t>(p.Ev);
  // Each loop counts its trips and its exit test (a quad load without quad arrays: 4 lanes).
  const std::uint64_t loads = nl + 1 + 10 * nl;
  // per tile: the tile loop, the K / V stores, the next loads, the scores (KPL keys of dq quads),
  // the rescale, the probabilities times V
  const std::uint64_t per_tile =
      1 + (nl + 1) + loads + (kpl + 1) + kpl * (dq + 1) + (dq + 1) + (kpl + 1) + kpl * (dq + 1);
  const std::uint64_t tiles = (static_cast<std::uint64_t>(p.S) + tk - 1) / tk;
  // before: the batch dims, the first loads, q (4 lanes a quad) and o; after: the row maximum,
  // the combine's stores, the output span (G lanes summed per element)
  const std::uint64_t out = (rows * ev + W - 1) / W;
  return (p.bd + 1) + loads + (dq + 1 + 5 * dq) + (tiles + 1) + tiles * per_tile + (G + 1) + (dq + 1) + (out + 1) +
         out * (G + 1);
}

LaneTiles plan_attention_lanes(const LaneProblem& p, const AttentionDevice& dev, bool software,
                               std::uint64_t loop_limit, const Settings& settings) {
  if (settings.attention_lanes == 0 || p.E < 1 || p.Ev < 1 || p.E > 64 || p.Ev > 64 || p.L < 1 || p.S < 1 || p.nb < 1)
    return {};
  auto groups = [&](std::int64_t rows) { return p.nb * ((p.L + rows - 1) / rows); };
  const bool forced =
      settings.attention_lanes > 0 || settings.attention_lane_width > 0 || settings.attention_lane_keys > 0;
  const int dq = attention_head_quads(p.E, p.Ev);
  if (!forced && (software || groups(64) >= kLanesBelowGroups || dq > 4)) return {};
  for (const int local : {128, 64}) {
    int rows = 4;
    for (const int r : {16, 8, 4})
      if (groups(r) >= kLanesBelowGroups) {
        rows = r;
        break;
      }
    int lanes = settings.attention_lane_width > 0 ? settings.attention_lane_width : local / rows;
    if (lanes > local) lanes = local;
    // GPUs, unforced: 2 keys a lane where the key tiles stay at most kLanesFewKeyTiles (SVTR's 168 keys in 6
    // tiles of 32: 15.2 us of GPU time on the H200 against 16.7 with 8 keys a lane), else 8 first.
    const bool two = !forced && !software && ceil_div(p.S, std::int64_t{2} * lanes) <= kLanesFewKeyTiles;
    const std::array<int, 4> order = two ? std::array<int, 4>{2, 8, 4, 1} : std::array<int, 4>{8, 4, 2, 1};
    for (const int keys : order) {
      if (settings.attention_lane_keys > 0 && keys != settings.attention_lane_keys) continue;
      const LaneTiles t{local, lanes, keys, dq};
      if (lanes * keys * dq < local) continue;  // each invocation loads at least one quad of a tile
      if (lanes_shared_bytes(t) > dev.max_shared_memory) continue;
      if (loop_limit != 0 && attention_lanes_loops(t, p) > loop_limit) continue;
      return t;
    }
  }
  return {};
}

std::int64_t block_shared_bytes(const BlockTiles& t) {
  const std::int64_t rg = t.rows / 4;
  return 16 * (std::max<std::int64_t>(t.sk * rg, 4 * std::int64_t{t.local}) + std::int64_t{t.rows} * t.dq + t.local +
               10 * rg);
}

std::uint64_t attention_block_loops(const BlockTiles& t, const LaneProblem& p) {
  const auto W = static_cast<std::uint64_t>(t.local), dq = static_cast<std::uint64_t>(t.dq),
             rg = static_cast<std::uint64_t>(t.rows / 4), S = static_cast<std::uint64_t>(p.S);
  const std::uint64_t kp = W / (dq * rg), ni = W / rg, ev = static_cast<std::uint64_t>(p.Ev);
  // Each loop counts its trips and its exit test (a quad load without quad arrays: 4 lanes, 5).
  const std::uint64_t q = ceil_div(static_cast<std::uint64_t>(t.rows) * dq, W), loads = dq + 1 + 5 * dq;
  const std::uint64_t items = ceil_div(rg * S, W), keys2 = ceil_div(S, ni), keys3 = ceil_div(S, kp);
  const std::uint64_t out = ceil_div(static_cast<std::uint64_t>(t.rows) * ev, W);
  // phase 1: the first k row, then per item the copy, the next row's loads and the products
  const std::uint64_t phase1 = loads + (items + 1) + items * ((dq + 1) + loads + (dq + 1));
  // phase 3: 8 keys a trip (8 loads, 8 products), then at most one trip of 4, then one key a trip
  const std::uint64_t t8 = keys3 / 8, phase3 = (t8 + 1) + t8 * (2 * 9 + 8 * 5) + 2 + 4 * 5 + (3 + 1) + 3 * 5;
  return (p.bd + 1) + (q + 1 + 5 * q) + phase1 + 2 * (keys2 + 1) + 2 * (ni / 8 + 1 + 9) + phase3 +
         (out + 1 + out * (kp + 1));
}

BlockTiles plan_attention_block(const LaneProblem& p, const AttentionDevice& dev, bool software,
                                std::uint64_t loop_limit, const Settings& settings) {
  if (settings.attention_block == 0 || p.E < 1 || p.Ev < 1 || p.E > 64 || p.Ev > 64 || p.L < 1 || p.S < 1 || p.nb < 1)
    return {};
  const bool forced =
      settings.attention_block > 0 || settings.attention_block_rows > 0 || settings.attention_block_local > 0;
  const int dq = attention_head_quads(p.E, p.Ev);
  const int max_local = dev.max_invocations > 0 ? dev.max_invocations : 128;
  BlockTiles t;
  t.rows = settings.attention_block_rows > 0 ? settings.attention_block_rows : 8;
  // unforced: only what the H200 measured faster than attention.comp (8 x 300 x 64: 16 head-dim quads, 257 to 512
  // keys, few row blocks; review39's R5)
  if (!forced && (software || p.nb * ceil_div(p.L, std::int64_t{64}) >= kSplitBelowGroups || dq != 16 || p.S <= 256 ||
                  p.S > 512 || p.L < t.rows))
    return {};
  const std::int64_t groups = p.nb * ceil_div(p.L, std::int64_t{t.rows});
  if (!forced && p.half &&  // 16-bit storage: only the measured faster part (kBlockHalf*)
      (groups >= kBlockHalfBelowGroups || (p.L < kBlockHalfRows && groups < kBlockHalfManyGroups && !p.causal)))
    return {};
  if (!forced && !p.half && p.causal && groups >= kBlockHalfBelowGroups && p.L > kBlockHalfRows &&
      std::max(p.E, p.Ev) > kBlockCausalHeadDim && p.S > p.L)  // f32, causal: (attention_plan.hpp)
    return {};
  t.dq = dq;
  int local = settings.attention_block_local;
  if (local == 0) {
    local = 256;
    while (local > max_local && local > 64) local /= 2;
  }
  t.local = std::max(local, t.rows / 4 * dq);
  if (t.local > max_local || t.local % (2 * t.rows) != 0) return {};  // phase 2's 8 partials per row group
  // sk: S rounded up to a power of two (at least 64), at most the largest multiple of 32 that fits
  std::int64_t sk = 64;
  while (sk < p.S) sk *= 2;
  BlockTiles fit = t;
  fit.sk = ceil_div(p.S, std::int64_t{32}) * 32;
  if (block_shared_bytes(fit) > dev.max_shared_memory) return {};
  t.sk = sk;
  while (block_shared_bytes(t) > dev.max_shared_memory) t.sk -= 32;
  if (loop_limit != 0 && attention_block_loops(t, p) > loop_limit) return {};
  return t;
}

bool attention_combine_fits(const AttentionTiles& t, const SplitProblem& p, std::int64_t chunks,
                            const Settings& settings) {
  if (settings.attention_combine_dispatch || t.bq <= 0 || chunks < 2 || p.ssbo_bindings < 9) return false;
  const std::int64_t row_blocks = (p.L + t.bq - 1) / t.bq;
  return (2 * chunks + 1) * t.bq <= 32 * std::int64_t{t.kq} * 64 && p.nb * row_blocks <= kCombineSlots;
}

AttentionSplit plan_attention_split(const AttentionTiles& t, const SplitProblem& p, const Settings& settings) {
  if (t.bq <= 0 || settings.attention_split == 0 || p.L < 1 || p.S < 1 || p.nb < 1) return {};
  const std::int64_t bkv = 32 * std::int64_t{t.kq}, tiles = (p.S + bkv - 1) / bkv;
  auto split = [&](std::int64_t per) -> AttentionSplit {
    if (per >= tiles) return {};
    return {per * bkv, attention_combine_fits(t, p, (tiles + per - 1) / per, settings)};
  };
  if (settings.attention_split > 0) return split(settings.attention_split);
  const std::int64_t groups = p.nb * ((p.L + t.bq - 1) / t.bq);
  if (p.software || groups >= kSplitBelowGroups || tiles < 2) return {};
  // chunks: those that give kSplitBelowGroups workgroups, at most what the merge's scratch holds
  const std::int64_t want = std::min((kSplitBelowGroups + groups - 1) / groups, (bkv * 64 / t.bq - 1) / 2);
  const AttentionSplit s = split(std::max<std::int64_t>(1, (tiles + want - 1) / want));
  return s.combine ? s : AttentionSplit{};
}

namespace {
std::uint64_t quads(std::int64_t n) { return static_cast<std::uint64_t>((n + 3) / 4); }
}  // namespace

std::int64_t flash_shared_bytes(std::int64_t E, std::int64_t Ev, const FlashTiles& t, bool dkv) {
  const auto q4 = static_cast<std::int64_t>(quads(E) + quads(Ev));
  return dkv ? t.bqt * (16 * q4 + 8) : 16 * t.bkv * q4;
}

FlashTiles plan_flash_tiles(std::int64_t E, std::int64_t Ev, int max_shared_memory, const Settings& settings) {
  if (E < 1 || Ev < 1 || E > kFlashMaxHeadDim || Ev > kFlashMaxHeadDim) return {};
  FlashTiles t{settings.attention_bq == 32 || settings.attention_bq == 16 ? 32 : 64, 0, 64, 0};
  for (const std::int64_t n : {32, 16, 8, 4}) {
    if (settings.attention_tile > 0 && n > settings.attention_tile) continue;
    FlashTiles c = t;
    c.bkv = c.bqt = n;
    if (t.bkv == 0 && flash_shared_bytes(E, Ev, c, false) <= max_shared_memory) t.bkv = n;
    if (t.bqt == 0 && flash_shared_bytes(E, Ev, c, true) <= max_shared_memory) t.bqt = n;
  }
  if (t.bkv == 0 || t.bqt == 0) return {};
  return t;
}

std::int64_t tiled_v_keys(std::int64_t Ev) {
  if (Ev < 1 || Ev > kFlashMaxHeadDim) return 0;
  for (const std::int64_t vk : {64, 32, 16})
    if (vk * static_cast<std::int64_t>(quads(Ev)) <= 1024) return vk;
  return 0;
}

namespace {
// attention_tiled.comp's loops in `mode` over n keys (tiled, tiled_dq) or query rows (tiled_dkv),
// every one counted (trips + 1 for the exit test, unrolled or not).
std::uint64_t tiled_loops(FlashMode mode, std::int64_t E, std::int64_t Ev, std::int64_t n, std::size_t bd,
                          bool dropout) {
  const std::uint64_t dq4 = quads(E), dv4 = quads(Ev), nqq = ceil_div(dq4, 16), nvq = ceil_div(dv4, 16);
  const std::uint64_t vkq = static_cast<std::uint64_t>(tiled_v_keys(E)),
                      vk = static_cast<std::uint64_t>(tiled_v_keys(Ev));
  const std::uint64_t dk = kTiledDk, blk = kTiledKeys;
  // a GEMM over m head-dim elements: chunks of DK, each DK / 16 load passes and DK products
  auto gemm = [&](std::int64_t m) {
    const std::uint64_t nd = ceil_div(static_cast<std::uint64_t>(m), dk);
    return (nd + 1) + nd * ((dk / 16 + 1) + (dk + 1));
  };
  // an accumulation over a block's 64 rows in chunks of ch: loads, then ch rows of nq quads
  auto acc = [&](std::uint64_t ch, std::uint64_t d4, std::uint64_t nq) {
    return (blk / ch + 1) +
           (blk / ch) * ((ceil_div(ch * d4, static_cast<std::uint64_t>(kTiledLocal)) + 1) + (ch + 1) + ch * (nq + 1));
  };
  const std::uint64_t drop = dropout ? 16 * 11 : 0;  // 16 Philox draws per block
  std::uint64_t per_block = 0, init = 0, fin = 0;
  if (mode == FlashMode::tiled) {
    // S, the maxima and sums (16 each), the rescale, O += P V
    per_block = gemm(E) + 17 + 17 + (nvq + 1) + acc(vk, dv4, nvq) + drop;
    init = 4 * nvq + 1;
    fin = 5 + 4 * (nvq + 1);
  } else if (mode == FlashMode::tiled_dq) {
    per_block = gemm(E) + gemm(Ev) + acc(vkq, dq4, nqq) + drop;
    init = (4 * nqq + 1) + 5;
    fin = 5 + 4 * (nqq + 1);
  } else {  // tiled_dkv: S^T, dP^T, the rows' statistics, dV, dK
    per_block = gemm(E) + gemm(Ev) + 5 + acc(vk, dv4, nvq) + acc(vkq, dq4, nqq) + drop;
    init = (4 * nqq + 1) + (4 * nvq + 1);
    fin = 5 + 4 * (nqq + 1) + 4 * (nvq + 1);
  }
  const std::uint64_t blocks = ceil_div(static_cast<std::uint64_t>(n), blk);
  return (bd + 1) + init + (blocks + 1) + blocks * per_block + fin + 8;
}
}  // namespace

std::uint64_t flash_loops(FlashMode mode, const FlashTiles& t, std::int64_t E, std::int64_t Ev, std::int64_t n,
                          std::size_t bd, bool dropout) {
  if (mode == FlashMode::tiled || mode == FlashMode::tiled_dkv || mode == FlashMode::tiled_dq)
    return tiled_loops(mode, E, Ev, n, bd, dropout);
  const std::uint64_t q4 = quads(E), v4 = quads(Ev), drop = dropout ? 11 : 0;
  const std::uint64_t batch = bd + 1;
  if (mode == FlashMode::dkv) {
    const auto bqt = static_cast<std::uint64_t>(t.bqt), keys = static_cast<std::uint64_t>(t.keys);
    // per query tile: the tile loop, the q / dO / stats loads, per row the score, dO and dK loops
    const std::uint64_t per_tile = 1 + (ceil_div(bqt * q4, keys) + 1) + (ceil_div(bqt * v4, keys) + 1) +
                                   (ceil_div(bqt, keys) + 1) + bqt * ((q4 + 1) + (v4 + 1) + (q4 + 1) + drop) + 1;
    const std::uint64_t tiles = ceil_div(static_cast<std::uint64_t>(n), bqt);
    return batch + 2 * (q4 + 1) + 2 * (v4 + 1) + 1 + tiles * per_tile + static_cast<std::uint64_t>(E + Ev) + 2 + 8;
  }
  const auto bkv = static_cast<std::uint64_t>(t.bkv), rows = static_cast<std::uint64_t>(t.rows);
  const std::uint64_t loads = (ceil_div(bkv * q4, rows) + 1) + (ceil_div(bkv * v4, rows) + 1);
  const std::uint64_t per_tile = mode == FlashMode::forward
                                     // scores (with the head-dim loop), rescale, the probability-times-V products
                                     ? 1 + loads + bkv * (q4 + 1) + 1 + (v4 + 1) + bkv * (v4 + 1 + drop) + 1
                                     // scores, dO . v, dQ
                                     : 1 + loads + bkv * ((q4 + 1) + (v4 + 1) + (q4 + 1) + drop) + 1;
  const std::uint64_t tiles = ceil_div(static_cast<std::uint64_t>(n), bkv);
  return batch + (q4 + 1) + 2 * (v4 + 1) + (q4 + 1) + 1 + tiles * per_tile + static_cast<std::uint64_t>(E + Ev) + 2 + 8;
}

std::int64_t flash_chunk(FlashMode mode, const FlashTiles& t, std::int64_t E, std::int64_t Ev, std::int64_t n,
                         std::size_t bd, bool dropout, std::uint64_t limit) {
  if (limit == 0 || flash_loops(mode, t, E, Ev, n, bd, dropout) <= limit) return 0;
  const bool tiled = mode == FlashMode::tiled || mode == FlashMode::tiled_dkv || mode == FlashMode::tiled_dq;
  const std::int64_t tile = tiled ? kTiledKeys : mode == FlashMode::dkv ? t.bqt : t.bkv;
  if (flash_loops(mode, t, E, Ev, tile, bd, dropout) > limit) return -1;
  std::int64_t lo = 1, hi = (n + tile - 1) / tile;  // tiles per chunk: lo fits, hi does not
  while (hi - lo > 1) {
    const std::int64_t mid = (lo + hi) / 2;
    (flash_loops(mode, t, E, Ev, mid * tile, bd, dropout) <= limit ? lo : hi) = mid;
  }
  return lo * tile;
}

}  // namespace gltensor::detail
