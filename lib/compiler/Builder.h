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

/// The KV cache of one block in an incremental step: the past keys/values
/// `(T, batch, kv_dim)` going in, this step's `(S, batch, kv_dim)` coming out.
struct BlockCache {
  mlir::Value kPast, vPast;
  /// (batch) i64: each sequence's cached positions (tlm.cached_attention's
  /// `lengths`), or null when every sequence has all of kPast's rows.
  mlir::Value lengths;
  mlir::Value kNew, vNew; ///< set by emitBlock
};

/// Emits one TransformerBlock on `x (batch, seq, d_model)`; `weights` are in
/// blockWeightSpecs order. With `cache`, attention is tlm.cached_attention
/// over the past keys. Returns the block output.
mlir::Value emitBlock(mlir::OpBuilder &b, mlir::Location loc,
                      const Config &config, mlir::Value x,
                      mlir::ValueRange weights, BlockCache *cache = nullptr);

/// Adds `func.func @name(%x: tensor<?x?xd>, block weights...) ->
/// tensor<?x?xd>`.
void addBlockFunction(mlir::ModuleOp module, const Config &config,
                      llvm::StringRef name);

/// Adds `func.func @name(%ids: tensor<?x?xi64>, weights...) ->
/// tensor<?x?xvocab>`: the whole model, logits for every position.
void addForwardFunction(mlir::ModuleOp module, const Config &config,
                        llvm::StringRef name);

/// Adds `func.func @name(%ids: tensor<BxTxi64>, %targets: tensor<BxTxi64>,
/// weights...) -> tensor<f32>`: the mean cross-entropy of the model's
/// logits against `targets`, every layer inline (tlm-build-train-step
/// differentiates one function of one block). `batch` and `seq` may be
/// dynamic (kDynamic); a training run knows them, and static sizes let
/// the backward's weight gradients take the tiled matmul path.
void addLossFunction(mlir::ModuleOp module, const Config &config,
                     llvm::StringRef name, int64_t batch, int64_t seq);

/// Adds the incremental entry `@name(%ids: tensor<Bx?xi64>, %lengths:
/// tensor<Bxi64>, (k_past_i, v_past_i: tensor<?xBxkv>) per layer,
/// weights...) -> (logits, (k_new_i, v_new_i) per layer)`. `seq` is the
/// static step length or dynamic (kDynamic); the past length T is always
/// dynamic, sequence b has cached positions 0..lengths[b]-1 (at most T), and
/// its new tokens sit at positions lengths[b]..lengths[b]+S-1. With
/// `lastLogits` the logits are those of the last new position only,
/// (B, 1, vocab).
void addStepFunction(mlir::ModuleOp module, const Config &config,
                     llvm::StringRef name, int64_t seq, bool lastLogits);

/// The prefill (every position's logits) and decode (the last position's)
/// entries, both for any number of new tokens.
void addGenerationFunctions(mlir::ModuleOp module, const Config &config);

} // namespace tlm::model

#endif // TLM_MODEL_BUILDER_H
