//===- Pipelines.h - the named tlm pipelines --------------------*- C++ -*-===//
//
// The one folder that sees every pass: each pipeline is built in one place,
// tlm-opt registers them by name and the JIT calls the same builders, so the
// two never drift apart. docs/pipelines.md lists the stages.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_PIPELINES_PIPELINES_H
#define TLM_PASSES_PIPELINES_PIPELINES_H

#include "passes/cpu/Strategy.h"
#include "passes/pipelines/CpuSwitches.h"
#include "passes/pipelines/GpuSwitches.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace mlir::tlm {

/// The arithmetic of the CPU pipeline's packed projection tiles
/// (tlm-tile-matmuls{bf16-dot}; docs/cpu-codegen.md#bf16-compute).
enum class CpuCompute { F32, BF16, Int8 };

/// The CPU pipeline's canonicalizer: one sweep of the greedy driver, no
/// region simplification (see Common.cpp).
std::unique_ptr<Pass> createQuickCanonicalizer();

/// tlm ops → linalg on tensors, canonicalized; with `attentionByHeads`
/// (the CPU's), attention of a static sequence as a loop over its heads, in
/// blocks of up to `attentionBlock` queries and keys (0: one (T, T) tile a
/// head).
void buildLinalgPipeline(OpPassManager &pm, bool attentionByHeads = false,
                         int64_t attentionBlock = 0);

/// Tensors → buffers for entries with the memref ABI: results written in
/// the caller's buffers (with `eliminateEmptyTensors`, also those computed
/// into a fresh tensor in the entry), temporaries freed (one-shot
/// bufferization with the deallocation pipeline), bufferization ops lowered
/// to memref. `quickCanonicalize`: the deallocation pipeline's
/// canonicalizers run one sweep without region simplification, as the rest
/// of the CPU pipeline's.
void buildBufferizationPipeline(OpPassManager &pm,
                                bool eliminateEmptyTensors = true,
                                bool quickCanonicalize = false);

