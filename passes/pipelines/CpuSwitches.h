//===- CpuSwitches.h - the CPU switches as plain values --------*- C++ -*-===//
//
// CpuSwitches.def as a struct of bools and a table of names, for the JIT's
// options and tlm-run's --disable; no MLIR needed to use either.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_PIPELINES_CPUSWITCHES_H
#define TLM_PASSES_PIPELINES_CPUSWITCHES_H

#include "llvm/ADT/ArrayRef.h"

namespace mlir::tlm {

/// Every switchable optimization of tlm-cpu-pipeline, on by default.
struct CpuSwitches {
#define TLM_CPU_SWITCH(field, name, dflt, help) bool field = dflt;
#include "passes/pipelines/CpuSwitches.def"
};

struct CpuSwitchInfo {
  const char *name;
  const char *help;
  bool CpuSwitches::*field;
};

/// The switches in CpuSwitches.def's order.
inline llvm::ArrayRef<CpuSwitchInfo> cpuSwitches() {
  static const CpuSwitchInfo table[] = {
#define TLM_CPU_SWITCH(field, name, dflt, help)                                \
  {name, help, &CpuSwitches::field},
#include "passes/pipelines/CpuSwitches.def"
  };
  return table;
}

} // namespace mlir::tlm

#endif // TLM_PASSES_PIPELINES_CPUSWITCHES_H
