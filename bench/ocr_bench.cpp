// gltensor_ocr_bench [--models DIR] [--runs N] [--ort node|python|none] [--out DIR]
//                    [--only det|rec|recshapes|ocr|ocr960]... [--rec-batch N]... [--rec-align N]
//                    [--images gpu|host]... [--det-limit N]... [--rec-call-cost N]... [--cls 0|1]...
//                    [--replay 0|1]... [--fuse 0|1]... [--f16 0|1]... [--text] [--rec-grid NxW]...
//                    [--db-map FILE] [--cv-threads N]
// Times PaddleOCR's models on gltensor against ONNX Runtime (CPU) on the same inputs:
//   det 640x640   the detector on the sample image resized to 640 x 640
//   rec 48x320    the recognizer on one text line
//   recshapes     the recognizer's first run of a new input width against its second run
//   recgrid       the recognizer replayed at each --rec-grid LINESxWIDTH (min and median ms of
//                 --runs runs, read back as the page's calls are) and the line through the mins:
//                 a call's fixed cost in columns (RecBatchOptions::call_cost)
//   ocr sample    the whole OCR of the demo's sample (800 x 480): det + post-processing + rec
//   ocr 960x960   the whole OCR of a 960 x 960 page of many lines (ocr::page_sample_lines):
//                 det + angle classification + rec with every host step, once per --rec-batch
//                 value (lines per recognizer call; default 6, PaddleOCR's, and 0, all lines in
//                 one call), with the time per stage, the recognizer calls and their distinct
//                 input shapes, the first two runs' times (new shapes: planning and, on GPUs, the
//                 matmul tuner) and the character accuracy against the rendered text; and once
//                 per --images value: gpu (the page uploaded once as bytes, every model input
//                 cut from it by warp_perspective) and host (OpenCV crops and resizes, float
//                 uploads: the path before), in the same run; and once per --det-limit value
//                 (the detector's longer side: PaddleOCR's limit_side_len, 960) and per
//                 --rec-call-cost value (0: PaddleOCR's fixed groups of --rec-batch lines; N > 0:
//                 the cheapest cut of the sorted lines, a call costing N columns, at most
//                 --rec-batch lines per call; RecBatchOptions::call_cost) and --cls value (angle
//                 classification on, 1, the default, or off, PaddleOCR's use_angle_cls default) and
//                 --replay value (1: OcrOptions::replay, the models loaded a second time with it)
//                 and --fuse value (0: the models planned without the planner's LayerNorm and
//                 attention fusions, GLTENSOR_FUSE_LAYERNORM / GLTENSOR_FUSE_ATTENTION=0, loaded
//                 again; 1, the default: as the settings say) and --f16 value (1: the models' weights
//                 stored as float16, OcrOptions::f16_weights, loaded again; 0, the default: float32).
//                 Each row says how many of its lines read differently from the first row's (the
//                 same page: a change of precision or batching that changes the text shows here);
//                 --text prints the first row's lines.
// gltensor: mean of N runs after one warm-up run (outputs read back, so the GPU has finished);
// the OCR cases warm up twice: with --replay 1 a shape's second run is the one captured
// (ModelOptions::replay), up to twice a replayed run's time on the H100, and the timed runs are then
// the replays that a stream of pages of these shapes runs (each row's note gives both warm-up
// runs' times).
// ONNX Runtime: `node tools/ort-reference/ort_run.js --bench N` (npm onnxruntime-node; this
// machine) or `python3 bench/ort_reference.py` (pip onnxruntime; the GPU machine) on the same
// .npy inputs, with every CPU core; the whole OCR's reference is ORT's time for every model call
// of a run (det, cls, each rec batch) plus gltensor's host pre- and post-processing time. Prints
// Markdown tables (ms, and speed = ORT ms / gltensor ms).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <opencv2/core/utility.hpp>
#include <opencv2/imgproc.hpp>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <tuple>

