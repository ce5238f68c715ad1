//===- Sampler.h - pick the next token from logits --------------*- C++ -*-===//
#ifndef TLM_RUNTIME_SAMPLER_H
#define TLM_RUNTIME_SAMPLER_H

#include <cstdint>
#include <random>
#include <vector>

namespace tlm::runtime {

/// Greedy when temperature is 0 (the first maximum wins); otherwise samples
/// softmax(logits / temperature), restricted to the smallest set of tokens
/// whose probability reaches `topP` (nucleus sampling). Seeded: the same seed
/// and logits give the same tokens.
class Sampler {
public:
  Sampler(double temperature, double topP, uint64_t seed)
      : temperature_(temperature), topP_(topP), rng_(seed) {}

  int64_t sample(const float *logits, int64_t vocab);

private:
  double temperature_, topP_;
  std::mt19937_64 rng_;
  std::vector<std::pair<double, int64_t>> probs_;
};

} // namespace tlm::runtime

#endif // TLM_RUNTIME_SAMPLER_H
