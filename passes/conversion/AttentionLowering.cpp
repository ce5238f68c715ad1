//===- AttentionLowering.cpp - RoPE and attention to linalg ---------------===//
//
// tlm.rope, tlm.sdpa, tlm.attention and tlm.cached_attention. The attention
// ops share one core: a scores generic (Q·Kᵀ accumulated in f32), a
// masking/scaling generic, the softmax of Builders.h, and a P·V generic.
// Layouts and GQA live entirely in the indexing maps, so no transposes or K/V
// copies are materialised. (On the CPU, tlm-fuse-attention takes the f32
// cached attention first.)
//
//===----------------------------------------------------------------------===//

#include "dialect/TlmDialect.h"
#include "passes/common/AttentionParts.h"
#include "passes/common/Builders.h"
#include "passes/conversion/AttentionCore.h"
#include "passes/conversion/AttentionHeads.h"
#include "passes/conversion/PopulatePatterns.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>
#include <limits>
#include <tuple>

using namespace mlir;
using namespace mlir::tlm;

using utils::IteratorType;

/// The reduction iterators shared by the scores and P·V generics: all
/// parallel but the innermost loop.
static SmallVector<IteratorType> contractionIters(int64_t loops) {
  SmallVector<IteratorType> iters(loops, IteratorType::parallel);
  iters.back() = IteratorType::reduction;
  return iters;
}

/// scores[batch..., i, j] = Σ_d q·k in f32, over `sizes` (batch..., Sq, Sk).
Value tlm::scoresOf(OpBuilder &b, Location loc, Value q, Value k, AffineMap qMap,
               AffineMap kMap, ArrayRef<OpFoldResult> sizes) {
  Type f32 = b.getF32Type();
  int64_t loops = qMap.getNumDims();
  Value init = filledTensor(b, loc, sizes, f32, 0.0);
  AffineMap sMap = b.getMultiDimIdentityMap(loops).dropResult(loops - 1);
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, ValueRange{q, k},
             ValueRange{init}, ArrayRef<AffineMap>{qMap, kMap, sMap},
             contractionIters(loops),
             [&](OpBuilder &nb, Location nl, ValueRange a) {
               Value p =
                   arith::MulFOp::create(nb, nl, castFloat(nb, nl, a[0], f32),
                                         castFloat(nb, nl, a[1], f32));
               linalg::YieldOp::create(
                   nb, nl, ValueRange{arith::AddFOp::create(nb, nl, p, a[2])});
             })
      .getResult(0);
}

/// Scales the scores by 1/sqrt(d) and sets hidden ones to -inf: where
/// `mask` (scores-shaped) is zero, or, when `causal`, where key j lies after
/// query i + (Sk - Sq).
Value tlm::scaleAndMask(OpBuilder &b, Location loc, Value scores, int64_t headDim,
                   Value mask, bool causal) {
  Type f32 = b.getF32Type();
  auto type = cast<RankedTensorType>(scores.getType());
  int64_t iDim = type.getRank() - 2;
  Value scale = floatConst(b, loc, f32, 1.0 / std::sqrt(double(headDim)));
  Value offset;
  if (causal) {
    Value sq = tensor::DimOp::create(b, loc, scores, iDim);
    Value sk = tensor::DimOp::create(b, loc, scores, iDim + 1);
    offset = arith::SubIOp::create(b, loc, sk, sq);
  }
  SmallVector<Value> inputs{scores};
  if (mask)
    inputs.push_back(mask);
  return elementwise(
      b, loc, inputs, f32, [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value s = arith::MulFOp::create(nb, nl, a[0], scale);
        Value visible;
        if (mask) {
          Value zero =
              arith::ConstantOp::create(nb, nl, nb.getZeroAttr(a[1].getType()));
          visible = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ne,
                                          a[1], zero);
        } else if (causal) {
          Value i = linalg::IndexOp::create(nb, nl, iDim);
          Value j = linalg::IndexOp::create(nb, nl, iDim + 1);
          Value last = arith::AddIOp::create(nb, nl, i, offset);
          visible =
              arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::sle, j, last);
        } else {
          return s;
        }
        Value hidden =
            floatConst(nb, nl, f32, -std::numeric_limits<double>::infinity());
        return arith::SelectOp::create(nb, nl, visible, s, hidden).getResult();
      });
}

