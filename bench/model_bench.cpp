// gltensor_model_bench [--model FILE.onnx] [--shape NAME=AxB...]... [--runs N] [--ort] [--save-model FILE]
// gltensor_model_bench --lstm [--runs N] [--ort | --ort-python bench/ort_reference.py]
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
//   run_host  Model::run_host: host bytes in, every output's bytes out (inputs read and, replayed,
//             outputs written by the kernels in host-visible buffers); again with
//             GLTENSOR_HOST_IO=copy (every transfer a copy) in the same run
// With the fused MLP on (GPUs, or GLTENSOR_FUSED_MLP=1) it also times the planner without it
// (GLTENSOR_FUSED_MLP=0) in the same run, and with --mlp-variants 4 4x4 the kernel's other row
// blocks and K splits.
// Without --model it builds the issue's small model: three Gemm layers (MatMul + Add, ReLU
// between them) of width 96 on a [1, 34, 96] input. --ort adds ONNX Runtime's CPU time on the
// same model (node tools/ort-reference/ort_run.js --bench N, every core); --ort-python SCRIPT the
// same through Python's onnxruntime (bench/ort_reference.py; machines without npm). Prints a
// Markdown table.
// --qdq: a CNN of 3x3 convolutions in ONNX Runtime's QDQ form (uint8 activations, int8 weights
// per output channel) against the same network in f32 (issue 22: int8 at least as fast, with a
// quarter of the weight memory); model time per run (Model::run + synchronize), best of 3 rounds;
// --qdq-net wide|narrow and --qdq-size N pick one net / size (also on software rasterizers).
// --loops read,e2e,host|none: the loops after each row's timed runs (default all, --qdq none:
// its tables have no column of theirs; split, not by default: e2e with Device::synchronize before
// to_vector, its four phases in a line after the table); --gpu-time: the profiler's GPU time per timed run;
// --trim: the pool's cached buffers freed before each row's model load; --gl-messages (--qdq):
// the driver's debug messages with their counts; --qdq-fused-input: the model's input
// QuantizeLinear in the first QConv (Settings::fuse_qdq_input; on by default, GLTENSOR_FUSE_QDQ_INPUT=0 off).
// --qdq-loads N (with --qdq-size, default 112): the wide net's GPU time per run by model load
// (issue 22: the int8 net's was 1.75 ms or 2.4-3.7 ms by load, bench/RESULTS.md "int8gap"): N
// int8 loads and 2 f32 loads kept alive together, each timed (the profiler's GPU ms per run, 3
// rounds of --runs, min / max, and the wall time per run of the same rounds, runs back to back)
// in three passes (load order, reverse, load order: a load's state that stays
// through the passes belongs to the load, one that moves is the GPU's), with each node's GPU time
// in the first pass (one run with GLTENSOR_MODEL_TRACE's per-node scopes) and the pool's new
// buffers per load, then each load's GPU ms and dispatches per run by kernel file (pass 3); with
// --qdq-net narrow the narrow net's loads instead; --qdq-replay: replayed models; --trim: Device::trim before each
// load;
// --pool-min BYTES: the pool's size classes at least this (Settings::pool_min_class, as
// GLTENSOR_POOL_MIN_CLASS).
// --save-models DIR: the models of --qdq's GPU rows and of --lstm, and the three-Gemm model, written
// to DIR (nothing run).
// --lstm: an LSTM's per-step cost (issue 22): one LSTM layer (opset 14, batch 1, input 64) for
// seq 64 / 256, hidden 64 / 128 / 256, forward and bidirectional; the time of Model::run + synchronize
// (plain and replayed) per time step against ONNX Runtime CPU's (--ort / --ort-python) per step,
// and against the per-step path (GLTENSOR_RNN=steps: a matmul and a gate kernel per step) in the
// same run.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <tuple>

#include "gltensor/gltensor.hpp"
#include "model/onnx_builder.hpp"
#include "runtime/settings.hpp"

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

// One LSTM layer (opset 14): x [seq, batch, in] -> y [seq, dirs, batch, hidden], y_h, y_c;
// weights and biases uniform in +-1 / sqrt(hidden) (PyTorch's initialization), fixed values.
std::string lstm_model(std::int64_t seq, std::int64_t batch, std::int64_t in, std::int64_t hidden, int dirs) {
  glt_test::OnnxBuilder m(14);
  const std::int64_t H = hidden, D = dirs;
  m.input("x", {seq, batch, in});
  m.output("y", {seq, D, batch, H}).output("yh", {D, batch, H}).output("yc", {D, batch, H});
  std::uint64_t state = 12345;
  const float r = 1.0f / std::sqrt(static_cast<float>(H));
  const auto uniform = [&](std::int64_t n) {
    std::vector<float> v(static_cast<std::size_t>(n));
    for (auto& x : v) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      x = (static_cast<float>(state >> 40) / static_cast<float>(1 << 24) * 2 - 1) * r;
    }
    return v;
  };
  m.init("W", {D, 4 * H, in}, uniform(D * 4 * H * in)).init("R", {D, 4 * H, H}, uniform(D * 4 * H * H));
  m.init("B", {D, 8 * H}, uniform(D * 8 * H));
  auto& n = m.node("LSTM", {"x", "W", "R", "B"}, {"y", "yh", "yc"});
  glt_test::OnnxBuilder::attr_i(n, "hidden_size", H);
  if (dirs == 2) glt_test::OnnxBuilder::attr_s(n, "direction", "bidirectional");
  return m.save("lstm_s" + std::to_string(seq) + "_h" + std::to_string(H) + "_d" + std::to_string(D));
}

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

