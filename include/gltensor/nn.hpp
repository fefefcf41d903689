// Modules, optimizers, learning-rate schedules and safetensors checkpoints (torch.nn / torch.optim
// semantics). Parameters are float32 leaf tensors with requires_grad; optimizers update them in
// place with one fused GLSL kernel per parameter tensor.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gltensor/linalg.hpp"
#include "gltensor/nn_functional.hpp"
#include "gltensor/random.hpp"
#include "gltensor/tensor.hpp"

namespace gltensor::nn {

class Module {
 public:
  virtual ~Module() = default;
  virtual Tensor forward(const Tensor& x) = 0;
  Tensor operator()(const Tensor& x) { return forward(x); }
  /// Parameters (trainable) and buffers (running statistics), with dotted names.
  virtual std::vector<std::pair<std::string, Tensor*>> named_parameters() { return {}; }
  virtual std::vector<std::pair<std::string, Tensor*>> named_buffers() { return {}; }
  std::vector<Tensor*> parameters();
  virtual void train(bool on = true) { training_ = on; }
  void eval() { train(false); }
  bool training() const { return training_; }

 protected:
  bool training_ = true;
};

/// y = act(x W^T + b); W [out, in] and b [out] start as U(-1/sqrt(in), 1/sqrt(in)) (torch's default).
class Linear : public Module {
 public:
  Linear(const Device& dev, std::int64_t in, std::int64_t out, Generator& gen, bool bias = true,
         Activation act = Activation::none);
  Tensor forward(const Tensor& x) override;
  std::vector<std::pair<std::string, Tensor*>> named_parameters() override;
  Tensor weight, bias;
  Activation activation;
};

class Conv2d : public Module {
 public:
  Conv2d(const Device& dev, std::int64_t in, std::int64_t out, std::int64_t kernel, Generator& gen,
         Conv2dOptions opt = {}, bool bias = true);
  Tensor forward(const Tensor& x) override;
  std::vector<std::pair<std::string, Tensor*>> named_parameters() override;
  Tensor weight, bias;
  Conv2dOptions options;
};

class BatchNorm2d : public Module {
 public:
  BatchNorm2d(const Device& dev, std::int64_t channels, double momentum = 0.1, double eps = 1e-5);
  Tensor forward(const Tensor& x) override;
  /// With an activation in the same kernel (batch_norm's act: none or relu).
  Tensor forward(const Tensor& x, Activation act);
  std::vector<std::pair<std::string, Tensor*>> named_parameters() override;
  std::vector<std::pair<std::string, Tensor*>> named_buffers() override;
  Tensor weight, bias, running_mean, running_var;
  double momentum, eps;
};

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x) override;
};

class Flatten : public Module {
 public:
  Tensor forward(const Tensor& x) override;  ///< [N, ...] -> [N, prod(...)]
};

class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(Pool2dOptions opt) : options(opt) {}
  Tensor forward(const Tensor& x) override;
  Pool2dOptions options;
};

class Dropout : public Module {
 public:
  Dropout(double p, Generator& gen, bool device_offset = false) : p(p), gen(&gen), device_offset(device_offset) {}
  Tensor forward(const Tensor& x) override;  ///< identity in eval mode
  double p;
  Generator* gen;
  /// Masks drawn at an offset also kept on the device (`offset`, int32 [1], uploaded as 0 by the
  /// first training forward) and advanced there by each training forward (one more dispatch), so
  /// that a training step captured in a Recording draws a new mask per replay, not the captured one
  /// (nor any other forward's: gltensor::dropout's offset overload). A replay runs the forward it
  /// captured: after eval() it still drops (eval forwards run eagerly, as the demo's evaluation).
  bool device_offset = false;
  Tensor offset;
};

