// Pool buffers on memory that CUDA allocates: libcuda at run time, GL_EXT_memory_object_fd.
#include "runtime/cuda_memory.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>

#include "runtime/guard.hpp"
#include "runtime/settings.hpp"

namespace gltensor::detail {

namespace {

#ifndef GL_HANDLE_TYPE_OPAQUE_FD_EXT
#define GL_HANDLE_TYPE_OPAQUE_FD_EXT 0x9586
#endif
#ifndef GL_DEVICE_UUID_EXT
#define GL_DEVICE_UUID_EXT 0x9597
#endif

// cuda.h's CUmemAllocationProp (x86-64 layout), pinned device memory exportable as a POSIX fd.
struct CuAllocProp {
  int type = 1;           // CU_MEM_ALLOCATION_TYPE_PINNED
  int handle_types = 1;   // CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
  int location_type = 1;  // CU_MEM_LOCATION_TYPE_DEVICE
  int location_id = 0;
  void* win32 = nullptr;
  unsigned char compression = 0, rdma = 0;
  unsigned short usage = 0;
  unsigned char reserved[4] = {};
};

// The driver API entry points used, from libcuda.so.1 (null: not loaded).
struct Cuda {
  int (*init)(unsigned) = nullptr;
  int (*device_count)(int*) = nullptr;
  int (*device_get)(int*, int) = nullptr;
  int (*device_uuid)(unsigned char*, int) = nullptr;
  int (*retain)(void**, int) = nullptr;
  int (*release_ctx)(int) = nullptr;
  int (*push)(void*) = nullptr;
  int (*pop)(void**) = nullptr;
  int (*granularity)(std::size_t*, const CuAllocProp*, int) = nullptr;
  int (*create)(unsigned long long*, std::size_t, const CuAllocProp*, unsigned long long) = nullptr;
  int (*share)(void*, unsigned long long, int, unsigned long long) = nullptr;
  int (*release)(unsigned long long) = nullptr;
  int (*attribute)(int*, int, int) = nullptr;  // cuDeviceGetAttribute (optional)
  bool ok = false;
};

const Cuda& cuda() {
  static Cuda c;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    auto get = [&](auto& fn, const char* name, const char* v2 = nullptr) {
      void* p = v2 ? dlsym(lib, v2) : nullptr;
      if (!p) p = dlsym(lib, name);
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
      return p != nullptr;
    };
    c.ok = get(c.init, "cuInit") && get(c.device_count, "cuDeviceGetCount") && get(c.device_get, "cuDeviceGet") &&
           get(c.device_uuid, "cuDeviceGetUuid") && get(c.retain, "cuDevicePrimaryCtxRetain") &&
           get(c.release_ctx, "cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2") &&
           get(c.push, "cuCtxPushCurrent", "cuCtxPushCurrent_v2") &&
           get(c.pop, "cuCtxPopCurrent", "cuCtxPopCurrent_v2") && get(c.granularity, "cuMemGetAllocationGranularity") &&
           get(c.create, "cuMemCreate") && get(c.share, "cuMemExportToShareableHandle") &&
           get(c.release, "cuMemRelease") && c.init(0) == 0;
    if (c.ok) get(c.attribute, "cuDeviceGetAttribute");
  });
  return c;
}

// GL_EXT_memory_object(_fd)'s entry points.
struct MemoryObjects {
  void(GL_APIENTRYP create)(GLsizei, GLuint*) = nullptr;
  void(GL_APIENTRYP destroy)(GLsizei, const GLuint*) = nullptr;
  void(GL_APIENTRYP import_fd)(GLuint, GLuint64, GLenum, GLint) = nullptr;
  void(GL_APIENTRYP storage)(GLenum, GLsizeiptr, GLuint, GLuint64) = nullptr;
  void(GL_APIENTRYP uuid)(GLenum, GLuint, GLubyte*) = nullptr;
};

const MemoryObjects& memory_objects() {
  static const MemoryObjects m = [] {
    MemoryObjects r;
    r.create = reinterpret_cast<decltype(r.create)>(eglGetProcAddress("glCreateMemoryObjectsEXT"));
    r.destroy = reinterpret_cast<decltype(r.destroy)>(eglGetProcAddress("glDeleteMemoryObjectsEXT"));
    r.import_fd = reinterpret_cast<decltype(r.import_fd)>(eglGetProcAddress("glImportMemoryFdEXT"));
    r.storage = reinterpret_cast<decltype(r.storage)>(eglGetProcAddress("glBufferStorageMemEXT"));
    r.uuid = reinterpret_cast<decltype(r.uuid)>(eglGetProcAddress("glGetUnsignedBytei_vEXT"));
    return r;
  }();
  return m;
}