#include "image.hpp"
#include "npy_io.hpp"
#include "pipeline.hpp"
#include "runtime/settings.hpp"
#include "sample.hpp"

namespace fs = std::filesystem;
using namespace gltensor;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// --db-map: the map from `file` where it exists (prob, h and w replaced), else written there.
void read_or_write_map(const std::string& file, std::vector<float>& prob, int& h, int& w) {
  if (std::FILE* f = std::fopen(file.c_str(), "rb")) {
    std::int32_t hw[2] = {0, 0};
    bool ok = std::fread(hw, sizeof hw, 1, f) == 1 && hw[0] > 0 && hw[1] > 0 && hw[0] <= 8192 && hw[1] <= 8192;
    if (ok) {
      prob.resize(static_cast<std::size_t>(hw[0]) * hw[1]);
      ok = std::fread(prob.data(), sizeof(float), prob.size(), f) == prob.size();
    }
    std::fclose(f);
    if (!ok) throw std::runtime_error("--db-map " + file + ": not a det map (int32 h, w, h x w float32)");
    h = hw[0], w = hw[1];
    std::printf("DB map read from %s (%d x %d)\n", file.c_str(), h, w);
    return;
  }
  std::FILE* f = std::fopen(file.c_str(), "wb");
  const std::int32_t hw[2] = {h, w};
  const bool ok = f && std::fwrite(hw, sizeof hw, 1, f) == 1 &&
                  std::fwrite(prob.data(), sizeof(float), prob.size(), f) == prob.size();
  if (f) std::fclose(f);
  if (!ok) throw std::runtime_error("--db-map " + file + ": cannot write");
  std::printf("DB map written to %s (%d x %d)\n", file.c_str(), h, w);
}

std::string g_ort, g_source, g_cache;
int g_threads = 0;

// Runs the reference on x and returns its mean ms (NaN when unavailable).
double ort_ms(const std::string& model, const std::string& x, int runs) {
  if (g_ort == "none") return NAN;
  const std::string log = x + ".ort.json";
  std::string cmd;
  if (g_ort == "node")
    cmd = "GLTENSOR_MODEL_CACHE='" + g_cache + "' node '" + g_source + "/tools/ort-reference/ort_run.js' '" + model +
          "' --input x='" + x + "' --bench " + std::to_string(runs) + " --threads " + std::to_string(g_threads);
  else
    cmd = "python3 '" + g_source + "/bench/ort_reference.py' '" + model + "' '" + x + "' --runs " +
          std::to_string(runs) + " --threads " + std::to_string(g_threads);
  cmd += " > '" + log + "' 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "reference failed: %s\n", cmd.c_str());
    return NAN;
  }
  std::ifstream f(log);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string s = ss.str();
  const auto k = s.find("\"bench_ms\":");
  return k == std::string::npos ? NAN : std::stod(s.substr(k + 11));
}

template <typename F>
double time_ms(int runs, F f) {
  f();
  const auto t0 = Clock::now();
  for (int i = 0; i < runs; ++i) f();
  return ms_since(t0) / runs;
}

void row(const char* name, double g, double r, const std::string& note) {
  std::printf("| %s | %.1f | %s | %s | %s |\n", name, g, std::isnan(r) ? "-" : std::to_string(r).substr(0, 7).c_str(),
              std::isnan(r) ? "-" : std::to_string(r / g).substr(0, 5).c_str(), note.c_str());
  std::fflush(stdout);
}

// Mean ms of every stage over runs, the runs' totals, and the last run's shapes.
struct PageResult {
  ocr::OcrTimings mean, first, second, last;
  std::vector<double> totals;        // each run's total ms, sorted
  std::vector<ocr::OcrTimings> all;  // each run's timings, in run order
  std::vector<ocr::TextLine> lines;
};

