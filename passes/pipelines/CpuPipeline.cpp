//===- CpuPipeline.cpp - tlm-cpu-pipeline ---------------------------------===//
//
// tlm → linalg → CPU codegen on tensors (fused attention, projections,
// elementwise vectors) → buffers → loops or OpenMP → LLVM dialect. Each
// switch of CpuSwitches.def turns one step off; Strategy.h decides the sizes.
//
//===----------------------------------------------------------------------===//

#include "passes/pipelines/Pipelines.h"

#include "passes/common/Passes.h"
#include "passes/cpu/Passes.h"
#include "passes/cpu/Strategy.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Dialect/Vector/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

tlm::CpuSwitches tlm::CpuPipelineOptions::switches() const {
  CpuSwitches s;
#define TLM_CPU_SWITCH(field, name, dflt, help) s.field = field;
#include "passes/pipelines/CpuSwitches.def"
  return s;
}

void tlm::CpuPipelineOptions::setSwitches(const CpuSwitches &s) {
#define TLM_CPU_SWITCH(field, name, dflt, help) field = s.field;
#include "passes/pipelines/CpuSwitches.def"
}

namespace mlir::tlm {

/// Fusion and lowering, steps 1-2 of docs/pipelines.md#tlm-cpu-pipeline.
static void addFusionAndLoweringStage(OpPassManager &pm,
                                      const CpuPipelineOptions &options,
                                      int64_t threads) {
  // f32 cached attention as fused loop nests first, then tlm → linalg on
  // tensors.
  if (options.fuseAttention) {
    TlmFuseAttentionOptions attentionOptions;
    attentionOptions.lanes = options.lanes;
    attentionOptions.threads = threads;
    pm.addPass(createTlmFuseAttention(attentionOptions));
  }
  buildLinalgPipeline(pm, options.attentionByHeads,
                      options.attentionBlocks ? options.attentionBlock : 0);
  // Before the projections are tiled: the fusion leaves the ops they read
  // and the forms they fold in alone.
  if (options.fuseElementwise) {
    TlmFuseElementwiseOptions fuseOptions;
    fuseOptions.lanes = options.lanes;
    pm.addNestedPass<func::FuncOp>(createTlmFuseElementwise(fuseOptions));
  }
}

/// tlm-tile-matmuls' options (step 4 of docs/pipelines.md#tlm-cpu-pipeline).
static TlmTileMatmulsOptions
tileMatmulsOptions(const CpuPipelineOptions &options, int64_t threads) {
  // Register blocks and GEMV columns sized to the target (Strategy.h).
  RegisterBlocks blocks =
      registerBlocks(options.lanes, options.vectorRegisters);
  TlmTileMatmulsOptions tileOptions;
  tileOptions.threads = threads;
  tileOptions.packProjections = options.packProjections;
  tileOptions.foldRMSNorm = options.foldRMSNorm;
  tileOptions.fuseSwiGLU = options.fuseSwiGLU;
  tileOptions.lanes = options.lanes;
  tileOptions.gemvColumns =
      gemvColumns(CpuTarget(), /*weightBytes=*/0, options.gemvColumns);
  // The pass prefetches where a GEMV block takes one column (it streams
  // W row after row): the strategy's choice when the weights exceed the
  // cache, and the lookup and int8 forms whatever it chose.
  tileOptions.prefetchCodes = options.prefetchCodes;
  tileOptions.lookupNibbles = options.lookupNibbles && options.avx512;
  tileOptions.bf16Dot = options.compute == CpuCompute::BF16;
  tileOptions.int8Dot = options.compute == CpuCompute::Int8;
  tileOptions.packCols = blocks.packCols;
  tileOptions.packRows = blocks.packRows;
  tileOptions.rowTile = blocks.rowTile;
  return tileOptions;
}

/// Codegen on tensors, steps 3-7 of docs/pipelines.md#tlm-cpu-pipeline.
static void addCodegenOnTensorsStage(OpPassManager &pm,
                                     const CpuPipelineOptions &options,
                                     int64_t threads) {
  if (options.tileMatmuls) {
    TlmTileMatmulsOptions tileOptions = tileMatmulsOptions(options, threads);
    // Only here: the tiled forms read the concatenated weights' parts in
    // place, anything else would copy them at every call.
    if (options.fuseProjections || options.fuseResidualAdds) {
      TlmFuseProjectionsOptions fuseOptions;
      fuseOptions.fuseProjections = options.fuseProjections;
      fuseOptions.fuseResidualAdds = options.fuseResidualAdds;
      pm.addNestedPass<func::FuncOp>(createTlmFuseProjections(fuseOptions));
    }
    pm.addNestedPass<func::FuncOp>(createTlmTileMatmuls(tileOptions));
    pm.addPass(createQuickCanonicalizer());
    pm.addPass(createCSEPass());
  }
  if (options.vectorizeElementwise) {
    TlmVectorizeElementwiseOptions vectorOptions;
    vectorOptions.threads = threads;
    vectorOptions.lanes = options.lanes;
    pm.addNestedPass<func::FuncOp>(
        createTlmVectorizeElementwise(vectorOptions));
    pm.addPass(createQuickCanonicalizer());
  }
  if (options.approximateMath)
    pm.addPass(createTlmApproximateMath());
  // Entry points on caller-owned memrefs.
  TlmMemrefEntryOptions entryOptions;
  entryOptions.emitCInterface = options.cInterface;
  pm.addPass(createTlmMemrefEntry(entryOptions));
  pm.addPass(createQuickCanonicalizer());
}

/// Bufferization, steps 8-12 of docs/pipelines.md#tlm-cpu-pipeline.
static void addBufferizationStage(OpPassManager &pm,
                                  const CpuPipelineOptions &options) {
  // Temporaries are freed by the deallocation pipeline.
  // Private functions (the shared block) return fresh buffers; the
  // ownership-based deallocation clones them, and clones become alloc+copy.
  buildBufferizationPipeline(pm, options.eliminateEmptyTensors,
                             /*quickCanonicalize=*/true);

  // tlm.lookup (AVX-512 only) becomes its intrinsic once deallocation,
  // which needs every op's memory effects, is done.
  if ((options.lookupNibbles && options.avx512) ||
      options.compute == CpuCompute::Int8)
    pm.addPass(createTlmLowerLookup());
}

/// Loops, step 13 of docs/pipelines.md#tlm-cpu-pipeline.
static void addLoopsStage(OpPassManager &pm,
                          const CpuPipelineOptions &options) {
  // The parallel dims of each op as an OpenMP worksharing loop when
  // `parallel`.
  if (options.parallel) {
    pm.addPass(createForallToParallelLoopPass());
    pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
    pm.addNestedPass<func::FuncOp>(createTlmSerializeNestedParallel());
    if (options.serializeSmallParallel && options.minParallelWork > 0) {
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
}

/// To LLVM, steps 14-21 of docs/pipelines.md#tlm-cpu-pipeline.
static void addToLLVMStage(OpPassManager &pm,
                           const CpuPipelineOptions &options) {
  // The projection blocks end in a sum over the innermost (lanes) dim: one
  // vector.reduction per output.
  pm.addNestedPass<func::FuncOp>(vector::createLowerVectorMultiReductionPass(
      vector::VectorMultiReductionLowering::InnerReduction));
  // From here to the LLVM conversion, the passes that need not see the
  // module run per function, on the context's threads (the block, the head
  // and the entries at once): less pass time on several cores, the same IR
  // out (docs/cpu-codegen.md#keeping-the-mlir-side-fast).
  // Vector transfers become loads/stores of 1-D vectors (fully unrolled:
  // the blocks are small and static).
  pm.addNestedPass<func::FuncOp>(createConvertVectorToSCFPass(
      VectorTransferToSCFOptions().enableFullUnroll()));
  pm.addNestedPass<func::FuncOp>(memref::createExpandStridedMetadataPass());
  pm.addNestedPass<func::FuncOp>(createLowerAffinePass());
  // Before scf-to-cf: OpenMP regions hold memref.alloca_scope ops, which
  // must still have a single block when memrefs are lowered.
  // Allocations through _mlir_memref_to_llvm_alloc (lib/runtime/abi/Alloc.h):
  // a failed one is an error line, not a null pointer written through.
  FinalizeMemRefToLLVMConversionPassOptions memrefToLlvm;
  memrefToLlvm.useGenericFunctions = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefToLlvm));
  pm.addNestedPass<func::FuncOp>(createSCFToControlFlowPass());
  // Those reductions (and attention's dot products) may reassociate into a
  // tree instead of a lane-by-lane chain.
  ConvertVectorToLLVMPassOptions vectorToLlvm;
  vectorToLlvm.reassociateFPReductions = true;
  // The packed projections transpose W's panels in 16 x 16 blocks: as
  // shuffles between whole registers rather than lane by lane.
  vectorToLlvm.vectorTransposeLowering =
      vector::VectorTransposeLowering::Shuffle16x16;
  // bf16 compute's x86vector.avx512.dot, as its intrinsic.
  vectorToLlvm.x86Vector = options.compute == CpuCompute::BF16;
  pm.addNestedPass<func::FuncOp>(createConvertVectorToLLVMPass(vectorToLlvm));
  // With threads, this also converts the OpenMP ops (through the dialect's
  // ConvertToLLVM interface): convert-openmp-to-llvm as a pass of its own
  // was one more conversion walk over the whole module, for the same LLVM
  // dialect out.
  pm.addPass(createConvertToLLVMPass());
  // Per LLVM function as well (the same IR out; no gain in compile time
  // beyond the noise).
  pm.addNestedPass<LLVM::LLVMFuncOp>(createReconcileUnrealizedCastsPass());
  pm.addNestedPass<LLVM::LLVMFuncOp>(createQuickCanonicalizer());
}

} // namespace mlir::tlm

void tlm::buildCpuPipeline(OpPassManager &pm,
                           const CpuPipelineOptions &options) {
  int64_t threads = options.parallel ? options.threads : 1;
  addFusionAndLoweringStage(pm, options, threads);
  addCodegenOnTensorsStage(pm, options, threads);
  addBufferizationStage(pm, options);
  addLoopsStage(pm, options);
  addToLLVMStage(pm, options);
}
