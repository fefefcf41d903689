// The PaddleOCR models (PP-OCRv4 det/rec, v2.0 cls) on gltensor::Model against ONNX Runtime
// (npm onnxruntime-node run by tools/ort-reference/ort_run.js on the same .npy inputs), on
// images with rendered text; and the whole OCR pipeline of demos/ocr reading rendered text back.
// Skipped (with the reason) only when the model cache or node is absent; scripts/test.sh
// provides both. Inputs are kept small: the detector at 160 x 384, one recognizer line.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <opencv2/imgproc.hpp>
#include <set>

#include "image.hpp"
#include "npy_io.hpp"
#include "pipeline.hpp"
#include "sample.hpp"
#include "temp_dir.hpp"
#include "test_util.hpp"

// Tolerances against ONNX Runtime (float32 on the CPU; summation orders differ):
constexpr double kDetAtol = 2e-3;      // probability map (sigmoid outputs in [0, 1])
constexpr double kRecAtol = 2e-3;      // per-step character probabilities (softmax)
constexpr double kClsAtol = 1e-3;      // angle probabilities
constexpr double kMinAccuracy = 0.95;  // characters read back from rendered text (edit distance)
// The GPU path's model inputs (OcrOptions::gpu_images) against the host path's (OpenCV), in the
// models' normalized units: det's resize differs by cv::resize's rounding to bytes (half a level,
// plus its 11-bit weights: under one level, 1 / 255 / 0.224 = 0.0175); a line's input is
// crop_resize's emulation of OpenCV's 8-bit crop and resize, whose fixed-point weights and ties
// move a byte by a level at times (two levels allowed, 2 / 255 / 0.5; observed: one level at
// most, 0.0004-0.0005 on average); a crop shifted by one pixel is 0.14-0.19 off on average.
constexpr double kDetInputAtol = 0.018;
constexpr double kLineInputAtol = 2 / 255.0 / 0.5 + 1e-6;
constexpr double kLineInputMeanAtol = 0.002;

using namespace gltensor;
using namespace glt_test;
namespace fs = std::filesystem;

