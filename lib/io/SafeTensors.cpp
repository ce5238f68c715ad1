//===- SafeTensors.cpp - read and write safetensors files -----------------===//

#include "lib/io/SafeTensors.h"
#include "lib/io/FileIO.h"
#include "lib/io/MapGuard.h"

#include "lib/support/Float16.h"
#include "lib/support/Json.h"

#include <map>
#include <tuple>

#include <algorithm>
#include <cassert>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace tlm;
using namespace tlm::io;

namespace {
/// Headers above this are rejected before allocation (real ones are KBs).
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

struct DTypeName {
  const char *name;
  DType dtype;
  size_t size;
};
constexpr DTypeName kDTypes[] = {
    {"F64", DType::F64, 8},   {"F32", DType::F32, 4}, {"F16", DType::F16, 2},
    {"BF16", DType::BF16, 2}, {"I64", DType::I64, 8}, {"I32", DType::I32, 4},
    {"I16", DType::I16, 2},   {"I8", DType::I8, 1},   {"U8", DType::U8, 1},
    {"BOOL", DType::Bool, 1}};

/// Closes a file descriptor on scope exit.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0)
      ::close(fd);
  }
};

/// Reads exactly `n` bytes at `offset`.
bool readAt(int fd, void *dst, size_t n, uint64_t offset) {
  auto *p = static_cast<char *>(dst);
  while (n > 0) {
    ssize_t r = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (r <= 0)
      return false;
    p += r, n -= r, offset += r;
  }
  return true;
}
} // namespace

float tlm::io::elementAsF32(const void *data, DType dtype, size_t i) {
  switch (dtype) {
  case DType::BF16:
    return bf16ToF32(static_cast<const uint16_t *>(data)[i]);
  case DType::F16:
    return f16ToF32(static_cast<const uint16_t *>(data)[i]);
  default:
    assert(dtype == DType::F32 && "a float tensor");
    return static_cast<const float *>(data)[i];
  }
}

size_t tlm::io::dtypeSize(DType dtype) {
  for (const DTypeName &d : kDTypes)
    if (d.dtype == dtype)
      return d.size;
  return 0;
}

std::string_view tlm::io::dtypeName(DType dtype) {
  for (const DTypeName &d : kDTypes)
    if (d.dtype == dtype)
      return d.name;
  return "?";
}

std::string tlm::io::shapeString(const std::vector<int64_t> &shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + ")";
}

int64_t Tensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

