// Host-transfer bench (issue 21). Read-backs (io37: the transfer-bound models against PyTorch's CUDA graph): where a
// read-back's time goes, per run, through the library's own path (Tensor::to_vector), with the
// phases of read_to_host (runtime/readback.hpp's ReadTrace: the copy queued and the destination
// allocated and zeroed, the wait for the GPU, the host copy out) and the spread of the totals
// (mean, min, median, p90, max: a mean far above the min is what this looks for).
//   uploads: Tensor::from_bytes of N bytes of warm pageable host memory (a std::vector kept over
//          the runs), per size: the host time of the call, and the time until the data is on the
//          device (the call, then Device::synchronize), as PyTorch's pageable `.cuda()` followed by
//          torch.cuda.synchronize() (scripts/packs/upload38/torch_upload.py measures that in the
//          same call); GB/s = N / that mean; every byte of each size's last upload read back and checked
//   sizes: y = x + 1 over N bytes (one elementwise dispatch), then y read back, per size, in each
//          of three ways: to_vector, to_host into new memory, to_host into reused memory
//   models: Model::run with random inputs of the model's fixed shapes, then every output's
//           read, the three ways, plain and replayed (ModelOptions::replay), as `gltensor-run --bench N
//           --read-back` times them
// Usage: gltensor_io_bench [--runs N] [--sizes KB,KB,...] [--upload-sizes KB,KB,...] [MODEL.onnx ...]
//        gltensor_io_bench --trace [--runs N] MODEL.onnx ...  (the replayed runs' phases: trace_model)
// (default read sizes 64,256,484,1024,2048,4096,6272,8192; upload sizes 64,256,1024,2048,4096,4800 (det 640's
// 1x3x640x640 f32 input),8192,16384; runs 300; an empty list, "", skips that part). The settings under test come
// from the environment (GLTENSOR_READ_PIECES, GLTENSOR_UPLOAD_PIECES, ...), one process per variant.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gltensor/gltensor.hpp"
#include "runtime/readback.hpp"

using namespace gltensor;
using Clock = std::chrono::steady_clock;

namespace {

// How the host reads: Tensor::to_vector (a new vector, zeroed, then filled), Tensor::to_host into
// new uninitialized memory each run (as PyTorch's .cpu() into an empty tensor), Tensor::to_host
// into one buffer reused run after run.
enum class Mode { vector, fresh, reuse };
const char* mode_name(Mode m) {
  return m == Mode::vector ? "to_vector" : m == Mode::fresh ? "to_host new" : "to_host reused";
}

long minor_faults() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return r.ru_minflt;
}

// One read of t in mode m; returns its first float (checked by the caller where it can).
float read(const Tensor& t, Mode m, std::vector<unsigned char>& reused) {
  const std::size_t bytes = static_cast<std::size_t>(t.numel()) * itemsize(t.dtype());
  float first = 0;
  if (m == Mode::vector) {
    const std::vector<float> v = t.to_vector();
    first = v.empty() ? 0.0f : v[0];
  } else if (m == Mode::fresh) {
    const std::unique_ptr<unsigned char[]> p(new unsigned char[bytes]);
    t.to_host(p.get(), bytes);
    if (bytes >= 4) std::memcpy(&first, p.get(), 4);
  } else {
    reused.resize(std::max(reused.size(), bytes));
    t.to_host(reused.data(), bytes);
    if (bytes >= 4) std::memcpy(&first, reused.data(), 4);
  }
  return first;
}

struct Stats {
  std::vector<double> total, run, dest, wait, copy;
  double faults = 0;
  void print(const char* what) const {
    std::vector<double> s = total;
    std::sort(s.begin(), s.end());
    const auto pct = [&](double p) { return s[static_cast<std::size_t>(p * static_cast<double>(s.size() - 1))]; };
    const auto mean = [](const std::vector<double>& v) {
      double m = 0;
      for (double x : v) m += x;
      return v.empty() ? 0.0 : m / static_cast<double>(v.size());
    };
    std::printf(
        "%-44s us: mean %7.1f min %7.1f p50 %7.1f p90 %7.1f max %7.1f | run() %6.1f dest %6.1f wait %6.1f copy "
        "%6.1f (means), %.0f minor faults per run\n",
        what, mean(total), s.front(), pct(0.5), pct(0.9), s.back(), mean(run), mean(dest), mean(wait), mean(copy),
        faults);
  }
};

