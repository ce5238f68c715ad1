//===- TiledKernel.cpp - projections as register-blocked tile kernels -----===//

#include "passes/gpu/TiledKernel.h"
#include "passes/common/Builders.h"
#include "passes/gpu/KernelBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace mlir::tlm {

TiledShape tiledShape(OpBuilder &b, Location loc, const GpuProjection &p,
                      int64_t tile, int64_t threadTile) {
  int64_t span = tile * threadTile; // a block's rows and columns
  TiledShape s;
  s.rowBlocks = blocksFor(b, loc, p.rows, span);
  s.colBlocks = llvm::divideCeil(p.n, span);
  // w's tile is read down a column (ws[tx + t·j][kk]): one padding column
  // puts the 16 rows a half-warp reads on 16 different banks.
  s.xs = workgroupF32(b.getContext(), {span, tile});
  s.ws = workgroupF32(b.getContext(), {span, tile + 1});
  return s;
}

namespace {
/// What the steps of the tile kernel's body share.
struct TiledBody {
  const GpuProjection &p;
  int64_t t, r; ///< tile, threadTile
  Value tx, ty, xs, ws;
  // Worked out by the steps:
  Value c0{}, c1{}, ct{}, row0{}, col0{}, cn{}, ck{}, zero{};
  /// The thread's staged rows of the tiles, their guards in x and w, and
  /// their indices into x.
  SmallVector<Value> stageRow{}, xRowOk{}, wRowOk{};
  SmallVector<SmallVector<Value>> xRowIdx{};
};
} // namespace

/// The rows the thread stages, their indices into x and their guards.
static void planStaging(OpBuilder &b, Location loc, TiledBody &k) {
  // Staging: the block's span x t pieces of x and w are t·t·r floats each,
  // r per thread; thread f stages element f + t·t·s (s < r), row
  // (f + t·t·s) / t = ty + t·s, column tx, so a warp reads consecutive k.
  // Those rows do not change with k: their indices into x (whose rows may
  // be several dims) and their guards are worked out once.
  for (int64_t s = 0; s < k.r; ++s) {
    Value local = arith::AddIOp::create(b, loc, k.ty, index(b, loc, k.t * s));
    k.stageRow.push_back(local);
    Value row = arith::AddIOp::create(b, loc, k.row0, local);
    k.xRowOk.push_back(lessThan(b, loc, row, k.p.rows));
    k.xRowIdx.push_back(delinearize(b, loc, row, k.p.rowSizes));
    k.wRowOk.push_back(
        lessThan(b, loc, arith::AddIOp::create(b, loc, k.col0, local), k.cn));
  }
}

/// The thread's elements of the x and w tiles at `k0`, staged.
static void stageTiles(OpBuilder &b, Location loc, const TiledBody &k,
                       Value k0) {
  Value kx = arith::AddIOp::create(b, loc, k0, k.tx);
  Value kOk = lessThan(b, loc, kx, k.ck);
  for (int64_t s = 0; s < k.r; ++s) {
    SmallVector<Value> xIdx(k.xRowIdx[s]);
    xIdx.push_back(kx);
    Value a =
        guardedLoad(b, loc, arith::AndIOp::create(b, loc, k.xRowOk[s], kOk),
                    k.p.x, xIdx, k.zero);
    memref::StoreOp::create(b, loc, a, k.xs, ValueRange{k.stageRow[s], k.tx});
    Value wRow = arith::AddIOp::create(b, loc, k.col0, k.stageRow[s]);
    Value wv =
        guardedLoad(b, loc, arith::AndIOp::create(b, loc, k.wRowOk[s], kOk),
                    k.p.w, ValueRange{wRow, kx}, k.zero);
    memref::StoreOp::create(b, loc, wv, k.ws, ValueRange{k.stageRow[s], k.tx});
  }
}

