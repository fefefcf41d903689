// Views: reshape/view, permute/transpose, slice/select/narrow, expand, squeeze/unsqueeze.
// None of these copy (except reshape() when strides cannot express the new shape). They live in
// the ops layer although declared in gltensor/tensor.hpp: each records its gradient, and a region's
// gradient is scattered into zeros by a kernel.
#include <algorithm>
#include <functional>
#include <optional>

#include "gltensor/autograd.hpp"
#include "gltensor/ops.hpp"
#include "tensor/tensor_impl.hpp"

namespace gltensor {
using namespace detail;

namespace {

Shape infer_shape(const char* op, Shape shape, std::int64_t numel, const Shape& from) {
  std::int64_t known = 1;
  int infer = -1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0)
        throw ShapeError(std::string("gltensor::") + op + ": only one dimension can be -1 in " + to_string(shape));
      infer = static_cast<int>(i);
    } else if (shape[i] < 0) {
      throw ValueError(std::string("gltensor::") + op + ": invalid size in shape " + to_string(shape));
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel % known != 0)
      throw ShapeError(std::string("gltensor::") + op + ": shape " + to_string(shape) +
                       " is invalid for input of shape " + to_string(from) + " (" + std::to_string(numel) +
                       " elements)");
    shape[infer] = numel / known;
  } else if (known != numel) {
    throw ShapeError(std::string("gltensor::") + op + ": shape " + to_string(shape) +
                     " is invalid for input of shape " + to_string(from) + " (" + std::to_string(numel) + " elements)");
  }
  check_shape(op, shape);
  return shape;
}

