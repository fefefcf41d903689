// Shape and data-movement ONNX ops. Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze, Concat,
// Gather, Slice, Transpose, Expand, Range, ConstantOfShape and Constant also run on the host, so
// that shape subgraphs never reach the GPU.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "gltensor/indexing.hpp"
#include "gltensor/ops.hpp"
#include "gltensor/reduce.hpp"
#include "model/ops.hpp"
#include "ops/index.hpp"

namespace gltensor::model {

namespace {

using I64s = std::vector<std::int64_t>;

std::vector<int> of(int e) { return {e}; }

// Axes from the attribute (older opsets) or input i (newer ones).
I64s axes_of(Args& a, std::size_t input) {
  if (a.attrs.has("axes")) return a.attrs.ints("axes");
  if (a.present(input)) return a.ints(input);
  return {};
}

Shape reshape_target(Args& a, const Shape& in) {
  I64s s = a.opset < 5 ? a.attrs.ints("shape") : a.ints(1);
  const bool allowzero = a.attrs.i("allowzero", 0) != 0;
  std::int64_t known = 1, infer = -1;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == 0 && !allowzero) {
      if (i >= in.size()) a.fail("Reshape copies dim " + std::to_string(i) + " of " + to_string(in));
      s[i] = in[i];
    }
    if (s[i] == -1) {
      if (infer >= 0) a.fail("Reshape target " + to_string(s) + " has two -1 dims");
      infer = static_cast<std::int64_t>(i);
    } else {
      known *= s[i];
    }
  }
  if (infer >= 0) s[static_cast<std::size_t>(infer)] = known ? numel_of(in) / known : 0;
  if (numel_of(s) != numel_of(in)) a.fail("cannot reshape " + to_string(in) + " to " + to_string(s));
  return s;
}

Shape flatten_target(Args& a, const Shape& in) {
  const std::int64_t r = static_cast<std::int64_t>(in.size());
  std::int64_t axis = a.attrs.i("axis", 1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis > r) a.fail("Flatten axis out of range");
  std::int64_t rows = 1;
  for (std::int64_t d = 0; d < axis; ++d) rows *= in[static_cast<std::size_t>(d)];
  return {rows, rows ? numel_of(in) / rows : 0};
}

Shape squeeze_target(Args& a, const Shape& in) {
  I64s axes = axes_of(a, 1);
  const std::int64_t r = static_cast<std::int64_t>(in.size());
  Shape out;
  std::vector<bool> drop(in.size(), false);
  if (axes.empty()) {
    for (std::size_t d = 0; d < in.size(); ++d) drop[d] = in[d] == 1;
  } else {
    for (auto ax : axes) {
      const std::int64_t d = norm_axis(a, ax, r);
      if (in[static_cast<std::size_t>(d)] != 1)
        a.fail("Squeeze of dim " + std::to_string(ax) + " of " + to_string(in) + ", which is not 1");
      drop[static_cast<std::size_t>(d)] = true;
    }
  }
  for (std::size_t d = 0; d < in.size(); ++d)
    if (!drop[d]) out.push_back(in[d]);
  return out;
}

Shape unsqueeze_target(Args& a, const Shape& in) {
  I64s axes = axes_of(a, 1);
  const std::int64_t r = static_cast<std::int64_t>(in.size() + axes.size());
  std::vector<bool> added(static_cast<std::size_t>(r), false);
  for (auto ax : axes) {
    const std::int64_t d = norm_axis(a, ax, r);
    if (added[static_cast<std::size_t>(d)]) a.fail("Unsqueeze axes repeat " + std::to_string(ax));
    added[static_cast<std::size_t>(d)] = true;
  }
  Shape out;
  std::size_t k = 0;
  for (std::int64_t d = 0; d < r; ++d) out.push_back(added[static_cast<std::size_t>(d)] ? 1 : in.at(k++));
  return out;
}

HostTensor reshaped(const HostTensor& h, Shape s) {
  HostTensor r = h;
  r.shape = std::move(s);
  return r;
}

// Strides of a row-major shape.
Shape strides_of(const Shape& s) { return contiguous_strides(s); }

// Calls f(out_index, in_offset) over every element of a gather-like mapping.
HostTensor host_permute(const HostTensor& x, const I64s& perm) {
  const std::size_t r = x.shape.size();
  Shape out(r);
  for (std::size_t d = 0; d < r; ++d) out[d] = x.shape[static_cast<std::size_t>(perm[d])];
  const Shape st = strides_of(x.shape);
  HostTensor y{x.elem, out, std::vector<double>(x.v.size())};
  std::vector<std::int64_t> idx(r, 0);
  for (std::size_t k = 0; k < y.v.size(); ++k) {
    std::int64_t off = 0;
    for (std::size_t d = 0; d < r; ++d) off += idx[d] * st[static_cast<std::size_t>(perm[d])];
    y.v[k] = x.v[static_cast<std::size_t>(off)];
    for (std::size_t d = r; d-- > 0;) {
      if (++idx[d] < out[d]) break;
      idx[d] = 0;
    }
  }
  return y;
}

I64s transpose_perm(Args& a, std::int64_t r) {
  I64s def(static_cast<std::size_t>(r));
  std::iota(def.rbegin(), def.rend(), 0);
  I64s p = a.attrs.ints("perm", def);
  if (static_cast<std::int64_t>(p.size()) != r)
    a.fail("perm " + to_string(p) + " does not match rank " + std::to_string(r));
  for (auto& d : p) d = norm_axis(a, d, r);
  return p;
}

