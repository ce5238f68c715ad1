//===- FuseAttention.cpp - tlm-fuse-attention -----------------------------===//
//
// The CPU's lowering of f32 tlm.cached_attention to the fused loop nests of
// FusedAttention.cpp. It runs before tlm-lower-to-linalg and starts from the
// same prologue (AttentionParts.h), so the target-neutral conversion keeps
// no target options; other element types are left to the conversion.
//
//===----------------------------------------------------------------------===//

#include "dialect/TlmDialect.h"
#include "passes/common/AttentionParts.h"
#include "passes/common/Builders.h"
#include "passes/common/OptionChecks.h"
#include "passes/cpu/Passes.h"
#include "passes/cpu/attention/FusedAttention.h"

#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "tlm-fuse-attention"

namespace mlir::tlm {
#define GEN_PASS_DEF_TLMFUSEATTENTION
#include "passes/cpu/Passes.h.inc"
} // namespace mlir::tlm

using namespace mlir;
using namespace mlir::tlm;

namespace {

struct TlmFuseAttention
    : public tlm::impl::TlmFuseAttentionBase<TlmFuseAttention> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(
            tlm::checkOptions(getOperation(), "tlm-fuse-attention",
                              {{"lanes", lanes, 1, true}, {"threads", threads, 1}})))
      return signalPassFailure();
    SmallVector<CachedAttentionOp> ops;
    getOperation()->walk([&](CachedAttentionOp op) {
      if (op.getQ().getType().getElementType().isF32())
        ops.push_back(op);
      else
        LLVM_DEBUG(llvm::dbgs()
                   << "not f32, left to the conversion: " << op << "\n");
    });
    IRRewriter rewriter(&getContext());
    for (CachedAttentionOp op : ops) {
      rewriter.setInsertionPoint(op);
      Location loc = op.getLoc();
      CachedAttentionParts p = splitCachedAttention(rewriter, op);
      // The new keys are read in the cache's layout, as the past ones.
      Value out = mergeHeads(rewriter, loc,
                             fusedCachedAttention(rewriter, loc, p.q, p.kPast,
                                                  p.vPast, p.kRows, p.vRows,
                                                  p.lengths, p.group, lanes,
                                                  threads));
      rewriter.replaceOp(
          op, {castTo(rewriter, loc, out, op.getResult().getType()),
               castTo(rewriter, loc, p.kNew, op.getKNew().getType()),
               castTo(rewriter, loc, p.vNew, op.getVNew().getType())});
    }
  }
};

} // namespace
