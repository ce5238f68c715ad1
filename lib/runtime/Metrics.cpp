//===- Metrics.cpp - what `tlm-run eval` reports --------------------------===//

#include "lib/runtime/Metrics.h"

#include <algorithm>
#include <cmath>

namespace tlm::runtime {

double meanNextTokenCrossEntropy(const float *logits, const int64_t *ids,
                                 int64_t batch, int64_t seq, int64_t vocab) {
  double total = 0;
  int64_t count = 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i + 1 < seq; ++i) {
      total += nextTokenLoss(logits + (b * seq + i) * vocab, vocab,
                             ids[b * seq + i + 1]);
      ++count;
    }
  return count ? total / count : 0.0;
}

double nextTokenLoss(const float *row, int64_t vocab, int64_t target) {
  double max = *std::max_element(row, row + vocab), sum = 0;
  for (int64_t v = 0; v < vocab; ++v)
    sum += std::exp(double(row[v]) - max);
  return max + std::log(sum) - row[target];
}

} // namespace tlm::runtime
