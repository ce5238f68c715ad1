//===- GpuMapping.cpp - device memory and loop mapping for the GPU path ---===//
//
// Two steps of the GPU pipeline between bufferization and
// `convert-parallel-loops-to-gpu` (after tlm-allow-inlining has let the
// per-layer function be inlined): every buffer of the host function moves
// to device memory (tlm-gpu-device-memory), and every outermost parallel
// loop gets a block/thread mapping (tlm-gpu-map-parallel-loops).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::tlm {
#define GEN_PASS_DEF_TLMALLOWINLINING
#define GEN_PASS_DEF_TLMGPUDEDUPKERNELS
#define GEN_PASS_DEF_TLMGPUDEVICEMEMORY
#define GEN_PASS_DEF_TLMGPUMAPPARALLELLOOPS
#include "passes/Passes.h.inc"
} // namespace mlir::tlm

using namespace mlir;

namespace {

struct TlmAllowInlining
    : public tlm::impl::TlmAllowInliningBase<TlmAllowInlining> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      func.setNoInline(false);
      func->removeAttr("passthrough");
    }
  }
};

struct TlmGpuDeviceMemory
    : public tlm::impl::TlmGpuDeviceMemoryBase<TlmGpuDeviceMemory> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<Operation *> ops;
    WalkResult result = func.walk([&](Operation *op) {
      if (isa<memref::AllocaOp, memref::GetGlobalOp>(op)) {
        op->emitOpError("would leave data in host memory on the GPU path");
        return WalkResult::interrupt();
      }
      if (isa<memref::AllocOp, memref::DeallocOp, memref::CopyOp>(op))
        ops.push_back(op);
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return signalPassFailure();

    IRRewriter rewriter(&getContext());
    for (Operation *op : ops) {
      rewriter.setInsertionPoint(op);
      Location loc = op->getLoc();
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        auto device = gpu::AllocOp::create(
            rewriter, loc, alloc.getType(), /*asyncToken=*/Type(),
            /*asyncDependencies=*/ValueRange(), alloc.getDynamicSizes(),
            alloc.getSymbolOperands(), /*hostShared=*/false);
        rewriter.replaceOp(alloc, device.getMemref());
      } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
        gpu::DeallocOp::create(rewriter, loc, /*asyncToken=*/Type(),
                               /*asyncDependencies=*/ValueRange(),
                               dealloc.getMemref());
        rewriter.eraseOp(dealloc);
      } else {
        auto copy = cast<memref::CopyOp>(op);
        rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(),
                                                    copy.getTarget());
      }
    }
  }
};

struct TlmGpuMapParallelLoops
    : public tlm::impl::TlmGpuMapParallelLoopsBase<TlmGpuMapParallelLoops> {
  using Base::Base;

  void runOnOperation() override {
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

struct TlmGpuDedupKernels
    : public tlm::impl::TlmGpuDedupKernelsBase<TlmGpuDedupKernels> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringMap<StringAttr> keptByContents;
    DenseMap<StringAttr, StringAttr> replacement;
    SmallVector<gpu::GPUModuleOp> duplicates;
    for (auto gpuModule : module.getOps<gpu::GPUModuleOp>()) {
      // The contents with names local to each op, so that identical
      // kernels print identically whatever surrounds them.
      std::string contents;
      llvm::raw_string_ostream os(contents);
      for (Operation &op : gpuModule.getBody()->getOperations())
        op.print(os, OpPrintingFlags().useLocalScope());
      for (NamedAttribute attr : gpuModule->getAttrs())
        if (attr.getName() != SymbolTable::getSymbolAttrName())
          os << attr.getName() << "=" << attr.getValue() << ";";
      auto [it, inserted] =
          keptByContents.try_emplace(contents, gpuModule.getSymNameAttr());
      if (inserted)
        continue;
      replacement[gpuModule.getSymNameAttr()] = it->second;
      duplicates.push_back(gpuModule);
    }
    if (duplicates.empty())
      return;
    module.walk([&](gpu::LaunchFuncOp launch) {
      SymbolRefAttr kernel = launch.getKernel();
      auto it = replacement.find(kernel.getRootReference());
      if (it != replacement.end())
        launch.setKernelAttr(
            SymbolRefAttr::get(it->second, kernel.getNestedReferences()));
    });
    for (gpu::GPUModuleOp gpuModule : duplicates)
      gpuModule.erase();
  }
};

} // namespace
