//===- KvCacheTest.cpp - prefill + decode equals one forward --------------===//
//
// For random small configs (GQA, every switch) with seeded weights: the
// whole-sequence step matches the C++ reference LM; prefill of n tokens then
// one-token decode steps reproduce the whole-sequence logits at every
// position; a prefix gives the prefix rows (causality); generation's steps
// (stepLast: the prompt, then one token at a time, last row only) give the
// same rows. Every case runs with f32, bf16, f16, q8_0 and q4_0 matrices
// (the reference on the same values widened or dequantized back to f32).
//
//===----------------------------------------------------------------------===//

#include "lib/model/Init.h"
#include "lib/model/Quantize.h"
#include "lib/compiler/CpuCodegen.h"
#include "lib/compiler/HostTarget.h"
#include "lib/compiler/Jit.h"
#include "lib/runtime/Metrics.h"
#include "lib/runtime/Session.h"
#include "lib/support/Float16.h"
#include "tests/unit/Reference.h"
#include "tests/unit/Tolerances.h"

#include <algorithm>
#include <random>

#include <gtest/gtest.h>

using namespace tlm;
using tlm::test::allClose;
using tlm::test::relativeL2Within;
using tlm::test::Tolerance;

namespace {

/// The spec's KV-cache tolerance: abs 1e-4 + rel 1e-4.
constexpr Tolerance kCache{1e-4, 1e-4};

/// The reference's view of the same weights, matched by name.
/// `c` with f32 matrices: one tensor per weight, the layout of
/// model::initWeights and of the reference.
model::Config wide(model::Config c) {
  c.dtype = model::WeightDtype::F32;
  return c;
}

ref::LMWeights refWeights(const model::Config &c,
                          const std::vector<std::vector<float>> &w) {
  ref::LMWeights r;
  r.layers.resize(c.numLayers);
  std::vector<model::WeightSpec> specs = model::weightSpecs(wide(c));
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string &n = specs[i].name;
    if (n == "token_embeddings.weight")
      r.tokenEmbeddings = w[i];
    else if (n == "ln_final.weight")
      r.lnFinal = w[i];
    else if (n == "lm_head.weight")
      r.lmHead = w[i];
    else {
      size_t dot = n.find('.', 7);
      ref::BlockWeights &b = r.layers[std::stoi(n.substr(7, dot - 7))];
      std::string key = n.substr(dot + 1);
      ref::Tensor *fields[] = {&b.qProj,      &b.kProj, &b.vProj,
                               &b.outputProj, &b.ln1,   &b.ln2,
                               &b.w1,         &b.w2,    &b.w3};
      const char *keys[] = {
          "attn.q_proj.weight",      "attn.k_proj.weight", "attn.v_proj.weight",
          "attn.output_proj.weight", "ln1.weight",         "ln2.weight",
          "ffn.w1.weight",           "ffn.w2.weight",      "ffn.w3.weight"};
      for (size_t f = 0; f < 9; ++f)
        if (key == keys[f])
          *fields[f] = w[i];
    }
  }
  return r;
}

ref::ModelConfig refConfig(const model::Config &c) {
  ref::ModelConfig r;
  r.vocabSize = c.vocabSize;
  r.dModel = c.dModel;
  r.numLayers = c.numLayers;
  r.numHeads = c.numHeads;
  r.numKvHeads = c.kvHeads();
  r.dFF = c.dFF;
  r.ropeTheta = c.ropeTheta;
  r.eps = c.rmsNormEps;
  r.useRmsnorm = c.useRMSNorm;
  r.normPosition =
      c.postNorm ? ref::NormPosition::Post : ref::NormPosition::Pre;
  r.useRope = c.useRope;
  r.useSwiglu = c.useSwiGLU;
  r.tieEmbeddings = c.tieEmbeddings;
  return r;
}

struct Case {
  const char *name;
  model::Config config;
  runtime::JitOptions jit = {};
};

// Without it GoogleTest prints the case as a byte dump, which ctest's test
// discovery puts into every test name (changing from build to build).
void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

