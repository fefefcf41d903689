// Kernel lab, mode `variants`: the library's own kernels timed through Launch, the candidates
// being their Variants (src/runtime/variant.hpp) on one problem. Each candidate is a plan of the
// library's planner with one kernel forced (ops/matmul_plan.hpp: Settings::matmul_kernel, REG
// blocks by set_reg_block; ops/elementwise_plan.hpp's forms), launched as the op launches it
// (ops/matmul_launch.hpp: matmul_variant / gemv_variant and MatmulParams; ops/elementwise.hpp:
// ElementwiseParams). The first row is the library's op itself (the planner's own choice, the
// tuner's included); every row's time is given as a ratio to it.
//   matmul: vec4 with SLICE_K / UNROLL_K off and on, tile64, tile128, REG with the planner's block
//           and a few RA x 4 CB blocks, GEMV where M <= 8 (split-K's partial sums included).
//   add:    f32 scalar and vec4 forms, f16 OUT_WORDS and (with fp16 arithmetic) F16V forms.
// Results are checked against a float64 CPU reference (--check: every element; timing: 64
// sampled ones) and, when timing, every candidate against the first row.
#include "kernel_lab_variants.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gltensor/gltensor.hpp"
#include "ops/elementwise.hpp"
#include "ops/elementwise_plan.hpp"
#include "ops/matmul_launch.hpp"
#include "runtime/settings.hpp"

