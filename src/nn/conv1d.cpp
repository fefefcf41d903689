// 1-D convolution and pooling as their 2-D forms on [N, C, 1, L].
#include <algorithm>

#include "gltensor/errors.hpp"
#include "gltensor/nn_functional.hpp"
#include "nn/pool_plan.hpp"

namespace gltensor {

namespace {
void need_3d(const char* op, const Tensor& x, const char* what) {
  if (!x.defined() || x.dim() != 3)
    throw ShapeError(std::string("gltensor::") + op + ": expects " + what + " with 3 dims [N, C, L], got " +
                     (x.defined() ? to_string(x.shape()) : std::string("undefined")));
}
Conv2dOptions conv2d_options(const Conv1dOptions& o) {
  Conv2dOptions c;
  c.stride = {1, o.stride};
  c.padding = {0, o.padding[0], 0, o.padding[1]};
  c.dilation = {1, o.dilation};
  c.groups = o.groups;
  return c;
}
}  // namespace

Tensor conv1d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv1dOptions& o, const Epilogue& e) {
  need_3d("conv1d", x, "x");
  need_3d("conv1d", w, "weight");
  return conv2d(x.unsqueeze(2), w.unsqueeze(2), bias, conv2d_options(o), e).squeeze(2);
}

Tensor conv_transpose1d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv1dOptions& o,
                        std::int64_t output_padding) {
  need_3d("conv_transpose1d", x, "x");
  need_3d("conv_transpose1d", w, "weight");
  if (output_padding < 0 || output_padding >= std::max(o.stride, o.dilation))
    throw ValueError("gltensor::conv_transpose1d: output_padding " + std::to_string(output_padding) +
                     " must be >= 0 and smaller than max(stride, dilation) (stride " + std::to_string(o.stride) +
                     ", dilation " + std::to_string(o.dilation) + "), x " + to_string(x.shape()) + ", weight " +
                     to_string(w.shape()));
  return conv_transpose2d(x.unsqueeze(2), w.unsqueeze(2), bias, conv2d_options(o), {0, output_padding}).squeeze(2);
}

namespace {
Pool2dOptions pool2d(const Pool1dOptions& o) {
  Pool2dOptions p;
  p.kernel = {1, o.kernel};
  p.stride = {1, o.stride == 0 ? o.kernel : o.stride};
  p.padding = {0, o.padding};
  p.dilation = {1, o.dilation};
  p.ceil_mode = o.ceil_mode;
  p.count_include_pad = o.count_include_pad;
  return p;
}
}  // namespace

Tensor max_pool1d(const Tensor& x, const Pool1dOptions& o) {
  need_3d("max_pool1d", x, "x");
  Pool2dOptions p = pool2d(o);
  detail::pool2d_out_hw("max_pool1d", x.unsqueeze(2).shape(), p);  // its errors name the 1-D op
  return max_pool2d(x.unsqueeze(2), p).squeeze(2);
}

Tensor avg_pool1d(const Tensor& x, const Pool1dOptions& o) {
  need_3d("avg_pool1d", x, "x");
  Pool2dOptions p = pool2d(o);
  // No dilation in average pooling, as avg_pool2d.
  p.dilation = {1, 1};
  detail::pool2d_out_hw("avg_pool1d", x.unsqueeze(2).shape(), p);  // its errors name the 1-D op
  return avg_pool2d(x.unsqueeze(2), p).squeeze(2);
}

}  // namespace gltensor
