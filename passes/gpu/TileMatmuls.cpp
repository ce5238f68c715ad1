//===- TileMatmuls.cpp - tlm-gpu-tile-matmuls -----------------------------===//
//
// Projections as shared-memory tiled kernels: each weight row is read once
// per tile of rows instead of once per row.
//
//===----------------------------------------------------------------------===//

#include "passes/common/Builders.h"
#include "passes/common/OptionChecks.h"
#include "passes/common/Projection.h"
#include "passes/gpu/GemvKernel.h"
#include "passes/gpu/KernelBuilders.h"
#include "passes/gpu/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/MathExtras.h"

#define DEBUG_TYPE "tlm-gpu-tile-matmuls"

namespace mlir::tlm {
#define GEN_PASS_DEF_TLMGPUTILEMATMULS
#include "passes/gpu/Passes.h.inc"
} // namespace mlir::tlm

using namespace mlir;
using namespace mlir::tlm;

namespace {

struct TlmGpuTileMatmuls
    : public tlm::impl::TlmGpuTileMatmulsBase<TlmGpuTileMatmuls> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(tlm::checkOptions(getOperation(), "tlm-gpu-tile-matmuls",
                                 {{"tile", tile, 1},
                                  {"gemv-rows", gemvRows, 0},
                                  {"gemv-warps", gemvWarps, 1},
                                  {"gemv-min-warps", gemvMinWarps, 1}})))
      return signalPassFailure();
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
    GemvProblem gemv{x, w, out, rowSizes, m, n, k};
    if (gemvRows > 0 && gemvApplies(gemv)) {
      // Decode (m <= gemv-rows) takes the GEMV kernel, anything longer
      // the tiles: the host picks at each call, as m is dynamic.
      Value few = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, m,
                                        index(b, loc, gemvRows));
      auto choice = scf::IfOp::create(b, loc, few, /*withElseRegion=*/true);
      b.setInsertionPointToStart(choice.thenBlock());
      buildGemvLaunch(b, loc, gemv, gemvRows, gemvWarps, gemvMinWarps);
      b.setInsertionPointToStart(choice.elseBlock());
    }
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

} // namespace
