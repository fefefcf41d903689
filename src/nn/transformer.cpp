// Rotary position embeddings (glsl/nn/rope.comp) and gated linear units (glsl/nn/glu.comp):
// one elementwise dispatch each, forward and backward, with their autograd nodes. No loops, so
// no loop-limit planning; grids of any size are split by the launch layer.
#include "gltensor/transformer.hpp"

#include <cmath>

#include "gltensor/autograd.hpp"
#include "gltensor/ops.hpp"
#include "nn/transformer_variants.hpp"
#include "runtime/launch.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {
using namespace detail;

namespace {

// The kernels index from element 0 of contiguous operands: views are copied first (without
// recording a node: gradients are recorded against the caller's tensors).
Tensor dense(const Tensor& t) {
  if (!t.defined() || (t.is_contiguous() && t.offset() == 0)) return t;
  NoGradGuard ng;
  return detach(t).clone();
}

// ---- rope ----

struct RopeGeom {
  std::int64_t rows, T, D, R, rows_per_batch;
  bool interleaved, has_pos, pos_batch;
  double base;
  std::int64_t offset;
};

// Uniforms of rope.comp.
struct RopeParams {
  const RopeGeom& g;
  double sign;
  void set(Uniforms& u) const {
    const std::int64_t per_row = g.R / 2 + (g.D - g.R);
    u.u32("u_count", g.rows * per_row);
    u.u32("u_per_row", per_row);
    u.u32("u_D", g.D);
    u.u32("u_half", g.R / 2);
    u.u32("u_T", g.T);
    u.i32("u_offset", g.offset);
    u.f32("u_freq_exp", g.R ? -2.0 * std::log2(g.base) / static_cast<double>(g.R) : 0.0);
    u.f32("u_sign", sign);
    if (g.pos_batch) u.u32("u_rows_per_batch", g.rows_per_batch);
  }
};

// Views: rows over x's leading dims (merged where their strides allow), for rows.glsl.
struct RowView {
  Shape kshape, kin, kout;
  std::int64_t in_step, in_off;
  void set(Uniforms& u) const {
    auto u32 = [](const Shape& v) { return std::vector<std::uint32_t>(v.begin(), v.end()); };
    u.u32s("u_kshape", u32(kshape));
    u.u32s("u_kstride_in", u32(kin));
    u.u32s("u_kstride_out", u32(kout));
    u.u32("u_in_off", in_off);
    u.u32("u_out_off", 0);
    u.u32("u_in_step", in_step);
  }
};
RowView row_view(const Tensor& x) {
  RowView v;
  Shape sizes(x.shape().begin(), x.shape().end() - 1);
  std::vector<Shape> strides{Shape(x.strides().begin(), x.strides().end() - 1), Shape(sizes.size())};
  std::int64_t st = x.size(-1);  // the contiguous output's row strides
  for (std::size_t d = sizes.size(); d-- > 0;) {
    strides[1][d] = st;
    st *= sizes[d];
  }
  merge_dims(sizes, strides, 0);
  return {sizes, strides[0], strides[1], x.strides().back(), x.offset()};
}

// out (contiguous) = x (any view) rotated by sign * angle; pos dense.
Tensor rope_launch(DeviceImpl& dev, const char* op, const Tensor& x, const Tensor& pos, const RopeGeom& g,
                   double sign) {
  Tensor out = alloc(dev, x.shape(), x.dtype(), op);
  const std::int64_t per_row = g.R / 2 + (g.D - g.R);
  if (g.rows == 0 || per_row == 0) return out;
  const bool strided = !(x.is_contiguous() && x.offset() == 0);
  const RowView rv = strided ? row_view(x) : RowView{};
  RopeVariant v;
  v.interleaved = g.interleaved, v.has_pos = g.has_pos, v.pos_batch = g.pos_batch, v.strided = strided;
  v.kd = static_cast<int>(rv.kshape.size()), v.x = x.dtype();
  if (g.has_pos) v.pos = pos.dtype();
  Launch launch(dev, op);
  launch.program(v.kFile, v.defines(), {64}).write(out).read(x);
  if (g.has_pos) launch.read(pos);
  launch.params(RopeParams{g, sign});
  if (strided) launch.params(rv);
  launch.loop_iterations(strided ? rv.kshape.size() + 1 : 0);
  launch.invocations(static_cast<std::uint64_t>(g.rows * per_row));
  return out;
}

Tensor rope_impl(const Tensor& x_in, const Tensor& pos_in, const RopeOptions& opt) {
  const char* op = "rope";
  check_defined(op, x_in);
  if (x_in.dim() < 2)
    throw ShapeError("gltensor::rope: expects x [..., T, D] of rank >= 2, got " + to_string(x_in.shape()));
  if (!is_floating(x_in.dtype()))
    throw DTypeError(std::string("gltensor::rope: x must be a float tensor, got ") + dtype_name(x_in.dtype()));
  const std::int64_t T = x_in.size(-2), D = x_in.size(-1);
  const std::int64_t R = opt.rotary_dim == 0 ? D : opt.rotary_dim;
  if (R < 0 || R % 2 != 0 || R > D)
    throw ValueError("gltensor::rope: rotary_dim " + std::to_string(opt.rotary_dim) +
                     " must be even and at most the head dim " + std::to_string(D) + " of x " +
                     to_string(x_in.shape()) + " (0 = the head dim)");
  if (!(opt.base > 0) || !std::isfinite(opt.base))
    throw ValueError("gltensor::rope: base must be positive and finite, got " + std::to_string(opt.base));
  const std::int64_t last_pos = opt.offset + (pos_in.defined() ? 0 : T);
  if (opt.offset < INT32_MIN || opt.offset > INT32_MAX || last_pos > INT32_MAX)
    throw ValueError("gltensor::rope: positions from offset " + std::to_string(opt.offset) + " over " +
                     std::to_string(T) + " tokens exceed int32");
  bool pos_batch = false;
  if (pos_in.defined()) {
    check_same_device(op, {&x_in, &pos_in});
    if (pos_in.dtype() != DType::i32 && pos_in.dtype() != DType::u8)
      throw DTypeError(std::string("gltensor::rope: positions must be int32 or uint8, got ") +
                       dtype_name(pos_in.dtype()));
    pos_batch = pos_in.dim() == 2;
    const bool ok = (pos_in.dim() == 1 && pos_in.size(0) == T) ||
                    (pos_batch && x_in.dim() >= 3 && pos_in.size(0) == x_in.size(0) && pos_in.size(1) == T);
    if (!ok)
      throw ShapeError("gltensor::rope: positions " + to_string(pos_in.shape()) + " must be [T] or [B, T] for x " +
                       to_string(x_in.shape()) + " ([B, ..., T, D]: T = " + std::to_string(T) +
                       ", B = x.size(0), [B, T] needs rank >= 3)");
  }
  DeviceImpl& dev = dev_of(x_in);
  Enter guard(dev, op);
  const Tensor& x = x_in;  // views are read in place (rope.comp's STRIDED)
  const Tensor pos = dense(pos_in);
  const std::int64_t rows = D ? x.numel() / D : 0;
  const RopeGeom g{.rows = rows,
                   .T = T,
                   .D = D,
                   .R = R,
                   .rows_per_batch = pos_batch && x.size(0) ? rows / x.size(0) : 1,
                   .interleaved = opt.interleaved,
                   .has_pos = pos.defined(),
                   .pos_batch = pos_batch,
                   .base = opt.base,
                   .offset = opt.offset};
  Tensor y = rope_launch(dev, op, x, pos, g, 1.0);
  if (autograd::any_requires_grad({&x_in})) {
    autograd::record(
        y, {x_in},
        [g, pos](const Tensor& gy) {
          DeviceImpl& d = dev_of(gy);
          Enter guard(d, "rope_backward");
          return std::vector<Tensor>{rope_launch(d, "rope_backward", gy, pos, g, -1.0)};
        },
        op);
  }
  return y;
}

// ---- gated linear units ----

// The op as users call it, for errors: swiglu, geglu or geglu (tanh).
std::string op_label(GluActivation a) {
  return a == GluActivation::silu ? "swiglu" : a == GluActivation::gelu ? "geglu" : "geglu (tanh)";
}

// Uniforms of glu.comp (forward and backward): elements, and the gated width F.
struct GluParams {
  std::int64_t count, F;
  void set(Uniforms& u) const {
    u.u32("u_count", count);
    u.u32("u_F", F);
  }
};

// Forward: out [rows, F] from gate_up [rows, 2F] (fused: `up` undefined) or gate, up [rows, F].
Tensor glu_forward(DeviceImpl& dev, const char* op, const Tensor& gate, const Tensor& up, const Shape& out_shape,
                   DType od, GluActivation act) {
  Tensor out = alloc(dev, out_shape, od, op);
  if (out.numel() == 0) return out;
  const bool fused = !up.defined();
  GluVariant v;
  v.act = act, v.fused = fused, v.out = od, v.gate = gate.dtype();
  if (!fused) v.up = up.dtype();
  Launch launch(dev, op);
  launch.program(v.kFile, v.defines(), {64}).write(out).read(gate);
  if (!fused) launch.read(up);
  launch.params(GluParams{out.numel(), out_shape.back()}).loop_iterations(0);
  launch.invocations(static_cast<std::uint64_t>(out.numel()));
  return out;
}

// Backward: {d gate_up} (fused) or {dgate, dup}, in the inputs' dtypes.
std::vector<Tensor> glu_backward(const Tensor& gy_in, const Tensor& gate, const Tensor& up, GluActivation act,
                                 bool need_gate, bool need_up) {
  const char* op = "glu_backward";
  DeviceImpl& dev = dev_of(gy_in);
  Enter guard(dev, op);
  const bool fused = !up.defined();
  const Tensor gy = dense(gy_in);
  Tensor dg = alloc(dev, gate.shape(), gate.dtype(), op);
  Tensor du = fused ? Tensor() : alloc(dev, up.shape(), up.dtype(), op);
  if (gy.numel() > 0) {
    GluVariant v;
    v.act = act, v.fused = fused, v.backward = true, v.out = dg.dtype(), v.gy = gy.dtype(), v.gate = gate.dtype();
    if (!fused) v.dup = du.dtype(), v.up = up.dtype();
    Launch launch(dev, op);
    launch.program(v.kFile, v.defines(), {64}).write(dg);
    fused ? launch.read(gy) : launch.write(du);  // gy stands in for dup (never written)
    launch.read(gy).read(gate);
    if (!fused) launch.read(up);
    launch.params(GluParams{gy.numel(), gy.dim() ? gy.shape().back() : 1}).loop_iterations(0);
    launch.invocations(static_cast<std::uint64_t>(gy.numel()));
  }
  if (fused) return {dg};
  return {need_gate ? dg : Tensor(), need_up ? du : Tensor()};
}

void check_float(const char* what, const Tensor& t, GluActivation act) {
  if (!is_floating(t.dtype()))
    throw DTypeError("gltensor::" + op_label(act) + ": " + what + " must be a float tensor, got " +
                     dtype_name(t.dtype()));
}

}  // namespace

