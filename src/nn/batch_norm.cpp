// batch_norm: fused kernels (glsl/nn/batch_norm.comp) for the training and eval forward and one
// autograd node whose backward computes dx, dweight and dbias.
//
// Training forward: per-channel (count, mean, M2) partials of chunks of u_chunk values per
// workgroup (Welford), merged by Chan et al.'s formula in further levels until one workgroup per
// channel remains; that last level writes mean, invstd and the running statistics. Then one
// elementwise pass normalizes. Every level's loop is bounded by the device's loop limit (a
// channel's N * S values are never looped over by one invocation). Backward: partial sums of gy
// and gy * xhat the same way, then one elementwise pass for dx.
// Where the elementwise pass runs on the row grid (training), it merges the last level's partials
// itself (at most kFusedPartials per channel, in every workgroup; MERGE_PARTIALS, SUM_PARTIALS)
// instead of a merge dispatch: the CNN's step loses 4 of its dispatches and barriers.
// batch_norm_max_pool2d fuses the following max pooling where its windows tile the planes (POOL):
// the normalizing kernel writes the pooled y and the argmax instead of y, and the backward's
// kernels read the pooled gradient at the argmax: no y, no pooling dispatch, no gradient of y's
// size (the CNN's step: 4 dispatches less, about 5 passes over each normalized tensor less).
#include "autograd/recording.hpp"
#include "gltensor/autograd.hpp"
#include "gltensor/nn_functional.hpp"
#include "gltensor/ops.hpp"
#include "nn/norm_variants.hpp"
#include "nn/pool_plan.hpp"
#include "runtime/launch.hpp"
#include "runtime/settings.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {
using namespace detail;

