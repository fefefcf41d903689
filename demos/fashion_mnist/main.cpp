// Trains an MLP or a CNN on Fashion-MNIST with gltensor: data, forward, backward and optimizer
// all run on the GPU path; the host reads back only the loss every few steps and the metrics.
// Writes training curves and a confusion matrix as PNG (PLplot), metrics as JSON, and a
// safetensors checkpoint into a new folder per run; --eval CHECKPOINT runs inference only.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

#include "cli_bound.hpp"
#include "gltensor/gltensor.hpp"
#include "idx.hpp"
#include "models.hpp"
#include "plot.hpp"
#include "progress.hpp"
#include "run_dir.hpp"

using namespace gltensor;
using demo::Clock;
using demo::format;
using demo::seconds_since;

namespace {

// The class names of the dataset's README, in label order.
const std::vector<std::string> kClasses = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                           "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
constexpr double kMean = 0.2860, kStd = 0.3530;  // Fashion-MNIST training-set pixel statistics
constexpr std::array<std::int64_t, 3> kImage = {1, 28, 28};
constexpr std::int64_t kMaxEvalPass = 1000;  // images per evaluation pass where the device allows it
const std::string kDefaultOut = "fashion_mnist_out";

struct Split {
  Tensor images;  // u8 [n, 784] on the GPU
  Tensor labels;  // i32 [n]
  std::int64_t n = 0;
};

Split load_split(const Device& dev, const std::string& dir, const std::string& prefix, std::int64_t limit) {
  auto im = demo::read_idx_images(dir + "/" + prefix + "-images-idx3-ubyte.gz");
  auto lb = demo::read_idx_labels(dir + "/" + prefix + "-labels-idx1-ubyte.gz");
  if (static_cast<std::int64_t>(lb.size()) != im.n || im.rows != 28 || im.cols != 28)
    throw std::runtime_error(dir + "/" + prefix + ": " + std::to_string(im.n) + " images of " +
                             std::to_string(im.rows) + "x" + std::to_string(im.cols) + " but " +
                             std::to_string(lb.size()) + " labels");
  Split s;
  s.n = limit > 0 ? std::min<std::int64_t>(limit, im.n) : im.n;
  s.images = Tensor::from_host(dev, std::span<const std::uint8_t>(im.pixels.data(), s.n * 784), {s.n, 784}, DType::u8);
  std::vector<std::int32_t> l(lb.begin(), lb.begin() + s.n);
  s.labels = Tensor::from_host(dev, std::span<const std::int32_t>(l), {s.n});
  return s;
}

// Gathers a batch on the GPU and normalizes it: [B, 1, 28, 28] f32, labels [B].
std::pair<Tensor, Tensor> batch(const Split& s, const Tensor& idx) {
  Tensor x = index_select(s.images, 0, idx).to(DType::f32);
  x = mul(sub(x, 255.0 * kMean), 1.0 / (255.0 * kStd));
  return {x.view({idx.numel(), 1, 28, 28}), index_select(s.labels, 0, idx)};
}

struct EvalResult {
  double accuracy = 0, seconds = 0;
  std::vector<std::vector<long>> confusion;
};

// The whole test set in passes of `per_pass` images (chosen from the device's limits); the
// confusion counts accumulate on the GPU.
EvalResult evaluate(nn::Module& model, const Split& test, std::int64_t per_pass, demo::Progress& bar, bool f16) {
  NoGradGuard ng;
  Autocast ac(f16);
  model.eval();
  const auto t0 = Clock::now();
  auto last_report = t0;
  const Device dev = test.images.device();
  Tensor counts = zeros(dev, {100}, DType::i32);
  for (std::int64_t s = 0; s < test.n; s += per_pass) {
    const std::int64_t b = std::min(per_pass, test.n - s);
    Tensor idx = arange(dev, static_cast<double>(s), static_cast<double>(s + b), 1, DType::i32);
    auto [x, y] = batch(test, idx);
    Tensor pred = argmax(model(x), 1);
    counts = add(counts, sum(one_hot(add(mul(y, 10), pred), 100), {0}));
    // Progress: on a terminal after every pass, in a log every 15 s (a cnn pass takes a while on
    // llvmpipe). The read waits for this pass (a small gap in the queue, once per pass).
    (void)counts.to_int_vector();
    if (bar.tty() || seconds_since(last_report) > 15) {
      last_report = Clock::now();
      bar.update("evaluating", s + b, test.n,
                 format("%lld/%lld images  %.0f img/s", static_cast<long long>(s + b), static_cast<long long>(test.n),
                        (s + b) / seconds_since(t0)));
    }
  }
  auto c = counts.to_int_vector();
  EvalResult r;
  r.confusion.assign(10, std::vector<long>(10));
  long correct = 0;
  for (int i = 0; i < 10; ++i)
    for (int j = 0; j < 10; ++j) {
      r.confusion[i][j] = c[i * 10 + j];
      if (i == j) correct += c[i * 10 + j];
    }
  r.accuracy = static_cast<double>(correct) / static_cast<double>(test.n);
  r.seconds = seconds_since(t0);
  model.train();
  return r;
}

std::string epochs_text(int n) { return std::to_string(n) + (n == 1 ? " epoch" : " epochs"); }

std::string confusion_title(const EvalResult& r, std::int64_t n, const std::string& what) {
  return format("Fashion-MNIST test set: %.2f%% of %lld images correct\n%s", 100 * r.accuracy,
                static_cast<long long>(n), what.c_str());
}

struct Options {
  std::string data = "/usr/share/datasets/fashion-mnist", model = "mlp", out, eval_ckpt;
  std::string optimizer = "adam", schedule = "cosine", precision = "f32";
  int epochs = 10, log_every = 20;
  std::int64_t batch_size = 128, limit = 0, test_limit = 0, seed = 1;
  double lr = 1e-3;
  bool overwrite = false;
  bool replay = true;
  bool plots = true;
};

int run(const Options& o, demo::Progress& bar) {
  if (o.plots) demo::check_png_driver();  // before any training: a run must not end without its plots
  Device dev = Device::open();
  std::printf("device: %s (%s)\n", dev.caps().renderer.c_str(), dev.caps().version.c_str());
  Generator gen(static_cast<std::uint64_t>(o.seed));
  // Training steps replayed from a Recording (f32 only: mixed precision's loss scaling reads back).
  const bool replay = o.replay && o.precision == "f32" && o.eval_ckpt.empty();
  auto model = demo::make_model(o.model, dev, gen, replay);
  const std::int64_t per_pass = demo::images_per_pass(*model, kImage, dev, kMaxEvalPass);
  const Split test = load_split(dev, o.data, "t10k", o.test_limit);

  if (!o.eval_ckpt.empty()) {
    const std::string out =
        demo::claim_output_dir(o.out, kDefaultOut, o.model + "-eval", {"confusion_matrix.png"}, o.overwrite);
    nn::load_state_dict(*model, nn::load_safetensors(o.eval_ckpt, dev));
    EvalResult r = evaluate(*model, test, per_pass, bar, o.precision == "f16");
    bar.end_line();
    std::printf("test accuracy %.2f%% on %lld images (%.0f img/s, %lld per pass)\n", 100 * r.accuracy,
                static_cast<long long>(test.n), test.n / r.seconds, static_cast<long long>(per_pass));
    if (o.plots) {
      demo::plot_confusion_matrix(out + "/confusion_matrix.png", r.confusion, kClasses,
                                  confusion_title(r, test.n, "checkpoint " + o.eval_ckpt));
      std::printf("wrote %s/confusion_matrix.png\n", out.c_str());
    }
    return 0;
  }

  const std::int64_t max_batch = demo::images_per_pass(*model, kImage, dev, std::numeric_limits<std::int64_t>::max());
  if (o.batch_size > max_batch)
    throw std::runtime_error(
        format("--batch-size %lld: the %s needs %lld bytes per image in one buffer; the device's "
               "max SSBO block size (%lld bytes) holds at most %lld images per step",
               static_cast<long long>(o.batch_size), o.model.c_str(),
               static_cast<long long>(demo::forward_bytes_per_image(*model, kImage)),
               static_cast<long long>(dev.caps().max_ssbo_block_size), static_cast<long long>(max_batch)));
  const Split train = load_split(dev, o.data, "train", o.limit);
  const std::int64_t steps_per_epoch = train.n / o.batch_size;  // drop the last partial batch
  if (steps_per_epoch == 0)
    throw std::runtime_error("--batch-size " + std::to_string(o.batch_size) + " exceeds the " +
                             std::to_string(train.n) + " training images");
  const std::string ckpt_name = "fashion_mnist_" + o.model + ".safetensors";
  const std::string out =
      demo::claim_output_dir(o.out, kDefaultOut, o.model,
                             {ckpt_name, "metrics.json", "training_curves.png", "confusion_matrix.png"}, o.overwrite);
  std::printf(
      "model %s, %zu parameter tensors, train %lld, test %lld (%lld per evaluation pass), batch %lld, %s lr %g "
      "(%s)\nwriting to %s/\n",
      o.model.c_str(), model->parameters().size(), static_cast<long long>(train.n), static_cast<long long>(test.n),
      static_cast<long long>(per_pass), static_cast<long long>(o.batch_size), o.optimizer.c_str(), o.lr,
      o.schedule.c_str(), out.c_str());
  std::fflush(stdout);
  std::unique_ptr<nn::Optimizer> opt;
  if (o.optimizer == "adam")
    opt = std::make_unique<nn::Adam>(model->parameters(), o.lr);
  else
    opt = std::make_unique<nn::SGD>(model->parameters(), o.lr, nn::SGDOptions{0.9, 0, 0, false});

  // At least ~10 loss read-backs per epoch for the curves of short runs.
  const std::int64_t log_every = std::min<std::int64_t>(o.log_every, std::max<std::int64_t>(1, steps_per_epoch / 10));
  std::mt19937_64 shuffle_rng(static_cast<std::uint64_t>(o.seed));
  std::vector<std::int32_t> order(static_cast<std::size_t>(train.n));
  std::iota(order.begin(), order.end(), 0);
  demo::History hist;
  nlohmann::json metrics = {{"model", o.model},
                            {"device", dev.caps().renderer},
                            {"train_images", train.n},
                            {"test_images", test.n},
                            {"batch_size", o.batch_size},
                            {"eval_images_per_pass", per_pass},
                            {"optimizer", o.optimizer},
                            {"precision", o.precision},
                            {"lr", o.lr},
                            {"schedule", o.schedule},
                            {"seed", o.seed},
                            {"replay", replay},
                            {"epochs", nlohmann::json::array()}};
  EvalResult last;
  double train_total = 0, eval_total = 0;
  // Mixed precision (--precision f16): f32 master weights, dynamic loss scaling (nn::GradScaler).
  const bool f16 = o.precision == "f16";
  nn::GradScalerOptions so;
  so.enabled = f16;
  nn::GradScaler scaler(so);
  // --replay: the first step runs as usual (kernels compiled and tuned), the second is captured
  // (Recording: the batch's gather from `step_idx`, forward, loss and backward; the gradients stay
  // in the recording's buffers), every later one copies its indices into step_idx and replays it;
  // the optimizer's step runs as usual after each (its bias corrections and lr change per step).
  Tensor step_idx, loss;
  Recording rec;
  auto forward_backward = [&](const Tensor& idx) {
    auto [x, y] = batch(train, idx);
    opt->zero_grad();
    {
      Autocast ac(f16);  // --precision f16: f16 forward (conv, linear), f32 loss
      loss = cross_entropy((*model)(x), y);
    }
    backward(scaler.scale(loss));
  };
  const auto start = Clock::now();
  for (int epoch = 1; epoch <= o.epochs; ++epoch) {
    if (o.schedule == "cosine")
      opt->lr = nn::cosine_lr(o.lr, epoch - 1, o.epochs);
    else if (o.schedule == "step")
      opt->lr = nn::step_lr(o.lr, epoch - 1, 4);
    std::shuffle(order.begin(), order.end(), shuffle_rng);
    const auto e0 = Clock::now();
    auto last_report = e0;  // progress lines in a log: every 15 s
    double loss_sum = 0;
    int loss_n = 0;
    for (std::int64_t s = 0; s < steps_per_epoch; ++s) {
      Tensor idx = Tensor::from_host(dev, std::span<const std::int32_t>(order.data() + s * o.batch_size, o.batch_size),
                                     {o.batch_size});
      if (!replay || !step_idx.defined()) {
        step_idx = idx;
        forward_backward(idx);
      } else {
        step_idx.copy_(idx);
        if (rec.empty())
          rec = Recording::capture(dev, [&] { forward_backward(step_idx); });
        else
          rec.replay();
      }
      scaler.step(*opt);
      scaler.update();
      if ((s + 1) % log_every == 0 || s + 1 == steps_per_epoch) {
        const float loss_now = loss.item();
        loss_sum += loss_now;
        ++loss_n;
        hist.step_epoch.push_back(epoch - 1 + static_cast<double>(s + 1) / steps_per_epoch);
        hist.step_loss.push_back(loss_now);
        const double ips = (s + 1) * o.batch_size / seconds_since(e0);
        const double eta = (steps_per_epoch - s - 1) * o.batch_size / ips;
        if (bar.tty() || seconds_since(last_report) > 15 || s + 1 == steps_per_epoch) {
          last_report = Clock::now();
          bar.update(format("epoch %d/%d", epoch, o.epochs), s + 1, steps_per_epoch,
                     format("loss %.4f  %6.0f img/s  ETA %s", loss_now, ips, demo::hms(eta).c_str()));
        }
      }
    }
    bar.end_line();
    const double epoch_secs = seconds_since(e0);
    last = evaluate(*model, test, per_pass, bar, o.precision == "f16");
    bar.end_line();
    train_total += epoch_secs;
    eval_total += last.seconds;
    const double mean_loss = loss_n ? loss_sum / loss_n : 0.0;
    hist.epoch_loss.push_back(mean_loss);
    hist.test_accuracy.push_back(100 * last.accuracy);
    std::printf(
        "epoch %d/%d  train loss %.4f  test accuracy %.2f%%  train %.1f s (%.0f img/s)  eval %.1f s (%.0f img/s)  lr "
        "%.2e\n",
        epoch, o.epochs, mean_loss, 100 * last.accuracy, epoch_secs, steps_per_epoch * o.batch_size / epoch_secs,
        last.seconds, test.n / last.seconds, opt->lr);
    std::fflush(stdout);
    metrics["epochs"].push_back({{"epoch", epoch},
                                 {"train_loss", mean_loss},
                                 {"test_accuracy", last.accuracy},
                                 {"seconds", epoch_secs},
                                 {"eval_seconds", last.seconds}});
  }
  const double total = seconds_since(start);
  metrics["total_seconds"] = total;
  if (f16) {
    metrics["loss_scale"] = scaler.get_scale();
    metrics["skipped_steps"] = scaler.skipped_steps();
    std::printf("mixed precision: %lld steps skipped for inf/NaN gradients, final loss scale %g\n",
                static_cast<long long>(scaler.skipped_steps()), scaler.get_scale());
  }
  metrics["final_test_accuracy"] = last.accuracy;
  metrics["confusion_matrix"] = last.confusion;
  metrics["classes"] = kClasses;
  const std::string ckpt = out + "/" + ckpt_name;
  nn::save_safetensors(ckpt, nn::state_dict(*model));
  if (o.plots) {
    demo::plot_training_curves(
        out + "/training_curves.png", hist,
        format("Fashion-MNIST: %s, %s on %lld training images\nbatch %lld, %s, lr %g (%s schedule), %s",
               o.model.c_str(), epochs_text(o.epochs).c_str(), static_cast<long long>(train.n),
               static_cast<long long>(o.batch_size), o.optimizer.c_str(), o.lr, o.schedule.c_str(),
               dev.caps().renderer.c_str()));
    demo::plot_confusion_matrix(
        out + "/confusion_matrix.png", last.confusion, kClasses,
        confusion_title(last, test.n,
                        format("%s after %s on %lld training images", o.model.c_str(), epochs_text(o.epochs).c_str(),
                               static_cast<long long>(train.n))));
  }
  if (!(std::ofstream(out + "/metrics.json") << metrics.dump(2) << "\n"))
    throw std::runtime_error("cannot write " + out + "/metrics.json");
  std::printf(
      "final test accuracy %.2f%% after %s in %s (training %s, evaluation %s)\nwrote %s, "
      "%s/training_curves.png, %s/confusion_matrix.png, %s/metrics.json\n",
      100 * last.accuracy, epochs_text(o.epochs).c_str(), demo::hms(total).c_str(), demo::hms(train_total).c_str(),
      demo::hms(eval_total).c_str(), ckpt.c_str(), out.c_str(), out.c_str(), out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train an MLP or a CNN on Fashion-MNIST with gltensor (GLSL compute shaders over EGL/GLES)"};
  Options o;
  app.add_option("--data", o.data, "directory with the gzipped IDX files")->capture_default_str();
  app.add_option("--model", o.model, "mlp or cnn")->check(CLI::IsMember({"mlp", "cnn"}))->capture_default_str();
  app.add_option("--epochs", o.epochs, "training epochs")->check(demo::bound(1, true))->capture_default_str();
  app.add_option("--batch-size", o.batch_size, "images per step")->check(demo::bound(1, true))->capture_default_str();
  app.add_option("--lr", o.lr, "learning rate")->check(demo::bound(0, false))->capture_default_str();
  app.add_option("--optimizer", o.optimizer, "adam or sgd (momentum 0.9)")
      ->check(CLI::IsMember({"adam", "sgd"}))
      ->capture_default_str();
  app.add_option("--schedule", o.schedule, "cosine, step (x0.1 every 4 epochs) or none")
      ->check(CLI::IsMember({"cosine", "step", "none"}))
      ->capture_default_str();
  app.add_option("--precision", o.precision,
                 "f32, or f16: mixed precision (f16 forward under Autocast, f32 master weights, loss scaling)")
      ->check(CLI::IsMember({"f32", "f16"}))
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed for initialization, shuffling and dropout")->capture_default_str();
  app.add_option("--limit", o.limit, "use only the first N training images (0 = all)")
      ->check(demo::bound(0, true))
      ->capture_default_str();
  app.add_option("--test-limit", o.test_limit, "evaluate only the first N test images (0 = all)")
      ->check(demo::bound(0, true))
      ->capture_default_str();
  app.add_option(
      "--out", o.out,
      "folder for plots, metrics and the checkpoint (default: a new folder " + kDefaultOut + "/<model>-<N> per run)");
  app.add_flag("--overwrite", o.overwrite, "let --out replace the files of an earlier run");
  app.add_flag("!--no-plots", o.plots, "write no PNG plots (PLplot's PNG driver not needed)");
  app.add_flag("--replay,!--no-replay", o.replay,
               "replay each training step's forward and backward from one recording (f32; default on)");
  app.add_option("--eval", o.eval_ckpt, "evaluate a checkpoint on the test set and exit");
  app.add_option("--log-every", o.log_every,
                 "steps between loss read-backs (fewer where an epoch has under 10 of them)")
      ->check(demo::bound(1, true));
  CLI11_PARSE(app, argc, argv);

  demo::Progress bar;
  try {
    return run(o, bar);
  } catch (const std::exception& e) {
    bar.end_line();
    std::fflush(stdout);
    std::fprintf(stderr, "fashion_mnist: error: %s\n", e.what());
    return 2;
  }
}