struct SliceSpec {
  std::int64_t axis, start, end, step;  // step > 0; for negative ONNX steps, in flipped coordinates
  bool flipped;
};

std::vector<SliceSpec> slice_specs(Args& a, const Shape& in) {
  I64s starts, ends, axes, steps;
  if (a.opset < 10) {
    starts = a.attrs.ints("starts");
    ends = a.attrs.ints("ends");
    axes = a.attrs.ints("axes");
  } else {
    starts = a.ints(1);
    ends = a.ints(2);
    if (a.present(3)) axes = a.ints(3);
    if (a.present(4)) steps = a.ints(4);
  }
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    a.fail("Slice starts, ends, axes and steps differ in length");
  std::vector<SliceSpec> r;
  const std::int64_t big = std::int64_t(1) << 62;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const std::int64_t ax = norm_axis(a, axes[i], static_cast<std::int64_t>(in.size()));
    const std::int64_t n = in[static_cast<std::size_t>(ax)], st = steps[i];
    if (st == 0) a.fail("Slice step 0");
    std::int64_t s = std::clamp(starts[i], -big, big), e = std::clamp(ends[i], -big, big);
    if (s < 0) s += n;
    if (e < 0) e += n;
    if (st > 0) {
      s = std::clamp<std::int64_t>(s, 0, n);
      e = std::clamp<std::int64_t>(e, 0, n);
      r.push_back({ax, s, std::max(s, e), st, false});
    } else {
      s = std::clamp<std::int64_t>(s, 0, n - 1);
      e = std::clamp<std::int64_t>(e, -1, n - 1);
      // flipped: index j = n - 1 - i
      const std::int64_t fs = n - 1 - s, fe = n - 1 - e;
      r.push_back({ax, std::max<std::int64_t>(fs, 0), std::max(std::max<std::int64_t>(fs, 0), fe), -st, true});
      if (n == 0) r.back() = {ax, 0, 0, -st, true};
    }
  }
  return r;
}

I64s gather_out_shape(const Shape& x, std::int64_t axis, const Shape& idx) {
  I64s s(x.begin(), x.begin() + axis);
  s.insert(s.end(), idx.begin(), idx.end());
  s.insert(s.end(), x.begin() + axis + 1, x.end());
  return s;
}

HostTensor host_concat(Args& a) {
  std::vector<const HostTensor*> xs;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a.present(i)) xs.push_back(&a.h(i));
  const Shape& s0 = xs[0]->shape;
  const std::int64_t ax = norm_axis(a, a.attrs.i("axis", 0), static_cast<std::int64_t>(s0.size()));
  std::int64_t outer = 1, inner = 1, total = 0;
  for (std::int64_t d = 0; d < ax; ++d) outer *= s0[static_cast<std::size_t>(d)];
  for (std::size_t d = static_cast<std::size_t>(ax) + 1; d < s0.size(); ++d) inner *= s0[d];
  for (auto* x : xs) {
    if (x->shape.size() != s0.size()) a.fail("Concat of different ranks");
    total += x->shape[static_cast<std::size_t>(ax)];
  }
  HostTensor r{a.elem(0), s0, {}};
  r.shape[static_cast<std::size_t>(ax)] = total;
  for (std::int64_t o = 0; o < outer; ++o)
    for (auto* x : xs) {
      const std::int64_t len = x->shape[static_cast<std::size_t>(ax)] * inner;
      r.v.insert(r.v.end(), x->v.begin() + o * len, x->v.begin() + (o + 1) * len);
    }
  return r;
}

HostTensor host_gather(Args& a) {
  const HostTensor& x = a.h(0);
  const HostTensor& idx = a.h(1);
  const std::int64_t ax = norm_axis(a, a.attrs.i("axis", 0), static_cast<std::int64_t>(x.shape.size()));
  const std::int64_t n = x.shape[static_cast<std::size_t>(ax)];
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t d = 0; d < ax; ++d) outer *= x.shape[static_cast<std::size_t>(d)];
  for (std::size_t d = static_cast<std::size_t>(ax) + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  HostTensor r{x.elem, gather_out_shape(x.shape, ax, idx.shape), {}};
  for (std::int64_t o = 0; o < outer; ++o)
    for (double iv : idx.v) {
      std::int64_t i = static_cast<std::int64_t>(iv);
      if (i < 0) i += n;
      if (i < 0 || i >= n)
        a.fail("Gather index " + std::to_string(static_cast<std::int64_t>(iv)) + " out of range [" +
               std::to_string(-n) + ", " + std::to_string(n) + ")");
      const auto base = x.v.begin() + (o * n + i) * inner;
      r.v.insert(r.v.end(), base, base + inner);
    }
  return r;
}

HostTensor host_slice(Args& a) {
  HostTensor x = a.h(0);
  for (const auto& sp : slice_specs(a, x.shape)) {
    // The selected positions along sp.axis (flipped back for negative steps).
    const std::int64_t n = x.shape[static_cast<std::size_t>(sp.axis)];
    I64s pos;
    for (std::int64_t i = sp.start; i < sp.end; i += sp.step) pos.push_back(i);
    std::int64_t outer = 1, inner = 1;
    for (std::int64_t d = 0; d < sp.axis; ++d) outer *= x.shape[static_cast<std::size_t>(d)];
    for (std::size_t d = static_cast<std::size_t>(sp.axis) + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
    HostTensor r{x.elem, x.shape, {}};
    r.shape[static_cast<std::size_t>(sp.axis)] = static_cast<std::int64_t>(pos.size());
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t p : pos) {
        const std::int64_t src = sp.flipped ? n - 1 - p : p;
        const auto base = x.v.begin() + (o * n + src) * inner;
        r.v.insert(r.v.end(), base, base + inner);
      }
    x = std::move(r);
  }
  return x;
}

