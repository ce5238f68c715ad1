//===- TrainingReference.h - a plain C++ training step ----*- C++ -*-===//
//
// The obviously-correct side of the training tests (TrainingStepTest checks
// the compiled optimizer against the same data): CS336's AdamW (§4.3, Algorithm 1) and
// PyTorch's form of it, gradient clipping by the global L2 norm (§4.5), and
// the cosine learning-rate schedule with warmup (§4.4), as CS336's handout
// and data/conformance/cs336/training/README.md state them. The optimizer computes as PyTorch's does
// (and the compiled step will): scalars such as the bias corrections in
// double, every tensor operation in float. Norms and the schedule are
// computed in double.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_TESTS_UNIT_TRAININGREFERENCE_H
#define TLM_TESTS_UNIT_TRAININGREFERENCE_H

#include <cmath>
#include <cstdint>
#include <vector>

namespace tlm::ref {

struct AdamWOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0.01;
  /// CS336's Algorithm 1 (decay last, with the base rate, eps added to
  /// sqrt(v)) or PyTorch's torch.optim.AdamW (decay first, eps added to
  /// sqrt(v_hat)).
  enum class Form { Cs336, Torch } form = Form::Cs336;
};

/// One AdamW update of `w` by its gradient `g` at step `t` (from 1), with
/// the moments `m` and `v` (zero before step 1) updated in place.
inline void adamwStep(std::vector<float> &w, const std::vector<float> &g,
                      std::vector<float> &m, std::vector<float> &v, int64_t t,
                      const AdamWOptions &o) {
  double c1 = 1 - std::pow(o.beta1, double(t));
  double c2 = 1 - std::pow(o.beta2, double(t));
  float b1 = float(o.beta1), b2 = float(o.beta2), eps = float(o.eps);
  float decay = float(o.lr * o.weightDecay);
  for (size_t i = 0; i < w.size(); ++i) {
    m[i] = b1 * m[i] + float(1 - o.beta1) * g[i];
    v[i] = b2 * v[i] + float(1 - o.beta2) * g[i] * g[i];
    if (o.form == AdamWOptions::Form::Cs336) {
      float alpha = float(o.lr * std::sqrt(c2) / c1);
      w[i] -= alpha * m[i] / (std::sqrt(v[i]) + eps);
      w[i] -= decay * w[i];
    } else {
      w[i] *= 1 - decay;
      float denom = std::sqrt(v[i]) / float(std::sqrt(c2)) + eps;
      w[i] -= float(o.lr / c1) * m[i] / denom;
    }
  }
}

/// Scales every gradient by maxNorm / (norm + eps) when their global L2
/// norm exceeds maxNorm (maxNorm 0: no clipping); returns the norm before.
inline double clipByGlobalNorm(std::vector<std::vector<float>> &grads,
                               double maxNorm, double eps = 1e-6) {
  double sum = 0;
  for (const auto &g : grads)
    for (float x : g)
      sum += double(x) * x;
  double norm = std::sqrt(sum);
  if (maxNorm > 0 && norm > maxNorm) {
    double scale = maxNorm / (norm + eps);
    for (auto &g : grads)
      for (float &x : g)
        x = float(x * scale);
  }
  return norm;
}

/// CS336's cosine schedule: a linear warmup to `maxLr` over `warmup`
/// steps, a cosine from `maxLr` to `minLr` until step `cycle`, then
/// `minLr`.
inline double cosineLearningRate(int64_t t, double maxLr, double minLr,
                                 int64_t warmup, int64_t cycle) {
  if (t < warmup)
    return double(t) / double(warmup) * maxLr;
  if (t <= cycle) {
    double progress = double(t - warmup) / double(cycle - warmup);
    return minLr + (1 + std::cos(M_PI * progress)) / 2 * (maxLr - minLr);
  }
  return minLr;
}

} // namespace tlm::ref

#endif // TLM_TESTS_UNIT_TRAININGREFERENCE_H
