//===- LinearLowering.cpp - linear, embedding and FFN to linalg -----------===//
//
// The ops whose work is matrix products or table reads: tlm.linear,
// tlm.swiglu, tlm.silu_ffn and tlm.embedding, the weights they may read
// through tlm.dequantize, and the gradients of the four.
//
//===----------------------------------------------------------------------===//

#include "dialect/TlmDialect.h"
#include "passes/common/Builders.h"
#include "passes/common/Quantized.h"
#include "passes/common/Recompute.h"
#include "passes/conversion/PopulatePatterns.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
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

//===----------------------------------------------------------------------===//
// Gradients
//===----------------------------------------------------------------------===//

/// Wᵀ as a tensor of its own: (k, n) for W (n, k).
Value transposed(OpBuilder &b, Location loc, Value w) {
  SmallVector<OpFoldResult> sizes = sizesOf(b, loc, w);
  std::swap(sizes[0], sizes[1]);
  Value init = emptyTensor(
      b, loc, sizes, cast<RankedTensorType>(w.getType()).getElementType());
  return linalg::TransposeOp::create(b, loc, w, init, ArrayRef<int64_t>{1, 0})
      .getResult()[0];
}

/// `x` with its leading dims (all but the last `keep`) collapsed into one,
/// or a unit dim added when it has none.
Value collapseLeading(OpBuilder &b, Location loc, Value x, int64_t keep) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank(), lead = rank - keep;
  SmallVector<ReassociationIndices> groups;
  if (lead == 0) {
    // (d...) -> (1, d...): the unit dim joins the first kept one.
    SmallVector<int64_t> shape{1};
    llvm::append_range(shape, type.getShape());
    for (int64_t i = 0; i < rank; ++i)
      groups.push_back(i == 0 ? ReassociationIndices{0, 1}
                              : ReassociationIndices{i + 1});
    if (rank == 0)
      groups.clear();
    return tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(shape, type.getElementType()), x,
        groups);
  }
  ReassociationIndices first;
  for (int64_t i = 0; i < lead; ++i)
    first.push_back(i);
  groups.push_back(first);
  for (int64_t i = lead; i < rank; ++i)
    groups.push_back({i});
  return tensor::CollapseShapeOp::create(b, loc, x, groups);
}

/// dx (rows..., k) = dy (rows..., n) · W (n, k): the forward's projection
/// of dy by Wᵀ (one transpose of the weight), so it takes the CPU's tiled
/// matmul path as the forward does.
Value inputGrad(OpBuilder &b, Location loc, Value dy, Value w) {
  return projection(b, loc, dy, transposed(b, loc, w));
}

/// dW (n, k) = Σ_rows dy (rows..., n) · x (rows..., k): the rows collapsed
/// into one dim R, then the projection of dyᵀ (n, R) by xᵀ (k, R), the
/// rows being its reduction; a matmul of static sizes when the batch is.
Value weightGrad(OpBuilder &b, Location loc, Value dy, Value x) {
  auto rows = [&](Value v) {
    return cast<RankedTensorType>(v.getType()).getRank() > 2
               ? collapseLeading(b, loc, v, 1)
               : v;
  };
  return projection(b, loc, transposed(b, loc, rows(dy)),
                    transposed(b, loc, rows(x)));
}

struct LowerLinearGrad : OpRewritePattern<LinearGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LinearGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value dx = inputGrad(rewriter, loc, op.getGrad(), op.getWeight());
    Value dw = weightGrad(rewriter, loc, op.getGrad(), op.getInput());
    rewriter.replaceOp(
        op, {castTo(rewriter, loc, dx, op.getInputGrad().getType()),
             castTo(rewriter, loc, dw, op.getWeightGrad().getType())});
    return success();
  }
};

/// SiLU'(a) = σ(a) · (1 + a · (1 − σ(a))).
Value siluDerivative(OpBuilder &b, Location loc, Value a) {
  Value one = floatConst(b, loc, a.getType(), 1.0);
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, a));
  Value sig =
      arith::DivFOp::create(b, loc, one, arith::AddFOp::create(b, loc, one, e));
  Value rest = arith::MulFOp::create(b, loc, a,
                                     arith::SubFOp::create(b, loc, one, sig));
  return arith::MulFOp::create(b, loc, sig,
                               arith::AddFOp::create(b, loc, one, rest));
}

