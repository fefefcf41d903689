// Linear quantization and integer kernels for the model runtime: see quant.hpp and
// glsl/nn/quant_int.comp.
#include "nn/quant_int.hpp"

#include <algorithm>
#include <limits>
#include <optional>

#include "gltensor/errors.hpp"
#include "gltensor/indexing.hpp"
#include "gltensor/ops.hpp"
#include "gltensor/reduce.hpp"
#include "nn/iconv_direct.hpp"
#include "nn/imatmul_plan.hpp"
#include "nn/pool_plan.hpp"
#include "nn/quant_int_variants.hpp"
#include "ops/matmul_plan.hpp"
#include "runtime/codegen.hpp"
#include "runtime/launch.hpp"
#include "runtime/settings.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor::detail {

namespace {

std::string name(const char* op) { return std::string("gltensor::") + op; }

// Contiguous from element 0 (read only: may share t's storage).
Tensor dense(const Tensor& t) {
  Tensor c = t.contiguous();
  return c.offset() != 0 ? c.clone() : c;
}

Tensor dense_as(const Tensor& t, DType d) { return dense(t.dtype() == d ? t : t.to(d)); }

bool is_q8(DType d) { return d == DType::u8 || d == DType::i8; }

void need_q8(const char* op, const Tensor& t, const char* what) {
  if (!is_q8(t.dtype()))
    throw DTypeError(name(op) + ": " + what + " must be uint8 or int8, got " + dtype_name(t.dtype()));
}

// A zero point as the kernels read it: contiguous, in its own integer dtype (their loads give
// ints); int32 zeros when undefined.
Tensor zero_point(const Device& dev, const Tensor& zp) {
  if (!zp.defined()) return zeros(dev, {1}, DType::i32);
  if (is_floating(zp.dtype())) throw DTypeError("gltensor: a zero point must be an integer tensor");
  return dense(zp);
}

// The parameter layout of x's elements (see quant_int.comp).
struct Layout {
  std::int64_t C = 1, inner = 1, block = 1, so = 0, sc = 0, si = 0;
};

Layout layout_of(const char* op, const Shape& x, const Tensor& scale, QAxis ax) {
  Layout l;
  const std::int64_t r = static_cast<std::int64_t>(x.size());
  if (scale.numel() == 1 && ax.block == 0) return l;
  const std::int64_t axis = ax.axis < 0 ? ax.axis + r : ax.axis;
  if (axis < 0 || axis >= r)
    throw ShapeError(name(op) + ": axis " + std::to_string(ax.axis) + " is out of range for x of shape " +
                     to_string(x));
  l.C = x[static_cast<std::size_t>(axis)];
  for (std::int64_t d = axis + 1; d < r; ++d) l.inner *= x[static_cast<std::size_t>(d)];
  if (ax.block == 0) {
    if (scale.dim() != 1 || scale.numel() != l.C)
      throw ShapeError(name(op) + ": scale of shape " + to_string(scale.shape()) + " is neither one value nor " +
                       std::to_string(l.C) + " values along axis " + std::to_string(axis) + " of x " + to_string(x));
    l.sc = 1;
    return l;
  }
  if (ax.block < 0) throw ShapeError(name(op) + ": block_size must be >= 0, got " + std::to_string(ax.block));
  const std::int64_t Cb = (l.C + ax.block - 1) / ax.block;
  Shape want = x;
  want[static_cast<std::size_t>(axis)] = Cb;
  if (scale.shape() != want)
    throw ShapeError(name(op) + ": blocked scale of shape " + to_string(scale.shape()) + " does not fit x " +
                     to_string(x) + " with block_size " + std::to_string(ax.block) + " along axis " +
                     std::to_string(axis) + " (expected " + to_string(want) + ")");
  l.block = ax.block;
  l.so = Cb * l.inner;
  l.sc = l.inner;
  l.si = 1;
  return l;
}

struct ElemParams {
  std::int64_t count;
  Layout l;
  bool zp_per;
  void set(Uniforms& u) const {
    u.u32("u_count", count);
    u.u32("u_C", l.C);
    u.u32("u_inner", l.inner);
    u.u32("u_block", l.block);
    u.u32("u_so", l.so);
    u.u32("u_sc", l.sc);
    u.u32("u_si", l.si);
    u.u32("u_zs", zp_per ? 1 : 0);
  }
};

// One elementwise quant_int.comp launch: variant QUANTIZE, REQUANT or DEQUANTIZE.
Tensor elementwise(const char* op, const char* variant, const Tensor& x, const Tensor& scale, const Tensor& zp_in,
                   const Tensor& bias, QAxis ax, DType out, QRange range) {
  DeviceImpl& dev = dev_of(x);
  const Device device = x.device();
  const Layout l = layout_of(op, x.shape(), scale, ax);
  const Tensor s = dense_as(scale, DType::f32);
  const Tensor z = zero_point(device, zp_in);
  if (z.numel() != 1 && z.numel() != s.numel())
    throw ShapeError(name(op) + ": zero point of shape " + to_string(zp_in.shape()) + " does not fit scale " +
                     to_string(scale.shape()));
  if (bias.defined() && bias.numel() != l.C)
    throw ShapeError(name(op) + ": bias of shape " + to_string(bias.shape()) + " needs " + std::to_string(l.C) +
                     " values");
  const Tensor xd = dense(x);
  const Tensor b = bias.defined() ? dense_as(bias, DType::i32) : z;
  Tensor y = alloc(dev, x.shape(), out, op);
  const std::int64_t n = x.numel();
  if (n == 0) return y;
  const std::string kind = variant;
  QuantIntVariant v;
  v.kind = kind == "DEQUANTIZE" ? QuantIntVariant::Kind::dequantize
           : kind == "REQUANT"  ? QuantIntVariant::Kind::requant
                                : QuantIntVariant::Kind::quantize;
  v.qmin = range.lo, v.qmax = range.hi, v.bias = bias.defined();
  v.dt = {out, xd.dtype(), DType::f32, z.dtype(), DType::i32};
  Launch launch(dev, op);
  launch.program(v.kFile, v.defines(), {64}).write(y).read(xd).read(s).read(z).read(b);
  launch.params(ElemParams{n, l, z.numel() != 1}).loop_iterations(4);
  launch.invocations(static_cast<std::uint64_t>((n + 3) / 4));
  return y;
}

struct MatmulParams {
  std::int64_t M, N, K, k0, k1, a_bs, b_bs;
  bool za_row, zb_col;
  std::int64_t sb_per = -1;        // imatmul.comp's u_sb_per (-1: the int32 kernel, which has none)
  const IntRequant* rq = nullptr;  // QUANT: its activation's bounds
  void set(Uniforms& u) const {
    if (rq) {
      const auto [lo, hi] = requant_bounds(*rq);
      u.f32("u_lo", lo), u.f32("u_hi", hi);
    }
    u.u32("u_M", M);
    u.u32("u_N", N);
    u.u32("u_K", K);
    u.u32("u_k0", k0);
    u.u32("u_k1", k1);
    u.u32("u_a_bs", a_bs);
    u.u32("u_b_bs", b_bs);
    u.u32("u_za_row", za_row ? 1 : 0);
    u.u32("u_zb_col", zb_col ? 1 : 0);
    if (sb_per >= 0) u.u32("u_sb_per", sb_per);
  }
};

// The uniforms of the convolution's geometry (ICONV and ICOL).
struct ConvGeometry {
  std::int64_t count, C, H, W, OH, OW, KH, KW;
  IntConvOptions o;
  void set(Uniforms& u) const {
    u.u32("u_count", count);
    u.i32("u_C", C);
    u.i32("u_H", H);
    u.i32("u_W", W);
    u.i32("u_OH", OH);
    u.i32("u_OW", OW);
    u.i32("u_KH", KH);
    u.i32("u_KW", KW);
    u.i32("u_sh", o.stride[0]);
    u.i32("u_sw", o.stride[1]);
    u.i32("u_pt", o.padding[0]);
    u.i32("u_pl", o.padding[1]);
    u.i32("u_dh", o.dilation[0]);
    u.i32("u_dw", o.dilation[1]);
  }
};

struct ConvParams {
  ConvGeometry g;
  std::int64_t O, Og, CG, c0, c1;
  bool zw_per;
  void set(Uniforms& u) const {
    g.set(u);
    u.i32("u_O", O);
    u.i32("u_Og", Og);
    u.i32("u_CG", CG);
    u.i32("u_c0", c0);
    u.i32("u_c1", c1);
    u.u32("u_zw_per", zw_per ? 1 : 0);
  }
};

// im2col of n images of x (8-bit, contiguous): [n, C KH KW, OH OW], zx outside the image.
Tensor int_cols(DeviceImpl& dev, const Tensor& x, const Tensor& zx, std::int64_t KH, std::int64_t KW, std::int64_t OH,
                std::int64_t OW, const IntConvOptions& o, const char* op) {
  const std::int64_t N = x.size(0), C = x.size(1);
  Tensor cols = alloc(dev, {N, C * KH * KW, OH * OW}, x.dtype(), op);
  const std::int64_t count = cols.numel();
  QuantIntVariant v;
  v.kind = QuantIntVariant::Kind::icol;
  v.dt = {x.dtype(), x.dtype(), zx.dtype(), DType::i32, DType::i32};
  Launch launch(dev, op);
  launch.program(v.kFile, v.defines(), {64}).write(cols).read(x).read(zx);
  launch.params(ConvGeometry{count, C, x.size(2), x.size(3), OH, OW, KH, KW, o}).loop_iterations(4);
  launch.invocations(static_cast<std::uint64_t>((count + 3) / 4));
  return cols;
}

// icol.comp's uniforms and launch: x (8-bit, dense) [N, C, H, W] -> cols [N, C KH KW, OH OW]
// (OH OW % 4 == 0), zx outside the image.
struct IColParams {
  ConvGeometry g;
  std::int64_t PQ;
  void set(Uniforms& u) const {
    g.set(u);
    u.u32("u_PQ", PQ);
  }
};
Tensor icol_words(DeviceImpl& dev, const Tensor& x, const Tensor& zx, std::int64_t KH, std::int64_t KW, std::int64_t OH,
                  std::int64_t OW, const IntConvOptions& o, bool f32, const char* op) {
  const std::int64_t N = x.size(0), C = x.size(1), PQ = OH * OW / 4;
  Tensor cols = alloc(dev, {N, C * KH * KW, OH * OW}, f32 ? DType::f32 : x.dtype(), op);
  IColVariant v;
  v.kh = KH, v.kw = KW, v.x = x.dtype(), v.zx = zx.dtype(), v.f32_out = f32;
  // 2 words of one row per invocation (icol.comp's), 128 per workgroup: the fastest of the forms
  // measured on the H100 (bench/RESULTS.md, 2026-11-28, int8z)
  const std::int64_t local = 128;
  Launch launch(dev, op);
  launch.program(v.kFile, v.defines(), {static_cast<std::uint32_t>(local)}).write(cols).read(x).read(zx);
  // constant trip counts only (plain fors): no loop counted
  launch.params(IColParams{{cols.numel(), C, x.size(2), x.size(3), OH, OW, KH, KW, o}, PQ}).loop_iterations(0);
  // grid: (the row's word groups, the rows C KH KW, the images)
  const std::int64_t per_group = IColVariant::kWords * local;
  launch.groups(static_cast<std::uint64_t>((PQ + per_group - 1) / per_group), static_cast<std::uint64_t>(C * KH * KW),
                static_cast<std::uint64_t>(N));
  return cols;
}

// The uniforms of imatmul_warp.comp: matmul.glsl's (one batch dim: the images of the columns,
// A broadcast) and the requantizing epilogue's.
struct IWarpParams {
  std::int64_t M, N, K, batch;
  bool za_row;
  std::int64_t sb_per;
  const IntRequant& rq;
  void set(Uniforms& u) const {
    const auto [lo, hi] = requant_bounds(rq);
    u.f32("u_lo", lo), u.f32("u_hi", hi);
    u.u32("u_M", M);
    u.u32("u_N", N);
    u.u32("u_K", K);
    u.u32s("u_bshape", {batch});
    u.u32s("u_bstride_a", {0});
    u.u32s("u_bstride_b", {K * N});
    u.u32s("u_bstride_d", {0});
    u.u32("u_a_off", 0);
    u.u32("u_b_off", 0);
    u.u32("u_d_off", 0);
    u.u32("u_qa_s", K / 4);
    u.u32("u_qb_s", N / 4);
    u.f32("u_alpha", 1.0);
    u.u32("u_za_row", za_row ? 1 : 0);
    u.u32("u_sb_per", sb_per);
  }
};

// IWarpParams with split-K's chunks (imatmul_warp.comp's IW_SPLIT reads u_kchunk and u_nsplit; declared
// in every form).
struct IWarpSplitParams {
  const IWarpParams& p;
  std::int64_t kchunk, splits;
  void set(Uniforms& u) const {
    p.set(u);
    u.u32("u_kchunk", kchunk);
    u.u32("u_nsplit", splits);
  }
};

// The uniforms of imatmul_warp.comp's IW_SUM (the summing requantization).
struct IWarpSumParams {
  std::int64_t quads, N, M, splits;
  const IWarpParams& p;
  void set(Uniforms& u) const {
    const auto [lo, hi] = requant_bounds(p.rq);
    u.f32("u_lo", lo), u.f32("u_hi", hi);
    u.u32("u_nq", quads);
    u.u32("u_N", N);
    u.u32("u_M", M);
    u.u32("u_nsplit", splits);
    u.u32("u_sb_per", p.sb_per);
  }
};

// The integer matmul's kernel. IMATMUL (quant_int.comp): int32 products and sums, 64 x 64 tiles,
// any zero points; per K tile of 16, 4 loads and 16 steps of 4 + 4 + 4 x 4 (all loops counted),
// plus 44 for the setup and the stores. Block-f32 (imatmul.comp): plan_imatmul's form.
struct IntKernel {
  bool block_f32 = false;
  IMatmulVariant v;  // block-f32: the tiling (bn, blocks, bk, words, totals)
  std::uint32_t local_x = 16, local_y = 16;
  std::int64_t tile_m = 64, tile_n = 64, per_tile = 4 + 16 * (1 + 4 + 4 + 4 + 16), fixed = 24 + 20;
  std::int64_t bk = 16;  // values of K per tile (per_tile's unit)
};

// The device's traits for plan_imatmul (GLTENSOR_MATMUL_KERNEL=gpu: a software rasterizer
// planned as a GPU).
IMatmulDevice imatmul_device(DeviceImpl& dev) {
  return {dev.adapter().software && settings().matmul_kernel != MatmulKernelSetting::gpu, dev.caps().max_shared_memory,
          dev.caps().max_workgroup_invocations};
}

IntKernel block_f32_kernel(const IMatmulProblem& p, const IMatmulDevice& d) {
  const IMatmulPlan plan = plan_imatmul(p, d, settings());
  IntKernel k;
  k.block_f32 = true;
  k.v = plan.v;
  k.local_x = plan.local_x, k.local_y = 1;
  k.tile_m = kIMatmulTileRows, k.tile_n = plan.v.bn, k.bk = plan.v.bk, k.per_tile = plan.per_tile, k.fixed = plan.fixed;
  return k;
}

}  // namespace

