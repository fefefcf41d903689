// KV-cache decoding (src/nn/kv_cache.cpp, glsl/nn/kv_cache.comp, glsl/nn/kv_attention.comp)
// against float64 references: a chunked prefill and decode steps over a cache equal the causal
// attention over all the tokens; sequences of different lengths in one batch; grouped-query
// heads; the keys split into chunks under a lowered loop limit and past 65535 keys; garbage past
// a sequence's length never read; NaN queries; the lengths buffer advanced on the GPU; errors
// (max_len overflow on the host and on the GPU, shapes, dtypes), the device usable after.
// Tolerance: |got - ref| <= 2e-5 + 2e-5 |ref| (f32 dot products over <= 64 dims, softmax sums).
#include <algorithm>
#include <cmath>
#include <limits>

#include "test_util.hpp"

using namespace gltensor;
using namespace glt_test;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// A batch of sequences on the host: keys and values of every position written so far.
struct HostSeqs {
  std::int64_t B, Hkv, M, E, Ev;
  std::vector<double> k, v;  // [B, Hkv, M, E] / [B, Hkv, M, Ev]
  std::vector<std::int32_t> len;
};

// Writes k [B, Hkv, T, E], v into the host copy at each sequence's length (as kv_cache_append).
void host_append(HostSeqs& h, const std::vector<float>& k, const std::vector<float>& v, std::int64_t T) {
  for (std::int64_t b = 0; b < h.B; ++b)
    for (std::int64_t g = 0; g < h.Hkv; ++g)
      for (std::int64_t t = 0; t < T; ++t) {
        const std::int64_t pos = h.len[b] + t, row = (b * h.Hkv + g) * h.M + pos, src = (b * h.Hkv + g) * T + t;
        for (std::int64_t e = 0; e < h.E; ++e) h.k[row * h.E + e] = k[src * h.E + e];
        for (std::int64_t e = 0; e < h.Ev; ++e) h.v[row * h.Ev + e] = v[src * h.Ev + e];
      }
}

// Causal attention of q [B, Hq, T, E] (the tokens at len[b] .. len[b] + T - 1) over the host
// keys 0 .. len[b] + t, float64.
std::vector<double> host_attention(const HostSeqs& h, const std::vector<float>& q, std::int64_t Hq, std::int64_t T) {
  std::vector<double> out(static_cast<std::size_t>(h.B * Hq * T * h.Ev));
  const double scale = 1 / std::sqrt(static_cast<double>(h.E));
  for (std::int64_t b = 0; b < h.B; ++b)
    for (std::int64_t hh = 0; hh < Hq; ++hh)
      for (std::int64_t t = 0; t < T; ++t) {
        const std::int64_t g = hh / (Hq / h.Hkv), n = h.len[b] + t + 1;
        const float* qr = &q[((b * Hq + hh) * T + t) * h.E];
        std::vector<double> s(n);
        double mx = -INFINITY, sum = 0;
        for (std::int64_t j = 0; j < n; ++j) {
          double x = 0;
          for (std::int64_t e = 0; e < h.E; ++e) x += qr[e] * h.k[((b * h.Hkv + g) * h.M + j) * h.E + e];
          s[j] = x * scale;
          mx = std::max(mx, s[j]);
        }
        for (auto& x : s) sum += (x = std::exp(x - mx));
        for (std::int64_t e = 0; e < h.Ev; ++e) {
          double o = 0;
          for (std::int64_t j = 0; j < n; ++j) o += s[j] * h.v[((b * h.Hkv + g) * h.M + j) * h.Ev + e];
          out[((b * Hq + hh) * T + t) * h.Ev + e] = o / sum;
        }
      }
  return out;
}

Tensor up(const std::vector<float>& v, const Shape& s) { return Tensor::from_host(device(), v, s); }

