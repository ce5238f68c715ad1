//===- ResolveDims.cpp - tensor.dim in terms of the function's inputs -----===//
//
// One-shot bufferization decides whether an insert_slice writes back the
// subset its extract_slice read by proving offsets and sizes equal with
// ValueBoundsConstraintSet, which walks each operand's whole backward slice
// before it compares anything. A size read off an intermediate tensor
// (tensor.dim of a loop's result, of a collapse_shape of another loop's
// result, ...) reaches back through every loop of the block function, each
// loop adding a nested comparison of its own: on small.json these
// questions dominated the bufferization (see Passes.td).
// Rewritten as dims of the function's arguments, the same questions stop
// after a few values.
//
//===----------------------------------------------------------------------===//

#include "passes/common/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "tlm-resolve-dims"

namespace mlir::tlm {
#define GEN_PASS_DEF_TLMRESOLVEDIMS
#include "passes/common/Passes.h.inc"
} // namespace mlir::tlm

using namespace mlir;

namespace {
struct TlmResolveDims : public tlm::impl::TlmResolveDimsBase<TlmResolveDims> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *ctx) override {
    RewritePatternSet set(ctx);
    // dim(op result) as a function of the op's operands (linalg loop
    // ranges, collapse/expand_shape sources, tensor.empty sizes, ...).
    memref::populateResolveRankedShapedTypeResultDimsPatterns(set);
    memref::populateResolveShapedTypeResultDimsPatterns(set);
    // dim(loop result) and dim(iter_arg) as dim(init) for loops whose
    // tensors keep their shape (scf.for, scf.forall).
    scf::populateSCFForLoopCanonicalizationPatterns(set);
    tensor::DimOp::getCanonicalizationPatterns(set, ctx);
    patterns = FrozenRewritePatternSet(std::move(set));
    return success();
  }

  void runOnOperation() override {
    // Only the dims and what rewriting them creates: a greedy run over the
    // whole function would fold every other op too, which costs as much as
    // the bufferization this saves.
    SmallVector<Operation *> dims;
    getOperation().walk([&](tensor::DimOp op) { dims.push_back(op); });
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
    // Not converging leaves some dims as they were: still correct IR, only
    // dearer to analyse.
    (void)applyOpPatternsGreedily(dims, patterns, config);
  }

  FrozenRewritePatternSet patterns;
};
} // namespace
