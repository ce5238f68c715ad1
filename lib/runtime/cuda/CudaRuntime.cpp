//===- CudaRuntime.cpp - the CUDA driver API over dlopen ------------------===//
//
// Nothing of CUDA is needed to build or link: the driver is opened at run
// time (CudaDriver.h declares what tlm calls of it). The `_v2` names are the
// ones current drivers export for the 64-bit memory API. The mgpu* functions
// of the host code are CudaMgpu.cpp's.
//
//===----------------------------------------------------------------------===//

#include "lib/runtime/cuda/CudaRuntime.h"
#include "lib/runtime/cuda/CudaDriver.h"

#include <cstdio>
#include <cstring>
#include <dlfcn.h>

namespace tlm::runtime::cuda {

namespace detail {

namespace {

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
  get(d.ctxSynchronize, "cuCtxSynchronize");
  get(d.moduleLoadDataEx, "cuModuleLoadDataEx");
  get(d.moduleUnload, "cuModuleUnload");
  get(d.moduleGetFunction, "cuModuleGetFunction");
  get(d.launchKernel, "cuLaunchKernel");
  get(d.funcSetAttribute, "cuFuncSetAttribute");
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
  get(d.memcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  get(d.memcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  get(d.memAllocHost, "cuMemAllocHost_v2");
  get(d.memFreeHost, "cuMemFreeHost");
  get(d.memsetD32Async, "cuMemsetD32Async");
  get(d.memsetD16Async, "cuMemsetD16Async");
  get(d.memHostRegister, "cuMemHostRegister_v2");
  get(d.memHostUnregister, "cuMemHostUnregister");
  get(d.memAllocAsync, "cuMemAllocAsync", /*required=*/false);
  get(d.memFreeAsync, "cuMemFreeAsync", /*required=*/false);
  get(d.streamBeginCapture, "cuStreamBeginCapture_v2", /*required=*/false);
  get(d.streamEndCapture, "cuStreamEndCapture", /*required=*/false);
  get(d.graphInstantiate, "cuGraphInstantiateWithFlags", /*required=*/false);
  get(d.graphExecUpdate, "cuGraphExecUpdate_v2", /*required=*/false);
  get(d.graphLaunch, "cuGraphLaunch", /*required=*/false);
  get(d.graphDestroy, "cuGraphDestroy", /*required=*/false);
  get(d.graphExecDestroy, "cuGraphExecDestroy", /*required=*/false);
  get(d.eventElapsedTime, "cuEventElapsedTime", /*required=*/false);
  if (!missing.empty()) {
    ::dlclose(handle);
    d = Driver();
    return library + " lacks the driver entry point " + missing;
  }
  return "";
}

} // namespace

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

CUstream computeStream() {
  const Driver *d = current();
  if (!d)
    return nullptr;
  State &s = state();
  if (CUstream stream = s.computeStream.load())
    return stream;
  CUresult r = kSuccess;
  CUstream stream = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    stream = s.computeStream.load();
    if (!stream) {
      r = d->streamCreate(&stream, kStreamNonBlocking);
      if (r == kSuccess)
        s.computeStream.store(stream);
      else
        stream = nullptr;
    }
  }
  check(r, "creating a stream");
  return stream;
}

/// Records the first failure of an mgpu* call, with the driver's JIT log
/// when there is one.
void check(CUresult r, const char *what, const char *log) {
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

} // namespace detail

using namespace detail;

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


Error copyToDevice(void *device, const void *host, size_t bytes) {
  const Driver *d = current();
  if (!d)
    return takeError();
  if (CUresult r = d->memcpyHtoD(dptr(device), host, bytes); r != kSuccess)
    return unavailable("copy to the GPU failed: " + describe(*d, r));
  // From pageable memory the driver may return before the transfer lands,
  // and the kernels run on a non-blocking stream that the legacy stream's
  // copy does not order: wait for it before any kernel reads the buffer.
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

PinnedBuffer::~PinnedBuffer() {
  if (const Driver *d = data_ ? current() : nullptr)
    d->memFreeHost(data_);
}

Expected<void *> PinnedBuffer::reserve(size_t bytes) {
  if (bytes <= size_)
    return data_;
  const Driver *d = current();
  if (!d)
    return takeError();
  if (data_)
    d->memFreeHost(data_);
  data_ = nullptr;
  size_ = 0;
  if (CUresult r = d->memAllocHost(&data_, bytes ? bytes : 1); r != kSuccess) {
    data_ = nullptr;
    std::string why = allocationFailure(bytes, "page-locked host memory", r) +
                      ": " + describe(*d, r);
    return r == kOutOfMemory ? Error::withExitCode(1, why) : unavailable(why);
  }
  size_ = bytes;
  return data_;
}

namespace {

/// What a step's copy needs: the driver, the compute stream and `bytes` of
/// page-locked staging.
struct StagedCopy {
  const Driver *driver;
  CUstream stream;
  void *pinned;
};
Expected<StagedCopy> stageCopy(size_t bytes, PinnedBuffer &staging) {
  Expected<void *> pinned = staging.reserve(bytes);
  if (!pinned)
    return pinned.takeError();
  const Driver *d = current();
  CUstream stream = d ? computeStream() : nullptr;
  if (!d || !stream)
    return takeError();
  return StagedCopy{d, stream, *pinned};
}

} // namespace

Error upload(void *device, const void *host, size_t bytes,
             PinnedBuffer &staging) {
  if (bytes == 0)
    return Error::success();
  Expected<StagedCopy> copy = stageCopy(bytes, staging);
  if (!copy)
    return copy.takeError();
  // The staging buffer is free: the last copy from it was ordered before
  // the last step's kernels, which the step waited for (finishStep() on a
  // step that failed).
  std::memcpy(copy->pinned, host, bytes);
  if (CUresult r = copy->driver->memcpyHtoDAsync(dptr(device), copy->pinned,
                                                 bytes, copy->stream);
      r != kSuccess)
    return unavailable("copy to the GPU failed: " + describe(*copy->driver, r));
  return Error::success();
}

void finishStep() {
  const Driver *d = current();
  CUstream stream = state().computeStream.load();
  if (d && stream)
    d->streamSynchronize(stream);
}

Error download(void *host, const void *device, size_t bytes,
               PinnedBuffer &staging) {
  if (bytes == 0)
    return Error::success();
  Expected<StagedCopy> copy = stageCopy(bytes, staging);
  if (!copy)
    return copy.takeError();
  const Driver *d = copy->driver;
  if (CUresult r = d->memcpyDtoHAsync(copy->pinned, dptr(device), bytes,
                                      copy->stream);
      r != kSuccess)
    return unavailable("copy from the GPU failed: " + describe(*d, r));
  if (CUresult r = d->streamSynchronize(copy->stream); r != kSuccess)
    return unavailable("copy from the GPU failed: " + describe(*d, r));
  std::memcpy(host, copy->pinned, bytes);
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

} // namespace tlm::runtime::cuda