Ts gpu_slice(Args& a) {
  Tensor r = a.t(0);
  for (const auto& sp : slice_specs(a, r.shape())) {
    if (sp.flipped) r = flip(r, {sp.axis});
    r = r.slice(sp.axis, sp.start, sp.end, sp.step);
  }
  return Ts{r.contiguous()};
}

Ts gpu_pad(Args& a) {
  const Tensor& x = a.t(0);
  const std::int64_t r = x.dim();
  I64s p;
  std::string mode = a.attrs.s("mode", "constant");
  double value = 0;
  if (a.opset < 11) {
    p = a.attrs.ints("pads");
    value = a.attrs.f("value", 0.0);
  } else {
    p = a.ints(1);
    if (a.present(2) && a.h(2).numel()) value = a.h(2).v[0];
  }
  I64s axes(static_cast<std::size_t>(r));
  std::iota(axes.begin(), axes.end(), 0);
  if (a.present(3)) {
    axes = a.ints(3);
    for (auto& ax : axes) ax = norm_axis(a, ax, r);
  }
  const std::size_t na = axes.size();
  if (p.size() != 2 * na)
    a.fail("pads has " + std::to_string(p.size()) + " values for " + std::to_string(na) + " axes");
  I64s full(2 * static_cast<std::size_t>(r), 0);
  for (std::size_t i = 0; i < na; ++i) {
    full[static_cast<std::size_t>(axes[i])] = p[i];
    full[static_cast<std::size_t>(axes[i] + r)] = p[i + na];
  }
  I64s pads;  // torch order: last dim first
  for (std::int64_t d = r - 1; d >= 0; --d) {
    pads.push_back(full[static_cast<std::size_t>(d)]);
    pads.push_back(full[static_cast<std::size_t>(d + r)]);
  }
  if (mode == "wrap") {  // Pad-19: negative pads crop first, then out[i] = x[(i - lo) mod n] per dim
    Tensor y = x;
    for (std::int64_t d = 0; d < r; ++d) {
      std::int64_t lo = full[static_cast<std::size_t>(d)], hi = full[static_cast<std::size_t>(d + r)];
      if (lo < 0 || hi < 0) {
        const std::int64_t b = std::max<std::int64_t>(-lo, 0), e = y.size(d) - std::max<std::int64_t>(-hi, 0);
        if (e < b)
          a.fail("pads " + to_string(p) + " crop more than dim " + std::to_string(d) + " of " + to_string(x.shape()));
        y = y.slice(d, b, e);
        lo = std::max<std::int64_t>(lo, 0);
        hi = std::max<std::int64_t>(hi, 0);
      }
      const std::int64_t n = y.size(d);
      if (lo == 0 && hi == 0) continue;
      if (n == 0) a.fail("wrap padding of an empty dim of " + to_string(x.shape()));
      std::vector<std::int32_t> idx(static_cast<std::size_t>(n + lo + hi));
      for (std::int64_t i = 0; i < n + lo + hi; ++i)
        idx[static_cast<std::size_t>(i)] = static_cast<std::int32_t>((((i - lo) % n) + n) % n);
      y = index_select(y, d, Tensor::from_host(a.dev, std::span<const std::int32_t>(idx), {n + lo + hi}));
    }
    return Ts{y.contiguous()};
  }
  const PadMode pm = mode == "reflect" ? PadMode::reflect : mode == "edge" ? PadMode::replicate : PadMode::constant;
  return Ts{pad(x, pads, pm, value)};
}

detail::ScatterReduce scatter_reduction(const std::string& r) {
  using R = detail::ScatterReduce;
  return r == "add" ? R::sum : r == "mul" ? R::prod : r == "max" ? R::max : R::min;
}

void check_scatter_reduction(const CheckCtx& c) {
  const std::string r = c.attrs().s("reduction", "none");
  if (r != "none" && r != "add" && r != "mul" && r != "max" && r != "min")
    c.fail_attr("reduction", "expected none, add, mul, max or min");
  if ((r == "max" || r == "min") && c.opset() < 18) c.fail_attr("reduction", "max and min need opset 18");
}

// A scatter with a reduction on float32 or int32 (16-bit floats go through float32).
Tensor scatter_with(const Tensor& x, std::int64_t dim, const Tensor& idx, const Tensor& src, const std::string& r) {
  if (r == "none") return scatter(x, dim, idx, src);
  const DType dt = x.dtype(), work = is_floating(dt) ? DType::f32 : DType::i32;
  Tensor y = detail::scatter_reduce(x.to(work), dim, idx, src.to(work), scatter_reduction(r));
  return y.dtype() == dt ? y : y.to(dt);
}

