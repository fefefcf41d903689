// The SSBO pool's smallest size class (internal, a diagnostic): every buffer the pool makes is
// at least this large (0: the classes of Pool::size_class, 256 bytes and up). For benches that
// ask whether a kernel's speed follows its buffers' sizes or places (gltensor_model_bench
// --pool-min); set before the buffers are made (the free lists are keyed by class).
#pragma once
#include <cstddef>

namespace gltensor::detail {

void set_pool_min_class(std::size_t bytes);
std::size_t pool_min_class();

}  // namespace gltensor::detail
