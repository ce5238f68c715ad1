//===- GradientRules.h - each op's reverse-mode rule ------------*- C++ -*-===//
//
// Private to passes/train/: the rule tlm-build-train-step applies to one
// forward op.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_TRAIN_GRADIENTRULES_H
#define TLM_PASSES_TRAIN_GRADIENTRULES_H

#include "mlir/IR/Builders.h"

namespace mlir::tlm {

/// Emits, at `b`'s insertion point, the gradients of `op`'s operands given
/// the gradients of its results (`resultGrads`, one per result, null where
/// a result does not reach the loss). Returns one value per operand, null
/// where the operand has no gradient (integer ids, or an operand the
/// result does not depend on). Fails with a diagnostic on `op` when no rule
/// covers it.
FailureOr<SmallVector<Value>> buildOperandGradients(OpBuilder &b,
                                                    Operation *op,
                                                    ArrayRef<Value> resultGrads);

} // namespace mlir::tlm

#endif // TLM_PASSES_TRAIN_GRADIENTRULES_H