SplitHeads tlm::splitAndRotate(OpBuilder &b, Location loc, Value q, Value k,
                              Value v, int64_t heads, int64_t kvHeads,
                              int64_t dk, std::optional<double> theta,
                              Value positions) {
  SplitHeads s{splitHeads(b, loc, q, heads, dk),
               splitHeads(b, loc, k, kvHeads, dk),
               splitHeads(b, loc, v, kvHeads, dk)};
  if (theta)
    std::tie(s.q, s.k) = applyRopeQK(b, loc, s.q, s.k, positions, *theta);
  return s;
}

Value tlm::rowLogSumExp(OpBuilder &b, Location loc, Value scores) {
  Type f32 = b.getF32Type();
  int64_t rank = cast<RankedTensorType>(scores.getType()).getRank();
  Value rowMax = reduceLastDim(
      b, loc, scores, f32, -std::numeric_limits<double>::infinity(),
      [](OpBuilder &nb, Location l, ValueRange a) {
        return arith::MaximumFOp::create(nb, l, a[0], a[1]).getResult();
      });
  AffineMap id = b.getMultiDimIdentityMap(rank), row = id.dropResult(rank - 1);
  SmallVector<IteratorType> iters(rank, IteratorType::parallel);
  iters.back() = IteratorType::reduction;
  SmallVector<OpFoldResult> rows = sizesOf(b, loc, scores);
  rows.pop_back();
  Value sum = genericOp(b, loc, ValueRange{scores, rowMax},
                        filledTensor(b, loc, rows, f32, 0.0), {id, row, row},
                        iters, [](OpBuilder &nb, Location l, ValueRange a) {
                          Value d = arith::SubFOp::create(nb, l, a[0], a[1]);
                          Value e = math::ExpOp::create(nb, l, d);
                          return arith::AddFOp::create(nb, l, a[2], e)
                              .getResult();
                        });
  return elementwise(b, loc, ValueRange{rowMax, sum}, f32,
                     [](OpBuilder &nb, Location l, ValueRange a) {
                       Value lg = math::LogOp::create(nb, l, a[1]);
                       return arith::AddFOp::create(nb, l, a[0], lg)
                           .getResult();
                     });
}

Value tlm::probsFromLse(OpBuilder &b, Location loc, Value scores, Value lse) {
  Type f32 = b.getF32Type();
  int64_t rank = cast<RankedTensorType>(scores.getType()).getRank();
  AffineMap id = b.getMultiDimIdentityMap(rank), row = id.dropResult(rank - 1);
  return genericOp(b, loc, ValueRange{scores, lse},
                   emptyTensor(b, loc, sizesOf(b, loc, scores), f32),
                   {id, row, id}, SmallVector<IteratorType>(rank, IteratorType::parallel),
                   [](OpBuilder &nb, Location l, ValueRange a) {
                     Value d = arith::SubFOp::create(nb, l, a[0], a[1]);
                     return math::ExpOp::create(nb, l, d).getResult();
                   });
}

