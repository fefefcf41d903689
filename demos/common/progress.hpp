// A one-line progress bar on stderr ("\r"-redrawn on a terminal, a plain line now and then
// otherwise) that knows whether its line is still open, so that what is printed next starts on
// a line of its own.
#pragma once
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace demo {

class Progress {
 public:
  Progress();
  bool tty() const { return tty_; }
  /// `label` [=====>    ] pct%  `detail`. On a terminal the line stays open for the next update.
  void update(const std::string& label, std::int64_t done, std::int64_t total, const std::string& detail);
  /// Ends an open bar line (call before printing anything else).
  void end_line();

 private:
  bool tty_;
  bool open_ = false;
};

/// m:ss
std::string hms(double seconds);

using Clock = std::chrono::steady_clock;
/// Seconds since t0.
inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
/// printf into a string (lines of up to 511 characters).
inline std::string format(const char* f, auto... args) {
  char b[512];
  std::snprintf(b, sizeof b, f, args...);
  return b;
}

}  // namespace demo
