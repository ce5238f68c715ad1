//===- Artifact.cpp - compiled models as shared libraries -----------------===//

#include "lib/runtime/Artifact.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"

#include <nlohmann/json.hpp>

#include <dlfcn.h>

namespace tlm::runtime {

namespace {

constexpr const char *kFormat = "tlm-artifact";
constexpr int kVersion = 1;
constexpr const char *kSymbol = "tlm_artifact_manifest";

llvm::Error artifactError(const std::string &path, const llvm::Twine &why) {
  return llvm::createStringError("artifact: " + path + ": " + why);
}

std::string toJson(const ArtifactManifest &m) {
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

llvm::Expected<ArtifactManifest> fromJson(const std::string &path,
                                          const char *text) {
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

/// `manifest` as an object file defining `tlm_artifact_manifest`.
llvm::Expected<Bytes>
manifestObject(const std::string &manifest,
               llvm::orc::JITTargetMachineBuilder machine) {
  auto context = std::make_unique<llvm::LLVMContext>();
  auto module = std::make_unique<llvm::Module>("manifest", *context);
  auto tm = machine.createTargetMachine();
  if (!tm)
    return tm.takeError();
  module->setDataLayout((*tm)->createDataLayout());
  module->setTargetTriple((*tm)->getTargetTriple());
  llvm::Constant *text =
      llvm::ConstantDataArray::getString(*context, manifest, /*AddNull=*/true);
  new llvm::GlobalVariable(*module, text->getType(), /*isConstant=*/true,
                           llvm::GlobalValue::ExternalLinkage, text, kSymbol);
  CpuCodegenOptions options;
  options.optLevel = 0;
  llvm::Expected<std::vector<Bytes>> objects = CpuCode::compileObjects(
      std::move(module), std::move(context), machine, /*entries=*/{},
      [](llvm::Module &) {}, options);
  if (!objects)
    return objects.takeError();
  if (objects->size() != 1)
    return llvm::createStringError("the manifest compiled to " +
                                   std::to_string(objects->size()) +
                                   " objects");
  return std::move((*objects)[0]);
}

llvm::Error writeBytes(const std::string &path, const Bytes &bytes) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return llvm::createStringError("cannot write " + path + ": " +
                                   ec.message());
  os.write(bytes.data(), bytes.size());
  os.close();
  if (os.has_error()) {
    std::string why = os.error().message();
    os.clear_error();
    return llvm::createStringError("cannot write " + path + ": " + why);
  }
  return llvm::Error::success();
}

} // namespace

llvm::Error linkArtifact(llvm::ArrayRef<Bytes> objects,
                         const ArtifactManifest &manifest,
                         const llvm::orc::JITTargetMachineBuilder &machine,
                         llvm::ArrayRef<std::string> libraries,
                         const std::string &path) {
  llvm::Expected<Bytes> manifestObj = manifestObject(toJson(manifest), machine);
  if (!manifestObj)
    return manifestObj.takeError();
  llvm::SmallString<128> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("tlm-artifact", dir))
    return artifactError(path,
                         "cannot create a temporary folder: " + ec.message());
  std::vector<std::string> files;
  auto cleanup = [&] {
    for (const std::string &f : files)
      llvm::sys::fs::remove(f);
    llvm::sys::fs::remove(dir);
  };
  for (size_t i = 0; i <= objects.size(); ++i) {
    files.push_back((dir + "/part-" + llvm::Twine(i) + ".o").str());
    if (llvm::Error err = writeBytes(
            files.back(), i < objects.size() ? objects[i] : *manifestObj)) {
      cleanup();
      return err;
    }
  }
  // Linked beside the destination and renamed over it: the artifact is
  // whole or absent.
  llvm::SmallString<256> temp;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueFile(path + ".tmp-%%%%%%%%", temp)) {
    cleanup();
    return artifactError(path, "cannot write: " + ec.message());
  }
  // -Bsymbolic: the code refers to its own functions directly (they are
  // dso_local in the module), never through a preemptible symbol.
  std::vector<std::string> args = {TLM_LLD,      "-shared",
                                   "-Bsymbolic", "--hash-style=gnu",
                                   "-o",         temp.str().str()};
  for (const std::string &f : files)
    args.push_back(f);
  // Archives are linked in (the members the code calls); shared libraries
  // become dependencies only when the code calls them.
  args.push_back("--as-needed");
  for (const std::string &lib : libraries) {
    args.push_back(lib);
    if (llvm::StringRef(lib).ends_with(".a"))
      continue;
    args.push_back("-rpath");
    args.push_back(llvm::sys::path::parent_path(lib).str());
  }
  std::vector<llvm::StringRef> argRefs(args.begin(), args.end());
  std::string errorText;
  llvm::SmallString<128> log(dir);
  llvm::sys::path::append(log, "lld.log");
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, log.str(),
                                                log.str()};
  int rc = llvm::sys::ExecuteAndWait(TLM_LLD, argRefs, std::nullopt, redirects,
                                     0, 0, &errorText);
  std::string lldOutput;
  if (auto buffer = llvm::MemoryBuffer::getFile(log))
    lldOutput = (*buffer)->getBuffer().trim().str();
  llvm::sys::fs::remove(log);
  cleanup();
  if (rc != 0) {
    llvm::sys::fs::remove(temp);
    return artifactError(path, "linking with " TLM_LLD " failed: " +
                                   (lldOutput.empty() ? errorText : lldOutput));
  }
  if (std::error_code ec = llvm::sys::fs::rename(temp, path)) {
    llvm::sys::fs::remove(temp);
    return artifactError(path, "cannot write: " + ec.message());
  }
  return llvm::Error::success();
}

