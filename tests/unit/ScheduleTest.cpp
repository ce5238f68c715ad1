//===- ScheduleTest.cpp - learning-rate schedules -------------------------===//
//
// CS336's cosine schedule against its conformance values
// (data/conformance/cs336/training/lr_cosine_schedule.json, numpy's rtol
// 1e-7), and the linear and constant forms at their corners.
//
//===----------------------------------------------------------------------===//

#include "lib/runtime/Schedule.h"
#include "lib/support/Json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

using namespace tlm;

namespace {

TEST(Schedule, CosineMatchesCS336) {
  std::ifstream in(std::string(TLM_DATA_DIR) +
                   "/conformance/cs336/training/lr_cosine_schedule.json");
  ASSERT_TRUE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  auto root = json::Value::parse(text.str());
  ASSERT_TRUE(bool(root));
  runtime::Schedule s;
  s.maxLr = root->find("max_learning_rate")->asDouble();
  s.minLr = root->find("min_learning_rate")->asDouble();
  s.warmup = root->find("warmup_iters")->asInt();
  s.decayEnd = root->find("cosine_cycle_iters")->asInt();
  double rtol = root->find("rtol")->asDouble();
  const auto &expected = root->find("expected")->elements();
  ASSERT_EQ(expected.size(), 25u);
  for (size_t t = 0; t < expected.size(); ++t) {
    double want = expected[t].asDouble();
    EXPECT_LE(std::fabs(s.at(int64_t(t)) - want), rtol * std::fabs(want))
        << "step " << t;
  }
}

TEST(Schedule, LinearAndConstant) {
  runtime::Schedule s;
  s.kind = runtime::Schedule::Kind::Linear;
  s.maxLr = 1.0;
  s.minLr = 0.2;
  s.warmup = 2;
  s.decayEnd = 6;
  EXPECT_DOUBLE_EQ(s.at(0), 0.0);
  EXPECT_DOUBLE_EQ(s.at(1), 0.5);
  EXPECT_DOUBLE_EQ(s.at(2), 1.0);
  EXPECT_DOUBLE_EQ(s.at(4), 0.6);
  EXPECT_DOUBLE_EQ(s.at(6), 0.2);
  EXPECT_DOUBLE_EQ(s.at(100), 0.2);
  s.kind = runtime::Schedule::Kind::Constant;
  EXPECT_DOUBLE_EQ(s.at(0), 1.0);
  EXPECT_DOUBLE_EQ(s.at(100), 1.0);
  EXPECT_FALSE(bool(runtime::Schedule::kindNamed("cosine ")));
  EXPECT_TRUE(bool(runtime::Schedule::kindNamed("linear")));
}

} // namespace
