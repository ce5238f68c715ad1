//===- RopeRotation.cpp - RoPE's pair rotation as vector code -------------===//
//
// tlm-lower-to-linalg rotates RoPE's interleaved pairs with a generic over
// (..., i, c), c in {0, 1}, reading x[..., i, 0] and x[..., i, 1] through
// constant map results and picking the pair's half with an index compare.
// linalg's vectorizer takes neither the constant results nor the 2-wide
// innermost loop well, so this ran as scalar code (a visible part of
// small.json's prefill). Here one tile (every loop but i and c of size 1)
// becomes contiguous vectors of `lanes` elements:
//
//   out = x · [c0, c0, c1, c1, ...] + swap(x) · [−s0, s0, −s1, s1, ...]
//
// which rounds exactly like the payload: an even lane computes
// x0·c + x1·(−s) = x0·c − x1·s, an odd lane x1·c + x0·s = x0·s + x1·c
// (negation is exact, addition commutes), and nothing may contract into an
// FMA (no fast-math flags).
//
//===----------------------------------------------------------------------===//

#include "passes/cpu/RopeRotation.h"
#include "passes/common/Builders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using mlir::tlm::index;

namespace {

/// `v` when it is block argument `n` of `block`.
bool isArg(Value v, Block &block, unsigned n) {
  auto arg = dyn_cast<BlockArgument>(v);
  return arg && arg.getOwner() == &block && arg.getArgNumber() == n;
}

/// `v = a · b` with a, b block arguments `x` and `y` in that order.
bool isMul(Value v, Block &block, unsigned x, unsigned y) {
  auto mul = v.getDefiningOp<arith::MulFOp>();
  return mul && mul.getFastmath() == arith::FastMathFlags::none &&
         isArg(mul.getLhs(), block, x) && isArg(mul.getRhs(), block, y);
}

/// Whether the payload is `c == 0 ? a0·a2 − a1·a3 : a0·a3 + a1·a2` with c
/// the loop `pairLoop + 1`.
bool isRotationPayload(linalg::GenericOp op, unsigned pairLoop) {
  Block &block = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(block.getTerminator());
  auto select = yield.getValues()[0].getDefiningOp<arith::SelectOp>();
  if (!select)
    return false;
  auto cmp = select.getCondition().getDefiningOp<arith::CmpIOp>();
  if (!cmp || cmp.getPredicate() != arith::CmpIPredicate::eq)
    return false;
  auto index = cmp.getLhs().getDefiningOp<linalg::IndexOp>();
  if (!index || index.getDim() != pairLoop + 1 ||
      !matchPattern(cmp.getRhs(), m_Zero()))
    return false;
  auto first = select.getTrueValue().getDefiningOp<arith::SubFOp>();
  auto second = select.getFalseValue().getDefiningOp<arith::AddFOp>();
  return first && second && first.getFastmath() == arith::FastMathFlags::none &&
         second.getFastmath() == arith::FastMathFlags::none &&
         isMul(first.getLhs(), block, 0, 2) &&
         isMul(first.getRhs(), block, 1, 3) &&
         isMul(second.getLhs(), block, 0, 3) &&
         isMul(second.getRhs(), block, 1, 2);
}

} // namespace

std::string tlm::ropeRotationMismatch(linalg::GenericOp op, int64_t lanes) {
  if (!op.hasPureTensorSemantics())
    return "not on tensors";
  if (op.getNumDpsInputs() != 4 || op.getNumDpsInits() != 1)
    return "not four inputs and one output";
  unsigned loops = op.getNumLoops();
  if (loops < 3 || op.getNumReductionLoops() != 0)
    return "not at least three parallel loops";
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  unsigned pair = loops - 2;
  if (ranges[pair + 1] != 2)
    return "the innermost loop is not the pair's two halves";
  // A vector holds lanes / 2 pairs: one lane holds none.
  if (lanes < 2)
    return "a vector of fewer than 2 lanes holds no pair";
  if (ShapedType::isDynamic(ranges[pair]) || ranges[pair] % (lanes / 2) != 0)
    return "the pairs do not split into blocks of lanes / 2";
  Value x = op.getDpsInputs()[0];
  if (op.getDpsInputs()[1] != x)
    return "the pair's halves come from different tensors";
  for (Value v : op->getOperands())
    if (!cast<ShapedType>(v.getType()).getElementType().isF32())
      return "not f32";
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  AffineMap outer = AffineMap::getMultiDimIdentityMap(loops, op.getContext())
                        .dropResult(loops - 1);
  for (int64_t half : {0, 1}) {
    AffineMap m = maps[half];
    if (m.getNumResults() != loops || m.dropResult(loops - 1) != outer)
      return "x is not read as x[..., i, half]";
    auto c = dyn_cast<AffineConstantExpr>(m.getResult(loops - 1));
    if (!c || c.getValue() != half)
      return "x is not read as x[..., i, half]";
  }
  for (int64_t t : {2, 3}) {
    AffineMap m = maps[t];
    if (m.getNumResults() == 0 ||
        m.getResults().back() != getAffineDimExpr(pair, op.getContext()))
      return "a table is not indexed by the pair last";
    for (AffineExpr e : m.getResults().drop_back())
      if (e.isFunctionOfDim(pair) || e.isFunctionOfDim(pair + 1))
        return "a table's outer index reads the pair";
  }
  if (!maps[4].isIdentity())
    return "the output is not indexed by the loops";
  if (!isRotationPayload(op, pair))
    return "the payload is not the pair rotation";
  return "";
}

