//===- JitTestUtil.h - MLIR text, JIT calls and random data -----*- C++ -*-===//
//
// Shared by the JIT numerics tests: builds the MLIR text of small entry
// functions with static shapes, compiles many of them as one module (a
// compile costs ~100 ms, a call almost nothing, so one compile per op keeps
// the suite fast), calls each entry and compares with the reference.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_TESTS_UNIT_JITTESTUTIL_H
#define TLM_TESTS_UNIT_JITTESTUTIL_H

#include "lib/compiler/Jit.h"
#include "tests/unit/Reference.h"
#include "tests/unit/Tolerances.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <iomanip>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace tlm::test {

using ref::Index;
using ref::Shape;
using ref::Tensor;

/// `a` followed by `b` (e.g. leading dims then a feature dim).
inline Shape cat(Shape a, const Shape &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// The MLIR type `tensor<2x?x4xf32>`; negative dims print as `?`.
inline std::string tensorType(const Shape &shape,
                              const std::string &elem = "f32") {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += (d < 0 ? std::string("?") : std::to_string(d)) + "x";
  return s + elem + ">";
}

/// An f64 attribute that parses back to exactly `v`; scientific notation
/// always has the `.` MLIR's float literals require.
inline std::string f64Attr(double v) {
  std::ostringstream os;
  os << std::scientific << std::setprecision(17) << v << " : f64";
  return os.str();
}

/// One argument of an entry: f32 or i64 data, its shape and its SSA name.
struct Buffer {
  Shape shape;
  bool isInt = false;
  Tensor f;
  Index i;
  std::string name; ///< without `%`; empty means `a<position>`

  std::string type() const { return tensorType(shape, isInt ? "i64" : "f32"); }
  void *data() {
    return isInt ? static_cast<void *>(i.data())
                 : static_cast<void *>(f.data());
  }
};

/// Seeded random sizes and data, so every run checks the same cases.
class Rng {
public:
  explicit Rng(uint32_t seed) : gen(seed) {}

  /// A uniform integer in [lo, hi].
  int64_t between(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(gen);
  }
  bool coin() { return between(0, 1) == 1; }
  template <typename T> T pick(const std::vector<T> &choices) {
    return choices[between(0, static_cast<int64_t>(choices.size()) - 1)];
  }
  /// `rank` in [minRank, maxRank] leading dims, each in [1, maxDim].
  Shape lead(int64_t minRank, int64_t maxRank, int64_t maxDim) {
    Shape s(between(minRank, maxRank));
    for (int64_t &d : s)
      d = between(1, maxDim);
    return s;
  }
  /// Uniform values in [lo, hi).
  Tensor uniform(int64_t n, double lo, double hi) {
    std::uniform_real_distribution<double> dist(lo, hi);
    Tensor t(n);
    for (float &x : t)
      x = static_cast<float>(dist(gen));
    return t;
  }
  /// An f32 buffer of uniform values in [-scale, scale).
  Buffer f32(const Shape &shape, double scale = 1.0,
             const std::string &name = "") {
    Buffer b;
    b.shape = shape;
    b.f = uniform(ref::numElements(shape), -scale, scale);
    b.name = name;
    return b;
  }
  /// A (d_out, d_in) weight scaled so outputs stay of order one.
  Buffer weight(int64_t dOut, int64_t dIn, const std::string &name = "") {
    return f32({dOut, dIn}, 1.0 / std::sqrt(double(dIn)), name);
  }
  /// A norm gain around one.
  Buffer gain(int64_t d, const std::string &name = "") {
    Buffer b{{d}, false, uniform(d, 0.5, 1.5), {}, name};
    return b;
  }
  /// An i64 buffer of uniform values in [lo, hi].
  Buffer i64(const Shape &shape, int64_t lo, int64_t hi,
             const std::string &name = "") {
    Buffer b{shape, true, {}, Index(ref::numElements(shape)), name};
    for (int64_t &x : b.i)
      x = between(lo, hi);
    return b;
  }

  std::mt19937 gen;
};

/// One entry to compile, call and check.
struct Case {
  std::string entry; ///< function name, without `@`
  std::string text;  ///< its `func.func`
  std::vector<Buffer> inputs;
  Shape outShape;
  Tensor expected;
  std::string what; ///< shown on failure: the op line with its types
};

/// `func.func @entry(%a0: T0, ...) -> R { <body> return <result> : R }`;
/// unnamed inputs are named `a<position>`.
inline std::string makeFunc(const std::string &entry,
                            std::vector<Buffer> &inputs,
                            const std::string &body, const std::string &result,
                            const std::string &resultType) {
  std::string s = "func.func @" + entry + "(";
  for (size_t n = 0; n < inputs.size(); ++n) {
    if (inputs[n].name.empty())
      inputs[n].name = "a" + std::to_string(n);
    s += (n ? ", %" : "%") + inputs[n].name + ": " + inputs[n].type();
  }
  return s + ") -> " + resultType + " {\n" + body + "  return " + result +
         " : " + resultType + "\n}\n";
}

/// A case `@f<index>` whose body is the single op line `%y = <op>`, which
/// reads the inputs as %a0, %a1, ..., and whose reference is `expected`.
inline Case opCase(size_t index, std::vector<Buffer> inputs,
                   const Shape &outShape, const std::string &op,
                   Tensor expected) {
  Case c;
  c.entry = "f" + std::to_string(index);
  c.inputs = std::move(inputs);
  c.outShape = outShape;
  c.expected = std::move(expected);
  c.text = makeFunc(c.entry, c.inputs, "  %y = " + op + "\n", "%y",
                    tensorType(outShape));
  c.what = c.entry + ": " + op;
  return c;
}

/// A context with every dialect a tlm compile needs, all loaded so the
/// parser accepts linalg/tensor ops next to tlm ones.
inline std::unique_ptr<mlir::MLIRContext> makeContext() {
  mlir::DialectRegistry registry;
  runtime::registerAll(registry);
  auto ctx = std::make_unique<mlir::MLIRContext>(registry);
  ctx->loadAllAvailableDialects();
  return ctx;
}

/// The first `n` characters of a module, enough to place a failure.
inline std::string clip(const std::string &text, size_t n = 4000) {
  return text.size() <= n ? text : text.substr(0, n) + "\n...";
}

/// LLVM optimisation level of the per-op shape sweeps. Codegen dominates
/// their run time (O3 is 4-8x slower on modules of many small functions)
/// while the numerics come from the tlm lowering, not from LLVM: no
/// fast-math flags are set, so LLVM may not reassociate or contract f32 math
/// and the results do not depend on the level. Whole blocks and LMs keep
/// the default O3 that users run.
inline constexpr unsigned kSweepOptLevel = 0;

/// Parses and JIT-compiles `text`; on failure records a gtest failure with
/// the diagnostics and returns null.
inline std::unique_ptr<runtime::Jit>
compileText(mlir::MLIRContext &ctx, const std::string &text,
            const runtime::JitOptions &options = {}) {
  std::string diags;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  {
    llvm::raw_string_ostream os(diags);
    mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
      os << d.getLocation() << ": " << d << "\n";
      return mlir::success();
    });
    module = mlir::parseSourceString<mlir::ModuleOp>(text, &ctx);
  }
  if (!module) {
    ADD_FAILURE() << "parse failed:\n" << diags << "in:\n" << clip(text);
    return nullptr;
  }
  // Every pass's output verified, whatever the build type.
  runtime::JitOptions checked = options;
  checked.verifyEachPass = true;
  llvm::Expected<std::unique_ptr<runtime::Jit>> jit =
      runtime::Jit::compile(std::move(module), checked);
  if (!jit) {
    ADD_FAILURE() << "compile failed: " << llvm::toString(jit.takeError())
                  << "\nin:\n"
                  << clip(text);
    return nullptr;
  }
  return std::move(*jit);
}

