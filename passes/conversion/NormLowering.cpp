//===- NormLowering.cpp - row-wise ops to linalg --------------------------===//
//
// Ops that reduce along the last dim and then rescale it: tlm.rmsnorm,
// tlm.softmax, tlm.cross_entropy, and the elementwise tlm.silu.
//
//===----------------------------------------------------------------------===//

#include "dialect/TlmDialect.h"
#include "passes/common/Builders.h"
#include "passes/common/Recompute.h"
#include "passes/conversion/PopulatePatterns.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::tlm;

namespace {

/// rms = sqrt(Σ x² / d + eps) per row (f32), the forward's and the
/// backward's alike, so CSE keeps one when both are in a function.
Value rmsOf(OpBuilder &b, Location loc, Value x, double epsValue) {
  Type f32 = b.getF32Type();
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  Value sumSq = reduceLastDim(
      b, loc, x, f32, 0.0, [&](OpBuilder &nb, Location l, ValueRange a) {
        Value v = castFloat(nb, l, a[0], f32);
        Value sq = arith::MulFOp::create(nb, l, v, v);
        return arith::AddFOp::create(nb, l, sq, a[1]).getResult();
      });
  Value d = dimAsFloat(b, loc, x, rank - 1, f32);
  Value eps = floatConst(b, loc, f32, epsValue);
  return elementwise(b, loc, ValueRange{sumSq}, f32,
                     [&](OpBuilder &nb, Location l, ValueRange a) {
                       Value mean = arith::DivFOp::create(nb, l, a[0], d);
                       return math::SqrtOp::create(
                                  nb, l, arith::AddFOp::create(nb, l, mean, eps))
                           .getResult();
                     });
}

/// y = x / rms · g, with rmsOf's rms. (rms is a tensor of its own so that tlm-tile-matmuls can
/// fold the scaling into the projection that reads y.)
struct LowerRMSNorm : OpRewritePattern<RMSNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RMSNormOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getInput();
    auto type = op.getInput().getType();
    int64_t rank = type.getRank();
    Type elem = type.getElementType();
    Type f32 = rewriter.getF32Type();

    Value rms = rmsOf(rewriter, loc, x, op.getEps().convertToDouble());

    AffineMap id = rewriter.getMultiDimIdentityMap(rank);
    AffineMap row = id.dropResult(rank - 1);
    AffineMap last =
        AffineMap::get(rank, 0, rewriter.getAffineDimExpr(rank - 1));
    Value init = emptyTensor(rewriter, loc, sizesOf(rewriter, loc, x), elem);
    SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{init.getType()},
        ValueRange{x, rms, op.getWeight()}, ValueRange{init},
        ArrayRef<AffineMap>{id, row, last, id}, iters,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value n =
              arith::DivFOp::create(b, l, castFloat(b, l, a[0], f32), a[1]);
          Value y = arith::MulFOp::create(b, l, n, castFloat(b, l, a[2], f32));
          linalg::YieldOp::create(b, l, castFloat(b, l, y, elem));
        });
    // The backward's copy (tlm-build-train-step): rms is the forward's, the
    // scaling its own.
    if (op->hasAttr(kRecomputeAttr))
      recomputed(generic.getResult(0));
    rewriter.replaceOp(
        op, castTo(rewriter, loc, generic.getResult(0), op.getType()));
    return success();
  }
};

struct LowerSoftmax : OpRewritePattern<SoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SoftmaxOp op,
                                PatternRewriter &rewriter) const override {
    Value y = softmaxLastDim(rewriter, op.getLoc(), op.getInput());
    rewriter.replaceOp(op, castTo(rewriter, op.getLoc(), y, op.getType()));
    return success();
  }
};

struct LowerSiLU : OpRewritePattern<SiLUOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SiLUOp op,
                                PatternRewriter &rewriter) const override {
    Value y = elementwise(rewriter, op.getLoc(), ValueRange{op.getInput()},
                          op.getType().getElementType(),
                          [](OpBuilder &b, Location l, ValueRange a) {
                            return siluScalar(b, l, a[0]);
                          });
    rewriter.replaceOp(op, castTo(rewriter, op.getLoc(), y, op.getType()));
    return success();
  }
};