const Tensor *SafeTensors::find(std::string_view name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

size_t SafeTensors::dataBytes() const {
  size_t n = 0;
  for (const auto &[name, t] : tensors_)
    n += t.bytes;
  return n;
}

namespace {
/// "safetensors: PATH: what", the form of every error of open().
Error fileError(const std::string &path, const std::string &what) {
  return makeError("safetensors: " + path + ": " + what);
}

/// A tensor of the header, with its bytes' [begin, end) in the data section.
struct Entry {
  std::string name;
  Tensor tensor;
  uint64_t begin = 0, end = 0;
};

/// What a file that is not safetensors looks like, from its first bytes
/// (for the error line), or "".
std::string lookalike(int fd, uint64_t fileSize) {
  unsigned char head[64] = {};
  size_t n = size_t(std::min<uint64_t>(fileSize, sizeof head));
  if (n < 4 || !readAt(fd, head, n, 0))
    return "";
  if (std::memcmp(head, "GGUF", 4) == 0)
    return "a GGUF file (llama.cpp's format)";
  if (std::memcmp(head, "PK\x03\x04", 4) == 0)
    return "a zip archive, as PyTorch's .pt files are (tools/"
           "torch_to_safetensors.py converts a state dict)";
  // llama2.c's header: dim, hidden_dim, n_layers, n_heads, n_kv_heads,
  // vocab_size (negative when the classifier is shared), seq_len.
  if (n >= 28) {
    int32_t h[7];
    std::memcpy(h, head, sizeof h);
    auto in = [](int64_t v, int64_t hi) { return v > 0 && v <= hi; };
    if (in(h[0], 1 << 16) && in(h[1], 1 << 20) && in(h[2], 1024) &&
        in(h[3], h[0]) && in(h[4], h[3]) && in(std::llabs(h[5]), 1 << 24) &&
        in(h[6], 1 << 20))
      return "a llama2.c checkpoint (tlm-run import-llama2c converts it)";
  }
  size_t printable = 0;
  for (size_t i = 0; i < n; ++i)
    printable += std::isprint(head[i]) || std::isspace(head[i]);
  size_t first = 0;
  while (first < n && std::isspace(head[first]))
    ++first;
  if (printable == n && first < n && (head[first] == '{' || head[first] == '['))
    return "a JSON file (a config or a tokenizer.json?)";
  if (printable == n)
    return "a text file";
  return "";
}

/// `what` of `path`, or when the file looks like another format, that.
Error notSafetensors(int fd, const std::string &path, uint64_t fileSize,
                     const std::string &what) {
  std::string like = lookalike(fd, fileSize);
  if (like.empty())
    return fileError(path, what);
  return fileError(path, "not a safetensors file: it looks like " + like);
}

/// The header's JSON object, once its length (returned in `headerLen`) is
/// checked against the file's `fileSize` bytes.
Expected<json::Value> readHeader(int fd, const std::string &path,
                                 uint64_t fileSize, uint64_t &headerLen) {
  if (fileSize < 8)
    return fileError(path, "file is " + std::to_string(fileSize) +
                               " bytes, too short for the 8-byte header "
                               "length");
  unsigned char lenBytes[8];
  if (!readAt(fd, lenBytes, 8, 0))
    return fileError(path, "cannot read the header length");
  headerLen = 0;
  for (int i = 7; i >= 0; --i)
    headerLen = (headerLen << 8) | lenBytes[i];
  if (headerLen > kMaxHeaderBytes)
    return notSafetensors(fd, path, fileSize,
                          "header length " + std::to_string(headerLen) +
                              " exceeds the cap of " +
                              std::to_string(kMaxHeaderBytes));
  if (headerLen > fileSize - 8)
    return notSafetensors(fd, path, fileSize,
                          "header length " + std::to_string(headerLen) +
                              " runs past the end of the file (" +
                              std::to_string(fileSize) + " bytes)");
  std::string header(headerLen, '\0');
  if (!readAt(fd, header.data(), headerLen, 8))
    return fileError(path, "cannot read the header");
  std::string duplicate;
  Expected<json::Value> parsed = json::Value::parse(header, &duplicate);
  if (!duplicate.empty())
    return fileError(path, "tensor '" + duplicate +
                               "' is given twice in the header");
  if (!parsed)
    return notSafetensors(fd, path, fileSize,
                          "header is not a JSON object (" +
                              parsed.takeError().message() + ")");
  if (!parsed->isObject())
    return fileError(path, "header is not a JSON object");
  return parsed;
}

/// The shape of `t` from the header's `shape`: dims must fit int64, and the
/// element count of a non-empty tensor the file's `dataSize` bytes, which
/// also keeps numel * element size from overflowing. Returns the count.
Expected<uint64_t> readShape(const json::Value &shape, uint64_t dataSize,
                             Tensor &t) {
  bool empty = false;
  for (const json::Value &d : shape.elements()) {
    if (!d.isUnsigned() || d.asUint() > (uint64_t(1) << 62))
      return makeError("shape entries must be integers in [0, 2^62]");
    t.shape.push_back(static_cast<int64_t>(d.asUint()));
    empty |= t.shape.back() == 0;
  }
  if (empty)
    return uint64_t(0);
  uint64_t numel = 1;
  for (int64_t v : t.shape) {
    if (numel > dataSize / uint64_t(v))
      return makeError("shape " + shapeString(t.shape) +
                       " has more elements than the file has data bytes (" +
                       std::to_string(dataSize) + ")");
    numel *= uint64_t(v);
  }
  return numel;
}

/// The tensor `name` of the header, checked against the `dataSize` bytes
/// of data; an error says what is wrong with it.
Expected<Entry> readEntry(const std::string &name, const json::Value &entry,
                          uint64_t dataSize) {
  if (!entry.isObject())
    return makeError("entry is not an object");
  const json::Value *dt = entry.find("dtype");
  const json::Value *sh = entry.find("shape");
  const json::Value *off = entry.find("data_offsets");
  if (!dt || !dt->isString())
    return makeError("missing string 'dtype'");
  if (!sh || !sh->isArray())
    return makeError("missing array 'shape'");
  if (!off || !off->isArray() || off->size() != 2 ||
      !off->elements()[0].isUnsigned() || !off->elements()[1].isUnsigned())
    return makeError("'data_offsets' must be two non-negative integers");
  const DTypeName *known = nullptr;
  const std::string &dtypeStr = dt->asString();
  for (const DTypeName &d : kDTypes)
    if (dtypeStr == d.name)
      known = &d;
  if (!known)
    return makeError("unsupported dtype '" + dtypeStr + "'");
  Entry e;
  e.name = name;
  e.tensor.dtype = known->dtype;
  Expected<uint64_t> numel = readShape(*sh, dataSize, e.tensor);
  if (!numel)
    return numel.takeError();
  e.begin = off->elements()[0].asUint();
  e.end = off->elements()[1].asUint();
  if (e.begin > e.end || e.end > dataSize)
    return makeError("data_offsets [" + std::to_string(e.begin) + ", " +
                     std::to_string(e.end) + ") lie outside the " +
                     std::to_string(dataSize) + " data bytes of the file");
  // numel <= dataSize, so this product cannot overflow.
  uint64_t expected = *numel * known->size;
  if (e.end - e.begin != expected)
    return makeError("holds " + std::to_string(e.end - e.begin) +
                     " bytes but " + dtypeStr + " " +
                     shapeString(e.tensor.shape) + " needs " +
                     std::to_string(expected));
  e.tensor.bytes = expected;
  return e;
}

/// No two tensors may share bytes: after sorting by start, each non-empty
/// range must begin at or after the furthest end seen so far.
Error checkDisjoint(const std::string &path, std::vector<Entry> &entries) {
  std::sort(entries.begin(), entries.end(), [](const Entry &a, const Entry &b) {
    return std::pair(a.begin, a.end) < std::pair(b.begin, b.end);
  });
  uint64_t furthest = 0;
  const std::string *owner = nullptr;
  for (const Entry &e : entries) {
    if (e.begin == e.end)
      continue;
    if (owner && e.begin < furthest)
      return fileError(path, "tensors '" + *owner + "' and '" + e.name +
                                 "' overlap");
    if (e.end > furthest) {
      furthest = e.end;
      owner = &e.name;
    }
  }
  return Error::success();
}
} // namespace

std::vector<std::pair<const std::string *, Tensor *>>
SafeTensors::inFileOrder() {
  std::vector<std::pair<const std::string *, Tensor *>> order;
  for (auto &[name, t] : tensors_)
    order.push_back({&name, &t});
  std::sort(order.begin(), order.end(), [](auto a, auto b) {
    return std::tie(a.second->fileOffset, a.second->bytes, *a.first) <
           std::tie(b.second->fileOffset, b.second->bytes, *b.first);
  });
  return order;
}

Error SafeTensors::mapData(int fd, const std::string &path,
                           uint64_t fileSize) {
  void *base = ::mmap(nullptr, fileSize, PROT_READ, MAP_PRIVATE, fd, 0);
  if (base == MAP_FAILED)
    return fileError(path, std::string("cannot map: ") + std::strerror(errno));
  // A SIGBUS from the file shrinking under the mapping is reported, not
  // a crash (MapGuard.h).
  guardMapping(base, fileSize, path);
  mapping_ = std::shared_ptr<void>(base, [fileSize](void *p) {
    unguardMapping(p);
    ::munmap(p, fileSize);
  });
  for (auto [name, t] : inFileOrder()) {
    auto *data = static_cast<char *>(base) + t->fileOffset;
    if (reinterpret_cast<uintptr_t>(data) % dtypeSize(t->dtype) != 0)
      return fileError(path, "tensor '" + *name +
                                 "' is not aligned to its element "
                                 "size, so it cannot be used in place");
    t->data = data;
  }
  return Error::success();
}

Error SafeTensors::readData(int fd, const std::string &path, bool hugePages) {
  // Validated: now read the tensors into one block, each at a 64-byte
  // boundary (in file order: the reads go forward through the file).
  auto padded = [](uint64_t bytes) { return (bytes + 63) / 64 * 64; };
  auto order = inFileOrder();
  size_t total = 0;
  for (auto [name, t] : order)
    total += padded(t->bytes);
  data_ = LargeBuffer::allocate(total, hugePages);
  if (!data_.data())
    return memoryError(path + ": out of memory reading its " +
                       std::to_string(total) + " bytes of tensors");
  char *next = static_cast<char *>(data_.data());
  for (auto [name, t] : order) {
    if (t->bytes && !readAt(fd, next, t->bytes, t->fileOffset))
      return fileError(path, "cannot read the data of tensor '" + *name + "'");
    t->data = next;
    next += padded(t->bytes);
  }
  return Error::success();
}

Expected<SafeTensors> SafeTensors::open(const std::string &path, Load load,
                                        bool hugePages) {
  Expected<int> opened = openRegularFile(path);
  if (!opened)
    return makeError("safetensors: " + opened.takeError().message());
  Fd file{*opened};
  struct stat st;
  if (::fstat(file.fd, &st) != 0)
    return fileError(path,
                     std::string("cannot stat: ") + std::strerror(errno));
  uint64_t fileSize = static_cast<uint64_t>(st.st_size), headerLen = 0;
  Expected<json::Value> header = readHeader(file.fd, path, fileSize, headerLen);
  if (!header)
    return header.takeError();
  uint64_t dataStart = 8 + headerLen, dataSize = fileSize - dataStart;
  std::vector<Entry> entries;
  for (size_t item = 0; item < header->size(); ++item) {
    const std::string &name = header->keys()[item];
    if (name == "__metadata__")
      continue;
    Expected<Entry> entry =
        readEntry(name, header->elements()[item], dataSize);
    if (!entry)
      return fileError(path, "tensor '" + name +
                                 "': " + entry.takeError().message());
    entries.push_back(std::move(*entry));
  }
  if (Error err = checkDisjoint(path, entries))
    return err;
  SafeTensors result;
  for (Entry &e : entries) {
    e.tensor.fileOffset = dataStart + e.begin;
    result.tensors_.emplace(e.name, std::move(e.tensor));
  }
  if (load == Load::Map)
    if (Error err = result.mapData(file.fd, path, fileSize))
      return err;
  if (load == Load::Read)
    if (Error err = result.readData(file.fd, path, hugePages))
      return err;
  return result;
}

Error tlm::io::writeSafeTensors(
    const std::string &path, const std::vector<TensorView> &tensors,
    const std::vector<std::pair<std::string, std::string>> &metadata) {
  Expected<AtomicFile> file = AtomicFile::create(path);
  if (!file)
    return file.takeError();
  if (Error err = writeSafeTensors(*file, tensors, metadata))
    return err;
  return file->commit();
}

Error tlm::io::writeSafeTensors(
    AtomicFile &file, const std::vector<TensorView> &tensors,
    const std::vector<std::pair<std::string, std::string>> &metadata) {
  // The header lists the tensors by name (the data stays in the caller's
  // order).
  uint64_t offset = 0;
  std::map<std::string, json::Value> entries;
  for (const TensorView &t : tensors) {
    uint64_t bytes = dtypeSize(t.dtype);
    for (int64_t d : t.shape)
      bytes *= d;
    json::Value entry = json::Value::object();
    entry.set("dtype", std::string(dtypeName(t.dtype)));
    entry.set("shape", t.shape);
    json::Value offsets = json::Value::array();
    offsets.push(offset);
    offsets.push(offset + bytes);
    entry.set("data_offsets", std::move(offsets));
    entries[t.name] = std::move(entry);
    offset += bytes;
  }
  json::Value header = json::Value::object();
  if (!metadata.empty()) {
    json::Value meta = json::Value::object();
    for (const auto &[key, value] : metadata)
      meta.set(key, value);
    header.set("__metadata__", std::move(meta));
  }
  for (auto &[name, entry] : entries)
    header.set(name, std::move(entry));
  std::string text = header.dump();
  text.resize((text.size() + 7) / 8 * 8, ' ');
  unsigned char len[8];
  for (int i = 0; i < 8; ++i)
    len[i] = static_cast<unsigned char>((uint64_t(text.size()) >> (8 * i)));
  if (Error err = file.write(len, 8))
    return err;
  if (Error err = file.write(text))
    return err;
  for (const TensorView &t : tensors) {
    size_t bytes = dtypeSize(t.dtype);
    for (int64_t d : t.shape)
      bytes *= d;
    if (Error err = file.write(t.data, bytes))
      return err;
  }
  return Error::success();
}