// The sorted values' q-quantile (the nearest lower rank); NaN without values.
double quantile(const std::vector<double>& sorted, double q) {
  return sorted.empty() ? NAN : sorted[static_cast<std::size_t>(q * static_cast<double>(sorted.size() - 1))];
}

PageResult time_page(ocr::OcrPipeline& pipe, const cv::Mat& img, int runs) {
  PageResult r;
  pipe.run(img, &r.first);
  // With replay, the run that captures each model's recording (see the header).
  pipe.run(img, &r.second);
  ocr::OcrTimings& m = r.mean;
  for (int i = 0; i < runs; ++i) {
    r.lines = pipe.run(img, &r.last);
    const ocr::OcrTimings& t = r.last;
    r.totals.push_back(t.total_ms);
    r.all.push_back(t);
    for (auto [sum, v] : {std::pair{&m.det_pre_ms, t.det_pre_ms},
                          {&m.det_ms, t.det_ms},
                          {&m.post_ms, t.post_ms},
                          {&m.cls_ms, t.cls_ms},
                          {&m.rec_pre_ms, t.rec_pre_ms},
                          {&m.rec_ms, t.rec_ms},
                          {&m.decode_ms, t.decode_ms},
                          {&m.total_ms, t.total_ms}})
      *sum += v / runs;
  }
  std::sort(r.totals.begin(), r.totals.end());
  return r;
}

// The reference for a whole OCR run: ONNX Runtime on each model call's inputs of the last run.
double ort_whole(const ocr::OcrPipeline& pipe, const ocr::OcrOptions& o, const fs::path& dir, const std::string& tag,
                 int runs) {
  if (g_ort == "none") return NAN;
  double ms = 0;
  auto one = [&](const std::string& model, const ocr::ModelInput& in, const std::string& name) {
    const std::string f = (dir / (tag + "_" + name + ".npy")).string();
    npy::write_floats(f, in.host_values(), in.shape);
    ms += ort_ms(model, f, runs);
  };
  one(o.det_model, pipe.last_det_input(), "det");
  for (std::size_t k = 0; k < pipe.last_cls_inputs().size(); ++k)
    one(o.cls_model, pipe.last_cls_inputs()[k], "cls" + std::to_string(k));
  for (std::size_t k = 0; k < pipe.last_rec_inputs().size(); ++k)
    one(o.rec_model, pipe.last_rec_inputs()[k], "rec" + std::to_string(k));
  return ms;
}

