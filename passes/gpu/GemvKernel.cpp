//===- GemvKernel.cpp - decode's projection as a warp-per-column GEMV -----===//

#include "passes/gpu/GemvKernel.h"
#include "passes/common/Builders.h"
#include "passes/gpu/KernelBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace mlir::tlm {

namespace {

bool isF32Buffer(Value v) {
  auto t = dyn_cast<MemRefType>(v.getType());
  return t && t.getElementType().isF32();
}

Type elementType(Value v) {
  return cast<MemRefType>(v.getType()).getElementType();
}

bool unstrided(Value v) {
  return cast<MemRefType>(v.getType()).getLayout().isIdentity();
}

} // namespace

bool projectionKernelsApply(Value x, Value w, Value out) {
  auto wType = dyn_cast<MemRefType>(w.getType());
  return isF32Buffer(x) && isF32Buffer(out) && wType &&
         (wType.getElementType().isF32() || wType.getElementType().isBF16() ||
          wType.getElementType().isF16());
}

bool gemvApplies(const GpuProjection &p) {
  return projectionKernelsApply(p.x, p.w, p.out) &&
         !ShapedType::isDynamic(p.n) && !ShapedType::isDynamic(p.k);
}

int64_t gemvSplits(int64_t n, int64_t k, int64_t vec, int64_t warps,
                   int64_t minWarps) {
  int64_t splits = 1;
  while (n * splits < minWarps && warps % (2 * splits) == 0 &&
         k >= 2 * splits * kWarp * vec)
    splits *= 2;
  return splits;
}

GemvShape gemvShape(MLIRContext *ctx, const GpuProjection &p,
                    int64_t maxRows, int64_t warps, int64_t minWarps) {
  GemvShape s;
  // A lane loads 16 bytes of w at a time: 4 f32 or 8 bf16/f16 (and as many
  // f32 of x, one or two 16-byte loads). Every row of x and w starts
  // 16-byte aligned when k is a multiple of that and the buffers are whole
  // allocations (the driver's are 256-aligned).
  int64_t wide = 128 / elementType(p.w).getIntOrFloatBitWidth();
  s.vec = p.k % wide == 0 && unstrided(p.x) && unstrided(p.w) ? wide : 1;
  // A block's warps split k `splits` ways and take `cols` columns. The
  // splits of a column take turns at the warp's steps (32·vec values), so
  // they share the work to within one step.
  s.warps = warps;
  s.splits = gemvSplits(p.n, p.k, s.vec, warps, minWarps);
  s.cols = warps / s.splits;
  s.blocks = llvm::divideCeil(p.n, s.cols);
  if (s.splits > 1)
    s.partials = MemRefType::get(
        {s.splits, s.cols, maxRows}, Float32Type::get(ctx),
        MemRefLayoutAttrInterface(),
        gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
  return s;
}

namespace {
/// What the steps of the GEMV body share: its shape, the warp's, the rows'.
struct GemvBody {
  const GpuProjection &p;
  int64_t maxRows, vec, splits, cols;
  int64_t accWidth; ///< f32 lanes of an accumulator (1: a scalar)
  Type accType;
  Value lane;
  // Worked out by the steps:
  Value colInBlock{}, split{}, col{}, colOk{}; ///< the warp's column, k slice
  Value w{}, out{}, wCol{};   ///< its segment's weights, output, column there
  SmallVector<Value> rowOk{}; ///< row r < m
  SmallVector<SmallVector<Value>> rowIdx{}; ///< row r's indices into x, out
};
} // namespace

/// The warp's column (in the block, in the launch, whether it exists), k slice.
static void placeWarp(OpBuilder &b, Location loc, GemvBody &g, Value block,
                      Value warp) {
  g.colInBlock = warp;
  g.split = index(b, loc, 0);
  if (g.splits > 1) {
    g.colInBlock = arith::RemUIOp::create(b, loc, warp, index(b, loc, g.cols));
    g.split = arith::DivUIOp::create(b, loc, warp, index(b, loc, g.cols));
  }
  g.col = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, block, index(b, loc, g.cols)),
      g.colInBlock);
  g.colOk = lessThan(b, loc, g.col, index(b, loc, g.p.n));
}

/// The warp's weights, output and column in them, from its segment.
static void selectSegment(OpBuilder &b, Location loc, GemvBody &g,
                          ArrayRef<GemvSegment> segments) {
  // The warp's weight row and output column: in its segment's buffers
  // when several projections share the launch (the same for every lane).
  g.w = g.p.w;
  g.out = g.p.out;
  g.wCol = g.col;
  for (size_t i = 1; i < segments.size(); ++i) {
    const GemvSegment &seg = segments[i];
    Value in = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, g.col,
                                     index(b, loc, seg.offset));
    g.w = arith::SelectOp::create(b, loc, in, seg.w, g.w);
    g.out = arith::SelectOp::create(b, loc, in, seg.out, g.out);
    g.wCol = arith::SelectOp::create(
        b, loc, in,
        arith::SubIOp::create(b, loc, g.col, index(b, loc, seg.offset)),
        g.wCol);
  }
}

