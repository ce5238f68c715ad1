//===- GpuKernels.cpp - hand-shaped GPU kernels for matmuls and reductions ===//
//
// Most ops reach the GPU through generic loop mapping (GpuMapping.cpp): one
// thread per output element, reductions in a loop within the thread. Two op
// families deserve better and get kernels of their own here, built as
// gpu.launch ops on buffers:
//  - projections: shared-memory tiles, so each weight row is read once per
//    tile of rows instead of once per row (tlm-gpu-tile-matmuls);
//  - row reductions: one block per row, the threads of the block splitting
//    the row and combining with gpu.all_reduce (tlm-gpu-block-reductions).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/Projection.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::tlm {
#define GEN_PASS_DEF_TLMGPUTILEMATMULS
#define GEN_PASS_DEF_TLMGPUBLOCKREDUCTIONS
#include "passes/Passes.h.inc"
} // namespace mlir::tlm

using namespace mlir;

namespace {

Value index(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value product(OpBuilder &b, Location loc, ArrayRef<Value> sizes) {
  Value p = index(b, loc, 1);
  for (Value s : sizes)
    p = arith::MulIOp::create(b, loc, p, s);
  return p;
}

Value lessThan(OpBuilder &b, Location loc, Value a, Value c) {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, a, c);
}

/// Row-major indices of `flat` in a space of `sizes`.
SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value flat,
                               ArrayRef<Value> sizes) {
  SmallVector<Value> idx(sizes.size());
  for (int64_t i = int64_t(sizes.size()) - 1; i > 0; --i) {
    idx[i] = arith::RemUIOp::create(b, loc, flat, sizes[i]);
    flat = arith::DivUIOp::create(b, loc, flat, sizes[i]);
  }
  if (!sizes.empty())
    idx[0] = flat;
  return idx;
}

/// A gpu.launch of `grid` x `block` with `workgroup` buffers, the builder
/// placed at the start of its body (before the terminator).
gpu::LaunchOp makeLaunch(OpBuilder &b, Location loc, std::array<Value, 3> grid,
                         std::array<Value, 3> block, TypeRange workgroup = {}) {
  auto launch = gpu::LaunchOp::create(
      b, loc, grid[0], grid[1], grid[2], block[0], block[1], block[2],
      /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
      /*asyncDependencies=*/ValueRange(), workgroup);
  Block &body = launch.getBody().front();
  b.setInsertionPointToEnd(&body);
  gpu::TerminatorOp::create(b, loc);
  b.setInsertionPointToStart(&body);
  return launch;
}

/// `cond ? load(memref[indices]) : 0`.
Value guardedLoad(OpBuilder &b, Location loc, Value cond, Value memref,
                  ValueRange indices, Value zero) {
  auto ifOp = scf::IfOp::create(
      b, loc, cond,
      [&](OpBuilder &nb, Location nl) {
        scf::YieldOp::create(
            nb, nl,
            memref::LoadOp::create(nb, nl, memref, indices).getResult());
      },
      [&](OpBuilder &nb, Location nl) { scf::YieldOp::create(nb, nl, zero); });
  return ifOp.getResult(0);
}

//===----------------------------------------------------------------------===//
// tlm-gpu-tile-matmuls
//===----------------------------------------------------------------------===//

