//===- Reference.h - plain C++ reference of the model math ------*- C++ -*-===//
//
// The obviously-correct side of the numerics tests: docs/spec/model.md written as
// nested loops over row-major std::vector<float> tensors. Sums are
// accumulated in double, so against the JIT's f32 code the reference is the
// more accurate side; each op rounds its result to float once, as the spec's
// f32 model does. Leading ("...") dims are flattened into a row count, so
// every function takes only the sizes it cannot infer.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_TESTS_UNIT_REFERENCE_H
#define TLM_TESTS_UNIT_REFERENCE_H

#include <cassert>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace tlm::ref {

using Tensor = std::vector<float>;
using Index = std::vector<int64_t>;
using Shape = std::vector<int64_t>;

/// Number of elements of `shape` (1 for a 0-d shape).
inline int64_t numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// Rows of a (..., d) tensor, i.e. the product of the leading dims.
inline int64_t numRows(const Tensor &x, int64_t d) {
  assert(d > 0 && x.size() % d == 0 && "last dim does not divide the size");
  return static_cast<int64_t>(x.size()) / d;
}

/// Elementwise a + b (the residual connections).
inline Tensor add(const Tensor &a, const Tensor &b) {
  assert(a.size() == b.size());
  Tensor y(a.size());
  for (size_t i = 0; i < a.size(); ++i)
    y[i] = static_cast<float>(double(a[i]) + double(b[i]));
  return y;
}

/// Linear: y = x · Wᵀ with x (..., dIn) and W (dOut, dIn), no bias.
inline Tensor linear(const Tensor &x, const Tensor &w, int64_t dIn,
                     int64_t dOut) {
  assert(static_cast<int64_t>(w.size()) == dOut * dIn);
  int64_t rows = numRows(x, dIn);
  Tensor y(rows * dOut);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < dOut; ++o) {
      double acc = 0.0;
      for (int64_t i = 0; i < dIn; ++i)
        acc += double(x[r * dIn + i]) * double(w[o * dIn + i]);
      y[r * dOut + o] = static_cast<float>(acc);
    }
  return y;
}

/// Embedding: y = E[ids], one row of `dModel` per id (ids must be in range).
inline Tensor embedding(const Index &ids, const Tensor &table, int64_t dModel) {
  [[maybe_unused]] int64_t vocab = numRows(table, dModel);
  Tensor y(ids.size() * dModel);
  for (size_t t = 0; t < ids.size(); ++t) {
    assert(ids[t] >= 0 && ids[t] < vocab && "id out of range");
    for (int64_t c = 0; c < dModel; ++c)
      y[t * dModel + c] = table[ids[t] * dModel + c];
  }
  return y;
}

/// RMSNorm: y = x / sqrt(mean(x²) + eps) · g over the last dim `d`.
inline Tensor rmsnorm(const Tensor &x, const Tensor &g, int64_t d, double eps) {
  assert(static_cast<int64_t>(g.size()) == d);
  int64_t rows = numRows(x, d);
  Tensor y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double sumSq = 0.0;
    for (int64_t c = 0; c < d; ++c)
      sumSq += double(x[r * d + c]) * double(x[r * d + c]);
    double inv = 1.0 / std::sqrt(sumSq / double(d) + eps);
    for (int64_t c = 0; c < d; ++c)
      y[r * d + c] = static_cast<float>(double(x[r * d + c]) * inv * g[c]);
  }
  return y;
}

/// SiLU(z) = z · sigmoid(z) of one value, in double.
inline double siluScalar(double z) { return z / (1.0 + std::exp(-z)); }

/// Elementwise SiLU.
inline Tensor silu(const Tensor &x) {
  Tensor y(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = static_cast<float>(siluScalar(x[i]));
  return y;
}

/// In-place softmax of one row; the row max is subtracted so large inputs do
/// not overflow. A row of only -inf (nothing visible) becomes NaN, as in
/// PyTorch.
inline void softmaxRow(double *row, int64_t n) {
  double max = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < n; ++j)
    max = std::fmax(max, row[j]);
  double sum = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    row[j] = std::exp(row[j] - max);
    sum += row[j];
  }
  for (int64_t j = 0; j < n; ++j)
    row[j] /= sum;
}

/// Softmax over the last dim `d`.
inline Tensor softmax(const Tensor &x, int64_t d) {
  int64_t rows = numRows(x, d);
  Tensor y(x.size());
  std::vector<double> row(d);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < d; ++c)
      row[c] = x[r * d + c];
    softmaxRow(row.data(), d);
    for (int64_t c = 0; c < d; ++c)
      y[r * d + c] = static_cast<float>(row[c]);
  }
  return y;
}

