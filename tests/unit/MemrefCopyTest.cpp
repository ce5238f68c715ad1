//===- MemrefCopyTest.cpp - the artifacts' memrefCopy against a loop ------===//

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

namespace {

struct Desc2 {
  float *allocated, *aligned;
  int64_t offset, sizes[2], strides[2];
};
struct Desc0 {
  float *allocated, *aligned;
  int64_t offset;
};
struct Unranked {
  int64_t rank;
  void *descriptor;
};

} // namespace

extern "C" void memrefCopy(int64_t elemSize, Unranked *src, Unranked *dst);

namespace {

// A 3 x 4 window of a 5 x 6 buffer, copied into a column-major 3 x 4
// buffer: every element lands where a plain loop puts it, nothing else is
// written.
TEST(MemrefCopy, StridedToTransposedLayout) {
  std::vector<float> src(30), dst(20, -1.0f);
  for (int i = 0; i < 30; ++i)
    src[i] = float(i);
  Desc2 s{src.data(), src.data(), 7, {3, 4}, {6, 1}};
  Desc2 d{dst.data(), dst.data(), 2, {3, 4}, {1, 3}};
  Unranked us{2, &s}, ud{2, &d};
  memrefCopy(sizeof(float), &us, &ud);
  std::vector<float> want(20, -1.0f);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      want[2 + i * 1 + j * 3] = src[7 + i * 6 + j];
  EXPECT_EQ(dst, want);
}

TEST(MemrefCopy, DenseRowMajorAndEdgeCases) {
  std::vector<float> src = {1, 2, 3, 4, 5, 6}, dst(6, 0.0f);
  Desc2 s{src.data(), src.data(), 0, {2, 3}, {3, 1}};
  Desc2 d{dst.data(), dst.data(), 0, {2, 3}, {3, 1}};
  Unranked us{2, &s}, ud{2, &d};
  memrefCopy(sizeof(float), &us, &ud);
  EXPECT_EQ(dst, src);
  // No elements: nothing written.
  std::vector<float> untouched(6, 9.0f);
  Desc2 e{src.data(), src.data(), 0, {0, 3}, {3, 1}};
  Desc2 f{untouched.data(), untouched.data(), 0, {0, 3}, {3, 1}};
  Unranked ue{2, &e}, uf{2, &f};
  memrefCopy(sizeof(float), &ue, &uf);
  EXPECT_EQ(untouched, std::vector<float>(6, 9.0f));
  // Rank 0: one element.
  float a = 3.5f, b = 0.0f;
  Desc0 a0{&a, &a, 0}, b0{&b, &b, 0};
  Unranked ua{0, &a0}, ub{0, &b0};
  memrefCopy(sizeof(float), &ua, &ub);
  EXPECT_EQ(b, 3.5f);
}

} // namespace
