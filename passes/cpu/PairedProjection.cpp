//===- PairedProjection.cpp - W1/W3 with SwiGLU in the epilogue -----------===//
//
// After tlm-fuse-projections, SwiGLU's W1 and W3 are one projection over
// their concatenation, and the SiLU-gate op reads its two halves: the
// projection wrote 2·d_ff columns per row that the op read back. Here each
// panel packs 16 rows of W1 and the same 16 rows of W3, so a tile row's two
// sum vectors are a's and b's for the same 16 columns, and the op's payload
// (cloned onto vectors) turns them into the one vector stored. The sums and
// the payload are the same operations as before, in the same order: the
// results are the same bits.
//
//===----------------------------------------------------------------------===//

#include "passes/cpu/PairedProjection.h"

#include "passes/common/Quantized.h"
#include "passes/cpu/PackedKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <array>

using namespace mlir;
using mlir::tlm::index;
using namespace mlir::tlm::packed;

std::string tlm::pairedConsumerMismatch(linalg::LinalgOp op,
                                        const ProjectionDims &p,
                                        int64_t halfPanel,
                                        PairedConsumer &out) {
  if (p.rows.size() > 2)
    return "more than one batch dim";
  auto concat = op.getDpsInputs().back().getDefiningOp<tensor::ConcatOp>();
  if (!concat || concat.getDim() != 0 || concat.getInputs().size() != 2)
    return "W is not a concatenation of two parts";
  auto partType = cast<RankedTensorType>(concat.getInputs()[0].getType());
  if (concat.getInputs()[1].getType() != partType)
    return "the parts differ in shape";
  int64_t half = partType.getDimSize(0);
  if (ShapedType::isDynamic(half) || half % halfPanel != 0)
    return "a part is not a whole number of half panels";
  Value result = op->getResult(0);
  SmallVector<tensor::ExtractSliceOp> slices;
  for (Operation *user : result.getUsers()) {
    auto slice = dyn_cast<tensor::ExtractSliceOp>(user);
    if (!slice || !slice.hasUnitStride() || !slice->hasOneUse())
      return "the result is read other than by two slices";
    slices.push_back(slice);
  }
  if (slices.size() != 2)
    return "the result is not read by exactly two slices";
  auto g = dyn_cast<linalg::GenericOp>(*slices[0]->getUsers().begin());
  if (!g || g != *slices[1]->getUsers().begin())
    return "the halves are not read by one generic";
  unsigned rank = cast<RankedTensorType>(result.getType()).getRank();
  for (tensor::ExtractSliceOp slice : slices) {
    std::optional<int64_t> start =
        getConstantIntValue(slice.getMixedOffsets().back());
    std::optional<int64_t> size =
        getConstantIntValue(slice.getMixedSizes().back());
    if (!start || (*start != 0 && *start != half) || size != half ||
        slice.getType().getRank() != rank)
      return "a slice is not one half of the columns";
    // Rows from the first (the rewrite computes every row and slices the
    // consumer's rows out of it).
    for (unsigned d = 0; d + 1 < rank; ++d)
      if (!isConstantIntValue(slice.getMixedOffsets()[d], 0))
        return "a slice does not start at the first row";
  }
  if (slices[0].getMixedOffsets().back() == slices[1].getMixedOffsets().back())
    return "both slices are the same half";
  if (g.getNumDpsInputs() != 2 || g.getNumDpsInits() != 1 ||
      g.getNumReductionLoops() != 0 || g.getNumLoops() != rank)
    return "the consumer is not a two-input elementwise op";
  for (AffineMap map : g.getIndexingMapsArray())
    if (!map.isIdentity())
      return "the consumer's maps are not identities";
  if (g.payloadUsesValueFromOperand(g.getDpsInitOperand(0)))
    return "the consumer reads its output";
  for (Operation &inner : g.getRegion().front().without_terminator()) {
    if (!inner.hasTrait<OpTrait::Elementwise>() || inner.getNumRegions())
      return "the consumer's payload is not elementwise";
    for (Value v : inner.getResults())
      if (!v.getType().isF32())
        return "the consumer's payload is not on f32";
    for (Value v : inner.getOperands())
      if (!v.getType().isF32())
        return "the consumer's payload is not on f32";
  }
  out.consumer = g;
  out.w1 = concat.getInputs()[0];
  out.w3 = concat.getInputs()[1];
  for (Value in : g.getDpsInputs()) {
    auto slice = in.getDefiningOp<tensor::ExtractSliceOp>();
    out.inputs.push_back(
        isConstantIntValue(slice.getMixedOffsets().back(), 0) ? 0 : 1);
  }
  out.slices = {slices[0], slices[1]};
  return "";
}