/// Runs its layers in order; a BatchNorm2d followed by a ReLU runs as one kernel (batch_norm's
/// act), the same values and gradients; followed by a MaxPool2d too, as batch_norm_max_pool2d
/// (one op; the same values, the gradients to rounding). Only those classes themselves: a
/// subclass's forward runs as written.
class Sequential : public Module {
 public:
  Sequential& add(std::shared_ptr<Module> m);
  Tensor forward(const Tensor& x) override;
  std::vector<std::pair<std::string, Tensor*>> named_parameters() override;  ///< "0.weight", ...
  std::vector<std::pair<std::string, Tensor*>> named_buffers() override;
  void train(bool on = true) override;
  std::vector<std::shared_ptr<Module>> layers;
};

// ---- optimizers ----

class Optimizer {
 public:
  explicit Optimizer(std::vector<Tensor*> params, double lr);
  virtual ~Optimizer() = default;
  /// Applies one update from the parameters' accumulated gradients (parameters without a
  /// gradient are skipped).
  virtual void step() = 0;
  void zero_grad();
  /// The parameters this optimizer updates.
  const std::vector<Tensor*>& params() const { return params_; }
  double lr;

 protected:
  /// Allocates `states` zeroed state values per parameter element (SGD's momentum buffer; Adam's
  /// m and v) in flat buffers ("slabs", each on its parameters' device and within its SSBO
  /// limit), so that one dispatch updates several parameters of one device (multi-tensor apply).
  void init_states(int states);
  std::vector<Tensor*> params_;
  std::vector<std::vector<Tensor>> slabs_;  ///< [state][slab]
  std::vector<std::size_t> slab_of_;        ///< per parameter: its slab
  std::vector<std::int64_t> slab_offset_;   ///< per parameter: its first element in the slab
};

struct SGDOptions {
  double momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
};
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor*> params, double lr, SGDOptions opt = {});
  void step() override;
  SGDOptions options;

 private:
  bool first_ = true;
};

struct AdamOptions {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  bool decoupled = false;  ///< AdamW
};
/// Parameters that share a weight decay (torch's param groups, as far as the decay goes):
/// transformers decay their matrices and leave norms' weights and biases undecayed.
struct ParamGroup {
  std::vector<Tensor*> params;
  double weight_decay = 0;
};
class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor*> params, double lr, AdamOptions opt = {});
  /// Each group's weight_decay replaces options.weight_decay for its parameters.
  Adam(const std::vector<ParamGroup>& groups, double lr, AdamOptions opt = {});
  void step() override;
  AdamOptions options;
  /// Steps taken (the bias corrections' t).
  std::int64_t steps() const { return t_; }

 private:
  std::vector<double> wd_;  ///< per parameter; empty: options.weight_decay for all
  std::int64_t t_ = 0;
};
/// Adam with decoupled weight decay (Loshchilov & Hutter 2019; torch.optim.AdamW): each step
/// first multiplies the parameter by 1 - lr * weight_decay, then applies Adam's update without
/// the decay in the gradient. Default weight decay 0.01, as torch.
class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor*> params, double lr, AdamOptions opt = {0.9, 0.999, 1e-8, 0.01, true});
  AdamW(const std::vector<ParamGroup>& groups, double lr, AdamOptions opt = {0.9, 0.999, 1e-8, 0.01, true});
};

/// Scales the accumulated gradients of `params` in place so that their global 2-norm (the norm
/// of all of them concatenated) is at most max_norm: g *= min(1, max_norm / (total + 1e-6)), as
/// torch.nn.utils.clip_grad_norm_. Everything runs on the GPU (a norm per gradient, their norm,
/// the clip factor, one in-place multiply per gradient): nothing is read back. Returns the total
/// norm before clipping as a float32 scalar tensor (read it with item() when needed). Parameters
/// without a gradient are skipped (0 if none has one); gradients that are the same tensor (one
/// storage, offset and size) are scaled once. ValueError for max_norm <= 0 or NaN, an empty list
/// or an undefined parameter.
Tensor clip_grad_norm_(const std::vector<Tensor*>& params, double max_norm);

// ---- mixed precision ----

