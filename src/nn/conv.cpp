// conv2d (im2col + matmul, explicit backward) and conv_transpose2d (matmul + col2im).
#include <algorithm>
#include <array>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "autograd/recording.hpp"
#include "gltensor/autograd.hpp"
#include "gltensor/indexing.hpp"
#include "gltensor/linalg.hpp"
#include "gltensor/nn_functional.hpp"
#include "gltensor/ops.hpp"
#include "gltensor/reduce.hpp"
#include "nn/conv_plan.hpp"
#include "ops/activation.hpp"
#include "ops/autocast.hpp"
#include "ops/batched.hpp"
#include "runtime/codegen.hpp"
#include "runtime/counters.hpp"
#include "runtime/launch.hpp"
#include "runtime/settings.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {
using namespace detail;

namespace {

// The bytes of filters a uniform block holds for the direct conv kernel's ubo layout (the
// device's max uniform block size, caps().max_uniform_block_size; plan_conv_direct picks the
// layout: software rasterizers, or where GLTENSOR_CONV_DIRECT=ubo forces it).
std::int64_t ubo_limit(const DeviceImpl& dev) { return dev.caps().max_uniform_block_size; }

// n floats (uninitialized) for filters that the ubo layout binds: at the start of a buffer of at
// least the device's whole block where that is at most 64 KiB (the bytes past them are never
// read), so that conv_direct_ubo binds whole blocks of them.
Tensor ubo_floats_tensor(DeviceImpl& dev, std::int64_t n) {
  const std::int64_t whole = ubo_limit(dev) <= 65536 ? ubo_limit(dev) / 4 : 0;
  return alloc(dev, {std::max(n, whole)}, DType::f32, "conv2d").narrow(0, 0, n);
}

// A conv's bias gradient from gy [N, O, OH, OW]: where gy is contiguous, each channel's N planes
// summed as one row of segments (reduce_rows' SEGMENTS: 128-bit loads), no [N, O] sums between.
Tensor bias_grad(const Tensor& gy) { return sum(gy, {0, 2, 3}); }

// The weight gradient gm^T [O, positions] @ colsT^T [positions, K] from gm [positions, O] and the
// transposed columns colsT [K, positions], as the transpose of colsT @ gm [K, O] ([O, K]; written
// transposed by the split-K sum, else copied: matmul_transposed): both operands then in the layouts
// of the forward's product (A's rows along K, B's along N), not the column-major A and K-major B of
// gm^T @ colsT^T. The CNN's second layer on the H100 (O 64, K 288, 25088 positions; bench/RESULTS.md,
// 2026-11-27, cnn29): 110 -> 66 us per step for the product, the step 0.689 -> 0.651 ms with the
// transposing copy's dispatch (cnn30: the copy gone).
Tensor weight_grad_product(const Tensor& gm, const Tensor& colsT) { return detail::matmul_transposed(colsT, gm); }

// The device's traits for the conv planners.
ConvDevice conv_device(const DeviceImpl& dev) {
  return ConvDevice{dev.adapter().software, dev.loop_limit(), dev.ssbo_limit(), ubo_limit(dev),
                    std::min(dev.caps().max_workgroup_invocations, dev.caps().max_workgroup_size[0])};
}

using Geometry = ConvGeometry;
using Piece = ConvPiece;

// Uniforms of glsl/nn/conv.comp: the geometry, and the image view (im2col) or the columns view
// (col2im).
struct ConvParams {
  const Geometry& g;
  const Tensor* img = nullptr;   // im2col
  const Tensor* cols = nullptr;  // col2im
  std::int64_t count = 0;        // col2im: image elements
  void set(Uniforms& u) const {
    u.i32("u_N", g.N), u.i32("u_C", g.C), u.i32("u_H", g.H), u.i32("u_W", g.W), u.i32("u_KH", g.KH);
    u.i32("u_KW", g.KW), u.i32("u_OH", g.OH), u.i32("u_OW", g.OW), u.i32("u_sh", g.o.stride[0]);
    u.i32("u_sw", g.o.stride[1]), u.i32("u_pt", g.o.padding[0]), u.i32("u_pl", g.o.padding[1]);
    u.i32("u_dh", g.o.dilation[0]), u.i32("u_dw", g.o.dilation[1]);
    if (img) {
      const Shape& st = img->strides();
      u.u32s("u_img_stride", {st[0], st[1], st[2], st[3]});
      u.u32("u_img_off", img->offset());
    }
    if (cols) {
      u.u32("u_col_rs", cols->strides()[0]);
      u.u32("u_col_cs", cols->strides()[1]);
      u.u32("u_col_off", cols->offset());
      u.u32("u_count", count);
    }
  }
};

// image [N, C, H, W] (strided) -> colsT [C*KH*KW, N*OH*OW] (the transposed columns matrix)
Tensor im2col(const Tensor& img, const Geometry& g) {
  DeviceImpl& dev = dev_of(img);
  Launch launch(dev, "conv2d");
  Tensor cols = alloc(dev, {g.C * g.KH * g.KW, g.N * g.OH * g.OW}, DType::f32, "conv2d");
  if (cols.numel() == 0) return cols;
  // QUADS: four positions per invocation and one 128-bit store where a plane's positions come in
  // whole quads.
  const std::int64_t per = (g.OH * g.OW) % 4 == 0 ? 4 : 1;
  const ConvVariant v{true, per == 4, img.dtype()};
  // Grid: the positions of all images along x, rows of colsT along z.
  launch.program(v.kFile, v.defines(), {256}).write(cols).read(img).params(ConvParams{g, &img}).loop_iterations(4);
  launch.groups(static_cast<std::uint64_t>((g.N * g.OH * g.OW / per + 255) / 256), 1,
                static_cast<std::uint64_t>(g.C * g.KH * g.KW));
  return cols;
}

// cols [N*OH*OW, C*KH*KW] (strided 2-D view) -> image [N, C, H, W]
Tensor col2im(const Tensor& cols, const Geometry& g) {
  DeviceImpl& dev = dev_of(cols);
  Launch launch(dev, "conv2d");
  Tensor img = alloc(dev, {g.N, g.C, g.H, g.W}, DType::f32, "conv2d");
  if (img.numel() == 0) return img;
  const ConvVariant v{false, false, cols.dtype()};
  // Loops: kernel rows, and kernel columns in each.
  launch.program(v.kFile, v.defines(), {256}).write(img).read(cols).params(ConvParams{g, nullptr, &cols, img.numel()});
  launch.loop_iterations(static_cast<std::uint64_t>(g.KH * (g.KW + 1)))
      .invocations(static_cast<std::uint64_t>(img.numel()));
  return img;
}

}  // namespace

Tensor detail::gy_rows(const Tensor& gy) {
  const std::int64_t N = gy.size(0), O = gy.size(1), OH = gy.size(2), OW = gy.size(3);
  if (gy.dtype() != DType::f32 || gy.numel() == 0 || (OH * OW > 1 && (gy.strides()[3] != 1 || gy.strides()[2] != OW)))
    return gy.permute({0, 2, 3, 1}).reshape({-1, O});
  DeviceImpl& dev = dev_of(gy);
  Launch launch(dev, "conv2d_backward");
  Tensor rows = alloc(dev, {N * OH * OW, O}, DType::f32, "conv2d_backward");
  ConvVariant v;
  v.im2col = false, v.rows_t = true;
  ConvGeometry g{};
  g.N = N, g.C = O, g.OH = OH, g.OW = OW;
  launch.program(v.kFile, v.defines(), {256}).write(rows).read(gy).params(ConvParams{g, &gy}).loop_iterations(0);
  launch.groups(static_cast<std::uint64_t>((OH * OW + 31) / 32), static_cast<std::uint64_t>((O + 31) / 32),
                static_cast<std::uint64_t>(N));
  return rows;
}