/// The FFNs' gradients (docs/training.md): a = x·W1ᵀ and b = x·W3ᵀ are the
/// forward's own ops again (CSE merges them with the forward's), the gate
/// product h = SiLU(a)·b too unless `recompute` (Recompute.h), then
/// dW2 = dyᵀ·h, dh = dy·W2, da, db, dW1, dW3, and dx = da·W1 + db·W3.
SmallVector<Value> lowerFFNGrad(OpBuilder &b, Location loc, Value dy, Value x,
                                Value w1, Value w2, Value w3, bool recompute) {
  Type f32 = b.getF32Type();
  Value a = projection(b, loc, x, w1);
  Value gate = w3 ? projection(b, loc, x, w3) : Value();
  SmallVector<Value> hIn{a};
  if (gate)
    hIn.push_back(gate);
  Value h = elementwise(b, loc, hIn, f32,
                        [&](OpBuilder &nb, Location nl, ValueRange v) {
                          Value s = siluScalar(nb, nl, v[0]);
                          return gate ? arith::MulFOp::create(nb, nl, s, v[1])
                                            .getResult()
                                      : s;
                        });
  if (recompute)
    recomputed(h);
  Value dw2 = weightGrad(b, loc, dy, h);
  Value dh = inputGrad(b, loc, dy, w2);
  SmallVector<Value> daIn{dh, a};
  if (gate)
    daIn.push_back(gate);
  Value da = elementwise(b, loc, daIn, f32,
                         [&](OpBuilder &nb, Location nl, ValueRange v) {
                           Value d = arith::MulFOp::create(
                               nb, nl, v[0], siluDerivative(nb, nl, v[1]));
                           return gate ? arith::MulFOp::create(nb, nl, d, v[2])
                                             .getResult()
                                       : d;
                         });
  Value dx = inputGrad(b, loc, da, w1);
  SmallVector<Value> grads{dx, weightGrad(b, loc, da, x), dw2};
  if (gate) {
    Value db = elementwise(b, loc, ValueRange{dh, a}, f32,
                           [](OpBuilder &nb, Location nl, ValueRange v) {
                             return arith::MulFOp::create(
                                        nb, nl, v[0], siluScalar(nb, nl, v[1]))
                                 .getResult();
                           });
    grads[0] = elementwise(b, loc, ValueRange{dx, inputGrad(b, loc, db, w3)},
                           f32, [](OpBuilder &nb, Location nl, ValueRange v) {
                             return arith::AddFOp::create(nb, nl, v[0], v[1])
                                 .getResult();
                           });
    grads.push_back(weightGrad(b, loc, db, x));
  }
  return grads;
}

template <typename GradOp>
struct LowerFFNGrad : OpRewritePattern<GradOp> {
  using OpRewritePattern<GradOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(GradOp op,
                                PatternRewriter &rewriter) const override {
    Value w3;
    if constexpr (std::is_same_v<GradOp, SwiGLUGradOp>)
      w3 = op.getW3();
    SmallVector<Value> grads =
        lowerFFNGrad(rewriter, op.getLoc(), op.getGrad(), op.getInput(),
                     op.getW1(), op.getW2(), w3,
                     op->hasAttr(kRecomputeAttr));
    for (auto [v, r] : llvm::zip(grads, op->getResults()))
      v = castTo(rewriter, op.getLoc(), v, r.getType());
    rewriter.replaceOp(op, grads);
    return success();
  }
};

/// A zero table, then row ids[n] += dy[n] for n in order: an scf.for whose
/// rows are slices of the table updated in place, so repeated ids add up in
/// the same order on every run.
struct LowerEmbeddingGrad : OpRewritePattern<EmbeddingGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(EmbeddingGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    auto tableType = op.getTableGrad().getType();
    if (tableType.isDynamicDim(1))
      return rewriter.notifyMatchFailure(op, "needs a static d_model");
    int64_t d = tableType.getDimSize(1);
    Value ids = collapseLeading(b, loc, op.getIds(), 0);
    Value dy = collapseLeading(b, loc, op.getGrad(), 1);
    Value table = filledTensor(b, loc, sizesOf(b, loc, op.getTableGrad()),
                               b.getF32Type(), 0.0);
    auto rowType = RankedTensorType::get({d}, b.getF32Type());
    Value count = tensor::DimOp::create(b, loc, ids, 0);
    auto loop = scf::ForOp::create(
        b, loc, index(b, loc, 0), count, index(b, loc, 1), ValueRange{table},
        [&](OpBuilder &nb, Location nl, Value n, ValueRange iter) {
          Value id = castFloat(
              nb, nl, tensor::ExtractOp::create(nb, nl, ids, ValueRange{n}),
              nb.getIndexType());
          SmallVector<OpFoldResult> sizes{nb.getIndexAttr(1),
                                          nb.getIndexAttr(d)};
          SmallVector<OpFoldResult> strides(2, nb.getIndexAttr(1));
          SmallVector<OpFoldResult> at{id, nb.getIndexAttr(0)};
          Value row = tensor::ExtractSliceOp::create(nb, nl, rowType, iter[0],
                                                     at, sizes, strides);
          Value g = tensor::ExtractSliceOp::create(
              nb, nl, rowType, dy,
              ArrayRef<OpFoldResult>{n, nb.getIndexAttr(0)}, sizes, strides);
          AffineMap id1 = nb.getMultiDimIdentityMap(1);
          Value sum = genericOp(
              nb, nl, ValueRange{g}, row, {id1, id1},
              {utils::IteratorType::parallel},
              [](OpBuilder &bb, Location bl, ValueRange v) {
                return arith::AddFOp::create(bb, bl, v[1], v[0]).getResult();
              });
          Value updated = tensor::InsertSliceOp::create(nb, nl, sum, iter[0],
                                                        at, sizes, strides);
          scf::YieldOp::create(nb, nl, updated);
        });
    rewriter.replaceOp(op, castTo(b, loc, loop.getResult(0), tableType));
    return success();
  }
};

} // namespace

void tlm::populateLinearLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerLinear, LowerSwiGLU, LowerSiLUFFN, LowerEmbedding,
               LowerDequantize, LowerLinearGrad, LowerFFNGrad<SwiGLUGradOp>,
               LowerFFNGrad<SiLUFFNGradOp>, LowerEmbeddingGrad>(
      patterns.getContext());
}
