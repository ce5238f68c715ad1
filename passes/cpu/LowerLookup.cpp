//===- LowerLookup.cpp - tlm.lookup as vpermps ----------------------------===//
//
// tlm.lookup stands for AVX-512's vpermps until buffers are allocated and
// freed: the deallocation analysis needs every op's memory effects, and an
// llvm.call_intrinsic has none it can read (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "dialect/TlmDialect.h"
#include "passes/cpu/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::tlm {
#define GEN_PASS_DEF_TLMLOWERLOOKUP
#include "passes/cpu/Passes.h.inc"
} // namespace mlir::tlm

using namespace mlir;

namespace {
struct TlmLowerLookup : public tlm::impl::TlmLowerLookupBase<TlmLowerLookup> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<tlm::LookupOp> lookups;
    getOperation()->walk([&](tlm::LookupOp op) { lookups.push_back(op); });
    SmallVector<tlm::DotU8S8Op> dots;
    getOperation()->walk([&](tlm::DotU8S8Op op) { dots.push_back(op); });
    IRRewriter rewriter(&getContext());
    StringAttr vpdpbusd =
        rewriter.getStringAttr("llvm.x86.avx512.vpdpbusd.512");
    for (tlm::DotU8S8Op op : dots) {
      rewriter.setInsertionPoint(op);
      rewriter.replaceOp(op, LLVM::CallIntrinsicOp::create(
                                 rewriter, op.getLoc(), op.getType(), vpdpbusd,
                                 ValueRange{op.getAcc(), op.getA(), op.getB()}));
    }
    StringAttr vpermps =
        rewriter.getStringAttr("llvm.x86.avx512.permvar.sf.512");
    for (tlm::LookupOp op : lookups) {
      rewriter.setInsertionPoint(op);
      rewriter.replaceOp(op, LLVM::CallIntrinsicOp::create(
                                 rewriter, op.getLoc(), op.getType(), vpermps,
                                 ValueRange{op.getTable(), op.getIndices()}));
    }
  }
};
} // namespace
