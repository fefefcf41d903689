// concat/stack/split/chunk, pad, repeat/tile, flip/roll, gather/index_select/scatter(_add),
// embedding, one_hot, tril/triu.
#include "ops/index.hpp"

#include <algorithm>
#include <numeric>

#include "autograd/recording.hpp"
#include "gltensor/autograd.hpp"
#include "gltensor/indexing.hpp"
#include "gltensor/ops.hpp"
#include "ops/data_variants.hpp"
#include "runtime/error_flags.hpp"
#include "runtime/launch.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {
using namespace detail;

namespace {

Tensor index_from_host(const Device& dev, const std::vector<std::int32_t>& v) {
  return Tensor::from_host(dev, std::span<const std::int32_t>(v), {static_cast<std::int64_t>(v.size())});
}

Tensor as_index(const char* op, const Tensor& index) {
  check_defined(op, index, "index");
  if (is_floating(index.dtype()))
    throw DTypeError(std::string("gltensor::") + op + ": index must be an integer tensor, got " +
                     dtype_name(index.dtype()));
  return index.dtype() == DType::i32 ? index : index.to(DType::i32);
}

// Uniforms of glsl/ops/index.comp: the iteration space (index's shape) and the strides of the
// index and of the operands indexed by position (p_op) and by position with dim replaced (dim_op).
struct IndexParams {
  std::int64_t count, dim_size;
  std::vector<std::uint32_t> shape, st_idx, st_src, st_dst;
  std::int64_t off_idx, off_src, off_dst;
  void set(Uniforms& u) const {
    u.u32("u_count", count);
    u.u32s("u_shape", shape);
    u.u32s("u_st_idx", st_idx);
    u.u32s("u_st_src", st_src);
    u.u32s("u_st_dst", st_dst);
    u.u32("u_off_idx", off_idx);
    u.u32("u_off_src", off_src);
    u.u32("u_off_dst", off_dst);
    u.i32("u_dim_size", dim_size);
  }
};

// Runs index.comp over the elements of `index` (already shaped like the iteration space).
// gather: `p_op` = out (indexed by p), `dim_op` = x (indexed by p[dim := index]).
// scatter: `p_op` = src, `dim_op` = out. wrap_negative = false: class indices, valid in [0, size) only.
void launch_index(const char* op, IndexMode mode, const Tensor& out, const Tensor& in, const Tensor& index,
                  const Tensor& p_op, const Tensor& dim_op, std::int64_t dim, bool wrap_negative = true) {
  DeviceImpl& dev = dev_of(out);
  const std::int64_t n = index.numel();
  if (n == 0) return;
  Launch launch(dev, op);
  const std::int64_t nd = std::max<std::int64_t>(index.dim(), 1);
  auto vec = [&](const Tensor& t) {
    std::vector<std::uint32_t> v(static_cast<std::size_t>(nd), 0);
    for (std::int64_t d = 0; d < t.dim(); ++d) v[d] = static_cast<std::uint32_t>(t.strides()[d]);
    return v;
  };
  std::vector<std::uint32_t> shape(static_cast<std::size_t>(nd), 1);
  for (std::int64_t d = 0; d < index.dim(); ++d) shape[d] = static_cast<std::uint32_t>(index.shape()[d]);
  IndexVariant v;
  v.mode = mode, v.ndim = static_cast<int>(nd), v.dim = dim, v.wrap_negative = wrap_negative;
  v.out = out.dtype(), v.in = in.dtype();
  v.atomic_float = mode == IndexMode::scatter_add && out.dtype() == DType::f32 && dev.float_atomic_add();
  ErrorFlags& flags = dev.extension<ErrorFlags>();
  launch.program(v.kFile, v.defines(), {256}).write(out).read(in).read(index).bind(flags.storage(dev), true);
  const IndexParams params{n,
                           dim_op.dim() == 0 ? 1 : dim_op.shape()[dim],
                           shape,
                           vec(index),
                           vec(p_op),
                           vec(dim_op),
                           index.offset(),
                           p_op.offset(),
                           dim_op.offset()};
  // Loops: the position's dims; a float atomic add's retries are not counted.
  launch.params(params).loop_iterations(static_cast<std::uint64_t>(nd) + 1).invocations(static_cast<std::uint64_t>(n));
  flags.expect(dev, op, ErrorFlags::kIndex);
}

void check_index_shape(const char* op, const Tensor& x, const Tensor& index, std::int64_t dim) {
  if (index.dim() != x.dim())
    throw ShapeError(std::string("gltensor::") + op + ": index " + to_string(index.shape()) +
                     " must have as many dims as input " + to_string(x.shape()));
  for (std::int64_t d = 0; d < x.dim(); ++d)
    if (d != dim && index.shape()[d] > x.shape()[d])
      throw ShapeError(std::string("gltensor::") + op + ": index " + to_string(index.shape()) +
                       " is larger than input " + to_string(x.shape()) + " in dim " + std::to_string(d));
}

}  // namespace

