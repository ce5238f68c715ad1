//===- TileMatmuls.cpp - the tlm-tile-matmuls pass ------------------------===//
//
// Register-blocks and vectorizes the projections (x · Wᵀ contractions) on
// tensors. Rows are dynamic (batch, sequence), so the row loop is peeled: the
// main part runs full static row tiles that vectorize without masks, the
// remainder (fewer rows than a tile; every decode step lives here) runs one
// row at a time as a GEMV vectorized along K, which streams each weight row
// once. See ../shared/notes/cpu-codegen.md for the measurements behind the
// shapes (masked vectorization was ~300x slower than peeling).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

#define DEBUG_TYPE "tlm-tile-matmuls"

namespace mlir::tlm {
#define GEN_PASS_DEF_TLMTILEMATMULS
#include "passes/Passes.h.inc"
} // namespace mlir::tlm

using namespace mlir;

namespace {

/// The loop roles of a projection `out[rows..., n] += x[rows..., k] · w[n, k]`.
struct ProjectionDims {
  SmallVector<unsigned> rows; ///< outer to inner, all parallel
  unsigned n, k;
};

/// Matches the contractions the lowering makes for tlm.linear: rows first,
/// then n, then the one reduction k innermost, f32, static n and k. Other
/// contractions (attention's, whose GQA maps use floordiv) are left alone.
FailureOr<ProjectionDims> matchProjection(linalg::LinalgOp op) {
  if (!linalg::isaContractionOpInterface(op) || op.getNumDpsInits() != 1 ||
      op.getNumDpsInputs() != 2 || !op.hasPureTensorSemantics())
    return failure();
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || !dims->batch.empty() || dims->n.size() != 1 ||
      dims->k.size() != 1 || dims->m.empty())
    return failure();
  unsigned loops = op.getNumLoops();
  ProjectionDims p{{}, dims->n[0], dims->k[0]};
  if (p.k != loops - 1 || p.n != loops - 2)
    return failure();
  // W is (n, k): the layout tlm.linear's weights have.
  AffineMap wMap = op.getMatchingIndexingMap(op.getDpsInputOperand(1));
  if (wMap.getNumResults() != 2 || !wMap.getResult(0).isFunctionOfDim(p.n) ||
      !wMap.getResult(1).isFunctionOfDim(p.k))
    return failure();
  for (unsigned i = 0; i + 2 < loops; ++i) {
    if (!llvm::is_contained(dims->m, i))
      return failure();
    p.rows.push_back(i);
  }
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ShapedType::isDynamic(ranges[p.n]) || ShapedType::isDynamic(ranges[p.k]))
    return failure();
  auto outType = cast<ShapedType>(op.getDpsInits()[0].getType());
  if (!outType.getElementType().isF32())
    return failure();
  return p;
}

SmallVector<OpFoldResult> tileSizes(OpBuilder &b, ArrayRef<int64_t> sizes) {
  return llvm::map_to_vector(
      sizes, [&](int64_t s) -> OpFoldResult { return b.getIndexAttr(s); });
}

FailureOr<scf::SCFTilingResult> tile(RewriterBase &rewriter, Operation *op,
                                     ArrayRef<int64_t> sizes,
                                     bool forall = false) {
  scf::SCFTilingOptions options;
  options.setTileSizes(tileSizes(rewriter, sizes));
  if (forall)
    options.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> result =
      scf::tileUsingSCF(rewriter, cast<TilingInterface>(op), options);
  if (succeeded(result))
    rewriter.replaceOp(op, result->replacements);
  return result;
}

/// The single linalg op left in `region` by tiling, if any.
linalg::LinalgOp findTiled(Region &region) {
  linalg::LinalgOp found;
  region.walk([&](linalg::LinalgOp op) {
    if (succeeded(matchProjection(op)))
      found = op;
  });
  return found;
}

struct TlmTileMatmuls : public tlm::impl::TlmTileMatmulsBase<TlmTileMatmuls> {
  using Base::Base;

