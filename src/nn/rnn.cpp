// Recurrent layers (ONNX LSTM, GRU, RNN) for the model runtime: see rnn.hpp and glsl/nn/rnn.comp.
#include "nn/rnn.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <tuple>
#include <utility>

#include "gltensor/errors.hpp"
#include "gltensor/linalg.hpp"
#include "gltensor/ops.hpp"
#include "runtime/cuda_memory.hpp"
#include "runtime/launch.hpp"
#include "runtime/settings.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor::detail {

namespace {

std::string lower(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// A float32 copy of t, contiguous from element 0, that the kernels may write.
Tensor fresh_f32(const Tensor& t) {
  Tensor f = t.dtype() == DType::f32 ? t : t.to(DType::f32);
  if (f.impl() == t.impl() || !f.is_contiguous() || f.offset() != 0) f = f.contiguous().clone();
  return f;
}

// A float32 tensor, contiguous from element 0 (read only: may share t's storage).
Tensor dense_f32(const Tensor& t) {
  Tensor f = t.dtype() == DType::f32 ? t : t.to(DType::f32);
  if (!f.is_contiguous() || f.offset() != 0) f = f.contiguous();
  if (f.offset() != 0) f = f.clone();
  return f;
}

std::string lit(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "float(%.9g)", v);
  return buf;
}

// "rnn_hardsigmoid(x, float(0.2), float(0.5))"
std::string act_call(const RnnActivation& a) {
  const std::string n = lower(a.name);
  double al = 0, be = 0;
  bool ua = false, ub = false;
  rnn_activation_defaults(n, al, be, ua, ub);
  std::string s = "rnn_" + n + "(x";
  if (ua) s += ", " + lit(a.alpha);
  if (ub) s += ", " + lit(a.beta);
  return s + ")";
}

// rnn.comp's uniforms; rnn_step.comp's (fused) without u_count and u_GR.
struct StepParams {
  std::int64_t count, B, H, T, D, GR, step, rev;
  double clip;
  bool fused = false;
  void set(Uniforms& u) const {
    if (!fused) {
      u.u32("u_count", count);
      u.u32("u_GR", GR);
    }
    u.u32("u_B", B);
    u.u32("u_H", H);
    u.u32("u_T", T);
    u.u32("u_D", D);
    u.u32("u_step", step);
    u.u32("u_rev", rev);
    u.f32("u_clip", clip);
  }
};

// The per-step time loop: per step h @ R^T of every direction as one batched matmul (GRU
// without linear_before_reset: z and r's, then (r . h) @ Rn^T), then rnn.comp's gate kernel.
void rnn_steps(const RnnCellVariant& cv, bool two_stage, const RnnLoop& l) {
  const char* op = "rnn";
  DeviceImpl& dev = dev_of(l.xw);
  const bool lstm = cv.cell == RnnCell::lstm;
  const std::int64_t D = l.D, B = l.B, H = l.H;
  const Tensor rt = two_stage ? dense_f32(l.rt) : Tensor();  // [D, H, G H], N contiguous, to split
  const Tensor r_zr = two_stage ? rt.narrow(2, 0, 2 * H).contiguous() : Tensor();
  const Tensor r_n = two_stage ? rt.narrow(2, 2 * H, H).contiguous() : Tensor();
  const Tensor rh = two_stage ? alloc(dev, {D, B, H}, DType::f32, op) : Tensor();
  RnnVariant rv;
  static_cast<RnnCellVariant&>(rv) = cv;
  RnnVariant rv_stage1 = rv;
  rv_stage1.stage1 = true;
  rv.two_stage = two_stage;
  const std::int64_t count = D * B * H;
  const Tensor& spare = l.bias;  // bound where a binding is unused
  auto gate = [&](const RnnVariant& v, const Tensor& hr, const Tensor& op8, bool stage1, std::int64_t step) {
    Launch launch(dev, op);
    launch.program(v.kFile, v.defines(), {64});
    launch.write(l.y).write(l.h);
    lstm ? launch.write(l.c) : launch.read(spare);
    launch.read(l.xw).read(hr).read(l.bias).read(l.p.defined() ? l.p : spare).read(l.seq.defined() ? l.seq : spare);
    if (!op8.defined())
      launch.read(spare);
    else
      stage1 ? launch.write(op8) : launch.read(op8);
    launch.params(StepParams{count, B, H, l.T, D, hr.shape()[2], step, l.rev, l.clip}).loop_iterations(0);
    launch.invocations(static_cast<std::uint64_t>(count));
  };
  for (std::int64_t s = 0; s < l.T; ++s) {
    if (two_stage) {
      const Tensor hr = matmul(l.h, r_zr);  // [D, B, 2H]
      gate(rv_stage1, hr, rh, true, s);
      const Tensor hn = dense_f32(matmul(rh, r_n));  // [D, B, H]
      gate(rv, hr, hn, false, s);
    } else {
      gate(rv, dense_f32(matmul(l.h, l.rt)), Tensor(), false, s);
    }
  }
}

// The fused per-step time loop (LSTM, GRU with linear_before_reset, RNN; rnn_step.comp): one
// dispatch a step for every direction, h and c alternating between two buffers (l.h and l.c, which
// hold the initial states and are rnn_forward's own copies, the pair's first half: odd steps
// write them when T >= 3), the last step writing the returned Y_h and Y_c (fresh
// buffers: no buffer that an output keeps is read or written by the other steps, so a replay that
// puts the outputs in host-visible memory (Model's outputs_to_host) keeps the steps' state in
// device memory). Reads l.r (R [D, G H, H], dense).
std::pair<Tensor, Tensor> fused_steps(const RnnCellVariant& cv, const RnnLoop& l) {
  const char* op = "rnn";
  DeviceImpl& dev = dev_of(l.xw);
  const bool lstm = cv.cell == RnnCell::lstm;
  const std::int64_t D = l.D, B = l.B, H = l.H;
  RnnStepVariant v;
  static_cast<RnnCellVariant&>(v) = cv;
  const std::int64_t local = cv.gates * v.units * v.parts, slices = (H + v.units - 1) / v.units;
  std::uint64_t parts_log = 0;
  for (std::int64_t k = v.parts; k > 1; k /= 2) ++parts_log;
  const std::uint64_t loops = static_cast<std::uint64_t>((H + v.parts - 1) / v.parts + 1) + parts_log + 1;
  const Tensor out_h = alloc(dev, {D, B, H}, DType::f32, op);
  const Tensor out_c = lstm ? alloc(dev, {D, B, H}, DType::f32, op) : Tensor();
  const Tensor h2 = l.T > 1 ? alloc(dev, {D, B, H}, DType::f32, op) : Tensor();
  const Tensor c2 = lstm && l.T > 1 ? alloc(dev, {D, B, H}, DType::f32, op) : Tensor();
  const Tensor& spare = l.bias;  // bound where a binding is unused
  for (std::int64_t s = 0; s < l.T; ++s) {
    const bool last = s == l.T - 1;
    const Tensor& hp = s % 2 == 0 ? l.h : h2;
    const Tensor& hn = last ? out_h : s % 2 == 0 ? h2 : l.h;
    Launch launch(dev, op);
    launch.program(v.kFile, v.defines(), {static_cast<std::uint32_t>(local)});
    launch.write(l.y).write(hn);
    lstm ? launch.write(last ? out_c : s % 2 == 0 ? c2 : l.c) : launch.read(spare);
    launch.read(l.xw).read(l.r).read(l.bias).read(l.p.defined() ? l.p : spare).read(l.seq.defined() ? l.seq : spare);
    launch.read(hp);
    lstm ? launch.read(s % 2 == 0 ? l.c : c2) : launch.read(spare);
    launch.params(StepParams{0, B, H, l.T, D, 0, s, l.rev, l.clip, true}).loop_iterations(loops);
    launch.groups_1d(static_cast<std::uint64_t>(D * B * slices));
  }
  return {out_h, out_c};
}

}  // namespace

