//===- Pipelines.cpp - the named tlm pipelines ----------------------------===//
//
// One place builds each pipeline; tlm-opt registers them by name and tlm-run
// calls the same builders, so the two can never drift apart.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void tlm::buildLinalgPipeline(OpPassManager &pm) {
  pm.addPass(createTlmLowerToLinalg());
  // Residual adds are arith.addf on tensors.
  pm.addNestedPass<func::FuncOp>(createConvertElementwiseToLinalgPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void tlm::buildCpuPipeline(OpPassManager &pm,
                           const CpuPipelineOptions &options) {
  // 1. tlm → linalg on tensors, entry points on caller-owned memrefs.
  buildLinalgPipeline(pm);
  TlmMemrefEntryOptions entryOptions;
  entryOptions.emitCInterface = options.cInterface;
  pm.addPass(createTlmMemrefEntry(entryOptions));
  pm.addPass(createCanonicalizerPass());

  // 2. Bufferize; temporaries are freed by the deallocation pipeline.
  bufferization::OneShotBufferizePassOptions bufOpts;
  bufOpts.bufferizeFunctionBoundaries = true;
  bufOpts.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufOpts));
  bufferization::BufferDeallocationPipelineOptions deallocOpts;
  bufferization::buildBufferDeallocationPipeline(pm, deallocOpts);
  // Private functions (the shared block) return fresh buffers; the
  // ownership-based deallocation clones them, and clones become alloc+copy.
  pm.addPass(createConvertBufferizationToMemRefPass());

  // 3. Loops (the parallel dims of each op as an OpenMP worksharing loop
  //    when `parallel`), then LLVM.
  if (options.parallel) {
    pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
    pm.addPass(createConvertSCFToOpenMPPass());
  } else {
    pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  }
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // Before scf-to-cf: OpenMP regions hold memref.alloca_scope ops, which
  // must still have a single block when memrefs are lowered.
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createSCFToControlFlowPass());
  if (options.parallel)
    pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

void tlm::registerTlmPipelines() {
  PassPipelineRegistration<>(
      "tlm-linalg-pipeline",
      "Lower tlm ops to linalg/tensor/arith/math on tensors",
      [](OpPassManager &pm) { buildLinalgPipeline(pm); });
  PassPipelineRegistration<CpuPipelineOptions>(
      "tlm-cpu-pipeline",
      "Lower tlm ops to the LLVM dialect for the CPU JIT (memref entry ABI)",
      [](OpPassManager &pm, const CpuPipelineOptions &options) {
        buildCpuPipeline(pm, options);
      });
}