Tensor gather(const Tensor& x, std::int64_t dim, const Tensor& index_in) {
  check_same_device("gather", {&x, &index_in});
  DeviceImpl& dev = dev_of(x);
  Enter guard(dev, "gather");
  const Tensor index = as_index("gather", index_in);
  dim = wrap_dim("gather", dim, x.dim());
  check_index_shape("gather", x, index, dim);
  Tensor out = alloc(dev, index.shape(), x.dtype(), "gather");
  launch_index("gather", IndexMode::gather, out, x, index, out, x, dim);
  if (autograd::any_requires_grad({&x})) {
    const Shape xs = x.shape();
    autograd::record(
        out, {x},
        [xs, dim, index](const Tensor& g) {
          return std::vector<Tensor>{scatter_add(zeros(g.device(), xs), dim, index, g.to(DType::f32))};
        },
        "gather");
  }
  return out;
}

Tensor detail::gather_classes(const char* op, const Tensor& x, std::int64_t dim, const Tensor& index_in) {
  check_same_device(op, {&x, &index_in});
  DeviceImpl& dev = dev_of(x);
  Enter guard(dev, op);
  const Tensor index = as_index(op, index_in);
  dim = wrap_dim(op, dim, x.dim());
  check_index_shape(op, x, index, dim);
  Tensor out = alloc(dev, index.shape(), x.dtype(), op);
  launch_index(op, IndexMode::gather, out, x, index, out, x, dim, false);
  return out;
}

Tensor index_select(const Tensor& x, std::int64_t dim, const Tensor& index_in) {
  check_same_device("index_select", {&x, &index_in});
  DeviceImpl& dev = dev_of(x);
  Enter guard(dev, "index_select");
  const Tensor index = as_index("index_select", index_in);
  if (index.dim() > 1) throw ShapeError("gltensor::index_select: index must be 1-D, got " + to_string(index.shape()));
  dim = wrap_dim("index_select", dim, x.dim());
  const Tensor x1 = x.dim() == 0 ? x.reshape({1}) : x;
  Shape out_shape = x1.shape();
  out_shape[dim] = index.numel();
  Tensor out = alloc(dev, out_shape, x.dtype(), "index_select");
  // The 1-D index, viewed with x's dims: stride 0 everywhere but dim.
  Shape st(out_shape.size(), 0);
  st[dim] = index.dim() == 0 ? 0 : index.strides()[0];
  Tensor iv = make_view(index, out_shape, st, index.offset());
  launch_index("index_select", IndexMode::gather, out, x1, iv, out, x1, dim);
  if (autograd::any_requires_grad({&x})) {
    const Shape xs = x1.shape();
    autograd::record(
        out, {x1},
        [xs, dim, iv](const Tensor& g) {  // duplicates in the index add up
          return std::vector<Tensor>{scatter_add(zeros(g.device(), xs), dim, iv, g.to(DType::f32))};
        },
        "index_select");
  }
  return x.dim() == 0 ? out.reshape({}) : out;
}