/// Default RoPE positions of a (lead..., seq, d) tensor with `rows` rows:
/// row r sits at r % seq, i.e. 0..seq-1 in every leading slice.
inline Index defaultPositions(int64_t rows, int64_t seq) {
  Index pos(rows);
  for (int64_t r = 0; r < rows; ++r)
    pos[r] = r % seq;
  return pos;
}

/// Expands a positions tensor of shape `posShape`, right-aligned with the
/// dims `lead` of the input before `d` (size-1 dims broadcast), to one
/// position per row of the input.
inline Index broadcastPositions(const Index &pos, const Shape &posShape,
                                const Shape &lead) {
  assert(posShape.size() <= lead.size());
  size_t shift = lead.size() - posShape.size();
  int64_t rows = numElements(lead);
  Index out(rows);
  for (int64_t r = 0; r < rows; ++r) {
    // Multi-index of row r over `lead`, innermost dim last.
    Index m(lead.size());
    for (int64_t i = static_cast<int64_t>(lead.size()) - 1, rem = r; i >= 0;
         --i) {
      m[i] = rem % lead[i];
      rem /= lead[i];
    }
    int64_t flat = 0;
    for (size_t j = 0; j < posShape.size(); ++j) {
      assert(posShape[j] == 1 || posShape[j] == lead[j + shift]);
      flat = flat * posShape[j] + (posShape[j] == 1 ? 0 : m[j + shift]);
    }
    out[r] = pos[flat];
  }
  return out;
}

/// RoPE: rotates the interleaved pairs (2i, 2i+1) of each row of `d` by
/// pos · theta^(-2i/d), [a, b] -> [a cos − b sin, a sin + b cos];
/// `positions` holds one position per row.
inline Tensor rope(const Tensor &x, int64_t d, const Index &positions,
                   double theta) {
  assert(d % 2 == 0 && "RoPE needs an even last dim");
  int64_t rows = numRows(x, d);
  assert(static_cast<int64_t>(positions.size()) == rows);
  Tensor y(x.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < d / 2; ++i) {
      double angle =
          double(positions[r]) * std::pow(theta, -2.0 * double(i) / double(d));
      double c = std::cos(angle), s = std::sin(angle);
      double a = x[r * d + 2 * i], b = x[r * d + 2 * i + 1];
      y[r * d + 2 * i] = static_cast<float>(a * c - b * s);
      y[r * d + 2 * i + 1] = static_cast<float>(a * s + b * c);
    }
  return y;
}

/// Scaled dot-product attention, softmax(q·kᵀ / sqrt(d) masked) · v, per
/// flattened batch: q (batch, sq, d), k (batch, sk, d), v (batch, sk, dv)
/// -> (batch, sq, dv). `mask` (batch, sq, sk), nonzero = visible; or
/// `causal`: query i sees keys j <= i + sk − sq; neither: every key visible.
inline Tensor sdpa(const Tensor &q, const Tensor &k, const Tensor &v,
                   int64_t batch, int64_t sq, int64_t sk, int64_t d, int64_t dv,
                   const Index *mask = nullptr, bool causal = false) {
  assert(static_cast<int64_t>(q.size()) == batch * sq * d);
  assert(static_cast<int64_t>(k.size()) == batch * sk * d);
  assert(static_cast<int64_t>(v.size()) == batch * sk * dv);
  assert(!(mask && causal) && "a mask or causal, not both");
  double scale = 1.0 / std::sqrt(double(d));
  double negInf = -std::numeric_limits<double>::infinity();
  Tensor out(batch * sq * dv);
  std::vector<double> p(sk);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < sq; ++i) {
      for (int64_t j = 0; j < sk; ++j) {
        bool visible = mask     ? (*mask)[(b * sq + i) * sk + j] != 0
                       : causal ? j <= i + sk - sq
                                : true;
        double dot = 0.0;
        for (int64_t c = 0; c < d; ++c)
          dot +=
              double(q[(b * sq + i) * d + c]) * double(k[(b * sk + j) * d + c]);
        p[j] = visible ? dot * scale : negInf;
      }
      softmaxRow(p.data(), sk);
      for (int64_t e = 0; e < dv; ++e) {
        double acc = 0.0;
        for (int64_t j = 0; j < sk; ++j)
          acc += p[j] * double(v[(b * sk + j) * dv + e]);
        out[(b * sq + i) * dv + e] = static_cast<float>(acc);
      }
    }
  return out;
}

