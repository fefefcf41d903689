#include "generate.hpp"

#include <time.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "quantize.hpp"

namespace chargpt {
using namespace gltensor;

namespace {

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::string generate_cached(Gpt& m, const std::string& prompt, std::int64_t n, const SamplingOptions& opt,
                            std::uint64_t seed, const std::function<void(const std::string&)>& print,
                            DecodeStats* stats, std::int64_t flush_every, bool replay) {
  NoGradGuard ng;
  std::vector<std::int32_t> toks(prompt.begin(), prompt.end());
  for (auto& t : toks) t &= 0xff;
  if (toks.empty()) toks.push_back('\n');
  const std::int64_t P = static_cast<std::int64_t>(toks.size());
  std::string out;
  if (n <= 0) return out;
  const Device dev = m.device();
  KVCache cache = m.make_cache(1, P + n);
  const auto t0 = std::chrono::steady_clock::now();
  Tensor logits = m.forward_cached(Tensor::from_host(dev, std::span<const std::int32_t>(toks), {1, P}), cache);
  std::vector<Tensor> pending;  // sampled tokens not yet read back
  double flush_cpu = 0;         // CPU time in the read-backs (a driver may spin while it waits for the GPU)
  const auto flush = [&] {
    if (pending.empty()) return;
    const double c0 = thread_cpu_seconds();
    for (std::int32_t t : stack(pending).to_int_vector()) out.push_back(static_cast<char>(t));
    flush_cpu += thread_cpu_seconds() - c0;
    if (print) print(out.substr(out.size() - pending.size()));
    pending.clear();
  };
  auto t1 = t0;
  double cpu1 = 0;
  // With replay (gltensor/recording.hpp) the step's input token lives in one tensor (cur) and the
  // positions and the draws' counter in the cache's lengths, so a step recorded once repeats with
  // nothing from the host. Step 1 runs unrecorded (kernels compile and tune), step 2 is captured
  // (it runs while being recorded), every later step is a replay; one copy keeps each token.
  Tensor cur;   // int32 [1]: the token the next step reads
  Tensor next;  // the recorded step's token
  Recording step;
  const auto decode = [&] {
    return sample_tokens(m.forward_cached(cur.view({1, 1}), cache), opt, seed, cache.lengths());
  };
  for (std::int64_t i = 0; i < n; ++i) {
    Tensor tok;
    if (i == 0) {
      tok = sample_tokens(logits, opt, seed, cache.lengths());  // int32 [1], keyed by the drawn token's position
    } else if (!replay || i == 1) {
      tok = decode();
    } else {
      if (step.empty())
        step = Recording::capture(dev, [&] {
          next = decode();
          cur.copy_(next);
        });
      else
        step.replay();
      tok = next.clone();
    }
    pending.push_back(tok);
    if (!replay || i == 0)
      cur = tok;
    else if (i == 1)
      cur = tok.clone();  // the recorded step writes cur: not a pending token's buffer
    if (i == 0) {         // the prefill and the first token, apart from the steady decode
      flush();
      t1 = std::chrono::steady_clock::now();
      cpu1 = thread_cpu_seconds();
      flush_cpu = 0;
      if (stats) stats->prefill_seconds = std::chrono::duration<double>(t1 - t0).count();
    }
    if (static_cast<std::int64_t>(pending.size()) >= flush_every) flush();
  }
  flush();
  if (stats) {
    stats->prompt_tokens = P;
    stats->tokens = n;
    stats->decode_seconds = since(t1);
    stats->decode_cpu_seconds = thread_cpu_seconds() - cpu1;
    stats->issue_cpu_seconds = stats->decode_cpu_seconds - flush_cpu;
    stats->step_dispatches = step.dispatches();
    stats->step_barriers = step.barriers();
  }
  return out;
}

int run_serve(const Device& dev, const std::string& checkpoint, const std::string& prompt, std::int64_t n,
              bool interactive, const SamplingOptions& opt, std::int64_t seed, const std::string& quantize,
              bool replay) {
  auto state = nn::load_safetensors(checkpoint, dev);
  const GptConfig cfg = Gpt::config_of(state);
  Generator gen(1);
  Gpt m(dev, cfg, gen);
  QuantizedBlocks q = load_quantized(state, checkpoint);  // a --quantize checkpoint: int8/int4 blocks
  m.load(state);
  if (!quantize.empty()) {
    if (!q.empty()) throw std::runtime_error(checkpoint + " is already quantized; --quantize takes an f32 checkpoint");
    q = quantize_blocks(m, quant_format_from_name(quantize));
  }
  if (!q.empty()) use_quantized(m, q);
  std::printf("checkpoint %s: %s, %.2fM parameters%s; sampling: temperature %g, top-k %lld, top-p %g, seed %lld\n",
              checkpoint.c_str(), cfg.describe().c_str(), static_cast<double>(m.num_parameters()) / 1e6,
              q.empty() ? "" : (", block matrices " + std::string(quant_format_name(q.begin()->second.format))).c_str(),
              opt.temperature, static_cast<long long>(opt.top_k), opt.top_p, static_cast<long long>(seed));
  const auto print = [](const std::string& s) {
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
  };
  if (!interactive) {
    DecodeStats st;
    std::printf("%s", prompt.c_str());
    generate_cached(m, prompt, n, opt, static_cast<std::uint64_t>(seed), print, &st, 16, replay);
    std::printf(
        "\nprefill: %lld prompt tokens and the first token in %.3f s; decode: %lld tokens in %.3f s, %.1f "
        "tokens/s, %.3f ms CPU (calling thread) per token, %.3f ms of it issuing the step (the rest: waiting in "
        "the read-backs) (batch 1, KV cache, sampling on the GPU, %s)\n",
        static_cast<long long>(st.prompt_tokens), st.prefill_seconds, static_cast<long long>(st.tokens - 1),
        st.decode_seconds, st.tokens_per_second(),
        st.tokens > 1 ? 1e3 * st.decode_cpu_seconds / static_cast<double>(st.tokens - 1) : 0.0,
        st.tokens > 1 ? 1e3 * st.issue_cpu_seconds / static_cast<double>(st.tokens - 1) : 0.0,
        replay ? ("the step recorded once and replayed: " + std::to_string(st.step_dispatches) + " dispatches, " +
                  std::to_string(st.step_barriers) + " barriers")
                     .c_str()
               : "unrecorded");
    return 0;
  }
  const std::int64_t len = n > 0 ? n : 200;
  std::printf("interactive: a continuation of %lld bytes per line of input (end of input to quit)\n> ",
              static_cast<long long>(len));
  std::fflush(stdout);
  std::string line;
  for (std::int64_t turn = 0; std::getline(std::cin, line); ++turn) {
    const std::string p = line + "\n";
    std::printf("%s", p.c_str());
    // a new draw stream per turn
    generate_cached(m, p, len, opt, static_cast<std::uint64_t>(seed) + static_cast<std::uint64_t>(turn), print, nullptr,
                    16, replay);
    std::printf("\n> ");
    std::fflush(stdout);
  }
  std::printf("\n");
  return 0;
}

}  // namespace chargpt
