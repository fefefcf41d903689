#include "plot.hpp"

#include <algorithm>
#include <cmath>

#include "plot_common.hpp"

namespace chargpt {

void plot_losses(const std::string& path, const LossHistory& h, const std::string& title) {
  auto pls = demo::open_png(path, 1000, 650);
  plstream& p = *pls;
  demo::page_title(p, title);
  double xmax = 1, ymax = std::log(256.0) * 1.1;
  for (double s : h.train_step) xmax = std::max(xmax, s);
  for (double s : h.val_step) xmax = std::max(xmax, s);
  for (double v : h.train_loss)
    if (std::isfinite(v)) ymax = std::max(ymax, v * 1.05);
  p.vpor(0.09, 0.97, 0.11, 0.76);
  p.wind(0, xmax, 0, ymax);
  demo::axes(p, 0);
  p.lab("step", "cross-entropy loss (nats per byte)", "");
  // ln 256: a model that guesses bytes uniformly.
  const PLFLT ux[] = {0, xmax}, uy[] = {std::log(256.0), std::log(256.0)};
  p.col0(demo::kGrid);
  p.width(1.5);
  p.lsty(2);
  p.line(2, ux, uy);
  p.lsty(1);
  p.col0(demo::kLightBlue);
  p.width(1);
  if (!h.train_loss.empty()) p.line(static_cast<PLINT>(h.train_loss.size()), h.train_step.data(), h.train_loss.data());
  std::vector<double> mean(h.train_loss.size());
  double acc = 0;
  for (std::size_t i = 0; i < mean.size(); ++i) {
    acc += h.train_loss[i];
    if (i >= 20) acc -= h.train_loss[i - 20];
    mean[i] = acc / static_cast<double>(std::min<std::size_t>(i + 1, 20));
  }
  p.col0(demo::kBlue);
  p.width(2.5);
  if (mean.size() > 1) p.line(static_cast<PLINT>(mean.size()), h.train_step.data(), mean.data());
  p.col0(demo::kRed);
  if (h.val_loss.size() > 1) p.line(static_cast<PLINT>(h.val_loss.size()), h.val_step.data(), h.val_loss.data());
  p.string(static_cast<PLINT>(h.val_loss.size()), h.val_step.data(), h.val_loss.data(), "●");
  {
    PLINT opt[] = {PL_LEGEND_LINE, PL_LEGEND_LINE, PL_LEGEND_LINE | PL_LEGEND_SYMBOL, PL_LEGEND_LINE};
    const char* text[] = {"training loss per step", "its mean over 20 steps", "validation loss", "ln 256 (uniform)"};
    PLINT text_colors[] = {demo::kInk, demo::kInk, demo::kInk, demo::kInk};
    PLINT line_colors[] = {demo::kLightBlue, demo::kBlue, demo::kRed, demo::kGrid}, line_styles[] = {1, 1, 1, 2};
    PLFLT line_widths[] = {1, 2.5, 2.5, 1.5}, symbol_scales[] = {1, 1, 1, 1};
    PLINT symbol_colors[] = {demo::kRed, demo::kRed, demo::kRed, demo::kRed}, symbol_numbers[] = {0, 0, 1, 0};
    const char* symbols[] = {"", "", "●", ""};
    PLFLT lw, lh;
    p.legend(&lw, &lh, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX,
             PL_POSITION_TOP | PL_POSITION_RIGHT | PL_POSITION_INSIDE, 0.02, 0.03, 0.08, demo::kBackground, demo::kGrid,
             1, 0, 0, 4, opt, 0.8, 0.85, 1.6, 0, text_colors, text, nullptr, nullptr, nullptr, nullptr, line_colors,
             line_styles, line_widths, symbol_colors, symbol_scales, symbol_numbers, symbols);
  }
  demo::finish(std::move(pls), path);
}

}  // namespace chargpt
