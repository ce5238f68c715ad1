//===- TrainCompile.cpp - compile a config's training step ----------------===//

#include "lib/compiler/TrainCompile.h"

#include "lib/compiler/Builder.h"
#include "lib/compiler/LlvmError.h"
#include "passes/train/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <malloc.h>

namespace tlm::runtime {

namespace {
constexpr const char *kLossFunction = "loss";
} // namespace

llvm::Error addTrainStep(mlir::ModuleOp module, const model::Config &config,
                         const OptimizerOptions *optimizer,
                         TrainingShape shape) {
  model::addLossFunction(module, config, kLossFunction, shape.batch,
                         shape.seq);
  mlir::PassManager pm(module.getContext());
  mlir::tlm::TlmBuildTrainStepOptions options;
  options.lossFunction = kLossFunction;
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
  // Only the step is an entry: the loss alone would be compiled for
  // nothing.
  module.lookupSymbol<mlir::func::FuncOp>(kLossFunction).erase();
  return llvm::Error::success();
}

Expected<std::unique_ptr<Program>>
compileTrainingProgram(const model::Config &config, const JitOptions &jit,
                       const OptimizerOptions *optimizer,
                       TrainingShape shape) {
  Expected<std::unique_ptr<Program>> program = makeError("not compiled");
  {
    mlir::DialectRegistry registry;
    registerAll(registry);
    mlir::MLIRContext context(registry);
    context.loadAllAvailableDialects();
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::ModuleOp::create(mlir::UnknownLoc::get(&context));
    if (llvm::Error err = addTrainStep(*module, config, optimizer, shape))
      return fromLlvm(std::move(err));
    JitOptions options = jit;
    options.weightBytes = model::weightBytes(config);
    // The step's work is in the entry itself, not in functions it calls.
    options.optimizeEntries = true;
    // That one function holds every loop of the step; LLVM compiles a
    // function on one thread, so smaller loops leave it too and the parts
    // compile side by side (TinyStories shape, 2 cores: 6.5 s at the
    // default 1500, 4.9 s at 400, 4.2 s at 150, no faster below; the
    // step's speed unchanged).
    options.outlineLoopSize = 150;
    auto compiled = Jit::compile(std::move(module), options);
    if (compiled)
      program = std::unique_ptr<Program>(std::move(*compiled));
    else
      program = fromLlvm(compiled.takeError());
  }
  // As Session::compileProgram: the compiler's heap back to the OS.
  malloc_trim(0);
  return program;
}

} // namespace tlm::runtime
