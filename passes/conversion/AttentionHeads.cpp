//===- AttentionHeads.cpp - attention as a loop over its heads ------------===//

#include "passes/conversion/AttentionHeads.h"

#include "passes/common/Builders.h"
#include "passes/common/Projection.h"
#include "passes/conversion/AttentionCore.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tlm;

namespace {

/// x · Wᵀ for 2-D x and W, marked for the CPU's tiled matmuls.
Value headProjection(OpBuilder &b, Location loc, Value x, Value w) {
  Value y = projection(b, loc, x, w);
  y.getDefiningOp()->setAttr(kTileInLoopAttr, b.getUnitAttr());
  return y;
}

/// Marks the op defining `v` for the CPU passes that skip ops in loops
/// (kTileInLoopAttr); `v` itself.
Value marked(OpBuilder &b, Value v) {
  v.getDefiningOp()->setAttr(kTileInLoopAttr, b.getUnitAttr());
  return v;
}

/// The (rows, cols) tensor `x` transposed, as a tensor of its own.
Value transpose2d(OpBuilder &b, Location loc, Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  Value init = emptyTensor(b, loc,
                           {b.getIndexAttr(type.getDimSize(1)),
                            b.getIndexAttr(type.getDimSize(0))},
                           type.getElementType());
  return marked(b, linalg::TransposeOp::create(b, loc, x, init,
                                               ArrayRef<int64_t>{1, 0})
                       .getResult()[0]);
}

/// Offsets, sizes and strides of head `h` of sequence `bi` in a
/// (B, T, n, dk) tensor.
struct HeadSlice {
  SmallVector<OpFoldResult> offsets, sizes, strides;
  RankedTensorType type; ///< (T, dk)
};

HeadSlice headSlice(OpBuilder &b, Value bi, Value h, const HeadsLayout &l) {
  HeadSlice s;
  s.offsets = {bi, b.getIndexAttr(0), h, b.getIndexAttr(0)};
  s.sizes = {b.getIndexAttr(1), b.getIndexAttr(l.seq), b.getIndexAttr(1),
             b.getIndexAttr(l.headDim)};
  s.strides = SmallVector<OpFoldResult>(4, b.getIndexAttr(1));
  s.type = RankedTensorType::get({l.seq, l.headDim}, b.getF32Type());
  return s;
}

Value extractHead(OpBuilder &b, Location loc, Value x, const HeadSlice &s) {
  return tensor::ExtractSliceOp::create(b, loc, s.type, x, s.offsets, s.sizes,
                                        s.strides);
}

Value insertHead(OpBuilder &b, Location loc, Value part, Value into,
                 const HeadSlice &s) {
  return tensor::InsertSliceOp::create(b, loc, part, into, s.offsets, s.sizes,
                                       s.strides);
}

/// `into`'s head slice plus `part`, put back.
Value addToHead(OpBuilder &b, Location loc, Value part, Value into,
                const HeadSlice &s) {
  Value sum = marked(
      b, elementwise(b, loc, ValueRange{extractHead(b, loc, into, s), part},
                     b.getF32Type(), [](OpBuilder &nb, Location l, ValueRange a) {
                       return arith::AddFOp::create(nb, l, a[0], a[1])
                           .getResult();
                     }));
  return insertHead(b, loc, sum, into, s);
}

/// One head's scaled, causally masked scores (T, T).
Value headScores(OpBuilder &b, Location loc, Value q, Value k,
                 const HeadsLayout &l) {
  return marked(b, scaleAndMask(b, loc, headProjection(b, loc, q, k),
                                l.headDim, Value(), true));
}

/// One head's causal probabilities (T, T) from its Q and K (T, dk).
Value headProbs(OpBuilder &b, Location loc, Value q, Value k,
                const HeadsLayout &l) {
  return softmaxLastDim(b, loc, headScores(b, loc, q, k, l));
}

/// Row `h` of sequence `bi` of a (B, H, T) tensor, as (T).
HeadSlice lseSlice(OpBuilder &b, Value bi, Value h, const HeadsLayout &l) {
  HeadSlice s;
  s.offsets = {bi, h, b.getIndexAttr(0)};
  s.sizes = {b.getIndexAttr(1), b.getIndexAttr(1), b.getIndexAttr(l.seq)};
  s.strides = SmallVector<OpFoldResult>(3, b.getIndexAttr(1));
  s.type = RankedTensorType::get({l.seq}, b.getF32Type());
  return s;
}

using HeadBody = function_ref<SmallVector<Value>(
    OpBuilder &, Location, Value bi, Value h, Value kvh, ValueRange acc)>;

/// for bi < B, h < H: acc = body(bi, h, h / G, acc).
SmallVector<Value> forEachHead(OpBuilder &b, Location loc,
                               const HeadsLayout &l, ValueRange init,
                               HeadBody body) {
  Value group = index(b, loc, l.heads / l.kvHeads);
  scf::LoopNest nest = scf::buildLoopNest(
      b, loc, {index(b, loc, 0), index(b, loc, 0)},
      {index(b, loc, l.batch), index(b, loc, l.heads)},
      {index(b, loc, 1), index(b, loc, 1)}, init,
      [&](OpBuilder &nb, Location nl, ValueRange ivs, ValueRange acc) {
        Value kvh = arith::DivUIOp::create(nb, nl, ivs[1], group);
        return scf::ValueVector(body(nb, nl, ivs[0], ivs[1], kvh, acc));
      });
  return SmallVector<Value>(nest.results);
}

} // namespace