std::string shapes_note(const ocr::OcrTimings& t) {
  std::set<Shape> distinct(t.rec_shapes.begin(), t.rec_shapes.end());
  std::string s = "det " + to_string(t.det_shape) + (t.cls_shape.empty() ? "" : ", cls " + to_string(t.cls_shape)) +
                  ", rec " + std::to_string(t.rec_shapes.size()) + " calls, " + std::to_string(distinct.size()) +
                  " shapes:";
  for (const auto& r : t.rec_shapes) s += " " + to_string(r);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"PaddleOCR models on gltensor vs ONNX Runtime (CPU)"};
  std::string models, out = "ocr-bench";
  int runs = 5;
  g_ort = "node";
  g_source = GLTENSOR_BENCH_SOURCE_DIR;
  g_cache = std::getenv("GLTENSOR_MODEL_CACHE") ? std::getenv("GLTENSOR_MODEL_CACHE") : GLTENSOR_BENCH_MODEL_CACHE;
  g_threads = static_cast<int>(std::thread::hardware_concurrency());
  std::vector<std::string> only;
  std::vector<int> rec_batch_values{6, 0};
  int rec_align = ocr::RecBatchOptions{}.align;
  std::vector<std::string> images{"gpu", "host"};
  std::vector<int> det_limits{ocr::OcrOptions{}.det_limit}, call_costs{0}, cls_values{1}, replay_values{0},
      fuse_values{1}, f16_values{0};
  bool print_text = false;
  std::string db_map;
  std::vector<std::string> rec_grid{"1x320", "6x320", "6x832", "9x832", "16x320", "16x832", "9x1376", "16x1376"};
  app.add_option("--models", models, "folder of the OCR models (default: GLTENSOR_MODEL_CACHE/models/ocr)");
  app.add_option("--runs", runs, "timed runs per case")->capture_default_str();
  app.add_option("--ort", g_ort, "reference: node, python or none")->check(CLI::IsMember({"node", "python", "none"}));
  app.add_option("--source", g_source, "repository root (for the reference scripts)");
  app.add_option("--threads", g_threads, "ONNX Runtime threads")->capture_default_str();
  app.add_option("--out", out, "folder for the inputs given to the reference")->capture_default_str();
  app.add_option("--only", only, "cases: det rec recshapes recgrid ocr ocr960");
  app.add_option("--rec-batch", rec_batch_values, "ocr960: lines per recognizer call, one row each (0: all lines)")
      ->capture_default_str();
  app.add_option("--rec-align", rec_align, "recognizer batch widths rounded up to a multiple of this (1: PaddleOCR's)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--images", images, "where the models' inputs are made (ocr960: one row each; ocr: the first)")
      ->capture_default_str()
      ->check(CLI::IsMember({"gpu", "host"}));
  app.add_option("--det-limit", det_limits, "ocr960: the detector's longer side, one row each")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--rec-call-cost", call_costs,
                 "ocr960: a recognizer call's cost in columns, one row each (0: PaddleOCR's fixed batches)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option(
         "--replay", replay_values,
         "ocr960: the models' runs recorded once per shape and replayed (1; OcrOptions::replay) or not (0), one "
         "row each")
      ->capture_default_str()
      ->check(CLI::IsMember({0, 1}));
  app.add_option("--cls", cls_values, "ocr960: angle classification on (1) or off (0), one row each")
      ->capture_default_str()
      ->check(CLI::IsMember({0, 1}));
  app.add_option("--fuse", fuse_values,
                 "ocr960: the models planned with the LayerNorm and attention fusions (1) or without (0), one row each")
      ->capture_default_str()
      ->check(CLI::IsMember({0, 1}));
  app.add_option("--f16", f16_values,
                 "ocr960: the models' weights stored as float16 (1; OcrOptions::f16_weights) or float32 (0), one row "
                 "each")
      ->capture_default_str()
      ->check(CLI::IsMember({0, 1}));
  app.add_flag("--text", print_text, "ocr960: print the first row's lines as read");
  app.add_option("--db-map", db_map,
                 "ocr960: write the first row's last det map to this file (int32 h, w, then h x w float32) and "
                 "read it from there instead where it exists (the same boxes on every build)");
  app.add_option("--rec-grid", rec_grid, "recgrid: the recognizer's inputs, LINESxWIDTH each")->capture_default_str();
  int cv_threads = 0;
  app.add_option("--cv-threads", cv_threads,
                 "OpenCV's threads (cv::setNumThreads; 1: the DB post-processing on the calling thread alone); 0, "
                 "the default: OpenCV's own")
      ->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);
  if (cv_threads > 0) cv::setNumThreads(cv_threads);
  if (models.empty()) models = (fs::path(g_cache) / "models" / "ocr").string();
  auto want = [&](const std::string& c) {
    return only.empty() || std::find(only.begin(), only.end(), c) != only.end();
  };
  try {
    fs::create_directories(out);
    Device dev = Device::open();
    ocr::OcrOptions o;
    o.det_model = (fs::path(models) / "ch_PP-OCRv4_det_infer.onnx").string();
    o.rec_model = (fs::path(models) / "ch_PP-OCRv4_rec_infer.onnx").string();
    o.cls_model = (fs::path(models) / "ch_ppocr_mobile_v2.0_cls_infer.onnx").string();
    o.keys = (fs::path(models) / "ppocr_keys_v1.txt").string();
    o.use_cls = true;  // loads the classifier; the sample case runs without it (set_use_cls)
    o.rec.align = rec_align;
    ocr::OcrPipeline pipe(dev, o);
    ocr::Font font;
    const auto lines = ocr::default_sample_lines();
    cv::Mat sample = ocr::render_sample(font, lines, 800, 480);
    std::printf("device: %s; %d runs per case; reference: ONNX Runtime CPU (%s, %d threads)\n\n",
                dev.caps().renderer.c_str(), runs, g_ort.c_str(), g_threads);
    std::printf("| case | gltensor ms | ONNX Runtime ms | speed vs ORT | note |\n|---|---|---|---|---|\n");
    if (want("det")) {
      cv::Mat img;
      cv::resize(sample, img, cv::Size(640, 640));
      int h = 0, w = 0;
      auto x = pipe.det_input(img, h, w);
      const std::string f = (fs::path(out) / "det_640.npy").string();
      npy::write_floats(f, x, {1, 3, h, w});
      Tensor t = Tensor::from_host(dev, x, {1, 3, h, w});
      const double g = time_ms(runs, [&] { pipe.det().run({{"x", t}}).begin()->second.to_vector(); });
      row("det 640x640", g, ort_ms(o.det_model, f, runs), "PP-OCRv4 det, sample resized");
    }
    if (want("rec")) {
      cv::Mat line = ocr::OcrPipeline::crop(
          sample, {cv::Point2f(38, 108), cv::Point2f(630, 108), cv::Point2f(630, 148), cv::Point2f(38, 148)});
      auto x = pipe.rec_input(line, 320);
      const std::string f = (fs::path(out) / "rec_48x320.npy").string();
      npy::write_floats(f, x, {1, 3, 48, 320});
      Tensor t = Tensor::from_host(dev, x, {1, 3, 48, 320});
      const double g = time_ms(runs, [&] { pipe.rec().run({{"x", t}}).begin()->second.to_vector(); });
      row("rec 48x320", g, ort_ms(o.rec_model, f, runs), "PP-OCRv4 rec, one line");
    }
    if (want("recshapes")) {
      // What a new input width costs: the recognizer's first run of a width it has not seen
      // (planning; new kernel variants; on GPUs the matmul tuner, whose choices persist in the
      // cache folder) against its next run of that width.
      cv::Mat line = ocr::OcrPipeline::crop(
          sample, {cv::Point2f(38, 108), cv::Point2f(630, 108), cv::Point2f(630, 148), cv::Point2f(38, 148)});
      for (int width : {352, 416, 480, 544}) {
        const Shape shape{1, 3, 48, width};
        Tensor t = Tensor::from_host(dev, pipe.rec_input(line, width), shape);
        auto once = [&] {
          const auto t0 = Clock::now();
          pipe.rec().run({{"x", t}}).begin()->second.to_vector();
          return ms_since(t0);
        };
        const double first = once(), next = once();
        const std::string name = "rec 48x" + std::to_string(width) + ", new width";
        row(name.c_str(), first, NAN,
            "first run of this width; the next run: " + std::to_string(next).substr(0, 6) + " ms");
      }
    }
    if (want("recgrid")) {
      // The recognizer's time per call against its input's size (lines x width), replayed and
      // read back as OcrPipeline::recognize runs its calls (each step's best class and its
      // probability), min and median of the runs; then the least-squares line through the mins,
      // ms = a + b x columns (lines x width): a / b is RecBatchOptions::call_cost in columns.
      ModelOptions mo;
      mo.replay = true;
      mo.replay_shapes = static_cast<int>(rec_grid.size()) + 1;
      Model rec = Model::load(dev, o.rec_model, mo);
      double sx = 0, sy = 0, sxx = 0, sxy = 0;
      for (const std::string& g : rec_grid) {
        int n = 0, width = 0;
        if (std::sscanf(g.c_str(), "%dx%d", &n, &width) != 2 || n <= 0 || width <= 0)
          throw std::invalid_argument("--rec-grid " + g + ": expected LINESxWIDTH, both positive");
        const Shape shape{n, 3, 48, width};
        std::vector<float> v(static_cast<std::size_t>(numel_of(shape)));
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)));
        const Tensor x = Tensor::from_host(dev, v, shape);
        auto once = [&] {
          const auto t0 = Clock::now();
          auto out = rec.run({{rec.inputs()[0].name, x}});
          const Tensor& probs = out.begin()->second;
          const Tensor best = argmax(probs, -1, true);
          AsyncRead a = best.to_host_async(), b = gather(probs, -1, best).to_host_async();
          a.get_float();
          b.get_float();
          return ms_since(t0);
        };
        once();
        once();
        std::vector<double> t;
        for (int i = 0; i < runs; ++i) t.push_back(once());
        std::sort(t.begin(), t.end());
        const double cols = static_cast<double>(n) * width;
        sx += cols, sy += t[0], sxx += cols * cols, sxy += cols * t[0];
        const std::string name = "rec " + to_string(shape) + ", replayed (min)";
        row(name.c_str(), t[0], NAN,
            "min " + std::to_string(t[0]).substr(0, 6) + ", median " + std::to_string(quantile(t, 0.5)).substr(0, 6) +
                " ms; " + std::to_string(static_cast<long long>(cols)) + " columns");
      }
      const double k = static_cast<double>(rec_grid.size()), den = k * sxx - sx * sx;
      if (rec_grid.size() > 1 && den > 0) {
        const double b = (k * sxy - sx * sy) / den, a = (sy - b * sx) / k;
        std::printf("\nrecgrid fit (mins): ms = %.4f + %.4f us x columns; a call costs %.0f columns\n\n", a, 1000 * b,
                    b > 0 ? a / b : NAN);
      }
    }
    if (want("ocr")) {
      // The demo's sample as before: det + rec, no classification.
      pipe.set_use_cls(false);
      pipe.set_gpu_images(images.front() == "gpu");
      const PageResult r = time_page(pipe, sample, runs);
      const ocr::OcrTimings& m = r.mean;
      const double host = m.det_pre_ms + m.post_ms + m.rec_pre_ms + m.decode_ms;
      const double ref = ort_whole(pipe, o, out, "ocr", runs) + host;
      char note[160];
      std::snprintf(note, sizeof note, "; gltensor det %.1f ms, rec %.1f ms, host %.1f ms", m.det_ms, m.rec_ms, host);
      row("OCR sample 800x480", m.total_ms, ref, shapes_note(r.last) + note);
    }
    if (want("ocr960")) {
      // A page of many lines: det + cls (where on) + rec, per row.
      ocr::OcrPipeline& pipe_plain = pipe;
      const auto truth = ocr::page_sample_lines(font, 960, 960);
      cv::Mat page = ocr::render_sample(font, truth, 960, 960);
      std::vector<std::pair<std::string, PageResult>> results;
      struct Row {
        int batch, cost, limit, cls, replay, fuse, f16;
        std::string where;
      };
      std::vector<Row> rows;
      for (int b : rec_batch_values)
        for (int c : call_costs)
          for (int l : det_limits)
            for (int k : cls_values)
              for (int rp : replay_values)
                for (int fu : fuse_values)
                  for (int h : f16_values)
                    for (const std::string& where : images) rows.push_back({b, c, l, k, rp, fu, h, where});
      // The models loaded again for the rows that ask for replay, no fusions or f16 weights, once
      // per combination.
      using Load = std::tuple<int, int, int>;
      auto own_load = [](const Row& r) { return r.replay || !r.fuse || r.f16; };
      std::map<Load, std::unique_ptr<ocr::OcrPipeline>> others;
      for (const Row& r : rows)
        if (own_load(r) && !others.count({r.replay, r.fuse, r.f16})) {
          ocr::OcrOptions ro = o;
          ro.replay = r.replay != 0;
          ro.f16_weights = r.f16 != 0;
          detail::Settings& st = detail::settings();
          const detail::Settings saved = st;
          if (!r.fuse) st.fuse_layernorm = st.fuse_attention = false;
          others[{r.replay, r.fuse, r.f16}] = std::make_unique<ocr::OcrPipeline>(dev, ro);
          st = saved;
        }
      std::vector<std::string> first_text;
      ocr::OcrPipeline* first_pipe = nullptr;
      for (const Row& row_ : rows) {
        ocr::OcrPipeline& pipe = own_load(row_) ? *others.at({row_.replay, row_.fuse, row_.f16}) : pipe_plain;
        if (!first_pipe) first_pipe = &pipe;
        ocr::RecBatchOptions rb = pipe.options().rec;
        rb.batch = row_.batch;
        rb.call_cost = row_.cost;
        pipe.set_rec_batching(rb);
        pipe.set_gpu_images(row_.where == "gpu");
        pipe.set_det_limit(row_.limit);
        pipe.set_use_cls(row_.cls != 0);
        PageResult r = time_page(pipe, page, runs);
        const ocr::OcrTimings& m = r.mean;
        const double host = m.det_pre_ms + m.post_ms + m.rec_pre_ms + m.decode_ms;
        const std::string tag = "ocr960_b" + std::to_string(row_.batch) + "c" + std::to_string(row_.cost) + "d" +
                                std::to_string(row_.limit) + (row_.cls ? "" : "nocls") + (row_.replay ? "replay" : "") +
                                (row_.fuse ? "" : "nofuse") + (row_.f16 ? "f16" : "") + row_.where;
        const double ref = ort_whole(pipe, o, out, tag, runs) + host;
        std::vector<std::string> read;
        for (const auto& l : r.lines) read.push_back(l.text);
        const auto acc = ocr::text_accuracy(truth, read);
        if (first_text.empty()) {
          first_text = read;
          if (print_text)
            for (std::size_t i = 0; i < read.size(); ++i) std::printf("line %zu: %s\n", i, read[i].c_str());
        }
        // Lines read otherwise than the first row's (every line where the counts differ).
        std::size_t differ = 0;
        if (read.size() != first_text.size())
          differ = std::max(read.size(), first_text.size());
        else
          for (std::size_t i = 0; i < read.size(); ++i)
            if (read[i] != first_text[i]) {
              ++differ;
              std::printf("line %zu reads otherwise than the first row's: %s\n", i, read[i].c_str());
            }
        char note[420];
        std::snprintf(note, sizeof note,
                      "; %lld columns run for %lld of text; %zu of %zu lines found, %.1f%% of characters read, %zu "
                      "lines read otherwise than the first row; the runs' totals min %.2f, median %.2f, max %.2f ms; "
                      "first run %.1f ms, second %.1f ms",
                      static_cast<long long>(r.last.rec_run_columns), static_cast<long long>(r.last.rec_line_columns),
                      r.lines.size(), truth.size(), 100 * acc.accuracy(), differ, quantile(r.totals, 0),
                      quantile(r.totals, 0.5), quantile(r.totals, 1), r.first.total_ms, r.second.total_ms);
        const std::string label = "rec batch " + (row_.batch > 0 ? std::to_string(row_.batch) : std::string("all")) +
                                  (row_.cost > 0 ? ", call cost " + std::to_string(row_.cost) : std::string()) +
                                  ", det " + std::to_string(row_.limit) + (row_.cls ? "" : ", no cls") +
                                  (row_.replay ? ", replay" : "") +
                                  (row_.fuse ? "" : ", no LayerNorm/attention fusion") +
                                  (row_.f16 ? ", f16 weights" : "") + ", " + row_.where + " images";
        row(("OCR 960x960, " + label).c_str(), m.total_ms, ref, shapes_note(r.last) + note);
        results.emplace_back(label, std::move(r));
      }
      // Where the time goes: one column per batching.
      std::printf("\n| stage (ms, mean of %d runs) |", runs);
      for (const auto& [label, r] : results) std::printf(" %s |", label.c_str());
      std::printf("\n|---|");
      for (std::size_t i = 0; i < results.size(); ++i) std::printf("---|");
      std::printf("\n");
      const std::pair<const char*, double ocr::OcrTimings::*> stages[] = {
          {"det: resize, normalize (host; gpu images: upload, warp)", &ocr::OcrTimings::det_pre_ms},
          {"det: upload, model, read-back", &ocr::OcrTimings::det_ms},
          {"DB boxes, crops (host; gpu images: crop maps)", &ocr::OcrTimings::post_ms},
          {"cls: inputs, model, read-back", &ocr::OcrTimings::cls_ms},
          {"rec: inputs (host; gpu images: warps queued)", &ocr::OcrTimings::rec_pre_ms},
          {"rec: upload, model, read-back", &ocr::OcrTimings::rec_ms},
          {"CTC decode (host)", &ocr::OcrTimings::decode_ms},
          {"total", &ocr::OcrTimings::total_ms}};
      for (const auto& [label, field] : stages) {
        std::printf("| %s |", label);
        for (const auto& [l, r] : results) std::printf(" %.2f |", r.mean.*field);
        std::printf("\n");
      }
      // The same stages' medians over the runs (a stage's outliers aside), as one line per row.
      for (const auto& [label, r] : results) {
        std::printf("medians of %s:", label.c_str());
        for (const auto& [stage, field] : stages) {
          std::vector<double> v;
          for (const auto& t : r.all) v.push_back(t.*field);
          std::sort(v.begin(), v.end());
          std::printf(" %.2f", quantile(v, 0.5));
        }
        std::printf(" (the stages above, in order)\n");
      }
      // DB post-processing alone on the last det map of the first row, hot (repeated in a loop): the
      // host's speed for it in this process, against the page's DB stage between GPU waits.
      if (first_pipe) {
        ocr::OcrPipeline& p0 = *first_pipe;
        const ocr::ModelInput& in = p0.last_det_input();
        if (in.tensor.defined()) {
          auto prob = p0.det().run({{p0.det().inputs()[0].name, in.tensor}}).begin()->second.to_vector();
          int h = static_cast<int>(in.shape[2]), w = static_cast<int>(in.shape[3]);
          if (!db_map.empty()) read_or_write_map(db_map, prob, h, w);
          std::vector<double> t;
          std::vector<ocr::TextLine> boxes;
          for (int i = 0; i < 200; ++i) {
            const auto t0 = Clock::now();
            boxes = p0.boxes_from_map(prob, h, w, page.rows, page.cols);
            t.push_back(ms_since(t0));
          }
          std::sort(t.begin(), t.end());
          std::printf("DB boxes alone, hot (200 calls on the first row's last det map): min %.3f, median %.3f ms\n",
                      t[0], quantile(t, 0.5));
          // The boxes themselves (corners and scores, bit for bit), to compare builds on one map.
          std::uint64_t hash = 1469598103934665603ULL;
          for (const auto& l : boxes) {
            float v[9] = {l.box_score};
            for (int k = 0; k < 4; ++k) v[1 + 2 * k] = l.box[k].x, v[2 + 2 * k] = l.box[k].y;
            const auto* b = reinterpret_cast<const unsigned char*>(v);
            for (std::size_t j = 0; j < sizeof v; ++j) hash = (hash ^ b[j]) * 1099511628211ULL;
          }
          std::printf("DB boxes on that map: %zu, FNV-1a of corners and scores %016llx\n", boxes.size(),
                      static_cast<unsigned long long>(hash));
        }
      }
      std::fflush(stdout);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gltensor_ocr_bench: %s\n", e.what());
    return 1;
  }
}
