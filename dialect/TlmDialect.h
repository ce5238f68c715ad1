//===- TlmDialect.h - the tlm dialect ---------------------------*- C++ -*-===//
#ifndef TLM_DIALECT_TLMDIALECT_H
#define TLM_DIALECT_TLMDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialect/TlmOpsDialect.h.inc"

namespace mlir::tlm {
/// Fails, naming the value, when an operand or result of `op` has a static
/// dimension of size zero (TlmDialect.td, Tlm_NonEmptyShapes).
LogicalResult verifyNonEmptyShapes(Operation *op);

template <typename ConcreteType>
class NonEmptyShapes
    : public OpTrait::TraitBase<ConcreteType, NonEmptyShapes> {
public:
  static LogicalResult verifyTrait(Operation *op) {
    return verifyNonEmptyShapes(op);
  }
};
} // namespace mlir::tlm

#define GET_OP_CLASSES
#include "dialect/TlmOps.h.inc"

#endif // TLM_DIALECT_TLMDIALECT_H
