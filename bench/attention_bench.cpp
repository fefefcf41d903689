// Fused attention without mask (inference) at given shapes: GPU time per call (the profiler's timer queries, per
// kernel) and wall time per call (calls queued back to back, then synchronize), for the kernel the planner chooses
// under the environment's settings (GLTENSOR_ATTENTION_BLOCK=0|1 and the like force one or the other). One process
// per setting; the ratios come from runs of the same pack call (scripts/packs/rt40/attn_table.py).
//   gltensor_attention_bench [--reps N] [--warmup N] [CASE ...]   (the first case also runs 300 ms untimed first)
// CASE = H,L,S,E,c|n,f32|f16[,m][g]: q [1, H, L, E], k, v [1, H, S, E], causal or not, storage dtype; m: a bool
// [L, S] mask (random, key 0 always kept), g: the gradients of q, k and v too (backward): either takes the flash
// kernels (attention_tiled.comp where it fits); without cases, the
// corners of attention_block.comp's range (attention_plan.cpp's plan_attention_block): head dims 40/64, keys
// 260/384/512, query rows 8/64/300, heads 1/8/32, causal and not, f32 and f16. Prints one line a case:
//   case H,L,S,E,c,dt kernel K gpu_us G wall_us W
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gltensor/gltensor.hpp"

using namespace gltensor;
using Clock = std::chrono::steady_clock;

namespace {

struct Case {
  std::int64_t H, L, S, E;
  bool causal, mask, grad;
  DType dt;
  std::string name;
};

Case parse(const std::string& s) {
  Case c{};
  char cz = 'n', dt[8] = {0}, mg[4] = {0};
  long long h = 0, l = 0, k = 0, e = 0;
  const int n = std::sscanf(s.c_str(), "%lld,%lld,%lld,%lld,%c,%3[^,],%3s", &h, &l, &k, &e, &cz, dt, mg);
  if (n != 6 && n != 7) {
    std::fprintf(stderr, "bad case %s (H,L,S,E,c|n,f32|f16[,m][g])\n", s.c_str());
    std::exit(2);
  }
  c.H = h, c.L = l, c.S = k, c.E = e, c.causal = cz == 'c';
  c.dt = std::string(dt) == "f16" ? DType::f16 : DType::f32;
  c.mask = std::string(mg).find('m') != std::string::npos, c.grad = std::string(mg).find('g') != std::string::npos;
  c.name = s;
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 30, warmup = 3;
  std::vector<Case> cases;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc)
      reps = std::atoi(argv[++i]);
    else if (a == "--warmup" && i + 1 < argc)
      warmup = std::atoi(argv[++i]);
    else
      cases.push_back(parse(a));
  }
  if (cases.empty())
    for (const char* dt : {"f32", "f16"})
      for (const char* cz : {"n", "c"})
        for (const int E : {40, 64})
          for (const int S : {260, 384, 512})
            for (const int L : {8, 64, 300})
              for (const int H : {1, 8, 32})
                cases.push_back(parse(std::to_string(H) + "," + std::to_string(L) + "," + std::to_string(S) + "," +
                                      std::to_string(E) + "," + cz + "," + dt));
  Device dev = Device::open();
  std::printf("device: %s (%s)\n", dev.adapter().renderer.c_str(), dev.caps().version.c_str());
  if (!dev.caps().timer_query) std::printf("no timer queries: gpu_us 0\n");
  Generator g(7);
  bool first = true;
  for (const Case& c : cases) {
    Tensor q = randn(dev, {1, c.H, c.L, c.E}, g).to(c.dt), k = randn(dev, {1, c.H, c.S, c.E}, g).to(c.dt),
           v = randn(dev, {1, c.H, c.S, c.E}, g).to(c.dt);
    Tensor mask, gy;
    if (c.mask) {
      std::vector<std::uint8_t> m(static_cast<std::size_t>(c.L * c.S));
      for (std::size_t i = 0; i < m.size(); ++i)
        m[i] = i % static_cast<std::size_t>(c.S) == 0 || (i * 2654435761u) % 7 != 0;
      mask = Tensor::from_host(dev, std::span<const std::uint8_t>(m), {c.L, c.S}, DType::bool_);
    }
    if (c.grad) {
      for (Tensor* t : {&q, &k, &v}) requires_grad_(*t);
      gy = randn(dev, {1, c.H, c.L, c.E}, g).to(c.dt);
    }
    auto call = [&] {
      Tensor y = scaled_dot_product_attention(q, k, v, mask, c.causal);
      if (c.grad) {
        backward(y, gy);
        for (Tensor* t : {&q, &k, &v}) zero_grad(*t);
      }
      return y;
    };
    for (int i = 0; i < warmup; ++i) (void)call();
    dev.synchronize();
    if (first) {  // the GPU's clocks up before the first case is timed (H200: 345 MHz idle)
      const auto until = Clock::now() + std::chrono::milliseconds(300);
      while (Clock::now() < until) {
        for (int i = 0; i < 10; ++i) (void)call();
        dev.synchronize();
      }
      first = false;
    }
    const auto t0 = Clock::now();
    for (int i = 0; i < reps; ++i) (void)call();
    dev.synchronize();
    const double wall = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / reps;
    std::string kernel = "-";
    double gpu = 0;
    if (dev.caps().timer_query) {
      dev.set_profiling(true);
      dev.reset_profile();
      for (int i = 0; i < reps; ++i) (void)call();
      const ProfileReport r = dev.profile();
      dev.set_profiling(false);
      gpu = 1000 * r.total_ms / reps;
      kernel.clear();
      for (const ProfileRow& row : r.by_kernel) kernel += (kernel.empty() ? "" : "+") + row.name;
      if (r.disjoint_events) kernel += "(disjoint)";
    }
    std::printf("case %s kernel %s gpu_us %.2f wall_us %.2f\n", c.name.c_str(), kernel.c_str(), gpu, wall);
    std::fflush(stdout);
  }
}
