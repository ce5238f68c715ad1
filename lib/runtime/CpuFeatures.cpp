//===- CpuFeatures.cpp - the host's instruction sets, without LLVM --------===//

#include "lib/runtime/CpuFeatures.h"

#include <sched.h>

#include <cstdint>
#include <string>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace tlm::runtime {

int usableCores() {
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set);
  return 1;
}

#if defined(__x86_64__)
namespace {

enum Reg { EAX, EBX, ECX, EDX };

struct Bit {
  const char *name;
  unsigned leaf, subleaf;
  Reg reg;
  unsigned bit;
  /// The register state the OS must save for the feature to be usable
  /// (XCR0): 0 none, 1 AVX (bits 1-2), 2 AVX-512 (also 5-7), 3 APX's
  /// extended registers (bit 19), 4 AMX tiles (bits 17-18).
  int state;
};

// Intel SDM vol. 2A, CPUID (leaves 1, 7.0, 7.1, 0xD.1, 0x14, 0x19, 0x1E.1,
// 0x24); AMD APM vol. 3 for 0x80000001 and 0x80000008. Names are LLVM's.
constexpr Bit kBits[] = {
    {"x87", 1, 0, EDX, 0, 0},
    {"cx8", 1, 0, EDX, 8, 0},
    {"cmov", 1, 0, EDX, 15, 0},
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
    {"crc32", 1, 0, ECX, 20, 0},
    {"movbe", 1, 0, ECX, 22, 0},
    {"popcnt", 1, 0, ECX, 23, 0},
    {"aes", 1, 0, ECX, 25, 0},
    {"xsave", 1, 0, ECX, 26, 0},
    {"avx", 1, 0, ECX, 28, 1},
    {"f16c", 1, 0, ECX, 29, 1},
    {"rdrnd", 1, 0, ECX, 30, 0},
    {"fsgsbase", 7, 0, EBX, 0, 0},
    {"sgx", 7, 0, EBX, 2, 0},
    {"bmi", 7, 0, EBX, 3, 0},
    {"avx2", 7, 0, EBX, 5, 1},
    {"bmi2", 7, 0, EBX, 8, 0},
    {"invpcid", 7, 0, EBX, 10, 0},
    {"rtm", 7, 0, EBX, 11, 0},
    {"avx512f", 7, 0, EBX, 16, 2},
    {"evex512", 7, 0, EBX, 16, 2},
    {"avx512dq", 7, 0, EBX, 17, 2},
    {"rdseed", 7, 0, EBX, 18, 0},
    {"adx", 7, 0, EBX, 19, 0},
    {"avx512ifma", 7, 0, EBX, 21, 2},
    {"clflushopt", 7, 0, EBX, 23, 0},
    {"clwb", 7, 0, EBX, 24, 0},
    {"avx512cd", 7, 0, EBX, 28, 2},
    {"sha", 7, 0, EBX, 29, 0},
    {"avx512bw", 7, 0, EBX, 30, 2},
    {"avx512vl", 7, 0, EBX, 31, 2},
    {"avx512vbmi", 7, 0, ECX, 1, 2},
    {"pku", 7, 0, ECX, 3, 0},
    {"waitpkg", 7, 0, ECX, 5, 0},
    {"avx512vbmi2", 7, 0, ECX, 6, 2},
    {"shstk", 7, 0, ECX, 7, 0},
    {"gfni", 7, 0, ECX, 8, 0},
    {"vaes", 7, 0, ECX, 9, 1},
    {"vpclmulqdq", 7, 0, ECX, 10, 1},
    {"avx512vnni", 7, 0, ECX, 11, 2},
    {"avx512bitalg", 7, 0, ECX, 12, 2},
    {"avx512vpopcntdq", 7, 0, ECX, 14, 2},
    {"rdpid", 7, 0, ECX, 22, 0},
    {"kl", 7, 0, ECX, 23, 0},
    {"cldemote", 7, 0, ECX, 25, 0},
    {"movdiri", 7, 0, ECX, 27, 0},
    {"movdir64b", 7, 0, ECX, 28, 0},
    {"enqcmd", 7, 0, ECX, 29, 0},
    {"uintr", 7, 0, EDX, 5, 0},
    {"avx512vp2intersect", 7, 0, EDX, 8, 2},
    {"serialize", 7, 0, EDX, 14, 0},
    {"tsxldtrk", 7, 0, EDX, 16, 0},
    {"pconfig", 7, 0, EDX, 18, 0},
    {"amx-bf16", 7, 0, EDX, 22, 4},
    {"avx512fp16", 7, 0, EDX, 23, 2},
    {"amx-tile", 7, 0, EDX, 24, 4},
    {"amx-int8", 7, 0, EDX, 25, 4},
    {"sha512", 7, 1, EAX, 0, 1},
    {"sm3", 7, 1, EAX, 1, 1},
    {"sm4", 7, 1, EAX, 2, 1},
    {"raoint", 7, 1, EAX, 3, 0},
    {"avxvnni", 7, 1, EAX, 4, 1},
    {"avx512bf16", 7, 1, EAX, 5, 2},
    {"cmpccxadd", 7, 1, EAX, 7, 0},
    {"amx-fp16", 7, 1, EAX, 21, 4},
    {"hreset", 7, 1, EAX, 22, 0},
    {"avxifma", 7, 1, EAX, 23, 1},
    {"movrs", 7, 1, EAX, 31, 0},
    {"avxvnniint8", 7, 1, EDX, 4, 1},
    {"avxneconvert", 7, 1, EDX, 5, 1},
    {"amx-complex", 7, 1, EDX, 8, 4},
    {"avxvnniint16", 7, 1, EDX, 10, 1},
    {"prefetchi", 7, 1, EDX, 14, 0},
    {"usermsr", 7, 1, EDX, 15, 0},
    // APX: one CPUID bit for all of its parts.
    {"egpr", 7, 1, EDX, 21, 3},
    {"push2pop2", 7, 1, EDX, 21, 3},
    {"ppx", 7, 1, EDX, 21, 3},
    {"ndd", 7, 1, EDX, 21, 3},
    {"ccmp", 7, 1, EDX, 21, 3},
    {"nf", 7, 1, EDX, 21, 3},
    {"cf", 7, 1, EDX, 21, 3},
    {"zu", 7, 1, EDX, 21, 3},
    {"xsaveopt", 0xD, 1, EAX, 0, 0},
    {"xsavec", 0xD, 1, EAX, 1, 0},
    {"xsaves", 0xD, 1, EAX, 3, 0},
    {"ptwrite", 0x14, 0, EBX, 4, 0},
    {"widekl", 0x19, 0, EBX, 2, 0},
    {"amx-fp8", 0x1E, 1, EAX, 4, 4},
    {"amx-tf32", 0x1E, 1, EAX, 6, 4},
    {"amx-avx512", 0x1E, 1, EAX, 7, 4},
    {"amx-movrs", 0x1E, 1, EAX, 8, 4},
    {"sahf", 0x80000001, 0, ECX, 0, 0},
    {"lzcnt", 0x80000001, 0, ECX, 5, 0},
    {"sse4a", 0x80000001, 0, ECX, 6, 0},
    {"prfchw", 0x80000001, 0, ECX, 8, 0},
    {"xop", 0x80000001, 0, ECX, 11, 1},
    {"lwp", 0x80000001, 0, ECX, 15, 0},
    {"fma4", 0x80000001, 0, ECX, 16, 1},
    {"tbm", 0x80000001, 0, ECX, 21, 0},
    {"mwaitx", 0x80000001, 0, ECX, 29, 0},
    {"clzero", 0x80000008, 0, EBX, 0, 0},
    {"rdpru", 0x80000008, 0, EBX, 4, 0},
    {"wbnoinvd", 0x80000008, 0, EBX, 9, 0},
};

/// LLVM's x86 features that name no instructions a CPU may lack: tuning
/// (what is fast or slow where), code generation choices (retpolines,
/// hardening, ABIs), modes and instructions every x86-64 has. A feature in
/// neither this list nor kBits is refused, never assumed
/// (CpuFeaturesTest checks every LLVM feature is in one of them).
constexpr const char *kNotInstructionSets[] = {
    "16bit-mode", "32bit-mode", "64bit", "64bit-mode", "nopl", "soft-float",
    "x32", "sse-unaligned-mem", "vzeroupper", "ermsb", "fsrm",
    "allow-light-256-bit", "branch-hint", "branchfusion", "macrofusion",
    "idivl-to-divb", "idivq-to-divl", "lea-sp", "lea-uses-ag",
    "pad-short-functions", "sbb-dep-breaking", "inline-asm-use-gpr32",
    "use-glm-div-sqrt-costs", "use-slm-arith-costs", "tagged-globals",
    "retpoline", "retpoline-external-thunk", "retpoline-indirect-branches",
    "retpoline-indirect-calls", "lvi-cfi", "lvi-load-hardening", "seses",
    "harden-sls-ijmp", "harden-sls-ret", "no-bypass-delay",
    "no-bypass-delay-blend", "no-bypass-delay-mov", "no-bypass-delay-shuffle",
    "prefer-128-bit", "prefer-256-bit", "prefer-legacy-setcc",
    "prefer-mask-registers", "prefer-movmsk-over-vtest", "prefer-no-gather",
    "prefer-no-scatter", "tuning-fast-imm-vector-shift",
    "faster-shift-than-shuffle",
};

/// Prefixes of LLVM's tuning features (fast-7bytenop, slow-lea,
/// false-deps-popcnt, ...).
constexpr const char *kTuningPrefixes[] = {"fast-", "slow-", "false-deps-"};

bool cpuidBit(const Bit &b) {
  unsigned regs[4] = {0, 0, 0, 0};
  unsigned maxLeaf = __get_cpuid_max(b.leaf & 0x80000000u, nullptr);
  if (maxLeaf < b.leaf)
    return false;
  __cpuid_count(b.leaf, b.subleaf, regs[EAX], regs[EBX], regs[ECX], regs[EDX]);
  return regs[b.reg] >> b.bit & 1;
}

/// Whether the OS saves the register state the feature needs (XCR0).
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
  constexpr uint64_t kNeeds[] = {0, 0x6, 0xE6, uint64_t(1) << 19,
                                 uint64_t(3) << 17};
  uint64_t need = kNeeds[state];
  return (xcr0 & need) == need;
}

