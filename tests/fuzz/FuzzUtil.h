//===- FuzzUtil.h - shared helpers of the libFuzzer targets -----*- C++ -*-===//
//
// TLM_FUZZ_INVARIANTS=1 in the environment turns on checks of the promises
// the parsers make beyond memory safety (for instance "bytes == numel *
// dtype size"); a violated promise aborts with a message, so libFuzzer
// records the input like any other crash. Off by default: the plain targets
// look for memory errors, undefined behaviour, leaks, hangs and aborts only.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_TESTS_FUZZ_FUZZUTIL_H
#define TLM_TESTS_FUZZ_FUZZUTIL_H

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

namespace tlm::fuzz {

inline bool invariantsEnabled() {
  static const bool on = [] {
    const char *v = std::getenv("TLM_FUZZ_INVARIANTS");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return on;
}

[[noreturn]] inline void invariantFailed(const char *what) {
  std::fprintf(stderr, "tlm fuzz: invariant violated: %s\n", what);
  std::abort();
}

#define TLM_FUZZ_CHECK(cond, what)                                             \
  do {                                                                         \
    if (::tlm::fuzz::invariantsEnabled() && !(cond))                           \
      ::tlm::fuzz::invariantFailed(what);                                      \
  } while (0)

/// Keeps a value alive so the loads that produced it are not optimised away.
template <typename T> inline void keep(const T &value) {
  asm volatile("" : : "r"(&value) : "memory");
}

/// The fuzz input as a file, for parsers that take a path: a temporary file
/// in $TMPDIR (default /tmp) made once per process and rewritten for every
/// input. It is unlinked at once and reopened through /proc/self/fd/N, so a
/// crashing run leaves nothing behind; where /proc is missing it keeps its
/// name and is removed at exit.
class InputFile {
public:
  explicit InputFile(const char *tag) {
    const char *dir = std::getenv("TMPDIR");
    std::string name = std::string(dir && *dir ? dir : "/tmp") + "/tlm-fuzz-" +
                       tag + "-XXXXXX";
    fd = ::mkstemp(name.data());
    if (fd < 0)
      fail(name.c_str());
    std::string proc = "/proc/self/fd/" + std::to_string(fd);
    if (::access(proc.c_str(), R_OK) == 0 && ::unlink(name.c_str()) == 0) {
      path_ = proc;
    } else {
      path_ = name;
      named() = name;
      std::atexit([] { ::unlink(named().c_str()); });
    }
  }
  InputFile(const InputFile &) = delete;
  InputFile &operator=(const InputFile &) = delete;

  const std::string &path() const { return path_; }

  /// Replaces the file's contents with `data`; aborts if it cannot (that is
  /// a broken harness, not a finding).
  void write(const uint8_t *data, size_t size) {
    if (::ftruncate(fd, 0) != 0)
      fail(path_.c_str());
    off_t offset = 0;
    while (size > 0) {
      ssize_t w = ::pwrite(fd, data, size, offset);
      if (w <= 0)
        fail(path_.c_str());
      data += w, size -= static_cast<size_t>(w), offset += w;
    }
  }

private:
  int fd = -1;
  std::string path_;

  static std::string &named() {
    static std::string name;
    return name;
  }
  [[noreturn]] static void fail(const char *what) {
    std::perror(what);
    std::abort();
  }
};

} // namespace tlm::fuzz

#endif // TLM_TESTS_FUZZ_FUZZUTIL_H
