//===- Projection.cpp - matching tlm.linear's contractions ----------------===//

#include "passes/common/Projection.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;

AffineMap tlm::dimsMapOf(MLIRContext *ctx, unsigned loops,
                         ArrayRef<unsigned> dims) {
  SmallVector<AffineExpr> exprs = llvm::map_to_vector(
      dims, [&](unsigned d) { return getAffineDimExpr(d, ctx); });
  return AffineMap::get(loops, 0, exprs, ctx);
}

FailureOr<tlm::ProjectionDims> tlm::matchProjection(linalg::LinalgOp op) {
  if (!linalg::isaContractionOpInterface(op) || op.getNumDpsInits() != 1 ||
      op.getNumDpsInputs() != 2)
    return failure();
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || !dims->batch.empty() || dims->n.size() != 1 ||
      dims->k.size() != 1 || dims->m.empty())
    return failure();
  unsigned loops = op.getNumLoops();
  tlm::ProjectionDims p{{}, dims->n[0], dims->k[0]};
  if (p.k != loops - 1 || p.n != loops - 2)
    return failure();
  // W is (n, k): the layout tlm.linear's weights have.
  AffineMap wMap = op.getMatchingIndexingMap(op.getDpsInputOperand(1));
  if (wMap.getNumResults() != 2 || !wMap.getResult(0).isFunctionOfDim(p.n) ||
      !wMap.getResult(1).isFunctionOfDim(p.k))
    return failure();
  for (unsigned i = 0; i + 2 < loops; ++i) {
    if (!llvm::is_contained(dims->m, i))
      return failure();
    p.rows.push_back(i);
  }
  // x is (rows..., k) and out (rows..., n), in that order.
  AffineMap xMap = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  SmallVector<unsigned> xDims(p.rows), outDims(p.rows);
  xDims.push_back(p.k);
  outDims.push_back(p.n);
  if (xMap != dimsMapOf(op->getContext(), loops, xDims) ||
      outMap != dimsMapOf(op->getContext(), loops, outDims))
    return failure();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ShapedType::isDynamic(ranges[p.n]) || ShapedType::isDynamic(ranges[p.k]))
    return failure();
  auto outType = cast<ShapedType>(op.getDpsInits()[0].getType());
  if (!outType.getElementType().isF32())
    return failure();
  return p;
}

std::optional<tlm::ConcatRows> tlm::concatRows(Value w) {
  SmallVector<OpFoldResult> rowOffsets;
  while (auto slice = w.getDefiningOp<tensor::ExtractSliceOp>()) {
    RankedTensorType source = slice.getSourceType(), type = slice.getType();
    if (!slice.hasUnitStride() || source.getRank() != 2 ||
        type.getRank() != 2 ||
        !isConstantIntValue(slice.getMixedOffsets()[1], 0) ||
        type.getDimSize(1) != source.getDimSize(1))
      return std::nullopt;
    rowOffsets.push_back(slice.getMixedOffsets()[0]);
    w = slice.getSource();
  }
  auto concat = w.getDefiningOp<tensor::ConcatOp>();
  if (!concat || concat.getDim() != 0)
    return std::nullopt;
  return ConcatRows{concat, rowOffsets};
}

std::optional<tlm::NormScale> tlm::matchNormScale(Value y) {
  auto op = y.getDefiningOp<linalg::GenericOp>();
  if (!op || op.getNumDpsInputs() != 3 || op.getNumDpsInits() != 1 ||
      !op.hasPureTensorSemantics() ||
      op.getNumParallelLoops() != op.getNumLoops() ||
      !getElementTypeOrSelf(y.getType()).isF32())
    return std::nullopt;
  unsigned rank = op.getNumLoops();
  MLIRContext *ctx = op->getContext();
  SmallVector<unsigned> all = llvm::to_vector(llvm::seq(rank));
  AffineMap id = dimsMapOf(ctx, rank, all);
  AffineMap row = dimsMapOf(ctx, rank, ArrayRef(all).drop_back());
  AffineMap last = dimsMapOf(ctx, rank, {rank - 1});
  if (op.getIndexingMapsArray() != SmallVector<AffineMap>{id, row, last, id})
    return std::nullopt;
  // yield (x / rms) * g, on the block's arguments.
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto mul = yield.getValues()[0].getDefiningOp<arith::MulFOp>();
  auto div = mul ? mul.getLhs().getDefiningOp<arith::DivFOp>() : nullptr;
  if (!div || body.getOperations().size() != 3 ||
      div.getLhs() != body.getArgument(0) ||
      div.getRhs() != body.getArgument(1) ||
      mul.getRhs() != body.getArgument(2))
    return std::nullopt;
  return NormScale{op, op.getDpsInputs()[0], op.getDpsInputs()[1],
                   op.getDpsInputs()[2]};
}

bool tlm::startsAtZero(linalg::LinalgOp op) {
  auto fill = op.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
  if (!fill || !fill.getDpsInits()[0].getDefiningOp<tensor::EmptyOp>())
    return false;
  auto value = fill.getInputs()[0].getDefiningOp<arith::ConstantOp>();
  auto attr = value ? dyn_cast<FloatAttr>(value.getValue()) : FloatAttr();
  return attr && attr.getValue().isZero();
}