static Tensor scatter_impl(const char* op, IndexMode mode, const Tensor& x, std::int64_t dim, const Tensor& index_in,
                           const Tensor& src) {
  check_same_device(op, {&x, &index_in, &src});
  DeviceImpl& dev = dev_of(x);
  Enter guard(dev, op);
  const Tensor index = as_index(op, index_in);
  dim = wrap_dim(op, dim, x.dim());
  check_index_shape(op, x, index, dim);
  for (std::int64_t d = 0; d < index.dim(); ++d)
    if (index.shape()[d] > src.size(d))
      throw ShapeError(std::string("gltensor::") + op + ": index " + to_string(index.shape()) + " is larger than src " +
                       to_string(src.shape()));
  if (mode != IndexMode::scatter && x.dtype() != DType::f32 && x.dtype() != DType::i32)
    throw DTypeError(std::string("gltensor::") + op + ": supports float32 and int32 outputs only, got " +
                     dtype_name(x.dtype()));
  if (!can_cast(src.dtype(), x.dtype()))
    throw DTypeError(std::string("gltensor::") + op + ": src dtype " + dtype_name(src.dtype()) +
                     " can't be cast to the output dtype " + dtype_name(x.dtype()));
  Tensor out = x.clone();
  const Tensor srcv = make_view(src, index.shape(), src.strides(), src.offset());  // src cropped to index's shape
  launch_index(op, mode, out, src, index, srcv, out, dim);
  grad_unsupported(op, {&x, &src}, out);
  return out;
}

Tensor scatter(const Tensor& x, std::int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_impl("scatter", IndexMode::scatter, x, dim, index, src);
}
Tensor scatter_add(const Tensor& x, std::int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_impl("scatter_add", IndexMode::scatter_add, x, dim, index, src);
}
Tensor detail::scatter_reduce(const Tensor& x, std::int64_t dim, const Tensor& index, const Tensor& src,
                              ScatterReduce red) {
  const IndexMode m = red == ScatterReduce::sum    ? IndexMode::scatter_add
                      : red == ScatterReduce::prod ? IndexMode::scatter_prod
                      : red == ScatterReduce::max  ? IndexMode::scatter_max
                                                   : IndexMode::scatter_min;
  return scatter_impl("scatter_reduce", m, x, dim, index, src);
}

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  check_same_device("embedding", {&weight, &indices});
  if (weight.dim() != 2)
    throw ShapeError("gltensor::embedding: weight must be 2-D [num, dim], got " + to_string(weight.shape()));
  Shape out_shape = indices.shape();
  out_shape.push_back(weight.size(1));
  return index_select(weight, 0, indices.reshape({-1})).view(out_shape);
}

Tensor one_hot(const Tensor& indices, std::int64_t num_classes) {
  check_defined("one_hot", indices);
  if (num_classes <= 0)
    throw ValueError("gltensor::one_hot: num_classes must be positive, got " + std::to_string(num_classes));
  DeviceImpl& dev = dev_of(indices);
  Enter guard(dev, "one_hot");
  // Scatter a 1 into zeros at each index (class indices: no counting from the end).
  const Tensor idx = as_index("one_hot", indices).unsqueeze(-1);  // [*, 1]
  Shape shape = indices.shape();
  shape.push_back(num_classes);
  Tensor out = zeros(indices.device(), shape, DType::i32);
  const Tensor one = full(indices.device(), {1}, 1.0, DType::i32);
  const Tensor src = make_view(one, idx.shape(), Shape(idx.shape().size(), 0), 0);
  launch_index("one_hot", IndexMode::scatter, out, one, idx, src, out, out.dim() - 1, false);
  return out;
}

