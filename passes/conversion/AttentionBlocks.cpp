//===- AttentionBlocks.cpp - attention in FlashAttention-2 blocks ---------===//
//
// Training's causal attention per head in (block, block) tiles, so no
// (T, T) tile is ever live (FlashAttention-2, Dao 2023):
//
//   forward, per query block i: for key blocks j <= i, S = Q_i K_jᵀ / √d,
//     m' = max(m, rowmax S), P = exp(S − m'), l = l·e^(m − m') + rowsum P,
//     O = O·e^(m − m') + P V_j; then O / l and lse = m + log l.
//   backward, per key block j: for query blocks i >= j, Sᵀ = K_j Q_iᵀ / √d,
//     Pᵀ = exp(Sᵀ − lse_i), dPᵀ = V_j dO_iᵀ, dSᵀ = Pᵀ (dPᵀ − D_i) / √d with
//     D = rowsum(dO · O); dV_j += Pᵀ dO_i, dK_j += dSᵀ Q_i, dQ_i += dS K_j.
//
// Blocks above the diagonal are skipped (the loops' bounds), so the
// causal half costs nothing; the mask applies to every visited block but
// hides only in the diagonal one. The backward works on transposed tiles
// (keys as rows) so that dV and dK need no transpose and dQ one.
//
//===----------------------------------------------------------------------===//

#include "passes/conversion/AttentionHeadLoop.h"

#include "passes/common/Builders.h"
#include "passes/conversion/AttentionCore.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::tlm;
using namespace mlir::tlm::heads;
using utils::IteratorType;

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// Columns [first, first + count) of the 2-D `x`.
Value columns(OpBuilder &b, Location loc, Value x, Value first,
              int64_t count) {
  int64_t rows = cast<RankedTensorType>(x.getType()).getDimSize(0);
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({rows, count}, b.getF32Type()), x,
      {b.getIndexAttr(0), first}, {b.getIndexAttr(rows), b.getIndexAttr(count)},
      {b.getIndexAttr(1), b.getIndexAttr(1)});
}

/// Elements [first, first + count) of the 1-D `x`.
Value segment(OpBuilder &b, Location loc, Value x, Value first,
              int64_t count) {
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({count}, b.getF32Type()), x, {first},
      {b.getIndexAttr(count)}, {b.getIndexAttr(1)});
}

Value insertSegment(OpBuilder &b, Location loc, Value part, Value into,
                    Value first) {
  int64_t count = cast<RankedTensorType>(part.getType()).getDimSize(0);
  return tensor::InsertSliceOp::create(b, loc, part, into, {first},
                                       {b.getIndexAttr(count)},
                                       {b.getIndexAttr(1)});
}

/// Rows [first, first + count) of the 2-D `x`, and putting them back.
Value rows(OpBuilder &b, Location loc, Value x, Value first, int64_t count) {
  int64_t cols = cast<RankedTensorType>(x.getType()).getDimSize(1);
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({count, cols}, b.getF32Type()), x,
      {first, b.getIndexAttr(0)}, {b.getIndexAttr(count), b.getIndexAttr(cols)},
      {b.getIndexAttr(1), b.getIndexAttr(1)});
}

Value insertRows(OpBuilder &b, Location loc, Value part, Value into,
                 Value first) {
  auto type = cast<RankedTensorType>(part.getType());
  return tensor::InsertSliceOp::create(
      b, loc, part, into, {first, b.getIndexAttr(0)},
      {b.getIndexAttr(type.getDimSize(0)), b.getIndexAttr(type.getDimSize(1))},
      {b.getIndexAttr(1), b.getIndexAttr(1)});
}

/// A marked parallel generic over the 2-D shape of `inputs[0]` whose inputs
/// are read through `maps` (the result's is the identity).
Value blockOp(OpBuilder &b, Location loc, ValueRange inputs,
              ArrayRef<AffineMap> maps, BodyBuilder body) {
  SmallVector<AffineMap> all(maps);
  all.push_back(b.getMultiDimIdentityMap(2));
  return marked(b, genericOp(b, loc, inputs,
                             emptyTensor(b, loc, sizesOf(b, loc, inputs[0]),
                                         b.getF32Type()),
                             all, {IteratorType::parallel, IteratorType::parallel},
                             body));
}

/// The maps of a 2-D tile, one value per row, one value per column.
struct TileMaps {
  AffineMap id, row, col;
  explicit TileMaps(OpBuilder &b)
      : id(b.getMultiDimIdentityMap(2)), row(id.dropResult(1)),
        col(id.dropResult(0)) {}
};