// Row-major offsets [u] (int32) of index rows [u, k] into dims (negative indices count from
// the end; a row with a component out of range gets 2^30): ScatterND's and GatherND's rows.
Tensor nd_offsets(Args& a, const Tensor& rows, const Shape& dims) {
  const std::int64_t k = static_cast<std::int64_t>(dims.size());
  std::vector<std::int32_t> dv, sv(dims.size());
  std::int64_t acc = 1;
  for (std::int64_t d = k; d-- > 0;) {
    sv[static_cast<std::size_t>(d)] = static_cast<std::int32_t>(acc);
    acc *= dims[static_cast<std::size_t>(d)];
  }
  for (auto d : dims) dv.push_back(static_cast<std::int32_t>(d));
  Tensor dt = Tensor::from_host(a.dev, std::span<const std::int32_t>(dv), {1, k});
  Tensor st = Tensor::from_host(a.dev, std::span<const std::int32_t>(sv), {1, k});
  Tensor i2 = where(lt(rows, 0.0), add(rows, dt), rows);
  Tensor lin = sum(mul(i2, st), {1}, false).to(DType::i32);
  // A component outside its dim would still give another row's offset: such rows get one past
  // any buffer (2^30), so that the gather or scatter raises its IndexError at the next read.
  Tensor bad = sum(logical_or(lt(i2, 0.0), ge(i2, dt)).to(DType::i32), {1}, false);
  return where(gt(bad, 0.0), full_like(lin, 1 << 30), lin).to(DType::i32);
}

// ScatterND: data [d0, ..., d(r-1)], indices [..., k], updates [..., dk, ..., d(r-1)]: each index
// row selects a slice of data's last r - k dims, which the matching update slice replaces (or
// combines with). As a scatter along dim 0 of data viewed as [d0 * ... * d(k-1), rest].
Ts run_scatter_nd(Args& a) {
  const Tensor& x = a.t(0);
  Tensor idx = a.t(1).to(DType::i32);
  const Shape xs = x.shape(), is = idx.shape();
  if (is.empty()) a.fail("ScatterND indices must have at least one dim");
  const std::int64_t k = is.back(), r = x.dim();
  if (k < 1 || k > r)
    a.fail("ScatterND index rows of length " + std::to_string(k) + " for data of rank " + std::to_string(r));
  std::int64_t rows = 1, rest = 1, u = 1;
  for (std::int64_t d = 0; d < k; ++d) rows *= xs[static_cast<std::size_t>(d)];
  for (std::int64_t d = k; d < r; ++d) rest *= xs[static_cast<std::size_t>(d)];
  for (std::size_t d = 0; d + 1 < is.size(); ++d) u *= is[d];
  Shape us(is.begin(), is.end() - 1);
  us.insert(us.end(), xs.begin() + k, xs.end());
  if (a.shape(2) != us) a.fail("ScatterND updates " + to_string(a.shape(2)) + ", expected " + to_string(us));
  Tensor lin = nd_offsets(a, idx.reshape({u, k}), Shape(xs.begin(), xs.begin() + k)).reshape({u, 1});
  Tensor y = scatter_with(x.reshape({rows, rest}), 0, lin.expand({u, rest}).contiguous(), a.t(2).reshape({u, rest}),
                          a.attrs.s("reduction", "none"));
  return Ts{y.reshape(xs)};
}

// GatherND (11; 12: batch_dims): data [b..., d..., rest...], indices [b..., u..., k] (k index
// values into the k dims after the b batch dims) -> [b..., u..., rest...]: per batch row, the
// rows of data flattened to [prod(d), prod(rest)] at the indices' row-major offsets, one
// index_select over all batches (each batch's offsets shifted by its rows).
Ts run_gather_nd(Args& a) {
  const Tensor& x = a.t(0);
  const Shape xs = x.shape(), is = a.shape(1);
  const std::int64_t b = a.attrs.i("batch_dims", 0), r = x.dim(), q = static_cast<std::int64_t>(is.size());
  if (q < 1 || b < 0 || b >= std::min(q, r))
    a.fail("batch_dims " + std::to_string(b) + " for data " + to_string(xs) + " and indices " + to_string(is) +
           ": expected 0 <= batch_dims < min(ranks)");
  const std::int64_t k = is.back();
  if (k < 1 || k > r - b)
    a.fail("index rows of length " + std::to_string(k) + " for data " + to_string(xs) + " with batch_dims " +
           std::to_string(b));
  for (std::int64_t d = 0; d < b; ++d)
    if (xs[static_cast<std::size_t>(d)] != is[static_cast<std::size_t>(d)])
      a.fail("data " + to_string(xs) + " and indices " + to_string(is) + " differ in the batch dims");
  std::int64_t nb = 1, rows = 1, rest = 1, u = 1;
  for (std::int64_t d = 0; d < b; ++d) nb *= xs[static_cast<std::size_t>(d)];
  for (std::int64_t d = b; d < b + k; ++d) rows *= xs[static_cast<std::size_t>(d)];
  for (std::int64_t d = b + k; d < r; ++d) rest *= xs[static_cast<std::size_t>(d)];
  for (std::int64_t d = b; d + 1 < q; ++d) u *= is[static_cast<std::size_t>(d)];
  Shape out(is.begin(), is.end() - 1);
  out.insert(out.end(), xs.begin() + b + k, xs.end());
  if (nb * u * rest == 0) return Ts{full(a.dev, out, 0.0, x.dtype())};
  if (rows == 0) a.fail("indices into empty dims of data " + to_string(xs));
  Tensor lin =
      nd_offsets(a, a.t(1).to(DType::i32).reshape({nb * u, k}), Shape(xs.begin() + b, xs.begin() + b + k));  // [nb * u]
  if (nb > 1)
    lin = add(lin.reshape({nb, u}),
              mul(arange(a.dev, static_cast<double>(nb), DType::i32).reshape({nb, 1}), static_cast<double>(rows)))
              .reshape({nb * u});
  return Ts{index_select(x.reshape({nb * rows, rest}), 0, lin).reshape(out)};
}

