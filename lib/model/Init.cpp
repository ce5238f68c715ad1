//===- Init.cpp - seeded weight initialisation ----------------------------===//

#include "lib/model/Init.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cmath>
#include <numeric>
#include <thread>
#include <vector>

namespace tlm::model {

namespace {
/// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, and fully specified.
class SplitMix64 {
public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in the open interval (0, 1), so log() below is finite.
  double uniform() { return ((next() >> 11) + 0.5) * 0x1.0p-53; }

private:
  uint64_t state_;
};

/// Standard normals by Box-Muller, two per pair of uniforms.
class Normal {
public:
  explicit Normal(uint64_t seed) : rng_(seed) {}
  double next() {
    if (hasSpare_) {
      hasSpare_ = false;
      return spare_;
    }
    double r = std::sqrt(-2.0 * std::log(rng_.uniform()));
    double phi = 2.0 * M_PI * rng_.uniform();
    spare_ = r * std::sin(phi);
    hasSpare_ = true;
    return r * std::cos(phi);
  }

private:
  SplitMix64 rng_;
  double spare_ = 0;
  bool hasSpare_ = false;
};

void fill(float *begin, float *end, Normal &normal, double sigma, double cut) {
  for (float *p = begin; p != end; ++p) {
    float &v = *p;
    double z;
    do
      z = normal.next();
    while (cut > 0 && std::fabs(z) > cut);
    v = static_cast<float>(z * sigma);
  }
}
} // namespace

void initWeightsInto(const Config &config, uint64_t seed, InitScheme scheme,
                     const std::vector<float *> &out) {
  std::vector<WeightSpec> specs = weightSpecs(config);
  assert(out.size() == specs.size() && "one buffer per weight");
  auto fillTensor = [&](size_t i) {
    const WeightSpec &s = specs[i];
    float *begin = out[i], *end = out[i] + s.numElements();
    if (s.shape.size() == 1) {
      std::fill(begin, end, 1.0f); // RMSNorm gain
      return;
    }
    Normal normal(seed * 0x9E3779B97F4A7C15ull + i);
    if (scheme == InitScheme::GPT2)
      fill(begin, end, normal, 0.02, /*cut=*/0);
    else if (s.name == "token_embeddings.weight")
      fill(begin, end, normal, 1.0, 3.0);
    else
      fill(begin, end, normal,
           std::sqrt(2.0 / double(s.shape[0] + s.shape[1])), 3.0);
  };
  // Each tensor has a generator of its own, seeded by its index, so the
  // tensors fill in any order and on any thread with the same values: on
  // every core, largest first (small.json's 85 matrices took 3.3 s on one).
  std::vector<size_t> order(specs.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return specs[a].numElements() > specs[b].numElements() ||
           (specs[a].numElements() == specs[b].numElements() && a < b);
  });
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k; (k = next++) < order.size();)
      fillTensor(order[k]);
  };
  size_t workers = std::min<size_t>(
      {size_t(std::max(1u, std::thread::hardware_concurrency())), 8,
       order.size()});
  std::vector<std::thread> pool;
  for (size_t t = 1; t < workers; ++t)
    pool.emplace_back(work);
  work();
  for (std::thread &t : pool)
    t.join();
}

std::vector<std::vector<float>> initWeights(const Config &config, uint64_t seed,
                                            InitScheme scheme) {
  std::vector<WeightSpec> specs = weightSpecs(config);
  std::vector<std::vector<float>> weights;
  weights.reserve(specs.size());
  std::vector<float *> out;
  for (const WeightSpec &s : specs) {
    weights.emplace_back(s.numElements());
    out.push_back(weights.back().data());
  }
  initWeightsInto(config, seed, scheme, out);
  return weights;
}

} // namespace tlm::model
