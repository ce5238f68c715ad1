//===- RowReduction.cpp - a row sum and its epilogue in one loop ----------===//
//
// RMSNorm's statistics lower to three ops over the rows: a fill of the sums,
// the sum of squares (a reduction generic linalg's vectorizer would make
// one `d`-wide vector of), and sqrt(Σ / d + eps). tlm-vectorize-elementwise
// left the sum scalar (one add chain per row) and gave each op a loop nest
// of its own; with threads each was a parallel region (a fork and a join,
// or with tlm-serialize-small-parallel a run-time branch and a second copy
// of the loops, which LLVM then compiled). Here they are one loop over the
// rows:
//
//   forall rows:  acc = Σ_k-blocks f(x[row, k : k + lanes])   (vector<lanes>)
//                 out[row] = epilogue(reduce_add(acc) + fill)
//
//===----------------------------------------------------------------------===//

#include "passes/cpu/RowReduction.h"
#include "passes/cpu/PackedKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"

#include <limits>
#include <optional>

using namespace mlir;
using mlir::tlm::index;

namespace {

bool isF32Tensors(linalg::GenericOp op) {
  for (Type t : op->getOperandTypes())
    if (cast<RankedTensorType>(t).getElementType() !=
        Float32Type::get(op.getContext()))
      return false;
  return true;
}

/// Whether every op of `op`'s payload is elementwise on scalars (with
/// `f32Only`, on f32 scalars only: the payload is then cloned onto f32
/// vectors). Not linalg.index: the payload leaves its generic.
bool scalarPayload(linalg::GenericOp op, bool f32Only) {
  Type f32 = Float32Type::get(op.getContext());
  for (Operation &inner : op.getRegion().front().without_terminator())
    if (isa<linalg::IndexOp>(inner) || inner.getNumRegions() != 0 ||
        !isPure(&inner) || !llvm::all_of(inner.getResultTypes(), [&](Type t) {
          return f32Only ? t == f32 : t.isIntOrIndexOrFloat();
        }))
      return false;
  return true;
}

} // namespace

/// How a row reduction reads an input.
enum class Read { Whole, Row, Column };

/// How `op` (a candidate row reduction over `loops` loops) reads input `i`.
static std::optional<Read> readOf(linalg::GenericOp op, unsigned i) {
  AffineMap map = op.getIndexingMapsArray()[i];
  unsigned loops = op.getNumLoops();
  if (map.isIdentity())
    return Read::Whole;
  if (map == op.getIndexingMapsArray().back())
    return Read::Row;
  if (map.getNumResults() == 1 && map.getResult(0).isFunctionOfDim(loops - 1) &&
      isa<AffineDimExpr>(map.getResult(0)))
    return Read::Column;
  return std::nullopt;
}

/// The kind of reduction `op`'s payload combines with (add or max), if it
/// is `combine(f(inputs), acc)` with acc read only there.
static std::optional<vector::CombiningKind> combinerOf(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  BlockArgument acc = body.getArguments().back();
  Operation *last = body.getTerminator()->getOperand(0).getDefiningOp();
  if (!last || !acc.hasOneUse() || *acc.getUsers().begin() != last)
    return std::nullopt;
  if (isa<arith::AddFOp>(last))
    return vector::CombiningKind::ADD;
  if (isa<arith::MaximumFOp>(last))
    return vector::CombiningKind::MAXIMUMF;
  return std::nullopt;
}

std::string tlm::rowReductionMismatch(linalg::GenericOp op, int64_t lanes) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInputs() < 1 ||
      op.getNumDpsInits() != 1 || op.getNumResults() != 1)
    return "not inputs and one output on tensors";
  if (!isF32Tensors(op))
    return "not f32";
  int64_t loops = op.getNumLoops();
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  if (loops < 2 || op.getNumReductionLoops() != 1 ||
      iters.back() != utils::IteratorType::reduction)
    return "the innermost loop is not the only reduction";
  int64_t k = op.getStaticLoopRanges().back();
  if (ShapedType::isDynamic(k) || k % lanes != 0)
    return "the reduced dim is dynamic or not a multiple of the lanes";
  AffineMap out = op.getIndexingMapsArray().back();
  if (out != AffineMap::getMultiDimIdentityMap(loops, op.getContext())
                 .dropResult(loops - 1))
    return "the output is not read by the rows";
  bool whole = false;
  for (unsigned i = 0; i < op.getNumDpsInputs(); ++i) {
    std::optional<Read> read = readOf(op, i);
    if (!read)
      return "an input is read other than whole, by rows or by k";
    whole |= *read == Read::Whole;
  }
  if (!whole)
    return "no input is read whole";
  if (!scalarPayload(op, /*f32Only=*/true))
    return "the payload is not elementwise on f32 scalars";
  if (!combinerOf(op))
    return "the payload is not f(inputs) + acc or max(f(inputs), acc)";
  return "";
}

tlm::RowReduction tlm::withEpilogue(linalg::GenericOp sum) {
  Value result = sum.getResult(0);
  if (!result.hasOneUse())
    return {sum, nullptr};
  auto reader = dyn_cast<linalg::GenericOp>(*result.getUsers().begin());
  if (!reader || !reader.hasPureTensorSemantics() || !isF32Tensors(reader) ||
      reader.getNumDpsInits() != 1 ||
      reader.getNumLoops() != sum.getNumLoops() - 1 ||
      reader.getNumReductionLoops() != 0 ||
      !scalarPayload(reader, /*f32Only=*/false))
    return {sum, nullptr};
  // Read with the identity map as its only input; its output never read.
  if (reader.getNumDpsInputs() != 1 || reader.getDpsInputs()[0] != result ||
      !llvm::all_of(reader.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }) ||
      reader.payloadUsesValueFromOperand(reader.getDpsInitOperand(0)))
    return {sum, nullptr};
  return {sum, reader};
}

