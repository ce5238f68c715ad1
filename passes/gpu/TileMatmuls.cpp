//===- TileMatmuls.cpp - tlm-gpu-tile-matmuls -----------------------------===//
//
// Projections as GPU kernels: register-blocked tiles staged in workgroup
// memory (TiledKernel.cpp), and for decode's few rows a warp-per-column GEMV
// (GemvKernel.cpp), chosen by the host at each call.
//
//===----------------------------------------------------------------------===//

#include "passes/common/Builders.h"
#include "passes/common/OptionChecks.h"
#include "passes/common/Projection.h"
#include "passes/gpu/GemvKernel.h"
#include "passes/gpu/KernelBuilders.h"
#include "passes/gpu/TiledKernel.h"
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
                                  {"thread-tile", threadTile, 1},
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
    Value x = op.getDpsInputOperand(0)->get();
    Value w = op.getDpsInputOperand(1)->get();
    Value out = op.getDpsInitOperand(0)->get();
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t n = ranges[p.n], k = ranges[p.k];

    b.setInsertionPoint(op);
    // x is (rows..., k): its leading dims are the rows, flattened to m.
    SmallVector<Value> rowSizes;
    for (unsigned i = 0; i < p.rows.size(); ++i)
      rowSizes.push_back(b.createOrFold<memref::DimOp>(loc, x, i));
    Value m = product(b, loc, rowSizes);
    GpuProjection proj{x, w, out, rowSizes, m, n, k};
    if (gemvRows > 0 && gemvApplies(proj)) {
      // Decode (m <= gemv-rows) takes the GEMV kernel, anything longer
      // the tiles: the host picks at each call, as m is dynamic.
      Value few = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, m,
                                        index(b, loc, gemvRows));
      auto choice = scf::IfOp::create(b, loc, few, /*withElseRegion=*/true);
      b.setInsertionPointToStart(choice.thenBlock());
      buildGemvLaunch(b, loc, proj, gemvRows, gemvWarps, gemvMinWarps);
      b.setInsertionPointToStart(choice.elseBlock());
    }
    buildTiledLaunch(b, loc, proj, tile, threadTile);
    b.eraseOp(op);
  }
};

} // namespace
