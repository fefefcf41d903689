// graphics_demo_net_check OUT_DIR -- COMMAND...: runs the graphics demo (COMMAND, e.g. xvfb-run
// ... graphics_demo --size 320x224 --frames 3) with --network det on the model cache's PP-OCRv4
// detector, writing the last frame's scene, probability map and boxes into OUT_DIR; then
// computes the detector's input from the scene PNG on the CPU (PaddleOCR's preprocessing,
// demos/ocr_det: independent of the demo's from_texture path), runs ONNX Runtime on it
// (tools/ort-reference/ort_run.js, npm onnxruntime-node) and compares: the maps within 2e-3 (the
// OCR model tests' tolerance), at least one box, and the demo's boxes those of DB
// post-processing on ONNX Runtime's map (corners within 3 pixels).
// Exit status 77 (a ctest skip) when the model cache, onnxruntime-node or node is missing,
// unless GLTENSOR_REQUIRE_MODELS=1 (then 1).
#include <stb/stb_image.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "det.hpp"
#include "npy_io.hpp"

namespace fs = std::filesystem;

namespace {

constexpr double kAtol = 2e-3;  // probability map against ONNX Runtime (tests/model/test_ocr_models.cpp)
constexpr float kCornerPx = 3;  // box corners against those from ONNX Runtime's map

fs::path cache_dir() {
  if (const char* c = std::getenv("GLTENSOR_MODEL_CACHE")) return c;
  return GRAPHICS_DEMO_MODEL_CACHE;
}

std::string quote(const std::string& s) {
  std::string r = "'";
  for (char c : s) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return r + "'";
}

std::string missing(const fs::path& model) {
  if (!fs::exists(model)) return model.string() + " is missing (run scripts/fetch-models.sh ocr)";
  if (!fs::exists(cache_dir() / "ort" / "node_modules" / "onnxruntime-node"))
    return "onnxruntime-node is missing under " + cache_dir().string() + " (run scripts/fetch-models.sh ort)";
  if (std::system("node --version > /dev/null 2>&1") != 0) return "node is not installed";
  return "";
}

int run(const fs::path& dir, const std::vector<std::string>& demo) {
  const fs::path model = cache_dir() / "models" / "ocr" / "ch_PP-OCRv4_det_infer.onnx";
  if (const std::string why = missing(model); !why.empty()) {
    const char* r = std::getenv("GLTENSOR_REQUIRE_MODELS");
    if (r && std::string(r) == "1") {
      std::printf("FAILED: %s (GLTENSOR_REQUIRE_MODELS=1)\n", why.c_str());
      return 1;
    }
    std::printf("SKIPPED: %s\n", why.c_str());
    return 77;
  }
  fs::create_directories(dir);
  const fs::path scene = dir / "scene.png", prob = dir / "prob.npy", boxes = dir / "boxes.txt", ort = dir / "ort";
  for (const auto& f : {scene, prob, boxes}) fs::remove(f);
  fs::remove_all(ort);

  // 1. The demo, with the network and its outputs.
  std::string cmd;
  for (const auto& s : demo) cmd += quote(s) + " ";
  cmd += "--network " + quote("det=" + model.string()) + " --input " + quote(scene.string()) + " --prob " +
         quote(prob.string()) + " --boxes " + quote(boxes.string());
  std::printf("%s\n", cmd.c_str());
  std::fflush(stdout);
  if (const int rc = std::system(cmd.c_str()); rc != 0) {
    std::printf("FAILED: the demo exited with status %d\n", rc);
    return 1;
  }

  // 2. The detector's input from the scene on the CPU: the top-left region with sides
  // multiples of 32 (the demo's), PaddleOCR's normalization (no resize at this size).
  int w = 0, h = 0, n = 0;
  std::unique_ptr<unsigned char, void (*)(void*)> px(stbi_load(scene.string().c_str(), &w, &h, &n, 3), stbi_image_free);
  if (!px) {
    std::printf("FAILED: cannot read %s\n", scene.string().c_str());
    return 1;
  }
  const int h32 = h / 32 * 32, w32 = w / 32 * 32;
  cv::Mat rgb = cv::Mat(h, w, CV_8UC3, px.get())(cv::Rect(0, 0, w32, h32)).clone();
  int ih = 0, iw = 0;
  const auto x = ocr::det_input(rgb, std::max(h32, w32), ih, iw);
  if (ih != h32 || iw != w32) {
    std::printf("FAILED: det_input gave %dx%d for a %dx%d region\n", iw, ih, w32, h32);
    return 1;
  }
  gltensor::npy::write_floats((dir / "x.npy").string(), x, {1, 3, h32, w32});

  // 3. ONNX Runtime on it.
  const std::string ort_cmd = "GLTENSOR_MODEL_CACHE=" + quote(cache_dir().string()) + " node " +
                              quote(GRAPHICS_DEMO_SOURCE_DIR "/tools/ort-reference/ort_run.js") + " " +
                              quote(model.string()) + " --input " + quote("x=" + (dir / "x.npy").string()) +
                              " --output-dir " + quote(ort.string()) + " --threads 2 > " +
                              quote((dir / "ort.log").string()) + " 2>&1";
  if (std::system(ort_cmd.c_str()) != 0) {
    std::printf("FAILED: ONNX Runtime: %s (log: %s)\n", ort_cmd.c_str(), (dir / "ort.log").string().c_str());
    return 1;
  }
  std::vector<float> ref;
  gltensor::Shape ref_shape, got_shape;
  for (const auto& e : fs::directory_iterator(ort)) ref = gltensor::npy::read_floats(e.path().string(), ref_shape);
  const auto got = gltensor::npy::read_floats(prob.string(), got_shape);
  const gltensor::Shape want_shape = {1, 1, h32, w32};
  if (ref_shape != want_shape || got_shape != want_shape) {
    std::printf(
        "FAILED: map shapes: the demo's [%lld..] x %zu values, ONNX Runtime's %zu values, want [1, 1, %d, %d]\n",
        got_shape.empty() ? -1LL : static_cast<long long>(got_shape[0]), got.size(), ref.size(), h32, w32);
    return 1;
  }
  double max_diff = 0, max_prob = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double d = std::fabs(static_cast<double>(got[i]) - ref[i]);
    max_diff = std::max(max_diff, std::isnan(d) ? INFINITY : d);
    max_prob = std::max(max_prob, static_cast<double>(ref[i]));
  }
  std::printf("probability map %dx%d: max difference %.2e from ONNX Runtime (tolerance %.0e), max probability %.3f\n",
              w32, h32, max_diff, kAtol, max_prob);

