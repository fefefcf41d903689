#include "plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>

#include "plot_common.hpp"

namespace demo {
namespace {

std::string percent(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", v);
  return b;
}

}  // namespace

void plot_training_curves(const std::string& path, const History& h, const std::string& title) {
  auto pls = open_png(path, 1200, 600);
  plstream& p = *pls;
  const int epochs = static_cast<int>(h.test_accuracy.size());
  const PLFLT xtick = epochs <= 12 ? 1 : 0;  // integer epochs while they fit; else PLplot's choice
  page_title(p, title);

  // Left: training loss per read-back step (thin) and its mean per epoch (thick, markers).
  double ymax = 0;
  for (double v : h.step_loss) ymax = std::max(ymax, v);
  for (double v : h.epoch_loss) ymax = std::max(ymax, v);
  // Headroom above the data for the legend (the loss falls, so the top right is free).
  p.vpor(0.085, 0.475, 0.15, 0.76);
  p.wind(0, std::max(epochs, 1), 0, ymax > 0 ? ymax * 1.3 : 1);
  axes(p, xtick);
  p.lab("epoch", "cross-entropy loss", "training loss");
  p.col0(kLightBlue);
  p.width(1.5);
  if (!h.step_loss.empty()) p.line(static_cast<PLINT>(h.step_loss.size()), h.step_epoch.data(), h.step_loss.data());
  std::vector<double> ex(h.epoch_loss.size());
  for (std::size_t i = 0; i < ex.size(); ++i) ex[i] = static_cast<double>(i + 1);
  p.col0(kBlue);
  p.width(2.5);
  if (ex.size() > 1) p.line(static_cast<PLINT>(ex.size()), ex.data(), h.epoch_loss.data());
  p.string(static_cast<PLINT>(ex.size()), ex.data(), h.epoch_loss.data(), "●");
  {
    PLINT opt[] = {PL_LEGEND_LINE, PL_LEGEND_LINE | PL_LEGEND_SYMBOL};
    const char* text[] = {"loss every few steps", "mean loss of the epoch"};
    PLINT text_colors[] = {kInk, kInk}, line_colors[] = {kLightBlue, kBlue}, line_styles[] = {1, 1};
    PLFLT line_widths[] = {1.5, 2.5}, symbol_scales[] = {1, 1};
    PLINT symbol_colors[] = {kBlue, kBlue}, symbol_numbers[] = {0, 1};
    const char* symbols[] = {"", "●"};
    PLFLT lw, lh;
    p.legend(&lw, &lh, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX,
             PL_POSITION_TOP | PL_POSITION_RIGHT | PL_POSITION_INSIDE, 0.02, 0.03, 0.08, kBackground, kGrid, 1, 0, 0, 2,
             opt, 0.8, 0.85, 1.6, 0, text_colors, text, nullptr, nullptr, nullptr, nullptr, line_colors, line_styles,
             line_widths, symbol_colors, symbol_scales, symbol_numbers, symbols);
  }

  // Right: test accuracy after each epoch, each point labelled while they fit.
  double lo = 100, hi = 0;
  for (double v : h.test_accuracy) lo = std::min(lo, v), hi = std::max(hi, v);
  if (lo > hi) lo = 0, hi = 100;
  const double pad = std::max(1.0, (hi - lo) * 0.2);
  p.vpor(0.585, 0.975, 0.15, 0.76);
  p.wind(0.5, epochs + 0.5, std::max(0.0, lo - pad), std::min(100.0, hi + pad));
  p.width(1);
  axes(p, xtick);
  p.lab("epoch", "accuracy (%)", "test accuracy (whole test set)");
  p.col0(kRed);
  p.width(2.5);
  if (ex.size() > 1) p.line(static_cast<PLINT>(ex.size()), ex.data(), h.test_accuracy.data());
  p.string(static_cast<PLINT>(ex.size()), ex.data(), h.test_accuracy.data(), "●");
  p.col0(kInk);
  p.schr(0, 0.85);
  for (std::size_t i = 0; i < ex.size(); ++i)
    if (epochs <= 12 || i + 1 == ex.size())
      p.ptex(ex[i], h.test_accuracy[i] + (hi - lo + 2 * pad) * 0.05, 1, 0, 0.5, percent(h.test_accuracy[i]).c_str());
  finish(std::move(pls), path);
}

void plot_confusion_matrix(const std::string& path, const std::vector<std::vector<long>>& m,
                           const std::vector<std::string>& names, const std::string& title) {
  const int n = static_cast<int>(m.size());
  auto pls = open_png(path, 1000, 980);
  plstream& p = *pls;
  page_title(p, title);
  // cmap1: white -> dark blue, indexed by the fraction of the true class.
  PLFLT pos[] = {0, 1}, r[] = {1, 0.03}, g[] = {1, 0.19}, b[] = {1, 0.42};
  p.scmap1l(true, 2, pos, r, g, b, nullptr);
  p.schr(0, 1.0);
  p.vpor(0.22, 0.22 + 0.65 * 980 / 1000, 0.21, 0.86);  // square cells on the 1000 x 980 page
  p.wind(0, n, 0, n);
  for (int i = 0; i < n; ++i) {
    long row = 0;
    for (long v : m[static_cast<std::size_t>(i)]) row += v;
    const double y0 = n - 1 - i;  // true class 0 at the top
    for (int j = 0; j < n; ++j) {
      const long v = m[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
      const double f = row > 0 ? static_cast<double>(v) / static_cast<double>(row) : 0;
      PLFLT xs[] = {static_cast<PLFLT>(j), j + 1.0, j + 1.0, static_cast<PLFLT>(j)}, ys[] = {y0, y0, y0 + 1, y0 + 1};
      p.col1(std::sqrt(f));  // sqrt: the off-diagonal confusions stay visible next to the diagonal
      p.fill(4, xs, ys);
      p.col0(f > 0.3 ? kWhite : kInk);
      p.schr(0, 0.9);
      p.ptex(j + 0.5, y0 + 0.5, 1, 0, 0.5, std::to_string(v).c_str());
    }
    p.col0(kInk);
    p.schr(0, 1.0);
    const double along = (n - 1 - i + 0.5) / n;
    p.mtex("lv", 0.7, along, 1.0, names[static_cast<std::size_t>(i)].c_str());
    const double recall =
        row > 0 ? 100.0 * static_cast<double>(m[static_cast<std::size_t>(i)][static_cast<std::size_t>(i)]) /
                      static_cast<double>(row)
                : 0;
    p.mtex("rv", 0.7, along, 0.0, (percent(recall) + "%").c_str());
  }
  p.col0(kInk);
  for (int j = 0; j < n; ++j) p.mtex("bv", 0.7, (j + 0.5) / n, 1.0, names[static_cast<std::size_t>(j)].c_str());
  p.width(1);
  p.box("bc", 0, 0, "bc", 0, 0);
  p.schr(0, 1.1);
  p.mtex("b", 8.5, 0.5, 0.5, "predicted class");
  p.mtex("l", 9.0, 0.5, 0.5, "true class");
  p.mtex("t", 0.6, 1.0 + 0.85 / n, 0.5, "recall");  // header of the recall column
  finish(std::move(pls), path);
}

}  // namespace demo