std::vector<Case> cases() {
  // Head size 16: the fused attention takes a vector of query rows at a
  // time (AttentionBlocks.cpp; 16 with AVX-512, 8 with AVX2); `mha_dk8`
  // keeps every row in the row form where vectors have 16 lanes.
  auto base = [](int64_t heads, int64_t kvHeads, int64_t dk = 16) {
    model::Config c;
    c.vocabSize = 37;
    c.contextLength = 48;
    c.dModel = dk * heads;
    c.numLayers = 2;
    c.numHeads = heads;
    c.numKvHeads = kvHeads;
    c.dFF = 24;
    return c;
  };
  std::vector<Case> out = {{"mha", base(2, 2)},
                           {"gqa2", base(4, 2)},
                           {"gqa4", base(4, 1)},
                           {"mha_dk8", base(2, 2, /*dk=*/8)}};
  Case post{"post_norm", base(2, 1)};
  post.config.postNorm = true;
  Case noNorm{"no_rmsnorm", base(2, 2)};
  noNorm.config.useRMSNorm = false;
  Case noRope{"no_rope", base(2, 2)};
  noRope.config.useRope = false;
  Case silu{"ffn_silu", base(2, 2)};
  silu.config.useSwiGLU = false;
  Case tied{"tied", base(2, 2)};
  tied.config.tieEmbeddings = true;
  // Attention by the conversion's generic form (tlm-lower-to-linalg), as
  // without tlm-fuse-attention: it masks the rows a shorter sequence lacks
  // rather than never reading them.
  Case unfused{"gqa2_unfused_attention", base(4, 2)};
  unfused.jit.switches.fuseAttention = false;
  // LLVM's split (CpuCodegen.h) with every loop of 40+ instructions in a
  // function of its own first, as small.json's attention nest is on one
  // thread (these blocks have no loop near the default 1500).
  Case outlined{"mha_loops_outlined", base(2, 2)};
  outlined.jit.compileThreads = 2;
  outlined.jit.outlineLoopSize = 40;
  // d_ff 64: W1/W3 take the paired packed form with SwiGLU in its
  // epilogue (tlm-tile-matmuls{fuse-swiglu}), per batch row, on one thread
  // and with the columns split over two.
  Case pairs{"swiglu_pairs", base(2, 2)};
  pairs.config.dFF = 64;
  Case pairs2 = pairs;
  pairs2.name = "swiglu_pairs_2_threads";
  pairs2.jit.threads = 2;
  // Loops this small would run on one thread (tlm-serialize-small-parallel):
  // keep them parallel regions, so the two threads share them.
  pairs2.jit.switches.serializeSmallParallel = false;
  // Blocks for each vector width, whatever the host's (AVX-512: 8 x 32
  // packed tiles of 16 lanes; AVX2: 6 x 16 of 8; SSE/NEON: 6 x 8 of 4).
  Case lanes16 = pairs, lanes8 = pairs2, lanes4 = pairs;
  lanes16.name = "swiglu_pairs_lanes16";
  lanes16.jit.lanes = 16;
  lanes8.name = "swiglu_pairs_2_threads_lanes8";
  lanes8.jit.lanes = 8;
  lanes4.name = "swiglu_pairs_lanes4";
  lanes4.jit.lanes = 4;
  // A head of 3 panels of 32 columns on two threads: three one-panel
  // chunks (TileMatmuls.cpp's threadChunk), not 64 + a ragged 32.
  Case oddChunks{"odd_chunks_2_threads_lanes16", base(2, 2)};
  oddChunks.config.vocabSize = 96;
  oddChunks.jit.threads = 2;
  oddChunks.jit.switches.serializeSmallParallel = false;
  oddChunks.jit.lanes = 16;
  // As the JIT runs by default on two threads: the loops whose size is
  // known at run time only pick threads or one thread per call.
  Case twoThreads{"mha_2_threads_small_serial", base(2, 2)};
  twoThreads.jit.threads = 2;
  // Decode's GEMV reading W's rows one after another (gemv-columns 1, as
  // for models larger than the last-level cache), through every form that
  // has one-row blocks: plain, folded RMSNorm, residual add, SwiGLU pairs.
  Case stream = pairs, stream2 = pairs2, streamTied = tied;
  stream.name = "swiglu_pairs_gemv_stream";
  stream.jit.gemvColumns = 1;
  stream2.name = "swiglu_pairs_2_threads_lanes8_gemv_stream";
  stream2.jit.gemvColumns = 1;
  stream2.jit.lanes = 8;
  streamTied.name = "tied_gemv_stream_lanes4";
  streamTied.jit.gemvColumns = 1;
  streamTied.jit.lanes = 4;
  // d_model 128, d_ff 256: whole 128-weight chunks, so q4_0's GEMV looks
  // its nibbles up on an AVX-512 host (tlm-tile-matmuls{lookup-nibbles},
  // x permuted to the lanes' order; elsewhere the split-k form), on one
  // thread and on two.
  Case wide{"gemv_stream_d128", base(8, 4)};
  wide.config.dFF = 256;
  wide.jit.gemvColumns = 1;
  wide.jit.lanes = 16;
  Case wide2 = wide;
  wide2.name = "gemv_stream_d128_2_threads";
  wide2.jit.threads = 2;
  // Weights in cache (the strategy's 8 columns): the lookup blocks still
  // take one column each.
  Case cached = wide;
  cached.name = "gemv_cached_d128";
  cached.jit.gemvColumns = 0;
  out.insert(out.end(), {post,    noNorm,     noRope,    silu,       tied,
                         unfused, outlined,   pairs,     pairs2,     lanes16,
                         lanes8,  lanes4,     oddChunks, twoThreads, stream,
                         stream2, streamTied, wide,      wide2,      cached});
  // Every case again with each narrower dtype: the reference runs on the
  // same values widened (dequantized) back to f32, so only summation order
  // may differ. A quantized variant where no matrix's d_in takes whole
  // blocks would be the f32 case again, and is left out.
  static std::vector<std::string> names;
  names.reserve(5 * out.size());
  size_t f32Cases = out.size();
  for (model::WeightDtype d :
       {model::WeightDtype::BF16, model::WeightDtype::F16,
        model::WeightDtype::Q8_0, model::WeightDtype::Q4_0})
    for (size_t i = 0; i < f32Cases; ++i) {
      Case narrow = out[i];
      narrow.config.dtype = d;
      std::vector<model::WeightSpec> specs = model::weightSpecs(narrow.config);
      if (model::isQuantized(d) &&
          std::none_of(specs.begin(), specs.end(),
                       [](const model::WeightSpec &s) { return s.isScale; }))
        continue;
      names.push_back(std::string(out[i].name) + "_" +
                      std::string(model::dtypeName(d)));
      narrow.name = names.back().c_str();
      out.push_back(narrow);
    }
  return out;
}

