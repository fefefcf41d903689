// The recurrent layers' time loop in one dispatch per chunk of steps: see rnn.hpp, rnn_plan.hpp
// and glsl/nn/rnn_seq.comp.
#include "gltensor/ops.hpp"
#include "nn/rnn.hpp"
#include "runtime/error_flags.hpp"
#include "runtime/launch.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor::detail {

namespace {

struct SeqParams {
  std::int64_t B, H, T, D, step0, steps, rev;
  double clip;
  bool regs;           // rnn_seq_regs.comp: H is the constant HK
  std::uint32_t zero;  // rnn_seq_regs.comp: the states that start from zeros (RnnLoop::zero; the first dispatch)
  void set(Uniforms& u) const {
    u.u32("u_B", B);
    if (!regs) u.u32("u_H", H);
    if (regs) u.u32("u_zero", step0 == 0 ? zero : 0u);
    u.u32("u_T", T);
    u.u32("u_D", D);
    u.u32("u_step0", step0);
    u.u32("u_steps", steps);
    u.u32("u_rev", rev);
    u.f32("u_clip", clip);
  }
};

}  // namespace

void rnn_sequence(const RnnSeqVariant& v, const RnnSeqPlan& plan, const RnnLoop& l) {
  DeviceImpl& dev = dev_of(l.xw);
  const Tensor& spare = l.bias;  // bound where a binding is unused
  const int phases = v.cell == RnnCell::gru && !v.gru_lbr ? 2 : 1;
  // GRID: h of every other step for the other workgroups, and the counters they meet at (zero)
  const Tensor xh = plan.grid > 1 ? alloc(dev, {2 * l.D * l.B * l.H}, DType::f32, "rnn") : Tensor();
  const Tensor cnt = plan.grid > 1 ? zeros(l.xw.device(), {l.D * l.B}, DType::i32) : Tensor();
  for (std::int64_t s0 = 0; s0 < l.T; s0 += plan.chunk) {
    const std::int64_t n = std::min(plan.chunk, l.T - s0);
    Launch launch(dev, "rnn");
    launch.program(v.file(), v.defines(), {plan.local});
    launch.write(l.y).write(l.h);
    l.c.defined() ? launch.write(l.c) : launch.read(spare);
    launch.read(l.xw)
        .read(plan.regs ? l.r : l.rt)
        .read(l.bias)
        .read(l.p.defined() ? l.p : spare)
        .read(l.seq.defined() ? l.seq : spare);
    if (plan.grid > 1) launch.write(xh).write(cnt).bind(dev.extension<ErrorFlags>().storage(dev), true);
    launch.params(SeqParams{l.B, l.H, l.T, l.D, s0, n, l.rev, l.clip, plan.regs, l.zero});
    launch.loop_iterations(plan.regs ? rnn_seq_regs_loops(n, l.H, v.gates, plan.parts, plan.reg_cols)
                                     : rnn_seq_loops(n, plan.groups, plan.quads ? l.H / 4 : l.H, phases));
    launch.groups_1d(static_cast<std::uint64_t>(l.D * l.B * plan.grid));
    if (plan.grid > 1) dev.extension<ErrorFlags>().expect(dev, "rnn", ErrorFlags::kStall);
  }
}

Defines RnnSeqVariant::defines() const {
  Defines d;
  add_defines(d);
  if (regs) {
    d.uvalue("HK", static_cast<std::uint64_t>(hidden))
        .uvalue("KS", static_cast<std::uint64_t>(parts))
        .uvalue("RR", static_cast<std::uint64_t>(reg_cols))
        .flag("QUAD_COLS", width == 4)
        .flag("GRID", grid > 1);
    if (grid > 1) d.uvalue("NG", static_cast<std::uint64_t>(grid)).flag("GRID_STALL", grid_stall);
    if (width == 4) d.quads("R", 4, DType::f32);
    if (subgroup) d.subgroup(SubgroupFeature::shuffle);
  } else {
    d.uvalue("MAX_H", static_cast<std::uint64_t>(kRnnSeqMaxHidden)).flag("QUADS", quads);
  }
  if (quads) d.quads("R", 4, DType::f32);
  d.operand(0, DType::f32, CT::f32, true).operand(1, DType::f32, CT::f32, true);
  if (cell == RnnCell::lstm) d.operand(2, DType::f32, CT::f32, true);
  return d;
}

std::vector<RnnSeqVariant> RnnSeqVariant::space() {
  std::vector<RnnSeqVariant> out;
  for (const RnnCellVariant& c : RnnCellVariant::space()) {
    for (bool quads : {false, true}) {
      RnnSeqVariant v;
      static_cast<RnnCellVariant&>(v) = c;
      v.quads = quads;
      out.push_back(v);
    }
  }
  return out;
}

std::vector<RnnSeqVariant> RnnSeqVariant::regs_space() {
  std::vector<RnnSeqVariant> out;
  std::int64_t k = 0;
  for (const RnnCellVariant& c : RnnCellVariant::space()) {
    if (c.cell == RnnCell::gru && !c.gru_lbr) continue;
    RnnSeqVariant v;
    static_cast<RnnCellVariant&>(v) = c;
    v.regs = true;
    // hidden 128 in 8 parts of 16 columns (quads), 8 in registers, by shuffles; 64 in 4 parts, all in
    // registers, through shared memory; 7 in one part (scalar columns), 3 of 7 in registers
    const std::int64_t form = k++ % 3;
    v.hidden = form == 0 ? kRnnSeqRegsMaxHidden : form == 1 ? 64 : 7;
    v.parts = form == 0 ? 8 : form == 1 ? 4 : 1;
    v.width = form == 2 ? 1 : 4;
    v.reg_cols = form == 0 ? 8 : form == 1 ? 16 : 3;
    v.subgroup = form == 0;
    out.push_back(v);
    if (form == 0) {  // and hidden 256 as a grid of 8 workgroups of 32 units in 16 parts, by shuffles
      v.hidden = 256, v.parts = 16, v.reg_cols = 16, v.grid = 8, v.grid_stall = k % 2 == 0;
      out.push_back(v);
    }
  }
  return out;
}

}  // namespace gltensor::detail
