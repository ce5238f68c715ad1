//===- AttentionGradLowering.cpp - tlm.attention_grad to linalg -----------===//
//
// The backward of causal attention per head (docs/training.md): the
// probabilities are rebuilt from the forward's row logsumexps,
// P = exp(S − lse), then dP = dO·Vᵀ, D = rowsum(dO·O),
// dS = P·(dP − D)/sqrt(d_k), and the three
// contractions dV = Pᵀ·dO, dK = dSᵀ·Q, dQ = dS·K. A kv head's dK and dV sum
// over its group of query heads: the head dim of P, dS, dO and Q is viewed
// as (kv, g) (a reshape, no copy), so the group is a loop of its own, which
// linalg needs to size it. Rotated Q and K gradients are rotated back.
//
// This form holds P and dS as (B, H, T, T) tensors; with a static sequence
// (training's), AttentionHeads.h's loop holds one head's (T, T) tile at a
// time.
//
//===----------------------------------------------------------------------===//

#include "dialect/TlmDialect.h"
#include "passes/common/AttentionParts.h"
#include "passes/common/Recompute.h"
#include "passes/common/Builders.h"
#include "passes/conversion/AttentionCore.h"
#include "passes/conversion/AttentionHeads.h"
#include "passes/conversion/PopulatePatterns.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>
#include <tuple>

using namespace mlir;
using namespace mlir::tlm;

namespace {

using utils::IteratorType;

/// Rotates the pairs of `x` (B, S, n, dk) by −θ: RoPE's inverse, which is
/// its backward.
Value unrotate(OpBuilder &b, Location loc, Value x, double theta) {
  Type f32 = b.getF32Type();
  auto [cos, sin] = ropeTables(b, loc, x, /*seqDim=*/1, Value(), Value(),
                               theta, f32);
  Value negSin = elementwise(b, loc, ValueRange{sin}, f32,
                             [](OpBuilder &nb, Location l, ValueRange a) {
                               return arith::NegFOp::create(nb, l, a[0])
                                   .getResult();
                             });
  return applyRope(b, loc, x, /*seqDim=*/1, Value(), {cos, negSin});
}

/// `x` with its static dim `dim` viewed as (outer, dim / outer).
Value splitDim(OpBuilder &b, Location loc, Value x, int64_t dim,
               int64_t outer) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t inner = type.getDimSize(dim) / outer;
  SmallVector<OpFoldResult> sizes = sizesOf(b, loc, x);
  sizes[dim] = b.getIndexAttr(outer);
  sizes.insert(sizes.begin() + dim + 1, b.getIndexAttr(inner));
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = outer;
  shape.insert(shape.begin() + dim + 1, inner);
  SmallVector<ReassociationIndices> groups;
  for (int64_t i = 0, o = 0; i < type.getRank(); ++i) {
    if (i == dim)
      groups.push_back({o, o + 1}), o += 2;
    else
      groups.push_back({o++});
  }
  return tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), x, groups,
      sizes);
}

struct LowerAttentionGrad : OpRewritePattern<AttentionGradOp> {
  LowerAttentionGrad(MLIRContext *ctx, AttentionForm form)
      : OpRewritePattern(ctx), form(form) {}
  AttentionForm form;

  /// The rotated gradients back to the op's operands: rotated by −θ, heads
  /// merged.
  LogicalResult finish(AttentionGradOp op, PatternRewriter &rewriter,
                       SmallVector<Value> grads,
                       std::optional<double> theta) const {
    Location loc = op.getLoc();
    if (theta) {
      grads[0] = unrotate(rewriter, loc, grads[0], *theta);
      grads[1] = unrotate(rewriter, loc, grads[1], *theta);
    }
    for (auto [g, r] : llvm::zip(grads, op->getResults()))
      g = castTo(rewriter, loc, mergeHeads(rewriter, loc, g), r.getType());
    rewriter.replaceOp(op, grads);
    return success();
  }

