//===- SerializeNestedParallel.cpp - inner scf.parallel as scf.for --------===//
//
// Only the outermost parallel loops become OpenMP parallel regions; nested
// ones would run serialized anyway, at the price of libomp's region entry
// on every iteration of the loop around them (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "passes/cpu/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "tlm-serialize-nested-parallel"

namespace mlir::tlm {
#define GEN_PASS_DEF_TLMSERIALIZENESTEDPARALLEL
#include "passes/cpu/Passes.h.inc"
} // namespace mlir::tlm

using namespace mlir;

namespace {
struct TlmSerializeNestedParallel
    : public tlm::impl::TlmSerializeNestedParallelBase<
          TlmSerializeNestedParallel> {
  using Base::Base;

  void runOnOperation() override {
    // Innermost first (post-order), so each rewrite sees its own ancestors
    // still as they were.
    SmallVector<scf::ParallelOp> nested;
    getOperation().walk([&](scf::ParallelOp op) {
      if (op->getParentOfType<scf::ParallelOp>())
        nested.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (scf::ParallelOp op : nested) {
      if (op.getNumReductions() != 0) {
        LLVM_DEBUG(llvm::dbgs()
                   << "left parallel (reductions): " << op << "\n");
        continue;
      }
      rewriter.setInsertionPoint(op);
      if (failed(scf::parallelForToNestedFors(rewriter, op)))
        return signalPassFailure();
    }
  }
};
} // namespace