/// Causal multi-head self-attention on projected q (batch, seq, heads·dk)
/// and k, v (batch, seq, kvHeads·dk); query head h reads kv head
/// h / (heads / kvHeads) (GQA). With `ropeTheta`, q and k are rotated per
/// head at `positions` (one per (b, s); default 0..seq-1). Heads are merged
/// back to (batch, seq, heads·dk); the output projection is separate.
inline Tensor attention(const Tensor &q, const Tensor &k, const Tensor &v,
                        int64_t batch, int64_t seq, int64_t heads,
                        int64_t kvHeads, int64_t dk,
                        std::optional<double> ropeTheta = std::nullopt,
                        const Index *positions = nullptr) {
  assert(heads % kvHeads == 0);
  assert(static_cast<int64_t>(q.size()) == batch * seq * heads * dk);
  assert(static_cast<int64_t>(k.size()) == batch * seq * kvHeads * dk);
  assert(static_cast<int64_t>(v.size()) == batch * seq * kvHeads * dk);
  int64_t group = heads / kvHeads;
  Index pos = positions ? *positions : defaultPositions(batch * seq, seq);
  assert(static_cast<int64_t>(pos.size()) == batch * seq);
  Tensor out(q.size());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      int64_t kvh = h / group;
      // Gather this head's (seq, dk) slices.
      Tensor qh(seq * dk), kh(seq * dk), vh(seq * dk);
      Index ph(seq);
      for (int64_t s = 0; s < seq; ++s) {
        ph[s] = pos[b * seq + s];
        for (int64_t c = 0; c < dk; ++c) {
          qh[s * dk + c] = q[(b * seq + s) * heads * dk + h * dk + c];
          kh[s * dk + c] = k[(b * seq + s) * kvHeads * dk + kvh * dk + c];
          vh[s * dk + c] = v[(b * seq + s) * kvHeads * dk + kvh * dk + c];
        }
      }
      if (ropeTheta) {
        qh = rope(qh, dk, ph, *ropeTheta);
        kh = rope(kh, dk, ph, *ropeTheta);
      }
      Tensor oh = sdpa(qh, kh, vh, 1, seq, seq, dk, dk, nullptr,
                       /*causal=*/true);
      for (int64_t s = 0; s < seq; ++s)
        for (int64_t c = 0; c < dk; ++c)
          out[(b * seq + s) * heads * dk + h * dk + c] = oh[s * dk + c];
    }
  return out;
}

/// SwiGLU FFN: y = W2 · (SiLU(W1 x) ⊙ W3 x); W1, W3 (dFF, dModel),
/// W2 (dModel, dFF).
inline Tensor swiglu(const Tensor &x, const Tensor &w1, const Tensor &w2,
                     const Tensor &w3, int64_t dModel, int64_t dFF) {
  Tensor a = linear(x, w1, dModel, dFF), g = linear(x, w3, dModel, dFF);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = static_cast<float>(siluScalar(a[i]) * double(g[i]));
  return linear(a, w2, dFF, dModel);
}

/// FFN-SiLU (use_swiglu = false): y = W2 · SiLU(W1 x).
inline Tensor siluFfn(const Tensor &x, const Tensor &w1, const Tensor &w2,
                      int64_t dModel, int64_t dFF) {
  return linear(silu(linear(x, w1, dModel, dFF)), w2, dFF, dModel);
}

/// Mean over positions of logsumexp(logits row) − logits[target], with
/// logits (..., vocab) and one target per row.
inline float crossEntropy(const Tensor &logits, const Index &targets,
                          int64_t vocab) {
  int64_t rows = numRows(logits, vocab);
  assert(static_cast<int64_t>(targets.size()) == rows);
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    double max = -std::numeric_limits<double>::infinity();
    for (int64_t c = 0; c < vocab; ++c)
      max = std::fmax(max, double(logits[r * vocab + c]));
    double sum = 0.0;
    for (int64_t c = 0; c < vocab; ++c)
      sum += std::exp(double(logits[r * vocab + c]) - max);
    assert(targets[r] >= 0 && targets[r] < vocab && "target out of range");
    total += max + std::log(sum) - double(logits[r * vocab + targets[r]]);
  }
  return static_cast<float>(total / double(rows));
}

//===----------------------------------------------------------------------===//
// TransformerBlock and TransformerLM
//===----------------------------------------------------------------------===//

/// norm_position of docs/spec/model.md.
enum class NormPosition { Pre, Post };

/// The hyper-parameters and ablation switches the block and the LM read.
struct ModelConfig {
  int64_t vocabSize = 1;
  int64_t dModel = 1;
  int64_t numLayers = 1;
  int64_t numHeads = 1;
  int64_t numKvHeads = 1;
  int64_t dFF = 1;
  double ropeTheta = 10000.0;
  double eps = 1e-5;
  bool useRmsnorm = true;
  NormPosition normPosition = NormPosition::Pre;
  bool useRope = true;
  bool useSwiglu = true;
  bool tieEmbeddings = false;

