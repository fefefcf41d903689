// The loop limit: what the driver does past it (Mesa's gallivm counts every loop iteration of an
// invocation in one counter and leaves all loops at 65535), and what the launch layer does with
// a kernel that would loop longer (LimitError instead of a silently truncated result).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/device_impl.hpp"
#include "runtime/error_flags.hpp"
#include "runtime/glsl_text.hpp"
#include "runtime/guard.hpp"
#include "runtime/launch.hpp"
#include "runtime/loop_probe.hpp"
#include "runtime/settings.hpp"
#include "tensor/tensor_impl.hpp"
#include "test_util.hpp"

using namespace glt_test;
using namespace gltensor;

namespace {

// Runs one invocation of a kernel with two loops in sequence, the second nested
// (n1 iterations, then n2 x n3), each storing its trip count; returns the counts it ran.
std::vector<std::uint32_t> run_loops(Device& dev, std::uint32_t n1, std::uint32_t n2, std::uint32_t n3) {
  auto& impl = *dev.impl();
  detail::Enter enter(impl, "test");
  const std::string src =
      "#version 310 es\nlayout(local_size_x = 1) in;\n"
      "layout(std430, binding = 0) buffer Counts { uint c[]; };\n"
      "uniform uint u_n1;\nuniform uint u_n2;\nuniform uint u_n3;\n"
      "void main() {\n"
      "  for (uint i = 0u; i < u_n1; ++i) c[0] = i + 1u;\n"
      "  for (uint i = 0u; i < u_n2; ++i)\n"
      "    for (uint j = 0u; j < u_n3; ++j) c[1] = i * u_n3 + j + 1u;\n"
      "}\n";
  const GLuint prog = detail::ProgramCache::compile("loop_limit_probe", src);
  GLuint buf = 0;
  glGenBuffers(1, &buf);
  glBindBuffer(GL_SHADER_STORAGE_BUFFER, buf);
  const std::uint32_t zero[2] = {0, 0};
  glBufferData(GL_SHADER_STORAGE_BUFFER, sizeof zero, zero, GL_DYNAMIC_READ);
  glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, buf);
  glUseProgram(prog);
  glUniform1ui(glGetUniformLocation(prog, "u_n1"), n1);
  glUniform1ui(glGetUniformLocation(prog, "u_n2"), n2);
  glUniform1ui(glGetUniformLocation(prog, "u_n3"), n3);
  glDispatchCompute(1, 1, 1);
  glMemoryBarrier(GL_ALL_BARRIER_BITS);
  glBindBuffer(GL_COPY_READ_BUFFER, buf);
  std::vector<std::uint32_t> out(2, 0);
  if (auto* p = static_cast<const std::uint32_t*>(glMapBufferRange(GL_COPY_READ_BUFFER, 0, 8, GL_MAP_READ_BIT))) {
    out = {p[0], p[1]};
    glUnmapBuffer(GL_COPY_READ_BUFFER);
  }
  glUseProgram(0);
  glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, 0);
  glDeleteBuffers(1, &buf);
  glDeleteProgram(prog);
  return out;
}

}  // namespace

// The cause of the issue "Correctness on llvmpipe": on llvmpipe one invocation runs 65535 loop
// iterations in all, its loops together (a nested loop's iterations count, and so do the outer
// loop's and each loop's exit test), then leaves every loop without an error.
// Capabilities::max_loop_iterations says so.
TEST(LoopLimit, DriverCountsEveryLoopOfAnInvocation) {
  Device& dev = device();
  const std::uint64_t limit = dev.caps().max_loop_iterations;
  // Within the limit: every loop runs to its end.
  EXPECT_EQ(run_loops(dev, 1000, 30, 300), (std::vector<std::uint32_t>{1000, 9000}));
  const auto got = run_loops(dev, 70000, 200, 200);
  if (limit == 0) {
    EXPECT_EQ(got, (std::vector<std::uint32_t>{70000, 40000})) << dev.adapter().renderer;
    return;
  }
  EXPECT_EQ(limit, 65535u);
  // The first loop stops at the limit; the nested loop after it runs one inner iteration (each
  // loop runs its body once before the counter is checked).
  EXPECT_EQ(got[0], 65535u);
  EXPECT_LE(got[1], 1u);
  // A loop of n trips counts n + 1 (its exit test is one more pass through the loop): 40000
  // trips leave 25534 for the 200 x 200 nest after it, whose outer trips count 202 each (200 + 1
  // inner, 1 outer): 126 of them, then 82 inner trips.
  const auto nested = run_loops(dev, 40000, 200, 200);
  EXPECT_EQ(nested[0], 40000u);
  EXPECT_EQ(nested[1], 126u * 200 + 82);
}

