//===- CudaRuntime.cpp - the CUDA driver API over dlopen ------------------===//
//
// The few driver types and entry points tlm needs are declared here by hand
// (they are part of CUDA's stable C ABI), so nothing of CUDA is needed to
// build or link. The `_v2` names are the ones current drivers export for
// the 64-bit memory API.
//
//===----------------------------------------------------------------------===//

#include "lib/runtime/CudaRuntime.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <unordered_map>

namespace tlm::runtime::cuda {

namespace {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = void *;
using CUmodule = void *;
using CUfunction = void *;
using CUstream = void *;
using CUevent = void *;
constexpr CUresult kSuccess = 0;
constexpr CUresult kOutOfMemory = 2; // CUDA_ERROR_OUT_OF_MEMORY
constexpr int kAttrComputeMajor = 75, kAttrComputeMinor = 76;
constexpr int kAttrMemoryPoolsSupported = 115;
constexpr int kJitErrorLogBuffer = 5;     // CU_JIT_ERROR_LOG_BUFFER
constexpr int kJitErrorLogBufferSize = 6; // ..._LOG_BUFFER_SIZE_BYTES
constexpr int kJitOptimizationLevel = 7;  // CU_JIT_OPTIMIZATION_LEVEL
constexpr unsigned kMemAttachGlobal = 1;
constexpr unsigned kStreamNonBlocking = 1;

/// The driver's entry points; null until load() succeeds.
struct Driver {
  CUresult (*init)(unsigned);
  CUresult (*getErrorString)(CUresult, const char **);
  CUresult (*deviceGetCount)(int *);
  CUresult (*deviceGet)(CUdevice *, int);
  CUresult (*deviceGetName)(char *, int, CUdevice);
  CUresult (*deviceGetAttribute)(int *, int, CUdevice);
  CUresult (*primaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*ctxSetCurrent)(CUcontext);
  CUresult (*moduleLoadDataEx)(CUmodule *, const void *, unsigned, int *,
                               void **);
  CUresult (*moduleUnload)(CUmodule);
  CUresult (*moduleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*launchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                           unsigned, unsigned, unsigned, CUstream, void **,
                           void **);
  CUresult (*streamCreate)(CUstream *, unsigned);
  CUresult (*streamSynchronize)(CUstream);
  CUresult (*streamDestroy)(CUstream);
  CUresult (*streamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*eventCreate)(CUevent *, unsigned);
  CUresult (*eventDestroy)(CUevent);
  CUresult (*eventRecord)(CUevent, CUstream);
  CUresult (*eventSynchronize)(CUevent);
  CUresult (*memAlloc)(CUdeviceptr *, size_t);
  CUresult (*memAllocManaged)(CUdeviceptr *, size_t, unsigned);
  CUresult (*memFree)(CUdeviceptr);
  CUresult (*memcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*memcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*memcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*memsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream);
  CUresult (*memsetD16Async)(CUdeviceptr, unsigned short, size_t, CUstream);
  CUresult (*memHostRegister)(void *, size_t, unsigned);
  CUresult (*memHostUnregister)(void *);
  // Stream-ordered allocation (CUDA 11.2+); optional.
  CUresult (*memAllocAsync)(CUdeviceptr *, size_t, CUstream);
  CUresult (*memFreeAsync)(CUdeviceptr, CUstream);
};

/// Resolves every entry point of `library` into `d`; "" or why not.
std::string load(const std::string &library, Driver &d) {
  void *handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return std::string("no CUDA driver: ") + ::dlerror();
  std::string missing;
  auto get = [&](auto &fn, const char *name, bool required = true) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
        ::dlsym(handle, name));
    if (!fn && required && missing.empty())
      missing = name;
  };
  get(d.init, "cuInit");
  get(d.getErrorString, "cuGetErrorString");
  get(d.deviceGetCount, "cuDeviceGetCount");
  get(d.deviceGet, "cuDeviceGet");
  get(d.deviceGetName, "cuDeviceGetName");
  get(d.deviceGetAttribute, "cuDeviceGetAttribute");
  get(d.primaryCtxRetain, "cuDevicePrimaryCtxRetain");
  get(d.ctxSetCurrent, "cuCtxSetCurrent");
  get(d.moduleLoadDataEx, "cuModuleLoadDataEx");
  get(d.moduleUnload, "cuModuleUnload");
  get(d.moduleGetFunction, "cuModuleGetFunction");
  get(d.launchKernel, "cuLaunchKernel");
  get(d.streamCreate, "cuStreamCreate");
  get(d.streamSynchronize, "cuStreamSynchronize");
  get(d.streamDestroy, "cuStreamDestroy_v2");
  get(d.streamWaitEvent, "cuStreamWaitEvent");
  get(d.eventCreate, "cuEventCreate");
  get(d.eventDestroy, "cuEventDestroy_v2");
  get(d.eventRecord, "cuEventRecord");
  get(d.eventSynchronize, "cuEventSynchronize");
  get(d.memAlloc, "cuMemAlloc_v2");
  get(d.memAllocManaged, "cuMemAllocManaged");
  get(d.memFree, "cuMemFree_v2");
  get(d.memcpyAsync, "cuMemcpyAsync");
  get(d.memcpyHtoD, "cuMemcpyHtoD_v2");
  get(d.memcpyDtoH, "cuMemcpyDtoH_v2");
  get(d.memsetD32Async, "cuMemsetD32Async");
  get(d.memsetD16Async, "cuMemsetD16Async");
  get(d.memHostRegister, "cuMemHostRegister_v2");
  get(d.memHostUnregister, "cuMemHostUnregister");
  get(d.memAllocAsync, "cuMemAllocAsync", /*required=*/false);
  get(d.memFreeAsync, "cuMemFreeAsync", /*required=*/false);
  if (!missing.empty()) {
    ::dlclose(handle);
    d = Driver();
    return library + " lacks the driver entry point " + missing;
  }
  return "";
}