struct GradScalerOptions {
  double init_scale = 65536.0;  ///< 2^16, as torch
  double growth_factor = 2.0;   ///< scale *= growth_factor after growth_interval clean steps
  double backoff_factor = 0.5;  ///< scale *= backoff_factor after a step with inf/NaN gradients
  std::int64_t growth_interval = 2000;
  bool enabled = true;  ///< false: scale() returns the loss, step() is optimizer.step()
};
/// Dynamic loss scaling for f16 training (torch.cuda.amp.GradScaler; Micikevicius et al., "Mixed
/// Precision Training", ICLR 2018): small f16 gradients would flush to zero, so the loss is
/// multiplied by a scale before backward() and the gradients divided by it before the update.
///   Autocast ac;  Tensor loss = cross_entropy(model(x), y);  }  // f16 forward (autocast.hpp)
///   backward(scaler.scale(loss));  scaler.step(opt);  scaler.update();
/// unscale_ divides every gradient in place (on the GPU) and records whether any is inf/NaN;
/// step() reads that one flag back (the only read-back per step, as torch's) and skips the
/// optimizer's step if it is set; update() then backs the scale off, or grows it after
/// growth_interval clean steps. Gradients held twice (tied weights) are unscaled once. Options
/// out of range (scale or growth <= 0 or not finite, growth_factor <= 1, backoff not in (0, 1),
/// growth_interval < 1) and unscale_ twice before update() are ValueErrors.
class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions o = {});
  /// loss * scale (float32; undefined stays undefined).
  Tensor scale(const Tensor& loss) const;
  /// Divides the gradients of `opt`'s parameters by the scale (in place) and records inf/NaN.
  void unscale_(Optimizer& opt);
  /// unscale_ (if not done since the last update) and opt.step() unless a gradient was inf/NaN.
  /// Returns whether the optimizer stepped.
  bool step(Optimizer& opt);
  /// Adjusts the scale for the next iteration (after step()).
  void update();
  double get_scale() const { return scale_; }
  /// Steps skipped so far (inf/NaN gradients).
  std::int64_t skipped_steps() const { return skipped_; }

 private:
  struct Pending {
    Optimizer* opt;
    Tensor found_inf;  ///< bool scalar on the GPU
    bool stepped = false;
  };
  GradScalerOptions o_;
  double scale_;
  std::int64_t growth_tracker_ = 0, skipped_ = 0;
  std::vector<Pending> pending_;
  bool found_inf_ = false;
};

// ---- learning-rate schedules (value for a step/epoch index, as torch's schedulers) ----
/// base_lr * gamma^(floor(epoch / step_size))
double step_lr(double base_lr, std::int64_t epoch, std::int64_t step_size, double gamma = 0.1);
/// eta_min + (base_lr - eta_min) * (1 + cos(pi * t / t_max)) / 2
double cosine_lr(double base_lr, std::int64_t t, std::int64_t t_max, double eta_min = 0.0);

// ---- checkpoints (safetensors: 8-byte little-endian header length, JSON header, raw data) ----
void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors);
/// With string metadata (the header's "__metadata__" object: string keys and values; quant.hpp's
/// to_state names quantized weights' formats there).
void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata);
/// Every error names the file (and the tensor, for a bad entry): ValueError for a missing or
/// truncated file, a header that is not a JSON object, an entry without dtype / shape /
/// data_offsets or with values of the wrong JSON type (shape and data_offsets: lists of
/// non-negative integers), data_offsets outside the data; DTypeError for a dtype other than
/// F32, F16, BF16, I32, U8, BOOL; errors creating the tensor keep their type (ShapeError when
/// the byte count does not match the shape, LimitError past the device's limits).
std::map<std::string, Tensor> load_safetensors(const std::string& path, const Device& dev);
/// The header's "__metadata__" (empty without one); ValueError as above, and for metadata that is
/// not an object of strings.
std::map<std::string, std::string> load_safetensors_metadata(const std::string& path);
/// Module parameters and buffers by name.
std::map<std::string, Tensor> state_dict(Module& m);
/// Copies tensors into the module's parameters/buffers; ShapeError/ValueError on mismatch or a
/// missing name.
void load_state_dict(Module& m, const std::map<std::string, Tensor>& tensors);

}  // namespace gltensor::nn
