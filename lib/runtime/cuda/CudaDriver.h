//===- CudaDriver.h - the driver API as the runtime calls it ---*- C++ -*-===//
//
// Shared by CudaRuntime.cpp (the driver's loading, the runtime's own calls)
// and CudaMgpu.cpp (the mgpu* functions MLIR's host code calls): the few
// driver types and entry points tlm needs, declared by hand (they are part
// of CUDA's stable C ABI), and the process's one driver state. Internal to
// lib/runtime.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_RUNTIME_CUDADRIVER_H
#define TLM_RUNTIME_CUDADRIVER_H

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

namespace tlm::runtime::cuda::detail {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = void *;
using CUmodule = void *;
using CUfunction = void *;
using CUstream = void *;
using CUevent = void *;
using CUgraph = void *;
using CUgraphExec = void *;
constexpr CUresult kSuccess = 0;
constexpr CUresult kOutOfMemory = 2; // CUDA_ERROR_OUT_OF_MEMORY
constexpr int kAttrComputeMajor = 75, kAttrComputeMinor = 76;
constexpr int kAttrMemoryPoolsSupported = 115;
constexpr int kJitErrorLogBuffer = 5;     // CU_JIT_ERROR_LOG_BUFFER
constexpr int kJitErrorLogBufferSize = 6; // ..._LOG_BUFFER_SIZE_BYTES
constexpr int kJitOptimizationLevel = 7;  // CU_JIT_OPTIMIZATION_LEVEL
constexpr unsigned kMemAttachGlobal = 1;
constexpr unsigned kStreamNonBlocking = 1;
/// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES.
constexpr int kFuncMaxDynamicSharedBytes = 8;
/// Dynamic shared memory a kernel gets without asking (48 KiB).
constexpr int32_t kDefaultSharedBytes = 48 * 1024;
/// CU_STREAM_CAPTURE_MODE_RELAXED: the capturing thread may still call
/// cuMemAlloc (a block the step's host code allocates afresh).
constexpr int kCaptureRelaxed = 2;

/// What cuGraphExecUpdate_v2 says about an update
/// (CUgraphExecUpdateResultInfo).
struct GraphUpdateInfo {
  int result;
  void *errorNode, *errorFromNode;
};

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
  CUresult (*ctxSynchronize)();
  CUresult (*moduleLoadDataEx)(CUmodule *, const void *, unsigned, int *,
                               void **);
  CUresult (*moduleUnload)(CUmodule);
  CUresult (*moduleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*funcSetAttribute)(CUfunction, int, int);
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
  CUresult (*memcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
  CUresult (*memcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
  CUresult (*memAllocHost)(void **, size_t);
  CUresult (*memFreeHost)(void *);
  CUresult (*memsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream);
  CUresult (*memsetD16Async)(CUdeviceptr, unsigned short, size_t, CUstream);
  CUresult (*memHostRegister)(void *, size_t, unsigned);
  CUresult (*memHostUnregister)(void *);
  // Stream-ordered allocation (CUDA 11.2+); optional.
  CUresult (*memAllocAsync)(CUdeviceptr *, size_t, CUstream);
  CUresult (*memFreeAsync)(CUdeviceptr, CUstream);
  // CUDA graphs (12.0+); optional: without them a step cannot be
  // recorded (StepGraph).
  CUresult (*streamBeginCapture)(CUstream, int);
  CUresult (*streamEndCapture)(CUstream, CUgraph *);
  CUresult (*graphInstantiate)(CUgraphExec *, CUgraph, unsigned long long);
  CUresult (*graphExecUpdate)(CUgraphExec, CUgraph, GraphUpdateInfo *);
  CUresult (*graphLaunch)(CUgraphExec, CUstream);
  CUresult (*graphDestroy)(CUgraph);
  CUresult (*graphExecDestroy)(CUgraphExec);
  // Kernel timings (TLM_CUDA_PROFILE); optional.
  CUresult (*eventElapsedTime)(float *, CUevent, CUevent);
};

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
  /// The one stream every call's kernels run on (mgpuStreamCreate hands
  /// it out) and the per-step copies are queued on: ordered with the
  /// kernels without a synchronization. Created on first use (under
  /// `mutex`), read without it.
  std::atomic<CUstream> computeStream{nullptr};
  /// While a StepGraph records the compute stream: the host code's waits
  /// are skipped (nothing runs until the graph is launched, and a wait on
  /// a capturing stream is an error) and its allocations are not
  /// stream-ordered (they would become nodes of the graph).
  std::atomic<bool> capturing{false};
  /// The host code's buffers, kept when it frees them and handed out again
  /// for the same size class: a step allocates about the sizes the step
  /// before freed (292 pairs a small.json token; attention's grow with the
  /// position), so after the first steps few reach the driver. Safe without
  /// events: one call's allocations and frees are ordered on the compute
  /// stream, which the call synchronizes before it returns.
  std::mutex blocksMutex;
  std::unordered_map<CUdeviceptr, uint64_t> blockSizes; ///< ours, in use or not
  std::unordered_multimap<uint64_t, CUdeviceptr> freeBlocks;
};

/// The process's driver state (loaded on first use by current()).
State &state();
/// The compute stream (State::computeStream), created on first use; null
/// (with the sticky error set) when it cannot be.
CUstream computeStream();
/// The driver's text for `r`.
std::string describe(const Driver &d, CUresult r);
/// The driver with the context current on this thread, or null (with the
/// sticky error set) when there is none.
const Driver *current();
/// Records the first failure of an mgpu* call, with the driver's JIT log
/// when there is one.
void check(CUresult r, const char *what, const char *log = nullptr);
/// The message of a device allocation of `bytes` that failed with `r`.
std::string allocationFailure(size_t bytes, const char *what, CUresult r);
/// Loads a module image (cubin, fatbin or PTX) with the driver's error log
/// kept for the message, and `optLevel` for PTX it compiles (-1: its
/// default).
void *loadModule(const void *image, int optLevel, const char *what);
/// TLM_CUDA_PROFILE=FILE (CudaProfile.cpp): whether launches are timed;
/// the modules and kernels as they are loaded; a launch's start event (null
/// when none could be made) and end; the timings of the finished launches,
/// after the host waited for the stream.
bool profiling();
void profileModule(CUmodule module);
void profileFunction(CUfunction fn, CUmodule module, const char *name);
void *profileStart(const Driver &d, CUstream stream);
void profileEnd(const Driver &d, CUfunction fn, void *start, CUstream stream,
                const std::string &shape);
void profileCollect(const Driver &d);

inline CUdeviceptr dptr(const void *p) {
  return reinterpret_cast<CUdeviceptr>(p);
}

} // namespace tlm::runtime::cuda::detail

#endif // TLM_RUNTIME_CUDADRIVER_H
