//===- KernelBuilders.h - builders of the GPU kernels ----------*- C++ -*-===//
//
// Shared by the GPU passes that build kernels by hand (tile-matmuls,
// block-reductions, decode-attention): launches, index arithmetic, warp
// sums and guarded loads on buffers.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_GPU_KERNELBUILDERS_H
#define TLM_PASSES_GPU_KERNELBUILDERS_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"

#include <array>

namespace mlir::tlm {

/// Threads of a warp.
constexpr int64_t kWarp = 32;

/// The product of `sizes` (index), 1 for none.
Value product(OpBuilder &b, Location loc, ArrayRef<Value> sizes);
/// `a < c`, unsigned.
Value lessThan(OpBuilder &b, Location loc, Value a, Value c);
/// Row-major indices of `flat` in a space of `sizes`.
SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value flat,
                               ArrayRef<Value> sizes);
/// Blocks of `span` rows that cover `rows`: (rows + span - 1) / span.
Value blocksFor(OpBuilder &b, Location loc, Value rows, int64_t span);
/// An f32 buffer of `shape` in workgroup (shared) memory.
MemRefType workgroupF32(MLIRContext *ctx, ArrayRef<int64_t> shape);
/// A gpu.launch of `grid` x `block` with `workgroup` buffers, the builder
/// placed at the start of its body (before the terminator).
gpu::LaunchOp makeLaunch(OpBuilder &b, Location loc, std::array<Value, 3> grid,
                         std::array<Value, 3> block, TypeRange workgroup = {});
/// `v` summed over the 32 lanes of the warp (butterfly: every lane ends
/// with the total; every lane must reach it).
Value warpSum(OpBuilder &b, Location loc, Value v);
/// `v`'s largest over the warp, the same way (NaN if any lane's is).
Value warpMax(OpBuilder &b, Location loc, Value v);
/// `cond ? load(memref[indices]) : zero`, the load widened to `zero`'s type
/// (bf16 or f16 weights staged as f32).
Value guardedLoad(OpBuilder &b, Location loc, Value cond, Value memref,
                  ValueRange indices, Value zero);

} // namespace mlir::tlm

#endif // TLM_PASSES_GPU_KERNELBUILDERS_H
