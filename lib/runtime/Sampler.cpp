//===- Sampler.cpp - pick the next token from logits ----------------------===//

#include "lib/runtime/Sampler.h"

#include <algorithm>
#include <cmath>

namespace tlm::runtime {

int64_t Sampler::sample(const float *logits, int64_t vocab) {
  int64_t best = 0;
  for (int64_t i = 1; i < vocab; ++i)
    if (logits[i] > logits[best])
      best = i;
  if (temperature_ <= 0)
    return best;

  // Softmax in double, max subtracted, then sorted by probability.
  probs_.resize(vocab);
  double sum = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    double p = std::exp((double(logits[i]) - logits[best]) / temperature_);
    probs_[i] = {p, i};
    sum += p;
  }
  std::sort(probs_.begin(), probs_.end(), [](const auto &a, const auto &b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  // Keep the nucleus: the smallest prefix whose mass reaches top_p.
  double kept = 0;
  size_t n = 0;
  while (n < probs_.size() && (n == 0 || kept < topP_ * sum))
    kept += probs_[n++].first;
  // A uniform double in [0, 1) from the top 53 bits (portable, unlike
  // std::uniform_real_distribution).
  double u = double(rng_() >> 11) * 0x1.0p-53 * kept;
  for (size_t i = 0; i < n; ++i) {
    u -= probs_[i].first;
    if (u < 0)
      return probs_[i].second;
  }
  return probs_[n - 1].second;
}

} // namespace tlm::runtime
