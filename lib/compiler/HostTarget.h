//===- HostTarget.h - the CPU this process runs on -------------*- C++ -*-===//
//
// Queries only: the decisions taken from the answers are in
// passes/cpu/Strategy.h.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_RUNTIME_HOSTTARGET_H
#define TLM_RUNTIME_HOSTTARGET_H

#include "passes/cpu/Strategy.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tlm::runtime {

/// This host's CPU: from its features, AVX-512 16 x 32 (lanes x registers),
/// AVX/AVX2 8 x 16, other x86 (SSE) 4 x 16, AArch64 (NEON) 4 x 32, anything
/// else 4 x 16; the last-level cache from Linux (lastLevelCacheIn of cpu0's
/// cache folder), else the C library, else 32 MiB.
mlir::tlm::CpuTarget hostCpuTarget();

/// The blocking for an x86 CPU with `features` (LLVM's names, without
/// signs) as above, and this host's last-level cache (the other machine's
/// is not known here).
mlir::tlm::CpuTarget cpuTargetFor(const std::vector<std::string> &features);

/// The size of the highest-level data or unified cache described in
/// `cacheDir` (Linux's /sys/devices/system/cpu/cpuN/cache: index0,
/// index1, ... each with level, type and size such as "32768K"), or 0.
uint64_t lastLevelCacheIn(const std::string &cacheDir);

} // namespace tlm::runtime

#endif // TLM_RUNTIME_HOSTTARGET_H