/// The weights as stored for `c`'s dtype, from `w` (wide(c)'s layout): `w`
/// itself for f32; else each matrix rounded (quantized) into `stored` and
/// `w`'s copy replaced by those values widened (dequantized) back, which
/// the reference then runs on.
std::vector<const void *> storeAs(const model::Config &c,
                                  std::vector<std::vector<float>> &w,
                                  std::vector<std::vector<char>> &stored) {
  std::vector<model::WeightSpec> specs = model::weightSpecs(c);
  std::vector<const void *> ptrs;
  stored.assign(specs.size(), {});
  for (size_t i = 0, j = 0; i < specs.size(); ++i, ++j) {
    const model::WeightSpec &s = specs[i];
    if (s.dtype == io::DType::F32) {
      ptrs.push_back(w[j].data());
      continue;
    }
    if (model::isQuantized(s.format)) {
      int64_t rows = s.shape[0], k = int64_t(w[j].size()) / rows;
      int64_t rowBytes = model::quantizedRowBytes(s.format, k);
      stored[i].resize(size_t(rows * rowBytes));
      stored[i + 1].resize(size_t(rows * k / model::kQuantBlock) *
                           sizeof(float));
      auto *scales = reinterpret_cast<float *>(stored[i + 1].data());
      for (int64_t r = 0; r < rows; ++r) {
        float *row = w[j].data() + r * k;
        model::quantizeRow(s.format, row, k, stored[i].data() + r * rowBytes,
                           scales + r * (k / model::kQuantBlock));
        model::dequantizeRow(s.format, stored[i].data() + r * rowBytes,
                             scales + r * (k / model::kQuantBlock), k, row);
      }
      ptrs.push_back(stored[i].data());
      ptrs.push_back(stored[i + 1].data());
      ++i; // the scales
      continue;
    }
    bool bf16 = s.dtype == io::DType::BF16;
    stored[i].resize(w[j].size() * sizeof(uint16_t));
    auto *narrow = reinterpret_cast<uint16_t *>(stored[i].data());
    for (size_t e = 0; e < w[j].size(); ++e) {
      float &v = w[j][e];
      narrow[e] = bf16 ? f32ToBF16(v) : f32ToF16(v);
      v = bf16 ? bf16ToF32(narrow[e]) : f16ToF32(narrow[e]);
    }
    ptrs.push_back(narrow);
  }
  return ptrs;
}

