//===- AttentionParts.cpp - pieces every attention lowering shares --------===//

#include "passes/common/AttentionParts.h"
#include "passes/common/Builders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tlm;
using utils::IteratorType;

std::pair<Value, Value> tlm::ropeTables(OpBuilder &b, Location loc, Value x,
                                        int64_t seqDim, Value positions,
                                        Value offset, double theta, Type elem) {
  int64_t d = cast<RankedTensorType>(x.getType()).getShape().back();
  SmallVector<OpFoldResult> sizes;
  if (positions)
    sizes = sizesOf(b, loc, positions);
  else
    sizes.push_back(sizesOf(b, loc, x)[seqDim]);
  sizes.push_back(b.getIndexAttr(d / 2));
  int64_t rank = sizes.size();
  Value cosInit = emptyTensor(b, loc, sizes, elem);
  Value sinInit = emptyTensor(b, loc, sizes, elem);
  AffineMap id = b.getMultiDimIdentityMap(rank);
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  if (positions) {
    inputs.push_back(positions);
    maps.push_back(id.dropResult(rank - 1));
  }
  maps.append({id, id});
  SmallVector<IteratorType> iters(rank, IteratorType::parallel);
  Type f64 = b.getF64Type();
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{cosInit.getType(), sinInit.getType()}, inputs,
      ValueRange{cosInit, sinInit}, maps, iters,
      [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value pos;
        if (positions) {
          pos = castFloat(nb, nl, a[0], f64);
        } else {
          Value idx = linalg::IndexOp::create(nb, nl, 0);
          if (offset)
            idx = arith::AddIOp::create(nb, nl, idx, offset);
          pos = castFloat(nb, nl, idx, f64);
        }
        Value i =
            castFloat(nb, nl, linalg::IndexOp::create(nb, nl, rank - 1), f64);
        // theta^(-2i/d) = exp(i · (-2 ln(theta) / d))
        Value k = floatConst(nb, nl, f64, -2.0 * std::log(theta) / d);
        Value freq =
            math::ExpOp::create(nb, nl, arith::MulFOp::create(nb, nl, i, k));
        Value angle = arith::MulFOp::create(nb, nl, pos, freq);
        Value c = castFloat(nb, nl, math::CosOp::create(nb, nl, angle), elem);
        Value s = castFloat(nb, nl, math::SinOp::create(nb, nl, angle), elem);
        linalg::YieldOp::create(nb, nl, ValueRange{c, s});
      });
  return {generic.getResult(0), generic.getResult(1)};
}

Value tlm::applyRope(OpBuilder &b, Location loc, Value x, int64_t seqDim,
                     Value positions, std::pair<Value, Value> tables) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  int64_t d = type.getShape().back();
  Type elem = type.getElementType();
  Type f32 = b.getF32Type();
  auto [cosT, sinT] = tables;

  // View x as (..., d/2, 2) so each pair is two affine reads.
  SmallVector<OpFoldResult> pairSizes = sizesOf(b, loc, x);
  pairSizes.back() = b.getIndexAttr(d / 2);
  pairSizes.push_back(b.getIndexAttr(2));
  SmallVector<int64_t> pairShape(type.getShape());
  pairShape.back() = d / 2;
  pairShape.push_back(2);
  SmallVector<ReassociationIndices> reassoc;
  for (int64_t i = 0; i + 1 < rank; ++i)
    reassoc.push_back({i});
  reassoc.push_back({rank - 1, rank});
  Value pairs = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get(pairShape, elem), x, reassoc, pairSizes);

  // Iteration space (x dims..., i, c) with rank + 1 loops.
  int64_t loops = rank + 1;
  SmallVector<AffineExpr> dims;
  for (int64_t i = 0; i < loops; ++i)
    dims.push_back(b.getAffineDimExpr(i));
  SmallVector<AffineExpr> aExprs(dims.begin(), dims.end() - 1);
  SmallVector<AffineExpr> bExprs(aExprs);
  aExprs.push_back(b.getAffineConstantExpr(0));
  bExprs.push_back(b.getAffineConstantExpr(1));
  // Table read: the position dims (right-aligned to 0..seqDim), then pair i.
  SmallVector<AffineExpr> tExprs;
  if (positions) {
    auto pType = cast<RankedTensorType>(positions.getType());
    int64_t shift = seqDim + 1 - pType.getRank();
    for (int64_t j = 0; j < pType.getRank(); ++j) {
      bool broadcast =
          pType.getDimSize(j) == 1 && type.getDimSize(j + shift) != 1;
      tExprs.push_back(broadcast ? b.getAffineConstantExpr(0)
                                 : dims[j + shift]);
    }
  } else {
    tExprs.push_back(dims[seqDim]);
  }
  tExprs.push_back(dims[rank - 1]);
  MLIRContext *ctx = b.getContext();
  AffineMap aMap = AffineMap::get(loops, 0, aExprs, ctx);
  AffineMap bMap = AffineMap::get(loops, 0, bExprs, ctx);
  AffineMap tMap = AffineMap::get(loops, 0, tExprs, ctx);
  AffineMap id = b.getMultiDimIdentityMap(loops);

  Value init = emptyTensor(b, loc, pairSizes, elem);
  SmallVector<IteratorType> iters(loops, IteratorType::parallel);
  Value rotated =
      linalg::GenericOp::create(
          b, loc, TypeRange{init.getType()},
          ValueRange{pairs, pairs, cosT, sinT}, ValueRange{init},
          ArrayRef<AffineMap>{aMap, bMap, tMap, tMap, id}, iters,
          [&](OpBuilder &nb, Location nl, ValueRange a) {
            Value xa = castFloat(nb, nl, a[0], f32);
            Value xb = castFloat(nb, nl, a[1], f32);
            Value c = a[2], s = a[3];
            // c == 0: a·cos − b·sin;  c == 1: a·sin + b·cos.
            Value first = arith::SubFOp::create(
                nb, nl, arith::MulFOp::create(nb, nl, xa, c),
                arith::MulFOp::create(nb, nl, xb, s));
            Value second = arith::AddFOp::create(
                nb, nl, arith::MulFOp::create(nb, nl, xa, s),
                arith::MulFOp::create(nb, nl, xb, c));
            Value which = linalg::IndexOp::create(nb, nl, rank);
            Value zero = arith::ConstantIndexOp::create(nb, nl, 0);
            Value isFirst = arith::CmpIOp::create(
                nb, nl, arith::CmpIPredicate::eq, which, zero);
            Value r = arith::SelectOp::create(nb, nl, isFirst, first, second);
            linalg::YieldOp::create(nb, nl, castFloat(nb, nl, r, elem));
          })
          .getResult(0);
  return tensor::CollapseShapeOp::create(b, loc, type, rotated, reassoc);
}

