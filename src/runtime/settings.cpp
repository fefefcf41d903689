#include "runtime/settings.hpp"

#include <cstdlib>

namespace gltensor::detail {

namespace {
std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}
}  // namespace

Settings Settings::from_env() {
  Settings s;
  s.device = env("GLTENSOR_DEVICE");
  s.api = env("GLTENSOR_API");
  if (const char* d = std::getenv("GLTENSOR_CACHE_DIR")) {
    if (std::string(d) != "off" && *d) s.cache_dir = d;
  } else if (const std::string x = env("XDG_CACHE_HOME"); !x.empty()) {
    s.cache_dir = std::filesystem::path(x) / "gltensor";
  } else if (const std::string h = env("HOME"); !h.empty()) {
    s.cache_dir = std::filesystem::path(h) / ".cache" / "gltensor";
  }
  s.full_barriers = env("GLTENSOR_FULL_BARRIERS") == "1";
  s.matmul_kernel = env("GLTENSOR_MATMUL_KERNEL");
  s.qlinear_kernel = env("GLTENSOR_QLINEAR_KERNEL");
  s.conv = env("GLTENSOR_CONV");
  s.conv_direct = env("GLTENSOR_CONV_DIRECT");
  if (const std::string t = env("GLTENSOR_TUNE"); !t.empty()) s.tune = t[0] == '0' ? 0 : 1;
  s.attention_composite = env("GLTENSOR_ATTENTION") == "composite";
  s.attention_bq = std::atoi(env("GLTENSOR_ATTENTION_BQ").c_str()) == 32 ? 32 : 0;
  s.attention_keys = std::atoi(env("GLTENSOR_ATTENTION_KEYS").c_str()) == 32 ? 32 : 0;
  {
    const int tile = std::atoi(env("GLTENSOR_ATTENTION_TILE").c_str());
    s.attention_tile = tile == 4 || tile == 8 || tile == 16 ? tile : 0;
  }
  s.subgroups = env("GLTENSOR_SUBGROUPS") != "0";
  s.dump_source = env("GLTENSOR_DUMP_SOURCE");
  s.glsl_dir = env("GLTENSOR_GLSL_DIR");
  s.precision = env("GLTENSOR_PRECISION");
  s.profile = env("GLTENSOR_PROFILE") == "1";
  s.model_trace = env("GLTENSOR_MODEL_TRACE") == "1";
  return s;
}

Settings& settings() {
  static Settings s = Settings::from_env();
  return s;
}

}  // namespace gltensor::detail