class KvCache : public ::testing::TestWithParam<Case> {};

TEST_P(KvCache, PrefillThenDecodeMatchesForwardAndReference) {
  const model::Config &c = GetParam().config;
  // Long enough for the fused attention's blocks of 16 keys (and of 16
  // query rows) and their tails: 41 new keys (2 blocks + 9), a prefill of 19
  // (1 + 3), decode steps over 19..40 past keys (1 or 2 blocks + a tail, or
  // none), and a chunk of 17 new rows over 19 past keys.
  const int64_t batch = 2, seq = 41, prompt = 19, chunk = 17;
  const int64_t vocab = c.vocabSize;
  std::vector<std::vector<float>> w =
      model::initWeights(wide(c), /*seed=*/7, model::InitScheme::Module);
  std::vector<std::vector<char>> stored;
  std::vector<const void *> ptrs = storeAs(c, w, stored);
  runtime::JitOptions jit = GetParam().jit;
  jit.verifyEachPass = true;
  runtime::SessionOptions options;
  options.batch = batch;
  auto session = runtime::Session::create(c, ptrs, options, jit);
  ASSERT_TRUE(bool(session)) << session.takeError().message();
  runtime::Session &s = **session;
  std::printf("[kv-cache] %s: pipeline %.0f ms, codegen %.0f ms\n",
              GetParam().name, s.program().stats().pipelineMs,
              s.program().stats().codegenMs);

  std::mt19937 rng(3);
  std::vector<int64_t> ids(batch * seq);
  for (int64_t &id : ids)
    id = std::uniform_int_distribution<int64_t>(0, vocab - 1)(rng);

  // One step over the whole sequence, against the reference.
  std::vector<float> full(batch * seq * vocab);
  ASSERT_FALSE(bool(s.step(ids.data(), seq, full.data())));
  ref::Tensor expected =
      ref::lm(ids, batch, seq, refConfig(c), refWeights(c, w));
  EXPECT_TRUE(allClose(full, expected, tlm::test::tol::kBlock));

  // What `eval` reports equals the reference cross-entropy of these logits.
  ref::Index next;
  ref::Tensor rows;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i + 1 < seq; ++i) {
      next.push_back(ids[b * seq + i + 1]);
      rows.insert(rows.end(), full.begin() + (b * seq + i) * vocab,
                  full.begin() + (b * seq + i + 1) * vocab);
    }
  double eval = runtime::meanNextTokenCrossEntropy(full.data(), ids.data(),
                                                   batch, seq, vocab);
  double want = ref::crossEntropy(rows, next, vocab);
  EXPECT_NEAR(eval, want, 1e-5 * std::fabs(want));

  // Row `pos` of sequence `b` in the whole run.
  auto fullRow = [&](int64_t b, int64_t pos) {
    return std::vector<float>(full.begin() + (b * seq + pos) * vocab,
                              full.begin() + (b * seq + pos + 1) * vocab);
  };
  // Tokens from..seq-1 one at a time (step or stepLast), each step's
  // logits against the whole run's row.
  auto decodeRest = [&](bool last, int64_t from = prompt) {
    std::vector<float> step(batch * vocab);
    for (int64_t pos = from; pos < seq; ++pos) {
      std::vector<int64_t> tok(batch);
      for (int64_t b = 0; b < batch; ++b)
        tok[b] = ids[b * seq + pos];
      ASSERT_FALSE(bool(last ? s.stepLast(tok.data(), 1, step.data())
                             : s.step(tok.data(), 1, step.data())));
      for (int64_t b = 0; b < batch; ++b)
        EXPECT_TRUE(allClose(step.data() + b * vocab, fullRow(b, pos), kCache))
            << (last ? "stepLast" : "decode") << " at position " << pos
            << ", sequence " << b;
    }
    EXPECT_EQ(s.position(), seq);
  };

  // Prefill `prompt` tokens, then decode one at a time.
  s.reset();
  std::vector<int64_t> head(batch * prompt);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < prompt; ++i)
      head[b * prompt + i] = ids[b * seq + i];
  std::vector<float> pre(batch * prompt * vocab);
  ASSERT_FALSE(bool(s.step(head.data(), prompt, pre.data())));
  for (int64_t b = 0; b < batch; ++b) {
    // Causality: the prefix rows equal the full run's first rows.
    std::vector<float> want(full.begin() + b * seq * vocab,
                            full.begin() + (b * seq + prompt) * vocab);
    EXPECT_TRUE(allClose(pre.data() + b * prompt * vocab, want, kCache))
        << "prefill rows of sequence " << b;
  }
  ASSERT_NO_FATAL_FAILURE(decodeRest(/*last=*/false));

  // Prefill, then a chunk of `chunk` tokens in one step (query blocks over
  // past keys), then one at a time.
  s.reset();
  ASSERT_FALSE(bool(s.step(head.data(), prompt, pre.data())));
  std::vector<int64_t> middle(batch * chunk);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < chunk; ++i)
      middle[b * chunk + i] = ids[b * seq + prompt + i];
  std::vector<float> mid(batch * chunk * vocab);
  ASSERT_FALSE(bool(s.step(middle.data(), chunk, mid.data())));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < chunk; ++i)
      EXPECT_TRUE(allClose(mid.data() + (b * chunk + i) * vocab,
                           fullRow(b, prompt + i), kCache))
          << "chunk row " << prompt + i << " of sequence " << b;
  ASSERT_NO_FATAL_FAILURE(decodeRest(/*last=*/false, prompt + chunk));

  // Generation's steps: the prompt, then one token at a time, each writing
  // only the last position's logits, equal to the whole run's rows.
  s.reset();
  std::vector<float> last(batch * vocab);
  ASSERT_FALSE(bool(s.stepLast(head.data(), prompt, last.data())));
  for (int64_t b = 0; b < batch; ++b)
    EXPECT_TRUE(
        allClose(last.data() + b * vocab, fullRow(b, prompt - 1), kCache))
        << "last prompt row of sequence " << b;
  ASSERT_NO_FATAL_FAILURE(decodeRest(/*last=*/true));

  // Sequences at positions of their own in one batch: sequence 1's prompt
  // is `shortPrompt` tokens, right-padded to sequence 0's `prompt` for one
  // prefill, then cut back (Session::truncate). Every later step runs both
  // at their own positions (one token, then a chunk of `chunk` tokens over
  // past keys of different counts, then one token), and each row equals
  // the whole run's row at that sequence's position.
  const int64_t shortPrompt = 7;
  s.reset();
  std::vector<int64_t> padded = head;
  for (int64_t i = shortPrompt; i < prompt; ++i)
    padded[prompt + i] = 0;
  ASSERT_FALSE(bool(s.step(padded.data(), prompt, pre.data())));
  for (int64_t i = 0; i < prompt; ++i)
    EXPECT_TRUE(allClose(pre.data() + i * vocab, fullRow(0, i), kCache))
        << "padded prefill, row " << i << " of sequence 0";
  for (int64_t i = 0; i < shortPrompt; ++i)
    EXPECT_TRUE(
        allClose(pre.data() + (prompt + i) * vocab, fullRow(1, i), kCache))
        << "padded prefill, row " << i << " of sequence 1";
  ASSERT_FALSE(bool(s.truncate(1, shortPrompt)));
  EXPECT_EQ(s.position(1), shortPrompt);
  EXPECT_EQ(s.position(), prompt);
  // `n` tokens of each sequence from its own position, checked.
  auto stepBoth = [&](int64_t n) {
    std::vector<int64_t> tok(batch * n);
    int64_t at[2] = {s.position(0), s.position(1)};
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < n; ++i)
        tok[b * n + i] = ids[b * seq + at[b] + i];
    std::vector<float> out(batch * n * vocab);
    ASSERT_FALSE(bool(s.step(tok.data(), n, out.data())));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < n; ++i)
        EXPECT_TRUE(allClose(out.data() + (b * n + i) * vocab,
                             fullRow(b, at[b] + i), kCache))
            << "own positions: sequence " << b << " at " << at[b] + i;
  };
  ASSERT_NO_FATAL_FAILURE(stepBoth(1));
  ASSERT_NO_FATAL_FAILURE(stepBoth(chunk));
  ASSERT_NO_FATAL_FAILURE(stepBoth(1));
  std::vector<float> lastRows(batch * vocab);
  std::vector<int64_t> tok{ids[s.position(0)], ids[seq + s.position(1)]};
  int64_t at0 = s.position(0), at1 = s.position(1);
  ASSERT_FALSE(bool(s.stepLast(tok.data(), 1, lastRows.data())));
  EXPECT_TRUE(allClose(lastRows.data(), fullRow(0, at0), kCache));
  EXPECT_TRUE(allClose(lastRows.data() + vocab, fullRow(1, at1), kCache));
  EXPECT_TRUE(bool(s.truncate(1, s.position(1) + 1)))
      << "a sequence cannot grow by truncation";
}

