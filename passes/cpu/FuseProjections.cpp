//===- FuseProjections.cpp - the tlm-fuse-projections pass ----------------===//
//
// Q, K and V (and SwiGLU's W1 and W3) are projections of one input. As
// separate ops each is its own loop nest: one more OpenMP fork/join, one
// more pass over x, one more copy of the GEMM kernel for LLVM to compile.
// Here they become one projection over the row-wise concatenation of their
// weights, the old results slices of the new one. tlm-tile-matmuls reads the
// concatenation's parts in place (the weights are never copied); any other
// consumer would materialize it, so the CPU pipeline runs this pass only
// together with tlm-tile-matmuls. The residual add after a projection goes
// the same way: the projection accumulates into the residual, one pass over
// three activations less.
//
//===----------------------------------------------------------------------===//

#include "passes/cpu/Passes.h"
#include "passes/common/Projection.h"

#include "mlir/IR/Dominance.h"

#define DEBUG_TYPE "tlm-fuse-projections"

namespace mlir::tlm {
#define GEN_PASS_DEF_TLMFUSEPROJECTIONS
#include "passes/cpu/Passes.h.inc"
} // namespace mlir::tlm

using namespace mlir;

namespace {

/// Why `op` cannot join a group led by `first` (empty when it can).
std::string mismatch(linalg::GenericOp first, linalg::GenericOp op,
                     DominanceInfo &dom) {
  if (op->getBlock() != first->getBlock())
    return "in another block";
  if (op.getIndexingMapsArray() != first.getIndexingMapsArray() ||
      op.getIteratorTypesArray() != first.getIteratorTypesArray())
    return "different loops";
  if (!OperationEquivalence::isRegionEquivalentTo(
          &op.getRegion(), &first.getRegion(),
          OperationEquivalence::IgnoreLocations))
    return "a different payload";
  // The fused op sits where `first` is: the weight must exist there.
  if (!dom.properlyDominates(op.getDpsInputs()[1], first))
    return "its weight is defined after the group's first projection";
  return "";
}

struct TlmFuseProjections
    : public tlm::impl::TlmFuseProjectionsBase<TlmFuseProjections> {
  using Base::Base;

  /// Replaces `group` (same x, same loops, each starting at zero) by one
  /// projection over the concatenated weights, at the first one's place.
  void fuse(ArrayRef<linalg::GenericOp> group) {
    linalg::GenericOp first = group.front();
    Location loc = first.getLoc();
    OpBuilder b(first);
    Value x = first.getDpsInputs()[0];
    SmallVector<Value> weights = llvm::map_to_vector(
        group, [](linalg::GenericOp op) { return op.getDpsInputs()[1]; });
    Value w = tensor::ConcatOp::create(b, loc, /*dim=*/0, weights);

    auto outType = cast<RankedTensorType>(first.getResult(0).getType());
    int64_t rank = outType.getRank();
    int64_t n = cast<RankedTensorType>(w.getType()).getDimSize(0);
    SmallVector<int64_t> shape(outType.getShape());
    shape.back() = n;
    // The row sizes are those of the first output (all equal: same x).
    SmallVector<OpFoldResult> rows;
    SmallVector<Value> dynRows;
    Value firstOut = first.getDpsInits()[0];
    for (int64_t i = 0; i + 1 < rank; ++i) {
      rows.push_back(tensor::getMixedSize(b, loc, firstOut, i));
      if (outType.isDynamicDim(i))
        dynRows.push_back(tensor::DimOp::create(b, loc, firstOut, i));
    }
    auto fusedType = RankedTensorType::get(shape, outType.getElementType());
    Value empty = tensor::EmptyOp::create(b, loc, fusedType, dynRows);
    Value zero = arith::ConstantOp::create(
        b, loc, b.getZeroAttr(outType.getElementType()));
    Value init = linalg::FillOp::create(b, loc, zero, empty).getResult(0);
    auto fused = linalg::GenericOp::create(
        b, loc, TypeRange{fusedType}, ValueRange{x, w}, ValueRange{init},
        first.getIndexingMapsArray(), first.getIteratorTypesArray());
    IRMapping none;
    first.getRegion().cloneInto(&fused.getRegion(), none);

    int64_t offset = 0;
    SmallVector<OpFoldResult> ones(rank, b.getIndexAttr(1));
    for (linalg::GenericOp op : group) {
      auto type = cast<RankedTensorType>(op.getResult(0).getType());
      SmallVector<OpFoldResult> offsets(rank - 1, b.getIndexAttr(0));
      offsets.push_back(b.getIndexAttr(offset));
      SmallVector<OpFoldResult> sizes(rows);
      sizes.push_back(b.getIndexAttr(type.getShape().back()));
      Value part = tensor::ExtractSliceOp::create(
          b, loc, type, fused.getResult(0), offsets, sizes, ones);
      op.getResult(0).replaceAllUsesWith(part);
      offset += type.getShape().back();
    }
    for (linalg::GenericOp op : group)
      op->erase();
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    DominanceInfo dom(func);
    // Projections by input, in program order.
    llvm::MapVector<Value, SmallVector<linalg::GenericOp>> byInput;
    func.walk([&](linalg::GenericOp op) {
      if (!fuseProjections || !op.hasPureTensorSemantics() ||
          failed(tlm::matchProjection(op)))
        return;
      if (!tlm::startsAtZero(op)) {
        LLVM_DEBUG(llvm::dbgs() << "not fused (accumulates into its output): "
                                << op << "\n");
        return;
      }
      byInput[op.getDpsInputs()[0]].push_back(op);
    });
    for (auto &[x, ops] : byInput) {
      SmallVector<linalg::GenericOp> group{ops.front()};
      for (linalg::GenericOp op : ArrayRef(ops).drop_front()) {
        std::string why = mismatch(ops.front(), op, dom);
        if (why.empty())
          group.push_back(op);
        else
          LLVM_DEBUG(llvm::dbgs()
                     << "not fused (" << why << "): " << op << "\n");
      }
      if (group.size() > 1)
        fuse(group);
    }
    if (fuseResidualAdds)
      func.walk([&](linalg::GenericOp add) { tlm::foldResidualAdd(add, dom); });
  }
};

} // namespace
