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

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
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

/// An entry's bytes: a regular file, opened without following a link and
/// without blocking, at most kMaxEntry bytes; else why not. A missing file
/// is an empty reason with no data.
constexpr uint64_t kMaxEntry = uint64_t(4) << 30;

std::optional<std::string> readEntry(const std::string &path,
                                     std::string &whyBad) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP)
      whyBad = "is a symbolic link";
    else if (errno != ENOENT)
      whyBad = std::string("cannot be read: ") + std::strerror(errno);
    return std::nullopt;
  }
  struct stat st;
  std::string data;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    whyBad = "is not a regular file";
  else if (st.st_uid != ::geteuid())
    // Its objects would be linked and run: only our own are.
    whyBad = "belongs to another user";
  else if (uint64_t(st.st_size) > kMaxEntry)
    whyBad = "is larger than any entry";
  else if (auto read = io::readToEnd(fd, path, kMaxEntry))
    data = std::move(*read);
  else
    whyBad = "could not be read whole";
  ::close(fd);
  if (!whyBad.empty())
    return std::nullopt;
  return data;
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
CompileCache::load(llvm::StringRef key, std::string *whyBad) const {
  std::string reason;
  std::optional<std::vector<Bytes>> objects = parse(key, reason);
  if (whyBad)
    *whyBad = reason;
  return objects;
}

std::optional<std::vector<Bytes>>
CompileCache::parse(llvm::StringRef key, std::string &whyBad) const {
  // A folder others may write in can hold anything under any name.
  struct stat dir;
  if (::stat(dir_.c_str(), &dir) == 0 &&
      (dir.st_uid != ::geteuid() || (dir.st_mode & (S_IWGRP | S_IWOTH)))) {
    whyBad = "is in a folder other users may write (" + dir_ +
             "): the cache is not read there";
    return std::nullopt;
  }
  std::optional<std::string> file = readEntry(pathFor(key), whyBad);
  if (!file)
    return std::nullopt;
  // Anything from here on is a bad entry: its bytes are not one we wrote
  // for this key.
  whyBad = "is corrupt or for another key";
  llvm::StringRef data = *file;
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
  whyBad.clear();
  return objects;
}

llvm::Error CompileCache::store(llvm::StringRef key,
                                llvm::ArrayRef<Bytes> objects) const {
  // Only its owner may read, or plant anything in, a folder it creates.
  if (std::error_code ec = llvm::sys::fs::create_directories(
          dir_, /*IgnoreExisting=*/true, llvm::sys::fs::owner_all))
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

  // Readers see the old entry, no entry, or the whole new one. The file is
  // ours (O_EXCL: never one planted under the name) and renamed over the
  // entry's name, which replaces a link, a FIFO or a device node there
  // rather than writing through it.
  std::string path = pathFor(key);
  std::string temp;
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
    temp = path + ".tmp-" + std::to_string(::getpid()) + "-" +
           std::to_string(attempt);
    fd = ::open(temp.c_str(),
                O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST)
      break;
  }
  if (fd < 0)
    return llvm::createStringError("compile cache: cannot write in " + dir_ +
                                   ": " + std::strerror(errno));
  io::RemoveOnSignal removeTemp(temp);
  bool written = true;
  for (size_t done = 0; written && done < data.size();) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    written = n > 0;
    done += written ? size_t(n) : 0;
  }
  written = written && ::fsync(fd) == 0;
  written = ::close(fd) == 0 && written;
  if (!written || ::rename(temp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    ::unlink(temp.c_str());
    return llvm::createStringError("compile cache: cannot write " + path +
                                   ": " + why);
  }
  return llvm::Error::success();
}

} // namespace tlm::runtime
