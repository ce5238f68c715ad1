//===- Artifact.cpp - compiled models as shared libraries -----------------===//

#include "lib/runtime/Artifact.h"

#include "lib/io/FileIO.h"
#include "lib/runtime/CpuFeatures.h"
#include "lib/runtime/cuda/CudaRuntime.h"

#include "lib/support/Checksum.h"
#include "lib/support/Json.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>

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
  // f32 is what an artifact without the field computes: f32 manifests stay
  // as they were before --compute.
  if (m.compute != "f32")
    j.set("compute", m.compute);
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
  // Artifacts written before --compute existed are f32's.
  if (j.find("compute") &&
      (!str("compute", m.compute) ||
       (m.compute != "f32" && m.compute != "bf16" && m.compute != "int8")))
    return artifactError(path, "its manifest names an unknown compute");
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

/// The ELF machine this runtime runs.
constexpr uint16_t kHostMachine =
#if defined(__x86_64__)
    EM_X86_64;
#elif defined(__aarch64__)
    EM_AARCH64;
#else
    EM_NONE;
#endif

/// Whether the open file `fd` is a whole artifact, before dlopen maps it (a
/// cut or damaged shared library kills the process with SIGBUS or SIGSEGV
/// inside the loader): a regular file of bounded size, its trailer's
/// checksum right (lib/support/Checksum.h), and an ELF shared library for
/// this machine whose headers and segments lie within the file.
Error checkArtifactFile(const std::string &path, int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    return artifactError(path, "is not a regular file");
  constexpr uint64_t kMaxArtifact = uint64_t(4) << 30;
  uint64_t size = uint64_t(st.st_size);
  if (size > kMaxArtifact)
    return artifactError(path, "is larger than any artifact");
  if (size < sizeof(Elf64_Ehdr) + kArtifactTrailerSize)
    return artifactError(path, "is not a shared library (too short to be "
                               "one)");
  auto read = io::readToEnd(fd, path, kMaxArtifact);
  if (!read || read->size() != size)
    return artifactError(path, "cannot be read");
  const std::string &data = *read;
  if (std::memcmp(data.data(), ELFMAG, SELFMAG) != 0)
    return artifactError(path, "is not a shared library (tlm-run compile "
                               "writes an artifact as one)");
  const char *trailer = data.data() + size - kArtifactTrailerSize;
  if (std::memcmp(trailer, kArtifactTrailerMagic,
                  sizeof(kArtifactTrailerMagic)) != 0)
    return artifactError(path, "is damaged or cut short, or written by a "
                               "tlm older than its checksum (no checksum at "
                               "its end): compile it again");
  Checksum sum;
  sum.add(data.data(), size - 8);
  uint64_t stored = 0;
  for (int i = 0; i < 8; ++i)
    stored |= uint64_t(static_cast<unsigned char>(trailer[8 + i])) << (8 * i);
  if (sum.value() != stored)
    return artifactError(path, "is damaged (its checksum does not match what "
                               "was written): compile it again");
  Elf64_Ehdr eh;
  std::memcpy(&eh, data.data(), sizeof(eh));
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_type != ET_DYN)
    return artifactError(path, "is not a 64-bit ELF shared library");
  if (eh.e_machine != kHostMachine)
    return mismatchError("artifact: " + path +
                         ": is a shared library for another machine (ELF "
                         "machine " + std::to_string(eh.e_machine) + ")");
  uint64_t elfSize = size - kArtifactTrailerSize;
  auto within = [&](uint64_t offset, uint64_t bytes) {
    return offset <= elfSize && bytes <= elfSize - offset;
  };
  if (eh.e_phentsize != sizeof(Elf64_Phdr) ||
      !within(eh.e_phoff, uint64_t(eh.e_phnum) * sizeof(Elf64_Phdr)))
    return artifactError(path, "has program headers outside the file");
  for (uint16_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, data.data() + eh.e_phoff + i * sizeof(Elf64_Phdr),
                sizeof(ph));
    if (ph.p_type == PT_LOAD && !within(ph.p_offset, ph.p_filesz))
      return artifactError(path, "has a segment past its end (cut short?)");
  }
  return Error::success();
}

