//===- CompileCacheTest.cpp - entries survive whole or not at all ---------===//

#include "lib/compiler/CompileCache.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <fstream>

#include <gtest/gtest.h>

using namespace tlm::runtime;

namespace {

std::string freshDir() {
  llvm::SmallString<128> dir;
  EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("tlm-cache-test", dir));
  return dir.str().str();
}

std::vector<Bytes> sampleObjects() {
  std::vector<Bytes> objects(3);
  for (size_t i = 0; i < objects.size(); ++i)
    for (size_t j = 0; j < 1000 * (i + 1); ++j)
      objects[i].push_back(char(j * 7 + i));
  objects[1].clear(); // an empty object survives too
  return objects;
}

std::string readFile(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  return buffer ? (*buffer)->getBuffer().str() : "";
}

void writeFile(const std::string &path, const std::string &data) {
  std::ofstream(path, std::ios::binary) << data;
}

TEST(CompileCache, StoresAndLoadsTheSameObjects) {
  CompileCache cache(freshDir() + "/sub");
  EXPECT_FALSE(cache.load("key").has_value());
  std::vector<Bytes> objects = sampleObjects();
  ASSERT_FALSE(bool(cache.store("key", objects)));
  std::optional<std::vector<Bytes>> loaded = cache.load("key");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(*loaded, objects);
  EXPECT_FALSE(cache.load("another key").has_value());
}

// Truncated at any point, or with any byte changed, an entry reads as
// absent.
TEST(CompileCache, DamagedEntriesAreAbsent) {
  CompileCache cache(freshDir());
  ASSERT_FALSE(bool(cache.store("key", sampleObjects())));
  std::string path = cache.pathFor("key"), whole = readFile(path);
  ASSERT_FALSE(whole.empty());
  for (size_t cut : {size_t(0), size_t(7), size_t(100), whole.size() - 1}) {
    writeFile(path, whole.substr(0, cut));
    EXPECT_FALSE(cache.load("key").has_value()) << "cut at " << cut;
  }
  for (size_t at :
       {size_t(0), size_t(20), whole.size() / 2, whole.size() - 1}) {
    std::string changed = whole;
    changed[at] ^= 1;
    writeFile(path, changed);
    EXPECT_FALSE(cache.load("key").has_value()) << "byte " << at;
  }
  writeFile(path, whole);
  EXPECT_TRUE(cache.load("key").has_value());
}

// An intact entry of another key under this key's name is not taken.
TEST(CompileCache, ForeignEntriesAreAbsent) {
  CompileCache cache(freshDir());
  ASSERT_FALSE(bool(cache.store("one", sampleObjects())));
  writeFile(cache.pathFor("two"), readFile(cache.pathFor("one")));
  EXPECT_FALSE(cache.load("two").has_value());
  EXPECT_TRUE(cache.load("one").has_value());
}

TEST(CompileCache, UnwritableFolderIsAnError) {
  std::string dir = freshDir();
  writeFile(dir + "/file", "x");
  CompileCache cache(dir + "/file/sub");
  llvm::Error err = cache.store("key", sampleObjects());
  ASSERT_TRUE(bool(err));
  EXPECT_NE(llvm::toString(std::move(err)).find("compile cache"),
            std::string::npos);
}

TEST(CompileCache, CompilerIdentityNamesTheExecutable) {
  EXPECT_NE(compilerIdentity().find(" exe "), std::string::npos);
  EXPECT_EQ(compilerIdentity().find("unknown"), std::string::npos);
}

} // namespace
