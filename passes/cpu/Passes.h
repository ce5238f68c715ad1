//===- Passes.h - CPU codegen passes ----------------------------*- C++ -*-===//
//
// The declarations and registration of passes/cpu/Passes.td. The dialects the
// passes depend on are included here, as the generated definitions need them.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_CPU_PASSES_H
#define TLM_PASSES_CPU_PASSES_H

#include "dialect/TlmDialect.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tlm {

#define GEN_PASS_DECL
#include "passes/cpu/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/cpu/Passes.h.inc"

} // namespace mlir::tlm

#endif // TLM_PASSES_CPU_PASSES_H