  /// Tiles the rows (1 per outer row dim, `rowTile` for the innermost),
  /// peels the row loop, then blocks and vectorizes both parts.
  LogicalResult tileRows(RewriterBase &rewriter, linalg::LinalgOp op,
                         const ProjectionDims &p) {
    unsigned loops = op.getNumLoops();
    SmallVector<int64_t> sizes(loops, 0);
    for (unsigned r : p.rows)
      sizes[r] = 1;
    sizes[p.rows.back()] = rowTile;
    FailureOr<scf::SCFTilingResult> rowsTiled = tile(rewriter, op, sizes);
    if (failed(rowsTiled))
      return op.emitOpError("row tiling failed");
    auto rowLoop = cast<scf::ForOp>(rowsTiled->loops.back().getOperation());
    scf::ForOp remainder;
    bool peeled =
        succeeded(scf::peelForLoopAndSimplifyBounds(rewriter, rowLoop,
                                                    remainder)) &&
        remainder;

    // Main part: static rowTile x colTile blocks, K one step at a time, so
    // the accumulator block stays in registers (hoisted below).
    if (linalg::LinalgOp main = findTiled(rowLoop.getRegion())) {
      SmallVector<int64_t> blockSizes(loops, 0);
      blockSizes[p.n] = colTile;
      blockSizes[p.k] = 1;
      if (failed(blockAndVectorize(rewriter, main, blockSizes)))
        return failure();
    }
    // Remainder (and everything when peeling did not apply): one row at a
    // time, vectorized along K.
    if (peeled) {
      if (linalg::LinalgOp rest = findTiled(remainder.getRegion()))
        if (failed(gemv(rewriter, rest, p)))
          return failure();
    }
    return success();
  }

  LogicalResult gemv(RewriterBase &rewriter, linalg::LinalgOp op,
                     const ProjectionDims &p) {
    SmallVector<int64_t> sizes(op.getNumLoops(), 0);
    for (unsigned r : p.rows)
      sizes[r] = 1;
    sizes[p.n] = gemvColTile;
    sizes[p.k] = gemvKTile;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    if (ranges[p.k] % gemvKTile || ranges[p.n] % gemvColTile)
      sizes[p.k] = sizes[p.n] = 1; // ragged: leave it to LLVM
    return blockAndVectorize(rewriter, op, sizes);
  }

  LogicalResult blockAndVectorize(RewriterBase &rewriter, linalg::LinalgOp op,
                                  ArrayRef<int64_t> sizes) {
    FailureOr<scf::SCFTilingResult> blocked = tile(rewriter, op, sizes);
    if (failed(blocked))
      return op.emitOpError("register blocking failed");
    if (!vectorize)
      return success();
    for (Operation *t : blocked->tiledOps) {
      // A block can still be dynamic (ragged n or k); it then stays scalar.
      if (failed(linalg::vectorizeOpPrecondition(t)))
        continue;
      rewriter.setInsertionPoint(t);
      FailureOr<linalg::VectorizationResult> v = linalg::vectorize(rewriter, t);
      if (failed(v))
        continue;
      rewriter.replaceOp(t, v->replacements);
    }
    return success();
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<std::pair<linalg::LinalgOp, ProjectionDims>> work;
    func.walk([&](linalg::LinalgOp op) {
      if (op->getParentOfType<scf::ForOp>() ||
          op->getParentOfType<scf::ForallOp>())
        return; // already tiled
      FailureOr<ProjectionDims> p = matchProjection(op);
      if (succeeded(p))
        work.emplace_back(op, *p);
    });
    IRRewriter rewriter(&getContext());
    for (auto &[op, p] : work) {
      linalg::LinalgOp target = op;
      if (threads > 1) {
        // Columns split across threads in colTile-aligned chunks; the
        // forall becomes an OpenMP worksharing loop later.
        int64_t n = op.getStaticLoopRanges()[p.n];
        int64_t chunk = llvm::divideCeil(llvm::divideCeil(n, threads), colTile) *
                        colTile;
        SmallVector<int64_t> sizes(op.getNumLoops(), 0);
        sizes[p.n] = chunk;
        FailureOr<scf::SCFTilingResult> split =
            tile(rewriter, op, sizes, /*forall=*/true);
        if (failed(split))
          return signalPassFailure();
        target = cast<linalg::LinalgOp>(split->tiledOps.front());
      }
      if (failed(tileRows(rewriter, target, p)))
        return signalPassFailure();
    }

    // Fold the slices into the vector transfers, then hoist each
    // accumulator block out of its K loop.
    // Canonicalization matters here: the tensor.casts tiling leaves around
    // the accumulator would otherwise block hoisting.
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    tensor::populateFoldTensorSubsetIntoVectorTransferPatterns(patterns);
    for (Dialect *dialect : ctx->getLoadedDialects())
      dialect->getCanonicalizationPatterns(patterns);
    for (RegisteredOperationName op : ctx->getRegisteredOperations())
      op.getCanonicalizationPatterns(patterns, ctx);
    if (failed(applyPatternsGreedily(func, std::move(patterns))))
      return signalPassFailure();
    func.walk([&](scf::ForOp loop) {
      hoistLoopInvariantSubsets(rewriter,
                                cast<LoopLikeOpInterface>(loop.getOperation()));
    });
  }
};

} // namespace