bool rnn_activation_known(const std::string& name) {
  static const char* known[] = {"sigmoid",    "tanh",        "relu", "affine",   "leakyrelu", "thresholdedrelu",
                                "scaledtanh", "hardsigmoid", "elu",  "softsign", "softplus"};
  const std::string n = lower(name);
  return std::find(std::begin(known), std::end(known), n) != std::end(known);
}

void rnn_activation_defaults(const std::string& name, double& alpha, double& beta, bool& uses_alpha, bool& uses_beta) {
  const std::string n = lower(name);
  alpha = beta = 0;
  uses_alpha = uses_beta = false;
  if (n == "leakyrelu") {
    uses_alpha = true;
    alpha = 0.01;
  } else if (n == "thresholdedrelu" || n == "elu") {
    uses_alpha = true;
    alpha = 1.0;
  } else if (n == "hardsigmoid") {
    uses_alpha = uses_beta = true;
    alpha = 0.2;
    beta = 0.5;
  } else if (n == "affine") {
    uses_alpha = uses_beta = true;
    alpha = 1.0;
  } else if (n == "scaledtanh") {
    uses_alpha = uses_beta = true;
    alpha = beta = 1.0;
  }
}

RnnOutputs rnn_forward(const RnnSpec& spec, const Tensor& x_in, const Tensor& w, const Tensor& r, const Tensor& b,
                       const Tensor& seq_lens, const Tensor& h0, const Tensor& c0, const Tensor& p) {
  const char* op = "rnn";
  DeviceImpl& dev = dev_of(x_in);
  const Device device = x_in.device();
  const bool lstm = spec.cell == RnnCell::lstm, gru = spec.cell == RnnCell::gru;
  const std::int64_t G = lstm ? 4 : gru ? 3 : 1;
  if (x_in.dim() != 3 || w.dim() != 3 || r.dim() != 3)
    throw ShapeError("gltensor::rnn: X, W and R must have rank 3, got " + to_string(x_in.shape()) + ", " +
                     to_string(w.shape()) + ", " + to_string(r.shape()));
  const Tensor x = spec.layout1 ? x_in.transpose(0, 1) : x_in;  // [T, B, I]
  const std::int64_t T = x.shape()[0], B = x.shape()[1], I = x.shape()[2];
  const std::int64_t D = w.shape()[0], H = r.shape()[2], GH = G * H;
  if (D != spec.directions || w.shape()[1] != GH || w.shape()[2] != I || r.shape()[0] != D || r.shape()[1] != GH)
    throw ShapeError("gltensor::rnn: W " + to_string(w.shape()) + " and R " + to_string(r.shape()) + " do not fit X " +
                     to_string(x_in.shape()) + " with " + std::to_string(D) + " direction(s)");
  auto check = [&](const Tensor& t, const Shape& s, const char* what) {
    if (t.defined() && t.shape() != s)
      throw ShapeError(std::string("gltensor::rnn: ") + what + " has shape " + to_string(t.shape()) + ", expected " +
                       to_string(s));
  };
  check(b, {D, 2 * GH}, "B");
  check(seq_lens, {B}, "sequence_lens");
  const Shape state_in = spec.layout1 ? Shape{B, D, H} : Shape{D, B, H};
  check(h0, state_in, "initial_h");
  check(c0, state_in, "initial_c");
  check(p, {D, 3 * H}, "P");

  const Capabilities& caps = dev.caps();
  RnnSeqDevice sd;
  sd.max_local = std::min(caps.max_workgroup_size[0], caps.max_workgroup_invocations);
  sd.max_shared_memory = caps.max_shared_memory;
  sd.loop_budget = dev.loop_budget();
  sd.software = dev.adapter().software;
  sd.setting = settings().rnn;
  sd.shuffle_lanes = dev.subgroup_shuffle() ? caps.subgroup_size : 0;
  sd.force_parts = settings().rnn_regs_parts, sd.force_cols = settings().rnn_regs_cols;
  sd.force_grid = settings().rnn_regs_grid;
  sd.ssbo_bindings = caps.max_ssbo_bindings;
  sd.multiprocessors = sd.software ? 0 : cuda_multiprocessors(dev);
  const RnnSeqProblem problem{T, H, gru && !spec.linear_before_reset ? 2 : 1, G, D, B};
  const RnnSeqPlan plan = plan_rnn_sequence(problem, sd);
  // The register sequence kernel starts from zeros itself where no initial state is given (u_zero): no fills.
  const bool kernel_zeroes = plan.sequence && plan.regs;
  auto state0 = [&](const Tensor& s0) {
    return s0.defined()    ? fresh_f32(spec.layout1 ? s0.transpose(0, 1) : s0)
           : kernel_zeroes ? alloc(dev, {D, B, H}, DType::f32, op)
                           : zeros(device, {D, B, H});
  };
  Tensor h = state0(h0);
  Tensor c = lstm ? state0(c0) : Tensor();
  const std::uint32_t zero = kernel_zeroes ? (h0.defined() ? 0u : 1u) | (lstm && !c0.defined() ? 2u : 0u) : 0u;
  Tensor y = alloc(dev, spec.layout1 ? Shape{B, T, D, H} : Shape{T, D, B, H}, DType::f32, op);
  if (T == 0 || B == 0 || H == 0) {
    RnnOutputs o{y, spec.layout1 ? h.transpose(0, 1).contiguous() : h, Tensor()};
    if (lstm) o.y_c = spec.layout1 ? c.transpose(0, 1).contiguous() : c;
    return o;
  }
  // X @ W^T for every step and direction: [T B, I] @ [D, I, G H] -> [D, T B, G H].
  const Tensor xw = dense_f32(matmul(dense_f32(x).reshape({T * B, I}), dense_f32(w).transpose(1, 2)));
  const Tensor bias = b.defined() ? dense_f32(b) : zeros(device, {D, 2 * GH});
  const Tensor pp = p.defined() ? dense_f32(p) : Tensor();
  const Tensor seq = seq_lens.defined()
                         ? (seq_lens.dtype() == DType::i32 ? seq_lens : seq_lens.to(DType::i32)).contiguous()
                         : Tensor();
  Tensor seqd = seq.defined() && seq.offset() != 0 ? seq.clone() : seq;

  const std::size_t nacts = lstm ? 3 : gru ? 2 : 1;
  if (spec.acts.size() != nacts * static_cast<std::size_t>(D))
    throw ValueError("gltensor::rnn: expected " + std::to_string(nacts * D) + " activations, got " +
                     std::to_string(spec.acts.size()));
  RnnCellVariant cv;
  cv.cell = spec.cell, cv.gates = G, cv.gru_lbr = spec.linear_before_reset, cv.input_forget = spec.input_forget;
  cv.has_clip = spec.has_clip, cv.layout1 = spec.layout1, cv.has_p = pp.defined(), cv.has_seq = seqd.defined();
  for (std::int64_t d = 0; d < 2; ++d)
    for (std::size_t k = 0; k < nacts; ++k)
      cv.act[d][k] = act_call(spec.acts[std::min<std::size_t>(d, D - 1) * nacts + k]);
  const std::int64_t rev = (spec.reverse0 ? 1 : 0) | (D == 2 ? 2 : 0);
  // h @ R^T reads R through a transposed view, [D, H, G H] with K (= H) contiguous: on GPUs
  // matmul's GEMV kernel (K-major B and at most 8 rows: batch sizes up to 8), as linear's weight.
  const Tensor rk = dense_f32(r).transpose(1, 2);
  const bool two_stage = gru && !spec.linear_before_reset;

  if (plan.sequence) {
    RnnSeqVariant sv;
    static_cast<RnnCellVariant&>(sv) = cv;
    sv.quads = plan.quads, sv.regs = plan.regs, sv.hidden = H, sv.parts = plan.parts, sv.reg_cols = plan.reg_cols;
    sv.width = plan.width, sv.subgroup = plan.subgroup, sv.grid = plan.grid;
    sv.grid_stall = plan.grid > 1 && settings().rnn_grid_stall;
    // R^T with the units' rows contiguous ([D, H, G H], N-major), as rnn_seq.comp reads it; R as
    // given for rnn_seq_regs.comp.
    rnn_sequence(sv, plan,
                 RnnLoop{y, h, c, xw, plan.regs ? Tensor() : rk.contiguous(), bias, pp, seqd, T, B, H, D, rev,
                         spec.clip, plan.regs ? dense_f32(r) : Tensor(), zero});
  } else if (rnn_fused_steps(problem, sd)) {
    std::tie(h, c) =
        fused_steps(cv, RnnLoop{y, h, c, xw, Tensor(), bias, pp, seqd, T, B, H, D, rev, spec.clip, dense_f32(r)});
  } else {
    rnn_steps(cv, two_stage, RnnLoop{y, h, c, xw, rk, bias, pp, seqd, T, B, H, D, rev, spec.clip, Tensor()});
    // The outputs in buffers of their own: a replay puts outputs in host-visible memory
    // (Model's outputs_to_host), where the steps' reads and writes of the state would cross the
    // bus every step.
    h = h.clone();
    if (lstm) c = c.clone();
  }
  RnnOutputs o{y, spec.layout1 ? h.transpose(0, 1).contiguous() : h, Tensor()};
  if (lstm) o.y_c = spec.layout1 ? c.transpose(0, 1).contiguous() : c;
  return o;
}