struct TlmGpuTileMatmuls
    : public tlm::impl::TlmGpuTileMatmulsBase<TlmGpuTileMatmuls> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<std::pair<linalg::LinalgOp, tlm::ProjectionDims>> work;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (!op.hasPureBufferSemantics())
        return;
      FailureOr<tlm::ProjectionDims> p = tlm::matchProjection(op);
      if (succeeded(p))
        work.emplace_back(op, *p);
    });
    IRRewriter rewriter(&getContext());
    for (auto &[op, p] : work)
      rewrite(rewriter, op, p);
  }

  void rewrite(IRRewriter &b, linalg::LinalgOp op,
               const tlm::ProjectionDims &p) {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Value x = op.getDpsInputOperand(0)->get();
    Value w = op.getDpsInputOperand(1)->get();
    Value out = op.getDpsInitOperand(0)->get();
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t n = ranges[p.n], k = ranges[p.k], t = tile;

    b.setInsertionPoint(op);
    // x is (rows..., k): its leading dims are the rows, flattened to m.
    SmallVector<Value> rowSizes;
    for (unsigned i = 0; i < p.rows.size(); ++i)
      rowSizes.push_back(b.createOrFold<memref::DimOp>(loc, x, i));
    Value m = product(b, loc, rowSizes);
    Value c1 = index(b, loc, 1), ct = index(b, loc, t);
    Value mTiles = arith::DivUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, m, index(b, loc, t - 1)), ct);
    Value nTiles = index(b, loc, llvm::divideCeil(n, t));
    auto workgroup =
        gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
    Type f32 = b.getF32Type();
    // w's tile is read down a column (ws[tx][kk]): one padding column puts
    // the 32 threads of a warp on 32 different banks.
    auto xsType =
        MemRefType::get({t, t}, f32, MemRefLayoutAttrInterface(), workgroup);
    auto wsType = MemRefType::get({t, t + 1}, f32, MemRefLayoutAttrInterface(),
                                  workgroup);
    gpu::LaunchOp launch = makeLaunch(b, loc, {mTiles, nTiles, c1},
                                      {ct, ct, c1}, {xsType, wsType});
    Value xs = launch.getWorkgroupAttributions()[0];
    Value ws = launch.getWorkgroupAttributions()[1];
    gpu::KernelDim3 block = launch.getBlockIds(),
                    thread = launch.getThreadIds();

    // This thread's output (row, col); the row and the w row it loads.
    Value row = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, block.x, ct), thread.y);
    Value col = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, block.y, ct), thread.x);
    Value wRow = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, block.y, ct), thread.y);
    Value cn = index(b, loc, n), ck = index(b, loc, k);
    Value rowOk = lessThan(b, loc, row, m);
    Value colOk = lessThan(b, loc, col, cn);
    Value wRowOk = lessThan(b, loc, wRow, cn);
    SmallVector<Value> rowIdx = delinearize(b, loc, row, rowSizes);
    Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
    Value c0 = index(b, loc, 0);

    auto kLoop = scf::ForOp::create(b, loc, c0, ck, ct, ValueRange{zero});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(kLoop.getBody());
      Value k0 = kLoop.getInductionVar();
      Value acc = kLoop.getRegionIterArgs()[0];
      Value kx = arith::AddIOp::create(b, loc, k0, thread.x);
      Value kOk = lessThan(b, loc, kx, ck);
      SmallVector<Value> xIdx(rowIdx);
      xIdx.push_back(kx);
      Value a = guardedLoad(b, loc, arith::AndIOp::create(b, loc, rowOk, kOk),
                            x, xIdx, zero);
      memref::StoreOp::create(b, loc, a, xs, ValueRange{thread.y, thread.x});
      Value wv = guardedLoad(b, loc, arith::AndIOp::create(b, loc, wRowOk, kOk),
                             w, ValueRange{wRow, kx}, zero);
      memref::StoreOp::create(b, loc, wv, ws, ValueRange{thread.y, thread.x});
      gpu::BarrierOp::create(b, loc);
      auto dot = scf::ForOp::create(b, loc, c0, ct, c1, ValueRange{acc});
      {
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPointToStart(dot.getBody());
        Value kk = dot.getInductionVar();
        Value xv = memref::LoadOp::create(b, loc, xs, ValueRange{thread.y, kk});
        Value wk = memref::LoadOp::create(b, loc, ws, ValueRange{thread.x, kk});
        Value sum =
            math::FmaOp::create(b, loc, xv, wk, dot.getRegionIterArgs()[0]);
        scf::YieldOp::create(b, loc, sum);
      }
      // Nobody overwrites the tiles before everyone has read them.
      gpu::BarrierOp::create(b, loc);
      scf::YieldOp::create(b, loc, dot.getResult(0));
    }
    Value total = kLoop.getResult(0);
    auto store =
        scf::IfOp::create(b, loc, arith::AndIOp::create(b, loc, rowOk, colOk));
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(store.thenBlock());
      SmallVector<Value> outIdx(rowIdx);
      outIdx.push_back(col);
      Value old = memref::LoadOp::create(b, loc, out, outIdx);
      memref::StoreOp::create(b, loc, arith::AddFOp::create(b, loc, old, total),
                              out, outIdx);
    }
    b.eraseOp(op);
  }
};

//===----------------------------------------------------------------------===//
// tlm-gpu-block-reductions
//===----------------------------------------------------------------------===//

/// `out = combine(out, f(inputs))` over the last loop.
struct RowReduction {
  Operation *combiner;
  gpu::AllReduceOperation kind;
  double identity;
};

FailureOr<RowReduction> matchRowReduction(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1)
    return failure();
  unsigned loops = op.getNumLoops();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  if (loops == 0 || iterators.back() != utils::IteratorType::reduction)
    return failure();
  for (unsigned i = 0; i + 1 < loops; ++i)
    if (iterators[i] != utils::IteratorType::parallel)
      return failure();
  SmallVector<unsigned> outer;
  for (unsigned i = 0; i + 1 < loops; ++i)
    outer.push_back(i);
  OpOperand *init = op.getDpsInitOperand(0);
  if (op.getMatchingIndexingMap(init) !=
      tlm::dimsMapOf(op->getContext(), loops, outer))
    return failure();
  BlockArgument acc = op.getMatchingBlockArgument(init);
  if (!acc.getType().isF32() || !acc.hasOneUse())
    return failure();
  Operation *combiner = *acc.getUsers().begin();
  auto yield = cast<linalg::YieldOp>(op.getBody()->getTerminator());
  if (yield.getOperand(0).getDefiningOp() != combiner)
    return failure();
  if (isa<arith::AddFOp>(combiner))
    return RowReduction{combiner, gpu::AllReduceOperation::ADD, 0.0};
  double negInf = -std::numeric_limits<double>::infinity();
  if (isa<arith::MaximumFOp>(combiner))
    return RowReduction{combiner, gpu::AllReduceOperation::MAXIMUMF, negInf};
  if (isa<arith::MaxNumFOp>(combiner))
    return RowReduction{combiner, gpu::AllReduceOperation::MAXNUMF, negInf};
  return failure();
}

