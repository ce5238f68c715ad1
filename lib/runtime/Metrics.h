//===- Metrics.h - what `tlm-run eval` reports ------------------*- C++ -*-===//
#ifndef TLM_RUNTIME_METRICS_H
#define TLM_RUNTIME_METRICS_H

#include <cstdint>

namespace tlm::runtime {

/// Mean over every sequence b and position i < seq-1 of the next-token
/// cross-entropy -log softmax(logits[b, i])[ids[b, i+1]] in nats, with
/// logits (batch, seq, vocab) and ids (batch, seq). Accumulates in double.
double meanNextTokenCrossEntropy(const float *logits, const int64_t *ids,
                                 int64_t batch, int64_t seq, int64_t vocab);

/// -log softmax(row)[target], in double.
double nextTokenLoss(const float *row, int64_t vocab, int64_t target);

} // namespace tlm::runtime

#endif // TLM_RUNTIME_METRICS_H