namespace {

/// dlopen's handle of `path` and its manifest, read without running any of
/// the artifact's code.
llvm::Expected<std::pair<void *, ArtifactManifest>>
openAndRead(const std::string &path, int mode) {
  if (!llvm::sys::fs::is_regular_file(path))
    return artifactError(path, "is not a regular file");
  // A name without a slash would be searched for on the library path.
  llvm::SmallString<256> absolute(path);
  llvm::sys::fs::make_absolute(absolute);
  void *handle = ::dlopen(absolute.c_str(), mode | RTLD_LOCAL);
  if (!handle)
    return artifactError(path, std::string("cannot load: ") + ::dlerror());
  const char *text = static_cast<const char *>(::dlsym(handle, kSymbol));
  if (!text) {
    ::dlclose(handle);
    return artifactError(path, "is not a tlm artifact (no manifest)");
  }
  llvm::Expected<ArtifactManifest> manifest = fromJson(path, text);
  if (!manifest) {
    ::dlclose(handle);
    return manifest.takeError();
  }
  return std::make_pair(handle, std::move(*manifest));
}

} // namespace

llvm::Expected<ArtifactManifest> readArtifactManifest(const std::string &path) {
  auto opened = openAndRead(path, RTLD_LAZY);
  if (!opened)
    return opened.takeError();
  ::dlclose(opened->first);
  return std::move(opened->second);
}

llvm::Expected<std::unique_ptr<LoadedArtifact>>
LoadedArtifact::load(const std::string &path) {
  auto opened = openAndRead(path, RTLD_NOW);
  if (!opened)
    return opened.takeError();
  std::unique_ptr<LoadedArtifact> artifact(new LoadedArtifact());
  artifact->handle_ = opened->first;
  artifact->path_ = path;
  artifact->manifest_ = std::move(opened->second);
  const ArtifactManifest &m = artifact->manifest_;
  std::string host = llvm::sys::getProcessTriple();
  if (m.triple != host)
    return artifactError(path, "was compiled for " + m.triple +
                                   ", this host is " + host);
  // Every feature the code was compiled with must be the host's.
  llvm::StringMap<bool, llvm::MallocAllocator> features =
      llvm::sys::getHostCPUFeatures();
  llvm::SmallVector<llvm::StringRef> wanted;
  llvm::StringRef(m.features).split(wanted, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef f : wanted)
    if (f.consume_front("+") && !features.lookup(f))
      return artifactError(path, "needs the CPU feature '" + f.str() +
                                     "' (compiled for " + m.cpu +
                                     "), which this host lacks");
  return artifact;
}

void *LoadedArtifact::lookup(const char *symbol) const {
  return ::dlsym(handle_, symbol);
}

LoadedArtifact::~LoadedArtifact() {
  if (handle_)
    ::dlclose(handle_);
}

llvm::Expected<void (*)(void **)>
LoadedArtifact::lookupPacked(llvm::StringRef entry) const {
  void *fn = ::dlsym(handle_, ("_mlir_" + entry).str().c_str());
  if (!fn)
    return artifactError(path_, "has no entry '" + entry.str() + "'");
  return reinterpret_cast<void (*)(void **)>(fn);
}

} // namespace tlm::runtime
