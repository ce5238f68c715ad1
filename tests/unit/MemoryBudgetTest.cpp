//===- MemoryBudgetTest.cpp - bench's resident-memory budget --------------===//
//
// The bound is docs/memory.md's sum, and the warning says by how much a
// peak exceeds it: bench cannot be made to overrun on purpose, so the rule
// is checked here on numbers.
//
//===----------------------------------------------------------------------===//

#include "tools/common/Commands.h"

#include <gtest/gtest.h>

using tlm::cli::MemoryBudget;

TEST(MemoryBudget, BoundIsTheDocumentedSum) {
  MemoryBudget b{100, 20, 10, 80, 50};
  EXPECT_DOUBLE_EQ(b.bound(), 1.2 * 100 + 20 + 10 + 80 + 50);
}

TEST(MemoryBudget, WarnsOnlyAboveTheBoundAndSaysByHowMuch) {
  MemoryBudget b{100, 20, 10, 80, 50}; // bound 280
  EXPECT_EQ(b.warning(279.9), "");
  EXPECT_EQ(b.warning(280.0), "");
  EXPECT_EQ(b.warning(308.0),
            "warning: peak RSS 308.0 MiB exceeds the memory budget of "
            "docs/memory.md, 280.0 MiB, by 28.0 MiB (10%)");
}

// The compiled code's heap bound: the untouched KV cache is subtracted from
// memory that counts pages as they are touched (the machine's, a
// cgroup's), not from an address-space limit, which counted its
// reservation already (subtracting it again bounded the heap at 1 byte
// under a ulimit -v that the run fitted).
TEST(CompiledHeapLimit, CountsTheKvCacheOnce) {
  using tlm::cli::compiledHeapLimit;
  tlm::model::MemoryLimit machine{10e9, "this machine has available", false};
  EXPECT_DOUBLE_EQ(compiledHeapLimit(machine, 3e9, 1e9, 0.5e9), 7.5e9);
  tlm::model::MemoryLimit addressSpace{1e9, "the process's RLIMIT_AS", true};
  EXPECT_DOUBLE_EQ(compiledHeapLimit(addressSpace, 3e9, 0, 0.25e9), 0.75e9);
  EXPECT_DOUBLE_EQ(compiledHeapLimit(machine, 30e9, 0, 0), 1.0)
      << "never 0 (no limit) or negative";
}
