//===- Batches.cpp - training batches drawn from a token stream -----------===//

#include "lib/runtime/Batches.h"

namespace tlm::runtime {

uint64_t SplitMix64::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t SplitMix64::below(uint64_t n) {
  // The largest multiple of n that fits: draws at or above it are redrawn.
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do
    x = next();
  while (x >= limit);
  return x % n;
}

Expected<BatchSampler> BatchSampler::create(const io::TokenStream &data,
                                            const std::string &name,
                                            int64_t batch, int64_t seq,
                                            uint64_t seed) {
  if (data.size() < seq + 1)
    return makeError(name + ": " + std::to_string(data.size()) +
                     " tokens, fewer than the " + std::to_string(seq + 1) +
                     " a window of --seq " + std::to_string(seq) +
                     " and its next token need");
  return BatchSampler(data, name, batch, seq, seed);
}

Expected<TrainingBatch> BatchSampler::next(const model::Config &config) {
  TrainingBatch b;
  b.batch = batch_;
  b.seq = seq_;
  b.inputs.reserve(size_t(batch_ * seq_));
  b.targets.reserve(size_t(batch_ * seq_));
  uint64_t starts = uint64_t(data_->size() - seq_);
  for (int64_t r = 0; r < batch_; ++r) {
    int64_t start = int64_t(rng_.below(starts));
    auto window = data_->read(start, seq_ + 1);
    if (!window)
      return window.takeError();
    for (int64_t i = 0; i <= seq_; ++i) {
      int64_t id = (*window)[size_t(i)];
      if (id < 0 || id >= config.vocabSize)
        return makeError(name_ + ": token id " + std::to_string(id) +
                         " at position " + std::to_string(start + i) +
                         " is out of range [0, " +
                         std::to_string(config.vocabSize) + ")");
    }
    b.inputs.insert(b.inputs.end(), window->begin(), window->end() - 1);
    b.targets.insert(b.targets.end(), window->begin() + 1, window->end());
  }
  return b;
}

} // namespace tlm::runtime
