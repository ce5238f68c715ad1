//===- FileIO.cpp - files that are read whole or written whole ------------===//

#include "lib/io/FileIO.h"

#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>

namespace tlm::io {

namespace {

Error fileError(const std::string &path, const std::string &why) {
  return makeError(path + ": " + why);
}

/// The temporary files a signal must take with it. Slots hold strdup'd
/// paths, claimed and cleared atomically, so the handler (which may run
/// between any two instructions) reads either a whole path or null.
constexpr int kMaxPending = 64;
std::atomic<char *> pending[kMaxPending];
struct sigaction previous[NSIG];

extern "C" void removePendingAndReraise(int signal) {
  int saved = errno;
  for (std::atomic<char *> &slot : pending)
    if (char *path = slot.exchange(nullptr))
      ::unlink(path);
  errno = saved;
  // The handler before ours (LLVM's in tlm-run, or the default) decides
  // what the signal does next.
  sigaction(signal, &previous[signal], nullptr);
  ::raise(signal);
}

void installHandlersOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa = {};
    sa.sa_handler = removePendingAndReraise;
    sigemptyset(&sa.sa_mask);
    for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
      sigaction(signal, &sa, &previous[signal]);
      // An ignored signal (nohup, a background job) stays ignored: it
      // ends nothing, so no file needs removing.
      if (previous[signal].sa_handler == SIG_IGN)
        sigaction(signal, &previous[signal], nullptr);
    }
  });
}

/// Registers `path`; the returned copy (null when every slot is taken: the
/// file is then removed on every path but a signal) is what
/// dontRemoveOnSignal() takes back.
char *removeOnSignal(const std::string &path) {
  installHandlersOnce();
  char *copy = ::strdup(path.c_str());
  for (std::atomic<char *> &slot : pending) {
    char *expected = nullptr;
    if (slot.compare_exchange_strong(expected, copy))
      return copy;
  }
  std::free(copy);
  return nullptr;
}

/// Takes `registered` (removeOnSignal's copy) back, unless a signal's
/// handler took it first. Slots are compared by pointer, never read.
void dontRemoveOnSignal(char *registered) {
  if (!registered)
    return;
  for (std::atomic<char *> &slot : pending) {
    char *expected = registered;
    if (slot.compare_exchange_strong(expected, nullptr)) {
      std::free(registered);
      return;
    }
  }
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

Expected<int> openRegularFile(const std::string &path) {
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

Expected<std::string> readToEnd(int fd, const std::string &name,
                                uint64_t maxBytes) {
  std::string data;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return fileError(name,
                       std::string("cannot read: ") + std::strerror(errno));
    if (n == 0)
      return data;
    if (data.size() + size_t(n) > maxBytes)
      return fileError(name, "is larger than " + std::to_string(maxBytes) +
                                 " bytes, the most this file may hold");
    data.append(buf, size_t(n));
  }
}

Expected<std::string> readRegularFile(const std::string &path,
                                      uint64_t maxBytes) {
  Expected<int> fd = openRegularFile(path);
  if (!fd)
    return fd.takeError();
  Expected<std::string> data = readToEnd(*fd, path, maxBytes);
  ::close(*fd);
  return data;
}

Error checkFileOutput(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode))
      return fileError(path, kindOf(st.st_mode));
    return Error::success();
  }
  std::string folder = path;
  size_t slash = folder.find_last_of('/');
  folder = slash == std::string::npos ? "."
           : slash == 0               ? "/"
                                      : folder.substr(0, slash);
  if (::stat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return fileError(path, "its folder " + folder + " does not exist");
  return Error::success();
}

Expected<std::string> readInput(const std::string &path, uint64_t maxBytes) {
  if (path != "-")
    return readRegularFile(path, maxBytes);
  return readToEnd(0, "standard input", maxBytes);
}

