//===- TlmToLinalg.cpp - the tlm-lower-to-linalg pass ---------------------===//

#include "dialect/TlmDialect.h"
#include "passes/conversion/Passes.h"
#include "passes/conversion/PopulatePatterns.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/DialectConversion.h"

#define DEBUG_TYPE "tlm-lower-to-linalg"

namespace mlir::tlm {
#define GEN_PASS_DEF_TLMLOWERTOLINALG
#include "passes/conversion/Passes.h.inc"
} // namespace mlir::tlm

using namespace mlir;
using namespace mlir::tlm;

namespace {
struct TlmLowerToLinalg
    : public tlm::impl::TlmLowerToLinalgBase<TlmLowerToLinalg> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    populateLinearLoweringPatterns(patterns);
    populateNormLoweringPatterns(patterns);
    AttentionForm form{attentionByHeads, attentionBlock};
    populateAttentionLoweringPatterns(patterns, form);
    populateAttentionGradLoweringPatterns(patterns, form);
    populateOptimizerLoweringPatterns(patterns);

    // Every tlm op must go: a leftover one is reported at its location.
    ConversionTarget target(*ctx);
    target.addIllegalDialect<TlmDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