/// Each of the maxRows input rows' guard (r < m) and indices.
static void indexRows(OpBuilder &b, Location loc, GemvBody &g) {
  for (int64_t r = 0; r < g.maxRows; ++r) {
    Value rv = index(b, loc, r);
    g.rowOk.push_back(lessThan(b, loc, rv, g.p.rows));
    g.rowIdx.push_back(delinearize(b, loc, rv, g.p.rowSizes));
  }
}

/// `width` values at idx, as f32: bf16 and f16 weights widen in registers.
static Value loadAsF32(OpBuilder &b, Location loc, Value memref, ValueRange idx,
                       int64_t width) {
  Type f32 = b.getF32Type();
  Type elem = elementType(memref);
  Value v;
  if (width == 1)
    v = memref::LoadOp::create(b, loc, memref, idx);
  else
    v = vector::LoadOp::create(b, loc, VectorType::get({width}, elem), memref,
                               idx, /*nontemporal=*/false,
                               llvm::MaybeAlign(16));
  if (!getElementTypeOrSelf(v).isF32())
    v = arith::ExtFOp::create(
        b, loc, width == 1 ? f32 : Type(VectorType::get({width}, f32)), v);
  return v;
}

/// `wv`, one load of w, in pieces of the accumulators' width.
static SmallVector<Value> splitWeights(OpBuilder &b, Location loc,
                                       const GemvBody &g, Value wv) {
  // w's values in pieces of the accumulators' width (shuffles, which
  // the NVVM lowering takes where it has no strided slices).
  SmallVector<Value> wParts{wv};
  if (g.vec > g.accWidth) {
    wParts.clear();
    for (int64_t c = 0; c < g.vec; c += g.accWidth)
      wParts.push_back(vector::ShuffleOp::create(
          b, loc, wv, wv,
          llvm::to_vector(llvm::seq<int64_t>(c, c + g.accWidth))));
  }
  return wParts;
}

/// Row r's accumulator `acc` plus x's values at `kk` times `wParts`.
static Value accumulateRow(OpBuilder &b, Location loc, const GemvBody &g,
                           int64_t r, Value acc, Value kk,
                           ArrayRef<Value> wParts) {
  auto stepRow = scf::IfOp::create(
      b, loc, g.rowOk[r],
      [&](OpBuilder &nb, Location nl) {
        SmallVector<Value> idx(g.rowIdx[r]);
        idx.push_back(kk);
        Value sum = acc;
        for (auto [c, wPart] : llvm::enumerate(wParts)) {
          SmallVector<Value> at(idx);
          if (c > 0)
            at.back() = arith::AddIOp::create(
                nb, nl, kk, index(nb, nl, int64_t(c) * g.accWidth));
          Value xv = loadAsF32(nb, loc, g.p.x, at, g.vec == 1 ? 1 : g.accWidth);
          sum = math::FmaOp::create(nb, nl, xv, wPart, sum);
        }
        scf::YieldOp::create(nb, nl, sum);
      },
      [&](OpBuilder &nb, Location nl) { scf::YieldOp::create(nb, nl, acc); });
  return stepRow.getResult(0);
}

/// The lane's sums over its share of k, one accumulator a row.
static scf::IfOp buildKLoop(OpBuilder &b, Location loc, const GemvBody &g) {
  // Lane l of split s reads k = (s·32 + l)·vec, then every splits·32·vec:
  // at each step a warp reads 32·vec consecutive values of w's row. A warp
  // past the last column skips the loop (the same for all its lanes) and
  // sums zeros.
  int64_t vec = g.vec, step = kWarp * vec;
  Value lane = g.lane, split = g.split;
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(g.accType));
  SmallVector<Value> inits(g.maxRows, zero);
  SmallVector<Type> accTypes(g.maxRows, g.accType);
  Value begin = arith::MulIOp::create(
      b, loc,
      arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, split, index(b, loc, kWarp)),
          lane),
      index(b, loc, vec));
  Value end = index(b, loc, g.p.k);
  auto inRange = scf::IfOp::create(b, loc, accTypes, g.colOk,
                                   /*withElseRegion=*/true);
  OpBuilder::InsertionGuard inner(b);
  b.setInsertionPointToStart(inRange.elseBlock());
  scf::YieldOp::create(b, loc, inits);
  b.setInsertionPointToStart(inRange.thenBlock());
  auto kLoop = scf::ForOp::create(b, loc, begin, end,
                                  index(b, loc, g.splits * step), inits);
  scf::YieldOp::create(b, loc, kLoop.getResults());
  b.setInsertionPointToStart(kLoop.getBody());
  Value kk = kLoop.getInductionVar();
  Value wv = loadAsF32(b, loc, g.w, {g.wCol, kk}, vec);
  SmallVector<Value> wParts = splitWeights(b, loc, g, wv);
  SmallVector<Value> next;
  for (int64_t r = 0; r < g.maxRows; ++r)
    next.push_back(
        accumulateRow(b, loc, g, r, kLoop.getRegionIterArgs()[r], kk, wParts));
  scf::YieldOp::create(b, loc, next);
  return inRange;
}

