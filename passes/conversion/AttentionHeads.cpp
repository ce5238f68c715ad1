//===- AttentionHeads.cpp - attention as a loop over its heads ------------===//

#include "passes/conversion/AttentionHeads.h"
#include "passes/conversion/AttentionHeadLoop.h"

#include "passes/common/Builders.h"
#include "passes/common/Projection.h"
#include "passes/conversion/AttentionCore.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tlm;
using namespace mlir::tlm::heads;

namespace {

/// One head's scaled, causally masked scores (T, T).
Value headScores(OpBuilder &b, Location loc, Value q, Value k,
                 const HeadsLayout &l) {
  return marked(b, scaleAndMask(b, loc, projection2d(b, loc, q, k),
                                l.headDim, Value(), true));
}

/// One head's causal probabilities (T, T) from its Q and K (T, dk).
Value headProbs(OpBuilder &b, Location loc, Value q, Value k,
                const HeadsLayout &l) {
  return softmaxLastDim(b, loc, headScores(b, loc, q, k, l));
}

/// The rows of a (T) sequence in each block: the largest divisor of `seq`
/// not above `cap`, or `seq` when that is below kMinBlock (a prime length,
/// say: the whole (T, T) tile then), or when `cap` is 0.
int64_t blockRows(int64_t seq, int64_t cap) {
  constexpr int64_t kMinBlock = 8;
  if (cap <= 0 || seq <= cap)
    return seq;
  for (int64_t rows = cap; rows >= kMinBlock; --rows)
    if (seq % rows == 0)
      return rows;
  return seq;
}

} // namespace

std::optional<HeadsLayout> tlm::staticHeads(Value q, Value k,
                                           int64_t blockCap) {
  auto qt = cast<RankedTensorType>(q.getType());
  auto kt = cast<RankedTensorType>(k.getType());
  if (qt.getRank() != 4 || !qt.hasStaticShape() || !kt.hasStaticShape() ||
      !qt.getElementType().isF32() || !kt.getElementType().isF32())
    return std::nullopt;
  return HeadsLayout{qt.getDimSize(0), qt.getDimSize(1), qt.getDimSize(2),
                     kt.getDimSize(2), qt.getDimSize(3),
                     blockRows(qt.getDimSize(1), blockCap)};
}

Value tlm::attentionByHeads(OpBuilder &b, Location loc, Value q, Value k,
                            Value v, const HeadsLayout &l) {
  if (l.block < l.seq) // the row logsumexps are dead code then
    return attentionLseByBlocks(b, loc, q, k, v, l).first;
  Value out = emptyTensor(b, loc, sizesOf(b, loc, q), b.getF32Type());
  return forEachHead(
      b, loc, l, ValueRange{out},
      [&](OpBuilder &nb, Location nl, Value bi, Value h, Value kvh,
          ValueRange acc) -> SmallVector<Value> {
        HeadSlice qs = headSlice(nb, bi, h, l), ks = headSlice(nb, bi, kvh, l);
        Value probs = headProbs(nb, nl, extractHead(nb, nl, q, qs),
                                extractHead(nb, nl, k, ks), l);
        Value o = projection2d(
            nb, nl, probs, transpose2d(nb, nl, extractHead(nb, nl, v, ks)));
        return {insertHead(nb, nl, o, acc[0], qs)};
      })[0];
}

std::pair<Value, Value> tlm::attentionLseByHeads(OpBuilder &b, Location loc,
                                                Value q, Value k, Value v,
                                                const HeadsLayout &l) {
  if (l.block < l.seq)
    return attentionLseByBlocks(b, loc, q, k, v, l);
  SmallVector<Value> r = forEachHead(
      b, loc, l, outputAndLse(b, loc, q, l),
      [&](OpBuilder &nb, Location nl, Value bi, Value h, Value kvh,
          ValueRange acc) -> SmallVector<Value> {
        HeadSlice qs = headSlice(nb, bi, h, l), ks = headSlice(nb, bi, kvh, l);
        Value scores = headScores(nb, nl, extractHead(nb, nl, q, qs),
                                  extractHead(nb, nl, k, ks), l);
        Value lse = rowLogSumExp(nb, nl, scores);
        Value o = projection2d(
            nb, nl, marked(nb, probsFromLse(nb, nl, scores, lse)),
            transpose2d(nb, nl, extractHead(nb, nl, v, ks)));
        return {insertHead(nb, nl, o, acc[0], qs),
                insertHead(nb, nl, lse, acc[1], lseSlice(nb, bi, h, l))};
      });
  return {r[0], r[1]};
}

SmallVector<Value> tlm::attentionGradByHeads(OpBuilder &b, Location loc,
                                             Value q, Value k, Value v,
                                             Value out, Value lse, Value dO,
                                             const HeadsLayout &l) {
  if (l.block < l.seq)
    return attentionGradByBlocks(b, loc, q, k, v, out, lse, dO, l);
  Type f32 = b.getF32Type();
  SmallVector<Value> init = zerosLike(b, loc, ValueRange{q, k, v});
  double scale = 1.0 / std::sqrt(double(l.headDim));
  return forEachHead(
      b, loc, l, init,
      [&](OpBuilder &nb, Location nl, Value bi, Value h, Value kvh,
          ValueRange acc) -> SmallVector<Value> {
        HeadSlice qs = headSlice(nb, bi, h, l), ks = headSlice(nb, bi, kvh, l);
        Value qh = extractHead(nb, nl, q, qs), kh = extractHead(nb, nl, k, ks);
        Value vh = extractHead(nb, nl, v, ks), dOh = extractHead(nb, nl, dO, qs);
        Value probs = marked(
            nb, probsFromLse(nb, nl, headScores(nb, nl, qh, kh, l),
                             extractHead(nb, nl, lse, lseSlice(nb, bi, h, l))));
        Value dP = projection2d(nb, nl, dOh, vh);
        // dS = P·(dP − D) / sqrt(dk), D = rowsum(dO·O) (= rowsum(P·dP)).
        AffineMap id = nb.getMultiDimIdentityMap(2), row = id.dropResult(1);
        Value rowDot = contraction(
            nb, nl, dOh, extractHead(nb, nl, out, qs),
            filledTensor(nb, nl, {nb.getIndexAttr(l.seq)}, f32, 0.0),
            {id, id, row});
        Value c = floatConst(nb, nl, f32, scale);
        Value dS = marked(nb, genericOp(
            nb, nl, ValueRange{probs, dP, rowDot},
            emptyTensor(nb, nl, sizesOf(nb, nl, probs), f32),
            {id, id, row, id},
            {utils::IteratorType::parallel, utils::IteratorType::parallel},
            [&](OpBuilder &bb, Location bl, ValueRange a) {
              Value d = arith::SubFOp::create(bb, bl, a[1], a[2]);
              Value p = arith::MulFOp::create(bb, bl, a[0], d);
              return arith::MulFOp::create(bb, bl, p, c).getResult();
            }));
        Value dq = projection2d(nb, nl, dS, transpose2d(nb, nl, kh));
        Value dk = projection2d(nb, nl, transpose2d(nb, nl, dS),
                                  transpose2d(nb, nl, qh));
        Value dv = projection2d(nb, nl, transpose2d(nb, nl, probs),
                                  transpose2d(nb, nl, dOh));
        return {insertHead(nb, nl, dq, acc[0], qs),
                addToHead(nb, nl, dk, acc[1], ks),
                addToHead(nb, nl, dv, acc[2], ks)};
      });
}
