//===- GpuPipeline.cpp - tlm-gpu-pipeline ---------------------------------===//
//
// tlm → linalg → buffers in device memory → parallel loops mapped to blocks
// and threads → gpu.launch → outlined kernels → NVVM → PTX (or cubin), with
// a host side that calls the mgpu* runtime (lib/runtime/cuda/CudaRuntime.cpp).
// Kept apart from CpuPipeline.cpp: the GPU/NVVM headers are slow to parse.
//
//===----------------------------------------------------------------------===//

#include "passes/pipelines/Pipelines.h"

#include "passes/common/Passes.h"
#include "passes/gpu/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void tlm::registerPipelineInterfaces(DialectRegistry &registry) {
  registerGpuInterfaces(registry);
}

tlm::GpuSwitches tlm::GpuPipelineOptions::switches() const {
  GpuSwitches s;
#define TLM_GPU_SWITCH(field, name, dflt, help) s.field = field;
#include "passes/pipelines/GpuSwitches.def"
  return s;
}

void tlm::GpuPipelineOptions::setSwitches(const GpuSwitches &s) {
#define TLM_GPU_SWITCH(field, name, dflt, help) field = s.field;
#include "passes/pipelines/GpuSwitches.def"
}

void tlm::buildGpuPipeline(OpPassManager &pm,
                           const GpuPipelineOptions &options) {
  // 1. tlm → linalg on tensors, one function per entry; attention first,
  //    as kernels of its own (decode's steps, then the rest).
  if (options.decodeAttention)
    pm.addPass(createTlmGpuDecodeAttention());
  if (options.prefillAttention)
    pm.addPass(createTlmGpuPrefillAttention());
  buildLinalgPipeline(pm);
  pm.addPass(createTlmAllowInlining());
  pm.addPass(createInlinerPass());
  pm.addPass(createSymbolDCEPass());
  TlmMemrefEntryOptions entryOptions;
  entryOptions.emitCInterface = false;
  pm.addPass(createTlmMemrefEntry(entryOptions));
  pm.addPass(createCanonicalizerPass());
  // Across the inlined calls too: a kernel for each chain of elementwise
  // ops rather than each op.
  if (options.fuseElementwise)
    pm.addNestedPass<func::FuncOp>(createTlmGpuFuseElementwise());

  // 2. Bufferize into the caller's buffers; temporaries get static
  //    lifetimes (one function, no calls) and then live in device memory.
  buildBufferizationPipeline(pm);
  pm.addPass(createCanonicalizerPass());

  // 3. Every op a kernel: projections and row reductions shaped by hand,
  //    the rest as parallel loops, mapped, launched; then outlined.
  OpPassManager &fpm = pm.nest<func::FuncOp>();
  fpm.addPass(createTlmGpuDeviceMemory());
  if (options.tileMatmuls) {
    TlmGpuTileMatmulsOptions tileOptions;
    tileOptions.tensorCores = options.tensorCores;
    fpm.addPass(createTlmGpuTileMatmuls(tileOptions));
  }
  if (options.blockReductions)
    fpm.addPass(createTlmGpuBlockReductions());
  fpm.addPass(createConvertLinalgToParallelLoopsPass());
  TlmGpuMapParallelLoopsOptions mapOptions;
  mapOptions.blockSize = options.blockSize;
  fpm.addPass(createTlmGpuMapParallelLoops(mapOptions));
  fpm.addPass(createConvertParallelLoopToGpuPass());
  // Constants and dims used inside a launch move into it before outlining
  // (outlining no longer does this itself): the kernels then see their tile
  // sizes and bounds as constants, which unroll loops and turn divisions
  // into shifts, rather than as parameters.
  pm.addPass(createGpuLaunchSinkIndexComputationsPass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createTlmGpuDedupKernels());
  if (options.kernelsOnly)
    return;

  // 4. Host: async launches and allocations on one stream per call.
  pm.addNestedPass<func::FuncOp>(createGpuAsyncRegionPass());

  // 5. Kernels → NVVM → binary; host → LLVM calling mgpu*.
  pm.addNestedPass<gpu::GPUModuleOp>(createTlmGpuNativeMath());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features;
  target.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(target));
  pm.addPass(createLowerAffinePass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Tensor-core fragments (nvgpu.mma.sync) to NVVM's mma, before the rest.
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertNVGPUToNVVMPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createGpuToLLVMConversionPass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = options.format;
  binary.toolkitPath =
      options.toolkit.empty() ? findCudaToolkit() : options.toolkit.getValue();
  pm.addPass(createGpuModuleToBinaryPass(binary));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}
