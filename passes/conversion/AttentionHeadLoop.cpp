//===- AttentionHeadLoop.cpp - the steps of attention's head loops --------===//

#include "passes/conversion/AttentionHeadLoop.h"

#include "passes/common/Builders.h"
#include "passes/common/Projection.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::tlm;
using namespace mlir::tlm::heads;

Value heads::marked(OpBuilder &b, Value v) {
  v.getDefiningOp()->setAttr(kTileInLoopAttr, b.getUnitAttr());
  return v;
}

Value heads::projection2d(OpBuilder &b, Location loc, Value x, Value w) {
  return marked(b, projection(b, loc, x, w));
}

Value heads::accumulate2d(OpBuilder &b, Location loc, Value x, Value w,
                          Value acc) {
  return marked(b, linalg::MatmulTransposeBOp::create(
                       b, loc, TypeRange{acc.getType()}, ValueRange{x, w},
                       ValueRange{acc})
                       .getResult(0));
}

Value heads::transpose2d(OpBuilder &b, Location loc, Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  Value init = emptyTensor(b, loc,
                           {b.getIndexAttr(type.getDimSize(1)),
                            b.getIndexAttr(type.getDimSize(0))},
                           type.getElementType());
  return marked(b, linalg::TransposeOp::create(b, loc, x, init,
                                               ArrayRef<int64_t>{1, 0})
                       .getResult()[0]);
}

HeadSlice heads::headRows(OpBuilder &b, Value bi, OpFoldResult first,
                          int64_t rows, Value h, const HeadsLayout &l) {
  HeadSlice s;
  s.offsets = {bi, first, h, b.getIndexAttr(0)};
  s.sizes = {b.getIndexAttr(1), b.getIndexAttr(rows), b.getIndexAttr(1),
             b.getIndexAttr(l.headDim)};
  s.strides = SmallVector<OpFoldResult>(4, b.getIndexAttr(1));
  s.type = RankedTensorType::get({rows, l.headDim}, b.getF32Type());
  return s;
}

HeadSlice heads::headSlice(OpBuilder &b, Value bi, Value h,
                           const HeadsLayout &l) {
  return headRows(b, bi, b.getIndexAttr(0), l.seq, h, l);
}

HeadSlice heads::lseSlice(OpBuilder &b, Value bi, Value h,
                          const HeadsLayout &l) {
  HeadSlice s;
  s.offsets = {bi, h, b.getIndexAttr(0)};
  s.sizes = {b.getIndexAttr(1), b.getIndexAttr(1), b.getIndexAttr(l.seq)};
  s.strides = SmallVector<OpFoldResult>(3, b.getIndexAttr(1));
  s.type = RankedTensorType::get({l.seq}, b.getF32Type());
  return s;
}

Value heads::extractHead(OpBuilder &b, Location loc, Value x,
                         const HeadSlice &s) {
  return tensor::ExtractSliceOp::create(b, loc, s.type, x, s.offsets, s.sizes,
                                        s.strides);
}

Value heads::insertHead(OpBuilder &b, Location loc, Value part, Value into,
                        const HeadSlice &s) {
  return tensor::InsertSliceOp::create(b, loc, part, into, s.offsets, s.sizes,
                                       s.strides);
}

Value heads::addToHead(OpBuilder &b, Location loc, Value part, Value into,
                       const HeadSlice &s) {
  Value sum = marked(
      b, elementwise(b, loc, ValueRange{extractHead(b, loc, into, s), part},
                     b.getF32Type(), [](OpBuilder &nb, Location l, ValueRange a) {
                       return arith::AddFOp::create(nb, l, a[0], a[1])
                           .getResult();
                     }));
  return insertHead(b, loc, sum, into, s);
}

SmallVector<Value> heads::outputAndLse(OpBuilder &b, Location loc, Value q,
                                       const HeadsLayout &l) {
  Type f32 = b.getF32Type();
  return {emptyTensor(b, loc, sizesOf(b, loc, q), f32),
          emptyTensor(b, loc,
                      {b.getIndexAttr(l.batch), b.getIndexAttr(l.heads),
                       b.getIndexAttr(l.seq)},
                      f32)};
}

SmallVector<Value> heads::zerosLike(OpBuilder &b, Location loc,
                                    ValueRange values) {
  SmallVector<Value> zeros;
  for (Value v : values)
    zeros.push_back(
        filledTensor(b, loc, sizesOf(b, loc, v), b.getF32Type(), 0.0));
  return zeros;
}

SmallVector<Value> heads::forEachHead(OpBuilder &b, Location loc,
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
