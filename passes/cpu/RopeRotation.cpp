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

#include <functional>

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

Value tlm::vectorizeRopeRotation(RewriterBase &rewriter,
                                 linalg::GenericOp block, int64_t lanes) {
  assert(ropeRotationMismatch(block, lanes).empty() && "not a rotation");
  Location loc = block.getLoc();
  rewriter.setInsertionPoint(block);
  OpBuilder &b = rewriter;
  SmallVector<int64_t> ranges = block.getStaticLoopRanges();
  unsigned loops = ranges.size(), pair = loops - 2;
  assert(!ShapedType::isDynamicShape(ranges) && "one static tile per call");
  int64_t half = lanes / 2;
  Type f32 = b.getF32Type();
  auto vec = VectorType::get({lanes}, f32);
  auto pairVec = VectorType::get({half, 2}, f32);
  auto halfVec = VectorType::get({half}, f32);
  Value pad = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  Value c0 = index(b, loc, 0);

  // After tiling, the halves are one-wide slices of x's tile: read the tile
  // itself through the first one's source.
  Value x = block.getDpsInputs()[0];
  SmallVector<Value> xAt(loops, c0);
  if (auto slice = x.getDefiningOp<tensor::ExtractSliceOp>()) {
    x = slice.getSource();
    for (unsigned i = 0; i < loops; ++i)
      xAt[i] =
          getValueOrCreateConstantIndexOp(b, loc, slice.getMixedOffsets()[i]);
  }
  Value cosT = block.getDpsInputs()[2], sinT = block.getDpsInputs()[3];
  SmallVector<AffineMap> maps = block.getIndexingMapsArray();

  SmallVector<int64_t> swap;
  for (int64_t i = 0; i < half; ++i)
    swap.append({2 * i + 1, 2 * i});

  // One row (every loop before the pair fixed at `at`): per `lanes`
  // elements, x·[c0, c0, ...] + swap(x)·[−s0, s0, ...]. A loop over the
  // row's blocks, not unrolled: the row's code exists once, for LLVM to
  // compile once (a 64-wide head would otherwise be 8 copies on AVX2).
  auto row = [&](OpBuilder &ob, Location rl, ArrayRef<Value> at,
                 Value rowOut) -> Value {
    // The indices before the pair's, the same for every block of the row.
    SmallVector<Value> xOuter;
    for (unsigned i = 0; i < pair; ++i)
      xOuter.push_back(arith::AddIOp::create(ob, rl, xAt[i], at[i]));
    auto tableOuter = [&](AffineMap map) {
      SmallVector<Value> idx;
      for (AffineExpr e : map.getResults().drop_back()) {
        auto d = dyn_cast<AffineDimExpr>(e);
        idx.push_back(d ? at[d.getPosition()] : c0);
      }
      return idx;
    };
    SmallVector<Value> cosOuter = tableOuter(maps[2]),
                       sinOuter = tableOuter(maps[3]);
    auto blocks = scf::ForOp::create(
        ob, rl, c0, index(ob, rl, ranges[pair]), index(ob, rl, half),
        ValueRange{rowOut},
        [&](OpBuilder &rb, Location, Value first, ValueRange it) {
          Value out = it[0];
          SmallVector<Value> xIdx(xOuter);
          xIdx.push_back(arith::AddIOp::create(rb, rl, xAt[pair], first));
          xIdx.push_back(xAt[pair + 1]);
          Value xv = vector::ShapeCastOp::create(
              rb, rl, vec,
              vector::TransferReadOp::create(rb, rl, pairVec, x, xIdx, pad,
                                             SmallVector<bool>{true, true}));
          auto table = [&](Value t, ArrayRef<Value> outer) {
            SmallVector<Value> idx(outer);
            idx.push_back(first);
            return vector::TransferReadOp::create(rb, rl, halfVec, t, idx, pad,
                                                  SmallVector<bool>{true})
                .getResult();
          };
          Value c = table(cosT, cosOuter), s = table(sinT, sinOuter);
          // [c0, c0, c1, c1, ...] and [−s0, s0, −s1, s1, ...].
          Value cc = vector::InterleaveOp::create(rb, rl, c, c);
          Value ss = vector::InterleaveOp::create(
              rb, rl, arith::NegFOp::create(rb, rl, s), s);
          Value swapped = vector::ShuffleOp::create(rb, rl, xv, xv, swap);
          Value r = arith::AddFOp::create(
              rb, rl, arith::MulFOp::create(rb, rl, xv, cc),
              arith::MulFOp::create(rb, rl, swapped, ss));
          SmallVector<Value> outIdx(at.begin(), at.end());
          outIdx.append({first, c0});
          out = vector::TransferWriteOp::create(
                    rb, rl, vector::ShapeCastOp::create(rb, rl, pairVec, r),
                    out, outIdx, SmallVector<bool>{true, true})
                    .getResult();
          scf::YieldOp::create(rb, rl, out);
        });
    return blocks.getResult(0);
  };

  // The tile's loops before the pair (size 1 but for static ones like the
  // heads), as scf.for loops carrying the output.
  std::function<Value(OpBuilder &, unsigned, SmallVector<Value>, Value)> nest =
      [&](OpBuilder &nb, unsigned i, SmallVector<Value> at,
          Value out) -> Value {
    if (i == pair)
      return row(nb, loc, at, out);
    if (ranges[i] == 1) {
      at.push_back(c0);
      return nest(nb, i + 1, at, out);
    }
    auto loop = scf::ForOp::create(
        nb, loc, c0, index(nb, loc, ranges[i]), index(nb, loc, 1),
        ValueRange{out}, [&](OpBuilder &lb, Location, Value iv, ValueRange it) {
          SmallVector<Value> inner(at);
          inner.push_back(iv);
          scf::YieldOp::create(lb, loc, nest(lb, i + 1, inner, it[0]));
        });
    return loop.getResult(0);
  };
  return nest(b, 0, {}, block.getDpsInits()[0]);
}