namespace {

//===----------------------------------------------------------------------===//
// RoPE
//===----------------------------------------------------------------------===//

struct LowerRoPE : OpRewritePattern<RoPEOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RoPEOp op,
                                PatternRewriter &rewriter) const override {
    int64_t rank = op.getType().getRank();
    Value y = applyRope(rewriter, op.getLoc(), op.getInput(), rank - 2,
                        op.getPositions(), op.getTheta().convertToDouble());
    rewriter.replaceOp(op, y);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Attention core
//===----------------------------------------------------------------------===//

/// Where Q, K, V and the output live relative to the two iteration spaces:
/// scores over `(batch..., i, j, d)` and P·V over `(batch..., i, e, j)`.
struct AttentionLayout {
  SmallVector<OpFoldResult> scoreSizes; ///< (batch..., Sq, Sk)
  SmallVector<OpFoldResult> outSizes;   ///< the output tensor's sizes
  AffineMap q, k;                       ///< over (batch..., i, j, d)
  AffineMap v, out;                     ///< over (batch..., i, e, j)
  int64_t headDim;
};

Type elementType(Value v) {
  return cast<ShapedType>(v.getType()).getElementType();
}

/// `t` (4-d) with the entries of the past positions each sequence lacks
/// replaced by `hidden`: those at position index `posDim` >= lengths[b],
/// b the index `batchDim`.
Value hidePastRows(OpBuilder &b, Location loc, Value t, Value lengths,
                   unsigned posDim, unsigned batchDim, TypedAttr hidden) {
  MLIRContext *ctx = b.getContext();
  AffineMap id = b.getMultiDimIdentityMap(4);
  AffineMap byBatch = AffineMap::get(4, 0, {b.getAffineDimExpr(batchDim)}, ctx);
  Value init = emptyTensor(b, loc, sizesOf(b, loc, t), elementType(t));
  SmallVector<utils::IteratorType> iters(4, utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, ValueRange{t, lengths},
             ValueRange{init}, ArrayRef<AffineMap>{id, byBatch, id}, iters,
             [&](OpBuilder &nb, Location nl, ValueRange a) {
               Value j = linalg::IndexOp::create(nb, nl, posDim);
               Value n = arith::IndexCastOp::create(nb, nl,
                                                    nb.getIndexType(), a[1]);
               Value seen = arith::CmpIOp::create(
                   nb, nl, arith::CmpIPredicate::ult, j, n);
               Value other = arith::ConstantOp::create(nb, nl, hidden);
               linalg::YieldOp::create(
                   nb, nl,
                   arith::SelectOp::create(nb, nl, seen, a[0], other)
                       .getResult());
             })
      .getResult(0);
}

/// acc[...] += Σ_j p·v over (batch..., i, e, j); P is read at
/// (batch..., i, j), V and acc through `vMap` / `outMap`.
Value weightedSum(OpBuilder &b, Location loc, Value probs, Value v,
                  AffineMap vMap, AffineMap outMap, Value acc) {
  Type f32 = b.getF32Type();
  int64_t loops = vMap.getNumDims();
  AffineMap pMap = b.getMultiDimIdentityMap(loops).dropResult(loops - 2);
  return linalg::GenericOp::create(
             b, loc, TypeRange{acc.getType()}, ValueRange{probs, v},
             ValueRange{acc}, ArrayRef<AffineMap>{pMap, vMap, outMap},
             contractionIters(loops),
             [&](OpBuilder &nb, Location nl, ValueRange a) {
               Value p = arith::MulFOp::create(nb, nl, a[0],
                                               castFloat(nb, nl, a[1], f32));
               linalg::YieldOp::create(
                   nb, nl, ValueRange{arith::AddFOp::create(nb, nl, p, a[2])});
             })
      .getResult(0);
}

/// Converts an f32 result back to `elem`.
Value toElementType(OpBuilder &b, Location loc, Value x, Type elem) {
  if (elem == b.getF32Type())
    return x;
  return elementwise(b, loc, ValueRange{x}, elem,
                     [&](OpBuilder &nb, Location nl, ValueRange a) {
                       return castFloat(nb, nl, a[0], elem);
                     });
}

/// softmax(Q·Kᵀ/sqrt(d) masked)·V with the given layout.
Value attentionCore(OpBuilder &b, Location loc, Value q, Value k, Value v,
                    const AttentionLayout &layout, Value mask, bool causal) {
  Type elem = cast<RankedTensorType>(q.getType()).getElementType();
  Value scores = scoresOf(b, loc, q, k, layout.q, layout.k, layout.scoreSizes);
  Value probs = softmaxLastDim(
      b, loc, scaleAndMask(b, loc, scores, layout.headDim, mask, causal));
  Value acc = filledTensor(b, loc, layout.outSizes, b.getF32Type(), 0.0);
  Value out = weightedSum(b, loc, probs, v, layout.v, layout.out, acc);
  return toElementType(b, loc, out, elem);
}

/// tlm.sdpa: leading dims are batch dims shared by q, k, v and the mask.
struct LowerSDPA : OpRewritePattern<SDPAOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SDPAOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto qType = op.getQ().getType();
    int64_t rank = qType.getRank(), batch = rank - 2, loops = batch + 3;
    MLIRContext *ctx = rewriter.getContext();
    SmallVector<AffineExpr> l;
    for (int64_t i = 0; i < loops; ++i)
      l.push_back(rewriter.getAffineDimExpr(i));
    auto map = [&](std::initializer_list<int64_t> tail) {
      SmallVector<AffineExpr> e(l.begin(), l.begin() + batch);
      for (int64_t t : tail)
        e.push_back(l[batch + t]);
      return AffineMap::get(loops, 0, e, ctx);
    };
    AttentionLayout layout;
    layout.scoreSizes = sizesOf(rewriter, loc, op.getQ());
    layout.scoreSizes.back() = sizesOf(rewriter, loc, op.getK())[rank - 2];
    layout.outSizes = sizesOf(rewriter, loc, op.getQ());
    layout.outSizes.back() = sizesOf(rewriter, loc, op.getV())[rank - 1];
    layout.q = map({0, 2});   // (batch, i, d)
    layout.k = map({1, 2});   // (batch, j, d)
    layout.v = map({2, 1});   // (batch, j, e) over (batch, i, e, j)
    layout.out = map({0, 1}); // (batch, i, e)
    layout.headDim = qType.getShape().back();
    Value y = attentionCore(rewriter, loc, op.getQ(), op.getK(), op.getV(),
                            layout, op.getMask(), op.getCausal());
    rewriter.replaceOp(op, castTo(rewriter, loc, y, op.getType()));
    return success();
  }
};