// --loops: the loops measure() runs after the timed runs (read: run + read back; e2e: upload,
// run, read back; host: Model::run_host), whose columns stay 0 where left out; --gpu-time: the
// GPU profiler's time per timed run (timer queries around each dispatch).
bool loop_read = true, loop_e2e = true, loop_host = true, gpu_time = false;
// --loops split: the e2e loop again with Device::synchronize before to_vector (not in the default
// loops): where the read-back's time goes (the GPU's work and the fence's wait, then the read of
// finished work).
bool loop_split = false;
// --trim: Device::trim before each measure(), so that every model load and run takes new buffers
bool trim_pool = false;

struct Times {
  double host = 0, cpu = 0, run = 0, read = 0, e2e = 0, host_io = 0, gpu = 0;
  // The e2e loop's phases, host clock: Tensor::from_host, Model::run, to_vector (its wait included)
  double e2e_up = 0, e2e_run = 0, e2e_read = 0;
  // --loops split: from_host, Model::run, Device::synchronize (flush and fence wait), to_vector
  double split_up = 0, split_run = 0, split_sync = 0, split_read = 0;
  std::uint64_t dispatches = 0;
};

Times measure(const Device& dev, const std::string& path, bool replay, const std::map<std::string, Shape>& shapes,
              int runs) {
  if (trim_pool) Device(dev).trim();
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
  if (gpu_time) {
    Device(dev).reset_profile();
    Device(dev).set_profiling(true);
  }
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
  if (gpu_time) {
    t.gpu = Device(dev).profile().total_ms / runs;
    Device(dev).set_profiling(false);
  }
  for (int i = 0; i < (loop_read ? runs : 0); ++i) {
    const auto t0 = Clock::now();
    for (auto& [name, y] : model.run(in)) (void)y.to_vector();
    t.read += ms(Clock::now() - t0);
  }
  // One run end to end: Tensor::from_host, Model::run, (with sync: Device::synchronize), every
  // output's to_vector; the phases' ms.
  const auto e2e_once = [&](bool sync) {
    const auto t0 = Clock::now();
    std::map<std::string, Tensor> fresh;
    for (const auto& vi : model.inputs()) fresh[vi.name] = Tensor::from_host(dev, host[vi.name], vi.shape);
    const auto t1 = Clock::now();
    auto outs = model.run(fresh);
    const auto t2 = Clock::now();
    if (sync) Device(dev).synchronize();
    const auto t3 = Clock::now();
    for (auto& [name, y] : outs) (void)y.to_vector();
    const auto t4 = Clock::now();
    return std::array<double, 4>{ms(t1 - t0), ms(t2 - t1), ms(t3 - t2), ms(t4 - t3)};
  };
  for (int i = 0; i < (loop_e2e ? runs : 0); ++i) {
    const auto p = e2e_once(false);
    t.e2e += p[0] + p[1] + p[2] + p[3];
    t.e2e_up += p[0];
    t.e2e_run += p[1];
    t.e2e_read += p[2] + p[3];
  }
  for (int i = 0; i < (loop_split ? runs : 0); ++i) {
    const auto p = e2e_once(true);
    t.split_up += p[0] / runs;
    t.split_run += p[1] / runs;
    t.split_sync += p[2] / runs;
    t.split_read += p[3] / runs;
  }
  // Model::run_host: the same inputs as host bytes in, every output's bytes out.
  std::map<std::string, std::vector<std::uint8_t>> bytes;
  for (const auto& vi : model.inputs()) bytes[vi.name] = in[vi.name].to_bytes();
  const auto run_host = [&] {
    std::map<std::string, HostInput> hin;
    for (const auto& vi : model.inputs())
      hin[vi.name] = HostInput{bytes[vi.name].data(), bytes[vi.name].size(), vi.shape, vi.dtype};
    return model.run_host(dev, hin);
  };
  for (int i = 0; i < (loop_host ? 3 : 0); ++i) run_host();  // the outputs moved to host-visible buffers (replay)
  for (int i = 0; i < (loop_host ? runs : 0); ++i) {
    const auto t0 = Clock::now();
    (void)run_host();
    t.host_io += ms(Clock::now() - t0);
  }
  t.host /= runs;
  t.cpu /= runs;
  t.run /= runs;
  t.read /= runs;
  t.e2e /= runs;
  t.e2e_up /= runs;
  t.e2e_run /= runs;
  t.e2e_read /= runs;
  t.host_io /= runs;
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

// ONNX Runtime through Python (bench/ort_reference.py --shape: one input, uniform [0, 1)).
double ort_python_ms(const std::string& script, const std::string& path, const std::map<std::string, Shape>& shapes,
                     int runs) {
  if (shapes.size() != 1) return NAN;
  std::string dims;
  for (auto d : shapes.begin()->second) dims += (dims.empty() ? "" : "x") + std::to_string(d);
  const std::string log = path + ".ort.json";
  const std::string cmd = "python3 '" + script + "' '" + path + "' --shape " + dims + " --runs " +
                          std::to_string(runs) + " > '" + log + "' 2>&1";
  if (std::system(cmd.c_str()) != 0) return NAN;
  std::stringstream ss;
  ss << std::ifstream(log).rdbuf();
  const auto k = ss.str().find("\"bench_ms\":");
  return k == std::string::npos ? NAN : std::stod(ss.str().substr(k + 11));
}

// Best of three interleaved rounds of plain and replayed runs.
std::pair<Times, Times> best_rounds(const Device& dev, const std::string& model,
                                    const std::map<std::string, Shape>& shapes, int runs) {
  Times plain, rep;
  for (int round = 0; round < 3; ++round)
    for (bool replay : {false, true}) {
      const Times t = measure(dev, model, replay, shapes, runs);
      Times& best = replay ? rep : plain;
      if (round == 0 || t.run < best.run) best = t;
    }
  return {plain, rep};
}

// --qdq's two nets on GPUs: the channels of each convolution's input, then the last one's output.
const std::vector<std::int64_t> kWideNet{64, 128, 128, 256, 256}, kNarrowNet{32, 64, 64, 128};

// A CNN of 3x3 convolutions (pads 1, ReLU) as ONNX Runtime's quantize_static writes it in QDQ
// form (activations QuantizeLinear -> DequantizeLinear in uint8, weights int8 per output channel
// through DequantizeLinear, f32 bias) and the same network in f32 with the dequantized weights:
// input [1, chans[0], hw, hw], convolutions chans[i] -> chans[i + 1]. Fixed pseudo-random values.
std::string cnn_model(const std::vector<std::int64_t>& chans, std::int64_t hw, bool qdq) {
  constexpr int kU8 = onnx::TensorProto::UINT8, kI8 = onnx::TensorProto::INT8;
  glt_test::OnnxBuilder m(13);
  const std::size_t L = chans.size() - 1;
  m.input("x", {1, chans[0], hw, hw}).output("y", {1, chans[L], hw, hw});
  std::uint64_t state = 777;
  const auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<float>(state >> 40) / static_cast<float>(1 << 24);
  };
  std::string cur = "x";
  if (qdq) {
    m.init("s0", {}, {0.02f}).init_int("z0", {}, {128}, kU8);
    m.node("QuantizeLinear", {"x", "s0", "z0"}, {"xq"});
    m.node("DequantizeLinear", {"xq", "s0", "z0"}, {"xd"});
    cur = "xd";
  }
  for (std::size_t l = 0; l < L; ++l) {
    const std::int64_t O = chans[l + 1], C = chans[l], n = O * C * 9;
    const std::string i = std::to_string(l);
    std::vector<std::int32_t> q(static_cast<std::size_t>(n));
    for (auto& v : q) v = static_cast<std::int32_t>(next() * 254) - 127;
    std::vector<float> ws(static_cast<std::size_t>(O)), bias(static_cast<std::size_t>(O));
    const float base = 1.0f / (127.0f * std::sqrt(static_cast<float>(C * 9)));
    for (auto& v : ws) v = base * (0.5f + next());
    for (auto& v : bias) v = 0.1f * (next() - 0.5f);
    std::string w = "w" + i;
    if (qdq) {
      m.init_int("wq" + i, {O, C, 3, 3}, q, kI8).init("ws" + i, {O}, ws);
      m.init_int("wz" + i, {O}, std::vector<std::int32_t>(static_cast<std::size_t>(O), 0), kI8);
      glt_test::OnnxBuilder::attr_i(m.node("DequantizeLinear", {"wq" + i, "ws" + i, "wz" + i}, {w}), "axis", 0);
    } else {
      std::vector<float> wf(static_cast<std::size_t>(n));
      for (std::int64_t k = 0; k < n; ++k)
        wf[static_cast<std::size_t>(k)] =
            static_cast<float>(q[static_cast<std::size_t>(k)]) * ws[static_cast<std::size_t>(k / (C * 9))];
      m.init(w, {O, C, 3, 3}, wf);
    }
    m.init("b" + i, {O}, bias);
    glt_test::OnnxBuilder::attr_ints(m.node("Conv", {cur, w, "b" + i}, {"c" + i}), "pads", {1, 1, 1, 1});
    const std::string r = l + 1 == L && !qdq ? "y" : "r" + i;
    m.node("Relu", {"c" + i}, {r});
    cur = r;
    if (qdq) {
      m.init("s" + std::to_string(l + 1), {}, {0.05f}).init_int("z" + std::to_string(l + 1), {}, {0}, kU8);
      const std::string sc = "s" + std::to_string(l + 1), zp = "z" + std::to_string(l + 1);
      m.node("QuantizeLinear", {r, sc, zp}, {r + "q"});
      m.node("DequantizeLinear", {r + "q", sc, zp}, {l + 1 == L ? "y" : r + "d"});
      cur = r + "d";
    }
  }
  std::string name = std::string(qdq ? "qdq" : "f32") + "_cnn";
  for (auto c : chans) name += "_" + std::to_string(c);
  return m.save(name + "_" + std::to_string(hw));
}

