//===- Artifact.cpp - compiled models as shared libraries -----------------===//

#include "lib/runtime/Artifact.h"

#include "lib/runtime/CpuFeatures.h"
#include "lib/runtime/cuda/CudaRuntime.h"

#include "lib/support/Json.h"

#include <chrono>
#include <climits>
#include <cstdlib>
#include <dlfcn.h>
#include <map>
#include <sys/stat.h>

namespace tlm::runtime {

namespace {

constexpr const char *kFormat = "tlm-artifact";
/// 2: the step entries take each sequence's cached length after the ids.
constexpr int kVersion = 2;

Error artifactError(const std::string &path, const std::string &why) {
  return makeError("artifact: " + path + ": " + why);
}

} // namespace

std::string manifestToJson(const ArtifactManifest &m) {
  json::Value entries = json::Value::array();
  for (const ArtifactEntry &e : m.entries) {
    json::Value entry = json::Value::object();
    entry.set("name", e.name);
    entry.set("inputs", e.numInputs);
    json::Value shapes = json::Value::array();
    for (const std::vector<int64_t> &shape : e.shapes)
      shapes.push(shape);
    entry.set("shapes", std::move(shapes));
    entries.push(std::move(entry));
  }
  json::Value j = json::Value::object();
  j.set("format", kFormat);
  j.set("version", kVersion);
  j.set("compiler", m.compiler);
  j.set("target", m.target);
  j.set("triple", m.triple);
  j.set("cpu", m.cpu);
  j.set("features", m.features);
  j.set("threads", m.threads);
  j.set("model", m.model);
  j.set("entries", std::move(entries));
  if (m.target == "cuda") {
    j.set("chip", m.chip);
    json::Value imports = json::Value::array();
    for (const std::string &name : m.imports)
      imports.push(name);
    j.set("imports", std::move(imports));
  }
  return j.dump();
}

namespace {

Expected<ArtifactManifest> fromJson(const std::string &path, const char *text) {
  Expected<json::Value> parsed = json::Value::parse(text);
  if (!parsed || !parsed->isObject())
    return artifactError(path, "its manifest is not JSON");
  const json::Value &j = *parsed;
  auto str = [&](const char *key, std::string &out) {
    const json::Value *v = j.find(key);
    if (!v || !v->isString())
      return false;
    out = v->asString();
    return true;
  };
  std::string format;
  if (!str("format", format) || format != kFormat)
    return artifactError(path, "is not a tlm artifact");
  const json::Value *version = j.find("version");
  if (!version || !version->isInt64() || version->asInt() != kVersion)
    return artifactError(
        path, "has format version " +
                  (version ? version->dump() : std::string("(none)")) +
                  ", this runtime reads version " + std::to_string(kVersion));
  ArtifactManifest m;
  const json::Value *threads = j.find("threads");
  const json::Value *entries = j.find("entries");
  if (!str("compiler", m.compiler) || !str("triple", m.triple) ||
      !str("cpu", m.cpu) || !str("features", m.features) ||
      !str("model", m.model) || !threads || !threads->isUnsigned() ||
      threads->asUint() < 1 || threads->asUint() > 4096 || !entries ||
      !entries->isArray())
    return artifactError(path, "its manifest lacks a field");
  m.threads = static_cast<int>(threads->asUint());
  if (!str("target", m.target) || (m.target != "cpu" && m.target != "cuda"))
    return artifactError(path, "its manifest names no target (cpu or cuda)");
  if (m.target == "cuda") {
    const json::Value *imports = j.find("imports");
    if (!str("chip", m.chip) || !imports || !imports->isArray())
      return artifactError(path, "its manifest lacks a field");
    for (const json::Value &name : imports->elements()) {
      if (!name.isString())
        return artifactError(path, "its manifest has a malformed import");
      m.imports.push_back(name.asString());
    }
  }
  for (const json::Value &e : entries->elements()) {
    const json::Value *name = e.find("name");
    const json::Value *inputs = e.find("inputs");
    const json::Value *shapes = e.find("shapes");
    if (!e.isObject() || !name || !name->isString() || !inputs ||
        !inputs->isUnsigned() || !shapes || !shapes->isArray() ||
        inputs->asUint() > shapes->size())
      return artifactError(path, "its manifest has a malformed entry");
    ArtifactEntry entry;
    entry.name = name->asString();
    entry.numInputs = static_cast<unsigned>(inputs->asUint());
    for (const json::Value &s : shapes->elements()) {
      if (!s.isArray())
        return artifactError(path, "its manifest has a malformed shape");
      std::vector<int64_t> shape;
      for (const json::Value &d : s.elements()) {
        if (!d.isInt64() || d.asInt() < -1)
          return artifactError(path, "its manifest has a malformed shape");
        shape.push_back(d.asInt());
      }
      entry.shapes.push_back(std::move(shape));
    }
    m.entries.push_back(std::move(entry));
  }
  return m;
}

/// dlopen's handle of `path` and its manifest. dlopen runs the constructors
/// of the artifact's libraries: libomp, once loaded, stays (it is
/// NODELETE), so it is readied first even when only the manifest is read.
Expected<std::pair<void *, ArtifactManifest>>
openAndRead(const std::string &path, int mode) {
  prepareOpenMP();
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
    return mismatchError("artifact: " + path + ": was compiled for " +
                         m.triple + ", this host is " + hostArchitecture());
  for (std::string_view rest = m.features; !rest.empty();) {
    auto [feature, tail] = split(rest, ',');
    rest = tail;
    if (!consumeFront(feature, "+"))
      continue;
    if (hostHasFeature(feature) == false)
      return mismatchError("artifact: " + path + ": needs the CPU feature '" +
                           std::string(feature) + "' (compiled for " + m.cpu +
                           "), which this host lacks");
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
  if (m.target == "cuda") {
    if (Error err = artifact->loadKernels())
      return err;
  } else {
    // The artifact's own copy of lib/runtime/abi/Alloc.cpp (absent from
    // artifacts older than the counters: then nothing is counted).
    Program::HeapCounters heap;
    heap.peak = reinterpret_cast<uint64_t (*)()>(
        artifact->lookup("tlm_abi_heap_peak"));
    heap.resetPeak = reinterpret_cast<void (*)()>(
        artifact->lookup("tlm_abi_heap_reset_peak"));
    heap.setLimit = reinterpret_cast<void (*)(uint64_t)>(
        artifact->lookup("tlm_abi_heap_set_limit"));
    if (heap.peak && heap.resetPeak && heap.setLimit)
      artifact->heap_ = heap;
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

namespace {

/// 90 for "sm_90" (or "sm_90a"), or -1.
int chipNumber(const std::string &chip) {
  std::string_view rest = chip;
  if (!consumeFront(rest, "sm_") || rest.empty())
    return -1;
  int n = 0;
  size_t i = 0;
  for (; i < rest.size() && i < 4 && rest[i] >= '0' && rest[i] <= '9'; ++i)
    n = n * 10 + (rest[i] - '0');
  return i == 0 ? -1 : n;
}

} // namespace

Error LoadedArtifact::loadKernels() {
  const ArtifactManifest &m = manifest_;
  int chip = chipNumber(m.chip);
  if (chip < 0)
    return artifactError(path_, "its manifest names no GPU chip (found '" +
                                    m.chip + "')");
  if (Error err = cuda::available())
    return cuda::unavailable("artifact: " + path_ +
                             ": its kernels need a GPU: " + err.message());
  // A cubin runs on its own architecture; on a newer one the driver
  // compiles the PTX beside it; on an older one neither runs.
  int device = cuda::computeCapability();
  if (device < chip)
    return cuda::unavailable("artifact: " + path_ + ": was compiled for " +
                             m.chip + ", GPU 0 is " +
                             cuda::deviceDescription());
  std::map<std::string, void *, std::less<>> ours;
  for (auto [name, fn] : cuda::mgpuSymbols())
    ours[name] = fn;
  for (const std::string &name : m.imports) {
    auto it = ours.find(name);
    if (it == ours.end())
      return artifactError(path_, "calls the runtime function " + name +
                                      ", which this runtime lacks (compiled "
                                      "by " +
                                      m.compiler + ")");
    void **slot = static_cast<void **>(
        ::dlsym(handle_, (kCudaImportPrefix + name).c_str()));
    if (!slot)
      return artifactError(path_, "has no slot for " + name);
    *slot = it->second;
  }
  auto load = reinterpret_cast<void (*)()>(::dlsym(handle_, kCudaLoadSymbol));
  if (!load || !::dlsym(handle_, kCudaUnloadSymbol))
    return artifactError(path_, "has no kernel loader");
  // An error from before (another program's) is not this load's.
  (void)cuda::takeError();
  load();
  kernelsLoaded_ = true;
  if (Error err = cuda::takeError())
    return cuda::unavailable(
        "artifact: " + path_ +
        ": loading its GPU kernels failed: " + err.message());
  onDevice_ = true;
  return Error::success();
}

void *LoadedArtifact::lookup(const char *symbol) const {
  return ::dlsym(handle_, symbol);
}

LoadedArtifact::~LoadedArtifact() {
  if (kernelsLoaded_)
    if (auto unload =
            reinterpret_cast<void (*)()>(::dlsym(handle_, kCudaUnloadSymbol)))
      unload();
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
