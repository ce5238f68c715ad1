//===- TrainCompile.cpp - compile a config's training step ----------------===//

#include "lib/compiler/TrainCompile.h"

#include "lib/compiler/Builder.h"
#include "lib/compiler/LlvmError.h"
#include "lib/runtime/Training.h"
#include "passes/train/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <malloc.h>

namespace tlm::runtime {

namespace {
constexpr const char *kLossFunction = "loss";
} // namespace

llvm::Error addTrainStep(mlir::ModuleOp module, const model::Config &config) {
  model::addLossFunction(module, config, kLossFunction);
  mlir::PassManager pm(module.getContext());
  mlir::tlm::TlmBuildTrainStepOptions options;
  options.lossFunction = kLossFunction;
  options.stepFunction = kTrainStepEntry;
  pm.addPass(mlir::tlm::createTlmBuildTrainStep(options));
  if (mlir::failed(pm.run(module)))
    return llvm::createStringError("tlm-build-train-step failed");
  // Only the step is an entry: the loss alone would be compiled for
  // nothing.
  module.lookupSymbol<mlir::func::FuncOp>(kLossFunction).erase();
  return llvm::Error::success();
}

Expected<std::unique_ptr<Program>>
compileTrainingProgram(const model::Config &config, const JitOptions &jit) {
  Expected<std::unique_ptr<Program>> program = makeError("not compiled");
  {
    mlir::DialectRegistry registry;
    registerAll(registry);
    mlir::MLIRContext context(registry);
    context.loadAllAvailableDialects();
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::ModuleOp::create(mlir::UnknownLoc::get(&context));
    if (llvm::Error err = addTrainStep(*module, config))
      return fromLlvm(std::move(err));
    JitOptions options = jit;
    options.weightBytes = model::weightBytes(config);
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