struct State {
  Driver driver{};
  std::string error; // why the driver is not usable, or ""
  CUcontext context = nullptr;
  CUdevice device = 0;
  std::mutex mutex;
  std::string sticky; // the first error of an mgpu* call
  /// Its exit code: 3 (the target failed), or 1 when the GPU's memory ran
  /// out (the run is too large, as on the CPU).
  int stickyCode = 3;
  /// Set with `sticky`: later launches are skipped, since their buffers
  /// may be the null of a failed allocation.
  std::atomic<bool> failed{false};
  /// The host code's buffers, kept when it frees them and handed out again
  /// for the same size class: a step allocates about the sizes the step
  /// before freed (292 pairs a small.json token; attention's grow with the
  /// position), so after the first steps few reach the driver. Safe without
  /// events: one call's allocations and frees are ordered on its one
  /// stream, which it synchronizes before it returns.
  std::mutex blocksMutex;
  std::unordered_map<CUdeviceptr, uint64_t> blockSizes; ///< ours, in use or not
  std::unordered_multimap<uint64_t, CUdeviceptr> freeBlocks;
};

State &state() {
  static State s;
  return s;
}

std::string describe(const Driver &d, CUresult r) {
  const char *text = nullptr;
  if (d.getErrorString)
    d.getErrorString(r, &text);
  return text ? text : "CUDA error " + std::to_string(r);
}

State &initialised() {
  static std::once_flag once;
  std::call_once(once, [] {
    State &s = state();
    s.error = load("libcuda.so.1", s.driver);
    if (!s.error.empty())
      return;
    const Driver &d = s.driver;
    int count = 0;
    if (CUresult r = d.init(0); r != kSuccess)
      s.error = "the CUDA driver did not initialise: " + describe(d, r);
    else if (d.deviceGetCount(&count) != kSuccess || count == 0)
      s.error = "the CUDA driver found no GPU";
    else if (CUresult r = d.deviceGet(&s.device, 0); r != kSuccess)
      s.error = "cannot open GPU 0: " + describe(d, r);
    else if (CUresult r = d.primaryCtxRetain(&s.context, s.device);
             r != kSuccess)
      s.error = "cannot create a context on GPU 0: " + describe(d, r);
    // Stream-ordered allocation only where the device has memory pools
    // (some virtualized GPUs do not: cuMemAllocAsync then fails, and every
    // later kernel would get its null): else plain cuMemAlloc.
    int pools = 0;
    if (s.error.empty() && s.driver.memAllocAsync &&
        (d.deviceGetAttribute(&pools, kAttrMemoryPoolsSupported, s.device) !=
             kSuccess ||
         !pools)) {
      s.driver.memAllocAsync = nullptr;
      s.driver.memFreeAsync = nullptr;
    }
  });
  return state();
}

