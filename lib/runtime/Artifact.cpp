//===- Artifact.cpp - compiled models as shared libraries -----------------===//

#include "lib/runtime/Artifact.h"

#include "lib/runtime/CpuFeatures.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <dlfcn.h>
#include <sys/stat.h>

namespace tlm::runtime {

namespace {

constexpr const char *kFormat = "tlm-artifact";
constexpr int kVersion = 1;

Error artifactError(const std::string &path, const std::string &why) {
  return makeError("artifact: " + path + ": " + why);
}

} // namespace

std::string manifestToJson(const ArtifactManifest &m) {
  nlohmann::json entries = nlohmann::json::array();
  for (const ArtifactEntry &e : m.entries)
    entries.push_back(
        {{"name", e.name}, {"inputs", e.numInputs}, {"shapes", e.shapes}});
  nlohmann::json j = {{"format", kFormat},      {"version", kVersion},
                      {"compiler", m.compiler}, {"target", "cpu"},
                      {"triple", m.triple},     {"cpu", m.cpu},
                      {"features", m.features}, {"threads", m.threads},
                      {"model", m.model},       {"entries", entries}};
  return j.dump();
}

namespace {

Expected<ArtifactManifest> fromJson(const std::string &path, const char *text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr,
                                           /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return artifactError(path, "its manifest is not JSON");
  if (j.value("format", "") != kFormat)
    return artifactError(path, "is not a tlm artifact");
  if (j.value("version", 0) != kVersion)
    return artifactError(
        path, "has format version " + std::to_string(j.value("version", 0)) +
                  ", this runtime reads version " + std::to_string(kVersion));
  ArtifactManifest m;
  auto str = [&](const char *key, std::string &out) {
    if (!j.contains(key) || !j[key].is_string())
      return false;
    out = j[key].get<std::string>();
    return true;
  };
  if (!str("compiler", m.compiler) || !str("triple", m.triple) ||
      !str("cpu", m.cpu) || !str("features", m.features) ||
      !str("model", m.model) || !j.contains("threads") ||
      !j["threads"].is_number_integer() || !j.contains("entries") ||
      !j["entries"].is_array())
    return artifactError(path, "its manifest lacks a field");
  m.threads = j["threads"].get<int>();
  for (const nlohmann::json &e : j["entries"]) {
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string() ||
        !e.contains("inputs") || !e["inputs"].is_number_unsigned() ||
        !e.contains("shapes") || !e["shapes"].is_array())
      return artifactError(path, "its manifest has a malformed entry");
    ArtifactEntry entry;
    entry.name = e["name"].get<std::string>();
    entry.numInputs = e["inputs"].get<unsigned>();
    for (const nlohmann::json &s : e["shapes"]) {
      if (!s.is_array())
        return artifactError(path, "its manifest has a malformed shape");
      std::vector<int64_t> shape;
      for (const nlohmann::json &d : s) {
        if (!d.is_number_integer())
          return artifactError(path, "its manifest has a malformed shape");
        shape.push_back(d.get<int64_t>());
      }
      entry.shapes.push_back(std::move(shape));
    }
    m.entries.push_back(std::move(entry));
  }
  return m;
}

/// dlopen's handle of `path` and its manifest, read without running any of
/// the artifact's code.
Expected<std::pair<void *, ArtifactManifest>>
openAndRead(const std::string &path, int mode) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return artifactError(path, "is not a regular file");
  // A name without a slash would be searched for on the library path.
  char absolute[PATH_MAX];
  if (!::realpath(path.c_str(), absolute))
    return artifactError(path, "cannot resolve its path");
  void *handle = ::dlopen(absolute, mode | RTLD_LOCAL);
  if (!handle)
    return artifactError(path, std::string("cannot load: ") + ::dlerror());
  const char *text =
      static_cast<const char *>(::dlsym(handle, kArtifactManifestSymbol));
  if (!text) {
    ::dlclose(handle);
    return artifactError(path, "is not a tlm artifact (no manifest)");
  }
  Expected<ArtifactManifest> manifest = fromJson(path, text);
  if (!manifest) {
    ::dlclose(handle);
    return manifest.takeError();
  }
  return std::make_pair(handle, std::move(*manifest));
}

} // namespace

Expected<ArtifactManifest> readArtifactManifest(const std::string &path) {
  auto opened = openAndRead(path, RTLD_LAZY);
  if (!opened)
    return opened.takeError();
  ::dlclose(opened->first);
  return std::move(opened->second);
}

Expected<std::unique_ptr<LoadedArtifact>>
LoadedArtifact::load(const std::string &path) {
  auto start = std::chrono::steady_clock::now();
  // Before the artifact brings in its libomp (it reads the setting at start).
  boundOpenMPSpin();
  auto opened = openAndRead(path, RTLD_NOW);
  if (!opened)
    return opened.takeError();
  std::unique_ptr<LoadedArtifact> artifact(new LoadedArtifact());
  artifact->handle_ = opened->first;
  artifact->path_ = path;
  artifact->manifest_ = std::move(opened->second);
  const ArtifactManifest &m = artifact->manifest_;
  // The architecture from the triple (the vendor and OS parts differ
  // between toolchains that make the same code), then every instruction set
  // the code was compiled with.
  std::string arch = m.triple.substr(0, m.triple.find('-'));
  if (arch != hostArchitecture())
    return artifactError(path, "was compiled for " + m.triple +
                                   ", this host is " + hostArchitecture());
  for (std::string_view rest = m.features; !rest.empty();) {
    auto [feature, tail] = split(rest, ',');
    rest = tail;
    if (!consumeFront(feature, "+"))
      continue;
    if (hostHasFeature(feature) == false)
      return artifactError(path, "needs the CPU feature '" +
                                     std::string(feature) + "' (compiled for " +
                                     m.cpu + "), which this host lacks");
  }
  for (const ArtifactEntry &entry : m.entries) {
    Entry sig;
    sig.numInputs = entry.numInputs;
    sig.shapes = entry.shapes;
    auto fn = artifact->lookupPacked(entry.name);
    if (!fn)
      return fn.takeError();
    sig.packed = *fn;
    artifact->entries_[entry.name] = std::move(sig);
  }
  if (m.threads > 1)
    if (Error err = setOpenMPThreads(artifact->lookup("omp_set_num_threads"),
                                     m.threads))
      return artifactError(path, err.message());
  artifact->stats_.codegenMs = std::chrono::duration<double, std::milli>(
                                   std::chrono::steady_clock::now() - start)
                                   .count();
  return artifact;
}

void *LoadedArtifact::lookup(const char *symbol) const {
  return ::dlsym(handle_, symbol);
}

LoadedArtifact::~LoadedArtifact() {
  if (handle_)
    ::dlclose(handle_);
}

Expected<void (*)(void **)>
LoadedArtifact::lookupPacked(std::string_view entry) const {
  void *fn = ::dlsym(handle_, ("_mlir_" + std::string(entry)).c_str());
  if (!fn)
    return artifactError(path_, "has no entry '" + std::string(entry) + "'");
  return reinterpret_cast<void (*)(void **)>(fn);
}

} // namespace tlm::runtime
