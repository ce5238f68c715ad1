//===- GradientTest.cpp - each gradient op against finite differences -----===//
//
// Each gradient op of dialect/TlmGradOps.td, compiled and run, against the
// central differences of its forward op in f64 (GradientReference.h): for
// L = Σ dy · f(inputs), every element of every gradient the op returns.
// The op's own inputs are f32 values, which the reference reads exactly, so
// the check measures the compiled backward alone.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/GradientReference.h"
#include "tests/unit/JitTestUtil.h"
#include "tests/unit/TestData.h"

#include "lib/io/SafeTensors.h"

#include <functional>
#include <map>

using namespace tlm;
using namespace tlm::test;
using ref64::Vec;

namespace {

using Values = std::map<std::string, Vec>;

/// One gradient op: its operands (named; `dy` is the incoming gradient),
/// the forward it differentiates, and which value each result is the
/// gradient of.
struct GradCase {
  std::string entry, op;
  /// Lines before the op (the forward op whose results it reads).
  std::string prelude;
  std::vector<Buffer> operands;
  /// Values the forward reads that the gradient op does not (the
  /// embedding's table).
  std::vector<Buffer> extra;
  /// The forward op's result, flat, from the named f64 values.
  std::function<Vec(const Values &)> forward;
  /// For each result of the op, the name of the value it differentiates.
  std::vector<std::string> gradOf;
};

Values valuesOf(const GradCase &c) {
  Values v;
  for (const auto *list : {&c.operands, &c.extra})
    for (const Buffer &b : *list)
      if (!b.isInt)
        v[b.name] = Vec(b.f.begin(), b.f.end());
  return v;
}

const Buffer &named(const GradCase &c, const std::string &name) {
  for (const auto *list : {&c.operands, &c.extra})
    for (const Buffer &b : *list)
      if (b.name == name)
        return b;
  ADD_FAILURE() << "no value " << name;
  return c.operands.front();
}

/// Σ dy · forward(values).
double objective(const GradCase &c, const Values &values) {
  Vec y = c.forward(values);
  const Vec &dy = values.at("dy");
  double l = 0;
  for (size_t i = 0; i < y.size(); ++i)
    l += dy[i % dy.size()] * y[i];
  return l;
}

/// dL/d(values[name]) by central differences.
Vec numericGradient(const GradCase &c, const std::string &name) {
  Values values = valuesOf(c);
  Vec grad(values[name].size());
  for (size_t i = 0; i < grad.size(); ++i) {
    double x = values[name][i], h = 1e-6 * std::max(1.0, std::fabs(x));
    values[name][i] = x + h;
    double up = objective(c, values);
    values[name][i] = x - h;
    double down = objective(c, values);
    values[name][i] = x;
    grad[i] = (up - down) / (2 * h);
  }
  return grad;
}

std::string function(GradCase &c) {
  std::string results, types, sep;
  for (size_t r = 0; r < c.gradOf.size(); ++r) {
    results += sep + "%r#" + std::to_string(r);
    types += sep + named(c, c.gradOf[r]).type();
    sep = ", ";
  }
  std::string s = "func.func @" + c.entry + "(";
  for (size_t n = 0; n < c.operands.size(); ++n)
    s += (n ? ", %" : "%") + c.operands[n].name + ": " + c.operands[n].type();
  return s + ") -> (" + types + ") {\n" + c.prelude + "  %r:" +
         std::to_string(c.gradOf.size()) + " = " + c.op + "\n  return " +
         results + " : " + types + "\n}\n";
}

/// The forms attention lowers to: FlashAttention-2 blocks of up to
/// kAttentionBlock rows, one (T, T) tile a head, one (B, H, T, T) tensor.
/// The blocks are compiled for vectors of kBlockLanes, which divide the
/// block, so that their row statistics take the vector form (RowReduction.h)
/// as the 64-row blocks of real sequences do on the host's widest vectors.
enum class AttentionForm { Blocks, Heads, Tensor };
constexpr int64_t kAttentionBlock = 8, kBlockLanes = 4;

/// Compiles every case as one module and checks each result of each, with
/// attention in `form`.
void runGradCases(std::vector<GradCase> &cases, AttentionForm form) {
  std::string text;
  for (GradCase &c : cases)
    text += function(c);
  std::unique_ptr<mlir::MLIRContext> ctx = makeContext();
  runtime::JitOptions options;
  options.optLevel = kSweepOptLevel;
  options.switches.attentionByHeads = form != AttentionForm::Tensor;
  options.switches.attentionBlocks = form == AttentionForm::Blocks;
  options.attentionBlock = kAttentionBlock;
  if (form == AttentionForm::Blocks)
    options.lanes = kBlockLanes;
  std::unique_ptr<runtime::Jit> jit = compileText(*ctx, text, options);
  ASSERT_TRUE(jit);
  for (GradCase &c : cases) {
    SCOPED_TRACE(c.entry + ": " + c.op);
    std::vector<Tensor> outs;
    std::vector<runtime::TensorRef> args;
    for (Buffer &b : c.operands)
      args.push_back({b.data(), b.shape});
    for (const std::string &name : c.gradOf)
      outs.emplace_back(ref::numElements(named(c, name).shape),
                        std::numeric_limits<float>::quiet_NaN());
    for (size_t r = 0; r < outs.size(); ++r)
      args.push_back({outs[r].data(), named(c, c.gradOf[r]).shape});
    llvm::Error err = jit->call(c.entry, args);
    ASSERT_FALSE(bool(err)) << llvm::toString(std::move(err));
    for (size_t r = 0; r < outs.size(); ++r) {
      SCOPED_TRACE("the gradient of " + c.gradOf[r]);
      Vec want = numericGradient(c, c.gradOf[r]);
      double scale = 0;
      for (double g : want)
        scale = std::max(scale, std::fabs(g));
      ASSERT_GT(scale, 0.0) << "a zero gradient checks nothing";
      Tensor expected(want.begin(), want.end());
      EXPECT_TRUE(allClose(outs[r], expected,
                           {tol::kGradient.atol * scale, tol::kGradient.rtol}));
    }
  }
}

std::string types(const std::vector<Buffer> &operands) {
  std::string s;
  for (const Buffer &b : operands)
    s += (s.empty() ? "" : ", ") + b.type();
  return s;
}

/// `tlm.<name> %dy, %a, ... {attrs} : (operand types) -> (result types)`.
std::string opLine(const std::string &name, const std::vector<Buffer> &ops,
                   const std::vector<std::string> &results,
                   const GradCase &c, const std::string &attrs = "") {
  std::string s = "tlm." + name + " ";
  for (size_t i = 0; i < ops.size(); ++i)
    s += (i ? ", %" : "%") + ops[i].name;
  s += (attrs.empty() ? "" : " " + attrs) + " : (" + types(ops) + ") -> (";
  for (size_t i = 0; i < results.size(); ++i)
    s += (i ? ", " : "") + named(c, results[i]).type();
  return s + ")";
}

GradCase make(const std::string &entry, const std::string &opName,
              std::vector<Buffer> operands, std::vector<std::string> gradOf,
              std::function<Vec(const Values &)> forward,
              const std::string &attrs = "", std::vector<Buffer> extra = {}) {
  GradCase c;
  c.entry = entry;
  c.operands = std::move(operands);
  c.extra = std::move(extra);
  c.gradOf = std::move(gradOf);
  c.forward = std::move(forward);
  c.op = opLine(opName, c.operands, c.gradOf, c, attrs);
  return c;
}

TEST(Gradient, EveryRuleMatchesFiniteDifferences) {
  Rng rng(451);
  std::vector<GradCase> cases;
  cases.push_back(make(
      "linear", "linear_grad",
      {rng.f32({2, 3, 4}, 1, "dy"), rng.f32({2, 3, 5}, 1, "x"),
       rng.weight(4, 5, "w")},
      {"x", "w"},
      [](const Values &v) { return ref64::linear(v.at("x"), v.at("w"), 5, 4); }));

  Buffer ids = rng.i64({2, 3}, 0, 3, "ids"); // 6 ids of 4: some repeat
  Buffer table = rng.f32({6, 4}, 1, "table");
  cases.push_back(make(
      "embedding", "embedding_grad", {rng.f32({2, 3, 4}, 1, "dy"), ids},
      {"table"},
      [ids = ids.i](const Values &v) {
        return ref64::embedding(ids, v.at("table"), 4);
      },
      "", {table}));

  cases.push_back(make(
      "rmsnorm", "rmsnorm_grad",
      {rng.f32({2, 3, 8}, 1, "dy"), rng.f32({2, 3, 8}, 1, "x"),
       rng.gain(8, "g")},
      {"x", "g"},
      [](const Values &v) {
        return ref64::rmsnorm(v.at("x"), v.at("g"), 8, 1e-5);
      }));

  for (bool gated : {true, false}) {
    std::vector<Buffer> ops{rng.f32({2, 3, 6}, 1, "dy"),
                            rng.f32({2, 3, 6}, 1, "x"),
                            rng.weight(10, 6, "w1"), rng.weight(6, 10, "w2")};
    std::vector<std::string> of{"x", "w1", "w2"};
    if (gated) {
      ops.push_back(rng.weight(10, 6, "w3"));
      of.push_back("w3");
    }
    cases.push_back(make(
        gated ? "swiglu" : "silu_ffn", gated ? "swiglu_grad" : "silu_ffn_grad",
        ops, of, [gated](const Values &v) {
          return ref64::ffn(v.at("x"), v.at("w1"), v.at("w2"),
                            gated ? v.at("w3") : Vec(), 6, 10);
        }));
  }

  // (heads, kv heads, RoPE, T): GQA with RoPE, plain multi-head without,
  // and a sequence of three attention blocks (kAttentionBlock).
  for (auto shape :
       {std::tuple{4, 2, true, 5}, {2, 2, false, 5}, {4, 2, true, 24}}) {
    int64_t heads = std::get<0>(shape), kv = std::get<1>(shape), dk = 4;
    bool rope = std::get<2>(shape);
    int64_t seq = std::get<3>(shape);
    std::vector<Buffer> ops{rng.f32({2, seq, heads * dk}, 1, "dy"),
                            rng.f32({2, seq, heads * dk}, 1, "q"),
                            rng.f32({2, seq, kv * dk}, 1, "k"),
                            rng.f32({2, seq, kv * dk}, 1, "v")};
    std::string attrs = "{num_heads = " + std::to_string(heads) +
                        " : i64, num_kv_heads = " + std::to_string(kv) +
                        " : i64" +
                        (rope ? ", rope_theta = " + f64Attr(1e4) : "") + "}";
    std::optional<double> theta;
    if (rope)
      theta = 1e4;
    GradCase c = make(
        (rope ? "attention_gqa_rope_" : "attention_mha_") + std::to_string(seq),
        "attention_grad", ops, {"q", "k", "v"},
        [=](const Values &v) {
          return ref64::attention(v.at("q"), v.at("k"), v.at("v"), 2, seq,
                                  heads, kv, dk, theta);
        },
        attrs);
    // The gradient reads the forward's output and row logsumexps, which
    // the compiled tlm.attention_lse computes in the same entry.
    std::string q = ops[1].type(), kt = ops[2].type();
    std::string lse = tensorType({2, heads, seq});
    c.prelude = "  %o:2 = tlm.attention_lse %q, %k, %v " + attrs + " : (" + q +
                ", " + kt + ", " + kt + ") -> (" + q + ", " + lse + ")\n";
    c.op = "tlm.attention_grad %dy, %q, %k, %v, %o#0, %o#1 " + attrs + " : (" +
           q + ", " + q + ", " + kt + ", " + kt + ", " + q + ", " + lse +
           ") -> (" + q + ", " + kt + ", " + kt + ")";
    cases.push_back(c);
  }

  Buffer targets = rng.i64({2, 3}, 0, 6, "targets");
  Buffer dl{{}, false, {1.3f}, {}, "dy"};
  cases.push_back(make(
      "cross_entropy", "cross_entropy_grad",
      {dl, rng.f32({2, 3, 7}, 3, "logits"), targets}, {"logits"},
      [t = targets.i](const Values &v) {
        return Vec{ref64::crossEntropy(v.at("logits"), t, 7)};
      }));
  for (AttentionForm form :
       {AttentionForm::Blocks, AttentionForm::Heads, AttentionForm::Tensor}) {
    SCOPED_TRACE(form == AttentionForm::Blocks  ? "attention in blocks"
                 : form == AttentionForm::Heads ? "attention by heads"
                                                : "attention as one tensor");
    runGradCases(cases, form);
  }
}

/// CS336's cross-entropy cases (data/conformance/cs336/official), the
/// second the first times 1000, whose exp overflows f32 unless the row max
/// is subtracted: the compiled loss against the file's expected value, and
/// its compiled gradient against softmax − onehot over N in f64.
TEST(Gradient, CrossEntropyConformanceCases) {
  for (std::string name : {"cross_entropy", "cross_entropy_large"}) {
    SCOPED_TRACE(name);
    auto st = io::SafeTensors::open(dataDir() + "/conformance/cs336/official/" +
                                    name + ".safetensors");
    ASSERT_TRUE(bool(st)) << st.takeError().message();
    const io::Tensor *logits = st->find("logits"), *targets = st->find("targets");
    const io::Tensor *expected = st->find("expected");
    ASSERT_TRUE(logits && targets && expected);
    ASSERT_EQ(logits->dtype, io::DType::F32);
    ASSERT_EQ(targets->dtype, io::DType::I64);
    int64_t rows = logits->shape[0], vocab = logits->shape[1];
    std::string z = tensorType({rows, vocab}), t = tensorType({rows}, "i64");
    std::string text =
        "func.func @f(%z: " + z + ", %t: " + t + ") -> (tensor<f32>, " + z +
        ") {\n  %l = tlm.cross_entropy %z, %t : (" + z + ", " + t +
        ") -> tensor<f32>\n  %one = arith.constant dense<1.0> : tensor<f32>\n"
        "  %g = tlm.cross_entropy_grad %one, %z, %t : (tensor<f32>, " + z +
        ", " + t + ") -> " + z + "\n  return %l, %g : tensor<f32>, " + z +
        "\n}\n";
    std::unique_ptr<mlir::MLIRContext> ctx = makeContext();
    std::unique_ptr<runtime::Jit> jit = compileText(*ctx, text);
    ASSERT_TRUE(jit);
    const auto *zs = static_cast<const float *>(logits->data);
    const auto *ts = static_cast<const int64_t *>(targets->data);
    std::vector<float> in(zs, zs + rows * vocab), grad(rows * vocab);
    std::vector<int64_t> ids(ts, ts + rows);
    float loss = 0;
    ASSERT_FALSE(bool(jit->call("f", {{in.data(), {rows, vocab}},
                                      {ids.data(), {rows}},
                                      {&loss, {}},
                                      {grad.data(), {rows, vocab}}})));
    EXPECT_NEAR(loss, *static_cast<const float *>(expected->data), 1e-4);
    Tensor want(rows * vocab);
    for (int64_t r = 0; r < rows; ++r) {
      double mx = zs[r * vocab], sum = 0;
      for (int64_t i = 0; i < vocab; ++i)
        mx = std::max(mx, double(zs[r * vocab + i]));
      for (int64_t i = 0; i < vocab; ++i)
        sum += std::exp(double(zs[r * vocab + i]) - mx);
      for (int64_t i = 0; i < vocab; ++i)
        want[r * vocab + i] = float(
            (std::exp(double(zs[r * vocab + i]) - mx) / sum - (i == ids[r])) /
            double(rows));
    }
    EXPECT_TRUE(allClose(grad, want, tol::kLossGradient));
  }
}

} // namespace
