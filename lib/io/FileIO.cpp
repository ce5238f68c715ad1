//===- FileIO.cpp - files that are read whole or written whole ------------===//

#include "lib/io/FileIO.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tlm::io {

namespace {

llvm::Error fileError(const std::string &path, const llvm::Twine &why) {
  return llvm::createStringError(path + ": " + why);
}

const char *kindOf(mode_t mode) {
  if (S_ISDIR(mode))
    return "is a folder, not a file";
  if (S_ISFIFO(mode))
    return "is a FIFO, not a regular file";
  if (S_ISCHR(mode) || S_ISBLK(mode))
    return "is a device, not a regular file";
  if (S_ISSOCK(mode))
    return "is a socket, not a regular file";
  return "is not a regular file";
}

} // namespace

llvm::Expected<int> openRegularFile(const std::string &path) {
  // O_NONBLOCK: opening a FIFO with no writer would wait for one.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return fileError(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const char *why = kindOf(st.st_mode);
    ::close(fd);
    return fileError(path, why);
  }
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0)
    ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

llvm::Expected<std::string> readRegularFile(const std::string &path,
                                            uint64_t maxBytes) {
  llvm::Expected<int> fd = openRegularFile(path);
  if (!fd)
    return fd.takeError();
  std::string data;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(*fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int err = errno;
      ::close(*fd);
      return fileError(path, std::string("cannot read: ") + std::strerror(err));
    }
    if (n == 0)
      break;
    if (data.size() + n > maxBytes) {
      ::close(*fd);
      return fileError(path, "is larger than " + std::to_string(maxBytes) +
                                 " bytes, the most this file may hold");
    }
    data.append(buf, n);
  }
  ::close(*fd);
  return data;
}

llvm::Expected<AtomicFile> AtomicFile::create(const std::string &path) {
  int fd;
  llvm::SmallString<256> temp;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueFile(path + ".tmp-%%%%%%%%", fd, temp))
    return fileError(path, "cannot write: " + ec.message());
  // A signal while writing takes the temporary file with it.
  llvm::sys::RemoveFileOnSignal(temp);
  return AtomicFile(path, temp.str().str(), fd);
}

AtomicFile::AtomicFile(AtomicFile &&other)
    : path_(std::move(other.path_)), temp_(std::move(other.temp_)),
      fd_(other.fd_) {
  other.fd_ = -1;
  other.temp_.clear();
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0)
    ::close(fd_);
  if (!temp_.empty()) {
    ::unlink(temp_.c_str());
    llvm::sys::DontRemoveFileOnSignal(temp_);
  }
}

llvm::Error AtomicFile::write(const void *data, size_t bytes) {
  const char *p = static_cast<const char *>(data);
  while (bytes > 0) {
    ssize_t n = ::write(fd_, p, bytes);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return fileError(path_, std::string("cannot write: ") +
                                  std::strerror(n < 0 ? errno : ENOSPC));
    p += n;
    bytes -= n;
  }
  return llvm::Error::success();
}

llvm::Error AtomicFile::commit() {
  // Data on disk before the name points at it: after a crash the path holds
  // the old file or the whole new one.
  if (::fsync(fd_) != 0)
    return fileError(path_,
                     std::string("cannot write: ") + std::strerror(errno));
  int closed = ::close(fd_);
  fd_ = -1;
  if (closed != 0)
    return fileError(path_,
                     std::string("cannot write: ") + std::strerror(errno));
  if (::rename(temp_.c_str(), path_.c_str()) != 0)
    return fileError(path_,
                     std::string("cannot write: ") + std::strerror(errno));
  llvm::sys::DontRemoveFileOnSignal(temp_);
  temp_.clear();
  return llvm::Error::success();
}

llvm::Error refuseOverwritingInput(const std::string &output,
                                   llvm::ArrayRef<std::string> inputs,
                                   llvm::StringRef what) {
  if (output.empty())
    return llvm::Error::success();
  for (const std::string &input : inputs) {
    bool same = false;
    if (!input.empty() && !llvm::sys::fs::equivalent(output, input, same) &&
        same)
      return llvm::createStringError(what + " '" + output +
                                     "' is also an input ('" + input +
                                     "'): refusing to overwrite it");
  }
  return llvm::Error::success();
}

} // namespace tlm::io
