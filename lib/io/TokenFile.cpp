//===- TokenFile.cpp - token id files (--tokens-file) ---------------------===//

#include "lib/io/TokenFile.h"

#include "lib/io/SafeTensors.h"

#include <cassert>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tlm::io {

namespace {

/// The token tensor of a safetensors file: `tokens`, or its one integer
/// tensor, with its rank (1 or 2) checked by the caller.
Expected<TokenMatrix> readTokens(const std::string &path, bool flat);

} // namespace

Expected<TokenMatrix> readTokenFile(const std::string &path) {
  return readTokens(path, /*flat=*/false);
}

namespace {

/// The token tensor of `file`: `tokens`, or its one integer tensor, I32 or
/// I64, of rank 2 (or 1 when `flat`), not empty.
Expected<const Tensor *> tokenTensor(const SafeTensors &file,
                                     const std::string &path, bool flat) {
  auto fail = [&](const std::string &what) {
    return makeError("token file " + path + what);
  };
  auto isInteger = [](DType d) { return d == DType::I64 || d == DType::I32; };
  const Tensor *t = file.find("tokens");
  if (!t) {
    for (const auto &[name, tensor] : file.tensors())
      if (isInteger(tensor.dtype)) {
        if (t)
          return fail(" has no 'tokens' tensor and several integer ones");
        t = &tensor;
      }
  }
  if (!t)
    return fail(" has no 'tokens' tensor");
  if (!isInteger(t->dtype))
    return fail(": tokens must be I64 or I32, found " +
                std::string(dtypeName(t->dtype)));
  bool rankOk = t->shape.size() == 2 || (flat && t->shape.size() == 1);
  bool empty = t->numElements() < 1;
  if (!rankOk || empty)
    return fail(flat ? ": tokens must have shape (n) or (batch, seq), found " +
                           shapeString(t->shape)
                     : ": tokens must have shape (batch, seq), found " +
                           shapeString(t->shape));
  return t;
}

Expected<TokenMatrix> readTokens(const std::string &path, bool flat) {
  auto file = SafeTensors::open(path);
  if (!file)
    return file.takeError();
  auto t = tokenTensor(*file, path, flat);
  if (!t)
    return t.takeError();
  const Tensor &tokens = **t;
  TokenMatrix out{
      {}, tokens.shape.size() == 2 ? tokens.shape[0] : 1, tokens.shape.back()};
  out.ids.reserve(tokens.numElements());
  for (int64_t i = 0; i < tokens.numElements(); ++i)
    out.ids.push_back(tokens.dtype == DType::I64
                          ? static_cast<const int64_t *>(tokens.data)[i]
                          : static_cast<const int32_t *>(tokens.data)[i]);
  return out;
}

} // namespace

namespace {

/// llm.c's token shards (its dev/data/data_common.py): a header of 256
/// int32 (magic 20240520, version 1, the token count), then the tokens as
/// uint16.
constexpr int32_t kLlmcMagic = 20240520;
constexpr int64_t kLlmcHeaderBytes = 256 * 4;

/// Whether `fd` starts with llm.c's magic and version.
bool looksLikeLlmcShard(int fd) {
  int32_t head[2];
  return ::pread(fd, head, sizeof head, 0) == ssize_t(sizeof head) &&
         head[0] == kLlmcMagic && head[1] == 1;
}

} // namespace