// Runs chunks of T_i tokens (a prefill chunk, then decode steps) through one cache layer and
// compares every step's attention with the float64 reference. The cache starts at `start`
// lengths, its slots past them filled with garbage (1e30) that must never be read.
void run_steps(std::mt19937_64& rng, std::int64_t B, std::int64_t Hq, std::int64_t Hkv, std::int64_t M, std::int64_t E,
               std::int64_t Ev, const std::vector<std::int32_t>& start, const std::vector<std::int64_t>& chunks) {
  HostSeqs h{B, Hkv, M, E, Ev, {}, {}, start};
  h.k = to_double(uniform(rng, static_cast<std::size_t>(B * Hkv * M * E)));
  h.v = to_double(uniform(rng, static_cast<std::size_t>(B * Hkv * M * Ev)));
  std::vector<float> kc(h.k.begin(), h.k.end()), vc(h.v.begin(), h.v.end());
  for (std::int64_t b = 0; b < B; ++b)  // garbage past each sequence's prefix
    for (std::int64_t g = 0; g < Hkv; ++g)
      for (std::int64_t p = start[b]; p < M; ++p) {
        for (std::int64_t e = 0; e < E; ++e) kc[((b * Hkv + g) * M + p) * E + e] = 1e30f;
        for (std::int64_t e = 0; e < Ev; ++e) vc[((b * Hkv + g) * M + p) * Ev + e] = 1e30f;
      }
  Tensor k_cache = up(kc, {B, Hkv, M, E}), v_cache = up(vc, {B, Hkv, M, Ev});
  Tensor lengths = Tensor::from_host(device(), std::span<const std::int32_t>(start), {B});
  for (std::size_t step = 0; step < chunks.size(); ++step) {
    SCOPED_TRACE("step " + std::to_string(step) + " of " + std::to_string(chunks[step]) + " tokens");
    const std::int64_t T = chunks[step];
    const auto q = uniform(rng, static_cast<std::size_t>(B * Hq * T * E), -2, 2);
    const auto k = uniform(rng, static_cast<std::size_t>(B * Hkv * T * E));
    const auto v = uniform(rng, static_cast<std::size_t>(B * Hkv * T * Ev));
    kv_cache_append(k_cache, v_cache, up(k, {B, Hkv, T, E}), up(v, {B, Hkv, T, Ev}), lengths);
    host_append(h, k, v, T);
    const Tensor y = kv_cache_attention(up(q, {B, Hq, T, E}), k_cache, v_cache, lengths);
    ASSERT_EQ(y.shape(), (Shape{B, Hq, T, Ev}));
    ASSERT_TRUE(close(y.to_vector(), host_attention(h, q, Hq, T), 2e-5, 2e-5));
    kv_cache_advance(lengths, T);
    for (auto& l : h.len) l += static_cast<std::int32_t>(T);
    ASSERT_EQ(lengths.to_int_vector(), h.len);
  }
}

TEST(KvCache, PrefillThenDecodeEqualsCausalAttention) {
  GLT_RNG(rng);
  // one sequence from empty: a prefill chunk of 7 then decode steps = causal attention over all
  run_steps(rng, 1, 2, 2, 16, 8, 8, {0}, {7, 1, 1, 1, 1});
}

TEST(KvCache, BatchOfDifferentLengthsWithGroupedHeads) {
  GLT_RNG(rng);
  // Hq = 6 over Hkv = 2 (groups of 3), odd head dims, E != Ev, lengths 0, 5, 17, 1
  run_steps(rng, 4, 6, 2, 32, 5, 7, {0, 5, 17, 1}, {3, 1, 1, 2, 1});
}

TEST(KvCache, SizeOneEdges) {
  GLT_RNG(rng);
  run_steps(rng, 1, 1, 1, 1, 1, 1, {0}, {1});     // max_len 1, head dim 1
  run_steps(rng, 2, 3, 3, 4, 3, 2, {3, 0}, {1});  // a sequence filling its cache
}

TEST(KvCache, KeysSplitUnderALoweredLoopLimit) {
  GLT_RNG(rng);
  ScopedLoopLimit limit(100);
  const KvAttentionPlan p = kv_attention_plan(300, 16, 12, 100);
  EXPECT_EQ(p.chunk, 64);
  EXPECT_EQ(p.splits, 5);  // five chunks, combined by the second dispatch
  EXPECT_LE(p.loops, 100u);
  // lengths ending in the first, a middle and the last chunk, and on a chunk boundary
  run_steps(rng, 4, 4, 2, 300, 16, 12, {10, 127, 290, 63}, {2, 1, 1});
}

TEST(KvCache, KeysPastTheDeviceLoopLimit) {
  GLT_RNG(rng);
  // 70000 cached keys: more than llvmpipe's 65535 loop iterations of one invocation
  run_steps(rng, 1, 2, 1, 70002, 4, 4, {69990}, {2, 1});
}

