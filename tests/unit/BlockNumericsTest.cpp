//===- BlockNumericsTest.cpp - transformer blocks and LMs in tlm ops ------===//
//
// A TransformerBlock and a TransformerLM written with tlm ops, one test per
// ablation switch of docs/spec/model.md, JIT-compiled and checked against
// tlm::ref::block / tlm::ref::lm. The op tests already pin each op; these
// pin how the ops compose (residuals, norm placement, GQA weight shapes,
// tied embeddings), which is where a driver is most likely to go wrong.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/JitTestUtil.h"

#include <functional>

using namespace tlm::test;
namespace ref = tlm::ref;

namespace {

/// Random shapes per block configuration (case 0 is batch 1, seq 1).
constexpr size_t kBlockCases = 4;

using Ablation = std::function<void(ref::ModelConfig &)>;

/// Writes blocks and LMs as MLIR text, one `%vN = ...` line per op. The
/// residual adds are `linalg.add` on tensors, which the CPU pipeline lowers
/// like the linalg the tlm ops become.
class Emitter {
public:
  Emitter(const ref::ModelConfig &c, int64_t batch, int64_t seq)
      : c(c), batch(batch), seq(seq) {}

  /// The (batch, seq, d) activation type.
  std::string act(int64_t d) const { return tensorType({batch, seq, d}); }

  /// Appends `%vN = <rhs>` to the body and returns `%vN`.
  std::string emit(const std::string &rhs) {
    std::string v = "%v" + std::to_string(next++);
    body += "  " + v + " = " + rhs + "\n";
    return v;
  }

  /// x · Wᵀ with the entry argument `%<w>` of shape (dOut, dIn).
  std::string linear(const std::string &x, const std::string &w, int64_t dIn,
                     int64_t dOut) {
    return emit("tlm.linear " + x + ", %" + w + " : " + act(dIn) + ", " +
                tensorType({dOut, dIn}) + " -> " + act(dOut));
  }

  std::string add(const std::string &a, const std::string &b) {
    std::string t = act(c.dModel);
    std::string init = emit("tensor.empty() : " + t);
    return emit("linalg.add ins(" + a + ", " + b + " : " + t + ", " + t +
                ") outs(" + init + " : " + t + ") -> " + t);
  }

  /// RMSNorm with gain `%<g>`, or the identity when use_rmsnorm=false.
  std::string norm(const std::string &x, const std::string &g) {
    if (!c.useRmsnorm)
      return x;
    std::string t = act(c.dModel);
    return emit("tlm.rmsnorm " + x + ", %" + g + " {eps = " + f64Attr(c.eps) +
                "} : " + t + ", " + tensorType({c.dModel}) + " -> " + t);
  }

  /// Attn(x) with the projections of layer prefix `p`.
  std::string attention(const std::string &x, const std::string &p) {
    int64_t d = c.dModel, kv = c.kvDim();
    std::string q = linear(x, p + "wq", d, d);
    std::string k = linear(x, p + "wk", d, kv);
    std::string v = linear(x, p + "wv", d, kv);
    std::string attrs =
        "{num_heads = " + std::to_string(c.numHeads) +
        " : i64, num_kv_heads = " + std::to_string(c.numKvHeads) + " : i64";
    if (c.useRope)
      attrs += ", rope_theta = " + f64Attr(c.ropeTheta);
    std::string o = emit("tlm.attention " + q + ", " + k + ", " + v + " " +
                         attrs + "} : (" + act(d) + ", " + act(kv) + ", " +
                         act(kv) + ") -> " + act(d));
    return linear(o, p + "wo", d, d);
  }

  /// SwiGLU, or FFN-SiLU when use_swiglu=false.
  std::string ffn(const std::string &x, const std::string &p) {
    std::string t = act(c.dModel), w1 = tensorType({c.dFF, c.dModel}),
                w2 = tensorType({c.dModel, c.dFF});
    if (c.useSwiglu)
      return emit("tlm.swiglu " + x + ", %" + p + "w1, %" + p + "w2, %" + p +
                  "w3 : (" + t + ", " + w1 + ", " + w2 + ", " + w1 + ") -> " +
                  t);
    return emit("tlm.silu_ffn " + x + ", %" + p + "w1, %" + p + "w2 : (" + t +
                ", " + w1 + ", " + w2 + ") -> " + t);
  }

