//===- BlockReductions.cpp - tlm-gpu-block-reductions ---------------------===//
//
// Row reductions with one block per row: the threads of the block split the
// row and combine with gpu.all_reduce. With many rows, one thread per row
// fills the GPU on its own and wastes no block on a short row; the row
// count picks between the two at run time when it is dynamic.
//
//===----------------------------------------------------------------------===//

#include "passes/common/Builders.h"
#include "passes/common/OptionChecks.h"
#include "passes/common/Projection.h"
#include "passes/gpu/KernelBuilders.h"
#include "passes/gpu/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/MathExtras.h"

#define DEBUG_TYPE "tlm-gpu-block-reductions"

namespace mlir::tlm {
#define GEN_PASS_DEF_TLMGPUBLOCKREDUCTIONS
#include "passes/gpu/Passes.h.inc"
} // namespace mlir::tlm

using namespace mlir;
using namespace mlir::tlm;

namespace {

/// `out = combine(out, f(inputs))` over the last loop.
struct RowReduction {
  Operation *combiner;
  gpu::AllReduceOperation kind;
  double identity;
};

FailureOr<RowReduction> matchRowReduction(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1)
    return failure();
  unsigned loops = op.getNumLoops();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  if (loops == 0 || iterators.back() != utils::IteratorType::reduction)
    return failure();
  for (unsigned i = 0; i + 1 < loops; ++i)
    if (iterators[i] != utils::IteratorType::parallel)
      return failure();
  // The output holds every outer loop once, in any order (attention's
  // P·V writes (b, i, h, e) from loops (b, h, i, e, j)), and not the
  // reduced one.
  OpOperand *init = op.getDpsInitOperand(0);
  AffineMap outMap = op.getMatchingIndexingMap(init);
  if (outMap.getNumResults() != loops - 1 || !outMap.isProjectedPermutation() ||
      outMap.isFunctionOfDim(loops - 1))
    return failure();
  BlockArgument acc = op.getMatchingBlockArgument(init);
  if (!acc.getType().isF32() || !acc.hasOneUse())
    return failure();
  Operation *combiner = *acc.getUsers().begin();
  auto yield = cast<linalg::YieldOp>(op.getBody()->getTerminator());
  if (yield.getOperand(0).getDefiningOp() != combiner)
    return failure();
  if (isa<arith::AddFOp>(combiner))
    return RowReduction{combiner, gpu::AllReduceOperation::ADD, 0.0};
  double negInf = -std::numeric_limits<double>::infinity();
  if (isa<arith::MaximumFOp>(combiner))
    return RowReduction{combiner, gpu::AllReduceOperation::MAXIMUMF, negInf};
  if (isa<arith::MaxNumFOp>(combiner))
    return RowReduction{combiner, gpu::AllReduceOperation::MAXNUMF, negInf};
  return failure();
}

/// The sizes of `op`'s loops, as index values.
SmallVector<Value> loopSizes(OpBuilder &b, Location loc, linalg::GenericOp op) {
  SmallVector<Value> sizes;
  auto linalgOp = cast<linalg::LinalgOp>(op.getOperation());
  for (Range range : linalgOp.createLoopRanges(b, loc))
    sizes.push_back(getValueOrCreateConstantIndexOp(b, loc, range.size));
  return sizes;
}

/// `op`'s inputs loaded at the loop indices `ivs`, their block args mapped.
void loadInputs(OpBuilder &b, Location loc, linalg::GenericOp op,
                ArrayRef<Value> ivs, IRMapping &map) {
  unsigned loops = op.getNumLoops();
  for (OpOperand *in : op.getDpsInputOperands()) {
    AffineMap m = op.getMatchingIndexingMap(in);
    SmallVector<Value> idx;
    for (AffineExpr e : m.getResults()) {
      if (auto d = dyn_cast<AffineDimExpr>(e))
        idx.push_back(ivs[d.getPosition()]);
      else
        idx.push_back(affine::AffineApplyOp::create(
            b, loc, AffineMap::get(loops, 0, e), ivs));
    }
    map.map(op.getMatchingBlockArgument(in),
            memref::LoadOp::create(b, loc, in->get(), idx).getResult());
  }
}