TEST(KvCache, PlanChoosesOneChunkForShortCaches) {
  const std::uint64_t big = 1u << 30;
  EXPECT_EQ(kv_attention_plan(259, 64, 64, big).splits, 1);
  EXPECT_EQ(kv_attention_plan(259, 64, 64, big).chunk, 320);
  EXPECT_EQ(kv_attention_plan(4096, 64, 64, big).chunk, 512);
  EXPECT_EQ(kv_attention_plan(4096, 64, 64, big).splits, 8);
  EXPECT_THROW(kv_attention_plan(256, 256, 256, 50), LimitError);  // 64 keys do not fit
  EXPECT_THROW(kv_attention_plan(100000, 8, 8, 200), LimitError);  // too many chunks to combine
}

TEST(KvCache, NaNQueryPoisonsOnlyItsRow) {
  const std::int64_t B = 1, H = 2, M = 8, E = 4;
  KVCache cache(device(), 1, B, H, M, E);
  GLT_RNG(rng);
  cache.append(0, up(uniform(rng, B * H * 3 * E), {B, H, 3, E}), up(uniform(rng, B * H * 3 * E), {B, H, 3, E}));
  auto q = uniform(rng, B * H * 3 * E);
  q[E * 3 + 1] = kNaN;  // head 0, row 0... of head 1: row index 3
  const auto y = cache.attention(0, up(q, {B, H, 3, E})).to_vector();
  for (std::int64_t r = 0; r < H * 3; ++r)
    for (std::int64_t e = 0; e < E; ++e) EXPECT_EQ(std::isnan(y[r * E + e]), r == 3) << r << " " << e;
}

TEST(KvCache, HalfCaches) {
  GLT_RNG(rng);
  const std::int64_t B = 2, Hq = 4, H = 2, M = 12, E = 8, T = 5;
  KVCache cache(device(), 1, B, H, M, E, DType::f16);
  const auto k = uniform(rng, B * H * T * E), v = uniform(rng, B * H * T * E), q = uniform(rng, B * Hq * T * E);
  cache.append(0, up(k, {B, H, T, E}), up(v, {B, H, T, E}));
  const Tensor y = cache.attention(0, up(q, {B, Hq, T, E}));
  EXPECT_EQ(y.dtype(), DType::f32);  // q's dtype
  // the reference on the cache's f16 values (the rounding is the cache's, not the attention's)
  HostSeqs h{B, H, M, E, E, std::vector<double>(B * H * M * E), std::vector<double>(B * H * M * E), {0, 0}};
  host_append(h, up(k, {B * H * T * E}).to(DType::f16).to(DType::f32).to_vector(),
              up(v, {B * H * T * E}).to(DType::f16).to(DType::f32).to_vector(), T);
  EXPECT_TRUE(close(y.to_vector(), host_attention(h, q, Hq, T), 2e-5, 2e-5));
}

TEST(KvCache, ClassAppendsAdvancesAndGivesPositions) {
  GLT_RNG(rng);
  const std::int64_t L = 2, B = 2, H = 1, M = 6, E = 2;
  KVCache cache(device(), L, B, H, M, E);
  const std::vector<std::int32_t> start{1, 3};
  cache.set_lengths(start);
  EXPECT_EQ(cache.max_length(), 3);
  EXPECT_EQ(cache.positions(2).to_int_vector(), (std::vector<std::int32_t>{1, 2, 3, 4}));
  const auto k = uniform(rng, B * H * 2 * E), v = uniform(rng, B * H * 2 * E);
  for (std::int64_t l = 0; l < L; ++l) cache.append(l, up(k, {B, H, 2, E}), up(v, {B, H, 2, E}));
  cache.advance(2);
  EXPECT_EQ(cache.lengths().to_int_vector(), (std::vector<std::int32_t>{3, 5}));
  // the appended rows landed at positions 1..2 and 3..4
  const auto kc = cache.key(1).to_vector();
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t t = 0; t < 2; ++t)
      for (std::int64_t e = 0; e < E; ++e) EXPECT_EQ(kc[(b * M + start[b] + t) * E + e], k[(b * 2 + t) * E + e]);
  // one more token fits the longer sequence (5 + 1 = 6); two do not
  EXPECT_THROW(cache.append(0, up(k, {B, H, 2, E}), up(v, {B, H, 2, E})), LimitError);
  try {
    cache.append(0, up(k, {B, H, 2, E}), up(v, {B, H, 2, E}));
  } catch (const LimitError& e) {
    EXPECT_NE(std::string(e.what()).find("kv_cache_append"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("max_len 6"), std::string::npos) << e.what();
  }
  cache.reset();
  EXPECT_EQ(cache.lengths().to_int_vector(), (std::vector<std::int32_t>{0, 0}));
  // views as k and v (a transposed [B, T, H, E] buffer)
  Tensor kt = up(k, {B, 2, H, E}).transpose(1, 2), vt = up(v, {B, 2, H, E}).transpose(1, 2);
  cache.append(0, kt, vt);
  const auto kc0 = cache.key(0).to_vector();
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t t = 0; t < 2; ++t)
      for (std::int64_t e = 0; e < E; ++e) EXPECT_EQ(kc0[(b * M + t) * E + e], k[(b * 2 + t) * E + e]);
}

