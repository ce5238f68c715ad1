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

#include <cstdio>
#include <cstdlib>
#include <cstring>

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

#define TLM_FUZZ_CHECK(cond, what)                                            \
  do {                                                                        \
    if (::tlm::fuzz::invariantsEnabled() && !(cond))                          \
      ::tlm::fuzz::invariantFailed(what);                                     \
  } while (0)

/// Keeps a value alive so the loads that produced it are not optimised away.
template <typename T> inline void keep(const T &value) {
  asm volatile("" : : "r"(&value) : "memory");
}

} // namespace tlm::fuzz

#endif // TLM_TESTS_FUZZ_FUZZUTIL_H
