//===- Pipelines.cpp - the named tlm pipelines ----------------------------===//
//
// One place builds each pipeline; tlm-opt registers them by name and tlm-run
// calls the same builders, so the two can never drift apart.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Dialect/Vector/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include <algorithm>

using namespace mlir;

namespace {
/// The CPU pipeline's canonicalizer: one sweep of the greedy driver (ops it
/// changes requeue their neighbours within the sweep; a second sweep only
/// confirmed the fixpoint) and no region simplification (block merging and
/// dead-argument removal on the CFG, which LLVM's SimplifyCFG redoes). Each
/// sweep visits every loop and, to ask whether it is dead, walks its body:
/// on small.json both together saved 6% of the whole pipeline's
/// instructions (callgrind, 2.70 -> 2.53 G), with the same LLVM IR out up
/// to the order of constants.
std::unique_ptr<Pass> createQuickCanonicalizer() {
  GreedyRewriteConfig config;
  config.setMaxIterations(1);
  config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
  return createCanonicalizerPass(config);
}
} // namespace

void tlm::buildLinalgPipeline(OpPassManager &pm, bool fuseAttention,
                              int64_t lanes, int64_t threads) {
  TlmLowerToLinalgOptions lowerOptions;
  lowerOptions.fuseAttention = fuseAttention;
  lowerOptions.lanes = lanes;
  lowerOptions.threads = threads;
  pm.addPass(createTlmLowerToLinalg(lowerOptions));
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
    // one-sweep canonicalizer: its own three canonicalizers took 41 ms of
    // small.json's ~550 ms of passes.
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

void tlm::buildCpuPipeline(OpPassManager &pm,
                           const CpuPipelineOptions &options) {
  // 1. tlm → linalg on tensors, entry points on caller-owned memrefs.
  buildLinalgPipeline(pm, options.fuseAttention, options.lanes,
                      options.parallel ? options.threads : 1);
  if (options.tileMatmuls) {
    TlmTileMatmulsOptions tileOptions;
    tileOptions.threads = options.parallel ? options.threads : 1;
    tileOptions.pack = options.packProjections;
    tileOptions.foldNorms = options.foldRMSNorm;
    tileOptions.fusePairs = options.fuseSwiGLU;
    // Register blocks sized to the target. A packed tile keeps pack-rows x 2
    // accumulator vectors, plus the panel's two vectors and a broadcast of
    // x: 8 x 2 (+3) of AVX-512's 32 registers, 6 x 2 of AVX2's 16 (8 x 2
    // spilled there: ~25 GFLOP/s on a Zen 3 core). A split-k block keeps
    // row-tile x col-tile (2) accumulators and loads of both operands.
    tileOptions.lanes = options.lanes;
    tileOptions.gemvColTile = options.gemvColumns;
    tileOptions.packCols = 2 * options.lanes;
    tileOptions.packRows =
        std::clamp<int64_t>((options.vectorRegisters - 3) / 2, 1, 8);
    tileOptions.rowTile =
        std::clamp<int64_t>(options.vectorRegisters / 4, 1, 8);
    // Only here: the tiled forms read the concatenated weights' parts in
    // place, anything else would copy them at every call.
    if (options.fuseProjections || options.fuseResidualAdds) {
      TlmFuseProjectionsOptions fuseOptions;
      fuseOptions.projections = options.fuseProjections;
      fuseOptions.residualAdds = options.fuseResidualAdds;
      pm.addNestedPass<func::FuncOp>(createTlmFuseProjections(fuseOptions));
    }
    pm.addNestedPass<func::FuncOp>(createTlmTileMatmuls(tileOptions));
    pm.addPass(createQuickCanonicalizer());
    pm.addPass(createCSEPass());
  }
  if (options.vectorizeElementwise) {
    TlmVectorizeElementwiseOptions vectorOptions;
    vectorOptions.threads = options.parallel ? options.threads : 1;
    vectorOptions.lanes = options.lanes;
    pm.addNestedPass<func::FuncOp>(
        createTlmVectorizeElementwise(vectorOptions));
    pm.addPass(createQuickCanonicalizer());
  }
  if (options.approximateMath)
    pm.addPass(createTlmApproximateMath());
  TlmMemrefEntryOptions entryOptions;
  entryOptions.emitCInterface = options.cInterface;
  pm.addPass(createTlmMemrefEntry(entryOptions));
  pm.addPass(createQuickCanonicalizer());

  // 2. Bufferize; temporaries are freed by the deallocation pipeline.
  // Private functions (the shared block) return fresh buffers; the
  // ownership-based deallocation clones them, and clones become alloc+copy.
  buildBufferizationPipeline(pm, options.eliminateEmptyTensors,
                             /*quickCanonicalize=*/true);

  // 3. Loops (the parallel dims of each op as an OpenMP worksharing loop
  //    when `parallel`), then LLVM.
  if (options.parallel) {
    pm.addPass(createForallToParallelLoopPass());
    pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
    pm.addNestedPass<func::FuncOp>(createTlmSerializeNestedParallel());
    if (options.minParallelWork > 0) {
      TlmSerializeSmallParallelOptions smallOptions;
      smallOptions.minWork = options.minParallelWork;
      pm.addNestedPass<func::FuncOp>(
          createTlmSerializeSmallParallel(smallOptions));
    }
    pm.addPass(createConvertSCFToOpenMPPass());
  } else {
    // Fused attention's (batch, head) forall, run in order.
    pm.addPass(createForallToForLoopPass());
    pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  }
  // Vector transfers become loads/stores of 1-D vectors (fully unrolled:
  // the blocks are small and static).
  // The projection blocks end in a sum over the innermost (lanes) dim: one
  // vector.reduction per output.
  pm.addNestedPass<func::FuncOp>(vector::createLowerVectorMultiReductionPass(
      vector::VectorMultiReductionLowering::InnerReduction));
  // From here to the LLVM conversion, the passes that need not see the
  // module run per function, on the context's threads (the block, the head
  // and the entries at once): ~40 ms less of small.json's ~420 ms of passes
  // on 2 cores, the same IR out.
  pm.addNestedPass<func::FuncOp>(createConvertVectorToSCFPass(
      VectorTransferToSCFOptions().enableFullUnroll()));
  pm.addNestedPass<func::FuncOp>(memref::createExpandStridedMetadataPass());
  pm.addNestedPass<func::FuncOp>(createLowerAffinePass());
  // Before scf-to-cf: OpenMP regions hold memref.alloca_scope ops, which
  // must still have a single block when memrefs are lowered.
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addNestedPass<func::FuncOp>(createSCFToControlFlowPass());
  // Those reductions (and attention's dot products) may reassociate into a
  // tree instead of a lane-by-lane chain.
  ConvertVectorToLLVMPassOptions vectorToLlvm;
  vectorToLlvm.reassociateFPReductions = true;
  // The packed projections transpose W's panels in 16 x 16 blocks: as
  // shuffles between whole registers rather than lane by lane.
  vectorToLlvm.vectorTransposeLowering =
      vector::VectorTransposeLowering::Shuffle16x16;
  pm.addNestedPass<func::FuncOp>(createConvertVectorToLLVMPass(vectorToLlvm));
  // With threads, this also converts the OpenMP ops (through the dialect's
  // ConvertToLLVM interface): convert-openmp-to-llvm as a pass of its own
  // was one more conversion walk over the whole module (78 ms of
  // small.json's 2-thread passes in one --mlir-timing run; the same LLVM
  // dialect out).
  pm.addPass(createConvertToLLVMPass());
  // Per LLVM function as well (same IR out; in 8 alternated runs no gain
  // beyond the noise).
  pm.addNestedPass<LLVM::LLVMFuncOp>(createReconcileUnrealizedCastsPass());
  pm.addNestedPass<LLVM::LLVMFuncOp>(createQuickCanonicalizer());
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
  PassPipelineRegistration<GpuPipelineOptions>(
      "tlm-gpu-pipeline",
      "Lower tlm ops to GPU kernels (NVVM, PTX) and a host side for the JIT",
      [](OpPassManager &pm, const GpuPipelineOptions &options) {
        buildGpuPipeline(pm, options);
      });
}