// A captured decode step (append, attention, advance through KVCache) replayed at two sets of
// lengths set between replays, each against float64, and the lengths advanced by each replay on
// the GPU. set_lengths inside the capture is a CaptureError (it used to be captured: every replay
// restored the captured lengths, a trap for a captured decode step); the device works after.
// Sabotage: the check removed from set_lengths (the capture then succeeds: no CaptureError).
TEST(KvCache, CapturedDecodeStepReplayedAtTwoLengths) {
  GLT_RNG(rng);
  const std::int64_t B = 2, H = 2, M = 12, E = 4, T = 1;
  KVCache cache(device(), 1, B, H, M, E);
  HostSeqs h{B, H, M, E, E, {}, {}, {0, 0}};
  h.k = to_double(uniform(rng, static_cast<std::size_t>(B * H * M * E)));
  h.v = to_double(uniform(rng, static_cast<std::size_t>(B * H * M * E)));
  Tensor q = zeros(device(), {B, H, T, E}), k = zeros(device(), {B, H, T, E}), v = zeros(device(), {B, H, T, E});
  Tensor y;
  auto step = [&] {
    cache.append(0, k, v);
    y = cache.attention(0, q);
    cache.advance(T);
  };
  cache.set_lengths(std::vector<std::int32_t>{2, 5});
  step();  // warm-up (as for any capture)
  EXPECT_THROW((void)Recording::capture(device(),
                                        [&] {
                                          cache.set_lengths(std::vector<std::int32_t>{1, 1});
                                        }),
               CaptureError);
  cache.set_lengths(std::vector<std::int32_t>{2, 5});
  const Recording rec = Recording::capture(device(), step);
  // every position's keys and values (after the warm-up's and the capture's appends), written
  // through the cache's own append
  cache.set_lengths(std::vector<std::int32_t>{0, 0});
  cache.append(0, up(std::vector<float>(h.k.begin(), h.k.end()), {B, H, M, E}),
               up(std::vector<float>(h.v.begin(), h.v.end()), {B, H, M, E}));
  for (const std::vector<std::int32_t>& start : {std::vector<std::int32_t>{3, 7}, std::vector<std::int32_t>{9, 0}}) {
    SCOPED_TRACE("lengths " + std::to_string(start[0]) + ", " + std::to_string(start[1]));
    cache.set_lengths(start);
    h.len = start;
    for (int r = 0; r < 2; ++r) {  // two replays: the second at the lengths the first advanced to
      const auto qv = uniform(rng, static_cast<std::size_t>(B * H * T * E), -2, 2);
      const auto kv = uniform(rng, static_cast<std::size_t>(B * H * T * E));
      const auto vv = uniform(rng, static_cast<std::size_t>(B * H * T * E));
      q.copy_(up(qv, {B, H, T, E}));
      k.copy_(up(kv, {B, H, T, E}));
      v.copy_(up(vv, {B, H, T, E}));
      rec.replay();
      host_append(h, kv, vv, T);
      ASSERT_TRUE(close(y.to_vector(), host_attention(h, qv, H, T), 2e-5, 2e-5)) << "replay " << r;
      for (auto& l : h.len) l += static_cast<std::int32_t>(T);
      ASSERT_EQ(cache.lengths().to_int_vector(), h.len) << "replay " << r;
    }
  }
  EXPECT_EQ(add(ones(device(), {2}), ones(device(), {2})).to_vector(), (std::vector<float>{2, 2}));
}

