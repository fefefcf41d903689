#include "progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace demo {

Progress::Progress() : tty_(::isatty(2) != 0) {}

void Progress::update(const std::string& label, std::int64_t done, std::int64_t total, const std::string& detail) {
  constexpr int kWidth = 28;
  total = std::max<std::int64_t>(total, 1);
  const int fill = static_cast<int>(kWidth * done / total);
  std::string bar(static_cast<std::size_t>(fill), '=');
  if (fill < kWidth) bar += '>';
  bar.resize(kWidth, ' ');
  std::fprintf(stderr, "%s%s [%s] %3d%%  %s%s", tty_ ? "\r" : "", label.c_str(), bar.c_str(),
               static_cast<int>(100 * done / total), detail.c_str(), tty_ ? "\033[K" : "\n");
  std::fflush(stderr);
  open_ = tty_;
}

void Progress::end_line() {
  if (open_) std::fputc('\n', stderr);
  open_ = false;
}

std::string hms(double seconds) {
  char b[32];
  const int t = static_cast<int>(seconds);
  std::snprintf(b, sizeof b, "%d:%02d", t / 60, t % 60);
  return b;
}

}  // namespace demo