// The probe's answer is kept in the cache folder under the renderer, version and vendor strings,
// so that later processes open without it: software renderers only (GPU drivers: no limit, not
// probed).
TEST(LoopLimit, ProbedLimitIsKeptInTheCacheFolder) {
  Device& dev = device();
  if (!dev.adapter().software) {
    EXPECT_EQ(dev.caps().max_loop_iterations, 0u) << dev.adapter().renderer;
    GTEST_SKIP() << "GPUs are not probed";
  }
  const auto& dir = detail::settings().cache_dir;
  if (dir.empty()) GTEST_SKIP() << "no cache folder (GLTENSOR_CACHE_DIR=off)";
  const std::string key = detail::loop_limit_key(dev.caps());
  const auto kept = detail::read_loop_limit(detail::loop_limit_file(dir, key), key);
  ASSERT_TRUE(kept.has_value()) << detail::loop_limit_file(dir, key);
  EXPECT_EQ(*kept, dev.caps().max_loop_iterations);
}

// The answer file: what is written is read back for its key only; a missing, foreign or
// unreadable file is no answer.
TEST(LoopLimit, AnswerFileKeepsALimitPerKey) {
  const auto dir = std::filesystem::temp_directory_path() / ("gltensor-loop-limit-" + std::to_string(::getpid()));
  const std::string key = "llvmpipe (LLVM 15.0.6, 256 bits)|OpenGL ES 3.2 Mesa 22.3.6|Mesa/X.org";
  const auto file = detail::loop_limit_file(dir, key);
  EXPECT_EQ(file.parent_path(), dir);
  EXPECT_NE(file, detail::loop_limit_file(dir, key + "x"));
  EXPECT_FALSE(detail::read_loop_limit(file, key).has_value());  // none yet
  for (std::uint64_t limit : {65535u, 0u, 4242u}) {
    detail::write_loop_limit(file, key, limit);
    EXPECT_EQ(detail::read_loop_limit(file, key), std::optional<std::uint64_t>(limit));
  }
  EXPECT_FALSE(detail::read_loop_limit(file, "llvmpipe|OpenGL ES 3.2 Mesa 25.0.7|Mesa").has_value());
  std::ofstream(file) << "not a number\n" << key << "\n";
  EXPECT_FALSE(detail::read_loop_limit(file, key).has_value());
  EXPECT_TRUE(detail::loop_limit_file({}, key).empty());
  EXPECT_FALSE(detail::read_loop_limit({}, key).has_value());
  detail::write_loop_limit({}, key, 1);  // no folder: nothing written, no error
  std::filesystem::remove_all(dir);
}

// A later process takes the kept answer instead of probing: this test program runs itself with a
// cache folder whose answer for this renderer is 4242 (no driver's limit), running
// LoopLimit.KeptAnswerIsTaken, which checks that its device reports it.
TEST(LoopLimit, LaterProcessTakesTheKeptAnswer) {
  Device& dev = device();
  if (!dev.adapter().software) GTEST_SKIP() << "GPUs are not probed";
  const auto dir = std::filesystem::temp_directory_path() / ("gltensor-loop-kept-" + std::to_string(::getpid()));
  const std::string key = detail::loop_limit_key(dev.caps());
  detail::write_loop_limit(detail::loop_limit_file(dir, key), key, 4242);
  const std::string cmd = "GLTENSOR_CACHE_DIR=" + dir.string() + " GLTENSOR_TEST_KEPT_LOOP_LIMIT=4242 " +
                          std::filesystem::read_symlink("/proc/self/exe").string() +
                          " --gtest_filter=LoopLimit.KeptAnswerIsTaken 2>&1";
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[512];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    EXPECT_EQ(::pclose(p), 0) << out;
  }
  EXPECT_NE(out.find("[  PASSED  ] 1 test."), std::string::npos) << out;
  std::filesystem::remove_all(dir);
}

TEST(LoopLimit, KeptAnswerIsTaken) {
  const char* want = std::getenv("GLTENSOR_TEST_KEPT_LOOP_LIMIT");
  if (!want) GTEST_SKIP() << "run by LoopLimit.LaterProcessTakesTheKeptAnswer";
  Device dev = Device::open();
  EXPECT_EQ(dev.caps().max_loop_iterations, std::stoull(want));
}

