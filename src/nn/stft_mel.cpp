// The log-mel front end in one dispatch (stft_mel.hpp): plan, Variant and launch of
// glsl/nn/stft_mel.comp.
#include "nn/stft_mel.hpp"

#include <algorithm>
#include <array>

#include "gltensor/errors.hpp"
#include "ops/activation.hpp"
#include "runtime/int_math.hpp"
#include "runtime/launch.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor::detail {

namespace {

std::int64_t pow2_at_most(std::int64_t v) {
  std::int64_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

// Shared bytes of stft_mel.comp's arrays: s_sd, s_tw, s_part (vec2) and s_pow.
std::int64_t shared_of(std::int64_t n, std::int64_t m, std::int64_t frames, std::int64_t local) {
  return 8 * (frames * (n / 2 + 1) + n + frames * local) + 4 * frames * m;
}

struct StftMelParams {
  std::int64_t B, F, groups, L, step, x0, N;
  const Epilogue& act;
  void set(Uniforms& u) const {
    u.u32("u_batch", B);
    u.u32("u_frames", F);
    u.u32("u_groups", groups);
    u.u32("u_len", L);
    u.u32("u_step", step);
    u.u32("u_x0", x0);
    u.u32("u_mel", N);
    u.u32("u_act", static_cast<std::int64_t>(act.act));  // (act_by_code: Activation's order)
    const std::array<float, 2> p{act.p0, act.p1};
    u.f32s("u_p", p);
  }
};

}  // namespace

StftMelPlan plan_stft_mel(std::int64_t n, std::int64_t m, std::int64_t N, const StftMelDevice& d,
                          const StftMelChoice& choice) {
  StftMelPlan p;
  if (n < 1 || m < 1 || N < 1) {
    p.why = "n " + std::to_string(n) + ", bins " + std::to_string(m) + ", mel bins " + std::to_string(N) + ": empty";
    return p;
  }
  if (n > kStftMelMaxLength || m > n) {
    p.why = "frame length " + std::to_string(n) + " (at most " + std::to_string(kStftMelMaxLength) + "), bins " +
            std::to_string(m) + " (at most n)";
    return p;
  }
  const std::int64_t most = pow2_at_most(std::min<std::int64_t>(d.max_local, 1024));
  p.frames = choice.frames > 0 ? choice.frames : d.software ? 4 : 1;
  p.local = choice.local > 0 ? std::min(choice.local, most) : std::min<std::int64_t>(d.software ? 256 : 1024, most);
  const std::int64_t H = n / 2 + 1;
  auto slices_for = [&](std::int64_t local) {
    if (choice.slices > 0) return std::min(choice.slices, local);
    // each bin an invocation where the workgroup has them, at most 32 slices and H
    std::int64_t s = 1;
    while (s * 2 <= 32 && s * 2 <= H && local / (s * 2) >= m) s *= 2;
    return s;
  };
  // fewer invocations (the plan's only) until the shared arrays fit
  while (choice.local == 0 && p.local > 32 && shared_of(n, m, p.frames, p.local) > d.shared_bytes) p.local /= 2;
  p.slices = slices_for(p.local);
  p.shared_bytes = shared_of(n, m, p.frames, p.local);
  if (p.shared_bytes > d.shared_bytes) {
    p.why = std::to_string(p.shared_bytes) + " bytes of shared memory (n " + std::to_string(n) + ", " +
            std::to_string(p.frames) + " frames, " + std::to_string(p.local) + " invocations) > the device's " +
            std::to_string(d.shared_bytes);
    return p;
  }
  const auto L = static_cast<std::uint64_t>(p.local), S = static_cast<std::uint64_t>(p.slices),
             FR = static_cast<std::uint64_t>(p.frames);
  // twiddles in registers: the plan's 8 (1 forced: none, the table form), at most T = ceil(H / S)'s
  // power of two above
  p.twiddles = choice.twiddles == 1 ? 0 : choice.twiddles > 1 ? choice.twiddles : 8;
  std::int64_t tmax = 1;
  while (tmax < (H + p.slices - 1) / p.slices) tmax *= 2;
  if (choice.twiddles == 0) p.twiddles = std::min(p.twiddles, std::max<std::int64_t>(tmax, 2));
  if (N > p.local) {
    p.why = std::to_string(N) + " mel bins > the workgroup's " + std::to_string(p.local) + " invocations";
    return p;
  }
  p.mel_lanes = std::min<std::int64_t>(32, pow2_at_most(p.local / N));
  p.mel_regs = (m + p.mel_lanes - 1) / p.mel_lanes;
  if (p.mel_regs > kStftMelMaxMelRegs) p.mel_regs = 0;  // (the weights read in the product's loop)
  const std::uint64_t rounds = ceil_div(static_cast<std::uint64_t>(m), L / S);
  const std::uint64_t trips =
      ceil_div(static_cast<std::uint64_t>(H), S * std::max<std::uint64_t>(1, static_cast<std::uint64_t>(p.twiddles)));
  p.loop_iterations =
      ceil_div(static_cast<std::uint64_t>(n), L) + 1 + ceil_div(FR * static_cast<std::uint64_t>(H), L) + 1 + rounds +
      1 + rounds * (trips + 1 + (ceil_div(FR * (L / S), L) + 1) * (S + 1)) +
      (p.mel_regs == 0 ? FR * (ceil_div(static_cast<std::uint64_t>(m), static_cast<std::uint64_t>(p.mel_lanes)) + 1)
                       : 0) +
      ceil_div(FR * static_cast<std::uint64_t>(N), L) + 1;
  if (p.loop_iterations > d.loop_budget) {
    p.why = std::to_string(p.loop_iterations) + " loop iterations per invocation > the device's " +
            std::to_string(d.loop_budget);
    return p;
  }
  p.ok = true;
  return p;
}

StftMelDevice stft_mel_device(const Tensor& x) {
  const DeviceImpl& dev = dev_of(x);
  const Capabilities& c = dev.caps();
  return {std::min(c.max_workgroup_invocations, c.max_workgroup_size[0]), c.max_shared_memory, dev.loop_budget(),
          x.device().adapter().software};
}

Defines StftMelVariant::defines() const {
  Defines d;
  d.uvalue("N_FFT", static_cast<std::uint64_t>(n)).uvalue("BINS", static_cast<std::uint64_t>(m));
  d.uvalue("FRAMES", static_cast<std::uint64_t>(frames)).uvalue("SLICES", static_cast<std::uint64_t>(slices));
  d.value("TWQ", twiddles);                                                     // signed: the preprocessor tests it
  d.uvalue("ML", static_cast<std::uint64_t>(mel_lanes)).value("MQ", mel_regs);  // (MQ: the preprocessor tests it)
  d.operand(0, DType::f32, CT::f32, true);
  for (int i = 1; i <= 5; ++i) d.operand(i, DType::f32, CT::f32, false);
  return d;
}

Tensor stft_mel(const char* op, const Tensor& x, std::int64_t step, const Tensor& window, const Tensor& twiddles,
                const Tensor& M, const Tensor& bias, const Epilogue& epilogue, const StftMelChoice& choice,
                bool host_out) {
  const std::string name = std::string("gltensor::") + op;
  for (const Tensor* t : {&x, &window, &twiddles, &M, &bias})
    if (t->dtype() != DType::f32) throw DTypeError(name + ": tensors must be float32, got " + dtype_name(t->dtype()));
  check_epilogue_act_only(op, epilogue);
  check_epilogue(op, epilogue);
  if (step < 1) throw ValueError(name + ": frame step " + std::to_string(step) + " must be at least 1");
  const std::int64_t n = window.numel();
  if (x.dim() != 2 || window.dim() != 1 || twiddles.dim() != 2 || twiddles.size(0) != n || twiddles.size(1) != 2 ||
      M.dim() != 2 || bias.dim() != 1 || bias.size(0) != M.size(1) || n < 1 || n > x.size(1))
    throw ShapeError(name + ": x " + to_string(x.shape()) + " (B, L), window " + to_string(window.shape()) +
                     " (n <= L), twiddles " + to_string(twiddles.shape()) + " (n, 2), M " + to_string(M.shape()) +
                     " (m, N), bias " + to_string(bias.shape()) + " (N) do not fit");
  DeviceImpl& dev = dev_of(x);
  const std::int64_t B = x.size(0), L = x.size(1), m = M.size(0), N = M.size(1), F = 1 + (L - n) / step;
  const Shape out_shape{B, F, N};
  if (const std::int64_t limit = dev.ssbo_limit(); B * F > limit / (N * 4 > 0 ? N * 4 : 1))
    throw LimitError(name + ": the output [" + std::to_string(B) + ", " + std::to_string(F) + ", " + std::to_string(N) +
                     "] of float32 is past the device's max SSBO block of " + std::to_string(limit) + " bytes");
  Tensor y = host_out && B * F > 0 ? alloc_host(dev, out_shape, DType::f32, op) : Tensor();
  if (!y.defined()) y = alloc(dev, out_shape, DType::f32, op);
  if (B * F == 0) return y;
  const StftMelPlan plan = plan_stft_mel(n, m, N, stft_mel_device(x), choice);
  if (!plan.ok) throw LimitError(name + ": x " + to_string(x.shape()) + ", n " + std::to_string(n) + ": " + plan.why);
  auto dense = [](const Tensor& t) { return t.is_contiguous() && t.offset() == 0 ? t : t.contiguous(); };
  const Tensor xd = x.is_contiguous() ? x : x.contiguous();
  if (xd.offset() + B * L > std::int64_t{0xffffffff})
    throw LimitError(name + ": x " + to_string(x.shape()) + " is past 2^32 elements");
  const Tensor wd = dense(window), td = dense(twiddles), Md = dense(M), bd = dense(bias);
  StftMelVariant v;
  v.n = n, v.m = m, v.frames = plan.frames, v.slices = plan.slices, v.twiddles = plan.twiddles;
  v.mel_lanes = plan.mel_lanes, v.mel_regs = plan.mel_regs;
  const std::int64_t groups = (F + plan.frames - 1) / plan.frames;
  Launch launch(dev, op);
  launch.program(v.kFile, v.defines(), {static_cast<std::uint32_t>(plan.local)})
      .write(y)
      .read(xd)
      .read(wd)
      .read(td)
      .read(Md)
      .read(bd);
  launch.params(StftMelParams{B, F, groups, L, step, xd.offset(), N, epilogue}).loop_iterations(plan.loop_iterations);
  launch.groups_1d(static_cast<std::uint64_t>(B * groups));
  return y;
}

}  // namespace gltensor::detail