/// Calls `entry` of `jit` on `inputs` and an output of `outShape` (filled
/// with NaN first, so an element the code never writes cannot pass).
/// Records a failure and returns an empty tensor if the call fails.
inline Tensor callEntry(runtime::Jit &jit, const std::string &entry,
                        std::vector<Buffer> &inputs, const Shape &outShape) {
  Tensor out(ref::numElements(outShape),
             std::numeric_limits<float>::quiet_NaN());
  std::vector<runtime::TensorRef> args;
  for (Buffer &b : inputs)
    args.push_back({b.data(), b.shape});
  args.push_back({out.data(), outShape});
  if (llvm::Error err = jit.call(entry, args)) {
    ADD_FAILURE() << "call of @" << entry
                  << " failed: " << llvm::toString(std::move(err));
    return {};
  }
  return out;
}

/// Compiles every case as one module at `optLevel` (on `compileThreads`
/// threads, 0: the default), calls each entry and compares its output with
/// the reference under `tol`.
inline void runCases(std::vector<Case> &cases, Tolerance tol,
                     unsigned optLevel = 3, unsigned compileThreads = 0) {
  std::string text;
  for (const Case &c : cases)
    text += c.text;
  std::unique_ptr<mlir::MLIRContext> ctx = makeContext();
  runtime::JitOptions options;
  options.optLevel = optLevel;
  if (compileThreads)
    options.compileThreads = compileThreads;
  std::unique_ptr<runtime::Jit> jit = compileText(*ctx, text, options);
  ASSERT_TRUE(jit) << "no JIT for " << cases.size() << " cases";
  for (Case &c : cases) {
    SCOPED_TRACE(c.what);
    ASSERT_EQ(static_cast<int64_t>(c.expected.size()),
              ref::numElements(c.outShape))
        << "reference and output shape disagree";
    Tensor out = callEntry(*jit, c.entry, c.inputs, c.outShape);
    if (!out.empty())
      EXPECT_TRUE(allClose(out, c.expected, tol));
  }
}

} // namespace tlm::test

#endif // TLM_TESTS_UNIT_JITTESTUTIL_H