// A kernel that would loop past the device's limit is a LimitError naming the op and kernel,
// before anything is dispatched; the device stays usable. (A limit of 4 is below what any
// kernel of cumsum runs.)
TEST(LoopLimit, LaunchPastTheLimitIsLimitError) {
  Device& dev = device();
  const Tensor x = ones(dev, {100});
  dev.set_loop_limit(4);
  try {
    Tensor y = cumsum(x, 0);
    dev.set_loop_limit(0);
    FAIL() << "expected LimitError";
  } catch (const LimitError& e) {
    dev.set_loop_limit(0);
    const std::string what = e.what();
    EXPECT_NE(what.find("cumsum"), std::string::npos) << what;
    EXPECT_NE(what.find("loop iterations"), std::string::npos) << what;
  }
  EXPECT_EQ(cumsum(x, 0).to_vector().back(), 100.0f);
}

// GLTENSOR_CHECK_LOOPS: kernels count the trips of their LOOP()s, and a launch that declared
// fewer loop iterations than an invocation ran is a LimitError at the next read naming the op,
// the kernel and both counts (the sabotage: a probe kernel of n trips declared one short). The
// honest declaration passes; the device stays usable.
namespace {

struct LoopProbeParams {
  std::int64_t n;
  void set(detail::Uniforms& u) const { u.u32("u_n", n); }
};

void loop_probe(Device& dev, const Tensor& out, std::int64_t n, std::uint64_t declared) {
  detail::Launch launch(*dev.impl(), "loop_probe");
  launch.program("loop_probe.comp", std::string(), {1}).write(out);
  launch.params(LoopProbeParams{n}).loop_iterations(declared).groups(1);
}

}  // namespace

TEST(LoopCheck, UnderDeclaredLaunchFailsAtTheNextRead) {
  const auto dir = std::filesystem::temp_directory_path() / ("gltensor-loop-probe-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "loop_probe.comp") << "layout(local_size_x = LOCAL_X) in;\n"
                                            "layout(std430, binding = 0) buffer Out { float c[]; };\n"
                                            "uniform uint u_n;\n"
                                            "void main() {\n"
                                            "  uint t = 0u;\n"
                                            "  for (uint i = 0u; LOOP(i < u_n); ++i) t += 1u;\n"
                                            "  c[0] = float(t);\n"
                                            "}\n";
  ScopedSettings s;
  s->glsl_dir = dir;
  s->check_loops = true;
  Device dev = Device::open();
  const Tensor out = zeros(dev, {1});
  for (std::int64_t n : {0, 1, 7, 300}) {
    loop_probe(dev, out, n, static_cast<std::uint64_t>(n));  // honest: n trips
    EXPECT_EQ(out.to_vector()[0], static_cast<float>(n));
  }
  for (std::int64_t n : {1, 300}) {
    loop_probe(dev, out, n, static_cast<std::uint64_t>(n) - 1);  // one short
    try {
      (void)out.to_vector();
      FAIL() << "expected LimitError for n = " << n;
    } catch (const LimitError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("loop_probe:"), std::string::npos) << what;
      EXPECT_NE(what.find("loop_probe.comp"), std::string::npos) << what;
      EXPECT_NE(what.find("ran " + std::to_string(n) + " loop iterations"), std::string::npos) << what;
      EXPECT_NE(what.find("the " + std::to_string(n - 1) + " its launch declared"), std::string::npos) << what;
    }
  }
  // Reported once; later launches, and slots reused after the device ran out, check again.
  for (int i = 0; i < static_cast<int>(detail::ErrorFlags::kLoopSlots) + 10; ++i) loop_probe(dev, out, 5, 5);
  EXPECT_EQ(out.to_vector()[0], 5.0f);
  EXPECT_EQ(cumsum(ones(dev, {100}), 0).to_vector().back(), 100.0f);
  loop_probe(dev, out, 5, 4);
  EXPECT_THROW(dev.synchronize(), LimitError);
  // Without the mode, LOOP(c) is (c): the same under-declared launch passes (unchecked).
  s->check_loops = false;
  Device plain = Device::open();
  const Tensor out2 = zeros(plain, {1});
  loop_probe(plain, out2, 300, 3);
  EXPECT_EQ(out2.to_vector()[0], 300.0f);
  std::filesystem::remove_all(dir);
}

