// Reductions (reduce.comp), softmax (softmax.comp), cumsum (scan.comp).
#include "gltensor/reduce.hpp"

#include <algorithm>
#include <cmath>

#include "autograd/recording.hpp"
#include "gltensor/autograd.hpp"
#include "gltensor/indexing.hpp"
#include "gltensor/ops.hpp"
#include "ops/autocast.hpp"
#include "ops/elementwise.hpp"
#include "ops/fused_elementwise.hpp"
#include "ops/reduce_variants.hpp"
#include "ops/softmax.hpp"
#include "ops/softmax_plan.hpp"
#include "runtime/codegen.hpp"
#include "runtime/launch.hpp"
#include "runtime/settings.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {
using namespace detail;

namespace {

enum Red { kSum = 0, kProd, kMax, kMin, kArgmax, kArgmin, kVar, kLse, kL1, kL2, kAll, kAny };
// reduce.comp's names for them (`#define RED red_...`).
const char* red_glsl(Red r) { return kReduceFunctions[r]; }

std::vector<bool> reduced_mask(const char* op, const Tensor& x, const Dims& dims) {
  std::vector<bool> red(static_cast<std::size_t>(x.dim()), dims.empty());
  for (auto d : dims) {
    const auto w = wrap_dim(op, d, x.dim());
    if (x.dim() == 0) continue;
    if (red[w])
      throw ValueError(std::string("gltensor::") + op + ": dim " + std::to_string(d) + " appears more than once");
    red[w] = true;
  }
  return red;
}

// Collapses (shape, strides) pairs in place: drops size-1 dims, merges contiguous neighbours.
void collapse(Shape& shape, Shape& strides) {
  std::vector<Shape> st{strides};
  merge_dims(shape, st, 0);
  strides = st[0];
}

std::vector<std::uint32_t> u32(const Shape& v) { return {v.begin(), v.end()}; }

// Uniforms of glsl/ops/reduce_rows.comp.
struct ReduceRowsParams {
  std::int64_t rows, R, row_stride, in_off, chunk, G, out_off;
  double div;
  std::int64_t seg = 0, seg_stride = 0;  // SEGMENTS (seg > 0)
  void set(Uniforms& u) const {
    if (seg > 0) u.u32("u_seg", seg), u.u32("u_seg_stride", seg_stride);
    u.u32("u_rows", rows);
    u.u32("u_R", R);
    u.u32("u_row_stride", row_stride);
    u.u32("u_in_off", in_off);
    u.u32("u_chunk", chunk);
    u.u32("u_G", G);
    u.u32("u_out_off", out_off);
    u.f32("u_div", div);
  }
};

// One pass of reduce_rows.comp: `rows` rows of R contiguous elements of `in` (row o at
// in.offset() + o * row_stride; with seg > 0, R / seg segments of seg contiguous elements,
// seg_stride apart), G chunks of `chunk` elements per row, results to out[0 .. rows * G)
// (partial sums when G > 1).
// The workgroup size of a pass over chunks of `chunk` elements of rows of R.
std::uint32_t reduce_rows_local(std::int64_t R, std::int64_t chunk) {
  return std::min<std::int64_t>(R, chunk) >= 1024 ? 256 : 64;
}

// reduce_rows.comp's loop iterations per invocation (a loop of n trips counts n + 1): the chunk
// in strides of the workgroup (quads: the 4-quad steps, at most 3 single quads and 3 single
// elements after them; otherwise one element a step), then the tree (log2(local) halvings) or
// with subgroups the per-subgroup partials (local / subgroup_size of them).
std::uint64_t reduce_rows_loops(std::int64_t chunk, std::uint32_t local, bool subgroup, int subgroup_size) {
  const auto steps = static_cast<std::uint64_t>((chunk + local - 1) / local);
  std::uint64_t tree = 1;
  if (subgroup)
    tree += local / static_cast<std::uint32_t>(std::max(1, subgroup_size));
  else
    for (std::uint32_t s = local / 2; s > 0; s >>= 1) ++tree;
  return (steps + 1) + 4 + 4 + tree;
}

void reduce_rows_pass(DeviceImpl& dev, const Tensor& in, std::int64_t rows, std::int64_t R, std::int64_t row_stride,
                      std::int64_t G, std::int64_t chunk, int f, int post, double div, const Tensor& out,
                      std::int64_t seg = 0, std::int64_t seg_stride = 0) {
  const bool quads = in.dtype() == DType::f32 && in.offset() % 4 == 0 && (rows == 1 || row_stride % 4 == 0) &&
                     (seg == 0 || (seg % 4 == 0 && seg_stride % 4 == 0));
  const bool sg = dev.subgroup_arithmetic();
  static const char* terms[] = {"term_x", "term_abs", "term_square"};
  static const char* posts[] = {"post_none", "post_mean", "post_sqrt"};
  ReduceRowsVariant v;
  v.term = terms[f], v.post = posts[post], v.subgroup = sg, v.quads = quads, v.segments = seg > 0;
  v.out = out.dtype(), v.in = in.dtype();
  const std::uint32_t local = reduce_rows_local(R, chunk);
  Launch launch(dev, "reduce");
  launch.program(v.kFile, v.defines(), {local}).write(out).read(in);
  launch.params(ReduceRowsParams{rows, R, row_stride, in.offset(), chunk, G, out.offset(), div, seg, seg_stride});
  launch.loop_iterations(reduce_rows_loops(chunk, local, sg, dev.caps().subgroup_size));
  launch.groups_1d(static_cast<std::uint64_t>(rows * G));
}

// Fast path for sum, mean and the L1/L2 norms of floating inputs whose reduced elements are
// contiguous (one collapsed dim of stride 1) in rows of one stride, or segments of them (two
// collapsed dims, the inner of stride 1: a sum over dims 0, 2, 3 of [N, C, H, W], SEGMENTS): 128-bit
// loads, no index tracking, subgroup sums where available (bench/RESULTS.md). Returns false where
// it does not apply. (kshape, kstride) and (rshape, rstride) are collapsed.
bool reduce_rows(DeviceImpl& dev, Red red, int post, const Tensor& x, const Tensor& out, const Shape& kshape,
                 const Shape& kstride, const Shape& rshape, const Shape& rstride) {
  if ((red != kSum && red != kL1 && red != kL2) || !is_floating(x.dtype()) || !is_floating(out.dtype())) return false;
  if (rshape.empty() || rshape.size() > 2 || rstride.back() != 1 || kshape.size() != 1) return false;
  const std::int64_t rows = kshape[0], R = numel_of(rshape);
  const std::int64_t seg = rshape.size() == 2 ? rshape[1] : 0, seg_stride = rshape.size() == 2 ? rstride[0] : 0;
  // Segments: ascending strides, every element's offset below 2^32 (the kernel's uint arithmetic).
  if (seg > 0 && (seg_stride < seg || kstride[0] < 0 ||
                  (x.offset() + (rows - 1) * kstride[0] + (rshape[0] - 1) * seg_stride + seg) >> 32))
    return false;
  const int f = red == kL1 ? 1 : red == kL2 ? 2 : 0, final_post = red == kL2 ? 2 : post;
  // Chunks per row: at least 16 elements per invocation, about 2048 workgroups in all at most.
  const std::int64_t per_group = 256 * 16;
  std::int64_t G = 1;
  if (R > per_group) G = std::min((R + per_group - 1) / per_group, std::max<std::int64_t>(1, 2048 / rows));
  std::int64_t chunk = ((R + G - 1) / G + 3) / 4 * 4;
  // Within the device's loop limit: chunks short enough for one invocation's loops (the tree's
  // are fixed), and a second pass over the G partials that fits too; else the general kernel
  // (reduce.comp) plans the reduction.
  const bool sg = dev.subgroup_arithmetic();
  const int sgs = dev.caps().subgroup_size;
  if (const std::uint64_t limit = dev.loop_limit(); limit != 0) {
    auto fits = [&](std::int64_t len, std::int64_t c) {
      return reduce_rows_loops(c, reduce_rows_local(len, c), sg, sgs) <= limit;
    };
    while (!fits(R, chunk)) {
      if (chunk <= 4) return false;
      chunk = std::max<std::int64_t>(4, (chunk / 2 + 3) / 4 * 4);
    }
    const std::int64_t g = (R + chunk - 1) / chunk;
    if (g > 1 && !fits(g, (g + 3) / 4 * 4)) return false;
  }
  G = (R + chunk - 1) / chunk;
  if (G == 1) {
    reduce_rows_pass(dev, x, rows, R, kstride[0], 1, chunk, f, final_post, static_cast<double>(R), out, seg,
                     seg_stride);
    return true;
  }
  Tensor partial = alloc(dev, {rows * G}, DType::f32, "reduce");
  reduce_rows_pass(dev, x, rows, R, kstride[0], G, chunk, f, 0, 1.0, partial, seg, seg_stride);
  reduce_rows_pass(dev, partial, rows, G, G, 1, (G + 3) / 4 * 4, 0, final_post, static_cast<double>(R), out);
  return true;
}

// Uniforms of glsl/ops/reduce.comp.
struct ReduceParams {
  std::int64_t nout, R, chunk, G;
  std::vector<std::uint32_t> kshape, kstride, rshape, rstride;
  std::int64_t in_off;
  double correction;
  int post;
  void set(Uniforms& u) const {
    u.u32("u_nout", nout);
    u.u32("u_R", R);
    u.u32("u_chunk", chunk);
    u.u32("u_G", G);
    u.u32s("u_kshape", kshape);
    u.u32s("u_kstride", kstride);
    u.u32s("u_rshape", rshape);
    u.u32s("u_rstride", rstride);
    u.u32("u_in_off", in_off);
    u.u32("u_out_off", 0);
    u.f32("u_correction", correction);
    u.i32("u_post", post);
  }
};

Tensor reduce(const char* op, Red red, const Tensor& x_in, const Dims& dims, bool keepdim, DType out_dtype,
              double correction = 0, int post = 0) {
  check_defined(op, x_in);
  DeviceImpl& dev = dev_of(x_in);
  Enter guard(dev, op);
  const Tensor& x = x_in;
  const auto red_mask = reduced_mask(op, x, dims);
  Shape out_shape, kshape, kstride, rshape, rstride;
  for (std::int64_t d = 0; d < x.dim(); ++d) {
    if (red_mask[d]) {
      rshape.push_back(x.shape()[d]);
      rstride.push_back(x.strides()[d]);
      if (keepdim) out_shape.push_back(1);
    } else {
      kshape.push_back(x.shape()[d]);
      kstride.push_back(x.strides()[d]);
      out_shape.push_back(x.shape()[d]);
    }
  }
  const std::int64_t nout = numel_of(kshape), R = numel_of(rshape);
  if (R == 0 && nout > 0 && (red == kMax || red == kMin || red == kArgmax || red == kArgmin))
    throw IndexError(std::string("gltensor::") + op + ": cannot reduce over zero elements (input shape " +
                     to_string(x.shape()) + ")");
  collapse(kshape, kstride);
  collapse(rshape, rstride);
  // A short sum over many outputs (split-K partials, rms_norm's per-block weight gradients):
  // elementwise adds of the R strided views in order, one invocation per output, rather than a
  // workgroup per output whose invocations mostly idle (on llvmpipe a [8, 192, 64] sum over dim 0
  // took ~50 ms that way, the adds well under 1 ms); up to kFusedMaxInputs views per dispatch
  // (a generated add chain: the sum so far and the next views), so R <= 6 takes one dispatch
  // where the loop limit allows.
  if (red == kSum && post == 0 && x.dtype() == DType::f32 && out_dtype == DType::f32 && rshape.size() == 1 && R >= 2 &&
      R <= 16 && nout >= 1024) {
    NoGradGuard ng;
    auto part = [&](std::int64_t r) { return make_view(x, kshape, kstride, x.offset() + r * rstride[0]); };
    // Fewer views per dispatch where the elementwise driver's loops (each operand's offset per
    // dim, each lane) would pass the device's loop limit; two (an add's) always fit where add does.
    const int ndim = std::max(1, static_cast<int>(kshape.size()));
    const int quads = std::max(1, settings().elementwise_quads);
    int per = kFusedMaxInputs;
    while (per > 2 && dev.loop_limit() != 0 && elementwise_loops(ndim, per + 1, 0, quads) > dev.loop_limit()) --per;
    Tensor acc;
    for (std::int64_t r = 0; r < R;) {
      std::vector<Tensor> in;
      if (acc.defined()) in.push_back(acc);
      while (static_cast<int>(in.size()) < per && r < R) in.push_back(part(r++));
      FusedExpr e;
      e.inputs = static_cast<int>(in.size());
      int v = e.add({FusedOp::input, 0});
      for (int i = 1; i < e.inputs; ++i) v = e.add({FusedOp::add, v, e.add({FusedOp::input, i})});
      acc = fused_elementwise(op, e, render_fused_glsl(e), in, DType::f32);
    }
    return acc.reshape(out_shape);
  }
  Tensor out = alloc(dev, out_shape, out_dtype, op);
  if (nout == 0) return out;
  if (R > 0 && reduce_rows(dev, red, post, x, out, kshape, kstride, rshape, rstride)) return out;
  const std::uint32_t lx = R >= 256 ? 256 : 64;
  // Two passes when few outputs share a long reduction, or when one workgroup's part would loop
  // longer than the device allows.
  std::int64_t G = 1;
  if (R > 8192) G = std::min<std::int64_t>((R + 4095) / 4096, std::max<std::int64_t>(1, 2048 / nout));
  if (const std::uint64_t limit = dev.loop_limit(); limit != 0) {
    const std::int64_t steps = (static_cast<std::int64_t>(limit) - static_cast<std::int64_t>(kshape.size()) - 16) /
                               static_cast<std::int64_t>(rshape.size() + 1);
    const std::int64_t max_chunk = std::max<std::int64_t>(1, steps) * lx;
    if ((R + G - 1) / G > max_chunk) G = (R + max_chunk - 1) / max_chunk;
  }
  const std::int64_t chunk = (R + G - 1) / G;

  auto header = [&](const char* stage) {
    ReduceVariant v;
    v.red = red_glsl(red), v.kd = static_cast<int>(kshape.size()), v.rd = static_cast<int>(rshape.size());
    v.stage = stage, v.out = out_dtype, v.in = x.dtype();
    return v.defines();
  };
  ReduceParams params{nout,         R,          chunk,      G,   u32(kshape), u32(kstride), u32(rshape),
                      u32(rstride), x.offset(), correction, post};
  // Loops: the chunk in strides of the workgroup, each element's reduced-dim offsets; the kept
  // dims; the tree. Stage 2: the partial states.
  auto loops = [&](std::int64_t elements, std::uint32_t local, std::size_t dims) {
    return static_cast<std::uint64_t>(((elements + local - 1) / local) * static_cast<std::int64_t>(dims + 1) +
                                      static_cast<std::int64_t>(kshape.size()) + 16);
  };
  if (G == 1) {
    Launch launch(dev, op);
    launch.program("reduce.comp", header("stage_whole"), {lx})
        .write(out)
        .read(x)
        .write(out);  // binding 2 unused in stage 0
    launch.params(params).loop_iterations(loops(chunk, lx, rshape.size())).groups_1d(static_cast<std::uint64_t>(nout));
    return out;
  }
  Tensor states = alloc(dev, {nout * G * 4}, DType::f32, op);
  {
    Launch launch(dev, op);
    launch.program("reduce.comp", header("stage_partial"), {lx}).read(out).read(x).write(states);
    launch.params(params).loop_iterations(loops(chunk, lx, rshape.size()));
    launch.groups_1d(static_cast<std::uint64_t>(nout * G));
  }
  {
    Launch launch(dev, op);
    launch.program("reduce.comp", header("stage_combine"), {64}).write(out).read(x).read(states);
    launch.params(params).loop_iterations(loops(G, 64, 0)).groups_1d(static_cast<std::uint64_t>(nout));
  }
  return out;
}

DType float_result(DType d) { return is_floating(d) ? d : DType::f32; }
DType sum_result(DType d) { return is_floating(d) ? d : DType::i32; }

Tensor arg_reduce(const char* op, Red red, const Tensor& x, std::int64_t dim, bool keepdim) {
  check_defined(op, x);
  if (dim == kAllDims) {
    Tensor flat = x.reshape({-1});
    Tensor r = reduce(op, red, flat, {0}, false, DType::i32);
    if (keepdim) return r.reshape(Shape(static_cast<std::size_t>(x.dim()), 1));
    return r;
  }
  return reduce(op, red, x, {dim}, keepdim, DType::i32);
}

// Shape of x with the reduced dims kept as size 1.
Shape keep_shape(const Tensor& x, const Dims& dims) {
  const auto red = reduced_mask("reduce", x, dims);
  Shape s = x.shape();
  for (std::size_t i = 0; i < s.size(); ++i)
    if (red[i]) s[i] = 1;
  return s;
}

// Records y = reduction(x) with backward g -> f(g reshaped to keepdim shape, x, y keepdim).
template <typename F>
Tensor reduce_node(const Tensor& x, Tensor y, const Dims& dims, const char* name, F f) {
  if (!autograd::any_requires_grad({&x})) return y;
  const Shape ks = keep_shape(x, dims);
  const Tensor xd = detach(x), yk = detach(y).reshape(ks);
  autograd::record(
      y, {x}, [=](const Tensor& g) { return std::vector<Tensor>{f(g.reshape(ks).expand(xd.shape()), xd, yk)}; }, name);
  return y;
}

std::int64_t reduced_count(const Tensor& x, const Dims& dims) {
  const auto red = reduced_mask("reduce", x, dims);
  std::int64_t n = 1;
  for (std::size_t i = 0; i < red.size(); ++i)
    if (red[i]) n *= x.shape()[i];
  return n;
}

}  // namespace

