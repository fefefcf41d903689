// The training report's two figures, drawn with PLplot (Debian: libplplot-dev) through its cairo
// PNG driver "pngcairo" (Debian: plplot-driver-cairo), with the helpers of demos/common.
#pragma once
#include <string>
#include <vector>

#include "plot_common.hpp"  // check_png_driver

namespace demo {

/// What the training loop records.
struct History {
  std::vector<double> step_epoch, step_loss;  ///< loss read back every few steps; x in epochs (fractional)
  std::vector<double> epoch_loss;             ///< mean of the read-back losses of epoch i + 1
  std::vector<double> test_accuracy;          ///< percent, after epoch i + 1
};

/// Two panels: training loss per step (and its mean per epoch), test accuracy per epoch.
/// `title` names the run (model, device). Throws std::runtime_error if the file cannot be written.
void plot_training_curves(const std::string& path, const History& h, const std::string& title);

/// A 10x10 (n x n) confusion matrix m[true][predicted] with counts in the cells, shaded by the
/// fraction of the true class, the class names in full and each class's recall on the right.
void plot_confusion_matrix(const std::string& path, const std::vector<std::vector<long>>& m,
                           const std::vector<std::string>& names, const std::string& title);

}  // namespace demo
