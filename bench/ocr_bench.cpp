// gltensor_ocr_bench [--models DIR] [--runs N] [--ort node|python|none] [--out DIR] [--sizes]
// Times PaddleOCR's models on gltensor against ONNX Runtime (CPU) on the same inputs:
//   det 640x640   the detector on the sample image resized to 640 x 640
//   rec 48x320    the recognizer on one text line
//   ocr sample    the whole OCR of the demo's sample (800 x 480): det + post-processing + rec
//   ocr 960x960   the whole OCR of the sample lines on a 960 x 960 page
// gltensor: mean of N runs after one warm-up run (outputs read back, so the GPU has finished).
// ONNX Runtime: `node tools/ort-reference/ort_run.js --bench N` (npm onnxruntime-node; this
// machine) or `python3 bench/ort_reference.py` (pip onnxruntime; the GPU machine) on the same
// .npy inputs, with every CPU core; the whole OCR's reference is ORT's det + rec times plus the
// same host post-processing time. Prints a Markdown table (ms, and speed = ORT ms / gltensor ms).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <opencv2/imgproc.hpp>
#include <sstream>
#include <thread>

#include "image.hpp"
#include "npy_io.hpp"
#include "pipeline.hpp"
#include "sample.hpp"

namespace fs = std::filesystem;
using namespace gltensor;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

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
  app.add_option("--models", models, "folder of the OCR models (default: GLTENSOR_MODEL_CACHE/models/ocr)");
  app.add_option("--runs", runs, "timed runs per case")->capture_default_str();
  app.add_option("--ort", g_ort, "reference: node, python or none")->check(CLI::IsMember({"node", "python", "none"}));
  app.add_option("--source", g_source, "repository root (for the reference scripts)");
  app.add_option("--threads", g_threads, "ONNX Runtime threads")->capture_default_str();
  app.add_option("--out", out, "folder for the inputs given to the reference")->capture_default_str();
  app.add_option("--only", only, "cases: det rec ocr ocr960");
  CLI11_PARSE(app, argc, argv);
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
    for (const std::string c : {"ocr", "ocr960"}) {
      if (!want(c)) continue;
      cv::Mat img = c == "ocr" ? sample : ocr::render_sample(font, lines, 960, 960);
      ocr::OcrTimings tm;
      double post = 0, det = 0, rec = 0;
      const double g = time_ms(runs, [&] {
        pipe.run(img, &tm);
        post += tm.post_ms;
        det += tm.det_ms;
        rec += tm.rec_ms;
      });
      post /= runs + 1;
      Shape ds, rs;
      const auto& dx = pipe.last_det_input(ds);
      const auto& rx = pipe.last_rec_input(rs);
      const std::string fd = (fs::path(out) / (c + "_det.npy")).string(),
                        fr = (fs::path(out) / (c + "_rec.npy")).string();
      npy::write_floats(fd, dx, ds);
      npy::write_floats(fr, rx, rs);
      const double r = ort_ms(o.det_model, fd, runs) + ort_ms(o.rec_model, fr, runs) + post;
      const std::string note = "det " + to_string(ds) + ", rec " + to_string(rs) + "; gltensor det " +
                               std::to_string(static_cast<int>(det / (runs + 1))) + " ms, rec " +
                               std::to_string(static_cast<int>(rec / (runs + 1))) + " ms, post " +
                               std::to_string(static_cast<int>(post)) + " ms";
      row(c == "ocr" ? "OCR sample 800x480" : "OCR 960x960", g, r, note);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gltensor_ocr_bench: %s\n", e.what());
    return 1;
  }
}
