// Large host copies split over helper threads (internal): a read-back's memcpy out of the mapped
// read buffer runs at one core's memory bandwidth, the largest part of a large read's time on the
// H200 (a 904 KB output: the GPU's copy ~29 us, then the memcpy out of the freshly written
// mapping ~63-80 us; gltensor_transfer_lab, bench/RESULTS.md 2026-11-28); and an upload's
// memcpy into the mapped upload ring (host_staging.cpp).
#pragma once
#include <cstddef>

namespace gltensor::detail {

/// Reads of at least this many bytes prime the helpers and copy through parallel_copy
/// (read_to_host); a copy below kParallelPieceMin stays on the calling thread.
constexpr std::size_t kParallelCopyMin = std::size_t{256} << 10;
constexpr std::size_t kParallelPieceMin = std::size_t{64} << 10;

/// Wakes the helpers (made on first use: up to 3, one fewer than the hardware's threads, none on
/// one core) ahead of a parallel_copy, so that their wake-up overlaps the caller's wait for the
/// GPU; they then poll for work for about 100 us before they sleep again (as after each copy).
/// Below 8 hardware threads no polling (on a 2-core machine it slowed llvmpipe's kernels: its work
/// runs on the same cores): this is a no-op and the helpers wake at the copy itself.
void prime_copy_helpers();

/// memcpy(dst, src, n), split into equal parts on 64-byte boundaries over the helpers and the
/// calling thread where n >= kParallelPieceMin and no other thread's parallel_copy is running;
/// returns when every part is done. `stream`: each part by stream_copy.
void parallel_copy(void* dst, const void* src, std::size_t n, bool stream = false);

/// memcpy(dst, src, n) with non-temporal (streaming) stores where the CPU has them (x86-64: SSE2's
/// movntdq, then sfence, so the bytes are visible to other threads and to the device's reads of
/// a coherent mapping once it returns; elsewhere memcpy): for host memory that a device reads next
/// (the upload ring), which the stores then neither read first nor leave in the caches.
void stream_copy(void* dst, const void* src, std::size_t n);

}  // namespace gltensor::detail
