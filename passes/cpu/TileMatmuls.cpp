//===- TileMatmuls.cpp - the tlm-tile-matmuls pass ------------------------===//
//
// Register-blocks and vectorizes the projections (x · Wᵀ contractions) on
// tensors. Rows are dynamic (batch, sequence), so the row loop is peeled: the
// main part runs full static row tiles that vectorize without masks, the
// remainder (fewer rows than a tile; every decode step lives here) runs one
// row at a time as a GEMV vectorized along K, which streams each weight row
// once. See docs/cpu-codegen.md for the reasons behind the shapes
// (masked vectorization was far slower than peeling).
//
//===----------------------------------------------------------------------===//

#include "passes/common/Builders.h"
#include "passes/common/OptionChecks.h"
#include "passes/common/Projection.h"
#include "passes/common/Quantized.h"
#include "passes/cpu/Int8Gemv.h"
#include "passes/cpu/NibbleLookup.h"
#include "passes/cpu/PackedProjection.h"
#include "passes/cpu/PairedProjection.h"
#include "passes/cpu/Passes.h"
#include "passes/cpu/PlainSplitK.h"
#include "passes/cpu/QuantizedSplitK.h"
#include "passes/cpu/Strategy.h"
#include "passes/cpu/Tiling.h"

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

#include <numeric>

#define DEBUG_TYPE "tlm-tile-matmuls"

namespace mlir::tlm {
#define GEN_PASS_DEF_TLMTILEMATMULS
#include "passes/cpu/Passes.h.inc"
} // namespace mlir::tlm

using namespace mlir;
using namespace mlir::tlm::tiling;

/// Projections to tile, each with its dims.
using Projections =
    SmallVector<std::pair<linalg::LinalgOp, tlm::ProjectionDims>>;

/// The projections on tensors in `func` that are not tiled yet.
static Projections collectProjections(func::FuncOp func) {
  Projections work;
  func.walk([&](linalg::LinalgOp op) {
    bool marked = op->hasAttr(tlm::kTileInLoopAttr);
    if (!marked && (op->getParentOfType<scf::ForOp>() ||
                    op->getParentOfType<scf::ForallOp>()))
      return; // already tiled
    if (!op.hasPureTensorSemantics())
      return;
    FailureOr<tlm::ProjectionDims> p = tlm::matchProjection(op);
    if (succeeded(p)) {
      // Its tiles are copies of it: they must not be taken again.
      op->removeAttr(tlm::kTileInLoopAttr);
      work.emplace_back(op, *p);
    }
  });
  return work;
}

/// Gives `op` a fresh uninitialized output in place of its zero fill.
static void dropZeroFill(RewriterBase &rewriter, linalg::LinalgOp op) {
  // Every block writes its sums without reading the output, so the
  // output needs no zero fill: an uninitialized tensor will do, a
  // fresh one per projection (CSE may have merged equal fills, and
  // bufferization copied a shared one for each user).
  auto fill = op.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
  rewriter.setInsertionPoint(op);
  Operation *empty = rewriter.clone(*fill.getDpsInits()[0].getDefiningOp());
  rewriter.modifyOpInPlace(
      op, [&] { op.getDpsInitsMutable()[0].set(empty->getResult(0)); });
}

/// `op` with the RMSNorm that makes its x folded in, or `op` itself when
/// there is none to fold.
static linalg::LinalgOp foldNormInto(RewriterBase &rewriter,
                                     linalg::LinalgOp op,
                                     const tlm::ProjectionDims &p) {
  // x = RMSNorm scaling of another tensor, read by this projection
  // only: fold it (the packed form scales W's panels by the gain and
  // divides its sums by the rms; x is never normalized in memory).
  std::optional<tlm::NormScale> norm =
      tlm::matchNormScale(op.getDpsInputs()[0]);
  if (norm && norm->op->hasOneUse())
    return tlm::foldNormScale(rewriter, op, p, *norm);
  LLVM_DEBUG(llvm::dbgs() << "norm not folded: " << op << "\n");
  return op;
}

/// A tensor of `shape` filled with `zero` (an f32).
static Value zeroTensor(RewriterBase &rewriter, Location loc, Value zero,
                        ArrayRef<int64_t> shape) {
  Type f32 = rewriter.getF32Type();
  return linalg::FillOp::create(
             rewriter, loc, zero,
             tensor::EmptyOp::create(rewriter, loc, shape, f32).getResult())
      .getResult(0);
}

