#include "models.hpp"

#include <algorithm>
#include <stdexcept>

namespace demo {
using namespace gltensor;

std::shared_ptr<nn::Sequential> make_model(const std::string& name, const Device& dev, Generator& gen, bool replay) {
  auto m = std::make_shared<nn::Sequential>();
  if (name == "mlp") {
    m->add(std::make_shared<nn::Flatten>())
        .add(std::make_shared<nn::Linear>(dev, 784, 256, gen, true, Activation::relu))
        .add(std::make_shared<nn::Linear>(dev, 256, 128, gen, true, Activation::relu))
        .add(std::make_shared<nn::Linear>(dev, 128, 10, gen));
  } else if (name == "cnn") {
    Pool2dOptions pool;
    pool.kernel = {2, 2};
    m->add(std::make_shared<nn::Conv2d>(dev, 1, 32, 3, gen, Conv2dOptions::pad(1)))
        .add(std::make_shared<nn::BatchNorm2d>(dev, 32))
        .add(std::make_shared<nn::ReLU>())
        .add(std::make_shared<nn::MaxPool2d>(pool))
        .add(std::make_shared<nn::Conv2d>(dev, 32, 64, 3, gen, Conv2dOptions::pad(1)))
        .add(std::make_shared<nn::BatchNorm2d>(dev, 64))
        .add(std::make_shared<nn::ReLU>())
        .add(std::make_shared<nn::MaxPool2d>(pool))
        .add(std::make_shared<nn::Flatten>())
        .add(std::make_shared<nn::Linear>(dev, 64 * 7 * 7, 128, gen, true, Activation::relu))
        .add(std::make_shared<nn::Dropout>(0.25, gen, replay))
        .add(std::make_shared<nn::Linear>(dev, 128, 10, gen));
  } else {
    throw std::invalid_argument("unknown model '" + name + "' (expected mlp or cnn)");
  }
  return m;
}

std::int64_t forward_bytes_per_image(const nn::Sequential& model, std::array<std::int64_t, 3> chw) {
  std::int64_t c = chw[0], h = chw[1], w = chw[2], flat = -1;  // flat >= 0 after Flatten / Linear
  std::int64_t largest = c * h * w;
  for (const auto& layer : model.layers) {
    if (const auto* conv = dynamic_cast<const nn::Conv2d*>(layer.get())) {
      const auto& o = conv->options;
      const std::int64_t kh = conv->weight.size(2), kw = conv->weight.size(3);
      const std::int64_t eh = o.dilation[0] * (kh - 1) + 1, ew = o.dilation[1] * (kw - 1) + 1;
      const std::int64_t oh = (h + o.padding[0] + o.padding[2] - eh) / o.stride[0] + 1;
      const std::int64_t ow = (w + o.padding[1] + o.padding[3] - ew) / o.stride[1] + 1;
      largest = std::max(largest, c / o.groups * kh * kw * oh * ow);  // im2col columns of one group
      c = conv->weight.size(0), h = oh, w = ow;
    } else if (const auto* pool = dynamic_cast<const nn::MaxPool2d*>(layer.get())) {
      const auto& o = pool->options;
      const std::int64_t sh = o.stride[0] ? o.stride[0] : o.kernel[0], sw = o.stride[1] ? o.stride[1] : o.kernel[1];
      const std::int64_t eh = o.dilation[0] * (o.kernel[0] - 1) + 1, ew = o.dilation[1] * (o.kernel[1] - 1) + 1;
      h = (h + 2 * o.padding[0] - eh + (o.ceil_mode ? sh - 1 : 0)) / sh + 1;
      w = (w + 2 * o.padding[1] - ew + (o.ceil_mode ? sw - 1 : 0)) / sw + 1;
    } else if (dynamic_cast<const nn::Flatten*>(layer.get())) {
      flat = c * h * w;
    } else if (const auto* fc = dynamic_cast<const nn::Linear*>(layer.get())) {
      flat = fc->weight.size(0);
    }
    largest = std::max(largest, flat >= 0 ? flat : c * h * w);
  }
  return largest * static_cast<std::int64_t>(sizeof(float));
}

std::int64_t images_per_pass(const nn::Sequential& model, std::array<std::int64_t, 3> chw, const Device& dev,
                             std::int64_t cap) {
  const std::int64_t per_image = forward_bytes_per_image(model, chw);
  return std::clamp<std::int64_t>(dev.caps().max_ssbo_block_size / per_image, 1, cap);
}

}  // namespace demo