namespace {

// Uniforms of glsl/nn/conv_wgrad.comp.
struct ConvWgradParams {
  const Geometry& g;
  const Tensor& gy;
  const Tensor& x;
  std::int64_t O, chunk;
  void set(Uniforms& u) const {
    u.u32("u_P", g.N * g.OH * g.OW), u.u32("u_chunk", chunk), u.u32("u_O", O);
    u.i32("u_H", g.H), u.i32("u_W", g.W), u.i32("u_OH", g.OH), u.i32("u_OW", g.OW);
    u.i32("u_sh", g.o.stride[0]), u.i32("u_sw", g.o.stride[1]), u.i32("u_pt", g.o.padding[0]);
    u.i32("u_pl", g.o.padding[1]), u.i32("u_dh", g.o.dilation[0]), u.i32("u_dw", g.o.dilation[1]);
    const Shape &gs = gy.strides(), &xs = x.strides();
    u.u32s("u_gy_stride", {gs[0], gs[1], gs[2], gs[3]});
    u.u32("u_gy_off", gy.offset());
    u.u32s("u_x_stride", {xs[0], xs[1], xs[2], xs[3]});
    u.u32("u_x_off", x.offset());
  }
};

// The direct weight and bias gradients (plan_conv_wgrad): [O * C*KH*KW + O] f32, the weight
// gradient [O, C, KH, KW] then the bias gradient [O]: per chunk of positions, then their sum.
Tensor conv_wgrad(const Tensor& x, const Tensor& gy, const Geometry& g, std::int64_t O, const ConvWgradPlan& plan) {
  DeviceImpl& dev = dev_of(gy);
  const std::int64_t taps = g.C * g.KH * g.KW;
  Tensor parts = alloc(dev, {plan.chunks, O * (taps + 1)}, DType::f32, "conv2d");
  {
    Launch launch(dev, "conv2d");
    const ConvWgradVariant v{g.C, g.KH, g.KW, plan.opi, gy.dtype(), x.dtype()};
    launch.program(v.kFile, v.defines(), {static_cast<std::uint32_t>(kConvWgradLocal)}).write(parts).read(gy).read(x);
    launch.params(ConvWgradParams{g, gy, x, O, plan.chunk}).loop_iterations(plan.loop_iterations);
    launch.groups(static_cast<std::uint64_t>(plan.chunks), static_cast<std::uint64_t>(O / plan.opi), 1);
  }
  return plan.chunks == 1 ? parts.view({O * (taps + 1)}) : sum(parts, {0});
}

// The input slice and the geometry of the convolution whose output is the piece of g's output:
// the rows and columns of x its windows read, with the padding that remains above and left of
// them (below and right the kernels read zeros past the slice anyway).
std::pair<Tensor, Geometry> piece_input(const Tensor& x, const Geometry& g, const Piece& p) {
  if (p.nn == g.N && p.noh == g.OH && p.now == g.OW) return {x, g};
  Geometry gp = g;
  Tensor xp = x.narrow(0, p.n0, p.nn);
  gp.N = p.nn, gp.OH = p.noh, gp.OW = p.now;
  // One axis: output range [o0, o0 + no) reads input [o0 * s - pad, (o0 + no - 1) * s - pad + (k - 1) * d].
  auto axis = [&](int dim, std::int64_t size, std::int64_t o0, std::int64_t no, std::int64_t s, std::int64_t pad,
                  std::int64_t d, std::int64_t k, std::int64_t& new_size, std::int64_t& new_pad) {
    const std::int64_t first = o0 * s - pad, last = (o0 + no - 1) * s - pad + (k - 1) * d;
    const std::int64_t lo = std::clamp<std::int64_t>(first, 0, size), hi = std::clamp<std::int64_t>(last + 1, lo, size);
    xp = xp.narrow(dim, lo, hi - lo);
    new_size = hi - lo;
    new_pad = lo - first;
  };
  axis(2, g.H, p.oh0, p.noh, g.o.stride[0], g.o.padding[0], g.o.dilation[0], g.KH, gp.H, gp.o.padding[0]);
  axis(3, g.W, p.ow0, p.now, g.o.stride[1], g.o.padding[1], g.o.dilation[1], g.KW, gp.W, gp.o.padding[1]);
  return {xp, gp};
}

// The positions of a piece in a tensor [N, ..., OH, OW] (dims 0, 2, 3).
Tensor piece_of(const Tensor& t, const Piece& p) {
  return t.narrow(0, p.n0, p.nn).narrow(2, p.oh0, p.noh).narrow(3, p.ow0, p.now);
}

// col2im(a @ b) -> [N, C, H, W] f32 for a [N*OH*OW, k] and b [k, C*KH*KW] (g's geometry). Where
// the product would exceed the device's max SSBO block, per piece of the output positions (as in
// the forward): each piece's image region gets the sums over its own columns, added up where
// pieces of rows overlap (windows taller than the stride).
Tensor col2im_gemm(const Tensor& a, const Tensor& b, const Geometry& g) {
  DeviceImpl& dev = dev_of(a);
  const std::int64_t k = a.size(1);
  const std::vector<Piece> pieces = plan_col2im_pieces(g, dev.ssbo_limit());
  if (pieces.size() == 1) return col2im(matmul(a, b), g);
  const bool whole_images = pieces[0].noh == g.OH && pieces[0].now == g.OW;
  Tensor img =
      whole_images ? alloc(dev, {g.N, g.C, g.H, g.W}, DType::f32, "conv2d") : zeros(a.device(), {g.N, g.C, g.H, g.W});
  const Tensor a4 = a.reshape({g.N, g.OH, g.OW, k});
  for (const Piece& p : pieces) {
    const Tensor ap = a4.narrow(0, p.n0, p.nn).narrow(1, p.oh0, p.noh).narrow(2, p.ow0, p.now).reshape({-1, k});
    auto [region, gp] = piece_input(img, g, p);  // the pixels the piece's windows cover
    const Tensor part = col2im(matmul(ap, b), gp);
    region.copy_(whole_images ? part : add(region, part));
  }
  return img;
}

// Uniforms of glsl/nn/conv_direct.comp (ubo: the dispatch's first output channel o0, its first
// weight in the uniform block wbase, the epilogue's parameters).
struct DirectParams {
  const Geometry& g;
  std::int64_t O, Og;
  const Tensor &x, &w, &bias;
  std::int64_t o0 = 0, wbase = 0;
  const Epilogue* epi = nullptr;
  // flip_taps: w read as w[a, b, KH - 1 - kh, KW - 1 - kw] (the input gradient's flipped filters
  // without a copy): the last tap's offset and the tap strides negated as uint32, which the
  // kernels' uint index arithmetic (wrapping modulo 2^32 in GLSL) turns into steps backwards.
  bool flip_taps = false;
  void set(Uniforms& u) const {
    u.i32("u_cg", g.C), u.i32("u_o0", o0), u.u32("u_wbase", wbase);
    if (epi) u.f32("u_act_p0", epi->p0), u.f32("u_act_p1", epi->p1);
    if (epi && epi->affine()) u.f32("u_act_scale", epi->scale), u.f32("u_act_shift", epi->shift);
    u.i32("u_H", g.H), u.i32("u_W", g.W), u.i32("u_O", O), u.i32("u_Og", Og), u.i32("u_OH", g.OH);
    u.i32("u_OW", g.OW), u.i32("u_sh", g.o.stride[0]), u.i32("u_sw", g.o.stride[1]);
    u.i32("u_pt", g.o.padding[0]), u.i32("u_pl", g.o.padding[1]), u.i32("u_dh", g.o.dilation[0]);
    u.i32("u_dw", g.o.dilation[1]);
    const Shape &xs = x.strides(), &ws = w.strides();
    u.u32s("u_x_stride", {xs[0], xs[1], xs[2], xs[3]});
    u.u32("u_x_off", x.offset());
    if (flip_taps) {
      const std::array<std::uint32_t, 4> neg{static_cast<std::uint32_t>(ws[0]), static_cast<std::uint32_t>(ws[1]),
                                             0u - static_cast<std::uint32_t>(ws[2]),
                                             0u - static_cast<std::uint32_t>(ws[3])};
      u.u32s("u_w_stride", std::span<const std::uint32_t>(neg));
      u.u32("u_w_off", w.offset() + (g.KH - 1) * ws[2] + (g.KW - 1) * ws[3]);
    } else {
      u.u32s("u_w_stride", {ws[0], ws[1], ws[2], ws[3]});
      u.u32("u_w_off", w.offset());
    }
    if (bias.defined()) u.u32("u_b_stride", bias.strides()[0]), u.u32("u_b_off", bias.offset());
  }
};

// The ubo layout (f32): one dispatch per chunk of plan.chunk output channels, whose filters are
// bound as the uniform block (plan.wq vec4s, a size class of the chunk's filters: from the
// aligned byte at or before them, or earlier where the block would run past the weight's storage;
// the weight copied into a buffer of whole blocks where no block of its storage holds a chunk),
// the epilogue's activation in the kernel.
// shuffle S > 0: the channels (o, si, sj) stored as o's S x S blocks of pixels, out [N, O / S^2,
// OH * S, OW * S] (conv_transpose2d whose kernel is its stride).
// residual (defined: conv2d_add's, checked there): added after the epilogue in the stores.
Tensor conv_direct_ubo(const Tensor& x, const Tensor& weight, const Tensor& bias, const Geometry& g, std::int64_t O,
                       std::int64_t Og, const ConvDirectPlan& plan, const Epilogue& epi, std::int64_t shuffle = 0,
                       const Tensor& residual = Tensor()) {
  DeviceImpl& dev = dev_of(x);
  Tensor out = shuffle > 0 ? alloc(dev, {g.N, O / (shuffle * shuffle), g.OH * shuffle, g.OW * shuffle}, DType::f32,
                                   "conv_transpose2d")
                           : alloc(dev, {g.N, O, g.OH, g.OW}, DType::f32, "conv2d");
  if (out.numel() == 0) return out;
  const std::int64_t taps = g.C * g.KH * g.KW;
  const auto align = static_cast<std::int64_t>(std::max(dev.caps().uniform_offset_alignment, 4));
  // The block (`block` bytes) of the chunk whose filters start at byte `start` of t's storage: from
  // the aligned byte at or before them, moved back (aligned) where it would run past the storage;
  // -1 where no block holds them.
  auto block_start = [&](const Tensor& t, std::int64_t block, std::int64_t start, std::int64_t used) -> std::int64_t {
    const auto cap = static_cast<std::int64_t>(t.impl()->storage->block.capacity);
    if (cap < block) return -1;
    const std::int64_t a = std::min(start, cap - block) / align * align;
    return start - a + used <= block ? a : -1;
  };
  auto fits = [&](const Tensor& t, std::int64_t block) {
    if (!t.is_contiguous() || t.dtype() != DType::f32) return false;
    for (std::int64_t o0 = 0; o0 < O; o0 += plan.chunk)
      if (block_start(t, block, (t.offset() + o0 * taps) * 4, std::min(plan.chunk, O - o0) * taps * 4) < 0)
        return false;
    return true;
  };
  // The block's size (WQ, compile-time): the device's whole block where the weight's storage holds
  // one (large filters; the model runtime's Conv filters, uploaded so: conv_ubo_weight_floats), so
  // that layers of any width share the program; else plan.wq, a size class of the chunk's filters.
  ConvDirectPlan kplan = plan;
  if (const std::int64_t whole = ubo_limit(dev) / 16; fits(weight, whole * 16)) kplan.wq = whole;
  const std::int64_t block = kplan.wq * 16;
  // Else each chunk's filters copied to an aligned slot of a fresh buffer (slots of whole blocks:
  // any offset alignment, e.g. 256 bytes on NVIDIA where the layout is forced).
  Tensor w = weight;
  std::int64_t slot = 0;  // floats between two chunks' filters in the copy (0: w is the weight)
  if (!fits(w, block)) {
    slot = (block + align - 1) / align * align / 4;
    w = zeros(x.device(), {(O + plan.chunk - 1) / plan.chunk * slot});
    for (std::int64_t o0 = 0, i = 0; o0 < O; o0 += plan.chunk, ++i) {
      const std::int64_t n = std::min(plan.chunk, O - o0);
      w.narrow(0, i * slot, n * taps).view({n, g.C, g.KH, g.KW}).copy_(weight.narrow(0, o0, n));
    }
  }
  ConvDirectVariant v;
  v.plan = kplan, v.kh = g.KH, v.kw = g.KW, v.sw = g.o.stride[1], v.dw = g.o.dilation[1], v.bias = bias.defined();
  v.act = epi.act, v.affine = epi.affine(), v.x = x.dtype(), v.b = bias.defined() ? bias.dtype() : DType::f32;
  v.x_quads = x.is_contiguous() && g.W % 4 == 0 && x.offset() % 4 == 0;
  v.shift = ((-g.o.padding[1]) % 4 + 4) % 4;
  v.shuffle = shuffle;
  v.residual = residual.defined();
  for (std::int64_t o0 = 0, i = 0; o0 < O; o0 += plan.chunk, ++i) {
    Launch launch(dev, "conv2d");
    const std::int64_t start = slot > 0 ? i * slot * 4 : (w.offset() + o0 * taps) * 4;
    const std::int64_t a = slot > 0 ? start : block_start(w, block, start, std::min(plan.chunk, O - o0) * taps * 4);
    launch.program(v.kFile, v.defines(), {plan.local_x}).write(out).read(x).read(w);
    if (bias.defined()) launch.read(bias);
    if (v.residual) launch.read(residual);
    launch.uniform_block(0, w, static_cast<GLintptr>(a), static_cast<GLsizeiptr>(block));
    DirectParams params{g, O, Og, x, weight, bias, o0, (start - a) / 4, &epi};  // (w's strides unused)
    launch.params(params)
        .loop_iterations(plan.loop_iterations)
        .groups(plan.groups_x, static_cast<std::uint64_t>(std::min(plan.chunk, O - o0) / plan.opi),
                static_cast<std::uint64_t>(g.N));
  }
  return out;
}

// Direct convolution for small filters (glsl/nn/conv_direct.comp): out [N, O, OH, OW] of x's
// dtype where it is a float (f32 accumulation, one rounding at the store), else f32. The
// epilogue runs in the kernel where the output is f32, else after it (after the rounding, as
// the ops would).
// shuffle S > 0 (lanes): conv_direct_ubo's, out [N, O / S^2, OH * S, OW * S].
// residual (defined: conv2d_add's, checked there; x f32): added after the epilogue in the stores.
Tensor conv_direct(const Tensor& x, const Tensor& w, const Tensor& bias, const Geometry& g, std::int64_t O,
                   std::int64_t Og, const ConvDirectPlan& plan, const Epilogue& epi, std::int64_t shuffle = 0,
                   bool flip_taps = false, const Tensor& residual = Tensor()) {
  DeviceImpl& dev = dev_of(x);
  Launch launch(dev, "conv2d");
  const DType odt = is_floating(x.dtype()) ? x.dtype() : DType::f32;
  Tensor out = shuffle > 0
                   ? alloc(dev, {g.N, O / (shuffle * shuffle), g.OH * shuffle, g.OW * shuffle}, odt, "conv_transpose2d")
                   : alloc(dev, {g.N, O, g.OH, g.OW}, odt, "conv2d");
  if (out.numel() == 0) return out;
  const bool fused = odt == DType::f32;
  ConvDirectVariant v;
  v.plan = plan, v.cg = g.C, v.kh = g.KH, v.kw = g.KW, v.dw = g.o.dilation[1], v.bias = bias.defined();
  v.sw = g.o.stride[1], v.sh = g.o.stride[0], v.dh = g.o.dilation[0];
  if (fused) v.act = epi.act, v.affine = epi.affine();
  if (plan.dwq) {
    // The quads form: x's rows as aligned quads where they are whole quads, the output's 4
    // columns one store where its rows are (a fresh f32 tensor: offset 0).
    // (Float images only: quads of 8-bit values have no quad reader.)
    v.x_quads =
        is_floating(x.dtype()) && plan.x_rows_contiguous && x.is_contiguous() && g.W % 4 == 0 && x.offset() % 4 == 0;
    v.shift = ((-g.o.padding[1]) % 4 + 4) % 4;
    v.y_quads = odt == DType::f32 && g.OW % 4 == 0 && out.offset() % 4 == 0;
  }
  v.shuffle = shuffle;
  v.residual = fused && residual.defined();
  v.out = odt, v.x = x.dtype(), v.w = w.dtype(), v.b = bias.defined() ? bias.dtype() : DType::f32;
  launch.program(v.kFile, v.defines(), {plan.local_x}).write(out).read(x).read(w);
  if (bias.defined()) launch.read(bias);
  if (v.residual) launch.read(residual);
  DirectParams params{g, O, Og, x, w, bias};
  params.epi = fused ? &epi : nullptr;
  params.flip_taps = flip_taps;
  launch.params(params)
      .loop_iterations(plan.loop_iterations)
      .groups(plan.groups_x, plan.dwq ? 1u : static_cast<std::uint64_t>(O / plan.opi), static_cast<std::uint64_t>(g.N));
  return fused ? out : apply_epilogue(out, epi);
}

// im2col + GEMM: x [N, G*C, H, W] -> [N, O, OH, OW] f32 (fused: the matmul's epilogue).
// `saved_cols` (optional) receives each group's columns [C*KH*KW, N*OH*OW] for the weight
// gradient. residual (optional; conv2d_add's, checked there: f32 [N, O, OH, OW] contiguous from
// element 0): added in the REG kernel's stores where the split columns' product runs there, and
// then *res_used is set; else the caller adds it.
Tensor conv_gemm(const Tensor& x, const Tensor& w, const Tensor& bias, const Geometry& g, std::int64_t G,
                 const Epilogue& fused, std::vector<Tensor>* saved_cols, const Tensor& residual = Tensor(),
                 bool* res_used = nullptr) {
  const std::int64_t O = w.size(0), Og = O / G, K = g.C * g.KH * g.KW;
  if (G == 1) {
    // [O, K] @ colsT [K, N*OH*OW] (+ bias per row): M = output channels, N = positions,
    // both operands contiguous along K / N. Where the quad-load matmul kernel applies it
    // writes NCHW directly (column groups of OH*OW as the outer dim); otherwise the result
    // [O, N, OH, OW] is copied to NCHW.
    // A 1x1, stride-1, unpadded convolution of one image is the matmul itself: the image
    // [C, H*W] is already the columns matrix.
    const ConvGemmForm form =
        plan_conv_gemm(g, G, x.dtype() == DType::f32 && x.is_contiguous(), autograd::any_requires_grad({&x, &w, &bias}),
                       settings().conv_pointwise_batched);
    Tensor wm = w.reshape({O, K});
    // One output position per image (squeeze-and-excitation's 1x1 convolutions of pooled [N, C, 1,
    // 1] images): the transposed product x [N, C] @ w^T [C, O] + bias^T [1, O], whose [N, O] result
    // is the output's memory, so that the matmul's planner sees N rows and a K-major B (the GEMV
    // kernel on GPUs for N <= kGemvRows) instead of N products of O rows by one column (the REG
    // kernel, a workgroup per image: PP-OCRv4 rec's [16, 480] -> 120 took 0.226 ms on the H100, 0.020 so).
    if ((form == ConvGemmForm::pointwise || form == ConvGemmForm::pointwise_batched) && g.OH * g.OW == 1)
      return matmul_fused(x.view({g.N, g.C}), wm.t(), bias.defined() ? bias.view({1, O}) : Tensor(), 1.0, 1.0, fused)
          .view({g.N, O, 1, 1});
    Tensor b = bias.defined() ? bias.view({O, 1}) : Tensor();
    // Several images, 1x1: [O, C] @ each image's [C, H*W] -> [N, O, H*W] (the weights broadcast).
    if (form == ConvGemmForm::pointwise_batched)
      return matmul_fused(wm, x.view({g.N, g.C, g.H * g.W}), b, 1.0, 1.0, fused).view({g.N, O, g.OH, g.OW});
    Tensor cols = form == ConvGemmForm::pointwise ? x.view({g.C, g.H * g.W}) : im2col(x, g);
    // The residual at C's index: the split columns' [N, O, OH * OW] is its layout (NCHW), and so is
    // one image's plain product [O, OH * OW] (the GPUs' K-sliced REG plans have no split-columns form).
    Tensor r = residual.defined() ? matmul_split_columns(wm, cols, b, g.OH * g.OW, fused, residual) : Tensor();
    if (!r.defined() && residual.defined() && g.N == 1) r = matmul_residual(wm, cols, b, fused, residual);
    if (r.defined() && res_used) *res_used = true;
    if (!r.defined()) r = matmul_split_columns(wm, cols, b, g.OH * g.OW, fused);
    if (r.defined())
      r = r.view({g.N, O, g.OH, g.OW});
    else
      r = matmul_fused(wm, cols, b, 1.0, 1.0, fused).view({O, g.N, g.OH, g.OW}).permute({1, 0, 2, 3});
    if (saved_cols) saved_cols->push_back(cols);
    return r.contiguous();
  }
  // Groups: one im2col over all channels (rows of group gi are contiguous), then one batched
  // matmul [G, Og, K] @ [G, K, N*OH*OW].
  Geometry ga = g;
  ga.C = g.C * G;
  Tensor cols = im2col(x, ga).view({G, K, g.N * g.OH * g.OW});
  Tensor r =
      matmul_fused(w.reshape({G, Og, K}), cols, bias.defined() ? bias.view({G, Og, 1}) : Tensor(), 1.0, 1.0, fused);
  if (saved_cols)
    for (std::int64_t gi = 0; gi < G; ++gi) saved_cols->push_back(cols.select(0, gi));
  return r.view({O, g.N, g.OH, g.OW}).permute({1, 0, 2, 3}).contiguous();
}

// Uniforms of glsl/nn/conv_winograd.comp: the geometry, the tiles, `src`'s strides (x or w), the
// bias and the epilogue (WG_OUTPUT).
struct WinogradParams {
  const Geometry& g;
  std::int64_t O, m;
  const Tensor* src = nullptr;
  const Tensor* bias = nullptr;
  const Epilogue* epi = nullptr;
  const WinogradQuant* q = nullptr;
  const Tensor* filters = nullptr;  // the fused stage's U
  void set(Uniforms& u) const {
    if (filters) u.u32("u_u_off", filters->offset());
    if (q) {
      u.f32("u_xs", q->x_scale), u.i32("u_xz", q->x_zero), u.f32("u_ys", q->y_scale);
      u.f32("u_xs_inv", 1.0f / q->x_scale), u.f32("u_ys_inv", 1.0f / q->y_scale);
      u.f32("u_zy", static_cast<float>(q->y_zero)), u.f32("u_lo", q->lo), u.f32("u_hi", q->hi);
    }
    const std::int64_t TH = (g.OH + m - 1) / m, TW = (g.OW + m - 1) / m;
    u.u32("u_C", g.C), u.u32("u_O", O), u.u32("u_P", g.N * TH * TW);
    u.i32("u_H", g.H), u.i32("u_W", g.W), u.i32("u_TH", TH), u.i32("u_TW", TW), u.i32("u_OH", g.OH);
    u.i32("u_OW", g.OW), u.i32("u_pt", g.o.padding[0]), u.i32("u_pl", g.o.padding[1]);
    if (src) {
      const Shape& st = src->strides();
      u.u32s("u_x_stride", {st[0], st[1], st[2], st[3]});
      u.u32("u_x_off", src->offset());
    }
    if (bias && bias->defined()) u.u32("u_b_stride", bias->strides()[0]), u.u32("u_b_off", bias->offset());
    if (epi) u.f32("u_act_p0", epi->p0), u.f32("u_act_p1", epi->p1);
    if (epi && epi->affine()) u.f32("u_act_scale", epi->scale), u.f32("u_act_shift", epi->shift);
  }
};

// The longest loop count of an invocation of conv_winograd.comp's stages (every loop counted;
// ALPHA^3 per transform's matrix product, twice, and the loads and stores).
std::uint64_t winograd_loops(std::int64_t m) {
  const auto a = static_cast<std::uint64_t>(m + 2);
  return 3 * (a * a * a + a * a + a);
}

// Winograd's filter transform U [T, O, C] of w [O, C, 3, 3] (f32).
Tensor winograd_u(const Tensor& w, std::int64_t m) {
  DeviceImpl& dev = dev_of(w);
  const std::int64_t O = w.size(0), C = w.size(1);
  Geometry g{1, C, 3, 3, 3, 3, 1, 1, Conv2dOptions()};
  Tensor u = alloc(dev, {(m + 2) * (m + 2), O, C}, DType::f32, "conv2d");
  if (u.numel() == 0) return u;
  using V = ConvWinogradVariant;
  Launch launch(dev, "conv2d");
  const V v{V::Stage::weight, m};
  launch.program(V::kFile, v.defines(), {V::kLocal}).write(u).read(w);
  launch.params(WinogradParams{g, O, m, &w}).loop_iterations(winograd_loops(m));
  launch.invocations(static_cast<std::uint64_t>(O * C));
  return u;
}

// Winograd F(m x m, 3 x 3) (plan_conv_winograd) with the filters' transform u [T, O, C]: x [N, C,
// H, W] (f32) -> [N, O, OH, OW] f32, the epilogue in the output transform.
// q: the QDQ pattern (conv2d_winograd_quant): x 8-bit or quantized as read, y quantized.
Tensor conv_winograd(const Tensor& x, const Tensor& u, const Tensor& bias, const Geometry& g, std::int64_t O,
                     std::int64_t m, const Epilogue& epi, const WinogradQuant* q = nullptr) {
  DeviceImpl& dev = dev_of(x);
  const std::int64_t T = (m + 2) * (m + 2), TH = (g.OH + m - 1) / m, TW = (g.OW + m - 1) / m, P = g.N * TH * TW;
  using V = ConvWinogradVariant;
  // (the stages' op names apart: the profiler's op rows time them apart)
  const auto groups = [&](const V& v, const Tensor& out, const Tensor& in, const WinogradParams& params,
                          std::int64_t channels) {
    Launch launch(dev, v.stage == V::Stage::input ? "conv2d winograd input" : "conv2d winograd output");
    launch.program(V::kFile, v.defines(), {V::kLocal}).write(out).read(in);
    if (v.bias) launch.read(bias);
    launch.params(params).loop_iterations(winograd_loops(m));
    launch.groups(static_cast<std::uint64_t>((P + V::kLocal - 1) / V::kLocal), static_cast<std::uint64_t>(channels), 1);
  };
  V in{V::Stage::input, m};
  WinogradParams in_params{g, O, m, &x};
  if (q) in.x = x.dtype(), in.xqin = q->quantize_x, in.x8 = q->x8, in_params.q = q;
  const Shape& xs = x.strides();
  in.x_quads =
      m == 4 && g.W % 4 == 0 && xs[3] == 1 && xs[2] % 4 == 0 && xs[1] % 4 == 0 && xs[0] % 4 == 0 && x.offset() % 4 == 0;
  in.x_shift = in.x_quads ? static_cast<int>(((-g.o.padding[1]) % 4 + 4) % 4) : 0;
  V out{V::Stage::output, m, epi.act, epi.affine(), bias.defined()};
  if (q) out.act = Activation::none, out.affine = false, out.yq = true, out.ydq = q->dequantize, out.y8 = q->y8;
  out.y_vec4 = m == 4 && g.OW % 4 == 0;
  const DType yt = q && !q->dequantize ? q->y8 : DType::f32;
  Tensor y = alloc(dev, {g.N, O, g.OH, g.OW}, yt, "conv2d");
  WinogradParams params{g, O, m};
  params.bias = &bias, params.epi = q ? nullptr : &epi, params.q = q;
  const WinogradFusedBlock fb =
      plan_winograd_fused(m, g.C, O, P, q != nullptr, conv_device(dev), dev.caps().max_shared_memory, settings());
  if (fb.o > 0) {
    // One dispatch: the output stage's variant with the input stage's x (WG_FUSED).
    V fused = out;
    fused.stage = V::Stage::fused, fused.fb = fb;
    fused.x = in.x, fused.xqin = in.xqin, fused.x8 = in.x8, fused.x_quads = in.x_quads, fused.x_shift = in.x_shift;
    const Tensor uc = u.is_contiguous() ? u : u.contiguous();
    WinogradParams fused_params = params;
    fused_params.src = &x, fused_params.filters = &uc;
    Launch launch(dev, "conv2d winograd fused");
    launch.program(V::kFile, fused.defines(), {fused.local()}).write(y).read(x).read(uc);
    if (fused.bias) launch.read(bias);
    const std::int64_t gx = (P + fb.p - 1) / fb.p, gy = (O + fb.o - 1) / fb.o;
    Tensor ws;  // split: each part's sums (then the arrival counters: written, the Queue orders them)
    if (fb.split > 1) {
      static_assert(kWinogradFusedMaxSlots <= WorkgroupCounters::kWords);
      ws = alloc(dev, {gx * gy * fb.split * T * fb.o * fb.p}, DType::f32, "conv2d");
      launch.write(ws).bind(dev.extension<WorkgroupCounters>().storage(dev), true);
    }
    launch.params(fused_params).loop_iterations(fb.loops(m, g.C));
    launch.groups(static_cast<std::uint64_t>(gx), static_cast<std::uint64_t>(gy), static_cast<std::uint64_t>(fb.split));
    return y;
  }
  Tensor vt = alloc(dev, {T, g.C, P}, DType::f32, "conv2d");
  groups(in, vt, x, in_params, g.C);
  const Tensor prod = matmul(u, vt).contiguous();  // [T, O, P]
  groups(out, y, prod, params, O);
  return y;
}

// conv2d's problem for its planner (geometry g, O output channels).
Conv2dProblem conv_problem(const Tensor& x, const Tensor& w, const Tensor& bias, const Geometry& g, std::int64_t O,
                           bool grad) {
  Conv2dProblem problem;
  problem.g = g, problem.O = O, problem.grad = grad, problem.need_w = requires_grad(w);
  problem.x_f32_contiguous = x.dtype() == DType::f32 && x.is_contiguous();
  problem.x_rows_contiguous = x.strides()[3] == 1 && x.strides()[2] == g.W;
  problem.f32 = x.dtype() == DType::f32 && w.dtype() == DType::f32 && (!bias.defined() || bias.dtype() == DType::f32);
  return problem;
}

// The output size of a stride-1, undilated 3x3 convolution of x [N, C, H, W] padded by o.padding.
Geometry winograd_geometry(const Tensor& x, const Conv2dOptions& o) {
  Geometry g{x.size(0), x.size(1), x.size(2), x.size(3), 3, 3, 0, 0, o};
  g.OH = g.H + o.padding[0] + o.padding[2] - 2;
  g.OW = g.W + o.padding[1] + o.padding[3] - 2;
  return g;
}

void check_options(const char* op, const Conv2dOptions& o) {
  for (auto s : o.stride)
    if (s <= 0) throw ValueError(std::string("gltensor::") + op + ": stride must be positive");
  for (auto d : o.dilation)
    if (d <= 0) throw ValueError(std::string("gltensor::") + op + ": dilation must be positive");
  for (auto p : o.padding)
    if (p < 0) throw ValueError(std::string("gltensor::") + op + ": padding must be >= 0");
  if (o.groups <= 0) throw ValueError(std::string("gltensor::") + op + ": groups must be positive");
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dOptions& o) {
  return conv2d(x, w, bias, o, Epilogue());
}

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dOptions& o, const Epilogue& epi) {
  return detail::conv2d_add(x, w, bias, o, epi, Tensor());
}

