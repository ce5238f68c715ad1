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
            "warning: peak RSS 308.0 MB exceeds the memory budget of "
            "docs/memory.md, 280.0 MB, by 28.0 MB (10%)");
}