namespace gltensor::lab {

namespace {
using namespace gltensor::detail;

struct Lab {
  Device& dev;
  bool check;
  int failures = 0;
};

// ms per run: the median of 5 batches after two warm-up runs (the first compiles), each batch as
// many runs as fill about 50 ms; --check: one run.
double time_ms(Lab& lab, const std::function<void()>& once) {
  using clock = std::chrono::steady_clock;
  auto since = [](clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  };
  once();
  lab.dev.synchronize();
  auto t0 = clock::now();
  once();
  lab.dev.synchronize();
  const double first = since(t0);
  if (lab.check) return first;
  const int reps = std::clamp(static_cast<int>(50.0 / std::max(first, 1e-3)), 1, 200);
  std::vector<double> t;
  for (int b = 0; b < 5; ++b) {
    t0 = clock::now();
    for (int r = 0; r < reps; ++r) once();
    lab.dev.synchronize();
    t.push_back(since(t0) / reps);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Worst |got - want| - tol over `idx` (NaN where the two disagree on NaN): > 0 is a failure.
double worst_excess(const std::vector<float>& got, const std::vector<double>& want, const std::vector<std::size_t>& idx,
                    const std::function<double(double)>& tol) {
  double worst = -std::numeric_limits<double>::infinity();
  for (std::size_t i : idx) {
    const double g = got.at(i), w = want.at(i);
    if (std::isnan(g) != std::isnan(w)) return std::numeric_limits<double>::quiet_NaN();
    if (std::isnan(w) || (std::isinf(w) && g == w)) continue;
    worst = std::max(worst, std::abs(g - w) - tol(w));
  }
  return worst;
}

// Indices checked: every one (--check) or 64 random ones.
std::vector<std::size_t> checked(const Lab& lab, std::size_t n, std::mt19937& g) {
  std::vector<std::size_t> idx;
  if (lab.check || n <= 64) {
    for (std::size_t i = 0; i < n; ++i) idx.push_back(i);
  } else {
    for (int i = 0; i < 64; ++i) idx.push_back(g() % n);
  }
  return idx;
}

// One candidate's row, its result checked against the float64 reference (and the first row's).
struct Table {
  Lab& lab;
  unsigned seed;
  const char* unit;                              // "GFLOP/s" or "GB/s"
  double work;                                   // flops or bytes per run
  std::vector<double> ref;                       // float64 reference
  std::vector<std::size_t> idx;                  // indices checked
  std::function<double(double)> tol, tol_first;  // by reference value
  std::vector<float> first;                      // the first row's result
  double first_ms = 0;

  void row(const std::string& name, const std::string& key, const std::function<Tensor()>& run) {
    Tensor r;
    double ms = 0;
    std::vector<float> got;
    try {  // a candidate that fails to compile or to launch (a gltensor error) is a failure
      ms = time_ms(lab, [&] { r = run(); });
      got = r.to_vector();
    } catch (const Error& e) {
      ++lab.failures;
      std::printf("  %-36s FAILED: %s\n", name.c_str(), e.what());
      return;
    }
    const double e = worst_excess(got, ref, idx, tol);
    bool ok = !std::isnan(e) && e <= 0;
    if (first.empty()) {
      first = got, first_ms = ms;
    } else if (!lab.check) {
      std::vector<double> f(first.begin(), first.end());
      const double e1 = worst_excess(got, f, idx, tol_first);
      ok = ok && !std::isnan(e1) && e1 <= 0;
    }
    if (!ok) ++lab.failures;
    std::printf("  %-36s %10.4f ms %9.2f %-7s %6.2fx %-5s %s\n", name.c_str(), ms, work / ms * 1e-6, unit,
                ms / first_ms, ok ? "" : "WRONG", key.c_str());
    if (!ok) std::printf("  (seed %u)\n", seed);
  }
};

// The kernel file of a plan's kernel.
const char* kernel_name(MatmulPlan::Kernel k) {
  MatmulVariant v;
  v.kernel = k;
  return k == MatmulPlan::Kernel::gemv ? GemvVariant::kFile : v.file();
}

// ---------------------------------------------------------------- matmul
// a [M, K] x b [K, N]; bt: b stored [N, K] (linear's w.t(), K-major: GEMV's layout). warp_only:
// the quad-load kernel's forms and the warp-tiled kernel's tiles (mode `warp`), else every kernel.
void matmul_variants(Lab& lab, std::int64_t M, std::int64_t N, std::int64_t K, bool bt, bool warp_only = false,
                     bool splits_only = false) {
  const unsigned seed = std::random_device{}();
  std::mt19937 g(seed);
  Generator gen(seed);
  Device& d = lab.dev;
  DeviceImpl& dev = *d.impl();
  const Tensor a = randn(d, {M, K}, gen), b = bt ? randn(d, {N, K}, gen).t() : randn(d, {K, N}, gen);
  const std::vector<float> ha = a.to_vector(), hb = b.contiguous().to_vector();
  std::printf("matmul %lld x %lld x %lld%s (M x N x K)\n", static_cast<long long>(M), static_cast<long long>(N),
              static_cast<long long>(K), bt ? ", B K-major" : "");
  Table t{lab, seed, "GFLOP/s", 2.0 * M * N * K, {}, {}, {}, {}, {}, 0};
  t.idx = checked(lab, static_cast<std::size_t>(M * N), g);
  t.ref.assign(static_cast<std::size_t>(M * N), 0.0);
  for (std::size_t i : t.idx) {
    const std::size_t m = i / N, n = i % N;
    double s = 0;
    for (std::int64_t k = 0; k < K; ++k) s += double(ha[m * K + k]) * hb[k * N + n];
    t.ref[i] = s;
  }
  // f32 products of N(0, 1) values: errors far below 1e-4 sqrt(K) (f16 math: 2e-2 sqrt(K)).
  const bool f16 = dev.fp16_matmul() && dev.precision() == Precision::f16_allowed;
  const double tol = (f16 ? 2e-2 : 1e-4) * std::sqrt(static_cast<double>(K)) + 1e-5;
  t.tol = t.tol_first = [tol](double) { return tol; };

  const Tensor none;
  const Epilogue ep;
  const BatchLayout bl = collapse_batch({}, {&a, &b, &none});
  const VecLayout vl = vec4_layout(a, b);
  const MatmulProblem problem = matmul_problem(a, b, vl, 1, DType::f32, false, dev.precision());
  const DeviceTraits traits{dev.adapter().software, dev.loop_limit(), dev.fp16_matmul(), d.caps().max_shared_memory};
  const MatmulPlan chosen = plan_matmul(problem, traits, settings());
  t.row(std::string("gltensor::matmul (") + kernel_name(chosen.kernel) + (chosen.tune ? ", tuned)" : ")"), "",
        [&] { return matmul(a, b); });

  using S = MatmulKernelSetting;
  struct Cand {
    const char* name;
    S setting;
    MatmulPlan::Kernel kernel;
    int variant = 0, ra = 0, cb = 0;     // vec4: SLICE_K | UNROLL_K << 1; reg: block (0: the planner's)
    int bm = 0, bn = 0, bk = 0, tn = 0;  // warp: tile (0: the planner's)
    bool lanes = true;
    int splits = 0;       // warp: split-K into this many chunks (0: the planner's)
    bool k_loop = false;  // warp: the K step looped
    int form = 0;         // warp: 1 warp_shk off, 2 NO_GUARD
  };
  using Kn = MatmulPlan::Kernel;
  std::vector<Cand> cands = {{"vec4", S::vec4, Kn::vec4, 0},
                             {"vec4 slice_k", S::vec4s, Kn::vec4, 1},
                             {"vec4 unroll_k", S::vec4u, Kn::vec4, 2},
                             {"vec4 slice_k unroll_k", S::vec4su, Kn::vec4, 3},
                             {"tile64", S::tile64, Kn::tile64},
                             {"tile128", S::tile128, Kn::tile128},
                             {"reg (planner's block)", S::reg, Kn::reg},
                             {"reg 1x4", S::reg, Kn::reg, 0, 1, 1},
                             {"reg 4x4", S::reg, Kn::reg, 0, 4, 1},
                             {"reg 4x8", S::reg, Kn::reg, 0, 4, 2},
                             {"reg 8x8", S::reg, Kn::reg, 0, 8, 2}};
  if (M <= kGemvRows) cands.push_back({"gemv", S::gemv, Kn::gemv});
  if (warp_only) cands.erase(cands.begin() + 4, cands.end());
  // The warp kernel's tiles (K-major operands kept K-major in shared memory where tn is 8: set_warp_tile's
  // warp_shk), the merged form (`merged`: warp_shk off) and NO_GUARD (`noguard`: the next tile's loads and
  // stores unconditional).
  const std::vector<Cand> warps = {
      {"warp (planner's tile)", S::warp, Kn::warp},
      {"warp 128x128 bk8 merged", S::warp, Kn::warp, 0, 0, 0, 128, 128, 8, 8, true, 0, false, 1},
      {"warp 64x128 bk8", S::warp, Kn::warp, 0, 0, 0, 64, 128, 8, 8, true},
      {"warp 64x128 bk16", S::warp, Kn::warp, 0, 0, 0, 64, 128, 16, 8, true},
      {"warp 64x128 bk16 k-loop", S::warp, Kn::warp, 0, 0, 0, 64, 128, 16, 8, true, 0, true},
      {"warp 128x128 bk8", S::warp, Kn::warp, 0, 0, 0, 128, 128, 8, 8, true},
      {"warp 128x128 bk16", S::warp, Kn::warp, 0, 0, 0, 128, 128, 16, 8, true},
      {"warp 128x128 bk16 k-loop", S::warp, Kn::warp, 0, 0, 0, 128, 128, 16, 8, true, 0, true},
      {"warp 64x128 bk8 noguard", S::warp, Kn::warp, 0, 0, 0, 64, 128, 8, 8, true, 0, false, 2},
      {"warp 128x128 bk16 noguard", S::warp, Kn::warp, 0, 0, 0, 128, 128, 16, 8, true, 0, false, 2},
      {"warp 128x128 bk8", S::warp, Kn::warp, 0, 0, 0, 128, 128, 8, 8, true, 2},
      {"warp 64x128 bk8", S::warp, Kn::warp, 0, 0, 0, 64, 128, 8, 8, true, 2},
      {"warp 128x128 bk16", S::warp, Kn::warp, 0, 0, 0, 128, 128, 16, 8, true, 2},
      {"warp 128x128 bk8 tn16 (128 invocations)", S::warp, Kn::warp, 0, 0, 0, 128, 128, 8, 16, true},
      {"warp 128x256 bk8 tn16 k-loop", S::warp, Kn::warp, 0, 0, 0, 128, 256, 8, 16, true, 0, true}};
  cands.insert(cands.end(), warps.begin(), warps.end());
  if (splits_only) {  // the quad-load kernel (unsliced, sliced) and the warp kernel in 1 to 8 K chunks
    cands.clear();
    for (int s : {1, 2, 4, 8}) {
      cands.push_back({"vec4", S::vec4, Kn::vec4, 0, 0, 0, 0, 0, 0, 0, true, s});
      cands.push_back({"vec4 slice_k", S::vec4s, Kn::vec4, 1, 0, 0, 0, 0, 0, 0, true, s});
      cands.push_back({"warp 128x128", S::warp, Kn::warp, 0, 0, 0, 128, 128, 8, 8, true, s});
    }
  }
  std::set<std::string> seen;  // program key and grid: a candidate equal to an earlier one is skipped
  // LAB_CANDS: only the candidates whose name contains one of its '|'-separated parts (the
  // planner's row is always run).
  std::vector<std::string> only;
  if (const char* e = std::getenv("LAB_CANDS")) {
    std::string list = e;
    for (std::size_t a = 0, b; a <= list.size(); a = b + 1) {
      b = std::min(list.find('|', a), list.size());
      only.push_back(list.substr(a, b - a));
    }
  }
  for (const Cand& c : cands) {
    if (!only.empty() && std::none_of(only.begin(), only.end(), [&](const std::string& o) {
          return std::string(c.name).find(o) != std::string::npos;
        }))
      continue;
    Settings s = settings();
    s.matmul_kernel = c.setting;
    MatmulPlan plan = plan_matmul(problem, traits, s);
    if (plan.kernel != c.kernel || (c.kernel == Kn::vec4 && plan.variant != c.variant)) {
      std::printf("  %-36s n/a (the planner gives %s for this shape)\n", c.name, kernel_name(plan.kernel));
      continue;
    }
    plan.tune = false;
    const bool shk = c.tn == 8 && c.form != 1;
    const std::int64_t shared = warp_shared_bytes(c.bm, c.bn, c.bk, vl.a_kmajor, vl.b_kmajor, shk);
    if (c.bn > 0 && shared > d.caps().max_shared_memory) {
      std::printf("  %-36s n/a (%lld bytes of shared memory)\n", c.name, static_cast<long long>(shared));
      continue;
    }
    if (c.ra > 0) set_reg_block(plan, problem, c.ra, c.cb);
    if (c.splits > 0) {  // K in c.splits chunks of whole 16-K tiles
      if (K < 512 || problem.batch != 1) continue;
      plan.kchunk = (K + 16 * c.splits - 1) / (16 * c.splits) * 16;
      plan.splits = (K + plan.kchunk - 1) / plan.kchunk;
      plan.groups_z = static_cast<std::uint64_t>(plan.splits);
      plan.loop_iterations = matmul_loops(plan.kernel, plan.kchunk);
    }
    if (c.bn > 0) set_warp_tile(plan, problem, c.bm, c.bn, c.bk, c.tn, c.lanes);
    plan.warp_k_loop = c.k_loop;
    if (c.form == 1) plan.warp_shk = false;
    const Tensor out = zeros(d, plan.splits > 1 ? Shape{plan.splits, M, N} : Shape{M, N});
    const MatmulParams params{M, N, K, bl, a, b, none, vl, plan, 0, 1.0, 0.0, ep};
    const bool gemv = plan.kernel == Kn::gemv;
    const MatmulVariant mv = matmul_variant(dev, plan, problem, vl, bl, none, out, 0, ep, a.dtype(), b.dtype());
    Defines mdefs = mv.defines();
    mdefs.flag("NO_GUARD", c.form == 2);
    const GemvVariant gv = gemv_variant(plan, problem, bl, none, out, ep, a.dtype(), b.dtype());
    const char* file = gemv ? gv.kFile : mv.file();
    const std::string key = std::string(file) + " " + (gemv ? gv.defines().key() : mdefs.key());
    const std::string grid =
        std::to_string(plan.groups_x) + "x" + std::to_string(plan.groups_y) + "x" + std::to_string(plan.groups_z);
    if (!seen.insert(key + grid).second) continue;
    std::string name = c.name;
    if (plan.kernel == Kn::reg && c.ra == 0)
      name = "reg " + std::to_string(plan.reg_rows) + "x" + std::to_string(4 * plan.reg_quads) + " (planner's)";
    if (plan.splits > 1) name += " split-K " + std::to_string(plan.splits);
    t.row(name, key, [&] {
      Launch launch(dev, "matmul");
      if (gemv)
        launch.program(gv.kFile, gv.defines(), {plan.local_x, plan.local_y});
      else
        launch.program(mv.file(), mdefs, {plan.local_x, plan.local_y});
      launch.write(out).read(a).read(b);
      launch.params(params).loop_iterations(plan.loop_iterations);
      launch.groups(plan.groups_x, plan.groups_y, plan.groups_z);
      return plan.splits > 1 ? sum(out, {0}) : out;
    });
  }
}

// ---------------------------------------------------------------- elementwise add
// out = a + b over n elements (one contiguous dim), f32 and f16, in each form of binary.comp;
// a[1] is NaN and b[2] +Inf.
void add_variants(Lab& lab, std::int64_t n) {
  const unsigned seed = std::random_device{}();
  std::mt19937 g(seed);
  Generator gen(seed);
  Device& d = lab.dev;
  DeviceImpl& dev = *d.impl();
  Tensor a32 = randn(d, {n}, gen), b32 = randn(d, {n}, gen);
  if (n > 2) {
    a32.narrow(0, 1, 1).copy_(full(d, {1}, std::nan("")));
    b32.narrow(0, 2, 1).copy_(full(d, {1}, INFINITY));
  }
  for (DType dt : {DType::f32, DType::f16}) {
    const Tensor a = a32.to(dt), b = b32.to(dt);
    const std::vector<float> ha = a.to_vector(), hb = b.to_vector();
    const double bytes = 3.0 * n * itemsize(dt);
    std::printf("add %lld x %s\n", static_cast<long long>(n), dtype_name(dt));
    Table t{lab, seed, "GB/s", bytes, {}, {}, {}, {}, {}, 0};
    t.idx = checked(lab, static_cast<std::size_t>(n), g);
    t.ref.assign(static_cast<std::size_t>(n), 0.0);
    for (std::size_t i : t.idx) t.ref[i] = double(ha[i]) + double(hb[i]);
    // f32: the rounded sum (half an ulp); f16: rounded to f16 (f16 math: both rounded alike).
    const double rel = dt == DType::f16 ? 1e-3 : 1e-7;
    t.tol = t.tol_first = [rel](double w) { return rel * std::abs(w) + 1e-7; };
    t.row("gltensor::add", "", [&] { return add(a, b); });

    struct Form {
      const char* name;
      bool vec4, words, f16v;
      int quads = 1;  // VEC4: quads per invocation
    };
    // Sub-word outputs (f16) are written a whole word per invocation (OUT_WORDS), in f32 or f16 math.
    const std::vector<Form> forms = dt == DType::f32 ? std::vector<Form>{{"scalar", false, false, false},
                                                                         {"vec4", true, false, false},
                                                                         {"vec4 x2", true, false, false, 2},
                                                                         {"vec4 x4", true, false, false, 4},
                                                                         {"vec4 x8", true, false, false, 8}}
                                                     : std::vector<Form>{{"words", false, true, false},
                                                                         {"words f16v (f16 math)", false, true, true}};
    for (const Form& f : forms) {
      if ((f.vec4 && n % 4 != 0) || (f.f16v && (!dev.f16_math() || n % 2 != 0))) {
        std::printf("  %-36s n/a (%s)\n", f.name, f.vec4 ? "n % 4 != 0" : "no f16 math here, or n odd");
        continue;
      }
      Elementwise e;
      e.op = "add", e.kernel = ElementwiseKernel::binary, e.fn = "op_add";
      ElementwiseVariant v;
      v.kernel = e.kernel, v.fn = e.fn, v.ndim = 1, v.contig = true, v.nops = 3, v.dtypes = {dt, dt, dt};
      v.vec4 = f.vec4, v.quads = f.quads, v.words = f.words;
      if (f.f16v) v.f16_fn = "op16_add", v.f16_ext = dev.f16_extension_glsl();
      const auto un = static_cast<std::uint64_t>(n);
      const std::uint64_t count = f.vec4 ? un / 4 : f.words ? (un + 1) / 2 : un;  // F16V: n even
      const std::uint64_t block = static_cast<std::uint64_t>(kElementwiseLocal) * f.quads,
                          invocations = f.vec4 ? (count + block - 1) / block * kElementwiseLocal : count;
      const ElementwiseParams params{e, count, un, {static_cast<std::uint32_t>(n)}, {1, 1, 1}, {0, 0, 0}};
      const Tensor out = zeros(d, {n}, dt);
      t.row(std::string(dtype_name(dt)) + " " + f.name, std::string("binary.comp ") + v.defines().key(), [&] {
        Launch launch(dev, "add");
        launch.program(kernel_file(e.kernel), v.defines(), {kElementwiseLocal});
        launch.write(out).read(a).read(b);
        launch.params(params).loop_iterations(elementwise_loops(1, 3, 0, f.quads)).invocations(invocations);
        return out;
      });
    }
  }
}

}  // namespace

int lab_add_variants(Device& dev, bool check) {
  Lab lab{dev, check};
  std::printf("addvariants: the library's add forms through Launch (time, rate, ratio to the first row)\n");
  const std::vector<std::int64_t> sizes = check ? std::vector<std::int64_t>{16388, 4099, 4 * 256 * 8 * 3 + 4}
                                                : std::vector<std::int64_t>{1 << 20, 1 << 24, 1 << 26};
  for (std::int64_t n : sizes) add_variants(lab, n);
  std::printf("addvariants: %d failure(s)\n", lab.failures);
  return lab.failures;
}

int lab_warp(Device& dev, bool check, std::int64_t only) {
  Lab lab{dev, check};
  const bool sw = dev.impl()->adapter().software;
  std::printf("warp: the quad-load and warp-tiled matmul kernels (time, rate, ratio to the first row)\n");
  if (check || sw) {
    const std::int64_t s = check ? 1 : 2;
    matmul_variants(lab, 128 * s, 256 * s, 64 * s, false, true);  // whole tiles
    matmul_variants(lab, 132, 260, 36, false, true);              // edges in M, N and K
    matmul_variants(lab, 128, 128, 4, true, true);                // K-major B, one short K-tile
    matmul_variants(lab, 128 * s, 256 * s, 64 * s, true, true);   // K-major B, whole tiles
    matmul_variants(lab, 132, 260, 36, true, true);               // K-major B, edges
    matmul_variants(lab, 128, 132, 520, false, true);             // split-K forms, K past the chunks' tiles
  } else if (const char* shapes = std::getenv("LAB_SHAPES"); shapes && only == 0) {
    // LAB_SHAPES: comma-separated MxNxK, a trailing 't' for K-major B.
    const std::string list = shapes;
    for (std::size_t a = 0, e; a < list.size(); a = e + 1) {
      e = std::min(list.find(',', a), list.size());
      long long m = 0, n = 0, k = 0;
      char t = 0;
      if (std::sscanf(list.substr(a, e - a).c_str(), "%lldx%lldx%lld%c", &m, &n, &k, &t) >= 3)
        matmul_variants(lab, m, n, k, t == 't', true);
    }
  } else if (only > 0) {  // LAB_KMAJOR=1: K-major B too; 2: K-major B only
    const char* km = std::getenv("LAB_KMAJOR");
    if (!km || std::string(km) != "2") matmul_variants(lab, only, only, only, false, true);
    if (km) matmul_variants(lab, only, only, only, true, true);
  } else {
    for (bool bt : {false, true})  // row-major B, then linear's layout (K-major B)
      for (std::int64_t n : {1024, 2048, 4096, 8192}) matmul_variants(lab, n, n, n, bt, true);
    matmul_variants(lab, 4096, 4096, 1024, true, true);
    matmul_variants(lab, 512, 4096, 4096, true, true);
    matmul_variants(lab, 3000, 2052, 1500, true, true);  // edges
    matmul_variants(lab, 3000, 2052, 1500, false, true);
    matmul_variants(lab, 256, 4096, 4096, false, true);  // few tiles
  }
  std::printf("warp: %d failure(s)\n", lab.failures);
  return lab.failures;
}

int lab_splitk(Device& dev, bool check) {
  Lab lab{dev, check};
  std::printf("splitk: few output tiles over a long K, the quad-load and warp kernels in K chunks\n");
  if (check) {
    matmul_variants(lab, 128, 256, 1024, false, true, true);
  } else {
    matmul_variants(lab, 256, 4096, 4096, false, true, true);
    matmul_variants(lab, 256, 4096, 4096, true, true, true);
    matmul_variants(lab, 256, 2048, 8192, false, true, true);
    matmul_variants(lab, 512, 2048, 2048, false, true, true);
    matmul_variants(lab, 1024, 1024, 1024, false, true, true);
    matmul_variants(lab, 384, 1152, 16384, false, true, true);  // chargpt's weight gradient
    matmul_variants(lab, 384, 1152, 2048, false, true, true);
  }
  std::printf("splitk: %d failure(s)\n", lab.failures);
  return lab.failures;
}

int lab_variants(Device& dev, bool check) {
  Lab lab{dev, check};
  const bool sw = dev.impl()->adapter().software;
  std::printf("variants: the library's kernels through Launch (time, rate, ratio to the first row)\n");
  if (check) {
    matmul_variants(lab, 64, 128, 48, false);   // vec4 (whole tiles), tile64, reg
    matmul_variants(lab, 128, 128, 32, false);  // tile128
    matmul_variants(lab, 37, 29, 41, false);    // odd sizes
    matmul_variants(lab, 3, 29, 41, true);      // GEMV
    add_variants(lab, 16388);
    add_variants(lab, 4099);  // odd: no vec4 / f16v
  } else if (sw) {
    matmul_variants(lab, 256, 256, 256, false);
    matmul_variants(lab, 4, 1024, 1024, true);
    add_variants(lab, std::int64_t{1} << 22);
  } else {
    matmul_variants(lab, 1024, 1024, 1024, false);
    matmul_variants(lab, 4096, 4096, 4096, false);
    matmul_variants(lab, 8, 4096, 4096, true);
    add_variants(lab, std::int64_t{1} << 26);
  }
  std::printf("variants: %d failure(s)\n", lab.failures);
  return lab.failures;
}

}  // namespace gltensor::lab
