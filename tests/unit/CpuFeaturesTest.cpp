//===- CpuFeaturesTest.cpp - the runtime's host query against LLVM's ------===//
//
// The artifact loader asks the CPU itself (lib/runtime/CpuFeatures.cpp)
// because the runtime has no LLVM; here, where LLVM is linked, every
// feature of its table must agree with llvm::sys::getHostCPUFeatures().
//
//===----------------------------------------------------------------------===//

#include "lib/runtime/CpuFeatures.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <gtest/gtest.h>

using namespace tlm;

TEST(CpuFeatures, AgreeWithLlvmOnThisHost) {
  llvm::StringMap<bool, llvm::MallocAllocator> llvmFeatures =
      llvm::sys::getHostCPUFeatures();
  std::vector<std::string> names = runtime::checkableFeatures();
  llvm::Triple host(llvm::sys::getProcessTriple());
  if (!host.isX86()) {
    EXPECT_TRUE(names.empty());
    GTEST_SKIP() << "the table is x86-64's";
  }
  ASSERT_GT(names.size(), 40u);
  int present = 0;
  for (const std::string &name : names) {
    std::optional<bool> ours = runtime::hostHasFeature(name);
    ASSERT_TRUE(ours.has_value()) << name;
    ASSERT_TRUE(llvmFeatures.count(name)) << name << ": not an LLVM feature";
    EXPECT_EQ(*ours, llvmFeatures.lookup(name)) << name;
    present += *ours;
  }
  // Every x86-64 has SSE2; a check that cannot see any feature is broken.
  EXPECT_TRUE(*runtime::hostHasFeature("sse2"));
  EXPECT_GT(present, 5);
}

TEST(CpuFeatures, UnknownNamesAreNotChecked) {
  EXPECT_FALSE(runtime::hostHasFeature("fast-variable-perm").has_value());
  EXPECT_FALSE(runtime::hostHasFeature("").has_value());
}

TEST(CpuFeatures, ArchitectureIsTheTriplesFirstPart) {
  std::string triple = llvm::sys::getProcessTriple();
  EXPECT_EQ(runtime::hostArchitecture(), triple.substr(0, triple.find('-')));
}