/// tlm.attention: heads split by reshapes, RoPE on Q and K, then the core
/// over (b, h, i, j, d) with query head h reading kv head h floordiv G.
/// The layout of causal attention on split heads, q (B, T, H, dk) and k, v
/// (B, T, KV, dk), query head h reading kv head h floordiv `group`.
AttentionLayout splitHeadsLayout(OpBuilder &b, Location loc, Value q, Value k,
                                 int64_t heads, int64_t group, int64_t dk) {
  MLIRContext *ctx = b.getContext();
  AffineExpr bb, h, i, j, d;
  bindDims(ctx, bb, h, i, j, d);
  AffineExpr kvh = h.floorDiv(group);
  SmallVector<OpFoldResult> qSizes = sizesOf(b, loc, q);
  SmallVector<OpFoldResult> kSizes = sizesOf(b, loc, k);
  AttentionLayout layout;
  layout.scoreSizes = {qSizes[0], b.getIndexAttr(heads), qSizes[1],
                       kSizes[1]};
  layout.outSizes = qSizes;
  layout.q = AffineMap::get(5, 0, {bb, i, h, d}, ctx);
  layout.k = AffineMap::get(5, 0, {bb, j, kvh, d}, ctx);
  // Over (b, h, i, e, j): the names bind j↔e positions accordingly.
  AffineExpr e = j, jj = d;
  layout.v = AffineMap::get(5, 0, {bb, jj, kvh, e}, ctx);
  layout.out = AffineMap::get(5, 0, {bb, i, h, e}, ctx);
  layout.headDim = dk;
  return layout;
}

