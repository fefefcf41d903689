// ONNX models on gltensor: load a .onnx file (ONNX IR, protobuf; opsets 1 to 21 of the default
// domain), plan it once, run it many times with named inputs -> named outputs that stay on the
// GPU. Reference semantics: the ONNX operator specification (https://onnx.ai/onnx/operators/);
// ONNX Runtime is the reference implementation the tests compare with.
//
// Loading validates everything up front: an unsupported op type, attribute value, dtype or opset
// is a ModelError raised by Model::load naming the model file, the node (name and index), its op
// type and the attribute, never a silent approximation at run time.
//
// Planning (at load): shape subgraphs (Shape, Gather, Concat, Cast, Unsqueeze, ... on int64) and
// constant subgraphs are folded on the host; BatchNormalization is folded into a preceding Conv;
// Conv/Gemm/MatMul + bias + activation are fused into one epilogue. The result is a run plan per
// graph (and subgraph): the nodes left to run, ordered by dependency level (independent nodes
// next to each other, sharing one barrier interval), each with its op mapping resolved, and the
// values each node reads last, so that intermediates are released at their last use and the
// SSBO pool reuses their buffers (RunStats::peak_bytes reports the peak).
//
// Threads: a Device is used only by the thread that opened it, so two threads run one Model each
// on its own device: Model::run runs on the device of its inputs, and the model uploads its
// weights to a device at the first run there (the load device's at load) and keeps them until
// release(device) or its destruction. run() is const and keeps every per-run state (values,
// liveness, RunStats) in the call; the per-device state is created under a lock and used only by
// that device's thread. Loading, moving and destroying a Model are not concurrent with runs.
//
// Quantized models (docs/model-runtime.md, "Quantized models"), as ONNX Runtime's quantization
// tool writes them (dynamic quantization, QDQ, QOperator): QuantizeLinear / DequantizeLinear
// (per tensor, per axis, blocked; uint8 / int8, uint4 / int4 carried widened to u8 / i8; round
// half to even, then saturation, NaN to the zero point), DynamicQuantizeLinear, MatMulInteger,
// ConvInteger, QLinearMatMul, QLinearConv and com.microsoft's QLinear ops. 8-bit tensors are
// DType::u8 / DType::i8, int32 biases DType::i32, scales float32 (float16 with f16_weights). The
// integer ops sum exactly in int32; a QDQ Conv (DequantizeLinear -> Conv -> QuantizeLinear) that
// runs on the f32 warp matmul kernel (GPUs' large layers) sums exact products in f32, rounded past
// 2^24 as the float graph rounds them (an output may then differ from an exact int32 sum by one
// quantum at a rounding boundary). float8 and 16-bit quantized types, 3-D ConvInteger /
// QLinearConv, channels_last=1 and other com.microsoft ops are a ModelError at load, naming the
// node.
//
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gltensor/device.hpp"
#include "gltensor/errors.hpp"
#include "gltensor/tensor.hpp"

