// The fully fused MLP (fused_mlp.hpp): plan, Variant and launch of glsl/nn/fused_mlp.comp.
#include "nn/fused_mlp.hpp"

#include <algorithm>
#include <array>

#include "gltensor/errors.hpp"
#include "runtime/int_math.hpp"
#include "runtime/launch.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor::detail {

MlpLayer& FusedMlp::add(std::int64_t K, std::int64_t N) {
  MlpLayer l;
  l.K = K, l.N = N, l.w_offset = numel(), l.b_offset = l.w_offset + K * N;
  layers.push_back(l);
  return layers.back();
}

std::int64_t FusedMlp::numel() const { return layers.empty() ? 0 : layers.back().b_offset + layers.back().N; }

namespace {

// The largest row block of a choice (the one the load-time plan checks).
std::int64_t max_rows(const FusedMlpChoice& c) { return c.rows > 0 ? c.rows : 16; }
std::int64_t split_of(const FusedMlpChoice& c) { return c.split > 0 ? c.split : 1; }

// Floats of shared memory per row and unit of width.
std::int64_t shared_per_row(std::int64_t split) { return 2 + (split > 1 ? split : 0); }

}  // namespace

std::int64_t fused_mlp_max_width(const FusedMlpDevice& dev, const FusedMlpChoice& choice) {
  return dev.max_shared_memory / (shared_per_row(split_of(choice)) * max_rows(choice) * 4) / 4 * 4;
}

FusedMlpPlan plan_fused_mlp(const FusedMlp& mlp, const FusedMlpDevice& dev, const FusedMlpChoice& choice,
                            std::int64_t M) {
  FusedMlpPlan p;
  const auto& L = mlp.layers;
  p.rows = max_rows(choice);
  if (choice.rows <= 0 && M >= 0)  // about 64 workgroups, 4 rows at least
    p.rows = std::min(p.rows, std::max<std::int64_t>(4, ceil_div(ceil_div(M, 64), 4) * 4));
  p.split = split_of(choice);
  std::int64_t nmax = 0, kmax = 0;
  for (const auto& l : L) nmax = std::max(nmax, l.N), kmax = std::max(kmax, l.K);
  const std::int64_t max_local = std::max(64, dev.max_local / 64 * 64);
  const auto items = [&](std::int64_t split) { return p.rows / 4 * nmax * split; };
  const auto local_for = [&](std::int64_t split) {
    return dev.software ? 64 : std::clamp<std::int64_t>(ceil_div(items(split), 64) * 64, 64, max_local);
  };
  p.local = local_for(p.split);
  if (L.size() < 2 || L.size() > static_cast<std::size_t>(kFusedMlpMaxLayers)) {
    p.why = std::to_string(L.size()) + " layers (2 to " + std::to_string(kFusedMlpMaxLayers) + " fuse)";
    return p;
  }
  if (p.rows < 4 || p.rows % 4 || p.rows > 64 || p.split > 8) {
    p.why = "rows per workgroup " + std::to_string(p.rows) + " (a multiple of 4 in 4..64), split " +
            std::to_string(p.split) + " (1..8)";
    return p;
  }
  p.wmax = ceil_div(std::max(nmax, kmax), 4) * 4;
  const auto limit = [&](std::int64_t split) {
    return dev.max_shared_memory / (shared_per_row(split) * p.rows * 4) / 4 * 4;
  };
  if (p.wmax > limit(p.split)) {
    p.why = "width " + std::to_string(p.wmax) + " > " + std::to_string(limit(p.split)) + " (" +
            std::to_string(shared_per_row(p.split)) + " buffers of " + std::to_string(p.rows) + " rows in " +
            std::to_string(dev.max_shared_memory) + " bytes of shared memory)";
    return p;
  }
  // At run on GPUs, K in up to 8 slices of 8 k or more while every item keeps its invocation and
  // the slices' sums fit the shared memory: the H100 runs the three-Gemm model's layers in 33.5
  // us with 8 slices against 73 us with 1 (each k a dependent weight load; bench/RESULTS.md).
  if (choice.split <= 0 && M >= 0 && !dev.software)
    for (std::int64_t s : {8, 4, 2})
      if (ceil_div(kmax, s) >= 8 && items(s) <= max_local && p.wmax <= limit(s)) {
        p.split = s;
        p.local = local_for(s);
        break;
      }
  // The prefetch form: every layer's items within the invocations (item t is invocation t's), its
  // weights in registers; asked for (choice.prefetch 1), the invocations grow to the widest layer's
  // items on software renderers too.
  const auto pf_for = [&](std::int64_t split, std::int64_t local) -> std::int64_t {
    std::int64_t pf = 0;
    bool fits = true;
    for (const auto& l : L) {
      pf = std::max(pf, ceil_div(l.K, split));
      fits = fits && p.rows / 4 * l.N * split <= local;
    }
    return fits && pf <= kFusedMlpMaxPf && (pf + 48) * local <= kFusedMlpPfRegisters ? pf : 0;
  };
  if (choice.prefetch > 0 || (choice.prefetch < 0 && M >= 0 && !dev.software)) {
    // At run on GPUs 4 or 2 slices of 8 k or more where they fit: the H100 ran the three-Gemm
    // model's kernel in 13.6 us of GPU time with 4 slices, 14.5 with 8, 16.2 with 2, 17.4 with 1
    // (the loop form: 17.0 with 8; bench/RESULTS.md, gemm4).
    bool chosen = false;
    if (choice.split <= 0 && M >= 0 && !dev.software)
      for (std::int64_t s : {4, 2})
        if (ceil_div(kmax, s) >= 8 && p.wmax <= limit(s) && pf_for(s, local_for(s)) > 0) {
          p.split = s, p.local = local_for(s), p.pf = pf_for(s, p.local), chosen = true;
          break;
        }
    if (!chosen) {
      if (choice.prefetch > 0 && items(p.split) > p.local)
        p.local = std::clamp<std::int64_t>(ceil_div(items(p.split), 64) * 64, 64, max_local);
      p.pf = pf_for(p.split, p.local);
    }
  }
  // fused_mlp.comp's loops, each counting its exit test (the prefetch form's are fewer)
  std::uint64_t n = static_cast<std::uint64_t>(ceil_div(p.rows * L[0].K, p.local) + 1 + L.size() + 1);
  for (const auto& l : L) {
    n += static_cast<std::uint64_t>(ceil_div(p.rows / 4 * l.N * p.split, p.local) * (ceil_div(l.K, p.split) + 1) + 1);
    if (p.split > 1) n += static_cast<std::uint64_t>(ceil_div(p.rows / 4 * l.N, p.local) * (p.split + 1) + 1);
  }
  p.loop_iterations = n;
  if (n > dev.loop_budget) {
    p.why = std::to_string(n) + " loop iterations per invocation > the device's " + std::to_string(dev.loop_budget);
    return p;
  }
  p.ok = true;
  return p;
}