/// Scores scaled by 1/√dk, -inf where the key lies after the query: with
/// queries as rows, key column c of query row r hides when c > r + shift;
/// with keys as rows (`keysAreRows`), when r > c + shift. `shift` is the
/// query block's first position minus the key block's.
Value maskBlock(OpBuilder &b, Location loc, Value scores, int64_t headDim,
                Value shift, bool keysAreRows) {
  Type f32 = b.getF32Type();
  Value scale = floatConst(b, loc, f32, 1.0 / std::sqrt(double(headDim)));
  return marked(
      b, elementwise(b, loc, scores, f32,
                     [&](OpBuilder &nb, Location nl, ValueRange a) {
                       Value r = linalg::IndexOp::create(nb, nl, 0);
                       Value c = linalg::IndexOp::create(nb, nl, 1);
                       Value key = keysAreRows ? r : c;
                       Value query = keysAreRows ? c : r;
                       Value last = arith::AddIOp::create(nb, nl, query, shift);
                       Value visible = arith::CmpIOp::create(
                           nb, nl, arith::CmpIPredicate::sle, key, last);
                       Value s = arith::MulFOp::create(nb, nl, a[0], scale);
                       return arith::SelectOp::create(
                                  nb, nl, visible, s,
                                  floatConst(nb, nl, f32, kNegInf))
                           .getResult();
                     }));
}

Value mulIndex(OpBuilder &b, Location loc, Value i, int64_t c) {
  return arith::MulIOp::create(b, loc, i, index(b, loc, c));
}

/// The running statistics of one query block over the key blocks seen.
struct Running {
  Value max, sum, out; ///< m (blk), l (blk), O (blk, dk)
};

/// One key block's step of the forward's online softmax: `s` the block's
/// masked scores (blk, blk), `vT` its values transposed (dk, blk). The new
/// statistics overwrite the old in place (scf.for yields what its iteration
/// received, so bufferization keeps one buffer each): e^(m − m') is taken
/// before m' overwrites m.
Running onlineStep(OpBuilder &b, Location loc, const Running &r, Value s,
                   Value vT) {
  Type f32 = b.getF32Type();
  TileMaps m(b);
  AffineMap vec = b.getMultiDimIdentityMap(1);
  SmallVector<IteratorType> par1{IteratorType::parallel};
  SmallVector<IteratorType> par2(2, IteratorType::parallel);
  auto mul = [](OpBuilder &nb, Location l, ValueRange a) {
    return arith::MulFOp::create(nb, l, a[0], a[1]).getResult();
  };
  auto maximum = [](OpBuilder &nb, Location l, ValueRange a) {
    return arith::MaximumFOp::create(nb, l, a[0], a[1]).getResult();
  };
  Value blockMax = marked(b, reduceLastDim(b, loc, s, f32, kNegInf, maximum));
  // e^(m − m'): 0 at the first block, where m = -inf and m' is finite (a
  // query sees at least key 0).
  Value alpha = marked(b, elementwise(
      b, loc, ValueRange{r.max, blockMax}, f32,
      [](OpBuilder &nb, Location l, ValueRange a) {
        Value mx = arith::MaximumFOp::create(nb, l, a[0], a[1]);
        Value d = arith::SubFOp::create(nb, l, a[0], mx);
        return math::ExpOp::create(nb, l, d).getResult();
      }));
  Value max = marked(b, genericOp(b, loc, ValueRange{blockMax}, r.max,
                                  {vec, vec}, par1, maximum));
  Value p = marked(b, probsFromLse(b, loc, s, max));
  Value scaledSum = marked(
      b, genericOp(b, loc, ValueRange{alpha}, r.sum, {vec, vec}, par1, mul));
  Value sum = marked(
      b, genericOp(b, loc, ValueRange{p}, scaledSum, {m.id, m.row},
                   {IteratorType::parallel, IteratorType::reduction},
                   [](OpBuilder &nb, Location l, ValueRange a) {
                     return arith::AddFOp::create(nb, l, a[1], a[0])
                         .getResult();
                   }));
  Value scaledOut = marked(b, genericOp(b, loc, ValueRange{alpha}, r.out,
                                        {m.row, m.id}, par2, mul));
  return {max, sum, accumulate2d(b, loc, p, vT, scaledOut)};
}

} // namespace

