//===- FuseElementwise.cpp - the tlm-fuse-elementwise pass -----------------===//
//
// Elementwise chains as one generic, except where a later CPU pass needs an
// op on its own (see the pass description in Passes.td).
//
//===----------------------------------------------------------------------===//

#include "passes/common/OptionChecks.h"
#include "passes/common/Projection.h"
#include "passes/common/Recompute.h"
#include "passes/cpu/Passes.h"
#include "passes/cpu/RopeRotation.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tlm {
#define GEN_PASS_DEF_TLMFUSEELEMENTWISE
#include "passes/cpu/Passes.h.inc"
} // namespace mlir::tlm

using namespace mlir;

namespace {

bool isElementwise(linalg::GenericOp op) {
  return op.hasPureTensorSemantics() && op.getNumReductionLoops() == 0 &&
         op.getNumResults() == 1;
}

/// Whether `op` is a form a later pass rewrites whole: RMSNorm's scaling,
/// RoPE's rotation, an op that reads a projection.
bool keptWhole(linalg::GenericOp op, int64_t lanes) {
  if (tlm::matchNormScale(op.getResult(0)) ||
      tlm::ropeRotationMismatch(op, lanes).empty())
    return true;
  return llvm::any_of(op.getDpsInputs(), [](Value in) {
    auto producer = in.getDefiningOp<linalg::LinalgOp>();
    return producer && succeeded(tlm::matchProjection(producer));
  });
}

struct TlmFuseElementwise
    : public tlm::impl::TlmFuseElementwiseBase<TlmFuseElementwise> {
  using Base::Base;

  /// Whether the producer of `operand` is fused into its reader.
  bool fuses(OpOperand *operand) const {
    auto producer = operand->get().getDefiningOp<linalg::GenericOp>();
    auto consumer = dyn_cast<linalg::GenericOp>(operand->getOwner());
    if (!producer || !consumer || !isElementwise(producer) ||
        !isElementwise(consumer) || !operand->get().hasOneUse())
      return false;
    // A recomputed value's op keeps its mark (Recompute.h): fused, the new
    // op would lose it and CSE would merge it back with the forward's.
    for (Operation *op : {producer.getOperation(), consumer.getOperation()})
      if (op->hasAttr(tlm::kTileInLoopAttr) ||
          op->hasAttr(tlm::kRecomputeAttr) ||
          op->getParentOfType<scf::ForOp>() ||
          op->getParentOfType<scf::ForallOp>())
        return false;
    return !keptWhole(producer, lanes) && !keptWhole(consumer, lanes);
  }

  void runOnOperation() override {
    if (failed(tlm::checkOptions(getOperation(), "tlm-fuse-elementwise",
                                 {{"lanes", lanes, 1, true}})))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(
        patterns, [this](OpOperand *operand) { return fuses(operand); });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