Tensor sum(const Tensor& x, const Dims& d, bool k) {
  check_defined("sum", x);
  return reduce_node(x, reduce("sum", kSum, x, d, k, sum_result(x.dtype())), d, "sum",
                     [](const Tensor& g, const Tensor&, const Tensor&) { return g; });
}
Tensor mean(const Tensor& x, const Dims& d, bool k) {
  check_defined("mean", x);
  const double n = static_cast<double>(reduced_count(x, d));
  return reduce_node(x, reduce("mean", kSum, x, d, k, float_result(x.dtype()), 0, 1), d, "mean",
                     [n](const Tensor& g, const Tensor&, const Tensor&) { return div(g, n); });
}
Tensor prod(const Tensor& x, const Dims& d, bool k) {
  check_defined("prod", x);
  Tensor y = reduce("prod", kProd, x, d, k, sum_result(x.dtype()));
  grad_unsupported("prod", {&x}, y);
  return y;
}
static Tensor extreme_grad(const Tensor& g, const Tensor& x, const Tensor& yk, const Dims& d) {
  Tensor mask = eq(x, yk);
  return where(mask, div(g, sum(mask.to(DType::f32), d, true)), 0.0);
}
Tensor amax(const Tensor& x, const Dims& d, bool k) {
  check_defined("amax", x);
  return reduce_node(x, reduce("amax", kMax, x, d, k, x.dtype()), d, "amax",
                     [d](const Tensor& g, const Tensor& xd, const Tensor& yk) { return extreme_grad(g, xd, yk, d); });
}
Tensor amin(const Tensor& x, const Dims& d, bool k) {
  check_defined("amin", x);
  return reduce_node(x, reduce("amin", kMin, x, d, k, x.dtype()), d, "amin",
                     [d](const Tensor& g, const Tensor& xd, const Tensor& yk) { return extreme_grad(g, xd, yk, d); });
}
Tensor argmax(const Tensor& x, std::int64_t dim, bool k) { return arg_reduce("argmax", kArgmax, x, dim, k); }
Tensor argmin(const Tensor& x, std::int64_t dim, bool k) { return arg_reduce("argmin", kArgmin, x, dim, k); }
Tensor var(const Tensor& x, const Dims& d, double c, bool k) {
  check_defined("var", x);
  const double n = static_cast<double>(reduced_count(x, d));
  return reduce_node(x, reduce("var", kVar, x, d, k, float_result(x.dtype()), c, 0), d, "var",
                     [n, c, d](const Tensor& g, const Tensor& xd, const Tensor&) {
                       NoGradGuard ng;
                       Tensor m = mean(xd, d, true);
                       return mul(g, mul(sub(xd, m), 2.0 / std::max(n - c, 0.0)));
                     });
}
Tensor std(const Tensor& x, const Dims& d, double c, bool k) {
  check_defined("std", x);
  const double n = static_cast<double>(reduced_count(x, d));
  return reduce_node(x, reduce("std", kVar, x, d, k, float_result(x.dtype()), c, 2), d, "std",
                     [n, c, d](const Tensor& g, const Tensor& xd, const Tensor& yk) {
                       Tensor m = mean(xd, d, true);
                       return mul(div(g, yk), div(sub(xd, m), std::max(n - c, 0.0)));
                     });
}
Tensor logsumexp(const Tensor& x, const Dims& d, bool k) {
  check_defined("logsumexp", x);
  return reduce_node(x, reduce("logsumexp", kLse, x, d, k, float_result(x.dtype())), d, "logsumexp",
                     [](const Tensor& g, const Tensor& xd, const Tensor& yk) { return mul(g, exp(sub(xd, yk))); });
}
Tensor norm(const Tensor& x, double p, const Dims& d, bool k) {
  check_defined("norm", x);
  if (p != 1.0 && p != 2.0) throw ValueError("gltensor::norm: p must be 1 or 2, got " + std::to_string(p));
  Tensor y = reduce("norm", p == 1.0 ? kL1 : kL2, x, d, k, float_result(x.dtype()));
  if (p == 1.0)
    return reduce_node(x, y, d, "norm",
                       [](const Tensor& g, const Tensor& xd, const Tensor&) { return mul(g, sign(xd)); });
  return reduce_node(x, y, d, "norm", [](const Tensor& g, const Tensor& xd, const Tensor& yk) {
    return where(eq(yk, 0.0), 0.0, mul(g, div(xd, yk)));
  });
}
Tensor all(const Tensor& x, const Dims& d, bool k) { return reduce("all", kAll, x, d, k, DType::bool_); }
Tensor any(const Tensor& x, const Dims& d, bool k) { return reduce("any", kAny, x, d, k, DType::bool_); }

}  // namespace gltensor

