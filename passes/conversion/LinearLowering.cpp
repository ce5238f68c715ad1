//===- LinearLowering.cpp - linear, embedding and FFN to linalg -----------===//
//
// The ops whose work is matrix products or table reads: tlm.linear,
// tlm.swiglu, tlm.silu_ffn and tlm.embedding, and the weights they may
// read through tlm.dequantize.
//
//===----------------------------------------------------------------------===//

#include "dialect/TlmDialect.h"
#include "passes/common/Builders.h"
#include "passes/common/Quantized.h"
#include "passes/conversion/PopulatePatterns.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::tlm;

namespace {

struct LowerLinear : OpRewritePattern<LinearOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LinearOp op,
                                PatternRewriter &rewriter) const override {
    Value y = projection(rewriter, op.getLoc(), op.getInput(), op.getWeight());
    rewriter.replaceOp(op, castTo(rewriter, op.getLoc(), y, op.getType()));
    return success();
  }
};

/// y = W2 · (SiLU(W1 x) ⊙ W3 x), or W2 · SiLU(W1 x) without W3.
Value lowerFFN(OpBuilder &b, Location loc, Value x, Value w1, Value w2,
               Value w3) {
  Value h1 = projection(b, loc, x, w1);
  Type elem = cast<RankedTensorType>(h1.getType()).getElementType();
  Value act;
  if (w3) {
    Value h3 = projection(b, loc, x, w3);
    act =
        elementwise(b, loc, ValueRange{h1, h3}, elem,
                    [](OpBuilder &nb, Location nl, ValueRange a) {
                      Value s = siluScalar(nb, nl, a[0]);
                      return arith::MulFOp::create(nb, nl, s, a[1]).getResult();
                    });
  } else {
    act = elementwise(b, loc, ValueRange{h1}, elem,
                      [](OpBuilder &nb, Location nl, ValueRange a) {
                        return siluScalar(nb, nl, a[0]);
                      });
  }
  return projection(b, loc, act, w2);
}

struct LowerSwiGLU : OpRewritePattern<SwiGLUOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SwiGLUOp op,
                                PatternRewriter &rewriter) const override {
    Value y = lowerFFN(rewriter, op.getLoc(), op.getInput(), op.getW1(),
                       op.getW2(), op.getW3());
    rewriter.replaceOp(op, castTo(rewriter, op.getLoc(), y, op.getType()));
    return success();
  }
};

struct LowerSiLUFFN : OpRewritePattern<SiLUFFNOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SiLUFFNOp op,
                                PatternRewriter &rewriter) const override {
    Value y = lowerFFN(rewriter, op.getLoc(), op.getInput(), op.getW1(),
                       op.getW2(), Value());
    rewriter.replaceOp(op, castTo(rewriter, op.getLoc(), y, op.getType()));
    return success();
  }
};

struct LowerDequantize : OpRewritePattern<DequantizeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(DequantizeOp op,
                                PatternRewriter &rewriter) const override {
    Dequantized d{op.getValues(), op.getScales(),
                  static_cast<int64_t>(op.getBits())};
    rewriter.replaceOp(op, buildDequantize(rewriter, op.getLoc(), d,
                                           op.getResult().getType()));
    return success();
  }
};

/// A generic over the result `(ids..., d)` whose body reads table[id, d]
/// (from a quantized table's codes, so only the rows read are widened).
struct LowerEmbedding : OpRewritePattern<EmbeddingOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(EmbeddingOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = op.getResult().getType();
    int64_t rank = resultType.getRank();
    SmallVector<OpFoldResult> sizes = sizesOf(rewriter, loc, op.getIds());
    sizes.push_back(
        rewriter.getIndexAttr(op.getTable().getType().getDimSize(1)));
    Value init = emptyTensor(rewriter, loc, sizes, resultType.getElementType());
    AffineMap out = rewriter.getMultiDimIdentityMap(rank);
    AffineMap ids = out.dropResult(rank - 1);
    SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
    Value table = op.getTable();
    std::optional<Dequantized> codes = matchDequantized(table);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{init.getType()}, ValueRange{op.getIds()},
        ValueRange{init}, ArrayRef<AffineMap>{ids, out}, iters,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value row = castFloat(b, l, args[0], b.getIndexType());
          Value col = linalg::IndexOp::create(b, l, rank - 1);
          Value v = codes ? dequantizeAt(b, l, *codes, row, col)
                          : tensor::ExtractOp::create(b, l, table,
                                                      ValueRange{row, col})
                                .getResult();
          // A bf16 or f16 table is widened as its row is read.
          linalg::YieldOp::create(
              b, l, castFloat(b, l, v, resultType.getElementType()));
        });
    rewriter.replaceOp(op,
                       castTo(rewriter, loc, generic.getResult(0), resultType));
    return success();
  }
};

} // namespace

void tlm::populateLinearLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerLinear, LowerSwiGLU, LowerSiLUFFN, LowerEmbedding,
               LowerDequantize>(patterns.getContext());
}
