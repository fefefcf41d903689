// The GPU profiler (profiler.hpp).
#include "runtime/profiler.hpp"

#include <algorithm>
#include <cstdio>

#include "runtime/guard.hpp"

#ifndef GL_TIMESTAMP_EXT
#define GL_TIMESTAMP_EXT 0x8E28
#endif

namespace gltensor::detail {

void Profiler::set_on(DeviceImpl& dev, bool on) {
  if (on && !dev.caps().timer_query)
    throw DeviceError(
        "gltensor::Device::set_profiling: the device has no timer queries (OpenGL ES: EXT_disjoint_timer_query; "
        "desktop OpenGL: 3.3 or ARB_timer_query)");
  if (on && !tq_) {
    tq_ = timer_queries(dev.caps());
    if (!tq_)
      throw DeviceError(std::string("gltensor::Device::set_profiling: the driver lacks ") +
                        (dev.caps().desktop ? "glQueryCounter / glGetQueryObjectui64v"
                                            : "glQueryCounterEXT / glGetQueryObjectui64vEXT"));
    push_group_ = reinterpret_cast<PushGroup>(eglGetProcAddress("glPushDebugGroup"));
    pop_group_ = reinterpret_cast<PopGroup>(eglGetProcAddress("glPopDebugGroup"));
    if (!push_group_ || !pop_group_) {
      push_group_ = reinterpret_cast<PushGroup>(eglGetProcAddress("glPushDebugGroupKHR"));
      pop_group_ = reinterpret_cast<PopGroup>(eglGetProcAddress("glPopDebugGroupKHR"));
    }
    if (!dev.caps().debug_output) push_group_ = nullptr, pop_group_ = nullptr;
    (void)tq_.read_disjoint();  // clears the flag
  }
  on_ = on;
  dev.set_profiler(on ? this : nullptr);
}

GLuint Profiler::take_query() {
  GLuint q = 0;
  if (!free_queries_.empty()) {
    q = free_queries_.back();
    free_queries_.pop_back();
  } else {
    glGenQueries(1, &q);
  }
  return q;
}

void Profiler::begin(DeviceImpl&, const char* op, const std::string& kernel) {
  if (push_group_) push_group_(GL_DEBUG_SOURCE_APPLICATION, 0, -1, op);
  const GLuint start = take_query();
  tq_.counter(start, GL_TIMESTAMP_EXT);
  pending_.push_back({start, 0, kernel, op, scopes_.empty() ? std::string(op) : scopes_.back()});
}

void Profiler::end(DeviceImpl& dev) {
  pending_.back().stop = take_query();
  tq_.counter(pending_.back().stop, GL_TIMESTAMP_EXT);
  if (pop_group_) pop_group_();
  if (pending_.size() > 4096) collect(dev, false);
}

void Profiler::collect(DeviceImpl&, bool wait) {
  const bool disjoint = tq_.read_disjoint();
  if (disjoint) ++disjoint_;
  while (!pending_.empty()) {
    Pending& p = pending_.front();
    if (!wait) {
      GLuint available = 0;
      glGetQueryObjectuiv(p.stop, GL_QUERY_RESULT_AVAILABLE, &available);
      if (!available) break;
    }
    GLuint64 t0 = 0, t1 = 0;
    tq_.get_u64(p.start, GL_QUERY_RESULT, &t0);
    tq_.get_u64(p.stop, GL_QUERY_RESULT, &t1);
    if (!disjoint) {
      const double ms = t1 > t0 ? static_cast<double>(t1 - t0) * 1e-6 : 0.0;
      for (auto* m : {&by_kernel_, &by_op_, &by_scope_}) {
        const std::string& key = m == &by_kernel_ ? p.kernel : m == &by_op_ ? p.op : p.scope;
        Row& r = (*m)[key];
        ++r.calls;
        r.ms += ms;
      }
    }
    free_queries_.push_back(p.start);
    free_queries_.push_back(p.stop);
    pending_.pop_front();
  }
}

ProfileReport Profiler::report(DeviceImpl& dev) {
  dev.queue().flush();
  collect(dev, true);
  ProfileReport r;
  auto rows = [&](const std::map<std::string, Row>& m) {
    std::vector<ProfileRow> out;
    double total = 0;
    for (const auto& [k, v] : m) total += v.ms;
    for (const auto& [k, v] : m) out.push_back({k, v.calls, v.ms, total > 0 ? v.ms / total : 0});
    std::sort(out.begin(), out.end(), [](const ProfileRow& a, const ProfileRow& b) { return a.gpu_ms > b.gpu_ms; });
    r.total_ms = total;
    return out;
  };
  r.by_scope = rows(by_scope_);
  r.by_op = rows(by_op_);
  r.by_kernel = rows(by_kernel_);
  r.disjoint_events = disjoint_;
  return r;
}

void Profiler::reset() {
  by_kernel_.clear();
  by_op_.clear();
  by_scope_.clear();
  disjoint_ = 0;
}

void Profiler::free_gl() {
  for (auto& p : pending_) {
    free_queries_.push_back(p.start);
    if (p.stop) free_queries_.push_back(p.stop);
  }
  pending_.clear();
  if (!free_queries_.empty()) glDeleteQueries(static_cast<GLsizei>(free_queries_.size()), free_queries_.data());
  free_queries_.clear();
}

}  // namespace gltensor::detail

namespace gltensor {

std::string ProfileReport::table() const {
  std::string out;
  char line[256];
  auto section = [&](const char* title, const std::vector<ProfileRow>& rows) {
    std::snprintf(line, sizeof line, "%-36s %10s %12s %8s\n", title, "calls", "GPU ms", "share");
    out += line;
    for (const ProfileRow& r : rows) {
      std::snprintf(line, sizeof line, "%-36.36s %10llu %12.3f %7.1f%%\n", r.name.c_str(),
                    static_cast<unsigned long long>(r.calls), r.gpu_ms, 100 * r.share);
      out += line;
    }
  };
  std::snprintf(line, sizeof line, "GPU time %.3f ms%s\n", total_ms,
                disjoint_events ? " (some timings dropped: GPU disjoint)" : "");
  out += line;
  bool scoped = false;
  for (std::size_t i = 0; i < by_scope.size() && !scoped; ++i)
    scoped = i >= by_op.size() || by_scope[i].name != by_op[i].name;
  if (scoped) section("scope", by_scope);
  section("op", by_op);
  section("kernel", by_kernel);
  return out;
}

ProfileScope::ProfileScope(const Device& dev, std::string name) : dev_(dev.impl()) {
  if (auto* p = dev_->find_extension<detail::Profiler>(); p && p->on()) {
    p->push_scope(std::move(name));
    active_ = true;
  }
}

ProfileScope::~ProfileScope() {
  if (!active_) return;
  if (auto* p = dev_->find_extension<detail::Profiler>()) p->pop_scope();
}

void Device::set_profiling(bool on) {
  detail::Enter e(*impl_, "Device::set_profiling");
  impl_->extension<detail::Profiler>().set_on(*impl_, on);
}

ProfileReport Device::profile() {
  detail::Enter e(*impl_, "Device::profile");
  return impl_->extension<detail::Profiler>().report(*impl_);
}

void Device::reset_profile() {
  detail::Enter e(*impl_, "Device::reset_profile");
  auto& p = impl_->extension<detail::Profiler>();
  p.report(*impl_);  // collect what is pending first
  p.reset();
}

}  // namespace gltensor
