// Autocast scopes (torch.autocast semantics): per-thread state and the casts of the two op lists.
#include "ops/autocast.hpp"

#include "gltensor/autocast.hpp"
#include "gltensor/errors.hpp"

namespace gltensor {

namespace {
thread_local bool g_enabled = false;
thread_local DType g_dtype = DType::f16;
}  // namespace

Autocast::Autocast(bool enabled, DType dtype) : prev_enabled_(g_enabled), prev_dtype_(g_dtype) {
  if (dtype != DType::f16 && dtype != DType::bf16)
    throw ValueError(std::string("gltensor::Autocast: dtype must be float16 or bfloat16, got ") + dtype_name(dtype));
  g_enabled = enabled;
  g_dtype = dtype;
}

Autocast::~Autocast() {
  g_enabled = prev_enabled_;
  g_dtype = prev_dtype_;
}

bool autocast_enabled() { return g_enabled; }
DType autocast_dtype() { return g_dtype; }

namespace detail {

Tensor autocast_low(const Tensor& t) { return g_enabled && t.defined() && t.dtype() == DType::f32 ? t.to(g_dtype) : t; }

Tensor autocast_f32(const Tensor& t) {
  return g_enabled && t.defined() && (t.dtype() == DType::f16 || t.dtype() == DType::bf16) ? t.to(DType::f32) : t;
}

bool autocast_changes_low(std::initializer_list<const Tensor*> ts) {
  if (!g_enabled) return false;
  for (const Tensor* t : ts)
    if (t->defined() && t->dtype() == DType::f32) return true;
  return false;
}

bool autocast_changes_f32(std::initializer_list<const Tensor*> ts) {
  if (!g_enabled) return false;
  for (const Tensor* t : ts)
    if (t->defined() && (t->dtype() == DType::f16 || t->dtype() == DType::bf16)) return true;
  return false;
}

}  // namespace detail
}  // namespace gltensor