Tensor quantize_linear(const Tensor& x, const Tensor& scale, const Tensor& zp, QAxis ax, DType out, QRange range,
                       const char* op) {
  if (!is_floating(x.dtype())) throw DTypeError(name(op) + ": x must be float, got " + dtype_name(x.dtype()));
  if (!is_q8(out)) throw DTypeError(name(op) + ": output must be uint8 or int8, got " + dtype_name(out));
  return elementwise(op, "QUANTIZE", x, scale, zp, Tensor(), ax, out, range);
}

Tensor dequantize_linear(const Tensor& x, const Tensor& scale, const Tensor& zp, QAxis ax, const char* op) {
  if (!is_q8(x.dtype()) && x.dtype() != DType::i32)
    throw DTypeError(name(op) + ": x must be uint8, int8 or int32, got " + dtype_name(x.dtype()));
  return elementwise(op, "DEQUANTIZE", x, scale, zp, Tensor(), ax, DType::f32, QRange{});
}

Tensor requantize(const Tensor& acc, const Tensor& multiplier, const Tensor& zp, const Tensor& bias, QAxis ax,
                  DType out, const char* op) {
  if (acc.dtype() != DType::i32) throw DTypeError(name(op) + ": sums must be int32, got " + dtype_name(acc.dtype()));
  if (zp.defined() && zp.numel() != 1)
    throw ShapeError(name(op) + ": the output zero point must be one value, got shape " + to_string(zp.shape()));
  Tensor m = multiplier;
  if (bias.defined() && m.numel() == 1) m = m.reshape({1}).expand({bias.numel()});  // bias needs the axis
  return elementwise(op, "REQUANT", acc, m, zp, bias, ax, out, QRange::of(out));
}