struct LowerAttention : OpRewritePattern<AttentionOp> {
  LowerAttention(MLIRContext *ctx, AttentionForm form)
      : OpRewritePattern(ctx), form(form) {}
  AttentionForm form;
  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t heads = op.getNumHeads(), kvHeads = op.getNumKvHeads();
    int64_t dk = op.getHeadDim(), group = heads / kvHeads;
    auto [q, k, v] =
        splitAndRotate(rewriter, loc, op.getQ(), op.getK(), op.getV(), heads,
                       kvHeads, dk, op.getRopeThetaValue(), op.getPositions());
    if (std::optional<HeadsLayout> layout = staticHeads(q, k, form.block);
        form.byHeads && layout) {
      Value out = attentionByHeads(rewriter, loc, q, k, v, *layout);
      rewriter.replaceOp(
          op, castTo(rewriter, loc, mergeHeads(rewriter, loc, out),
                     op.getType()));
      return success();
    }
    AttentionLayout layout = splitHeadsLayout(rewriter, loc, q, k, heads,
                                              group, dk);
    Value out = attentionCore(rewriter, loc, q, k, v, layout, Value(),
                              /*causal=*/true);
    Value merged = mergeHeads(rewriter, loc, out);
    rewriter.replaceOp(op, castTo(rewriter, loc, merged, op.getType()));
    return success();
  }
};

/// tlm.attention_lse: the probabilities are exp(S − lse), lse each row's
/// logsumexp, which is the op's second result ((B, H, T), as the scores'
/// rows are).
struct LowerAttentionLse : OpRewritePattern<AttentionLseOp> {
  LowerAttentionLse(MLIRContext *ctx, AttentionForm form)
      : OpRewritePattern(ctx), form(form) {}
  AttentionForm form;
  LogicalResult matchAndRewrite(AttentionLseOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    int64_t heads = op.getNumHeads(), kvHeads = op.getNumKvHeads();
    int64_t dk = op.getHeadDim(), group = heads / kvHeads;
    auto [q, k, v] = splitAndRotate(b, loc, op.getQ(), op.getK(), op.getV(),
                                    heads, kvHeads, dk, op.getRopeThetaValue());
    Value out, lse;
    if (std::optional<HeadsLayout> perHead = staticHeads(q, k, form.block);
        form.byHeads && perHead) {
      std::tie(out, lse) = attentionLseByHeads(b, loc, q, k, v, *perHead);
    } else {
      AttentionLayout layout = splitHeadsLayout(b, loc, q, k, heads, group, dk);
      Value scores = scaleAndMask(
          b, loc, scoresOf(b, loc, q, k, layout.q, layout.k, layout.scoreSizes),
          dk, Value(), /*causal=*/true);
      lse = rowLogSumExp(b, loc, scores);
      Value acc = filledTensor(b, loc, layout.outSizes, b.getF32Type(), 0.0);
      out = weightedSum(b, loc, probsFromLse(b, loc, scores, lse), v, layout.v,
                        layout.out, acc);
    }
    rewriter.replaceOp(op, {castTo(b, loc, mergeHeads(b, loc, out),
                                   op.getResult().getType()),
                            castTo(b, loc, lse, op.getLse().getType())});
    return success();
  }
};