namespace {

/// What packPairedProjection's steps share.
struct Paired {
  Value x, rms, gain; ///< x (rows..., k); rms and gain when the norm folds
  const tlm::PairedConsumer &pair;
  int64_t chunk; ///< columns of each part per thread
  tlm::PackedShape shape;
  SmallVector<linalg::LinalgOp> &rests;
};

/// What the steps of the paired form on one batch row share.
struct Panels {
  Value x, rms, gain; ///< x (m x k), rms (m) or null
  const tlm::PairedConsumer &pair;
  Value base; ///< y's column c is column `base + c` of either part
  int64_t chunk, k, half;
  tlm::PackedShape shape;
  Value c0;
  RowSplit split;
};

} // namespace

/// Packs one panel and runs the full tiles on it: yields `it`'s (y, buf).
static void fullPanel(OpBuilder &pb, Location pl, const Panels &p,
                      const Epilogue &epilogue, Value col, ValueRange it) {
  Value row = arith::AddIOp::create(pb, pl, p.base, col);
  PanelRows rowsOf = [&](OpBuilder &cb, Location cl, Value c) {
    Value first = arith::CmpIOp::create(cb, cl, arith::CmpIPredicate::eq, c,
                                        index(cb, cl, 0));
    return std::pair<Value, Value>(
        tlm::selectWeight(cb, cl, first, p.pair.w1, p.pair.w3), row);
  };
  Value packed = pack(pb, pl, rowsOf, it[1], p.k, p.shape, p.gain);
  auto tiles = scf::ForOp::create(
      pb, pl, p.c0, p.split.full, p.split.tileRows, ValueRange{it[0]},
      [&](OpBuilder &lb, Location ll, Value row0, ValueRange acc) {
        scf::YieldOp::create(lb, ll,
                             kernel(lb, ll, p.x, packed, acc[0], row0, col, p.k,
                                    p.shape, /*overwrite=*/true, p.rms,
                                    &epilogue));
      });
  scf::YieldOp::create(pb, pl, ValueRange{tiles.getResult(0), packed});
}

/// `y` with the rows of the full tiles written, when there are any.
static Value fullTiles(OpBuilder &b, Location loc, const Panels &p, Value y) {
  // Each panel: `half` columns of W1, then the same columns of W3.
  Epilogue epilogue{p.pair.consumer, p.pair.inputs};
  Value buf = packBuffer(b, loc, p.k, p.shape);
  // The kernel's x (rounded to bf16 for bf16-dot), once for every panel.
  Panels q = p;
  q.x = kernelInput(b, loc, p.x, p.split.full, p.gain, p.shape);
  auto ifFull = scf::IfOp::create(b, loc, TypeRange{y.getType()},
                                  p.split.hasFull, /*withElseRegion=*/true);
  {
    OpBuilder tb = ifFull.getThenBodyBuilder();
    auto panels = scf::ForOp::create(
        tb, loc, p.c0, index(tb, loc, p.chunk), index(tb, loc, p.half),
        ValueRange{y, buf},
        [&](OpBuilder &pb, Location pl, Value col, ValueRange it) {
          fullPanel(pb, pl, q, epilogue, col, it);
        });
    scf::YieldOp::create(tb, loc, panels.getResult(0));
  }
  OpBuilder eb = ifFull.getElseBodyBuilder();
  scf::YieldOp::create(eb, loc, y);
  return ifFull.getResult(0);
}

/// The two parts' GEMV blocks on the rest rows, panel `row`, into `inits`.
static SmallVector<Value> restSums(OpBuilder &nb, Location nl, const Panels &p,
                                   Value row, ValueRange inits,
                                   SmallVector<linalg::LinalgOp> &rests) {
  OpFoldResult zeroAttr = nb.getIndexAttr(0), oneAttr = nb.getIndexAttr(1);
  SmallVector<OpFoldResult> ones{oneAttr, oneAttr};
  SmallVector<Value> sums;
  for (auto [w, init] :
       llvm::zip_equal(std::array<Value, 2>{p.pair.w1, p.pair.w3}, inits)) {
    Value wPanel = tensor::ExtractSliceOp::create(
        nb, nl, w, SmallVector<OpFoldResult>{row, zeroAttr},
        SmallVector<OpFoldResult>{nb.getIndexAttr(p.half),
                                  nb.getIndexAttr(p.k)},
        ones);
    linalg::GenericOp part =
        tlm::packed::projection(nb, nl, p.split.xRest, wPanel, init);
    rests.push_back(part);
    sums.push_back(part.getResult(0));
  }
  return sums;
}