INSTANTIATE_TEST_SUITE_P(Configs, KvCache, ::testing::ValuesIn(cases()),
                         [](const auto &info) { return info.param.name; });

/// One narrow compute mode (`jit.compute`) on weights of `dtype` against
/// the f64 reference on the stored weights, on the forms that have packed
/// tiles (plain, SwiGLU pairs with their epilogue, tied embeddings, the
/// FFN-SiLU) and on 1 and 2 threads: the prefill within [kNarrowCompute-
/// MinRelL2, `high`] of the reference; then the same positions one decode
/// step at a time: with `narrowDecode` (int8's GEMV) as far from the
/// reference, else (f32 GEMV blocks) as far from the prefill's rows.
static void expectNarrowCompute(model::Config c, const std::string &compute,
                                model::WeightDtype dtype, double high,
                                bool narrowDecode) {
  c.dtype = dtype;
  const int64_t seq = 41, vocab = c.vocabSize;
  const double low = tlm::test::tol::kNarrowComputeMinRelL2;
  std::mt19937 rng(5);
  std::vector<int64_t> ids(seq);
  for (int64_t &id : ids)
    id = std::uniform_int_distribution<int64_t>(0, vocab - 1)(rng);
  for (int form = 0; form < 3; ++form)
    for (int threads : {1, 2}) {
      model::Config m = c;
      m.tieEmbeddings = form == 1;
      m.useSwiGLU = form != 2;
      SCOPED_TRACE(::testing::Message()
                   << compute << " on " << model::dtypeName(dtype) << ", form "
                   << form << ", " << threads << " threads");
      std::vector<std::vector<float>> w =
          model::initWeights(wide(m), /*seed=*/11, model::InitScheme::Module);
      std::vector<std::vector<char>> stored;
      std::vector<const void *> ptrs = storeAs(m, w, stored);
      runtime::JitOptions jit;
      jit.compute = compute;
      jit.lanes = 16;
      jit.threads = threads;
      auto session =
          runtime::Session::create(m, ptrs, runtime::SessionOptions(), jit);
      ASSERT_TRUE(bool(session)) << session.takeError().message();
      runtime::Session &s = **session;
      std::vector<float> full(seq * vocab);
      ASSERT_FALSE(bool(s.step(ids.data(), seq, full.data())));
      ref::Tensor expected =
          ref::lm(ids, 1, seq, refConfig(m), refWeights(m, w));
      EXPECT_TRUE(relativeL2Within(full.data(), expected, low, high));
      s.reset();
      std::vector<float> steps(seq * vocab);
      for (int64_t pos = 0; pos < seq; ++pos)
        ASSERT_FALSE(bool(
            s.step(&ids[pos], 1, steps.data() + pos * vocab)));
      EXPECT_TRUE(relativeL2Within(steps.data(), narrowDecode ? expected : full,
                                   low, high));
    }
}

