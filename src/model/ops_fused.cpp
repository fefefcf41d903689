// The planner's internal ops (domain "gltensor"), never read from a file:
//   MulAdd(x, s, b) = x * s + b in one elementwise op (addcmul), for Mul -> Add chains with
//   constant s and b.
#include "gltensor/ops.hpp"
#include "model/ops.hpp"

namespace gltensor::model {

void register_fused_ops(Registry& m) {
  m["gltensor.MulAdd"] = OpDef{{}, nullptr, nullptr, [](Args& a) {
                                 const Tensor& x = a.t(0);
                                 Tensor r = addcmul(a.t(2), x, a.t(1));
                                 return Ts{r.dtype() == x.dtype() ? r : r.to(x.dtype())};
                               }};
}

}  // namespace gltensor::model