/// out[r.., c] += Σ part[r.., c, ...] over part's `summed` trailing dims,
/// for `nRows` row dims r.
static linalg::GenericOp sumParts(RewriterBase &rewriter, Location loc,
                                  Value part, Value out, unsigned nRows,
                                  int64_t summed) {
  MLIRContext *ctx = rewriter.getContext();
  unsigned c = nRows;
  SmallVector<unsigned> rows = llvm::to_vector(llvm::seq<unsigned>(0, nRows));
  // out[r.., c] += Σ part[r.., c, ...]: loops (r.., c, ...).
  unsigned loops2 = nRows + 1 + summed;
  SmallVector<unsigned> partDims = joinDims({rows, {c}});
  for (int64_t i = 0; i < summed; ++i)
    partDims.push_back(c + 1 + i);
  SmallVector<AffineMap> maps2{
      tlm::dimsMapOf(ctx, loops2, partDims),
      tlm::dimsMapOf(ctx, loops2, joinDims({rows, {c}}))};
  SmallVector<utils::IteratorType> iters2(loops2,
                                          utils::IteratorType::parallel);
  for (int64_t i = 0; i < summed; ++i)
    iters2[c + 1 + i] = utils::IteratorType::reduction;
  return linalg::GenericOp::create(
      rewriter, loc, TypeRange{out.getType()}, ValueRange{part},
      ValueRange{out}, maps2, iters2,
      [&](OpBuilder &b, Location nl, ValueRange a) {
        linalg::YieldOp::create(
            b, nl, ValueRange{arith::AddFOp::create(b, nl, a[1], a[0])});
      });
}

/// Folds the slices into the vector transfers, then hoists each
/// accumulator block out of its K loop.
static LogicalResult foldAndHoist(func::FuncOp func, RewriterBase &rewriter) {
  // Canonicalization matters here: the tensor.casts tiling leaves around
  // the accumulator would otherwise block hoisting.
  MLIRContext *ctx = func.getContext();
  RewritePatternSet patterns(ctx);
  tensor::populateFoldTensorSubsetIntoVectorTransferPatterns(patterns);
  for (Dialect *dialect : ctx->getLoadedDialects())
    dialect->getCanonicalizationPatterns(patterns);
  for (RegisteredOperationName op : ctx->getRegisteredOperations())
    op.getCanonicalizationPatterns(patterns, ctx);
  if (failed(applyPatternsGreedily(func, std::move(patterns))))
    return failure();
  func.walk([&](scf::ForOp loop) {
    if (writesInvariantIterArgVector(loop))
      hoistLoopInvariantSubsets(rewriter,
                                cast<LoopLikeOpInterface>(loop.getOperation()));
  });
  return success();
}

/// Lets each accumulating add in `func` contract with the multiply that
/// feeds it.
static void contractAccumulatingAdds(func::FuncOp func) {
  // The accumulating add is rebuilt without flags (by the vectorizer, then
  // by folding the unit kb reduction); an add fed by a contractable
  // multiply may contract with it into one FMA.
  func.walk([](arith::AddFOp add) {
    for (Value operand : add->getOperands()) {
      if (auto cast = operand.getDefiningOp<vector::ShapeCastOp>())
        operand = cast.getSource();
      auto mul = operand.getDefiningOp<arith::MulFOp>();
      if (mul &&
          bitEnumContainsAll(mul.getFastmath(), arith::FastMathFlags::contract))
        add.setFastmath(add.getFastmath() | arith::FastMathFlags::contract);
    }
  });
}

namespace {

/// What the blocks of a projection read besides their own op, handed down
/// from the step that made them.
struct BlockParams {
  /// The projection being tiled starts at zero and every block of it
  /// overwrites its part of the output (see everyBlockSplitsK).
  bool overwrite = false;

  /// In gemvRows' blocks of a row of a q4_0 projection: tlm::q4Offsets of
  /// that row of x.
  Value q4Offsets;

  /// In gemvRows' blocks of a row of a q4_0 projection with lookup-nibbles:
  /// tlm::lanePermutedX of that row of x.
  Value q4Lanes;

  /// In gemvRows' blocks of a row of a q8_0 / q4_0 projection with
  /// int8-dot: tlm::int8GemvInput of that row of x, for W of `int8Bits`.
  tlm::Int8GemvX int8X;
  int64_t int8Bits = 0;

