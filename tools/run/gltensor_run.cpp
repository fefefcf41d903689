// gltensor-run MODEL.onnx [--input NAME=FILE.npy]... [--shape NAME=1x3x640x640]...
//              [--output-dir DIR] [--bench N] [--warmup W] [--warmup-ms T] [--blocks B] [--read-back] [--profile]
//              [--f16] [--replay] [--seed S]
//              [--gl-messages] [--upload]
// Loads an ONNX model with gltensor::Model, runs it once on the given .npy inputs (or uniform
// [0, 1) random inputs of the given shapes; fixed dims come from the model), prints each
// output's name, shape and min/max/mean, the load and run times and the planner's summary, and
// writes outputs as DIR/<name>.npy, with the dispatches and barriers (glMemoryBarrier) of the run.
// --bench N times N more runs (mean, min, median, 90th percentile, the host time inside Model::run, the process's CPU
// time per run: all its threads, a software rasterizer's included, dispatches and barriers per run) after --warmup W
// untimed ones (default max(3, N / 10), as scripts/packs/torchcmp's PyTorch side: under --replay the second run, the
// capture, is one of them; and the GPU's clocks are up), or as many as take --warmup-ms T ms if more; --blocks B also
// prints the mean of each of B equal blocks of the timed runs, in order (a slow start shows). --replay runs with
// ModelOptions::replay (the run recorded once, replayed). --read-back: each --bench run also reads every
// output back to the host, as PyTorch's timings with `.cpu()` do: --read-into new (the default) reads each output
// with Tensor::to_host into memory allocated for it in that run and not initialized (as `.cpu()` reads into an empty
// tensor), `vector` with Tensor::to_vector (a new vector, zeroed, then filled), `reused` with to_host into one buffer
// per output kept over the runs. --upload: each --bench (and warm-up) run first uploads every input from host memory
// (Tensor::from_bytes of the input's bytes, kept on the host), inside the timed part, as a model fed from host
// memory each frame is (PyTorch: `.cuda()` of a pageable tensor). --gl-messages prints the driver's
// debug messages (KHR_debug: e.g. a shader recompiled for the GL state) as they come, and each one's count at the end.
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <vector>

#include "gltensor/gltensor.hpp"
#include "npy_io.hpp"

namespace fs = std::filesystem;
using namespace gltensor;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// CPU time of the whole process, every thread (llvmpipe runs the kernels on its own threads).
double process_cpu_ms() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return (static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1e3) +
         static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) * 1e-3;
}

std::pair<std::string, std::string> split_kv(const std::string& s, const char* what) {
  const auto eq = s.find('=');
  if (eq == std::string::npos || eq == 0) throw CLI::ValidationError(what, "expected NAME=VALUE, got '" + s + "'");
  return {s.substr(0, eq), s.substr(eq + 1)};
}

Shape parse_shape(const std::string& s) {
  Shape r;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    const auto x = s.find('x', pos);
    const std::string part = s.substr(pos, x == std::string::npos ? std::string::npos : x - pos);
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos)
      throw CLI::ValidationError("--shape", "expected sizes like 1x3x640x640, got '" + s + "'");
    r.push_back(std::stoll(part));
    if (x == std::string::npos) break;
    pos = x + 1;
  }
  return r;
}