// --qdq: the QDQ CNN against its f32 form (issue 22's goal: int8 at least as fast, with a
// quarter of the weight memory), one row per net and size; a second table per row: plain runs'
// host ms in Model::run, thread CPU ms and dispatches, and replayed runs (ModelOptions::replay),
// f32 and int8, to tell the GPU's time from the host's.
int qdq_bench(const Device& dev, int runs, std::int64_t only_hw, const std::string& only_net) {
  std::printf("device: %s; 3x3 convolutions (pads 1, ReLU), batch 1; %d runs per round, best of 3 rounds\n\n",
              dev.caps().renderer.c_str(), runs);
  // a software rasterizer: one small size (the GPU's would take minutes there), unless --qdq-net
  const bool sw = dev.adapter().software && only_net.empty();
  std::vector<std::vector<std::int64_t>> nets;
  if (sw) nets = {{16, 32, 32}};
  if (!sw && only_net != "narrow") nets.push_back(kWideNet);
  if (!sw && only_net != "wide") nets.push_back(kNarrowNet);
  struct Row {
    std::string ch;
    std::int64_t hw;
    Times f32[2], q8[2];  // plain, replayed
  };
  std::vector<Row> rows;
  std::printf(
      "| channels | size | f32 ms/run | QDQ int8 ms/run | int8 / f32 speed | weights f32 / int8 (MB) | plan |\n"
      "|---|---|---|---|---|---|---|\n");
  for (const auto& chans : nets)
    for (std::int64_t hw : only_hw > 0 ? std::vector<std::int64_t>{only_hw}
                           : sw        ? std::vector<std::int64_t>{28}
                                       : std::vector<std::int64_t>{56, 112}) {
      const std::string f32 = cnn_model(chans, hw, false), q8 = cnn_model(chans, hw, true);
      const std::map<std::string, Shape> shapes{{"x", {1, chans[0], hw, hw}}};
      Row r;
      std::tie(r.f32[0], r.f32[1]) = best_rounds(dev, f32, shapes, runs);
      std::tie(r.q8[0], r.q8[1]) = best_rounds(dev, q8, shapes, runs);
      const double tf = r.f32[0].run, tq = r.q8[0].run;
      std::int64_t params = 0;
      std::string ch;
      for (std::size_t l = 0; l + 1 < chans.size(); ++l) {
        params += chans[l] * chans[l + 1] * 9;
        if (l) ch += '-';
        ch += std::to_string(chans[l]);
      }
      ch += '-';
      ch += std::to_string(chans.back());
      r.ch = ch, r.hw = hw;
      rows.push_back(r);
      ModelOptions o;
      o.input_shapes = shapes;
      const std::string plan = Model::load(dev, q8, o).plan_summary();
      // "<n> QDQ Conv/MatMul as integer ops" (Model::plan_summary)
      const auto at = plan.find(" QDQ Conv/MatMul as integer ops");
      std::size_t b = at;
      while (b != std::string::npos && b > 0 && std::isdigit(static_cast<unsigned char>(plan[b - 1]))) --b;
      const std::string what =
          at == std::string::npos ? "no QDQ fusion" : plan.substr(b, at - b) + " Conv as integer ops";
      std::printf("| %s | %lldx%lld | %.3f | %.3f | %.2fx | %.1f / %.1f | %s |\n", ch.c_str(),
                  static_cast<long long>(hw), static_cast<long long>(hw), tf, tq, tf / tq,
                  4e-6 * static_cast<double>(params), 1e-6 * static_cast<double>(params), what.c_str());
      std::fflush(stdout);
    }
  std::printf(
      "\n| channels | size | model | dispatches/run | host ms in run() | cpu ms/run | run ms | GPU ms/run (--gpu-time) "
      "| "
      "replayed run ms |\n|---|---|---|---|---|---|---|---|---|\n");
  for (const Row& r : rows)
    for (int q = 0; q < 2; ++q) {
      const Times* t = q ? r.q8 : r.f32;
      std::printf("| %s | %lldx%lld | %s | %llu | %.3f | %.3f | %.3f | %.3f | %.3f |\n", r.ch.c_str(),
                  static_cast<long long>(r.hw), static_cast<long long>(r.hw), q ? "QDQ int8" : "f32",
                  static_cast<unsigned long long>(t[0].dispatches), t[0].host, t[0].cpu, t[0].run, t[0].gpu, t[1].run);
    }
  return 0;
}