namespace {

/// What every step of one tile's rotation needs.
struct Rotation {
  Location loc;
  SmallVector<int64_t> ranges;
  unsigned pair; ///< the loop of the pairs; the loop of their halves follows
  int64_t half;  ///< pairs per vector: lanes / 2
  VectorType vec, pairVec, halfVec;
  Value pad, c0;
  Value x;                ///< the tensor the tile's pairs are read from
  SmallVector<Value> xAt; ///< the tile's offsets in `x`
  Value cosT, sinT;
  SmallVector<AffineMap> maps;
  SmallVector<int64_t> swap; ///< the shuffle that swaps each pair's halves

  /// Reads the static tile `block`, creating its constants with `b`.
  Rotation(OpBuilder &b, linalg::GenericOp block, int64_t lanes);
};

/// The indices of one row (every loop before the pair fixed).
struct RowAt {
  ArrayRef<Value> at;                            ///< the row in the tile
  SmallVector<Value> xOuter, cosOuter, sinOuter; ///< in x and the tables
};

} // namespace

Rotation::Rotation(OpBuilder &b, linalg::GenericOp block, int64_t lanes)
    : loc(block.getLoc()), ranges(block.getStaticLoopRanges()) {
  unsigned loops = ranges.size();
  pair = loops - 2;
  half = lanes / 2;
  Type f32 = b.getF32Type();
  vec = VectorType::get({lanes}, f32);
  pairVec = VectorType::get({half, 2}, f32);
  halfVec = VectorType::get({half}, f32);
  pad = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  c0 = index(b, loc, 0);

  // After tiling, the halves are one-wide slices of x's tile: read the tile
  // itself through the first one's source.
  x = block.getDpsInputs()[0];
  xAt.assign(loops, c0);
  if (auto slice = x.getDefiningOp<tensor::ExtractSliceOp>()) {
    x = slice.getSource();
    for (unsigned i = 0; i < loops; ++i)
      xAt[i] =
          getValueOrCreateConstantIndexOp(b, loc, slice.getMixedOffsets()[i]);
  }
  cosT = block.getDpsInputs()[2];
  sinT = block.getDpsInputs()[3];
  maps = block.getIndexingMapsArray();

  for (int64_t i = 0; i < half; ++i)
    swap.append({2 * i + 1, 2 * i});
}

/// A table's indices before the pair's for the row `at`.
static SmallVector<Value> tableOuter(AffineMap map, ArrayRef<Value> at,
                                     Value c0) {
  SmallVector<Value> idx;
  for (AffineExpr e : map.getResults().drop_back()) {
    auto d = dyn_cast<AffineDimExpr>(e);
    idx.push_back(d ? at[d.getPosition()] : c0);
  }
  return idx;
}

/// The `half` entries of table `t` from pair `first` on.
static Value readTable(OpBuilder &rb, Location rl, const Rotation &r, Value t,
                       ArrayRef<Value> outer, Value first) {
  SmallVector<Value> idx(outer);
  idx.push_back(first);
  return vector::TransferReadOp::create(rb, rl, r.halfVec, t, idx, r.pad,
                                        SmallVector<bool>{true})
      .getResult();
}

