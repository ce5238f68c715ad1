//===- Int8Gemv.cpp - q8_0 / q4_0 GEMV blocks on int8 x -------------------===//

#include "passes/cpu/Int8Gemv.h"

#include "dialect/TlmDialect.h"
#include "passes/common/Quantized.h"
#include "passes/cpu/PackedKernel.h"
#include "passes/cpu/Tiling.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using mlir::tlm::index;
using mlir::tlm::kQuantBlock;

namespace {

constexpr int64_t kLanes = 16;     // i32 lanes of vpdpbusd's zmm
constexpr int64_t kStepBytes = 64; // W's code bytes a step reads

/// Weights a step covers, and of them the blocks of 32.
int64_t stepWeights(int64_t bits) { return kStepBytes * 8 / bits; }
int64_t stepBlocks(int64_t bits) { return stepWeights(bits) / kQuantBlock; }

/// The shape of x's side: x's rows, then `tail`.
struct XSide {
  OpBuilder &b;
  Location loc;
  SmallVector<OpFoldResult> rows;
  unsigned nRows;

  XSide(OpBuilder &b, Location loc, Value x)
      : b(b), loc(loc), rows(tensor::getMixedSizes(b, loc, x)) {
    rows.pop_back();
    nRows = rows.size();
  }

  /// A tensor of x's rows and `tail`, zero-filled when `zero`.
  Value empty(ArrayRef<int64_t> tail, Type type, bool zero = false) const {
    SmallVector<OpFoldResult> sizes(rows);
    for (int64_t t : tail)
      sizes.push_back(b.getIndexAttr(t));
    Value e = tensor::EmptyOp::create(b, loc, sizes, type);
    if (!zero)
      return e;
    Value z = arith::ConstantOp::create(b, loc, b.getZeroAttr(type));
    return linalg::FillOp::create(b, loc, z, e).getResult(0);
  }

  /// The map of `loops` loops that reads x's row dims then `tail`.
  AffineMap map(unsigned loops, ArrayRef<AffineExpr> tail) const {
    SmallVector<AffineExpr> results;
    for (unsigned r = 0; r < nRows; ++r)
      results.push_back(b.getAffineDimExpr(r));
    results.append(tail.begin(), tail.end());
    return AffineMap::get(loops, 0, results, b.getContext());
  }

  /// Loop dim `i` after the row dims.
  AffineExpr dim(unsigned i) const { return b.getAffineDimExpr(nRows + i); }

  /// `v` (r.., tail..) as (r.., product of the tail).
  Value collapse(Value v) const {
    int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
    SmallVector<ReassociationIndices> groups;
    for (unsigned r = 0; r < nRows; ++r)
      groups.push_back({int64_t(r)});
    ReassociationIndices last;
    for (int64_t i = nRows; i < rank; ++i)
      last.push_back(i);
    groups.push_back(last);
    return tensor::CollapseShapeOp::create(b, loc, v, groups);
  }

  linalg::GenericOp generic(
      ValueRange ins, Value init, ArrayRef<AffineMap> maps, unsigned reductions,
      function_ref<Value(OpBuilder &, Location, ValueRange)> payload) const {
    unsigned loops = maps.front().getNumDims();
    SmallVector<utils::IteratorType> iters(loops,
                                           utils::IteratorType::parallel);
    for (unsigned i = loops - reductions; i < loops; ++i)
      iters[i] = utils::IteratorType::reduction;
    return linalg::GenericOp::create(
        b, loc, TypeRange{init.getType()}, ins, ValueRange{init}, maps, iters,
        [&](OpBuilder &nb, Location nl, ValueRange a) {
          linalg::YieldOp::create(nb, nl, payload(nb, nl, a));
        });
  }
};

} // namespace

int64_t tlm::int8GemvBits(linalg::LinalgOp op, const ProjectionDims &p) {
  std::optional<QuantizedRows> rows = matchQuantizedRows(op.getDpsInputs()[1]);
  if (!rows)
    return 0;
  int64_t bits = rows->codes.bits;
  int64_t k = op.getStaticLoopRanges()[p.k];
  if (ShapedType::isDynamic(k) || k % stepWeights(bits) != 0)
    return 0;
  return bits;
}