/// The driver with the context current on this thread, or null (with the
/// sticky error set) when there is none.
const Driver *current() {
  State &s = initialised();
  if (!s.error.empty()) {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.sticky.empty())
      s.sticky = s.error;
    return nullptr;
  }
  thread_local bool isCurrent = false;
  if (!isCurrent) {
    s.driver.ctxSetCurrent(s.context);
    isCurrent = true;
  }
  return &s.driver;
}

/// Records the first failure of an mgpu* call, with the driver's JIT log
/// when there is one.
void check(CUresult r, const char *what, const char *log = nullptr) {
  if (r == kSuccess)
    return;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.sticky.empty())
    return;
  s.sticky = std::string(what) + ": " + describe(s.driver, r);
  if (log && *log)
    s.sticky += " (the driver's log: " + std::string(log) + ")";
  s.stickyCode = r == kOutOfMemory ? 1 : 3;
  s.failed = true;
}

/// The message of a device allocation of `bytes` that failed with `r`.
std::string allocationFailure(size_t bytes, const char *what, CUresult r) {
  char size[64];
  if (bytes >= 1e9)
    std::snprintf(size, sizeof(size), "%.3f GB", double(bytes) / 1e9);
  else
    std::snprintf(size, sizeof(size), "%.3f MB", double(bytes) / 1e6);
  if (r == kOutOfMemory)
    return std::string("out of memory: the GPU could not allocate ") + size +
           " of " + what + " (its memory holds the weights, the KV cache "
           "and the activations; see docs/memory.md)";
  return std::string("allocating ") + size + " of " + what;
}

/// Loads a module image (cubin, fatbin or PTX) with the driver's error log
/// kept for the message, and `optLevel` for PTX it compiles (-1: its
/// default).
void *loadModule(const void *image, int optLevel, const char *what) {
  CUmodule module = nullptr;
  const Driver *d = current();
  if (!d)
    return nullptr;
  char log[4096] = {0};
  int options[3] = {kJitErrorLogBuffer, kJitErrorLogBufferSize,
                    kJitOptimizationLevel};
  void *values[3] = {log, reinterpret_cast<void *>(sizeof(log) - 1),
                     reinterpret_cast<void *>(static_cast<intptr_t>(optLevel))};
  check(d->moduleLoadDataEx(&module, image, optLevel < 0 ? 2 : 3, options,
                            values),
        what, log);
  return module;
}

CUdeviceptr dptr(const void *p) { return reinterpret_cast<CUdeviceptr>(p); }

} // namespace

Error probeLibrary(const std::string &library) {
  Driver d{};
  std::string error = load(library, d);
  if (!error.empty())
    return unavailable(error);
  return Error::success();
}

Error available() {
  State &s = initialised();
  if (!s.error.empty())
    return unavailable(s.error);
  return Error::success();
}

std::string deviceDescription() {
  State &s = initialised();
  if (!s.error.empty())
    return "no GPU";
  char name[256] = {0};
  int major = 0, minor = 0;
  s.driver.deviceGetName(name, sizeof(name) - 1, s.device);
  s.driver.deviceGetAttribute(&major, kAttrComputeMajor, s.device);
  s.driver.deviceGetAttribute(&minor, kAttrComputeMinor, s.device);
  return std::string(name) + " (sm_" + std::to_string(major) +
         std::to_string(minor) + ")";
}