std::array<Tensor, 2> dynamic_quant_params(const Tensor& x) {
  const char* op = "dynamic_quantize_linear";
  DeviceImpl& dev = dev_of(x);
  const Device device = x.device();
  if (!is_floating(x.dtype())) throw DTypeError(name(op) + ": x must be float, got " + dtype_name(x.dtype()));
  Tensor scale = alloc(dev, {1}, DType::f32, op), zp = alloc(dev, {1}, DType::i32, op);
  const Tensor lo = x.numel() ? dense_as(amin(x), DType::f32) : zeros(device, {1});
  const Tensor hi = x.numel() ? dense_as(amax(x), DType::f32) : zeros(device, {1});
  QuantIntVariant v;
  v.kind = QuantIntVariant::Kind::dqparams;
  Launch launch(dev, op);
  launch.program(v.kFile, v.defines(), {1}).write(scale).write(zp).read(lo).read(hi);
  launch.loop_iterations(0).invocations(1);
  return {scale, zp};
}

std::array<float, 2> requant_bounds(const IntRequant& rq) {
  const float inf = std::numeric_limits<float>::infinity();
  switch (rq.act.act) {
    case Activation::relu:
      return {0.0f, inf};
    case Activation::clip:
      return {rq.act.p0, rq.act.p1};
    default:
      return {-inf, inf};
  }
}