struct CpuPipelineOptions : public PassPipelineOptions<CpuPipelineOptions> {
  PassOptions::Option<bool> parallel{
      *this, "parallel",
      llvm::cl::desc("Run the parallel loops as OpenMP worksharing loops"),
      llvm::cl::init(false)};
  PassOptions::Option<int64_t> threads{
      *this, "threads",
      llvm::cl::desc("With parallel, the threads the work is split for"),
      llvm::cl::init(1)};
  PassOptions::Option<int64_t> minParallelWork{
      *this, "min-parallel-work",
      llvm::cl::desc("With threads, element operations below which a loop "
                     "runs on one thread"),
      llvm::cl::init(131072)};
  PassOptions::Option<int64_t> gemvColumns{
      *this, "gemv-columns",
      llvm::cl::desc("Output columns per block of decode's GEMV (0: the "
                     "strategy's choice)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> attentionBlock{
      *this, "attention-block",
      llvm::cl::desc("With attention-blocks, the most queries and keys a "
                     "block of training's attention holds"),
      llvm::cl::init(64)};
  PassOptions::Option<int64_t> lanes{
      *this, "lanes",
      llvm::cl::desc("f32 lanes of the target's vectors (16, 8 or 4)"),
      llvm::cl::init(CpuTarget().lanes)};
  PassOptions::Option<bool> avx512{
      *this, "avx512",
      llvm::cl::desc("The target runs AVX-512 instructions the code names "
                     "directly (vpermps for lookup-nibbles)"),
      llvm::cl::init(CpuTarget().avx512)};
  PassOptions::Option<int64_t> vectorRegisters{
      *this, "vector-registers",
      llvm::cl::desc("Vector registers of the target (sizes the register "
                     "blocks)"),
      llvm::cl::init(CpuTarget().vectorRegisters)};
  PassOptions::Option<CpuCompute> compute{
      *this, "compute",
      llvm::cl::desc("Arithmetic of prefill's packed projection tiles"),
      llvm::cl::init(CpuCompute::F32),
      llvm::cl::values(
          clEnumValN(CpuCompute::F32, "f32", "f32 FMAs"),
          clEnumValN(CpuCompute::BF16, "bf16",
                     "x and W rounded to bf16, multiplied by AVX512-BF16's "
                     "vdpbf16ps into f32 sums (needs lanes=16 and a target "
                     "with avx512bf16)"),
          clEnumValN(CpuCompute::Int8, "int8",
                     "q8_0 W against x quantized to int8 per block of 32, "
                     "AVX512-VNNI's vpdpbusd (needs lanes=16 and a target "
                     "with avx512vnni)"))};
  PassOptions::Option<bool> cInterface{
      *this, "c-interface",
      llvm::cl::desc("Give entries the llvm.emit_c_interface wrappers"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> eliminateEmptyTensors{
      *this, "eliminate-empty-tensors",
      llvm::cl::desc("Empty-tensor elimination before bufferization, so "
                     "results are computed in the caller's buffers"),
      llvm::cl::init(true)};
#define TLM_CPU_SWITCH(field, name, dflt, help)                                \
  PassOptions::Option<bool> field{*this, name, llvm::cl::desc(help),           \
                                  llvm::cl::init(dflt)};
#include "passes/pipelines/CpuSwitches.def"

  /// The switches as plain values, and back.
  CpuSwitches switches() const;
  void setSwitches(const CpuSwitches &switches);
};

/// tlm ops → LLVM dialect, with the JIT's destination-passing entry ABI.
void buildCpuPipeline(OpPassManager &pm,
                      const CpuPipelineOptions &options = {});

struct GpuPipelineOptions : public PassPipelineOptions<GpuPipelineOptions> {
  PassOptions::Option<std::string> chip{*this, "chip",
                                        llvm::cl::desc("GPU architecture"),
                                        llvm::cl::init("sm_90")};
  PassOptions::Option<std::string> features{
      *this, "features", llvm::cl::desc("PTX ISA version (sm_90 needs >= 8.0)"),
      llvm::cl::init("+ptx80")};
  PassOptions::Option<std::string> format{
      *this, "format",
      llvm::cl::desc("Kernel binary: isa (PTX text), bin (cubin) or fatbin"),
      llvm::cl::init("isa")};
  PassOptions::Option<std::string> toolkit{
      *this, "toolkit",
      llvm::cl::desc("CUDA toolkit folder (default: findCudaToolkit())"),
      llvm::cl::init("")};
  PassOptions::Option<int64_t> blockSize{
      *this, "block-size",
      llvm::cl::desc("Threads per block along the innermost dimension"),
      llvm::cl::init(128)};
  PassOptions::Option<std::string> tensorCores{
      *this, "tensor-cores",
      llvm::cl::desc("Prefill's projections on tensor cores: none (f32 "
                     "FMA), tf32 or bf16 (tlm-gpu-tile-matmuls{tensor-cores})"),
      llvm::cl::init("none")};
#define TLM_GPU_SWITCH(field, name, dflt, help)                                \
  PassOptions::Option<bool> field{*this, name, llvm::cl::desc(help),           \
                                  llvm::cl::init(dflt)};
#include "passes/pipelines/GpuSwitches.def"
  PassOptions::Option<bool> kernelsOnly{
      *this, "kernels-only",
      llvm::cl::desc("Stop after kernel outlining (GPU dialect, no NVVM)"),
      llvm::cl::init(false)};

  /// The switches as plain values, and back.
  GpuSwitches switches() const;
  void setSwitches(const GpuSwitches &switches);
};

/// tlm ops → host LLVM dialect calling the mgpu* runtime, with kernels
/// outlined into gpu.modules and compiled to PTX/cubin (gpu.binary). Entry
/// points take device buffers in the JIT's destination-passing ABI.
void buildGpuPipeline(OpPassManager &pm,
                      const GpuPipelineOptions &options = {});

/// The CUDA toolkit folder the GPU pipeline uses when none is given
/// ($CUDA_HOME, $CUDA_ROOT, $CUDA_PATH or /usr/local/cuda), or "".
std::string findCudaToolkit();
/// That toolkit's libdevice (which the kernels link), or "".
std::string findLibdevice();

/// Registers every tlm pass and the pipelines `tlm-linalg-pipeline`,
/// `tlm-cpu-pipeline` and `tlm-gpu-pipeline` (tlm-opt).
void registerTlmPassesAndPipelines();

/// The interfaces the pipelines attach to upstream ops (registerGpuInterfaces
/// in passes/gpu/Passes.h): every context that runs them needs these.
void registerPipelineInterfaces(DialectRegistry &registry);

} // namespace mlir::tlm

#endif // TLM_PASSES_PIPELINES_PIPELINES_H