FusedMlpDevice fused_mlp_device(const Device& dev) {
  const DeviceImpl& d = *dev.impl();
  const Capabilities& c = d.caps();
  return {c.max_shared_memory, d.loop_budget(), dev.adapter().software,
          std::min(c.max_workgroup_invocations, c.max_workgroup_size[0])};
}

Defines FusedMlpVariant::defines() const {
  Defines d;
  d.uvalue("BM", static_cast<std::uint64_t>(rows)).uvalue("WMAX", static_cast<std::uint64_t>(wmax));
  d.value("SPLIT", split).value("PF", pf);  // signed: the preprocessor tests them
  d.operand(0, y, CT::f32, true).operand(1, x, CT::f32, false).operand(2, params, CT::f32, false);
  return d;
}

std::vector<FusedMlpVariant> FusedMlpVariant::space() {
  std::vector<FusedMlpVariant> out;
  for (std::int64_t rows : {4, 8, 16, 64})
    for (std::int64_t wmax : {4, 96, 256})
      for (std::int64_t split : {1, 4})
        for (DType p : {DType::f32, DType::f16}) {
          FusedMlpVariant v;
          v.rows = rows, v.wmax = wmax, v.split = split, v.params = p;
          out.push_back(v);
        }
  // the prefetch form: one and several slices, f32 and f16 parameters
  for (std::int64_t split : {1, 8})
    for (DType p : {DType::f32, DType::f16}) {
      FusedMlpVariant v;
      v.rows = 4, v.wmax = 96, v.split = split, v.pf = split == 1 ? 32 : 12, v.params = p;
      out.push_back(v);
    }
  return out;
}

namespace {

// Uniforms of fused_mlp.comp: the rows and every layer's widths, offsets, activation and scales.
struct FusedMlpParams {
  std::int64_t rows, x_off, x_f, x_rs, x_gs;
  const FusedMlp& mlp;
  void set(Uniforms& u) const {
    constexpr std::size_t kMax = kFusedMlpMaxLayers;
    std::array<std::uint32_t, kMax + 1> width{};
    std::array<std::uint32_t, kMax> w{}, b{}, act{};
    std::array<float, kMax> alpha{}, beta{}, p0{}, p1{};
    const auto& L = mlp.layers;
    width[0] = static_cast<std::uint32_t>(L[0].K);
    for (std::size_t l = 0; l < L.size(); ++l) {
      width[l + 1] = static_cast<std::uint32_t>(L[l].N);
      w[l] = static_cast<std::uint32_t>(L[l].w_offset), b[l] = static_cast<std::uint32_t>(L[l].b_offset);
      act[l] = static_cast<std::uint32_t>(L[l].act.act);  // the kernel's codes: Activation's order
      alpha[l] = static_cast<float>(L[l].alpha), beta[l] = static_cast<float>(L[l].beta);
      p0[l] = L[l].act.p0, p1[l] = L[l].act.p1;
    }
    u.u32("u_rows", rows);
    u.u32("u_x_off", x_off);
    u.u32("u_x_f", x_f);
    u.u32("u_x_rs", x_rs);
    u.u32("u_x_gs", x_gs);
    u.u32("u_layers", static_cast<std::int64_t>(L.size()));
    u.u32s("u_width", width);
    u.u32s("u_w", w);
    u.u32s("u_b", b);
    u.u32s("u_act", act);
    u.f32s("u_alpha", alpha);
    u.f32s("u_beta", beta);
    u.f32s("u_p0", p0);
    u.f32s("u_p1", p1);
  }
};

}  // namespace

