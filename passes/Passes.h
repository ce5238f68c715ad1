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
void buildLinalgPipeline(OpPassManager &pm, bool fuseAttention = true);
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
  PassOptions::Option<bool> tileMatmuls{
      *this, "tile-matmuls",
      llvm::cl::desc("Register-block and vectorize the projections "
                     "(tlm-tile-matmuls)"),
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
  PassOptions::Option<bool> cInterface{
      *this, "c-interface",
      llvm::cl::desc("Give entries the llvm.emit_c_interface wrappers"),
      llvm::cl::init(true)};
};

/// tlm ops → LLVM dialect, with the JIT's destination-passing entry ABI.
void buildCpuPipeline(OpPassManager &pm,
                      const CpuPipelineOptions &options = {});

/// Registers `tlm-linalg-pipeline` and `tlm-cpu-pipeline`.
void registerTlmPipelines();

} // namespace mlir::tlm

#endif // TLM_PASSES_PASSES_H
