//===- HostTarget.h - the CPU this process runs on -------------*- C++ -*-===//
//
// Queries only: the decisions taken from the answers are in
// passes/cpu/Strategy.h.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_RUNTIME_HOSTTARGET_H
#define TLM_RUNTIME_HOSTTARGET_H

#include "passes/cpu/Strategy.h"

#include <string>
#include <vector>

namespace tlm::runtime {

/// This host's CPU: from its features, AVX-512 16 x 32 (lanes x registers),
/// AVX/AVX2 8 x 16, other x86 (SSE) 4 x 16, AArch64 (NEON) 4 x 32, anything
/// else 4 x 16; the last-level cache from the C library (32 MiB where it
/// does not say).
mlir::tlm::CpuTarget hostCpuTarget();

/// The blocking for an x86 CPU with `features` (LLVM's names, without
/// signs) as above, and this host's last-level cache (the other machine's
/// is not known here).
mlir::tlm::CpuTarget cpuTargetFor(const std::vector<std::string> &features);

} // namespace tlm::runtime

#endif // TLM_RUNTIME_HOSTTARGET_H