// --compute bf16 (docs/cpu-codegen.md#bf16-compute) on every weights
// dtype: the prefill's packed tiles in bf16; decode steps stay f32, within
// the bf16 tolerance of the prefill's rows.
TEST(KvCacheCompute, Bf16PrefillAndDecodeWithinTheirTolerance) {
  if (!runtime::hostCpuTarget().avx512bf16)
    GTEST_SKIP() << "the host has no AVX512-BF16";
  model::Config c;
  c.vocabSize = 64;
  c.contextLength = 48;
  c.dModel = 32;
  c.numLayers = 2;
  c.numHeads = 2;
  c.numKvHeads = 2;
  c.dFF = 64;
  for (model::WeightDtype d :
       {model::WeightDtype::F32, model::WeightDtype::BF16,
        model::WeightDtype::F16, model::WeightDtype::Q8_0,
        model::WeightDtype::Q4_0})
    expectNarrowCompute(c, "bf16", d, tlm::test::tol::kBf16ComputeRelL2,
                        /*narrowDecode=*/false);
}

// --compute int8 (docs/cpu-codegen.md#int8-compute, #int8-decode) on q8_0
// and q4_0 weights: the prefill's tiles and the decode's GEMV both int8.
// d_model and d_ff take whole steps of both (64 and 128 weights).
TEST(KvCacheCompute, Int8PrefillAndDecodeWithinTheirTolerance) {
  if (!runtime::hostCpuTarget().avx512vnni)
    GTEST_SKIP() << "the host has no AVX512-VNNI";
  model::Config c;
  c.vocabSize = 64;
  c.contextLength = 48;
  c.dModel = 128;
  c.numLayers = 2;
  c.numHeads = 4;
  c.numKvHeads = 2;
  c.dFF = 256;
  for (model::WeightDtype d :
       {model::WeightDtype::Q8_0, model::WeightDtype::Q4_0})
    expectNarrowCompute(c, "int8", d, tlm::test::tol::kInt8ComputeRelL2,
                        /*narrowDecode=*/true);
}

