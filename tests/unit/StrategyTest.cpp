//===- StrategyTest.cpp - the CPU strategy's rules at their boundaries ----===//
//
// passes/cpu/Strategy.h decides every size the CPU code is blocked by; these
// pin each rule where it changes its answer.
//
//===----------------------------------------------------------------------===//

#include "passes/cpu/Strategy.h"
#include "lib/compiler/HostTarget.h"

#include "mlir/IR/BuiltinTypeInterfaces.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <gtest/gtest.h>

using namespace mlir::tlm;

namespace {

// Decode's GEMV streams W one row after another (1-column blocks) exactly
// when the weights outgrow the last-level cache; unknown weights keep 8, and
// a requested count always wins.
TEST(Strategy, GemvColumnsOneStreamOnlyBeyondTheLastLevelCache) {
  CpuTarget t;
  t.lastLevelCacheBytes = 1000;
  EXPECT_EQ(gemvColumns(t, 1000), 8);
  EXPECT_EQ(gemvColumns(t, 1001), 1);
  EXPECT_EQ(gemvColumns(t, 0), 8);
  EXPECT_EQ(gemvColumns(t, 1001, /*requested=*/4), 4);
  EXPECT_EQ(gemvColumns(t, 10, /*requested=*/1), 1);
}

// Packed tiles keep pack-rows x 2 accumulators plus three registers.
TEST(Strategy, RegisterBlocksFitTheRegisterFile) {
  RegisterBlocks avx512 = registerBlocks(16, 32);
  EXPECT_EQ(avx512.packRows, 8);
  EXPECT_EQ(avx512.packCols, 32);
  EXPECT_EQ(avx512.rowTile, 8);
  RegisterBlocks avx2 = registerBlocks(8, 16);
  EXPECT_EQ(avx2.packRows, 6);
  EXPECT_EQ(avx2.packCols, 16);
  EXPECT_EQ(avx2.rowTile, 4);
  for (int64_t registers : {1, 4, 16, 32, 64}) {
    RegisterBlocks b = registerBlocks(4, registers);
    EXPECT_LE(2 * b.packRows + 3, std::max<int64_t>(registers, 5));
    EXPECT_GE(b.packRows, 1);
    EXPECT_GE(b.rowTile, 1);
  }
}

// Another width than the host's gets the registers an x86 host of that
// width has; 0 or the host's own width keep the host.
TEST(Strategy, WithLanes) {
  CpuTarget host{8, 16, 1 << 20};
  EXPECT_EQ(withLanes(host, 0).lanes, 8);
  EXPECT_EQ(withLanes(host, 16).vectorRegisters, 32);
  EXPECT_EQ(withLanes(host, 4).vectorRegisters, 16);
  EXPECT_EQ(withLanes(host, 16).lastLevelCacheBytes, uint64_t(1) << 20);
}

// AVX-512 instructions named directly (vpermps: lookup-nibbles) need the
// feature, not just 16 lanes: LLVM splits a 16-lane vector for AVX2, but
// cannot select an intrinsic the CPU lacks.
TEST(Strategy, Avx512OnlyWithTheFeature) {
  using tlm::runtime::cpuTargetFor;
  EXPECT_TRUE(cpuTargetFor({"avx", "avx2", "avx512f"}).avx512);
  EXPECT_FALSE(cpuTargetFor({"avx", "avx2"}).avx512);
  EXPECT_FALSE(withLanes(cpuTargetFor({"avx", "avx2"}), 16).avx512);
  EXPECT_FALSE(cpuTargetFor({"neon"}).avx512);
}

// Chunks of whole blocks that divide the columns, as few as keep the
// busiest thread within 1/16 of an even share.
TEST(Strategy, ThreadChunksAreWholeBlocks) {
  int64_t chunk = threadChunk(10000, 16, 2);
  EXPECT_EQ(10000 % chunk, 0);
  EXPECT_EQ(chunk % 16, 0);
  int64_t chunks = 10000 / chunk, busiest = (chunks + 1) / 2 * chunk;
  EXPECT_LE(busiest * 16, 5008 * 17);
  EXPECT_EQ(threadChunk(1024, 32, 2), 512);
  EXPECT_EQ(threadChunk(1024, 32, 1), 1024);
  // No whole blocks: an even split rounded up to blocks.
  EXPECT_EQ(threadChunk(1000, 16, 2), 512);
  EXPECT_EQ(threadChunk(mlir::ShapedType::kDynamic, 16, 2) % 16, 0);
}

TEST(Strategy, HeadChunksDivideTheHeads) {
  EXPECT_EQ(headChunk(12, 1), 12);
  EXPECT_EQ(headChunk(12, 2), 6);
  EXPECT_EQ(headChunk(12, 5), 3);
  EXPECT_EQ(headChunk(7, 2), 1);
  EXPECT_EQ(headChunk(4, 0), 4);
}

// The last-level cache as Linux describes it, from a folder laid out as
// /sys/devices/system/cpu/cpu0/cache: the highest level's data or unified
// cache, never an instruction cache; K and M sizes; 0 for no folder.
TEST(Strategy, LastLevelCacheFromLinuxsCacheFolder) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() /
                 ("tlm-cache-" + std::to_string(::getpid()));
  auto entry = [&](int index, int level, const char *type, const char *size) {
    fs::path d = dir / ("index" + std::to_string(index));
    fs::create_directories(d);
    std::ofstream(d / "level") << level << "\n";
    std::ofstream(d / "type") << type << "\n";
    std::ofstream(d / "size") << size << "\n";
  };
  EXPECT_EQ(tlm::runtime::lastLevelCacheIn(dir.string()), 0u);
  entry(0, 1, "Data", "48K");
  entry(1, 1, "Instruction", "32K");
  entry(2, 2, "Unified", "1024K");
  EXPECT_EQ(tlm::runtime::lastLevelCacheIn(dir.string()), 1024u * 1024);
  entry(3, 3, "Unified", "32768K");
  EXPECT_EQ(tlm::runtime::lastLevelCacheIn(dir.string()), 32u << 20);
  entry(4, 4, "Instruction", "64M"); // not data: L3 stays the answer
  EXPECT_EQ(tlm::runtime::lastLevelCacheIn(dir.string()), 32u << 20);
  fs::remove_all(dir);
}

TEST(Strategy, HostTargetIsOneOfTheKnownShapes) {
  CpuTarget host = tlm::runtime::hostCpuTarget();
  EXPECT_TRUE(host.lanes == 16 || host.lanes == 8 || host.lanes == 4);
  EXPECT_TRUE(host.vectorRegisters == 32 || host.vectorRegisters == 16);
  EXPECT_GT(host.lastLevelCacheBytes, 0u);
}

} // namespace