/// The r·r sums `acc` after the staged tiles' t steps of k.
static scf::ForOp buildTileProducts(OpBuilder &b, Location loc,
                                    const TiledBody &k, ValueRange acc) {
  // Thread (tx, ty) owns rows ty + t·i and columns tx + t·j: r values of
  // x and r of w from workgroup memory give r·r multiply-adds.
  int64_t t = k.t, r = k.r;
  auto dot = scf::ForOp::create(b, loc, k.c0, k.ct, k.c1, acc);
  OpBuilder::InsertionGuard innermost(b);
  b.setInsertionPointToStart(dot.getBody());
  Value kk = dot.getInductionVar();
  SmallVector<Value> xv, wv;
  for (int64_t i = 0; i < r; ++i) {
    Value offset = index(b, loc, t * i);
    xv.push_back(memref::LoadOp::create(
        b, loc, k.xs,
        ValueRange{arith::AddIOp::create(b, loc, k.ty, offset), kk}));
    wv.push_back(memref::LoadOp::create(
        b, loc, k.ws,
        ValueRange{arith::AddIOp::create(b, loc, k.tx, offset), kk}));
  }
  SmallVector<Value> next;
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < r; ++j)
      next.push_back(math::FmaOp::create(b, loc, xv[i], wv[j],
                                         dot.getRegionIterArgs()[i * r + j]));
  scf::YieldOp::create(b, loc, next);
  return dot;
}

/// Each of the thread's sums added to (with p.overwrite: stored in) `out`.
static void storeSums(OpBuilder &b, Location loc, const TiledBody &k,
                      scf::ForOp kLoop) {
  // Each sum added to its output, consecutive threads on consecutive
  // columns.
  int64_t t = k.t, r = k.r;
  const GpuProjection &p = k.p;
  for (int64_t i = 0; i < r; ++i) {
    Value row = arith::AddIOp::create(
        b, loc, k.row0,
        arith::AddIOp::create(b, loc, k.ty, index(b, loc, t * i)));
    Value rowOk = lessThan(b, loc, row, p.rows);
    SmallVector<Value> rowIdx = delinearize(b, loc, row, p.rowSizes);
    for (int64_t j = 0; j < r; ++j) {
      Value col = arith::AddIOp::create(
          b, loc, k.col0,
          arith::AddIOp::create(b, loc, k.tx, index(b, loc, t * j)));
      auto store = scf::IfOp::create(
          b, loc,
          arith::AndIOp::create(b, loc, rowOk, lessThan(b, loc, col, k.cn)));
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(store.thenBlock());
      SmallVector<Value> outIdx(rowIdx);
      outIdx.push_back(col);
      Value sum = kLoop.getResult(i * r + j);
      if (!p.overwrite)
        sum = arith::AddFOp::create(
            b, loc, memref::LoadOp::create(b, loc, p.out, outIdx), sum);
      memref::StoreOp::create(b, loc, sum, p.out, outIdx);
    }
  }
}

void buildTiledBody(OpBuilder &b, Location loc, const GpuProjection &p,
                    int64_t tile, int64_t threadTile, Value blockX,
                    Value blockY, Value tx, Value ty, Value xs, Value ws) {
  OpBuilder::InsertionGuard guard(b);
  const int64_t t = tile, r = threadTile, span = t * r;
  TiledBody k{p, t, r, tx, ty, xs, ws};
  k.c0 = index(b, loc, 0);
  k.c1 = index(b, loc, 1);
  k.ct = index(b, loc, t);
  Value cSpan = index(b, loc, span);
  k.row0 = arith::MulIOp::create(b, loc, blockX, cSpan);
  k.col0 = arith::MulIOp::create(b, loc, blockY, cSpan);
  k.cn = index(b, loc, p.n);
  k.ck = index(b, loc, p.k);
  k.zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  planStaging(b, loc, k);

  SmallVector<Value> inits(r * r, k.zero);
  auto kLoop = scf::ForOp::create(b, loc, k.c0, k.ck, k.ct, inits);
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(kLoop.getBody());
    stageTiles(b, loc, k, kLoop.getInductionVar());
    gpu::BarrierOp::create(b, loc);
    scf::ForOp dot = buildTileProducts(b, loc, k, kLoop.getRegionIterArgs());
    // Nobody overwrites the tiles before everyone has read them.
    gpu::BarrierOp::create(b, loc);
    scf::YieldOp::create(b, loc, dot.getResults());
  }
  storeSums(b, loc, k, kLoop);
}

} // namespace mlir::tlm
