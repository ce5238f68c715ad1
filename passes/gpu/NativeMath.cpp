//===- GpuNativeMath.cpp - the tlm-gpu-native-math pass -------------------===//
//
// Math ops that PTX has a correctly rounded instruction for get that
// instruction, so they neither call libdevice nor pick up its fast
// approximations (libdevice's sqrtf is sqrt.approx by default).
//
//===----------------------------------------------------------------------===//

#include "passes/gpu/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "tlm-gpu-native-math"

namespace mlir::tlm {
#define GEN_PASS_DEF_TLMGPUNATIVEMATH
#include "passes/gpu/Passes.h.inc"
} // namespace mlir::tlm

using namespace mlir;

namespace {

/// Replaces a scalar float `MathOp` by the intrinsic `IntrOp` with the same
/// operands.
template <typename MathOp, typename IntrOp>
struct ToIntrinsic : OpRewritePattern<MathOp> {
  using OpRewritePattern<MathOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(MathOp op,
                                PatternRewriter &rewriter) const override {
    if (!isa<FloatType>(op.getType()))
      return rewriter.notifyMatchFailure(op, "not a scalar float");
    rewriter.replaceOpWithNewOp<IntrOp>(op, op->getOperands());
    return success();
  }
};

/// `convert-gpu-to-nvvm` sends even `llvm.intr.sqrt` to libdevice, so the
/// square root names NVVM's round-to-nearest intrinsic directly.
struct SqrtToNvvm : OpRewritePattern<math::SqrtOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::SqrtOp op,
                                PatternRewriter &rewriter) const override {
    Type t = op.getType();
    if (!t.isF32() && !t.isF64())
      return rewriter.notifyMatchFailure(op, "not a scalar f32 or f64");
    auto name = rewriter.getStringAttr(t.isF32() ? "llvm.nvvm.sqrt.rn.f"
                                                 : "llvm.nvvm.sqrt.rn.d");
    rewriter.replaceOpWithNewOp<LLVM::CallIntrinsicOp>(op, t, name,
                                                       op.getOperand());
    return success();
  }
};

struct TlmGpuNativeMath
    : public tlm::impl::TlmGpuNativeMathBase<TlmGpuNativeMath> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<SqrtToNvvm, ToIntrinsic<math::FmaOp, LLVM::FMAOp>,
                 ToIntrinsic<math::AbsFOp, LLVM::FAbsOp>>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