// --qdq-loads: GPU ms per run of one loaded model, 3 rounds of `runs` (min, max); with `nodes`,
// one more run with per-node scopes (GLTENSOR_MODEL_TRACE), its nodes' GPU ms appended.
struct LoadTimes {
  double gpu_min = 1e30, gpu_max = 0, run_min = 1e30, run_max = 0;
  std::string nodes;
  std::string kernels;  // the last round's GPU ms per run and dispatches per run by kernel file
};

// UTC time of day, HH:MM:SS.mmm (to set beside nvidia-smi's samples)
std::string utc_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  const long msec =
      static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02d:%02d:%02d.%03ld", tm.tm_hour, tm.tm_min, tm.tm_sec, msec);
  return buf;
}

LoadTimes time_load(const Device& dev, Model& model, const std::map<std::string, Tensor>& in, int runs, bool nodes) {
  LoadTimes t;
  Device d(dev);
  for (int round = 0; round < 3; ++round) {
    d.synchronize();
    d.reset_profile();
    d.set_profiling(true);
    const auto t0 = Clock::now();
    for (int i = 0; i < runs; ++i) model.run(in);
    d.synchronize();
    const double r = ms(Clock::now() - t0) / runs;
    t.run_min = std::min(t.run_min, r), t.run_max = std::max(t.run_max, r);
    const ProfileReport rep = d.profile();
    const double g = rep.total_ms / runs;
    d.set_profiling(false);
    t.kernels.clear();
    for (const ProfileRow& row : rep.by_kernel) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s %.4f (%.3g)", row.name.c_str(), row.gpu_ms / runs,
                    static_cast<double>(row.calls) / runs);
      t.kernels += (t.kernels.empty() ? "" : "; ") + std::string(buf);
    }
    t.gpu_min = std::min(t.gpu_min, g), t.gpu_max = std::max(t.gpu_max, g);
  }
  if (nodes) {
    const bool kept = detail::settings().model_trace;
    detail::settings().model_trace = true;  // one scope per node (and a synchronize after each)
    d.reset_profile();
    d.set_profiling(true);
    model.run(in);
    const ProfileReport r = d.profile();
    d.set_profiling(false);
    detail::settings().model_trace = kept;
    std::vector<std::pair<int, std::string>> rows;  // "#index op": in node order
    for (const ProfileRow& row : r.by_scope) {      // "#3 gltensor.QConv +Dequantize...": "#3 QConv"
      std::string name = row.name.substr(0, row.name.find(' ', row.name.find(' ') + 1));
      if (const auto dot = name.find("gltensor."); dot != std::string::npos) name.erase(dot, 9);
      char buf[96];
      std::snprintf(buf, sizeof buf, "%s %.3f", name.c_str(), row.gpu_ms);
      rows.emplace_back(row.name.size() > 1 ? std::atoi(row.name.c_str() + 1) : 0, buf);
    }
    std::sort(rows.begin(), rows.end());
    for (const auto& [i, text] : rows) t.nodes += (t.nodes.empty() ? "" : "; ") + text;
  }
  return t;
}

