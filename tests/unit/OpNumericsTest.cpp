//===- OpNumericsTest.cpp - each tlm op, JIT-compiled, vs the reference ---===//
//
// For every op, kCases static shapes drawn from a fixed-seed generator (so a
// failure reproduces), compiled as one module and checked against
// tests/unit/Reference.h under the op family's tolerance. Case 0 of each op
// uses the smallest legal sizes (seq 1, dims 1, head dim 2); the random ones
// bring batches > 1 and sizes that are not powers of two. The sweeps compile
// at kSweepOptLevel to stay fast (see JitTestUtil.h). Also checks that one
// compile serves several runtime sizes and that bad calls are rejected.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/JitTestUtil.h"

#include <optional>

using namespace tlm::test;
namespace ref = tlm::ref;
using tlm::runtime::TensorRef;

namespace {

/// Shapes per op: enough draws to hit ones, odd sizes and batches.
constexpr size_t kCases = 24;

//===----------------------------------------------------------------------===//
// Layers with weights
//===----------------------------------------------------------------------===//

TEST(OpNumerics, Linear) {
  Rng rng(101);
  std::vector<Case> cases;
  for (size_t n = 0; n < kCases; ++n) {
    bool tiny = n == 0;
    Shape lead = tiny ? Shape{1} : rng.lead(0, 3, 5);
    int64_t dIn = tiny ? 1 : rng.between(1, 48);
    int64_t dOut = tiny ? 1 : rng.between(1, 48);
    Buffer x = rng.f32(cat(lead, {dIn})), w = rng.weight(dOut, dIn);
    Shape out = cat(lead, {dOut});
    cases.push_back(opCase(n, {x, w}, out,
                           "tlm.linear %a0, %a1 : " + x.type() + ", " +
                               w.type() + " -> " + tensorType(out),
                           ref::linear(x.f, w.f, dIn, dOut)));
  }
  runCases(cases, tol::kMatmul, kSweepOptLevel);
}

TEST(OpNumerics, Embedding) {
  Rng rng(102);
  std::vector<Case> cases;
  for (size_t n = 0; n < kCases; ++n) {
    bool tiny = n == 0;
    Shape idsShape = tiny ? Shape{1} : rng.lead(0, 3, 6);
    int64_t vocab = tiny ? 1 : rng.between(1, 50);
    int64_t d = tiny ? 1 : rng.between(1, 40);
    Buffer ids = rng.i64(idsShape, 0, vocab - 1), table = rng.f32({vocab, d});
    Shape out = cat(idsShape, {d});
    cases.push_back(opCase(n, {ids, table}, out,
                           "tlm.embedding %a0, %a1 : " + ids.type() + ", " +
                               table.type() + " -> " + tensorType(out),
                           ref::embedding(ids.i, table.f, d)));
  }
  runCases(cases, tol::kExact, kSweepOptLevel);
}

TEST(OpNumerics, RMSNorm) {
  Rng rng(103);
  std::vector<Case> cases;
  for (size_t n = 0; n < kCases; ++n) {
    bool tiny = n == 0;
    Shape lead = tiny ? Shape{} : rng.lead(0, 3, 5);
    int64_t d = tiny ? 1 : rng.between(1, 64);
    // Tiny inputs make eps dominate mean(x²), so a wrong eps shows.
    double scale = rng.pick<double>({1e-3, 1.0, 50.0});
    double eps = rng.pick<double>({1e-5, 1e-6, 1e-2, 0.5});
    Buffer x = rng.f32(cat(lead, {d}), scale), g = rng.gain(d);
    // Leaving the attribute out must mean the default eps = 1e-5.
    std::string attr = eps == 1e-5 && rng.coin()
                           ? std::string(" ")
                           : " {eps = " + f64Attr(eps) + "} ";
    cases.push_back(opCase(n, {x, g}, x.shape,
                           "tlm.rmsnorm %a0, %a1" + attr + ": " + x.type() +
                               ", " + g.type() + " -> " + x.type(),
                           ref::rmsnorm(x.f, g.f, d, eps)));
  }
  runCases(cases, tol::kRowwise, kSweepOptLevel);
}

/// SwiGLU when `gated`, else FFN-SiLU (no w3).
void checkFFN(uint32_t seed, bool gated) {
  Rng rng(seed);
  std::vector<Case> cases;
  for (size_t n = 0; n < kCases; ++n) {
    bool tiny = n == 0;
    Shape lead = tiny ? Shape{1} : rng.lead(0, 2, 4);
    int64_t dModel = tiny ? 1 : rng.between(1, 24);
    int64_t dFF = tiny ? 1 : rng.between(1, 40);
    // Scale 2 reaches both the linear and the saturated parts of SiLU.
    Buffer x = rng.f32(cat(lead, {dModel}), 2.0);
    Buffer w1 = rng.weight(dFF, dModel), w2 = rng.weight(dModel, dFF);
    Buffer w3 = rng.weight(dFF, dModel);
    std::string types = x.type() + ", " + w1.type() + ", " + w2.type();
    if (gated)
      cases.push_back(opCase(n, {x, w1, w2, w3}, x.shape,
                             "tlm.swiglu %a0, %a1, %a2, %a3 : (" + types +
                                 ", " + w3.type() + ") -> " + x.type(),
                             ref::swiglu(x.f, w1.f, w2.f, w3.f, dModel, dFF)));
    else
      cases.push_back(
          opCase(n, {x, w1, w2}, x.shape,
                 "tlm.silu_ffn %a0, %a1, %a2 : (" + types + ") -> " + x.type(),
                 ref::siluFfn(x.f, w1.f, w2.f, dModel, dFF)));
  }
  runCases(cases, tol::kMatmul, kSweepOptLevel);
}

TEST(OpNumerics, SwiGLU) { checkFFN(104, /*gated=*/true); }
TEST(OpNumerics, SiLUFFN) { checkFFN(105, /*gated=*/false); }

//===----------------------------------------------------------------------===//
// RoPE and attention
//===----------------------------------------------------------------------===//

/// RoPE on (lead..., seq, d) with default positions or, when `explicitPos`,
/// a positions tensor right-aligned with (lead..., seq) that may broadcast.
void checkRoPE(uint32_t seed, bool explicitPos) {
  Rng rng(seed);
  std::vector<Case> cases;
  for (size_t n = 0; n < kCases; ++n) {
    bool tiny = n == 0;
    Shape dims = tiny ? Shape{1} : cat(rng.lead(0, 2, 3), {rng.between(1, 12)});
    int64_t d = tiny ? 2 : 2 * rng.between(1, 16);
    double theta = rng.pick<double>({1e4, 5e5, 100.0, 1.5});
    Buffer x = rng.f32(cat(dims, {d}));
    std::string attr = " {theta = " + f64Attr(theta) + "} : ";
    if (!explicitPos) {
      Index pos = ref::defaultPositions(ref::numElements(dims), dims.back());
      cases.push_back(opCase(
          n, {x}, x.shape, "tlm.rope %a0" + attr + x.type() + " -> " + x.type(),
          ref::rope(x.f, d, pos, theta)));
      continue;
    }
    // The last `rank` dims of (lead..., seq), some squeezed to 1.
    int64_t rank = rng.between(1, static_cast<int64_t>(dims.size()));
    Shape pShape(dims.end() - rank, dims.end());
    for (int64_t &p : pShape)
      if (rng.between(0, 3) == 0)
        p = 1;
    Buffer p = rng.i64(pShape, 0, 4096);
    Index pos = ref::broadcastPositions(p.i, pShape, dims);
    cases.push_back(opCase(n, {x, p}, x.shape,
                           "tlm.rope %a0 positions %a1" + attr + x.type() +
                               ", " + p.type() + " -> " + x.type(),
                           ref::rope(x.f, d, pos, theta)));
  }
  runCases(cases, tol::kElementwise, kSweepOptLevel);
}

TEST(OpNumerics, RoPEDefaultPositions) { checkRoPE(106, false); }
TEST(OpNumerics, RoPEExplicitPositions) { checkRoPE(107, true); }

enum class SdpaMode { Mask, Causal, AllVisible };

/// sdpa on (lead..., Sq, D) queries and (lead..., Sk, D|Dv) keys/values.
/// Masks keep one visible key per row and causal draws Sq <= Sk: a query
/// that sees nothing has no defined result in the spec.
void checkSdpa(uint32_t seed, SdpaMode mode) {
  Rng rng(seed);
  std::vector<Case> cases;
  for (size_t n = 0; n < kCases; ++n) {
    bool tiny = n == 0;
    Shape lead = tiny ? Shape{} : rng.lead(0, 2, 3);
    int64_t sk = tiny ? 1 : rng.between(1, 11);
    int64_t sq = tiny ? 1 : rng.between(1, mode == SdpaMode::Causal ? sk : 9);
    int64_t d = tiny ? 1 : rng.between(1, 16);
    int64_t dv = tiny ? 1 : rng.between(1, 16);
    double scale = rng.pick<double>({1.0, 3.0});
    Buffer q = rng.f32(cat(lead, {sq, d}), scale);
    Buffer k = rng.f32(cat(lead, {sk, d}), scale);
    Buffer v = rng.f32(cat(lead, {sk, dv}));
    Shape out = cat(lead, {sq, dv});
    int64_t batch = ref::numElements(lead);
    std::string types = q.type() + ", " + k.type() + ", " + v.type();
    if (mode == SdpaMode::Mask) {
      // Any nonzero value means visible, not just 1.
      Buffer m = rng.i64(cat(lead, {sq, sk}), 0, 0);
      for (int64_t &x : m.i)
        x = rng.pick<int64_t>({0, 0, 1, 1, 3, -2});
      for (int64_t row = 0; row < batch * sq; ++row)
        m.i[row * sk + rng.between(0, sk - 1)] = 1;
      cases.push_back(
          opCase(n, {q, k, v, m}, out,
                 "tlm.sdpa %a0, %a1, %a2 mask %a3 : (" + types + ", " +
                     m.type() + ") -> " + tensorType(out),
                 ref::sdpa(q.f, k.f, v.f, batch, sq, sk, d, dv, &m.i, false)));
      continue;
    }
    bool causal = mode == SdpaMode::Causal;
    cases.push_back(opCase(
        n, {q, k, v}, out,
        std::string("tlm.sdpa %a0, %a1, %a2 ") + (causal ? "{causal} " : "") +
            ": (" + types + ") -> " + tensorType(out),
        ref::sdpa(q.f, k.f, v.f, batch, sq, sk, d, dv, nullptr, causal)));
  }
  runCases(cases, tol::kAttention, kSweepOptLevel);
}

TEST(OpNumerics, SdpaMask) { checkSdpa(108, SdpaMode::Mask); }
TEST(OpNumerics, SdpaCausal) { checkSdpa(109, SdpaMode::Causal); }
TEST(OpNumerics, SdpaAllVisible) { checkSdpa(110, SdpaMode::AllVisible); }

/// Causal attention on (B, S, H·dk) / (B, S, KV·dk), the GQA ratio H/KV
/// cycling through 1, 2, 4. With `rope`, optionally at explicit positions
/// of shape (S), (1, S) or (B, S).
void checkAttention(uint32_t seed, bool rope, bool explicitPos) {
  Rng rng(seed);
  std::vector<Case> cases;
  for (size_t n = 0; n < kCases; ++n) {
    bool tiny = n == 0;
    int64_t ratio = std::vector<int64_t>{1, 2, 4}[n % 3];
    int64_t kvHeads = tiny ? 1 : rng.between(1, 3);
    int64_t heads = kvHeads * ratio;
    int64_t dk = tiny ? 2 : rope ? 2 * rng.between(1, 4) : rng.between(1, 8);
    int64_t batch = tiny ? 1 : rng.between(1, 3);
    int64_t seq = tiny ? 1 : rng.between(1, 9);
    double theta = rng.pick<double>({1e4, 100.0, 5e5});
    double scale = rng.pick<double>({1.0, 2.0});
    Buffer q = rng.f32({batch, seq, heads * dk}, scale);
    Buffer k = rng.f32({batch, seq, kvHeads * dk}, scale);
    Buffer v = rng.f32({batch, seq, kvHeads * dk});
    std::vector<Buffer> inputs{q, k, v};
    std::string types = q.type() + ", " + k.type() + ", " + v.type();
    std::string attrs = "{num_heads = " + std::to_string(heads) +
                        " : i64, num_kv_heads = " + std::to_string(kvHeads) +
                        " : i64";
    std::optional<double> ropeTheta;
    if (rope) {
      ropeTheta = theta;
      attrs += ", rope_theta = " + f64Attr(theta);
    }
    attrs += "}";
    std::optional<Index> pos;
    std::string posOperand;
    if (explicitPos) {
      Shape pShape = rng.pick<Shape>({{seq}, {1, seq}, {batch, seq}});
      inputs.push_back(rng.i64(pShape, 0, 512));
      pos = ref::broadcastPositions(inputs.back().i, pShape, {batch, seq});
      posOperand = " positions %a3";
      types += ", " + inputs.back().type();
    }
    Tensor expected = ref::attention(q.f, k.f, v.f, batch, seq, heads, kvHeads,
                                     dk, ropeTheta, pos ? &*pos : nullptr);
    cases.push_back(opCase(n, std::move(inputs), q.shape,
                           "tlm.attention %a0, %a1, %a2" + posOperand + " " +
                               attrs + " : (" + types + ") -> " + q.type(),
                           std::move(expected)));
  }
  runCases(cases, tol::kAttention, kSweepOptLevel);
}

TEST(OpNumerics, AttentionNoRoPE) { checkAttention(111, false, false); }
TEST(OpNumerics, AttentionRoPE) { checkAttention(112, true, false); }
TEST(OpNumerics, AttentionRoPEExplicitPositions) {
  checkAttention(113, true, true);
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

TEST(OpNumerics, SiLU) {
  Rng rng(114);
  std::vector<Case> cases;
  for (size_t n = 0; n < kCases; ++n) {
    Shape shape = n == 0 ? Shape{1} : rng.lead(1, 4, 7);
    // Past ±88 exp(-x) overflows f32: SiLU must still give x or -0.
    Buffer x = rng.f32(shape, rng.pick<double>({1.0, 8.0, 120.0}));
    cases.push_back(
        opCase(n, {x}, shape, "tlm.silu %a0 : " + x.type(), ref::silu(x.f)));
  }
  runCases(cases, tol::kElementwise, kSweepOptLevel);
}

TEST(OpNumerics, Softmax) {
  Rng rng(115);
  std::vector<Case> cases;
  for (size_t n = 0; n < kCases; ++n) {
    Shape shape =
        n == 0 ? Shape{1} : cat(rng.lead(0, 2, 5), {rng.between(1, 48)});
    // Past 88 exp overflows f32 unless the row max is subtracted.
    Buffer x = rng.f32(shape, rng.pick<double>({1.0, 4.0, 200.0}));
    cases.push_back(opCase(n, {x}, shape, "tlm.softmax %a0 : " + x.type(),
                           ref::softmax(x.f, shape.back())));
  }
  runCases(cases, tol::kRowwise, kSweepOptLevel);
}

TEST(OpNumerics, CrossEntropy) {
  Rng rng(116);
  std::vector<Case> cases;
  for (size_t n = 0; n < kCases; ++n) {
    bool tiny = n == 0;
    Shape lead = tiny ? Shape{1} : rng.lead(0, 3, 5);
    int64_t vocab = tiny ? 1 : rng.between(1, 40);
    // Logits past 88 need the max-shifted logsumexp.
    Buffer logits =
        rng.f32(cat(lead, {vocab}), rng.pick<double>({1.0, 10.0, 200.0}));
    Buffer t = rng.i64(lead, 0, vocab - 1);
    cases.push_back(opCase(n, {logits, t}, {},
                           "tlm.cross_entropy %a0, %a1 : (" + logits.type() +
                               ", " + t.type() + ") -> tensor<f32>",
                           {ref::crossEntropy(logits.f, t.i, vocab)}));
  }
  runCases(cases, tol::kLoss, kSweepOptLevel);
}

//===----------------------------------------------------------------------===//
// The call ABI
//===----------------------------------------------------------------------===//

/// Dynamic batch and seq: the driver compiles once per model, not per
/// prompt length, so one compile must serve every runtime size.
TEST(JitCall, DynamicShapesFromOneCompile) {
  const char *text = R"mlir(
func.func @lin(%x: tensor<?x?x16xf32>, %w: tensor<8x16xf32>) -> tensor<?x?x8xf32> {
  %y = tlm.linear %x, %w : tensor<?x?x16xf32>, tensor<8x16xf32> -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}
func.func @attn(%q: tensor<?x?x8xf32>, %k: tensor<?x?x4xf32>, %v: tensor<?x?x4xf32>) -> tensor<?x?x8xf32> {
  %o = tlm.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e+04 : f64} : (tensor<?x?x8xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}
)mlir";
  std::unique_ptr<mlir::MLIRContext> ctx = makeContext();
  std::unique_ptr<tlm::runtime::Jit> jit = compileText(*ctx, text);
  ASSERT_TRUE(jit);
  Rng rng(117);
  Buffer w = rng.weight(8, 16);
  for (Shape bs : {Shape{2, 3}, Shape{1, 5}, Shape{4, 1}}) {
    SCOPED_TRACE("batch " + std::to_string(bs[0]) + ", seq " +
                 std::to_string(bs[1]));
    std::vector<Buffer> lin{rng.f32(cat(bs, {16})), w};
    Tensor y = callEntry(*jit, "lin", lin, cat(bs, {8}));
    EXPECT_TRUE(allClose(y, ref::linear(lin[0].f, w.f, 16, 8), tol::kMatmul));

    std::vector<Buffer> qkv{rng.f32(cat(bs, {8})), rng.f32(cat(bs, {4})),
                            rng.f32(cat(bs, {4}))};
    Tensor o = callEntry(*jit, "attn", qkv, cat(bs, {8}));
    EXPECT_TRUE(allClose(o,
                         ref::attention(qkv[0].f, qkv[1].f, qkv[2].f, bs[0],
                                        bs[1], 4, 2, 2, 1e4),
                         tol::kAttention));
  }
}

/// Expects `jit.call(entry, args)` to fail with a message.
void expectCallError(tlm::runtime::Jit &jit, const std::string &entry,
                     const std::vector<TensorRef> &args, const char *why) {
  llvm::Error err = jit.call(entry, args);
  if (!err) {
    ADD_FAILURE() << why << ": the call succeeded";
    return;
  }
  EXPECT_FALSE(llvm::toString(std::move(err)).empty()) << why;
}

class JitCallErrors : public ::testing::Test {
protected:
  void SetUp() override {
    ctx = makeContext();
    jit = compileText(*ctx, R"mlir(
func.func @f(%x: tensor<2x3x16xf32>, %w: tensor<8x16xf32>) -> tensor<2x3x8xf32> {
  %y = tlm.linear %x, %w : tensor<2x3x16xf32>, tensor<8x16xf32> -> tensor<2x3x8xf32>
  return %y : tensor<2x3x8xf32>
}
func.func @g(%x: tensor<?x?x16xf32>, %w: tensor<8x16xf32>) -> tensor<?x?x8xf32> {
  %y = tlm.linear %x, %w : tensor<?x?x16xf32>, tensor<8x16xf32> -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}
)mlir");
    ASSERT_TRUE(jit);
  }

