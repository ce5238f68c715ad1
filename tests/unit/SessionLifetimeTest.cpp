//===- SessionLifetimeTest.cpp - compile and run many times, leak nothing -===//
//
// A long-lived host (a server, a notebook) compiles models again and again.
// This test builds, runs and destroys a Session 50 times in one process:
// every run must give the same logits, and memory must not grow. In the
// sanitizer build LeakSanitizer checks every allocation at exit; in a plain
// build the resident set after the last run is compared with the one after
// the warm-up runs (glibc keeps freed memory, so the first runs set the
// level; a leak of one MLIR context or JIT per run would add megabytes each).
//
//===----------------------------------------------------------------------===//

#include "lib/model/Weights.h"
#include "lib/compiler/Jit.h"
#include "lib/runtime/Session.h"

#include <fstream>
#include <numeric>
#include <unistd.h>

#include <gtest/gtest.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TLM_ASAN 1
#endif
#endif

using namespace tlm;

namespace {

/// Resident set size now, in MB (/proc/self/statm's second field).
double residentMb() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * double(sysconf(_SC_PAGESIZE)) / (1 << 20);
}

model::Config tinyConfig() {
  model::Config c;
  c.vocabSize = 256;
  c.contextLength = 32;
  c.dModel = 64;
  c.numLayers = 2;
  c.numHeads = 4;
  c.numKvHeads = 2;
  c.dFF = 128;
  return c;
}

TEST(SessionLifetime, FiftyCompilesAndRunsLeakNothing) {
  constexpr int kRuns = 50, kWarmUp = 10;
  constexpr double kMaxGrowthMb = 16.0;
  model::Config c = tinyConfig();
  auto weights = model::Weights::init(c, 7, model::InitScheme::Module);
  ASSERT_TRUE(bool(weights)) << weights.takeError().message();
  std::vector<int64_t> ids(8);
  std::iota(ids.begin(), ids.end(), 3);

  std::vector<float> first;
  double afterWarmUp = 0;
  for (int run = 0; run < kRuns; ++run) {
    runtime::JitOptions jit;
    jit.optLevel = 0;
    auto session = runtime::Session::create(c, weights->pointers(), {}, jit);
    ASSERT_TRUE(bool(session)) << session.takeError().message();
    std::vector<float> logits(ids.size() * c.vocabSize);
    // Prefill then one decode step: both entries are exercised.
    ASSERT_FALSE(bool((*session)->step(ids.data(), 7, logits.data())));
    ASSERT_FALSE(bool((*session)->step(ids.data() + 7, 1, logits.data())));
    if (run == 0)
      first = logits;
    else
      ASSERT_EQ(logits, first) << "run " << run << " differs from run 0";
    if (run + 1 == kWarmUp)
      afterWarmUp = residentMb();
  }
  double growth = residentMb() - afterWarmUp;
  RecordProperty("rss_growth_mb", std::to_string(growth));
#ifndef TLM_ASAN
  // ASan's quarantine holds freed memory on purpose; LSan checks instead.
  EXPECT_LE(growth, kMaxGrowthMb)
      << "resident memory grew " << growth << " MB over " << kRuns - kWarmUp
      << " compile-and-run cycles";
#endif
}

} // namespace