void RnnCellVariant::add_defines(Defines& d) const {
  static const char* macros[2][3] = {{"ACT_F0(x)", "ACT_G0(x)", "ACT_H0(x)"}, {"ACT_F1(x)", "ACT_G1(x)", "ACT_H1(x)"}};
  // The plain RNN cell is the kernels' #else branch (they test no CELL_RNN).
  d.uvalue("G", static_cast<std::uint64_t>(gates))
      .flag("CELL_LSTM", cell == RnnCell::lstm)
      .flag("CELL_GRU", cell == RnnCell::gru);
  d.flag("GRU_LBR", gru_lbr).flag("INPUT_FORGET", input_forget).flag("HAS_CLIP", has_clip);
  d.flag("LAYOUT1", layout1).flag("HAS_P", has_p).flag("HAS_SEQ", has_seq);
  for (int dir = 0; dir < 2; ++dir)
    for (int k = 0; k < 3; ++k)
      if (!act[dir][k].empty()) d.macro(macros[dir][k], act[dir][k]);
  d.operand(3, DType::f32, CT::f32, false)
      .operand(4, DType::f32, CT::f32, false)
      .operand(5, DType::f32, CT::f32, false);
  if (has_p) d.operand(6, DType::f32, CT::f32, false);
  if (has_seq) d.operand(7, DType::i32, CT::i32, false);
}