int qdq_loads(const Device& dev, int loads, int runs, std::int64_t hw, bool replay, bool narrow_net) {
  const std::vector<std::int64_t>& wide = narrow_net ? kNarrowNet : kWideNet;
  const std::string f32 = cnn_model(wide, hw, false), q8 = cnn_model(wide, hw, true);
  const std::map<std::string, Shape> shapes{{"x", {1, wide[0], hw, hw}}};
  std::printf(
      "device: %s; %s net at %lldx%lld, %s runs; %d int8 loads + 2 f32 loads alive "
      "together; GPU ms per run (profiler), min / max of 3 rounds of %d; pool trim %s, min class %zu\n\n",
      dev.caps().renderer.c_str(), narrow_net ? "narrow 32-64-64-128" : "wide 64-128-128-256-256",
      static_cast<long long>(hw), static_cast<long long>(hw), replay ? "replayed" : "plain", loads, runs,
      trim_pool ? "before each load" : "no", detail::settings().pool_min_class);
  struct Load {
    std::string name;
    Model model;
    std::map<std::string, Tensor> in;
  };
  std::vector<Load> all;
  std::vector<std::string> order(static_cast<std::size_t>(loads), "int8");  // f32 first and in the middle
  order.insert(order.begin(), "f32");
  order.insert(order.begin() + 1 + loads / 2, "f32");
  std::printf(
      "| load | model | pool: new buffers at load + warm-up | pass 1: GPU ms, run ms | pass 2 | pass 3 | UTC "
      "(pass 1) |\n|---|---|---|---|---|---|---|\n");
  std::vector<LoadTimes> pass[3];
  std::vector<std::size_t> fresh;
  for (const std::string& kind : order) {
    if (trim_pool) Device(dev).trim();
    const std::size_t m0 = dev.pool_stats().misses;
    ModelOptions o;
    o.replay = replay;
    o.input_shapes = shapes;
    Load l{kind, Model::load(dev, kind == "f32" ? f32 : q8, o), {}};
    Generator g(1);
    l.in["x"] = rand(dev, shapes.at("x"), g);
    for (int i = 0; i < 3; ++i) l.model.run(l.in);  // warm-up: kernels, the capture
    Device(dev).synchronize();
    fresh.push_back(dev.pool_stats().misses - m0);
    all.push_back(std::move(l));
  }
  std::vector<std::string> wall(all.size());
  std::string spans;
  for (int p = 0; p < 3; ++p) {
    spans += (p ? ", " : "passes (UTC): ") + utc_now();
    pass[p].resize(all.size());
    for (std::size_t k = 0; k < all.size(); ++k) {
      const std::size_t i = p == 1 ? all.size() - 1 - k : k;
      if (p == 0) wall[i] = utc_now();
      pass[p][i] = time_load(dev, all[i].model, all[i].in, runs, false);
    }
    spans += " - " + utc_now();
  }
  // (replayed runs are not profiled: GPU 0; their run ms is the GPU's time of back-to-back runs)
  const auto cell = [](const LoadTimes& t) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%.3f / %.3f, %.3f / %.3f", t.gpu_min, t.gpu_max, t.run_min, t.run_max);
    return std::string(buf);
  };
  for (std::size_t i = 0; i < all.size(); ++i)
    std::printf("| %zu | %s | %zu | %s | %s | %s | %s |\n", i, all[i].name.c_str(), fresh[i], cell(pass[0][i]).c_str(),
                cell(pass[1][i]).c_str(), cell(pass[2][i]).c_str(), wall[i].c_str());
  std::printf("\n%s\nper node (one run, synchronized after each node; GPU ms):\n", spans.c_str());
  for (std::size_t i = 0; i < all.size(); ++i)
    std::printf("%zu %s: %s\n", i, all[i].name.c_str(), time_load(dev, all[i].model, all[i].in, 1, true).nodes.c_str());
  std::printf("\nper kernel file (pass 3; GPU ms per run, dispatches per run in brackets):\n");
  for (std::size_t i = 0; i < all.size(); ++i)
    std::printf("%zu %s: %s\n", i, all[i].name.c_str(), pass[2][i].kernels.c_str());
  std::fflush(stdout);
  return 0;
}