std::pair<Value, Value> heads::attentionLseByBlocks(OpBuilder &b, Location loc,
                                                    Value q, Value k, Value v,
                                                    const HeadsLayout &l) {
  Type f32 = b.getF32Type();
  int64_t blk = l.block, dk = l.headDim;
  SmallVector<Value> r = forEachHead(
      b, loc, l, outputAndLse(b, loc, q, l),
      [&](OpBuilder &hb, Location hl, Value bi, Value h, Value kvh,
          ValueRange acc) -> SmallVector<Value> {
        HeadSlice qs = headSlice(hb, bi, h, l), ks = headSlice(hb, bi, kvh, l);
        Value vT = transpose2d(hb, hl, extractHead(hb, hl, v, ks));
        Value outInit = emptyTensor(
            hb, hl, {hb.getIndexAttr(l.seq), hb.getIndexAttr(dk)}, f32);
        Value lseInit = emptyTensor(hb, hl, {hb.getIndexAttr(l.seq)}, f32);
        auto queryBlocks = scf::ForOp::create(
            hb, hl, index(hb, hl, 0), index(hb, hl, l.seq / blk),
            index(hb, hl, 1), ValueRange{outInit, lseInit},
            [&](OpBuilder &ib, Location il, Value i, ValueRange head) {
              Value qFirst = mulIndex(ib, il, i, blk);
              Value qi = extractHead(ib, il, q,
                                     headRows(ib, bi, qFirst, blk, h, l));
              SmallVector<Value> start{
                  filledTensor(ib, il, {ib.getIndexAttr(blk)}, f32, kNegInf),
                  filledTensor(ib, il, {ib.getIndexAttr(blk)}, f32, 0.0),
                  filledTensor(ib, il,
                               {ib.getIndexAttr(blk), ib.getIndexAttr(dk)},
                               f32, 0.0)};
              Value upTo = arith::AddIOp::create(ib, il, i, index(ib, il, 1));
              auto keyBlocks = scf::ForOp::create(
                  ib, il, index(ib, il, 0), upTo, index(ib, il, 1), start,
                  [&](OpBuilder &jb, Location jl, Value j, ValueRange run) {
                    Value kFirst = mulIndex(jb, jl, j, blk);
                    Value kj = extractHead(
                        jb, jl, k, headRows(jb, bi, kFirst, blk, kvh, l));
                    Value shift = arith::SubIOp::create(jb, jl, qFirst, kFirst);
                    Value s = maskBlock(jb, jl, projection2d(jb, jl, qi, kj),
                                        dk, shift, /*keysAreRows=*/false);
                    Running next =
                        onlineStep(jb, jl, {run[0], run[1], run[2]}, s,
                                   columns(jb, jl, vT, kFirst, blk));
                    scf::YieldOp::create(
                        jb, jl, ValueRange{next.max, next.sum, next.out});
                  });
              Value max = keyBlocks.getResult(0), sum = keyBlocks.getResult(1);
              TileMaps m(ib);
              Value o = blockOp(ib, il, ValueRange{keyBlocks.getResult(2), sum},
                                {m.id, m.row},
                                [](OpBuilder &nb, Location nl, ValueRange a) {
                                  return arith::DivFOp::create(nb, nl, a[0],
                                                               a[1])
                                      .getResult();
                                });
              Value lse = marked(
                  ib, elementwise(ib, il, ValueRange{max, sum}, f32,
                                  [](OpBuilder &nb, Location nl, ValueRange a) {
                                    Value lg = math::LogOp::create(nb, nl, a[1]);
                                    return arith::AddFOp::create(nb, nl, a[0], lg)
                                        .getResult();
                                  }));
              scf::YieldOp::create(
                  ib, il,
                  ValueRange{insertRows(ib, il, o, head[0], qFirst),
                             insertSegment(ib, il, lse, head[1], qFirst)});
            });
        return {insertHead(hb, hl, queryBlocks.getResult(0), acc[0], qs),
                insertHead(hb, hl, queryBlocks.getResult(1), acc[1],
                           lseSlice(hb, bi, h, l))};
      });
  return {r[0], r[1]};
}

