// The recurrent layers' choice of time loop (internal), a pure function tested without a GPU
// (tests/nn/test_nn_plans.cpp): the sequence kernel (glsl/nn/rnn_seq.comp: one dispatch runs
// many time steps, one workgroup per direction and batch row) where the hidden size fits one
// workgroup's shared memory and the loop limit allows at least one step per dispatch, else the
// per-step path (a batched matmul and the gate kernel per step, glsl/nn/rnn.comp).
#pragma once
#include <cstdint>

namespace gltensor::detail {

/// Largest hidden size of the sequence kernel: its shared h (two buffers of kRnnSeqMaxHidden
/// floats, two more for GRU's r . h and z) and one workgroup's GEMV per step. Past it the
/// per-step path's matmul spreads h @ R^T over the whole device.
inline constexpr std::int64_t kRnnSeqMaxHidden = 256;

struct RnnSeqProblem {
  std::int64_t T = 0, H = 0;
  int phases = 1;  ///< barriers per step: 2 for GRU without linear_before_reset (r . h first)
};

struct RnnSeqDevice {
  int max_local = 128;                     ///< min(GL_MAX_COMPUTE_WORK_GROUP_SIZE x, ..._INVOCATIONS)
  int max_shared_memory = 16384;           ///< GL_MAX_COMPUTE_SHARED_MEMORY_SIZE (bytes)
  std::uint64_t loop_budget = UINT64_MAX;  ///< DeviceImpl::loop_budget()
  bool force_steps = false;                ///< GLTENSOR_RNN=steps
};

struct RnnSeqPlan {
  bool sequence = false;        ///< the sequence kernel (else the per-step path)
  std::uint32_t local = 0;      ///< invocations per workgroup (LOCAL_X)
  std::int64_t units = 0;       ///< hidden units per invocation, ceil(H / local)
  std::int64_t chunk = 0;       ///< time steps per dispatch (the last dispatch may run fewer)
  std::int64_t dispatches = 0;  ///< ceil(T / chunk)
};

/// Shared memory of the sequence kernel (bytes).
std::int64_t rnn_seq_shared_bytes(int phases);
/// Loop iterations of one invocation running `steps` steps with `units` units each of hidden
/// size H: loading and storing h (units each) and per step the step loop's trip plus, per phase,
/// the unit loop's and the GEMV's (units * (H + 1)).
std::uint64_t rnn_seq_loops(std::int64_t steps, std::int64_t units, std::int64_t H, int phases);
RnnSeqPlan plan_rnn_sequence(const RnnSeqProblem& p, const RnnSeqDevice& dev);

}  // namespace gltensor::detail