// OneHot (9, 11): indices (any numeric type; floats truncated, as the spec says; negative ones
// count from depth from OneHot-11 on, before it they are out of range) -> values[1] where the position along `axis` (a
// new dim of size depth) equals the index, else values[0]; indices outside [-depth, depth - 1] give a row of values[0]
// (the spec and ONNX Runtime; ONNX's reference wraps them modulo depth instead).
Ts run_one_hot(Args& a) {
  const Tensor& ind = a.t(0);
  const HostTensor& dh = a.h(1);
  if (dh.numel() != 1) a.fail("depth must have one element, got " + to_string(dh.shape));
  const std::int64_t depth = static_cast<std::int64_t>(dh.v[0]);
  if (depth <= 0) a.fail("depth " + std::to_string(depth) + " must be positive");
  const Tensor& vals = a.t(2);
  if (vals.numel() != 2) a.fail("values must hold 2 elements (off, on), got " + to_string(vals.shape()));
  const std::int64_t r = ind.dim() + 1, axis = norm_axis(a, a.attrs.i("axis", -1), r);
  // Float indices past int32 are clamped to its range first (still outside [-depth, depth - 1]),
  // NaN to its lower end (fmax: a row of off values, as ONNX Runtime gives), never cast as they
  // are: a cast out of range or of NaN is undefined in GLSL (2^32 + 512 may wrap to 512, NaN be 0
  // on NVIDIA's). Int64 ones past it fail naming the node where they are uploaded (Args::t).
  Tensor idx = is_floating(ind.dtype()) ? fmin(fmax(ind.to(DType::f32), -2147483648.0), 2147483520.0).to(DType::i32)
                                        : ind.to(DType::i32);
  if (a.opset >= 11) idx = where(lt(idx, 0.0), add(idx, static_cast<double>(depth)), idx);  // 9: off rows
  Shape is = ind.shape(), ts(static_cast<std::size_t>(r), 1);
  is.insert(is.begin() + axis, 1);
  ts[static_cast<std::size_t>(axis)] = depth;
  Tensor hit = eq(idx.reshape(is), arange(a.dev, static_cast<double>(depth), DType::i32).reshape(ts));
  const Tensor v = vals.reshape({2});
  return Ts{where(hit, v.slice(0, 1, 2), v.slice(0, 0, 1))};
}

// ReverseSequence (10): x [T, B, ...] (time_axis 0, batch_axis 1) or [B, T, ...] (1, 0); the
// first sequence_lens[b] steps of batch b reversed, the rest kept (lengths clamped to [0, T]):
// a gather along time of index t < len ? len - 1 - t : t.
Ts run_reverse_sequence(Args& a) {
  const Tensor& x = a.t(0);
  const std::int64_t ta = a.attrs.i("time_axis", 0), ba = a.attrs.i("batch_axis", 1);
  if (x.dim() < 2) a.fail("ReverseSequence expects rank >= 2, got " + to_string(x.shape()));
  const std::int64_t T = x.size(ta), B = x.size(ba);
  if (a.shape(1) != Shape{B})
    a.fail("sequence_lens " + to_string(a.shape(1)) + " for " + std::to_string(B) + " batch rows");
  if (x.numel() == 0) return Ts{x};
  Shape ls{1, 1}, tsh{1, 1};
  ls[static_cast<std::size_t>(ba)] = B;
  tsh[static_cast<std::size_t>(ta)] = T;
  Tensor len = maximum(minimum(a.t(1).to(DType::i32), static_cast<double>(T)), 0.0).reshape(ls);
  Tensor t = arange(a.dev, static_cast<double>(T), DType::i32).reshape(tsh);
  Tensor idx = where(lt(t, len), sub(sub(len, 1.0), t), t);  // [T, B] or [B, T]
  Shape s2 = idx.shape();
  s2.resize(static_cast<std::size_t>(x.dim()), 1);
  return Ts{gather(x, ta, idx.reshape(s2).expand(x.shape()).contiguous())};
}

// CenterCropPad: crops (centered, the extra element at the end) or zero-pads (centered, the
// extra element at the end) each of `axes` (all by default) to the given shape.
Ts run_center_crop_pad(Args& a) {
  const Tensor& x = a.t(0);
  const std::int64_t r = x.dim();
  const I64s want = a.ints(1);
  I64s axes = a.attrs.ints("axes");
  if (axes.empty()) {
    axes.resize(static_cast<std::size_t>(r));
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (want.size() != axes.size())
    a.fail("shape " + to_string(want) + " has " + std::to_string(want.size()) + " values for " +
           std::to_string(axes.size()) + " axes");
  I64s pads(2 * static_cast<std::size_t>(r), 0);  // torch order: last dim first
  Tensor y = x;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const std::int64_t d = norm_axis(a, axes[i], r), n = x.size(d), t = want[i];
    if (t < 0) a.fail("CenterCropPad to a negative size " + to_string(want));
    const std::int64_t lo = std::abs(n - t) / 2;
    if (t < n) y = y.slice(d, lo, lo + t);
    const std::size_t p = 2 * static_cast<std::size_t>(r - 1 - d);
    if (t > n) {
      pads[p] = lo;
      pads[p + 1] = t - n - lo;
    }
  }
  return Ts{pad(y.contiguous(), pads)};
}

