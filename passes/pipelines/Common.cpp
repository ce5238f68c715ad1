//===- Common.cpp - the stages every pipeline shares ----------------------===//
//
// tlm → linalg and tensors → buffers, which the CPU and GPU pipelines both
// run (between them, their own codegen).
//
//===----------------------------------------------------------------------===//

#include "passes/pipelines/Pipelines.h"

#include "passes/common/Passes.h"
#include "passes/conversion/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

/// The CPU pipeline's canonicalizer: one sweep of the greedy driver (ops it
/// changes requeue their neighbours within the sweep; a second sweep only
/// confirmed the fixpoint) and no region simplification (block merging and
/// dead-argument removal on the CFG, which LLVM's SimplifyCFG redoes). Each
/// sweep visits every loop and, to ask whether it is dead, walks its body:
/// on small.json both together saved a visible share of the whole
/// pipeline's instructions (counted with callgrind), with the same LLVM IR
/// out up to the order of constants.
std::unique_ptr<Pass> tlm::createQuickCanonicalizer() {
  GreedyRewriteConfig config;
  config.setMaxIterations(1);
  config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
  return createCanonicalizerPass(config);
}

void tlm::buildLinalgPipeline(OpPassManager &pm, bool attentionByHeads,
                              int64_t attentionBlock) {
  TlmLowerToLinalgOptions options;
  options.attentionByHeads = attentionByHeads;
  options.attentionBlock = attentionBlock;
  pm.addPass(createTlmLowerToLinalg(options));
  // Residual adds are arith.addf on tensors.
  pm.addNestedPass<func::FuncOp>(createConvertElementwiseToLinalgPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void tlm::buildBufferizationPipeline(OpPassManager &pm,
                                     bool eliminateEmptyTensors,
                                     bool quickCanonicalize) {
  // Cheap subset proofs for the analyses below (see tlm-resolve-dims).
  pm.addNestedPass<func::FuncOp>(createTlmResolveDims());
  // Results are computed in the caller's buffers: without this, an entry
  // that computes its logits itself writes them to a temporary and copies
  // them out (65 MB at 512 tokens of small.json, when the entry held the
  // whole model). It costs a one-shot analysis of the module.
  if (eliminateEmptyTensors)
    pm.addPass(bufferization::createEmptyTensorEliminationPass());
  bufferization::OneShotBufferizePassOptions bufOpts;
  bufOpts.bufferizeFunctionBoundaries = true;
  bufOpts.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufOpts));
  if (!quickCanonicalize) {
    bufferization::BufferDeallocationPipelineOptions deallocOpts;
    bufferization::buildBufferDeallocationPipeline(pm, deallocOpts);
  } else {
    // Upstream's buffer-deallocation-pipeline, step for step, with the
    // one-sweep canonicalizer: its own three canonicalizers were a visible
    // part of small.json's pass time.
    memref::ExpandReallocPassOptions realloc;
    realloc.emitDeallocs = false; // the ownership-based pass adds them
    pm.addNestedPass<func::FuncOp>(memref::createExpandReallocPass(realloc));
    pm.addNestedPass<func::FuncOp>(createQuickCanonicalizer());
    pm.addNestedPass<func::FuncOp>(
        bufferization::createOwnershipBasedBufferDeallocationPass());
    pm.addNestedPass<func::FuncOp>(createQuickCanonicalizer());
    pm.addNestedPass<func::FuncOp>(
        bufferization::createBufferDeallocationSimplificationPass());
    pm.addPass(bufferization::createLowerDeallocationsPass());
    pm.addNestedPass<func::FuncOp>(createCSEPass());
    pm.addNestedPass<func::FuncOp>(createQuickCanonicalizer());
  }
  pm.addPass(createConvertBufferizationToMemRefPass());
}
