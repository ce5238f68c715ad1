//===- CpuFeaturesTest.cpp - the runtime's host query against LLVM's ------===//
//
// The artifact loader asks the CPU itself (lib/runtime/CpuFeatures.cpp)
// because the runtime has no LLVM; here, where LLVM is linked, every
// feature of its table must agree with llvm::sys::getHostCPUFeatures().
//
//===----------------------------------------------------------------------===//

#include "lib/runtime/CpuFeatures.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <memory>

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
  std::vector<std::string> unreported;
  for (const std::string &name : names) {
    std::optional<bool> ours = runtime::hostHasFeature(name);
    ASSERT_TRUE(ours.has_value()) << name;
    // getHostCPUFeatures leaves out a few that every x86-64 has, or that
    // it never detects: those are compared with nothing.
    if (!llvmFeatures.count(name)) {
      unreported.push_back(name);
      continue;
    }
    EXPECT_EQ(*ours, llvmFeatures.lookup(name)) << name;
    present += *ours;
  }
  EXPECT_LE(unreported.size(), 12u) << ::testing::PrintToString(unreported);
  // Every x86-64 has SSE2; a check that cannot see any feature is broken.
  EXPECT_TRUE(*runtime::hostHasFeature("sse2"));
  EXPECT_GT(present, 5);
}

TEST(CpuFeatures, UnknownNamesAreNotChecked) {
  EXPECT_FALSE(runtime::hostHasFeature("fast-variable-perm").has_value());
  EXPECT_FALSE(runtime::hostHasFeature("").has_value());
}

// The loader refuses an artifact that needs a feature it cannot classify
// (issue 48: code for a newer --cpu used APX registers the old table did
// not list, and died of SIGILL). So every x86 feature LLVM has, in its own
// table, must be an instruction set the runtime asks the CPU about or one
// it knows names no instructions: a new LLVM that adds one fails here
// first, naming it.
TEST(CpuFeatures, EveryLlvmX86FeatureIsClassified) {
  if (!llvm::Triple(llvm::sys::getProcessTriple()).isX86())
    GTEST_SKIP() << "the table is x86-64's";
  llvm::InitializeNativeTarget();
  llvm::Triple triple("x86_64-unknown-linux-gnu");
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  ASSERT_TRUE(target) << error;
  std::unique_ptr<llvm::MCSubtargetInfo> sti(
      target->createMCSubtargetInfo(triple, "", ""));
  ASSERT_TRUE(sti);
  int instructions = 0;
  for (const llvm::SubtargetFeatureKV &kv : sti->getAllProcessorFeatures()) {
    runtime::FeatureKind kind = runtime::featureKind(kv.Key);
    EXPECT_NE(kind, runtime::FeatureKind::Unknown)
        << kv.Key << " (" << kv.Desc << ") is in neither list of "
        << "lib/runtime/CpuFeatures.cpp";
    instructions += kind == runtime::FeatureKind::Instructions;
  }
  EXPECT_GT(instructions, 100);
  // APX, the case that ran into SIGILL, is checked; tuning is not.
  EXPECT_EQ(runtime::featureKind("egpr"), runtime::FeatureKind::Instructions);
  EXPECT_EQ(runtime::featureKind("slow-3ops-lea"),
            runtime::FeatureKind::NotInstructions);
  EXPECT_EQ(runtime::featureKind("no-such-extension"),
            runtime::FeatureKind::Unknown);
}

TEST(CpuFeatures, ArchitectureIsTheTriplesFirstPart) {
  std::string triple = llvm::sys::getProcessTriple();
  EXPECT_EQ(runtime::hostArchitecture(), triple.substr(0, triple.find('-')));
}
