//===- Tiling.cpp - tiling steps tlm-tile-matmuls composes ----------------===//

#include "passes/cpu/Tiling.h"
#include "passes/common/Projection.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace mlir::tlm::tiling {

SmallVector<OpFoldResult> tileSizes(OpBuilder &b, ArrayRef<int64_t> sizes) {
  return llvm::map_to_vector(
      sizes, [&](int64_t s) -> OpFoldResult { return b.getIndexAttr(s); });
}

FailureOr<scf::SCFTilingResult> tile(RewriterBase &rewriter, Operation *op,
                                     ArrayRef<int64_t> sizes, bool forall) {
  scf::SCFTilingOptions options;
  options.setTileSizes(tileSizes(rewriter, sizes));
  if (forall)
    options.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> result =
      scf::tileUsingSCF(rewriter, cast<TilingInterface>(op), options);
  if (succeeded(result))
    rewriter.replaceOp(op, result->replacements);
  return result;
}

/// Whether `loop`'s own body writes a vector into one of its tensor
/// iter_args at indices defined outside the loop: an accumulator block that
/// hoisting can keep in registers across the loop. The other loops are left
/// alone: hoisting would first prove every pair of their subsets disjoint
/// (Presburger bounds, costly for each pair) and then find that the
/// indices move with the loop.
bool writesInvariantIterArgVector(scf::ForOp loop) {
  for (BlockArgument arg : loop.getRegionIterArgs())
    for (Operation *user : arg.getUsers()) {
      auto write = dyn_cast<vector::TransferWriteOp>(user);
      if (write && write->getParentOp() == loop.getOperation() &&
          llvm::all_of(write.getIndices(), [&](Value index) {
            return loop.isDefinedOutsideOfLoop(index);
          }))
        return true;
    }
  return false;
}

/// The single linalg op left in `region` by tiling, if any.
linalg::LinalgOp findTiled(Region &region) {
  linalg::LinalgOp found;
  region.walk([&](linalg::LinalgOp op) {
    if (op.hasPureTensorSemantics() && succeeded(tlm::matchProjection(op)))
      found = op;
  });
  return found;
}

SmallVector<unsigned>
joinDims(std::initializer_list<ArrayRef<unsigned>> parts) {
  SmallVector<unsigned> v;
  for (ArrayRef<unsigned> part : parts)
    v.append(part.begin(), part.end());
  return v;
}

Value splitLastDim(OpBuilder &b, Location loc, Value v,
                   ArrayRef<int64_t> factors) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(type.getShape().drop_back());
  llvm::append_range(shape, factors);
  SmallVector<ReassociationIndices> groups;
  int64_t rank = type.getRank();
  for (int64_t i = 0; i + 1 < rank; ++i)
    groups.push_back({i});
  ReassociationIndices last;
  for (size_t i = 0; i < factors.size(); ++i)
    last.push_back(rank - 1 + int64_t(i));
  groups.push_back(last);
  return tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), v, groups);
}

Value expandLastDim(OpBuilder &b, Location loc, Value v, int64_t lanes) {
  int64_t last = cast<RankedTensorType>(v.getType()).getShape().back();
  return splitLastDim(b, loc, v, {last / lanes, lanes});
}

Value readVector(OpBuilder &b, Location loc, Value v, ValueRange at,
                 int64_t width) {
  auto type = cast<RankedTensorType>(v.getType());
  Value pad =
      arith::ConstantOp::create(b, loc, b.getZeroAttr(type.getElementType()));
  return vector::TransferReadOp::create(
      b, loc, VectorType::get({width}, type.getElementType()), v, at, pad,
      ArrayRef<bool>{true});
}

Value readRowVector(OpBuilder &b, Location loc, Value v, Value idx,
                    int64_t width) {
  SmallVector<Value> at(cast<RankedTensorType>(v.getType()).getRank() - 1,
                        arith::ConstantIndexOp::create(b, loc, 0));
  at.push_back(idx);
  return readVector(b, loc, v, at, width);
}

