//===- Recompute.h - values the backward computes again --------*- C++ -*-===//
//
// The training step's backward reads values the forward computed. Cheap
// elementwise ones (RMSNorm's output, the FFN's gate product, RoPE's
// rotated Q and K) are computed again where the backward reads them, rather
// than kept alive from the forward: the op that recomputes one carries
// kRecomputeAttr, which makes it differ from the forward's own op, so CSE
// leaves the two apart (docs/training.md#what-the-backward-keeps-and-what-
// it-recomputes).
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_COMMON_RECOMPUTE_H
#define TLM_PASSES_COMMON_RECOMPUTE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"

namespace mlir::tlm {

inline constexpr llvm::StringLiteral kRecomputeAttr = "tlm.recompute";

/// Marks the op defining `v` as the backward's recomputation; `v` itself.
inline Value recomputed(Value v) {
  Operation *op = v.getDefiningOp();
  op->setAttr(kRecomputeAttr, UnitAttr::get(op->getContext()));
  return v;
}

} // namespace mlir::tlm

#endif // TLM_PASSES_COMMON_RECOMPUTE_H