std::optional<HeadsLayout> tlm::staticHeads(Value q, Value k) {
  auto qt = cast<RankedTensorType>(q.getType());
  auto kt = cast<RankedTensorType>(k.getType());
  if (qt.getRank() != 4 || !qt.hasStaticShape() || !kt.hasStaticShape() ||
      !qt.getElementType().isF32() || !kt.getElementType().isF32())
    return std::nullopt;
  return HeadsLayout{qt.getDimSize(0), qt.getDimSize(1), qt.getDimSize(2),
                     kt.getDimSize(2), qt.getDimSize(3)};
}

Value tlm::attentionByHeads(OpBuilder &b, Location loc, Value q, Value k,
                            Value v, const HeadsLayout &l) {
  Value out = emptyTensor(b, loc, sizesOf(b, loc, q), b.getF32Type());
  return forEachHead(
      b, loc, l, ValueRange{out},
      [&](OpBuilder &nb, Location nl, Value bi, Value h, Value kvh,
          ValueRange acc) -> SmallVector<Value> {
        HeadSlice qs = headSlice(nb, bi, h, l), ks = headSlice(nb, bi, kvh, l);
        Value probs = headProbs(nb, nl, extractHead(nb, nl, q, qs),
                                extractHead(nb, nl, k, ks), l);
        Value o = headProjection(
            nb, nl, probs, transpose2d(nb, nl, extractHead(nb, nl, v, ks)));
        return {insertHead(nb, nl, o, acc[0], qs)};
      })[0];
}

std::pair<Value, Value> tlm::attentionLseByHeads(OpBuilder &b, Location loc,
                                                Value q, Value k, Value v,
                                                const HeadsLayout &l) {
  Type f32 = b.getF32Type();
  SmallVector<Value> init{
      emptyTensor(b, loc, sizesOf(b, loc, q), f32),
      emptyTensor(b, loc,
                  {b.getIndexAttr(l.batch), b.getIndexAttr(l.heads),
                   b.getIndexAttr(l.seq)},
                  f32)};
  SmallVector<Value> r = forEachHead(
      b, loc, l, init,
      [&](OpBuilder &nb, Location nl, Value bi, Value h, Value kvh,
          ValueRange acc) -> SmallVector<Value> {
        HeadSlice qs = headSlice(nb, bi, h, l), ks = headSlice(nb, bi, kvh, l);
        Value scores = headScores(nb, nl, extractHead(nb, nl, q, qs),
                                  extractHead(nb, nl, k, ks), l);
        Value lse = rowLogSumExp(nb, nl, scores);
        Value o = headProjection(
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
  Type f32 = b.getF32Type();
  SmallVector<Value> init{filledTensor(b, loc, sizesOf(b, loc, q), f32, 0.0),
                          filledTensor(b, loc, sizesOf(b, loc, k), f32, 0.0),
                          filledTensor(b, loc, sizesOf(b, loc, v), f32, 0.0)};
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
        Value dP = headProjection(nb, nl, dOh, vh);
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
        Value dq = headProjection(nb, nl, dS, transpose2d(nb, nl, kh));
        Value dk = headProjection(nb, nl, transpose2d(nb, nl, dS),
                                  transpose2d(nb, nl, qh));
        Value dv = headProjection(nb, nl, transpose2d(nb, nl, probs),
                                  transpose2d(nb, nl, dOh));
        return {insertHead(nb, nl, dq, acc[0], qs),
                addToHead(nb, nl, dk, acc[1], ks),
                addToHead(nb, nl, dv, acc[2], ks)};
      });
}