namespace gltensor {

/// What a graph input or output holds (its ONNX TypeProto): a tensor, a sequence of tensors
/// (each of its own shape, all of one dtype), or an optional (empty, or one tensor / sequence).
enum class ValueKind { tensor, sequence, optional_tensor, optional_sequence };

/// A graph input or output. shape: -1 for a dynamic (symbolic or unknown) dim; dim_names holds
/// the symbolic names ("" where fixed or unnamed). dtype: the ONNX element type mapped to
/// gltensor's (int64 -> i32, values must fit; double is unsupported). For a sequence or an
/// optional, dtype and shape are its tensors' (the shape as declared, often empty: unknown) and
/// kind says which it is.
struct ValueInfo {
  std::string name;
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;
  std::vector<std::string> dim_names;
  ValueKind kind = ValueKind::tensor;
};

/// A value of any kind (Model::run_values): for ValueKind::tensor, `tensors` holds the one tensor;
/// for a sequence, its elements in order (none for an empty sequence), each of its own shape, all
/// of the value's dtype; for an optional, `none` says whether it is empty, else `tensors` holds
/// its tensor (optional_tensor: one) or its sequence's elements (optional_sequence).
struct ModelValue {
  ValueKind kind = ValueKind::tensor;
  bool none = false;
  std::vector<Tensor> tensors;
};

struct ModelOptions {
  /// Store floating initializers (weights) as f16 on the GPU (compute stays f32).
  bool f16_weights = false;
  /// Fixed sizes for dynamic input dims, by input name (used to plan ahead; optional).
  std::map<std::string, Shape> input_shapes;
  /// Record the dispatches of a run and replay them while the input shapes stay the same
  /// (gltensor::Recording, after CUDA graphs): the first run of a set of input shapes runs as
  /// usual (a warm-up: kernels compiled, variants tuned), the second is captured on the model's
  /// own copies of the inputs, later runs of those shapes replay it with no per-node work on the
  /// host, reading each input where the caller's tensor lies (a contiguous tensor from element 0
  /// that is not one of the recording's outputs; any other is copied into the captured copy
  /// first). The outputs are then the
  /// recording's tensors: the next run overwrites them (clone() what must outlive it); each of up to
  /// 256 KiB lies in a host-visible buffer where the device has them (as run_host's; not with
  /// GLTENSOR_HOST_IO=copy), which the recording writes and to_vector() reads without a copy
  /// (kernels that read it read host memory). A run that
  /// cannot be captured (it reads values back: control flow on data, data-dependent shapes) runs
  /// unrecorded for those shapes. A new set of shapes beyond replay_shapes recordings drops the
  /// least recently run one and its buffers (recordings are kept per device the model runs on).
  /// Memory: each recording keeps the buffers of one run (about peak_bytes() for its shapes).
  bool replay = false;
  /// With replay: how many sets of input shapes keep their recording (below 1: 1), for a model
  /// run on a few recurring shapes in turn (the OCR recognizer's batches of several widths).
  int replay_shapes = 1;
};

/// One graph input's values in host memory (Model::run_host): `nbytes` bytes at `data`,
/// row-major and contiguous, in `dtype`'s element layout (as Tensor::from_bytes: f32 / i32 as
/// 4 bytes, f16 / bf16 as 2, u8 / bool as 1), of `shape`. Read during the call only.
struct HostInput {
  const void* data = nullptr;
  std::size_t nbytes = 0;
  Shape shape;
  DType dtype = DType::f32;
};

/// One graph output read back by Model::run_host: its shape, dtype and bytes (row-major, as
/// Tensor::to_bytes).
struct HostOutput {
  Shape shape;
  DType dtype = DType::f32;
  std::vector<std::uint8_t> bytes;
};

/// Statistics of one run (Model::run's `stats`, Model::last_run).
struct RunStats {
  /// Peak bytes of intermediate tensors alive at once (excluding initializers), and the sum over
  /// all intermediates, for comparison. A replayed run (ModelOptions::replay) reports its
  /// captured run's.
  std::size_t peak_bytes = 0;
  std::size_t total_intermediate_bytes = 0;
  /// Compute dispatches and memory barriers the run issued on its device (a replay's
  /// included; the queue issues a barrier only where a dispatch reads or overwrites what an
  /// earlier one wrote since the last barrier, and at the end of each batch of dispatches).
  std::uint64_t dispatches = 0;
  std::uint64_t barriers = 0;
};

class Model {
 public:
  /// Parses and plans `path` for `dev`; uploads initializers once. Throws ModelError (see above),
  /// DeviceError/OutOfMemory from the device.
  static Model load(const Device& dev, const std::string& path, const ModelOptions& options = {});

  const std::vector<ValueInfo>& inputs() const;
  const std::vector<ValueInfo>& outputs() const;
  /// The opset of the default domain the model imports.
  int opset() const;