  /// Buffers larger than any shape below, so a call that wrongly runs
  /// cannot write out of bounds.
  std::vector<float> x = std::vector<float>(1024, 0.5f);
  std::vector<float> w = std::vector<float>(1024, 0.25f);
  std::vector<float> y = std::vector<float>(1024);
  std::unique_ptr<mlir::MLIRContext> ctx;
  std::unique_ptr<tlm::runtime::Jit> jit;
};

TEST_F(JitCallErrors, WrongRankOrStaticSize) {
  auto args = [&](Shape xs, Shape ws, Shape ys) {
    return std::vector<TensorRef>{
        {x.data(), xs}, {w.data(), ws}, {y.data(), ys}};
  };
  expectCallError(*jit, "f", args({6, 16}, {8, 16}, {2, 3, 8}),
                  "input of rank 2 for rank 3");
  expectCallError(*jit, "f", args({2, 4, 16}, {8, 16}, {2, 3, 8}),
                  "input dim 1 is 4, static 3");
  expectCallError(*jit, "f", args({2, 3, 16}, {8, 15}, {2, 3, 8}),
                  "weight dim 1 is 15, static 16");
  expectCallError(*jit, "f", args({2, 3, 16}, {8, 16}, {2, 3, 9}),
                  "output dim 2 is 9, static 8");
  expectCallError(*jit, "f", args({2, 3, 16}, {8, 16}, {6, 8}),
                  "output of rank 2 for rank 3");
  expectCallError(*jit, "g", args({2, 3, 15}, {8, 16}, {2, 3, 8}),
                  "dynamic entry, input's static dim 2 is 15, not 16");
  expectCallError(*jit, "g", args({2, 3}, {8, 16}, {2, 3, 8}),
                  "dynamic entry, input of rank 2 for rank 3");
  // After the rejected calls the module still runs.
  llvm::Error ok = jit->call("f", args({2, 3, 16}, {8, 16}, {2, 3, 8}));
  EXPECT_FALSE(bool(ok)) << llvm::toString(std::move(ok));
  EXPECT_FLOAT_EQ(y[0], 16 * 0.5f * 0.25f);
}

TEST_F(JitCallErrors, UnknownEntryOrArgumentCount) {
  std::vector<TensorRef> full{
      {x.data(), {2, 3, 16}}, {w.data(), {8, 16}}, {y.data(), {2, 3, 8}}};
  expectCallError(*jit, "nope", full, "no such entry");
  expectCallError(*jit, "f", {full[0], full[1]}, "the output is missing");
  std::vector<TensorRef> extra = full;
  extra.push_back({y.data(), {2, 3, 8}});
  expectCallError(*jit, "f", extra, "one argument too many");
}

} // namespace
