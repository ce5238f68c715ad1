//===- Builders.cpp - IR builders shared by the passes --------------------===//

#include "passes/common/Builders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

using namespace mlir;
using namespace mlir::tlm;

Value tlm::index(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value tlm::emptyTensor(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                       Type elementType) {
  return tensor::EmptyOp::create(b, loc, sizes, elementType);
}

Value tlm::filledTensor(OpBuilder &b, Location loc,
                        ArrayRef<OpFoldResult> sizes, Type elementType,
                        double value) {
  Value empty = emptyTensor(b, loc, sizes, elementType);
  Value cst = floatConst(b, loc, elementType, value);
  return linalg::FillOp::create(b, loc, ValueRange{cst}, ValueRange{empty})
      .getResult(0);
}

SmallVector<OpFoldResult> tlm::sizesOf(OpBuilder &b, Location loc, Value v) {
  return tensor::getMixedSizes(b, loc, v);
}

Value tlm::floatConst(OpBuilder &b, Location loc, Type type, double value) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
}

Value tlm::castTo(OpBuilder &b, Location loc, Value v, Type type) {
  if (v.getType() == type)
    return v;
  return tensor::CastOp::create(b, loc, type, v);
}

Value tlm::dimAsFloat(OpBuilder &b, Location loc, Value v, int64_t dim,
                      Type type) {
  int64_t size = cast<RankedTensorType>(v.getType()).getDimSize(dim);
  if (!ShapedType::isDynamic(size))
    return floatConst(b, loc, type, static_cast<double>(size));
  Value d = tensor::DimOp::create(b, loc, v, dim);
  return castFloat(b, loc, d, type);
}

Value tlm::widenToF32(OpBuilder &b, Location loc, Value v) {
  Type type = v.getType(), f32 = b.getF32Type();
  if (getElementTypeOrSelf(type) == f32)
    return v;
  if (auto vec = dyn_cast<VectorType>(type))
    f32 = vec.clone(f32);
  return arith::ExtFOp::create(b, loc, f32, v);
}

Value tlm::castFloat(OpBuilder &b, Location loc, Value v, Type to) {
  Type from = v.getType();
  if (from == to)
    return v;
  if (isa<IndexType>(to)) {
    assert(isa<IntegerType>(from) && "only integers convert to index");
    return arith::IndexCastOp::create(b, loc, to, v);
  }
  if (isa<IndexType>(from))
    v = arith::IndexCastOp::create(b, loc, b.getI64Type(), v),
    from = v.getType();
  if (isa<IntegerType>(from))
    return arith::SIToFPOp::create(b, loc, to, v);
  auto ff = cast<FloatType>(from), tf = cast<FloatType>(to);
  if (ff.getWidth() < tf.getWidth())
    return arith::ExtFOp::create(b, loc, to, v);
  return arith::TruncFOp::create(b, loc, to, v);
}

Value tlm::elementwise(OpBuilder &b, Location loc, ValueRange inputs,
                       Type resultType, BodyBuilder body) {
  Value first = inputs.front();
  int64_t rank = cast<RankedTensorType>(first.getType()).getRank();
  Value init = emptyTensor(b, loc, sizesOf(b, loc, first), resultType);
  SmallVector<AffineMap> maps(inputs.size() + 1,
                              b.getMultiDimIdentityMap(rank));
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, maps,
             iters,
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               Value r = body(nb, nl, args.drop_back());
               linalg::YieldOp::create(nb, nl, r);
             })
      .getResult(0);
}

Value tlm::genericOp(OpBuilder &b, Location loc, ValueRange inputs,
                     Value init, ArrayRef<AffineMap> maps,
                     ArrayRef<utils::IteratorType> iterators,
                     BodyBuilder body) {
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, maps,
             iterators,
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               linalg::YieldOp::create(nb, nl, body(nb, nl, args));
             })
      .getResult(0);
}

Value tlm::contraction(OpBuilder &b, Location loc, Value a, Value bv,
                       Value acc, ArrayRef<AffineMap> maps) {
  assert(maps.size() == 3 && "a, b and the accumulator");
  unsigned loops = maps[2].getNumDims();
  SmallVector<utils::IteratorType> iters(loops,
                                         utils::IteratorType::reduction);
  for (AffineExpr e : maps[2].getResults())
    iters[cast<AffineDimExpr>(e).getPosition()] = utils::IteratorType::parallel;
  return genericOp(b, loc, ValueRange{a, bv}, acc, maps, iters,
                   [](OpBuilder &nb, Location nl, ValueRange x) {
                     Value p = arith::MulFOp::create(nb, nl, x[0], x[1]);
                     return arith::AddFOp::create(nb, nl, x[2], p).getResult();
                   });
}

Value tlm::reduceLastDim(OpBuilder &b, Location loc, Value input, Type accType,
                         double init, BodyBuilder body) {
  int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
  SmallVector<OpFoldResult> sizes = sizesOf(b, loc, input);
  sizes.pop_back();
  Value acc = filledTensor(b, loc, sizes, accType, init);
  AffineMap in = b.getMultiDimIdentityMap(rank);
  AffineMap out = in.dropResult(rank - 1);
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  iters.back() = utils::IteratorType::reduction;
  return linalg::GenericOp::create(
             b, loc, TypeRange{acc.getType()}, ValueRange{input},
             ValueRange{acc}, ArrayRef<AffineMap>{in, out}, iters,
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               Value r = body(nb, nl, args);
               linalg::YieldOp::create(nb, nl, r);
             })
      .getResult(0);
}