namespace {

fs::path cache_dir() {
  if (const char* c = std::getenv("GLTENSOR_MODEL_CACHE")) return c;
  return GLTENSOR_TEST_MODEL_CACHE;
}
fs::path models() { return cache_dir() / "models" / "ocr"; }

std::string missing_models() {
  for (const char* f : {"ch_PP-OCRv4_det_infer.onnx", "ch_PP-OCRv4_rec_infer.onnx",
                        "ch_ppocr_mobile_v2.0_cls_infer.onnx", "ppocr_keys_v1.txt"})
    if (!fs::exists(models() / f)) return (models() / f).string() + " is missing (run scripts/fetch-models.sh ocr)";
  return "";
}

std::string missing() {
  if (std::string m = missing_models(); !m.empty()) return m;
  if (!fs::exists(cache_dir() / "ort" / "node_modules" / "onnxruntime-node"))
    return "onnxruntime-node is missing under " + cache_dir().string() + " (run scripts/fetch-models.sh ort)";
  if (std::system("node --version > /dev/null 2>&1") != 0) return "node is not installed";
  return "";
}

// GLTENSOR_REQUIRE_MODELS=1 (CI, after scripts/test.sh fetched them): missing models or ONNX
// Runtime fail the test instead of skipping it.
bool models_required() {
  const char* r = std::getenv("GLTENSOR_REQUIRE_MODELS");
  return r && std::string(r) == "1";
}

#define SKIP_WITHOUT(why_expr)            \
  do {                                    \
    const std::string why = (why_expr);   \
    if (why.empty()) break;               \
    if (models_required()) FAIL() << why; \
    GTEST_SKIP() << why;                  \
  } while (0)
#define SKIP_WITHOUT_MODELS() SKIP_WITHOUT(missing())

fs::path work_dir(const std::string& name) {
  fs::path d = temp_dir() / "ocr" / name;
  fs::create_directories(d);
  return d;
}

// Runs ONNX Runtime on x (.npy) and returns its only output.
std::vector<float> ort_run(const fs::path& model, const fs::path& x, const fs::path& out_dir, Shape& shape) {
  fs::remove_all(out_dir);
  const std::string cmd = "GLTENSOR_MODEL_CACHE='" + cache_dir().string() +
                          "' node '" GLTENSOR_TEST_SOURCE_DIR "/tools/ort-reference/ort_run.js' '" + model.string() +
                          "' --input x='" + x.string() + "' --output-dir '" + out_dir.string() + "' --threads 2 > '" +
                          (out_dir.string() + ".log") + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << cmd;
  for (const auto& e : fs::directory_iterator(out_dir)) return npy::read_floats(e.path().string(), shape);
  ADD_FAILURE() << "ONNX Runtime wrote no output in " << out_dir;
  return {};
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = a.size() == b.size() ? 0.0 : INFINITY;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    m = std::max(m, std::isnan(a[i]) ? INFINITY : std::fabs(double(a[i]) - b[i]));
  return m;
}

ocr::OcrOptions options() {
  ocr::OcrOptions o;
  o.det_model = (models() / "ch_PP-OCRv4_det_infer.onnx").string();
  o.rec_model = (models() / "ch_PP-OCRv4_rec_infer.onnx").string();
  o.cls_model = (models() / "ch_ppocr_mobile_v2.0_cls_infer.onnx").string();
  o.keys = (models() / "ppocr_keys_v1.txt").string();
  return o;
}

cv::Mat two_lines(const ocr::Font& font) {
  return ocr::render_sample(
      font, {{"Hello gltensor 2026", 30, 0, {16, 50}}, {"ONNX on GLSL shaders", 26, 0, {20, 120}}}, 384, 160);
}

std::string no_spaces(const std::string& s) { return ocr::without_spaces(s); }

// The cheapest cut of the sample's 6 lines for a per-call cost of 500 columns (RecBatchOptions::call_cost):
// 2 recognizer calls of 3 lines, 768 and 1088 columns wide.
ocr::RecBatchOptions cut_batching() {
  ocr::RecBatchOptions cut;
  cut.call_cost = 500;
  return cut;
}

// The demo's sample page (800 x 480: several lines and sizes, one rotated by 8 degrees), one pipeline (the
// classifier loaded) and the page's run on the host path (OpenCV's inputs) with the classifier on and the lines in
// cut_batching()'s calls, made once and shared: BatchedRecognitionMatchesLineByLine checks that run's lines against
// each line alone, ReadsRenderedTextBackOnBothImagePaths against the GPU path's run. Whole pages are among
// llvmpipe's costliest steps here: until suite18 each test ran the page on the host path itself, the latter in
// PaddleOCR's one call of 6 lines at 1088 columns (about 4 CPU-s; the cut's two calls, which compile the same
// programs, about 3.5). The classifier turns no line of the sample (both tests check it), so the recognizer's
// inputs are those of a run without it.
struct SamplePage {
  ocr::Font font;
  std::vector<ocr::SampleLine> truth = ocr::default_sample_lines();
  cv::Mat img = ocr::render_sample(font, truth, 800, 480);
  ocr::OcrPipeline pipe;
  ocr::OcrTimings host_tm;
  std::vector<ocr::TextLine> host_lines;
  std::vector<ocr::ModelInput> host_cls, host_rec;

  explicit SamplePage(const ocr::OcrOptions& o) : pipe(device(), o) {
    pipe.set_gpu_images(false);
    pipe.set_use_cls(true);
    pipe.set_rec_batching(cut_batching());
    host_lines = pipe.run(img, &host_tm);
    host_cls = pipe.last_cls_inputs();
    host_rec = pipe.last_rec_inputs();
  }
};

}  // namespace

// The tests of the OCR models; the sample page's shared run (SamplePage) is made by the first test that asks for it
// and released after the last one.
class OcrModels : public ::testing::Test {
 protected:
  static SamplePage& sample_page() {
    if (!page_) {
      auto o = options();
      o.use_cls = true;
      page_ = std::make_unique<SamplePage>(o);
    }
    return *page_;
  }
  static void TearDownTestSuite() { page_.reset(); }

 private:
  static std::unique_ptr<SamplePage> page_;
};
std::unique_ptr<SamplePage> OcrModels::page_;

