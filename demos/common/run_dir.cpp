#include "run_dir.hpp"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

namespace demo {
namespace fs = std::filesystem;

namespace {

void create(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw std::runtime_error("cannot create the output folder " + dir.string() + ": " +
                             (ec ? ec.message() : "a file of that name exists"));
}

}  // namespace

std::string claim_output_dir(const std::string& explicit_dir, const std::string& base, const std::string& name,
                             const std::vector<std::string>& files, bool overwrite) {
  if (!explicit_dir.empty()) {
    const fs::path dir(explicit_dir);
    if (!overwrite)
      for (const auto& f : files)
        if (fs::exists(dir / f))
          throw std::runtime_error((dir / f).string() +
                                   " already exists (the output of an earlier run); choose another --out, leave "
                                   "--out out (each run then gets a new folder under " +
                                   base + "/), or pass --overwrite to replace it");
    create(dir);
    return dir.string();
  }
  create(base);
  const std::string prefix = name + "-";
  long last = 0;
  for (const auto& e : fs::directory_iterator(base)) {
    const std::string s = e.path().filename().string();
    if (s.size() > prefix.size() && s.compare(0, prefix.size(), prefix) == 0 &&
        s.find_first_not_of("0123456789", prefix.size()) == std::string::npos)
      last = std::max(last, std::stol(s.substr(prefix.size())));
  }
  for (long n = last + 1;; ++n) {
    const fs::path dir = fs::path(base) / (prefix + std::to_string(n));
    std::error_code ec;
    if (fs::create_directory(dir, ec)) return dir.string();
    if (ec) throw std::runtime_error("cannot create the output folder " + dir.string() + ": " + ec.message());
  }
}

}  // namespace demo