Value storeLaneSum(OpBuilder &b, Location loc, Value sum, Value out,
                   bool overwrite) {
  Value total =
      vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, sum);
  SmallVector<Value> at(cast<RankedTensorType>(out.getType()).getRank(),
                        arith::ConstantIndexOp::create(b, loc, 0));
  if (!overwrite)
    total = arith::AddFOp::create(
        b, loc, tensor::ExtractOp::create(b, loc, out, at), total);
  return tensor::InsertOp::create(b, loc, total, out, at);
}

Value sliceRowsLike(RewriterBase &rewriter, Value v, Value slice, Value x) {
  auto s = slice.getDefiningOp<tensor::ExtractSliceOp>();
  if (!s || s.getSource() != x || !s.hasUnitStride())
    return Value();
  SmallVector<OpFoldResult> offsets = s.getMixedOffsets(),
                            sizes = s.getMixedSizes(),
                            strides = s.getMixedStrides();
  int64_t k = cast<RankedTensorType>(x.getType()).getShape().back();
  if (getConstantIntValue(offsets.back()) != 0 ||
      getConstantIntValue(sizes.back()) != k)
    return Value();
  offsets.back() = rewriter.getIndexAttr(0);
  sizes.back() = rewriter.getIndexAttr(
      cast<RankedTensorType>(v.getType()).getShape().back());
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointAfter(s);
  return tensor::ExtractSliceOp::create(rewriter, s.getLoc(), v, offsets,
                                        sizes, strides);
}

int64_t accumulatorChains(int64_t accumulators, int64_t steps,
                          int64_t minChains) {
  int64_t chains = 1;
  while (accumulators * chains < minChains && steps % (2 * chains) == 0)
    chains *= 2;
  return chains;
}

void prefetchRowsAhead(OpBuilder &b, Location loc, Value matrix, Value row,
                       int64_t rows, int64_t distance) {
  constexpr int64_t kLine = 64;
  auto type = cast<RankedTensorType>(matrix.getType());
  int64_t bytes = type.getElementType().getIntOrFloatBitWidth() / 8;
  assert(bytes > 0 && kLine % bytes == 0 && "whole bytes");
  // Fused projections choose their part's codes with a select of casts to
  // dynamic rows: the last row is then the tensor's dim. A row of unknown
  // length has no lines to count, and gets no prefetch.
  if (type.isDynamicDim(1))
    return;
  int64_t rowBytes = type.getDimSize(1) * bytes;
  int64_t ahead = llvm::divideCeil(distance, rowBytes);
  auto layout =
      StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic,
                             {ShapedType::kDynamic, ShapedType::kDynamic});
  auto bufferType =
      MemRefType::get(type.getShape(), type.getElementType(), layout);
  Value buffer = bufferization::ToBufferOp::create(b, loc, bufferType, matrix,
                                                   /*readOnly=*/true);
  Value last =
      type.isDynamicDim(0)
          ? arith::SubIOp::create(b, loc,
                                  tensor::DimOp::create(b, loc, matrix, 0),
                                  arith::ConstantIndexOp::create(b, loc, 1))
                .getResult()
          : arith::ConstantIndexOp::create(b, loc, type.getDimSize(0) - 1)
                .getResult();
  for (int64_t r = 0; r < rows; ++r) {
    Value target = arith::MinUIOp::create(
        b, loc,
        arith::AddIOp::create(
            b, loc, row, arith::ConstantIndexOp::create(b, loc, ahead + r)),
        last);
    for (int64_t byte = 0; byte < rowBytes; byte += kLine)
      memref::PrefetchOp::create(
          b, loc, buffer,
          ValueRange{target,
                     arith::ConstantIndexOp::create(b, loc, byte / bytes)},
          /*isWrite=*/false, /*localityHint=*/3, /*isDataCache=*/true);
  }
}

} // namespace mlir::tlm::tiling
