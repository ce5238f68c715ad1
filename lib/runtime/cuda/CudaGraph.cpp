//===- CudaGraph.cpp - a step recorded and launched as a CUDA graph -------===//
//
// StepGraph (CudaRuntime.h). While a step is recorded, State::capturing
// tells the mgpu* functions (CudaMgpu.cpp) to skip the host code's waits
// and to allocate outside the stream.
//
//===----------------------------------------------------------------------===//

#include "lib/runtime/cuda/CudaDriver.h"
#include "lib/runtime/cuda/CudaRuntime.h"

namespace tlm::runtime::cuda {

using namespace detail;

namespace {

/// Ends the compute stream's recording: the graph, or null when the
/// recording failed (with the reason in `err`).
CUgraph endCapture(const Driver &d, CUstream stream, Error &err) {
  state().capturing = false;
  CUgraph graph = nullptr;
  if (CUresult r = d.streamEndCapture(stream, &graph); r != kSuccess) {
    err = unavailable("recording a step as a CUDA graph failed: " +
                      describe(d, r));
    if (graph)
      d.graphDestroy(graph);
    return nullptr;
  }
  return graph;
}

} // namespace

StepGraph::~StepGraph() {
  if (const Driver *d = exec_ ? current() : nullptr)
    d->graphExecDestroy(exec_);
}

bool StepGraph::supported() {
  if (available())
    return false;
  const Driver &d = state().driver;
  return d.streamBeginCapture && d.streamEndCapture && d.graphInstantiate &&
         d.graphExecUpdate && d.graphLaunch && d.graphDestroy &&
         d.graphExecDestroy;
}

Error StepGraph::begin() {
  if (!supported())
    return unavailable("this CUDA driver cannot record graphs "
                       "(cuStreamBeginCapture_v2 and cuGraph* need CUDA 12)");
  const Driver *d = current();
  CUstream stream = computeStream();
  if (!stream)
    return takeError();
  // Relaxed: a block the host code allocates for the first time comes
  // from cuMemAlloc, which the stricter modes forbid while recording.
  if (CUresult r = d->streamBeginCapture(stream, kCaptureRelaxed);
      r != kSuccess)
    return unavailable("recording a step as a CUDA graph failed: " +
                       describe(*d, r));
  state().capturing = true;
  return Error::success();
}

void StepGraph::abandon() {
  const Driver *d = current();
  CUstream stream = state().computeStream.load();
  if (!d || !stream || !state().capturing)
    return;
  Error ignored = Error::success();
  if (CUgraph graph = endCapture(*d, stream, ignored))
    d->graphDestroy(graph);
  (void)ignored;
}

Error StepGraph::launch() {
  const Driver *d = current();
  CUstream stream = state().computeStream.load();
  if (!d || !stream)
    return takeError();
  Error err = Error::success();
  CUgraph graph = endCapture(*d, stream, err);
  if (!graph)
    return err;
  // The same kernels in the same order as the last step: only their
  // grids, buffers and scalars change, which an update takes.
  GraphUpdateInfo info{};
  if (exec_ && d->graphExecUpdate(exec_, graph, &info) != kSuccess) {
    d->graphExecDestroy(exec_);
    exec_ = nullptr;
  }
  CUresult r = kSuccess;
  if (!exec_) {
    r = d->graphInstantiate(&exec_, graph, 0);
    if (r != kSuccess)
      exec_ = nullptr;
    else
      ++instantiations_;
  }
  d->graphDestroy(graph);
  if (r != kSuccess)
    return unavailable("instantiating a step's CUDA graph failed: " +
                       describe(*d, r));
  if (CUresult r = d->graphLaunch(exec_, stream); r != kSuccess)
    return unavailable("launching a step's CUDA graph failed: " +
                       describe(*d, r));
  ++launches_;
  return Error::success();
}

} // namespace tlm::runtime::cuda