namespace gltensor {
namespace {

// Shared by softmax and cumsum: rows over every dim but `dim`, for input and output views.
struct RowLayout {
  Shape kshape, kin, kout;
  std::int64_t rows = 1, L = 1, in_step = 1, out_step = 1;
};

RowLayout row_layout(const Tensor& in, const Tensor& out, std::int64_t dim) {
  RowLayout r;
  for (std::int64_t d = 0; d < in.dim(); ++d) {
    if (d == dim) continue;
    r.kshape.push_back(in.shape()[d]);
    r.kin.push_back(in.strides()[d]);
    r.kout.push_back(out.strides()[d]);
  }
  if (r.kshape.empty()) {
    r.kshape = {1};
    r.kin = {0};
    r.kout = {0};
  }
  r.rows = numel_of(r.kshape);
  if (in.dim() > 0) {
    r.L = in.shape()[dim];
    r.in_step = in.strides()[dim];
    r.out_step = out.strides()[dim];
  }
  return r;
}

// Uniforms of glsl/ops/softmax.comp and glsl/ops/scan.comp: rows over every dim but one, and
// the grid's size (`count_name`: softmax.comp's u_rows, scan.comp's u_count).
struct RowParams {
  const RowLayout& r;
  const Tensor &in, &out;
  const char* count_name;
  std::int64_t count;
  void set(Uniforms& u) const {
    u.u32(count_name, count);
    u.u32("u_L", r.L);
    u.u32s("u_kshape", u32(r.kshape));
    u.u32s("u_kstride_in", u32(r.kin));
    u.u32s("u_kstride_out", u32(r.kout));
    u.u32("u_in_off", in.offset());
    u.u32("u_out_off", out.offset());
    u.u32("u_in_step", r.in_step);
    u.u32("u_out_step", r.out_step);
  }
};

// scan.comp's blocks per row.
struct BlockCount {
  std::int64_t nb;
  void set(Uniforms& u) const { u.u32("u_nb", nb); }
};

Tensor softmax_impl(const char* op, const Tensor& x, std::int64_t dim, bool log, bool host_out) {
  check_defined(op, x);
  DeviceImpl& dev = dev_of(x);
  Enter guard(dev, op);
  dim = wrap_dim(op, dim, x.dim());
  const DType od = float_result(x.dtype());
  const RowLayout probe = row_layout(x, x, dim);
  // Rows in registers (ROW_QUADS): f32 rows contiguous, starting on 4-element boundaries, in the
  // input and in the output (allocated contiguous).
  auto quad_rows = [](DType dt, std::int64_t offset, const Shape& kstrides, std::int64_t step) {
    if (dt != DType::f32 || step != 1 || offset % 4) return false;
    for (std::int64_t st : kstrides)
      if (st % 4) return false;
    return true;
  };
  const Shape os = contiguous_strides(x.shape());
  Shape kout;
  for (std::int64_t d = 0; d < x.dim(); ++d)
    if (d != dim) kout.push_back(os[d]);
  SoftmaxProblem problem;
  problem.L = probe.L, problem.kept_dims = static_cast<std::int64_t>(probe.kshape.size());
  problem.quad_rows =
      quad_rows(x.dtype(), x.offset(), probe.kin, probe.in_step) && quad_rows(od, 0, kout, x.dim() > 0 ? os[dim] : 1);
  problem.subgroup_arithmetic = dev.subgroup_arithmetic();
  problem.loop_limit = x.numel() > 0 ? dev.loop_limit() : 0;
  const SoftmaxPlan plan = plan_softmax(problem);
  if (plan.path == SoftmaxPlan::Path::logsumexp) {
    // In f32, rounded once to the result's dtype, as the kernel; as the kernel (and torch), a
    // row with +Inf is NaN (logsumexp is +Inf there).
    NoGradGuard ng;
    const Tensor xf = x.to(DType::f32);
    const Tensor lse = logsumexp(xf, {dim}, true);
    const Tensor z = where(eq(lse, INFINITY), NAN, sub(xf, lse));
    return (log ? z : exp(z)).to(od);
  }
  Tensor out = host_out && x.numel() > 0 ? alloc_host(dev, x.shape(), od, op) : Tensor();
  if (!out.defined()) out = alloc(dev, x.shape(), od, op);
  if (out.numel() == 0) return out;
  const RowLayout r = row_layout(x, out, dim);
  SoftmaxVariant v;
  v.kd = static_cast<std::int64_t>(r.kshape.size()), v.log = log, v.row_quads = plan.row_quads, v.nq = plan.nq;
  v.row_regs = plan.row_regs, v.ns = plan.ns;
  v.subgroup = plan.subgroup, v.out = od, v.in = x.dtype();
  Launch launch(dev, op);
  launch.program(v.kFile, v.defines(), {plan.local}).write(out).read(x).params(RowParams{r, x, out, "u_rows", r.rows});
  launch.loop_iterations(plan.loop_iterations).groups_1d(static_cast<std::uint64_t>(r.rows));
  return out;
}

// scan.comp's blocked scan: E elements per invocation, 256 invocations per workgroup.
constexpr std::int64_t kScanE = 4, kScanLocal = 256, kScanBlock = kScanE * kScanLocal;

// out = inclusive prefix sums of `in` along the rows of r (scan.comp). Rows of one block scan in
// one pass; longer rows sum their blocks (BLOCK_SUMS), scan the [rows, blocks] sums by the same
// function (one more level per factor of kScanBlock), and scan their blocks with the sums of the
// blocks before as carries (BLOCK_SCAN). No invocation loops over a row, so rows of any length fit
// the device's loop limit. Short rows: one invocation per row.
void scan_rows(DeviceImpl& dev, const Tensor& in, const Tensor& out, const RowLayout& r) {
  const DType od = out.dtype();
  ScanVariant v;
  v.kd = static_cast<int>(r.kshape.size()), v.e = kScanE, v.out = od, v.in = in.dtype();
  const std::uint64_t limit = dev.loop_limit();
  // ROW_SCAN's loops (a loop of n trips counts n + 1: its exit test): the row's kept dims, the row.
  const auto row_loops = static_cast<std::uint64_t>(r.kshape.size() + r.L + 2);
  if (r.L <= 64 && (limit == 0 || row_loops <= limit)) {
    Launch launch(dev, "cumsum");
    v.mode = "ROW_SCAN";
    launch.program(v.kFile, v.defines(), {64});
    launch.write(out).read(in).params(RowParams{r, in, out, "u_count", r.rows});
    launch.loop_iterations(row_loops).invocations(static_cast<std::uint64_t>(r.rows));
    return;
  }
  const std::int64_t nb = (r.L + kScanBlock - 1) / kScanBlock;
  // Loops of BLOCK_SUMS and BLOCK_SCAN, each counting its exit test: the row's kept dims; E per load, scan,
  // carry and store; the tree of log2(256) steps.
  const auto block_loops = static_cast<std::uint64_t>(r.kshape.size() + 1 + 4 * (kScanE + 1) + 9);
  const std::uint64_t groups = static_cast<std::uint64_t>(r.rows * nb);
  Tensor carries;
  if (nb > 1) {
    const DType sd = natural_ct(od) == CT::f32 ? DType::f32 : DType::i32;
    const Tensor sums = alloc(dev, {r.rows, nb}, sd, "cumsum");
    {
      Launch launch(dev, "cumsum");
      v.mode = "BLOCK_SUMS";
      launch.program(v.kFile, v.defines(), {static_cast<std::uint32_t>(kScanLocal)});
      launch.write(sums).read(in).params(RowParams{r, in, out, "u_count", static_cast<std::int64_t>(groups)});
      launch.params(BlockCount{nb}).loop_iterations(block_loops).groups_1d(groups);
    }
    carries = alloc(dev, {r.rows, nb}, sd, "cumsum");
    scan_rows(dev, sums, carries, row_layout(sums, carries, 1));
  }
  v.mode = "BLOCK_SCAN", v.carry = carries.defined();
  if (v.carry) v.carries = carries.dtype();
  Launch launch(dev, "cumsum");
  launch.program(v.kFile, v.defines(), {static_cast<std::uint32_t>(kScanLocal)}).write(out).read(in);
  if (carries.defined()) launch.read(carries);
  launch.params(RowParams{r, in, out, "u_count", static_cast<std::int64_t>(groups)}).params(BlockCount{nb});
  launch.loop_iterations(block_loops).groups_1d(groups);
}

}  // namespace

Tensor detail::softmax_out(const Tensor& x, std::int64_t dim, bool log, bool host_out) {
  if (detail::autocast_changes_f32({&x})) return softmax_out(detail::autocast_f32(x), dim, log, host_out);
  Tensor y = softmax_impl(log ? "log_softmax" : "softmax", x, dim, log, host_out);
  if (autograd::any_requires_grad({&x})) {
    const Tensor yd = detach(y);
    if (log)
      autograd::record(
          y, {x}, [yd, dim](const Tensor& g) { return std::vector<Tensor>{sub(g, mul(exp(yd), sum(g, {dim}, true)))}; },
          "log_softmax");
    else
      autograd::record(
          y, {x},
          [yd, dim](const Tensor& g) { return std::vector<Tensor>{mul(yd, sub(g, sum(mul(g, yd), {dim}, true)))}; },
          "softmax");
  }
  return y;
}
Tensor softmax(const Tensor& x, std::int64_t dim) { return detail::softmax_out(x, dim, false, false); }
Tensor log_softmax(const Tensor& x, std::int64_t dim) { return detail::softmax_out(x, dim, true, false); }

Tensor cumsum(const Tensor& x, std::int64_t dim) {
  check_defined("cumsum", x);
  DeviceImpl& dev = dev_of(x);
  Enter guard(dev, "cumsum");
  dim = wrap_dim("cumsum", dim, x.dim());
  Tensor out = alloc(dev, x.shape(), sum_result(x.dtype()), "cumsum");
  if (out.numel() == 0) return out;
  scan_rows(dev, x, out, row_layout(x, out, dim));
  if (autograd::any_requires_grad({&x}))
    autograd::record(
        out, {x}, [dim](const Tensor& g) { return std::vector<Tensor>{flip(cumsum(flip(g, {dim}), dim), {dim})}; },
        "cumsum");
  return out;
}

}  // namespace gltensor