Tensor rope(const Tensor& x, const RopeOptions& opt) { return rope_impl(x, Tensor(), opt); }

Tensor rope(const Tensor& x, const Tensor& positions, const RopeOptions& opt) {
  check_defined("rope", positions, "positions");
  return rope_impl(x, positions, opt);
}

Tensor gated_linear_unit(const Tensor& gate_up_in, GluActivation act) {
  const char* op = "gated_linear_unit";
  check_defined(op, gate_up_in);
  check_float("gate_up", gate_up_in, act);
  if (gate_up_in.dim() < 1 || gate_up_in.size(-1) % 2 != 0)
    throw ShapeError("gltensor::" + op_label(act) + ": gate_up " + to_string(gate_up_in.shape()) +
                     " must have an even last dim (gate, then up)");
  DeviceImpl& dev = dev_of(gate_up_in);
  Enter guard(dev, op);
  const Tensor gu = dense(gate_up_in);
  Shape os = gu.shape();
  os.back() /= 2;
  Tensor y = glu_forward(dev, op, gu, Tensor(), os, gu.dtype(), act);
  if (autograd::any_requires_grad({&gate_up_in})) {
    const Tensor saved = detach(gu);
    autograd::record(
        y, {gate_up_in}, [saved, act](const Tensor& gy) { return glu_backward(gy, saved, Tensor(), act, true, true); },
        op);
  }
  return y;
}