  /// In gemvRows' blocks of a row: the bytes of quantized codes they
  /// prefetch ahead (0: none). Only the one-row GEMV streams W row after
  /// row; the row tiles reuse each block of W for several rows.
  int64_t rowPrefetch = 0;
};

struct TlmTileMatmuls : public tlm::impl::TlmTileMatmulsBase<TlmTileMatmuls> {
  using Base::Base;

  /// The register block of the main part for reduction length `k`:
  /// `rowTile x colTile`, unless a tile of x (rows x k floats) would exceed
  /// `xTileBytes`; then the rows halve and the columns double (the same
  /// number of accumulators), so x stays in L1 while W streams past it.
  struct BlockShape {
    int64_t rows, cols;
  };
  BlockShape blockShape(int64_t k) const {
    BlockShape b{rowTile, colTile};
    while (b.rows > 1 && b.rows % 2 == 0 &&
           b.rows * k * int64_t(sizeof(float)) > xTileBytes) {
      b.rows /= 2;
      b.cols *= 2;
    }
    return b;
  }

  /// How one projection is tiled, decided from it and the options before
  /// any rewrite (planTiling), then carried out by apply.
  struct TilePlan {
    tlm::ProjectionDims p;
    /// The register block of the main part, or the packed panel's.
    BlockShape shape;
    /// Whether it takes the packed form (usePacked).
    bool packed = false;
    /// Whether it starts at zero and every block of it overwrites its part
    /// of the output (BlockParams::overwrite).
    bool overwrite = false;
  };

  TilePlan planTiling(linalg::LinalgOp op, const tlm::ProjectionDims &p) const {
    TilePlan plan{p, blockShape(op.getStaticLoopRanges()[p.k])};
    plan.packed = usePacked(op, p);
    if (plan.packed)
      plan.shape = {packRows, packCols};
    plan.overwrite = tlm::startsAtZero(op) &&
                     (plan.packed ? packedRestSplitsK()
                                  : everyBlockSplitsK(op, p, plan.shape));
    return plan;
  }

  /// Tiles the rows (1 per outer row dim, `shape.rows` for the innermost)
  /// and peels the row loop: full row tiles run `shape` blocks, the
  /// remaining rows one at a time in `1 x gemvColumns` blocks.
  LogicalResult tileRows(RewriterBase &rewriter, linalg::LinalgOp op,
                         const TilePlan &plan) {
    const tlm::ProjectionDims &p = plan.p;
    unsigned loops = op.getNumLoops(); // `op` is replaced by its tiling
    SmallVector<int64_t> sizes(loops, 0);
    for (unsigned r : p.rows)
      sizes[r] = 1;
    sizes[p.rows.back()] = plan.shape.rows;
    FailureOr<scf::SCFTilingResult> rowsTiled = tile(rewriter, op, sizes);
    if (failed(rowsTiled))
      return op.emitOpError("row tiling failed");
    auto rowLoop = cast<scf::ForOp>(rowsTiled->loops.back().getOperation());
    scf::ForOp remainder;
    if (failed(scf::peelForLoopAndSimplifyBounds(rewriter, rowLoop, remainder)))
      remainder = nullptr; // nothing to peel: rowLoop holds every row
    BlockParams params;
    params.overwrite = plan.overwrite;
    if (linalg::LinalgOp main = findTiled(rowLoop.getRegion()))
      if (failed(blockColumns(rewriter, main, p, plan.shape.cols, params)))
        return failure();
    if (!remainder)
      return success();
    linalg::LinalgOp rest = findTiled(remainder.getRegion());
    return rest ? gemvRows(rewriter, rest, p, gemvColumns, plan.overwrite)
                : success();
  }

