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

void buildGemvBody(OpBuilder &b, Location loc, const GpuProjection &p,
                   const GemvShape &shape, int64_t maxRows, Value block,
                   Value lane, Value warp, Value partials,
                   ArrayRef<GemvSegment> segments) {
  OpBuilder::InsertionGuard guard(b);
  int64_t vec = shape.vec, splits = shape.splits, cols = shape.cols;
  int64_t step = kWarp * vec;
  Type f32 = b.getF32Type();
  // Accumulators of 4 floats (one 16-byte load of x): 8 narrow weights
  // a load go into them in two FMAs, which keeps four rows' sums in 16
  // registers instead of 32.
  int64_t accWidth = std::min<int64_t>(vec, 4);
  Type accType = vec == 1 ? f32 : Type(VectorType::get({accWidth}, f32));
  Value colInBlock = warp, split = index(b, loc, 0);
  if (splits > 1) {
    colInBlock = arith::RemUIOp::create(b, loc, warp, index(b, loc, cols));
    split = arith::DivUIOp::create(b, loc, warp, index(b, loc, cols));
  }
  Value col = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, block, index(b, loc, cols)),
      colInBlock);
  Value colOk = lessThan(b, loc, col, index(b, loc, p.n));
  // The warp's weight row and output column: in its segment's buffers
  // when several projections share the launch (the same for every lane).
  Value w = p.w, out = p.out, wCol = col;
  for (size_t i = 1; i < segments.size(); ++i) {
    const GemvSegment &seg = segments[i];
    Value in = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, col,
                                     index(b, loc, seg.offset));
    w = arith::SelectOp::create(b, loc, in, seg.w, w);
    out = arith::SelectOp::create(b, loc, in, seg.out, out);
    wCol = arith::SelectOp::create(
        b, loc, in,
        arith::SubIOp::create(b, loc, col, index(b, loc, seg.offset)), wCol);
  }

  SmallVector<Value> rowOk;
  SmallVector<SmallVector<Value>> rowIdx;
  for (int64_t r = 0; r < maxRows; ++r) {
    Value rv = index(b, loc, r);
    rowOk.push_back(lessThan(b, loc, rv, p.rows));
    rowIdx.push_back(delinearize(b, loc, rv, p.rowSizes));
  }
  // `width` values at idx, as f32: bf16 and f16 weights widen in
  // registers.
  auto load = [&](OpBuilder &ob, Value memref, ValueRange idx,
                  int64_t width) -> Value {
    Type elem = elementType(memref);
    Value v;
    if (width == 1)
      v = memref::LoadOp::create(ob, loc, memref, idx);
    else
      v = vector::LoadOp::create(ob, loc, VectorType::get({width}, elem),
                                 memref, idx, /*nontemporal=*/false,
                                 llvm::MaybeAlign(16));
    if (!getElementTypeOrSelf(v).isF32())
      v = arith::ExtFOp::create(
          ob, loc, width == 1 ? f32 : Type(VectorType::get({width}, f32)), v);
    return v;
  };

  // Lane l of split s reads k = (s·32 + l)·vec, then every splits·32·vec:
  // at each step a warp reads 32·vec consecutive values of w's row. A warp
  // past the last column skips the loop (the same for all its lanes) and
  // sums zeros.
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(accType));
  SmallVector<Value> inits(maxRows, zero);
  SmallVector<Type> accTypes(maxRows, accType);
  Value begin = arith::MulIOp::create(
      b, loc,
      arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, split, index(b, loc, kWarp)),
          lane),
      index(b, loc, vec));
  Value end = index(b, loc, p.k);
  auto inRange = scf::IfOp::create(b, loc, accTypes, colOk,
                                   /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(inRange.elseBlock());
    scf::YieldOp::create(b, loc, inits);
    b.setInsertionPointToStart(inRange.thenBlock());
    auto kLoop = scf::ForOp::create(b, loc, begin, end,
                                    index(b, loc, splits * step), inits);
    scf::YieldOp::create(b, loc, kLoop.getResults());
    b.setInsertionPointToStart(kLoop.getBody());
    Value kk = kLoop.getInductionVar();
    Value wv = load(b, w, {wCol, kk}, vec);
    // w's values in pieces of the accumulators' width (shuffles, which
    // the NVVM lowering takes where it has no strided slices).
    SmallVector<Value> wParts{wv};
    if (vec > accWidth) {
      wParts.clear();
      for (int64_t c = 0; c < vec; c += accWidth)
        wParts.push_back(vector::ShuffleOp::create(
            b, loc, wv, wv,
            llvm::to_vector(llvm::seq<int64_t>(c, c + accWidth))));
    }
    SmallVector<Value> next;
    for (int64_t r = 0; r < maxRows; ++r) {
      Value acc = kLoop.getRegionIterArgs()[r];
      auto stepRow = scf::IfOp::create(
          b, loc, rowOk[r],
          [&](OpBuilder &nb, Location nl) {
            SmallVector<Value> idx(rowIdx[r]);
            idx.push_back(kk);
            Value sum = acc;
            for (auto [c, wPart] : llvm::enumerate(wParts)) {
              SmallVector<Value> at(idx);
              if (c > 0)
                at.back() = arith::AddIOp::create(
                    nb, nl, kk, index(nb, nl, int64_t(c) * accWidth));
              Value xv = load(nb, p.x, at, vec == 1 ? 1 : accWidth);
              sum = math::FmaOp::create(nb, nl, xv, wPart, sum);
            }
            scf::YieldOp::create(nb, nl, sum);
          },
          [&](OpBuilder &nb, Location nl) {
            scf::YieldOp::create(nb, nl, acc);
          });
      next.push_back(stepRow.getResult(0));
    }
    scf::YieldOp::create(b, loc, next);
  }

  Value lane0 = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane,
                                      index(b, loc, 0));
  SmallVector<Value> totals;
  for (int64_t r = 0; r < maxRows; ++r) {
    Value partial = inRange.getResult(r);
    if (vec > 1)
      partial = vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD,
                                            partial);
    totals.push_back(warpSum(b, loc, partial));
  }
  auto addToOut = [&](OpBuilder &ob, int64_t r, Value total) {
    SmallVector<Value> outIdx(rowIdx[r]);
    outIdx.push_back(wCol);
    if (!p.overwrite)
      total = arith::AddFOp::create(
          ob, loc, memref::LoadOp::create(ob, loc, out, outIdx), total);
    memref::StoreOp::create(ob, loc, total, out, outIdx);
  };
  Value writes = arith::AndIOp::create(b, loc, lane0, colOk);
  if (splits == 1) {
    for (int64_t r = 0; r < maxRows; ++r) {
      auto store = scf::IfOp::create(
          b, loc, arith::AndIOp::create(b, loc, writes, rowOk[r]));
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(store.thenBlock());
      addToOut(b, r, totals[r]);
    }
    return;
  }
  // Lane 0 of every split leaves its sums in workgroup memory; after the
  // barrier (reached by every thread of the block: no condition around it
  // but the launch's own, the same for all), split 0 adds the splits' sums
  // in order and writes the column.
  assert(partials && "split sums need their workgroup buffer");
  {
    auto leave = scf::IfOp::create(b, loc, lane0);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(leave.thenBlock());
    for (int64_t r = 0; r < maxRows; ++r)
      memref::StoreOp::create(b, loc, totals[r], partials,
                              ValueRange{split, colInBlock, index(b, loc, r)});
  }
  gpu::BarrierOp::create(b, loc);
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, split,
                                      index(b, loc, 0));
  for (int64_t r = 0; r < maxRows; ++r) {
    auto store = scf::IfOp::create(
        b, loc,
        arith::AndIOp::create(b, loc, arith::AndIOp::create(b, loc, writes,
                                                            first),
                              rowOk[r]));
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(store.thenBlock());
    Value sum;
    for (int64_t s = 0; s < splits; ++s) {
      Value part = memref::LoadOp::create(
          b, loc, partials,
          ValueRange{index(b, loc, s), colInBlock, index(b, loc, r)});
      sum = sum ? arith::AddFOp::create(b, loc, sum, part).getResult() : part;
    }
    addToOut(b, r, sum);
  }
}

} // namespace mlir::tlm