Tensor detail::conv2d_add(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dOptions& o,
                          const Epilogue& epi, const Tensor& residual) {
  if (detail::autocast_changes_low({&x, &w, &bias}))
    return conv2d_add(detail::autocast_low(x), detail::autocast_low(w), detail::autocast_low(bias), o, epi, residual);
  const char* op = "conv2d";
  check_same_device(op, {&x, &w});
  if (residual.defined()) check_same_device(op, {&x, &residual});
  check_options(op, o);
  if (x.dim() != 4 || w.dim() != 4)
    throw ShapeError("gltensor::conv2d: expects x [N, C, H, W] and weight [O, C/groups, KH, KW], got " +
                     to_string(x.shape()) + " and " + to_string(w.shape()));
  const std::int64_t G = o.groups, C = x.size(1), O = w.size(0);
  if (C % G != 0 || O % G != 0 || w.size(1) != C / G)
    throw ShapeError("gltensor::conv2d: input " + to_string(x.shape()) + " and weight " + to_string(w.shape()) +
                     " do not match with groups = " + std::to_string(G));
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != O))
    throw ShapeError("gltensor::conv2d: bias " + to_string(bias.shape()) + " must be [" + std::to_string(O) + "]");
  Geometry g{x.size(0), C / G, x.size(2), x.size(3), w.size(2), w.size(3), 0, 0, o};
  const std::int64_t eh = o.dilation[0] * (g.KH - 1) + 1, ew = o.dilation[1] * (g.KW - 1) + 1;
  const std::int64_t ph = g.H + o.padding[0] + o.padding[2], pw = g.W + o.padding[1] + o.padding[3];
  if (eh > ph || ew > pw)
    throw ShapeError("gltensor::conv2d: kernel " + to_string({g.KH, g.KW}) + " (dilated " + to_string({eh, ew}) +
                     ") is larger than the padded input " + to_string({ph, pw}));
  g.OH = (ph - eh) / o.stride[0] + 1;
  g.OW = (pw - ew) / o.stride[1] + 1;
  const std::int64_t Og = O / G, K = g.C * g.KH * g.KW;
  check_epilogue(op, epi);
  const bool grad = autograd::any_requires_grad({&x, &w, &bias});
  // The epilogue runs in the matmul kernel where no gradient is recorded, else after it.
  const Epilogue fused = grad ? Epilogue() : epi, after = grad ? epi : Epilogue();
  const DeviceImpl& dev = dev_of(x);
  const Conv2dProblem problem = conv_problem(x, w, bias, g, O, grad);
  const Conv2dPlan plan = plan_conv2d(problem, conv_device(dev), settings());
  // The residual in the direct kernel's stores (f32 output, no gradient: `fused` is the whole
  // epilogue), else added after.
  const bool res_fits = residual.defined() && !grad && x.numel() > 0 && x.dtype() == DType::f32 &&
                        residual.dtype() == DType::f32 && residual.is_contiguous() && residual.offset() == 0 &&
                        residual.shape() == Shape{g.N, O, g.OH, g.OW};
  // (Not the GPUs' 1x1 GEMM path of K > 32 switched to the direct kernel for the residual's sake:
  // PP-OCR cls's projections of 40 to 200 channels so ran 0.65-0.71 ms replayed on the H200
  // against 0.55 with the GEMM and an add after; bench/RESULTS.md, cls35. The GEMM path adds it in
  // the REG matmul kernel's stores instead, where its plan is REG: res_gemm.)
  const bool res_in = res_fits && plan.path == Conv2dPlan::Path::direct;
  const Tensor res_kernel = res_in ? residual : Tensor();
  bool res_gemm = false;
  Tensor y;
  std::vector<Tensor> saved_cols;
  if (plan.path == Conv2dPlan::Path::direct && x.numel() == 0) {
    // No input (H, W or C 0, the padding making the output non-empty): every output is the bias
    // (or 0) through the epilogue. The direct kernel would clamp into an empty x (clamp(h, 0, -1):
    // undefined in GLSL) and load from it.
    // (f32 sums rounded once to x's dtype, as the kernel's.)
    NoGradGuard ng;
    const Tensor b = bias.defined() ? bias.to(DType::f32).view({1, O, 1, 1}) : zeros(x.device(), {1, O, 1, 1});
    y = apply_epilogue(b, fused).expand({g.N, O, g.OH, g.OW}).contiguous().to(x.dtype());
  } else if (plan.path == Conv2dPlan::Path::direct && plan.direct.layout == ConvDirectPlan::Layout::ubo) {
    NoGradGuard ng;
    y = conv_direct_ubo(x, w, bias, g, O, Og, plan.direct, fused, 0, res_kernel);
  } else if (plan.path == Conv2dPlan::Path::winograd) {
    NoGradGuard ng;
    y = conv_winograd(x, winograd_u(w, plan.winograd_m), bias, g, O, plan.winograd_m, fused);
  } else if (plan.path == Conv2dPlan::Path::direct) {
    NoGradGuard ng;
    Tensor out = conv_direct(x, w, bias, g, O, Og, plan.direct, fused, 0, false, res_kernel);
    y = out.dtype() == x.dtype() ? out : out.to(x.dtype());
  } else {
    NoGradGuard ng;
    Tensor out;
    if (plan.path == Conv2dPlan::Path::depthwise) {
      // Depthwise (one input and one output channel per group): a sum over the KH x KW taps of
      // shifted strided views of the padded input times the tap's per-channel weight, one
      // multiply-add each (a batched matmul with one-row tiles or a reduction over K is far
      // slower on every device tried).
      Tensor xp = pad(x, {o.padding[1], o.padding[3], o.padding[0], o.padding[2]});
      Tensor acc = bias.defined() ? bias.view({1, O, 1, 1}) : zeros(x.device(), {1, O, 1, 1});
      for (std::int64_t kh = 0; kh < g.KH; ++kh)
        for (std::int64_t kw = 0; kw < g.KW; ++kw) {
          const std::int64_t h0 = kh * o.dilation[0], w0 = kw * o.dilation[1];
          Tensor xs = xp.slice(2, h0, h0 + (g.OH - 1) * o.stride[0] + 1, o.stride[0])
                          .slice(3, w0, w0 + (g.OW - 1) * o.stride[1] + 1, o.stride[1]);
          acc = addcmul(acc, xs, w.select(3, kw).select(2, kh).view({1, O, 1, 1}));
        }
      out = apply_epilogue(acc, fused);
      if (out.dtype() != DType::f32) out = out.to(DType::f32);
    } else if (plan.path == Conv2dPlan::Path::gemm) {
      out = conv_gemm(x, w, bias, g, G, fused, &saved_cols, res_fits ? residual : Tensor(), &res_gemm);
    } else {
      // Columns past the device's max SSBO block: im2col + GEMM per piece of the output
      // positions (whole images, else rows, else parts of rows), each written into its slice.
      out = alloc(dev_of(x), {g.N, O, g.OH, g.OW}, x.dtype(), op);
      for (const Piece& p : plan.pieces) {
        const auto [xp, gp] = piece_input(x, g, p);
        piece_of(out, p).copy_(conv_gemm(xp, w, bias, gp, G, fused, nullptr));
      }
    }
    y = out.dtype() == x.dtype() ? out : out.to(x.dtype());
  }
  if (autograd::any_requires_grad({&x, &w, &bias})) {
    const Tensor wd = detach(w);
    // The direct and the pieces' paths save no columns: the backward makes them again from x.
    const bool direct_w = plan.weight_grad == Conv2dPlan::WeightGrad::direct;
    if (direct_w) saved_cols.clear();  // the direct weight gradient reads x in place
    const Tensor xd = saved_cols.empty() ? detach(x) : Tensor();
    // Only the gradients some input needs: the first layer's image needs none (its input
    // gradient, a GEMM and a col2im, would be thrown away), nor does a frozen weight.
    const bool need_x = requires_grad(x), need_w = requires_grad(w), need_b = bias.defined() && requires_grad(bias);
    if (!need_w) saved_cols.clear();  // the columns are kept only for the weight's gradient
    autograd::record(
        y, {x, w, bias},
        [g, G, Og, K, wd, xd, saved_cols, need_x, need_w, need_b, wpieces = plan.weight_pieces,
         wgrad = direct_w ? plan.wgrad : ConvWgradPlan()](const Tensor& gy) {
          // Small filters: the weight and bias gradients from gy and x in place, no columns.
          Tensor direct;  // [O * K + O]: the weight gradient, then the bias gradient
          if (wgrad.direct && (need_w || need_b)) direct = conv_wgrad(xd, gy, g, G * Og, wgrad);
          const Tensor gw_direct =
              direct.defined() ? direct.narrow(0, 0, Og * K).view({Og, g.C, g.KH, g.KW}) : Tensor();
          const Tensor gb_direct = direct.defined() && need_b ? direct.narrow(0, Og * K, Og) : Tensor();
          if (direct.defined() && !need_x)
            return std::vector<Tensor>{Tensor(), need_w ? gw_direct : Tensor(), gb_direct};
          const DeviceImpl& dev = dev_of(gy);
          const ConvInputGradPlan input_grad =
              need_x
                  ? plan_conv_input_grad(g, G * Og, gy.dtype() == DType::f32 && wd.dtype() == DType::f32,
                                         gy.strides()[3] == 1 && gy.strides()[2] == g.OW, conv_device(dev), settings())
                  : ConvInputGradPlan();
          // The direct input gradient (one group) first, then gy's rows and the bias gradient: the
          // kernels that read only gy are issued together, before the weight gradient's GEMM, and share
          // barrier intervals (the queue's barriers follow the issue order): the CNN's conv2 backward
          // on the H100 ran [rows] [GEMM] [split-K sum, input gradient, bias pass 1] [bias pass 2, ...],
          // now [input gradient, rows, bias pass 1] [bias pass 2, GEMM] [split-K sum, ...].
          const bool direct_x = need_x && G == 1 && input_grad.direct;
          // The convolution of gy with the filters transposed to [C, O, KH, KW] (a view) and flipped
          // (read backwards through negated strides; never the ubo layout).
          const Tensor gx_direct = direct_x ? conv_direct(gy, wd.transpose(0, 1), Tensor(), input_grad.g, g.C, g.C,
                                                          input_grad.kernel, Epilogue(), 0, true)
                                            : Tensor();
          // gy as [N*OH*OW, O] (gy_rows: a tiled transpose): for the GEMMs, where they run.
          const bool gemm_x = need_x && !direct_x;
          const Tensor gm = (!direct.defined() && need_w) || gemm_x ? gy_rows(gy) : Tensor();
          const Tensor gb = direct.defined() ? gb_direct : need_b ? bias_grad(gy) : Tensor();
          Tensor gx = !need_x || G == 1 ? Tensor() : Tensor::empty(gy.device(), {g.N, G * g.C, g.H, g.W});
          std::vector<Tensor> gws;
          if (direct.defined()) gws.push_back(gw_direct);
          for (std::int64_t gi = 0; gi < G; ++gi) {
            const Tensor gmg = G == 1 || !gm.defined() ? gm : gm.narrow(1, gi * Og, Og);
            if (direct.defined()) {
              // the direct kernel's (one group)
            } else if (need_w && !saved_cols.empty()) {
              gws.push_back(weight_grad_product(gmg, saved_cols[gi]).view({Og, g.C, g.KH, g.KW}));
            } else if (need_w) {
              // gm^T [Og, positions] @ cols^T [positions, K], summed over pieces of the positions
              // whose columns fit the device's max SSBO block.
              const Tensor xg = G == 1 ? xd : xd.narrow(1, gi * g.C, g.C);
              Tensor gw;
              if (wpieces.size() == 1) {
                gw = weight_grad_product(gmg, im2col(xg, g));
              } else {
                const Tensor gm4 = gmg.reshape({g.N, g.OH, g.OW, Og}).permute({0, 3, 1, 2});  // [N, Og, OH, OW]
                for (const Piece& p : wpieces) {
                  const auto [xp, gp] = piece_input(xg, g, p);
                  const Tensor gmp = piece_of(gm4, p).permute({0, 2, 3, 1}).reshape({-1, Og});
                  const Tensor part = weight_grad_product(gmp, im2col(xp, gp));
                  gw = gw.defined() ? add(gw, part) : part;
                }
              }
              gws.push_back(gw.view({Og, g.C, g.KH, g.KW}));
            }
            if (need_x) {
              Tensor gxi;
              if (direct_x) {
                gxi = gx_direct;
              } else {
                Tensor wm = (G == 1 ? wd : wd.narrow(0, gi * Og, Og)).reshape({Og, K});
                gxi = col2im_gemm(gmg, wm, g);
              }
              if (G == 1)
                gx = gxi;
              else
                gx.narrow(1, gi * g.C, g.C).copy_(gxi);
            }
          }
          Tensor gw = !need_w ? Tensor() : G == 1 ? gws[0] : concat(gws, 0);
          return std::vector<Tensor>{gx, gw, gb};
        },
        "conv2d");
  }
  if (!after.none()) y = apply_epilogue(y, after);
  return residual.defined() && !res_in && !res_gemm ? add(y, residual) : y;
}

