// Dynamic loss scaling (torch.cuda.amp.GradScaler semantics): see nn.hpp.
#include <cmath>
#include <string>

#include "gltensor/autograd.hpp"
#include "gltensor/errors.hpp"
#include "gltensor/nn.hpp"
#include "gltensor/ops.hpp"
#include "gltensor/reduce.hpp"
#include "nn/grads.hpp"

namespace gltensor::nn {

namespace {
void check_options(const GradScalerOptions& o) {
  auto bad = [](const char* what, double v) {
    return ValueError(std::string("gltensor::GradScaler: ") + what + ", got " + std::to_string(v));
  };
  if (!(o.init_scale > 0) || !std::isfinite(o.init_scale)) throw bad("init_scale must be finite and > 0", o.init_scale);
  if (!(o.growth_factor > 1) || !std::isfinite(o.growth_factor))
    throw bad("growth_factor must be > 1", o.growth_factor);
  if (!(o.backoff_factor > 0 && o.backoff_factor < 1)) throw bad("backoff_factor must be in (0, 1)", o.backoff_factor);
  if (o.growth_interval < 1) throw bad("growth_interval must be >= 1", static_cast<double>(o.growth_interval));
}
}  // namespace

GradScaler::GradScaler(GradScalerOptions o) : o_(o), scale_(o.init_scale) { check_options(o_); }

Tensor GradScaler::scale(const Tensor& loss) const {
  if (!o_.enabled || !loss.defined()) return loss;
  return mul(loss.dtype() == DType::f32 ? loss : loss.to(DType::f32), scale_);
}

void GradScaler::unscale_(Optimizer& opt) {
  if (!o_.enabled) return;
  for (const Pending& p : pending_)
    if (p.opt == &opt)
      throw ValueError("gltensor::GradScaler::unscale_: already called for this optimizer since the last update()");
  NoGradGuard ng;
  Pending p{&opt, Tensor()};
  const double inv = 1.0 / scale_;
  for (Tensor& g : unique_grads(opt.params(), "GradScaler::unscale_")) {
    g *= inv;  // the scale is a power of two (by default): exact
    const Tensor bad = any(logical_not(isfinite(g)));
    p.found_inf = p.found_inf.defined() ? logical_or(p.found_inf, bad) : bad;
  }
  pending_.push_back(p);
}

bool GradScaler::step(Optimizer& opt) {
  if (!o_.enabled) {
    opt.step();
    return true;
  }
  auto it = pending_.begin();
  for (; it != pending_.end(); ++it)
    if (it->opt == &opt) break;
  if (it == pending_.end()) {
    unscale_(opt);
    it = pending_.end() - 1;
  }
  if (it->stepped) throw ValueError("gltensor::GradScaler::step: already called for this optimizer since update()");
  it->stepped = true;
  const bool inf = it->found_inf.defined() && it->found_inf.item() != 0;  // the one read-back
  found_inf_ = found_inf_ || inf;
  if (inf) {
    ++skipped_;
    return false;
  }
  opt.step();
  return true;
}

void GradScaler::update() {
  if (!o_.enabled) return;
  bool inf = found_inf_;
  for (const Pending& p : pending_)  // unscale_d but not stepped: their flags count too (torch)
    if (!p.stepped && p.found_inf.defined()) inf = inf || p.found_inf.item() != 0;
  if (inf) {
    scale_ *= o_.backoff_factor;
    growth_tracker_ = 0;
  } else if (++growth_tracker_ == o_.growth_interval) {
    scale_ *= o_.growth_factor;
    growth_tracker_ = 0;
  }
  pending_.clear();
  found_inf_ = false;
}

}  // namespace gltensor::nn
