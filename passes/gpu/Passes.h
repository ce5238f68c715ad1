//===- Passes.h - GPU codegen passes ----------------------------*- C++ -*-===//
//
// The declarations and registration of passes/gpu/Passes.td. The dialects the
// passes depend on are included here, as the generated definitions need them.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_GPU_PASSES_H
#define TLM_PASSES_GPU_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tlm {

#define GEN_PASS_DECL
#include "passes/gpu/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/gpu/Passes.h.inc"

/// What the GPU passes add to upstream ops: `gpu.barrier` declares that it
/// reads and writes memory (it orders a block's accesses to workgroup
/// memory), without which buffer deallocation rejects a function whose
/// kernels exist before bufferization (tlm-gpu-decode-attention's).
void registerGpuInterfaces(DialectRegistry &registry);

} // namespace mlir::tlm

#endif // TLM_PASSES_GPU_PASSES_H