std::string file_name(const std::string& value_name) {
  std::string s = value_name;
  for (auto& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  return s + ".npy";
}

std::string mib(std::size_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Run an ONNX model with gltensor (inputs and outputs as NumPy .npy files)"};
  std::string model_path, out_dir;
  std::vector<std::string> input_args, shape_args;
  int bench = 0, warmup = -1, blocks = 0;
  double warmup_ms = 0;
  bool profile = false, f16 = false, replay = false, read_back = false;
  std::string read_into = "new";
  unsigned seed = 1;
  app.add_option("model", model_path, "the .onnx file")->required()->check(CLI::ExistingFile);
  app.add_option("--input", input_args, "NAME=FILE.npy: a graph input from a .npy file");
  app.add_option("--shape", shape_args, "NAME=1x3x640x640: shape of a random input (and of the model's dynamic dims)");
  app.add_option("--output-dir", out_dir, "write each output as DIR/<name>.npy");
  app.add_option("--bench", bench, "time N further runs")->check(CLI::NonNegativeNumber);
  app.add_option("--warmup", warmup, "untimed runs before the --bench runs (default max(3, N / 10))")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--warmup-ms", warmup_ms, "warm-up runs go on until they have taken this long (at least --warmup)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--blocks", blocks, "also print the mean of each of B equal blocks of the --bench runs, in order")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--read-back", read_back, "each --bench run also reads every output back to the host");
  app.add_option("--read-into", read_into,
                 "with --read-back: new (Tensor::to_host into memory allocated each run), vector (Tensor::to_vector), "
                 "reused (to_host into one buffer per output)")
      ->check(CLI::IsMember({"new", "vector", "reused"}));
  app.add_flag("--profile", profile,
               "GPU time per node type, op and kernel (timer queries), over the --bench runs (else the first run)");
  app.add_flag("--f16", f16, "store weights as float16 on the GPU");
  app.add_flag("--replay", replay, "record the run once and replay it (ModelOptions::replay)");
  app.add_option("--seed", seed, "seed of the random inputs");
  bool upload = false;
  app.add_flag("--upload", upload, "each --bench run first uploads every input from host memory (timed)");
  bool gl_messages = false;
  app.add_flag("--gl-messages", gl_messages, "print the driver's debug messages (KHR_debug) and their counts");
  CLI11_PARSE(app, argc, argv);
  // the driver's messages by text, with their counts (--gl-messages)
  const auto messages = std::make_shared<std::map<std::string, std::uint64_t>>();
  try {
    std::map<std::string, std::string> files;
    ModelOptions opt;
    opt.f16_weights = f16;
    opt.replay = replay;
    for (const auto& s : input_args) files.insert(split_kv(s, "--input"));
    for (const auto& s : shape_args) {
      auto [name, v] = split_kv(s, "--shape");
      opt.input_shapes[name] = parse_shape(v);
    }
    Device dev = Device::open();
    std::printf("device: %s\n", dev.caps().renderer.c_str());
    if (gl_messages)
      dev.set_logger([messages](LogLevel, const std::string& m) {
        if ((*messages)[m]++ == 0) std::fprintf(stderr, "gl message: %s\n", m.c_str());
      });
    auto t0 = Clock::now();
    Model model = Model::load(dev, model_path, opt);
    const double load_ms = ms_since(t0);
    std::printf("model: %s (opset %d), loaded in %.1f ms, weights %s\n", model_path.c_str(), model.opset(), load_ms,
                mib(model.weight_bytes()).c_str());
    std::printf("plan: %s\n", model.plan_summary().c_str());
    std::map<std::string, Tensor> inputs;
    for (const auto& vi : model.inputs()) {
      auto f = files.find(vi.name);
      if (f != files.end()) {
        inputs[vi.name] = npy::read(dev, f->second);
        files.erase(f);
      } else {
        Shape s = vi.shape;
        for (std::size_t d = 0; d < s.size(); ++d)
          if (s[d] < 0)
            throw std::runtime_error("input '" + vi.name + "' has dynamic dims " + to_string(vi.shape) +
                                     ": give --input " + vi.name + "=FILE.npy or --shape " + vi.name + "=AxBx...");
        Generator gen(seed);
        inputs[vi.name] = rand(dev, s, gen).to(vi.dtype);
      }
      std::printf("input  %-24s %s %s\n", vi.name.c_str(), to_string(inputs[vi.name].shape()).c_str(),
                  dtype_name(inputs[vi.name].dtype()));
    }
    for (const auto& [name, file] : files)
      throw std::runtime_error("--input " + name + ": the model has no such input");
    t0 = Clock::now();
    RunStats first;
    auto outputs = model.run(inputs, &first);
    dev.synchronize();
    const double first_ms = ms_since(t0);
    for (const auto& vi : model.outputs()) {
      const Tensor& t = outputs.at(vi.name);
      auto v = t.to_vector();
      double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0;
      for (float x : v) {
        lo = std::min<double>(lo, x);
        hi = std::max<double>(hi, x);
        sum += x;
      }
      std::printf("output %-24s %s %s min %.6g max %.6g mean %.6g\n", vi.name.c_str(), to_string(t.shape()).c_str(),
                  dtype_name(t.dtype()), lo, hi, v.empty() ? 0.0 : sum / static_cast<double>(v.size()));
      if (!out_dir.empty()) {
        fs::create_directories(out_dir);
        npy::write((fs::path(out_dir) / file_name(vi.name)).string(), t);
      }
    }
    std::printf("dispatches: %llu per run, barriers: %llu per run (first run)\n",
                static_cast<unsigned long long>(first.dispatches), static_cast<unsigned long long>(first.barriers));
    std::printf("run: %.1f ms (first run, kernels compiled or read from the cache)\n", first_ms);
    std::printf("memory: peak intermediates %s (sum of all intermediates %s)\n", mib(first.peak_bytes).c_str(),
                mib(first.total_intermediate_bytes).c_str());
    // --read-back: every output to the host, as --read-into says
    std::map<std::string, std::vector<unsigned char>> reused;
    const auto read_outputs = [&](const std::map<std::string, Tensor>& outs) {
      for (const auto& [name, t] : outs) {
        const std::size_t nbytes = static_cast<std::size_t>(t.numel()) * itemsize(t.dtype());
        if (read_into == "vector") {
          (void)t.to_vector();
        } else if (read_into == "reused") {
          std::vector<unsigned char>& r = reused[name];
          r.resize(nbytes);
          t.to_host(r.data(), nbytes);
        } else {
          const std::unique_ptr<unsigned char[]> p(new unsigned char[nbytes]);
          t.to_host(p.get(), nbytes);
        }
      }
    };
    // --upload: every input's bytes on the host, uploaded again before each run
    std::map<std::string, std::vector<std::uint8_t>> host_inputs;
    if (upload)
      for (const auto& [name, t] : inputs) host_inputs[name] = t.to_bytes();
    const auto upload_inputs = [&] {
      for (const auto& [name, b] : host_inputs) {
        const Tensor& t = inputs[name];
        inputs[name] = Tensor::from_bytes(dev, b.data(), b.size(), t.shape(), t.dtype());
      }
    };
    std::vector<double> times;  // the --bench runs' times, in order
    if (bench > 0) {
      // Warm-up runs, untimed and unprofiled, each as a timed run is (the read-back included).
      const auto w0 = Clock::now();
      for (int i = 0, n = warmup >= 0 ? warmup : std::max(3, bench / 10); i < n || ms_since(w0) < warmup_ms; ++i) {
        upload_inputs();
        outputs = model.run(inputs);
        if (read_back)
          read_outputs(outputs);
        else
          dev.synchronize();
      }
      if (profile) dev.set_profiling(true);  // the timings include the profiler's queries
      std::vector<double> cpus;
      double host = 0;
      std::uint64_t dispatches = 0, barriers = 0;
      for (int i = 0; i < bench; ++i) {
        RunStats st;
        const double c0 = process_cpu_ms();
        t0 = Clock::now();
        upload_inputs();
        const auto t_run = Clock::now();
        outputs = model.run(inputs, &st);
        host += ms_since(t_run);
        dispatches += st.dispatches;
        barriers += st.barriers;
        if (read_back)
          read_outputs(outputs);
        else
          dev.synchronize();
        times.push_back(ms_since(t0));
        cpus.push_back(process_cpu_ms() - c0);
      }
      double mean = 0;
      for (double t : times) mean += t;
      mean /= bench;
      const auto n = static_cast<std::uint64_t>(bench);
      std::vector<double> sorted = times;
      std::sort(sorted.begin(), sorted.end());
      const auto pct = [&](double p) { return sorted[static_cast<std::size_t>(p * static_cast<double>(bench - 1))]; };
      std::printf(
          "bench: %d runs%s%s%s, mean %.3f ms, min %.3f ms, median %.3f ms, p90 %.3f ms, host %.3f ms in run(), "
          "process "
          "CPU min %.3f ms, %llu dispatches and %llu barriers per run\n",
          bench, upload ? " (inputs uploaded)" : "", read_back ? " (outputs read back, " : "",
          read_back ? (read_into + ")").c_str() : "", mean, sorted.front(), pct(0.5), pct(0.9), host / bench,
          *std::min_element(cpus.begin(), cpus.end()), static_cast<unsigned long long>(dispatches / n),
          static_cast<unsigned long long>(barriers / n));
    }
    if (bench > 0 && blocks > 0) {
      std::printf("bench blocks (mean ms of %d blocks of runs, in order):", blocks);
      for (int b = 0; b < blocks; ++b) {
        const std::size_t lo = times.size() * b / blocks, hi = times.size() * (b + 1) / blocks;
        double m = 0;
        for (std::size_t i = lo; i < hi; ++i) m += times[i];
        std::printf(" %.3f", hi > lo ? m / static_cast<double>(hi - lo) : 0.0);
      }
      std::printf("\n");
    }
    if (profile) {
      // Timed runs after the first (which compiles kernels): the --bench runs, else one more.
      if (bench == 0) {
        dev.set_profiling(true);
        outputs = model.run(inputs);
      }
      const ProfileReport r = dev.profile();
      dev.set_profiling(false);
      std::printf("profile over %d run(s) (scope: the ONNX node type):\n%s", bench > 0 ? bench : 1, r.table().c_str());
    }
    if (gl_messages) {
      std::printf("driver messages (count, text):\n");
      for (const auto& [m, n] : *messages) std::printf("%8llu  %s\n", static_cast<unsigned long long>(n), m.c_str());
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gltensor-run: %s\n", e.what());
    return 1;
  }
}
