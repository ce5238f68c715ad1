//===- KernelBuilders.h - builders of the GPU kernels ----------*- C++ -*-===//
//
// Shared by tlm-gpu-tile-matmuls and tlm-gpu-block-reductions: launches,
// index arithmetic and guarded loads on buffers.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_GPU_KERNELBUILDERS_H
#define TLM_PASSES_GPU_KERNELBUILDERS_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"

#include <array>

namespace mlir::tlm {

/// The product of `sizes` (index), 1 for none.
Value product(OpBuilder &b, Location loc, ArrayRef<Value> sizes);
/// `a < c`, unsigned.
Value lessThan(OpBuilder &b, Location loc, Value a, Value c);
/// Row-major indices of `flat` in a space of `sizes`.
SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value flat,
                               ArrayRef<Value> sizes);
/// A gpu.launch of `grid` x `block` with `workgroup` buffers, the builder
/// placed at the start of its body (before the terminator).
gpu::LaunchOp makeLaunch(OpBuilder &b, Location loc, std::array<Value, 3> grid,
                         std::array<Value, 3> block, TypeRange workgroup = {});
/// `cond ? load(memref[indices]) : zero`, the load widened to `zero`'s type
/// (bf16 or f16 weights staged as f32).
Value guardedLoad(OpBuilder &b, Location loc, Value cond, Value memref,
                  ValueRange indices, Value zero);

} // namespace mlir::tlm

#endif // TLM_PASSES_GPU_KERNELBUILDERS_H