Tensor fused_mlp(const char* op, const Tensor& x, const Tensor& params, const FusedMlp& mlp,
                 const FusedMlpChoice& choice, bool host_out) {
  const std::string name = std::string("gltensor::") + op;
  if (mlp.layers.empty()) throw ValueError(name + ": no layers");
  const std::int64_t K = mlp.layers.front().K, N = mlp.layers.back().N;
  if (x.dtype() != DType::f32) throw DTypeError(name + ": x must be float32, got " + dtype_name(x.dtype()));
  if (x.dim() < 1 || x.size(-1) != K || (mlp.gemm_input && x.dim() != 2))
    throw ShapeError(name + ": x " + to_string(x.shape()) + " does not fit the first layer's weight [" +
                     std::to_string(K) + ", " + std::to_string(mlp.layers.front().N) + "]" +
                     (mlp.gemm_input ? " (Gemm: x must be 2-D)" : ""));
  if (params.dim() != 1 || params.numel() != mlp.numel() ||
      (params.dtype() != DType::f32 && params.dtype() != DType::f16))
    throw ShapeError(name + ": packed parameters " + to_string(params.shape()) + " " + dtype_name(params.dtype()) +
                     ", expected [" + std::to_string(mlp.numel()) + "] float32 or float16");
  DeviceImpl& dev = dev_of(x);
  Shape out_shape = x.shape();
  out_shape.back() = N;
  std::int64_t rows = 1;
  for (std::size_t d = 0; d + 1 < out_shape.size(); ++d) rows *= out_shape[d];
  const FusedMlpPlan plan = plan_fused_mlp(mlp, fused_mlp_device(x.device()), choice, rows);
  if (!plan.ok) throw LimitError(name + ": " + std::to_string(mlp.layers.size()) + " layers: " + plan.why);
  Tensor y = host_out && rows > 0 ? alloc_host(dev, out_shape, DType::f32, op) : Tensor();
  if (!y.defined()) y = alloc(dev, out_shape, DType::f32, op);
  if (rows == 0) return y;
  // x read in place where its rows are groups of evenly strided rows, evenly strided (the leading
  // dims two strides, the last dim contiguous: an STFT's frames of signals, rows that overlap, in
  // fuse_stft_power's plan), else copied.
  std::int64_t rs = K, f = rows, gs = 0;  // rows per group, the rows' and the groups' strides
  bool strided = K <= 1 || x.strides().back() == 1;
  int level = 0;                      // leading dims of more than one row: 1 the rows', 2 the groups'
  std::int64_t next = -1, count = 1;  // the stride that continues a level; rows of level 1
  for (std::int64_t d = x.dim() - 2; d >= 0 && strided; --d) {
    const std::int64_t sd = x.strides()[static_cast<std::size_t>(d)], sz = x.size(d);
    if (sz == 1) continue;
    if (level == 0) {
      rs = sd, count = sz, level = 1;
    } else if (sd == next) {
      if (level == 1) count *= sz;
    } else if (level == 1) {
      gs = sd, f = count, level = 2;
    } else {
      strided = false;
    }
    next = sd * sz;
  }
  const bool fits = strided && rs >= 0 && gs >= 0 && f > 0 && x.offset() >= 0 &&
                    x.offset() + (rows / f - 1) * gs + (f - 1) * rs + K <= std::int64_t{0xffffffff};
  const Tensor xd = fits ? x : x.contiguous();
  if (!fits) rs = K, f = rows, gs = 0;
  const Tensor pd = params.is_contiguous() && params.offset() == 0 ? params : params.contiguous();
  FusedMlpVariant v;
  v.rows = plan.rows, v.wmax = plan.wmax, v.split = plan.split, v.pf = plan.pf, v.params = pd.dtype();
  Launch launch(dev, op);
  launch.program(v.kFile, v.defines(), {static_cast<std::uint32_t>(plan.local)}).write(y).read(xd).read(pd);
  launch.params(FusedMlpParams{rows, xd.offset(), f, rs, gs, mlp}).loop_iterations(plan.loop_iterations);
  launch.groups_1d(static_cast<std::uint64_t>((rows + plan.rows - 1) / plan.rows));
  return y;
}

}  // namespace gltensor::detail
