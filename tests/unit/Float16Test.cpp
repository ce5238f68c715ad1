//===- Float16Test.cpp - bf16 / f16 conversions against the compiler's ----===//
//
// lib/support/Float16.h converts on the bits. The compiler's own _Float16
// is the independent reference for f16: every f16 value widens to what the
// compiler gives, and f32 values across the whole range (a stride through
// every bit pattern, plus the rounding boundaries near each power of two
// and the subnormals) narrow to the same bits. bf16 is checked against the
// rounding rule itself, in double arithmetic.
//
//===----------------------------------------------------------------------===//

#include "lib/support/Float16.h"

#include <cmath>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

using namespace tlm;

namespace {

template <typename T> uint16_t bitsOf16(T v) {
  uint16_t u;
  static_assert(sizeof(T) == 2, "a 16-bit type");
  std::memcpy(&u, &v, 2);
  return u;
}

template <typename T> T fromBits16(uint16_t u) {
  T v;
  std::memcpy(&v, &u, 2);
  return v;
}

/// f32 values that exercise rounding: a stride through all 2^32 bit
/// patterns, and every pattern within 40 ulps of the halfway points around
/// each power of two of f16's and bf16's ranges.
std::vector<float> probes() {
  std::vector<float> out;
  for (uint64_t u = 0; u < (1ull << 32); u += 4099)
    out.push_back(floatOf(uint32_t(u)));
  for (int e = -30; e <= 17; ++e)
    for (float base : {std::ldexp(1.0f, e), std::ldexp(1.5f, e),
                       std::ldexp(1.0f + 1.0f / 2048, e),
                       std::ldexp(1.0f + 1.0f / 256, e), 65504.0f, 65520.0f})
      for (int d = -40; d <= 40; ++d)
        for (float sign : {1.0f, -1.0f})
          out.push_back(sign * floatOf(bitsOf(base) + d));
  return out;
}

TEST(Float16, F16WidensAsTheCompiler) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float want = float(fromBits16<_Float16>(uint16_t(h)));
    float got = f16ToF32(uint16_t(h));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << std::hex << h;
      continue;
    }
    ASSERT_EQ(bitsOf(got), bitsOf(want)) << std::hex << h;
    // And back: every f16 value is exact in f32.
    ASSERT_EQ(f32ToF16(got), h) << std::hex << h;
  }
}

TEST(Float16, F16NarrowsAsTheCompiler) {
  for (float f : probes()) {
    uint16_t want = bitsOf16(_Float16(f)), got = f32ToF16(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16ToF32(got))) << f;
      continue;
    }
    ASSERT_EQ(got, want) << std::hexfloat << f;
  }
}

TEST(Float16, BF16WidensAndNarrows) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float got = bf16ToF32(uint16_t(h));
    ASSERT_EQ(bitsOf(got), h << 16) << std::hex << h;
    if (!std::isnan(got))
      ASSERT_EQ(f32ToBF16(got), h) << std::hex << h;
  }
  // Rounding against an independent rule: of the two bf16 values around f
  // (f's bits truncated, and the next one up), the nearer in exact double
  // arithmetic, ties to the even one. (libgcc 12 has no __bf16 narrowing.)
  for (float f : probes()) {
    uint16_t got = f32ToBF16(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(bf16ToF32(got))) << f;
      continue;
    }
    uint16_t lo = uint16_t(bitsOf(f) >> 16), hi = uint16_t(lo + 1);
    double dlo = std::fabs(double(f) - double(bf16ToF32(lo)));
    double dhi = std::fabs(double(bf16ToF32(hi)) - double(f));
    if (std::isinf(bf16ToF32(hi)) && !std::isinf(f))
      dhi = std::fabs(std::ldexp(1.0, 128) - std::fabs(double(f)));
    uint16_t want = dlo < dhi ? lo : dhi < dlo ? hi : (lo & 1 ? hi : lo);
    if (bitsOf(f) == uint32_t(lo) << 16)
      want = lo; // exact
    ASSERT_EQ(got, want) << std::hexfloat << f;
  }
}

} // namespace
