//===- Registration.cpp - tlm-opt's passes and named pipelines ------------===//

#include "passes/pipelines/Pipelines.h"

#include "passes/common/Passes.h"
#include "passes/conversion/Passes.h"
#include "passes/cpu/Passes.h"
#include "passes/gpu/Passes.h"
#include "passes/train/Passes.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void tlm::registerTlmPassesAndPipelines() {
  registerTlmCommonPasses();
  registerTlmConversionPasses();
  registerTlmCpuPasses();
  registerTlmGpuPasses();
  registerTlmTrainPasses();
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
