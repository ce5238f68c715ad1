//===- ArtifactLink.h - link compiled code into an artifact -----*- C++ -*-===//
//
// The compiler's half of ahead-of-time artifacts (Artifact.h has the
// runtime's): the JIT's CPU objects and the manifest linked into a shared
// library with lld.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_RUNTIME_ARTIFACTLINK_H
#define TLM_RUNTIME_ARTIFACTLINK_H

#include "lib/runtime/Artifact.h"
#include "lib/compiler/CpuCodegen.h"

#include "llvm/Support/Error.h"

namespace tlm::runtime {

/// Readies the GPU pipeline's host code for a cuda artifact (Artifact.h):
/// each mgpu* function it declares becomes an internal function calling
/// through the exported slot kCudaImportPrefix + name, and the constructors
/// and destructors that load and unload its kernel modules are called from
/// kCudaLoadSymbol and kCudaUnloadSymbol instead of at dlopen and exit.
/// Returns the names of the mgpu* functions, for the manifest.
std::vector<std::string> detachCudaRuntime(llvm::Module &module);

/// Links `objects` into the shared library `path` (written whole or not at
/// all) with `manifest` embedded; `libraries` are what the code calls into:
/// archives (linked in) and shared libraries (recorded as dependencies).
llvm::Error linkArtifact(llvm::ArrayRef<Bytes> objects,
                         const ArtifactManifest &manifest,
                         const llvm::orc::JITTargetMachineBuilder &machine,
                         llvm::ArrayRef<std::string> libraries,
                         const std::string &path);

} // namespace tlm::runtime

#endif // TLM_RUNTIME_ARTIFACTLINK_H