/// AVX10's version (CPUID 0x24: EBX bits 0-7; the leaf exists when
/// 7.1 EDX bit 19 says AVX10), 0 without it.
unsigned avx10Version() {
  if (!cpuidBit({"avx10", 7, 1, EDX, 19, 2}) || !osSaves(2) ||
      __get_cpuid_max(0, nullptr) < 0x24)
    return 0;
  unsigned a, b, c, d;
  __cpuid_count(0x24, 0, a, b, c, d);
  return b & 0xFF;
}

} // namespace

std::optional<bool> hostHasFeature(std::string_view name) {
  for (const Bit &b : kBits)
    if (name == b.name)
      return cpuidBit(b) && osSaves(b.state);
  // AVX10.N: a version, not a bit; "-512" the 512-bit forms, which every
  // AVX10 CPU to date has (AVX10/256 was dropped before any shipped).
  for (unsigned version : {1u, 2u})
    if (name == "avx10." + std::to_string(version) ||
        name == "avx10." + std::to_string(version) + "-512")
      return avx10Version() >= version;
  return std::nullopt;
}

FeatureKind featureKind(std::string_view name) {
  if (hostHasFeature(name).has_value())
    return FeatureKind::Instructions;
  for (const char *n : kNotInstructionSets)
    if (name == n)
      return FeatureKind::NotInstructions;
  for (const char *prefix : kTuningPrefixes)
    if (name.substr(0, std::string_view(prefix).size()) == prefix)
      return FeatureKind::NotInstructions;
  return FeatureKind::Unknown;
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

FeatureKind featureKind(std::string_view) { return FeatureKind::Unknown; }

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