  // 4. Boxes: the demo's, and DB post-processing of ONNX Runtime's map.
  std::ifstream bf(boxes);
  std::string word;
  std::size_t count = 0;
  bf >> word >> count;
  std::vector<ocr::DetBox> demo_boxes(count);
  for (auto& b : demo_boxes) {
    for (auto& p : b.box) bf >> p.x >> p.y;
    bf >> b.score;
  }
  if (word != "boxes" || !bf) {
    std::printf("FAILED: cannot read %s\n", boxes.string().c_str());
    return 1;
  }
  const auto ref_boxes = ocr::db_boxes(ref, h32, w32, h32, w32);
  std::printf("boxes: %zu from the demo, %zu from ONNX Runtime's map\n", demo_boxes.size(), ref_boxes.size());
  bool boxes_match = demo_boxes.size() == ref_boxes.size();
  for (std::size_t i = 0; i < demo_boxes.size(); ++i) {
    const auto& b = demo_boxes[i];
    std::printf("  box %zu: (%.0f, %.0f) (%.0f, %.0f) (%.0f, %.0f) (%.0f, %.0f) score %.3f\n", i, b.box[0].x,
                b.box[0].y, b.box[1].x, b.box[1].y, b.box[2].x, b.box[2].y, b.box[3].x, b.box[3].y, b.score);
    if (i < ref_boxes.size())
      for (int k = 0; k < 4; ++k)
        boxes_match = boxes_match && std::fabs(b.box[k].x - ref_boxes[i].box[k].x) <= kCornerPx &&
                      std::fabs(b.box[k].y - ref_boxes[i].box[k].y) <= kCornerPx;
  }
  if (!(max_diff <= kAtol)) {
    std::printf("FAILED: the demo's probability map differs from ONNX Runtime's\n");
    return 1;
  }
  if (demo_boxes.empty()) {
    std::printf("FAILED: no text found in the scene\n");
    return 1;
  }
  if (!boxes_match) {
    std::printf("FAILED: the demo's boxes differ from those of ONNX Runtime's map\n");
    return 1;
  }
  std::printf("network output matches ONNX Runtime\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || std::string(argv[2]) != "--") {
    std::fprintf(stderr, "usage: graphics_demo_net_check OUT_DIR -- COMMAND...\n");
    return 2;
  }
  try {
    return run(argv[1], std::vector<std::string>(argv + 3, argv + argc));
  } catch (const std::exception& e) {
    std::printf("FAILED: %s\n", e.what());
    return 1;
  }
}