/// The consumer on the rest rows' `sums`, row by row, into `y` at `col`.
static Value restConsumer(OpBuilder &nb, Location nl, const Panels &p,
                          ArrayRef<Value> sums, Value col, Value y) {
  auto vecType = VectorType::get({p.shape.lanes}, nb.getF32Type());
  Value pad = arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(0.0));
  SmallVector<bool> inBounds{true};
  auto rows = scf::ForOp::create(
      nb, nl, p.c0, p.split.restRows, index(nb, nl, 1), ValueRange{y},
      [&](OpBuilder &rb, Location rl, Value r, ValueRange out) {
        SmallVector<Value> args;
        for (int64_t i : p.pair.inputs)
          args.push_back(vector::TransferReadOp::create(
              rb, rl, vecType, sums[i], ValueRange{r, p.c0}, pad, inBounds));
        Value at = arith::AddIOp::create(rb, rl, p.split.full, r);
        scf::YieldOp::create(rb, rl,
                             vector::TransferWriteOp::create(
                                 rb, rl,
                                 applyPayload(rb, rl, p.pair.consumer, args),
                                 out[0], ValueRange{at, col}, inBounds)
                                 .getResult());
      });
  return rows.getResult(0);
}

/// `y` with the rows after the last full tile written.
static Value restPanels(OpBuilder &b, Location loc, const Panels &p, Value y,
                        SmallVector<linalg::LinalgOp> &rests) {
  // The rows after the last full tile: per panel, the two parts' GEMV
  // blocks into small tensors, then the consumer on them, row by row.
  // The parts' sums go to two (rest x half) tensors carried across the
  // panels (one allocation each, not one per panel: in decode every row is
  // a rest row, and these ran inside the parallel loop).
  // alloc_tensor, not tensor.empty: CSE would merge the two equal empties
  // and bufferization then gave both loop-carried tensors one buffer.
  SmallVector<Value> partInits;
  auto partType =
      RankedTensorType::get({ShapedType::kDynamic, p.half}, b.getF32Type());
  for (int i = 0; i < 2; ++i)
    partInits.push_back(bufferization::AllocTensorOp::create(
        b, loc, partType, ValueRange{p.split.restRows}));
  auto rest = scf::ForOp::create(
      b, loc, p.c0, index(b, loc, p.chunk), index(b, loc, p.half),
      ValueRange{y, partInits[0], partInits[1]},
      [&](OpBuilder &nb, Location nl, Value col, ValueRange it) {
        Value row = arith::AddIOp::create(nb, nl, p.base, col);
        SmallVector<Value> sums =
            restSums(nb, nl, p, row, it.drop_front(), rests);
        Value done = restConsumer(nb, nl, p, sums, col, it[0]);
        scf::YieldOp::create(nb, nl, ValueRange{done, sums[0], sums[1]});
      });
  return rest.getResult(0);
}

/// The paired form on one batch row: x (m x k), rms (m) or null, y
/// (m x chunk) whose column c is column `base + c` of either part.
static Value pairedPanels(OpBuilder &b, Location loc, Value x, Value rms,
                          Value gain, const tlm::PairedConsumer &pair,
                          Value base, int64_t chunk, Value y,
                          const tlm::PackedShape &shape,
                          SmallVector<linalg::LinalgOp> &rests) {
  int64_t k = cast<RankedTensorType>(x.getType()).getDimSize(1);
  int64_t half = shape.cols / 2;
  assert(half == shape.lanes && "a half panel is one vector per row");
  Value c0 = index(b, loc, 0);
  RowSplit split = splitRows(b, loc, x, rms, gain, shape.rows);
  Panels p{x, rms, gain, pair, base, chunk, k, half, shape, c0, split};
  Value tiled = fullTiles(b, loc, p, y);
  return restPanels(b, loc, p, tiled, rests);
}