namespace detail {

std::int64_t conv2d_winograd_m(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dOptions& o) {
  if (!x.defined() || !w.defined() || x.dim() != 4 || w.dim() != 4 || o.groups != 1 || w.size(1) != x.size(1) ||
      w.size(2) != 3 || w.size(3) != 3 || (bias.defined() && (bias.dim() != 1 || bias.size(0) != w.size(0))) ||
      autocast_changes_low({&x, &w, &bias}))
    return 0;
  for (auto v : o.padding)
    if (v < 0) return 0;
  const Geometry g = winograd_geometry(x, o);
  if (g.OH <= 0 || g.OW <= 0) return 0;
  const bool grad = autograd::any_requires_grad({&x, &w, &bias});
  return plan_conv_winograd(conv_problem(x, w, bias, g, w.size(0), grad), conv_device(dev_of(x)), settings());
}

Tensor winograd_filters(const Tensor& w, std::int64_t m) {
  if (w.dim() != 4 || w.size(2) != 3 || w.size(3) != 3 || w.dtype() != DType::f32 || (m != 2 && m != 4))
    throw ValueError("gltensor::conv2d: Winograd F(" + std::to_string(m) + "x" + std::to_string(m) +
                     ",3x3) filters of a weight " + to_string(w.shape()) + " " + dtype_name(w.dtype()) +
                     " (expects f32 [O, C, 3, 3], m 2 or 4)");
  NoGradGuard ng;
  return winograd_u(w, m);
}

Tensor conv2d_winograd(const Tensor& x, const Tensor& u, const Tensor& bias, const Conv2dOptions& o,
                       const Epilogue& epi, std::int64_t m) {
  const Geometry g = x.dim() == 4 ? winograd_geometry(x, o) : Geometry{};
  if (x.dim() != 4 || u.dim() != 3 || u.size(0) != (m + 2) * (m + 2) || u.size(2) != x.size(1) || g.OH <= 0 ||
      g.OW <= 0 || (bias.defined() && (bias.dim() != 1 || bias.size(0) != u.size(1))))
    throw ValueError("gltensor::conv2d: Winograd F(" + std::to_string(m) + "x" + std::to_string(m) + ",3x3) filters " +
                     to_string(u.shape()) + " do not match x " + to_string(x.shape()) +
                     (bias.defined() ? " and bias " + to_string(bias.shape()) : std::string()));
  check_epilogue("conv2d", epi);
  NoGradGuard ng;
  return conv_winograd(x, u, bias, g, u.size(1), m, epi);
}

std::int64_t qconv_winograd_m(const Tensor& x, const Shape& w, const Conv2dOptions& o, bool dequantize) {
  if (x.dim() != 4 || w.size() != 4 || w[1] != x.size(1) || w[2] != 3 || w[3] != 3) return 0;
  for (auto v : o.padding)
    if (v < 0) return 0;
  const Geometry g = winograd_geometry(x, o);
  if (g.OH <= 0 || g.OW <= 0 || (!dequantize && g.OW % 4 != 0)) return 0;
  Conv2dProblem p;
  p.g = g, p.O = w[0], p.f32 = true, p.x_f32_contiguous = p.x_rows_contiguous = true;
  return plan_conv_winograd(p, conv_device(dev_of(x)), settings()) == 4 ? 4 : 0;
}

Tensor conv2d_winograd_quant(const Tensor& x, const Tensor& u, const Tensor& bias, const Conv2dOptions& o,
                             std::int64_t m, const WinogradQuant& q) {
  const Geometry g = x.dim() == 4 ? winograd_geometry(x, o) : Geometry{};
  if (m != 4 || x.dim() != 4 || u.dim() != 3 || u.size(0) != 36 || u.size(2) != x.size(1) || g.OH <= 0 ||
      (!q.dequantize && g.OW % 4 != 0) || (bias.defined() && (bias.dim() != 1 || bias.size(0) != u.size(1))) ||
      x.dtype() != q.x)
    throw ValueError("gltensor::conv2d: quantized Winograd F(" + std::to_string(m) + "x" + std::to_string(m) +
                     ",3x3) filters " + to_string(u.shape()) + " do not match x " + to_string(x.shape()) + " " +
                     dtype_name(x.dtype()));
  NoGradGuard ng;
  return conv_winograd(x, u, bias, g, u.size(1), m, Epilogue(), &q);
}

std::int64_t conv_ubo_weight_floats(DeviceImpl& dev, const Shape& w, std::int64_t groups) {
  if (w.size() != 4 || groups <= 0 || w[0] % groups != 0) return 0;
  const std::int64_t block = ubo_limit(dev);
  if (block > 65536 || numel_of(w) * 4 >= block) return 0;
  // conv2d's plan for one output position of an input just the filter's size: the direct
  // kernel's ubo layout does not depend on the geometry beyond the filters and the groups.
  Conv2dProblem p;
  p.g.N = 1, p.g.C = w[1], p.g.H = w[2], p.g.W = w[3], p.g.KH = w[2], p.g.KW = w[3], p.g.OH = 1, p.g.OW = 1;
  p.g.o.groups = groups;
  p.O = w[0];
  p.x_f32_contiguous = p.x_rows_contiguous = p.f32 = true;
  const Conv2dPlan plan = plan_conv2d(p, conv_device(dev), settings());
  const bool ubo = plan.path == Conv2dPlan::Path::direct && plan.direct.layout == ConvDirectPlan::Layout::ubo;
  return ubo ? block / 4 : 0;
}

Tensor conv_transpose2d_blocks(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dOptions& o,
                               std::array<std::int64_t, 2> op_pad, const Epilogue& epi) {
  const std::int64_t G = o.groups, Cin = x.size(1), Cg = Cin / G, Coutg = w.size(1), Cout = Coutg * G;
  const std::int64_t N = x.size(0), H = x.size(2), W = x.size(3), KH = w.size(2), KW = w.size(3);
  const DeviceImpl& dev = dev_of(x);
  const std::int64_t S = KH;
  const bool f32 =
      x.dtype() == DType::f32 && w.dtype() == DType::f32 && (!bias.defined() || bias.dtype() == DType::f32);
  const bool blocks = KW == S && o.stride[0] == S && o.stride[1] == S && o.dilation[0] == 1 && o.dilation[1] == 1 &&
                      o.padding == std::array<std::int64_t, 4>{0, 0, 0, 0} &&
                      op_pad == std::array<std::int64_t, 2>{0, 0};
  if (!blocks || !f32) return Tensor();
  // Kernel = stride, no padding: every input pixel makes its own S x S block of the output, a
  // 1x1 convolution (of the same groups) to Cout * S * S channels whose result is shuffled into
  // the blocks. The direct kernel's ubo layout (software rasterizers; one dispatch per chunk of
  // channels) or lanes layout (GPUs) does that in one dispatch, the epilogue in it.
  ConvDirectProblem dp;
  dp.C = Cg, dp.Og = Coutg * S * S, dp.KH = dp.KW = 1, dp.OH = H, dp.OW = W, dp.groups = G;
  dp.ubo_floats = ubo_limit(dev) / 4;
  dp.shuffle = true;
  const ConvDirectPlan direct =
      plan_conv_direct(dp, DeviceTraits{dev.adapter().software, dev.loop_limit()}, settings());
  if (direct.layout == ConvDirectPlan::Layout::rows ||
      (dev.loop_limit() != 0 && direct.loop_iterations > dev.loop_limit()))
    return Tensor();
  const std::int64_t O1 = Cout * S * S;
  // (the bias stays per output channel: the kernel reads channel o's at o / S^2)
  Conv2dOptions o1;
  o1.groups = G;
  Geometry g1{N, Cg, H, W, 1, 1, H, W, o1};
  // lanes (one group: the weight [Cin, O1] read through its strides)
  if (direct.layout == ConvDirectPlan::Layout::lanes)
    return G == 1 ? conv_direct(x, w.reshape({Cg, O1}).t().unsqueeze(2).unsqueeze(3), bias, g1, O1, O1, direct, epi, S)
                  : Tensor();
  // ubo: the filters [(g, o, si, sj), c] of group g's channels c, contiguous.
  Tensor w1 = ubo_floats_tensor(dev_of(x), O1 * Cg).view({G, Coutg, S, S, Cg});
  w1.copy_(w.view({G, Cg, Coutg, S, S}).permute({0, 2, 3, 4, 1}));
  w1 = w1.view({O1, Cg, 1, 1});
  return conv_direct_ubo(x, w1, bias, g1, O1, O1 / G, direct, epi, S);
}

}  // namespace detail