Value tlm::projection(OpBuilder &b, Location loc, Value x, Value w) {
  auto xType = cast<RankedTensorType>(x.getType());
  auto wType = cast<RankedTensorType>(w.getType());
  int64_t rank = xType.getRank();
  Type elem = xType.getElementType();
  SmallVector<OpFoldResult> outSizes = sizesOf(b, loc, x);
  outSizes.back() = b.getIndexAttr(wType.getDimSize(0));
  Value acc = filledTensor(b, loc, outSizes, elem, 0.0);
  // A narrower W (bf16, f16) is widened in the body, as it is read.
  bool widen = wType.getElementType() != elem;
  if (rank == 2 && !widen)
    return linalg::MatmulTransposeBOp::create(b, loc, TypeRange{acc.getType()},
                                              ValueRange{x, w}, ValueRange{acc})
        .getResult(0);

  // Batched rows: one contraction generic over (rows..., n, k). Collapsing
  // the rows into one dim would need an expand_shape with several dynamic
  // dims afterwards, which crashes upstream expand-strided-metadata (MLIR 22).
  int64_t loops = rank + 1;
  SmallVector<AffineExpr> xe, oe;
  for (int64_t i = 0; i + 1 < rank; ++i) {
    xe.push_back(b.getAffineDimExpr(i));
    oe.push_back(b.getAffineDimExpr(i));
  }
  AffineExpr n = b.getAffineDimExpr(rank - 1), k = b.getAffineDimExpr(rank);
  xe.push_back(k);
  oe.push_back(n);
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps{AffineMap::get(loops, 0, xe, ctx),
                              AffineMap::get(loops, 0, {n, k}, ctx),
                              AffineMap::get(loops, 0, oe, ctx)};
  SmallVector<utils::IteratorType> iters(loops, utils::IteratorType::parallel);
  iters.back() = utils::IteratorType::reduction;
  return linalg::GenericOp::create(
             b, loc, TypeRange{acc.getType()}, ValueRange{x, w},
             ValueRange{acc}, maps, iters,
             [&](OpBuilder &nb, Location nl, ValueRange a) {
               Value w = widen ? castFloat(nb, nl, a[1], elem) : a[1];
               Value p = arith::MulFOp::create(nb, nl, a[0], w);
               linalg::YieldOp::create(
                   nb, nl, ValueRange{arith::AddFOp::create(nb, nl, a[2], p)});
             })
      .getResult(0);
}

Value tlm::siluScalar(OpBuilder &b, Location loc, Value z) {
  Type t = z.getType();
  Value one = floatConst(b, loc, t, 1.0);
  Value negZ = arith::NegFOp::create(b, loc, z);
  Value e = math::ExpOp::create(b, loc, negZ);
  Value den = arith::AddFOp::create(b, loc, one, e);
  return arith::DivFOp::create(b, loc, z, den);
}

Value tlm::softmaxLastDim(OpBuilder &b, Location loc, Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  Type elem = type.getElementType();
  Type f32 = b.getF32Type();
  double negInf = -std::numeric_limits<double>::infinity();

  // Pass 1: row max (in the element type: max is exact).
  Value rowMax = reduceLastDim(
      b, loc, x, elem, negInf, [](OpBuilder &nb, Location nl, ValueRange a) {
        return arith::MaximumFOp::create(nb, nl, a[0], a[1]).getResult();
      });
  // Pass 2: sum of exp(x - max) in f32.
  AffineMap id = b.getMultiDimIdentityMap(rank);
  AffineMap row = id.dropResult(rank - 1);
  SmallVector<OpFoldResult> rowSizes = sizesOf(b, loc, x);
  rowSizes.pop_back();
  Value sum0 = filledTensor(b, loc, rowSizes, f32, 0.0);
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  SmallVector<utils::IteratorType> redIters(iters);
  redIters.back() = utils::IteratorType::reduction;
  Value rowSum =
      linalg::GenericOp::create(
          b, loc, TypeRange{sum0.getType()}, ValueRange{x, rowMax},
          ValueRange{sum0}, ArrayRef<AffineMap>{id, row, row}, redIters,
          [&](OpBuilder &nb, Location nl, ValueRange a) {
            Value d = arith::SubFOp::create(nb, nl, a[0], a[1]);
            Value e = math::ExpOp::create(nb, nl, castFloat(nb, nl, d, f32));
            linalg::YieldOp::create(
                nb, nl, ValueRange{arith::AddFOp::create(nb, nl, e, a[2])});
          })
          .getResult(0);
  // Pass 3: normalise.
  Value init = emptyTensor(b, loc, sizesOf(b, loc, x), elem);
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, ValueRange{x, rowMax, rowSum},
             ValueRange{init}, ArrayRef<AffineMap>{id, row, row, id}, iters,
             [&](OpBuilder &nb, Location nl, ValueRange a) {
               Value d = arith::SubFOp::create(nb, nl, a[0], a[1]);
               Value e = math::ExpOp::create(nb, nl, castFloat(nb, nl, d, f32));
               Value p = arith::DivFOp::create(nb, nl, e, a[2]);
               linalg::YieldOp::create(nb, nl, castFloat(nb, nl, p, elem));
             })
      .getResult(0);
}
