//===- Sampler.h - pick the next token from logits --------------*- C++ -*-===//
#ifndef TLM_RUNTIME_SAMPLER_H
#define TLM_RUNTIME_SAMPLER_H

#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

namespace tlm::runtime {

/// How the next token is chosen; the defaults change nothing (greedy).
struct SamplingOptions {
  /// 0: greedy (the first maximum wins); else softmax(logits / temperature).
  double temperature = 0;
  /// Nucleus: the smallest set of the likeliest tokens whose probability
  /// reaches topP (1: all).
  double topP = 1;
  /// Only the topK likeliest tokens (0: all).
  int64_t topK = 0;
  /// Only tokens at least minP times as likely as the likeliest (0: all).
  double minP = 0;
  /// llama.cpp's repetition penalty over the last repeatLastN tokens seen
  /// (the prompt included): a positive logit is divided by it, a negative
  /// one multiplied (1: off).
  double repeatPenalty = 1;
  int64_t repeatLastN = 64;
  /// OpenAI's: logit -= frequencyPenalty · count + presencePenalty ·
  /// (count > 0), counts over the same window (0: off).
  double frequencyPenalty = 0, presencePenalty = 0;
  uint64_t seed = 0;
  /// Only ids below this are candidates (0: every id): a model whose vocab
  /// is padded past its tokenizer's never picks a row the tokenizer cannot
  /// print.
  int64_t vocabLimit = 0;
};

/// Penalties first (on a copy of the logits), then greedy, or top-k, top-p
/// and min-p on the probabilities (each a filter of the likeliest-first
/// list, in that order) and a draw. Seeded: the same seed, history and
/// logits give the same tokens.
class Sampler {
public:
  explicit Sampler(const SamplingOptions &options)
      : options_(options), rng_(options.seed) {}
  Sampler(double temperature, double topP, uint64_t seed)
      : Sampler(SamplingOptions{temperature, topP, 0, 0, 1, 64, 0, 0, seed}) {}

  /// Records `token` as seen (the prompt's, then each one sampled) for the
  /// penalties.
  void observe(int64_t token);
  int64_t sample(const float *logits, int64_t vocab);

private:
  /// `logits` with the penalties applied, or `logits` itself when none is.
  const float *penalized(const float *logits, int64_t vocab);

  SamplingOptions options_;
  std::mt19937_64 rng_;
  std::vector<std::pair<double, int64_t>> probs_;
  std::vector<int64_t> recent_;
  std::vector<float> adjusted_;
};

} // namespace tlm::runtime

#endif // TLM_RUNTIME_SAMPLER_H
