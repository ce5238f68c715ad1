//===- Sampler.cpp - pick the next token from logits ----------------------===//

#include "lib/runtime/Sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tlm::runtime {

void Sampler::observe(int64_t token) {
  if (options_.repeatLastN <= 0)
    return;
  recent_.push_back(token);
  if (int64_t(recent_.size()) > options_.repeatLastN)
    recent_.erase(recent_.begin());
}

const float *Sampler::penalized(const float *logits, int64_t vocab) {
  const SamplingOptions &o = options_;
  if ((o.repeatPenalty == 1 && o.frequencyPenalty == 0 &&
       o.presencePenalty == 0) ||
      recent_.empty())
    return logits;
  adjusted_.assign(logits, logits + vocab);
  std::unordered_map<int64_t, int64_t> counts;
  for (int64_t t : recent_)
    if (t >= 0 && t < vocab)
      ++counts[t];
  for (auto [t, count] : counts) {
    float &l = adjusted_[t];
    if (o.repeatPenalty != 1)
      l = l > 0 ? float(l / o.repeatPenalty) : float(l * o.repeatPenalty);
    l -= float(o.frequencyPenalty * double(count) + o.presencePenalty);
    // A penalty large enough overflows f32; an infinite logit would turn
    // the softmax into NaNs (inf - inf). The largest finite value keeps the
    // order and the arithmetic.
    l = std::clamp(l, -std::numeric_limits<float>::max(),
                   std::numeric_limits<float>::max());
  }
  return adjusted_.data();
}

int64_t Sampler::sample(const float *raw, int64_t vocab) {
  if (options_.vocabLimit > 0 && options_.vocabLimit < vocab)
    vocab = options_.vocabLimit;
  const float *logits = penalized(raw, vocab);
  int64_t best = 0;
  for (int64_t i = 1; i < vocab; ++i)
    if (logits[i] > logits[best])
      best = i;
  const SamplingOptions &o = options_;
  if (o.temperature <= 0)
    return best;

  // Softmax in double, max subtracted, then sorted by probability.
  probs_.resize(vocab);
  double sum = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    double p = std::exp((double(logits[i]) - logits[best]) / o.temperature);
    probs_[i] = {p, i};
    sum += p;
  }
  std::sort(probs_.begin(), probs_.end(), [](const auto &a, const auto &b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  // Each filter keeps a prefix of the likeliest-first list (at least one).
  size_t n = probs_.size();
  if (o.topK > 0)
    n = std::min<size_t>(n, size_t(o.topK));
  // The nucleus: the smallest prefix whose mass reaches top_p (of what
  // top-k kept).
  double total = sum;
  if (n < probs_.size()) {
    total = 0;
    for (size_t i = 0; i < n; ++i)
      total += probs_[i].first;
  }
  double kept = 0;
  size_t nucleus = 0;
  while (nucleus < n && (nucleus == 0 || kept < o.topP * total))
    kept += probs_[nucleus++].first;
  n = nucleus;
  // min-p: relative to the likeliest, whose weight is exp(0) = 1.
  if (o.minP > 0)
    while (n > 1 && probs_[n - 1].first < o.minP * probs_[0].first)
      kept -= probs_[--n].first;
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