HostTensor host_range(Args& a) {
  const double s = a.h(0).v.at(0), l = a.h(1).v.at(0), d = a.h(2).v.at(0);
  if (d == 0) a.fail("Range with delta 0");
  const std::int64_t n = std::max<std::int64_t>(0, static_cast<std::int64_t>(std::ceil((l - s) / d)));
  HostTensor r{a.elem(0), {n}, {}};
  for (std::int64_t i = 0; i < n; ++i) r.v.push_back(s + static_cast<double>(i) * d);
  host_round(r);
  return r;
}

HostTensor constant_value(Args& a) {
  const Attrs& t = a.attrs;
  if (const Attr* v = t.get("value")) return *v->t;
  if (t.has("value_float")) return HostTensor::scalar(t.f("value_float", 0), kFloat);
  if (t.has("value_int")) return HostTensor::scalar(static_cast<double>(t.i("value_int", 0)), kInt64);
  if (t.has("value_ints")) return HostTensor::vector(t.ints("value_ints"));
  HostTensor r{kFloat, {}, t.floats("value_floats")};
  r.shape = {r.numel()};
  return r;
}

int constant_elem(const Attrs& t) {
  if (const Attr* v = t.get("value")) return v->t ? v->t->elem : kUndefined;
  if (t.has("value_int") || t.has("value_ints")) return kInt64;
  return kFloat;
}

}  // namespace