static Tensor tri(const char* op, const Tensor& x, std::int64_t k, bool lower) {
  check_defined(op, x);
  if (x.dim() < 2) throw ShapeError(std::string("gltensor::") + op + ": needs >= 2 dims, got " + to_string(x.shape()));
  const Device dev = x.device();
  Tensor rows = arange(dev, 0, static_cast<double>(x.size(-2)), 1, DType::i32).unsqueeze(1);
  Tensor cols = arange(dev, 0, static_cast<double>(x.size(-1)), 1, DType::i32).unsqueeze(0);
  Tensor diff = cols - rows;
  Tensor keep = lower ? le(diff, static_cast<double>(k)) : ge(diff, static_cast<double>(k));
  return where(keep, x, zeros(dev, {}, x.dtype()));
}
Tensor tril(const Tensor& x, std::int64_t k) { return tri("tril", x, k, true); }
Tensor triu(const Tensor& x, std::int64_t k) { return tri("triu", x, k, false); }

// ---- joins and splits ----

Tensor concat(const std::vector<Tensor>& ts, std::int64_t dim) {
  if (ts.empty()) throw ValueError("gltensor::concat: expects a non-empty list of tensors");
  for (const auto& t : ts) check_same_device("concat", {&ts[0], &t});
  const Tensor& f = ts[0];
  dim = wrap_dim("concat", dim, f.dim());
  Shape shape = f.shape();
  DType dt = f.dtype();
  std::int64_t total = 0;
  for (const auto& t : ts) {
    if (t.dim() != f.dim())
      throw ShapeError("gltensor::concat: tensors must have the same number of dims, got " + to_string(f.shape()) +
                       " and " + to_string(t.shape()));
    for (std::int64_t d = 0; d < f.dim(); ++d)
      if (d != dim && t.shape()[d] != f.shape()[d])
        throw ShapeError("gltensor::concat: sizes must match except in dim " + std::to_string(dim) + ", got " +
                         to_string(f.shape()) + " and " + to_string(t.shape()));
    total += t.shape()[dim];
    dt = promote_types(dt, t.dtype());
  }
  shape[dim] = total;
  Tensor out = Tensor::empty(f.device(), shape, dt);
  std::int64_t off = 0;
  std::vector<std::int64_t> sizes;
  {
    NoGradGuard ng;  // copies into the fresh output; the gradient is recorded below
    for (const auto& t : ts) {
      out.narrow(dim, off, t.shape()[dim]).copy_(t);
      off += t.shape()[dim];
      sizes.push_back(t.shape()[dim]);
    }
  }
  bool any = false;
  for (const auto& t : ts) any = any || autograd::any_requires_grad({&t});
  if (any)
    autograd::record(
        out, ts, [sizes, dim](const Tensor& g) { return split(g, sizes, dim); }, "concat");
  return out;
}

Tensor stack(const std::vector<Tensor>& ts, std::int64_t dim) {
  if (ts.empty()) throw ValueError("gltensor::stack: expects a non-empty list of tensors");
  dim = wrap_dim("stack", dim, ts[0].dim() + 1);
  std::vector<Tensor> u;
  for (const auto& t : ts) {
    if (t.shape() != ts[0].shape())
      throw ShapeError("gltensor::stack: all tensors must have the same shape, got " + to_string(ts[0].shape()) +
                       " and " + to_string(t.shape()));
    u.push_back(t.unsqueeze(dim));
  }
  return concat(u, dim);
}

std::vector<Tensor> split(const Tensor& x, std::int64_t size, std::int64_t dim) {
  check_defined("split", x);
  if (size <= 0) throw ValueError("gltensor::split: split_size must be positive, got " + std::to_string(size));
  dim = wrap_dim("split", dim, x.dim());
  std::vector<Tensor> out;
  const std::int64_t n = x.shape()[dim];
  for (std::int64_t s = 0; s < n || (n == 0 && out.empty()); s += size)
    out.push_back(x.narrow(dim, s, std::min(size, n - s)));
  return out;
}

