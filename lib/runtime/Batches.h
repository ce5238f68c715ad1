//===- Batches.h - training batches drawn from a token stream ---*- C++ -*-===//
//
// CS336's get_batch (assignment 1, §5.1) over a flat token file: `batch`
// windows of `seq + 1` ids at starts drawn uniformly from
// [0, size − seq − 1], inputs the first `seq` ids of a window and targets
// the last `seq`. The generator is SplitMix64, whose whole state is one
// number, so a checkpoint can hold it and a resumed run draws the same
// batches (and any platform draws the same ones for a seed).
//
//===----------------------------------------------------------------------===//
#ifndef TLM_RUNTIME_BATCHES_H
#define TLM_RUNTIME_BATCHES_H

#include "lib/io/TokenFile.h"
#include "lib/runtime/Training.h"

#include <cstdint>

namespace tlm::runtime {

/// SplitMix64 (Steele, Lea, Flood 2014): 64 bits of state.
class SplitMix64 {
public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();
  /// Uniform in [0, n), n > 0 (rejection, no modulo bias).
  uint64_t below(uint64_t n);
  uint64_t state() const { return state_; }
  void setState(uint64_t s) { state_ = s; }

private:
  uint64_t state_;
};

class BatchSampler {
public:
  /// Batches of `batch` x (`seq` + 1) ids from `data` (which must outlive
  /// the sampler); an error when the stream is shorter than seq + 1.
  static Expected<BatchSampler> create(const io::TokenStream &data,
                                       const std::string &name, int64_t batch,
                                       int64_t seq, uint64_t seed);

  /// The next batch, its ids checked against `config` (the id, and where in
  /// the file it is, named when one is out of range).
  Expected<TrainingBatch> next(const model::Config &config);

  SplitMix64 &generator() { return rng_; }

private:
  BatchSampler(const io::TokenStream &data, std::string name, int64_t batch,
               int64_t seq, uint64_t seed)
      : data_(&data), name_(std::move(name)), batch_(batch), seq_(seq),
        rng_(seed) {}
  const io::TokenStream *data_;
  std::string name_;
  int64_t batch_, seq_;
  SplitMix64 rng_;
};

} // namespace tlm::runtime

#endif // TLM_RUNTIME_BATCHES_H
