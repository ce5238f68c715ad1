//===- TrainingData.h - CS336's training conformance data -------*- C++ -*-===//
//
// What the optimizer tests (TrainingReferenceTest, TrainingStepTest) share:
// the files of data/conformance/cs336/training, their f32 tensors, and the
// gradient of CS336's AdamW case, which the host computes in both.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_TESTS_UNIT_TRAININGDATA_H
#define TLM_TESTS_UNIT_TRAININGDATA_H

#include "tests/unit/TestData.h"

#include "lib/io/SafeTensors.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tlm::test {

inline std::string trainingFile(const std::string &name) {
  return dataDir() + "/conformance/cs336/training/" + name;
}

/// The f32 tensor `name` of `st` (a test failure, and empty, if it is not
/// there or not f32).
inline std::vector<float> f32Tensor(const io::SafeTensors &st,
                                    const std::string &name) {
  const io::Tensor *t = st.find(name);
  EXPECT_TRUE(t && t->dtype == io::DType::F32) << name;
  if (!t)
    return {};
  const auto *data = static_cast<const float *>(t->data);
  return std::vector<float>(data, data + t->numElements());
}

/// CS336's test_adamw: the gradient `g` (2x3) of sum((y - W x)^2) for
/// W (2x3) and one input x of 3 floats, y = [x0 + x1, -x2]: -2 (y - Wx) x,
/// in f32 as PyTorch's autograd.
inline void cs336AdamwGradient(const std::vector<float> &w, const float *x,
                               std::vector<float> &g) {
  float y[2] = {x[0] + x[1], -x[2]};
  for (int r = 0; r < 2; ++r) {
    float wx = 0;
    for (int k = 0; k < 3; ++k)
      wx += w[r * 3 + k] * x[k];
    for (int k = 0; k < 3; ++k)
      g[r * 3 + k] = -2 * (y[r] - wx) * x[k];
  }
}

} // namespace tlm::test

#endif // TLM_TESTS_UNIT_TRAININGDATA_H