namespace {

constexpr std::uint32_t kLocal = 64;
constexpr std::uint64_t kTree = 6;  // log2(kLocal): the shared-memory tree's loop
// Values per invocation in the first level: 64 on software rasterizers (few workgroups), 8 on GPUs
// (more workgroups to fill them: the CNN's training step at batch 128 on the H100 ran 0.779 ms
// against 0.837 with 64, 0.799 with 32, 0.779 with 8 (cnn27); with the later kernels 0.495 with 8
// against 0.505 with 16 and 0.530 with 32 (bench/RESULTS.md, 2026-11-28, cnn34).
constexpr std::uint64_t kFirstIters = 64, kGpuFirstIters = 8;
// GLTENSOR_BATCH_NORM_ITERS (Settings::batch_norm_iters) forces either form (or 8, 32) on any device.
std::uint64_t first_iters(const DeviceImpl& dev) {
  if (const int forced = settings().batch_norm_iters; forced > 0) return static_cast<std::uint64_t>(forced);
  return dev.adapter().software ? kFirstIters : kGpuFirstIters;
}
constexpr std::uint64_t kMergeIters = 1024;

// x viewed as [N, C, S]; n = N * S values per channel.
struct Geom {
  std::int64_t N, C, S, n;
};

// One reduction level: values per invocation and workgroups (partials) per channel.
struct Level {
  std::uint64_t iters, P;
};

Level plan_level(std::uint64_t items, std::uint64_t want_iters, std::uint64_t limit) {
  std::uint64_t iters = std::max<std::uint64_t>(want_iters, 1);
  // At a limit below the tree's own loop, iters = 1 and the launch's check throws LimitError.
  if (limit != 0) iters = std::min(iters, limit > kTree ? limit - kTree : 1);
  const std::uint64_t chunk = kLocal * iters;
  return {iters, std::max<std::uint64_t>((items + chunk - 1) / chunk, 1)};
}
Level plan_merge(std::uint64_t partials, std::uint64_t limit) {
  return plan_level(partials, std::min<std::uint64_t>((partials + kLocal - 1) / kLocal, kMergeIters), limit);
}

// Uniforms of the reduction variants (BN_STATS, BN_STATS_MERGE, BN_GRAD_SUMS, BN_SUM_MERGE).
struct ReduceParams {
  Geom g;
  std::uint64_t items;  // values (first level) or partials per channel
  Level lv;
  bool walk;  // the first level: walks x's [N, C, S] layout
  void set(Uniforms& u) const {
    u.u32("u_C", g.C);
    u.u32("u_n", static_cast<std::int64_t>(items));
    u.u32("u_iters", static_cast<std::int64_t>(lv.iters));
    u.u32("u_chunk", static_cast<std::int64_t>(kLocal * lv.iters));
    u.u32("u_P", static_cast<std::int64_t>(lv.P));
    if (walk) {
      u.u32("u_S", g.S);
      u.u32("u_step_n", kLocal / g.S);
      u.u32("u_step_s", kLocal % g.S);
    }
  }
};
// The last statistics level's uniforms.
struct FinalParams {
  double n, eps, momentum;
  void set(Uniforms& u) const {
    u.f32("u_eps", eps);
    u.f32("u_momentum", momentum);
    u.f32("u_count", n);
    u.f32("u_unbias", 1.0 / (n - 1.0));
  }
};
// BN_STATS_MERGE's last level reads the shift x[c * S].
struct ShiftParams {
  std::int64_t S;
  void set(Uniforms& u) const { u.u32("u_S", S); }
};
// Elementwise grid (BN_NORM, BN_DX): rows of S values (ROWS: workgroups (S chunks, C, N), `iters`
// values per invocation, no division per element) when rows are long enough, else one
// invocation per element.
// ROWS: one image per workgroup (N along z; several, with their merge of the partials once,
// measured slower on the H100: bench/RESULTS.md, 2026-11-28, cnn32), `iters` values (POOL:
// windows) per invocation.
struct ElemGrid {
  bool rows;
  std::uint32_t local;
  std::uint64_t iters, gx;
  // The row loop's trips, `per` trips for each of the `iters` values (windows).
  std::uint64_t loops(std::uint64_t per = 1) const { return iters * per + 1; }
};
constexpr std::int64_t kRowsMinS = 64;
ElemGrid plan_elem(const Geom& g, std::uint64_t limit) {
  if (g.S < kRowsMinS) return {false, kLocal, 0, 0};
  const std::uint32_t local = kLocal;  // LOCAL_X: merge_iters counts kLocal partials a trip (MERGE_PARTIALS)
  std::uint64_t iters = std::min<std::uint64_t>((g.S + local - 1) / local, 16);
  if (limit != 0) iters = std::min(iters, limit > 1 ? limit - 1 : 1);
  const std::uint64_t chunk = local * iters;
  return ElemGrid{true, local, iters, (static_cast<std::uint64_t>(g.S) + chunk - 1) / chunk};
}
// Partials per channel that the row grid's kernels merge themselves (at most 4 per invocation,
// whose loop with the tree's and the row's fits the loop limit); 0: not there (the merge levels).
constexpr std::uint64_t kFusedPartials = 4 * kLocal;
// `loops`: the kernel's own loop trips beside the merge's.
std::uint64_t fused_partials_beside(std::uint64_t loops, std::uint64_t limit) {
  if (limit == 0) return kFusedPartials;
  if (limit <= loops + kTree) return 0;
  return std::min(kFusedPartials, kLocal * (limit - loops - kTree));
}
std::uint64_t fused_partials(const ElemGrid& e, std::uint64_t limit) {
  return e.rows ? fused_partials_beside(e.loops(), limit) : 0;
}

// The fused max pooling (POOL): windows KH x KW tiling each [H, W] plane into [OH, OW].
struct PoolDims {
  std::int64_t KH = 0, KW = 0, OH = 0, OW = 0, W = 0, N = 0;
  std::uint64_t window_loops() const { return static_cast<std::uint64_t>(1 + KH + KH * KW); }
};
// BN_GRAD_SUMS' POOL: x's plane size (its walk's u_S is the windows').
struct PlaneParams {
  std::int64_t S;
  void set(Uniforms& u) const { u.u32("u_xS", S); }
};
struct PoolUniforms {
  const PoolDims& p;
  void set(Uniforms& u) const {
    u.u32("u_W", p.W), u.u32("u_OW", p.OW), u.u32("u_OHW", p.OH * p.OW), u.u32("u_KH", p.KH), u.u32("u_KW", p.KW);
    u.u32("u_windows", p.N * p.OH * p.OW);
  }
};
// BN_NORM's POOL grid: workgroups (window chunks, C): a channel's N * OH * OW windows in one run
// (image nb's after nb - 1's), `iters` windows per invocation (as many as a plane's windows take
// 256 invocations for, at most 16): every invocation busy where planes have few windows (the CNN's
// 7 x 7: one workgroup a plane left 207 of 256 idle; cnn33, 2026-11-28).
ElemGrid plan_pool_grid(const PoolDims& p, std::uint64_t limit) {
  const std::uint64_t plane = static_cast<std::uint64_t>(p.OH * p.OW), windows = plane * p.N;
  std::uint64_t iters = std::min<std::uint64_t>((plane + kLocal - 1) / kLocal, 16);
  if (limit != 0) iters = std::max<std::uint64_t>(std::min(iters, (limit - 1) / p.window_loops()), 1);
  const std::uint64_t chunk = kLocal * iters;
  return ElemGrid{true, kLocal, iters, std::max<std::uint64_t>((windows + chunk - 1) / chunk, 1)};
}
std::uint64_t merge_iters(std::uint64_t P) { return (P + kLocal - 1) / kLocal; }
// The uniforms of the partials' merge in the elementwise kernels (MERGE_PARTIALS: with the last
// statistics level's, FinalParams).
struct MergeParams {
  std::uint64_t P;
  void set(Uniforms& u) const {
    u.u32("u_P", static_cast<std::int64_t>(P));
    u.u32("u_merge_iters", static_cast<std::int64_t>(merge_iters(P)));
  }
};

// Uniforms of the elementwise variants.
struct ElemParams {
  Geom g;
  ElemGrid e;
  bool eval, dx;
  double eps;
  void set(Uniforms& u) const {
    u.u32("u_C", g.C);
    u.u32("u_S", g.S);
    if (e.rows) {
      u.u32("u_iters", static_cast<std::int64_t>(e.iters));
    }
    if (!e.rows) u.u32("u_numel", g.N * g.C * g.S);
    if (eval) u.f32("u_eps", eps);
    if (dx && !eval) u.f32("u_inv_n", 1.0 / static_cast<double>(g.n));
  }
};
// The eval variant of BN_GRAD_SUMS: invstd from the running variance.
struct EpsParams {
  double eps;
  void set(Uniforms& u) const { u.f32("u_eps", eps); }
};
// Dispatches an elementwise variant on its grid (`P` partials merged first: MERGE_PARTIALS,
// SUM_PARTIALS).
void dispatch_elem(Launch& launch, const ElemGrid& e, const Geom& g, std::uint64_t P = 0) {
  launch.loop_iterations(e.rows ? e.loops() + (P ? merge_iters(P) + kTree : 0) : 0);
  if (e.rows)
    launch.groups(e.gx, static_cast<std::uint64_t>(g.C), static_cast<std::uint64_t>(g.N));
  else
    launch.invocations(static_cast<std::uint64_t>(g.N * g.C * g.S));
}

// The kernels index from element 0 of contiguous operands: views are copied first.
Tensor dense(const Tensor& t) { return !t.defined() || (t.is_contiguous() && t.offset() == 0) ? t : t.clone(); }

// A level's partials [k][C][P] (k = 3: count, mean, M2; k = 2: sums) left for the elementwise
// kernel to merge (MERGE_PARTIALS, SUM_PARTIALS), or none (t undefined).
struct Partials {
  Tensor t;
  std::uint64_t P = 0;
};

// Training statistics: mean and invstd [C] (f32), and running_mean / running_var (dense, or
// undefined) updated in the last level; or, where a level leaves at most `fuse_max` partials per
// channel (0: never), those partials, for launch_normalize to merge.
Partials launch_stats(DeviceImpl& dev, const Tensor& x, const Geom& g, const Tensor& mean, const Tensor& invstd,
                      const Tensor& rm, const Tensor& rv, double momentum, double eps, std::uint64_t fuse_max) {
  const std::uint64_t limit = dev.loop_limit();
  Level lv = plan_level(static_cast<std::uint64_t>(g.n), first_iters(dev), limit);
  Tensor in = x;
  std::uint64_t items = static_cast<std::uint64_t>(g.n);
  for (bool first = true;; first = false) {
    const bool keep = lv.P <= fuse_max, last = !keep && lv.P == 1;
    Launch launch(dev, "batch_norm");
    BatchNormVariant bv;
    bv.stage = first ? "BN_STATS" : "BN_STATS_MERGE", bv.final = last, bv.in = in.dtype(), bv.x = x.dtype();
    bv.has_rm = last && rm.defined(), bv.has_rv = last && rv.defined();
    if (rm.defined()) bv.rm = rm.dtype();
    if (rv.defined()) bv.rv = rv.dtype();
    Tensor out;
    if (last) {
      launch.program(bv.kFile, bv.defines(), {kLocal}).write(mean).read(in).write(invstd);
      // x stands in for absent running statistics (never read)
      if (rm.defined() || rv.defined() || !first) rm.defined() ? launch.write(rm) : launch.read(x);
      if (rv.defined() || !first) rv.defined() ? launch.write(rv) : launch.read(x);
      if (!first) launch.read(x).params(ShiftParams{g.S});
      launch.params(FinalParams{static_cast<double>(g.n), eps, momentum});
    } else {
      out = alloc(dev, {3 * g.C * static_cast<std::int64_t>(lv.P)}, DType::f32, "batch_norm");
      launch.program(bv.kFile, bv.defines(), {kLocal}).write(out).read(in);
    }
    launch.params(ReduceParams{g, items, lv, first}).loop_iterations(lv.iters + kTree);
    launch.groups(lv.P, static_cast<std::uint64_t>(g.C));
    if (last) return {};
    if (keep) return {out, lv.P};
    in = out;
    items = lv.P;
    lv = plan_merge(items, limit);
  }
}

// The last statistics level's part where the normalizing kernel merges the partials
// (MERGE_PARTIALS): they, and the running statistics it updates.
struct StatsMerge {
  Partials part;
  Tensor rm, rv;
  double momentum;
};

// y = (x - mean) * invstd [* w] [+ b] [then relu]; eval: a = running_mean, b = running_var, else
// mean, invstd (written here first where m.part holds partials).
// pool (defined: POOL): y is the pooled output, pool->second the argmax written.
void launch_normalize(DeviceImpl& dev, const Tensor& y, const Tensor& x, const Tensor& a, const Tensor& v,
                      const Tensor& w, const Tensor& b, const Geom& g, bool eval, double eps, bool relu,
                      const StatsMerge& m, const PoolDims* pool = nullptr, const Tensor& argmax = Tensor()) {
  Launch launch(dev, "batch_norm");
  const ElemGrid e = pool ? plan_pool_grid(*pool, dev.loop_limit()) : plan_elem(g, dev.loop_limit());
  const bool merge = m.part.t.defined();
  BatchNormVariant bv;
  bv.stage = "BN_NORM", bv.rows = e.rows, bv.eval = eval, bv.has_w = w.defined(), bv.has_b = b.defined();
  bv.pool = pool != nullptr;
  bv.relu = relu, bv.merge_partials = merge, bv.has_rm = merge && m.rm.defined(), bv.has_rv = merge && m.rv.defined();
  bv.y = y.dtype(), bv.x = x.dtype(), bv.a = a.dtype(), bv.v = v.dtype();
  if (w.defined()) bv.w = w.dtype();
  if (b.defined()) bv.b = b.dtype();
  if (m.rm.defined()) bv.rm = m.rm.dtype();
  if (m.rv.defined()) bv.rv = m.rv.dtype();
  launch.program(bv.kFile, bv.defines(), {e.local}).write(y).read(x);
  merge ? launch.write(a).write(v) : launch.read(a).read(v);
  launch.read(w.defined() ? w : x);  // x stands in for absent operands (never read)
  if (b.defined() || merge || pool) launch.read(b.defined() ? b : x);
  if (merge) {
    launch.read(m.part.t);
    m.rm.defined() ? launch.write(m.rm) : launch.read(x);
    if (m.rv.defined() || pool) m.rv.defined() ? launch.write(m.rv) : launch.read(x);
    launch.params(MergeParams{m.part.P}).params(FinalParams{static_cast<double>(g.n), eps, m.momentum});
  } else if (pool) {
    launch.read(x).read(x).read(x);
  }
  launch.params(ElemParams{g, e, eval, false, eps});
  if (!pool) return dispatch_elem(launch, e, g, merge ? m.part.P : 0);
  launch.write(argmax).params(PoolUniforms{*pool});
  launch.loop_iterations(e.loops(pool->window_loops()) + (merge ? merge_iters(m.part.P) + kTree : 0));
  launch.groups(e.gx, static_cast<std::uint64_t>(g.C));
}

// What the backward needs, captured by the autograd node.
struct Saved {
  Geom g;
  Tensor x, a, v, w;  // dense; a, v: mean and invstd, or (eval) copies of the running statistics
  bool eval;
  double eps;
  bool need_x, need_w, need_b;
  DType w_dtype, b_dtype;
  Tensor argmax;  // defined: the fused max pooling's (POOL), gy is its pooled gradient
  PoolDims pool;
};

// [2 * C] f32: sum(gy) per channel, then sum(gy * xhat); or, where a level leaves at most
// `fuse_max` partial sums per channel, those [2][C][P] (for BN_DX's SUM_PARTIALS).
// ymask (defined: the fused ReLU's output): gy counts where ymask > 0 only (RELU_MASK).
Partials grad_sums(DeviceImpl& dev, const Tensor& gy, const Saved& s, const Tensor& ymask, std::uint64_t fuse_max) {
  const std::uint64_t limit = dev.loop_limit();
  // POOL: the first level walks the pooled windows [N, C, OH * OW], each adding its argmax's terms
  const std::int64_t windows = s.pool.OH * s.pool.OW;
  const Geom g = s.argmax.defined() ? Geom{s.g.N, s.g.C, windows, s.g.N * windows} : s.g;
  Level lv = plan_level(static_cast<std::uint64_t>(g.n), first_iters(dev), limit);
  Tensor in = gy;
  std::uint64_t items = static_cast<std::uint64_t>(g.n);
  for (bool first = true;; first = false) {
    Tensor out = alloc(dev, {2 * g.C * static_cast<std::int64_t>(lv.P)}, DType::f32, "batch_norm_backward");
    Launch launch(dev, "batch_norm_backward");
    BatchNormVariant bv;
    bv.stage = first ? "BN_GRAD_SUMS" : "BN_SUM_MERGE", bv.eval = first && s.eval, bv.in = in.dtype();
    bv.x = s.x.dtype(), bv.a = s.a.dtype(), bv.v = s.v.dtype();
    if (first) {
      bv.relu_mask = ymask.defined(), bv.pool = s.argmax.defined();
      if (ymask.defined()) bv.y = ymask.dtype();
      launch.program(bv.kFile, bv.defines(), {kLocal}).write(out).read(in).read(s.x).read(s.a).read(s.v);
      if (ymask.defined()) launch.read(ymask);
      if (bv.pool) launch.read(s.argmax).params(PlaneParams{s.g.S});
      if (s.eval) launch.params(EpsParams{s.eps});
    } else {
      launch.program(bv.kFile, bv.defines(), {kLocal}).write(out).read(in);
    }
    launch.params(ReduceParams{g, items, lv, first}).loop_iterations(lv.iters + kTree);
    launch.groups(lv.P, static_cast<std::uint64_t>(g.C));
    if (lv.P == 1 || lv.P <= fuse_max) return {out, lv.P};
    in = out;
    items = lv.P;
    lv = plan_merge(items, limit);
  }
}

// ymask (defined: the fused ReLU's output y): the ReLU's gradient applied to gy_in in the kernels'
// loads (RELU_MASK), not by relu_backward's dispatch and copy. With s.argmax (POOL), gy_in is the
// pooled gradient, read at the argmax (the ReLU's gradient in it).
std::vector<Tensor> batch_norm_backward(const Tensor& gy_in, const Saved& s, const Tensor& ymask) {
  DeviceImpl& dev = dev_of(gy_in);
  Enter guard(dev, "batch_norm_backward");
  const Geom& g = s.g;
  std::vector<Tensor> out(3);
  if (g.N * g.C * g.S == 0) {  // eval on an empty batch
    if (s.need_x) out[0] = zeros(gy_in.device(), s.x.shape(), s.x.dtype());
    if (s.need_w) out[1] = zeros(gy_in.device(), {g.C}, s.w_dtype);
    if (s.need_b) out[2] = zeros(gy_in.device(), {g.C}, s.b_dtype);
    return out;
  }
  const Tensor gy = dense(gy_in);
  const bool sums_needed = s.need_w || s.need_b || (s.need_x && !s.eval);
  const std::uint64_t limit = dev.loop_limit();
  // POOL: BN_DX on the normalizing kernel's window grid
  const bool pool = s.argmax.defined();
  const ElemGrid e = pool ? plan_pool_grid(s.pool, limit) : plan_elem(g, limit);
  const std::uint64_t loops = pool ? e.loops(s.pool.window_loops()) : e.loops();
  // BN_DX merges the partial sums itself (SUM_PARTIALS) where it runs on the row grid
  const std::uint64_t fuse_max = s.need_x && !s.eval && e.rows ? fused_partials_beside(loops, limit) : 0;
  const Partials part = sums_needed ? grad_sums(dev, gy, s, ymask, fuse_max) : Partials{};
  const bool merge = part.P > 1;  // else part.t holds the sums [2][C]
  Tensor sums = merge ? alloc(dev, {2 * g.C}, DType::f32, "batch_norm_backward") : part.t;
  if (s.need_x) {
    Tensor dx = alloc(dev, s.x.shape(), s.x.dtype(), "batch_norm_backward");
    Launch launch(dev, "batch_norm_backward");
    BatchNormVariant bv;
    bv.stage = "BN_DX", bv.rows = e.rows, bv.eval = s.eval, bv.has_w = s.w.defined();
    bv.relu_mask = ymask.defined(), bv.sum_partials = merge, bv.pool = s.argmax.defined();
    bv.y = dx.dtype(), bv.in = gy.dtype(), bv.x = s.x.dtype(), bv.a = s.a.dtype(), bv.v = s.v.dtype();
    if (s.w.defined()) bv.w = s.w.dtype();
    launch.program(bv.kFile, bv.defines(), {e.local}).write(dx).read(gy).read(s.x).read(s.a).read(s.v);
    launch.read(s.w.defined() ? s.w : s.x);  // x stands in for absent operands (never read)
    if (!s.eval || ymask.defined() || s.argmax.defined())
      launch.read(s.eval ? s.x : part.t);  // (EVAL: x stands in, never read)
    const Tensor& mask = bv.pool ? s.argmax : ymask;
    if (mask.defined() || merge) launch.read(mask.defined() ? mask : s.x);
    if (merge) launch.write(sums).params(MergeParams{part.P});
    if (bv.pool) launch.params(PoolUniforms{s.pool});
    launch.params(ElemParams{g, e, s.eval, true, s.eps});
    if (pool) {
      launch.loop_iterations(loops + (merge ? merge_iters(part.P) + kTree : 0));
      launch.groups(e.gx, static_cast<std::uint64_t>(g.C));
    } else {
      dispatch_elem(launch, e, g, merge ? part.P : 0);
    }
    out[0] = dx;
  }
  if (s.need_b) out[2] = sums.slice(0, 0, g.C).to(s.b_dtype);
  if (s.need_w) out[1] = sums.slice(0, g.C, 2 * g.C).to(s.w_dtype);
  return out;
}

void check_param(const char* op, const Tensor& p, std::int64_t C, const char* what) {
  if (p.defined() && p.shape() != Shape{C})
    throw ShapeError(std::string("gltensor::") + op + ": " + what + " has shape " + to_string(p.shape()) +
                     ", expected " + to_string({C}));
}

// batch_norm, and with pool (windows that tile x's planes) batch_norm_max_pool2d's fused form.
Tensor batch_norm_impl(const char* op, const Tensor& x_in, Tensor running_mean, Tensor running_var,
                       const Tensor& weight, const Tensor& bias, bool training, double momentum, double eps,
                       Activation act, const PoolDims* pool) {
  check_defined(op, x_in);
  if (act != Activation::none && act != Activation::relu)
    throw ValueError(std::string("gltensor::") + op + ": act must be none or relu, got " + Epilogue(act).name());
  const bool relu = act == Activation::relu;
  const std::string name = std::string("gltensor::") + op + ": ";
  if (!(eps > 0)) throw ValueError(name + "eps must be positive, got " + std::to_string(eps));
  if (x_in.dim() < 2) throw ShapeError(name + "expects [N, C, ...], got " + to_string(x_in.shape()));
  const std::int64_t C = x_in.size(1);
  check_param(op, weight, C, "weight");
  check_param(op, bias, C, "bias");
  check_param(op, running_mean, C, "running_mean");
  check_param(op, running_var, C, "running_var");
  std::int64_t S = 1;
  for (std::int64_t d = 2; d < x_in.dim(); ++d) S *= x_in.size(d);
  const Geom g{x_in.size(0), C, S, x_in.size(0) * S};
  if (training && (C == 0 || g.n <= 1))
    throw ValueError(name + "expected more than 1 value per channel when training, got input " +
                     to_string(x_in.shape()));
  if (!training && (!running_mean.defined() || !running_var.defined()))
    throw ValueError(name + "eval mode needs running_mean and running_var");
  DeviceImpl& dev = dev_of(x_in);
  Enter guard(dev, op);  // one entry for the allocations and launches
  const Tensor x = dense(x_in), w = dense(weight), b = dense(bias);
  const DType od = is_floating(x.dtype()) ? x.dtype() : DType::f32;
  Tensor y = alloc(dev, pool ? Shape{g.N, C, pool->OH, pool->OW} : x.shape(), od, op);
  Saved s{g, x, Tensor(), Tensor(), w, !training, eps, false, false, false, DType::f32, DType::f32, Tensor(), {}};
  if (pool) s.argmax = alloc(dev, y.shape(), DType::i32, op), s.pool = *pool;
  const std::uint64_t limit = dev.loop_limit();
  StatsMerge merge{};
  if (training) {
    s.a = alloc(dev, {C}, DType::f32, op);
    s.v = alloc(dev, {C}, DType::f32, op);
    // the last statistics level updates dense running statistics in place (others via a copy)
    const Tensor rm = dense(running_mean), rv = dense(running_var);
    // BN_NORM merges the last level's partials (MERGE_PARTIALS) where it runs on the row grid
    const std::uint64_t fuse_max =
        pool ? fused_partials_beside(plan_pool_grid(*pool, limit).loops(pool->window_loops()), limit)
             : fused_partials(plan_elem(g, limit), limit);
    merge.part = launch_stats(dev, x, g, s.a, s.v, rm, rv, momentum, eps, y.numel() > 0 ? fuse_max : 0);
    merge.rm = rm, merge.rv = rv, merge.momentum = momentum;
    if (merge.part.t.defined()) launch_normalize(dev, y, x, s.a, s.v, w, b, g, false, eps, relu, merge, pool, s.argmax);
    if (rm.defined() && rm.impl() != running_mean.impl()) running_mean.copy_(rm);
    if (rv.defined() && rv.impl() != running_var.impl()) running_var.copy_(rv);
  } else {
    s.a = dense(running_mean);
    s.v = dense(running_var);
  }
  if (y.numel() > 0 && !merge.part.t.defined())
    launch_normalize(dev, y, x, s.a, s.v, w, b, g, !training, eps, relu, {}, pool, s.argmax);
  if (autograd::any_requires_grad({&x_in, &weight, &bias})) {
    s.need_x = requires_grad(x_in);
    s.need_w = weight.defined() && requires_grad(weight);
    s.need_b = bias.defined() && requires_grad(bias);
    if (weight.defined()) s.w_dtype = weight.dtype();
    if (bias.defined()) s.b_dtype = bias.dtype();
    if (!training) {  // the backward uses the statistics of this call
      s.a = s.a.clone();
      s.v = s.v.clone();
    }
    if (s.w.defined()) s.w = detach(s.w);
    s.x = detach(x);
    // ReLU's gradient from the output's sign (y > 0 exactly where the normalized value is), in
    // the backward kernels' loads of gy.
    const Tensor yd = relu && !pool ? detach(y) : Tensor();
    autograd::record(
        y, {x_in, weight, bias}, [s, yd](const Tensor& gy) { return batch_norm_backward(gy, s, yd); }, op);
  }
  return y;
}

}  // namespace