/// Rotates the row's `half` pairs from `first` on into `out`.
static Value rotateBlock(OpBuilder &rb, Location rl, const Rotation &r,
                         const RowAt &row, Value first, Value out) {
  SmallVector<Value> xIdx(row.xOuter);
  xIdx.push_back(arith::AddIOp::create(rb, rl, r.xAt[r.pair], first));
  xIdx.push_back(r.xAt[r.pair + 1]);
  Value xv = vector::ShapeCastOp::create(
      rb, rl, r.vec,
      vector::TransferReadOp::create(rb, rl, r.pairVec, r.x, xIdx, r.pad,
                                     SmallVector<bool>{true, true}));
  Value c = readTable(rb, rl, r, r.cosT, row.cosOuter, first),
        s = readTable(rb, rl, r, r.sinT, row.sinOuter, first);
  // [c0, c0, c1, c1, ...] and [−s0, s0, −s1, s1, ...].
  Value cc = vector::InterleaveOp::create(rb, rl, c, c);
  Value ss =
      vector::InterleaveOp::create(rb, rl, arith::NegFOp::create(rb, rl, s), s);
  Value swapped = vector::ShuffleOp::create(rb, rl, xv, xv, r.swap);
  Value rotated =
      arith::AddFOp::create(rb, rl, arith::MulFOp::create(rb, rl, xv, cc),
                            arith::MulFOp::create(rb, rl, swapped, ss));
  SmallVector<Value> outIdx(row.at.begin(), row.at.end());
  outIdx.append({first, r.c0});
  return vector::TransferWriteOp::create(
             rb, rl, vector::ShapeCastOp::create(rb, rl, r.pairVec, rotated),
             out, outIdx, SmallVector<bool>{true, true})
      .getResult();
}

/// Rotates one row (every loop before the pair fixed at `at`) into `rowOut`.
static Value rotateRow(OpBuilder &ob, Location rl, const Rotation &r,
                       ArrayRef<Value> at, Value rowOut) {
  // Per `lanes` elements, x·[c0, c0, ...] + swap(x)·[−s0, s0, ...]. A loop
  // over the row's blocks, not unrolled: the row's code exists once, for LLVM
  // to compile once (a 64-wide head would otherwise be 8 copies on AVX2).
  RowAt row{at, {}, {}, {}};
  // The indices before the pair's, the same for every block of the row.
  for (unsigned i = 0; i < r.pair; ++i)
    row.xOuter.push_back(arith::AddIOp::create(ob, rl, r.xAt[i], at[i]));
  row.cosOuter = tableOuter(r.maps[2], at, r.c0);
  row.sinOuter = tableOuter(r.maps[3], at, r.c0);
  auto blocks = scf::ForOp::create(
      ob, rl, r.c0, index(ob, rl, r.ranges[r.pair]), index(ob, rl, r.half),
      ValueRange{rowOut},
      [&](OpBuilder &rb, Location, Value first, ValueRange it) {
        scf::YieldOp::create(rb, rl, rotateBlock(rb, rl, r, row, first, it[0]));
      });
  return blocks.getResult(0);
}

/// The tile's loops from `i` up to the pair, around the rows.
static Value rotateNest(OpBuilder &nb, const Rotation &r, unsigned i,
                        SmallVector<Value> at, Value out) {
  // The tile's loops before the pair (size 1 but for static ones like the
  // heads), as scf.for loops carrying the output.
  if (i == r.pair)
    return rotateRow(nb, r.loc, r, at, out);
  if (r.ranges[i] == 1) {
    at.push_back(r.c0);
    return rotateNest(nb, r, i + 1, at, out);
  }
  auto loop = scf::ForOp::create(
      nb, r.loc, r.c0, index(nb, r.loc, r.ranges[i]), index(nb, r.loc, 1),
      ValueRange{out}, [&](OpBuilder &lb, Location, Value iv, ValueRange it) {
        SmallVector<Value> inner(at);
        inner.push_back(iv);
        scf::YieldOp::create(lb, r.loc, rotateNest(lb, r, i + 1, inner, it[0]));
      });
  return loop.getResult(0);
}

Value tlm::vectorizeRopeRotation(RewriterBase &rewriter,
                                 linalg::GenericOp block, int64_t lanes) {
  assert(ropeRotationMismatch(block, lanes).empty() && "not a rotation");
  rewriter.setInsertionPoint(block);
  Rotation r(rewriter, block, lanes);
  assert(!ShapedType::isDynamicShape(r.ranges) && "one static tile per call");
  return rotateNest(rewriter, r, 0, {}, block.getDpsInits()[0]);
}