/// The thread's fold, by `op`'s body, of its elements of row `outerIdx`.
scf::ForOp buildStridedFold(OpBuilder &b, Location loc, linalg::GenericOp op,
                            const RowReduction &r, ArrayRef<Value> outerIdx,
                            Value thread, Value extent, Value cThreads) {
  // Each thread folds every `threads`-th element of the row.
  Value identity = arith::ConstantOp::create(
      b, loc, b.getF32FloatAttr(static_cast<float>(r.identity)));
  BlockArgument acc = op.getMatchingBlockArgument(op.getDpsInitOperand(0));
  auto strided = scf::ForOp::create(b, loc, thread, extent, cThreads,
                                    ValueRange{identity});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(strided.getBody());
  SmallVector<Value> ivs(outerIdx);
  ivs.push_back(strided.getInductionVar());
  IRMapping map;
  loadInputs(b, loc, op, ivs, map);
  map.map(acc, strided.getRegionIterArgs()[0]);
  for (Operation &bodyOp : op.getBody()->without_terminator()) {
    if (auto idxOp = dyn_cast<linalg::IndexOp>(bodyOp)) {
      map.map(idxOp.getResult(), ivs[idxOp.getDim()]);
      continue;
    }
    b.clone(bodyOp, map);
  }
  scf::YieldOp::create(b, loc, map.lookup(r.combiner->getResult(0)));
  return strided;
}

/// `total` folded into row `outerIdx` of `op`'s output by its combiner.
void foldIntoOutput(OpBuilder &b, Location loc, linalg::GenericOp op,
                    const RowReduction &r, ArrayRef<Value> outerIdx,
                    Value total) {
  BlockArgument acc = op.getMatchingBlockArgument(op.getDpsInitOperand(0));
  OpOperand *init = op.getDpsInitOperand(0);
  Value out = init->get();
  // The output's indices: its map (a permutation of the outer loops).
  SmallVector<Value> outIdx;
  for (AffineExpr e : op.getMatchingIndexingMap(init).getResults())
    outIdx.push_back(outerIdx[cast<AffineDimExpr>(e).getPosition()]);
  Value old = memref::LoadOp::create(b, loc, out, outIdx);
  IRMapping fold;
  fold.map(acc, old);
  Value other = r.combiner->getOperand(0) == acc ? r.combiner->getOperand(1)
                                                 : r.combiner->getOperand(0);
  fold.map(other, total);
  Operation *combined = b.clone(*r.combiner, fold);
  memref::StoreOp::create(b, loc, combined->getResult(0), out, outIdx);
}

/// The block form: a launch of `blockGrid` blocks of `cThreads`, one a row.
void buildBlockForm(OpBuilder &b, Location loc, linalg::GenericOp op,
                    const RowReduction &r, ArrayRef<Value> sizes,
                    Value blockGrid, Value c1, Value cThreads) {
  ArrayRef<Value> outerSizes = sizes.drop_back();
  gpu::LaunchOp launch =
      makeLaunch(b, loc, {blockGrid, c1, c1}, {cThreads, c1, c1});
  gpu::KernelDim3 block = launch.getBlockIds(), thread = launch.getThreadIds();
  SmallVector<Value> outerIdx = delinearize(b, loc, block.x, outerSizes);
  scf::ForOp strided = buildStridedFold(b, loc, op, r, outerIdx, thread.x,
                                        sizes.back(), cThreads);
  // The block combines its partials; thread 0 folds the total in.
  Value total = gpu::AllReduceOp::create(
      b, loc, strided.getResult(0),
      gpu::AllReduceOperationAttr::get(b.getContext(), r.kind),
      /*uniform=*/true);
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                      thread.x, index(b, loc, 0));
  auto store = scf::IfOp::create(b, loc, first);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(store.thenBlock());
  foldIntoOutput(b, loc, op, r, outerIdx, total);
}

