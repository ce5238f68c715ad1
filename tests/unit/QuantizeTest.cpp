//===- QuantizeTest.cpp - q8_0 / q4_0 encodings worked by hand ------------===//
//
// lib/model/Quantize.h is the reference the compiled code's dequantization
// is tested against (KvCacheTest, weights-dtype.test), so it is pinned here
// on blocks whose codes follow from the rules by hand: the scale from the
// block's largest magnitude, codes rounded to nearest (ties to even) and
// clamped, q4_0's nibble order; and the error bound of a round trip.
//
//===----------------------------------------------------------------------===//

#include "lib/model/Quantize.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

using namespace tlm::model;

namespace {

TEST(Quantize, Q8BlockByHand) {
  // max |w| = 127: d = 1, so each code is its weight rounded, ties to even
  // (0.5 to 0, 1.5 and 2.5 to 2).
  std::vector<float> w(kQuantBlock, 0.0f);
  w[0] = 127.0f, w[1] = -126.6f, w[2] = 0.5f, w[3] = 1.5f, w[4] = 2.5f,
  w[31] = -3.3f;
  std::vector<int8_t> q(kQuantBlock);
  float d = 0;
  quantizeRow(WeightDtype::Q8_0, w.data(), kQuantBlock, q.data(), &d);
  EXPECT_EQ(d, 1.0f);
  EXPECT_EQ(q[0], 127);
  EXPECT_EQ(q[1], -127);
  EXPECT_EQ(q[2], 0);
  EXPECT_EQ(q[3], 2);
  EXPECT_EQ(q[4], 2);
  EXPECT_EQ(q[31], -3);
  EXPECT_EQ(q[5], 0);
  // A scale of 0.1: w = 0.1 · q.
  for (float &v : w)
    v /= 10;
  quantizeRow(WeightDtype::Q8_0, w.data(), kQuantBlock, q.data(), &d);
  EXPECT_EQ(d, 12.7f / 127);
  EXPECT_EQ(q[31], -3);
  std::vector<float> back(kQuantBlock);
  dequantizeRow(WeightDtype::Q8_0, q.data(), &d, kQuantBlock, back.data());
  EXPECT_EQ(back[31], -3.0f * d);
  EXPECT_EQ(back[1], -127.0f * d);
}

TEST(Quantize, Q4BlockByHandAndNibbleOrder) {
  // The largest magnitude is -8 (w[20]): d = -8 / -8 = 1, so codes are
  // w + 8 clamped to [0, 15]; +8 clamps to 7 + 8 = 15.
  std::vector<float> w(kQuantBlock, 0.0f);
  w[0] = 3.0f, w[1] = -1.4f, w[15] = 7.0f, w[16] = 2.5f, w[20] = -8.0f,
  w[31] = 1.0f;
  std::vector<uint8_t> q(kQuantBlock / 2);
  float d = 0;
  quantizeRow(WeightDtype::Q4_0, w.data(), kQuantBlock, q.data(), &d);
  EXPECT_EQ(d, 1.0f);
  // Byte j: weight j low, weight j + 16 high.
  EXPECT_EQ(q[0], (3 + 8) | (2 + 8) << 4); // w[16] = 2.5 ties to 2
  EXPECT_EQ(q[1] & 15, -1 + 8);            // -1.4 to -1
  EXPECT_EQ(q[4] >> 4, 0);                 // w[20] = -8
  EXPECT_EQ(q[15], (7 + 8) | (1 + 8) << 4);
  std::vector<float> back(kQuantBlock);
  dequantizeRow(WeightDtype::Q4_0, q.data(), &d, kQuantBlock, back.data());
  EXPECT_EQ(back[0], 3.0f);
  EXPECT_EQ(back[16], 2.0f);
  EXPECT_EQ(back[20], -8.0f);
  EXPECT_EQ(back[31], 1.0f);
  EXPECT_EQ(back[2], 0.0f);
}

TEST(Quantize, ZeroBlockHasZeroScale) {
  std::vector<float> w(kQuantBlock, 0.0f), back(kQuantBlock, 1.0f);
  for (WeightDtype f : {WeightDtype::Q8_0, WeightDtype::Q4_0}) {
    std::vector<uint8_t> q(kQuantBlock);
    float d = 1;
    quantizeRow(f, w.data(), kQuantBlock, q.data(), &d);
    EXPECT_EQ(d, 0.0f);
    dequantizeRow(f, q.data(), &d, kQuantBlock, back.data());
    for (float v : back)
      EXPECT_EQ(v, 0.0f);
  }
}

TEST(Quantize, RoundTripWithinHalfAStep) {
  // Every weight comes back within half a code step of the block's scale
  // (q4_0's clamped +8·|d| end a whole step), block by block.
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  const int64_t k = 4 * kQuantBlock;
  std::vector<float> w(k), back(k), d(k / kQuantBlock);
  for (float &v : w)
    v = normal(rng);
  for (WeightDtype f : {WeightDtype::Q8_0, WeightDtype::Q4_0}) {
    std::vector<uint8_t> q(size_t(quantizedRowBytes(f, k)));
    quantizeRow(f, w.data(), k, q.data(), d.data());
    dequantizeRow(f, q.data(), d.data(), k, back.data());
    for (int64_t i = 0; i < k; ++i) {
      float step = std::fabs(d[size_t(i / kQuantBlock)]);
      EXPECT_LE(std::fabs(back[i] - w[i]), step * 1.0001f) << i;
      if (f == WeightDtype::Q8_0)
        EXPECT_LE(std::fabs(back[i] - w[i]), step * 0.5001f) << i;
    }
  }
}

TEST(Quantize, SpecsOfAQuantizedConfig) {
  Config c;
  c.vocabSize = 64, c.contextLength = 8, c.dModel = 64, c.numLayers = 1,
  c.numHeads = 2, c.dFF = 48, c.dtype = WeightDtype::Q4_0;
  std::vector<WeightSpec> specs = weightSpecs(c);
  // The table: U8 codes, two a byte, and a scale per 32 weights.
  EXPECT_EQ(specs[0].name, "token_embeddings.weight");
  EXPECT_EQ(specs[0].dtype, tlm::io::DType::U8);
  EXPECT_EQ(specs[0].shape, (std::vector<int64_t>{64, 32}));
  EXPECT_TRUE(specs[1].isScale);
  EXPECT_EQ(specs[1].name, "token_embeddings.weight.scale");
  EXPECT_EQ(specs[1].shape, (std::vector<int64_t>{64, 2}));
  // W2's d_in is d_ff = 48, no whole blocks: it stays F32.
  for (size_t i = 0; i < specs.size(); ++i)
    if (specs[i].name == "layers.0.ffn.w2.weight") {
      EXPECT_EQ(specs[i].dtype, tlm::io::DType::F32);
      EXPECT_FALSE(i + 1 < specs.size() && specs[i + 1].isScale);
    }
  // Parameters count weights, not scales or bytes.
  Config f32 = c;
  f32.dtype = WeightDtype::F32;
  EXPECT_EQ(parameterCount(c), parameterCount(f32));
  EXPECT_LT(weightBytes(c), weightBytes(f32) / 4);
}

} // namespace