  /// The rows of `op` one at a time, in `1 x cols` blocks: every
  /// weight row streams once per row.
  LogicalResult gemvRows(RewriterBase &rewriter, linalg::LinalgOp op,
                         const tlm::ProjectionDims &p, int64_t cols,
                         bool overwrite) {
    SmallVector<int64_t> sizes(op.getNumLoops(), 0);
    sizes[p.rows.back()] = 1;
    // A q4_0 w's offsets depend on x only: made for all these rows where x
    // is defined (outside the panel loop of the packed form), then sliced
    // like x for each row, for all its column blocks.
    Value x = op.getDpsInputs()[0], rowsOffsets, rowsLanes;
    int64_t k = op.getStaticLoopRanges()[p.k];
    // int8-dot's GEMV replaces both f32 forms below, one column a block
    // as the lookup's (docs/cpu-codegen.md#int8-decode).
    int64_t int8Bits =
        vectorize && int8Dot && lanes == 16 ? tlm::int8GemvBits(op, p) : 0;
    tlm::Int8GemvX rowsInt8;
    if (int8Bits) {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointAfterValue(x);
      rowsInt8 = tlm::int8GemvInput(rewriter, op.getLoc(), x, int8Bits);
      cols = 1;
    } else if (vectorize && tlm::readsQ4(op) &&
               tlm::quantizedSteps(op, lanes) && !ShapedType::isDynamic(k)) {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointAfterValue(x);
      // One or the other: lookup blocks replace the split-k form whole.
      // They take one column each whatever `cols`: even with the weights
      // in cache, where 8 columns share each load of x in the split-k
      // form, a d_model-256 q4_0 model decoded faster so
      // (docs/cpu-codegen.md#looking-nibbles-up-q4_0-avx-512).
      if (lookupNibbles && lanes == 16 && k % tlm::kLookupChunk == 0) {
        rowsLanes = tlm::lanePermutedX(rewriter, op.getLoc(), x);
        cols = 1;
      } else {
        rowsOffsets = tlm::q4Offsets(rewriter, op.getLoc(), x);
      }
    }
    FailureOr<scf::SCFTilingResult> single = tile(rewriter, op, sizes);
    if (failed(single))
      return op.emitOpError("row tiling failed");
    auto row = cast<linalg::LinalgOp>(single->tiledOps.front());
    BlockParams params;
    params.overwrite = overwrite;
    if (rowsLanes)
      params.q4Lanes =
          sliceRowsLike(rewriter, rowsLanes, row.getDpsInputs()[0], x);
    // One column a block streams W row after row: the strategy's choice
    // for weights beyond the cache, and the lookup and int8 forms' always.
    // Those prefetched decoded q4_0 1.75x (int8) and 1.8x (lookup) as fast
    // on a host whose cache the strategy believed held the weights
    // (docs/cpu-codegen.md#int8-decode); 8 columns share each line of x
    // and gain nothing.
    params.rowPrefetch =
        prefetchCodes && cols == 1 ? prefetchDistance.getValue() : 0;
    if (int8Bits) {
      Value xRow = row.getDpsInputs()[0];
      params.int8X = {sliceRowsLike(rewriter, rowsInt8.codes, xRow, x),
                      sliceRowsLike(rewriter, rowsInt8.offsets, xRow, x),
                      sliceRowsLike(rewriter, rowsInt8.scales, xRow, x)};
      if (params.int8X.codes)
        params.int8Bits = int8Bits;
    }
    if (rowsOffsets)
      params.q4Offsets =
          sliceRowsLike(rewriter, rowsOffsets, row.getDpsInputs()[0], x);
    return blockColumns(rewriter, row, p, cols, params);
  }

  /// Tiles the columns by `cols` and turns each static block into the
  /// split-k form (or plainly vectorizes it when k does not split).
  LogicalResult blockColumns(RewriterBase &rewriter, linalg::LinalgOp op,
                             const tlm::ProjectionDims &p, int64_t cols,
                             const BlockParams &params) {
    SmallVector<int64_t> sizes(op.getNumLoops(), 0);
    sizes[p.n] = cols;
    FailureOr<scf::SCFTilingResult> blocked = tile(rewriter, op, sizes);
    if (failed(blocked))
      return op.emitOpError("column blocking failed");
    if (!vectorize)
      return success();
    auto block = cast<linalg::LinalgOp>(blocked->tiledOps.front());
    SmallVector<int64_t> ranges = block.getStaticLoopRanges();
    if (ShapedType::isDynamicShape(ranges))
      return success(); // a ragged last block stays scalar
    if (params.int8Bits && tlm::int8GemvApplies(block, p, params.int8Bits))
      return tlm::int8GemvBlock(rewriter, block, p, params.int8X,
                                params.int8Bits, params.overwrite,
                                params.rowPrefetch);
    if (params.q4Lanes && tlm::lookupApplies(block, p))
      return tlm::lookupBlock(rewriter, block, p, params.q4Lanes,
                              params.overwrite, params.rowPrefetch);
    if (ranges[p.k] % lanes == 0)
      return splitK(rewriter, block, p, params);
    return vectorizeOp(rewriter, block);
  }

