//===- Passes.h - tlm passes and pipelines ----------------------*- C++ -*-===//
#ifndef TLM_PASSES_PASSES_H
#define TLM_PASSES_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::tlm {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// tlm ops → linalg on tensors, canonicalized.
void buildLinalgPipeline(OpPassManager &pm, bool fuseAttention = true,
                         int64_t lanes = 16, int64_t threads = 1);
struct CpuPipelineOptions : public PassPipelineOptions<CpuPipelineOptions> {
  PassOptions::Option<bool> parallel{
      *this, "parallel",
      llvm::cl::desc("Run the parallel dims of every loop nest as OpenMP "
                     "worksharing loops (needs libomp at run time)"),
      llvm::cl::init(false)};
  PassOptions::Option<int64_t> threads{
      *this, "threads",
      llvm::cl::desc("With `parallel`, split each projection's columns into "
                     "this many chunks (one per OpenMP thread)"),
      llvm::cl::init(1)};
  PassOptions::Option<int64_t> minParallelWork{
      *this, "min-parallel-work",
      llvm::cl::desc("With threads, parallel loops estimated below this many "
                     "element operations run on one thread "
                     "(tlm-serialize-small-parallel; 0: none)"),
      llvm::cl::init(131072)};
  PassOptions::Option<bool> tileMatmuls{
      *this, "tile-matmuls",
      llvm::cl::desc("Register-block and vectorize the projections "
                     "(tlm-tile-matmuls)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> packProjections{
      *this, "pack-projections",
      llvm::cl::desc("Full row tiles of the projections against packed "
                     "panels of W (tlm-tile-matmuls{pack}); off: split-k "
                     "blocks"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> fuseProjections{
      *this, "fuse-projections",
      llvm::cl::desc("Projections of one input (Q/K/V, W1/W3) as one over "
                     "their concatenated weights (tlm-fuse-projections; "
                     "only with tile-matmuls)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> fuseResidualAdds{
      *this, "fuse-residual-adds",
      llvm::cl::desc("Residual adds folded into the projection they add "
                     "(tlm-fuse-projections{residual-adds}; only with "
                     "tile-matmuls)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> fuseSwiGLU{
      *this, "fuse-swiglu",
      llvm::cl::desc("SwiGLU's silu(a)·b on the fused W1/W3 projection's "
                     "packed tiles (tlm-tile-matmuls{fuse-pairs}; needs "
                     "fuse-projections)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> foldRMSNorm{
      *this, "fold-rmsnorm",
      llvm::cl::desc("RMSNorm's scaling folded into the packed projection "
                     "that reads it (tlm-tile-matmuls{fold-norms})"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> fuseAttention{
      *this, "fuse-attention",
      llvm::cl::desc("Cached attention as one online-softmax loop nest "
                     "(tlm-lower-to-linalg{fuse-attention})"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> approximateMath{
      *this, "approximate-math",
      llvm::cl::desc("Polynomial exp (tlm-approximate-math), so softmax and "
                     "SiLU loops vectorize"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> vectorizeElementwise{
      *this, "vectorize-elementwise",
      llvm::cl::desc("Vectorize the elementwise ops (SiLU·gate, residual "
                     "adds, norm scaling) in blocks of `lanes` "
                     "(tlm-vectorize-elementwise)"),
      llvm::cl::init(true)};
  PassOptions::Option<int64_t> gemvColumns{
      *this, "gemv-columns",
      llvm::cl::desc("Output columns per block of the one-row GEMV (every "
                     "decode step; tlm-tile-matmuls{gemv-col-tile}): 8 share "
                     "each load of x, for weights that stay in cache; 1 "
                     "reads W as one sequential stream, for weights that "
                     "come from memory"),
      llvm::cl::init(8)};
  PassOptions::Option<int64_t> lanes{
      *this, "lanes",
      llvm::cl::desc("f32 lanes of the target's widest vector register (16: "
                     "AVX-512, 8: AVX2, 4: SSE/NEON); the projections' "
                     "blocks and the elementwise blocks are this wide"),
      llvm::cl::init(16)};
  PassOptions::Option<int64_t> vectorRegisters{
      *this, "vector-registers",
      llvm::cl::desc("Vector registers the target has (32: AVX-512, 16: "
                     "AVX2); sizes the projections' register blocks so their "
                     "accumulators do not spill"),
      llvm::cl::init(32)};
  PassOptions::Option<bool> cInterface{
      *this, "c-interface",
      llvm::cl::desc("Give entries the llvm.emit_c_interface wrappers"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> eliminateEmptyTensors{
      *this, "eliminate-empty-tensors",
      llvm::cl::desc("Run bufferization's empty-tensor elimination first, so "
                     "a result computed in its entry is written in the "
                     "caller's buffer (off: such a result is copied there)"),
      llvm::cl::init(true)};
};

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
      llvm::cl::desc("Kernel binary: isa (PTX text, the driver compiles it), "
                     "bin (cubin) or fatbin (both need ptxas)"),
      llvm::cl::init("isa")};
  PassOptions::Option<std::string> toolkit{
      *this, "toolkit",
      llvm::cl::desc("CUDA toolkit folder (libdevice, ptxas); default: "
                     "$CUDA_HOME, $CUDA_ROOT, $CUDA_PATH or /usr/local/cuda"),
      llvm::cl::init("")};
  PassOptions::Option<int64_t> blockSize{
      *this, "block-size",
      llvm::cl::desc("Threads per block along the innermost dimension"),
      llvm::cl::init(128)};
  PassOptions::Option<bool> tileMatmuls{
      *this, "tile-matmuls",
      llvm::cl::desc("Projections as shared-memory tiled kernels "
                     "(tlm-gpu-tile-matmuls)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> blockReductions{
      *this, "block-reductions",
      llvm::cl::desc("Row reductions with one block per row "
                     "(tlm-gpu-block-reductions)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> kernelsOnly{
      *this, "kernels-only",
      llvm::cl::desc("Stop after kernel outlining (GPU dialect, no NVVM)"),
      llvm::cl::init(false)};
};

/// tlm ops → host LLVM dialect calling the mgpu* runtime, with kernels
/// outlined into gpu.modules and compiled to PTX/cubin (gpu.binary). Entry
/// points take device buffers in the JIT's destination-passing ABI.
void buildGpuPipeline(OpPassManager &pm,
                      const GpuPipelineOptions &options = {});

/// The CUDA toolkit folder the GPU pipeline uses when none is given, or an
/// empty string.
std::string findCudaToolkit();
/// That toolkit's libdevice (which the kernels link), or an empty string.
std::string findLibdevice();

/// Registers `tlm-linalg-pipeline`, `tlm-cpu-pipeline` and
/// `tlm-gpu-pipeline`.
void registerTlmPipelines();

} // namespace mlir::tlm

#endif // TLM_PASSES_PASSES_H
