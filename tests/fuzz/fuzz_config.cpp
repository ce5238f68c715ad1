//===- fuzz_config.cpp - libFuzzer target for tlm::model::parseConfig -----===//
//
// Feeds the input, as is, to the model-config JSON parser and validator.
// Every error is consumed; a successful parse is checked against the rules of
// docs/spec/model.md when TLM_FUZZ_INVARIANTS=1 (see FuzzUtil.h).
//
//===----------------------------------------------------------------------===//

#include "lib/model/ConfigJson.h"
#include "tests/fuzz/FuzzUtil.h"

#include "lib/support/Error.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  tlm::Expected<tlm::model::Config> config = tlm::model::parseConfig(text);
  if (!config) {
    std::string message = config.takeError().message();
    TLM_FUZZ_CHECK(!message.empty(),
                   "parseConfig failed with an empty message");
    return 0;
  }
  const tlm::model::Config &c = *config;
  constexpr int64_t kMax = int64_t(1) << 24;
  for (int64_t v : {c.vocabSize, c.contextLength, c.dModel, c.numLayers,
                    c.numHeads, c.kvHeads(), c.dFF})
    TLM_FUZZ_CHECK(v >= 1 && v <= kMax, "accepted a size outside 1..2^24");
  TLM_FUZZ_CHECK(c.ropeTheta > 0 && c.rmsNormEps > 0,
                 "accepted a non-positive rope_theta or rms_norm_eps");
  TLM_FUZZ_CHECK(c.dModel % c.numHeads == 0 && c.numHeads % c.kvHeads() == 0,
                 "accepted indivisible head counts");
  TLM_FUZZ_CHECK(!c.useRope || c.headDim() % 2 == 0,
                 "accepted an odd head dim with RoPE");
  // A valid config must re-validate.
  if (tlm::Error err = tlm::model::validateConfig(c)) {
    (void)err;
    TLM_FUZZ_CHECK(false, "validateConfig rejects what parseConfig accepted");
  }
  return 0;
}
