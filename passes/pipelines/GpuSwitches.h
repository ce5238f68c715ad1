//===- GpuSwitches.h - the GPU switches as plain values --------*- C++ -*-===//
//
// GpuSwitches.def as a struct of bools and a table of names, for the JIT's
// options and tlm-run's --disable with --target cuda; no MLIR needed to use
// either.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_PIPELINES_GPUSWITCHES_H
#define TLM_PASSES_PIPELINES_GPUSWITCHES_H

#include "llvm/ADT/ArrayRef.h"

namespace mlir::tlm {

/// Every switchable kernel form of tlm-gpu-pipeline, on by default.
struct GpuSwitches {
#define TLM_GPU_SWITCH(field, name, dflt, help) bool field = dflt;
#include "passes/pipelines/GpuSwitches.def"
};

struct GpuSwitchInfo {
  const char *name;
  const char *help;
  bool GpuSwitches::*field;
};

/// The switches in GpuSwitches.def's order.
inline llvm::ArrayRef<GpuSwitchInfo> gpuSwitches() {
  static const GpuSwitchInfo table[] = {
#define TLM_GPU_SWITCH(field, name, dflt, help)                                \
  {name, help, &GpuSwitches::field},
#include "passes/pipelines/GpuSwitches.def"
  };
  return table;
}

} // namespace mlir::tlm

#endif // TLM_PASSES_PIPELINES_GPUSWITCHES_H
