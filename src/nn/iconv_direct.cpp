// The direct integer convolution (iconv_direct.hpp, glsl/nn/iconv_direct.comp).
#include "nn/iconv_direct.hpp"

#include "gltensor/linalg.hpp"
#include "gltensor/ops.hpp"
#include "runtime/launch.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor::detail {

namespace {

struct IConvParams {
  std::int64_t C, H, W, O, Og, OH, OW, blocks;
  const IntConvOptions& o;
  bool zw_per, sb_per;
  const IntRequant* rq;  // QUANT: its activation's bounds
  void set(Uniforms& u) const {
    u.i32("u_C", C), u.i32("u_H", H), u.i32("u_W", W), u.i32("u_O", O), u.i32("u_Og", Og);
    u.i32("u_OH", OH), u.i32("u_OW", OW), u.i32("u_sh", o.stride[0]), u.i32("u_sw", o.stride[1]);
    u.i32("u_pt", o.padding[0]), u.i32("u_pl", o.padding[1]), u.i32("u_dh", o.dilation[0]);
    u.i32("u_dw", o.dilation[1]), u.i32("u_blocks", blocks);
    u.u32("u_zw_per", zw_per ? 1 : 0), u.u32("u_sb_per", sb_per ? 1 : 0);
    if (rq) {
      const auto [lo, hi] = requant_bounds(*rq);
      u.f32("u_lo", lo), u.f32("u_hi", hi);
    }
  }
};

Tensor f32_dense(const Tensor& t) {
  Tensor c = (t.dtype() == DType::f32 ? t : t.to(DType::f32)).contiguous();
  return c.offset() != 0 ? c.clone() : c;
}

}  // namespace

Tensor iconv_direct(const Tensor& x, const Tensor& w, const Tensor& zx, const Tensor& zw, const IntConvOptions& o,
                    std::int64_t OH, std::int64_t OW, const IntDequant& dq, const IntRequant* rq,
                    const IConvDirectPlan& plan, const char* op) {
  DeviceImpl& dev = dev_of(x);
  const std::int64_t N = x.size(0), C = x.size(1), O = w.size(0), G = o.groups, CG = w.size(1);
  IConvDirectVariant v;
  v.rowseg = plan.rowseg, v.dw = o.dilation[1], v.seglen = plan.seglen;
  v.opi = plan.opi, v.px = plan.px, v.cb = plan.cb, v.kh = w.size(2), v.kw = w.size(3), v.bias = dq.bias.defined();
  v.x = x.dtype(), v.w = w.dtype(), v.zx = zx.dtype(), v.zw = zw.defined() ? zw.dtype() : w.dtype();
  v.zw_none = !zw.defined();
  const Tensor sa = f32_dense(dq.scale_a), sb = f32_dense(dq.scale_b);
  const Tensor bias = dq.bias.defined() ? f32_dense(dq.bias) : sa;
  Tensor ys, zy;
  if (rq) {
    v.quant = true, v.y = rq->out, v.dq_out = rq->dequantize;
    ys = f32_dense(rq->scale);
    zy = rq->zero_point.defined() ? rq->zero_point.contiguous() : zeros(x.device(), {1}, DType::i32);
    if (zy.offset() != 0) zy = zy.clone();
    v.zy = zy.dtype();
  }
  Tensor y = alloc(dev, {N, O, OH, OW}, v.dq_out ? DType::f32 : v.y, op);
  if (y.numel() == 0) return y;
  Launch launch(dev, op);
  launch.program(v.kFile, v.defines(), {plan.local_x}).write(y).read(x).read(w).read(zx).read(v.zw_none ? w : zw);
  launch.read(sa).read(sb).read(bias);
  if (rq) launch.read(ys).read(zy);
  launch.params(IConvParams{C, x.size(2), x.size(3), O, O / G, OH, OW, CG / plan.cb, o, zw.defined() && zw.numel() != 1,
                            sb.numel() != 1, rq});
  const auto per_group = static_cast<std::uint64_t>(plan.local_x * plan.px);
  launch.loop_iterations(plan.loop_iterations)
      .groups((static_cast<std::uint64_t>(OH * OW) + per_group - 1) / per_group,
              static_cast<std::uint64_t>(O / plan.opi), static_cast<std::uint64_t>(N));
  return y;
}

}  // namespace gltensor::detail