void register_shape_ops(Registry& m) {
  m["Shape"] = OpDef{{"start", "end"},
                     nullptr,
                     [](const CheckCtx&) { return of(kInt64); },
                     nullptr,
                     [](Args& a) {
                       const Shape s = a.shape(0);
                       const std::int64_t r = static_cast<std::int64_t>(s.size());
                       std::int64_t b = a.attrs.i("start", 0), e = a.attrs.i("end", r);
                       b = std::clamp<std::int64_t>(b < 0 ? b + r : b, 0, r);
                       e = std::clamp<std::int64_t>(e < 0 ? e + r : e, 0, r);
                       return Hs{HostTensor::vector(I64s(s.begin() + b, s.begin() + std::max(b, e)))};
                     },
                     true};
  m["Size"] = OpDef{{},
                    nullptr,
                    [](const CheckCtx&) { return of(kInt64); },
                    nullptr,
                    [](Args& a) { return Hs{HostTensor::scalar(static_cast<double>(numel_of(a.shape(0))), kInt64)}; },
                    true};
  m["Reshape"] = OpDef{{"allowzero"},
                       nullptr,
                       nullptr,
                       [](Args& a) { return Ts{a.t(0).reshape(reshape_target(a, a.shape(0)))}; },
                       [](Args& a) { return Hs{reshaped(a.h(0), reshape_target(a, a.shape(0)))}; }};
  m["Flatten"] = OpDef{{"axis"},
                       nullptr,
                       nullptr,
                       [](Args& a) { return Ts{a.t(0).reshape(flatten_target(a, a.shape(0)))}; },
                       [](Args& a) { return Hs{reshaped(a.h(0), flatten_target(a, a.shape(0)))}; }};
  m["Squeeze"] = OpDef{{"axes"},
                       nullptr,
                       nullptr,
                       [](Args& a) { return Ts{a.t(0).reshape(squeeze_target(a, a.shape(0)))}; },
                       [](Args& a) { return Hs{reshaped(a.h(0), squeeze_target(a, a.shape(0)))}; }};
  m["Unsqueeze"] = OpDef{{"axes"},
                         nullptr,
                         nullptr,
                         [](Args& a) { return Ts{a.t(0).reshape(unsqueeze_target(a, a.shape(0)))}; },
                         [](Args& a) { return Hs{reshaped(a.h(0), unsqueeze_target(a, a.shape(0)))}; }};
  m["Transpose"] = OpDef{{"perm"},
                         nullptr,
                         nullptr,
                         [](Args& a) {
                           const Tensor& x = a.t(0);
                           return Ts{x.permute(transpose_perm(a, x.dim())).contiguous()};
                         },
                         [](Args& a) {
                           const HostTensor& x = a.h(0);
                           return Hs{host_permute(x, transpose_perm(a, static_cast<std::int64_t>(x.shape.size())))};
                         }};
  m["Concat"] = OpDef{{"axis"},
                      nullptr,
                      nullptr,
                      [](Args& a) {
                        Ts xs;
                        for (std::size_t i = 0; i < a.size(); ++i)
                          if (a.present(i)) xs.push_back(a.t(i));
                        return Ts{concat(xs, a.attrs.i("axis", 0))};
                      },
                      [](Args& a) { return Hs{host_concat(a)}; }};
  m["Split"] =
      OpDef{{"axis", "split", "num_outputs"},
            [](const CheckCtx& c) {
              if (!c.attrs().has("num_outputs")) return;
              if (c.opset() < 18) c.fail_attr("num_outputs", "an attribute only from opset 18");
              if (c.has_input(1)) c.fail_attr("num_outputs", "given with the split input");
              if (c.attrs().i("num_outputs", 0) != static_cast<std::int64_t>(c.n.outputs.size()))
                c.fail_attr("num_outputs", "the node has " + std::to_string(c.n.outputs.size()) + " outputs");
            },
            [](const CheckCtx& c) { return std::vector<int>(c.n.outputs.size(), c.elem(0)); },
            [](Args& a) {
              const Tensor& x = a.t(0);
              const std::int64_t axis = norm_axis(a, a.attrs.i("axis", 0), x.dim());
              I64s sizes = a.attrs.ints("split");
              if (a.present(1)) sizes = a.ints(1);
              Ts parts;
              if (!sizes.empty()) {
                parts = split(x, sizes, axis);
              } else {
                // Split-18 num_outputs, or as many parts as outputs: ceil(size / n) each,
                // the last one smaller.
                const std::int64_t n = a.attrs.i("num_outputs", static_cast<std::int64_t>(a.n_outputs()));
                parts = split(x, std::max<std::int64_t>((x.size(axis) + n - 1) / n, 1), axis);
                if (static_cast<std::int64_t>(parts.size()) != n)
                  a.fail("dim " + std::to_string(axis) + " of " + to_string(x.shape()) + " does not split into " +
                         std::to_string(n) + " parts of ceil(size / " + std::to_string(n) + ")");
              }
              for (auto& p : parts) p = p.contiguous();
              return parts;
            }};
  m["Slice"] =
      OpDef{{"starts", "ends", "axes"}, nullptr, nullptr, gpu_slice, [](Args& a) { return Hs{host_slice(a)}; }};
  m["Gather"] = OpDef{
      {"axis"},
      nullptr,
      nullptr,
      [](Args& a) {
        const Tensor& x = a.t(0);
        const std::int64_t axis = norm_axis(a, a.attrs.i("axis", 0), x.dim());
        Tensor idx = a.t(1);
        const Shape is = idx.shape();
        // negative indices count from the end
        Tensor fixed = where(lt(idx, 0.0), add(idx, static_cast<double>(x.size(axis))), idx);
        return Ts{
            index_select(x, axis, fixed.reshape({-1}).to(DType::i32)).reshape(gather_out_shape(x.shape(), axis, is))};
      },
      [](Args& a) { return Hs{host_gather(a)}; }};
  m["GatherElements"] = OpDef{{"axis"}, nullptr, nullptr, [](Args& a) {
                                const Tensor& x = a.t(0);
                                const std::int64_t axis = norm_axis(a, a.attrs.i("axis", 0), x.dim());
                                Tensor idx = a.t(1);
                                idx = where(lt(idx, 0.0), add(idx, static_cast<double>(x.size(axis))), idx);
                                return Ts{gather(x, axis, idx.to(DType::i32))};
                              }};
  m["ScatterElements"] = OpDef{{"axis", "reduction"}, check_scatter_reduction, nullptr, [](Args& a) {
                                 const std::int64_t axis = norm_axis(a, a.attrs.i("axis", 0), a.t(0).dim());
                                 return Ts{scatter_with(a.t(0), axis, a.t(1), a.t(2), a.attrs.s("reduction", "none"))};
                               }};
  m["ScatterElements"].versions = {18};
  m["Scatter"] = OpDef{{"axis"}, nullptr, nullptr, [](Args& a) {  // opsets 9-10: ScatterElements' old name
                         const std::int64_t axis = norm_axis(a, a.attrs.i("axis", 0), a.t(0).dim());
                         return Ts{scatter(a.t(0), axis, a.t(1), a.t(2))};
                       }};
  m["ScatterND"] = OpDef{{"reduction"}, check_scatter_reduction, nullptr, run_scatter_nd};
  m["ScatterND"].versions = {18};
  m["GatherND"] = OpDef{{"batch_dims"}, nullptr, nullptr, run_gather_nd};
  m["OneHot"] = OpDef{{"axis"}, nullptr, [](const CheckCtx& c) { return of(c.elem(2)); }, run_one_hot};
  m["ReverseSequence"] =
      OpDef{{"batch_axis", "time_axis"},
            [](const CheckCtx& c) {
              const std::int64_t t = c.attrs().i("time_axis", 0), b = c.attrs().i("batch_axis", 1);
              if ((t != 0 && t != 1) || (b != 0 && b != 1) || t == b)
                c.fail_attr("time_axis", "with batch_axis=" + std::to_string(b) + ": expected 0 and 1 or 1 and 0");
            },
            nullptr,
            run_reverse_sequence};
  m["CenterCropPad"] = OpDef{{"axes"}, nullptr, nullptr, run_center_crop_pad};
  m["CenterCropPad"].versions = {18};
  m["Tile"] = OpDef{{},
                    [](const CheckCtx& c) {
                      if (c.opset() < 6) c.fail("Tile before opset 6 (tiles, axis inputs) is not supported");
                    },
                    nullptr,
                    [](Args& a) { return Ts{tile(a.t(0), a.ints(1))}; }};
  m["Expand"] = OpDef{{},
                      nullptr,
                      nullptr,
                      [](Args& a) {
                        const Shape out = broadcast_host(a, a.shape(0), a.ints(1));
                        return Ts{a.t(0).expand(out).contiguous()};
                      },
                      [](Args& a) {
                        HostTensor z{a.elem(0), a.ints(1), {}};
                        z.v.assign(static_cast<std::size_t>(numel_of(z.shape)), 0.0);
                        return Hs{host_map2(a, a.h(0), z, a.elem(0), [](double x, double) { return x; })};
                      }};
  m["Pad"] = OpDef{{"mode", "pads", "value"},
                   [](const CheckCtx& c) {
                     const std::string mode = c.attrs().s("mode", "constant");
                     if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
                       c.fail_attr("mode", "expected constant, reflect, edge or wrap");
                     if (mode == "wrap" && c.opset() < 19) c.fail_attr("mode", "wrap needs opset 19");
                     if (c.has_input(3) && c.opset() < 18) c.fail("the axes input of Pad needs opset 18");
                   },
                   nullptr,
                   gpu_pad};
  m["Pad"].versions = {18, 19, 21};
  m["Trilu"] = OpDef{{"upper"}, nullptr, nullptr, [](Args& a) {
                       const std::int64_t k = a.present(1) ? a.ints(1).at(0) : 0;
                       return Ts{a.attrs.i("upper", 1) ? triu(a.t(0), k) : tril(a.t(0), k)};
                     }};
  m["TopK"] = OpDef{{"axis", "largest", "sorted", "k"},
                    [](const CheckCtx& c) {
                      c.need_float(0);
                      if (c.attrs().i("sorted", 1) == 0) c.fail_attr("sorted", "unsorted TopK is not supported");
                    },
                    [](const CheckCtx& c) {
                      return std::vector<int>{c.elem(0), kInt64};
                    },
                    [](Args& a) {
                      const Tensor& x = a.t(0);
                      const std::int64_t axis = norm_axis(a, a.attrs.i("axis", -1), x.dim());
                      const std::int64_t k = a.opset < 10 ? a.attrs.i("k", 1) : a.ints(1).at(0);
                      const bool last = axis == x.dim() - 1;
                      Tensor xt = last ? x : x.transpose(axis, -1).contiguous();
                      auto r = topk(xt, k, a.attrs.i("largest", 1) != 0);
                      if (last) return Ts{r.values, r.indices};
                      return Ts{r.values.transpose(axis, -1).contiguous(), r.indices.transpose(axis, -1).contiguous()};
                    }};
  m["Range"] = OpDef{{},
                     nullptr,
                     nullptr,
                     [](Args& a) {
                       HostTensor h = host_range(a);
                       return Ts{h.upload(a.dev)};
                     },
                     [](Args& a) { return Hs{host_range(a)}; }};
  m["ConstantOfShape"] =
      OpDef{{"value"},
            [](const CheckCtx& c) {
              if (const Attr* v = c.attrs().get("value"))
                if (!v->t) c.fail_attr("value", v->t_error);
            },
            [](const CheckCtx& c) {
              const Attr* v = c.attrs().get("value");
              return of(v && v->t ? v->t->elem : kFloat);
            },
            [](Args& a) {
              const Attr* v = a.attrs.get("value");
              const double x = v && v->t && v->t->numel() ? v->t->v[0] : 0.0;
              const int e = v && v->t ? v->t->elem : kFloat;
              return Ts{full(a.dev, a.ints(0), x, elem_dtype(e))};
            },
            [](Args& a) {
              const Attr* v = a.attrs.get("value");
              HostTensor r{v && v->t ? v->t->elem : kFloat, a.ints(0), {}};
              r.v.assign(static_cast<std::size_t>(numel_of(r.shape)), v && v->t && v->t->numel() ? v->t->v[0] : 0.0);
              return Hs{r};
            }};
  m["Constant"] = OpDef{{"value", "value_float", "value_floats", "value_int", "value_ints"},
                        [](const CheckCtx& c) {
                          if (const Attr* v = c.attrs().get("value"))
                            if (!v->t) c.fail_attr("value", v->t_error.empty() ? "unsupported tensor" : v->t_error);
                          if (c.attrs().all().empty()) c.fail("Constant without a value");
                        },
                        [](const CheckCtx& c) { return of(constant_elem(c.attrs())); },
                        [](Args& a) { return Ts{constant_value(a).upload(a.dev)}; },
                        [](Args& a) { return Hs{constant_value(a)}; }};
  m["EyeLike"] = OpDef{{"dtype", "k"},
                       [](const CheckCtx& c) {
                         if (c.attrs().has("dtype") && !elem_supported(static_cast<int>(c.attrs().i("dtype", 1))))
                           c.fail_attr("dtype", "not supported");
                       },
                       [](const CheckCtx& c) {
                         return of(c.attrs().has("dtype") ? static_cast<int>(c.attrs().i("dtype", 1)) : c.elem(0));
                       },
                       [](Args& a) {
                         const Shape s = a.shape(0);
                         if (s.size() != 2) a.fail("EyeLike expects a 2-D input");
                         const int e = a.attrs.has("dtype") ? static_cast<int>(a.attrs.i("dtype", 1)) : a.elem(0);
                         Tensor r = arange(a.dev, static_cast<double>(s[0]), DType::i32).view({s[0], 1});
                         Tensor c = arange(a.dev, static_cast<double>(s[1]), DType::i32).view({1, s[1]});
                         return Ts{eq(add(r, static_cast<double>(a.attrs.i("k", 0))), c).to(elem_dtype(e))};
                       }};
  // Versions 18-21 that only add dtypes (float8, int4, ...), which stay refused by dtype.
  for (const char* op : {"Shape", "Size", "Reshape", "Constant"}) m[op].versions = {19, 21};
  for (const char* op : {"Flatten", "Squeeze", "Unsqueeze", "Transpose"}) m[op].versions = {21};
  m["ConstantOfShape"].versions = {20, 21};
  m["Split"].versions = {18};
}

}  // namespace gltensor::model