void detail::check_output_padding(const char* op, std::span<const std::int64_t> op_pad,
                                  std::span<const std::int64_t> stride, std::span<const std::int64_t> dilation,
                                  const Tensor& x, const Tensor& w) {
  // one value as a number (the 1-D op's), else a list
  const auto str = [](std::span<const std::int64_t> v) {
    return v.size() == 1 ? std::to_string(v[0]) : to_string(Shape(v.begin(), v.end()));
  };
  for (std::size_t d = 0; d < op_pad.size(); ++d)
    if (op_pad[d] < 0 || op_pad[d] >= std::max(stride[d], dilation[d]))
      throw ValueError(std::string("gltensor::") + op + ": output_padding " + str(op_pad) +
                       " must be >= 0 and smaller than max(stride, dilation) (stride " + str(stride) + ", dilation " +
                       str(dilation) + "), x " + (x.defined() ? to_string(x.shape()) : std::string("undefined")) +
                       ", weight " + (w.defined() ? to_string(w.shape()) : std::string("undefined")));
}

Tensor conv_transpose2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dOptions& o,
                        std::array<std::int64_t, 2> op_pad) {
  // PyTorch's rule, here and not in conv_transpose2d_epilogue: the ONNX runtime's output_shape
  // reaches its size with larger output padding.
  detail::check_output_padding("conv_transpose2d", op_pad, o.stride, o.dilation, x, w);
  return detail::conv_transpose2d_epilogue(x, w, bias, o, op_pad, Epilogue());
}