/// The thread form (parallel loops, run when `few`) in place of `op`.
LogicalResult replaceByThreadForm(IRRewriter &b, Location loc,
                                  linalg::GenericOp op, Value few) {
  // The thread form: the generic as parallel loops (mapped later, one
  // thread per row), whose outermost loop runs no iteration when the
  // block form took the rows.
  b.setInsertionPoint(op);
  FailureOr<linalg::LinalgLoops> loopNest = linalg::linalgOpToParallelLoops(
      b, cast<linalg::LinalgOp>(op.getOperation()));
  if (failed(loopNest) || loopNest->empty() ||
      !isa<scf::ParallelOp>(loopNest->front()))
    return op.emitOpError("tlm-gpu-block-reductions: no parallel loops "
                          "for the one-thread-per-row form");
  auto parallel = cast<scf::ParallelOp>(loopNest->front());
  b.setInsertionPoint(parallel);
  OpOperand &upper = parallel.getUpperBoundMutable()[0];
  upper.set(
      arith::SelectOp::create(b, loc, few, index(b, loc, 0), upper.get()));
  b.eraseOp(op);
  return success();
}

struct TlmGpuBlockReductions
    : public tlm::impl::TlmGpuBlockReductionsBase<TlmGpuBlockReductions> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(tlm::checkOptions(
            getOperation(), "tlm-gpu-block-reductions",
            {{"block-size", blockSize, 1}, {"thread-rows", threadRows, 0}})))
      return signalPassFailure();
    SmallVector<std::pair<linalg::GenericOp, RowReduction>> work;
    getOperation().walk([&](linalg::GenericOp op) {
      FailureOr<RowReduction> r = matchRowReduction(op);
      if (failed(r))
        return;
      // A reduction shorter than a warp runs faster within one thread.
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      if (!ShapedType::isDynamic(ranges.back()) && ranges.back() < 32)
        return;
      // So do rows enough to fill the GPU with threads.
      ArrayRef<int64_t> outer = ArrayRef<int64_t>(ranges).drop_back();
      if (threadRows > 0 && !ShapedType::isDynamicShape(outer) &&
          llvm::product_of(outer) >= threadRows)
        return;
      work.emplace_back(op, *r);
    });
    IRRewriter rewriter(&getContext());
    for (auto &[op, r] : work)
      if (failed(rewrite(rewriter, op, r)))
        return signalPassFailure();
  }

  LogicalResult rewrite(IRRewriter &b, linalg::GenericOp op,
                        const RowReduction &r) {
    Location loc = op.getLoc();
    b.setInsertionPoint(op);
    SmallVector<Value> sizes = loopSizes(b, loc, op);
    ArrayRef<Value> outerSizes = ArrayRef<Value>(sizes).drop_back();
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t extent = ranges.back();
    int64_t threads = blockSize;
    if (!ShapedType::isDynamic(extent))
      threads = std::clamp<int64_t>(llvm::PowerOf2Ceil(extent), 32, threads);
    Value c1 = index(b, loc, 1), cThreads = index(b, loc, threads);
    Value rows = product(b, loc, outerSizes);
    // Rows known only at run time: both forms are launched, and the row
    // count gives one of them an empty grid (which the runtime skips), as
    // tlm-gpu-tile-matmuls does for its GEMV.
    Value few;
    if (threadRows > 0 &&
        ShapedType::isDynamicShape(ArrayRef<int64_t>(ranges).drop_back()))
      few = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, rows,
                                  index(b, loc, threadRows));
    Value blockGrid =
        few ? arith::SelectOp::create(b, loc, few, rows, index(b, loc, 0))
                  .getResult()
            : rows;
    buildBlockForm(b, loc, op, r, sizes, blockGrid, c1, cThreads);
    if (!few) {
      b.eraseOp(op);
      return success();
    }
    return replaceByThreadForm(b, loc, op, few);
  }
};

} // namespace