void tlm::fuseRowReduction(RewriterBase &rewriter, RowReduction reduction,
                           int64_t lanes) {
  linalg::GenericOp red = reduction.sum;
  Operation *replaced =
      reduction.epilogue ? reduction.epilogue.getOperation() : red;
  Location loc = red.getLoc();
  rewriter.setInsertionPoint(replaced);
  vector::CombiningKind kind = *combinerOf(red);
  Value init = red.getDpsInits()[0];
  auto fill = init.getDefiningOp<linalg::FillOp>();
  unsigned loops = red.getNumLoops();
  int64_t rows = loops - 1;
  int64_t k = red.getStaticLoopRanges().back();
  Value whole;
  for (unsigned i = 0; i < red.getNumDpsInputs(); ++i)
    if (*readOf(red, i) == Read::Whole)
      whole = red.getDpsInputs()[i];

  // The rows' output: a fresh tensor (the epilogue's output is unread),
  // or the start values themselves when they are not a fill: each row reads
  // its start before it writes the result there, so a loop that carries
  // them (attention's running sums) keeps one buffer.
  auto outType = cast<RankedTensorType>(replaced->getResult(0).getType());
  SmallVector<OpFoldResult> rowSizes =
      tensor::getMixedSizes(rewriter, loc, whole);
  rowSizes.pop_back();
  Value out = fill ? tensor::EmptyOp::create(rewriter, loc, rowSizes,
                                             outType.getElementType())
                         .getResult()
                   : init;

  auto vecType = VectorType::get({lanes}, rewriter.getF32Type());
  OpFoldResult zero = rewriter.getIndexAttr(0), one = rewriter.getIndexAttr(1);
  SmallVector<OpFoldResult> lbs(rows, zero), steps(rows, one);
  auto forall = scf::ForallOp::create(rewriter, loc, lbs, rowSizes, steps,
                                      ValueRange{out},
                                      /*mapping=*/std::nullopt);
  OpBuilder b = OpBuilder::atBlockBegin(forall.getBody());
  SmallVector<Value> row = forall.getInductionVars();
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value pad = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  // The row's inputs read once: one scalar each, broadcast.
  SmallVector<Value> perRow(red.getNumDpsInputs());
  for (unsigned i = 0; i < red.getNumDpsInputs(); ++i)
    if (*readOf(red, i) == Read::Row)
      perRow[i] = vector::BroadcastOp::create(
          b, loc, vecType,
          tensor::ExtractOp::create(b, loc, red.getDpsInputs()[i], row));
  // The lanes start at the combiner's identity; the row's own start joins
  // them in the final reduction.
  double neutral = kind == vector::CombiningKind::ADD
                       ? 0.0
                       : -std::numeric_limits<double>::infinity();
  Value start =
      fill ? fill.getInputs()[0]
           : tensor::ExtractOp::create(b, loc, forall.getRegionIterArgs()[0],
                                       row)
                 .getResult();
  Value lanesInit = arith::ConstantOp::create(
      b, loc, vecType,
      DenseElementsAttr::get(vecType, b.getF32FloatAttr(neutral)));
  auto blocks = scf::ForOp::create(
      b, loc, c0, arith::ConstantIndexOp::create(b, loc, k),
      arith::ConstantIndexOp::create(b, loc, lanes), ValueRange{lanesInit},
      [&](OpBuilder &nb, Location nl, Value kb, ValueRange acc) {
        SmallVector<Value> at(row.begin(), row.end());
        at.push_back(kb);
        SmallVector<Value> args;
        for (unsigned i = 0; i < red.getNumDpsInputs(); ++i) {
          Value input = red.getDpsInputs()[i];
          switch (*readOf(red, i)) {
          case Read::Whole:
            args.push_back(vector::TransferReadOp::create(
                nb, nl, vecType, input, at, pad, ArrayRef<bool>{true}));
            break;
          case Read::Column:
            args.push_back(vector::TransferReadOp::create(
                nb, nl, vecType, input, ValueRange{kb}, pad,
                ArrayRef<bool>{true}));
            break;
          case Read::Row:
            args.push_back(perRow[i]);
            break;
          }
        }
        args.push_back(acc[0]);
        scf::YieldOp::create(
            nb, nl, tlm::packed::applyPayload(nb, nl, red, args));
      });
  Value total =
      vector::ReductionOp::create(b, loc, kind, blocks.getResult(0), start);
  if (reduction.epilogue) {
    Block &body = reduction.epilogue.getRegion().front();
    IRMapping map;
    map.map(body.getArgument(0), total);
    for (Operation &inner : body.without_terminator())
      b.clone(inner, map);
    total = map.lookup(body.getTerminator()->getOperand(0));
  }
  // The row's element of the shared output, written in place (a new
  // one-element tensor would become an allocation and a copy per row).
  SmallVector<OpFoldResult> offsets(row.begin(), row.end());
  SmallVector<OpFoldResult> ones(rows, one);
  Value slice = tensor::ExtractSliceOp::create(
      b, loc, forall.getRegionIterArgs()[0], offsets, ones, ones);
  Value element = tensor::InsertOp::create(b, loc, total, slice,
                                           SmallVector<Value>(rows, c0));
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(
      b, loc, element, forall.getRegionIterArgs()[0], offsets, ones, ones);
  rewriter.replaceOp(replaced, forall.getResult(0));
  if (reduction.epilogue)
    rewriter.eraseOp(red);
}
