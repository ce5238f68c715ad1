//===- DeviceMemory.cpp - tlm-gpu-device-memory ---------------------------===//
//
// Every buffer of the bufferized host function moves to device memory.
//
//===----------------------------------------------------------------------===//

#include "passes/gpu/Passes.h"

#include "mlir/IR/PatternMatch.h"

#define DEBUG_TYPE "tlm-gpu-device-memory"

namespace mlir::tlm {
#define GEN_PASS_DEF_TLMGPUDEVICEMEMORY
#include "passes/gpu/Passes.h.inc"
} // namespace mlir::tlm

using namespace mlir;
using namespace mlir::tlm;

namespace {

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

} // namespace