Expected<TokenStream> TokenStream::open(const std::string &path,
                                        const std::string &dtype) {
  TokenStream s;
  s.path_ = path;
  if (dtype == "llmc" || dtype.empty()) {
    int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        looksLikeLlmcShard(fd)) {
      int32_t header[3];
      if (::pread(fd, header, sizeof header, 0) != ssize_t(sizeof header)) {
        ::close(fd);
        return makeError("token file " + path + ": cannot read its header");
      }
      int64_t count = header[2];
      if (count <= 0 || st.st_size != kLlmcHeaderBytes + 2 * count) {
        ::close(fd);
        return makeError("token file " + path + ": an llm.c shard of " +
                         std::to_string(count) + " tokens is " +
                         std::to_string(kLlmcHeaderBytes + 2 * count) +
                         " bytes, but the file has " +
                         std::to_string(st.st_size));
      }
      s.fd_ = fd;
      s.elementBytes_ = 2;
      s.size_ = count;
      s.offset_ = kLlmcHeaderBytes;
      return s;
    }
    int openErrno = errno;
    if (fd >= 0)
      ::close(fd);
    if (dtype == "llmc")
      return makeError("token file " + path + ": " +
                       (fd < 0 ? std::string("cannot open: ") +
                                     std::strerror(openErrno)
                               : "not an llm.c shard (it does not start "
                                 "with magic 20240520, version 1)"));
  }
  if (dtype.empty()) {
    // Only the header is read here; the windows come from the file as the
    // raw forms' do, so memory is one window, never the whole stream.
    auto file = SafeTensors::open(path, SafeTensors::Load::Header);
    if (!file)
      return file.takeError();
    auto t = tokenTensor(*file, path, /*flat=*/true);
    if (!t)
      return t.takeError();
    s.elementBytes_ = dtypeSize((*t)->dtype);
    s.size_ = (*t)->numElements();
    s.offset_ = (*t)->fileOffset;
    s.fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (s.fd_ < 0)
      return makeError("token file " + path +
                       ": cannot open: " + std::strerror(errno));
    return s;
  }
  s.elementBytes_ = dtype == "uint16"  ? 2
                    : dtype == "int32" ? 4
                    : dtype == "int64" ? 8
                                       : 0;
  if (!s.elementBytes_)
    return makeError("--tokens-dtype must be uint16, int32, int64 or llmc, "
                     "found '" +
                     dtype + "'");
  // Non-blocking, so a FIFO is refused at once rather than waited on.
  s.fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (s.fd_ < 0 || ::fstat(s.fd_, &st) != 0)
    return makeError("token file " + path +
                     ": cannot open: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return makeError("token file " + path + ": is not a regular file");
  if (st.st_size % s.elementBytes_ != 0 || st.st_size == 0)
    return makeError("token file " + path + ": " + std::to_string(st.st_size) +
                     " bytes is not a whole, non-zero number of " + dtype +
                     " ids");
  s.size_ = st.st_size / s.elementBytes_;
  return s;
}

TokenStream::TokenStream(TokenStream &&o) noexcept
    : path_(std::move(o.path_)), fd_(o.fd_), elementBytes_(o.elementBytes_),
      size_(o.size_), offset_(o.offset_) {
  o.fd_ = -1;
}

TokenStream::~TokenStream() {
  if (fd_ >= 0)
    ::close(fd_);
}

Expected<std::vector<int64_t>> TokenStream::read(int64_t begin,
                                                 int64_t count) const {
  assert(begin >= 0 && count >= 0 && begin + count <= size_ &&
         "a window inside the stream");
  std::vector<unsigned char> raw(count * elementBytes_);
  size_t done = 0;
  while (done < raw.size()) {
    ssize_t n = ::pread(fd_, raw.data() + done, raw.size() - done,
                        offset_ + begin * elementBytes_ + done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return makeError("token file " + path_ + ": read failed" +
                       (n < 0 ? std::string(": ") + std::strerror(errno)
                              : std::string(" (it shrank)")));
    done += n;
  }
  std::vector<int64_t> ids(count);
  for (int64_t i = 0; i < count; ++i) {
    const unsigned char *p = raw.data() + i * elementBytes_;
    uint64_t v = 0;
    for (size_t b = 0; b < elementBytes_; ++b)
      v |= uint64_t(p[b]) << (8 * b);
    // int32 and int64 ids are signed (a negative one is then out of range).
    ids[i] = elementBytes_ == 2   ? int64_t(v)
             : elementBytes_ == 4 ? int64_t(int32_t(uint32_t(v)))
                                  : int64_t(v);
  }
  return ids;
}

} // namespace tlm::io
