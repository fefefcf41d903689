// Trains an MLP or a CNN on Fashion-MNIST with gltensor: data, forward, backward and optimizer
// all run on the GPU path; the host reads back only the loss every few steps and the metrics.
// Writes training curves and a confusion matrix as PNG, metrics as JSON, and a safetensors
// checkpoint; --eval CHECKPOINT runs inference only.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

#include "gltensor/gltensor.hpp"
#include "idx.hpp"
#include "models.hpp"
#include "plot.hpp"

using namespace gltensor;
using Clock = std::chrono::steady_clock;

namespace {

const std::vector<std::string> kClasses = {"T-shirt", "Trouser", "Pullover", "Dress", "Coat",
                                           "Sandal",  "Shirt",   "Sneaker",  "Bag",   "Boot"};
constexpr double kMean = 0.2860, kStd = 0.3530;  // Fashion-MNIST training-set pixel statistics

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
  double accuracy = 0;
  std::vector<std::vector<long>> confusion;
};

EvalResult evaluate(nn::Module& model, const Split& test, std::int64_t bs) {
  NoGradGuard ng;
  model.eval();
  const Device dev = test.images.device();
  Tensor counts = zeros(dev, {100}, DType::i32);
  for (std::int64_t s = 0; s < test.n; s += bs) {
    const std::int64_t b = std::min(bs, test.n - s);
    Tensor idx = arange(dev, static_cast<double>(s), static_cast<double>(s + b), 1, DType::i32);
    auto [x, y] = batch(test, idx);
    Tensor pred = argmax(model(x), 1);
    counts = add(counts, sum(one_hot(add(mul(y, 10), pred), 100), {0}));
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
  model.train();
  return r;
}

std::string hms(double s) {
  char b[32];
  const int t = static_cast<int>(s);
  std::snprintf(b, sizeof b, "%d:%02d", t / 60, t % 60);
  return b;
}

void progress(int epoch, int epochs, std::int64_t done, std::int64_t total, double loss, double ips, double eta) {
  const int width = 28, fill = static_cast<int>(width * done / std::max<std::int64_t>(total, 1));
  std::string bar(static_cast<std::size_t>(fill), '=');
  if (fill < width) bar += '>';
  bar.resize(width, ' ');
  std::fprintf(stderr, "\repoch %d/%d [%s] %3d%%  loss %.4f  %6.0f img/s  ETA %s   ", epoch, epochs, bar.c_str(),
               static_cast<int>(100 * done / std::max<std::int64_t>(total, 1)), loss, ips, hms(eta).c_str());
  std::fflush(stderr);
}

void write_confusion_png(const std::string& path, const EvalResult& r) {
  demo::Canvas c(700, 640);
  demo::confusion(c, 20, 20, 54, r.confusion, kClasses);
  c.save_png(path);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train an MLP or a CNN on Fashion-MNIST with gltensor (GLSL compute shaders over EGL/GLES)"};
  std::string data = "/usr/share/datasets/fashion-mnist", model_name = "mlp", out = "fashion_mnist_out", eval_ckpt;
  std::string optimizer = "adam", schedule = "cosine";
  int epochs = 10, log_every = 20;
  std::int64_t batch_size = 128, limit = 0, seed = 1;
  double lr = 1e-3;
  app.add_option("--data", data, "directory with the gzipped IDX files")->capture_default_str();
  app.add_option("--model", model_name, "mlp or cnn")->check(CLI::IsMember({"mlp", "cnn"}))->capture_default_str();
  app.add_option("--epochs", epochs, "training epochs")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--batch-size", batch_size, "images per step")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--lr", lr, "learning rate")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--optimizer", optimizer, "adam or sgd (momentum 0.9)")
      ->check(CLI::IsMember({"adam", "sgd"}))
      ->capture_default_str();
  app.add_option("--schedule", schedule, "cosine, step (x0.1 every 4 epochs) or none")
      ->check(CLI::IsMember({"cosine", "step", "none"}))
      ->capture_default_str();
  app.add_option("--seed", seed, "seed for initialization, shuffling and dropout")->capture_default_str();
  app.add_option("--limit", limit, "use only the first N training images (0 = all)")->capture_default_str();
  app.add_option("--out", out, "directory for plots, metrics and the checkpoint")->capture_default_str();
  app.add_option("--eval", eval_ckpt, "evaluate a checkpoint on the test set and exit");
  app.add_option("--log-every", log_every, "steps between loss read-backs")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  try {
    Device dev = Device::open();
    std::printf("device: %s (%s)\n", dev.caps().renderer.c_str(), dev.caps().version.c_str());
    Generator gen(static_cast<std::uint64_t>(seed));
    auto model = demo::make_model(model_name, dev, gen);
    const Split test = load_split(dev, data, "t10k", 0);
    std::filesystem::create_directories(out);

    if (!eval_ckpt.empty()) {
      nn::load_state_dict(*model, nn::load_safetensors(eval_ckpt, dev));
      const auto t0 = Clock::now();
      EvalResult r = evaluate(*model, test, 1000);
      const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
      std::printf("test accuracy %.2f%% on %lld images (%.0f img/s)\n", 100 * r.accuracy,
                  static_cast<long long>(test.n), test.n / secs);
      write_confusion_png(out + "/confusion_matrix.png", r);
      std::printf("wrote %s/confusion_matrix.png\n", out.c_str());
      return 0;
    }

    const Split train = load_split(dev, data, "train", limit);
    std::printf("model %s, %zu parameter tensors, train %lld, test %lld, batch %lld, %s lr %g (%s)\n",
                model_name.c_str(), model->parameters().size(), static_cast<long long>(train.n),
                static_cast<long long>(test.n), static_cast<long long>(batch_size), optimizer.c_str(), lr,
                schedule.c_str());
    std::unique_ptr<nn::Optimizer> opt;
    if (optimizer == "adam")
      opt = std::make_unique<nn::Adam>(model->parameters(), lr);
    else
      opt = std::make_unique<nn::SGD>(model->parameters(), lr, nn::SGDOptions{0.9, 0, 0, false});

    std::mt19937_64 shuffle_rng(static_cast<std::uint64_t>(seed));
    std::vector<std::int32_t> order(static_cast<std::size_t>(train.n));
    std::iota(order.begin(), order.end(), 0);
    const std::int64_t steps_per_epoch = train.n / batch_size;  // drop the last partial batch
    if (steps_per_epoch == 0)
      throw std::runtime_error("batch size " + std::to_string(batch_size) + " exceeds the training set");
    demo::Series loss_series{"train loss", {}, {}, {31, 119, 180}}, acc_series{"test accuracy", {}, {}, {214, 39, 40}};
    nlohmann::json metrics = {
        {"model", model_name}, {"device", dev.caps().renderer}, {"epochs", nlohmann::json::array()}};
    EvalResult last;
    const bool tty = ::isatty(2);
    const auto start = Clock::now();
    for (int epoch = 1; epoch <= epochs; ++epoch) {
      if (schedule == "cosine")
        opt->lr = nn::cosine_lr(lr, epoch - 1, epochs);
      else if (schedule == "step")
        opt->lr = nn::step_lr(lr, epoch - 1, 4);
      std::shuffle(order.begin(), order.end(), shuffle_rng);
      const auto e0 = Clock::now();
      double loss_sum = 0;
      int loss_n = 0;
      float loss_now = 0;
      for (std::int64_t s = 0; s < steps_per_epoch; ++s) {
        Tensor idx = Tensor::from_host(dev, std::span<const std::int32_t>(order.data() + s * batch_size, batch_size),
                                       {batch_size});
        auto [x, y] = batch(train, idx);
        opt->zero_grad();
        Tensor loss = cross_entropy((*model)(x), y);
        backward(loss);
        opt->step();
        if ((s + 1) % log_every == 0 || s + 1 == steps_per_epoch) {
          loss_now = loss.item();
          loss_sum += loss_now;
          ++loss_n;
          loss_series.x.push_back(epoch - 1 + static_cast<double>(s + 1) / steps_per_epoch);
          loss_series.y.push_back(loss_now);
          const double el = std::chrono::duration<double>(Clock::now() - e0).count();
          const double ips = (s + 1) * batch_size / el;
          const double eta = (steps_per_epoch - s - 1) * batch_size / ips;
          if (tty || (s + 1) % (log_every * 10) == 0 || s + 1 == steps_per_epoch)
            progress(epoch, epochs, s + 1, steps_per_epoch, loss_now, ips, eta);
          if (!tty) std::fprintf(stderr, "\n");
        }
      }
      const double epoch_secs = std::chrono::duration<double>(Clock::now() - e0).count();
      last = evaluate(*model, test, 1000);
      acc_series.x.push_back(epoch);
      acc_series.y.push_back(100 * last.accuracy);
      if (tty) std::fprintf(stderr, "\n");
      std::printf("epoch %d/%d  train loss %.4f  test accuracy %.2f%%  %.1f s  (%.0f img/s)  lr %.2e\n", epoch, epochs,
                  loss_n ? loss_sum / loss_n : 0.0, 100 * last.accuracy, epoch_secs,
                  steps_per_epoch * batch_size / epoch_secs, opt->lr);
      std::fflush(stdout);
      metrics["epochs"].push_back({{"epoch", epoch},
                                   {"train_loss", loss_n ? loss_sum / loss_n : 0.0},
                                   {"test_accuracy", last.accuracy},
                                   {"seconds", epoch_secs}});
    }
    const double total = std::chrono::duration<double>(Clock::now() - start).count();
    metrics["total_seconds"] = total;
    metrics["final_test_accuracy"] = last.accuracy;
    const std::string ckpt = out + "/fashion_mnist_" + model_name + ".safetensors";
    nn::save_safetensors(ckpt, nn::state_dict(*model));
    demo::Canvas c(900, 380);
    demo::chart(c, 0, 0, 450, 380, "training loss", {loss_series}, "epoch");
    demo::chart(c, 450, 0, 450, 380, "test accuracy (%)", {acc_series}, "epoch");
    c.save_png(out + "/training_curves.png");
    write_confusion_png(out + "/confusion_matrix.png", last);
    std::ofstream(out + "/metrics.json") << metrics.dump(2) << "\n";
    std::printf(
        "final test accuracy %.2f%% after %d epochs in %s\nwrote %s, %s/training_curves.png, %s/confusion_matrix.png, "
        "%s/metrics.json\n",
        100 * last.accuracy, epochs, hms(total).c_str(), ckpt.c_str(), out.c_str(), out.c_str(), out.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fashion_mnist: error: %s\n", e.what());
    return 2;
  }
}