// The per-step path's time per run (GLTENSOR_RNN=steps: a matmul and a gate kernel per step),
// the best of three rounds of plain runs: the reference of the sequence kernel in the same run.
double steps_path_ms(const Device& dev, const std::string& path, const std::map<std::string, Shape>& shapes, int runs) {
  const detail::RnnSetting saved = detail::settings().rnn;
  detail::settings().rnn = detail::RnnSetting::steps;
  double best = INFINITY;
  for (int round = 0; round < 3; ++round) best = std::min(best, measure(dev, path, false, shapes, runs).run);
  detail::settings().rnn = saved;
  return best;
}

int lstm_bench(const Device& dev, int runs, bool ort, const std::string& ort_python) {
  std::printf("device: %s; LSTM, batch 1, input 64; %d runs per round, best of 3 rounds; ORT: %s\n\n",
              dev.caps().renderer.c_str(), runs,
              ort                  ? "node onnxruntime-node"
              : ort_python.empty() ? "not run"
                                   : "python3 onnxruntime");
  std::printf(
      "| seq | hidden | directions | dispatches/run | gltensor ms/run | gltensor us/step | replay us/step | per-step "
      "path us/step | gltensor / per-step path time | ORT CPU us/step | gltensor / ORT time | replay / ORT time "
      "|\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (std::int64_t seq : {64, 256})
    for (std::int64_t hidden : {64, 128, 256})
      for (int dirs : {1, 2}) {
        const std::string path = lstm_model(seq, 1, 64, hidden, dirs);
        const std::map<std::string, Shape> shapes{{"x", {seq, 1, 64}}};
        const auto [plain, rep] = best_rounds(dev, path, shapes, runs);
        const double steps = steps_path_ms(dev, path, shapes, runs);
        const double o = ort                  ? ort_ms(path, shapes, runs * 4)
                         : ort_python.empty() ? NAN
                                              : ort_python_ms(ort_python, path, shapes, runs * 4);
        const double s = static_cast<double>(seq);
        std::printf("| %lld | %lld | %d | %llu | %.3f | %.2f | %.2f | %.2f | %.3f | %.2f | %.2f | %.2f |\n",
                    static_cast<long long>(seq), static_cast<long long>(hidden), dirs,
                    static_cast<unsigned long long>(plain.dispatches), plain.run, plain.run / s * 1e3,
                    rep.run / s * 1e3, steps / s * 1e3, plain.run / steps, o / s * 1e3, plain.run / o, rep.run / o);
        std::fflush(stdout);
      }
  return 0;
}

// --save-models DIR: the models the GPU rows of --qdq and --lstm time (their file names as the bench
// saves them) and three_gemm.onnx, written to DIR without running anything (for gltensor-run and
// PyTorch on the same files: scripts/packs/torchcmp).
int save_models(const std::string& dir) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  const auto keep = [&](const std::string& path) {
    fs::copy_file(path, fs::path(dir) / fs::path(path).filename(), fs::copy_options::overwrite_existing);
  };
  for (const auto* net : {&kWideNet, &kNarrowNet})
    for (std::int64_t hw : {56, 112})
      for (bool q : {false, true}) keep(cnn_model(*net, hw, q));
  for (std::int64_t seq : {64, 256})
    for (std::int64_t hidden : {64, 128, 256})
      for (int dirs : {1, 2}) keep(lstm_model(seq, 1, 64, hidden, dirs));
  three_gemm_model((fs::path(dir) / "three_gemm.onnx").string());
  std::printf("models written to %s\n", dir.c_str());
  return 0;
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
  std::string ort_python;
  bool lstm = false, qdq = false;
  app.add_option("--ort-python", ort_python, "ONNX Runtime CPU through python3 and this bench/ort_reference.py");
  app.add_flag("--lstm", lstm, "an LSTM's per-step cost (seq 64 / 256, hidden 64 / 128 / 256, 1 / 2 directions)");
  app.add_flag("--qdq", qdq, "a QDQ-quantized CNN against its f32 form (int8 speed and weight memory)");
  std::int64_t qdq_size = 0;
  app.add_option("--qdq-size", qdq_size,
                 "--qdq: only this image size (default: 56 and 112 on GPUs, 28 on software rasterizers)");
  std::string loops = "read,e2e,host";
  CLI::Option* loops_opt =
      app.add_option("--loops", loops,
                     "the loops after the timed runs of each row: any of read,e2e,host, or none (their columns stay "
                     "0; --qdq: none unless given), and split (not by default: e2e with a synchronize before "
                     "to_vector, its phases in a line after the table)");
  app.add_flag("--gpu-time", gpu_time,
               "the GPU profiler's time per timed run (--qdq's second table; a line after the model's first table)");
  app.add_flag("--trim", trim_pool, "free the pool's cached buffers before each row's model load");
  int qdq_loads_n = 0;
  app.add_option("--qdq-loads", qdq_loads_n, "the wide net's GPU time per run by model load: this many int8 loads");
  bool qdq_replay = false;
  app.add_flag("--qdq-replay", qdq_replay, "--qdq-loads: replayed models (ModelOptions::replay)");
  std::size_t pool_min = 0;
  app.add_option("--pool-min", pool_min, "the pool's smallest size class in bytes (diagnostic)");
  bool gl_messages = false;
  app.add_flag("--gl-messages", gl_messages,
               "the driver's debug messages (KHR_debug) and their counts (--qdq and the model rows)");
  bool qdq_fused_input = false;
  app.add_flag("--qdq-fused-input", qdq_fused_input, "--qdq: the input QuantizeLinear in the first QConv");
  std::string qdq_net;
  app.add_option("--qdq-net", qdq_net, "--qdq: only this net of the GPUs' (also on software rasterizers)")
      ->check(CLI::IsMember({"wide", "narrow"}));
  std::vector<std::string> mlp_variants;
  app.add_option("--mlp-variants", mlp_variants,
                 "also time the fused MLP with these GLTENSOR_FUSED_MLP values (R or RxS: rows per workgroup, "
                 "slices of K)");
  app.add_option("--save-model", save, "write the three-Gemm model here (for gltensor-run and onnx_torch_bench.py)");
  std::string save_dir;
  app.add_option("--save-models", save_dir,
                 "write the --qdq nets (GPU sizes, f32 and QDQ), the --lstm models and three_gemm.onnx to this folder "
                 "and exit");
  CLI11_PARSE(app, argc, argv);
  // --qdq prints no read / e2e / run_host column: only the timed runs unless --loops is given
  if (qdq && loops_opt->count() == 0) loops = "none";
  loop_read = loops.find("read") != std::string::npos;
  loop_e2e = loops.find("e2e") != std::string::npos;
  loop_host = loops.find("host") != std::string::npos;
  loop_split = loops.find("split") != std::string::npos;
  try {
    std::map<std::string, Shape> shapes;
    for (const auto& s : shape_args) {
      const auto eq = s.find('=');
      Shape sh;
      std::stringstream ss(s.substr(eq + 1));
      for (std::string d; std::getline(ss, d, 'x');) sh.push_back(std::stoll(d));
      shapes[s.substr(0, eq)] = sh;
    }
    if (pool_min) detail::settings().pool_min_class = pool_min;
    if (qdq_fused_input) detail::settings().fuse_qdq_input = true;
    if (!save_dir.empty()) return save_models(save_dir);
    if (lstm) return lstm_bench(Device::open(), runs, ort, ort_python);
    if (qdq_loads_n > 0) {
      Device dev = Device::open();
      const auto messages = std::make_shared<std::map<std::string, std::uint64_t>>();
      if (gl_messages) dev.set_logger([messages](LogLevel, const std::string& m) { ++(*messages)[m]; });
      const int rc = qdq_loads(dev, qdq_loads_n, runs, qdq_size > 0 ? qdq_size : 112, qdq_replay, qdq_net == "narrow");
      if (gl_messages) {
        std::printf("\ndriver messages (count, text):\n");
        for (const auto& [m, n] : *messages) std::printf("%8llu  %s\n", static_cast<unsigned long long>(n), m.c_str());
      }
      return rc;
    }
    if (qdq) {
      Device dev = Device::open();
      // --gl-messages: the driver's KHR_debug messages by text, printed once each with their counts
      const auto messages = std::make_shared<std::map<std::string, std::uint64_t>>();
      if (gl_messages) dev.set_logger([messages](LogLevel, const std::string& m) { ++(*messages)[m]; });
      const int rc = qdq_bench(dev, runs, qdq_size, qdq_net);
      if (gl_messages) {
        std::printf("\ndriver messages (count, text):\n");
        for (const auto& [m, n] : *messages) std::printf("%8llu  %s\n", static_cast<unsigned long long>(n), m.c_str());
      }
      return rc;
    }
    if (model.empty()) model = three_gemm_model(save);
    Device dev = Device::open();
    const auto messages = std::make_shared<std::map<std::string, std::uint64_t>>();
    if (gl_messages) dev.set_logger([messages](LogLevel, const std::string& m) { ++(*messages)[m]; });
    {  // every input's shape (for ONNX Runtime's random inputs)
      ModelOptions o;
      o.input_shapes = shapes;
      const Model probe = Model::load(dev, model, o);
      for (const auto& vi : probe.inputs()) shapes[vi.name] = vi.shape;
    }
    std::printf("device: %s; model %s; %d runs per row\n\n", dev.caps().renderer.c_str(), model.c_str(), runs);
    std::printf(
        "| path | dispatches/run | host ms/run | cpu ms/run | run ms | run + read back ms | issue 21 goal: e2e ms "
        "(from_host, run, to_vector) | run_host ms (host in, host out) |\n|---|---|---|---|---|---|---|---|\n");
    // Three interleaved rounds, the best of each (this machine may be shared).
    const auto [plain, rep] = best_rounds(dev, model, shapes, runs);
    const auto row = [](const std::string& name, const Times& t) {
      std::printf("| %s | %llu | %.4f | %.4f | %.4f | %.4f | %.4f | %.4f |\n", name.c_str(),
                  static_cast<unsigned long long>(t.dispatches), t.host, t.cpu, t.run, t.read, t.e2e, t.host_io);
    };
    const detail::Settings saved = detail::settings();
    const bool fused = saved.fused_mlp > 0 || (saved.fused_mlp < 0 && !dev.adapter().software);
    const std::string as_set = fused ? "" : " (no fused MLP)";
    row("Model::run" + as_set, plain);
    row("Model::run, ModelOptions::replay" + as_set, rep);
    // Issue 21's goal is measured by the e2e column: the user's path through the public API (the
    // input uploaded by Tensor::from_host, Model::run, every output read back by to_vector).
    std::printf(
        "\nissue 21 goal (e2e column: Tensor::from_host, Model::run, to_vector; mean of %d runs, the round of the "
        "best run ms): plain %.4f ms, replayed %.4f ms; <= 0.050 ms: %s\n",
        runs, plain.e2e, rep.e2e, plain.e2e <= 0.050 && rep.e2e <= 0.050 ? "met" : "not met");
    std::printf(
        "e2e phases (host clock, ms per run, plain / replayed): from_host %.4f / %.4f, Model::run %.4f / %.4f, "
        "to_vector %.4f / %.4f\n",
        plain.e2e_up, rep.e2e_up, plain.e2e_run, rep.e2e_run, plain.e2e_read, rep.e2e_read);
    if (loop_split)
      std::printf(
          "e2e split (--loops split: synchronize before to_vector; host clock, ms per run, plain / replayed): "
          "from_host %.4f / %.4f, Model::run %.4f / %.4f, synchronize %.4f / %.4f, to_vector %.4f / %.4f\n",
          plain.split_up, rep.split_up, plain.split_run, rep.split_run, plain.split_sync, rep.split_sync,
          plain.split_read, rep.split_read);
    if (gpu_time)  // (a replay's dispatches are not timed)
      std::printf("GPU time per timed run, plain (--gpu-time: timer queries around each dispatch): %.4f ms\n",
                  plain.gpu);
    std::printf(
        "\nreplay / plain: host %.3f, cpu %.3f, run %.3f, run + read back %.3f, e2e %.3f (time ratios, lower is "
        "faster)\n",
        rep.host / plain.host, rep.cpu / plain.cpu, rep.run / plain.run, rep.read / plain.read, rep.e2e / plain.e2e);
    {  // run_host's staged path in the same run (GLTENSOR_HOST_IO=copy: every transfer a copy)
      const detail::Settings kept = detail::settings();
      detail::settings().direct_host_io = false;
      const auto [cp, cq] = best_rounds(dev, model, shapes, runs);
      detail::settings() = kept;
      row("Model::run, GLTENSOR_HOST_IO=copy" + as_set, cp);
      row("Model::run, ModelOptions::replay, GLTENSOR_HOST_IO=copy" + as_set, cq);
      std::printf(
          "\nrun_host direct / GLTENSOR_HOST_IO=copy: plain %.3f, replay %.3f; run_host direct / e2e through "
          "tensors: plain %.3f, replay %.3f (time ratios, lower is faster)\n",
          plain.host_io / cp.host_io, rep.host_io / cq.host_io, plain.host_io / plain.e2e, rep.host_io / rep.e2e);
    }
    if (fused) {  // the fused MLP's reference in the same run: the planner without it
      std::printf(
          "\n| path | dispatches/run | host ms/run | cpu ms/run | run ms | run + read back ms | e2e ms | run_host ms "
          "|\n|---|---|---|---|---|---|---|---|\n");
      detail::settings().fused_mlp = 0;
      const auto [off, off_rep] = best_rounds(dev, model, shapes, runs);
      row("Model::run, GLTENSOR_FUSED_MLP=0", off);
      row("Model::run, ModelOptions::replay, GLTENSOR_FUSED_MLP=0", off_rep);
      detail::settings().fused_mlp = 1;
      for (const std::string& v : mlp_variants) {
        detail::Settings& st = detail::settings();
        detail::parse_fused_mlp(v, st.fused_mlp, st.fused_mlp_rows, st.fused_mlp_split);
        const auto [p, q] = best_rounds(dev, model, shapes, runs);
        row("Model::run, GLTENSOR_FUSED_MLP=" + v, p);
        row("Model::run, ModelOptions::replay, GLTENSOR_FUSED_MLP=" + v, q);
      }
      detail::settings() = saved;
      std::printf(
          "\nfused / GLTENSOR_FUSED_MLP=0: run %.3f, run + read back %.3f, e2e %.3f; replayed: run %.3f, run + read "
          "back %.3f, e2e %.3f (time ratios, lower is faster)\n",
          plain.run / off.run, plain.read / off.read, plain.e2e / off.e2e, rep.run / off_rep.run,
          rep.read / off_rep.read, rep.e2e / off_rep.e2e);
    }
    if (ort || !ort_python.empty()) {
      const double r = ort ? ort_ms(model, shapes, runs) : ort_python_ms(ort_python, model, shapes, runs);
      std::printf("ONNX Runtime CPU: %.4f ms/run; gltensor e2e / ORT: plain %.2f, replay %.2f\n", r, plain.e2e / r,
                  rep.e2e / r);
    }
    if (gl_messages) {
      std::printf("\ndriver messages (count, text):\n");
      for (const auto& [m, n] : *messages) std::printf("%8llu  %s\n", static_cast<unsigned long long>(n), m.c_str());
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gltensor_model_bench: %s\n", e.what());
    return 1;
  }
}
