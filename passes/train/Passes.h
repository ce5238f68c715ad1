//===- Passes.h - training passes -------------------------------*- C++ -*-===//
//
// The declarations and registration of passes/train/Passes.td.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_TRAIN_PASSES_H
#define TLM_PASSES_TRAIN_PASSES_H

#include "dialect/TlmDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tlm {

#define GEN_PASS_DECL
#include "passes/train/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/train/Passes.h.inc"

} // namespace mlir::tlm

#endif // TLM_PASSES_TRAIN_PASSES_H