/// Each row's sum over the warp's lanes (every lane gets it).
static SmallVector<Value> warpTotals(OpBuilder &b, Location loc,
                                     const GemvBody &g, scf::IfOp inRange) {
  SmallVector<Value> totals;
  for (int64_t r = 0; r < g.maxRows; ++r) {
    Value partial = inRange.getResult(r);
    if (g.vec > 1)
      partial = vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD,
                                            partial);
    totals.push_back(warpSum(b, loc, partial));
  }
  return totals;
}

/// `total` added to (with p.overwrite: stored in) row r of the warp's column.
static void addToOut(OpBuilder &b, Location loc, const GemvBody &g, int64_t r,
                     Value total) {
  SmallVector<Value> outIdx(g.rowIdx[r]);
  outIdx.push_back(g.wCol);
  if (!g.p.overwrite)
    total = arith::AddFOp::create(
        b, loc, memref::LoadOp::create(b, loc, g.out, outIdx), total);
  memref::StoreOp::create(b, loc, total, g.out, outIdx);
}

/// The totals of an unsplit k written by the threads `writes` selects.
static void storeTotals(OpBuilder &b, Location loc, const GemvBody &g,
                        Value writes, ArrayRef<Value> totals) {
  for (int64_t r = 0; r < g.maxRows; ++r) {
    auto store = scf::IfOp::create(
        b, loc, arith::AndIOp::create(b, loc, writes, g.rowOk[r]));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(store.thenBlock());
    addToOut(b, loc, g, r, totals[r]);
  }
}

/// The splits' totals met in `partials` and added in order by split 0.
static void storeSplitTotals(OpBuilder &b, Location loc, const GemvBody &g,
                             Value lane0, Value writes, ArrayRef<Value> totals,
                             Value partials) {
  // Lane 0 of every split leaves its sums in workgroup memory; after the
  // barrier (reached by every thread of the block: no condition around it
  // but the launch's own, the same for all), split 0 adds the splits' sums
  // in order and writes the column.
  assert(partials && "split sums need their workgroup buffer");
  {
    auto leave = scf::IfOp::create(b, loc, lane0);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(leave.thenBlock());
    for (int64_t r = 0; r < g.maxRows; ++r)
      memref::StoreOp::create(
          b, loc, totals[r], partials,
          ValueRange{g.split, g.colInBlock, index(b, loc, r)});
  }
  gpu::BarrierOp::create(b, loc);
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, g.split,
                                      index(b, loc, 0));
  for (int64_t r = 0; r < g.maxRows; ++r) {
    auto store = scf::IfOp::create(
        b, loc,
        arith::AndIOp::create(
            b, loc, arith::AndIOp::create(b, loc, writes, first), g.rowOk[r]));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(store.thenBlock());
    Value sum;
    for (int64_t s = 0; s < g.splits; ++s) {
      Value part = memref::LoadOp::create(
          b, loc, partials,
          ValueRange{index(b, loc, s), g.colInBlock, index(b, loc, r)});
      sum = sum ? arith::AddFOp::create(b, loc, sum, part).getResult() : part;
    }
    addToOut(b, loc, g, r, sum);
  }
}

void buildGemvBody(OpBuilder &b, Location loc, const GpuProjection &p,
                   const GemvShape &shape, int64_t maxRows, Value block,
                   Value lane, Value warp, Value partials,
                   ArrayRef<GemvSegment> segments) {
  OpBuilder::InsertionGuard guard(b);
  int64_t vec = shape.vec;
  Type f32 = b.getF32Type();
  // Accumulators of 4 floats (one 16-byte load of x): 8 narrow weights
  // a load go into them in two FMAs, which keeps four rows' sums in 16
  // registers instead of 32.
  int64_t accWidth = std::min<int64_t>(vec, 4);
  Type accType = vec == 1 ? f32 : Type(VectorType::get({accWidth}, f32));
  GemvBody g{p,          maxRows,  vec,     shape.splits,
             shape.cols, accWidth, accType, lane};
  placeWarp(b, loc, g, block, warp);
  selectSegment(b, loc, g, segments);
  indexRows(b, loc, g);
  scf::IfOp inRange = buildKLoop(b, loc, g);

  Value lane0 = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane,
                                      index(b, loc, 0));
  SmallVector<Value> totals = warpTotals(b, loc, g, inRange);
  Value writes = arith::AndIOp::create(b, loc, lane0, g.colOk);
  if (g.splits == 1)
    storeTotals(b, loc, g, writes, totals);
  else
    storeSplitTotals(b, loc, g, lane0, writes, totals, partials);
}

} // namespace mlir::tlm