  /// Runs the graph on the device of `inputs`. `inputs` maps every graph input name to a tensor
  /// (all on one device: the model's, or another thread's own device, see Threads above) whose
  /// dtype and shape match the graph (dynamic dims free). Returns every graph output by name;
  /// the tensors stay on the GPU, in new buffers each run (a replay's: see ModelOptions::replay).
  /// An output of up to 256 KiB that a fused MLP writes (a chain of MatMul/Gemm layers in one
  /// kernel: issue 21's three-Gemm model on GPUs) lies in a host-visible buffer where the device
  /// has them (as a replay's; not with GLTENSOR_HOST_IO=copy): to_vector() reads it without a
  /// copy, kernels that read it read host memory. `stats`, if given, receives the run's statistics. Throws
  /// ModelError for a missing/extra input or a shape or dtype mismatch (naming the input, the
  /// expected and the given shape), ThreadError for inputs on a device of another thread.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs, RunStats* stats = nullptr) const;
  /// Runs the graph as run() does, on values of any kind: models whose graph inputs or outputs
  /// are sequences or optionals (ValueInfo::kind; run(), run_many() and run_host() refuse those
  /// with a ModelError naming the value). Every graph input by name, of its ValueInfo's kind
  /// (an optional given as ModelValue::none = true is empty), each tensor of its dtype (a
  /// tensor input's shape checked as run()'s; a sequence's elements of any shape, all on the run's
  /// device); returns every graph output by name, of its kind. Runs unrecorded (no
  /// ModelOptions::replay). Throws as run() does, and ModelError naming the model file and the
  /// input where an input's kind or an element's dtype does not match, or a tensor input does
  /// not hold exactly one tensor.
  std::map<std::string, ModelValue> run_values(const std::map<std::string, ModelValue>& inputs,
                                               RunStats* stats = nullptr) const;
  /// Runs the graph once per entry of `inputs` (each as for run()), returning each run's
  /// outputs in order: the values of run() called for each in turn, except that an entry's
  /// outputs are never overwritten by a later entry's (where two entries replay one recording,
  /// the earlier's outputs are copied first). With ModelOptions::replay, consecutive entries
  /// whose shapes have a recording (on one device) are replayed together
  /// (Recording::replay_together: their dispatches interleaved under shared memory barriers, so
  /// that the GPU runs them side by side; the OCR recognizer's batches of several widths); the
  /// others run as run() would, in order. last_run() is the last entry's (a replayed entry's
  /// dispatches and barriers: its recording's, as a replay alone issues them; an empty `inputs`
  /// runs nothing and leaves last_run() as it was). Throws as run() does
  /// (entries before the failing one may have run).
  std::vector<std::map<std::string, Tensor>> run_many(const std::vector<std::map<std::string, Tensor>>& inputs) const;

  /// Runs the graph on `dev` (the model's, or another thread's own device) from host data to
  /// host data: every graph input by name (dtype and shape as for run()), every graph output read
  /// back; returns when the outputs are on the host. Zero-copy where it pays (GL 4.4 / OpenGL ES
  /// with the buffer storage extension; GLTENSOR_HOST_IO=copy turns it off): each input of up to
  /// 256 KiB is written by the host into a persistently mapped, coherent buffer of the model's
  /// that the first kernels read in place (no upload copy), and with ModelOptions::replay the
  /// recording writes each output of up to 256 KiB into such a buffer (as for run(); no copy
  /// before the read-back: one fence wait, then a memcpy), as does a plain run where a fused MLP
  /// writes the output (see run()). Larger tensors, and other outputs of plain runs, go
  /// through the upload ring and the mapped read buffer. The values are those of run() on
  /// Tensor::from_bytes inputs, bit for bit. (The persistent, coherent mappings: OpenGL 4.4's
  /// buffer storage, ARB_buffer_storage, or OpenGL ES's EXT_buffer_storage.)
  /// Throws as run() does (an unknown input name included), and ModelError naming the model file
  /// and the input where an input's shape has a negative dim, its nbytes does not match its shape
  /// and dtype, or its data is null.
  std::map<std::string, HostOutput> run_host(const Device& dev, const std::map<std::string, HostInput>& inputs,
                                             RunStats* stats = nullptr) const;

  /// The statistics of the last completed run (on any thread).
  RunStats last_run() const;
  /// last_run()'s peak_bytes and total_intermediate_bytes.
  std::size_t peak_bytes() const;
  std::size_t total_intermediate_bytes() const;
  /// Drops the weights (and the recording of ModelOptions::replay) the model keeps for `dev`, a
  /// device other than the load device that it ran on; call on dev's thread before the thread
  /// ends. Nothing for the load device or a device the model never ran on.
  void release(const Device& dev) const;
  /// Bytes of initializers on the GPU (on the load device): on software rasterizers (or with
  /// GLTENSOR_CONV_DIRECT=ubo) the f32 Conv filters that conv2d runs in its direct kernel's ubo
  /// layout, smaller than the device's uniform block (where that is at most 64 KiB, as on
  /// llvmpipe), are uploaded into buffers of a whole block (one buffer each, no other copy), and
  /// that padding is not counted here.
  std::size_t weight_bytes() const;
  /// What planning did, in one line: nodes left to run, constants folded, BatchNormalization
  /// and Mul/Add folded into Conv weights, fused epilogues and elementwise chains (an addition
  /// to the API, for gltensor-run and tests).
  std::string plan_summary() const;

  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();

 private:
  struct Impl;
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gltensor
