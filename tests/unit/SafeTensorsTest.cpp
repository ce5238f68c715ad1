//===- SafeTensorsTest.cpp - the safetensors reader rejects bad files -----===//

#include "lib/io/SafeTensors.h"
#include "lib/io/LargeBuffer.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <unistd.h>

#include <gtest/gtest.h>

using namespace tlm::io;

namespace {

std::string tempPath(const std::string &name) {
  const char *dir = std::getenv("TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/tlm-st-" +
         std::to_string(::getpid()) + "-" + name;
}

/// Writes a file made of an 8-byte length, `header` and `data`.
std::string writeRaw(const std::string &name, const std::string &header,
                     const std::string &data, uint64_t claimedLen = ~0ull) {
  std::string path = tempPath(name);
  std::ofstream f(path, std::ios::binary);
  uint64_t len = claimedLen == ~0ull ? header.size() : claimedLen;
  for (int i = 0; i < 8; ++i)
    f.put(static_cast<char>(len >> (8 * i)));
  f << header << data;
  return path;
}

std::string errorOf(const std::string &path) {
  auto st = SafeTensors::open(path);
  std::remove(path.c_str());
  if (st)
    return "";
  return st.takeError().message();
}

TEST(SafeTensors, WriteThenReadRoundTrips) {
  std::vector<float> a = {1, 2, 3, 4, 5, 6};
  std::vector<int64_t> ids = {7, -1};
  std::string path = tempPath("roundtrip");
  ASSERT_FALSE(
      bool(writeSafeTensors(path, {{"a", DType::F32, {2, 3}, a.data()},
                                   {"ids", DType::I64, {2}, ids.data()}})));
  auto st = SafeTensors::open(path);
  std::remove(path.c_str());
  ASSERT_TRUE(bool(st)) << st.takeError().message();
  const Tensor *t = st->find("a");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(std::vector<float>(t->f32(), t->f32() + 6), a);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data) % 64, 0u);
  const Tensor *i = st->find("ids");
  ASSERT_NE(i, nullptr);
  EXPECT_EQ(static_cast<const int64_t *>(i->data)[1], -1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(i->data) % 64, 0u);
  EXPECT_EQ(st->dataBytes(), 6 * 4 + 2 * 8u);
}

TEST(SafeTensors, RejectsTooShortFile) {
  std::string path = tempPath("short");
  std::ofstream(path) << "abc";
  EXPECT_NE(errorOf(path).find("too short for the 8-byte header length"),
            std::string::npos);
}

TEST(SafeTensors, RejectsHeaderPastEnd) {
  EXPECT_NE(errorOf(writeRaw("pastend", "{}", "", 4096))
                .find("header length 4096 runs past the end"),
            std::string::npos);
}

TEST(SafeTensors, RejectsHugeHeader) {
  EXPECT_NE(
      errorOf(writeRaw("huge", "{}", "", 1ull << 40)).find("exceeds the cap"),
      std::string::npos);
}

TEST(SafeTensors, RejectsNonJSONHeader) {
  EXPECT_NE(errorOf(writeRaw("nonjson", "{not json", "")).find("not a JSON"),
            std::string::npos);
}

TEST(SafeTensors, RejectsOffsetsOutsideData) {
  std::string h = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  EXPECT_NE(
      errorOf(writeRaw("outside", h, "1234")).find("lie outside the 4 data"),
      std::string::npos);
}

TEST(SafeTensors, RejectsByteCountMismatch) {
  std::string h = R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})";
  EXPECT_NE(errorOf(writeRaw("count", h, "12345678"))
                .find("holds 8 bytes but F32 (3) needs 12"),
            std::string::npos);
}

TEST(SafeTensors, RejectsOverlap) {
  std::string h = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                  R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
  EXPECT_NE(errorOf(writeRaw("overlap", h, "123456789012")).find("overlap"),
            std::string::npos);
}

// Found by fuzzing: 2^31 x 2^31 F32 elements made the byte count wrap to 0,
// so an empty data range passed and readers indexed far past the buffer.
TEST(SafeTensors, RejectsElementCountsBeyondTheFile) {
  std::string h = R"({"w":{"dtype":"F32","shape":[2147483648,2147483648],)"
                  R"("data_offsets":[0,0]}})";
  EXPECT_NE(errorOf(writeRaw("wrap", h, ""))
                .find("has more elements than the "
                      "file has data bytes"),
            std::string::npos);
}

