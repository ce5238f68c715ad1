//===- TrainCompile.cpp - compile a config's training step ----------------===//

#include "lib/compiler/TrainCompile.h"

#include "lib/compiler/Builder.h"
#include "passes/train/Optimizer.h"
#include "passes/train/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"

namespace tlm::runtime {


namespace {

/// @apply_step(params..., grads..., m..., v..., lr, step)
///   -> (norm, params'..., m'..., v'...): clipping and AdamW alone.
void addApplyStep(mlir::ModuleOp module, const model::Config &config,
                  const OptimizerOptions &optimizer) {
  mlir::OpBuilder b(module.getContext());
  b.setInsertionPointToEnd(module.getBody());
  mlir::Location loc = b.getUnknownLoc();
  mlir::Type f32 = b.getF32Type();
  llvm::SmallVector<mlir::Type> tensors;
  for (const model::WeightSpec &s : model::weightSpecs(config))
    tensors.push_back(mlir::RankedTensorType::get(s.shape, f32));
  size_t n = tensors.size();
  auto scalar = mlir::RankedTensorType::get({}, f32);
  llvm::SmallVector<mlir::Type> args;
  for (int part = 0; part < 4; ++part) // params, grads, m, v
    llvm::append_range(args, tensors);
  args.push_back(scalar);
  args.push_back(scalar);
  llvm::SmallVector<mlir::Type> results{scalar};
  for (int part = 0; part < 3; ++part) // params', m', v'
    llvm::append_range(results, tensors);
  auto fn = mlir::func::FuncOp::create(b, loc, kApplyStepEntry,
                                       b.getFunctionType(args, results));
  mlir::Block *body = fn.addEntryBlock();
  b.setInsertionPointToStart(body);
  auto arg = [&](size_t part) {
    return mlir::ValueRange(body->getArguments().slice(part * n, n));
  };
  mlir::tlm::AdamWSettings settings{optimizer.beta1,       optimizer.beta2,
                                    optimizer.eps,         optimizer.weightDecay,
                                    optimizer.maxNorm,     optimizer.torchForm,
                                    optimizer.decayVectors};
  mlir::tlm::AdamWUpdate update = mlir::tlm::buildAdamW(
      b, loc, arg(0), arg(1), arg(2), arg(3), body->getArgument(4 * n),
      body->getArgument(4 * n + 1), settings);
  llvm::SmallVector<mlir::Value> out{update.norm};
  llvm::append_range(out, update.params);
  llvm::append_range(out, update.m);
  llvm::append_range(out, update.v);
  mlir::func::ReturnOp::create(b, loc, out);
}

} // namespace

llvm::Error addTrainStep(mlir::ModuleOp module, const model::Config &config,
                         const OptimizerOptions *optimizer,
                         TrainingShape shape) {
  if (optimizer && shape.separateUpdate) {
    addApplyStep(module, config, *optimizer);
    optimizer = nullptr; // the step then computes the gradients alone
  }
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
