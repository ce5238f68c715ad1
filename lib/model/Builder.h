//===- Builder.h - build tlm IR for a TransformerLM -------------*- C++ -*-===//
//
// Turns a Config into functions of tlm ops. Weights are entry arguments (in
// weightSpecs order), so the compiled code depends on the config only; the
// batch and sequence dims are dynamic, so one compile serves every prompt.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_MODEL_BUILDER_H
#define TLM_MODEL_BUILDER_H

#include "lib/model/Config.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace tlm::model {

/// Emits one TransformerBlock on `x (batch, seq, d_model)`; `weights` are in
/// blockWeightSpecs order. Returns the block output.
mlir::Value emitBlock(mlir::OpBuilder &b, mlir::Location loc,
                      const Config &config, mlir::Value x,
                      mlir::ValueRange weights);

/// Adds `func.func @name(%x: tensor<?x?xd>, block weights...) -> tensor<?x?xd>`.
void addBlockFunction(mlir::ModuleOp module, const Config &config,
                      llvm::StringRef name);

/// Adds `func.func @name(%ids: tensor<?x?xi64>, weights...) ->
/// tensor<?x?xvocab>`: the whole model, logits for every position.
void addForwardFunction(mlir::ModuleOp module, const Config &config,
                        llvm::StringRef name);

} // namespace tlm::model

#endif // TLM_MODEL_BUILDER_H