  /// How many consecutive k steps a split-k block of reduction length `k`
  /// keeps apart, for `accumulators` vectors of its part.
  int64_t partChains(int64_t k, int64_t accumulators, bool quantized) const {
    // Too few accumulators (a one-column GEMV has one) leave the FMAs
    // waiting on each other; consecutive k steps then get their own. A
    // quantized step is a whole block: 32 / lanes products per accumulator
    // (summed before the scale), work enough to hide more of the
    // latency, so it needs fewer chains (4 at 16 lanes decoded q4_0 as fast
    // as 8, with less code).
    int64_t kSteps = k / (quantized ? tlm::kQuantBlock : lanes);
    int64_t productsPerStep = quantized ? tlm::kQuantBlock / lanes : 1;
    return accumulatorChains(accumulators * productsPerStep, kSteps, fmaChains);
  }

  /// Rewrites a static block `out[r.., c] += x[r.., k] · w[c, k]` as
  ///   part[r.., c, l] += x[r.., kb, l] · w[c, kb, l]   (k = kb·lanes + l)
  ///   out[r.., c]     += Σ_l part[r.., c, l]
  /// and vectorizes it: the kb loop then runs rows·cols independent
  /// vector<lanes> FMA chains on contiguous loads of x and w, and the
  /// horizontal sums happen once per block instead of once per k step.
  LogicalResult splitK(RewriterBase &rewriter, linalg::LinalgOp op,
                       const tlm::ProjectionDims &p,
                       const BlockParams &params) {
    Location loc = op.getLoc();
    rewriter.setInsertionPoint(op);
    unsigned nRows = p.rows.size();
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    Value zero = arith::ConstantOp::create(rewriter, loc, rewriter.getF32Type(),
                                           rewriter.getF32FloatAttr(0.0));
    // When the projection's output starts at zero, sum into a zero block
    // (registers after vectorization) and never read the output.
    Value out = op.getDpsInits()[0];
    if (params.overwrite)
      out = zeroTensor(rewriter, loc, zero,
                       cast<RankedTensorType>(out.getType()).getShape());

    // part[r.., c, [u], l]: loops (r.., c, kb, [u], l), where u keeps
    // `chains` consecutive k steps apart (plainPart, quantizedPart).
    unsigned kb = nRows + 1;
    SmallVector<int64_t> partShape;
    for (unsigned r : p.rows)
      partShape.push_back(ranges[r]);
    partShape.push_back(ranges[p.n]);
    bool quantized = tlm::quantizedSteps(op, lanes).has_value();
    int64_t chains =
        partChains(ranges[p.k], llvm::product_of(partShape), quantized);
    if (chains > 1)
      partShape.push_back(chains);
    partShape.push_back(lanes);
    int64_t summed = chains > 1 ? 2 : 1; // part's trailing dims `sum` reduces
    Value part = zeroTensor(rewriter, loc, zero, partShape);
    linalg::GenericOp partial =
        quantized ? tlm::quantizedPart(rewriter, op, p, lanes, chains, part,
                                       params.q4Offsets, params.rowPrefetch)
                  : tlm::plainPart(rewriter, op, p, lanes, chains, part);
    // The loops of `partial` stepped one at a time (its reduction).
    SmallVector<int64_t> stepLoops{kb};

    linalg::GenericOp sum =
        sumParts(rewriter, loc, partial.getResult(0), out, nRows, summed);
    rewriter.replaceOp(op, sum.getResults());

    // The reductions one step at a time; the part block is hoisted into
    // registers.
    SmallVector<int64_t> sizes(partial.getNumLoops(), 0);
    for (int64_t step : stepLoops)
      sizes[step] = 1;
    FailureOr<scf::SCFTilingResult> steps = tile(rewriter, partial, sizes);
    if (failed(steps))
      return partial.emitOpError("k-step tiling failed");
    if (failed(vectorizeOp(rewriter, steps->tiledOps.front())) ||
        failed(vectorizeOp(rewriter, sum)))
      return failure();

    if (params.overwrite && failed(vectorizeOp(rewriter, out.getDefiningOp())))
      return failure();
    return vectorizeOp(rewriter, part.getDefiningOp());
  }