std::vector<RnnCellVariant> RnnCellVariant::space() {
  std::vector<RnnCellVariant> out;
  const char* names[] = {"Sigmoid",    "Tanh",        "Relu", "Affine",   "LeakyRelu", "ThresholdedRelu",
                         "ScaledTanh", "HardSigmoid", "Elu",  "Softsign", "Softplus"};
  for (RnnCell cell : {RnnCell::lstm, RnnCell::gru, RnnCell::rnn})
    for (int f = 0; f < 16; ++f) {
      RnnCellVariant v;
      v.cell = cell, v.gates = cell == RnnCell::lstm ? 4 : cell == RnnCell::gru ? 3 : 1;
      v.has_clip = f & 1, v.layout1 = f & 2, v.has_seq = f & 4;
      if (cell == RnnCell::lstm) v.has_p = v.input_forget = f & 8;
      if (cell == RnnCell::gru) v.gru_lbr = f & 8;
      const int nacts = cell == RnnCell::lstm ? 3 : cell == RnnCell::gru ? 2 : 1;
      for (int dir = 0; dir < 2; ++dir)
        for (int k = 0; k < nacts; ++k) {
          RnnActivation a;
          a.name = names[(f + 3 * dir + k) % 11], a.alpha = 0.5, a.beta = 0.25;
          v.act[dir][k] = act_call(a);
        }
      out.push_back(v);
    }
  return out;
}