/// Batch row `bi` of `t`, its leading dim dropped (`keep` dims kept).
static tensor::ExtractSliceOp batchRow(OpBuilder &nb, Location nl, Value t,
                                       Value bi, int64_t keep) {
  auto type = cast<RankedTensorType>(t.getType());
  SmallVector<OpFoldResult> offsets(type.getRank(), nb.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(nb, nl, t);
  SmallVector<OpFoldResult> strides(type.getRank(), nb.getIndexAttr(1));
  offsets[0] = bi;
  sizes[0] = nb.getIndexAttr(1);
  auto flat = RankedTensorType::get(type.getShape().take_back(keep),
                                    type.getElementType());
  return tensor::ExtractSliceOp::create(nb, nl, flat, t, offsets, sizes,
                                        strides);
}

/// One column chunk (all of n without threads) of every batch row.
static Value pairedChunk(OpBuilder &cb, Location cl, const Paired &p,
                         Value base, Value yChunk) {
  if (cast<RankedTensorType>(p.x.getType()).getRank() == 2)
    return pairedPanels(cb, cl, p.x, p.rms, p.gain, p.pair, base, p.chunk,
                        yChunk, p.shape, p.rests);
  Value batch = tensor::DimOp::create(cb, cl, p.x, 0);
  auto loop = scf::ForOp::create(
      cb, cl, index(cb, cl, 0), batch, index(cb, cl, 1), ValueRange{yChunk},
      [&](OpBuilder &nb, Location nl, Value bi, ValueRange it) {
        tensor::ExtractSliceOp yRow = batchRow(nb, nl, it[0], bi, 2);
        Value done = pairedPanels(
            nb, nl, batchRow(nb, nl, p.x, bi, 2),
            p.rms ? batchRow(nb, nl, p.rms, bi, 1).getResult() : p.rms, p.gain,
            p.pair, base, p.chunk, yRow, p.shape, p.rests);
        scf::YieldOp::create(nb, nl,
                             tensor::InsertSliceOp::create(
                                 nb, nl, done, it[0], yRow.getMixedOffsets(),
                                 yRow.getMixedSizes(), yRow.getMixedStrides())
                                 .getResult());
      });
  return loop.getResult(0);
}

/// `y` (rows..., n) computed in chunks of columns across threads.
static Value threadChunks(OpBuilder &b, Location loc, const Paired &p, Value y,
                          int64_t n) {
  int64_t rank = cast<RankedTensorType>(p.x.getType()).getRank();
  // Columns split across threads in whole half panels; each thread owns
  // its chunk of y (the forall becomes an OpenMP worksharing loop).
  auto forall =
      scf::ForallOp::create(b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(0)},
                            ArrayRef<OpFoldResult>{b.getIndexAttr(n)},
                            ArrayRef<OpFoldResult>{b.getIndexAttr(p.chunk)},
                            ValueRange{y}, std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(forall.getBody());
  Value base = forall.getInductionVars()[0];
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
  offsets.back() = base;
  SmallVector<OpFoldResult> sizes =
      tensor::getMixedSizes(b, loc, forall.getRegionIterArgs()[0]);
  sizes.back() = b.getIndexAttr(p.chunk);
  SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
  Value yChunk = tensor::ExtractSliceOp::create(
      b, loc, forall.getRegionIterArgs()[0], offsets, sizes, strides);
  Value done = pairedChunk(b, loc, p, base, yChunk);
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(
      b, loc, done, forall.getRegionIterArgs()[0], offsets, sizes, strides);
  return forall.getResult(0);
}

/// Replaces the consumer with its rows of `y`, erasing `op` and the slices.
static void replaceConsumer(RewriterBase &rewriter, linalg::LinalgOp op,
                            const tlm::PairedConsumer &pair, Value y) {
  // The consumer's rows of y (all of them, unless it read fewer).
  linalg::GenericOp g = pair.consumer;
  Location loc = op.getLoc();
  int64_t rank = cast<RankedTensorType>(y.getType()).getRank();
  rewriter.setInsertionPoint(g);
  SmallVector<OpFoldResult> gSizes =
      tensor::getMixedSizes(rewriter, loc, g.getDpsInits()[0]);
  Value result = tensor::ExtractSliceOp::create(
      rewriter, loc, cast<RankedTensorType>(g.getResultTypes()[0]), y,
      SmallVector<OpFoldResult>(rank, rewriter.getIndexAttr(0)), gSizes,
      SmallVector<OpFoldResult>(rank, rewriter.getIndexAttr(1)));
  rewriter.replaceOp(g, result);
  for (tensor::ExtractSliceOp slice : pair.slices)
    rewriter.eraseOp(slice);
  rewriter.eraseOp(op);
}

void tlm::packPairedProjection(RewriterBase &rewriter, linalg::LinalgOp op,
                               const PairedConsumer &pair, PackedShape shape,
                               int64_t chunk,
                               SmallVector<linalg::LinalgOp> &rests) {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(pair.consumer);
  OpBuilder &b = rewriter;
  bool folded = op.getNumDpsInputs() == 4;
  Value x = op.getDpsInputs()[0];
  Value rms = folded ? op.getDpsInputs()[1] : Value();
  Value gain = folded ? op.getDpsInputs()[2] : Value();
  Paired p{x, rms, gain, pair, chunk, shape, rests};
  int64_t n = cast<RankedTensorType>(pair.w1.getType()).getDimSize(0);
  assert(n % chunk == 0 && chunk % (shape.cols / 2) == 0 &&
         "checked by the caller");

  // y[rows..., n]: every row of the projection.
  SmallVector<OpFoldResult> ySizes = tensor::getMixedSizes(b, loc, x);
  ySizes.back() = b.getIndexAttr(n);
  Value y = tensor::EmptyOp::create(b, loc, ySizes, b.getF32Type());
  if (chunk < n)
    y = threadChunks(b, loc, p, y, n);
  else
    y = pairedChunk(b, loc, p, index(b, loc, 0), y);
  replaceConsumer(rewriter, op, pair, y);
}