Value tlm::applyRope(OpBuilder &b, Location loc, Value x, int64_t seqDim,
                     Value positions, double theta, Value offset) {
  return applyRope(
      b, loc, x, seqDim, positions,
      ropeTables(b, loc, x, seqDim, positions, offset, theta, b.getF32Type()));
}

std::pair<Value, Value> tlm::applyRopeQK(OpBuilder &b, Location loc, Value q,
                                         Value k, Value positions, double theta,
                                         Value offset) {
  std::pair<Value, Value> tables =
      ropeTables(b, loc, q, 1, positions, offset, theta, b.getF32Type());
  return {applyRope(b, loc, q, 1, positions, tables),
          applyRope(b, loc, k, 1, positions, tables)};
}

Value tlm::splitHeads(OpBuilder &b, Location loc, Value x, int64_t heads,
                      int64_t dk) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<OpFoldResult> sizes = sizesOf(b, loc, x);
  sizes.back() = b.getIndexAttr(heads);
  sizes.push_back(b.getIndexAttr(dk));
  auto outType =
      RankedTensorType::get({type.getDimSize(0), type.getDimSize(1), heads, dk},
                            type.getElementType());
  return tensor::ExpandShapeOp::create(
      b, loc, outType, x, SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}},
      sizes);
}

Value tlm::mergeHeads(OpBuilder &b, Location loc, Value x) {
  return tensor::CollapseShapeOp::create(
      b, loc, x, SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
}

Value tlm::positionMajor(OpBuilder &b, Location loc, Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<OpFoldResult> sizes = sizesOf(b, loc, x);
  std::swap(sizes[0], sizes[1]);
  Value init = emptyTensor(b, loc, sizes, type.getElementType());
  return linalg::TransposeOp::create(b, loc, x, init,
                                     ArrayRef<int64_t>{1, 0, 2, 3})
      .getResult()[0];
}

Value tlm::newPositions(OpBuilder &b, Location loc, Value lengths, Value q) {
  Type elem = cast<RankedTensorType>(lengths.getType()).getElementType();
  SmallVector<OpFoldResult> sizes{sizesOf(b, loc, q)[0], sizesOf(b, loc, q)[1]};
  Value init = emptyTensor(b, loc, sizes, elem);
  MLIRContext *ctx = b.getContext();
  AffineMap byBatch = AffineMap::get(2, 0, {b.getAffineDimExpr(0)}, ctx);
  SmallVector<IteratorType> iters(2, IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, ValueRange{lengths},
             ValueRange{init},
             ArrayRef<AffineMap>{byBatch, b.getMultiDimIdentityMap(2)}, iters,
             [&](OpBuilder &nb, Location nl, ValueRange a) {
               Value i = arith::IndexCastOp::create(
                   nb, nl, elem, linalg::IndexOp::create(nb, nl, 1));
               linalg::YieldOp::create(
                   nb, nl, arith::AddIOp::create(nb, nl, a[0], i).getResult());
             })
      .getResult(0);
}

CachedAttentionParts tlm::splitCachedAttention(OpBuilder &b,
                                               CachedAttentionOp op) {
  Location loc = op.getLoc();
  CachedAttentionParts p;
  p.heads = op.getNumHeads();
  p.kvHeads = op.getNumKvHeads();
  p.headDim = op.getHeadDim();
  p.group = p.heads / p.kvHeads;
  p.q = splitHeads(b, loc, op.getQ(), p.heads, p.headDim);
  p.k = splitHeads(b, loc, op.getK(), p.kvHeads, p.headDim);
  p.v = splitHeads(b, loc, op.getV(), p.kvHeads, p.headDim);
  p.kPast = splitHeads(b, loc, op.getKPast(), p.kvHeads, p.headDim);
  p.vPast = splitHeads(b, loc, op.getVPast(), p.kvHeads, p.headDim);
  p.past = tensor::DimOp::create(b, loc, op.getKPast(), 0);
  p.lengths = op.getLengths();
  if (std::optional<double> theta = op.getRopeThetaValue()) {
    if (p.lengths)
      std::tie(p.q, p.k) = applyRopeQK(
          b, loc, p.q, p.k, newPositions(b, loc, p.lengths, p.q), *theta);
    else
      std::tie(p.q, p.k) =
          applyRopeQK(b, loc, p.q, p.k, Value(), *theta, p.past);
  }
  p.kRows = positionMajor(b, loc, p.k);
  p.vRows = positionMajor(b, loc, p.v);
  p.kNew = mergeHeads(b, loc, p.kRows);
  p.vNew = mergeHeads(b, loc, p.vRows);
  return p;
}