/// The row max (f32) and Σ exp(x − max) of each row of `logits`: the
/// cross-entropy's logsumexp is max + log(sum). Shared by the loss and its
/// gradient, which CSE then computes once.
std::pair<Value, Value> logSumExpParts(OpBuilder &b, Location loc,
                                       Value logits) {
  int64_t rank = cast<RankedTensorType>(logits.getType()).getRank();
  Type f32 = b.getF32Type();
  double negInf = -std::numeric_limits<double>::infinity();
  Value rowMax = reduceLastDim(
      b, loc, logits, f32, negInf, [&](OpBuilder &nb, Location l, ValueRange a) {
        return arith::MaximumFOp::create(nb, l, castFloat(nb, l, a[0], f32),
                                         a[1])
            .getResult();
      });
  AffineMap id = b.getMultiDimIdentityMap(rank);
  AffineMap row = id.dropResult(rank - 1);
  SmallVector<OpFoldResult> rowSizes = sizesOf(b, loc, logits);
  rowSizes.pop_back();
  SmallVector<utils::IteratorType> redIters(rank,
                                            utils::IteratorType::parallel);
  redIters.back() = utils::IteratorType::reduction;
  Value sum0 = filledTensor(b, loc, rowSizes, f32, 0.0);
  Value rowSum = genericOp(
      b, loc, ValueRange{logits, rowMax}, sum0, {id, row, row}, redIters,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value d = arith::SubFOp::create(nb, l, castFloat(nb, l, a[0], f32), a[1]);
        Value e = math::ExpOp::create(nb, l, d);
        return arith::AddFOp::create(nb, l, e, a[2]).getResult();
      });
  return {rowMax, rowSum};
}

/// The number of rows of `x` (every dim but the last) as an f32.
Value rowCount(OpBuilder &b, Location loc, Value x) {
  Type f32 = b.getF32Type();
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  Value count = floatConst(b, loc, f32, 1.0);
  for (int64_t i = 0; i + 1 < rank; ++i)
    count =
        arith::MulFOp::create(b, loc, count, dimAsFloat(b, loc, x, i, f32));
  return count;
}

/// Per row: logsumexp(row) - row[target], computed as
/// max + log(Σ exp(x - max)) - x[target]; then the mean over every row.
struct LowerCrossEntropy : OpRewritePattern<CrossEntropyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CrossEntropyOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value logits = op.getLogits(), targets = op.getTargets();
    auto type = op.getLogits().getType();
    int64_t rank = type.getRank();
    Type elem = type.getElementType();
    Type f32 = rewriter.getF32Type();
    auto [rowMax, rowSum] = logSumExpParts(rewriter, loc, logits);

    // Sum of the per-row losses into a 0-d f32 accumulator.
    int64_t rows = rank - 1;
    AffineMap all = rewriter.getMultiDimIdentityMap(rows);
    AffineMap scalar = AffineMap::get(rows, 0, rewriter.getContext());
    Value total0 = filledTensor(rewriter, loc, {}, f32, 0.0);
    SmallVector<utils::IteratorType> allRed(rows,
                                            utils::IteratorType::reduction);
    Value total =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{total0.getType()},
            ValueRange{targets, rowMax, rowSum}, ValueRange{total0},
            ArrayRef<AffineMap>{all, all, all, scalar}, allRed,
            [&](OpBuilder &b, Location l, ValueRange a) {
              SmallVector<Value> idx;
              for (int64_t i = 0; i < rows; ++i)
                idx.push_back(linalg::IndexOp::create(b, l, i));
              idx.push_back(castFloat(b, l, a[0], b.getIndexType()));
              Value picked = castFloat(
                  b, l, tensor::ExtractOp::create(b, l, logits, idx), f32);
              Value lse = arith::AddFOp::create(
                  b, l, math::LogOp::create(b, l, a[2]), a[1]);
              Value loss = arith::SubFOp::create(b, l, lse, picked);
              linalg::YieldOp::create(
                  b, l, ValueRange{arith::AddFOp::create(b, l, loss, a[3])});
            })
            .getResult(0);

    // Mean: divide by the number of rows.
    Value count = rowCount(rewriter, loc, logits);
    Value mean = elementwise(rewriter, loc, ValueRange{total}, elem,
                             [&](OpBuilder &b, Location l, ValueRange a) {
                               Value m =
                                   arith::DivFOp::create(b, l, a[0], count);
                               return castFloat(b, l, m, elem);
                             });
    rewriter.replaceOp(op, castTo(rewriter, loc, mean, op.getType()));
    return success();
  }
};