int computeCapability() {
  State &s = initialised();
  if (!s.error.empty())
    return 0;
  int major = 0, minor = 0;
  s.driver.deviceGetAttribute(&major, kAttrComputeMajor, s.device);
  s.driver.deviceGetAttribute(&minor, kAttrComputeMinor, s.device);
  return major * 10 + minor;
}

Expected<void *> allocate(size_t bytes) {
  const Driver *d = current();
  if (!d)
    return takeError();
  CUdeviceptr p = 0;
  if (CUresult r = d->memAlloc(&p, bytes ? bytes : 1); r != kSuccess) {
    std::string why =
        allocationFailure(bytes, "GPU memory", r) + ": " + describe(*d, r);
    return r == kOutOfMemory ? Error::withExitCode(1, why) : unavailable(why);
  }
  return reinterpret_cast<void *>(p);
}

void release(void *device) {
  if (const Driver *d = current(); d && device)
    d->memFree(dptr(device));
}

bool releaseCachedBlocks() {
  State &s = state();
  const Driver *d = s.error.empty() ? &s.driver : nullptr;
  std::lock_guard<std::mutex> lock(s.blocksMutex);
  bool any = !s.freeBlocks.empty();
  for (auto [bytes, p] : s.freeBlocks) {
    if (d)
      d->memFree(p);
    s.blockSizes.erase(p);
  }
  s.freeBlocks.clear();
  return any;
}

Error copyToDevice(void *device, const void *host, size_t bytes) {
  const Driver *d = current();
  if (!d)
    return takeError();
  if (CUresult r = d->memcpyHtoD(dptr(device), host, bytes); r != kSuccess)
    return unavailable("copy to the GPU failed: " + describe(*d, r));
  // From pageable memory the driver may return before the transfer lands,
  // and the kernels run on a non-blocking stream that the legacy stream's
  // copy does not order: wait for it, so a step never reads the last
  // step's ids.
  if (CUresult r = d->streamSynchronize(nullptr); r != kSuccess)
    return unavailable("copy to the GPU failed: " + describe(*d, r));
  return Error::success();
}

Error copyToHost(void *host, const void *device, size_t bytes) {
  const Driver *d = current();
  if (!d)
    return takeError();
  if (CUresult r = d->memcpyDtoH(host, dptr(device), bytes); r != kSuccess)
    return unavailable("copy from the GPU failed: " + describe(*d, r));
  return Error::success();
}

Error takeError() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.sticky.empty())
    return Error::success();
  std::string message = std::move(s.sticky);
  int code = s.stickyCode;
  s.sticky.clear();
  s.stickyCode = 3;
  s.failed = false;
  return code == 1 ? Error::withExitCode(1, message) : unavailable(message);
}

//===----------------------------------------------------------------------===//
// The mgpu* ABI of MLIR's gpu-to-llvm lowering (signatures as the LLVM 22
// host code declares them).
//===----------------------------------------------------------------------===//