/// The name dlopen is given for the open file `fd`. Not the path: glibc
/// hands back a library already loaded under the same name without looking
/// at the file, so a path whose file was replaced while a handle is open
/// would give the old library. /proc/self/fd/N names exactly the file
/// checked (no swap between the check and the load), unique while the fd
/// is open once no loaded library carries it. Without /proc, the resolved
/// path. `fd` may be moved to another number.
std::string loadName(const std::string &path, int &fd) {
  struct stat byName, byFd;
  for (int tries = 0; tries < 64; ++tries) {
    std::string name = "/proc/self/fd/" + std::to_string(fd);
    if (::stat(name.c_str(), &byName) != 0 || ::fstat(fd, &byFd) != 0 ||
        byName.st_ino != byFd.st_ino || byName.st_dev != byFd.st_dev)
      break; // no /proc
    // A library still loaded may carry this name from an earlier fd of the
    // same number (glibc records every name a library was opened by): then
    // the fd moves to a number whose name is free.
    void *taken = ::dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (!taken)
      return name;
    ::dlclose(taken);
    int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, fd + 1);
    if (moved < 0)
      break;
    ::close(fd);
    fd = moved;
  }
  char absolute[PATH_MAX];
  return ::realpath(path.c_str(), absolute) ? absolute : path;
}

/// An artifact opened: dlopen's handle, the file kept open under it, and
/// its manifest.
struct Opened {
  void *handle = nullptr;
  int fd = -1;
  ArtifactManifest manifest;
};

/// Opens and checks `path`, then dlopens it. dlopen runs the constructors
/// of the artifact's libraries: libomp, once loaded, stays (it is
/// NODELETE), so it is readied first even when only the manifest is read.
Expected<Opened> openAndRead(const std::string &path, int mode) {
  prepareOpenMP();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      return artifactError(path, "is not a regular file");
    return artifactError(path, std::string("cannot open: ") +
                                   std::strerror(errno));
  }
  if (Error err = checkArtifactFile(path, fd)) {
    ::close(fd);
    return err;
  }
  void *handle = ::dlopen(loadName(path, fd).c_str(), mode | RTLD_LOCAL);
  if (!handle) {
    ::close(fd);
    return artifactError(path, std::string("cannot load: ") + ::dlerror());
  }
  const char *text =
      static_cast<const char *>(::dlsym(handle, kArtifactManifestSymbol));
  Expected<ArtifactManifest> manifest =
      text ? fromJson(path, text)
           : Expected<ArtifactManifest>(
                 artifactError(path, "is not a tlm artifact (no manifest)"));
  if (!manifest) {
    ::dlclose(handle);
    ::close(fd);
    return manifest.takeError();
  }
  return Opened{handle, fd, std::move(*manifest)};
}

} // namespace

Expected<ArtifactManifest> readArtifactManifest(const std::string &path) {
  auto opened = openAndRead(path, RTLD_LAZY);
  if (!opened)
    return opened.takeError();
  ::dlclose(opened->handle);
  ::close(opened->fd);
  return std::move(opened->manifest);
}

Expected<std::unique_ptr<LoadedArtifact>>
LoadedArtifact::load(const std::string &path) {
  auto start = std::chrono::steady_clock::now();
  auto opened = openAndRead(path, RTLD_NOW);
  if (!opened)
    return opened.takeError();
  std::unique_ptr<LoadedArtifact> artifact(new LoadedArtifact());
  artifact->handle_ = opened->handle;
  artifact->fd_ = opened->fd;
  artifact->path_ = path;
  artifact->manifest_ = std::move(opened->manifest);
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
    // Every feature LLVM enabled is accounted for: an instruction set this
    // runtime cannot ask the CPU about is refused, never assumed.
    FeatureKind kind = featureKind(feature);
    if (kind == FeatureKind::Unknown && hostArchitecture() == "x86_64")
      return mismatchError("artifact: " + path + ": needs the CPU feature '" +
                           std::string(feature) + "' (compiled for " + m.cpu +
                           "), which this runtime cannot check on this host: "
                           "compile it for this host");
    if (kind == FeatureKind::Instructions && !*hostHasFeature(feature))
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
  // Bounded as --threads is (tools/common checkThreads): more threads than
  // cores only adds forks, and libomp aborts when it cannot start them.
  int most = std::min(1024, 4 * usableCores());
  if (m.threads > most)
    return mismatchError("artifact: " + path + ": was compiled for " +
                         std::to_string(m.threads) +
                         " threads, more than the " + std::to_string(most) +
                         " this host supports (4 x its cores, at most 1024): "
                         "compile it with --threads for this host");
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
  if (fd_ >= 0)
    ::close(fd_);
}

Expected<void (*)(void **)>
LoadedArtifact::lookupPacked(std::string_view entry) const {
  void *fn = ::dlsym(handle_, ("_mlir_" + std::string(entry)).c_str());
  if (!fn)
    return artifactError(path_, "has no entry '" + std::string(entry) + "'");
  return reinterpret_cast<void (*)(void **)>(fn);
}

} // namespace tlm::runtime