Expected<AtomicFile> AtomicFile::create(const std::string &given) {
  std::string path = given;
  struct stat target, link;
  bool exists = ::stat(path.c_str(), &target) == 0;
  // An output that is a stream already open elsewhere (/dev/stdout, a
  // /proc/self/fd link, a device, a FIFO) is written into, appending, as a
  // shell's `>>` would: renaming over it would replace the link or the
  // device node with a file.
  bool stream = exists && !S_ISREG(target.st_mode);
  if (exists && !stream && ::lstat(path.c_str(), &link) == 0 &&
      S_ISLNK(link.st_mode)) {
    char linkTarget[PATH_MAX];
    ssize_t n = ::readlink(path.c_str(), linkTarget, sizeof(linkTarget) - 1);
    std::string_view to(linkTarget, n > 0 ? size_t(n) : 0);
    char resolved[PATH_MAX];
    if (startsWith(path, "/proc/") || startsWith(to, "/proc/") ||
        startsWith(to, "/dev/") || !::realpath(path.c_str(), resolved))
      stream = true;
    else
      path = resolved; // the file the link names is replaced, the link kept
  }
  if (stream) {
    if (S_ISDIR(target.st_mode))
      return fileError(given, "is a folder, not a file");
    if (!S_ISREG(target.st_mode) && !S_ISCHR(target.st_mode) &&
        !S_ISFIFO(target.st_mode))
      return fileError(given, "is not a regular file, a device or a FIFO");
    int flags = O_WRONLY | O_CLOEXEC | (S_ISREG(target.st_mode) ? O_APPEND : 0);
    int fd = ::open(given.c_str(), flags);
    if (fd < 0)
      return fileError(given,
                       std::string("cannot write: ") + std::strerror(errno));
    return AtomicFile(given, "", fd, nullptr);
  }
  // A name of our own rather than mkostemp's, which makes the file 0600:
  // created with 0666, it gets the umask's mode like any new file.
  static std::atomic<unsigned> counter{0};
  std::string temp;
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
    temp = path + ".tmp-" + std::to_string(::getpid()) + "-" +
           std::to_string(counter++);
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST)
      break;
  }
  if (fd < 0)
    return fileError(path,
                     std::string("cannot write: ") + std::strerror(errno));
  // A signal while writing takes the temporary file with it.
  char *registered = removeOnSignal(temp);
  return AtomicFile(path, temp, fd, registered);
}

AtomicFile::AtomicFile(AtomicFile &&other)
    : path_(std::move(other.path_)), temp_(std::move(other.temp_)),
      fd_(other.fd_), registered_(other.registered_) {
  other.fd_ = -1;
  other.temp_.clear();
  other.registered_ = nullptr;
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0)
    ::close(fd_);
  if (!temp_.empty()) {
    ::unlink(temp_.c_str());
    dontRemoveOnSignal(registered_);
  }
}

Error AtomicFile::write(const void *data, size_t bytes) {
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
  return Error::success();
}

Error AtomicFile::commit() {
  if (temp_.empty()) { // a device or FIFO, written directly
    int closed = ::close(fd_);
    fd_ = -1;
    if (closed != 0)
      return fileError(path_,
                       std::string("cannot write: ") + std::strerror(errno));
    return Error::success();
  }
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
  dontRemoveOnSignal(registered_);
  registered_ = nullptr;
  temp_.clear();
  return Error::success();
}

RemoveOnSignal::RemoveOnSignal(const std::string &path)
    : registered_(removeOnSignal(path)) {}

RemoveOnSignal::~RemoveOnSignal() { dontRemoveOnSignal(registered_); }

Error syncFile(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    int err = errno;
    if (fd >= 0)
      ::close(fd);
    return fileError(path, std::string("cannot write: ") + std::strerror(err));
  }
  ::close(fd);
  return Error::success();
}

Error refuseOverwritingInput(const std::string &output,
                             const std::vector<std::string> &inputs,
                             std::string_view what) {
  if (output.empty())
    return Error::success();
  struct stat out;
  if (::stat(output.c_str(), &out) != 0)
    return Error::success(); // a new file is no input
  // The folder the output is in (where it really is: a link into an input
  // folder is written through): an input given as a folder (a tokenizer's,
  // read file by file) has every file in it as an input.
  char real[PATH_MAX];
  std::string parent = ::realpath(output.c_str(), real) ? real : output;
  size_t slash = parent.find_last_of('/');
  parent = slash == std::string::npos ? "."
           : slash == 0               ? "/"
                                      : parent.substr(0, slash);
  struct stat folder;
  bool hasFolder = ::stat(parent.c_str(), &folder) == 0;
  for (const std::string &input : inputs) {
    struct stat in;
    if (input.empty() || ::stat(input.c_str(), &in) != 0)
      continue;
    if (in.st_dev == out.st_dev && in.st_ino == out.st_ino)
      return makeError(std::string(what) + " '" + output +
                       "' is also an input ('" + input +
                       "'): refusing to overwrite it");
    if (S_ISDIR(in.st_mode) && hasFolder && in.st_dev == folder.st_dev &&
        in.st_ino == folder.st_ino)
      return makeError(std::string(what) + " '" + output +
                       "' is a file of the input folder '" + input +
                       "': refusing to overwrite it");
  }
  return Error::success();
}

} // namespace tlm::io
