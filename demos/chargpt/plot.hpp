// chargpt's loss plot (PLplot pngcairo, through demos/common's page helpers).
#pragma once
#include <string>
#include <vector>

namespace chargpt {

struct LossHistory {
  std::vector<double> train_step, train_loss;  ///< every step's training loss
  std::vector<double> val_step, val_loss;      ///< validation loss at each evaluation
};

/// Training loss per step (thin), its running mean over 20 steps, validation loss at each
/// evaluation (markers); the y axis starts at 0 and shows ln 256 (a uniform byte guess).
/// Throws std::runtime_error if the file cannot be written.
void plot_losses(const std::string& path, const LossHistory& h, const std::string& title);

}  // namespace chargpt
