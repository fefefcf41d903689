// chargpt's KV-cache decoding (demos/chargpt/model.cpp forward_cached, generate.cpp) against the
// full forward recomputed over all tokens at each step, on a small random model (matrices scaled
// up so that the logits are far from ties): the logits of a chunked prefill and of each decode
// step within 2e-4 (absolute, logits of order 10) of the full forward's, and greedy decoding token
// for token the same bytes; the decode step recorded once and replayed per token (the default)
// gives the same bytes as every step planned anew, sampled and greedy, f32 and int4.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "generate.hpp"
#include "model.hpp"
#include "quantize.hpp"

using namespace gltensor;
using chargpt::Gpt;
using chargpt::GptConfig;

namespace {

Device& device() {
  static Device dev = Device::open();
  return dev;
}

Gpt small_model(std::uint64_t seed) {
  GptConfig cfg;
  cfg.layers = 2, cfg.d_model = 64, cfg.heads = 2, cfg.context = 64, cfg.ffn = 128;
  Generator gen(seed);
  Gpt m(device(), cfg, gen);
  NoGradGuard ng;
  for (Tensor* t : m.matrices()) t->copy_(mul(*t, 6.0));
  return m;
}

Tensor tokens(const std::vector<std::int32_t>& t) {
  return Tensor::from_host(device(), std::span<const std::int32_t>(t), {1, static_cast<std::int64_t>(t.size())});
}

// The last row of the full forward's logits over all tokens.
std::vector<float> full_last(Gpt& m, const std::vector<std::int32_t>& t) {
  NoGradGuard ng;
  return m.forward(tokens(t)).select(0, static_cast<std::int64_t>(t.size()) - 1).to_vector();
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 2e-4 + 2e-5 * std::fabs(want[i])) << what << ", logit " << i;
}

TEST(ChargptDecode, ChunkedPrefillAndStepsMatchTheFullForward) {
  Gpt m = small_model(3);
  std::vector<std::int32_t> t{'T', 'h', 'e', ' ', 'q', 'u', 'i', 'c', 'k'};
  KVCache cache = m.make_cache(1, 20);
  // the prompt in chunks of 4, 4 and 1 tokens
  std::vector<float> got;
  for (std::size_t a = 0; a < t.size(); a += 4) {
    const std::vector<std::int32_t> chunk(t.begin() + a, t.begin() + std::min(t.size(), a + 4));
    got = m.forward_cached(tokens(chunk), cache).to_vector();
    expect_close(got, full_last(m, std::vector<std::int32_t>(t.begin(), t.begin() + a + chunk.size())),
                 "prefill chunk at " + std::to_string(a));
  }
  for (int i = 0; i < 8; ++i) {  // decode steps of the greedy token
    const auto best = static_cast<std::int32_t>(std::max_element(got.begin(), got.end()) - got.begin());
    t.push_back(best);
    got = m.forward_cached(tokens({best}), cache).to_vector();
    expect_close(got, full_last(m, t), "decode step " + std::to_string(i));
  }
  EXPECT_EQ(cache.lengths().to_int_vector(), std::vector<std::int32_t>{static_cast<std::int32_t>(t.size())});
}

TEST(ChargptDecode, CachedGreedyDecodingEqualsRecomputingTheFullForward) {
  Gpt m = small_model(5);
  const std::string prompt = "Q: Why did the";
  const std::int64_t n = 48;  // prompt + n within the context of 64
  const std::string got = chargpt::generate_cached(m, prompt, n, {0.0, 0, 1.0}, 1);
  std::vector<std::int32_t> t(prompt.begin(), prompt.end());
  std::string want;
  for (std::int64_t i = 0; i < n; ++i) {
    const auto logits = full_last(m, t);
    const auto best = static_cast<std::int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    t.push_back(best);
    want.push_back(static_cast<char>(best));
  }
  EXPECT_EQ(got, want);
  // sampled decoding is reproducible for a seed, and another seed gives other bytes
  const std::string s1 = chargpt::generate_cached(m, prompt, 32, {1.0, 0, 1.0}, 7);
  EXPECT_EQ(chargpt::generate_cached(m, prompt, 32, {1.0, 0, 1.0}, 7), s1);
  EXPECT_NE(chargpt::generate_cached(m, prompt, 32, {1.0, 0, 1.0}, 8), s1);
}

// Replay against the unrecorded path, token for token: sampling with temperature, top-k and
// top-p (the draws keyed by the cache's lengths, read on the GPU by the replayed step), greedy,
// flushes at odd intervals, and block matrices quantized to int4 (quantized_linear's kernels in
// the recorded step). Each replayed run is also repeated, so that a second recording gives the
// same bytes.
TEST(ChargptDecode, ReplayedStepsGiveTheUnrecordedTokens) {
  Gpt m = small_model(11);
  const std::string prompt = "A fortune";
  for (const bool quantized : {false, true}) {
    if (quantized) chargpt::use_quantized(m, chargpt::quantize_blocks(m, QuantFormat::int4));
    for (const SamplingOptions opt :
         {SamplingOptions{1.0, 0, 1.0}, SamplingOptions{0.9, 20, 0.9}, SamplingOptions{0.0, 0, 1.0}}) {
      SCOPED_TRACE(std::string(quantized ? "int4" : "f32") + ", temperature " + std::to_string(opt.temperature) +
                   ", top-k " + std::to_string(opt.top_k));
      const std::int64_t n = 40;
      const std::string plain = chargpt::generate_cached(m, prompt, n, opt, 3, {}, nullptr, 7, false);
      const std::string replayed = chargpt::generate_cached(m, prompt, n, opt, 3, {}, nullptr, 7, true);
      ASSERT_EQ(plain.size(), static_cast<std::size_t>(n));
      EXPECT_EQ(replayed, plain);
      EXPECT_EQ(chargpt::generate_cached(m, prompt, n, opt, 3, {}, nullptr, 16, true), plain);
      // short runs: no step recorded (n <= 2) or recorded and never replayed (n = 3)
      for (const std::int64_t k : {1, 2, 3})
        EXPECT_EQ(chargpt::generate_cached(m, prompt, k, opt, 3, {}, nullptr, 1, true), plain.substr(0, k));
    }
  }
}

}  // namespace
