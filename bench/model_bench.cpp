// gltensor_model_bench [--model FILE.onnx] [--shape NAME=AxB...]... [--runs N] [--ort] [--save-model FILE]
// Per-run cost of gltensor::Model: plain runs (every node planned and launched on every run)
// against ModelOptions::replay (the run recorded once and replayed), in one process, three
// interleaved rounds of N runs each, the best round of each kept:
//   host ms   time inside Model::run (planning, launches or the replay's GL calls; on llvmpipe
//             also the kernels, which it runs inside the dispatch calls)
//   cpu ms    CPU time of the calling thread inside Model::run (llvmpipe runs kernels on its own
//             threads: this is gltensor's and the driver's host cost)
//   run ms    Model::run + Device::synchronize (until the GPU has finished)
//   read ms   Model::run + every output read back (as ../shared/gpu/onnx_torch_bench.py times
//             PyTorch: inputs already on the device, outputs to the host)
//   e2e ms    upload the input, run, read every output back
// Without --model it builds the small model: three Gemm layers (MatMul + Add, ReLU
// between them) of width 96 on a [1, 34, 96] input. --ort adds ONNX Runtime's CPU time on the
// same model (node tools/ort-reference/ort_run.js --bench N, every core). Prints a Markdown table.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>

#include "gltensor/gltensor.hpp"
#include "model/onnx_builder.hpp"

using namespace gltensor;
using Clock = std::chrono::steady_clock;

namespace {

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

std::string three_gemm_model(const std::string& path) {
  glt_test::OnnxBuilder m(13);
  m.input("x", {1, 34, 96}).output("y", {1, 34, 96});
  std::vector<float> w(96 * 96), b(96);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 7919 % 1000) / 1000.0 - 0.5) * 0.2f;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 13) * 0.01f;
  std::string in = "x";
  for (int l = 0; l < 3; ++l) {
    const std::string s = std::to_string(l);
    m.init("w" + s, {96, 96}, w).init("b" + s, {96}, b);
    m.node("MatMul", {in, "w" + s}, {"m" + s});
    const std::string out = l == 2 ? "y" : "a" + s;
    m.node("Add", {"m" + s, "b" + s}, {l == 2 ? out : "p" + s});
    if (l < 2) m.node("Relu", {"p" + s}, {out});
    in = out;
  }
  if (path.empty()) return m.save("three_gemm");
  std::ofstream f(path, std::ios::binary);
  f << std::ifstream(m.save("three_gemm"), std::ios::binary).rdbuf();
  return path;
}

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

struct Times {
  double host = 0, cpu = 0, run = 0, read = 0, e2e = 0;
  std::uint64_t dispatches = 0;
};

Times measure(const Device& dev, const std::string& path, bool replay, const std::map<std::string, Shape>& shapes,
              int runs) {
  ModelOptions o;
  o.replay = replay;
  o.input_shapes = shapes;
  Model model = Model::load(dev, path, o);
  std::map<std::string, Tensor> in;
  std::map<std::string, std::vector<float>> host;
  for (const auto& vi : model.inputs()) {
    Generator g(1);
    in[vi.name] = rand(dev, vi.shape, g).to(vi.dtype);
    host[vi.name] = in[vi.name].to_vector();
  }
  for (int i = 0; i < 3; ++i) model.run(in);  // warm-up: kernels, tuning, the capture
  Device(dev).synchronize();
  Times t;
  const auto d0 = dev.dispatch_count();
  for (int i = 0; i < runs; ++i) {
    const auto t0 = Clock::now();
    const double c0 = thread_cpu_ms();
    auto out = model.run(in);
    t.cpu += thread_cpu_ms() - c0;
    const auto t1 = Clock::now();
    Device(dev).synchronize();
    t.host += ms(t1 - t0);
    t.run += ms(Clock::now() - t0);
  }
  t.dispatches = (dev.dispatch_count() - d0) / static_cast<std::uint64_t>(runs);
  for (int i = 0; i < runs; ++i) {
    const auto t0 = Clock::now();
    for (auto& [name, y] : model.run(in)) (void)y.to_vector();
    t.read += ms(Clock::now() - t0);
  }
  for (int i = 0; i < runs; ++i) {
    const auto t0 = Clock::now();
    std::map<std::string, Tensor> fresh;
    for (const auto& vi : model.inputs()) fresh[vi.name] = Tensor::from_host(dev, host[vi.name], vi.shape);
    for (auto& [name, y] : model.run(fresh)) (void)y.to_vector();
    t.e2e += ms(Clock::now() - t0);
  }
  t.host /= runs;
  t.cpu /= runs;
  t.run /= runs;
  t.read /= runs;
  t.e2e /= runs;
  return t;
}

