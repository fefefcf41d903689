// gltensor::Recording (recording.hpp): capture through the queue's capture hook, replay through
// Queue::replay.
#include "gltensor/recording.hpp"

#include <string>
#include <vector>

#include "gltensor/errors.hpp"
#include "runtime/capture.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/error_flags.hpp"
#include "runtime/guard.hpp"
#include "runtime/storage.hpp"

namespace gltensor {

using detail::Capture;

Recording Recording::capture(const Device& dev, const std::function<void()>& work) {
  detail::DeviceImpl& d = *dev.impl();
  detail::Enter guard(d, "Recording::capture");
  if (d.queue().capture())
    throw CaptureError("gltensor::Recording::capture: a capture is already in progress on this device");
  auto c = std::make_shared<Capture>(dev.impl());
  d.queue().set_capture(c.get());
  try {
    work();
  } catch (...) {
    d.queue().set_capture(nullptr);
    throw;
  }
  d.queue().set_capture(nullptr);
  c->finish();
  return Recording(std::move(c));
}

namespace {
// The captured ops' host-side steps (KVCache's count), all captures' before any dispatch: one that
// throws (a typed error, e.g. KVCache's max_len) leaves the device untouched and every step run
// before it, of any capture, undone.
void run_host_steps(std::span<const detail::Capture* const> cs) {
  std::vector<const detail::Capture::HostStep*> ran;
  try {
    for (const detail::Capture* c : cs)
      for (const auto& step : c->host_steps) {
        step.run();
        ran.push_back(&step);
      }
  } catch (...) {
    while (!ran.empty()) {
      if (const auto& undo = ran.back()->undo) undo();
      ran.pop_back();
    }
    throw;
  }
}
}  // namespace

void Recording::replay() const { detail::RecordingAccess::replay(*this, {}); }

void detail::RecordingAccess::replay(const Recording& r, std::span<const Rebind> rebinds) {
  const Capture* c = r.c_.get();
  if (!c || c->steps.empty()) return;
  detail::DeviceImpl& d = *c->dev;
  detail::Enter guard(d, "Recording::replay");
  if (d.queue().capture())
    throw CaptureError("gltensor::Recording::replay: replaying a recording while another is being captured");
  run_host_steps({&c, 1});
  d.queue().replay(*c, rebinds);
  if (!c->expects.empty()) {
    auto& flags = d.extension<detail::ErrorFlags>();
    for (const auto& e : c->expects) flags.expect(d, e.op.c_str(), e.bit);
  }
}

void Recording::replay_together(std::span<const Recording* const> recordings) {
  detail::RecordingAccess::replay_together(recordings, {});
}

void detail::RecordingAccess::replay_together(std::span<const Recording* const> rs,
                                              std::span<const std::vector<Rebind>> rebinds) {
  std::vector<const Capture*> cs;
  std::vector<std::vector<Rebind>> rb;
  for (std::size_t i = 0; i < rs.size(); ++i) {
    if (!rs[i])
      throw ValueError("gltensor::Recording::replay_together: recording " + std::to_string(i) + " of " +
                       std::to_string(rs.size()) + " is a null pointer");
    const Capture* c = rs[i]->c_.get();
    if (!c || c->steps.empty()) continue;
    if (!cs.empty() && c->dev != cs.front()->dev)
      throw ValueError("gltensor::Recording::replay_together: recording " + std::to_string(i) +
                       " is of another device than recording 0's");
    cs.push_back(c);
    if (!rebinds.empty()) rb.push_back(rebinds[i]);
  }
  if (cs.empty()) return;
  detail::DeviceImpl& d = *cs.front()->dev;
  detail::Enter guard(d, "Recording::replay_together");
  if (d.queue().capture())
    throw CaptureError("gltensor::Recording::replay_together: replaying recordings while another is being captured");
  run_host_steps(cs);
  d.queue().replay_together(cs, rb);
  for (const Capture* c : cs)
    if (!c->expects.empty()) {
      auto& flags = d.extension<detail::ErrorFlags>();
      for (const auto& e : c->expects) flags.expect(d, e.op.c_str(), e.bit);
    }
}

std::size_t Recording::dispatches() const { return c_ ? c_->dispatches : 0; }
std::size_t Recording::barriers() const { return c_ ? c_->barriers : 0; }
std::size_t Recording::buffers() const { return c_ ? c_->buffers.size() : 0; }
std::size_t Recording::bytes() const {
  std::size_t n = 0;
  if (c_) {
    for (const auto& h : c_->held) n += h.raw->block.capacity;
    for (const auto& b : c_->owned) n += b.capacity;
  }
  return n;
}

}  // namespace gltensor