struct TlmGpuBlockReductions
    : public tlm::impl::TlmGpuBlockReductionsBase<TlmGpuBlockReductions> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<std::pair<linalg::GenericOp, RowReduction>> work;
    getOperation().walk([&](linalg::GenericOp op) {
      FailureOr<RowReduction> r = matchRowReduction(op);
      if (failed(r))
        return;
      // A reduction shorter than a warp runs faster within one thread.
      int64_t extent = op.getStaticLoopRanges().back();
      if (!ShapedType::isDynamic(extent) && extent < 32)
        return;
      work.emplace_back(op, *r);
    });
    IRRewriter rewriter(&getContext());
    for (auto &[op, r] : work)
      rewrite(rewriter, op, r);
  }

  void rewrite(IRRewriter &b, linalg::GenericOp op, const RowReduction &r) {
    Location loc = op.getLoc();
    unsigned loops = op.getNumLoops();
    b.setInsertionPoint(op);
    SmallVector<Value> sizes;
    auto linalgOp = cast<linalg::LinalgOp>(op.getOperation());
    for (Range range : linalgOp.createLoopRanges(b, loc))
      sizes.push_back(getValueOrCreateConstantIndexOp(b, loc, range.size));
    ArrayRef<Value> outerSizes = ArrayRef<Value>(sizes).drop_back();
    int64_t extent = op.getStaticLoopRanges().back();
    int64_t threads = blockSize;
    if (!ShapedType::isDynamic(extent))
      threads = std::clamp<int64_t>(llvm::PowerOf2Ceil(extent), 32, threads);
    Value c1 = index(b, loc, 1), cThreads = index(b, loc, threads);
    gpu::LaunchOp launch = makeLaunch(
        b, loc, {product(b, loc, outerSizes), c1, c1}, {cThreads, c1, c1});
    gpu::KernelDim3 block = launch.getBlockIds(),
                    thread = launch.getThreadIds();
    SmallVector<Value> outerIdx = delinearize(b, loc, block.x, outerSizes);

    // Each thread folds every `threads`-th element of the row.
    Value identity = arith::ConstantOp::create(
        b, loc, b.getF32FloatAttr(static_cast<float>(r.identity)));
    BlockArgument acc = op.getMatchingBlockArgument(op.getDpsInitOperand(0));
    auto strided = scf::ForOp::create(b, loc, thread.x, sizes.back(), cThreads,
                                      ValueRange{identity});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(strided.getBody());
      SmallVector<Value> ivs(outerIdx);
      ivs.push_back(strided.getInductionVar());
      IRMapping map;
      for (OpOperand *in : op.getDpsInputOperands()) {
        AffineMap m = op.getMatchingIndexingMap(in);
        SmallVector<Value> idx;
        for (AffineExpr e : m.getResults()) {
          if (auto d = dyn_cast<AffineDimExpr>(e))
            idx.push_back(ivs[d.getPosition()]);
          else
            idx.push_back(affine::AffineApplyOp::create(
                b, loc, AffineMap::get(loops, 0, e), ivs));
        }
        map.map(op.getMatchingBlockArgument(in),
                memref::LoadOp::create(b, loc, in->get(), idx).getResult());
      }
      map.map(acc, strided.getRegionIterArgs()[0]);
      for (Operation &bodyOp : op.getBody()->without_terminator()) {
        if (auto idxOp = dyn_cast<linalg::IndexOp>(bodyOp)) {
          map.map(idxOp.getResult(), ivs[idxOp.getDim()]);
          continue;
        }
        b.clone(bodyOp, map);
      }
      scf::YieldOp::create(b, loc, map.lookup(r.combiner->getResult(0)));
    }
    // The block combines its partials; thread 0 folds the total in.
    Value total = gpu::AllReduceOp::create(
        b, loc, strided.getResult(0),
        gpu::AllReduceOperationAttr::get(b.getContext(), r.kind),
        /*uniform=*/true);
    Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                        thread.x, index(b, loc, 0));
    auto store = scf::IfOp::create(b, loc, first);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(store.thenBlock());
      Value out = op.getDpsInitOperand(0)->get();
      Value old = memref::LoadOp::create(b, loc, out, outerIdx);
      IRMapping fold;
      fold.map(acc, old);
      Value other = r.combiner->getOperand(0) == acc
                        ? r.combiner->getOperand(1)
                        : r.combiner->getOperand(0);
      fold.map(other, total);
      Operation *combined = b.clone(*r.combiner, fold);
      memref::StoreOp::create(b, loc, combined->getResult(0), out, outerIdx);
    }
    b.eraseOp(op);
  }
};

} // namespace