TEST_F(OcrModels, DetectorMatchesOnnxRuntime) {
  SKIP_WITHOUT_MODELS();
  ocr::Font font;
  cv::Mat img = two_lines(font);
  ocr::OcrPipeline pipe(device(), options());
  int h = 0, w = 0;
  auto x = pipe.det_input(img, h, w);
  ASSERT_EQ(h, 160);
  ASSERT_EQ(w, 384);
  const fs::path dir = work_dir("det");
  npy::write_floats((dir / "x.npy").string(), x, {1, 3, h, w});
  Shape ref_shape;
  auto ref = ort_run(models() / "ch_PP-OCRv4_det_infer.onnx", dir / "x.npy", dir / "ort", ref_shape);
  auto out = pipe.det().run({{"x", Tensor::from_host(device(), x, {1, 3, h, w})}});
  const Tensor& p = out.begin()->second;
  ASSERT_EQ(p.shape(), ref_shape);
  auto got = p.to_vector();
  EXPECT_LE(max_abs_diff(got, ref), kDetAtol);
  // The text is found: both lines come out of DB post-processing on gltensor's map.
  auto boxes = pipe.boxes_from_map(got, h, w, img.rows, img.cols);
  EXPECT_EQ(boxes.size(), 2u);
  EXPECT_LT(pipe.det().peak_bytes(), pipe.det().total_intermediate_bytes() / 4);
}

TEST_F(OcrModels, RecognizerAndClassifierMatchOnnxRuntime) {
  SKIP_WITHOUT_MODELS();
  ocr::Font font;
  cv::Mat img(48, 320, CV_8UC3, cv::Scalar(255, 255, 255));
  font.draw(img, "gltensor 12345", 8, 36, 34, cv::Scalar(0, 0, 0));
  auto o = options();
  o.use_cls = true;
  ocr::OcrPipeline pipe(device(), o);
  auto x = pipe.rec_input(img, 320);
  const fs::path dir = work_dir("rec");
  npy::write_floats((dir / "x.npy").string(), x, {1, 3, 48, 320});
  Shape ref_shape;
  auto ref = ort_run(models() / "ch_PP-OCRv4_rec_infer.onnx", dir / "x.npy", dir / "ort", ref_shape);
  auto out = pipe.rec().run({{"x", Tensor::from_host(device(), x, {1, 3, 48, 320})}});
  const Tensor& p = out.begin()->second;
  ASSERT_EQ(p.shape(), ref_shape);
  auto got = p.to_vector();
  EXPECT_LE(max_abs_diff(got, ref), kRecAtol);
  auto text = pipe.ctc_decode(got, p.size(0), p.size(1), p.size(2));
  auto ref_text = pipe.ctc_decode(ref, ref_shape[0], ref_shape[1], ref_shape[2]);
  EXPECT_EQ(text[0].first, ref_text[0].first);
  EXPECT_EQ(no_spaces(text[0].first), "gltensor12345");
  // Angle classifier: the line and the line turned by 180 degrees, as one batch of 2.
  cv::Mat turned;
  cv::rotate(img, turned, cv::ROTATE_180);
  auto c0 = pipe.rec_input(img, 192), c1 = pipe.rec_input(turned, 192);
  c0.insert(c0.end(), c1.begin(), c1.end());
  npy::write_floats((dir / "c.npy").string(), c0, {2, 3, 48, 192});
  auto cref = ort_run(models() / "ch_ppocr_mobile_v2.0_cls_infer.onnx", dir / "c.npy", dir / "ort_cls", ref_shape);
  Model cls = Model::load(device(), (models() / "ch_ppocr_mobile_v2.0_cls_infer.onnx").string());
  auto cgot = cls.run({{"x", Tensor::from_host(device(), c0, {2, 3, 48, 192})}}).begin()->second.to_vector();
  EXPECT_LE(max_abs_diff(cgot, cref), kClsAtol);
  ASSERT_EQ(cgot.size(), 4u);
  EXPECT_GT(cgot[0], cgot[1]) << "upright line classified as turned";
  EXPECT_GT(cgot[3], cgot[2]) << "turned line classified as upright";
}

