// resize (ONNX Resize, nearest and linear) as index_select / lerp with host-computed indices
// and weights, one resized dim at a time (separable).
#include <cmath>

#include "gltensor/autograd.hpp"
#include "gltensor/errors.hpp"
#include "gltensor/indexing.hpp"
#include "gltensor/nn_functional.hpp"
#include "gltensor/ops.hpp"
#include "nn/conv_plan.hpp"

namespace gltensor {

namespace {

using C = ResizeOptions::Coord;
using NM = ResizeOptions::Nearest;

// out: the resized length (in * scale when scales are given, not rounded, as ONNX's reference);
// out_int: the output size; rs, re: the dim's region (tf_crop_and_resize).
double source_coord(C coord, std::int64_t o, std::int64_t in, double out, std::int64_t out_int, double scale,
                    double rs = 0, double re = 1) {
  switch (coord) {
    case C::tf_crop_and_resize: {
      const double span = static_cast<double>(in - 1);
      return out > 1 ? rs * span + static_cast<double>(o) * (re - rs) * span / (out - 1) : 0.5 * (rs + re) * span;
    }
    case C::half_pixel:
      return (o + 0.5) / scale - 0.5;
    case C::half_pixel_symmetric: {
      const double center = static_cast<double>(in) / 2.0;
      return center * (1.0 - static_cast<double>(out_int) / out) + (o + 0.5) / scale - 0.5;
    }
    case C::pytorch_half_pixel:
      return out > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
    case C::align_corners:
      return out == 1 ? 0.0 : static_cast<double>(o) * static_cast<double>(in - 1) / (out - 1);
    case C::asymmetric:
      return o / scale;
    case C::tf_half_pixel_for_nn:
      return (o + 0.5) / scale;
  }
  return 0.0;
}

std::int64_t round_nearest(NM mode, double x, double scale) {
  switch (mode) {
    case NM::round_prefer_floor:
      return static_cast<std::int64_t>(x - std::floor(x) == 0.5 ? std::floor(x) : std::floor(x + 0.5));
    case NM::round_prefer_ceil:
      return static_cast<std::int64_t>(x - std::floor(x) == 0.5 ? std::ceil(x) : std::floor(x + 0.5));
    case NM::floor:
      return static_cast<std::int64_t>(std::floor(x));
    case NM::ceil:
      return static_cast<std::int64_t>(std::ceil(x));
    case NM::simple:
      return static_cast<std::int64_t>(scale < 1 ? std::ceil(x) : std::floor(x));
  }
  return 0;
}

Tensor index_tensor(const Device& dev, const std::vector<std::int32_t>& v) {
  return Tensor::from_host(dev, std::span<const std::int32_t>(v), {static_cast<std::int64_t>(v.size())});
}

// Shape of a per-position vector along dim d of a rank-r tensor: [len, 1, ..., 1].
Shape along(std::int64_t d, std::int64_t r, std::int64_t len) {
  Shape s(static_cast<std::size_t>(r - d), 1);
  s[0] = len;
  return s;
}

// Cubic or antialiased resizing of dim d (a banded matrix: taps[k][o] weighs input idx[k][o]):
// output o's filter is centered on its source coordinate + 0.5, with support b (1 for the
// triangle 1 - |t|, 2 for Keys' cubic) or, antialiased where the dim shrinks, b / scale with the
// filter evaluated at t = (j + 0.5 - center) * scale; weights normalized to sum 1, taps outside
// the input dropped (exclude_outside) or moved to the edge element.
Tensor filter_dim(const Tensor& y, std::int64_t d, std::int64_t in, std::int64_t out, double len, double scale,
                  const ResizeOptions& opt, double rs, double re) {
  const bool cubic = opt.mode == ResizeOptions::Mode::cubic, stretch = opt.antialias && scale < 1;
  const double base = cubic ? 2.0 : 1.0, support = stretch ? base / scale : base, inv = stretch ? scale : 1.0;
  const double A = opt.cubic_coeff_a;
  auto filter = [cubic, A](double t) {
    t = std::fabs(t);
    if (!cubic) return t < 1 ? 1 - t : 0.0;
    if (t < 1) return ((A + 2) * t - (A + 3)) * t * t + 1;
    if (t < 2) return (((t - 5) * t + 8) * t - 4) * A;
    return 0.0;
  };
  const std::int64_t window = static_cast<std::int64_t>(std::ceil(support)) * 2 + 1;
  std::vector<std::vector<std::int32_t>> idx(static_cast<std::size_t>(window),
                                             std::vector<std::int32_t>(static_cast<std::size_t>(out), 0));
  std::vector<std::vector<float>> taps(static_cast<std::size_t>(window),
                                       std::vector<float>(static_cast<std::size_t>(out), 0.0f));
  for (std::int64_t o = 0; o < out; ++o) {
    const double center = 0.5 + (scale == 1.0 && opt.coord != C::tf_crop_and_resize
                                     ? static_cast<double>(o)
                                     : source_coord(opt.coord, o, in, len, out, scale, rs, re));
    std::int64_t lo = static_cast<std::int64_t>(std::floor(center - support + 0.5));
    std::int64_t hi = static_cast<std::int64_t>(std::floor(center + support + 0.5));
    hi = lo + std::clamp<std::int64_t>(hi - lo, 0, window);
    if (opt.exclude_outside) {
      lo = std::clamp<std::int64_t>(lo, 0, in);
      hi = std::clamp<std::int64_t>(hi, 0, in);
    }
    std::vector<double> w(static_cast<std::size_t>(in), 0.0);  // by input element
    double total = 0;
    for (std::int64_t j = lo; j < hi; ++j) {
      const double v = filter((static_cast<double>(j) - center + 0.5) * inv);
      total += v;
      w[static_cast<std::size_t>(std::clamp<std::int64_t>(j, 0, in - 1))] += v;
    }
    const double norm = total == 0 ? 1.0 : 1.0 / total;
    std::int64_t k = 0;
    for (std::int64_t j = std::clamp<std::int64_t>(lo, 0, in - 1);
         j <= std::clamp<std::int64_t>(hi - 1, 0, in - 1) && k < window; ++j, ++k) {
      idx[static_cast<std::size_t>(k)][static_cast<std::size_t>(o)] = static_cast<std::int32_t>(j);
      taps[static_cast<std::size_t>(k)][static_cast<std::size_t>(o)] =
          static_cast<float>(w[static_cast<std::size_t>(j)] * norm);
    }
  }
  const Device dev = y.device();
  const std::int64_t r = y.dim();
  Tensor acc;
  for (std::int64_t k = 0; k < window; ++k) {
    Tensor t = mul(index_select(y, d, index_tensor(dev, idx[static_cast<std::size_t>(k)])),
                   Tensor::from_host(dev, taps[static_cast<std::size_t>(k)], along(d, r, out)));
    acc = acc.defined() ? add(acc, t) : t;
  }
  return acc;
}

// Nearest resize of dim d from `in` to `out` (no crop; as resize's loop computes its indices)
// that repeats each input element k times in order: k, else 0.
std::int64_t nearest_repeat(const ResizeOptions& opt, std::int64_t d, std::int64_t in, std::int64_t out) {
  const double scale = opt.scales.empty() ? static_cast<double>(out) / static_cast<double>(in) : opt.scales[d];
  if (in <= 0 || out % in != 0 || out == in) return 0;
  const std::int64_t k = out / in;
  const double len = opt.scales.empty() ? static_cast<double>(out) : static_cast<double>(in) * scale;
  for (std::int64_t o = 0; o < out; ++o) {
    const double s = source_coord(opt.coord, o, in, len, out, scale, 0.0, 1.0);
    if (std::clamp<std::int64_t>(round_nearest(opt.nearest, s, scale), 0, in - 1) != o / k) return 0;
  }
  return k;
}

}  // namespace

Tensor resize(const Tensor& x, const Shape& size, const ResizeOptions& opt) {
  if (!x.defined()) throw ValueError("gltensor::resize: undefined input");
  const std::int64_t r = x.dim();
  if (static_cast<std::int64_t>(size.size()) != r)
    throw ShapeError("gltensor::resize: size " + to_string(size) + " must have the rank of the input " +
                     to_string(x.shape()));
  if (!opt.scales.empty() && static_cast<std::int64_t>(opt.scales.size()) != r)
    throw ValueError("gltensor::resize: " + std::to_string(opt.scales.size()) + " scales for an input of rank " +
                     std::to_string(r));
  for (std::int64_t d = 0; d < r; ++d) {
    if (size[d] < 1) throw ValueError("gltensor::resize: output size " + to_string(size) + " has a size < 1");
    if (!opt.scales.empty() && !(opt.scales[d] > 0))
      throw ValueError("gltensor::resize: scales must be positive, got " + std::to_string(opt.scales[d]));
  }
  const bool linear = opt.mode == ResizeOptions::Mode::linear, cubic = opt.mode == ResizeOptions::Mode::cubic;
  if ((linear || cubic) && !is_floating(x.dtype()))
    throw DTypeError(std::string("gltensor::resize: linear and cubic modes need a floating input, got ") +
                     dtype_name(x.dtype()));
  const bool crop = opt.coord == C::tf_crop_and_resize;
  if (crop && static_cast<std::int64_t>(opt.roi.size()) != 2 * r && !opt.roi.empty())
    throw ValueError("gltensor::resize: roi has " + std::to_string(opt.roi.size()) + " values for rank " +
                     std::to_string(r));
  const Device dev = x.device();
  // Software rasterizers, nearest upsampling of an f32 image by one integer factor k along H and
  // W (DBNet's neck): a transposed convolution with kernel = stride = k of one-valued depthwise
  // filters, which conv_transpose2d runs there as one shuffled 1x1 convolution (the direct
  // kernel's ubo layout: quad loads, no per-element index arithmetic; 2 strided copies otherwise).
  // Values are copied exactly (x * 1 + 0; a -0 becomes +0).
  const auto same = [&](std::int64_t d) {
    return size[d] == x.size(d) && (opt.scales.empty() || opt.scales[d] == 1.0);
  };
  if (r == 4 && dev.adapter().software && opt.mode == ResizeOptions::Mode::nearest && !crop &&
      x.dtype() == DType::f32 && same(0) && same(1) && x.numel() > 0 && !autograd::any_requires_grad({&x})) {
    const std::int64_t k = nearest_repeat(opt, 2, x.size(2), size[2]);
    if (k > 1 && k == nearest_repeat(opt, 3, x.size(3), size[3])) {
      Conv2dOptions o;
      o.stride = {k, k};
      o.groups = x.size(1);
      NoGradGuard ng;
      Tensor y = detail::conv_transpose2d_blocks(x, full(dev, {x.size(1), 1, k, k}, 1.0), Tensor(), o, {0, 0});
      if (y.defined()) return y;
    }
  }
  // Nearest upsampling by integer factors (each changed dim repeats every input element k times
  // in order; GPUs: DBNet's neck): one broadcast copy of x viewed [.., in, 1 -> k, ..] for all
  // such dims at once, where the loop below copies once per dim.
  if (opt.mode == ResizeOptions::Mode::nearest && !crop && x.numel() > 0) {
    Shape s, e;
    bool all = true;
    for (std::int64_t d = 0; d < r && all; ++d) {
      const std::int64_t k = same(d) ? 1 : nearest_repeat(opt, d, x.size(d), size[d]);
      all = k > 0;
      s.push_back(x.size(d)), e.push_back(x.size(d));
      if (k > 1) s.push_back(1), e.push_back(k);
    }
    if (all && s.size() > static_cast<std::size_t>(r) && s.size() <= static_cast<std::size_t>(kMaxDims))
      return x.reshape(s).expand(e).contiguous().view(size);
  }
  Tensor y = x, outside;  // outside: outputs sampled outside the input (tf_crop_and_resize)
  for (std::int64_t d = 0; d < r; ++d) {
    const std::int64_t in = x.size(d), out = size[d];
    const double scale = opt.scales.empty() ? static_cast<double>(out) / static_cast<double>(in) : opt.scales[d];
    const double rs = crop && !opt.roi.empty() ? opt.roi[d] : 0.0, re = crop && !opt.roi.empty() ? opt.roi[d + r] : 1.0;
    if (in == out && scale == 1.0 && (!crop || (rs == 0 && re == 1))) continue;
    if (in == 0) throw ShapeError("gltensor::resize: cannot resize an empty dim of " + to_string(x.shape()));
    if (crop) {
      const double len = opt.scales.empty() ? static_cast<double>(out) : static_cast<double>(in) * scale;
      std::vector<std::uint8_t> off(static_cast<std::size_t>(out));
      bool any = false;
      for (std::int64_t o = 0; o < out; ++o) {
        const double s = source_coord(opt.coord, o, in, len, out, scale, rs, re);
        off[static_cast<std::size_t>(o)] = s < 0 || s > static_cast<double>(in - 1);
        any = any || off[static_cast<std::size_t>(o)];
      }
      if (any) {
        Tensor m = Tensor::from_host(dev, std::span<const std::uint8_t>(off), along(d, r, out)).to(DType::bool_);
        outside = outside.defined() ? logical_or(outside, m) : m;
      }
    }
    if (cubic || (linear && opt.antialias)) {
      const double len = opt.scales.empty() ? static_cast<double>(out) : static_cast<double>(in) * scale;
      y = filter_dim(y, d, in, out, len, scale, opt, rs, re);
      if (y.dtype() != x.dtype()) y = y.to(x.dtype());
      continue;
    }
    std::vector<std::int32_t> i0(static_cast<std::size_t>(out)), i1(static_cast<std::size_t>(out));
    std::vector<float> w(static_cast<std::size_t>(out));
    for (std::int64_t o = 0; o < out; ++o) {
      const double len = opt.scales.empty() ? static_cast<double>(out) : static_cast<double>(in) * scale;
      const double s = source_coord(opt.coord, o, in, len, out, scale, rs, re);
      if (linear) {
        const double f = std::floor(s);
        const std::int64_t a = static_cast<std::int64_t>(f);
        i0[o] = static_cast<std::int32_t>(std::clamp<std::int64_t>(a, 0, in - 1));
        i1[o] = static_cast<std::int32_t>(std::clamp<std::int64_t>(a + 1, 0, in - 1));
        w[o] = static_cast<float>(s - f);
      } else {
        i0[o] = static_cast<std::int32_t>(std::clamp<std::int64_t>(round_nearest(opt.nearest, s, scale), 0, in - 1));
      }
    }
    if (!linear) {
      // Each input element repeated k times in order: one broadcast copy.
      bool repeat = out % in == 0;
      const std::int64_t k = repeat ? out / in : 0;
      for (std::int64_t o = 0; repeat && o < out; ++o) repeat = i0[o] == o / k;
      if (repeat) {
        Shape s = y.shape();
        Shape e = s;
        s.insert(s.begin() + d + 1, 1);
        e.insert(e.begin() + d + 1, k);
        Shape f = y.shape();
        f[d] = out;
        y = y.reshape(s).expand(e).contiguous().view(f);
      } else {
        y = index_select(y, d, index_tensor(dev, i0));
      }
      continue;
    }
    Tensor lo = index_select(y, d, index_tensor(dev, i0)), hi = index_select(y, d, index_tensor(dev, i1));
    Tensor wt = Tensor::from_host(dev, w, along(d, r, out));
    y = lerp(lo, hi, wt);
    if (y.dtype() != x.dtype()) y = y.to(x.dtype());
  }
  if (outside.defined()) {
    y = where(outside, full_like(y, opt.extrapolation_value), y);
    if (y.dtype() != x.dtype()) y = y.to(x.dtype());
  }
  return y;
}

Tensor prelu(const Tensor& x, const Tensor& slope) {
  if (!x.defined() || !slope.defined()) throw ValueError("gltensor::prelu: undefined input");
  if (!is_floating(x.dtype()))
    throw DTypeError(std::string("gltensor::prelu: needs a floating input, got ") + dtype_name(x.dtype()));
  Tensor r = where(lt(x, 0.0), mul(x, slope), x);
  if (r.shape() != x.shape())
    throw ShapeError("gltensor::prelu: slope " + to_string(slope.shape()) + " does not broadcast to " +
                     to_string(x.shape()));
  return r.dtype() == x.dtype() ? r : r.to(x.dtype());
}

}  // namespace gltensor
