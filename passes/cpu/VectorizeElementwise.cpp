//===- VectorizeElementwise.cpp - the tlm-vectorize-elementwise pass ------===//
//
// The elementwise ops around the projections (SiLU·gate, residual adds, the
// norms' scaling, RoPE's rotation) have dynamic rows, so linalg lowers them
// to scalar loops, and SiLU's exp then costs a scalar polynomial per
// element. Tiling every dim to 1 except the innermost, static one, which is
// tiled by `lanes`, gives static blocks that vectorize without masks.
//
//===----------------------------------------------------------------------===//

#include "passes/common/OptionChecks.h"
#include "passes/common/Projection.h"
#include "passes/cpu/Passes.h"
#include "passes/cpu/RopeRotation.h"
#include "passes/cpu/RowReduction.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "tlm-vectorize-elementwise"

namespace mlir::tlm {
#define GEN_PASS_DEF_TLMVECTORIZEELEMENTWISE
#include "passes/cpu/Passes.h.inc"
} // namespace mlir::tlm

using namespace mlir;

namespace {

/// Whether `op` sits in a loop another pass made (its tiles), rather than
/// one the lowering built and marked (kTileInLoopAttr).
bool inTiledCode(Operation *op) {
  return !op->hasAttr(tlm::kTileInLoopAttr) &&
         (op->getParentOfType<scf::ForOp>() ||
          op->getParentOfType<scf::ForallOp>());
}

/// Why `op`'s operands and innermost loop do not fit a vector of `lanes`
/// (not all indexed by projected permutations, or the innermost dim
/// dynamic or ragged), or an empty string.
std::string innerDimMismatch(linalg::GenericOp op, int64_t lanes) {
  for (AffineMap map : op.getIndexingMapsArray())
    if (!map.isProjectedPermutation())
      return "an operand is not indexed by a projected permutation";
  int64_t inner = op.getStaticLoopRanges().back();
  if (ShapedType::isDynamic(inner) || inner % lanes != 0)
    return "the innermost dim is dynamic or not a multiple of the lanes";
  return "";
}

/// Why `op` is left alone, or an empty string.
std::string reasonToSkip(linalg::GenericOp op, int64_t lanes) {
  if (!op.hasPureTensorSemantics())
    return "not on tensors";
  if (op.getNumReductionLoops() != 0)
    return "has a reduction";
  if (op.getNumLoops() == 0)
    return "has no loops";
  return innerDimMismatch(op, lanes);
}

/// Why `op` is not a column reduction (a sum over the rows, one result per
/// column: the RMSNorm gain's gradient), or an empty string: on tensors,
/// the innermost loop parallel, static and a multiple of `lanes`, at least
/// one reduction among the others, every operand indexed by a projected
/// permutation.
std::string columnReductionMismatch(linalg::GenericOp op, int64_t lanes) {
  if (!op.hasPureTensorSemantics())
    return "not on tensors";
  if (op.getNumReductionLoops() == 0 ||
      op.getIteratorTypesArray().back() != utils::IteratorType::parallel)
    return "no reduction, or the innermost loop is one";
  return innerDimMismatch(op, lanes);
}

/// Gives every output the payload never reads a fresh tensor.empty. The
/// lowering passes an input as the output of ops like the residual add
/// (`outs(%x)`), and bufferization then copied %x into a new buffer before
/// overwriting all of it (a function argument is not written in place).
void freshUnreadOutputs(RewriterBase &rewriter, linalg::GenericOp op) {
  for (OpOperand &init : op.getDpsInitsMutable()) {
    if (op.payloadUsesValueFromOperand(&init) ||
        init.get().getDefiningOp<tensor::EmptyOp>())
      continue;
    rewriter.setInsertionPoint(op);
    auto type = cast<RankedTensorType>(init.get().getType());
    Value empty = tensor::EmptyOp::create(
        rewriter, op.getLoc(),
        tensor::getMixedSizes(rewriter, op.getLoc(), init.get()),
        type.getElementType());
    rewriter.modifyOpInPlace(op, [&] { init.set(empty); });
  }
}

struct TlmVectorizeElementwise
    : public tlm::impl::TlmVectorizeElementwiseBase<TlmVectorizeElementwise> {
  using Base::Base;

  /// Tiles `op` by `sizes` (0: untiled), as one forall with threads (not
  /// when `sequential`: a reduction's blocks accumulate into one output).
  FailureOr<scf::SCFTilingResult> tileOp(RewriterBase &rewriter,
                                         Operation *op,
                                         ArrayRef<int64_t> sizes,
                                         bool sequential = false) {
    scf::SCFTilingOptions options;
    options.setTileSizes(getAsIndexOpFoldResult(&getContext(), sizes));
    // With threads, every block is an iteration of one forall: these ops
    // would otherwise run on one thread between the parallel projections.
    if (threads > 1 && !sequential)
      options.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
    rewriter.setInsertionPoint(op);
    FailureOr<scf::SCFTilingResult> tiled =
        scf::tileUsingSCF(rewriter, cast<TilingInterface>(op), options);
    if (failed(tiled))
      return op->emitOpError("tiling failed");
    rewriter.replaceOp(op, tiled->replacements);
    return tiled;
  }

  /// Tiles `op` by `sizes` and vectorizes its one block; a block linalg
  /// cannot vectorize stays a scalar loop.
  LogicalResult tileAndVectorize(RewriterBase &rewriter, Operation *op,
                                 ArrayRef<int64_t> sizes,
                                 bool sequential = false) {
    FailureOr<scf::SCFTilingResult> tiled =
        tileOp(rewriter, op, sizes, sequential);
    if (failed(tiled))
      return failure();
    Operation *block = tiled->tiledOps.front();
    if (failed(linalg::vectorizeOpPrecondition(block)))
      return success();
    rewriter.setInsertionPoint(block);
    FailureOr<linalg::VectorizationResult> v =
        linalg::vectorize(rewriter, block);
    if (failed(v))
      return block->emitOpError("vectorization failed");
    rewriter.replaceOp(block, v->replacements);
    return success();
  }

  /// 2-D transposes of static sizes that split into `lanes` x `lanes`
  /// blocks (the backward's dyᵀ and xᵀ): one vector transpose a block,
  /// rather than a scalar loop that writes a column of the result per row
  /// it reads.
  LogicalResult vectorizeMatrixTransposes(RewriterBase &rewriter) {
    SmallVector<linalg::TransposeOp> work;
    getOperation().walk([&](linalg::TransposeOp op) {
      auto type = cast<ShapedType>(op.getInput().getType());
      if (inTiledCode(op) || type.getRank() != 2 ||
          !op.hasPureTensorSemantics() || !type.hasStaticShape() ||
          type.getDimSize(0) % lanes != 0 || type.getDimSize(1) % lanes != 0)
        return;
      work.push_back(op);
    });
    for (linalg::TransposeOp op : work)
      if (failed(tileAndVectorize(rewriter, op,
                                  {int64_t(lanes), int64_t(lanes)})))
        return failure();
    return success();
  }

  void runOnOperation() override {
    if (failed(
            tlm::checkOptions(getOperation(), "tlm-vectorize-elementwise",
                              {{"lanes", lanes, 1, true}, {"threads", threads, 1}})))
      return signalPassFailure();
    IRRewriter rewriter(&getContext());
    // A transpose that keeps the innermost dim in place (the new cache rows'
    // (batch, seq) swap) is an elementwise copy with permuted rows.
    SmallVector<linalg::TransposeOp> transposes;
    getOperation().walk([&](linalg::TransposeOp op) {
      ArrayRef<int64_t> perm = op.getPermutation();
      if (!perm.empty() && perm.back() == int64_t(perm.size()) - 1 &&
          !op->getParentOfType<scf::ForOp>() &&
          !op->getParentOfType<scf::ForallOp>())
        transposes.push_back(op);
    });
    for (linalg::TransposeOp op : transposes) {
      rewriter.setInsertionPoint(op);
      if (failed(linalg::generalizeNamedOp(rewriter, op)))
        return signalPassFailure();
    }
    if (failed(vectorizeMatrixTransposes(rewriter)))
      return signalPassFailure();

    // Row sums and maxima (RMSNorm's statistics, the cross-entropy's,
    // attention's) with the op that reads them: one loop over the rows
    // (RowReduction.h).
    SmallVector<tlm::RowReduction> rowSums;
    getOperation().walk([&](linalg::GenericOp op) {
      if (!inTiledCode(op) && tlm::rowReductionMismatch(op, lanes).empty())
        rowSums.push_back(tlm::withEpilogue(op));
    });
    for (tlm::RowReduction reduction : rowSums)
      tlm::fuseRowReduction(rewriter, reduction, lanes);

    SmallVector<linalg::GenericOp> work, rotations, columnSums;
    getOperation().walk([&](linalg::GenericOp op) {
      if (inTiledCode(op))
        return; // inside code another pass has tiled
      if (tlm::ropeRotationMismatch(op, lanes).empty())
        rotations.push_back(op);
      else if (reasonToSkip(op, lanes).empty())
        work.push_back(op);
      else if (columnReductionMismatch(op, lanes).empty())
        columnSums.push_back(op);
    });
    // Column sums: the rows one at a time, `lanes` columns at a time, in
    // the scalar loop's order (each column's sum is the same, bit for bit).
    for (linalg::GenericOp op : columnSums) {
      SmallVector<int64_t> sizes(op.getNumLoops(), 1);
      sizes.back() = lanes;
      if (failed(tileAndVectorize(rewriter, op, sizes, /*sequential=*/true)))
        return signalPassFailure();
    }
    // RoPE's rotation: one tile per (batch, position), rotated in vectors
    // (RopeRotation.h).
    for (linalg::GenericOp op : rotations) {
      // Dynamic loops (batch, sequence) one at a time; static ones (the
      // heads, the pairs) whole: the rotation loops over them itself.
      SmallVector<int64_t> sizes;
      for (int64_t range : op.getStaticLoopRanges())
        sizes.push_back(ShapedType::isDynamic(range) ? 1 : 0);
      FailureOr<scf::SCFTilingResult> tiled = tileOp(rewriter, op, sizes);
      if (failed(tiled))
        return signalPassFailure();
      auto block = cast<linalg::GenericOp>(tiled->tiledOps.front());
      rewriter.replaceOp(block,
                         tlm::vectorizeRopeRotation(rewriter, block, lanes));
    }
    for (linalg::GenericOp op : work) {
      freshUnreadOutputs(rewriter, op);
      SmallVector<int64_t> sizes(op.getNumLoops(), 1);
      sizes.back() = lanes;
      if (failed(tileAndVectorize(rewriter, op, sizes)))
        return signalPassFailure();
    }
    // The marks have done their work here (tlm-tile-matmuls ran before).
    getOperation().walk(
        [](Operation *op) { op->removeAttr(tlm::kTileInLoopAttr); });
    // Read and write the whole tensors at the block's offsets rather than
    // through one-block slices.
    RewritePatternSet patterns(&getContext());
    tensor::populateFoldTensorSubsetIntoVectorTransferPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
