//===- ActivationBoundTest.cpp - the activations estimate bounds the heap -===//
//
// tlm-run refuses, before compiling, a run whose weights, KV cache, logits
// and activations exceed the memory the process may take; the activations
// are Session::activationBytes(), a formula. The compiled code allocates
// through lib/runtime/abi/Alloc.cpp, which counts its high-water mark, so
// here every example config (and each weight format of one) runs a prefill
// with every position's logits, one with the last position's, and a decode
// step, on 1 and 2 threads, and the counted peak must stay within the
// estimate. Linux grants allocations it cannot back and kills the process
// later, so an estimate that undercounts is an OOM kill, not an error.
//
//===----------------------------------------------------------------------===//

#include "lib/model/ConfigJson.h"
#include "lib/model/Weights.h"
#include "lib/compiler/Jit.h"
#include "lib/runtime/Session.h"
#include "lib/runtime/abi/Alloc.h"

#include <numeric>

#include <gtest/gtest.h>

using namespace tlm;

namespace {

struct Case {
  const char *example;
  model::WeightDtype dtype;
  int threads;
};

void PrintTo(const Case &c, std::ostream *os) {
  *os << c.example << " " << model::dtypeName(c.dtype) << " on " << c.threads
      << " threads";
}

std::string caseName(const testing::TestParamInfo<Case> &info) {
  std::string name = info.param.example;
  for (char &c : name)
    if (c == '-')
      c = '_';
  return name + "_" + std::string(model::dtypeName(info.param.dtype)) + "_t" +
         std::to_string(info.param.threads);
}

class ActivationBound : public testing::TestWithParam<Case> {};

TEST_P(ActivationBound, CountedPeakWithinEstimate) {
  const Case &c = GetParam();
  auto config = model::loadConfig(std::string(TLM_EXAMPLES_DIR) + "/" +
                                  c.example + ".json");
  ASSERT_TRUE(bool(config)) << config.takeError().message();
  auto f32 = model::Weights::init(*config, 3, model::InitScheme::Module);
  ASSERT_TRUE(bool(f32)) << f32.takeError().message();
  auto weights = model::Weights::convert(*f32, *config, c.dtype);
  ASSERT_TRUE(bool(weights)) << weights.takeError().message();
  config->dtype = c.dtype;

  constexpr int64_t kBatch = 3;
  runtime::SessionOptions options;
  options.batch = kBatch;
  runtime::JitOptions jit;
  jit.threads = c.threads;
  auto session =
      runtime::Session::create(*config, weights->pointers(), options, jit);
  ASSERT_TRUE(bool(session)) << session.takeError().message();
  const runtime::Program::HeapCounters &heap = (*session)->program().heap();
  ASSERT_TRUE(heap.peak) << "the JIT's code is counted";

  int64_t seq = std::min<int64_t>(config->contextLength - 1, 40);
  std::vector<int64_t> ids(kBatch * seq);
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = (i * 7919) % config->vocabSize;
  std::vector<float> logits(kBatch * seq * config->vocabSize);

  auto check = [&](const char *what, const char *key, int64_t tokens,
                   bool everyPosition) {
    double estimate = runtime::Session::activationBytes(
        *config, kBatch, tokens, c.threads, everyPosition);
    double peak = double(heap.peak());
    EXPECT_GT(peak, 0) << what << ": the code allocates its activations";
    EXPECT_LE(peak, estimate) << what << ": counted " << peak
                              << " bytes, estimated " << estimate;
    RecordProperty(key, std::to_string(peak / estimate)); // how tight
  };
  heap.resetPeak();
  ASSERT_FALSE(bool((*session)->step(ids.data(), seq, logits.data())));
  check("prefill, every position", "prefill_all", seq, true);
  (*session)->reset();
  heap.resetPeak();
  ASSERT_FALSE(bool((*session)->stepLast(ids.data(), seq, logits.data())));
  check("prefill, the last position", "prefill_last", seq, false);
  heap.resetPeak();
  ASSERT_FALSE(bool((*session)->stepLast(ids.data(), 1, logits.data())));
  check("decode", "decode", 1, false);
}

std::vector<Case> cases() {
  std::vector<Case> all;
  for (const char *example :
       {"tiny", "tiny-ffn-silu", "tiny-no-rmsnorm", "tiny-no-rope",
        "tiny-post-norm", "tiny-tied", "cs336-ts"})
    for (int threads : {1, 2})
      all.push_back({example, model::WeightDtype::F32, threads});
  for (model::WeightDtype dtype :
       {model::WeightDtype::BF16, model::WeightDtype::Q8_0,
        model::WeightDtype::Q4_0})
    all.push_back({"tiny", dtype, 2});
  return all;
}

INSTANTIATE_TEST_SUITE_P(Examples, ActivationBound,
                         testing::ValuesIn(cases()), caseName);

} // namespace
