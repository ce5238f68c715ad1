//===- CudaMgpu.cpp - the mgpu* functions of MLIR's host code -------------===//
//
// What `gpu-to-llvm`'s host code calls (signatures as LLVM 22 declares
// them), on the driver CudaRuntime.cpp opened; failures are recorded for
// takeError() rather than returned. The host code's device buffers are kept
// and reused (mgpuMemAlloc, mgpuMemFree).
//
//===----------------------------------------------------------------------===//

#include "lib/runtime/cuda/CudaDriver.h"
#include "lib/runtime/cuda/CudaRuntime.h"

#include <cstdint>

namespace tlm::runtime::cuda {

using namespace detail;

bool releaseCachedBlocks() {
  State &s = state();
  {
    std::lock_guard<std::mutex> lock(s.blocksMutex);
    if (s.freeBlocks.empty())
      return false;
  }
  // The context current on this thread (a session may end on another one
  // than it ran on), and no kernel still running that was handed a block
  // being given back: a block is kept as soon as the host code frees it,
  // which, stream-ordered, can be before its last reader has run.
  const Driver *d = current();
  if (d)
    d->ctxSynchronize();
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

//===----------------------------------------------------------------------===//
// The mgpu* ABI of MLIR's gpu-to-llvm lowering (signatures as the LLVM 22
// host code declares them).
//===----------------------------------------------------------------------===//

namespace {
extern "C" {

void *mgpuModuleLoad(void *data, size_t /*size*/) {
  void *module = loadModule(data, /*optLevel=*/-1, "loading a GPU module");
  if (module && profiling())
    profileModule(static_cast<CUmodule>(module));
  return module;
}

void *mgpuModuleLoadJIT(void *ptx, int optLevel) {
  void *module = loadModule(ptx, optLevel, "compiling a PTX module");
  if (module && profiling())
    profileModule(static_cast<CUmodule>(module));
  return module;
}

void mgpuModuleUnload(void *module) {
  if (const Driver *d = current(); d && module)
    check(d->moduleUnload(module), "unloading a GPU module");
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  CUfunction fn = nullptr;
  if (const Driver *d = current(); d && module)
    check(d->moduleGetFunction(&fn, module, name), "finding a kernel");
  if (fn && profiling())
    profileFunction(fn, static_cast<CUmodule>(module), name);
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
  // Past 48 KiB a kernel must opt in to its dynamic shared memory (up to
  // 227 KiB a block on sm_90); the driver refuses the launch otherwise.
  if (smem > kDefaultSharedBytes) {
    check(d->funcSetAttribute(fn, kFuncMaxDynamicSharedBytes, smem),
          "raising a kernel's dynamic shared memory");
    if (state().failed)
      return;
  }
  // TLM_CUDA_PROFILE: the launch between two events (not while a graph is
  // recorded, where nothing runs).
  bool timed = profiling() && !state().capturing;
  void *start = timed ? profileStart(*d, stream) : nullptr;
  check(
      d->launchKernel(fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra),
      "launching a kernel");
  // A launch that failed is no call of the kernel (its start event goes
  // unread and is simply recorded again later).
  if (timed && !state().failed)
    profileEnd(*d, static_cast<CUfunction>(fn), start, stream,
               "grid " + std::to_string(gx) + "x" + std::to_string(gy) + "x" +
                   std::to_string(gz) + " block " + std::to_string(bx) + "x" +
                   std::to_string(by) + "x" + std::to_string(bz) + " smem " +
                   std::to_string(smem));
}

// Every call's kernels go on the one compute stream, which the step's
// uploads and downloads (Session, through upload() and download()) are
// queued on too: the ids reach the device before the first kernel reads
// them without the host waiting for the copy.
void *mgpuStreamCreate() { return computeStream(); }

void mgpuStreamDestroy(void *stream) {
  if (stream == state().computeStream.load())
    return; // kept for the next call
  if (const Driver *d = current(); d && stream)
    check(d->streamDestroy(stream), "destroying a stream");
}

// While a step is recorded (StepGraph) nothing has run yet: the waits at
// the end of the host code are the graph's launch and the download's.
void mgpuStreamSynchronize(void *stream) {
  if (state().capturing)
    return;
  if (const Driver *d = current()) {
    check(d->streamSynchronize(stream), "running the GPU kernels");
    if (profiling())
      profileCollect(*d);
  }
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
  if (state().capturing)
    return;
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
  // Stream-ordered where the device has pools: no device-wide sync. Not
  // while a step is recorded: the graph would own the block and free it
  // at its end, where this cache keeps it.
  bool capturing = s.capturing;
  auto driverAlloc = [&] {
    return d->memAllocAsync && stream && !capturing
               ? d->memAllocAsync(&p, bytes, stream)
               : d->memAlloc(&p, bytes);
  };
  CUresult r = driverAlloc();
  // Blocks of other sizes may be what fills the memory: give them back
  // (after a wait on the device, which a recording cannot have).
  if (r == kOutOfMemory && !capturing && releaseCachedBlocks())
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