std::vector<Tensor> split(const Tensor& x, const std::vector<std::int64_t>& sizes, std::int64_t dim) {
  check_defined("split", x);
  dim = wrap_dim("split", dim, x.dim());
  const std::int64_t total = std::accumulate(sizes.begin(), sizes.end(), std::int64_t{0});
  if (total != x.shape()[dim] || std::any_of(sizes.begin(), sizes.end(), [](auto s) { return s < 0; }))
    throw ShapeError("gltensor::split: sizes sum to " + std::to_string(total) + " but dim " + std::to_string(dim) +
                     " of " + to_string(x.shape()) + " has " + std::to_string(x.shape()[dim]));
  std::vector<Tensor> out;
  std::int64_t off = 0;
  for (auto s : sizes) {
    out.push_back(x.narrow(dim, off, s));
    off += s;
  }
  return out;
}

std::vector<Tensor> chunk(const Tensor& x, std::int64_t chunks, std::int64_t dim) {
  check_defined("chunk", x);
  if (chunks <= 0) throw ValueError("gltensor::chunk: chunks must be positive, got " + std::to_string(chunks));
  dim = wrap_dim("chunk", dim, x.dim());
  const std::int64_t n = x.shape()[dim];
  return split(x, std::max<std::int64_t>(1, (n + chunks - 1) / chunks), dim);
}

// ---- pad, repeat, flip, roll ----

Tensor pad(const Tensor& x_in, const std::vector<std::int64_t>& pads, PadMode mode, double value) {
  check_defined("pad", x_in);
  if (pads.size() % 2 != 0 || static_cast<std::int64_t>(pads.size()) > 2 * x_in.dim())
    throw ValueError("gltensor::pad: pads must have an even length <= 2 * dims (" + std::to_string(2 * x_in.dim()) +
                     "), got " + std::to_string(pads.size()));
  Tensor x = x_in;
  const std::size_t np = pads.size() / 2;
  // Crop for negative pads first.
  for (std::size_t i = 0; i < np; ++i) {
    const std::int64_t d = x.dim() - 1 - static_cast<std::int64_t>(i);
    const std::int64_t lo = std::min<std::int64_t>(pads[2 * i], 0), hi = std::min<std::int64_t>(pads[2 * i + 1], 0);
    if (-lo - hi > x.shape()[d])
      throw ValueError("gltensor::pad: negative pads crop more than dim " + std::to_string(d) + " of " +
                       to_string(x.shape()));
    x = x.narrow(d, -lo, x.shape()[d] + lo + hi);
  }
  if (mode == PadMode::constant) {
    Shape shape = x.shape();
    for (std::size_t i = 0; i < np; ++i)
      shape[x.dim() - 1 - i] += std::max<std::int64_t>(pads[2 * i], 0) + std::max<std::int64_t>(pads[2 * i + 1], 0);
    Tensor out = full(x.device(), shape, value, x.dtype());
    Tensor inner = out;
    std::vector<std::pair<std::int64_t, std::int64_t>> region;  // (start, length) per padded dim
    for (std::size_t i = 0; i < np; ++i) {
      const std::int64_t d = x.dim() - 1 - static_cast<std::int64_t>(i);
      region.push_back({std::max<std::int64_t>(pads[2 * i], 0), x.shape()[d]});
      inner = inner.narrow(d, region.back().first, region.back().second);
    }
    {
      NoGradGuard ng;
      inner.copy_(x);
    }
    if (autograd::any_requires_grad({&x}))  // x here is already cropped: its gradient is g's inner region
      autograd::record(
          out, {x},
          [region](const Tensor& g) {
            Tensor r = g;
            for (std::size_t i = 0; i < region.size(); ++i)
              r = r.narrow(g.dim() - 1 - static_cast<std::int64_t>(i), region[i].first, region[i].second);
            return std::vector<Tensor>{r};
          },
          "pad");
    return out;
  }
  for (std::size_t i = 0; i < np; ++i) {
    const std::int64_t d = x.dim() - 1 - static_cast<std::int64_t>(i);
    const std::int64_t lo = std::max<std::int64_t>(pads[2 * i], 0), hi = std::max<std::int64_t>(pads[2 * i + 1], 0);
    if (lo == 0 && hi == 0) continue;
    const std::int64_t n = x.shape()[d];
    if (n == 0)
      throw ValueError("gltensor::pad: cannot " + std::string(mode == PadMode::reflect ? "reflect" : "replicate") +
                       "-pad an empty dim");
    if (mode == PadMode::reflect && (lo >= n || hi >= n))
      throw ValueError("gltensor::pad: reflect padding (" + std::to_string(lo) + ", " + std::to_string(hi) +
                       ") must be smaller than dim " + std::to_string(d) + " of size " + std::to_string(n));
    std::vector<std::int32_t> idx;
    for (std::int64_t j = -lo; j < n + hi; ++j) {
      std::int64_t k = j;
      if (mode == PadMode::reflect)
        k = j < 0 ? -j : (j >= n ? 2 * (n - 1) - j : j);
      else
        k = std::clamp<std::int64_t>(j, 0, n - 1);
      idx.push_back(static_cast<std::int32_t>(k));
    }
    x = index_select(x, d, index_from_host(x.device(), idx));
  }
  return x;
}