Tensor gated_linear_unit(const Tensor& gate_in, const Tensor& up_in, GluActivation act) {
  const char* op = "gated_linear_unit";
  check_defined(op, gate_in, "gate");
  check_defined(op, up_in, "up");
  check_float("gate", gate_in, act);
  check_float("up", up_in, act);
  if (gate_in.shape() != up_in.shape())
    throw ShapeError("gltensor::" + op_label(act) + ": gate " + to_string(gate_in.shape()) + " and up " +
                     to_string(up_in.shape()) + " must have the same shape");
  check_same_device(op, {&gate_in, &up_in});
  DeviceImpl& dev = dev_of(gate_in);
  Enter guard(dev, op);
  const Tensor gate = dense(gate_in), up = dense(up_in);
  Shape os = gate.shape();
  if (os.empty()) os = {1};  // a scalar runs as one row of one element
  Tensor y = glu_forward(dev, op, gate.reshape(os), up.reshape(os), os, promote_types(gate.dtype(), up.dtype()), act);
  y = y.reshape(gate.shape());
  if (autograd::any_requires_grad({&gate_in, &up_in})) {
    const Tensor sg = detach(gate), su = detach(up);
    const bool ng = requires_grad(gate_in), nu = requires_grad(up_in);
    autograd::record(
        y, {gate_in, up_in}, [sg, su, act, ng, nu](const Tensor& gy) { return glu_backward(gy, sg, su, act, ng, nu); },
        op);
  }
  return y;
}

}  // namespace gltensor
