// The loop limit of a software renderer, measured: Mesa's gallivm up to Mesa 22 gives every shader
// invocation one counter for all its loops (LP_MAX_TGSI_LOOP_ITERATIONS, 65535) and silently
// leaves the loops past it; Mesa 25's llvmpipe has none. A probe kernel of one invocation loops
// kLoopProbe times storing its trip count; fewer trips than asked are the limit. The answer is
// kept per process and in <cache dir>/loop-limit-<hash of renderer, version, vendor>.txt
// (GLTENSOR_CACHE_DIR, as the program binaries), so that later processes open without the probe.
#include "runtime/loop_probe.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "runtime/device_impl.hpp"
#include "runtime/program_cache.hpp"
#include "runtime/settings.hpp"

namespace gltensor::detail {

namespace {

// Past any limit a driver is known to have (Mesa 22: 65535) and short enough to run in a
// millisecond on a CPU.
constexpr std::uint32_t kLoopProbe = 200000;

// The trips the probe ran where the driver cut them (0: it ran them all); nullopt where the probe
// could not compile or read back.
std::optional<std::uint64_t> run_loop_probe(Queue& queue, bool desktop) {
  const std::string src = std::string(desktop ? "#version 430 core\n" : "#version 310 es\n") +
                          "layout(local_size_x = 1) in;\n"
                          "layout(std430, binding = 0) buffer Count { uint c[]; };\n"
                          "uniform uint u_n;\n"
                          "void main() {\n"
                          "  for (uint i = 0u; i < u_n; ++i) c[0] = i + 1u;\n"
                          "}\n";
  GLuint prog = 0;
  try {
    prog = ProgramCache::compile("loop_limit_probe", src);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  GLuint buf = 0;
  glGenBuffers(1, &buf);
  glBindBuffer(GL_SHADER_STORAGE_BUFFER, buf);
  const std::uint32_t zero = 0;
  glBufferData(GL_SHADER_STORAGE_BUFFER, sizeof zero, &zero, GL_DYNAMIC_READ);
  glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, buf);
  glUseProgram(prog);
  glUniform1ui(glGetUniformLocation(prog, "u_n"), kLoopProbe);
  glDispatchCompute(1, 1, 1);
  queue.barrier_unlaunched(GL_ALL_BARRIER_BITS);
  std::optional<std::uint64_t> trips;
  if (const auto* p = static_cast<const std::uint32_t*>(
          glMapBufferRange(GL_SHADER_STORAGE_BUFFER, 0, sizeof zero, GL_MAP_READ_BIT))) {
    trips = *p;
    glUnmapBuffer(GL_SHADER_STORAGE_BUFFER);
  }
  glUseProgram(0);
  glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, 0);
  glBindBuffer(GL_SHADER_STORAGE_BUFFER, 0);
  glDeleteBuffers(1, &buf);
  glDeleteProgram(prog);
  if (!trips) return std::nullopt;
  return *trips < kLoopProbe ? *trips : 0;
}

}  // namespace

std::string loop_limit_key(const Capabilities& c) { return c.renderer + '|' + c.version + '|' + c.vendor; }

std::filesystem::path loop_limit_file(const std::filesystem::path& dir, const std::string& key) {
  if (dir.empty()) return {};
  char name[48];
  std::snprintf(name, sizeof name, "loop-limit-%016llx.txt", static_cast<unsigned long long>(fnv1a(key)));
  return dir / name;
}

std::optional<std::uint64_t> read_loop_limit(const std::filesystem::path& file, const std::string& key) {
  if (file.empty()) return std::nullopt;
  std::ifstream f(file);
  std::uint64_t limit = 0;
  std::string rest, stored;
  if (!(f >> limit) || !std::getline(f, rest) || !std::getline(f, stored) || stored != key) return std::nullopt;
  return limit;
}

void write_loop_limit(const std::filesystem::path& file, const std::string& key, std::uint64_t limit) {
  if (file.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  const std::filesystem::path tmp = file.string() + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << limit << '\n' << key << '\n';
    if (!f) {
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

std::uint64_t DeviceImpl::probe_loop_limit(Queue& queue, const Capabilities& c, bool adopted_context) {
  static std::mutex m;
  static std::map<std::string, std::uint64_t> probed;  // key -> limit
  const std::string key = loop_limit_key(c);
  std::lock_guard<std::mutex> l(m);
  if (auto it = probed.find(key); it != probed.end()) return it->second;
  const std::filesystem::path file = loop_limit_file(settings().cache_dir, key);
  std::optional<std::uint64_t> limit = read_loop_limit(file, key);
  // An adopted context's state is the application's: no probe there. Without an earlier answer,
  // llvmpipe is assumed to be Mesa 22's (the safe side: work split that need not be).
  if (!limit && adopted_context) return c.renderer.find("llvmpipe") != std::string::npos ? 65535 : 0;
  if (!limit) {
    limit = run_loop_probe(queue, c.desktop);
    if (!limit) return 65535;  // not measured: Mesa 22's limit, the lowest known
    write_loop_limit(file, key, *limit);
  }
  probed[key] = *limit;
  return *limit;
}

}  // namespace gltensor::detail
