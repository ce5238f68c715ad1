//===- GradientReference.h - the ops' forward in f64 ----------*- C++ -*-===//
//
// The forward of each differentiable op in double precision, on flat
// row-major vectors: what the gradient tests differentiate by central
// differences. Written for clarity, not speed; the shapes are tiny.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_TESTS_UNIT_GRADIENTREFERENCE_H
#define TLM_TESTS_UNIT_GRADIENTREFERENCE_H

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace tlm::ref64 {

using Vec = std::vector<double>;

/// y (rows, n) = x (rows, k) · Wᵀ, W (n, k).
inline Vec linear(const Vec &x, const Vec &w, int64_t k, int64_t n) {
  int64_t rows = int64_t(x.size()) / k;
  Vec y(rows * n, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < n; ++o)
      for (int64_t i = 0; i < k; ++i)
        y[r * n + o] += x[r * k + i] * w[o * k + i];
  return y;
}

inline Vec embedding(const std::vector<int64_t> &ids, const Vec &table,
                     int64_t d) {
  Vec y;
  for (int64_t id : ids)
    y.insert(y.end(), table.begin() + id * d, table.begin() + (id + 1) * d);
  return y;
}

inline Vec rmsnorm(const Vec &x, const Vec &g, int64_t d, double eps) {
  Vec y(x.size());
  for (size_t r = 0; r < x.size() / d; ++r) {
    double sq = 0;
    for (int64_t i = 0; i < d; ++i)
      sq += x[r * d + i] * x[r * d + i];
    double rms = std::sqrt(sq / double(d) + eps);
    for (int64_t i = 0; i < d; ++i)
      y[r * d + i] = x[r * d + i] / rms * g[i];
  }
  return y;
}

inline double silu(double z) { return z / (1.0 + std::exp(-z)); }

/// W2 · (SiLU(W1 x) ⊙ W3 x), or without W3 (empty) W2 · SiLU(W1 x).
inline Vec ffn(const Vec &x, const Vec &w1, const Vec &w2, const Vec &w3,
               int64_t d, int64_t dff) {
  Vec a = linear(x, w1, d, dff), h(a.size());
  Vec b = w3.empty() ? Vec() : linear(x, w3, d, dff);
  for (size_t i = 0; i < a.size(); ++i)
    h[i] = silu(a[i]) * (w3.empty() ? 1.0 : b[i]);
  return linear(h, w2, dff, d);
}

/// Rotates the pairs (2i, 2i+1) of each head of x (B, S, n·dk) in place at
/// positions 0..S-1.
inline void rope(Vec &x, int64_t batch, int64_t seq, int64_t heads,
                 int64_t dk, double theta) {
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t s = 0; s < seq; ++s)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < dk / 2; ++i) {
          double angle = double(s) * std::pow(theta, -2.0 * i / double(dk));
          double *p = &x[((b * seq + s) * heads + h) * dk + 2 * i];
          double a = p[0], c = p[1];
          p[0] = a * std::cos(angle) - c * std::sin(angle);
          p[1] = a * std::sin(angle) + c * std::cos(angle);
        }
}

/// Causal attention of tlm.attention: q (B, S, H·dk), k and v
/// (B, S, KV·dk), query head h reading kv head h / (H / KV).
inline Vec attention(Vec q, Vec k, const Vec &v, int64_t batch, int64_t seq,
                     int64_t heads, int64_t kvHeads, int64_t dk,
                     std::optional<double> theta) {
  if (theta) {
    rope(q, batch, seq, heads, dk, *theta);
    rope(k, batch, seq, kvHeads, dk, *theta);
  }
  int64_t group = heads / kvHeads;
  Vec out(q.size(), 0.0);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < seq; ++i) {
        const double *qi = &q[((b * seq + i) * heads + h) * dk];
        Vec s(i + 1);
        double mx = -std::numeric_limits<double>::infinity(), sum = 0;
        for (int64_t j = 0; j <= i; ++j) {
          const double *kj = &k[((b * seq + j) * kvHeads + h / group) * dk];
          double dot = 0;
          for (int64_t e = 0; e < dk; ++e)
            dot += qi[e] * kj[e];
          s[j] = dot / std::sqrt(double(dk));
          mx = std::max(mx, s[j]);
        }
        for (double &x : s)
          sum += (x = std::exp(x - mx));
        double *o = &out[((b * seq + i) * heads + h) * dk];
        for (int64_t j = 0; j <= i; ++j) {
          const double *vj = &v[((b * seq + j) * kvHeads + h / group) * dk];
          for (int64_t e = 0; e < dk; ++e)
            o[e] += s[j] / sum * vj[e];
        }
      }
  return out;
}

/// Mean over rows of logsumexp(row) − row[target].
inline double crossEntropy(const Vec &logits,
                           const std::vector<int64_t> &targets,
                           int64_t vocab) {
  double total = 0;
  for (size_t r = 0; r < targets.size(); ++r) {
    const double *row = &logits[r * vocab];
    double mx = row[0], sum = 0;
    for (int64_t i = 1; i < vocab; ++i)
      mx = std::max(mx, row[i]);
    for (int64_t i = 0; i < vocab; ++i)
      sum += std::exp(row[i] - mx);
    total += mx + std::log(sum) - row[targets[r]];
  }
  return total / double(targets.size());
}

} // namespace tlm::ref64

#endif // TLM_TESTS_UNIT_GRADIENTREFERENCE_H
