//===- MapParallelLoops.cpp - tlm-gpu-map-parallel-loops ------------------===//
//
// Every outermost parallel loop gets a block/thread mapping for
// convert-parallel-loops-to-gpu.
//
//===----------------------------------------------------------------------===//

#include "passes/common/OptionChecks.h"
#include "passes/gpu/Passes.h"

#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"

#define DEBUG_TYPE "tlm-gpu-map-parallel-loops"

namespace mlir::tlm {
#define GEN_PASS_DEF_TLMGPUMAPPARALLELLOOPS
#include "passes/gpu/Passes.h.inc"
} // namespace mlir::tlm

using namespace mlir;
using namespace mlir::tlm;

namespace {

struct TlmGpuMapParallelLoops
    : public tlm::impl::TlmGpuMapParallelLoopsBase<TlmGpuMapParallelLoops> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(tlm::checkOptions(getOperation(), "tlm-gpu-map-parallel-loops",
                                 {{"block-size", blockSize, 1}})))
      return signalPassFailure();
    func::FuncOp func = getOperation();
    SmallVector<scf::ParallelOp> outermost;
    func.walk([&](scf::ParallelOp op) {
      if (!op->getParentOfType<scf::ParallelOp>())
        outermost.push_back(op);
    });
    // Anything that touches memory must be inside a loop that becomes a
    // kernel: the host only sees device pointers.
    WalkResult result = func.walk([&](Operation *op) {
      if (!isa<memref::LoadOp, memref::StoreOp, linalg::LinalgOp>(op) ||
          op->getParentOfType<scf::ParallelOp>() ||
          op->getParentOfType<gpu::LaunchOp>())
        return WalkResult::advance();
      op->emitOpError("accesses memory outside every parallel loop, so it "
                      "would run on the host against device memory");
      return WalkResult::interrupt();
    });
    if (result.wasInterrupted())
      return signalPassFailure();

    IRRewriter rewriter(&getContext());
    for (scf::ParallelOp op : outermost)
      if (failed(mapLoop(rewriter, op)))
        return signalPassFailure();
  }

  LogicalResult mapLoop(IRRewriter &rewriter, scf::ParallelOp op) {
    // Collapse every dimension but the last into one.
    unsigned rank = op.getNumLoops();
    std::optional<int64_t> lastExtent = staticExtent(op, rank - 1);
    if (rank > 2) {
      std::vector<unsigned> outer;
      for (unsigned d = 0; d + 1 < rank; ++d)
        outer.push_back(d);
      std::vector<unsigned> last = {rank - 1};
      // collapseParallelLoops builds the new loop (after the bound
      // computations) where `op` was, and erases `op`.
      Block *block = op->getBlock();
      Operation *before = op->getPrevNode();
      collapseParallelLoops(rewriter, op, {outer, last});
      Operation *next = before ? before->getNextNode() : &block->front();
      while (next && !isa<scf::ParallelOp>(next))
        next = next->getNextNode();
      assert(next && "collapseParallelLoops made no loop");
      op = cast<scf::ParallelOp>(next);
      rank = 2;
    }

    // Tile the last dimension by the block size (or its static extent).
    int64_t tile = blockSize;
    if (lastExtent)
      tile = std::min(tile, std::max<int64_t>(*lastExtent, 1));
    SmallVector<int64_t> tileSizes(rank, 1);
    tileSizes.back() = tile;
    auto [outerLoop, innerLoop] =
        scf::tileParallelLoop(op, tileSizes, /*noMinMaxBounds=*/true);

    MLIRContext *ctx = op.getContext();
    auto dim = [&](gpu::Processor p) {
      AffineMap id = AffineMap::getMultiDimIdentityMap(1, ctx);
      return gpu::ParallelLoopDimMappingAttr::get(ctx, p, id, id);
    };
    SmallVector<gpu::ParallelLoopDimMappingAttr> blocks, threads;
    if (rank == 2) {
      blocks = {dim(gpu::Processor::BlockX), dim(gpu::Processor::BlockY)};
      threads = {dim(gpu::Processor::Sequential), dim(gpu::Processor::ThreadX)};
    } else {
      blocks = {dim(gpu::Processor::BlockX)};
      threads = {dim(gpu::Processor::ThreadX)};
    }
    if (failed(gpu::setMappingAttr(outerLoop, blocks)) ||
        failed(gpu::setMappingAttr(innerLoop, threads)))
      return outerLoop.emitOpError("could not be mapped to blocks/threads");
    return success();
  }

  static std::optional<int64_t> staticExtent(scf::ParallelOp op, unsigned d) {
    std::optional<int64_t> lb = getConstantIntValue(op.getLowerBound()[d]);
    std::optional<int64_t> ub = getConstantIntValue(op.getUpperBound()[d]);
    std::optional<int64_t> step = getConstantIntValue(op.getStep()[d]);
    if (!lb || !ub || !step || *step <= 0)
      return std::nullopt;
    return (*ub - *lb + *step - 1) / *step;
  }
};

} // namespace