// Found by fuzzing: a dim above int64's range turned negative.
TEST(SafeTensors, RejectsDimsOutsideInt64) {
  std::string h = R"({"w":{"dtype":"F32","shape":[0,9223372036854775808],)"
                  R"("data_offsets":[0,0]}})";
  EXPECT_NE(errorOf(writeRaw("negdim", h, "")).find("must be integers in"),
            std::string::npos);
}

// Found by fuzzing: an empty tensor between two overlapping ones hid them.
TEST(SafeTensors, RejectsOverlapBehindAnEmptyTensor) {
  std::string h = R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                  R"("b":{"dtype":"F32","shape":[0],"data_offsets":[8,8]},)"
                  R"("c":{"dtype":"F32","shape":[1],"data_offsets":[12,16]}})";
  EXPECT_NE(errorOf(writeRaw("hidden", h, std::string(16, 'x')))
                .find("tensors 'a' and 'c' overlap"),
            std::string::npos);
}

TEST(SafeTensors, RejectsUnknownDType) {
  std::string h = R"({"a":{"dtype":"Q4","shape":[2],"data_offsets":[0,2]}})";
  EXPECT_NE(errorOf(writeRaw("dtype", h, "12")).find("unsupported dtype 'Q4'"),
            std::string::npos);
}

TEST(SafeTensors, RejectsMissingFile) {
  EXPECT_NE(errorOf(tempPath("does-not-exist")).find("cannot open"),
            std::string::npos);
}

// Tensors share one block (LargeBuffer), each at a 64-byte boundary: odd
// sizes next to each other keep their own bytes, with or without huge
// pages.
TEST(SafeTensors, TensorsShareOneAlignedBlock) {
  std::vector<float> a(3), b(5 * 1024 * 100); // 12 bytes, then 2 MB
  for (size_t k = 0; k < a.size(); ++k)
    a[k] = float(k) + 0.5f;
  for (size_t k = 0; k < b.size(); ++k)
    b[k] = float(k % 977) - 3.0f;
  std::string path = tempPath("block");
  ASSERT_FALSE(bool(
      writeSafeTensors(path, {{"a", DType::F32, {3}, a.data()},
                              {"b", DType::F32, {5, 1024, 100}, b.data()}})));
  for (bool huge : {true, false}) {
    auto st = SafeTensors::open(path, SafeTensors::Load::Read, huge);
    ASSERT_TRUE(bool(st)) << st.takeError().message();
    const Tensor *ta = st->find("a"), *tb = st->find("b");
    ASSERT_TRUE(ta && tb);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(ta->data) % 64, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(tb->data) % 64, 0u);
    EXPECT_EQ(std::vector<float>(ta->f32(), ta->f32() + a.size()), a);
    EXPECT_EQ(std::vector<float>(tb->f32(), tb->f32() + b.size()), b);
  }
  std::remove(path.c_str());
}

TEST(LargeBuffer, AlignsToHugePagesWhenLargeAndAsked) {
  constexpr size_t huge = LargeBuffer::kHugePage;
  LargeBuffer big = LargeBuffer::allocate(huge + 12345, true);
  ASSERT_NE(big.data(), nullptr);
  EXPECT_EQ(big.size(), huge + 12345);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big.data()) % huge, 0u);
  // Writable to its last byte.
  static_cast<char *>(big.data())[big.size() - 1] = 7;

  LargeBuffer plain = LargeBuffer::allocate(huge + 12345, false);
  ASSERT_NE(plain.data(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(plain.data()) % 64, 0u);
  EXPECT_FALSE(plain.advisedHuge());

  LargeBuffer small = LargeBuffer::allocate(100, true);
  ASSERT_NE(small.data(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.data()) % 64, 0u);
  EXPECT_FALSE(small.advisedHuge());

  // Every page written is resident; the count never exceeds the pages
  // that hold the block.
  std::memset(plain.data(), 1, plain.size());
  size_t page = size_t(::sysconf(_SC_PAGESIZE));
  EXPECT_GE(plain.residentBytes(), plain.size() / page * page);
  EXPECT_LE(plain.residentBytes(), plain.size() + 2 * page);

  LargeBuffer empty = LargeBuffer::allocate(0, true);
  EXPECT_NE(empty.data(), nullptr);
  EXPECT_EQ(empty.size(), 0u);
}

} // namespace
