//===- CudaRuntime.h - the CUDA driver, loaded at run time ------*- C++ -*-===//
//
// tlm builds and links without CUDA: the driver (libcuda.so.1) is opened
// with dlopen the first time a GPU is asked for. This file is the one place
// that talks to it: device memory for the session, and the mgpu* functions
// the GPU pipeline's host code calls (module load, launch, streams, events,
// alloc/free, memcpy, memset), handed to the JIT by name.
//
// The mgpu* functions return nothing, as the generated code expects; the
// first driver error they meet is kept and returned by takeError().
//
//===----------------------------------------------------------------------===//
#ifndef TLM_RUNTIME_CUDARUNTIME_H
#define TLM_RUNTIME_CUDARUNTIME_H

#include "lib/support/Error.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tlm::runtime::cuda {

/// A reason the GPU target cannot be used here (no driver, no device, no
/// libdevice, a driver call that failed), as opposed to a compiler bug;
/// tlm-run maps it to exit 3.
inline Error unavailable(std::string message) {
  return Error(std::move(message), ErrorKind::Unavailable);
}

/// Opens `library` and resolves the driver entry points tlm uses, without
/// initialising a device. Fails with the loader's message when the library
/// or one of the entry points is missing. (For tests of the no-driver
/// path; everything else goes through available().)
Error probeLibrary(const std::string &library);

/// Opens libcuda.so.1 (once per process), initialises the driver and makes
/// device 0's primary context current. Fails with one line saying why: no
/// driver, an initialisation error, or no device.
Error available();

/// The device's name and compute capability, e.g. "NVIDIA H200 (sm_90)";
/// available() must have succeeded.
std::string deviceDescription();

/// Device 0's compute capability as major * 10 + minor (90 for sm_90), or 0
/// when available() failed.
int computeCapability();

/// Device memory, synchronous. available() must have succeeded.
Expected<void *> allocate(size_t bytes);
void release(void *device);
Error copyToDevice(void *device, const void *host, size_t bytes);
Error copyToHost(void *host, const void *device, size_t bytes);

/// Page-locked host memory, grown on demand: what the driver copies to and
/// from the device directly, without staging it through a buffer of its
/// own, and asynchronously.
class PinnedBuffer {
public:
  PinnedBuffer() = default;
  PinnedBuffer(const PinnedBuffer &) = delete;
  PinnedBuffer &operator=(const PinnedBuffer &) = delete;
  ~PinnedBuffer();
  /// At least `bytes` of it (its contents are lost when it grows).
  Expected<void *> reserve(size_t bytes);

private:
  void *data_ = nullptr;
  size_t size_ = 0;
};

/// A step's input: `host` copied into `staging`, then to `device` on the
/// compute stream, where the step's kernels run after it; no wait.
Error upload(void *device, const void *host, size_t bytes,
             PinnedBuffer &staging);
/// Waits for what a step queued on the compute stream: a step that fails
/// between its uploads and its download calls it, so that no copy still
/// reads a staging buffer the next step refills (or frees, growing it).
void finishStep();
/// A step's output: `device` copied into `staging` on the compute stream
/// (after the step's kernels), waited for, then into `host`.
Error download(void *host, const void *device, size_t bytes,
               PinnedBuffer &staging);

/// A step's kernels, copies and memsets recorded from the compute stream
/// and launched as one CUDA graph: the GPU then starts each kernel as the
/// last one ends instead of when the host gets to launching it (a decode
/// step of small.json is some 580 launches of a few microseconds each).
/// Each step is recorded afresh, since its sizes (the position) differ;
/// a recording with the kernels of the last one in the same order only
/// updates the executable graph's parameters, anything else instantiates
/// it again.
class StepGraph {
public:
  StepGraph() = default;
  StepGraph(const StepGraph &) = delete;
  StepGraph &operator=(const StepGraph &) = delete;
  ~StepGraph();
  /// Whether the driver has the graph entry points (CUDA 12 and later).
  static bool supported();
  /// Starts recording: until launch() or abandon(), what the host code
  /// queues on the compute stream is recorded, not run, and its waits
  /// return at once.
  Error begin();
  /// Ends the recording and launches the graph on the compute stream
  /// (download() waits for it, as for the kernels themselves).
  Error launch();
  /// Ends a recording whose step failed; nothing of it runs.
  void abandon();
  /// How many steps were launched as graphs, and how many of them needed
  /// a new executable graph.
  int64_t launches() const { return launches_; }
  int64_t instantiations() const { return instantiations_; }

private:
  void *exec_ = nullptr;
  int64_t launches_ = 0, instantiations_ = 0;
};

/// Owns device memory from allocate().
struct DeviceDeleter {
  void operator()(void *device) const { release(device); }
};
using DevicePtr = std::unique_ptr<void, DeviceDeleter>;

/// Gives the driver back the host code's buffers kept for reuse (see
/// mgpuMemAlloc): when a session ends, or memory runs out. True if there
/// were any.
bool releaseCachedBlocks();

/// The first error an mgpu* function met since the last call, if any.
Error takeError();

/// The mgpu* functions by symbol name, for the JIT to resolve the host
/// code's calls.
std::vector<std::pair<const char *, void *>> mgpuSymbols();

} // namespace tlm::runtime::cuda

#endif // TLM_RUNTIME_CUDARUNTIME_H