SmallVector<Value> tlm::raggedRowSlices(RewriterBase &rewriter,
                                        linalg::LinalgOp op,
                                        const ProjectionDims &p,
                                        int64_t block) {
  int64_t n = op.getStaticLoopRanges()[p.n];
  if (ShapedType::isDynamic(n) || n <= block || n % block == 0)
    return {};
  Value w = op.getDpsInputs()[1];
  auto type = cast<RankedTensorType>(w.getType());
  if (type.getRank() != 2 || type.isDynamicDim(1))
    return {};
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  int64_t main = n / block * block, k = type.getDimSize(1);
  auto slice = [&](int64_t offset, int64_t rows) -> Value {
    return tensor::ExtractSliceOp::create(
        rewriter, loc, w,
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(offset),
                               rewriter.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(rows),
                               rewriter.getIndexAttr(k)},
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1),
                               rewriter.getIndexAttr(1)});
  };
  return {slice(0, main), slice(main, n - main)};
}

SmallVector<linalg::LinalgOp> tlm::splitProjection(RewriterBase &rewriter,
                                                   linalg::LinalgOp op,
                                                   ValueRange weights) {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Value init = op.getDpsInits()[0];
  int64_t rank = cast<RankedTensorType>(init.getType()).getRank();
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rewriter, loc, init);
  SmallVector<OpFoldResult> ones(rank, rewriter.getIndexAttr(1));
  SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
  // Each part computes in its slice of the output, extracted from the
  // insertions so far (so bufferization writes it in place: fresh part
  // outputs were copied in, a visible part of a GPT-2-vocabulary head's
  // decode).
  // From zero, each slice gets its own zero fill (so the part may still
  // overwrite instead of accumulating) and the whole starts uninitialized.
  auto fill = startsAtZero(op) ? init.getDefiningOp<linalg::FillOp>()
                               : linalg::FillOp();
  Value result = fill ? fill.getDpsInits()[0] : init;
  SmallVector<linalg::LinalgOp> parts;
  int64_t offset = 0;
  for (Value w : weights) {
    int64_t n = cast<RankedTensorType>(w.getType()).getDimSize(0);
    offsets.back() = rewriter.getIndexAttr(offset);
    sizes.back() = rewriter.getIndexAttr(n);
    Value out = tensor::ExtractSliceOp::create(rewriter, loc, result, offsets,
                                               sizes, ones);
    if (fill)
      out = linalg::FillOp::create(rewriter, loc, fill.getInputs()[0], out)
                .getResult(0);
    auto part = linalg::GenericOp::create(
        rewriter, loc, TypeRange{out.getType()},
        ValueRange{op.getDpsInputs()[0], w}, ValueRange{out},
        op.getIndexingMapsArray(), op.getIteratorTypesArray());
    IRMapping none;
    op->getRegion(0).cloneInto(&part.getRegion(), none);
    result = tensor::InsertSliceOp::create(rewriter, loc, part.getResult(0),
                                           result, offsets, sizes, ones);
    parts.push_back(part);
    offset += n;
  }
  rewriter.replaceOp(op, result);
  return parts;
}

/// `add = r + P` (elementwise, identity maps) where the projection P
/// starts from zero and only the add reads it: P accumulates into r
/// instead, and the add goes.
bool tlm::foldResidualAdd(linalg::GenericOp add, DominanceInfo &dom) {
  if (!add.hasPureTensorSemantics() || add.getNumDpsInputs() != 2 ||
      add.getNumDpsInits() != 1 ||
      add.getNumParallelLoops() != add.getNumLoops() ||
      !llvm::all_of(add.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }))
    return false;
  Block &body = add.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto sum = yield.getValues()[0].getDefiningOp<arith::AddFOp>();
  if (!sum || body.getOperations().size() != 2 ||
      !llvm::is_contained(sum->getOperands(), body.getArgument(0)) ||
      !llvm::is_contained(sum->getOperands(), body.getArgument(1)) ||
      sum.getLhs() == sum.getRhs())
    return false;
  // A sum the function returns stays an add: accumulated in place into
  // the residual (the block's input), the returned buffer would alias an
  // argument and bufferization would copy it out.
  if (llvm::any_of(add->getUsers(),
                   [](Operation *user) { return isa<func::ReturnOp>(user); }))
    return false;
  for (unsigned i = 0; i < 2; ++i) {
    Value p = add.getDpsInputs()[i], r = add.getDpsInputs()[1 - i];
    auto projection = p.getDefiningOp<linalg::GenericOp>();
    if (!projection || !p.hasOneUse() ||
        failed(tlm::matchProjection(projection)) ||
        !tlm::startsAtZero(projection) || r.getType() != p.getType() ||
        add.getResult(0).getType() != p.getType() ||
        !dom.properlyDominates(r, projection))
      continue;
    projection.getDpsInitsMutable()[0].set(r);
    add.getResult(0).replaceAllUsesWith(p);
    add->erase();
    return true;
  }
  return false;
}