/// tlm.cached_attention: the new queries and keys are rotated at positions
/// T + i; scores against the past (T, B, kv, dk) and the new keys are
/// concatenated along the key dim for one softmax, then split again for the
/// two P·V sums. Only the new part is causally masked.
struct LowerCachedAttention : OpRewritePattern<CachedAttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CachedAttentionOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Type elem = op.getQ().getType().getElementType();
    CachedAttentionParts parts = splitCachedAttention(b, op);
    Value q = parts.q, k = parts.k, v = parts.v;
    Value kPast = parts.kPast, vPast = parts.vPast, past = parts.past;
    Value kNew = parts.kNew, vNew = parts.vNew;
    int64_t heads = parts.heads, dk = parts.headDim, group = parts.group;

    MLIRContext *ctx = b.getContext();
    AffineExpr bb, h, i, j, d;
    bindDims(ctx, bb, h, i, j, d);
    AffineExpr kvh = h.floorDiv(group);
    SmallVector<OpFoldResult> qSizes = sizesOf(b, loc, q);
    OpFoldResult headsAttr = b.getIndexAttr(heads);
    AffineMap qMap = AffineMap::get(5, 0, {bb, i, h, d}, ctx);
    Value sPast = scoresOf(b, loc, q, kPast, qMap,
                           AffineMap::get(5, 0, {j, bb, kvh, d}, ctx),
                           {qSizes[0], headsAttr, qSizes[1], past});
    Value sNew =
        scoresOf(b, loc, q, k, qMap, AffineMap::get(5, 0, {bb, j, kvh, d}, ctx),
                 {qSizes[0], headsAttr, qSizes[1], qSizes[1]});
    sPast = scaleAndMask(b, loc, sPast, dk, Value(), /*causal=*/false);
    if (parts.lengths) {
      // Scores (B, H, S, T): the keys a sequence lacks get -inf.
      sPast = hidePastRows(
          b, loc, sPast, parts.lengths, /*posDim=*/3, /*batchDim=*/0,
          b.getFloatAttr(elementType(sPast),
                         -std::numeric_limits<double>::infinity()));
    }
    sNew = scaleAndMask(b, loc, sNew, dk, Value(), /*causal=*/true);
    Value probs = softmaxLastDim(
        b, loc, tensor::ConcatOp::create(b, loc, 3, ValueRange{sPast, sNew}));

    // Split P back into its past and new columns.
    SmallVector<OpFoldResult> offsets(4, b.getIndexAttr(0)),
        strides(4, b.getIndexAttr(1));
    SmallVector<OpFoldResult> pastSizes{qSizes[0], headsAttr, qSizes[1], past};
    Value pPast = tensor::ExtractSliceOp::create(b, loc, probs, offsets,
                                                 pastSizes, strides);
    offsets[3] = past;
    SmallVector<OpFoldResult> newSizes{qSizes[0], headsAttr, qSizes[1],
                                       qSizes[1]};
    Value pNew = tensor::ExtractSliceOp::create(b, loc, probs, offsets,
                                                newSizes, strides);

    // Over (b, h, i, e, j): e is the 4th loop, j the 5th.
    AffineExpr e = j, jj = d;
    AffineMap outMap = AffineMap::get(5, 0, {bb, i, h, e}, ctx);
    Value acc = filledTensor(b, loc, qSizes, b.getF32Type(), 0.0);
    if (parts.lengths) {
      // Values (T, B, kvH, dk): those rows are zeroed, for never written
      // they could hold NaN, and 0 · NaN is NaN.
      vPast = hidePastRows(b, loc, vPast, parts.lengths, /*posDim=*/0,
                           /*batchDim=*/1, b.getZeroAttr(elementType(vPast)));
    }
    acc = weightedSum(b, loc, pPast, vPast,
                      AffineMap::get(5, 0, {jj, bb, kvh, e}, ctx), outMap, acc);
    acc = weightedSum(b, loc, pNew, v,
                      AffineMap::get(5, 0, {bb, jj, kvh, e}, ctx), outMap, acc);
    Value out = mergeHeads(b, loc, toElementType(b, loc, acc, elem));
    rewriter.replaceOp(op, {castTo(b, loc, out, op.getResult().getType()),
                            castTo(b, loc, kNew, op.getKNew().getType()),
                            castTo(b, loc, vNew, op.getVNew().getType())});
    return success();
  }
};

} // namespace

void tlm::populateAttentionLoweringPatterns(RewritePatternSet &patterns,
                                            AttentionForm form) {
  patterns.add<LowerRoPE, LowerSDPA, LowerCachedAttention>(
      patterns.getContext());
  patterns.add<LowerAttention, LowerAttentionLse>(patterns.getContext(), form);
}
