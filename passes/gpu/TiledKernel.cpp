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

void buildTiledBody(OpBuilder &b, Location loc, const GpuProjection &p,
                    int64_t tile, int64_t threadTile, Value blockX,
                    Value blockY, Value tx, Value ty, Value xs, Value ws) {
  OpBuilder::InsertionGuard guard(b);
  const int64_t t = tile, r = threadTile, span = t * r;
  Value c0 = index(b, loc, 0), c1 = index(b, loc, 1), ct = index(b, loc, t);
  Value cSpan = index(b, loc, span);
  Value row0 = arith::MulIOp::create(b, loc, blockX, cSpan);
  Value col0 = arith::MulIOp::create(b, loc, blockY, cSpan);
  Value cn = index(b, loc, p.n), ck = index(b, loc, p.k);
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));

  // Staging: the block's span x t pieces of x and w are t·t·r floats each,
  // r per thread; thread f stages element f + t·t·s (s < r), row
  // (f + t·t·s) / t = ty + t·s, column tx, so a warp reads consecutive k.
  // Those rows do not change with k: their indices into x (whose rows may
  // be several dims) and their guards are worked out once.
  SmallVector<Value> stageRow, xRowOk, wRowOk;
  SmallVector<SmallVector<Value>> xRowIdx;
  for (int64_t s = 0; s < r; ++s) {
    Value local = arith::AddIOp::create(b, loc, ty, index(b, loc, t * s));
    stageRow.push_back(local);
    Value row = arith::AddIOp::create(b, loc, row0, local);
    xRowOk.push_back(lessThan(b, loc, row, p.rows));
    xRowIdx.push_back(delinearize(b, loc, row, p.rowSizes));
    wRowOk.push_back(
        lessThan(b, loc, arith::AddIOp::create(b, loc, col0, local), cn));
  }

  SmallVector<Value> inits(r * r, zero);
  auto kLoop = scf::ForOp::create(b, loc, c0, ck, ct, inits);
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(kLoop.getBody());
    Value k0 = kLoop.getInductionVar();
    Value kx = arith::AddIOp::create(b, loc, k0, tx);
    Value kOk = lessThan(b, loc, kx, ck);
    for (int64_t s = 0; s < r; ++s) {
      SmallVector<Value> xIdx(xRowIdx[s]);
      xIdx.push_back(kx);
      Value a = guardedLoad(b, loc, arith::AndIOp::create(b, loc, xRowOk[s], kOk),
                            p.x, xIdx, zero);
      memref::StoreOp::create(b, loc, a, xs, ValueRange{stageRow[s], tx});
      Value wRow = arith::AddIOp::create(b, loc, col0, stageRow[s]);
      Value wv = guardedLoad(b, loc, arith::AndIOp::create(b, loc, wRowOk[s], kOk),
                             p.w, ValueRange{wRow, kx}, zero);
      memref::StoreOp::create(b, loc, wv, ws, ValueRange{stageRow[s], tx});
    }
    gpu::BarrierOp::create(b, loc);
    // Thread (tx, ty) owns rows ty + t·i and columns tx + t·j: r values of
    // x and r of w from workgroup memory give r·r multiply-adds.
    auto dot = scf::ForOp::create(b, loc, c0, ct, c1,
                                  kLoop.getRegionIterArgs());
    {
      OpBuilder::InsertionGuard innermost(b);
      b.setInsertionPointToStart(dot.getBody());
      Value kk = dot.getInductionVar();
      SmallVector<Value> xv, wv;
      for (int64_t i = 0; i < r; ++i) {
        Value offset = index(b, loc, t * i);
        xv.push_back(memref::LoadOp::create(
            b, loc, xs,
            ValueRange{arith::AddIOp::create(b, loc, ty, offset), kk}));
        wv.push_back(memref::LoadOp::create(
            b, loc, ws,
            ValueRange{arith::AddIOp::create(b, loc, tx, offset), kk}));
      }
      SmallVector<Value> next;
      for (int64_t i = 0; i < r; ++i)
        for (int64_t j = 0; j < r; ++j)
          next.push_back(math::FmaOp::create(
              b, loc, xv[i], wv[j], dot.getRegionIterArgs()[i * r + j]));
      scf::YieldOp::create(b, loc, next);
    }
    // Nobody overwrites the tiles before everyone has read them.
    gpu::BarrierOp::create(b, loc);
    scf::YieldOp::create(b, loc, dot.getResults());
  }

  // Each sum added to its output, consecutive threads on consecutive
  // columns.
  for (int64_t i = 0; i < r; ++i) {
    Value row = arith::AddIOp::create(
        b, loc, row0,
        arith::AddIOp::create(b, loc, ty, index(b, loc, t * i)));
    Value rowOk = lessThan(b, loc, row, p.rows);
    SmallVector<Value> rowIdx = delinearize(b, loc, row, p.rowSizes);
    for (int64_t j = 0; j < r; ++j) {
      Value col = arith::AddIOp::create(
          b, loc, col0,
          arith::AddIOp::create(b, loc, tx, index(b, loc, t * j)));
      auto store = scf::IfOp::create(
          b, loc, arith::AndIOp::create(b, loc, rowOk, lessThan(b, loc, col, cn)));
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

} // namespace mlir::tlm