  LogicalResult vectorizeOp(RewriterBase &rewriter, Operation *op) {
    if (failed(linalg::vectorizeOpPrecondition(op)))
      return op->emitOpError("cannot be vectorized");
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::VectorizationResult> v = linalg::vectorize(rewriter, op);
    if (failed(v))
      return op->emitOpError("vectorization failed");
    rewriter.replaceOp(op, v->replacements);
    return success();
  }

  /// Columns per chunk of the thread split (Strategy.h).
  int64_t threadChunk(int64_t n, int64_t cols) const {
    return tlm::threadChunk(n, cols, threads);
  }

  /// Whether every block the tiling below makes is static and goes through
  /// splitK (which then may overwrite the output): k splits into lanes and
  /// each level of column tiles divides the one above.
  bool everyBlockSplitsK(linalg::LinalgOp op, const tlm::ProjectionDims &p,
                         BlockShape shape) const {
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t n = ranges[p.n], k = ranges[p.k];
    if (!vectorize || ShapedType::isDynamic(n) || ShapedType::isDynamic(k) ||
        k % lanes != 0)
      return false;
    int64_t columns = n;
    if (threads > 1) {
      int64_t chunk = threadChunk(n, shape.cols);
      if (n % chunk != 0)
        return false;
      columns = chunk;
    }
    if (int64_t panel = panelSize(columns, shape.cols))
      columns = panel;
    return columns % shape.cols == 0 && columns % gemvColumns == 0;
  }

  /// The largest multiple of `cols` up to colPanel that divides `n`
  /// (static), or 0 when there is none or it would be all of `n`.
  int64_t panelSize(int64_t n, int64_t cols) const {
    if (ShapedType::isDynamic(n))
      return 0;
    for (int64_t panel = colPanel / cols * cols; panel >= cols; panel -= cols)
      if (n % panel == 0)
        return panel < n ? panel : 0;
    return 0;
  }

  /// The packed form's shape for `op`: with int8-dot, int8 tiles of half
  /// the rows (i32 and f32 accumulators both live) where W is q8_0 and k
  /// packs 64 at a time; f32 (or bf16-dot's) otherwise.
  tlm::PackedShape packedShape(linalg::LinalgOp op,
                               const tlm::ProjectionDims &p) const {
    tlm::PackedShape f{packRows, packCols, lanes, bf16Dot};
    if (!int8Dot)
      return f;
    tlm::PackedShape i8{std::max<int64_t>(1, packRows / 2), packCols, lanes,
                        false, true};
    std::string why = tlm::packedMismatch(op, p, i8);
    if (!why.empty()) {
      LLVM_DEBUG(llvm::dbgs() << "not int8 (" << why << "): " << op << "\n");
      return f;
    }
    return i8;
  }

  /// Whether `op` takes the packed form (PackedProjection.h): vectorized,
  /// whole panels of W in every thread's chunk of columns.
  bool usePacked(linalg::LinalgOp op, const tlm::ProjectionDims &p) const {
    if (!vectorize || !packProjections)
      return false;
    std::string why = tlm::packedMismatch(op, p, packedShape(op, p));
    if (!why.empty()) {
      LLVM_DEBUG(llvm::dbgs() << "not packed (" << why << "): " << op << "\n");
      return false;
    }
    int64_t n = op.getStaticLoopRanges()[p.n];
    return threads <= 1 || n % threadChunk(n, packCols) == 0;
  }

  /// Whether the packed form's remaining rows all become split-k GEMV
  /// blocks (so the whole projection may overwrite its output); usePacked
  /// has already checked that k splits into lanes.
  bool packedRestSplitsK() const { return packCols % gemvColumns == 0; }

