#include "models.hpp"

#include <stdexcept>

namespace demo {
using namespace gltensor;

std::shared_ptr<nn::Sequential> make_model(const std::string& name, const Device& dev, Generator& gen) {
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
        .add(std::make_shared<nn::Dropout>(0.25, gen))
        .add(std::make_shared<nn::Linear>(dev, 128, 10, gen));
  } else {
    throw std::invalid_argument("unknown model '" + name + "' (expected mlp or cnn)");
  }
  return m;
}

}  // namespace demo