// The CUDA device that is the GL device: the same UUID (one CUDA device where GL tells none); -1
// where none is. Clears GL's error flags (not for an adopted context).
int matching_cuda_device(const Cuda& c) {
  int count = 0;
  if (c.device_count(&count) != 0 || count < 1) return -1;
  const MemoryObjects& m = memory_objects();
  GLubyte gl_uuid[16] = {};
  bool have_uuid = false;
  if (m.uuid) {
    while (glGetError() != GL_NO_ERROR) {
    }
    m.uuid(GL_DEVICE_UUID_EXT, 0, gl_uuid);
    have_uuid = glGetError() == GL_NO_ERROR;
  }
  for (int i = 0; i < count; ++i) {
    int d = 0;
    unsigned char u[16] = {};
    if (c.device_get(&d, i) != 0) continue;
    if (!have_uuid ? count == 1 : c.device_uuid(u, d) == 0 && std::memcmp(u, gl_uuid, 16) == 0) return d;
  }
  return -1;
}

}  // namespace

int cuda_multiprocessors(DeviceImpl& dev) {
  auto& known = dev.extension<CudaMultiprocessors>();
  if (known.count >= 0) return known.count;
  known.count = 0;
  const Capabilities& caps = dev.caps();
  if (dev.adopted() || dev.adapter().software || caps.vendor.find("NVIDIA") == std::string::npos ||
      !settings().cuda_memory)
    return 0;
  Enter guard(dev, "cuda_multiprocessors");  // the UUID's GL query below
  const Cuda& c = cuda();
  if (!c.ok || !c.attribute) return 0;
  const int d = matching_cuda_device(c);
  int v = 0;
  if (d >= 0 && c.attribute(&v, 16, d) == 0 && v > 0) known.count = v;  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
  return known.count;
}

bool CudaMemory::set_up(DeviceImpl& dev) {
  const Capabilities& caps = dev.caps();
  if (dev.adopted() || dev.adapter().software || caps.vendor.find("NVIDIA") == std::string::npos ||
      !caps.has_extension("GL_EXT_memory_object_fd"))
    return false;
  const MemoryObjects& m = memory_objects();
  if (!m.create || !m.destroy || !m.import_fd || !m.storage) return false;
  const Cuda& c = cuda();
  if (!c.ok) return false;
  cuda_device_ = matching_cuda_device(c);
  if (cuda_device_ < 0 || c.retain(&context_, cuda_device_) != 0) return false;
  return true;
}

bool CudaMemory::make(DeviceImpl& dev, GLuint buffer, std::size_t bytes) {
  if (!enabled_ || state_ < 0) return false;
  if (state_ == 0) {
    state_ = set_up(dev) ? 1 : -1;
    if (state_ < 0) return false;
  }
  const Cuda& c = cuda();
  const MemoryObjects& m = memory_objects();
  CuAllocProp prop;
  prop.location_id = cuda_device_;
  if (c.push(context_) != 0) return false;
  std::size_t gran = 0;
  unsigned long long handle = 0;
  int fd = -1;
  bool made = c.granularity(&gran, &prop, 0) == 0 && gran > 0;
  const std::size_t size = made ? (bytes + gran - 1) / gran * gran : 0;
  made = made && c.create(&handle, size, &prop, 0) == 0;
  const bool shared = made && c.share(&fd, handle, 1, 0) == 0;
  void* popped = nullptr;
  c.pop(&popped);
  if (!shared) {
    if (made) c.release(handle);
    return false;
  }
  while (glGetError() != GL_NO_ERROR) {
  }
  GLuint mem = 0;
  m.create(1, &mem);
  m.import_fd(mem, size, GL_HANDLE_TYPE_OPAQUE_FD_EXT, fd);  // GL owns the descriptor once imported
  GLenum err = glGetError();
  const bool imported = err == GL_NO_ERROR;
  if (imported) {
    m.storage(GL_SHADER_STORAGE_BUFFER, static_cast<GLsizeiptr>(bytes), mem, 0);
    err = glGetError();
  }
  const bool stored = imported && err == GL_NO_ERROR;
  // The allocation lives while GL's import refers to it (cuMemRelease frees it once every
  // reference, shareable ones included, is gone).
  c.release(handle);
  if (!stored) {
    if (!imported) close(fd);
    m.destroy(1, &mem);
    if (err != GL_OUT_OF_MEMORY) state_ = -1;  // GL refused CUDA's memory: the path stays off here
    return false;
  }
  objects_[buffer] = mem;
  return true;
}

void CudaMemory::forget(GLuint buffer) {
  auto it = objects_.find(buffer);
  if (it == objects_.end()) return;
  memory_objects().destroy(1, &it->second);
  objects_.erase(it);
}

void CudaMemory::free_gl() {
  for (auto& [buffer, mem] : objects_) memory_objects().destroy(1, &mem);  // buffers still alive go with the context
  objects_.clear();
  if (context_) cuda().release_ctx(cuda_device_);
  context_ = nullptr;
}

CudaMemory::~CudaMemory() {
  if (context_) cuda().release_ctx(cuda_device_);
}

}  // namespace gltensor::detail
