// The GPU profiler (internal): two timestamp queries (timer_query.hpp: the core entry points on desktop OpenGL,
// EXT_disjoint_timer_query's on OpenGL ES) around every dispatch while it is on (timestamps rather than a
// time-elapsed query: Mesa's llvmpipe times compute dispatches only that way), attributed to the kernel, the op and the
// innermost ProfileScope, and a KHR_debug group named after the op around each dispatch (apitrace and RenderDoc show
// them).
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "gltensor/device.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/timer_query.hpp"

namespace gltensor::detail {

class Profiler : public DeviceExtension {
 public:
  /// Throws DeviceError if the device has no timer queries.
  void set_on(DeviceImpl& dev, bool on);
  bool on() const { return on_; }
  /// Around one dispatch (only while on).
  void begin(DeviceImpl& dev, const char* op, const std::string& kernel);
  void end(DeviceImpl& dev);
  /// Scopes (ProfileScope): rows by the innermost scope's name.
  void push_scope(const std::string& name) { scopes_.push_back(name); }
  void pop_scope() { scopes_.pop_back(); }
  /// Collects every finished query (waiting for all when `wait`), then the report.
  ProfileReport report(DeviceImpl& dev);
  void reset();
  void free_gl() override;

 private:
  struct Pending {
    GLuint start, stop;
    std::string kernel, op, scope;
  };
  struct Row {
    std::uint64_t calls = 0;
    double ms = 0;
  };
  void collect(DeviceImpl& dev, bool wait);
  bool on_ = false;
  std::vector<std::string> scopes_;
  std::deque<Pending> pending_;
  std::vector<GLuint> free_queries_;
  std::map<std::string, Row> by_kernel_, by_op_, by_scope_;
  std::uint64_t disjoint_ = 0;
  GLuint take_query();
  TimerQueries tq_;
  using PushGroup = void(GL_APIENTRY*)(GLenum, GLuint, GLsizei, const GLchar*);
  using PopGroup = void(GL_APIENTRY*)();
  PushGroup push_group_ = nullptr;
  PopGroup pop_group_ = nullptr;
};

}  // namespace gltensor::detail