  /// The packed form of `op`, its remaining rows one at a time in
  /// `1 x gemv-columns` blocks.
  LogicalResult packRest(RewriterBase &rewriter, linalg::LinalgOp op,
                         const TilePlan &plan) {
    const tlm::ProjectionDims &p = plan.p;
    if (p.rows.size() > 1) {
      // One batch row at a time: the packed form works on (rows, cols)
      // views of its operands. (Collapsing batch and sequence instead would
      // copy a thread's strided column chunk in bufferization, and
      // expand-strided-metadata crashes on expanding two dynamic dims.)
      SmallVector<int64_t> sizes(op.getNumLoops(), 0);
      for (unsigned r : ArrayRef<unsigned>(p.rows).drop_back())
        sizes[r] = 1;
      FailureOr<scf::SCFTilingResult> batches = tile(rewriter, op, sizes);
      if (failed(batches))
        return op.emitOpError("batch tiling failed");
      op = cast<linalg::LinalgOp>(batches->tiledOps.front());
    }
    linalg::LinalgOp rest;
    if (failed(tlm::packProjection(rewriter, op, p, packedShape(op, p),
                                   plan.overwrite, rest)))
      return failure();
    return gemvRows(rewriter, rest, tlm::ProjectionDims{{0}, 1, 2}, gemvColumns,
                    plan.overwrite);
  }

  /// The packed form of `op` with SwiGLU's silu(a)·b on its tiles, when its
  /// consumer is one that fits: whether it took that form.
  FailureOr<bool> fusePairedConsumer(RewriterBase &rewriter,
                                     linalg::LinalgOp op,
                                     const TilePlan &plan) {
    const tlm::ProjectionDims &p = plan.p;
    // W1/W3 (one projection over their concatenation) whose halves
    // only SwiGLU's silu(a)·b reads: that op runs on each tile's sums
    // and the projection's output is never written.
    tlm::PairedConsumer pair;
    std::string why = tlm::pairedConsumerMismatch(op, p, packCols / 2, pair);
    int64_t n = op.getStaticLoopRanges()[p.n] / 2;
    int64_t chunk = threads > 1 ? threadChunk(n, packCols / 2) : n;
    if (why.empty() && packCols / 2 != lanes)
      why = "a half panel is not one vector";
    if (why.empty() && n % chunk != 0)
      why = "the consumer's columns do not split into whole half "
            "panels per thread";
    if (!why.empty()) {
      LLVM_DEBUG(llvm::dbgs()
                 << "consumer not fused (" << why << "): " << op << "\n");
      return false;
    }
    SmallVector<linalg::LinalgOp> rests;
    tlm::packPairedProjection(rewriter, op, pair, packedShape(op, p), chunk,
                              rests);
    // A rest covers one half panel: its blocks must split it evenly
    // (a ragged block would stay scalar and add to the uninitialized
    // sums; 4 lanes make half panels of 4 columns).
    int64_t cols = std::gcd(gemvColumns.getValue(), packCols / 2);
    for (linalg::LinalgOp rest : rests)
      if (failed(gemvRows(rewriter, rest, tlm::ProjectionDims{{0}, 1, 2}, cols,
                          plan.overwrite)))
        return failure();
    return true;
  }

  /// Tiles the projection `op` as `plan` says.
  LogicalResult apply(RewriterBase &rewriter, linalg::LinalgOp op,
                      const TilePlan &plan) {
    const tlm::ProjectionDims &p = plan.p;
    if (plan.overwrite)
      dropZeroFill(rewriter, op);
    if (plan.packed && plan.overwrite && foldRMSNorm)
      op = foldNormInto(rewriter, op, p);
    if (plan.packed && plan.overwrite && fuseSwiGLU) {
      FailureOr<bool> fused = fusePairedConsumer(rewriter, op, plan);
      if (failed(fused))
        return failure();
      if (*fused)
        return success();
    }
    linalg::LinalgOp target = op;
    if (threads > 1) {
      // Columns split across threads in block-aligned chunks; the
      // forall becomes an OpenMP worksharing loop later.
      SmallVector<int64_t> sizes(op.getNumLoops(), 0);
      sizes[p.n] = threadChunk(op.getStaticLoopRanges()[p.n], plan.shape.cols);
      FailureOr<scf::SCFTilingResult> split =
          tile(rewriter, op, sizes, /*forall=*/true);
      if (failed(split))
        return failure();
      target = cast<linalg::LinalgOp>(split->tiledOps.front());
    }
    if (plan.packed)
      return packRest(rewriter, target, plan);
    // Column panels: all rows run against one panel of W (colPanel x k,
    // L2-resident) before the next, instead of streaming all of W from
    // memory once per row tile.
    int64_t panel =
        panelSize(target.getStaticLoopRanges()[p.n], plan.shape.cols);
    if (panel) {
      SmallVector<int64_t> sizes(target.getNumLoops(), 0);
      sizes[p.n] = panel;
      FailureOr<scf::SCFTilingResult> panels = tile(rewriter, target, sizes);
      if (failed(panels))
        return failure();
      target = cast<linalg::LinalgOp>(panels->tiledOps.front());
    }
    return tileRows(rewriter, target, plan);
  }