  int64_t headDim() const { return dModel / numHeads; }
  int64_t kvDim() const { return numKvHeads * headDim(); }
};

/// One layer's weights; each field holds the safetensors key
/// `layers.{i}.<key>` named in its comment.
struct BlockWeights {
  Tensor qProj;      ///< attn.q_proj.weight (d_model, d_model)
  Tensor kProj;      ///< attn.k_proj.weight (num_kv_heads·d_k, d_model)
  Tensor vProj;      ///< attn.v_proj.weight (num_kv_heads·d_k, d_model)
  Tensor outputProj; ///< attn.output_proj.weight (d_model, d_model)
  Tensor ln1;        ///< ln1.weight (d_model); unused without RMSNorm
  Tensor ln2;        ///< ln2.weight (d_model); unused without RMSNorm
  Tensor w1;         ///< ffn.w1.weight (d_ff, d_model)
  Tensor w2;         ///< ffn.w2.weight (d_model, d_ff)
  Tensor w3;         ///< ffn.w3.weight (d_ff, d_model); unused without SwiGLU
};

/// The whole model's weights, by safetensors key.
struct LMWeights {
  Tensor tokenEmbeddings; ///< token_embeddings.weight (vocab_size, d_model)
  std::vector<BlockWeights> layers; ///< layers.{i}.*
  Tensor lnFinal; ///< ln_final.weight (d_model); unused w/o RMSNorm
  Tensor lmHead;  ///< lm_head.weight (vocab_size, d_model); unused when tied
};

/// Norm1/Norm2/final norm: RMSNorm, or the identity when use_rmsnorm=false.
inline Tensor norm(const Tensor &x, const Tensor &g, const ModelConfig &c) {
  return c.useRmsnorm ? rmsnorm(x, g, c.dModel, c.eps) : x;
}

/// Attn(x) with its projections: Q, K, V, causal attention, then W_o.
inline Tensor attentionLayer(const Tensor &x, int64_t batch, int64_t seq,
                             const ModelConfig &c, const BlockWeights &w) {
  Tensor q = linear(x, w.qProj, c.dModel, c.dModel);
  Tensor k = linear(x, w.kProj, c.dModel, c.kvDim());
  Tensor v = linear(x, w.vProj, c.dModel, c.kvDim());
  std::optional<double> theta;
  if (c.useRope)
    theta = c.ropeTheta;
  Tensor o = attention(q, k, v, batch, seq, c.numHeads, c.numKvHeads,
                       c.headDim(), theta);
  return linear(o, w.outputProj, c.dModel, c.dModel);
}

/// FFN(x): SwiGLU, or FFN-SiLU when use_swiglu=false.
inline Tensor ffn(const Tensor &x, const ModelConfig &c,
                  const BlockWeights &w) {
  return c.useSwiglu ? swiglu(x, w.w1, w.w2, w.w3, c.dModel, c.dFF)
                     : siluFfn(x, w.w1, w.w2, c.dModel, c.dFF);
}

/// TransformerBlock on x (batch, seq, d_model), pre- or post-norm.
inline Tensor block(const Tensor &x, int64_t batch, int64_t seq,
                    const ModelConfig &c, const BlockWeights &w) {
  if (c.normPosition == NormPosition::Pre) {
    Tensor h = add(x, attentionLayer(norm(x, w.ln1, c), batch, seq, c, w));
    return add(h, ffn(norm(h, w.ln2, c), c, w));
  }
  Tensor h = norm(add(x, attentionLayer(x, batch, seq, c, w)), w.ln1, c);
  return norm(add(h, ffn(h, c, w)), w.ln2, c);
}

/// TransformerLM: ids (batch, seq) -> logits (batch, seq, vocab_size).
inline Tensor lm(const Index &ids, int64_t batch, int64_t seq,
                 const ModelConfig &c, const LMWeights &w) {
  assert(static_cast<int64_t>(ids.size()) == batch * seq);
  assert(static_cast<int64_t>(w.layers.size()) == c.numLayers);
  Tensor x = embedding(ids, w.tokenEmbeddings, c.dModel);
  for (const BlockWeights &layer : w.layers)
    x = block(x, batch, seq, c, layer);
  x = norm(x, w.lnFinal, c);
  const Tensor &head = c.tieEmbeddings ? w.tokenEmbeddings : w.lmHead;
  return linear(x, head, c.dModel, c.vocabSize);
}

} // namespace tlm::ref

#endif // TLM_TESTS_UNIT_REFERENCE_H