// The host's count of the longest sequence under replays of captured steps (it used to stay at
// the capture's value, so the host check went stale): each replay advances max_length(), a
// replay that would pass max_len throws append()'s LimitError before any dispatch (the lengths on
// the GPU unchanged, no overflow for the GPU to report), an eager append after the replays is
// refused on the host, and a refused replay undoes the host steps it ran before the check
// (advance, then append, then advance). reset() captured sets the count to 0 per replay.
// Sabotage: KVCache::advance's host step left out (max_length stays at the capture's count and
// the replay past max_len runs: the GPU reports it at the next read).
TEST(KvCache, ReplaysKeepTheHostCount) {
  const std::int64_t B = 2, H = 1, M = 8, E = 2;
  KVCache cache(device(), 1, B, H, M, E);
  Tensor k = ones(device(), {B, H, 1, E}), q = ones(device(), {B, H, 1, E});
  Tensor y;
  auto step = [&] {
    cache.append(0, k, k);
    y = cache.attention(0, q);
    cache.advance(1);
  };
  cache.set_lengths(std::vector<std::int32_t>{1, 3});
  step();                                                    // warm-up: 2, 4
  const Recording rec = Recording::capture(device(), step);  // 3, 5
  EXPECT_EQ(cache.max_length(), 5);
  for (std::int32_t r = 1; r <= 3; ++r) {
    rec.replay();
    EXPECT_EQ(cache.max_length(), 5 + r) << "replay " << r;
    EXPECT_EQ(cache.lengths().to_int_vector(), (std::vector<std::int32_t>{3 + r, 5 + r})) << "replay " << r;
  }
  try {  // 8 + 1 > max_len 8
    rec.replay();
    ADD_FAILURE() << "the replay past max_len ran";
  } catch (const LimitError& e) {
    EXPECT_NE(std::string(e.what()).find("kv_cache_append"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("max_len 8"), std::string::npos) << e.what();
  }
  EXPECT_EQ(cache.max_length(), 8);
  EXPECT_EQ(cache.lengths().to_int_vector(), (std::vector<std::int32_t>{6, 8}));  // (no GPU error either)
  EXPECT_THROW(cache.append(0, k, k), LimitError);
  cache.set_lengths(std::vector<std::int32_t>{0, 2});
  rec.replay();
  EXPECT_EQ(cache.max_length(), 3);
  EXPECT_EQ(cache.lengths().to_int_vector(), (std::vector<std::int32_t>{1, 3}));
  // a refused replay undoes the steps it ran: advance (6 -> 7), then append's check (7 + 1 > 7?)
  const Recording two = Recording::capture(device(), [&] {  // 3 -> 4, append at 4, 5
    cache.advance(1);
    cache.append(0, k, k);
    cache.advance(1);
  });
  EXPECT_EQ(cache.max_length(), 5);
  cache.set_lengths(std::vector<std::int32_t>{0, 7});
  EXPECT_THROW(two.replay(), LimitError);  // advance to 8, then 8 + 1 > 8
  EXPECT_EQ(cache.max_length(), 7);
  EXPECT_EQ(cache.lengths().to_int_vector(), (std::vector<std::int32_t>{0, 7}));
  cache.set_lengths(std::vector<std::int32_t>{0, 5});
  two.replay();
  EXPECT_EQ(cache.max_length(), 7);
  EXPECT_EQ(cache.lengths().to_int_vector(), (std::vector<std::int32_t>{2, 7}));
  const Recording fresh = Recording::capture(device(), [&] {
    cache.reset();
    step();
  });
  EXPECT_EQ(cache.max_length(), 1);
  cache.set_lengths(std::vector<std::int32_t>{6, 8});
  fresh.replay();
  EXPECT_EQ(cache.max_length(), 1);
  EXPECT_EQ(cache.lengths().to_int_vector(), (std::vector<std::int32_t>{1, 1}));
}

// Recording::replay_together runs every recording's host steps before any dispatch, as replay
// does, and a refused one undoes the steps of all of them.
TEST(KvCache, ReplaysTogetherKeepTheHostCounts) {
  const std::int64_t B = 1, H = 1, M = 4, E = 2;
  KVCache a(device(), 1, B, H, M, E), b(device(), 1, B, H, M, E);
  Tensor k = ones(device(), {B, H, 1, E});
  auto stepper = [&](KVCache& c) {
    return [&] {
      c.append(0, k, k);
      c.advance(1);
    };
  };
  const Recording ra = Recording::capture(device(), stepper(a));  // 0 -> 1
  const Recording rb = Recording::capture(device(), stepper(b));
  b.set_lengths(std::vector<std::int32_t>{2});
  const Recording* both[] = {&ra, &rb};
  Recording::replay_together(both);  // a 1 -> 2, b 2 -> 3
  EXPECT_EQ(a.max_length(), 2);
  EXPECT_EQ(b.max_length(), 3);
  EXPECT_EQ(a.lengths().to_int_vector(), (std::vector<std::int32_t>{2}));
  EXPECT_EQ(b.lengths().to_int_vector(), (std::vector<std::int32_t>{3}));
  Recording::replay_together(both);                            // a 3, b 4 = max_len
  EXPECT_THROW(Recording::replay_together(both), LimitError);  // b: 4 + 1 > 4
  EXPECT_EQ(a.max_length(), 3);                                // a's steps, run first, undone
  EXPECT_EQ(b.max_length(), 4);
  EXPECT_EQ(a.lengths().to_int_vector(), (std::vector<std::int32_t>{3}));
  EXPECT_EQ(b.lengths().to_int_vector(), (std::vector<std::int32_t>{4}));
}

TEST(KvCache, OverflowDetectedOnTheGpu) {
  const std::int64_t B = 2, H = 1, M = 4, E = 2;
  Tensor kc = zeros(device(), {B, H, M, E}), vc = zeros(device(), {B, H, M, E});
  Tensor lengths = Tensor::from_host(device(), std::span<const std::int32_t>(std::vector<std::int32_t>{0, 3}), {B});
  Tensor k = ones(device(), {B, H, 2, E});
  kv_cache_append(kc, vc, k, k, lengths);  // sequence 1 at 3 and 4: 4 is past max_len
  try {
    (void)kc.to_vector();
    ADD_FAILURE() << "no error";
  } catch (const LimitError& e) {
    EXPECT_NE(std::string(e.what()).find("kv_cache_append"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("max_len"), std::string::npos) << e.what();
  }
  // the rows within max_len were written, the device still works
  const auto got = kc.to_vector();
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(got[(1 * M + 3) * E], 1.0f);
  EXPECT_EQ(add(ones(device(), {2}), ones(device(), {2})).to_vector(), (std::vector<float>{2, 2}));
}

TEST(KvCache, Errors) {
  const std::int64_t B = 2, H = 2, M = 4, E = 4;
  Tensor kc = zeros(device(), {B, H, M, E}), vc = zeros(device(), {B, H, M, E});
  Tensor len = zeros(device(), {B}, DType::i32);
  Tensor k = zeros(device(), {B, H, 1, E});
  EXPECT_THROW(kv_cache_append(kc, vc, zeros(device(), {B, H, 1, E + 1}), k, len), ShapeError);
  EXPECT_THROW(kv_cache_append(kc, vc, k, k, zeros(device(), {B})), DTypeError);
  EXPECT_THROW(kv_cache_append(kc, vc, k, k, zeros(device(), {B + 1}, DType::i32)), ShapeError);
  EXPECT_THROW(kv_cache_append(kc.transpose(2, 3), vc, k, k, len), ValueError);
  EXPECT_THROW(kv_cache_attention(zeros(device(), {B, 3, 1, E}), kc, vc, len), ShapeError);  // 3 % 2
  EXPECT_THROW(kv_cache_attention(zeros(device(), {B, H, 1, E}, DType::i32), kc, vc, len), DTypeError);
  EXPECT_THROW(kv_cache_advance(len, -1), ValueError);
  EXPECT_THROW(KVCache(device(), 1, 1, 1, 0, 4), ValueError);
  KVCache c(device(), 1, 1, 1, 4, 4);
  EXPECT_THROW(c.append(1, k, k), IndexError);
  EXPECT_THROW(c.set_lengths(std::vector<std::int32_t>{5}), LimitError);
  EXPECT_EQ(kv_cache_attention(zeros(device(), {B, H, 0, E}), kc, vc, len).numel(), 0);
  kv_cache_append(kc, vc, zeros(device(), {B, H, 0, E}), zeros(device(), {B, H, 0, E}), len);  // no tokens
  EXPECT_EQ(kv_cache_positions(len, 0).shape(), (Shape{B, 0}));
  EXPECT_EQ(sum(kc).item(), 0.0f);
}

}  // namespace
