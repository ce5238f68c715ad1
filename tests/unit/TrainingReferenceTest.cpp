//===- TrainingReferenceTest.cpp - the training reference vs CS336's data -===//
//
// The plain reference of TrainingReference.h reproduces CS336's conformance
// data (data/conformance/cs336/training): AdamW's 1000 steps in both forms,
// clipping by the global norm, the cosine schedule; TrainingStepTest checks
// the compiled optimizer against the same data.
//
//===----------------------------------------------------------------------===//

#include "TrainingData.h"
#include "Tolerances.h"
#include "TrainingReference.h"

#include "lib/io/FileIO.h"
#include "lib/io/SafeTensors.h"
#include "lib/support/Json.h"

#include <gtest/gtest.h>

using namespace tlm;
using tlm::test::allClose;
using tlm::test::cs336AdamwGradient;
using tlm::test::f32Tensor;
using tlm::test::trainingFile;
namespace tol = tlm::test::tol;

namespace {

/// CS336's test_adamw: W (2x3) fitted to y = [x0 + x1, -x2] under
/// loss sum((y - W x)^2), one input a step.
std::vector<float> runAdamW(const io::SafeTensors &st,
                            ref::AdamWOptions::Form form) {
  std::vector<float> w = f32Tensor(st, "initial_weight");
  std::vector<float> inputs = f32Tensor(st, "inputs");
  std::vector<float> m(6, 0), v(6, 0), g(6);
  ref::AdamWOptions o;
  o.form = form;
  for (int64_t t = 1; t <= 1000; ++t) {
    cs336AdamwGradient(w, &inputs[(t - 1) * 3], g);
    ref::adamwStep(w, g, m, v, t, o);
  }
  return w;
}

TEST(TrainingReference, AdamWReproducesCs336AndTorch) {
  auto st = io::SafeTensors::open(trainingFile("adamw.safetensors"));
  ASSERT_TRUE(bool(st)) << st.takeError().message();
  EXPECT_TRUE(allClose(runAdamW(*st, ref::AdamWOptions::Form::Cs336),
                       f32Tensor(*st, "expected_cs336"), tol::kOptimizer));
  EXPECT_TRUE(allClose(runAdamW(*st, ref::AdamWOptions::Form::Torch),
                       f32Tensor(*st, "expected_torch_adamw"),
                       tol::kOptimizer));
  // The two forms differ (by 5.4e-6 here): each check above can fail.
  EXPECT_FALSE(allClose(runAdamW(*st, ref::AdamWOptions::Form::Cs336),
                        f32Tensor(*st, "expected_torch_adamw"),
                        tlm::test::Tolerance{1e-7, 0.0}));
}

TEST(TrainingReference, ClippingByTheGlobalNorm) {
  auto st =
      io::SafeTensors::open(trainingFile("gradient_clipping.safetensors"));
  ASSERT_TRUE(bool(st)) << st.takeError().message();
  // Five all-ones 5x5 gradients (CS336's case), and five normal ones.
  std::vector<std::vector<float>> ones(5, std::vector<float>(25, 1.0f)),
      random;
  for (int i = 0; i < 5; ++i)
    random.push_back(f32Tensor(*st, "random.grad" + std::to_string(i)));
  EXPECT_NEAR(ref::clipByGlobalNorm(ones, 1e-2), std::sqrt(125.0), 1e-12);
  double before = ref::clipByGlobalNorm(random, 1e-2);
  EXPECT_NEAR(before, 10.426177024841309, 1e-5);
  for (int i = 0; i < 5; ++i) {
    std::string n = std::to_string(i);
    EXPECT_TRUE(
        allClose(ones[i], f32Tensor(*st, "ones.clipped" + n), tol::kClip));
    EXPECT_TRUE(
        allClose(random[i], f32Tensor(*st, "random.clipped" + n), tol::kClip));
  }
  // Under the bound nothing changes; a bound of 0 turns clipping off.
  std::vector<std::vector<float>> small = {{3e-3f, 4e-3f}};
  EXPECT_NEAR(ref::clipByGlobalNorm(small, 1e-2), 5e-3, 1e-9);
  EXPECT_EQ(small[0][0], 3e-3f);
  double norm = std::sqrt(125.0);
  EXPECT_NEAR(ref::clipByGlobalNorm(ones, 0), 1e-2 * norm / (norm + 1e-6),
              1e-8);
}

TEST(TrainingReference, CosineScheduleWithWarmup) {
  auto text = io::readRegularFile(trainingFile("lr_cosine_schedule.json"),
                                  1 << 20);
  ASSERT_TRUE(bool(text)) << text.takeError().message();
  auto j = json::Value::parse(*text);
  ASSERT_TRUE(bool(j)) << j.takeError().message();
  double maxLr = j->find("max_learning_rate")->asDouble();
  double minLr = j->find("min_learning_rate")->asDouble();
  int64_t warmup = j->find("warmup_iters")->asInt();
  int64_t cycle = j->find("cosine_cycle_iters")->asInt();
  const json::Value &expected = *j->find("expected");
  ASSERT_EQ(expected.size(), 25u);
  for (int64_t t = 0; t < 25; ++t) {
    double want = expected.elements()[t].asDouble();
    double got = ref::cosineLearningRate(t, maxLr, minLr, warmup, cycle);
    EXPECT_LE(std::fabs(got - want),
              tol::kSchedule.atol + tol::kSchedule.rtol * std::fabs(want))
        << "t = " << t;
  }
}

} // namespace
