// Pool buffers on memory that CUDA allocates (NVIDIA's GL only; internal).
//
// NVIDIA's GL driver streams its own large buffers slower than CUDA streams its allocations: a
// 2^26-float add (three 256 MiB buffers) ran at 0.74 of PyTorch's rate, the same add on memory
// allocated by CUDA (cuMemCreate, 2 MiB granules) and imported into GL at CUDA's rate
// (bench/RESULTS.md, 2026-11-27, ew26). So on such a device the pool gives buffers of
// kCudaMemoryMin bytes and more storage on CUDA's memory: cuMemCreate, exported as an opaque file
// descriptor, imported by GL_EXT_memory_object_fd (glImportMemoryFdEXT, glBufferStorageMemEXT).
// libcuda is opened at run time (no link dependency); where anything is missing (another vendor,
// no GL_EXT_memory_object_fd, no libcuda.so.1, no CUDA device with the GL device's UUID, an
// adopted context) or a step fails, the pool makes its buffers itself.
#pragma once
#include <cstddef>
#include <unordered_map>

#include "runtime/device_impl.hpp"
#include "runtime/gl.hpp"

namespace gltensor::detail {

/// Buffers of at least this many bytes get CUDA's memory where the device can. Every pool size
/// class from 4 MiB up is a multiple of CUDA's 2 MiB granule (no memory lost to rounding); 768
/// MiB of 4 MiB buffers streamed at 0.71 of their rate on CUDA's memory when left on GL's.
inline constexpr std::size_t kCudaMemoryMin = std::size_t{4} << 20;

/// The GL device's multiprocessors as CUDA counts them (cuDeviceGetAttribute), read once per device;
/// 0 where unknown (another vendor, no libcuda.so.1, no CUDA device with the GL device's UUID, an
/// adopted context, GLTENSOR_CUDA_MEMORY=0: no CUDA in the process). GL does not report it: kernels whose workgroups
/// wait for each other need all of them running at once (glsl/nn/rnn_seq_regs.comp's GRID form).
int cuda_multiprocessors(DeviceImpl& dev);
struct CudaMultiprocessors : DeviceExtension {
  int count = -1;  ///< -1: not read yet
};

/// The device's CUDA-backed buffers: their GL memory objects, deleted with the buffers.
class CudaMemory : public DeviceExtension {
 public:
  /// Gives the new buffer `buffer` (bound to GL_SHADER_STORAGE_BUFFER, no storage yet) immutable
  /// storage of `bytes` on memory CUDA allocated; false (the buffer unchanged) where the device
  /// cannot or a step failed. A failed set-up, or GL refusing the import for another reason than
  /// GL_OUT_OF_MEMORY, turns the path off for the device.
  bool make(DeviceImpl& dev, GLuint buffer, std::size_t bytes);
  /// After glDeleteBuffers(buffer): deletes its memory object, if it has one.
  void forget(GLuint buffer);
  /// Off: make() returns false (the kernel lab's A/B; tests).
  void set_enabled(bool on) { enabled_ = on; }
  /// Buffers alive on CUDA's memory.
  std::size_t buffers() const { return objects_.size(); }
  void free_gl() override;
  /// Releases the CUDA context where free_gl() did not run (a Device destroyed where its context
  /// could not be made current: its GL objects go with that context).
  ~CudaMemory() override;

 private:
  bool set_up(DeviceImpl& dev);
  int state_ = 0;  // 0: not tried; 1: usable; -1: not on this device
  bool enabled_ = true;
  int cuda_device_ = -1;
  void* context_ = nullptr;                     // the CUDA device's primary context
  std::unordered_map<GLuint, GLuint> objects_;  // buffer -> memory object
};

}  // namespace gltensor::detail