  /// `fused` with each projection over concatenated weights that will not
  /// take the packed form split back into one projection per part.
  Projections unfuseUnpacked(RewriterBase &rewriter, Projections fused) const {
    Projections work;
    for (auto &[op, p] : fused) {
      std::optional<tlm::ConcatRows> rows =
          tlm::concatRows(op.getDpsInputs()[1]);
      if (!rows || usePacked(op, p)) {
        work.emplace_back(op, p);
        continue;
      }
      LLVM_DEBUG(llvm::dbgs() << "unfused (not packed): " << op << "\n");
      // The other forms slice W at several levels, and a slice across parts
      // would copy the concatenation at every call: one projection per part.
      for (linalg::LinalgOp part :
           tlm::splitProjection(rewriter, op, rows->concat.getInputs()))
        work.emplace_back(part, p);
    }
    return work;
  }

  /// `whole` with the ragged columns of each projection split off, so that
  /// the rest tiles statically.
  Projections splitRaggedColumns(RewriterBase &rewriter,
                                 Projections whole) const {
    Projections work;
    for (auto &[op, p] : whole) {
      // Every form below tiles the columns statically: a ragged column
      // tile left its whole op scalar (GPT-2's 50257-column head decoded
      // far slower than reading its weights takes).
      SmallVector<Value> parts =
          vectorize ? tlm::raggedRowSlices(
                          rewriter, op, p,
                          std::lcm(packCols.getValue(), gemvColumns.getValue()))
                    : SmallVector<Value>();
      if (parts.empty()) {
        work.emplace_back(op, p);
        continue;
      }
      LLVM_DEBUG(llvm::dbgs() << "ragged columns split: " << op << "\n");
      for (linalg::LinalgOp part : tlm::splitProjection(rewriter, op, parts))
        work.emplace_back(part, p);
    }
    return work;
  }

  /// Emits an error on the function for the first option out of range.
  LogicalResult checkTileOptions() {
    if (failed(tlm::checkOptions(getOperation(), "tlm-tile-matmuls",
                                 {{"lanes", lanes, 1, true},
                                  {"pack-cols", packCols, 1},
                                  {"pack-rows", packRows, 1},
                                  {"gemv-columns", gemvColumns, 1},
                                  {"fma-chains", fmaChains, 1},
                                  {"prefetch-distance", prefetchDistance, 1},
                                  {"row-tile", rowTile, 1},
                                  {"col-tile", colTile, 1},
                                  {"col-panel", colPanel, 0},
                                  {"x-tile-bytes", xTileBytes, 1},
                                  {"threads", threads, 1}})))
      return failure();
    if (packCols % lanes != 0) {
      getOperation()->emitError()
          << "tlm-tile-matmuls: pack-cols (" << static_cast<int64_t>(packCols)
          << ") must be a multiple of lanes (" << static_cast<int64_t>(lanes)
          << ")";
      return failure();
    }
    if (int8Dot && (lanes != 16 || bf16Dot)) {
      getOperation()->emitError()
          << "tlm-tile-matmuls: int8-dot needs lanes=16 (AVX512-VNNI's "
             "vpdpbusd) and not bf16-dot";
      return failure();
    }
    if (bf16Dot && lanes != 16) {
      getOperation()->emitError()
          << "tlm-tile-matmuls: bf16-dot needs lanes=16 (AVX-512's "
             "vdpbf16ps), found lanes="
          << static_cast<int64_t>(lanes);
      return failure();
    }
    return success();
  }

  void runOnOperation() override {
    if (failed(checkTileOptions()))
      return signalPassFailure();
    func::FuncOp func = getOperation();
    Projections work = collectProjections(func);
    IRRewriter rewriter(&getContext());
    work = unfuseUnpacked(rewriter, std::move(work));
    work = splitRaggedColumns(rewriter, std::move(work));
    for (auto &[op, p] : work)
      if (failed(apply(rewriter, op, planTiling(op, p))))
        return signalPassFailure();
    if (failed(foldAndHoist(func, rewriter)))
      return signalPassFailure();
    contractAccumulatingAdds(func);
  }
};

} // namespace
