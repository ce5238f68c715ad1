//===- NibbleLookup.cpp - q4_0 GEMV blocks by table lookup ----------------===//

#include "passes/cpu/NibbleLookup.h"
#include "dialect/TlmDialect.h"

#include "passes/common/Quantized.h"
#include "passes/cpu/Tiling.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace {

constexpr int64_t kLanes = 16;      // f32 lanes of a zmm register
constexpr int64_t kNibbles = 8;     // nibbles in a dword: vectors per chunk
constexpr int64_t kChunkBytes = 64; // one zmm of codes: 4 blocks
constexpr int64_t kBlocksPerChunk = kChunkBytes / (tlm::kQuantBlock / 2);

Value index(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

} // namespace

bool tlm::lookupApplies(linalg::LinalgOp op, const ProjectionDims &p) {
  std::optional<QuantizedRows> rows = matchQuantizedRows(op.getDpsInputs()[1]);
  if (!rows || rows->codes.bits != 4)
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  for (unsigned r : p.rows)
    if (ranges[r] != 1)
      return false;
  return ranges[p.n] == 1 && !ShapedType::isDynamic(ranges[p.k]) &&
         ranges[p.k] % kLookupChunk == 0;
}

Value tlm::lanePermutedX(OpBuilder &b, Location loc, Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank(), k = type.getShape().back();
  assert(k % kLookupChunk == 0 && "whole chunks");
  MLIRContext *ctx = b.getContext();
  // Loops (r.., c, m, l): the result at c·128 + m·16 + l.
  unsigned loops = unsigned(rank) + 2;
  SmallVector<AffineExpr> xIdx;
  for (int64_t i = 0; i + 1 < rank; ++i)
    xIdx.push_back(getAffineDimExpr(i, ctx));
  AffineExpr c = getAffineDimExpr(rank - 1, ctx),
             m = getAffineDimExpr(rank, ctx),
             l = getAffineDimExpr(rank + 1, ctx);
  xIdx.push_back(c * kLookupChunk + l.floorDiv(4) * kQuantBlock +
                 (m % 2) * (kQuantBlock / 2) + (l % 4) * 4 + m.floorDiv(2));
  Value init = tensor::EmptyOp::create(b, loc, tensor::getMixedSizes(b, loc, x),
                                       type.getElementType());
  Value lanes =
      tiling::splitLastDim(b, loc, init, {k / kLookupChunk, kNibbles, kLanes});
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{lanes.getType()}, ValueRange{x}, ValueRange{lanes},
      SmallVector<AffineMap>{AffineMap::get(loops, 0, xIdx, ctx),
                             b.getMultiDimIdentityMap(loops)},
      SmallVector<utils::IteratorType>(loops, utils::IteratorType::parallel),
      [](OpBuilder &nb, Location nl, ValueRange a) {
        linalg::YieldOp::create(nb, nl, a[0]);
      });
  SmallVector<ReassociationIndices> groups;
  for (int64_t i = 0; i + 1 < rank; ++i)
    groups.push_back({i});
  groups.push_back({rank - 1, rank, rank + 1});
  return tensor::CollapseShapeOp::create(b, loc, generic.getResult(0), groups);
}

LogicalResult tlm::lookupBlock(RewriterBase &rewriter, linalg::LinalgOp op,
                               const ProjectionDims &p, Value xLanes,
                               bool overwrite, int64_t prefetchBytes) {
  Location loc = op.getLoc();
  OpBuilder &b = rewriter;
  rewriter.setInsertionPoint(op);
  std::optional<std::pair<Dequantized, Value>> rows =
      quantizedRows(b, loc, op.getDpsInputs()[1]);
  assert(rows && "lookupApplies said the codes are there");
  const Dequantized &d = rows->first;
  Value row = rows->second;
  int64_t k = op.getStaticLoopRanges()[p.k];
  if (prefetchBytes > 0)
    tiling::prefetchRowsAhead(b, loc, d.values, row, 1, prefetchBytes);

  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  auto vec = VectorType::get({kLanes}, f32);
  auto dwords = VectorType::get({kLanes}, i32);
  // The centred values of the 16 nibbles; vpermps reads the low 4 bits of
  // each dword as the index, so a shifted dword needs no mask.
  SmallVector<float> centred;
  for (int64_t v = 0; v < kLanes; ++v)
    centred.push_back(float(v - 8));
  Value table = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(vec, ArrayRef<float>(centred)));
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(vec));
  auto contract = arith::FastMathFlagsAttr::get(b.getContext(),
                                                arith::FastMathFlags::contract);

  auto loop = scf::ForOp::create(b, loc, index(b, loc, 0),
                                 index(b, loc, k / kLookupChunk),
                                 index(b, loc, 1), ValueRange{zero, zero});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value chunk = loop.getInductionVar();
    auto times = [&](int64_t n) {
      return arith::MulIOp::create(b, loc, chunk, index(b, loc, n));
    };
    Value bytes = tiling::readVector(b, loc, d.values,
                                     {row, times(kChunkBytes)}, kChunkBytes);
    Value packed = vector::BitCastOp::create(b, loc, dwords, bytes);
    Value xBase = times(kLookupChunk);
    // Four partial sums: products m and m + 4 share one.
    SmallVector<Value> part(4);
    for (int64_t m = 0; m < kNibbles; ++m) {
      Value idx = packed;
      if (m > 0)
        idx = arith::ShRUIOp::create(
            b, loc, packed,
            arith::ConstantOp::create(
                b, loc, DenseElementsAttr::get(dwords, int32_t(4 * m))));
      Value w = tlm::LookupOp::create(b, loc, table, idx);
      Value xm = tiling::readRowVector(
          b, loc, xLanes,
          arith::AddIOp::create(b, loc, xBase, index(b, loc, m * kLanes)),
          kLanes);
      part[m % 4] =
          m < 4 ? arith::MulFOp::create(b, loc, xm, w, contract).getResult()
                : math::FmaOp::create(b, loc, xm, w, part[m % 4]).getResult();
    }
    // Lane l's products all come from block l / 4: its scale, once.
    Value scales4 = tiling::readVector(
        b, loc, d.scales, {row, times(kBlocksPerChunk)}, kBlocksPerChunk);
    SmallVector<int64_t> spread;
    for (int64_t l = 0; l < kLanes; ++l)
      spread.push_back(l / (kLanes / kBlocksPerChunk));
    Value scales = vector::ShuffleOp::create(b, loc, scales4, scales4, spread);
    Value lo = arith::AddFOp::create(b, loc, part[0], part[1], contract);
    Value hi = arith::AddFOp::create(b, loc, part[2], part[3], contract);
    scf::YieldOp::create(
        b, loc,
        ValueRange{math::FmaOp::create(b, loc, lo, scales,
                                       loop.getRegionIterArgs()[0]),
                   math::FmaOp::create(b, loc, hi, scales,
                                       loop.getRegionIterArgs()[1])});
  }
  Value sum = arith::AddFOp::create(b, loc, loop.getResult(0),
                                    loop.getResult(1), contract);
  rewriter.replaceOp(
      op, tiling::storeLaneSum(b, loc, sum, op.getDpsInits()[0], overwrite));
  return success();
}
