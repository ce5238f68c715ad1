//===- ApproximateMath.cpp - the tlm-approximate-math pass ----------------===//
//
// LLVM turns a vector math.exp into one libm call per lane, which stops the
// softmax and SiLU loops from vectorizing. Upstream's polynomial
// approximations (Cody-Waite range reduction and a minimax polynomial, pure
// arith) vectorize like any other arithmetic.
//
//===----------------------------------------------------------------------===//

#include "passes/common/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "tlm-approximate-math"

namespace mlir::tlm {
#define GEN_PASS_DEF_TLMAPPROXIMATEMATH
#include "passes/common/Passes.h.inc"
} // namespace mlir::tlm

using namespace mlir;

namespace {
struct TlmApproximateMath
    : public tlm::impl::TlmApproximateMathBase<TlmApproximateMath> {
  using Base::Base;

  void runOnOperation() override {
    llvm::SmallVector<llvm::StringRef> names;
    llvm::StringRef(ops.getValue()).split(names, ',', -1, false);
    for (llvm::StringRef &n : names)
      n = n.trim();
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns, [&](StringRef name) {
      // Upstream asks with the full op name ("math.exp").
      name.consume_front("math.");
      return llvm::is_contained(names, name);
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