tlm::Int8GemvX tlm::int8GemvInput(OpBuilder &b, Location loc, Value x,
                                  int64_t bits) {
  int64_t k = cast<RankedTensorType>(x.getType()).getShape().back();
  int64_t steps = k / stepWeights(bits), perBlock = stepBlocks(bits);
  int64_t halves = bits == 4 ? 2 : 1, blocks = k / kQuantBlock;
  assert(k % stepWeights(bits) == 0 && "whole steps");
  XSide s(b, loc, x);
  unsigned n = s.nRows;
  Type f32 = b.getF32Type(), i32 = b.getI32Type(), i8 = b.getI8Type();

  // Each block's max |x|: loops (r.., blk, j), j reduced.
  Value blocked = tiling::splitLastDim(b, loc, x, {blocks, kQuantBlock});
  Value amax =
      s.generic(blocked, s.empty({blocks}, f32, /*zero=*/true),
                {s.map(n + 2, {s.dim(0), s.dim(1)}), s.map(n + 2, {s.dim(0)})},
                1,
                [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                  // MAXIMUMF keeps a NaN, as quantizeRows' reduction does.
                  return arith::MaximumFOp::create(
                      nb, nl, a[1], math::AbsFOp::create(nb, nl, a[0]));
                })
          .getResult(0);

  // The codes in W's byte order: loops (r.., s, h, c), byte c of half h
  // of step s. q8_0: weight 64 s + c. q4_0: block 4 s + c / 16's weight
  // 16 h + c % 16 (h 0: the low nibbles, 1: the high ones).
  AffineExpr st = s.dim(0), h = s.dim(1), c = s.dim(2);
  AffineExpr weight =
      bits == 8 ? st * 64 + c
                : st * 128 + c.floorDiv(16) * kQuantBlock + h * 16 + c % 16;
  Value codes =
      s.generic(ValueRange{x, amax}, s.empty({steps, halves, kStepBytes}, i8),
                {s.map(n + 3, {weight}),
                 s.map(n + 3, {weight.floorDiv(kQuantBlock)}),
                 s.map(n + 3, {st, h, c})},
                0,
                [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                  return tlm::packed::quantizeCodes(nb, nl, a[0], a[1]);
                })
          .getResult(0);

  // Lane i of step s multiplies bytes 4 i .. 4 i + 3 of each half: loops
  // (r.., s, i, h, t), h and t reduced. (Every loop is a dim of some
  // operand, so the loops' ranges follow from the shapes.)
  int32_t offset = bits == 8 ? 128 : 8;
  Value quads = tiling::splitLastDim(b, loc, codes, {kLanes, 4});
  Value offsets =
      s.generic(quads, s.empty({steps, kLanes}, i32, /*zero=*/true),
                {s.map(n + 4, {s.dim(0), s.dim(2), s.dim(1), s.dim(3)}),
                 s.map(n + 4, {s.dim(0), s.dim(1)})},
                2,
                [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                  Value code = arith::ExtSIOp::create(nb, nl, i32, a[0]);
                  Value times = arith::MulIOp::create(
                      nb, nl, code,
                      arith::ConstantOp::create(nb, nl,
                                                nb.getI32IntegerAttr(offset)));
                  return arith::SubIOp::create(nb, nl, a[1], times);
                })
          .getResult(0);

  // Lane i of step s sums products of one block: perBlock blocks a step.
  Value scales =
      s.generic(
           amax, s.empty({steps, kLanes}, f32),
           {s.map(n + 2,
                  {s.dim(0) * perBlock + s.dim(1).floorDiv(kLanes / perBlock)}),
            s.map(n + 2, {s.dim(0), s.dim(1)})},
           0,
           [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
             return arith::DivFOp::create(
                 nb, nl, a[0],
                 arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(127.0)));
           })
          .getResult(0);
  return {s.collapse(codes), s.collapse(offsets), s.collapse(scales)};
}

bool tlm::int8GemvApplies(linalg::LinalgOp op, const ProjectionDims &p,
                          int64_t bits) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  for (unsigned r : p.rows)
    if (ranges[r] != 1)
      return false;
  return ranges[p.n] == 1 && int8GemvBits(op, p) == bits;
}

