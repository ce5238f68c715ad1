//===- FuseElementwise.cpp - tlm-gpu-fuse-elementwise ---------------------===//
//
// On the GPU every linalg op becomes a kernel, so a chain of elementwise
// generics is a chain of launches, each writing a tensor the next reads
// back. Upstream's elementwise fusion, held to the chains: an all-parallel
// producer with one use into an all-parallel consumer. Contractions and
// reductions are left as they are, since tlm-gpu-tile-matmuls and
// tlm-gpu-block-reductions recognize them by their own shape. Before that,
// a residual add `r + P` of a projection becomes P accumulating into r
// (foldResidualAdd, as the CPU's tlm-fuse-projections does). And a fill
// that several ops write into (CSE merges identical ones) is repeated for
// each: shared, bufferization would fill one buffer and copy it into the
// others, a kernel more per writer.
//
//===----------------------------------------------------------------------===//

#include "passes/common/Projection.h"
#include "passes/gpu/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/Iterators.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tlm {
#define GEN_PASS_DEF_TLMGPUFUSEELEMENTWISE
#include "passes/gpu/Passes.h.inc"
} // namespace mlir::tlm

using namespace mlir;

namespace {

bool allParallel(Operation *op) {
  auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
  return generic && generic.getNumLoops() == generic.getNumParallelLoops();
}

/// Whether `use` is the init of a destination-style op: the op writes into
/// the buffer it gets.
bool isInit(OpOperand &use) {
  auto dps = dyn_cast<DestinationStyleOpInterface>(use.getOwner());
  return dps && dps.isDpsInit(&use);
}

/// Gives every op that starts from a shared linalg.fill (writes into it)
/// but the first a fill of its own, of a tensor.empty of its own (else both
/// would fill one buffer). Reads of the fill keep sharing it.
void unshareFills(func::FuncOp func) {
  SmallVector<linalg::FillOp> fills;
  func.walk([&](linalg::FillOp fill) {
    Value result = fill->getResult(0);
    if (fill.hasPureTensorSemantics() && !result.use_empty() &&
        !result.hasOneUse())
      fills.push_back(fill);
  });
  OpBuilder b(func.getContext());
  for (linalg::FillOp fill : fills) {
    SmallVector<OpOperand *> inits;
    for (OpOperand &use : fill->getResult(0).getUses())
      if (isInit(use))
        inits.push_back(&use);
    if (!inits.empty() && fill->getResult(0).hasNUses(inits.size()))
      inits.erase(inits.begin()); // the fill itself serves one of them
    for (OpOperand *use : inits) {
      b.setInsertionPoint(use->getOwner());
      Operation *empty = fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>();
      Value init = empty ? b.clone(*empty)->getResult(0) : Value();
      auto copy = cast<linalg::FillOp>(b.clone(*fill));
      if (init)
        copy.getOutputsMutable()[0].set(init);
      use->set(copy->getResult(0));
    }
  }
}

/// Fuses an elementwise producer into an elementwise consumer (each with
/// only parallel loops, the producer's result used once): upstream's
/// fusion, applied by hand since its pattern set also folds constants and
/// fills into every generic, contractions included, which then no longer
/// look like projections to tlm-gpu-tile-matmuls.
struct FuseElementwiseChain : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp consumer,
                                PatternRewriter &rewriter) const override {
    if (!allParallel(consumer))
      return rewriter.notifyMatchFailure(consumer, "not elementwise");
    for (OpOperand *operand : consumer.getDpsInputOperands()) {
      Operation *producer = operand->get().getDefiningOp();
      // One use: a producer read twice would run anyway, and its work be
      // done again inside the consumer.
      if (!allParallel(producer) || !producer->hasOneUse() ||
          !linalg::areElementwiseOpsFusable(operand))
        continue;
      FailureOr<linalg::ElementwiseOpFusionResult> fused =
          linalg::fuseElementwiseOps(rewriter, operand);
      if (failed(fused))
        continue;
      for (auto [from, to] : fused->replacements)
        rewriter.replaceUsesWithIf(from, to, [&](OpOperand &use) {
          return use.getOwner() != producer;
        });
      rewriter.eraseOp(consumer);
      if (producer->use_empty())
        rewriter.eraseOp(producer);
      return success();
    }
    return rewriter.notifyMatchFailure(consumer, "no elementwise producer");
  }
};

struct TlmGpuFuseElementwise
    : public tlm::impl::TlmGpuFuseElementwiseBase<TlmGpuFuseElementwise> {
  void runOnOperation() override {
    // Residual adds first: once fused with their consumers they would no
    // longer be adds a projection can take over.
    DominanceInfo dom(getOperation());
    SmallVector<linalg::GenericOp> adds;
    getOperation().walk([&](linalg::GenericOp op) { adds.push_back(op); });
    for (linalg::GenericOp add : adds)
      tlm::foldResidualAdd(add, dom);
    unshareFills(getOperation());
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseElementwiseChain>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    // A fill was often the init of an elementwise op fused away: nothing
    // reads it now, but bufferization would still fill a buffer.
    getOperation().walk<WalkOrder::PostOrder, ReverseIterator>(
        [&](Operation *op) {
          if (isa<linalg::FillOp, tensor::EmptyOp>(op) && isOpTriviallyDead(op))
            op->erase();
        });
  }
};

} // namespace