// With GLTENSOR_CHECK_LOOPS only the programs that can run a LOOP() get CHECK_LOOPS
// (glsl_reaches_loop: main, the text outside functions, and the functions they name); the others
// compile as without the mode, so that a check_loops entry loads the plain entries' binaries.
TEST(LoopCheck, ProgramsWithoutReachableLoopsAreThePlainOnes) {
  const std::string common =
      "#define LOOP(cond) ((cond) && loop_tick_())\n#define LOOP(cond) (cond)\n"
      "layout(local_size_x = LOCAL_X) in;\nuniform uint u_n;\n";
  const std::string fns =
      "uint looped(uint n) { uint t = 0u; for (uint i = 0u; LOOP(i < n); ++i) t += 1u; return t; }\n"
      "uint twice(uint n) { return looped(n) * 2u; }\n"
      "uint plain(uint n) { return n; }\n";
  EXPECT_FALSE(detail::glsl_reaches_loop(common + "void main() { }\n"));  // LOOP's own definitions
  EXPECT_TRUE(detail::glsl_reaches_loop(common + "void main() { for (uint i = 0u; LOOP(i < u_n); ++i) {} }\n"));
  EXPECT_FALSE(detail::glsl_reaches_loop(common + fns + "void main() { uint x = plain(u_n); }\n"));
  EXPECT_TRUE(detail::glsl_reaches_loop(common + fns + "void main() { uint x = looped(u_n); }\n"));
  EXPECT_TRUE(detail::glsl_reaches_loop(common + fns + "void main() { uint x = twice(u_n); }\n"));  // through a call
  // through a macro (a Variant's header), whichever #if holds it
  EXPECT_TRUE(detail::glsl_reaches_loop("#define OP twice\n" + common + fns + "void main() { uint x = OP(u_n); }\n"));
  EXPECT_TRUE(detail::glsl_reaches_loop(common + "#if 0\n#define OP looped\n#endif\n" + fns +
                                        "void main() { uint x = OP(u_n); }\n"));
  EXPECT_FALSE(detail::glsl_reaches_loop("#define OP plain\n" + common + fns + "void main() { uint x = OP(u_n); }\n"));
  // a comment naming a looping function reaches nothing; what it cannot delimit counts as looping
  EXPECT_FALSE(detail::glsl_reaches_loop(common + fns + "void main() { uint x = plain(u_n); }  // looped\n"));
  EXPECT_TRUE(detail::glsl_reaches_loop(common + fns + "void main() { uint x = plain(u_n);\n"));
  EXPECT_TRUE(detail::glsl_reaches_loop(common + fns));  // no main
  EXPECT_TRUE(detail::glsl_reaches_loop(common + "#define FN(f) uint f(uint n)\nFN(counted) { uint t = 0u; "
                                                 "for (uint i = 0u; LOOP(i < n); ++i) t += 1u; return t; }\n"
                                                 "void main() { uint x = counted(u_n); }\n"));  // a macro's name

  // On a device: a kernel whose main reaches no LOOP() is the plain program (the binary a plain
  // device stored is loaded) and counts nothing; the one that reaches it counts and checks.
  const auto dir = std::filesystem::temp_directory_path() / ("gltensor-loop-reach-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "loop_reach.comp") << "layout(local_size_x = LOCAL_X) in;\nuniform uint u_n;\n"
                                         << "layout(std430, binding = 0) buffer Out { float c[]; };\n"
                                         << fns << "void main() { c[0] = float(OP(u_n)); }\n";
  ScopedSettings s;
  s->glsl_dir = dir;
  s->cache_dir = dir / "cache";
  auto run = [](Device& dev, const char* op, std::int64_t n, std::uint64_t declared) {
    const Tensor out = zeros(dev, {1});
    detail::Launch launch(*dev.impl(), "loop_reach");
    launch.program("loop_reach.comp", std::string("#define OP ") + op + "\n", {1}).write(out);
    launch.params(LoopProbeParams{n}).loop_iterations(declared).groups(1);
    return out.to_vector()[0];
  };
  s->check_loops = false;
  {
    Device plain = Device::open();
    if (!plain.caps().program_binary) GTEST_SKIP() << "no program binary formats";
    EXPECT_EQ(run(plain, "plain", 7, 0), 7.0f);
    EXPECT_EQ(run(plain, "twice", 7, 7), 14.0f);
  }
  s->check_loops = true;
  Device dev = Device::open();
  auto& programs = dev.impl()->programs();
  (void)zeros(dev, {1}).to_vector();  // the fill's program first
  std::size_t hits = programs.binary_cache_hits();
  EXPECT_EQ(run(dev, "plain", 7, 0), 7.0f);  // declared 0: nothing counted
  EXPECT_EQ(programs.binary_cache_hits(), hits + 1) << "the plain device's binary";
  hits = programs.binary_cache_hits();
  EXPECT_EQ(run(dev, "twice", 7, 7), 14.0f);
  EXPECT_EQ(programs.binary_cache_hits(), hits) << "a CHECK_LOOPS program of its own";
  EXPECT_THROW(run(dev, "twice", 7, 6), LimitError);
  std::filesystem::remove_all(dir);
}