double ort_ms(const std::string& path, const std::map<std::string, Shape>& shapes, int runs) {
  std::string cmd = "node '" GLTENSOR_BENCH_SOURCE_DIR "/tools/ort-reference/ort_run.js' '" + path + "'";
  for (const auto& [name, s] : shapes) {
    std::string dims;
    for (auto d : s) {
      if (!dims.empty()) dims += 'x';
      dims += std::to_string(d);
    }
    cmd += " --shape " + name + "=" + dims;
  }
  const std::string log = path + ".ort.json";
  cmd += " --bench " + std::to_string(runs) + " > '" + log + "' 2>&1";
  if (std::system(cmd.c_str()) != 0) return NAN;
  std::stringstream ss;
  ss << std::ifstream(log).rdbuf();
  const auto k = ss.str().find("\"bench_ms\":");
  return k == std::string::npos ? NAN : std::stod(ss.str().substr(k + 11));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gltensor::Model per-run cost: plain runs against recorded replays"};
  std::string model, save;
  std::vector<std::string> shape_args;
  int runs = 200;
  bool ort = false;
  app.add_option("--model", model, "an .onnx file (default: the three-Gemm model)");
  app.add_option("--shape", shape_args, "NAME=1x3x48x320: the shape of an input (random [0, 1) values)");
  app.add_option("--runs", runs, "timed runs per row")->check(CLI::PositiveNumber);
  app.add_flag("--ort", ort, "ONNX Runtime CPU on the same model (node, tools/ort-reference)");
  app.add_option("--save-model", save, "write the three-Gemm model here (for gltensor-run and onnx_torch_bench.py)");
  CLI11_PARSE(app, argc, argv);
  try {
    std::map<std::string, Shape> shapes;
    for (const auto& s : shape_args) {
      const auto eq = s.find('=');
      Shape sh;
      std::stringstream ss(s.substr(eq + 1));
      for (std::string d; std::getline(ss, d, 'x');) sh.push_back(std::stoll(d));
      shapes[s.substr(0, eq)] = sh;
    }
    if (model.empty()) model = three_gemm_model(save);
    Device dev = Device::open();
    {  // every input's shape (for ONNX Runtime's random inputs)
      ModelOptions o;
      o.input_shapes = shapes;
      const Model probe = Model::load(dev, model, o);
      for (const auto& vi : probe.inputs()) shapes[vi.name] = vi.shape;
    }
    std::printf("device: %s; model %s; %d runs per row\n\n", dev.caps().renderer.c_str(), model.c_str(), runs);
    std::printf(
        "| path | dispatches/run | host ms/run | cpu ms/run | run ms | run + read back ms | e2e ms (upload, run, "
        "read back) |\n|---|---|---|---|---|---|---|\n");
    // Three interleaved rounds, the best of each (this machine may be shared).
    Times plain, rep;
    for (int round = 0; round < 3; ++round)
      for (bool replay : {false, true}) {
        const Times t = measure(dev, model, replay, shapes, runs);
        Times& best = replay ? rep : plain;
        if (round == 0 || t.run < best.run) best = t;
      }
    const auto row = [](const char* name, const Times& t) {
      std::printf("| %s | %llu | %.4f | %.4f | %.4f | %.4f | %.4f |\n", name,
                  static_cast<unsigned long long>(t.dispatches), t.host, t.cpu, t.run, t.read, t.e2e);
    };
    row("Model::run", plain);
    row("Model::run, ModelOptions::replay", rep);
    std::printf(
        "\nreplay / plain: host %.3f, cpu %.3f, run %.3f, run + read back %.3f, e2e %.3f (time ratios, lower is "
        "faster)\n",
        rep.host / plain.host, rep.cpu / plain.cpu, rep.run / plain.run, rep.read / plain.read, rep.e2e / plain.e2e);
    if (ort) {
      const double r = ort_ms(model, shapes, runs);
      std::printf("ONNX Runtime CPU: %.4f ms/run; gltensor e2e / ORT: plain %.2f, replay %.2f\n", r, plain.e2e / r,
                  rep.e2e / r);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gltensor_model_bench: %s\n", e.what());
    return 1;
  }
}
