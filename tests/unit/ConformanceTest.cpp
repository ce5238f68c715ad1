//===- ConformanceTest.cpp - every CS336 conformance case through the JIT -===//
//
// Reads data/conformance/cs336/cases.json and runs every case: the op
// (or the block / whole LM, built by lib/model) is JIT-compiled, fed the
// case's tensors and compared with its `expected` under the case's own
// atol/rtol. Absent data fails the test.
//
//===----------------------------------------------------------------------===//

#include "lib/io/SafeTensors.h"
#include "lib/compiler/Builder.h"
#include "lib/compiler/Jit.h"
#include "tests/unit/TestData.h"
#include "tests/unit/Tolerances.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

using namespace tlm;
using nlohmann::json;
using tlm::test::allClose;
using tlm::test::Tolerance;

namespace {

std::string f64(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17e", v);
  return buf;
}

/// `tensor<4x12x64xf32>` for a safetensors tensor.
std::string typeOf(const io::Tensor &t) {
  std::string s = "tensor<";
  for (int64_t d : t.shape)
    s += std::to_string(d) + "x";
  return s + (t.dtype == io::DType::I64 ? "i64>" : "f32>");
}

/// One case ready to run: a module with entry @f and its input tensors.
struct Prepared {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::vector<const io::Tensor *> inputs;
};

/// `%y = <body>` over arguments %a0.. of the given tensors, returning %y.
std::string oneOpFunc(const std::vector<const io::Tensor *> &args,
                      const io::Tensor &expected, const std::string &body) {
  std::ostringstream os;
  os << "func.func @f(";
  for (size_t i = 0; i < args.size(); ++i)
    os << (i ? ", " : "") << "%a" << i << ": " << typeOf(*args[i]);
  os << ") -> " << typeOf(expected) << " {\n"
     << body << "\n  return %y : " << typeOf(expected) << "\n}\n";
  return os.str();
}

std::string types(const std::vector<const io::Tensor *> &args) {
  std::string s;
  for (size_t i = 0; i < args.size(); ++i)
    s += (i ? ", " : "") + typeOf(*args[i]);
  return s;
}

/// Builds the IR of a case by its op kind; empty module = unknown kind.
Prepared prepare(mlir::MLIRContext &ctx, const json &c,
                 const io::SafeTensors &file, const io::SafeTensors &model) {
  Prepared p;
  std::string op = c["op"];
  const json &hp = c["hyperparameters"];
  for (const auto &name : c["inputs"])
    p.inputs.push_back(file.find(name.get<std::string>()));
  const io::Tensor &expected = *file.find(c["expected"].get<std::string>());

  auto parse = [&](const std::string &body) {
    for (const io::Tensor *t : p.inputs)
      if (!t)
        return;
    p.module = mlir::parseSourceString<mlir::ModuleOp>(
        oneOpFunc(p.inputs, expected, body), &ctx);
  };
  std::string out = typeOf(expected);
  if (op == "transformer_lm" || op == "transformer_block") {
    model::Config config;
    config.dModel = hp["d_model"];
    config.numHeads = hp["num_heads"];
    config.dFF = hp["d_ff"];
    config.ropeTheta = hp.value("rope_theta", hp.value("theta", 10000.0));
    config.rmsNormEps = hp.value("eps", 1e-5);
    p.module = mlir::ModuleOp::create(mlir::UnknownLoc::get(&ctx));
    if (op == "transformer_block") {
      model::addBlockFunction(*p.module, config, "f");
      for (const model::WeightSpec &w : model::blockWeightSpecs(config))
        p.inputs.push_back(file.find(w.name));
    } else {
      config.vocabSize = hp["vocab_size"];
      config.contextLength = hp["context_length"];
      config.numLayers = hp["num_layers"];
      model::addForwardFunction(*p.module, config, "f");
      for (const model::WeightSpec &w : model::weightSpecs(config))
        p.inputs.push_back(model.find(w.name));
    }
    return p;
  }
  for (const auto &name : c["weights"])
    p.inputs.push_back(file.find(name.get<std::string>()));
  std::string sig = "(" + types(p.inputs) + ") -> " + out;
  if (op == "scaled_dot_product_attention")
    parse("  %y = tlm.sdpa %a0, %a1, %a2 mask %a3 : " + sig);
  else if (op == "rope")
    parse("  %y = tlm.rope %a0 positions %a1 {theta = " +
          f64(hp["theta"].get<double>()) + " : f64} : " + typeOf(*p.inputs[0]) +
          ", " + typeOf(*p.inputs[1]) + " -> " + out);
  else if (op == "rmsnorm")
    parse("  %y = tlm.rmsnorm %a0, %a1 {eps = " + f64(hp["eps"].get<double>()) +
          " : f64} : " + typeOf(*p.inputs[0]) + ", " + typeOf(*p.inputs[1]) +
          " -> " + out);
  else if (op == "embedding" || op == "linear")
    parse("  %y = tlm." + op + " %a0, %a1 : " + typeOf(*p.inputs[0]) + ", " +
          typeOf(*p.inputs[1]) + " -> " + out);
  else if (op == "silu" || op == "softmax")
    parse("  %y = tlm." + op + " %a0 : " + out);
  else if (op == "cross_entropy")
    parse("  %y = tlm.cross_entropy %a0, %a1 : " + sig);
  else if (op == "swiglu")
    parse("  %y = tlm.swiglu %a0, %a1, %a2, %a3 : " + sig);
  else if (op == "multihead_self_attention" ||
           op == "multihead_self_attention_rope") {
    bool rope = op == "multihead_self_attention_rope";
    size_t w = rope ? 2 : 1; // first weight argument
    std::string x = typeOf(*p.inputs[0]);
    std::ostringstream os;
    const char *names[] = {"%q", "%k", "%v"};
    for (size_t i = 0; i < 3; ++i)
      os << "  " << names[i] << " = tlm.linear %a0, %a" << w + i << " : " << x
         << ", " << typeOf(*p.inputs[w + i]) << " -> " << x << "\n";
    os << "  %o = tlm.attention %q, %k, %v" << (rope ? " positions %a1" : "")
       << " {num_heads = " << hp["num_heads"].get<int64_t>()
       << " : i64, num_kv_heads = " << hp["num_heads"].get<int64_t>()
       << " : i64"
       << (rope ? ", rope_theta = " + f64(hp["theta"].get<double>()) + " : f64"
                : "")
       << "} : (" << x << ", " << x << ", " << x
       << (rope ? ", " + typeOf(*p.inputs[1]) : "") << ") -> " << x << "\n";
    os << "  %y = tlm.linear %o, %a" << w + 3 << " : " << x << ", "
       << typeOf(*p.inputs[w + 3]) << " -> " << out;
    parse(os.str());
  }
  return p;
}

TEST(Conformance, EveryCasePassesWithinItsTolerance) {
  std::string dir = tlm::test::dataDir() + "/conformance/cs336";
  std::ifstream index(dir + "/cases.json");
  ASSERT_TRUE(bool(index)) << "conformance data missing at " << dir
                           << " (see TLM_DATA_DIR)";
  json cases = json::parse(index, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(cases.is_discarded()) << "cases.json is not JSON";
  auto model = io::SafeTensors::open(dir + "/model_synthetic.safetensors");
  ASSERT_TRUE(bool(model)) << model.takeError().message();

  mlir::DialectRegistry registry;
  runtime::registerAll(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();

  int ran = 0;
  for (const json &c : cases["cases"]) {
    std::string name = c["name"];
    SCOPED_TRACE(name);
    auto file = io::SafeTensors::open(dir + "/" + c["file"].get<std::string>());
    ASSERT_TRUE(bool(file)) << file.takeError().message();
    Prepared p = prepare(ctx, c, *file, *model);
    ASSERT_TRUE(p.module) << "cannot build IR for op '"
                          << c["op"].get<std::string>() << "'";
    for (const io::Tensor *t : p.inputs)
      ASSERT_NE(t, nullptr) << "a tensor named in cases.json is missing";
    auto jit = runtime::Jit::compile(std::move(p.module));
    ASSERT_TRUE(bool(jit)) << llvm::toString(jit.takeError());

    const io::Tensor &expected = *file->find(c["expected"].get<std::string>());
    std::vector<float> actual(expected.numElements());
    std::vector<runtime::TensorRef> args;
    for (const io::Tensor *t : p.inputs)
      args.push_back({t->data, t->shape});
    args.push_back({actual.data(), expected.shape});
    llvm::Error err = (*jit)->call("f", args);
    ASSERT_FALSE(bool(err)) << llvm::toString(std::move(err));

    std::vector<float> want(expected.f32(),
                            expected.f32() + expected.numElements());
    Tolerance tol{c["atol"].get<double>(), c["rtol"].get<double>()};
    EXPECT_TRUE(allClose(actual.data(), want, tol));
    double maxErr = 0;
    for (size_t i = 0; i < want.size(); ++i)
      if (!std::isnan(want[i]))
        maxErr = std::max(maxErr, std::fabs(double(actual[i]) - want[i]));
    std::printf(
        "[conformance] %-40s max abs error %.3g (atol %.0e rtol %.0e)\n",
        name.c_str(), maxErr, tol.atol, tol.rtol);
    ++ran;
  }
  EXPECT_EQ(ran, static_cast<int>(cases["cases"].size()));
}

} // namespace