namespace {
extern "C" {

void *mgpuModuleLoad(void *data, size_t /*size*/) {
  return loadModule(data, /*optLevel=*/-1, "loading a GPU module");
}

void *mgpuModuleLoadJIT(void *ptx, int optLevel) {
  return loadModule(ptx, optLevel, "compiling a PTX module");
}

void mgpuModuleUnload(void *module) {
  if (const Driver *d = current(); d && module)
    check(d->moduleUnload(module), "unloading a GPU module");
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  CUfunction fn = nullptr;
  if (const Driver *d = current(); d && module)
    check(d->moduleGetFunction(&fn, module, name), "finding a kernel");
  return fn;
}

void mgpuLaunchKernel(void *fn, intptr_t gx, intptr_t gy, intptr_t gz,
                      intptr_t bx, intptr_t by, intptr_t bz, int32_t smem,
                      void *stream, void **params, void **extra,
                      size_t /*paramsCount*/) {
  const Driver *d = current();
  if (!d || !fn || state().failed)
    return;
  // An empty grid (a dimension of zero rows) launches nothing.
  if (gx == 0 || gy == 0 || gz == 0)
    return;
  check(
      d->launchKernel(fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra),
      "launching a kernel");
}

void *mgpuStreamCreate() {
  CUstream stream = nullptr;
  if (const Driver *d = current())
    check(d->streamCreate(&stream, kStreamNonBlocking), "creating a stream");
  return stream;
}

void mgpuStreamDestroy(void *stream) {
  if (const Driver *d = current(); d && stream)
    check(d->streamDestroy(stream), "destroying a stream");
}

void mgpuStreamSynchronize(void *stream) {
  if (const Driver *d = current())
    check(d->streamSynchronize(stream), "running the GPU kernels");
}

void mgpuStreamWaitEvent(void *stream, void *event) {
  if (const Driver *d = current())
    check(d->streamWaitEvent(stream, event, 0), "waiting for an event");
}

void *mgpuEventCreate() {
  CUevent event = nullptr;
  if (const Driver *d = current())
    check(d->eventCreate(&event, /*CU_EVENT_DISABLE_TIMING=*/2),
          "creating an event");
  return event;
}

void mgpuEventDestroy(void *event) {
  if (const Driver *d = current(); d && event)
    check(d->eventDestroy(event), "destroying an event");
}

void mgpuEventSynchronize(void *event) {
  if (const Driver *d = current())
    check(d->eventSynchronize(event), "waiting for an event");
}

void mgpuEventRecord(void *event, void *stream) {
  if (const Driver *d = current())
    check(d->eventRecord(event, stream), "recording an event");
}

void *mgpuMemAlloc(uint64_t bytes, void *stream, bool hostShared) {
  const Driver *d = current();
  if (!d || bytes == 0)
    return nullptr;
  CUdeviceptr p = 0;
  if (hostShared) {
    if (CUresult r = d->memAllocManaged(&p, bytes, kMemAttachGlobal);
        r != kSuccess) {
      check(r, allocationFailure(bytes, "shared memory", r).c_str());
      return nullptr;
    }
    return reinterpret_cast<void *>(p);
  }
  // Sixteen size classes per power of two (at most 1/16 more than asked),
  // 256 bytes the least, so a buffer that grows with the position is
  // reused for many steps.
  uint64_t step = 256;
  while (step * 16 <= bytes)
    step *= 2;
  bytes = (bytes + step - 1) / step * step;
  State &s = state();
  {
    std::lock_guard<std::mutex> lock(s.blocksMutex);
    if (auto it = s.freeBlocks.find(bytes); it != s.freeBlocks.end()) {
      p = it->second;
      s.freeBlocks.erase(it);
      return reinterpret_cast<void *>(p);
    }
  }
  // Stream-ordered where the device has pools: no device-wide sync.
  auto driverAlloc = [&] {
    return d->memAllocAsync && stream ? d->memAllocAsync(&p, bytes, stream)
                                      : d->memAlloc(&p, bytes);
  };
  CUresult r = driverAlloc();
  // Blocks of other sizes may be what fills the memory: give them back.
  if (r == kOutOfMemory && releaseCachedBlocks())
    r = driverAlloc();
  if (r != kSuccess) {
    check(r, allocationFailure(bytes, "GPU memory", r).c_str());
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(s.blocksMutex);
  s.blockSizes[p] = bytes;
  return reinterpret_cast<void *>(p);
}

void mgpuMemFree(void *ptr, void *stream) {
  const Driver *d = current();
  if (!d || !ptr)
    return;
  State &s = state();
  {
    std::lock_guard<std::mutex> lock(s.blocksMutex);
    if (auto it = s.blockSizes.find(dptr(ptr)); it != s.blockSizes.end()) {
      s.freeBlocks.emplace(it->second, it->first);
      return;
    }
  }
  if (d->memFreeAsync && stream)
    check(d->memFreeAsync(dptr(ptr), stream), "freeing GPU memory");
  else
    check(d->memFree(dptr(ptr)), "freeing GPU memory");
}

void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream) {
  if (const Driver *d = current())
    check(d->memcpyAsync(dptr(dst), dptr(src), bytes, stream),
          "copying GPU memory");
}

void mgpuMemset32(void *dst, uint32_t value, size_t count, void *stream) {
  if (const Driver *d = current())
    check(d->memsetD32Async(dptr(dst), value, count, stream),
          "setting GPU memory");
}

void mgpuMemset16(void *dst, uint16_t value, size_t count, void *stream) {
  if (const Driver *d = current())
    check(d->memsetD16Async(dptr(dst), value, count, stream),
          "setting GPU memory");
}

void mgpuMemHostRegister(void *ptr, uint64_t bytes) {
  if (const Driver *d = current())
    check(d->memHostRegister(ptr, bytes, 0), "registering host memory");
}

void mgpuMemHostUnregister(void *ptr) {
  if (const Driver *d = current())
    check(d->memHostUnregister(ptr), "unregistering host memory");
}

/// A ranked memref descriptor: allocated and aligned pointers, offset, then
/// `rank` sizes and `rank` strides, all 64-bit.
struct Descriptor {
  void *allocated;
  void *aligned;
  int64_t offset;
};

char *firstElement(Descriptor *desc, int64_t elementBytes) {
  return static_cast<char *>(desc->aligned) + desc->offset * elementBytes;
}

/// Registers the elements a memref of `rank` describes (row-major, dense).
void mgpuMemHostRegisterMemRef(int64_t rank, Descriptor *desc,
                               int64_t elementBytes) {
  const int64_t *sizes = reinterpret_cast<const int64_t *>(desc + 1);
  int64_t count = 1;
  for (int64_t i = 0; i < rank; ++i)
    count *= sizes[i];
  mgpuMemHostRegister(firstElement(desc, elementBytes), count * elementBytes);
}

void mgpuMemHostUnregisterMemRef(int64_t /*rank*/, Descriptor *desc,
                                 int64_t elementBytes) {
  mgpuMemHostUnregister(firstElement(desc, elementBytes));
}

void mgpuSetDefaultDevice(int32_t device) {
  // tlm uses GPU 0 only; asking for another is an error to report.
  if (device != 0)
    check(/*CUDA_ERROR_INVALID_DEVICE=*/101, "selecting a GPU other than 0");
}

} // extern "C"
} // namespace

