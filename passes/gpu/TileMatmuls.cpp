//===- TileMatmuls.cpp - tlm-gpu-tile-matmuls -----------------------------===//
//
// Projections as GPU kernels: register-blocked tiles staged in workgroup
// memory (TiledKernel.cpp), and for decode's few rows a warp-per-column GEMV
// (GemvKernel.cpp): both launched, the row count giving one of them an
// empty grid at each call.
//
//===----------------------------------------------------------------------===//

#include "passes/common/Builders.h"
#include "passes/common/OptionChecks.h"
#include "passes/common/Projection.h"
#include "passes/gpu/GemvKernel.h"
#include "passes/gpu/KernelBuilders.h"
#include "passes/gpu/MmaKernel.h"
#include "passes/gpu/Passes.h"
#include "passes/gpu/TiledKernel.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/MathExtras.h"

#define DEBUG_TYPE "tlm-gpu-tile-matmuls"

namespace mlir::tlm {
#define GEN_PASS_DEF_TLMGPUTILEMATMULS
#include "passes/gpu/Passes.h.inc"
} // namespace mlir::tlm

using namespace mlir;
using namespace mlir::tlm;

namespace {

/// The zero fill of `out` that `op` starts from, if the kernels can do it
/// themselves by storing their sums (a launch less): `out` a fresh device
/// allocation in `op`'s block, filled with +0.0 there, and before `op` used
/// by nothing else but its dims. After `op` anything may read it (the
/// kernels write every element); nothing may pass it on (a view, a select,
/// a region's result, a call), since a read through that would not show
/// as a use.
linalg::FillOp foldableZeroFill(linalg::LinalgOp op, Value out) {
  auto alloc = out.getDefiningOp<gpu::AllocOp>();
  Block *block = op->getBlock();
  if (!alloc || alloc->getBlock() != block)
    return {};
  linalg::FillOp fill;
  for (Operation *user : out.getUsers()) {
    if (user == op.getOperation() || isa<memref::DimOp>(user))
      continue;
    auto passesOn = [](Operation *o) {
      return isa<ViewLikeOpInterface, RegionBranchOpInterface, CallOpInterface>(
                 o) ||
             o->hasTrait<OpTrait::IsTerminator>() ||
             llvm::any_of(o->getResultTypes(), llvm::IsaPred<MemRefType>);
    };
    Operation *at = block->findAncestorOpInBlock(*user);
    if (!at || passesOn(user))
      return {};
    auto candidate = dyn_cast<linalg::FillOp>(user);
    if (at->isBeforeInBlock(op)) {
      // The one use before op: the fill.
      if (!candidate || at != user || fill)
        return {};
      fill = candidate;
    }
  }
  if (!fill || !matchPattern(fill.getInputs()[0], m_PosZeroFloat()))
    return {};
  return fill;
}

struct TlmGpuTileMatmuls
    : public tlm::impl::TlmGpuTileMatmulsBase<TlmGpuTileMatmuls> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(tlm::checkOptions(getOperation(), "tlm-gpu-tile-matmuls",
                                 {{"tile", tile, 1},
                                  {"thread-tile", threadTile, 1},
                                  {"gemv-rows", gemvRows, 0},
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
    Value x = op.getDpsInputOperand(0)->get();
    Value w = op.getDpsInputOperand(1)->get();
    Value out = op.getDpsInitOperand(0)->get();
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t n = ranges[p.n], k = ranges[p.k];

    if (!projectionKernelsApply(x, w, out)) {
      // Left to the parallel loops, as every other op.
      LLVM_DEBUG(llvm::dbgs()
                 << "not f32 x and out, f32/bf16/f16 w: " << op << "\n");
      return;
    }
    b.setInsertionPoint(op);
    // x is (rows..., k): its leading dims are the rows, flattened to m.
    SmallVector<Value> rowSizes;
    for (unsigned i = 0; i < p.rows.size(); ++i)
      rowSizes.push_back(b.createOrFold<memref::DimOp>(loc, x, i));
    Value m = product(b, loc, rowSizes);
    GpuProjection proj{x, w, out, rowSizes, m, n, k};
    if (linalg::FillOp fill = foldableZeroFill(op, out)) {
      proj.overwrite = true;
      b.eraseOp(fill);
    }
    // Rows beyond the GEMV's go to tensor-core tiles or to the FMA ones.
    bool mma = tensorCores && mmaApplies(proj);
    LLVM_DEBUG(if (tensorCores && !mma) llvm::dbgs()
               << "strided x or out, no tensor cores: " << op << "\n");
    TiledShape tiles;
    MmaShape mmaTiles;
    if (mma)
      mmaTiles = mmaShape(b, loc, proj);
    else
      tiles = tiledShape(b, loc, proj, tile, threadTile);
    Value rowBlocks = mma ? mmaTiles.rowBlocks : tiles.rowBlocks;
    int64_t threads = tile * tile;
    Value c1 = index(b, loc, 1);
    Value tileBlocks = rowBlocks;
    // The GEMV's blocks have as many threads as the tiles', in whole warps.
    if (gemvRows > 0 && gemvApplies(proj) && threads % 32 == 0) {
      // Decode (m <= gemv-rows) runs the GEMV, anything longer the tiles:
      // both are launched, and the row count gives the other one an empty
      // grid, which the runtime does not launch (mgpuLaunchKernel). Under
      // an scf.if instead, gpu-async-region would make the host wait after
      // each; one kernel with both branches would give the GEMV the tiles'
      // registers (80-114 against 31-38: a quarter of the occupancy).
      GemvShape gemv = gemvShape(b.getContext(), proj, gemvRows, threads / 32,
                                 gemvMinWarps);
      Value few = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, m,
                                        index(b, loc, gemvRows));
      Value c0 = index(b, loc, 0);
      Value gemvBlocks = arith::SelectOp::create(
          b, loc, few, index(b, loc, gemv.blocks), c0);
      SmallVector<Type> partials;
      if (gemv.partials)
        partials.push_back(gemv.partials);
      OpBuilder::InsertionGuard guard(b);
      gpu::LaunchOp launch = makeLaunch(
          b, loc, {gemvBlocks, c1, c1},
          {index(b, loc, 32), index(b, loc, gemv.warps), c1}, partials);
      buildGemvBody(b, loc, proj, gemv, gemvRows, launch.getBlockIds().x,
                    launch.getThreadIds().x, launch.getThreadIds().y,
                    gemv.partials ? Value(launch.getWorkgroupAttributions()[0])
                                  : Value());
      b.setInsertionPointAfter(launch);
      tileBlocks = arith::SelectOp::create(b, loc, few, c0, rowBlocks);
    }
    if (mma) {
      Value x2 = collapseRows(b, loc, x), out2 = collapseRows(b, loc, out);
      gpu::LaunchOp launch = makeLaunch(
          b, loc, {tileBlocks, index(b, loc, mmaTiles.colBlocks), c1},
          {index(b, loc, kMmaThreads), c1, c1}, {mmaTiles.xs, mmaTiles.ws});
      buildMmaBody(b, loc, proj, x2, out2, launch.getBlockIds().x,
                   launch.getBlockIds().y, launch.getThreadIds().x,
                   launch.getWorkgroupAttributions()[0],
                   launch.getWorkgroupAttributions()[1]);
      b.eraseOp(op);
      return;
    }
    Value ct = index(b, loc, tile);
    gpu::LaunchOp launch =
        makeLaunch(b, loc, {tileBlocks, index(b, loc, tiles.colBlocks), c1},
                   {ct, ct, c1}, {tiles.xs, tiles.ws});
    buildTiledBody(b, loc, proj, tile, threadTile, launch.getBlockIds().x,
                   launch.getBlockIds().y, launch.getThreadIds().x,
                   launch.getThreadIds().y, launch.getWorkgroupAttributions()[0],
                   launch.getWorkgroupAttributions()[1]);
    b.eraseOp(op);
  }
};

} // namespace
