//===- HostTarget.cpp - what the CPU code is blocked for on this host -----===//

#include "lib/compiler/HostTarget.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

namespace tlm::runtime {

namespace {

mlir::tlm::CpuTarget vectorShape() {
  llvm::StringMap<bool, llvm::MallocAllocator> features =
      llvm::sys::getHostCPUFeatures();
  auto has = [&](llvm::StringRef f) { return features.lookup(f); };
  llvm::Triple host(llvm::sys::getProcessTriple());
  mlir::tlm::CpuTarget t;
  auto shape = [&](int64_t lanes, int64_t registers) {
    t.lanes = lanes;
    t.vectorRegisters = registers;
    return t;
  };
  t.avx512 = host.isX86() && has("avx512f");
  t.avx512bf16 = t.avx512 && has("avx512bf16");
  t.avx512vnni = t.avx512 && has("avx512vnni");
  if (host.isX86()) {
    if (has("avx512f"))
      return shape(16, 32);
    if (has("avx"))
      return shape(8, 16);
    return shape(4, 16);
  }
  if (host.isAArch64())
    return shape(4, 32);
  return shape(4, 16);
}

} // namespace

mlir::tlm::CpuTarget cpuTargetFor(const std::vector<std::string> &features) {
  mlir::tlm::CpuTarget t = hostCpuTarget();
  auto has = [&](const char *f) {
    return std::find(features.begin(), features.end(), f) != features.end();
  };
  t.avx512 = has("avx512f");
  t.avx512bf16 = has("avx512f") && has("avx512bf16");
  t.avx512vnni = has("avx512f") && has("avx512vnni");
  t.lanes = has("avx512f") ? 16 : has("avx") ? 8 : 4;
  t.vectorRegisters = has("avx512f") ? 32 : 16;
  return t;
}

uint64_t lastLevelCacheIn(const std::string &cacheDir) {
  uint64_t best = 0;
  int bestLevel = 0;
  for (int index = 0; index < 8; ++index) {
    std::string dir = cacheDir + "/index" + std::to_string(index);
    std::ifstream levelFile(dir + "/level"), typeFile(dir + "/type"),
        sizeFile(dir + "/size");
    int level = 0;
    std::string type, size;
    if (!(levelFile >> level) || !(typeFile >> type) || !(sizeFile >> size))
      break;
    if (type == "Instruction" || level < bestLevel)
      continue;
    // "32768K"; Linux writes K, but M and a bare count are accepted too.
    char *end = nullptr;
    unsigned long long value = std::strtoull(size.c_str(), &end, 10);
    uint64_t scale = *end == 'K' ? 1024 : *end == 'M' ? 1024 * 1024 : 1;
    if (value == 0)
      continue;
    best = uint64_t(value) * scale;
    bestLevel = level;
  }
  return best;
}

mlir::tlm::CpuTarget hostCpuTarget() {
  mlir::tlm::CpuTarget t = vectorShape();
  // Linux's answer first: it gives the cache one core shares (one CCD's
  // 32 MiB L3 on an EPYC), where glibc's sysconf has reported the whole
  // socket's (384 MiB on the same machine), and what decides whether the
  // weights stay cached between steps is the former.
  if (uint64_t bytes = lastLevelCacheIn("/sys/devices/system/cpu/cpu0/cache")) {
    t.lastLevelCacheBytes = bytes;
    return t;
  }
#if defined(_SC_LEVEL3_CACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE)
  // glibc's names (from CPUID on x86); 0 or -1 where it does not know.
  for (int name : {_SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE}) {
    long bytes = sysconf(name);
    if (bytes > 0) {
      t.lastLevelCacheBytes = uint64_t(bytes);
      break;
    }
  }
#endif
  return t;
}

} // namespace tlm::runtime