Defines RnnVariant::defines() const {
  Defines d;
  add_defines(d);
  if (stage1) {
    d.flag("GRU_STAGE1").operand(1, DType::f32, CT::f32, false).operand(8, DType::f32, CT::f32, true);
  } else {
    d.operand(0, DType::f32, CT::f32, true).operand(1, DType::f32, CT::f32, true);
    if (cell == RnnCell::lstm) d.operand(2, DType::f32, CT::f32, true);
    if (two_stage) d.operand(8, DType::f32, CT::f32, false);
  }
  return d;
}

Defines RnnStepVariant::defines() const {
  Defines d;
  add_defines(d);
  d.uvalue("S", static_cast<std::uint64_t>(units)).uvalue("KS", static_cast<std::uint64_t>(parts));
  d.operand(0, DType::f32, CT::f32, true).operand(1, DType::f32, CT::f32, true).operand(8, DType::f32, CT::f32, false);
  if (cell == RnnCell::lstm) d.operand(2, DType::f32, CT::f32, true).operand(9, DType::f32, CT::f32, false);
  return d;
}

std::vector<RnnStepVariant> RnnStepVariant::space() {
  std::vector<RnnStepVariant> out;
  for (const RnnCellVariant& c : RnnCellVariant::space()) {
    if (c.cell == RnnCell::gru && !c.gru_lbr) continue;
    RnnStepVariant v;
    static_cast<RnnCellVariant&>(v) = c;
    out.push_back(v);
  }
  return out;
}

std::vector<RnnVariant> RnnVariant::space() {
  std::vector<RnnVariant> out;
  for (const RnnCellVariant& c : RnnCellVariant::space()) {
    RnnVariant v;
    static_cast<RnnCellVariant&>(v) = c;
    if (c.cell == RnnCell::gru && !c.gru_lbr) {
      RnnVariant s1 = v;
      s1.stage1 = true;
      out.push_back(s1);
      v.two_stage = true;
    }
    out.push_back(v);
  }
  return out;
}

}  // namespace gltensor::detail