// PaddleOCR's batching (lines sorted by aspect ratio, each batch padded to its widest line, here
// 2 lines per call so the sample's 6 lines make 3 calls of different widths), and the cheapest
// cut for a per-call cost (RecBatchOptions::call_cost = 500 columns: here 2 calls of 3 lines,
// 768 and 1088 columns wide, where batches of 2 run 3 calls; the shared host run of SamplePage),
// read the same characters as recognizing every line alone at its own width (rec_batch_num 1),
// and put them back on the right line. The batches of 2 recognize the shared run's boxes
// (OcrPipeline::recognize_lines: the page's crops, not its detector again).
TEST_F(OcrModels, BatchedRecognitionMatchesLineByLine) {
  SKIP_WITHOUT(missing_models());
  SamplePage& page = sample_page();
  ocr::OcrPipeline& pipe = page.pipe;
  const cv::Mat& img = page.img;
  // The lines alone below are cut on the host: so are the batches (ReadsRenderedTextBackOnBothImagePaths
  // compares the two paths).
  pipe.set_gpu_images(false);
  pipe.set_use_cls(false);
  ocr::RecBatchOptions paddle;
  paddle.batch = 2;
  std::vector<std::pair<std::string, float>> alone;
  for (const ocr::RecBatchOptions& rb : {paddle, cut_batching()}) {
    SCOPED_TRACE(rb.call_cost ? "call cost" : "batches of 2");
    ocr::OcrTimings tm;
    std::vector<ocr::TextLine> lines;
    if (rb.call_cost == 0) {
      // The shared run's boxes, recognized again in batches of 2: its detector ran on the same host
      // input (suite39b: a second detector run of the page, about 1.5 CPU-s on llvmpipe, checked nothing
      // new).
      pipe.set_rec_batching(rb);
      lines = pipe.recognize_lines(img, page.host_lines, &tm);
    } else {
      // The shared run (the classifier on: it turns no line, so the recognizer's inputs are a run's without it).
      tm = page.host_tm;
      lines = page.host_lines;
      for (const auto& l : lines) EXPECT_FALSE(l.rotated180) << l.text;
    }
    ASSERT_EQ(lines.size(), 6u);
    std::vector<cv::Size> sizes;
    for (const auto& l : lines) sizes.push_back(ocr::OcrPipeline::crop(img, l.box).size());
    const auto batches = ocr::rec_batches(sizes, rb);
    ASSERT_EQ(tm.rec_shapes.size(), batches.size());
    for (std::size_t k = 0; k < batches.size(); ++k)
      EXPECT_EQ(tm.rec_shapes[k], (Shape{static_cast<std::int64_t>(batches[k].lines.size()), 3, 48, batches[k].width}));
    if (rb.call_cost == 0) {
      ASSERT_EQ(tm.rec_shapes.size(), 3u);
      EXPECT_LT(tm.rec_shapes[0][3], tm.rec_shapes[2][3]) << "batches of one width";
      for (const auto& s : tm.rec_shapes) EXPECT_EQ(s[0], 2);
    } else {
      EXPECT_EQ(tm.rec_shapes, (std::vector<Shape>{{3, 3, 48, 768}, {3, 3, 48, 1088}})) << "the sample's cut";
    }
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const cv::Mat c = ocr::OcrPipeline::crop(img, lines[i].box);
      if (alone.size() <= i) {
        // Its own width as the pipeline would give a call of this line alone (rec_batch_num 1,
        // PaddleOCR's width rounded up to the default 32 columns).
        ocr::RecBatchOptions one;
        one.batch = 1;
        const int width = ocr::rec_batches({c.size()}, one)[0].width;
        const auto x = pipe.rec_input(c, width);
        const Tensor p = pipe.rec().run({{"x", Tensor::from_host(device(), x, {1, 3, 48, width})}}).begin()->second;
        alone.push_back(pipe.ctc_decode(p.to_vector(), p.size(0), p.size(1), p.size(2))[0]);
      }
      // Spaces aside: the recognizer's spaces come and go with the padding (as the sample's
      // accuracy, which ignores them).
      EXPECT_EQ(no_spaces(lines[i].text), no_spaces(alone[i].first))
          << "line " << i << " (" << c.cols << " x " << c.rows << ")";
      // The mean probability moves with the padding a line gets (the model's attention sees the
      // zero columns): 0.026 for the sample's narrowest line padded from 512 to 768 columns.
      EXPECT_NEAR(lines[i].confidence, alone[i].second, rb.call_cost ? 0.05 : 0.02) << "line " << i;
    }
  }
}

