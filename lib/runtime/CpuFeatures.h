//===- CpuFeatures.h - the host's instruction sets, without LLVM -*- C++
//-*-===//
//
// An artifact records the LLVM target features its code was compiled with;
// before running it, the loader checks the host has each of them. LLVM's
// own query is not available to the runtime, so this one asks the CPU
// (cpuid and xgetbv on x86-64) for every instruction-set extension LLVM
// knows, by LLVM's names. LLVM's other features (tuning, code generation
// choices) name no instructions; a feature in neither list is unknown, and
// an artifact that needs one is refused rather than run into SIGILL.
// CpuFeaturesTest holds both lists to LLVM's own table of x86 features.
// On other architectures nothing is checked beyond the architecture itself.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_RUNTIME_CPUFEATURES_H
#define TLM_RUNTIME_CPUFEATURES_H

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tlm::runtime {

/// Whether this host has the LLVM target feature `name` (without its
/// sign), or nullopt when the table does not know it.
std::optional<bool> hostHasFeature(std::string_view name);

enum class FeatureKind {
  /// Instructions the host may lack: hostHasFeature() asks the CPU.
  Instructions,
  /// Tuning or a code generation choice: nothing for the host to have.
  NotInstructions,
  /// Neither: this runtime cannot tell whether the host can run it.
  Unknown,
};
FeatureKind featureKind(std::string_view name);

/// The names hostHasFeature() knows.
std::vector<std::string> checkableFeatures();

/// The cores this process may run on (its affinity mask), at least 1: the
/// bound of --threads and of an artifact's thread count.
int usableCores();

/// This process's architecture as the first component of an LLVM triple
/// ("x86_64", "aarch64", ...).
std::string hostArchitecture();

} // namespace tlm::runtime

#endif // TLM_RUNTIME_CPUFEATURES_H
