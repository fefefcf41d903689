// Sizes a benchmark case to the device it runs on: the case keeps its name (the size asked for, which
// bench/compare.py matches against PyTorch's rows) and halves its leading size until its largest
// buffer fits the device's max SSBO block (llvmpipe: 128 MiB) and, on a software renderer, its work
// per iteration fits a budget that lets `--benchmark_min_time=0.01` run through on 2 CPU cores.
// A case run smaller says so in its label ("n 4096 of 8192: ...") and reports the size it ran as the
// counter "size".
#pragma once
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "bench_device.hpp"

namespace gltensor::bench {

// Work budgets per timed iteration on software renderers: llvmpipe on 2 idle cores runs a few
// GFLOP/s of matmul and 1-4 GB/s of streaming kernels, so a tenth of a second to a second each
// (on 2 cores shared with other builds, 0.05-0.4 GB/s were measured: up to 5 s).
constexpr double kSoftwareFlops = 1e9;
constexpr double kSoftwareBytes = 2.5e8;

/// The largest n = asked / 2^k (k >= 0, n >= 1) with `largest_buffer_bytes(n)` within the device's
/// max SSBO block and, on a software renderer, `work(n)` within `software_budget`; labels the case
/// where n < asked. `what` names the size ("n", "rows", "batch").
template <typename Bytes, typename Work>
std::int64_t fit_size(benchmark::State& st, const char* what, std::int64_t asked, Bytes largest_buffer_bytes, Work work,
                      double software_budget) {
  const std::int64_t max_block = dev().caps().max_ssbo_block_size;
  const bool software = dev().adapter().software;
  std::int64_t n = asked;
  bool block = false, budget = false;  // what made it halve
  while (n > 1) {
    const bool over_block = static_cast<std::int64_t>(largest_buffer_bytes(n)) > max_block;
    const bool over_budget = software && static_cast<double>(work(n)) > software_budget;
    if (!over_block && !over_budget) break;
    block |= over_block, budget |= over_budget;
    n /= 2;
  }
  if (n != asked)
    st.SetLabel(std::string(what) + " " + std::to_string(n) + " of " + std::to_string(asked) + ": " +
                (block ? "max SSBO block" : "") + (block && budget ? ", " : "") +
                (budget ? "software renderer's work budget" : ""));
  st.counters["size"] = static_cast<double>(n);
  return n;
}

}  // namespace gltensor::bench