// n timed iterations of `run_once` (returns run()'s host time), after n / 10 + 3 untimed ones.
Stats time_runs(int n, detail::ReadTrace& tr, const std::function<double()>& run_once) {
  for (int i = 0; i < n / 10 + 3; ++i) run_once();
  Stats st;
  const long f0 = minor_faults();
  for (int i = 0; i < n; ++i) {
    tr = {};
    const auto t0 = Clock::now();
    const double r = run_once();
    st.total.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    st.run.push_back(r);
    st.dest.push_back(tr.dest);
    st.wait.push_back(tr.wait);
    st.copy.push_back(tr.copy);
  }
  st.faults = static_cast<double>(minor_faults() - f0) / n;
  return st;
}

// A distribution's line: min, p50, p90, mean, max.
void dist(const char* what, std::vector<double> v) {
  if (v.empty()) return;
  std::sort(v.begin(), v.end());
  double m = 0;
  for (double x : v) m += x;
  const auto pct = [&](double p) { return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))]; };
  std::printf("  %-34s min %7.1f p50 %7.1f p90 %7.1f mean %7.1f max %8.1f\n", what, v.front(), pct(0.5), pct(0.9),
              m / static_cast<double>(v.size()), v.back());
}

// --trace: a replayed model's runs (to_host into new memory, as gltensor-run --bench --read-back), each
// run's phases on the host clock from run()'s call (us): run() returned, the first wait (the
// submission), the GPU's start and end (timer queries, placed on the host's clock by the GPU clock
// sampled at the wait's return), the wait's return, the run's end; with polls and blocking waits.
void trace_model(Device& dev, const std::string& path, int n, Generator& gen) {
  ModelOptions opt;
  opt.replay = true;
  Model m = Model::load(dev, path, opt);
  std::map<std::string, Tensor> inputs;
  for (const auto& vi : m.inputs()) inputs[vi.name] = rand(dev, vi.shape, gen).to(vi.dtype);
  const auto once = [&] {
    auto outs = m.run(inputs);
    for (const auto& [name, t] : outs) {
      const std::size_t bytes = static_cast<std::size_t>(t.numel()) * itemsize(t.dtype());
      const std::unique_ptr<unsigned char[]> p(new unsigned char[bytes]);
      t.to_host(p.get(), bytes);
    }
  };
  const auto us = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::micro>(b - a).count();
  };
  for (int i = 0; i < n / 10 + 3; ++i) once();
  std::vector<double> plain;
  for (int i = 0; i < n; ++i) {
    const auto t0 = Clock::now();
    once();
    plain.push_back(us(t0, Clock::now()));
  }
  detail::WaitTrace tr;
  detail::set_wait_trace(&tr);
  detail::ReadTrace rt;
  detail::set_read_trace(&rt);
  for (int i = 0; i < 3; ++i) once();
  std::vector<double> total, ran, submit, gstart, gbusy, gend, wake, lat, after, polls, blocked, rdest, rwait, rcopy;
  int read_path = 0;
  for (int i = 0; i < n; ++i) {
    const GLuint q0 = tr.queries[0], q1 = tr.queries[1];
    tr = {};
    tr.queries[0] = q0;
    tr.queries[1] = q1;
    tr.want_start = true;
    const auto t0 = Clock::now();
    auto outs = m.run(inputs);
    const auto t1 = Clock::now();
    for (const auto& [name, t] : outs) {
      const std::size_t bytes = static_cast<std::size_t>(t.numel()) * itemsize(t.dtype());
      const std::unique_ptr<unsigned char[]> p(new unsigned char[bytes]);
      t.to_host(p.get(), bytes);
    }
    const auto t2 = Clock::now();
    total.push_back(us(t0, t2));
    ran.push_back(us(t0, t1));
    submit.push_back(us(t0, tr.first_wait));
    const double w = us(t0, tr.host_wake);
    wake.push_back(w);
    if (tr.gpu_wake && tr.gpu_start) {
      gstart.push_back(w - static_cast<double>(tr.gpu_wake - tr.gpu_start) * 1e-3);
      gend.push_back(w - static_cast<double>(tr.gpu_wake - tr.gpu_end) * 1e-3);
      gbusy.push_back(static_cast<double>(tr.gpu_end - tr.gpu_start) * 1e-3);
      lat.push_back(static_cast<double>(tr.gpu_wake - tr.gpu_end) * 1e-3);
    }
    after.push_back(us(tr.host_wake, t2));
    rdest.push_back(rt.dest);
    rwait.push_back(rt.wait);
    rcopy.push_back(rt.copy);
    read_path = rt.path;
    polls.push_back(tr.polls);
    blocked.push_back(tr.blocked);
  }
  detail::set_wait_trace(nullptr);
  detail::set_read_trace(nullptr);
  const std::string base = path.substr(path.find_last_of('/') + 1);
  std::printf("%s replayed, %d runs, us from run()'s call:\n", base.c_str(), n);
  dist("total, untraced", plain);
  dist("total, traced", total);
  dist("run() returned", ran);
  dist("first wait (submission)", submit);
  dist("GPU start", gstart);
  dist("GPU end (the fence's counter)", gend);
  dist("wait returned", wake);
  dist("GPU busy (end - start)", gbusy);
  dist("fence's counter to the wait's GPU clock", lat);
  dist("wait's return to the run's end", after);
  dist("polls per run", polls);
  dist("blocking waits per run", blocked);
  std::printf("  the last read's phases (ReadTrace, path %d):\n", read_path);
  dist("dest (copy queued, memory allocated)", rdest);
  dist("wait", rwait);
  dist("copy out", rcopy);
}

