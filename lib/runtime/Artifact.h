//===- Artifact.h - compiled models as shared libraries --------*- C++ -*-===//
//
// An ahead-of-time artifact is the compiler's objects linked into a shared
// library, plus a manifest: a JSON string the library exports as
// `tlm_artifact_manifest`, recording the format version, the compiler, the
// target (triple, CPU, features; for cuda the GPU architecture), the thread
// count it was compiled for, the model's config and every entry's buffer
// shapes. Loading one checks the manifest against the host and the caller's
// model before any call. docs/artifacts.md.
//
// A cuda artifact's host code calls the mgpu* functions of CudaRuntime.h
// through pointer slots it exports (kCudaImportPrefix + name), which the
// loader fills with this runtime's functions; its kernels (a fatbin per
// kernel module: a cubin for the chip and PTX for the driver to compile on
// newer GPUs) are handed to the driver by kCudaLoadSymbol, which the loader
// calls once the slots are filled, rather than by constructors at dlopen.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_RUNTIME_ARTIFACT_H
#define TLM_RUNTIME_ARTIFACT_H

#include "lib/runtime/Program.h"

#include <memory>
#include <string>
#include <vector>

namespace tlm::runtime {

/// One entry of an artifact: its buffers' shapes (-1 for a dynamic size),
/// inputs first.
struct ArtifactEntry {
  std::string name;
  unsigned numInputs = 0;
  std::vector<std::vector<int64_t>> shapes;
};

struct ArtifactManifest {
  /// "cpu", or "cuda" for host code with GPU kernels.
  std::string target = "cpu";
  std::string compiler, triple, cpu, features;
  /// cuda: the GPU architecture of its cubins (e.g. "sm_90") and the mgpu*
  /// functions its host code calls.
  std::string chip;
  std::vector<std::string> imports;
  int threads = 1;
  /// Cpu: prefill's arithmetic (JitOptions::compute), "f32" or "bf16".
  std::string compute = "f32";
  /// The model's config as JSON text (model::configToJson).
  std::string model;
  std::vector<ArtifactEntry> entries;
};

/// The symbol an artifact's manifest is exported as.
inline constexpr const char *kArtifactManifestSymbol = "tlm_artifact_manifest";

/// A cuda artifact's slot for the mgpu* function `name` is the pointer
/// variable kCudaImportPrefix + name; kCudaLoadSymbol and kCudaUnloadSymbol
/// are `void()` functions that load and unload its kernel modules.
inline constexpr const char *kCudaImportPrefix = "tlm_cuda_import_";
inline constexpr const char *kCudaLoadSymbol = "tlm_cuda_load";
inline constexpr const char *kCudaUnloadSymbol = "tlm_cuda_unload";

/// `manifest` as the JSON text an artifact embeds.
std::string manifestToJson(const ArtifactManifest &manifest);

/// The manifest of the artifact at `path`, without running its code.
Expected<ArtifactManifest> readArtifactManifest(const std::string &path);

/// A loaded artifact, ready to call: the code runs on the threads it was
/// compiled for (libomp's count is set here).
class LoadedArtifact : public Program {
public:
  /// Loads `path` after checking its format and that this host can run its
  /// code (same architecture, every CPU feature it was compiled for that
  /// CpuFeatures.h can check; for cuda, a GPU of at least its chip), and
  /// for cuda hands its kernels to the driver.
  static Expected<std::unique_ptr<LoadedArtifact>>
  load(const std::string &path);
  ~LoadedArtifact() override;

  const ArtifactManifest &manifest() const { return manifest_; }
  const ArtifactManifest *artifactManifest() const override {
    return &manifest_;
  }
  Expected<void (*)(void **)> lookupPacked(std::string_view entry) const;
  /// A symbol of the artifact or of the libraries it depends on, or null.
  void *lookup(const char *symbol) const;

private:
  LoadedArtifact() = default;
  /// Fills the mgpu* slots and loads the kernels (cuda artifacts).
  Error loadKernels();
  void *handle_ = nullptr;
  /// The file dlopen loaded, open while the handle is (its name is
  /// /proc/self/fd/N: Artifact.cpp, loadName).
  int fd_ = -1;
  bool kernelsLoaded_ = false;
  std::string path_;
  ArtifactManifest manifest_;
};

} // namespace tlm::runtime

#endif // TLM_RUNTIME_ARTIFACT_H
