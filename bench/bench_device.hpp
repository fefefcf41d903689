// The benchmarks' device and random generator (one each per process).
#pragma once
#include "gltensor/gltensor.hpp"

namespace gltensor::bench {

inline Device& dev() {
  static Device d = Device::open();
  return d;
}
inline Generator& gen() {
  static Generator g(1);
  return g;
}

}  // namespace gltensor::bench
