#include "npy_io.hpp"

#include <cstdint>
#include <stdexcept>
#include <xtensor/xadapt.hpp>
#include <xtensor/xarray.hpp>
#include <xtensor/xnpy.hpp>

namespace gltensor::npy {

namespace {

template <typename T>
bool try_load(const std::string& path, std::vector<T>& out, Shape& shape) {
  try {
    auto a = xt::load_npy<T>(path);
    shape.assign(a.shape().begin(), a.shape().end());
    out.assign(a.begin(), a.end());
    return true;
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).find("Cast error") != std::string::npos) return false;
    throw std::runtime_error(path + ": " + e.what());
  }
}

std::vector<std::size_t> xshape(const Shape& s) { return {s.begin(), s.end()}; }

}  // namespace

std::vector<float> read_floats(const std::string& path, Shape& shape) {
  std::vector<float> f;
  if (try_load(path, f, shape)) return f;
  std::vector<double> d;
  if (try_load(path, d, shape)) return {d.begin(), d.end()};
  std::vector<std::int32_t> i;
  if (try_load(path, i, shape)) return {i.begin(), i.end()};
  std::vector<std::int64_t> l;
  if (try_load(path, l, shape)) return {l.begin(), l.end()};
  std::vector<std::uint8_t> u;
  if (try_load(path, u, shape)) return {u.begin(), u.end()};
  throw std::runtime_error(path + ": unsupported .npy dtype (float32/64, int32/64, uint8, bool)");
}

Tensor read(const Device& dev, const std::string& path) {
  Shape shape;
  std::vector<float> f;
  if (try_load(path, f, shape)) return Tensor::from_host(dev, f, shape);
  std::vector<double> d;
  if (try_load(path, d, shape)) return Tensor::from_host(dev, std::vector<float>(d.begin(), d.end()), shape);
  std::vector<std::int32_t> i;
  if (try_load(path, i, shape)) return Tensor::from_host(dev, std::span<const std::int32_t>(i), shape);
  std::vector<std::int64_t> l;
  if (try_load(path, l, shape)) {
    std::vector<std::int32_t> w(l.size());
    for (std::size_t k = 0; k < l.size(); ++k) {
      if (l[k] > INT32_MAX || l[k] < INT32_MIN) throw std::runtime_error(path + ": int64 value does not fit int32");
      w[k] = static_cast<std::int32_t>(l[k]);
    }
    return Tensor::from_host(dev, std::span<const std::int32_t>(w), shape);
  }
  std::vector<bool> b;
  if (try_load(path, b, shape)) {
    std::vector<std::uint8_t> u(b.begin(), b.end());
    return Tensor::from_host(dev, std::span<const std::uint8_t>(u), shape, DType::bool_);
  }
  std::vector<std::uint8_t> u;
  if (try_load(path, u, shape)) return Tensor::from_host(dev, std::span<const std::uint8_t>(u), shape);
  throw std::runtime_error(path + ": unsupported .npy dtype (float32/64, int32/64, uint8, bool)");
}

void write_floats(const std::string& path, const std::vector<float>& v, const Shape& shape) {
  xt::dump_npy(path, xt::adapt(v, xshape(shape)));
}

void write(const std::string& path, const Tensor& t) {
  const auto s = xshape(t.shape());
  if (is_floating(t.dtype())) {
    xt::dump_npy(path, xt::adapt(t.to_vector(), s));
  } else if (t.dtype() == DType::i32) {
    xt::dump_npy(path, xt::adapt(t.to_int_vector(), s));
  } else {
    auto bytes = t.to_bytes();
    if (t.dtype() == DType::bool_) {
      xt::xarray<bool> a = xt::adapt(std::vector<bool>(bytes.begin(), bytes.end()), s);
      xt::dump_npy(path, a);
    } else {
      xt::dump_npy(path, xt::adapt(bytes, s));
    }
  }
}

}  // namespace gltensor::npy