TEST(Session, RejectsOutOfRangeTokensAndContextOverflow) {
  model::Config c = cases()[0].config;
  auto w = model::initWeights(c, 0, model::InitScheme::Module);
  std::vector<const void *> ptrs;
  for (const auto &t : w)
    ptrs.push_back(t.data());
  auto session = runtime::Session::create(c, ptrs);
  ASSERT_TRUE(bool(session)) << session.takeError().message();
  std::vector<float> logits(c.contextLength * 2 * c.vocabSize);
  std::vector<int64_t> bad = {1, c.vocabSize};
  Error err = (*session)->step(bad.data(), 2, logits.data());
  EXPECT_EQ(err.message(), "token id 37 at position 1 is out of range [0, 37)");
  std::vector<int64_t> tooLong(c.contextLength + 1, 0);
  err = (*session)->step(tooLong.data(), tooLong.size(), logits.data());
  EXPECT_EQ(err.message(), "sequence of 49 tokens exceeds context_length (48)");
}

TEST(Init, SeededAndDeterministic) {
  model::Config c = cases()[1].config;
  auto a = model::initWeights(c, 5, model::InitScheme::Module);
  auto b = model::initWeights(c, 5, model::InitScheme::Module);
  auto d = model::initWeights(c, 6, model::InitScheme::Module);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, d);
  // Truncation: every linear weight lies within 3σ.
  std::vector<model::WeightSpec> specs = model::weightSpecs(c);
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].shape.size() == 1) {
      for (float v : a[i])
        EXPECT_EQ(v, 1.0f) << specs[i].name;
      continue;
    }
    double sigma =
        specs[i].name == "token_embeddings.weight"
            ? 1.0
            : std::sqrt(2.0 / (specs[i].shape[0] + specs[i].shape[1]));
    for (float v : a[i])
      EXPECT_LE(std::fabs(v), 3 * sigma + 1e-6) << specs[i].name;
  }
}

} // namespace