/// dlogits = dl · (exp(x − max) / sum − onehot(target)) / N, from the
/// loss's own row max and sum.
struct LowerCrossEntropyGrad : OpRewritePattern<CrossEntropyGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CrossEntropyGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Value logits = op.getLogits();
    int64_t rank = op.getLogits().getType().getRank();
    auto [rowMax, rowSum] = logSumExpParts(b, loc, logits);
    Value count = rowCount(b, loc, logits);
    AffineMap id = b.getMultiDimIdentityMap(rank);
    AffineMap row = id.dropResult(rank - 1);
    AffineMap scalar = AffineMap::get(rank, 0, b.getContext());
    SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
    Type f32 = b.getF32Type();
    Value init = emptyTensor(b, loc, sizesOf(b, loc, logits), f32);
    Value grad = genericOp(
        b, loc, ValueRange{logits, rowMax, rowSum, op.getTargets(), op.getGrad()},
        init, {id, row, row, row, scalar, id}, iters,
        [&](OpBuilder &nb, Location l, ValueRange a) {
          Value e = math::ExpOp::create(
              nb, l, arith::SubFOp::create(nb, l, a[0], a[1]));
          Value p = arith::DivFOp::create(nb, l, e, a[2]);
          Value k = linalg::IndexOp::create(nb, l, rank - 1);
          Value hit = arith::CmpIOp::create(
              nb, l, arith::CmpIPredicate::eq, k,
              castFloat(nb, l, a[3], nb.getIndexType()));
          Value one = floatConst(nb, l, f32, 1.0);
          Value zero = floatConst(nb, l, f32, 0.0);
          Value d = arith::SubFOp::create(
              nb, l, p, arith::SelectOp::create(nb, l, hit, one, zero));
          Value scaled = arith::MulFOp::create(nb, l, d, a[4]);
          return arith::DivFOp::create(nb, l, scaled, count).getResult();
        });
    rewriter.replaceOp(op, castTo(b, loc, grad, op.getType()));
    return success();
  }
};

/// With x̂ = x / rms: dg = Σ_rows dy·x̂, m = mean(dy·g·x̂) per row, and
/// dx = (dy·g − x̂·m) / rms; rms is the forward's (rmsOf).
struct LowerRMSNormGrad : OpRewritePattern<RMSNormGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RMSNormGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Value x = op.getInput(), g = op.getWeight(), dy = op.getGrad();
    int64_t rank = op.getInput().getType().getRank();
    Type f32 = b.getF32Type();
    Value rms = rmsOf(b, loc, x, op.getEps().convertToDouble());
    AffineMap id = b.getMultiDimIdentityMap(rank);
    AffineMap row = id.dropResult(rank - 1);
    AffineMap last = AffineMap::get(rank, 0, b.getAffineDimExpr(rank - 1));
    SmallVector<utils::IteratorType> par(rank, utils::IteratorType::parallel);
    SmallVector<utils::IteratorType> red(par);
    red.back() = utils::IteratorType::reduction;
    SmallVector<OpFoldResult> sizes = sizesOf(b, loc, x);
    Value xh = genericOp(b, loc, ValueRange{x, rms},
                         emptyTensor(b, loc, sizes, f32), {id, row, id}, par,
                         [](OpBuilder &nb, Location l, ValueRange a) {
                           return arith::DivFOp::create(nb, l, a[0], a[1])
                               .getResult();
                         });
    Value dg = contraction(
        b, loc, dy, xh, filledTensor(b, loc, {sizes.back()}, f32, 0.0),
        {id, id, last});
    SmallVector<OpFoldResult> rowSizes(sizes.begin(), sizes.end() - 1);
    Value d = dimAsFloat(b, loc, x, rank - 1, f32);
    Value dot = genericOp(
        b, loc, ValueRange{dy, g, xh}, filledTensor(b, loc, rowSizes, f32, 0.0),
        {id, last, id, row}, red, [](OpBuilder &nb, Location l, ValueRange a) {
          Value u = arith::MulFOp::create(nb, l, a[0], a[1]);
          Value p = arith::MulFOp::create(nb, l, u, a[2]);
          return arith::AddFOp::create(nb, l, a[3], p).getResult();
        });
    Value dx = genericOp(
        b, loc, ValueRange{dy, g, xh, dot, rms},
        emptyTensor(b, loc, sizes, f32), {id, last, id, row, row, id}, par,
        [&](OpBuilder &nb, Location l, ValueRange a) {
          Value u = arith::MulFOp::create(nb, l, a[0], a[1]);
          Value m = arith::DivFOp::create(nb, l, a[3], d);
          Value c = arith::SubFOp::create(
              nb, l, u, arith::MulFOp::create(nb, l, a[2], m));
          return arith::DivFOp::create(nb, l, c, a[4]).getResult();
        });
    rewriter.replaceOp(
        op, {castTo(b, loc, dx, op.getInputGrad().getType()),
             castTo(b, loc, dg, op.getWeightGrad().getType())});
    return success();
  }
};

} // namespace

void tlm::populateNormLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerRMSNorm, LowerSoftmax, LowerSiLU, LowerCrossEntropy,
               LowerCrossEntropyGrad, LowerRMSNormGrad>(patterns.getContext());
}