// Strides for viewing (old shape, old strides) as new shape without a copy (PyTorch's
// computeStride): nullopt if impossible.
std::optional<Shape> view_strides(const Shape& oldshape, const Shape& oldstride, const Shape& newshape) {
  Shape newstride(newshape.size(), 0);
  if (oldshape.empty()) return Shape(newshape.size(), 1);
  const std::int64_t numel = numel_of(oldshape);
  if (numel == 0) {
    if (oldshape == newshape) return oldstride;
    return contiguous_strides(newshape);
  }
  std::int64_t view_d = static_cast<std::int64_t>(newshape.size()) - 1;
  std::int64_t chunk_base_stride = oldstride.empty() ? 1 : oldstride.back();
  std::int64_t tensor_numel = 1, view_numel = 1;
  for (std::int64_t tensor_d = static_cast<std::int64_t>(oldshape.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= oldshape[tensor_d];
    if (tensor_d == 0 || (oldshape[tensor_d - 1] != 1 && oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || newshape[view_d] == 1)) {
        newstride[view_d] = view_numel * chunk_base_stride;
        view_numel *= newshape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = oldstride[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return newstride;
}

// Autograd for views: the gradient is reshaped back / scattered into the viewed region.
Tensor reshape_node(const Tensor& x, Tensor v, const char* name) {
  if (autograd::any_requires_grad({&x})) {
    const Shape s = x.shape();
    autograd::record(
        v, {x}, [s](const Tensor& g) { return std::vector<Tensor>{g.reshape(s)}; }, name);
  }
  return v;
}

// For views of a region (slice, select, narrow): the gradient goes into zeros shaped like x
// through the same view, applied by `pick` to the zeros tensor.
Tensor region_node(const Tensor& x, Tensor v, const char* name, std::function<Tensor(const Tensor&)> pick) {
  if (autograd::any_requires_grad({&x})) {
    const Shape s = x.shape();
    autograd::record(
        v, {x},
        [s, pick](const Tensor& g) {
          Tensor z = zeros(g.device(), s, g.dtype());
          pick(z).copy_(g);
          return std::vector<Tensor>{z};
        },
        name);
  }
  return v;
}

}  // namespace

Tensor Tensor::view(const Shape& shape_in) const {
  check_defined("view", *this);
  const Shape shape = infer_shape("view", shape_in, numel(), this->shape());
  auto st = view_strides(this->shape(), strides(), shape);
  if (!st)
    throw ShapeError("gltensor::view: a view of shape " + to_string(shape) + " is not compatible with input of shape " +
                     to_string(this->shape()) + " and strides " + to_string(strides()) + "; use reshape()");
  return reshape_node(*this, make_view(*this, shape, *st, offset()), "view");
}

Tensor Tensor::reshape(const Shape& shape_in) const {
  check_defined("reshape", *this);
  const Shape shape = infer_shape("reshape", shape_in, numel(), this->shape());
  if (auto st = view_strides(this->shape(), strides(), shape))
    return reshape_node(*this, make_view(*this, shape, *st, offset()), "reshape");
  return contiguous().view(shape);
}

Tensor Tensor::flatten(std::int64_t start_dim, std::int64_t end_dim) const {
  check_defined("flatten", *this);
  if (dim() == 0) return reshape({1});
  const std::int64_t s = wrap_dim("flatten", start_dim, dim()), e = wrap_dim("flatten", end_dim, dim());
  if (s > e)
    throw ValueError("gltensor::flatten: start_dim " + std::to_string(start_dim) + " > end_dim " +
                     std::to_string(end_dim));
  Shape shape(this->shape().begin(), this->shape().begin() + s);
  std::int64_t m = 1;
  for (std::int64_t i = s; i <= e; ++i) m *= this->shape()[i];
  shape.push_back(m);
  shape.insert(shape.end(), this->shape().begin() + e + 1, this->shape().end());
  return reshape(shape);
}

Tensor Tensor::permute(const std::vector<std::int64_t>& dims) const {
  check_defined("permute", *this);
  if (static_cast<std::int64_t>(dims.size()) != dim())
    throw ShapeError("gltensor::permute: " + std::to_string(dims.size()) + " dims given for a tensor of shape " +
                     to_string(shape()));
  Shape shape(dims.size()), st(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const std::int64_t d = wrap_dim("permute", dims[i], dim());
    if (seen[d]) throw ValueError("gltensor::permute: repeated dim " + std::to_string(dims[i]));
    seen[d] = true;
    shape[i] = this->shape()[d];
    st[i] = strides()[d];
  }
  Tensor v = make_view(*this, shape, st, offset());
  if (autograd::any_requires_grad({this})) {
    std::vector<std::int64_t> inv(dims.size());
    for (std::size_t i = 0; i < dims.size(); ++i)
      inv[wrap_dim("permute", dims[i], dim())] = static_cast<std::int64_t>(i);
    autograd::record(
        v, {*this}, [inv](const Tensor& g) { return std::vector<Tensor>{g.permute(inv)}; }, "permute");
  }
  return v;
}

Tensor Tensor::transpose(std::int64_t d0, std::int64_t d1) const {
  check_defined("transpose", *this);
  if (dim() == 0) return *this;
  d0 = wrap_dim("transpose", d0, dim());
  d1 = wrap_dim("transpose", d1, dim());
  Shape shape = this->shape(), st = strides();
  std::swap(shape[d0], shape[d1]);
  std::swap(st[d0], st[d1]);
  Tensor v = make_view(*this, shape, st, offset());
  if (autograd::any_requires_grad({this}))
    autograd::record(
        v, {*this}, [d0, d1](const Tensor& g) { return std::vector<Tensor>{g.transpose(d0, d1)}; }, "transpose");
  return v;
}

Tensor Tensor::t() const {
  check_defined("t", *this);
  if (dim() > 2) throw ShapeError("gltensor::t: expects a tensor with <= 2 dims, got shape " + to_string(shape()));
  return dim() < 2 ? *this : transpose(0, 1);
}

Tensor Tensor::slice(std::int64_t d, std::int64_t start, std::int64_t end, std::int64_t step) const {
  check_defined("slice", *this);
  d = wrap_dim("slice", d, dim());
  if (dim() == 0) throw IndexError("gltensor::slice: cannot slice a 0-dim tensor");
  if (step <= 0) throw ValueError("gltensor::slice: step must be positive, got " + std::to_string(step));
  const std::int64_t n = shape()[d];
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<std::int64_t>(start, 0, n);
  end = std::clamp<std::int64_t>(end, start, n);
  Shape shape = this->shape(), st = strides();
  shape[d] = (end - start + step - 1) / step;
  st[d] *= step;
  return region_node(*this, make_view(*this, shape, st, offset() + start * strides()[d]), "slice",
                     [d, start, end, step](const Tensor& z) { return z.slice(d, start, end, step); });
}

Tensor Tensor::narrow(std::int64_t d, std::int64_t start, std::int64_t length) const {
  check_defined("narrow", *this);
  d = wrap_dim("narrow", d, dim());
  const std::int64_t n = shape()[d];
  if (start < 0) start += n;
  if (start < 0 || length < 0 || start + length > n)
    throw IndexError("gltensor::narrow: start " + std::to_string(start) + " + length " + std::to_string(length) +
                     " exceeds dim " + std::to_string(d) + " of size " + std::to_string(n));
  return slice(d, start, start + length, 1);
}

Tensor Tensor::select(std::int64_t d, std::int64_t index) const {
  check_defined("select", *this);
  if (dim() == 0) throw IndexError("gltensor::select: cannot select on a 0-dim tensor");
  d = wrap_dim("select", d, dim());
  const std::int64_t n = shape()[d];
  if (index < -n || index >= n)
    throw IndexError("gltensor::select: index " + std::to_string(index) + " is out of range for dim " +
                     std::to_string(d) + " of size " + std::to_string(n));
  if (index < 0) index += n;
  Shape shape = this->shape(), st = strides();
  shape.erase(shape.begin() + d);
  st.erase(st.begin() + d);
  return region_node(*this, make_view(*this, shape, st, offset() + index * strides()[d]), "select",
                     [d, index](const Tensor& z) { return z.select(d, index); });
}

Tensor Tensor::expand(const Shape& target) const {
  check_defined("expand", *this);
  if (target.size() < shape().size())
    throw ShapeError("gltensor::expand: cannot expand shape " + to_string(shape()) + " to " + to_string(target) +
                     " (fewer dims)");
  check_shape("expand", Shape(target.size(), 1));
  const std::size_t lead = target.size() - shape().size();
  Shape shape(target.size()), st(target.size());
  for (std::size_t i = 0; i < target.size(); ++i) {
    if (i < lead) {
      if (target[i] < 0)
        throw ShapeError("gltensor::expand: -1 is not allowed for new leading dims in " + to_string(target));
      shape[i] = target[i];
      st[i] = 0;
      continue;
    }
    const std::int64_t have = this->shape()[i - lead];
    const std::int64_t want = target[i] == -1 ? have : target[i];
    if (have == want) {
      shape[i] = have;
      st[i] = strides()[i - lead];
    } else if (have == 1) {
      shape[i] = want;
      st[i] = 0;
    } else {
      throw ShapeError("gltensor::expand: cannot expand shape " + to_string(this->shape()) + " to " +
                       to_string(target) + " (dim " + std::to_string(i) + ": " + std::to_string(have) + " vs " +
                       std::to_string(want) + ")");
    }
  }
  check_shape("expand", shape);
  Tensor v = make_view(*this, shape, st, offset());
  autograd::record(
      v, {*this}, [](const Tensor& g) { return std::vector<Tensor>{g}; }, "expand");
  return v;
}

Tensor Tensor::squeeze() const {
  check_defined("squeeze", *this);
  Shape shape, st;
  for (std::int64_t i = 0; i < dim(); ++i)
    if (this->shape()[i] != 1) {
      shape.push_back(this->shape()[i]);
      st.push_back(strides()[i]);
    }
  return reshape_node(*this, make_view(*this, shape, st, offset()), "squeeze");
}

Tensor Tensor::squeeze(std::int64_t d) const {
  check_defined("squeeze", *this);
  if (dim() == 0) return *this;
  d = wrap_dim("squeeze", d, dim());
  if (shape()[d] != 1) return *this;
  Shape shape = this->shape(), st = strides();
  shape.erase(shape.begin() + d);
  st.erase(st.begin() + d);
  return reshape_node(*this, make_view(*this, shape, st, offset()), "squeeze");
}

Tensor Tensor::unsqueeze(std::int64_t d) const {
  check_defined("unsqueeze", *this);
  d = wrap_dim("unsqueeze", d, dim() + 1);
  Shape shape = this->shape(), st = strides();
  const std::int64_t s = d < dim() ? strides()[d] * this->shape()[d] : 1;
  shape.insert(shape.begin() + d, 1);
  st.insert(st.begin() + d, s);
  check_shape("unsqueeze", shape);
  return reshape_node(*this, make_view(*this, shape, st, offset()), "unsqueeze");
}

}  // namespace gltensor