  LogicalResult matchAndRewrite(AttentionGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Type f32 = b.getF32Type();
    int64_t heads = op.getNumHeads(), kvHeads = op.getNumKvHeads();
    int64_t dk = op.getHeadDim(), group = heads / kvHeads;
    std::optional<double> theta = op.getRopeThetaValue();
    auto [q, k, v] = splitAndRotate(b, loc, op.getQ(), op.getK(), op.getV(),
                                    heads, kvHeads, dk, theta);
    // Marked, the rotated Q and K are rotated again here rather than kept
    // from the forward (Recompute.h).
    for (Value rotated : {q, k})
      if (op->hasAttr(kRecomputeAttr) && theta &&
          rotated.getDefiningOp<linalg::GenericOp>())
        recomputed(rotated);
    Value dO = splitHeads(b, loc, op.getGrad(), heads, dk);
    Value out = splitHeads(b, loc, op.getOut(), heads, dk);
    Value lse = op.getLse();
    if (std::optional<HeadsLayout> layout = staticHeads(q, k, form.block);
        form.byHeads && layout)
      return finish(op, rewriter,
                    attentionGradByHeads(b, loc, q, k, v, out, lse, dO,
                                         *layout),
                    theta);

    // Over (b, h, i, j, d), as the forward's scores.
    MLIRContext *ctx = b.getContext();
    AffineExpr bb, h, i, j, d;
    bindDims(ctx, bb, h, i, j, d);
    AffineExpr kvh = h.floorDiv(group);
    SmallVector<OpFoldResult> qSizes = sizesOf(b, loc, q);
    SmallVector<OpFoldResult> kSizes = sizesOf(b, loc, k);
    SmallVector<OpFoldResult> scoreSizes{qSizes[0], b.getIndexAttr(heads),
                                         qSizes[1], kSizes[1]};
    AffineMap qMap = AffineMap::get(5, 0, {bb, i, h, d}, ctx);
    AffineMap kMap = AffineMap::get(5, 0, {bb, j, kvh, d}, ctx);
    Value probs = probsFromLse(
        b, loc,
        scaleAndMask(b, loc, scoresOf(b, loc, q, k, qMap, kMap, scoreSizes),
                     dk, Value(), /*causal=*/true),
        lse);
    Value dP = scoresOf(b, loc, dO, v, qMap, kMap, scoreSizes);

    // D = rowsum(dO·O) over (b, h, i, e), dS = P·(dP − D)/sqrt(d_k) over
    // (b, h, i, j).
    AffineMap id4 = b.getMultiDimIdentityMap(4), row4 = id4.dropResult(3);
    SmallVector<IteratorType> par(4, IteratorType::parallel);
    AffineExpr db, dh, di, de;
    bindDims(ctx, db, dh, di, de);
    AffineMap heads4 = AffineMap::get(4, 0, {db, di, dh, de}, ctx);
    Value rowDot = contraction(
        b, loc, dO, out,
        filledTensor(b, loc, ArrayRef(scoreSizes).drop_back(), f32, 0.0),
        {heads4, heads4, row4});
    Value scale = floatConst(b, loc, f32, 1.0 / std::sqrt(double(dk)));
    Value dS = genericOp(
        b, loc, ValueRange{probs, dP, rowDot},
        emptyTensor(b, loc, scoreSizes, f32), {id4, id4, row4, id4}, par,
        [&](OpBuilder &nb, Location l, ValueRange a) {
          Value diff = arith::SubFOp::create(nb, l, a[1], a[2]);
          Value p = arith::MulFOp::create(nb, l, a[0], diff);
          return arith::MulFOp::create(nb, l, p, scale).getResult();
        });

    // dV and dK over (b, j, kv, e, g, i), query head kv·G + g.
    AffineExpr B, J, KV, E, G, I;
    bindDims(ctx, B, J, KV, E, G, I);
    SmallVector<AffineMap> kvMaps{AffineMap::get(6, 0, {B, KV, G, I, J}, ctx),
                                  AffineMap::get(6, 0, {B, I, KV, G, E}, ctx),
                                  AffineMap::get(6, 0, {B, J, KV, E}, ctx)};
    Value dV = contraction(
        b, loc, splitDim(b, loc, probs, 1, kvHeads),
        splitDim(b, loc, dO, 2, kvHeads),
        filledTensor(b, loc, kSizes, f32, 0.0), kvMaps);
    Value dK = contraction(
        b, loc, splitDim(b, loc, dS, 1, kvHeads),
        splitDim(b, loc, q, 2, kvHeads),
        filledTensor(b, loc, kSizes, f32, 0.0), kvMaps);
    // dQ over (b, i, h, d, j).
    AffineExpr qb, qi, qh, qd, qj;
    bindDims(ctx, qb, qi, qh, qd, qj);
    Value dQ = contraction(
        b, loc, dS, k, filledTensor(b, loc, qSizes, f32, 0.0),
        {AffineMap::get(5, 0, {qb, qh, qi, qj}, ctx),
         AffineMap::get(5, 0, {qb, qj, qh.floorDiv(group), qd}, ctx),
         AffineMap::get(5, 0, {qb, qi, qh, qd}, ctx)});
    return finish(op, rewriter, {dQ, dK, dV}, theta);
  }
};

} // namespace

void tlm::populateAttentionGradLoweringPatterns(RewritePatternSet &patterns,
                                                AttentionForm form) {
  patterns.add<LowerAttentionGrad>(patterns.getContext(), form);
}
