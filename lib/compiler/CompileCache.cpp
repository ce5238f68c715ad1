//===- CompileCache.cpp - compiled objects kept between runs --------------===//

#include "lib/compiler/CompileCache.h"

#include "lib/io/FileIO.h"
#include "lib/compiler/LlvmError.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <cstdlib>
#include <cstring>

namespace tlm::runtime {

namespace {

// File layout, little-endian: magic, version, key length, key, object
// count, each object's size, the objects, then xxh3 of everything before.
constexpr char kMagic[8] = {'T', 'L', 'M', 'C', 'A', 'C', 'H', 'E'};
constexpr uint32_t kVersion = 1;

std::string hex(uint64_t v) {
  char buf[17];
  snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

void put64(std::string &out, uint64_t v) {
  out.append(reinterpret_cast<const char *>(&v), sizeof(v));
}

/// Reads the next 8 bytes of `data` at `at` into `v`.
bool get64(llvm::StringRef data, size_t &at, uint64_t &v) {
  if (data.size() - at < sizeof(v))
    return false;
  std::memcpy(&v, data.data() + at, sizeof(v));
  at += sizeof(v);
  return true;
}

} // namespace

std::string defaultCacheDir() {
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return (llvm::Twine(xdg) + "/tlm").str();
  if (const char *home = std::getenv("HOME"); home && *home)
    return (llvm::Twine(home) + "/.cache/tlm").str();
  return "";
}

const std::string &compilerIdentity() {
  static const std::string identity = [] {
    std::string id = "llvm " LLVM_VERSION_STRING;
    // The executable holds every tlm pass and the pipelines (they link
    // statically): any change to them changes its bytes.
    auto exe = llvm::MemoryBuffer::getFile("/proc/self/exe", /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
    if (exe)
      id += " exe " + hex(llvm::xxh3_64bits(
                          llvm::arrayRefFromStringRef((*exe)->getBuffer())));
    else
      id += " exe unknown";
    return id;
  }();
  return identity;
}

std::string CompileCache::pathFor(llvm::StringRef key) const {
  llvm::XXH128_hash_t h = llvm::xxh3_128bits(llvm::arrayRefFromStringRef(key));
  return dir_ + "/" + hex(h.high64) + hex(h.low64) + ".tlmc";
}

std::optional<std::vector<Bytes>>
CompileCache::load(llvm::StringRef key) const {
  auto file = llvm::MemoryBuffer::getFile(pathFor(key), /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!file)
    return std::nullopt;
  llvm::StringRef data = (*file)->getBuffer();
  if (data.size() < sizeof(kMagic) + 8 + 8 ||
      std::memcmp(data.data(), kMagic, sizeof(kMagic)) != 0)
    return std::nullopt;
  llvm::StringRef body = data.drop_back(8);
  uint64_t checksum;
  std::memcpy(&checksum, data.data() + body.size(), sizeof(checksum));
  if (checksum != llvm::xxh3_64bits(llvm::arrayRefFromStringRef(body)))
    return std::nullopt;
  size_t at = sizeof(kMagic);
  uint64_t version, keySize, count;
  if (!get64(body, at, version) || version != kVersion ||
      !get64(body, at, keySize) || body.size() - at < keySize ||
      body.substr(at, keySize) != key)
    return std::nullopt;
  at += keySize;
  if (!get64(body, at, count) || count > (body.size() - at) / 8)
    return std::nullopt;
  std::vector<uint64_t> sizes(count);
  for (uint64_t &size : sizes)
    if (!get64(body, at, size))
      return std::nullopt;
  std::vector<Bytes> objects;
  for (uint64_t size : sizes) {
    if (body.size() - at < size)
      return std::nullopt;
    objects.emplace_back(body.begin() + at, body.begin() + at + size);
    at += size;
  }
  if (at != body.size())
    return std::nullopt;
  return objects;
}

llvm::Error CompileCache::store(llvm::StringRef key,
                                llvm::ArrayRef<Bytes> objects) const {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir_))
    return llvm::createStringError("compile cache: cannot create " + dir_ +
                                   ": " + ec.message());
  std::string data(kMagic, sizeof(kMagic));
  put64(data, kVersion);
  put64(data, key.size());
  data += key;
  put64(data, objects.size());
  for (const Bytes &object : objects)
    put64(data, object.size());
  for (const Bytes &object : objects)
    data.append(object.data(), object.size());
  put64(data, llvm::xxh3_64bits(llvm::arrayRefFromStringRef(data)));

  // Readers see the old entry, no entry, or the whole new one.
  Expected<io::AtomicFile> file = io::AtomicFile::create(pathFor(key));
  if (!file)
    return llvm::createStringError("compile cache: " +
                                   file.takeError().message());
  if (Error err = file->write(data))
    return toLlvm(std::move(err));
  if (Error err = file->commit())
    return llvm::createStringError("compile cache: " + err.message());
  return llvm::Error::success();
}

} // namespace tlm::runtime
