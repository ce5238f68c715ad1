//===- CpuFeatures.cpp - the host's instruction sets, without LLVM --------===//

#include "lib/runtime/CpuFeatures.h"

#include <cstdint>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace tlm::runtime {

#if defined(__x86_64__)
namespace {

enum Reg { EAX, EBX, ECX, EDX };

struct Bit {
  const char *name;
  unsigned leaf, subleaf;
  Reg reg;
  unsigned bit;
  /// The register state the OS must save for the feature to be usable:
  /// 0 none, 1 AVX (XCR0 bits 1-2), 2 AVX-512 (also bits 5-7).
  int state;
};

// Intel SDM vol. 2A, CPUID; AMD APM vol. 3 for the 0x80000001 leaf.
constexpr Bit kBits[] = {
    {"cmov", 1, 0, EDX, 15, 0},
    {"cx8", 1, 0, EDX, 8, 0},
    {"mmx", 1, 0, EDX, 23, 0},
    {"fxsr", 1, 0, EDX, 24, 0},
    {"sse", 1, 0, EDX, 25, 0},
    {"sse2", 1, 0, EDX, 26, 0},
    {"sse3", 1, 0, ECX, 0, 0},
    {"pclmul", 1, 0, ECX, 1, 0},
    {"ssse3", 1, 0, ECX, 9, 0},
    {"fma", 1, 0, ECX, 12, 1},
    {"cx16", 1, 0, ECX, 13, 0},
    {"sse4.1", 1, 0, ECX, 19, 0},
    {"sse4.2", 1, 0, ECX, 20, 0},
    {"movbe", 1, 0, ECX, 22, 0},
    {"popcnt", 1, 0, ECX, 23, 0},
    {"aes", 1, 0, ECX, 25, 0},
    {"xsave", 1, 0, ECX, 26, 0},
    {"avx", 1, 0, ECX, 28, 1},
    {"f16c", 1, 0, ECX, 29, 1},
    {"rdrnd", 1, 0, ECX, 30, 0},
    {"fsgsbase", 7, 0, EBX, 0, 0},
    {"bmi", 7, 0, EBX, 3, 0},
    {"avx2", 7, 0, EBX, 5, 1},
    {"bmi2", 7, 0, EBX, 8, 0},
    {"avx512f", 7, 0, EBX, 16, 2},
    {"avx512dq", 7, 0, EBX, 17, 2},
    {"rdseed", 7, 0, EBX, 18, 0},
    {"adx", 7, 0, EBX, 19, 0},
    {"avx512ifma", 7, 0, EBX, 21, 2},
    {"avx512cd", 7, 0, EBX, 28, 2},
    {"sha", 7, 0, EBX, 29, 0},
    {"avx512bw", 7, 0, EBX, 30, 2},
    {"avx512vl", 7, 0, EBX, 31, 2},
    {"avx512vbmi", 7, 0, ECX, 1, 2},
    {"avx512vbmi2", 7, 0, ECX, 6, 2},
    {"gfni", 7, 0, ECX, 8, 0},
    {"vaes", 7, 0, ECX, 9, 1},
    {"vpclmulqdq", 7, 0, ECX, 10, 1},
    {"avx512vnni", 7, 0, ECX, 11, 2},
    {"avx512bitalg", 7, 0, ECX, 12, 2},
    {"avx512vpopcntdq", 7, 0, ECX, 14, 2},
    {"avx512fp16", 7, 0, EDX, 23, 2},
    {"avxvnni", 7, 1, EAX, 4, 1},
    {"avx512bf16", 7, 1, EAX, 5, 2},
    {"sahf", 0x80000001, 0, ECX, 0, 0},
    {"lzcnt", 0x80000001, 0, ECX, 5, 0},
    {"sse4a", 0x80000001, 0, ECX, 6, 0},
    {"prfchw", 0x80000001, 0, ECX, 8, 0},
};

bool cpuidBit(const Bit &b) {
  unsigned regs[4] = {0, 0, 0, 0};
  unsigned maxLeaf = __get_cpuid_max(b.leaf & 0x80000000u, nullptr);
  if (maxLeaf < b.leaf)
    return false;
  __cpuid_count(b.leaf, b.subleaf, regs[EAX], regs[EBX], regs[ECX], regs[EDX]);
  return regs[b.reg] >> b.bit & 1;
}

/// Whether the OS saves the vector state the feature needs (XCR0).
bool osSaves(int state) {
  if (state == 0)
    return true;
  unsigned a, b, c, d;
  __cpuid(1, a, b, c, d);
  if (!(c >> 27 & 1)) // OSXSAVE: xgetbv is usable
    return false;
  unsigned lo, hi;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  uint64_t xcr0 = static_cast<uint64_t>(hi) << 32 | lo;
  uint64_t need = state == 1 ? 0x6 : 0xE6;
  return (xcr0 & need) == need;
}

} // namespace

std::optional<bool> hostHasFeature(std::string_view name) {
  for (const Bit &b : kBits)
    if (name == b.name)
      return cpuidBit(b) && osSaves(b.state);
  return std::nullopt;
}

std::vector<std::string> checkableFeatures() {
  std::vector<std::string> names;
  for (const Bit &b : kBits)
    names.push_back(b.name);
  return names;
}

std::string hostArchitecture() { return "x86_64"; }

#else

std::optional<bool> hostHasFeature(std::string_view) { return std::nullopt; }

std::vector<std::string> checkableFeatures() { return {}; }

std::string hostArchitecture() {
#if defined(__aarch64__)
  return "aarch64";
#else
  return "unknown";
#endif
}

#endif

} // namespace tlm::runtime