std::vector<std::size_t> parse_kb(const std::string& v) {
  std::vector<std::size_t> kb;
  for (std::size_t p = 0; p < v.size();) {
    const std::size_t c = std::min(v.find(',', p), v.size());
    if (c > p) kb.push_back(static_cast<std::size_t>(std::atol(v.substr(p, c - p).c_str())));
    p = c + 1;
  }
  return kb;
}

struct Spread {
  double mean = 0, min = 0, p50 = 0;
};
Spread spread(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  Spread r;
  for (double x : v) r.mean += x;
  r.mean /= static_cast<double>(v.size());
  r.min = v.front();
  r.p50 = v[v.size() / 2];
  return r;
}

// Uploads of `k` KB from warm pageable memory: from_bytes' host time and the time until the
// device holds the data (from_bytes, then synchronize). Returns the wrong bytes of the last upload.
int uploads(Device& dev, std::size_t k, int runs) {
  const std::size_t bytes = k * 1024;
  std::vector<unsigned char> host(bytes);
  for (std::size_t i = 0; i < bytes; ++i) host[i] = static_cast<unsigned char>((i * 2654435761u) >> 13);
  const std::int64_t n = static_cast<std::int64_t>(bytes / 4);
  std::vector<double> call, done;
  for (int i = 0; i < runs / 10 + 3 + runs; ++i) {
    const auto t0 = Clock::now();
    const Tensor t = Tensor::from_bytes(dev, host.data(), bytes, {n}, DType::f32);
    const auto t1 = Clock::now();
    dev.synchronize();
    const auto t2 = Clock::now();
    if (i < runs / 10 + 3) continue;
    call.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    done.push_back(std::chrono::duration<double, std::micro>(t2 - t0).count());
  }
  const Spread c = spread(call), d = spread(done);
  std::printf(
      "upload %6zu KB us: from_bytes mean %7.1f min %7.1f p50 %7.1f | +synchronize mean %7.1f min %7.1f p50 %7.1f | "
      "%.2f GB/s (mean), %.2f (min)\n",
      k, c.mean, c.min, c.p50, d.mean, d.min, d.p50, static_cast<double>(bytes) / d.mean / 1e3,
      static_cast<double>(bytes) / d.min / 1e3);
  // every byte of an upload of these bytes, read back
  const std::vector<std::uint8_t> back = Tensor::from_bytes(dev, host.data(), bytes, {n}, DType::f32).to_bytes();
  int bad = 0;
  for (std::size_t i = 0; i < bytes; ++i)
    if (back[i] != host[i]) {
      std::printf("upload of %zu KB: wrong byte %zu: %d, expected %d\n", k, i, back[i], host[i]);
      bad = 1;
      break;
    }
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 300;
  bool trace = false;  // --trace MODEL...: the replayed runs' phases (trace_model), no sizes
  std::vector<std::size_t> kb = {64, 256, 484, 1024, 2048, 4096, 6272, 8192};
  std::vector<std::size_t> up_kb = {64, 256, 1024, 2048, 4096, 4800, 8192, 16384};
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--trace") {
      trace = true;
    } else if (a == "--sizes" && i + 1 < argc) {
      kb = parse_kb(argv[++i]);
    } else if (a == "--upload-sizes" && i + 1 < argc) {
      up_kb = parse_kb(argv[++i]);
    } else {
      models.push_back(a);
    }
  }
  Device dev = Device::open();
  const char* pieces = std::getenv("GLTENSOR_READ_PIECES");
  const auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "");
  };
  std::printf("device: %s (%s); GLTENSOR_READ_PIECES=%s UPLOAD_PIECES=%s UPLOAD_COPY=%s UPLOAD_DIRECT=%s STAGING=%s\n",
              dev.caps().renderer.c_str(), dev.caps().version.c_str(), pieces ? pieces : "",
              env("GLTENSOR_UPLOAD_PIECES").c_str(), env("GLTENSOR_UPLOAD_COPY").c_str(),
              env("GLTENSOR_UPLOAD_DIRECT").c_str(), env("GLTENSOR_STAGING").c_str());
  Generator gen(37);
  if (trace) {
    for (const std::string& path : models) trace_model(dev, path, runs, gen);
    return 0;
  }
  int bad = 0;
  for (const std::size_t k : up_kb)
    if (k > 0) bad += uploads(dev, k, runs);
  detail::ReadTrace tr;
  detail::set_read_trace(&tr);
  std::vector<unsigned char> reused;
  const Mode modes[] = {Mode::vector, Mode::fresh, Mode::reuse};
  for (const std::size_t k : kb) {
    if (k == 0) continue;
    const std::int64_t n = static_cast<std::int64_t>(k * 1024 / 4);
    const Tensor x = rand(dev, {n}, gen);
    const std::vector<float> xs = x.to_vector();
    for (const Mode m : modes) {
      const Stats st = time_runs(runs, tr, [&] {
        const auto t0 = Clock::now();
        const Tensor y = x + 1.0;
        const double r = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
        if (read(y, m, reused) != xs[0] + 1.0f) ++bad;
        return r;
      });
      st.print(("x + 1, " + std::to_string(k) + " KB, " + mode_name(m)).c_str());
    }
    // every element of the last read (pieces, helper chunks: none lost)
    std::vector<float> all(static_cast<std::size_t>(n));
    (x + 1.0).to_host(all.data(), all.size() * 4);
    for (std::size_t i = 0; i < all.size(); ++i)
      if (all[i] != xs[i] + 1.0f) {
        ++bad;
        std::printf("wrong element %zu of %zu: %g, expected %g\n", i, all.size(), all[i], xs[i] + 1.0f);
        break;
      }
  }
  for (const std::string& path : models) {
    for (const bool replay : {false, true}) {
      ModelOptions opt;
      opt.replay = replay;
      Model m = Model::load(dev, path, opt);
      std::map<std::string, Tensor> inputs;
      for (const auto& vi : m.inputs()) inputs[vi.name] = rand(dev, vi.shape, gen).to(vi.dtype);
      std::size_t out_bytes = 0;
      for (const Mode mode : modes) {
        const Stats st = time_runs(runs, tr, [&] {
          const auto t0 = Clock::now();
          auto outs = m.run(inputs);
          const double r = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
          out_bytes = 0;
          for (const auto& [name, t] : outs) {
            (void)read(t, mode, reused);
            out_bytes += static_cast<std::size_t>(t.numel()) * itemsize(t.dtype());
          }
          return r;
        });
        const std::string base = path.substr(path.find_last_of('/') + 1);
        st.print((base + (replay ? " replayed" : " plain") + " (" + std::to_string(out_bytes >> 10) + " KB), " +
                  mode_name(mode))
                     .c_str());
      }
    }
  }
  detail::set_read_trace(nullptr);
  std::printf("wrong results: %d\n", bad);
  return bad ? 1 : 0;
}
