//===- NormLowering.cpp - row-wise ops to linalg --------------------------===//
//
// Ops that reduce along the last dim and then rescale it: tlm.rmsnorm,
// tlm.softmax, tlm.cross_entropy, and the elementwise tlm.silu.
//
//===----------------------------------------------------------------------===//

#include "dialect/TlmDialect.h"
#include "passes/common/Builders.h"
#include "passes/conversion/PopulatePatterns.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::tlm;

namespace {

/// sumsq = Σ x² (f32), rms = sqrt(sumsq / d + eps) per row, then
/// y = x / rms · g. (rms is a tensor of its own so that tlm-tile-matmuls can
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

    Value sumSq = reduceLastDim(
        rewriter, loc, x, f32, 0.0,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value v = castFloat(b, l, a[0], f32);
          Value sq = arith::MulFOp::create(b, l, v, v);
          return arith::AddFOp::create(b, l, sq, a[1]).getResult();
        });
    Value d = dimAsFloat(rewriter, loc, x, rank - 1, f32);
    Value eps = floatConst(rewriter, loc, f32, op.getEps().convertToDouble());

    Value rms =
        elementwise(rewriter, loc, ValueRange{sumSq}, f32,
                    [&](OpBuilder &b, Location l, ValueRange a) {
                      Value mean = arith::DivFOp::create(b, l, a[0], d);
                      return math::SqrtOp::create(
                                 b, l, arith::AddFOp::create(b, l, mean, eps))
                          .getResult();
                    });

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
    double negInf = -std::numeric_limits<double>::infinity();

    Value rowMax =
        reduceLastDim(rewriter, loc, logits, f32, negInf,
                      [&](OpBuilder &b, Location l, ValueRange a) {
                        return arith::MaximumFOp::create(
                                   b, l, castFloat(b, l, a[0], f32), a[1])
                            .getResult();
                      });
    AffineMap id = rewriter.getMultiDimIdentityMap(rank);
    AffineMap row = id.dropResult(rank - 1);
    SmallVector<OpFoldResult> rowSizes = sizesOf(rewriter, loc, logits);
    rowSizes.pop_back();
    SmallVector<utils::IteratorType> redIters(rank,
                                              utils::IteratorType::parallel);
    redIters.back() = utils::IteratorType::reduction;
    Value sum0 = filledTensor(rewriter, loc, rowSizes, f32, 0.0);
    Value rowSum =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{sum0.getType()},
            ValueRange{logits, rowMax}, ValueRange{sum0},
            ArrayRef<AffineMap>{id, row, row}, redIters,
            [&](OpBuilder &b, Location l, ValueRange a) {
              Value d =
                  arith::SubFOp::create(b, l, castFloat(b, l, a[0], f32), a[1]);
              Value e = math::ExpOp::create(b, l, d);
              linalg::YieldOp::create(
                  b, l, ValueRange{arith::AddFOp::create(b, l, e, a[2])});
            })
            .getResult(0);

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
    Value count = floatConst(rewriter, loc, f32, 1.0);
    for (int64_t i = 0; i < rows; ++i)
      count = arith::MulFOp::create(rewriter, loc, count,
                                    dimAsFloat(rewriter, loc, logits, i, f32));
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

} // namespace

void tlm::populateNormLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerRMSNorm, LowerSoftmax, LowerSiLU, LowerCrossEntropy>(
      patterns.getContext());
}