Tensor detail::conv_transpose2d_epilogue(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dOptions& o,
                                         std::array<std::int64_t, 2> op_pad, const Epilogue& epi, const char* op) {
  // conv_transpose1d's errors show its own shapes: x [N, Cin, L], w [Cin, Cout/groups, K] (dim 2
  // is the added 1), the output's length alone.
  const bool one_d = std::string_view(op) == "conv_transpose1d";
  const auto shape_of = [one_d](const Tensor& t) {
    Shape s = t.shape();
    if (one_d && s.size() == 4) s.erase(s.begin() + 2);
    return to_string(s);
  };
  const std::string name = std::string("gltensor::") + op;
  check_epilogue(op, epi);
  check_same_device(op, {&x, &w});
  check_options(op, o);
  if (x.dim() != 4 || w.dim() != 4)
    throw ShapeError(name + ": expects x [N, Cin, H, W] and weight [Cin, Cout/groups, KH, KW], got " +
                     to_string(x.shape()) + " and " + to_string(w.shape()));
  const std::int64_t G = o.groups, Cin = x.size(1);
  if (Cin != w.size(0) || Cin % G != 0)
    throw ShapeError(name + ": input " + shape_of(x) + " and weight " + shape_of(w) +
                     " do not match with groups = " + std::to_string(G));
  const std::int64_t Cg = Cin / G, Coutg = w.size(1), Cout = Coutg * G, KH = w.size(2), KW = w.size(3);
  const std::int64_t N = x.size(0), H = x.size(2), W = x.size(3);
  const std::int64_t OH =
      (H - 1) * o.stride[0] - o.padding[0] - o.padding[2] + o.dilation[0] * (KH - 1) + op_pad[0] + 1;
  const std::int64_t OW =
      (W - 1) * o.stride[1] - o.padding[1] - o.padding[3] + o.dilation[1] * (KW - 1) + op_pad[1] + 1;
  if (OH <= 0 || OW <= 0)
    throw ShapeError(name + ": output size " + (one_d ? std::to_string(OW) : to_string({OH, OW})) + " is empty (x " +
                     shape_of(x) + ", weight " + shape_of(w) + ")");
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != Cout))
    throw ShapeError(name + ": bias " + to_string(bias.shape()) + " must be [" + std::to_string(Cout) + "]");
  Tensor y;
  {
    NoGradGuard ng;
    y = conv_transpose2d_blocks(x, w, bias, o, op_pad, epi);
  }
  const bool fused = y.defined();
  if (!y.defined()) {
    NoGradGuard ng;
    // The transposed conv of x is the input-gradient of a conv whose output is x.
    Geometry g{N, Coutg, OH, OW, KH, KW, H, W, o};
    y = Tensor::empty(x.device(), {N, Cout, OH, OW});
    for (std::int64_t gi = 0; gi < G; ++gi) {
      Tensor xm = x.narrow(1, gi * Cg, Cg).permute({0, 2, 3, 1}).reshape({N * H * W, Cg});
      Tensor wm = w.narrow(0, gi * Cg, Cg).reshape({Cg, Coutg * KH * KW});
      y.narrow(1, gi * Coutg, Coutg).copy_(col2im_gemm(xm, wm, g));
    }
    if (bias.defined()) y = add(y, bias.view({1, Cout, 1, 1}));
  }
  grad_unsupported(op, {&x, &w, &bias}, y);
  return fused ? y : apply_epilogue(y, epi);
}

}  // namespace gltensor
