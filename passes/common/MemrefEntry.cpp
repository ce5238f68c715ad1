//===- MemrefEntry.cpp - the tlm-memref-entry pass ------------------------===//
//
// Gives public functions the ABI the JIT calls: memref arguments in,
// caller-owned memref outputs appended, nothing returned.
//
//===----------------------------------------------------------------------===//

#include "passes/common/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#define DEBUG_TYPE "tlm-memref-entry"

namespace mlir::tlm {
#define GEN_PASS_DEF_TLMMEMREFENTRY
#include "passes/common/Passes.h.inc"
} // namespace mlir::tlm

using namespace mlir;

namespace {

MemRefType memrefFor(RankedTensorType t) {
  return MemRefType::get(t.getShape(), t.getElementType());
}

/// Rewrites one function; fails (with a diagnostic) on non-tensor types so a
/// caller never gets an entry it cannot call.
LogicalResult rewriteEntry(func::FuncOp func, bool emitCInterface) {
  FunctionType type = func.getFunctionType();
  for (Type t : llvm::concat<const Type>(type.getInputs(), type.getResults()))
    if (!isa<RankedTensorType>(t))
      return func.emitError() << "entry point '" << func.getSymName()
                              << "' has a non-tensor argument or result " << t
                              << "; the JIT ABI takes ranked tensors only";

  Block &body = func.getBody().front();
  OpBuilder b(func.getContext());
  b.setInsertionPointToStart(&body);
  Location loc = func.getLoc();
  SmallVector<Type> newInputs;
  for (BlockArgument arg : body.getArguments()) {
    auto tt = cast<RankedTensorType>(arg.getType());
    MemRefType mt = memrefFor(tt);
    newInputs.push_back(mt);
    arg.setType(mt);
    auto toTensor = bufferization::ToTensorOp::create(
        b, loc, tt, arg, /*restrict=*/true, /*writable=*/false);
    arg.replaceAllUsesExcept(toTensor, toTensor);
  }
  SmallVector<BlockArgument> outs;
  for (Type r : type.getResults()) {
    MemRefType mt = memrefFor(cast<RankedTensorType>(r));
    newInputs.push_back(mt);
    outs.push_back(body.addArgument(mt, loc));
  }
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  b.setInsertionPoint(ret);
  for (auto [value, out] : llvm::zip(ret.getOperands(), outs)) {
    auto m =
        bufferization::MaterializeInDestinationOp::create(b, loc, value, out);
    m.setRestrict(true);
    m.setWritable(true);
  }
  ret->setOperands({});
  func.setFunctionType(FunctionType::get(func.getContext(), newInputs, {}));
  if (emitCInterface)
    func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                  UnitAttr::get(func.getContext()));
  // Both wrappers (C interface, the JIT's packed one) call the entry with
  // every descriptor field as an argument: over 1000 for small.json, most
  // on the stack, and instruction selection of that one call took a large
  // share of the compile. Inlined into its wrapper, the call is gone.
  func->setAttr(
      "passthrough",
      ArrayAttr::get(func.getContext(),
                     {StringAttr::get(func.getContext(), "alwaysinline")}));
  func->setAttr(
      "llvm.linkage",
      LLVM::LinkageAttr::get(func.getContext(), LLVM::Linkage::LinkonceODR));
  return success();
}

struct TlmMemrefEntry : public tlm::impl::TlmMemrefEntryBase<TlmMemrefEntry> {
  using Base::Base;
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (func.isPublic() && !func.isExternal() &&
          failed(rewriteEntry(func, emitCInterface)))
        return signalPassFailure();
  }
};
} // namespace
