//===- SamplerTest.cpp - the sampling controls ----------------------------===//
//
// Each filter and penalty of runtime::SamplingOptions on hand-made logits:
// what it keeps is never left, what it drops never drawn, and the draws
// follow the kept tokens' renormalised probabilities.
//
//===----------------------------------------------------------------------===//

#include "lib/runtime/Sampler.h"

#include <cmath>
#include <map>
#include <vector>

#include <gtest/gtest.h>

using tlm::runtime::Sampler;
using tlm::runtime::SamplingOptions;

namespace {

// Probabilities 0.4, 0.3, 0.2, 0.1 (at temperature 1), tokens 0..3.
const std::vector<float> kLogits = {std::log(0.4f), std::log(0.3f),
                                    std::log(0.2f), std::log(0.1f)};

std::map<int64_t, int> draws(SamplingOptions o, int n = 20000) {
  Sampler s(o);
  std::map<int64_t, int> counts;
  for (int i = 0; i < n; ++i)
    ++counts[s.sample(kLogits.data(), 4)];
  return counts;
}

SamplingOptions at(double temperature, uint64_t seed = 1) {
  SamplingOptions o;
  o.temperature = temperature;
  o.seed = seed;
  return o;
}

TEST(Sampler, GreedyTakesTheFirstMaximum) {
  std::vector<float> tie = {1, 3, 3, 0};
  EXPECT_EQ(Sampler(at(0)).sample(tie.data(), 4), 1);
}

TEST(Sampler, DrawsFollowTheProbabilities) {
  std::map<int64_t, int> c = draws(at(1));
  for (int64_t t = 0; t < 4; ++t)
    EXPECT_NEAR(c[t] / 20000.0, std::exp(kLogits[t]), 0.015) << t;
}

TEST(Sampler, TopKKeepsTheLikeliest) {
  SamplingOptions o = at(1);
  o.topK = 2;
  std::map<int64_t, int> c = draws(o);
  EXPECT_EQ(c.count(2) + c.count(3), 0u);
  // 0.4 : 0.3 renormalised.
  EXPECT_NEAR(c[0] / 20000.0, 0.4 / 0.7, 0.015);
  o.topK = 1;
  EXPECT_EQ(draws(o, 200).size(), 1u);
}

TEST(Sampler, TopPKeepsTheNucleus) {
  SamplingOptions o = at(1);
  o.topP = 0.65; // 0.4 + 0.3 reaches it
  std::map<int64_t, int> c = draws(o);
  EXPECT_EQ(c.count(2) + c.count(3), 0u);
  EXPECT_GT(c[1], 0);
}

TEST(Sampler, MinPDropsTheUnlikely) {
  SamplingOptions o = at(1);
  o.minP = 0.45; // at least 0.18: tokens 0, 1 and 2
  std::map<int64_t, int> c = draws(o);
  EXPECT_EQ(c.count(3), 0u);
  EXPECT_NEAR(c[2] / 20000.0, 0.2 / 0.9, 0.015);
  o.minP = 1;
  EXPECT_EQ(draws(o, 200).size(), 1u);
}

TEST(Sampler, RepeatPenaltyScalesSeenTokens) {
  // Greedy: token 0 (logit 2) seen once, divided by 2 -> 1 < 1.5.
  std::vector<float> logits = {2.0f, 1.5f, -1.0f};
  SamplingOptions o = at(0);
  o.repeatPenalty = 2;
  Sampler s(o);
  EXPECT_EQ(s.sample(logits.data(), 3), 0);
  s.observe(0);
  EXPECT_EQ(s.sample(logits.data(), 3), 1);
  // A negative logit is multiplied: the seen token sinks, never rises.
  std::vector<float> close = {-1.0f, -1.1f, -0.9f};
  Sampler n(o);
  EXPECT_EQ(n.sample(close.data(), 3), 2);
  n.observe(2);
  EXPECT_EQ(n.sample(close.data(), 3), 0); // -0.9 * 2 = -1.8
  // ... unless the window has moved past them.
  SamplingOptions shortWindow = o;
  shortWindow.repeatLastN = 1;
  Sampler w(shortWindow);
  w.observe(0);
  w.observe(1);
  EXPECT_EQ(w.sample(logits.data(), 3), 0); // only token 1 is recent
}

TEST(Sampler, FrequencyAndPresencePenaltiesCount) {
  std::vector<float> logits = {3.0f, 2.5f, 0.0f};
  SamplingOptions o = at(0);
  o.frequencyPenalty = 0.3;
  Sampler s(o);
  s.observe(0);
  EXPECT_EQ(s.sample(logits.data(), 3), 0); // 2.7 > 2.5
  s.observe(0);
  EXPECT_EQ(s.sample(logits.data(), 3), 1); // 2.4 < 2.5
  SamplingOptions p = at(0);
  p.presencePenalty = 0.6;
  Sampler q(p);
  q.observe(0);
  EXPECT_EQ(q.sample(logits.data(), 3), 1); // 2.4 whatever the count
}

TEST(Sampler, PenaltiesThatOverflowKeepTheDrawsSound) {
  // A repeat penalty of 1e-300 divides a positive logit past f32's range,
  // a frequency penalty of 1e300 subtracts past it: the logit saturates at
  // the largest float instead of turning the softmax into NaNs (which drew
  // the first ids in index order).
  std::vector<float> logits = {1.0f, 2.0f, 3.0f, -1.0f};
  SamplingOptions up = at(1.0);
  up.repeatPenalty = 1e-300;
  Sampler s(up);
  s.observe(1);
  for (int i = 0; i < 50; ++i)
    EXPECT_EQ(s.sample(logits.data(), 4), 1);
  SamplingOptions down = at(1.0);
  down.frequencyPenalty = 1e300;
  Sampler d(down);
  d.observe(2);
  std::map<int64_t, int> seen;
  for (int i = 0; i < 2000; ++i)
    ++seen[d.sample(logits.data(), 4)];
  EXPECT_EQ(seen.count(2), 0u); // the penalised token is never drawn
  // The rest keep their odds: token 1 (e^2) against token 0 (e^1).
  ASSERT_GT(seen[0], 0);
  EXPECT_NEAR(double(seen[1]) / seen[0], std::exp(1.0), 0.6);
}

TEST(Sampler, VocabLimitMasksThePadding) {
  // Token 3 is by far the likeliest, but past the limit.
  std::vector<float> logits = {0.0f, 0.5f, 0.2f, 9.0f};
  SamplingOptions o = at(0);
  o.vocabLimit = 3;
  EXPECT_EQ(Sampler(o).sample(logits.data(), 4), 1);
  o.temperature = 1;
  Sampler s(o);
  for (int i = 0; i < 500; ++i)
    ASSERT_LT(s.sample(logits.data(), 4), 3);
}

TEST(Sampler, SeedDecides) {
  auto run = [](uint64_t seed) {
    Sampler s(at(1, seed));
    std::vector<int64_t> out;
    for (int i = 0; i < 64; ++i)
      out.push_back(s.sample(kLogits.data(), 4));
    return out;
  };
  EXPECT_EQ(run(3), run(3));
  EXPECT_NE(run(3), run(4));
}

} // namespace
