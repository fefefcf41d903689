// ocr [IMAGE.png|jpg] [--models DIR] [--out FILE.png] [--cls] [--f16] [--limit N] [--bench N]
//     [--page] [--rec-batch N] [--rec-align N] [--rec-call-cost N] [--replay]
// Reads the text in an image with PaddleOCR's PP-OCRv4 models on gltensor: prints each line
// with its box and confidence, writes an annotated PNG. Without IMAGE it renders its own sample
// (several lines and sizes, one rotated; DejaVu Sans; --page: a 960 x 960 page of many lines),
// reads it and prints the character accuracy against the rendered text.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "image.hpp"
#include "pipeline.hpp"
#include "sample.hpp"

namespace fs = std::filesystem;

namespace {

std::string default_models() {
  if (const char* c = std::getenv("GLTENSOR_MODEL_CACHE")) return (fs::path(c) / "models" / "ocr").string();
  return GLTENSOR_DEFAULT_MODEL_DIR;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"OCR with PaddleOCR's PP-OCRv4 models on gltensor"};
  std::string image, models = default_models(), out = "ocr_out.png", sample_out;
  bool cls = false, f16 = false, page = false, host_images = false, replay = false;
  int limit = 960, bench = 0;
  ocr::RecBatchOptions rec;
  app.add_option("image", image, "PNG/JPG image (default: render the sample)");
  app.add_option("--models", models,
                 "folder with ch_PP-OCRv4_det_infer.onnx, ch_PP-OCRv4_rec_infer.onnx, "
                 "ch_ppocr_mobile_v2.0_cls_infer.onnx and ppocr_keys_v1.txt")
      ->capture_default_str();
  app.add_option("--out", out, "annotated PNG")->capture_default_str();
  app.add_option("--save-sample", sample_out, "also write the rendered sample image here");
  app.add_flag("--cls", cls, "classify each line's angle (0/180 degrees) before recognition");
  app.add_flag("--f16", f16, "store weights as float16 on the GPU");
  app.add_flag("--replay", replay, "record each model's run once per input shape and replay it (OcrOptions::replay)");
  app.add_flag("--host-images", host_images,
               "make the models' inputs on the host with OpenCV (crops, resizes) instead of on the GPU");
  app.add_option("--limit", limit, "longer side of the detector's input")->capture_default_str();
  app.add_option("--bench", bench, "time N further runs of the whole OCR");
  app.add_flag("--page", page, "without IMAGE: render a 960 x 960 page of many lines instead of the sample");
  app.add_option("--rec-batch", rec.batch, "text lines per recognizer call (PaddleOCR's rec_batch_num; 0: all)")
      ->capture_default_str();
  app.add_option("--rec-align", rec.align, "recognizer batch widths rounded up to a multiple of this (1: PaddleOCR's)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--rec-call-cost", rec.call_cost,
                 "batches cut where cheapest, a recognizer call costing this many columns (0: PaddleOCR's fixed "
                 "batches of --rec-batch lines; see RecBatchOptions::call_cost)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    for (const char* f : {"ch_PP-OCRv4_det_infer.onnx", "ch_PP-OCRv4_rec_infer.onnx", "ppocr_keys_v1.txt"})
      if (!fs::exists(fs::path(models) / f))
        throw std::runtime_error((fs::path(models) / f).string() +
                                 " not found: run scripts/fetch-models.sh ocr, or pass --models DIR");
    ocr::Font font;
    std::vector<ocr::SampleLine> truth;
    cv::Mat rgb;
    if (image.empty()) {
      truth = page ? ocr::page_sample_lines(font, 960, 960) : ocr::default_sample_lines();
      rgb = page ? ocr::render_sample(font, truth, 960, 960) : ocr::render_sample(font, truth, 800, 480);
      if (!sample_out.empty()) ocr::write_png(sample_out, rgb);
      std::printf("image: rendered sample, %dx%d\n", rgb.cols, rgb.rows);
    } else {
      rgb = ocr::read_image(image);
      std::printf("image: %s, %dx%d\n", image.c_str(), rgb.cols, rgb.rows);
    }
    gltensor::Device dev = gltensor::Device::open();
    ocr::OcrOptions o;
    o.gpu_images = !host_images;
    o.det_model = (fs::path(models) / "ch_PP-OCRv4_det_infer.onnx").string();
    o.rec_model = (fs::path(models) / "ch_PP-OCRv4_rec_infer.onnx").string();
    o.cls_model = (fs::path(models) / "ch_ppocr_mobile_v2.0_cls_infer.onnx").string();
    o.keys = (fs::path(models) / "ppocr_keys_v1.txt").string();
    o.use_cls = cls;
    o.f16_weights = f16;
    o.replay = replay;
    o.det_limit = limit;
    o.rec = rec;
    ocr::OcrPipeline pipe(dev, o);
    ocr::OcrTimings t;
    auto lines = pipe.run(rgb, &t);
    for (const auto& l : lines) {
      std::printf("[%4.0f,%4.0f %4.0f,%4.0f %4.0f,%4.0f %4.0f,%4.0f] %.3f%s  %s\n", l.box[0].x, l.box[0].y, l.box[1].x,
                  l.box[1].y, l.box[2].x, l.box[2].y, l.box[3].x, l.box[3].y, l.confidence,
                  l.rotated180 ? " (turned 180)" : "", l.text.c_str());
    }
    std::string shapes;
    for (const auto& r : t.rec_shapes) shapes += " " + gltensor::to_string(r);
    std::printf(
        "%zu lines; first run %.0f ms (det %.0f, post %.0f, cls %.0f, rec %.0f; kernels compiled or read "
        "from the cache)\ndet input %s; %zu recognizer calls:%s\n",
        lines.size(), t.total_ms, t.det_pre_ms + t.det_ms, t.post_ms, t.cls_ms, t.rec_pre_ms + t.rec_ms + t.decode_ms,
        gltensor::to_string(t.det_shape).c_str(), t.rec_shapes.size(), shapes.c_str());
    if (bench > 0) {
      double sum = 0;
      for (int i = 0; i < bench; ++i) {
        pipe.run(rgb, &t);
        sum += t.total_ms;
      }
      std::printf("bench: %d runs, mean %.1f ms per image (last: det %.0f, post %.0f, cls %.0f, rec %.0f)\n", bench,
                  sum / bench, t.det_pre_ms + t.det_ms, t.post_ms, t.cls_ms, t.rec_pre_ms + t.rec_ms + t.decode_ms);
    }
    if (!truth.empty()) {
      std::vector<std::string> read;
      for (const auto& l : lines) read.push_back(l.text);
      const auto a = ocr::text_accuracy(truth, read);
      std::printf("character accuracy: %.1f%% (%zu edits over %zu characters, spaces ignored)\n", 100.0 * a.accuracy(),
                  a.edits, a.characters);
    }
    ocr::write_png(out, ocr::annotate(rgb, lines, font));
    std::printf("annotated image: %s\n", out.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ocr: %s\n", e.what());
    return 1;
  }
}