SmallVector<Value> heads::attentionGradByBlocks(OpBuilder &b, Location loc,
                                                Value q, Value k, Value v,
                                                Value out, Value lse, Value dO,
                                                const HeadsLayout &l) {
  Type f32 = b.getF32Type();
  int64_t blk = l.block, dk = l.headDim, blocks = l.seq / blk;
  double scale = 1.0 / std::sqrt(double(dk));
  SmallVector<Value> init = zerosLike(b, loc, ValueRange{q, k, v});
  return forEachHead(
      b, loc, l, init,
      [&](OpBuilder &hb, Location hl, Value bi, Value h, Value kvh,
          ValueRange acc) -> SmallVector<Value> {
        HeadSlice qs = headSlice(hb, bi, h, l), ks = headSlice(hb, bi, kvh, l);
        Value qh = extractHead(hb, hl, q, qs), kh = extractHead(hb, hl, k, ks);
        Value vh = extractHead(hb, hl, v, ks);
        Value dOh = extractHead(hb, hl, dO, qs);
        Value lseh = extractHead(hb, hl, lse, lseSlice(hb, bi, h, l));
        TileMaps m(hb);
        // D = rowsum(dO · O) (= rowsum(P · dP)), one per query.
        Value rowDot = marked(
            hb, contraction(
                    hb, hl, dOh, extractHead(hb, hl, out, qs),
                    filledTensor(hb, hl, {hb.getIndexAttr(l.seq)}, f32, 0.0),
                    {m.id, m.id, m.row}));
        Value qT = transpose2d(hb, hl, qh), kT = transpose2d(hb, hl, kh);
        Value dOT = transpose2d(hb, hl, dOh);
        Value dQInit = filledTensor(
            hb, hl, {hb.getIndexAttr(l.seq), hb.getIndexAttr(dk)}, f32, 0.0);
        Value c = floatConst(hb, hl, f32, scale);
        auto keyBlocks = scf::ForOp::create(
            hb, hl, index(hb, hl, 0), index(hb, hl, blocks), index(hb, hl, 1),
            ValueRange{dQInit, acc[1], acc[2]},
            [&](OpBuilder &jb, Location jl, Value j, ValueRange grads) {
              Value kFirst = mulIndex(jb, jl, j, blk);
              Value kj = rows(jb, jl, kh, kFirst, blk);
              Value vj = rows(jb, jl, vh, kFirst, blk);
              Value kTj = columns(jb, jl, kT, kFirst, blk);
              Value zero = filledTensor(
                  jb, jl, {jb.getIndexAttr(blk), jb.getIndexAttr(dk)}, f32,
                  0.0);
              auto queryBlocks = scf::ForOp::create(
                  jb, jl, j, index(jb, jl, blocks), index(jb, jl, 1),
                  ValueRange{grads[0], zero, zero},
                  [&](OpBuilder &ib, Location il, Value i, ValueRange g) {
                    Value qFirst = mulIndex(ib, il, i, blk);
                    Value qi = rows(ib, il, qh, qFirst, blk);
                    Value dOi = rows(ib, il, dOh, qFirst, blk);
                    Value shift = arith::SubIOp::create(ib, il, qFirst, kFirst);
                    Value sT = maskBlock(ib, il, projection2d(ib, il, kj, qi),
                                         dk, shift, /*keysAreRows=*/true);
                    Value pT = blockOp(
                        ib, il, ValueRange{sT, segment(ib, il, lseh, qFirst, blk)},
                        {m.id, m.col},
                        [](OpBuilder &nb, Location nl, ValueRange a) {
                          Value d = arith::SubFOp::create(nb, nl, a[0], a[1]);
                          return math::ExpOp::create(nb, nl, d).getResult();
                        });
                    Value dPT = projection2d(ib, il, vj, dOi);
                    Value dST = blockOp(
                        ib, il,
                        ValueRange{pT, dPT, segment(ib, il, rowDot, qFirst, blk)},
                        {m.id, m.id, m.col},
                        [&](OpBuilder &nb, Location nl, ValueRange a) {
                          Value d = arith::SubFOp::create(nb, nl, a[1], a[2]);
                          Value p = arith::MulFOp::create(nb, nl, a[0], d);
                          return arith::MulFOp::create(nb, nl, p, c).getResult();
                        });
                    Value dV = accumulate2d(
                        ib, il, pT, columns(ib, il, dOT, qFirst, blk), g[2]);
                    Value dK = accumulate2d(
                        ib, il, dST, columns(ib, il, qT, qFirst, blk), g[1]);
                    Value dQi = accumulate2d(ib, il, transpose2d(ib, il, dST),
                                             kTj, rows(ib, il, g[0], qFirst, blk));
                    scf::YieldOp::create(
                        ib, il,
                        ValueRange{insertRows(ib, il, dQi, g[0], qFirst), dK, dV});
                  });
              HeadSlice kvRows = headRows(jb, bi, kFirst, blk, kvh, l);
              scf::YieldOp::create(
                  jb, jl,
                  ValueRange{queryBlocks.getResult(0),
                             addToHead(jb, jl, queryBlocks.getResult(1),
                                       grads[1], kvRows),
                             addToHead(jb, jl, queryBlocks.getResult(2),
                                       grads[2], kvRows)});
            });
        return {insertHead(hb, hl, keyBlocks.getResult(0), acc[0], qs),
                keyBlocks.getResult(1), keyBlocks.getResult(2)};
      });
}