std::vector<std::pair<const char *, void *>> mgpuSymbols() {
  auto fn = [](auto *f) { return reinterpret_cast<void *>(f); };
  return {
      {"mgpuModuleLoad", fn(mgpuModuleLoad)},
      {"mgpuModuleLoadJIT", fn(mgpuModuleLoadJIT)},
      {"mgpuModuleUnload", fn(mgpuModuleUnload)},
      {"mgpuModuleGetFunction", fn(mgpuModuleGetFunction)},
      {"mgpuLaunchKernel", fn(mgpuLaunchKernel)},
      {"mgpuStreamCreate", fn(mgpuStreamCreate)},
      {"mgpuStreamDestroy", fn(mgpuStreamDestroy)},
      {"mgpuStreamSynchronize", fn(mgpuStreamSynchronize)},
      {"mgpuStreamWaitEvent", fn(mgpuStreamWaitEvent)},
      {"mgpuEventCreate", fn(mgpuEventCreate)},
      {"mgpuEventDestroy", fn(mgpuEventDestroy)},
      {"mgpuEventSynchronize", fn(mgpuEventSynchronize)},
      {"mgpuEventRecord", fn(mgpuEventRecord)},
      {"mgpuMemAlloc", fn(mgpuMemAlloc)},
      {"mgpuMemFree", fn(mgpuMemFree)},
      {"mgpuMemcpy", fn(mgpuMemcpy)},
      {"mgpuMemset32", fn(mgpuMemset32)},
      {"mgpuMemset16", fn(mgpuMemset16)},
      {"mgpuMemHostRegister", fn(mgpuMemHostRegister)},
      {"mgpuMemHostUnregister", fn(mgpuMemHostUnregister)},
      {"mgpuMemHostRegisterMemRef", fn(mgpuMemHostRegisterMemRef)},
      {"mgpuMemHostUnregisterMemRef", fn(mgpuMemHostUnregisterMemRef)},
      {"mgpuSetDefaultDevice", fn(mgpuSetDefaultDevice)},
  };
}

} // namespace tlm::runtime::cuda