LogicalResult tlm::int8GemvBlock(RewriterBase &rewriter, linalg::LinalgOp op,
                                 const ProjectionDims &p, const Int8GemvX &x,
                                 int64_t bits, bool overwrite,
                                 int64_t prefetchBytes) {
  Location loc = op.getLoc();
  OpBuilder &b = rewriter;
  rewriter.setInsertionPoint(op);
  std::optional<std::pair<Dequantized, Value>> rows =
      quantizedRows(b, loc, op.getDpsInputs()[1]);
  assert(rows && rows->first.bits == bits && "int8GemvApplies checked");
  const Dequantized &d = rows->first;
  Value row = rows->second;
  int64_t k = op.getStaticLoopRanges()[p.k];
  int64_t steps = k / stepWeights(bits), perBlock = stepBlocks(bits);
  if (prefetchBytes > 0)
    tiling::prefetchRowsAhead(b, loc, d.values, row, 1, prefetchBytes);

  auto bytes = VectorType::get({kStepBytes}, b.getI8Type());
  auto lanesI32 = VectorType::get({kLanes}, b.getI32Type());
  auto lanesF32 = VectorType::get({kLanes}, b.getF32Type());
  auto splat = [&](int8_t v) {
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(bytes, b.getI8IntegerAttr(v)));
  };
  Value flip = splat(-128), mask = splat(0x0f), four = splat(4);
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(lanesF32));
  SmallVector<int64_t> spread; // lane i's block within the step
  for (int64_t i = 0; i < kLanes; ++i)
    spread.push_back(i / (kLanes / perBlock));

  // Two steps an iteration when they pair up, each into its own sums: the
  // FMA of one step need not wait for the other's.
  int64_t unroll = steps % 2 == 0 ? 2 : 1;
  auto loop = scf::ForOp::create(b, loc, index(b, loc, 0), index(b, loc, steps),
                                 index(b, loc, unroll),
                                 SmallVector<Value>(unroll, zero));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    SmallVector<Value> next;
    for (int64_t u = 0; u < unroll; ++u) {
      Value step = arith::AddIOp::create(b, loc, loop.getInductionVar(),
                                         index(b, loc, u));
      auto times = [&](int64_t n) {
        return arith::MulIOp::create(b, loc, step, index(b, loc, n));
      };
      Value w = tiling::readVector(b, loc, d.values, {row, times(kStepBytes)},
                                   kStepBytes);
      Value sums =
          tiling::readRowVector(b, loc, x.offsets, times(kLanes), kLanes);
      if (bits == 8) {
        Value xc = tiling::readRowVector(b, loc, x.codes, times(kStepBytes),
                                         kStepBytes);
        sums = tlm::DotU8S8Op::create(
            b, loc, lanesI32, sums, arith::XOrIOp::create(b, loc, w, flip), xc);
      } else {
        Value at = times(2 * kStepBytes);
        Value lo = arith::AndIOp::create(b, loc, w, mask);
        Value hi = arith::ShRUIOp::create(b, loc, w, four);
        Value xLo = tiling::readRowVector(b, loc, x.codes, at, kStepBytes);
        Value xHi = tiling::readRowVector(
            b, loc, x.codes,
            arith::AddIOp::create(b, loc, at, index(b, loc, kStepBytes)),
            kStepBytes);
        sums = tlm::DotU8S8Op::create(b, loc, lanesI32, sums, lo, xLo);
        sums = tlm::DotU8S8Op::create(b, loc, lanesI32, sums, hi, xHi);
      }
      Value wScales = tiling::readVector(b, loc, d.scales,
                                         {row, times(perBlock)}, perBlock);
      Value scale = arith::MulFOp::create(
          b, loc, vector::ShuffleOp::create(b, loc, wScales, wScales, spread),
          tiling::readRowVector(b, loc, x.scales, times(kLanes), kLanes));
      next.push_back(math::FmaOp::create(
          b, loc, arith::SIToFPOp::create(b, loc, lanesF32, sums), scale,
          loop.getRegionIterArgs()[u]));
    }
    scf::YieldOp::create(b, loc, next);
  }
  Value sum = loop.getResult(0);
  if (unroll == 2)
    sum = arith::AddFOp::create(b, loc, sum, loop.getResult(1));
  rewriter.replaceOp(
      op, tiling::storeLaneSum(b, loc, sum, op.getDpsInits()[0], overwrite));
  return success();
}