// OcrOptions::replay: runs recorded once per shape and replayed read what plain runs read. Every
// line in a call of its own at one width (320 columns): within one page the first call runs plain,
// the second is captured and the third replays that recording, overwriting the outputs the
// one before it left (their argmax must have been queued before: reading them after the last
// call, the sabotage check, gives every line the last one's text). Two pages of the same size,
// A and B (three short lines each, not the same three), run A, B, A: the detector's run
// is plain on the first, captured on B and replayed on A, so that a replay reading the captured
// page (not the caller's) gives B's boxes (with one page three times it gave the same ones).
// The pages at the detector's size of DetectorMatchesOnnxRuntime (384 x 160) and every line at
// the recognizer's width of RecognizerAndClassifierMatchOnnxRuntime (320): the replays' paths do
// not depend on the sizes, and those tests' programs serve these runs (other sizes compile
// conv_direct programs of their own). suite11: pages of the sample's lines (800 x 480, calls of
// 1152 columns) took llvmpipe about 3x the CPU of these runs.
TEST_F(OcrModels, ReplayReadsAsThePlainRuns) {
  SKIP_WITHOUT(missing_models());
  ocr::Font font;
  const cv::Mat pages[2] = {
      ocr::render_sample(font,
                         {{"Replay A", 30, 0, {16, 45}}, {"GLSL 2026", 26, 0, {16, 95}}, {"ok 0123", 24, 0, {16, 140}}},
                         384, 160),
      ocr::render_sample(
          font, {{"Page B", 30, 0, {16, 45}}, {"ONNX 42", 26, 0, {16, 95}}, {"ok 0123", 24, 0, {16, 140}}}, 384, 160)};
  auto o = options();
  o.rec.batch = 1;
  o.rec.align = 320;
  ocr::OcrPipeline plain(device(), o);
  o.replay = true;
  ocr::OcrPipeline replaying(device(), o);
  std::vector<ocr::TextLine> want[2];
  for (int p = 0; p < 2; ++p) {
    ocr::OcrTimings tm;
    want[p] = plain.run(pages[p], &tm);
    ASSERT_EQ(want[p].size(), 3u);
    ASSERT_EQ(std::set<Shape>(tm.rec_shapes.begin(), tm.rec_shapes.end()), (std::set<Shape>{{1, 3, 48, 320}}));
  }
  ASSERT_NE(want[0][0].text, want[1][0].text);  // the pages differ
  for (int run = 0; run < 3; ++run) {
    const int p = run % 2;
    SCOPED_TRACE("run " + std::to_string(run) + ", page " + std::to_string(p));
    const auto got = replaying.run(pages[p]);
    ASSERT_EQ(got.size(), want[p].size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].text, want[p][i].text) << "line " << i;
      EXPECT_NEAR(got[i].confidence, want[p][i].confidence, 1e-6) << "line " << i;
      for (int k = 0; k < 4; ++k) EXPECT_EQ(got[i].box[k], want[p][i].box[k]) << "line " << i;
    }
  }
}

