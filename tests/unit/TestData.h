//===- TestData.h - where the tests find their data -------------*- C++ -*-===//
//
// The conformance cases and the models the tests read live in the
// repository's data/ folder (TLM_DATA_DIR, set by CMake; the environment
// variable of the same name overrides it). Missing data fails the test that
// needs it: nothing is skipped quietly.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_TESTS_UNIT_TESTDATA_H
#define TLM_TESTS_UNIT_TESTDATA_H

#include <cstdlib>
#include <string>

namespace tlm::test {

inline std::string dataDir() {
  if (const char *env = std::getenv("TLM_DATA_DIR"); env && *env)
    return env;
  return TLM_DATA_DIR;
}

} // namespace tlm::test

#endif // TLM_TESTS_UNIT_TESTDATA_H
