//===- Artifact.h - compiled models as shared libraries --------*- C++ -*-===//
//
// An ahead-of-time artifact is the JIT's CPU objects linked into a shared
// library, plus a manifest: a JSON string the library exports as
// `tlm_artifact_manifest`, recording the format version, the compiler, the
// target (triple, CPU, features), the thread count it was compiled for, the
// model's config and every entry's buffer shapes. Loading one checks the
// manifest against the host and the caller's model before any call.
// docs/artifacts.md.
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
  std::string compiler, triple, cpu, features;
  int threads = 1;
  /// The model's config as JSON text (model::configToJson).
  std::string model;
  std::vector<ArtifactEntry> entries;
};

/// The symbol an artifact's manifest is exported as.
inline constexpr const char *kArtifactManifestSymbol = "tlm_artifact_manifest";

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
  /// CpuFeatures.h can check).
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
  void *handle_ = nullptr;
  std::string path_;
  ArtifactManifest manifest_;
};

} // namespace tlm::runtime

#endif // TLM_RUNTIME_ARTIFACT_H
