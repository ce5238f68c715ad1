//===- TrainCompile.cpp - compile a config's training step ----------------===//

#include "lib/compiler/TrainCompile.h"

#include "lib/compiler/Builder.h"
#include "passes/train/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"

namespace tlm::runtime {


llvm::Error addTrainStep(mlir::ModuleOp module, const model::Config &config,
                         const OptimizerOptions *optimizer,
                         TrainingShape shape) {
  model::addLossFunction(module, config, kLossEntry, shape.batch, shape.seq);
  mlir::PassManager pm(module.getContext());
  mlir::tlm::TlmBuildTrainStepOptions options;
  options.lossFunction = kLossEntry;
  options.stepFunction = optimizer ? kTrainStepEntry : kGradStepEntry;
  if (optimizer) {
    options.optimizer = "adamw";
    options.beta1 = optimizer->beta1;
    options.beta2 = optimizer->beta2;
    options.eps = optimizer->eps;
    options.weightDecay = optimizer->weightDecay;
    options.maxNorm = optimizer->maxNorm;
    options.torchForm = optimizer->torchForm;
    options.decayVectors = optimizer->decayVectors;
  }
  pm.addPass(mlir::tlm::createTlmBuildTrainStep(options));
  if (mlir::failed(pm.run(module)))
    return llvm::createStringError("tlm-build-train-step failed");
  // Unless asked for, only the step is an entry: the loss alone would be
  // compiled for nothing.
  if (!shape.withLoss)
    module.lookupSymbol<mlir::func::FuncOp>(kLossEntry).erase();
  return llvm::Error::success();
}

Expected<std::unique_ptr<Program>>
compileTrainingProgram(const model::Config &config, const JitOptions &jit,
                       const OptimizerOptions *optimizer,
                       TrainingShape shape) {
  JitOptions options = jit;
  options.weightBytes = model::weightBytes(config);
  // The step's work is in the entry itself, not in functions it calls.
  options.optimizeEntries = true;
  // That one function holds every loop of the step; LLVM compiles a
  // function on one thread, so smaller loops leave it too and the parts
  // compile side by side (TinyStories shape, 2 cores: 6.5 s at the
  // default 1500, 4.9 s at 400, 4.2 s at 150, no faster below; the step's
  // speed unchanged).
  options.outlineLoopSize = 150;
  return compileInOwnContext(
      [&](mlir::ModuleOp module) {
        return addTrainStep(module, config, optimizer, shape);
      },
      [&](mlir::OwningOpRef<mlir::ModuleOp> module) {
        return Jit::compile(std::move(module), options);
      });
}

} // namespace tlm::runtime