Tensor repeat(const Tensor& x, const std::vector<std::int64_t>& reps) {
  check_defined("repeat", x);
  if (static_cast<std::int64_t>(reps.size()) < x.dim())
    throw ValueError("gltensor::repeat: needs at least " + std::to_string(x.dim()) + " repeats for shape " +
                     to_string(x.shape()));
  Shape s(reps.size() - static_cast<std::size_t>(x.dim()), 1);
  s.insert(s.end(), x.shape().begin(), x.shape().end());
  Tensor v = x.reshape(s);
  Shape inter, expanded, final_shape;
  for (std::size_t i = 0; i < reps.size(); ++i) {
    if (reps[i] < 0) throw ValueError("gltensor::repeat: negative repeat " + std::to_string(reps[i]));
    inter.push_back(1);
    inter.push_back(s[i]);
    expanded.push_back(reps[i]);
    expanded.push_back(s[i]);
    final_shape.push_back(reps[i] * s[i]);
  }
  return v.reshape(inter).expand(expanded).contiguous().view(final_shape);
}

Tensor tile(const Tensor& x, const std::vector<std::int64_t>& reps) {
  check_defined("tile", x);
  std::vector<std::int64_t> r(reps);
  while (static_cast<std::int64_t>(r.size()) < x.dim()) r.insert(r.begin(), 1);
  return repeat(x, r);
}

// flip and roll take no host data (a Recording replays them: capture.hpp): flip's index is an
// arange kernel's, roll is the concatenation of its two parts.
Tensor flip(const Tensor& x, const std::vector<std::int64_t>& dims) {
  check_defined("flip", x);
  Tensor r = x;
  for (auto d : dims) {
    d = wrap_dim("flip", d, x.dim());
    const std::int64_t n = x.dim() ? x.shape()[d] : 1;
    r = index_select(r, d, arange(x.device(), static_cast<double>(n - 1), -1.0, -1.0, DType::i32));
  }
  return r;
}

Tensor roll(const Tensor& x, std::int64_t shift, std::int64_t dim) {
  check_defined("roll", x);
  dim = wrap_dim("roll", dim, x.dim());
  const std::int64_t n = x.dim() ? x.shape()[dim] : 1;
  const std::int64_t s = n == 0 ? 0 : (shift % n + n) % n;  // the first s elements come from the end
  if (s == 0) return x.clone();
  return concat({x.narrow(dim, n - s, s), x.narrow(dim, 0, n - s)}, dim);
}

}  // namespace gltensor
