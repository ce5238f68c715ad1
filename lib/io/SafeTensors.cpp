//===- SafeTensors.cpp - read and write safetensors files -----------------===//

#include "lib/io/SafeTensors.h"
#include "lib/io/FileIO.h"
#include "lib/io/MapGuard.h"

#include "lib/support/Float16.h"
#include "lib/support/Json.h"

#include <map>

#include <algorithm>
#include <cassert>
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

Expected<SafeTensors> SafeTensors::open(const std::string &path, Load load,
                                        bool hugePages) {
  auto fail = [&](const std::string &what) {
    return makeError("safetensors: " + path + ": " + what);
  };
  Expected<int> opened = openRegularFile(path);
  if (!opened)
    return makeError("safetensors: " + opened.takeError().message());
  Fd file{*opened};
  struct stat st;
  if (::fstat(file.fd, &st) != 0)
    return fail(std::string("cannot stat: ") + std::strerror(errno));
  uint64_t fileSize = static_cast<uint64_t>(st.st_size);
  if (fileSize < 8)
    return fail("file is " + std::to_string(fileSize) +
                " bytes, too short for the 8-byte header length");
  unsigned char lenBytes[8];
  if (!readAt(file.fd, lenBytes, 8, 0))
    return fail("cannot read the header length");
  uint64_t headerLen = 0;
  for (int i = 7; i >= 0; --i)
    headerLen = (headerLen << 8) | lenBytes[i];
  if (headerLen > kMaxHeaderBytes)
    return fail("header length " + std::to_string(headerLen) +
                " exceeds the cap of " + std::to_string(kMaxHeaderBytes));
  if (headerLen > fileSize - 8)
    return fail("header length " + std::to_string(headerLen) +
                " runs past the end of the file (" + std::to_string(fileSize) +
                " bytes)");
  std::string header(headerLen, '\0');
  if (!readAt(file.fd, header.data(), headerLen, 8))
    return fail("cannot read the header");
  std::string duplicate;
  Expected<json::Value> parsed = json::Value::parse(header, &duplicate);
  if (!duplicate.empty())
    return fail("tensor '" + duplicate + "' is given twice in the header");
  if (!parsed)
    return fail("header is not a JSON object (" + parsed.takeError().message() +
                ")");
  const json::Value &json = *parsed;
  if (!json.isObject())
    return fail("header is not a JSON object");

  uint64_t dataStart = 8 + headerLen, dataSize = fileSize - dataStart;
  SafeTensors result;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  std::vector<std::pair<std::string, std::pair<uint64_t, uint64_t>>> where;
  for (size_t item = 0; item < json.size(); ++item) {
    const std::string &name = json.keys()[item];
    const json::Value &entry = json.elements()[item];
    if (name == "__metadata__")
      continue;
    auto bad = [&](const std::string &what) {
      return fail("tensor '" + name + "': " + what);
    };
    if (!entry.isObject())
      return bad("entry is not an object");
    const json::Value *dt = entry.find("dtype");
    const json::Value *sh = entry.find("shape");
    const json::Value *off = entry.find("data_offsets");
    if (!dt || !dt->isString())
      return bad("missing string 'dtype'");
    if (!sh || !sh->isArray())
      return bad("missing array 'shape'");
    if (!off || !off->isArray() || off->size() != 2 ||
        !off->elements()[0].isUnsigned() || !off->elements()[1].isUnsigned())
      return bad("'data_offsets' must be two non-negative integers");
    Tensor t;
    const DTypeName *known = nullptr;
    const std::string &dtypeStr = dt->asString();
    for (const DTypeName &d : kDTypes)
      if (dtypeStr == d.name)
        known = &d;
    if (!known)
      return bad("unsupported dtype '" + dtypeStr + "'");
    t.dtype = known->dtype;
    // Dims must fit int64; the element count of a non-empty tensor must fit
    // the file, which also keeps numel * element size from overflowing.
    bool empty = false;
    for (const json::Value &d : sh->elements()) {
      if (!d.isUnsigned() || d.asUint() > (uint64_t(1) << 62))
        return bad("shape entries must be integers in [0, 2^62]");
      t.shape.push_back(static_cast<int64_t>(d.asUint()));
      empty |= t.shape.back() == 0;
    }
    uint64_t numel = empty ? 0 : 1;
    for (int64_t v : t.shape) {
      if (empty)
        break;
      if (numel > dataSize / uint64_t(v))
        return bad("shape " + shapeString(t.shape) +
                   " has more elements than the file has data bytes (" +
                   std::to_string(dataSize) + ")");
      numel *= uint64_t(v);
    }
    uint64_t begin = off->elements()[0].asUint(),
             end = off->elements()[1].asUint();
    if (begin > end || end > dataSize)
      return bad("data_offsets [" + std::to_string(begin) + ", " +
                 std::to_string(end) + ") lie outside the " +
                 std::to_string(dataSize) + " data bytes of the file");
    // numel <= dataSize, so this product cannot overflow.
    uint64_t expected = numel * known->size;
    if (end - begin != expected)
      return bad("holds " + std::to_string(end - begin) + " bytes but " +
                 dtypeStr + " " + shapeString(t.shape) + " needs " +
                 std::to_string(expected));
    t.bytes = expected;
    where.push_back({name, {begin, end}});
    result.tensors_.emplace(name, std::move(t));
  }
  // No two tensors may share bytes: after sorting by start, each non-empty
  // range must begin at or after the furthest end seen so far.
  std::sort(where.begin(), where.end(),
            [](const auto &a, const auto &b) { return a.second < b.second; });
  uint64_t furthest = 0;
  const std::string *owner = nullptr;
  for (const auto &[name, range] : where) {
    if (range.first == range.second)
      continue;
    if (owner && range.first < furthest)
      return fail("tensors '" + *owner + "' and '" + name + "' overlap");
    if (range.second > furthest) {
      furthest = range.second;
      owner = &name;
    }
  }

  for (auto &[name, range] : where)
    result.tensors_.find(name)->second.fileOffset = dataStart + range.first;
  if (load == Load::Header)
    return result;
  if (load == Load::Map) {
    void *base = ::mmap(nullptr, fileSize, PROT_READ, MAP_PRIVATE, file.fd, 0);
    if (base == MAP_FAILED)
      return fail(std::string("cannot map: ") + std::strerror(errno));
    // A SIGBUS from the file shrinking under the mapping is reported, not
    // a crash (MapGuard.h).
    guardMapping(base, fileSize, path);
    result.mapping_ = std::shared_ptr<void>(base, [fileSize](void *p) {
      unguardMapping(p);
      ::munmap(p, fileSize);
    });
    for (auto &[name, range] : where) {
      Tensor &t = result.tensors_.find(name)->second;
      auto *data = static_cast<char *>(base) + dataStart + range.first;
      if (reinterpret_cast<uintptr_t>(data) % dtypeSize(t.dtype) != 0)
        return fail("tensor '" + name +
                    "' is not aligned to its element "
                    "size, so it cannot be used in place");
      t.data = data;
    }
    return result;
  }
  // Validated: now read the tensors into one block, each at a 64-byte
  // boundary (in file order: the reads go forward through the file).
  auto padded = [](uint64_t bytes) { return (bytes + 63) / 64 * 64; };
  size_t total = 0;
  for (const auto &[name, range] : where)
    total += padded(range.second - range.first);
  result.data_ = LargeBuffer::allocate(total, hugePages);
  if (!result.data_.data())
    return fail("out of memory reading its " + std::to_string(total) +
                " bytes of tensors");
  char *next = static_cast<char *>(result.data_.data());
  for (auto &[name, range] : where) {
    Tensor &t = result.tensors_.find(name)->second;
    if (t.bytes && !readAt(file.fd, next, t.bytes, dataStart + range.first))
      return fail("cannot read the data of tensor '" + name + "'");
    t.data = next;
    next += padded(t.bytes);
  }
  return result;
}

Error tlm::io::writeSafeTensors(
    const std::string &path, const std::vector<TensorView> &tensors,
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
  Expected<AtomicFile> file = AtomicFile::create(path);
  if (!file)
    return file.takeError();
  unsigned char len[8];
  for (int i = 0; i < 8; ++i)
    len[i] = static_cast<unsigned char>((uint64_t(text.size()) >> (8 * i)));
  if (Error err = file->write(len, 8))
    return err;
  if (Error err = file->write(text))
    return err;
  for (const TensorView &t : tensors) {
    size_t bytes = dtypeSize(t.dtype);
    for (int64_t d : t.shape)
      bytes *= d;
    if (Error err = file->write(t.data, bytes))
      return err;
  }
  return file->commit();
}