  /// TransformerBlock of docs/spec/model.md, pre- or post-norm.
  std::string block(const std::string &x, const std::string &p) {
    if (c.normPosition == ref::NormPosition::Pre) {
      std::string h = add(x, attention(norm(x, p + "ln1"), p));
      return add(h, ffn(norm(h, p + "ln2"), p));
    }
    std::string h = norm(add(x, attention(x, p)), p + "ln1");
    return norm(add(h, ffn(h, p)), p + "ln2");
  }

  std::string body;

private:
  const ref::ModelConfig &c;
  int64_t batch, seq;
  int next = 0;
};

/// Random sizes for a config whose switches `ablate` sets first, so the
/// sizes respect them (odd head dims only without RoPE).
ref::ModelConfig randomConfig(Rng &rng, const Ablation &ablate) {
  ref::ModelConfig c;
  ablate(c);
  c.numKvHeads = rng.pick<int64_t>({1, 2});
  c.numHeads = c.numKvHeads * rng.pick<int64_t>({1, 2});
  int64_t dk = c.useRope ? rng.pick<int64_t>({2, 4, 6})
                         : rng.pick<int64_t>({1, 3, 4, 5});
  c.dModel = c.numHeads * dk;
  c.dFF = rng.between(3, 40);
  c.vocabSize = rng.between(3, 40);
  c.ropeTheta = rng.pick<double>({1e4, 100.0});
  c.eps = rng.pick<double>({1e-5, 1e-2});
  return c;
}

/// The config and sizes in words, for failure messages.
std::string describe(const ref::ModelConfig &c, int64_t batch, int64_t seq) {
  return "batch " + std::to_string(batch) + ", seq " + std::to_string(seq) +
         ", d_model " + std::to_string(c.dModel) + ", heads " +
         std::to_string(c.numHeads) + "/" + std::to_string(c.numKvHeads) +
         ", d_ff " + std::to_string(c.dFF) + ", vocab " +
         std::to_string(c.vocabSize) +
         (c.normPosition == ref::NormPosition::Pre ? ", pre-norm"
                                                   : ", post-norm") +
         (c.useRmsnorm ? ", rmsnorm" : ", no norm") +
         (c.useRope ? ", rope" : ", no rope") +
         (c.useSwiglu ? ", swiglu" : ", ffn-silu") +
         (c.tieEmbeddings ? ", tied" : "");
}

/// Random weights of one layer, scaled so activations stay of order one.
ref::BlockWeights randomLayer(Rng &rng, const ref::ModelConfig &c) {
  int64_t d = c.dModel;
  ref::BlockWeights w;
  w.qProj = rng.weight(d, d).f;
  w.kProj = rng.weight(c.kvDim(), d).f;
  w.vProj = rng.weight(c.kvDim(), d).f;
  w.outputProj = rng.weight(d, d).f;
  w.ln1 = rng.gain(d).f;
  w.ln2 = rng.gain(d).f;
  w.w1 = rng.weight(c.dFF, d).f;
  w.w2 = rng.weight(d, c.dFF).f;
  w.w3 = rng.weight(c.dFF, d).f;
  return w;
}

/// Appends one layer's entry arguments `%<p>wq`, ...; norm gains and w3 only
/// when the config uses them, as in a checkpoint.
void appendLayerArgs(std::vector<Buffer> &args, const ref::BlockWeights &w,
                     const ref::ModelConfig &c, const std::string &p) {
  int64_t d = c.dModel, kv = c.kvDim(), ff = c.dFF;
  auto add = [&](const std::string &name, Shape shape, const Tensor &data) {
    args.push_back(Buffer{std::move(shape), false, data, {}, p + name});
  };
  add("wq", {d, d}, w.qProj);
  add("wk", {kv, d}, w.kProj);
  add("wv", {kv, d}, w.vProj);
  add("wo", {d, d}, w.outputProj);
  if (c.useRmsnorm) {
    add("ln1", {d}, w.ln1);
    add("ln2", {d}, w.ln2);
  }
  add("w1", {ff, d}, w.w1);
  add("w2", {d, ff}, w.w2);
  if (c.useSwiglu)
    add("w3", {ff, d}, w.w3);
}

/// `@f<index>(x, layer weights...)` computing one block.
Case blockCase(size_t index, Rng &rng, const ref::ModelConfig &c, int64_t batch,
               int64_t seq) {
  ref::BlockWeights w = randomLayer(rng, c);
  Case k;
  k.entry = "f" + std::to_string(index);
  k.inputs.push_back(rng.f32({batch, seq, c.dModel}, 1.0, "x"));
  appendLayerArgs(k.inputs, w, c, "");
  Emitter e(c, batch, seq);
  std::string y = e.block("%x", "");
  k.outShape = {batch, seq, c.dModel};
  k.text = makeFunc(k.entry, k.inputs, e.body, y, e.act(c.dModel));
  k.expected = ref::block(k.inputs[0].f, batch, seq, c, w);
  k.what = k.entry + ": block, " + describe(c, batch, seq);
  return k;
}

/// Random blocks with the switches `ablate` sets, compiled at `optLevel`.
void checkBlock(uint32_t seed, const Ablation &ablate,
                unsigned optLevel = kSweepOptLevel) {
  Rng rng(seed);
  std::vector<Case> cases;
  for (size_t n = 0; n < kBlockCases; ++n) {
    ref::ModelConfig c = randomConfig(rng, ablate);
    int64_t batch = n == 0 ? 1 : rng.between(1, 3);
    int64_t seq = n == 0 ? 1 : rng.between(2, 9);
    cases.push_back(blockCase(n, rng, c, batch, seq));
  }
  runCases(cases, tol::kBlock, optLevel);
}

// The default configuration at the O3 that users run (O3 codegen of a whole
// LM costs seconds); everything else at the cheaper sweep level.
TEST(BlockNumerics, PreNormDefault) {
  Ablation none = [](ref::ModelConfig &) {};
  checkBlock(201, none, /*optLevel=*/3);
}
TEST(BlockNumerics, PostNorm) {
  checkBlock(202, [](ref::ModelConfig &c) {
    c.normPosition = ref::NormPosition::Post;
  });
}
TEST(BlockNumerics, NoRMSNorm) {
  checkBlock(203, [](ref::ModelConfig &c) { c.useRmsnorm = false; });
}
TEST(BlockNumerics, NoRoPE) {
  checkBlock(204, [](ref::ModelConfig &c) { c.useRope = false; });
}
TEST(BlockNumerics, FFNSiLU) {
  checkBlock(205, [](ref::ModelConfig &c) { c.useSwiglu = false; });
}
TEST(BlockNumerics, AllAblations) {
  checkBlock(206, [](ref::ModelConfig &c) {
    c.normPosition = ref::NormPosition::Post;
    c.useRmsnorm = c.useRope = c.useSwiglu = false;
  });
}

//===----------------------------------------------------------------------===//
// TransformerLM
//===----------------------------------------------------------------------===//

/// Random LM weights; the embedding at σ≈1 like the spec's init.
ref::LMWeights randomLM(Rng &rng, const ref::ModelConfig &c) {
  ref::LMWeights w;
  w.tokenEmbeddings = rng.f32({c.vocabSize, c.dModel}).f;
  for (int64_t i = 0; i < c.numLayers; ++i)
    w.layers.push_back(randomLayer(rng, c));
  w.lnFinal = rng.gain(c.dModel).f;
  w.lmHead = rng.weight(c.vocabSize, c.dModel).f;
  return w;
}

/// `@f<index>(ids, emb, l0_wq, ..., ln_final, lm_head)` computing logits;
/// ln_final and lm_head only when the config uses them.
Case lmCase(size_t index, const ref::ModelConfig &c, const ref::LMWeights &w,
            const Index &ids, int64_t batch, int64_t seq) {
  int64_t d = c.dModel, vocab = c.vocabSize;
  Case k;
  k.entry = "f" + std::to_string(index);
  k.inputs.push_back(Buffer{{batch, seq}, true, {}, ids, "ids"});
  k.inputs.push_back(Buffer{{vocab, d}, false, w.tokenEmbeddings, {}, "emb"});
  for (int64_t i = 0; i < c.numLayers; ++i)
    appendLayerArgs(k.inputs, w.layers[i], c, "l" + std::to_string(i) + "_");
  if (c.useRmsnorm)
    k.inputs.push_back(Buffer{{d}, false, w.lnFinal, {}, "ln_final"});
  if (!c.tieEmbeddings)
    k.inputs.push_back(Buffer{{vocab, d}, false, w.lmHead, {}, "lm_head"});

  Emitter e(c, batch, seq);
  std::string x =
      e.emit("tlm.embedding %ids, %emb : " + tensorType({batch, seq}, "i64") +
             ", " + tensorType({vocab, d}) + " -> " + e.act(d));
  for (int64_t i = 0; i < c.numLayers; ++i)
    x = e.block(x, "l" + std::to_string(i) + "_");
  x = e.norm(x, "ln_final");
  std::string y = e.linear(x, c.tieEmbeddings ? "emb" : "lm_head", d, vocab);
  k.outShape = {batch, seq, vocab};
  k.text = makeFunc(k.entry, k.inputs, e.body, y, e.act(vocab));
  k.expected = ref::lm(ids, batch, seq, c, w);
  k.what = k.entry + ": LM, " + std::to_string(c.numLayers) + " layers, " +
           describe(c, batch, seq);
  return k;
}

/// Two-layer LMs of random sizes with the switches `ablate` sets, compiled
/// at `optLevel` on `compileThreads` threads (0: the default).
void checkLM(uint32_t seed, const Ablation &ablate,
             unsigned optLevel = kSweepOptLevel, unsigned compileThreads = 0) {
  Rng rng(seed);
  std::vector<Case> cases;
  for (size_t n = 0; n < 3; ++n) {
    ref::ModelConfig c = randomConfig(rng, ablate);
    c.numLayers = 2;
    int64_t batch = n == 0 ? 1 : rng.between(1, 3);
    int64_t seq = n == 0 ? 1 : rng.between(2, 9);
    ref::LMWeights w = randomLM(rng, c);
    Index ids = rng.i64({batch, seq}, 0, c.vocabSize - 1).i;
    cases.push_back(lmCase(n, c, w, ids, batch, seq));
  }
  runCases(cases, tol::kBlock, optLevel, compileThreads);
}

TEST(LMNumerics, Untied) {
  checkLM(301, [](ref::ModelConfig &) {});
}
TEST(LMNumerics, TiedEmbeddings) {
  checkLM(302, [](ref::ModelConfig &c) { c.tieEmbeddings = true; });
}
// LLVM's work split into parts compiled on their own threads (CpuCodegen.h),
// and in one piece: the same numerics either way, at the O3 users run.
TEST(LMNumerics, CompiledInOnePart) {
  checkLM(305, [](ref::ModelConfig &) {}, /*optLevel=*/3,
          /*compileThreads=*/1);
}
TEST(LMNumerics, CompiledInThreeParts) {
  checkLM(305, [](ref::ModelConfig &) {}, /*optLevel=*/3,
          /*compileThreads=*/3);
}
TEST(LMNumerics, AllAblations) {
  checkLM(303, [](ref::ModelConfig &c) {
    c.normPosition = ref::NormPosition::Post;
    c.useRmsnorm = c.useRope = c.useSwiglu = false;
  });
}

/// Causality (spec: a shorter sequence gives the first `seq` rows of a
/// longer one), with the same weights compiled at seq 7 and seq 3. Up to
/// f32 summation order, which may differ between the two sizes.
TEST(LMNumerics, PrefixGivesFirstRows) {
  Rng rng(304);
  ref::ModelConfig c;
  c.vocabSize = 11;
  c.dModel = 8;
  c.numLayers = 2;
  c.numHeads = 2;
  c.numKvHeads = 1;
  c.dFF = 12;
  ref::LMWeights w = randomLM(rng, c);
  const int64_t batch = 2, longSeq = 7, shortSeq = 3;
  Index longIds = rng.i64({batch, longSeq}, 0, c.vocabSize - 1).i;
  Index shortIds;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t s = 0; s < shortSeq; ++s)
      shortIds.push_back(longIds[b * longSeq + s]);
  Case longCase = lmCase(0, c, w, longIds, batch, longSeq);
  Case shortCase = lmCase(1, c, w, shortIds, batch, shortSeq);

  std::unique_ptr<mlir::MLIRContext> ctx = makeContext();
  tlm::runtime::JitOptions options;
  options.optLevel = kSweepOptLevel;
  std::unique_ptr<tlm::runtime::Jit> jit =
      compileText(*ctx, longCase.text + shortCase.text, options);
  ASSERT_TRUE(jit);
  Tensor longOut =
      callEntry(*jit, longCase.entry, longCase.inputs, longCase.outShape);
  Tensor shortOut =
      callEntry(*jit, shortCase.entry, shortCase.inputs, shortCase.outShape);
  ASSERT_FALSE(longOut.empty() || shortOut.empty());
  EXPECT_TRUE(allClose(longOut, longCase.expected, tol::kBlock));
  EXPECT_TRUE(allClose(shortOut, shortCase.expected, tol::kBlock));

  Tensor prefix;
  for (int64_t b = 0; b < batch; ++b)
    prefix.insert(prefix.end(), longOut.begin() + b * longSeq * c.vocabSize,
                  longOut.begin() + (b * longSeq + shortSeq) * c.vocabSize);
  EXPECT_TRUE(allClose(shortOut, prefix, tol::kBlock))
      << "the first " << shortSeq << " positions depend on later tokens";
}

} // namespace
