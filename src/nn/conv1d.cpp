// 1-D convolution and pooling as their 2-D forms on [N, C, 1, L].
#include "gltensor/errors.hpp"
#include "gltensor/nn_functional.hpp"
#include "nn/conv_plan.hpp"
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
  detail::check_output_padding("conv_transpose1d", {&output_padding, 1}, {&o.stride, 1}, {&o.dilation, 1}, x, w);
  return detail::conv_transpose2d_epilogue(x.unsqueeze(2), w.unsqueeze(2), bias, conv2d_options(o), {0, output_padding},
                                           Epilogue(), "conv_transpose1d")
      .squeeze(2);
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

// (the 2-D forms' errors name the 1-D op; avg_pool2d ignores the dilation)
Tensor max_pool1d(const Tensor& x, const Pool1dOptions& o) {
  need_3d("max_pool1d", x, "x");
  return detail::max_pool2d_as("max_pool1d", x.unsqueeze(2), pool2d(o)).squeeze(2);
}

Tensor avg_pool1d(const Tensor& x, const Pool1dOptions& o) {
  need_3d("avg_pool1d", x, "x");
  return detail::avg_pool2d_as("avg_pool1d", x.unsqueeze(2), pool2d(o)).squeeze(2);
}

}  // namespace gltensor