namespace {

// Whether the block-f32 kernel's QUANT epilogue applies to `rq` over N columns: whole words of
// 8-bit output per row (any N where it dequantizes: float32 stores) and an activation it has.
bool requant_fits(const IntRequant* rq, std::int64_t N) {
  if (!rq) return true;
  const Activation a = rq->act.act;
  return settings().qconv_requant && (N % 4 == 0 || rq->dequantize) &&
         (a == Activation::none || a == Activation::relu || a == Activation::clip);
}

// The operands of the integer matmul as its kernels read them: a [B or 1, M, K], b [B or 1, K,
// N] (a_bs / b_bs: their batch strides, 0 broadcasts), dense from element 0.
struct MatmulOperands {
  Tensor a, b;
  std::int64_t a_bs, b_bs, B, M, N, K;
};

// The geometry of the implicit-GEMM convolution (imatmul.comp's IMPLICIT): b is the image [N G,
// CG, H, W], a the filter [G, Og, CG KH KW].
struct ImplicitConv {
  std::int64_t G, H, W, OW, KH, KW;
  IntConvOptions o;  ///< quantize_x: b is float32, quantized in the load (QIN)
};

struct ImplicitParams {
  MatmulParams m;
  ImplicitConv c;
  void set(Uniforms& u) const {
    m.set(u);
    u.u32("u_G", c.G);
    u.u32("u_HW", c.H * c.W);
    u.i32("u_H", c.H);
    u.i32("u_W", c.W);
    u.i32("u_OW", c.OW);
    u.i32("u_sh", c.o.stride[0]);
    u.i32("u_sw", c.o.stride[1]);
    u.i32("u_pt", c.o.padding[0]);
    u.i32("u_pl", c.o.padding[1]);
    u.i32("u_dh", c.o.dilation[0]);
    u.i32("u_dw", c.o.dilation[1]);
  }
};

// The integer matmul's launches over `mo` (int32 [B, M, N], with `dq` float32, with `rq` 8-bit;
// undefined where the fused epilogue or, for `im`, the block-f32 kernel does not apply: the
// caller's other path), K split where one invocation's loops would exceed the device's limit.
Tensor block_launches(const MatmulOperands& mo, const Tensor& za_in, const Tensor& zb_in, const IntDequant* dq,
                      const IntRequant* rq, const ImplicitConv* im, const char* op) {
  const Tensor &ad = mo.a, &bd = mo.b;
  const std::int64_t B = mo.B, M = mo.M, N = mo.N, K = mo.K, a_bs = mo.a_bs, b_bs = mo.b_bs;
  const std::int64_t rows = im ? im->G * M : M;  // za / sb / bias values per row (implicit: all groups)
  const Device device = ad.device();
  const std::int64_t za_n = za_in.defined() ? za_in.numel() : 1, zb_n = zb_in.defined() ? zb_in.numel() : 1;
  if (za_n != 1 && za_n != rows)
    throw ShapeError(name(op) + ": a_zero_point of shape " + to_string(za_in.shape()) + " is neither one value nor " +
                     std::to_string(rows) + " (one per row of A)");
  if (zb_n != 1 && zb_n != N)
    throw ShapeError(name(op) + ": b_zero_point of shape " + to_string(zb_in.shape()) + " is neither one value nor " +
                     std::to_string(N) + " (one per column of B)");
  DeviceImpl& dev = dev_of(ad);
  if (B * M * N == 0 || K == 0) {
    if (dq) return Tensor();  // the caller's unfused path (zeros, then the epilogue)
    return zeros(device, {B, M, N}, DType::i32);
  }
  // 8-bit zero points of the operands' own types: every difference is in [-255, 255] and the
  // block-f32 kernel (imatmul.comp) is exact; other zero points: the int32 kernel (IMATMUL).
  const auto narrow = [](const Tensor& z, const Tensor& t) { return !z.defined() || z.dtype() == t.dtype(); };
  // QIN: the float32 image quantized in the load, to the zero point's 8-bit type (one value)
  const bool qin = im && im->o.quantize_x;
  if (qin && (bd.dtype() != DType::f32 || !zb_in.defined() || zb_in.dtype() != im->o.x_type || zb_n != 1 || !dq))
    return Tensor();
  const IntKernel kern = narrow(za_in, ad) && (qin || narrow(zb_in, bd))
                             ? block_f32_kernel({M, N, K, B, K % 4 == 0, N % 4 == 0 && !im}, imatmul_device(dev))
                             : IntKernel{};
  const std::int64_t limit = static_cast<std::int64_t>(std::min<std::uint64_t>(dev.loop_budget(), 1u << 30));
  if (limit < kern.per_tile + kern.fixed && im) return Tensor();  // the implicit GEMM's callers have other paths
  if (limit < kern.per_tile + kern.fixed)
    throw LimitError(name(op) + ": the device's loop limit " + std::to_string(limit) + " is below " +
                     std::to_string(kern.per_tile + kern.fixed) + " (one K tile of the integer matmul)");
  // Split K so that one invocation's loops stay within the loop limit.
  const std::int64_t chunk = (limit - kern.fixed) / kern.per_tile * kern.bk;
  const bool fused = dq && kern.block_f32 && K <= chunk;
  if ((dq && !fused) || (im && !kern.block_f32)) return Tensor();  // (QIN: dq, so fused)
  if (rq && !requant_fits(rq, N)) return Tensor();
  // Zero points: the block-f32 kernel reads them in their own dtype (no conversion), the int32
  // kernel as int32; undefined ones are 0 (block-f32: not read, operand bound to A).
  const auto zp = [&](const Tensor& z, bool& none) {
    if (!kern.block_f32) return zero_point(device, z);
    if (z.defined()) return dense(z);
    none = true;
    return ad;
  };
  IMatmulVariant bv = kern.v;
  if (im) {
    bv.implicit = true, bv.kh = im->KH, bv.kw = im->KW;
    bv.rowquad = im->o.stride[1] == 1 && im->OW % 4 == 0 && settings().iconv_gemm != IConvGemmSetting::bytes && !qin;
    bv.qin = qin;
  }
  const Tensor za = zp(za_in, bv.za_none), zb = zp(zb_in, bv.zb_none);
  bv.a = ad.dtype(), bv.b = qin ? im->o.x_type : bd.dtype(), bv.za = za.dtype(), bv.zb = zb.dtype();
  Tensor c = alloc(dev, {B, M, N}, rq && !rq->dequantize ? rq->out : fused ? DType::f32 : DType::i32, op);
  Tensor ys, zy, totals;  // QUANT's y_scale and y_zero_point; DEQUANT's int32 totals in memory
  if (rq) {
    ys = dense_as(rq->scale, DType::f32);
    zy = rq->zero_point.defined() ? dense(rq->zero_point) : zeros(device, {1}, DType::i32);
    bv.quant = true, bv.y = rq->out, bv.zy = zy.dtype(), bv.dq_out = rq->dequantize;
  }
  const IMatmulVariant::Totals many = bv.totals;
  for (std::int64_t k0 = 0; k0 < K; k0 += chunk) {
    const std::int64_t k1 = std::min(K, k0 + chunk), tiles = (k1 - k0 + kern.bk - 1) / kern.bk;
    Launch launch(dev, op);
    std::int64_t sb_per = kern.block_f32 ? 0 : -1;
    bv.accum = k0 > 0;
    bv.totals = k1 - k0 <= kIntBlockK && bv.slices == 1 ? IMatmulVariant::Totals::none : many;  // slices: regs
    if (fused) {
      bv.dequant = true, bv.dq_row = dq->per_row, bv.bias = dq->bias.defined();
      sb_per = dq->scale_b.numel() != 1 ? 1 : 0;
      if (bv.totals == IMatmulVariant::Totals::mem) totals = alloc(dev, {B, M, N}, DType::i32, op);
    }
    if (kern.block_f32) {
      launch.program(bv.kFile, bv.defines(), {kern.local_x, kern.local_y});
    } else {
      QuantIntVariant v;
      v.kind = QuantIntVariant::Kind::imatmul, v.accum = k0 > 0;
      v.dt = {DType::i32, ad.dtype(), bd.dtype(), za.dtype(), zb.dtype()};
      launch.program(v.kFile, v.defines(), {kern.local_x, kern.local_y});
    }
    launch.write(c).read(ad).read(bd).read(za).read(zb);
    if (fused) {
      const Tensor sa = dense_as(dq->scale_a, DType::f32), sb = dense_as(dq->scale_b, DType::f32);
      launch.read(sa).read(sb).read(dq->bias.defined() ? dense_as(dq->bias, DType::f32) : sa);
      if (rq || totals.defined()) launch.read(rq ? ys : sa).read(rq ? zy : sa);
      if (totals.defined()) launch.write(totals);
    }
    const MatmulParams mp{M, N, K, k0, k1, a_bs, b_bs, za_n != 1, zb_n != 1, sb_per, rq};
    if (im) {
      launch.params(ImplicitParams{mp, *im});
    } else {
      launch.params(mp);
    }
    launch.loop_iterations(static_cast<std::uint64_t>(tiles * kern.per_tile + kern.fixed));
    launch.groups(static_cast<std::uint64_t>((N + kern.tile_n - 1) / kern.tile_n),
                  static_cast<std::uint64_t>((M + kern.tile_m - 1) / kern.tile_m), static_cast<std::uint64_t>(B));
  }
  return c;
}

// matmul_integer, and with `dq` its dequantizing epilogue where one block-f32 launch covers K
// (nullptr: int32 sums; otherwise a float32 result, or an undefined tensor where the epilogue
// does not apply and the caller dequantizes the int32 sums itself); with `rq` (and `dq`) also
// requantized to 8 bits (QUANT) where that applies (requant_fits), else undefined.
Tensor integer_matmul(const Tensor& a_in, const Tensor& b_in, const Tensor& za_in, const Tensor& zb_in,
                      const IntDequant* dq, const char* op, const IntRequant* rq = nullptr) {
  need_q8(op, a_in, "A");
  need_q8(op, b_in, "B");
  if (a_in.dim() < 1 || b_in.dim() < 1)
    throw ShapeError(name(op) + ": A and B need rank >= 1, got " + to_string(a_in.shape()) + " and " +
                     to_string(b_in.shape()));
  const Tensor a = a_in.dim() == 1 ? a_in.unsqueeze(0) : a_in;
  const Tensor b = b_in.dim() == 1 ? b_in.unsqueeze(1) : b_in;
  const std::int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  if (b.size(-2) != K)
    throw ShapeError(name(op) + ": A " + to_string(a_in.shape()) + " and B " + to_string(b_in.shape()) +
                     " do not multiply (K " + std::to_string(K) + " vs " + std::to_string(b.size(-2)) + ")");
  // Batch dims: NumPy broadcasting.
  const Shape ab(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  const Shape batch = broadcast_shapes(op, ab, bb);
  const std::int64_t B = numel_of(batch);
  auto flat = [&](const Tensor& t, const Shape& own, std::int64_t r, std::int64_t c, std::int64_t& bs) {
    if (numel_of(own) == 1) {  // one matrix for every batch entry
      bs = 0;
      return dense(t.reshape({r, c}));
    }
    Shape full = batch;
    full.push_back(r);
    full.push_back(c);
    bs = r * c;
    return dense(t.expand(full)).reshape({B, r, c});
  };
  std::int64_t a_bs = 0, b_bs = 0;
  const Tensor ad = flat(a, ab, M, K, a_bs), bd = flat(b, bb, K, N, b_bs);
  Shape out_shape = batch;
  if (a_in.dim() > 1) out_shape.push_back(M);
  if (b_in.dim() > 1) out_shape.push_back(N);
  const Tensor c = block_launches({ad, bd, a_bs, b_bs, B, M, N, K}, za_in, zb_in, dq, rq, nullptr, op);
  return c.defined() ? c.reshape(out_shape) : c;
}

// The unfused epilogue: DequantizeLinear of the int32 sums with the multiplier scale_a * scale_b
// (`len` values along `axis`), then Add of the bias.
Tensor dequant_sums(const Tensor& acc, const IntDequant& dq, std::int64_t axis, std::int64_t len, const char* op) {
  Tensor mult = mul(dq.scale_a.reshape({1}), dq.scale_b.reshape({-1}));
  if (mult.numel() == 1) mult = mult.expand({len});
  Tensor y = dequantize_linear(acc, mult, Tensor(), QAxis{axis, 0}, op);
  if (dq.bias.defined()) {
    Shape bs(static_cast<std::size_t>(y.dim()), 1);
    if (y.dim() > 0) bs[static_cast<std::size_t>(axis)] = len;
    y = add(y, dq.bias.to(DType::f32).reshape(bs));
  }
  return y;
}

}  // namespace

Tensor matmul_integer(const Tensor& a, const Tensor& b, const Tensor& za, const Tensor& zb, const char* op) {
  return integer_matmul(a, b, za, zb, nullptr, op);
}

Tensor matmul_dequant(const Tensor& a, const Tensor& b, const Tensor& za, const Tensor& zb, const IntDequant& dq,
                      const char* op) {
  const std::int64_t n = b.dim() > 1 ? b.size(-1) : 1, m = a.dim() > 1 ? a.size(-2) : 1;
  const std::int64_t len = dq.per_row ? m : n;
  if (dq.scale_a.numel() != 1 || (dq.scale_b.numel() != 1 && dq.scale_b.numel() != len) ||
      (dq.bias.defined() && dq.bias.numel() != len))
    throw ShapeError(name(op) + ": scales " + to_string(dq.scale_a.shape()) + " and " + to_string(dq.scale_b.shape()) +
                     (dq.bias.defined() ? " and bias " + to_string(dq.bias.shape()) : std::string()) +
                     " are not one value (A's scale) and one or " + std::to_string(len) + " values");
  Tensor y = integer_matmul(a, b, za, zb, &dq, op);
  if (y.defined()) return y;
  const Tensor acc = integer_matmul(a, b, za, zb, nullptr, op);
  const std::int64_t axis = std::max<std::int64_t>(acc.dim() - (dq.per_row ? 2 : 1), 0);
  return dequant_sums(acc, dq, axis, len, op);
}

namespace {

// The QDQ convolution (rq.f32_sums) as im2col's 8-bit columns and the f32 warp kernel on them
// with the requantizing epilogue (glsl/nn/imatmul_warp.comp): x [N, C, H, W] and w [O, C, KH, KW]
// dense 8-bit, zxc x's zero point as a tensor (zero_point: 0 where zx is undefined); undefined where it does not apply
// (the caller's exact paths): groups, K = C KH KW or OH OW not multiples of 4 (the kernel's quad loads), zero points
// not 8-bit of their operands' types (or zw neither one nor O values), a requantization the epilogue lacks, columns
// past the device's SSBO limit, Settings::iconv_gemm not `choose`, x float32 (quantize_x: the caller quantizes it
// first), or an f32 matmul plan of the same product that does not take the warp kernel where the integer planner does
// not split K either (plan_iwarp_split: few output tiles on GPUs). Where K is split (that planner's, or the f32 plan's
// under a loop limit or Settings::matmul_split), the kernel writes each chunk's float32 sums and a second dispatch
// (IW_SUM) adds them and requantizes.
// warp_qconv_plan: the GEMM's plan where the warp path takes the conv (x_type: x's 8-bit type; x itself may be the
// float32 input of quantize_x), else none.
std::optional<MatmulPlan> warp_qconv_plan(DeviceImpl& dev, const Tensor& x, DType x_type, const Tensor& w,
                                          const Tensor& zx, const Tensor& zw, const IntConvOptions& o, std::int64_t OH,
                                          std::int64_t OW, const IntRequant& rq) {
  const std::int64_t N = x.size(0), C = x.size(1), O = w.size(0), KH = w.size(2), KW = w.size(3);
  const std::int64_t K = C * KH * KW, P = OH * OW;
  const auto narrow = [](const Tensor& z, DType t) { return !z.defined() || z.dtype() == t; };
  if (!rq.f32_sums || o.groups != 1 || K % 4 != 0 || P % 4 != 0 || N * O * P == 0 ||
      settings().iconv_gemm != IConvGemmSetting::choose || !requant_fits(&rq, P) || !narrow(zx, x_type) ||
      !narrow(zw, w.dtype()) || (zx.defined() && zx.numel() != 1) ||
      (zw.defined() && zw.numel() != 1 && zw.numel() != O) || N * K * P > dev.ssbo_limit())
    return std::nullopt;
  MatmulProblem p;
  // split_columns: as conv2d's f32 GEMM plans it (matmul_split_columns; no K split, no GEMV)
  p.M = O, p.N = P, p.K = K, p.batch = N, p.quads = true, p.a_quads = 1, p.b_quads = 1, p.split_columns = true;
  const DeviceTraits traits{dev.adapter().software, dev.loop_limit(), false, dev.caps().max_shared_memory};
  MatmulPlan plan = plan_matmul(p, traits, settings());
  if (plan.kernel != MatmulPlan::Kernel::warp || plan.tile_n != 128) {
    // few output tiles (the 56x56 convs' 25-50): the warp kernel with K in chunks, where the integer
    // planner splits it, else the caller's exact implicit GEMM
    const IWarpSplit split = plan_iwarp_split({O, P, K, N}, dev.adapter().software, settings());
    if (split.splits < 2 || warp_shared_bytes(split.bm, 128, split.bk, true, false, true) > traits.max_shared)
      return std::nullopt;
    Settings forced = settings();
    forced.matmul_kernel = MatmulKernelSetting::warp, forced.matmul_split = static_cast<int>(split.splits);
    plan = plan_matmul(p, traits, forced);
    if (plan.kernel != MatmulPlan::Kernel::warp || plan.tile_n != 128) return std::nullopt;
    set_warp_tile(plan, p, split.bm, 128, split.bk, 8, plan.warp_lanes);
  }
  return plan;
}

Tensor warp_qconv(DeviceImpl& dev, const Tensor& x, const Tensor& w, const Tensor& zx, const Tensor& zw,
                  const Tensor& zxc, const IntConvOptions& o, std::int64_t OH, std::int64_t OW, const IntDequant& dq,
                  const IntRequant& rq, const char* op) {
  const std::int64_t N = x.size(0), C = x.size(1), O = w.size(0), KH = w.size(2), KW = w.size(3);
  const std::int64_t K = C * KH * KW, P = OH * OW;
  if (o.quantize_x) return Tensor();
  const std::optional<MatmulPlan> planned = warp_qconv_plan(dev, x, x.dtype(), w, zx, zw, o, OH, OW, rq);
  if (!planned) return Tensor();
  const MatmulPlan& plan = *planned;
  IWarpVariant v;
  v.bm = static_cast<int>(plan.tile_m), v.bk = plan.warp_bk, v.tn = plan.warp_tn, v.lanes = plan.warp_lanes;
  v.edge = plan.warp_edge, v.k_loop = plan.warp_k_loop, v.shk = plan.warp_shk;
  v.a = w.dtype(), v.b = x.dtype(), v.za_none = !zw.defined(), v.zb_none = !zx.defined();
  v.za = v.za_none ? v.a : zw.dtype(), v.zb = v.zb_none ? v.b : zx.dtype();
  v.bias = dq.bias.defined(), v.y = rq.out, v.dq_out = rq.dequantize;
  v.a_f32 = v.b_f32 = rq.f32_columns;
  if (rq.f32_columns) v.za_none = v.zb_none = true;  // subtracted in the conversions
  const Tensor ys = dense_as(rq.scale, DType::f32);
  const Tensor zy = rq.zero_point.defined() ? dense(rq.zero_point) : zeros(x.device(), {1}, DType::i32);
  v.zy = zy.dtype();
  const bool plain = KH == 1 && KW == 1 && o.stride == std::array<std::int64_t, 2>{1, 1} &&
                     o.padding == std::array<std::int64_t, 4>{0, 0, 0, 0};
  // the lab's f32 columns: differences as dequantize_linear of scale 1 makes them
  const auto diff = [&](const Tensor& t, const Tensor& z, std::int64_t n) {
    return dequantize_linear(t, full(x.device(), {n}, 1.0), z, QAxis{0, 0}, op);
  };
  const Tensor cols = !plain           ? icol_words(dev, x, zxc, KH, KW, OH, OW, o, rq.f32_columns, op)  // zx outside
                      : rq.f32_columns ? diff(x, zx, 1).reshape({N, C, P})
                                       : x.reshape({N, C, P});
  const Tensor a = rq.f32_columns ? diff(w, zw, zw.defined() ? zw.numel() : 1) : w;
  Tensor c = alloc(dev, {N, O, OH, OW}, rq.dequantize ? DType::f32 : rq.out, op);
  const Tensor sa = dense_as(dq.scale_a, DType::f32), sb = dense_as(dq.scale_b, DType::f32);
  const Tensor bias = v.bias ? dense_as(dq.bias, DType::f32) : sa;
  const IWarpParams params{O, P, K, N, zw.defined() && zw.numel() != 1, sb.numel() != 1 ? 1 : 0, rq};
  const std::int64_t splits = plan.splits;
  // split: the chunks' float32 sums [splits, N, O, P], then one dispatch sums and requantizes them
  const Tensor partial = splits > 1 ? alloc(dev, {splits, N, O, P}, DType::f32, op) : Tensor();
  {
    IWarpVariant g = v;
    g.split = splits > 1;
    Launch launch(dev, op);
    launch.program(g.kFile, g.defines(), {plan.local_x});
    launch.write(g.split ? partial : c)
        .read(a)
        .read(cols)
        .read(v.za_none ? w : dense(zw))
        .read(v.zb_none ? w : dense(zx));
    if (!g.split) launch.read(sa).read(sb).read(bias).read(ys).read(zy);
    launch.params(IWarpSplitParams{params, plan.kchunk, splits});
    launch.loop_iterations(plan.loop_iterations);
    launch.groups(plan.groups_x, plan.groups_y, plan.groups_z);
  }
  if (splits > 1) {
    IWarpVariant s = v;
    s.sum = true;
    Launch launch(dev, op);
    // operands 2-4 unread (bound to the partial sums, not declared)
    launch.program(s.kFile, s.defines(), {256}).write(c).read(partial).read(partial).read(partial).read(partial);
    launch.read(sa).read(sb).read(bias).read(ys).read(zy);
    launch.params(IWarpSumParams{N * O * P / 4, P, O, splits, params});
    launch.loop_iterations(static_cast<std::uint64_t>(splits)).invocations(static_cast<std::uint64_t>(N * O * P / 4));
  }
  return c;
}

// conv_integer, and with `dq` (per output channel) its dequantizing epilogue, with `rq` also
// requantized, in the direct kernel where it applies, else (dq only) where every piece's matmul
// takes it (nullptr: int32 sums; otherwise float32 / 8-bit, or undefined: the caller's unfused path).
Tensor integer_conv(const Tensor& x_in, const Tensor& w_in, const Tensor& zx_in, const Tensor& zw_in,
                    const IntConvOptions& o, const IntDequant* dq, const IntRequant* rq, const char* op) {
  if (!o.quantize_x) need_q8(op, x_in, "x");
  need_q8(op, w_in, "w");
  if (x_in.dim() != 4 || w_in.dim() != 4)
    throw ShapeError(name(op) + ": x and w must be 4-D (NCHW, OIHW), got " + to_string(x_in.shape()) + " and " +
                     to_string(w_in.shape()));
  const std::int64_t N = x_in.size(0), C = x_in.size(1), H = x_in.size(2), W = x_in.size(3);
  const std::int64_t O = w_in.size(0), CG = w_in.size(1), KH = w_in.size(2), KW = w_in.size(3), G = o.groups;
  if (G < 1 || C % G != 0 || O % G != 0 || CG != C / G)
    throw ShapeError(name(op) + ": w " + to_string(w_in.shape()) + " does not fit x " + to_string(x_in.shape()) +
                     " with " + std::to_string(G) + " groups");
  for (int i = 0; i < 2; ++i)
    if (o.stride[i] < 1 || o.dilation[i] < 1) throw ShapeError(name(op) + ": strides and dilations must be >= 1");
  const std::int64_t OH = window_out_size(H, KH, o.stride[0], o.padding[0], o.padding[2], o.dilation[0], false);
  const std::int64_t OW = window_out_size(W, KW, o.stride[1], o.padding[1], o.padding[3], o.dilation[1], false);
  if (OH <= 0 || OW <= 0)
    throw ShapeError(name(op) + ": the filter " + to_string(w_in.shape()) + " (dilation " +
                     to_string({o.dilation[0], o.dilation[1]}) + ") is larger than the input " +
                     to_string(x_in.shape()) + " with padding " +
                     to_string({o.padding[0], o.padding[1], o.padding[2], o.padding[3]}) +
                     ": the output size would be " + to_string({OH, OW}));
  const Device device = x_in.device();
  // w's zero point as a tensor only where a kernel reads one (an absent one would be a fill
  // dispatch per call: the direct kernel, the implicit GEMM and the warp path read none then;
  // fuse_qdq drops all-zero ones)
  const Tensor zx = zero_point(device, zx_in);
  if (zw_in.defined() && is_floating(zw_in.dtype()))
    throw DTypeError("gltensor: a zero point must be an integer tensor");
  const std::int64_t zw_n = zw_in.defined() ? zw_in.numel() : 1;
  if (zx.numel() != 1)
    throw ShapeError(name(op) + ": x_zero_point must be one value, got shape " + to_string(zx_in.shape()));
  if (zw_n != 1 && zw_n != O)
    throw ShapeError(name(op) + ": w_zero_point of shape " + to_string(zw_in.shape()) + " is neither one value nor " +
                     std::to_string(O) + " (one per output channel)");
  DeviceImpl& dev = dev_of(x_in);
  const std::int64_t count = N * O * OH * OW;
  if (count == 0 || CG * KH * KW == 0) return dq ? Tensor() : zeros(device, {N, O, OH, OW}, DType::i32);
  IntDequant dq_rows;  // the matmul's rows are the output channels
  if (dq) {
    dq_rows = *dq;
    dq_rows.per_row = true;
  }
  const Tensor x = dense(x_in), w = dense(w_in);
  if (rq) {
    // quantize_x where the warp path takes the conv: the caller quantizes x first (the fused
    // implicit GEMM would leave the warp path)
    if (o.quantize_x && warp_qconv_plan(dev, x, o.x_type, w, zx_in, zw_in, o, OH, OW, *rq)) return Tensor();
    const Tensor y = warp_qconv(dev, x, w, zx_in, zw_in, zx, o, OH, OW, *dq, *rq, op);
    if (y.defined()) return y;
  }
  if (dq) {
    // 8-bit zero points of the operands' own types (or none): the direct kernel's f32 blocks are exact.
    const auto narrow = [](const Tensor& z, DType t) { return !z.defined() || z.dtype() == t; };
    const bool exact = narrow(zx_in, o.quantize_x ? o.x_type : x.dtype()) && narrow(zw_in, w.dtype());
    const IConvDirectPlan plan =
        plan_iconv_direct({CG, O / G, KH, KW, OW, o.stride[1], o.dilation[1], exact, OH * OW, N * G},
                          {dev.loop_budget(), dev.caps().max_ssbo_bindings, dev.adapter().software}, settings());
    // quantize_x: the direct kernel after the caller's quantize_linear
    if (plan.direct)
      return o.quantize_x
                 ? Tensor()
                 : iconv_direct(x, w, zx, zw_in.defined() ? dense(zw_in) : Tensor(), o, OH, OW, *dq, rq, plan, op);
  }
  if (o.quantize_x) {  // float32 x quantized in the implicit GEMM's load, or the caller quantizes it first
    if (!dq || !plan_iconv_implicit(settings())) return Tensor();
    const std::int64_t Og = O / G, CK = CG * KH * KW;
    const ImplicitConv im{G, H, W, OW, KH, KW, o};
    const Tensor y = block_launches({w.reshape({G, Og, CK}), x, Og * CK, CG * H * W, N * G, Og, OH * OW, CK}, zw_in,
                                    zx_in, &dq_rows, rq, &im, op);
    return y.defined() ? y.reshape({N, O, OH, OW}) : y;
  }
  // The implicit GEMM: w [G, Og, CG KH KW] @ the image's taps [N G, CG KH KW, OH OW] (1x1
  // filters of stride 1 without groups read x as their columns below already).
  const bool plain_1x1 = G == 1 && KH == 1 && KW == 1 && o.stride == std::array<std::int64_t, 2>{1, 1} &&
                         o.padding == std::array<std::int64_t, 4>{0, 0, 0, 0};
  const bool implicit = plan_iconv_implicit(settings());
  if (implicit && !plain_1x1) {
    const std::int64_t Og = O / G, CK = CG * KH * KW;
    const ImplicitConv im{G, H, W, OW, KH, KW, o};
    const Tensor y = block_launches({w.reshape({G, Og, CK}), x, Og * CK, CG * H * W, N * G, Og, OH * OW, CK}, zw_in,
                                    zx_in, dq ? &dq_rows : nullptr, rq, &im, op);
    if (y.defined()) return y.reshape({N, O, OH, OW});
  }
  if (rq && (G != 1 || !requant_fits(rq, OH * OW))) return Tensor();
  if (G == 1) {
    // im2col (8-bit columns, zx where the filter leaves the image) and the integer matmul
    // w [O, C KH KW] @ cols [n, C KH KW, OH OW] with w's zero point per row, in pieces of images
    // whose columns fit the device's max SSBO block; 1x1 filters with stride 1 read x as it is.
    const std::int64_t CK = C * KH * KW, per_image = CK * OH * OW;
    const bool direct_1x1 = KH == 1 && KW == 1 && o.stride == std::array<std::int64_t, 2>{1, 1} &&
                            o.padding == std::array<std::int64_t, 4>{0, 0, 0, 0};
    const std::int64_t per_piece = std::max<std::int64_t>(1, dev.ssbo_limit() / std::max<std::int64_t>(per_image, 1));
    if (direct_1x1 || per_image <= dev.ssbo_limit()) {
      const Tensor wm = w.reshape({O, CK});
      std::vector<Tensor> parts;
      for (std::int64_t n0 = 0; n0 < N; n0 += direct_1x1 ? N : per_piece) {
        const std::int64_t n1 = direct_1x1 ? N : std::min(N, n0 + per_piece);
        const Tensor xs = x.narrow(0, n0, n1 - n0);
        const Tensor cols =
            direct_1x1 ? dense(xs).reshape({n1 - n0, C, H * W}) : int_cols(dev, dense(xs), zx, KH, KW, OH, OW, o, op);
        parts.push_back(integer_matmul(wm, cols, zw_in, zx_in, dq ? &dq_rows : nullptr, op, rq));
        if (!parts.back().defined()) return Tensor();
      }
      Tensor r = parts.size() == 1 ? parts[0] : concat(parts, 0);
      return r.reshape({N, O, OH, OW});
    }
  }
  if (dq || rq) return Tensor();
  // Grouped (depthwise) convolutions and images whose columns exceed the max SSBO block: one
  // output per invocation. Split the input channels so that one invocation's loops stay within the loop limit.
  const std::uint64_t per_c = static_cast<std::uint64_t>(KH * KW + KH + 1), limit = dev.loop_budget();
  if (per_c > limit)
    throw LimitError(name(op) + ": a " + std::to_string(KH) + "x" + std::to_string(KW) + " filter needs " +
                     std::to_string(per_c) + " loop iterations per channel, more than the device's limit of " +
                     std::to_string(limit));
  const std::int64_t chunk = static_cast<std::int64_t>(std::min<std::uint64_t>(limit / per_c, 1u << 30));
  const Tensor zw = zero_point(device, zw_in);
  Tensor y = alloc(dev, {N, O, OH, OW}, DType::i32, op);
  for (std::int64_t c0 = 0; c0 < CG; c0 += chunk) {
    const std::int64_t c1 = std::min(CG, c0 + chunk);
    QuantIntVariant v;
    v.kind = QuantIntVariant::Kind::iconv, v.accum = c0 > 0;
    v.dt = {DType::i32, x.dtype(), w.dtype(), zx.dtype(), zw.dtype()};
    Launch launch(dev, op);
    launch.program(v.kFile, v.defines(), {64}).write(y).read(x).read(w).read(zx).read(zw);
    launch.params(ConvParams{{count, C, H, W, OH, OW, KH, KW, o}, O, O / G, CG, c0, c1, zw.numel() != 1});
    launch.loop_iterations(static_cast<std::uint64_t>(c1 - c0) * per_c);
    launch.invocations(static_cast<std::uint64_t>(count));
  }
  return y;
}

}  // namespace

Tensor conv_integer(const Tensor& x, const Tensor& w, const Tensor& zx, const Tensor& zw, const IntConvOptions& o,
                    const char* op) {
  return integer_conv(x, w, zx, zw, o, nullptr, nullptr, op);
}

namespace {

void check_conv_dequant(const Tensor& w, const IntDequant& dq, const char* op) {
  const std::int64_t O = w.dim() == 4 ? w.size(0) : 0;
  if (dq.scale_a.numel() != 1 || (dq.scale_b.numel() != 1 && dq.scale_b.numel() != O) ||
      (dq.bias.defined() && dq.bias.numel() != O))
    throw ShapeError(name(op) + ": scales " + to_string(dq.scale_a.shape()) + " and " + to_string(dq.scale_b.shape()) +
                     (dq.bias.defined() ? " and bias " + to_string(dq.bias.shape()) : std::string()) +
                     " are not one value (x's scale) and one or " + std::to_string(O) + " values (per output channel)");
}

}  // namespace

namespace {

// IntConvOptions::quantize_x where the load does not quantize: x quantized by quantize_linear.
Tensor quantized_x(const Tensor& x, const Tensor& zx, const IntConvOptions& o, const IntDequant& dq, const char* op) {
  if (!is_q8(o.x_type)) throw DTypeError(name(op) + ": x_type must be uint8 or int8, got " + dtype_name(o.x_type));
  return quantize_linear(x, dq.scale_a, zx, QAxis{}, o.x_type, QRange::of(o.x_type), "QuantizeLinear");
}

IntConvOptions without_quantize(IntConvOptions o) {
  o.quantize_x = false;
  return o;
}

}  // namespace

Tensor conv_dequant(const Tensor& x, const Tensor& w, const Tensor& zx, const Tensor& zw, const IntConvOptions& o,
                    const IntDequant& dq, const char* op) {
  check_conv_dequant(w, dq, op);
  if (o.quantize_x) {
    Tensor y = integer_conv(x, w, zx, zw, o, &dq, nullptr, op);
    return y.defined() ? y : conv_dequant(quantized_x(x, zx, o, dq, op), w, zx, zw, without_quantize(o), dq, op);
  }
  Tensor y = integer_conv(x, w, zx, zw, o, &dq, nullptr, op);
  if (y.defined()) return y;
  return dequant_sums(integer_conv(x, w, zx, zw, o, nullptr, nullptr, op), dq, 1, w.size(0), op);
}

Tensor conv_requant(const Tensor& x, const Tensor& w, const Tensor& zx, const Tensor& zw, const IntConvOptions& o,
                    const IntDequant& dq, const IntRequant& rq, const char* op) {
  check_conv_dequant(w, dq, op);
  if (!is_q8(rq.out)) throw DTypeError(name(op) + ": output must be uint8 or int8, got " + dtype_name(rq.out));
  if (rq.scale.numel() != 1 || (rq.zero_point.defined() && rq.zero_point.numel() != 1))
    throw ShapeError(name(op) + ": y_scale " + to_string(rq.scale.shape()) +
                     (rq.zero_point.defined() ? " and y_zero_point " + to_string(rq.zero_point.shape()) : "") +
                     " must be one value each");
  const Activation a = rq.act.act;
  if (a == Activation::none || a == Activation::relu || a == Activation::clip) {
    Tensor y = integer_conv(x, w, zx, zw, o, &dq, &rq, op);
    if (y.defined()) return y;
  }
  if (o.quantize_x) return conv_requant(quantized_x(x, zx, o, dq, op), w, zx, zw, without_quantize(o), dq, rq, op);
  const Tensor q = quantize_linear(apply_epilogue(conv_dequant(x, w, zx, zw, o, dq, op), rq.act), rq.scale,
                                   rq.zero_point, QAxis{}, rq.out, QRange::of(rq.out), op);
  return rq.dequantize ? dequantize_linear(q, rq.scale, rq.zero_point, QAxis{}, op) : q;
}

}  // namespace gltensor::detail