Tensor batch_norm(const Tensor& x, Tensor running_mean, Tensor running_var, const Tensor& weight, const Tensor& bias,
                  bool training, double momentum, double eps, Activation act) {
  return batch_norm_impl("batch_norm", x, std::move(running_mean), std::move(running_var), weight, bias, training,
                         momentum, eps, act, nullptr);
}

Tensor batch_norm_max_pool2d(const Tensor& x, Tensor running_mean, Tensor running_var, const Tensor& weight,
                             const Tensor& bias, bool training, double momentum, double eps, Activation act,
                             const Pool2dOptions& pool) {
  // The fused form: f32 [N, C, H, W] and windows that tile each plane (stride = kernel, no
  // padding or dilation, H and W multiples of the kernel), whose loops fit one invocation.
  // Anything else runs as the two ops (their errors included; the pooling's options and sizes
  // checked first, naming this op).
  if (x.defined() && x.dim() == 4) {
    Pool2dOptions checked = pool;
    pool2d_out_hw("batch_norm_max_pool2d", x.shape(), checked);
  }
  bool fused = x.defined() && x.dim() == 4 && x.dtype() == DType::f32;
  PoolDims p;
  for (int d = 0; fused && d < 2; ++d) {
    const std::int64_t k = pool.kernel[d], st = pool.stride[d] == 0 ? k : pool.stride[d];
    const std::int64_t in = x.size(2 + d);
    fused = k > 0 && st == k && pool.padding[d] == 0 && (k == 1 || pool.dilation[d] == 1) && pool.dilation[d] > 0 &&
            in >= k && in % k == 0;
    (d == 0 ? p.KH : p.KW) = k;
    (d == 0 ? p.OH : p.OW) = k > 0 ? in / k : 0;
  }
  if (fused) {
    p.W = x.size(3), p.N = x.size(0);
    const std::uint64_t limit = dev_of(x).loop_limit();
    fused = limit == 0 || p.window_loops() + 1 <= limit;
  }
  if (!fused)  // (batch_norm's errors named as the fused path's)
    return max_pool2d(batch_norm_impl("batch_norm_max_pool2d", x, std::move(running_mean), std::move(running_var),
                                      weight, bias, training, momentum, eps, act, nullptr),
                      pool);
  return batch_norm_impl("batch_norm_max_pool2d", x, std::move(running_mean), std::move(running_var), weight, bias,
                         training, momentum, eps, act, &p);
}

}  // namespace gltensor
