//===- Passes.h - tlm → linalg ----------------------------------*- C++ -*-===//
//
// The declarations and registration of passes/conversion/Passes.td. The
// dialects the passes depend on are included here, as the generated definitions
// need them.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_CONVERSION_PASSES_H
#define TLM_PASSES_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tlm {

#define GEN_PASS_DECL
#include "passes/conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/conversion/Passes.h.inc"

} // namespace mlir::tlm

#endif // TLM_PASSES_CONVERSION_PASSES_H