// The demo's sample (several lines and sizes, one rotated by 8 degrees) read back with the
// classifier on, as the demo runs it (the page uploaded once as bytes and every model input cut
// from it on the GPU, gpu_images); and that path against the host's (OpenCV, SamplePage's shared
// run): its inputs within the tolerances above, the same boxes and text. Both runs in
// cut_batching()'s recognizer calls, [3, 3, 48, 768] and [3, 3, 48, 1088] (the demo's default,
// PaddleOCR's one call of 6 lines at 1088, compiles the same programs at about 1.2x the CPU).
TEST_F(OcrModels, ReadsRenderedTextBackOnBothImagePaths) {
  SKIP_WITHOUT(missing_models());
  SamplePage& page = sample_page();
  ocr::OcrPipeline& pipe = page.pipe;
  const auto& truth = page.truth;
  const cv::Mat& sample = page.img;
  // The detector's input where the page is resized (1000 x 700 -> 960 x 672) and where it is not.
  for (cv::Size size : {cv::Size(1000, 700), cv::Size(800, 480), cv::Size(333, 97)}) {
    cv::Mat img;
    cv::resize(sample, img, size);
    int h = 0, w = 0, gh = 0, gw = 0;
    const auto host = pipe.det_input(img, h, w);
    const Tensor gpu = pipe.det_input(pipe.upload_image(img), gh, gw);
    ASSERT_EQ(gpu.shape(), (Shape{1, 3, h, w}));
    EXPECT_EQ(gh, h);
    EXPECT_EQ(gw, w);
    EXPECT_LE(max_abs_diff(gpu.to_vector(), host), kDetInputAtol) << size;
  }
  // Whole runs: the same boxes and text; the classifier's and recognizer's inputs close.
  const auto& host_lines = page.host_lines;
  const auto& host_cls = page.host_cls;
  const auto& host_rec = page.host_rec;
  pipe.set_use_cls(true);
  pipe.set_rec_batching(cut_batching());
  pipe.set_gpu_images(true);
  ocr::OcrTimings tm;
  const auto gpu_lines = pipe.run(sample, &tm);
  EXPECT_EQ(tm.rec_shapes, page.host_tm.rec_shapes);
  EXPECT_EQ(tm.cls_shape, page.host_tm.cls_shape);
  // The text read back (the GPU path, the demo's default).
  EXPECT_EQ(gpu_lines.size(), truth.size());
  std::vector<std::string> read;
  for (const auto& l : gpu_lines) read.push_back(l.text);
  for (const auto& t : truth) {
    const auto one = ocr::text_accuracy({t}, read);
    EXPECT_LE(one.edits, one.characters / 10) << "line '" << t.text << "'";
  }
  const auto a = ocr::text_accuracy(truth, read);
  std::printf("character accuracy %.1f%% (%zu edits over %zu characters, spaces ignored)\n", 100 * a.accuracy(),
              a.edits, a.characters);
  EXPECT_GE(a.accuracy(), kMinAccuracy);
  for (const auto& l : gpu_lines) EXPECT_FALSE(l.rotated180) << l.text;
  // The host path's boxes and text.
  ASSERT_EQ(gpu_lines.size(), host_lines.size());
  for (std::size_t i = 0; i < gpu_lines.size(); ++i) {
    for (int k = 0; k < 4; ++k) EXPECT_EQ(gpu_lines[i].box[k], host_lines[i].box[k]) << "line " << i;
    EXPECT_EQ(no_spaces(gpu_lines[i].text), no_spaces(host_lines[i].text)) << "line " << i;
    EXPECT_EQ(gpu_lines[i].rotated180, host_lines[i].rotated180) << "line " << i;
  }
  auto compare = [](const std::vector<ocr::ModelInput>& gpu, const std::vector<ocr::ModelInput>& host) {
    ASSERT_EQ(gpu.size(), host.size());
    for (std::size_t k = 0; k < gpu.size(); ++k) {
      ASSERT_EQ(gpu[k].shape, host[k].shape) << "call " << k;
      const auto g = gpu[k].host_values(), h = host[k].host_values();
      double sum = 0;
      for (std::size_t i = 0; i < g.size(); ++i) sum += std::fabs(double(g[i]) - h[i]);
      std::printf("call %zu %s: mean |gpu - host| %.4f, max %.4f\n", k, to_string(gpu[k].shape).c_str(), sum / g.size(),
                  max_abs_diff(g, h));
      EXPECT_LE(sum / g.size(), kLineInputMeanAtol) << "call " << k;
      EXPECT_LE(max_abs_diff(g, h), kLineInputAtol) << "call " << k;
    }
  };
  compare(pipe.last_cls_inputs(), host_cls);
  compare(pipe.last_rec_inputs(), host_rec);
}

TEST_F(OcrModels, EditDistance) {
  EXPECT_EQ(ocr::edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(ocr::edit_distance("", "abc"), 3u);
  EXPECT_EQ(ocr::edit_distance("中文", "中"), 1u);  // by code point
  // Each rendered line against its closest read line, spaces ignored.
  const auto a = ocr::text_accuracy({{"ab c", 20, 0, {}}, {"xyz", 20, 0, {}}}, {"xyq", "abc"});
  EXPECT_EQ(a.edits, 1u);
  EXPECT_EQ(a.characters, 6u);
  EXPECT_DOUBLE_EQ(a.accuracy(), 5.0 / 6.0);
}
