//===- TrainCompile.h - compile a config's training step --------*- C++ -*-===//
//
// The compiler's half of training (lib/runtime/Training.h is the runtime's):
// the model's loss function (Builder.h's addLossFunction), differentiated
// by tlm-build-train-step into `train_step`, compiled by the JIT.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_COMPILER_TRAINCOMPILE_H
#define TLM_COMPILER_TRAINCOMPILE_H

#include "lib/compiler/Jit.h"
#include "lib/model/Config.h"
#include "lib/runtime/Training.h"

#include "mlir/IR/BuiltinOps.h"

#include <memory>

namespace tlm::runtime {

/// The sizes a training program is compiled for: `batch` rows of `seq`
/// inputs each (either may be Program::kDynamic).
struct TrainingShape {
  int64_t batch = Program::kDynamic, seq = Program::kDynamic;
  /// Keep the loss function as the entry `loss` too (kLossEntry): the
  /// validation loss without a backward.
  bool withLoss = false;
  /// With an optimizer: `grad_step` and `apply_step` (kApplyStepEntry)
  /// instead of `train_step`, so that gradients can be summed between
  /// the two (gradient accumulation).
  bool separateUpdate = false;
};

/// Adds Training.h's `@grad_step` for `config` to `module`, or with
/// `optimizer` `@train_step`: the loss function then tlm-build-train-step,
/// the loss function dropped unless `shape.withLoss`.
llvm::Error addTrainStep(mlir::ModuleOp module, const model::Config &config,
                         const OptimizerOptions *optimizer,
                         TrainingShape shape);

/// The entry addTrainStep adds, compiled per `jit` into this process.
Expected<std::unique_ptr<Program>>
compileTrainingProgram(const model::Config &config, const JitOptions &jit,
                       const OptimizerOptions *optimizer, TrainingShape shape);

} // namespace tlm::runtime

#endif // TLM_COMPILER_TRAINCOMPILE_H
