// Tuner: kernel variants measured on first use (tuner.hpp).
#include "runtime/tuner.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <system_error>

#include "runtime/settings.hpp"

namespace gltensor::detail {

void Tuner::load(DeviceImpl& dev) {
  loaded_ = true;
  const std::filesystem::path dir = settings().cache_dir;
  if (dir.empty()) return;
  char name[48];
  std::snprintf(name, sizeof name, "tuning-%016llx.txt",
                static_cast<unsigned long long>(
                    fnv1a(dev.caps().renderer + '\n' + dev.caps().version + '\n' + dev.caps().vendor)));
  file_ = dir / name;
  std::ifstream in(file_);
  std::string key;
  int v = 0;
  while (in >> key >> v) choices_[key] = v;
}

void Tuner::run(DeviceImpl& dev, const std::string& key, int n, const std::function<void(int)>& op) {
  const int tune = settings().tune;
  const bool on = tune >= 0 ? tune == 1 : !dev.adapter().software;
  if (!on || n < 2) {
    op(0);
    return;
  }
  if (!loaded_) load(dev);
  if (auto it = choices_.find(key); it != choices_.end() && it->second >= 0 && it->second < n) {
    op(it->second);
    return;
  }
  int best = 0;
  double best_s = 0;
  for (int v = 0; v < n; ++v) {
    op(v);  // compiles, warms up
    glFinish();
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < 3; ++r) op(v);
    glFinish();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (v == 0 || s < best_s) {
      best = v;
      best_s = s;
    }
  }
  choices_[key] = best;
  ++measured_;
  dev.log(LogLevel::info, "tuned " + key + ": variant " + std::to_string(best));
  if (!file_.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(file_.parent_path(), ec);
    std::ofstream(file_, std::ios::app) << key << ' ' << best << '\n';
  }
  if (best != n - 1) op(best);
}

}  // namespace gltensor::detail
